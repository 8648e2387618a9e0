"""What a training run is: one validated, JSON-round-tripping configuration."""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, fields
from pathlib import Path

from languages.base import LanguageError
from satsim.errors import SatsimError
from satsim.output import write_text_atomically

OPTIMIZERS = ("sgd", "adam", "adamw")
NORMS = ("pre", "post", "none")
POSITIONALS = ("none", "learned", "sinusoidal")
TRAIN_TASKS = ("recognition", "next-symbol")
DTYPES = ("float32", "float64")


@contextmanager
def reading_data_folder(folder: str) -> Iterator[None]:
    """Turn what goes wrong reading a run's data folder into one-line SatsimErrors."""
    try:
        yield
    except LanguageError as error:
        raise SatsimError(str(error)) from None
    except OSError as error:
        raise SatsimError(f"cannot read {folder}: {error.strerror or error}") from None


@dataclass(frozen=True)
class TrainConfig:
    """Every setting of a run; the run directory's config.json holds exactly these fields."""

    lang: str = "dyck1"
    task: str = "next-symbol"
    split: str = "bhattamishra"
    steps: int = 1500
    batch_size: int = 32
    optimizer: str = "adam"
    lr: float = 3e-3
    weight_decay: float = 0.0
    momentum: float = 0.0
    clip_norm: float = 0.0  # each step's gradient scaled to at most this L2 norm (0: never)
    attention_beta: float = 1.0  # the scores' inverse temperature at the last step (annealed)
    lr_patience: int = 0  # lr × lr_decay after this many checkpoints without a better monitor loss
    lr_decay: float = 0.5
    stop_patience: int = 0  # stop after this many checkpoints without a better monitor loss
    monitor: str = "validation"  # the held-out split whose cross-entropy those two watch
    layers: int = 2
    d_model: int = 16
    heads: int = 2
    d_head: int = 8
    d_mlp: int = 32
    norm: str = "pre"
    positional: str = "none"
    n_ctx: int = 256
    seed: int = 0
    train_size: int = 2000
    eval_size: int = 200
    checkpoint_every: int = 250
    log_every: int = 25
    probe_size: int = 16
    device: str = "auto"
    dtype: str = "float32"
    data: str = ""  # a FLaRe-format dataset folder to train on instead of sampling the split
    data_digest: str = ""  # its contents when the run started (a changed folder is refused)

    def __post_init__(self) -> None:
        choices = {"optimizer": OPTIMIZERS, "norm": NORMS, "positional": POSITIONALS,
                   "task": TRAIN_TASKS, "dtype": DTYPES}
        for name, allowed in choices.items():
            if getattr(self, name) not in allowed:
                raise SatsimError(f"unknown {name} {getattr(self, name)!r}; "
                                  f"known: {', '.join(allowed)}")
        for name in ("steps", "batch_size", "layers", "d_model", "heads", "d_head", "d_mlp",
                     "n_ctx", "train_size", "eval_size", "checkpoint_every", "log_every",
                     "probe_size"):
            value = getattr(self, name)
            if not isinstance(value, int) or value < 1:
                raise SatsimError(f"{name} must be a positive integer, got {value!r}")
        for name in ("seed", "lr_patience", "stop_patience"):
            value = getattr(self, name)
            if not isinstance(value, int) or value < 0:
                raise SatsimError(f"{name} must be a non-negative integer, got {value!r}")
        if not (isinstance(self.lr_decay, (int, float)) and 0 < self.lr_decay <= 1):
            raise SatsimError(f"lr_decay must be a number in (0, 1], got {self.lr_decay!r}")
        if not isinstance(self.monitor, str) or not self.monitor:
            raise SatsimError(f"monitor must name a held-out split, got {self.monitor!r}")
        for name in ("lr", "weight_decay", "momentum", "clip_norm"):
            value = getattr(self, name)
            if not (isinstance(value, (int, float)) and value >= 0 and value == value
                    and value != float("inf")):
                raise SatsimError(f"{name} must be a finite number ≥ 0, got {value!r}")
        if not isinstance(self.data, str) or not isinstance(self.data_digest, str):
            raise SatsimError("data and data_digest must be strings (a folder, its digest)")
        if self.lr == 0:
            raise SatsimError("lr must be positive")
        if not (isinstance(self.attention_beta, (int, float)) and 0 < self.attention_beta
                and math.isfinite(self.attention_beta)):
            raise SatsimError(f"attention_beta must be a finite number > 0, got "
                              f"{self.attention_beta!r}")
        if self.momentum >= 1:
            raise SatsimError(f"momentum must be below 1, got {self.momentum!r}")
        if self.batch_size > self.train_size:
            raise SatsimError(f"batch_size {self.batch_size} is more than train_size "
                              f"{self.train_size} (a batch draws distinct training strings)")
        self._check_data()

    def _check_data(self) -> None:
        """The language and split exist, and a learned table has a row for every token.

        A run on a data folder takes its lengths from the folder, which the data loader checks.
        """
        import languages
        from languages.base import LanguageError
        from languages.datasets import PRESETS

        if self.split not in PRESETS:
            raise SatsimError(f"unknown split preset {self.split!r}; known: {', '.join(PRESETS)}")
        try:
            languages.get(self.lang)
        except LanguageError as error:
            raise SatsimError(str(error)) from None
        longest = max(split.max_len for split in PRESETS[self.split])
        if self.positional == "learned" and not self.data and longest + 1 > self.n_ctx:
            raise SatsimError(f"split {self.split} has strings of up to {longest} symbols "
                              f"({longest + 1} tokens with BOS), more than the {self.n_ctx} rows "
                              "of a learned positional table (n_ctx); choose positional "
                              "sinusoidal or none, a split of shorter strings, or a larger n_ctx")

    def beta_at(self, step: int) -> float:
        """The scores' inverse temperature at ``step``.

        Geometric from 1 at step 0 to ``attention_beta`` at the last step (1 throughout by
        default).
        """
        return 1.0 if self.attention_beta == 1 else self.attention_beta ** (step / self.steps)

    def to_dict(self) -> dict:
        """The fields as a JSON-ready dict."""
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict) -> TrainConfig:
        """Rebuild a config; unknown keys are an error (a config from another version)."""
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise SatsimError(f"unknown training settings {unknown}")
        return cls(**data)

    def save(self, path: Path) -> None:
        """Write config.json."""
        text = json.dumps(self.to_dict(), indent=2) + "\n"
        write_text_atomically(path, text)

    @classmethod
    def load(cls, path: Path) -> TrainConfig:
        """Read config.json, with a one-line error if it is missing or not a config."""
        try:
            data = json.loads(Path(path).read_text())
        except FileNotFoundError:
            raise SatsimError(f"no training config at {path}") from None
        except (OSError, ValueError) as error:
            raise SatsimError(f"cannot read training config {path}: {error}") from None
        if not isinstance(data, dict):
            raise SatsimError(f"{path} is not a training config (expected a JSON object)")
        return cls.from_dict(data)


DEFAULTS = TrainConfig().to_dict()
"""Every training setting's default (for the options here and the sweep's base settings)."""


RESUMABLE = frozenset({"steps"})
"""Settings a resumed run may change: more (or fewer, not below the last checkpoint) steps."""


def resumed_config(saved: TrainConfig, settings: dict, given: set[str]) -> TrainConfig:
    """The saved config with the options given again applied where that is meaningful.

    Any other option given with a value unlike the run's is refused by name: the run's data,
    model and optimiser are fixed by its first settings.
    """
    saved_values = saved.to_dict()
    changed = sorted(name for name in given if settings[name] != saved_values[name])
    refused = [name for name in changed if name not in RESUMABLE]
    if refused:
        listed = ", ".join(f"--{n.replace('_', '-')} {settings[n]} (the run has {saved_values[n]})"
                           for n in refused)
        raise SatsimError(f"a resumed run keeps its settings; only --steps may change: {listed}")
    return TrainConfig.from_dict({**saved_values, **{n: settings[n] for n in changed}})
