"""The training loop: a soft transformer on a language task, instrumented, checkpointed, resumable.

Step t computes the loss of batch t at θ_t, logs (every ``log_every`` steps, at checkpoints and at
the last step) θ_t's norms, θ_tᵀ∇L, the update θ_{t+1} − θ_t and representation similarity at
c = 1000 on fixed probe strings, then updates. Checkpoint t holds θ_t with the optimiser state;
its row adds the held-out accuracies at θ_t and the cosine to the previous checkpoint. Batches
depend on (seed, t) only, so resuming from checkpoint t replays exactly what an uninterrupted
run does (bit-for-bit on the CPU).
"""

from __future__ import annotations

import json
import math
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
import torch

import languages
from languages.base import LanguageError
from satsim.analysis.measures import representation_similarity
from satsim.errors import SatsimError
from satsim.model.io import load_spec, save_spec
from satsim.model.spec import ModelSpec
from satsim.output import write_text_atomically
from satsim.soft import SoftTransformer
from satsim.soft.device import resolve_device
from satsim.training.budget import EVAL_CHUNK, check_training_disk, check_training_memory
from satsim.training.checkpoint import (
    checkpoint_steps,
    holds_run,
    load_checkpoint,
    save_checkpoint,
    spec_path,
)
from satsim.training.config import TrainConfig
from satsim.training.data import Examples, RunData, data_digest, run_data
from satsim.training.init import initial_spec
from satsim.training.instruments import cosine, norms, parameter_record, snapshot
from satsim.training.lock import run_lock
from satsim.training.objective import loss_and_correct
from satsim.training.schedule import Plateau

REPRESENTATION_SCALE = 1000.0


def make_optimizer(config: TrainConfig, params) -> torch.optim.Optimizer:
    """The run's optimiser: SGD (with momentum), Adam or AdamW, with its weight decay."""
    if config.optimizer == "sgd":
        return torch.optim.SGD(params, lr=config.lr, momentum=config.momentum,
                               weight_decay=config.weight_decay)
    kind = torch.optim.Adam if config.optimizer == "adam" else torch.optim.AdamW
    return kind(params, lr=config.lr, weight_decay=config.weight_decay)


def _chunk_scores(model: SoftTransformer, data: Examples, task: str, beta: float):
    """Per chunk of ``data``: its strings, batch loss and right answers (no gradients)."""
    with torch.no_grad():
        for start in range(0, len(data), EVAL_CHUNK):
            batch = data.take(np.arange(start, min(start + EVAL_CHUNK, len(data))))
            logits = model(batch.tokens.to(model.device), batch.lengths, beta=beta).logits
            loss, correct = loss_and_correct(logits, batch, task)
            yield len(batch.lengths), float(loss), int(correct.sum())


def mean_loss(model: SoftTransformer, data: Examples, task: str, beta: float = 1.0) -> float:
    """The training loss of the soft model on ``data``: its batch loss, averaged over strings."""
    return sum(n * loss for n, loss, _ in _chunk_scores(model, data, task, beta)) / len(data)


def accuracy(model: SoftTransformer, data: Examples, task: str, beta: float = 1.0) -> float:
    """String accuracy of the soft model (scores times ``beta``) on ``data``."""
    return sum(right for _, _, right in _chunk_scores(model, data, task, beta)) / len(data)


@dataclass
class TrainResult:
    """What a finished run reports: where it is, its final held-out accuracies and norm."""

    run: Path
    steps: int
    resumed_from: int | None
    eval: dict[str, float]
    norm: float
    elapsed: float

    def to_dict(self) -> dict:
        """JSON-ready summary."""
        return {"run": str(self.run), "steps": self.steps, "resumed_from": self.resumed_from,
                "eval": self.eval, "norm": self.norm, "elapsed": self.elapsed}


