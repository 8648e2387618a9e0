"""FLaRe's learning-rate decay and early stopping, both driven by a held-out cross-entropy.

At every checkpoint after step 0 the run's ``monitor`` split is scored by its mean
cross-entropy. A checkpoint improves when that is strictly below the best so far. With
``lr_patience`` P, the learning rate is multiplied by ``lr_decay`` at the P-th checkpoint in a
row without improvement (counting again from zero after each decay, and not changed when the
change would be at most 1e-8), as torch's ``ReduceLROnPlateau`` does with FLaRe's settings
(patience P − 1, threshold 0). With ``stop_patience`` S, training stops at the S-th
checkpoint in a row without improvement (rau's ``UpdatesWithoutImprovement``). FLaRe uses
P = 5, decay 0.5 and S = 10. The state is a function of the checkpoints' losses, so a resumed
run rebuilds it from its metrics rows.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass

MIN_CHANGE = 1e-8
"""A decay that would change the learning rate by at most this is skipped (torch's eps)."""


@dataclass
class Plateau:
    """The schedule's state: learning rate, best loss and checkpoints without improvement."""

    lr: float
    lr_patience: int = 0
    lr_decay: float = 0.5
    stop_patience: int = 0
    best: float = math.inf
    since_best: int = 0
    since_decay: int = 0

    @property
    def on(self) -> bool:
        """Whether the schedule does anything (a patience is set)."""
        return bool(self.lr_patience or self.stop_patience)

    def update(self, loss: float) -> bool:
        """Take one checkpoint's monitored loss; return whether training stops here."""
        if loss < self.best:
            self.best, self.since_best, self.since_decay = loss, 0, 0
        else:
            self.since_best += 1
            self.since_decay += 1
        if self.lr_patience and self.since_decay >= self.lr_patience:
            decayed = self.lr * self.lr_decay
            if self.lr - decayed > MIN_CHANGE:
                self.lr = decayed
            self.since_decay = 0
        return bool(self.stop_patience) and self.since_best >= self.stop_patience

    @classmethod
    def replayed(cls, config, rows: Iterable[dict]) -> Plateau:
        """The state after the monitored losses of ``rows`` (metrics rows, in step order)."""
        plateau = cls(config.lr, config.lr_patience, config.lr_decay, config.stop_patience)
        for row in rows:
            if row.get("step", 0) > 0 and "monitor_loss" in row:
                plateau.update(row["monitor_loss"])
        return plateau
