"""Train many runs of one architecture at once: one stacked step for M models.

Runs that share a :func:`group_key` (architecture, task, dtype, device, optimiser settings; not
seed, language, data, batch size, learning rate or number of steps) train as one stack
(:mod:`satsim.training.stacked`): each step draws every model's own batch (its seed, its step),
runs one batched forward and backward pass, and updates every model with its own learning rate
and step count (:mod:`satsim.training.stacked_optim`). Around the step each run keeps its own
bookkeeping (:class:`satsim.training.loop.Course`): held-out evaluations, checkpoints, metrics
rows, summary. A run leaves the stack when it reaches its steps or its loss diverges, and stops
costing work. A run trained in a group follows its run trained alone to rounding (the batched
kernels sum in another order) and leaves the same files; a group resumed after a kill ends bit
for bit as an uninterrupted group.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from contextlib import ExitStack
from pathlib import Path

import numpy as np
import torch

from satsim.errors import SatsimError
from satsim.training.checkpoint import checkpoint_steps
from satsim.training.config import TrainConfig
from satsim.training.lock import run_lock
from satsim.training.loop import Course, Trainer, TrainResult, check_loss
from satsim.training.objective import stacked_loss_and_correct
from satsim.training.stacked import Layout, check_stackable, stacked_forward
from satsim.training.stacked_optim import StackedOptimizer

Progress = Callable[[int, int], None]
"""Hears (index of the run in the group, steps it just made)."""


def clip_rows(grad: torch.Tensor, limits: torch.Tensor) -> torch.Tensor:
    """Each model's gradient (a row) scaled to at most its limit in L2 norm (0: left alone).

    The scale is ``torch.nn.utils.clip_grad_norm_``'s. A row's padding (embedding rows of a
    smaller vocabulary) has zero gradient, so the row's norm is its model's.
    """
    scale = torch.clamp(limits / (torch.linalg.vector_norm(grad, dim=1) + 1e-6), max=1.0)
    return grad * torch.where(limits > 0, scale, torch.ones_like(scale))[:, None]


def group_key(config: TrainConfig, labels: int) -> tuple:
    """What runs must share to train in one stack (``labels``: the model's output logits)."""
    shared = ("task", "layers", "d_model", "heads", "d_head", "d_mlp", "norm", "positional",
              "n_ctx", "dtype", "device", "optimizer", "weight_decay", "momentum")
    values = tuple(getattr(config, name) for name in shared)
    return (*values, labels, config.lr if config.optimizer == "sgd" else None)


def train_group(configs: Sequence[TrainConfig], runs: Sequence[str | Path], *,
                resume: bool | Sequence[bool] = False, progress: Progress | None = None,
                notice: Callable[[str], None] | None = None
                ) -> list[TrainResult | SatsimError]:
    """Train (or resume) every run of the group into its folder; per run, its result or error.

    ``resume`` (one flag, or one per run) resumes a run from its last intact checkpoint. The
    runs must share a :func:`group_key`. A run that fails for its own reasons (a diverging
    loss, a folder holding another run) gives its SatsimError and the others go on.
    """
    notice = notice or (lambda message: print(message, file=sys.stderr))
    if any(c.optimizer == "sgd" and c.lr_patience for c in configs):
        raise SatsimError("lr_patience with sgd cannot train in a stack (its rows share one "
                          "learning rate); train these runs one by one (group size 1)")
    results: list[TrainResult | SatsimError | None] = [None] * len(configs)
    resumes = [resume] * len(configs) if isinstance(resume, bool) else list(resume)
    common = common_checkpoint([Path(run) for run, again in zip(runs, resumes) if again])
    with ExitStack() as stack:
        courses = {}
        for index, (config, run) in enumerate(zip(configs, runs)):
            try:
                stack.enter_context(run_lock(Path(run)))
                courses[index] = Course.open(config, Path(run), resumes[index], notice,
                                             at_most=common)
            except SatsimError as error:
                results[index] = error
        if courses:
            results = _train_stack(courses, results, progress)
    return results  # type: ignore[return-value]


def common_checkpoint(runs: Sequence[Path]) -> int | None:
    """The last step at which every resumed run that holds checkpoints has one (None: no limit).

    A stacked model's float rounding depends on which models share its stack, so a group
    resumes exactly only where its members stood together: a kill between two members'
    checkpoints of one step leaves one a step ahead, and a finished member must train its
    last steps again beside the others.
    """
    held = [set(checkpoint_steps(run)) for run in runs]
    held = [steps for steps in held if steps]
    together = set.intersection(*held) if held else set()
    return max(together) if together else None


def _train_stack(courses: dict[int, Course], results: list, progress: Progress | None) -> list:
    """Train the courses as one stack until each is done or has failed."""
    stack = Stack([course.trainer for course in courses.values()],
                  [course.start for course in courses.values()])
    members = list(courses)
    while members:
        finished = [row for row, index in enumerate(members)
                    if stack.steps[row] >= courses[index].trainer.config.steps]
        for row in finished:  # at its steps (a run resumed from its last checkpoint may be)
            stack.sync_state(row)
            results[members[row]] = courses[members[row]].finish()
        if finished:
            keep = [row for row in range(len(members)) if row not in finished]
            stack.keep(keep)
            members = [members[row] for row in keep]
            continue
        logged = []
        for row, index in enumerate(members):
            course = courses[index]
            if stack.steps[row] % course.trainer.config.checkpoint_every == 0:
                stack.sync_state(row)  # a checkpoint saves the trainer's torch optimiser state
            logged.append(course.before(stack.steps[row]))
        stopped = [row for row, index in enumerate(members) if courses[index].stopped is not None]
        if stopped:  # the schedule ended these runs at this checkpoint: they take no step
            for row in stopped:
                stack.sync_state(row)
                results[members[row]] = courses[members[row]].finish()
            keep = [row for row in range(len(members)) if row not in stopped]
            if not keep:
                break
            stack.keep(keep)
            members, logged = [members[row] for row in keep], [logged[row] for row in keep]
        stack.optimizer.lrs = [courses[index].trainer.lr for index in members]
        try:
            _, rows = stack.step(logged)
        except _Diverged as diverged:
            for row in diverged.rows:
                results[members[row]] = diverged.errors[row]
            keep = [row for row in range(len(members)) if row not in diverged.rows]
            stack.keep(keep)
            members = [members[row] for row in keep]
            continue
        for row, index in enumerate(members):
            courses[index].after(stack.steps[row] - 1, rows[row])
            if progress is not None:
                progress(index, 1)
    return results


class _Diverged(Exception):
    def __init__(self, errors: dict[int, SatsimError]) -> None:
        super().__init__("diverged")
        self.errors, self.rows = errors, set(errors)


class Stack:
    """The trainers' models as one flat parameter buffer, their data and optimiser stacked.

    Each trainer's module keeps its own parameters as views of its row, so its evaluations,
    checkpoints and instruments read the stack's current values.
    """

    def __init__(self, trainers: list[Trainer], starts: list[int] | None = None,
                 graphs: bool = True) -> None:
        self.trainers = trainers
        self.graphs = graphs  # on CUDA, replay plain steps as a captured graph
        first = trainers[0]
        config = first.config
        self.task = config.task
        for trainer in trainers:
            check_stackable(trainer.spec0)
        self.layout = Layout.of([trainer.spec0 for trainer in trainers])
        device, dtype = first.model.device, first.model.dtype
        self.flat = torch.zeros((len(trainers), self.layout.size), dtype=dtype, device=device)
        for row, trainer in enumerate(trainers):
            views = self.layout.model_views(self.flat, row, trainer.spec0)
            for name, param in trainer.model.named_parameters():
                views[name].copy_(param.detach())
        self.flat.requires_grad_(True)
        self.optimizer = StackedOptimizer(config.optimizer, [t.config.lr for t in trainers],
                                          config.weight_decay, config.momentum, self.flat)
        self.clip_norms = torch.tensor([t.config.clip_norm for t in trainers], dtype=dtype,
                                       device=device)
        self.annealing = any(t.config.attention_beta != 1 for t in trainers)
        self.betas = torch.ones(len(trainers), dtype=dtype, device=device)  # each row's β
        self.steps = list(starts or [0] * len(trainers))  # each model's next step t
        for row, trainer in enumerate(trainers):
            state = trainer.optimizer.state_dict()["state"]
            self.optimizer.load_row(row, state, self._state_views(row))
        self._point()
        self.sizes = [min(t.config.batch_size, len(t.data.train)) for t in trainers]
        self.batch = max(self.sizes)  # a smaller batch is padded with rows of weight 0
        self.weights = (torch.arange(self.batch)[None, :] < torch.tensor(self.sizes)[:, None]).to(
            device=device, dtype=dtype)
        self.width = max(int(t.data.train.tokens.shape[1]) for t in trainers)
        self._stack_data(device)
        self.picked = torch.zeros((len(trainers), self.batch), dtype=torch.long, device=device)
        self.constants: dict = {}
        self.graph: tuple | None = None
        self.graph_error: str | None = None

    def _state_views(self, row: int) -> list[tuple[torch.Tensor, torch.Tensor]]:
        spec = self.trainers[row].spec0
        first = self.layout.model_views(self.optimizer.first, row, spec)
        second = self.layout.model_views(self.optimizer.second, row, spec)
        return [(first[name], second[name]) for name, _ in
                self.trainers[row].model.named_parameters()]

    def _point(self) -> None:
        """Make each trainer's parameters views of its row of the buffer."""
        data = self.flat.detach()
        for row, trainer in enumerate(self.trainers):
            views = self.layout.model_views(data, row, trainer.spec0)
            for name, param in trainer.model.named_parameters():
                param.data = views[name]

    def _stack_data(self, device: torch.device) -> None:
        """Every model's training examples padded to one width: (M, N, W) and friends."""
        trains = [trainer.data.train for trainer in self.trainers]
        count = max(len(train) for train in trains)
        models, width = len(trains), self.width
        self.tokens = torch.zeros((models, count, width), dtype=torch.long)
        self.lengths = torch.ones((models, count), dtype=torch.long)
        self.mask = torch.zeros((models, count, width), dtype=torch.bool)
        recognition = self.task == "recognition"
        shape = (models, count) if recognition else (
            models, count, width, trains[0].targets.shape[-1])
        self.targets = torch.zeros(shape, dtype=trains[0].targets.dtype)
        for row, train in enumerate(trains):
            n, w = train.tokens.shape
            self.tokens[row, :n, :w] = train.tokens
            self.lengths[row, :n] = train.lengths
            self.mask[row, :n, :w] = train.mask
            if recognition:
                self.targets[row, :n] = train.targets
            else:
                self.targets[row, :n, :w] = train.targets
        for name in ("tokens", "lengths", "mask", "targets"):
            setattr(self, name, getattr(self, name).to(device))

    def keep(self, rows: list[int]) -> None:
        """Keep only the models at ``rows`` (the others are done): they stop costing work."""
        index = torch.tensor(rows, dtype=torch.long, device=self.flat.device)
        self.flat = self.flat.detach()[index].requires_grad_(True)
        self.optimizer.keep(index)
        self.trainers = [self.trainers[row] for row in rows]
        self.steps = [self.steps[row] for row in rows]
        self.sizes = [self.sizes[row] for row in rows]
        for name in ("tokens", "lengths", "mask", "targets", "picked", "weights", "clip_norms",
                     "betas"):
            setattr(self, name, getattr(self, name)[index])
        self.graph = None
        self._point()

    def sync_state(self, row: int) -> None:
        """Put row ``row``'s optimiser state into its trainer's torch optimiser (to checkpoint)."""
        trainer = self.trainers[row]
        params = list(trainer.model.parameters())
        trainer.optimizer.state.clear()
        for index, entry in self.optimizer.torch_state(row, self._state_views(row)).items():
            trainer.optimizer.state[params[index]] = entry

    def step(self, logged: list[bool]) -> tuple[list[float], list[dict | None]]:
        """One step of every model on its batch; per model its loss and, where logged, its row.

        On CUDA a step with no logged row replays the forward and backward pass captured once
        as a CUDA graph (recaptured when a model leaves): the launches no longer dominate.
        """
        picks = np.zeros((len(self.trainers), self.batch), dtype=np.int64)
        for row, (trainer, step) in enumerate(zip(self.trainers, self.steps)):
            rows = trainer.data.batch_rows(trainer.config.seed, step, self.sizes[row])
            picks[row, :len(rows)] = rows
        self.picked.copy_(torch.from_numpy(picks))
        if self.annealing:  # in place: a captured CUDA graph reads this tensor
            self.betas.copy_(torch.tensor([t.config.beta_at(step) for t, step in
                                           zip(self.trainers, self.steps)],
                                          dtype=torch.float64))
        replayed = None
        if self.graphs and self.flat.device.type == "cuda" and not any(logged):
            replayed = self._replay()
        if replayed is not None:
            loss, correct, grad = replayed
        else:
            self.flat.grad = None
            loss, correct = self._forward()
            loss.sum().backward()
            grad = self.flat.grad
        losses = loss.detach().cpu().tolist()
        errors = {}
        for row, value in enumerate(losses):
            try:
                check_loss(value, self.steps[row])
            except SatsimError as error:
                errors[row] = error
        if errors:
            raise _Diverged(errors)
        if bool((self.clip_norms > 0).any()):
            grad = clip_rows(grad, self.clip_norms)
        weights = self.weights.float()  # float32, as a run alone takes its mean
        accuracy = ((correct * weights).sum(dim=1) / weights.sum(dim=1)).cpu().tolist()
        before = {row: self.trainers[row].observe(self.steps[row])
                  for row, flag in enumerate(logged) if flag}
        grads = {row: self._grad_snapshot(grad, row) for row in before}
        self.optimizer.step(self.flat.detach(), grad)
        rows = []
        for row, trainer in enumerate(self.trainers):
            rows.append(trainer.logged_row(self.steps[row], losses[row], accuracy[row],
                                           before[row], grads[row]) if row in before else None)
            self.steps[row] += 1
        return losses, rows

    def _forward(self) -> tuple[torch.Tensor, torch.Tensor]:
        """Losses (M,) and string rightness (M, B) of every model on its batch ``picked``."""
        models = torch.arange(len(self.trainers), device=self.flat.device)[:, None]
        tokens, lengths = self.tokens[models, self.picked], self.lengths[models, self.picked]
        recognition = self.task == "recognition"
        logits = stacked_forward(self.layout.spec, self.layout.views(self.flat), tokens,
                                 lengths - 1 if recognition else None, self.constants,
                                 self.betas if self.annealing else None)
        read = logits[..., 0] if recognition else logits
        return stacked_loss_and_correct(read, self.targets[models, self.picked],
                                        self.mask[models, self.picked], self.task, self.weights)

    def _replay(self) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor] | None:
        """The forward and backward pass as a CUDA graph: captured once, replayed after.

        A capture that torch refuses turns graphs off for this stack (``graph_error`` says
        why) and the step runs eagerly: slower, the same numbers.
        """
        if self.graph is None:
            try:
                self._capture()
            except RuntimeError as error:
                self.graphs, self.graph_error = False, str(error).splitlines()[0]
                self.flat.grad = None
                return None
        graph, loss, correct, grad = self.graph
        graph.replay()
        return loss, correct, grad

    def _capture(self) -> None:
        """Capture the forward and backward pass after two warm-up passes on a side stream."""
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):  # warm-up, as torch's graph capture asks
            for _ in range(2):
                self.flat.grad = None
                self._forward()[0].sum().backward()
        torch.cuda.current_stream().wait_stream(side)
        self.flat.grad = None
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            loss, correct = self._forward()
            loss.sum().backward()
        self.graph = (graph, loss, correct, self.flat.grad)
        self.flat.grad = None  # eager steps must not accumulate into the graph's gradient

    def _grad_snapshot(self, grad: torch.Tensor, row: int) -> dict[str, torch.Tensor]:
        """Model ``row``'s gradient by parameter name, float64 on the CPU."""
        views = self.layout.model_views(grad, row, self.trainers[row].spec0)
        return {name: views[name].detach().to("cpu", torch.float64).clone()
                for name, _ in self.trainers[row].model.named_parameters()}