class _Metrics:
    """metrics.jsonl: rows appended and flushed; on resume, rows from step ≥ start dropped.

    A last line cut short by a kill is dropped too; an unreadable line before it is refused.
    """

    def __init__(self, path: Path, start: int) -> None:
        self.path = path
        self.rows: list[dict] = []  # the rows kept, parsed (a resumed schedule replays them)
        kept = []
        lines = path.read_text().splitlines() if path.exists() else []
        for number, line in enumerate(lines, 1):
            if not line.strip():
                continue
            try:
                step = json.loads(line)["step"]
            except (ValueError, KeyError, TypeError):
                if number == len(lines):
                    break  # half-written by a killed run: its step is redone
                raise SatsimError(f"{path} line {number} is not a metrics row; the run's "
                                  "metrics are damaged") from None
            if step < start:
                kept.append(line)
                self.rows.append(json.loads(line))
        text = "".join(line + "\n" for line in kept)
        write_text_atomically(path, text)

    def write(self, row: dict) -> None:
        with self.path.open("a") as handle:
            handle.write(json.dumps(row) + "\n")


class Trainer:
    """One run: the model, optimiser, data and run directory, from a config."""

    def __init__(self, config: TrainConfig, run: Path) -> None:
        self.config, self.run = config, Path(run)
        try:
            language = languages.get(config.lang)
        except (KeyError, LanguageError) as error:
            raise SatsimError(str(error).strip("'\"")) from None
        device = resolve_device(config.device)
        self.spec0 = initial_spec(config, language.alphabet)
        self.data: RunData = run_data(config, self.spec0)
        self.model = SoftTransformer.from_spec(self.spec0, device=device)
        self.optimizer = make_optimizer(config, self.model.parameters())
        self.probe = self.data.train.strings[: config.probe_size]
        self.previous: dict[str, torch.Tensor] | None = None
        self.elapsed = 0.0

    def restore(self, notice: Callable[[str], None], at_most: int | None = None) -> int | None:
        """Load the last intact checkpoint (at step ``at_most`` or before), if any; its step.

        A damaged newer checkpoint (a truncated or corrupt file) is passed over with a notice.
        """
        point = None
        steps = [s for s in checkpoint_steps(self.run) if at_most is None or s <= at_most]
        for step in reversed(steps):
            try:
                point = load_checkpoint(self.run, step)
                break
            except SatsimError as error:
                notice(f"checkpoint {step} is damaged ({error}); trying the one before it")
        if point is None:
            return None
        tensors = point.spec.tensors()
        with torch.no_grad():
            for name, param in self.model.named_parameters():
                if name not in tensors or tensors[name].shape != tuple(param.shape):
                    raise SatsimError(f"checkpoint {point.step} does not match the run's model "
                                      f"at {name}")
                param.copy_(torch.from_numpy(np.array(tensors[name])))
        self.optimizer.load_state_dict(point.state["optimizer"])
        self.previous = point.state.get("previous")
        self.elapsed = float(point.state.get("elapsed", 0.0))
        return point.step

    def held_out(self, step: int) -> dict[str, float]:
        """String accuracy on every held-out set at the current θ (and step ``step``'s β)."""
        beta = self.config.beta_at(step)
        return {name: accuracy(self.model, data, self.config.task, beta)
                for name, data in self.data.held_out.items()}

    def monitor_loss(self, step: int) -> float:
        """The mean loss on the monitored held-out split at the current θ (and step's β)."""
        return mean_loss(self.model, self.data.held_out[self.config.monitor], self.config.task,
                         self.config.beta_at(step))

    @property
    def lr(self) -> float:
        """The learning rate the next step uses."""
        return float(self.optimizer.param_groups[0]["lr"])

    @lr.setter
    def lr(self, value: float) -> None:
        for group in self.optimizer.param_groups:
            group["lr"] = value

    def spec_at(self, step: int) -> ModelSpec:
        """The model as a spec at step ``step``: θ, with that step's β in its score scales.

        The saved spec computes what training computed: its soft twin is the trained function,
        and its limit is θ's (a constant factor on the scores leaves the limit as it is).
        """
        spec, beta = self.model.to_spec(), self.config.beta_at(step)
        if beta == 1:
            return spec
        blocks = tuple(block if block.attn is None else replace(
            block, attn=replace(block.attn, scale=beta * block.attn.score_scale))
            for block in spec.blocks)
        return replace(spec, blocks=blocks)

    def checkpoint_cosine(self, step: int) -> float | None:
        """cos(θ_step, θ at the checkpoint before it), read from disk (None for the first)."""
        earlier = [s for s in checkpoint_steps(self.run) if s < step]
        if not earlier:
            return None
        before = load_spec(str(spec_path(self.run, earlier[-1]))).tensors()
        previous = {name: torch.from_numpy(np.array(before[name], dtype=np.float64))
                    for name, _ in self.model.named_parameters()}
        return cosine(snapshot(self.model.named_parameters()), previous)

    def checkpoint(self, step: int) -> None:
        """Save θ_step (with step's β, :meth:`spec_at`) with the optimiser state."""
        state = {"optimizer": self.optimizer.state_dict(), "previous": self.previous,
                 "elapsed": torch.tensor(self.elapsed, dtype=torch.float64)}
        if self.previous is None:
            del state["previous"]
        save_checkpoint(self.run, step, self.spec_at(step), state)

    def step(self, t: int, logged: bool) -> dict | None:
        """One optimiser step on batch t; the metrics row of θ_t when ``logged``."""
        config = self.config
        batch = self.data.batch(config.seed, t, config.batch_size)
        logits = self.model(batch.tokens.to(self.model.device), batch.lengths,
                            beta=config.beta_at(t)).logits
        loss, correct = loss_and_correct(logits, batch, config.task)
        self.optimizer.zero_grad(set_to_none=True)
        loss.backward()
        check_loss(float(loss.detach()), t)
        if config.clip_norm:
            torch.nn.utils.clip_grad_norm_(self.model.parameters(), config.clip_norm)
        if not logged:
            self.optimizer.step()
            return None
        named = list(self.model.named_parameters())
        before = self.observe(t)
        grad = snapshot((name, p.grad if p.grad is not None else torch.zeros_like(p))
                        for name, p in named)
        self.optimizer.step()
        return self.logged_row(t, float(loss.detach()), float(correct.float().mean()), before,
                               grad)

    def observe(self, step: int) -> tuple[dict[str, torch.Tensor], float]:
        """θ (float64 copies) and the probe's representation similarity, before an update."""
        similarity = representation_similarity(self.spec_at(step), self.probe,
                                               REPRESENTATION_SCALE, device="cpu")
        return snapshot(self.model.named_parameters()), similarity

    def logged_row(self, t: int, loss: float, accuracy: float,
                   before: tuple[dict[str, torch.Tensor], float],
                   grad: dict[str, torch.Tensor]) -> dict:
        """The metrics row of θ_t, once the update to θ_{t+1} is done (``before``: observe())."""
        theta, similarity = before
        after = snapshot(self.model.named_parameters())
        row = {"step": t, "loss": loss, "accuracy": accuracy,
               **parameter_record(theta, grad, after, self.previous),
               "representation_similarity": similarity, "lr": self.lr}
        self.previous = theta
        return row


