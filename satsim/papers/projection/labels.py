"""Fake labels at a forced accuracy: the model's own argmax, with a fixed share replaced.

For ``n`` samples and accuracy ``a``, exactly ``round(n·(1−a))`` labels differ from the argmax.
Which samples are wrong and which wrong class each gets is drawn once per seed and reused for
every scale c and every accuracy (common random numbers):

- a random permutation of the samples; at accuracy a the first ``round(n·(1−a))`` of it are
  wrong, so the wrong set at a higher accuracy is a subset of the one at a lower accuracy;
- a random offset in 1 … classes−1 per sample; a wrong sample's label is
  ``(argmax + offset) mod classes``, uniform over the classes other than the argmax.

So curves at different c and different a differ only through c and a, not through a fresh draw
of labels.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from satsim.errors import SatsimError


def mistakes(n: int, accuracy: float) -> int:
    """Number of wrong labels at ``accuracy``: round(n·(1−a)), halves rounded up."""
    if not 0.0 <= accuracy <= 1.0:
        raise SatsimError(f"accuracy must be in [0, 1], got {accuracy}")
    return int(np.floor(n * (1.0 - accuracy) + 0.5 + 1e-9))


@dataclass(frozen=True)
class LabelNoise:
    """The per-seed draw that turns argmax predictions into labels at any accuracy."""

    order: np.ndarray    # (n,) permutation: order[:m] are the wrong samples when m are wrong
    offsets: np.ndarray  # (n,) in 1 … classes−1
    classes: int

    @classmethod
    def draw(cls, n: int, classes: int, seed: int) -> LabelNoise:
        """Draw the permutation and offsets for ``n`` samples from ``seed``."""
        rng = np.random.default_rng([seed, 0x1abe1])
        return cls(order=rng.permutation(n), offsets=rng.integers(1, classes, size=n),
                   classes=classes)

    def labels(self, predicted: np.ndarray, accuracy: float) -> np.ndarray:
        """Labels equal to ``predicted`` except on round(n·(1−a)) samples, which differ."""
        predicted = np.asarray(predicted, dtype=np.int64)
        wrong = self.order[:mistakes(len(predicted), accuracy)]
        out = predicted.copy()
        out[wrong] = (predicted[wrong] + self.offsets[wrong]) % self.classes
        return out
