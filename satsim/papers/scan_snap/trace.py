"""One setting traced every iteration: composition, entropies, z of every token, loss.

Besides a grid cell (``--trace K,ETA_Z,R``), a trace runs the setting of the paper's Figure 4
(``FIG4``): two query tokens with one next token each, zero initialisation, η_Z = η_Y = 1.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from satsim.errors import SatsimError
from satsim.output import replace_atomically
from satsim.papers.scan_snap import measures
from satsim.papers.scan_snap.data import Task
from satsim.papers.scan_snap.saturation import saturation_view
from satsim.papers.scan_snap.snap import DEFAULT_EPSILON, NOT_SNAPPED, diverged, snap_point

if TYPE_CHECKING:
    from satsim.papers.scan_snap.train import Runs


def parse_setting(text: str) -> tuple[int, float, float]:
    """Return (K, η_Z, r) from text like '3,1,5'; SatsimError if malformed or not positive."""
    parts = [p.strip() for p in text.split(",")]
    try:
        if len(parts) != 3:
            raise ValueError
        k, eta_z, ratio = int(parts[0]), float(parts[1]), float(parts[2])
    except ValueError:
        raise SatsimError(f"--trace wants K,ETA_Z,R like 3,1,5; got {text!r}") from None
    if k < 1 or not (eta_z > 0 and ratio > 0) or not np.isfinite(eta_z * ratio):
        raise SatsimError(f"--trace wants K >= 1 and positive finite rates; got {text!r}")
    return k, eta_z, ratio


@dataclass
class TraceResult:
    """Per-iteration records of one setting over several seeds."""

    runs: Runs
    """The ``train.Runs`` (one setting) with the Z history."""
    name: str
    """What was traced: 'K,η_Z,r' or a named setting such as 'fig4'."""
    zero_init: bool
    """Whether Z and Y started at zero."""
    epsilon: float
    wall_s: float

    @property
    def z_slots(self) -> np.ndarray:
        """Return z of every next token's slots per seed and iteration, (S, T+1, N, n_slots)."""
        return measures.token_logits(self.runs.z_history[0], self.runs.task)

    @property
    def snap(self) -> np.ndarray:
        """Return the snap point per seed."""
        return snap_point(self.runs.change[0], self.epsilon)

    @property
    def diverged(self) -> np.ndarray:
        """Return per seed whether training diverged (its snap point means nothing then)."""
        return diverged(self.runs.loss[0])

    def rows(self) -> list[dict]:
        """Return one dict per iteration, every measure averaged over seeds."""
        r = self.runs
        z_mean = self.z_slots.mean(axis=0)
        comp_mean = r.composition[0].mean(axis=0)
        out = []
        for t in range(r.iters + 1):
            share = float(r.distinct_share[0, :, t].mean())
            out.append({
                "t": t, "loss": float(r.loss[0, :, t].mean()),
                "distinct_share": share, "common_share": 1.0 - share,
                "entropy_tokens": float(r.slot_entropy[0, :, t].mean()),
                "entropy_distinct": float(r.distinct_entropy[0, :, t].mean()),
                "entropy_positions": float(r.position_entropy[0, :, t].mean()),
                "change": None if t == 0 else float(r.change[0, :, t - 1].mean()),
                "composition": comp_mean[t].tolist(), "z": z_mean[t].tolist()})
        return out

    def to_dict(self) -> dict:
        """Return a JSON-ready report."""
        r = self.runs
        setting = r.settings[0]
        view = saturation_view(r.z, r.task, r.eval_labels, r.eval_counts)
        task = r.task
        shared = task.n_shared
        return {"setting": self.name, "K": task.n_queries,
                "next_per_query": task.next_per_query, "common": task.n_common,
                "common_per_query": task.common_per_query, "vocab": task.n_vocab,
                "loss_kind": r.loss_kind, "zero_init": self.zero_init,
                "eta_z": setting.eta_z, "r": setting.ratio,
                "eta_y": setting.eta_y, "seeds": len(r.seeds), "iters": r.iters,
                "epsilon": self.epsilon, "wall_s": self.wall_s,
                "snap": [None if s == NOT_SNAPPED else int(s) for s in self.snap],
                "diverged": self.diverged.tolist(),
                "saturation": view.summary(),
                "slot_layout": f"slots 0-{shared - 1} shared (common) tokens, {shared}-"
                               f"{task.n_slots - 1} distinct by weight 0.1..1.0; 'composition' "
                               "is c_n by slot and 'z' z[n][slot], means over seeds (and next "
                               "tokens for 'composition')",
                "iterations": self.rows()}

    def save(self, path: str) -> None:
        """Write every per-seed array (Z history included) to an .npz file."""
        r = self.runs
        arrays = {"z_history": r.z_history[0], "y": r.y[0], "loss": r.loss[0],
                  "distinct_entropy": r.distinct_entropy[0],
                  "distinct_share": r.distinct_share[0], "slot_entropy": r.slot_entropy[0],
                  "position_entropy": r.position_entropy[0], "change": r.change[0]}

        def write(partial: Path) -> None:
            with open(partial, "wb") as handle:  # numpy would add .npz to the partial's name
                np.savez_compressed(handle, **arrays)

        replace_atomically(write, path)


def fig4_task(n_common: int = 10, common_per_query: int = 0) -> Task:
    """Return Figure 4's layout: two query tokens, one next token each."""
    return Task(2, next_per_query=1, n_common=n_common, common_per_query=common_per_query)


FIG4 = {"eta_z": 1.0, "ratio": 1.0, "zero_init": True}
"""Figure 4's training (the authors' figure_4.log): zero init, η_Z = 1, η_Y / η_Z = 1."""


def run_trace(task: Task, eta_z: float, ratio: float, seeds: int = 10, *, iters: int = 100,
              batch: int = 128, zero_init: bool = False, loss: str = "vocab",
              device: str = "cpu", epsilon: float = DEFAULT_EPSILON, name: str | None = None,
              on_step: Callable[[int], None] | None = None) -> TraceResult:
    """Train one setting for ``seeds`` seeds, keeping Z after every iteration."""
    from satsim.papers.scan_snap.train import Setting, train

    if seeds < 1:
        raise SatsimError(f"the number of seeds must be at least 1, got {seeds}")
    start = time.perf_counter()
    runs = train(task, [Setting(eta_z, ratio)], list(range(seeds)), iters=iters, batch=batch,
                 zero_init=zero_init, loss=loss, device=device, keep_z=True, on_step=on_step)
    return TraceResult(runs=runs, name=name or f"{task.n_queries},{eta_z:g},{ratio:g}",
                       zero_init=zero_init, epsilon=epsilon,
                       wall_s=time.perf_counter() - start)