def check_loss(loss: float, t: int) -> None:
    """Refuse a loss that is no longer finite (the run diverged)."""
    if not math.isfinite(loss):
        raise SatsimError(f"the loss became {loss} at step {t}; lower the lr")


def train(config: TrainConfig, run: str | Path, *, resume: bool = False,
          progress: Callable[[int], None] | None = None,
          notice: Callable[[str], None] | None = None,
          on_start: Callable[[int], None] | None = None) -> TrainResult:
    """Train a run into directory ``run`` (or resume it from its last intact checkpoint).

    The run folder is locked while training: a second writer is refused, never interleaved.
    ``progress`` hears each step done, ``notice`` what a user should know, ``on_start`` the step
    training starts from.
    """
    run = Path(run)
    alphabet = len(languages.get(config.lang).alphabet)
    check_training_memory(config, alphabet)  # before any write
    check_training_disk(config, alphabet, run)
    with run_lock(run):
        return _train(config, run, resume, progress, notice or _to_stderr, on_start)


def _to_stderr(message: str) -> None:
    print(message, file=sys.stderr)


def _train(config: TrainConfig, run: Path, resume: bool, progress: Callable[[int], None] | None,
           notice: Callable[[str], None], on_start: Callable[[int], None] | None) -> TrainResult:
    course = Course.open(config, run, resume, notice, on_start)
    for t in range(course.start, config.steps):
        logged = course.before(t)
        if course.stopped:
            break
        course.after(t, course.trainer.step(t, logged))
        if progress is not None:
            progress(1)
    return course.finish()


