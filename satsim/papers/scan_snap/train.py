"""Train many independent runs of the Scan-and-Snap model at once, recording every iteration.

Runs are laid out as (C, S): C settings (η_Z, r) times S seeds. A seed fixes a run's data stream
and initial parameters (for a given K), so all settings of one seed see the same sequences and
start from the same point; each run is still exactly one independent SGD training. Each
iteration draws a fresh batch; iteration t's batch is scored with the parameters θ_t before the
update, and one extra batch (number T) scores θ_T and feeds the saturation view.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import torch

from satsim.errors import SatsimError
from satsim.papers.scan_snap import measures
from satsim.papers.scan_snap.data import Batch, Task, output_rows, sample_batch, targets
from satsim.papers.scan_snap.model import run_losses
from satsim.papers.scan_snap.sgd import BatchedSGD
from satsim.soft.device import resolve_device

MOMENTUM = 0.9
"""Momentum of both SGD optimisers (no weight decay)."""
_DATA_STREAM, _INIT_STREAM = 0, 1


@dataclass(frozen=True)
class Setting:
    """One grid cell's learning rates: η_Z for Z and η_Y = r·η_Z for Y."""

    eta_z: float
    ratio: float

    @property
    def eta_y(self) -> float:
        """Return the decoder learning rate r·η_Z."""
        return self.ratio * self.eta_z


@dataclass
class Runs:
    """Per-iteration records of C settings × S seeds; arrays lead with (C, S), then iteration."""

    task: Task
    settings: list[Setting]
    seeds: list[int]
    iters: int
    z: np.ndarray
    """Final Z, (C, S, K, L)."""
    y: np.ndarray
    """Final Y, (C, S, O, L): O = M output rows (loss 'vocab') or N ('next-token')."""
    distinct_entropy: np.ndarray
    """The published measure, (C, S, T+1)."""
    distinct_share: np.ndarray
    """Attention share on distinct tokens (common share = 1 - it), (C, S, T+1)."""
    slot_entropy: np.ndarray
    """Entropy of the composition over all of n's tokens, mean over next tokens, (C, S, T+1)."""
    composition: np.ndarray
    """Composition c_n by slot, mean over next tokens, (C, S, T+1, n_slots)."""
    position_entropy: np.ndarray
    """Entropy of the attention over the 127 positions, mean over the batch, (C, S, T+1)."""
    loss: np.ndarray
    """Batch loss, (C, S, T+1)."""
    change: np.ndarray
    """Per-iteration composition change δ_t, t = 1..T, (C, S, T)."""
    eval_counts: np.ndarray
    """Slot counts of the scoring batch T, (S, B, n_slots)."""
    eval_labels: np.ndarray
    """Next tokens of the scoring batch T, (S, B)."""
    loss_kind: str = "vocab"
    """Which outputs the decoder and the cross-entropy cover (see ``LOSSES``)."""
    z_history: np.ndarray | None = None
    """Z after every iteration, (C, S, T+1, K, L), when asked for."""


def initial_parameters(task: Task, seed: int, zero: bool = False,
                       loss: str = "vocab") -> tuple[np.ndarray, np.ndarray]:
    """Return (Z, Y), float64 (K, L) and (O, L): zeros, or the authors' nn.Linear(M, M) init.

    The authors' Z and Y are both nn.Linear(M, M), whose weights PyTorch draws i.i.d. from
    U(-1/√M, 1/√M); the entries that can matter (Z's query rows and both matrices' context
    columns) are drawn here from that distribution, for either loss.
    """
    shape_z = (task.n_queries, task.n_context)
    shape_y = (output_rows(task, loss), task.n_context)
    if zero:
        return np.zeros(shape_z), np.zeros(shape_y)
    rng = np.random.default_rng([_INIT_STREAM, task.n_queries, seed])
    bound = 1.0 / np.sqrt(task.n_vocab)
    return rng.uniform(-bound, bound, shape_z), rng.uniform(-bound, bound, shape_y)


def seed_batches(task: Task, seed: int, iters: int, batch: int) -> list[Batch]:
    """Return a seed's batches 0..T (T = ``iters``): the same for every setting of that seed."""
    rng = np.random.default_rng([_DATA_STREAM, task.n_queries, seed])
    return [sample_batch(rng, task, batch) for _ in range(iters + 1)]


def data_stream(task: Task, seed: int, iters: int, batch: int) -> tuple[np.ndarray, np.ndarray]:
    """Return the labels (T+1, B) and slot counts (T+1, B, n_slots) of a seed's batches 0..T."""
    batches = seed_batches(task, seed, iters, batch)
    return (np.stack([b.next_tokens for b in batches]),
            np.stack([b.slot_counts(task) for b in batches]))


def _check(settings: Sequence[Setting], seeds: Sequence[int], iters: int, batch: int) -> None:
    """Reject empty or meaningless training requests with a one-line message."""
    if not settings or not seeds:
        raise SatsimError("need at least one setting and one seed")
    if iters < 1 or batch < 1:
        raise SatsimError(f"iterations and batch size must be positive, got {iters} and {batch}")
    for s in settings:
        if not (s.eta_z > 0 and s.ratio > 0):
            raise SatsimError(f"learning rates must be positive, got eta_z={s.eta_z}, r={s.ratio}")


