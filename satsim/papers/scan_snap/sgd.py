"""SGD with momentum on batched parameters, one learning rate per run.

Each run's update is torch.optim.SGD's with momentum μ, no dampening, no weight decay, no
Nesterov: buf ← g on the first step, then buf ← μ·buf + g; p ← p - lr·buf. Runs never mix,
because each run's gradient depends on its own parameters only.
"""

from __future__ import annotations

import torch


class BatchedSGD:
    """Momentum SGD for tensors whose leading dims index independent runs."""

    def __init__(self, params: list[torch.Tensor], lrs: list[torch.Tensor],
                 momentum: float = 0.9) -> None:
        self.params = params
        self.lrs = lrs
        self.momentum = momentum
        self.buffers: list[torch.Tensor | None] = [None] * len(params)

    @torch.no_grad()
    def step(self) -> None:
        """Update every parameter from its ``.grad``, then clear the gradients."""
        for i, (p, lr) in enumerate(zip(self.params, self.lrs)):
            if self.buffers[i] is None:
                self.buffers[i] = p.grad.detach().clone()
            else:
                self.buffers[i].mul_(self.momentum).add_(p.grad)
            p.sub_(lr * self.buffers[i])
            p.grad = None