class Course:
    """A run's bookkeeping around its steps: held-out evaluations, checkpoints, metrics rows.

    The loop here and the stacked group trainer (:mod:`satsim.training.group`) share it, so a
    run trained either way leaves the same files.
    """

    def __init__(self, trainer: Trainer, start: int) -> None:
        self.trainer, self.start = trainer, start
        self.metrics = _Metrics(trainer.run / "metrics.jsonl", start)
        self.clock = time.perf_counter() - trainer.elapsed
        self.evaluation: dict[str, float] | None = None
        self.turn: float | None = None
        self.plateau = Plateau.replayed(trainer.config, self.metrics.rows)
        trainer.lr = self.plateau.lr  # the checkpoint's may be one decay ahead
        self.monitored: float | None = None
        self.stopped: int | None = None  # the step at which the schedule stopped the run

    @classmethod
    def open(cls, config: TrainConfig, run: Path, resume: bool, notice: Callable[[str], None],
             on_start: Callable[[int], None] | None = None, at_most: int | None = None
             ) -> Course:
        """Build the run's trainer, restore a checkpoint (≤ ``at_most``) when resuming, save."""
        if holds_run(run) and not resume:
            raise SatsimError(f"{run} already holds a run; resume it or choose another --out")
        if config.data and not config.data_digest:  # fixed now: a changed folder is refused later
            config = replace(config, data_digest=data_digest(config))
        trainer = Trainer(config, run)
        for note in trainer.data.notes:
            notice(note)
        start = (trainer.restore(notice, at_most) if resume else None) or 0
        if start:
            notice(f"resuming {run} from step {start}")
        if on_start is not None:
            on_start(start)
        if start > config.steps:
            raise SatsimError(f"{run} is already at step {start}, past --steps {config.steps}")
        if (config.lr_patience or config.stop_patience) and config.monitor not in \
                trainer.data.held_out:
            raise SatsimError(f"monitor {config.monitor!r} is not a held-out split of this run; "
                              f"it has {', '.join(trainer.data.held_out)}")
        config.save(run / "config.json")
        return cls(trainer, start)

    def before(self, t: int) -> bool:
        """Evaluate and checkpoint θ_t where due; return whether step t's row is logged."""
        trainer, config = self.trainer, self.trainer.config
        at_checkpoint = t % config.checkpoint_every == 0
        self.evaluation = trainer.held_out(t) if at_checkpoint else None
        self.turn = trainer.checkpoint_cosine(t) if at_checkpoint else None
        if at_checkpoint and t > self.start or t == 0:
            trainer.elapsed = time.perf_counter() - self.clock
            trainer.checkpoint(t)
        self.monitored = None
        if at_checkpoint and self.plateau.on:
            self.monitored = trainer.monitor_loss(t)
            if t > 0 and self.plateau.update(self.monitored):
                self.stopped = t
            trainer.lr = self.plateau.lr
        return at_checkpoint or t % config.log_every == 0 or t == config.steps - 1

    def after(self, t: int, row: dict | None) -> None:
        """Write step t's metrics row (with the evaluation made before it), if it has one."""
        if row is None:
            return
        row["elapsed"] = time.perf_counter() - self.clock
        if self.evaluation is not None:
            row["eval"] = self.evaluation
            row["checkpoint_cosine"] = self.turn
        if self.monitored is not None:
            row["monitor_loss"] = self.monitored
        self.metrics.write(row)

    def finish(self) -> TrainResult:
        """Evaluate and save the final model, write summary.json (the run is then done).

        A run the schedule stopped ends at that step: its final model is θ there.
        """
        trainer, run = self.trainer, self.trainer.run
        end = trainer.config.steps if self.stopped is None else self.stopped
        final_eval = trainer.held_out(end)
        trainer.elapsed = time.perf_counter() - self.clock
        trainer.checkpoint(end)
        final = trainer.spec_at(end)
        save_spec(final, run / "final.safetensors")
        norm = norms(snapshot(trainer.model.named_parameters()))[0]
        result = TrainResult(run, end, self.start or None, final_eval, norm, trainer.elapsed)
        summary = json.dumps(result.to_dict(), indent=2) + "\n"  # the sweep reads it as "done"
        write_text_atomically(run / "summary.json", summary)
        return result