class _Recorder:
    """Collects the per-iteration measures of all runs in NumPy."""

    def __init__(self, task: Task, keep_z: bool) -> None:
        self.task, self.keep_z = task, keep_z
        self.rows: dict[str, list[np.ndarray]] = {k: [] for k in (
            "distinct_entropy", "distinct_share", "slot_entropy", "composition",
            "position_entropy", "loss", "change", "z")}
        self.previous: np.ndarray | None = None

    def record(self, z: np.ndarray, loss: np.ndarray, labels: np.ndarray,
               counts: np.ndarray) -> None:
        """Measure Z (C, S, K, L) with this batch's labels (S, B) and counts (S, B, slots)."""
        task = self.task
        z_slots = measures.token_logits(z, task)                              # (C, S, N, slots)
        comp = measures.composition(z_slots, task.slot_weights)
        rows = self.rows
        rows["distinct_entropy"].append(measures.distinct_entropy(z_slots, task))
        rows["distinct_share"].append(measures.distinct_share(z_slots, task))
        rows["slot_entropy"].append(measures.entropy(comp).mean(axis=-1))
        rows["composition"].append(comp.mean(axis=-2))
        per_sequence = np.take_along_axis(z_slots, labels[None, :, :, None], axis=2)
        rows["position_entropy"].append(
            measures.position_entropy(per_sequence, counts).mean(axis=-1))
        rows["loss"].append(loss)
        if self.previous is not None:
            rows["change"].append(measures.total_variation(comp, self.previous).mean(axis=-1))
        self.previous = comp
        if self.keep_z:
            rows["z"].append(z)

    def stacked(self, name: str) -> np.ndarray:
        """Return one record stacked along a new iteration axis after (C, S)."""
        return np.stack(self.rows[name], axis=2)


def train(task: Task, settings: Sequence[Setting], seeds: Sequence[int], *, iters: int = 100,
          batch: int = 128, zero_init: bool = False, loss: str = "vocab", device: str = "cpu",
          keep_z: bool = False, on_step: Callable[[int], None] | None = None) -> Runs:
    """Train every (setting, seed) run for ``iters`` SGD steps in one batched loop (float64)."""
    _check(settings, seeds, iters, batch)
    dev = resolve_device(device)
    C = len(settings)
    inits = [initial_parameters(task, seed, zero_init, loss) for seed in seeds]
    z = torch.tensor(np.stack([i[0] for i in inits]), dtype=torch.float64, device=dev)
    y = torch.tensor(np.stack([i[1] for i in inits]), dtype=torch.float64, device=dev)
    z = z.expand(C, *z.shape).clone().requires_grad_(True)
    y = y.expand(C, *y.shape).clone().requires_grad_(True)
    eta_z = torch.tensor([s.eta_z for s in settings], dtype=torch.float64, device=dev)
    eta_y = torch.tensor([s.eta_y for s in settings], dtype=torch.float64, device=dev)
    optimiser = BatchedSGD([z, y], [eta_z.view(C, 1, 1, 1), eta_y.view(C, 1, 1, 1)], MOMENTUM)

    streams = [data_stream(task, seed, iters, batch) for seed in seeds]
    labels_all = np.stack([s[0] for s in streams], axis=1)                    # (T+1, S, B)
    counts_all = np.stack([s[1] for s in streams], axis=1)                    # (T+1, S, B, J)
    targets_all = targets(task, labels_all, loss)
    slot_tokens = torch.tensor(task.slot_tokens, device=dev)
    recorder = _Recorder(task, keep_z)
    for t in range(iters + 1):
        labels = torch.tensor(labels_all[t], device=dev)
        counts = torch.tensor(counts_all[t], dtype=torch.float64, device=dev)
        losses = run_losses(z, y, torch.tensor(task.query_of(labels_all[t]), device=dev),
                            slot_tokens[labels], counts,
                            torch.tensor(targets_all[t], device=dev))
        recorder.record(z.detach().cpu().numpy().copy(), losses.detach().cpu().numpy(),
                        labels_all[t], counts_all[t])
        if t == iters:
            break
        losses.sum().backward()
        optimiser.step()
        if on_step is not None:
            on_step(t + 1)
    return Runs(task=task, settings=list(settings), seeds=list(seeds), iters=iters,
                z=z.detach().cpu().numpy(), y=y.detach().cpu().numpy(),
                distinct_entropy=recorder.stacked("distinct_entropy"),
                distinct_share=recorder.stacked("distinct_share"),
                slot_entropy=recorder.stacked("slot_entropy"),
                composition=recorder.stacked("composition"),
                position_entropy=recorder.stacked("position_entropy"),
                loss=recorder.stacked("loss"), change=recorder.stacked("change"),
                eval_counts=counts_all[iters], eval_labels=labels_all[iters], loss_kind=loss,
                z_history=recorder.stacked("z") if keep_z else None)
