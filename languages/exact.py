"""Exact random choices with big integers: uniform integers below n and weighted choices.

Counts of strings outgrow float64 quickly (Catalan(250) has 490 bits), so every choice whose
weights are string counts is made with Python integers here, never with rounded probabilities.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Sequence
from itertools import accumulate

import numpy as np

U53 = 1 << 53  # rng.random() returns k / 2**53 for a uniform integer k in [0, 2**53)


def random_bits(bits: int, rng: np.random.Generator) -> int:
    """Return a uniform integer in [0, 2**bits)."""
    if bits <= 0:
        return 0
    value = int.from_bytes(rng.bytes((bits + 7) // 8), "little")
    return value & ((1 << bits) - 1)


def uniform_below(n: int, rng: np.random.Generator) -> int:
    """Return a uniform integer in [0, n) for a Python int n >= 1 (rejection, exact)."""
    if n < 1:
        raise ValueError(f"uniform_below needs n >= 1, got {n}")
    bits = (n - 1).bit_length()
    while True:
        value = random_bits(bits, rng)
        if value < n:
            return value


class WeightedChoice:
    """Exact draws of an index with probability weights[i] / sum(weights) (Python ints)."""

    def __init__(self, weights: Sequence[int]) -> None:
        self.cumulative = list(accumulate(int(w) for w in weights))
        if not self.cumulative or self.cumulative[-1] <= 0:
            raise ValueError("WeightedChoice needs a positive total weight")

    @property
    def total(self) -> int:
        """Return the sum of the weights."""
        return self.cumulative[-1]

    def draw(self, rng: np.random.Generator) -> int:
        """Return one index, exactly distributed as the weights."""
        return bisect_right(self.cumulative, uniform_below(self.total, rng))


def refine_choice(cumulative: Sequence[int], u: float, rng: np.random.Generator) -> int:
    """Return the index j with cumulative[j-1] <= V * total < cumulative[j], exactly.

    V is the uniform real whose first 53 bits are the float ``u`` from ``rng.random()``; further
    bits are drawn from ``rng`` only while the comparison is still undecided. ``cumulative`` are
    the running sums of the weights (Python ints), the last one the total.
    """
    total = cumulative[-1]
    k, bits = int(u * U53), 53  # V lies in [k / 2**bits, (k + 1) / 2**bits)
    while True:
        low = k * total  # V * total * 2**bits lies in [low, low + total)
        j = bisect_right(cumulative, low >> bits)  # the first j with cumulative[j] << bits > low
        if low + total <= cumulative[j] << bits:
            return j
        k, bits = (k << 32) | random_bits(32, rng), bits + 32
