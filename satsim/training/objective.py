"""The training loss and string accuracy: binary cross-entropy on the readout logits.

Recognition reads the last position's one logit against the label; next-symbol reads every
real position's logits against its multi-hot set of allowed next symbols (the mean over those
entries). A string is right when every decision (logit > 0) matches its target.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from satsim.training.data import Examples


def readout(logits: torch.Tensor, batch: Examples, task: str) -> torch.Tensor:
    """The logits the task reads: (B,) at the last position, or (B, T, K) unchanged."""
    if task == "recognition":
        last = (batch.lengths - 1).to(logits.device)
        return logits[torch.arange(len(last), device=logits.device), last, 0]
    return logits


def loss_and_correct(logits: torch.Tensor, batch: Examples, task: str
                     ) -> tuple[torch.Tensor, torch.Tensor]:
    """Mean BCE loss and a (B,) bool tensor: is every decision of the string right."""
    read = readout(logits, batch, task)
    targets = batch.targets.to(read.device, read.dtype)
    if task == "recognition":
        loss = F.binary_cross_entropy_with_logits(read, targets)
        return loss, (read > 0) == (targets > 0.5)
    mask = batch.mask.to(read.device)
    per_entry = F.binary_cross_entropy_with_logits(read, targets, reduction="none")
    weights = mask[..., None].to(read.dtype).expand_as(per_entry)
    loss = (per_entry * weights).sum() / weights.sum()
    wrong = ((read > 0) != (targets > 0.5)) & mask[..., None]
    return loss, ~wrong.flatten(1).any(dim=1)


def stacked_loss_and_correct(read: torch.Tensor, targets: torch.Tensor, mask: torch.Tensor,
                             task: str, weights: torch.Tensor
                             ) -> tuple[torch.Tensor, torch.Tensor]:
    """:func:`loss_and_correct` of M models at once: losses (M,), rightness (M, B).

    ``read`` is what :func:`readout` gives per model, with a leading model axis; ``weights``
    (M, B) is 1 on a model's strings and 0 on the rows that pad a smaller batch.
    """
    targets = targets.to(read.dtype)
    if task == "recognition":
        per_string = F.binary_cross_entropy_with_logits(read, targets, reduction="none")
        loss = (per_string * weights).sum(dim=1) / weights.sum(dim=1)
        return loss, (read > 0) == (targets > 0.5)
    per_entry = F.binary_cross_entropy_with_logits(read, targets, reduction="none")
    entries = (mask[..., None].to(read.dtype) * weights[:, :, None, None]).expand_as(per_entry)
    loss = (per_entry * entries).sum(dim=(1, 2, 3)) / entries.sum(dim=(1, 2, 3))
    wrong = ((read > 0) != (targets > 0.5)) & mask[..., None]
    return loss, ~wrong.flatten(2).any(dim=2)
