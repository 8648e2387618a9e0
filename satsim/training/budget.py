"""Memory a training run needs, estimated from its settings before anything is allocated.

Calibrated on this project's machine by the peak memory of `satsim train --steps 2` on Dyck-1
(bhattamishra split) while d_model, layers, heads, d_mlp and the batch grew one at a time. The
held-out evaluation dominates: batches of up to ``EVAL_CHUNK`` strings of the longest held-out
length, every residual stream kept, take about (5 + 3·layers)·d_model + 3.5·heads·T + 2·d_mlp
values per token (T tokens per string). A training batch keeps about
layers·(30·d_model + 8·heads·T + 4·d_mlp) values per token for the backward pass. Each
parameter lives in about eight copies of its dtype (the model, its gradient, Adam's two
moments, the spec and checkpoint copies) and four float64 ones (the logged snapshots).
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from satsim.engine.resources import check_memory, strings_bytes
from satsim.errors import SatsimError
from satsim.training.config import TrainConfig, reading_data_folder

EVAL_CHUNK = 256
"""Strings per held-out evaluation batch."""
PARAMETER_COPIES, FLOAT64_COPIES = 8, 4
TOKEN_BYTES = 8 + 1
"""A padded token's id (int64) and mask; a next-symbol target adds a float32 per label."""


def parameter_count(config: TrainConfig, vocab: int, labels: int) -> int:
    """Parameters of the run's model (as :func:`satsim.training.init.initial_spec` builds it)."""
    d, h, e, m = config.d_model, config.heads, config.d_head, config.d_mlp
    norms = 2 * d if config.norm != "none" else 0
    block = 4 * h * d * e + 3 * h * e + d + 2 * d * m + m + d + 2 * norms
    positions = config.n_ctx * d if config.positional == "learned" else 0
    final = norms if config.norm == "pre" else 0
    return vocab * d + positions + config.layers * block + final + d * labels + labels


@dataclass(frozen=True)
class SplitShape:
    """How many strings a split of a run holds, their mean length and the longest."""

    strings: int
    mean_length: float
    max_length: int


def split_shapes(config: TrainConfig) -> list[SplitShape]:
    """The run's splits, training first: its preset's, or its data folder's (counted, not decoded).

    A folder's training split counts its first train_size strings, the ones a run trains on.
    """
    from languages.datasets import PRESETS
    from languages.flare import TRAIN, split_folders, token_counts

    if not config.data:
        return [SplitShape(split.size(config.train_size), (split.min_len + split.max_len) / 2,
                           split.max_len) for split in PRESETS[config.split]]
    shapes = []
    with reading_data_folder(config.data):
        for name, folder in split_folders(config.data).items():
            counts = token_counts(folder)
            counts = (counts[: config.train_size] if name == TRAIN else counts) or [0]
            shapes.append(SplitShape(len(counts), float(np.mean(counts)), max(counts)))
    return shapes


def training_bytes(config: TrainConfig, alphabet: int) -> float:
    """About how many bytes training ``config`` holds at its peak (see the module's note)."""
    splits = split_shapes(config)
    labels = 1 if config.task == "recognition" else alphabet + 1
    itemsize = np.dtype(config.dtype).itemsize
    d, h, m, layers = config.d_model, config.heads, config.d_mlp, config.layers
    parameters = parameter_count(config, alphabet + 1, labels) * (
        PARAMETER_COPIES * itemsize + FLOAT64_COPIES * 8)
    train_t = splits[0].max_length + 2
    longest = max(split.max_length for split in splits) + 2
    batch = min(config.batch_size, config.train_size) * train_t
    training = batch * layers * (30 * d + 8 * h * train_t + 4 * m)
    held_out = min(EVAL_CHUNK, config.eval_size) * longest
    evaluation = held_out * ((5 + 3 * layers) * d + 3.5 * h * longest + 2 * m)
    per_token = TOKEN_BYTES + (4 * labels if config.task != "recognition" else 0)
    data = sum(strings_bytes(split.strings, split.mean_length)
               + split.strings * (split.max_length + 1) * per_token for split in splits)
    return parameters + itemsize * max(training, evaluation) + data


def check_training_memory(config: TrainConfig, alphabet: int, runs: int = 1,
                          needed: float | None = None) -> None:
    """Refuse in one line a run (or ``runs`` side by side) that would not fit in free memory.

    ``needed`` is the run's :func:`training_bytes` where the caller has it already.
    """
    what = (f"training with d_model {config.d_model}, {config.layers} layers, "
            f"{config.heads} heads, batch {config.batch_size}")
    if runs > 1:
        what = f"{runs} runs at once, the largest {what},"
    needed = training_bytes(config, alphabet) if needed is None else needed
    check_memory(runs * needed, what,
                 "lower --d-model, --layers, --heads, --d-mlp, --batch-size or --train-size"
                 + (" or --jobs" if runs > 1 else ""))


CHECKPOINT_COPIES = 5
"""A checkpoint's bytes per parameter, in its dtype: the spec and the state (the model, Adam's
moments, snapshots); run_disk_bytes came to 0.9x and 1.2x of a run's files at d_model 8, 64."""
CHECKPOINT_EXTRA = 16_000
"""A checkpoint's bytes beside its parameters: metadata, the optimiser's and rng's state."""
METRICS_ROW_BYTES = 2_000
"""A metrics.jsonl row (measured 1.6 kB at one head, two layers)."""


def run_disk_bytes(config: TrainConfig, alphabet: int) -> float:
    """About how many bytes a whole run writes: its checkpoints, final model and metrics."""
    labels = 1 if config.task == "recognition" else alphabet + 1
    model = parameter_count(config, alphabet + 1, labels) * np.dtype(config.dtype).itemsize
    checkpoints = config.steps // config.checkpoint_every + 1  # step 0 on
    rows = config.steps // config.log_every + 1
    return (checkpoints * (CHECKPOINT_COPIES * model + CHECKPOINT_EXTRA) + model
            + rows * METRICS_ROW_BYTES)


def check_training_disk(config: TrainConfig, alphabet: int, folder: str | Path,
                        runs: int = 1) -> None:
    """Refuse in one line a run (or ``runs`` like it) whose files would not fit on the disk."""
    needed = runs * run_disk_bytes(config, alphabet)
    existing = next(p for p in (Path(folder), *Path(folder).absolute().parents) if p.exists())
    free = shutil.disk_usage(existing).free
    if needed > free:
        raise SatsimError(f"{config.steps:,} steps with a checkpoint every "
                          f"{config.checkpoint_every:,} and a metrics row every "
                          f"{config.log_every:,} write about {needed / 1e9:,.1f} GB and "
                          f"{free / 1e9:,.1f} GB is free on the disk of {existing}; lower "
                          "--steps or raise --checkpoint-every and --log-every")
