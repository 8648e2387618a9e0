"""Training and held-out data of a run: records of a split preset as padded tensors.

The training set is fixed by (language, task, split, train_size, seed); the batch of step t is a
function of (seed, t) alone, so a resumed run sees exactly the batches an uninterrupted one does.
Held-out sets: "validation" (fresh strings from the training lengths, none of them trained on)
and every test split of the preset, each capped at eval_size strings.

With ``data`` (a folder in FLaRe's layout, languages.flare) the run reads its strings instead:
the first train_size of the root split to train on, every datasets/<name> split held out, and
for next-symbol the positives with the folder's own next-symbol sets.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

import languages
from languages.base import LanguageError
from languages.datasets import PRESETS, build
from languages.flare import (
    TRAIN,
    check_folder_language,
    dataset_digest,
    read_dataset,
    records_of_split,
)
from satsim.errors import SatsimError
from satsim.model.spec import ModelSpec
from satsim.training.config import TrainConfig, reading_data_folder


@dataclass
class Examples:
    """Strings with their padded token ids (BOS first), lengths and targets."""

    strings: list[str]
    tokens: torch.Tensor  # (N, T) int64
    lengths: torch.Tensor  # (N,) tokens per string, BOS included
    targets: torch.Tensor  # (N,) labels, or (N, T, K) next-symbol multi-hot
    mask: torch.Tensor  # (N, T) positions that carry a target (next-symbol)

    def take(self, rows: np.ndarray) -> Examples:
        """The examples at ``rows``, trimmed to their longest string."""
        index = torch.from_numpy(np.asarray(rows, dtype=np.int64))
        width = int(self.lengths[index].max())
        targets = self.targets[index]
        if targets.ndim == 3:
            targets = targets[:, :width]
        return Examples([self.strings[i] for i in rows], self.tokens[index, :width],
                        self.lengths[index], targets, self.mask[index, :width])

    def __len__(self) -> int:
        return len(self.strings)


def examples(spec: ModelSpec, records: list[dict], task: str) -> Examples:
    """Turn dataset records into tensors for ``spec`` (its vocab and output labels)."""
    if not records:
        raise SatsimError("no strings to train or test on")
    from satsim.model.encoding import encode_batch, pad_ids

    ids = encode_batch(spec, [r["string"] for r in records])
    padded, lengths_array = pad_ids(ids)
    tokens, lengths = torch.from_numpy(padded), torch.from_numpy(lengths_array)
    width = tokens.shape[1]
    mask = torch.arange(width)[None, :] < lengths[:, None]
    if task == "recognition":
        targets = torch.tensor([float(r["label"]) for r in records])
    else:
        targets = torch.zeros((len(ids), width, len(spec.output.labels)))
        for row, r in enumerate(records):
            targets[row, : len(r["next"])] = torch.tensor(r["next"], dtype=torch.float32)
    return Examples([r["string"] for r in records], tokens, lengths, targets, mask)


def _records(config: TrainConfig) -> dict[str, list[dict]]:
    """The preset's records by split name, plus a validation split from the training lengths."""
    try:
        language = languages.get(config.lang)
        split_names = [split.name for split in PRESETS[config.split]]
        by_split: dict[str, list[dict]] = {name: [] for name in split_names}
        for row in build(language, config.train_size, preset=config.split, task=config.task,
                         seed=config.seed):
            by_split[row["split"]].append(row)
        train = PRESETS[config.split][0]
        seen = {r["string"] for r in by_split[train.name]}
        fresh = build(language, 2 * config.eval_size + len(seen) // 4, min_len=train.min_len,
                      max_len=train.max_len, task=config.task, seed=config.seed + 7919)
        by_split["validation"] = [r for r in fresh if r["string"] not in seen]
    except LanguageError as error:
        raise SatsimError(str(error)) from None
    return by_split


def _folder_records(config: TrainConfig) -> tuple[dict[str, list[dict]], list[str]]:
    """A FLaRe-format folder's records by split, and notes on what was left out."""
    notes = []
    with reading_data_folder(config.data):
        if config.data_digest and dataset_digest(config.data) != config.data_digest:
            raise SatsimError(f"{config.data} changed since the run started; train a new run "
                              "on it, or restore the folder")
        language = languages.get(config.lang)
        check_folder_language(config.data, language.name)
        by_split = {}
        for name, split in read_dataset(config.data, language).items():
            if config.task == "next-symbol" and split.next_symbols is None and name != TRAIN:
                notes.append(f"held-out split {name} has no next-symbols.jsonl: left out")
                continue
            by_split[name] = records_of_split(language, split, config.task)
    train = by_split[TRAIN]
    if len(train) > config.train_size:
        notes.append(f"training on the first {config.train_size} of the {len(train)} strings "
                     f"of {config.data}")
        by_split[TRAIN] = train[: config.train_size]
    return by_split, notes


def data_digest(config: TrainConfig) -> str:
    """The digest of the run's data folder (SatsimError if it cannot be read)."""
    with reading_data_folder(config.data):
        return dataset_digest(config.data)


@dataclass
class RunData:
    """The training examples and the held-out sets of a run, and notes on its data."""

    train: Examples
    held_out: dict[str, Examples]
    notes: tuple[str, ...] = ()

    def batch(self, seed: int, step: int, size: int) -> Examples:
        """The batch of ``step``: ``size`` training examples drawn by (seed, step) alone."""
        return self.train.take(self.batch_rows(seed, step, size))

    def batch_rows(self, seed: int, step: int, size: int) -> np.ndarray:
        """The training rows of the batch of ``step``, ascending."""
        rng = np.random.default_rng([seed, 31, step])
        return np.sort(rng.choice(len(self.train), size=min(size, len(self.train)),
                                  replace=False))


def run_data(config: TrainConfig, spec: ModelSpec) -> RunData:
    """Build the run's data from its config (deterministic in the config and its data folder)."""
    if config.data:
        (by_split, notes), train_name = _folder_records(config), TRAIN
    else:
        by_split, notes, train_name = _records(config), [], PRESETS[config.split][0].name
    held_out = {}
    for name, rows in by_split.items():
        if name != train_name and rows:
            held_out[name] = examples(spec, rows[: config.eval_size], config.task)
    return RunData(examples(spec, by_split[train_name], config.task), held_out, tuple(notes))
