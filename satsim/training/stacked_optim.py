"""The optimiser of a stack of models: torch's Adam, AdamW and SGD, element for element, per row.

Each row of the flat (M, P) buffer is one model with its own learning rate and step count; the
update does the operations of torch's single-tensor implementation in the same order, so a row
moves exactly as ``torch.optim`` would move that model alone. The state converts to and from each
model's ``torch.optim`` state dict, so a checkpoint written by a stack resumes alone and back.
SGD rows share one learning rate (torch adds ``-lr·grad`` fused, which a per-row factor cannot
repeat bit for bit); the group trainer keys its groups by it.
"""

from __future__ import annotations

import torch
from torch import Tensor

BETAS = (0.9, 0.999)
EPS = 1e-8
"""torch.optim.Adam's defaults, which every run uses."""


class StackedOptimizer:
    """Adam, AdamW or SGD over the rows of a flat parameter buffer, one model per row."""

    def __init__(self, kind: str, lrs: list[float], weight_decay: float, momentum: float,
                 flat: Tensor) -> None:
        self.kind, self.weight_decay, self.momentum = kind, weight_decay, momentum
        self.lrs = list(lrs)
        self.steps = [0] * len(lrs)
        self.first = torch.zeros_like(flat)  # Adam's exp_avg, or SGD's momentum buffer
        self.second = torch.zeros_like(flat)  # Adam's exp_avg_sq
        if kind == "sgd" and len(set(lrs)) > 1:
            raise ValueError("the rows of a stacked SGD share one learning rate")

    def step(self, flat: Tensor, grad: Tensor) -> None:
        """Update every row of ``flat`` by its gradient row (one more step for every row)."""
        self.steps = [step + 1 for step in self.steps]
        self.apply(flat, grad, self.factors(flat))

    def factors(self, flat: Tensor) -> dict[str, Tensor]:
        """The per-row numbers of the current steps, as (M, 1) columns on ``flat``'s device."""
        beta1, beta2 = BETAS
        column = {"decay": [1 - lr * self.weight_decay for lr in self.lrs],
                  "root": [(1 - beta2**step) ** 0.5 for step in self.steps],
                  "size": [-(lr / (1 - beta1**step)) for lr, step in zip(self.lrs, self.steps)],
                  "fresh": [float(step == 1) for step in self.steps]}
        return {name: torch.tensor(values, dtype=flat.dtype).to(flat.device)[:, None]
                for name, values in column.items()}

    @torch.no_grad()
    def apply(self, flat: Tensor, grad: Tensor, factors: dict[str, Tensor]) -> None:
        """The update of the current steps, with their :meth:`factors`."""
        if self.kind == "sgd":
            self._sgd(flat, grad, factors["fresh"] > 0)
            return
        beta1, beta2 = BETAS
        if self.weight_decay != 0:
            if self.kind == "adamw":
                flat.mul_(factors["decay"])
            else:
                grad = grad.add(flat, alpha=self.weight_decay)
        self.first.lerp_(grad, 1 - beta1)
        self.second.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
        denom = (self.second.sqrt() / factors["root"]).add_(EPS)
        flat.add_(factors["size"] * self.first / denom)  # addcdiv: self + value·t1/t2, in order

    def _sgd(self, flat: Tensor, grad: Tensor, fresh: Tensor) -> None:
        if self.weight_decay != 0:
            grad = grad.add(flat, alpha=self.weight_decay)
        if self.momentum != 0:
            self.first.mul_(self.momentum).add_(grad, alpha=1)
            self.first.copy_(torch.where(fresh, grad, self.first))
            grad = self.first
        flat.add_(grad, alpha=-self.lrs[0])

    def keep(self, rows: Tensor) -> None:
        """Keep only ``rows`` (the models still training), in that order."""
        listed = rows.tolist()
        self.lrs = [self.lrs[i] for i in listed]
        self.steps = [self.steps[i] for i in listed]
        self.first, self.second = self.first[rows], self.second[rows]

    def load_row(self, row: int, state: dict, views: list[tuple[Tensor, Tensor]]) -> None:
        """Set row ``row`` from a torch optimiser's per-parameter ``state`` (views: first, second).

        ``state`` maps each parameter index (in the model's order) to torch's entry for it.
        """
        steps = set()
        for index, (first, second) in enumerate(views):
            entry = state.get(index, {})
            if self.kind == "sgd":
                buffer = entry.get("momentum_buffer")
                if buffer is not None:
                    first.copy_(buffer)
                steps.add(1 if buffer is not None else 0)
                continue
            if "exp_avg" in entry:
                first.copy_(entry["exp_avg"])
                second.copy_(entry["exp_avg_sq"])
                steps.add(int(entry["step"]))
            else:
                steps.add(0)
        if len(steps) > 1:
            raise ValueError("the parameters of one model are at different optimiser steps")
        self.steps[row] = steps.pop() if steps else 0

    def torch_state(self, row: int, views: list[tuple[Tensor, Tensor]]) -> dict:
        """Row ``row``'s state as torch's per-parameter state (copies, not views)."""
        if self.steps[row] == 0:
            return {}
        if self.kind == "sgd":
            if self.momentum == 0:
                return {}
            return {index: {"momentum_buffer": first.clone()}
                    for index, (first, _) in enumerate(views)}
        step = torch.tensor(float(self.steps[row]), dtype=torch.float32)
        return {index: {"step": step.clone(), "exp_avg": first.clone(),
                        "exp_avg_sq": second.clone()}
                for index, (first, second) in enumerate(views)}
