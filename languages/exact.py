"""Exact random choices with big integers: uniform integers below n, weighted choices, Dyck words.

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


NUMPY_BOUND = 1 << 62  # numpy's bounded integers are exact and uniform below this


def below(n: int, rng: np.random.Generator) -> int:
    """Return a uniform integer in [0, n), exactly, faster than ``uniform_below`` for small n.

    numpy's bounded integers (exact, by rejection) when n <= 2**62, else ``uniform_below``; the
    two draw different streams from one seed, so samplers whose output is fixed keep theirs.
    """
    if 1 <= n <= NUMPY_BOUND:
        return int(rng.integers(n))
    return uniform_below(n, rng)


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

    def pick(self, rng: np.random.Generator) -> int:
        """Return one index, exactly distributed as the weights (through ``below``)."""
        return bisect_right(self.cumulative, below(self.total, rng))


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


def uniform_dyck_steps(length: int, k: int, rng: np.random.Generator) -> np.ndarray:
    """Return k independent uniform Dyck words of even ``length`` as +1/-1 rows (cycle lemma)."""
    # Cycle lemma. Let x be a uniformly random arrangement of m "(" (+1) and m+1 ")" (-1), with
    # prefix sums S_0 = 0, S_k = x_1 + ... + x_k, S_{2m+1} = -1. Let k* be the FIRST index where
    # S attains its minimum (k* >= 1, since S_{2m+1} = -1 < S_0). The rotation starting after k*,
    # y = x_{k*+1} .. x_{2m+1} x_1 .. x_{k*}, has prefix sums >= 0 for all proper prefixes:
    #   on the first part they are S_j - S_{k*} >= 0 (S_{k*} is the minimum);
    #   on the wrapped part they are -1 - S_{k*} + S_i with i < k*, and S_i >= S_{k*} + 1 because
    #   k* is the first minimum, so they are >= 0 too.
    # No other start j works: a later S_k < S_j gives a prefix sum S_k - S_j < 0, and an earlier
    # S_k <= S_j (k < j) gives a wrapped prefix sum -1 - S_j + S_k < 0. So y is unique. Its
    # length-2m prefix has sum >= 0 and its total is -1, so y ends in ")" and y minus that ")" is a
    # Dyck word. Conversely, for a Dyck word w the 2m+1 rotations of w + ")" are pairwise distinct
    # (a period p | 2m+1 would make (2m+1)/p divide m, but m and 2m+1 are coprime) and all map
    # back to w. So every Dyck word of length 2m has exactly 2m+1 preimages among the C(2m+1, m)
    # equally likely arrangements: the output is exactly uniform (Catalan(m) = C(2m+1, m)/(2m+1)).
    m = length // 2
    chunks = [np.zeros((0, 2 * m), dtype=np.int8)]
    rows = max(1, (1 << 20) // (length + 1))  # vectorise over rows, about 1M cells per chunk
    for start in range(0, k, rows):
        r = min(rows, k - start)
        x = np.full((r, 2 * m + 1), -1, dtype=np.int8)
        x[:, :m] = 1
        x = rng.permuted(x, axis=1)  # each row an independent uniform arrangement
        k_star = np.argmin(np.cumsum(x, axis=1, dtype=np.int64), axis=1) + 1  # first minimum
        chunks.append(
            np.take_along_axis(x, (k_star[:, None] + np.arange(2 * m)) % (2 * m + 1), axis=1)
        )
    return np.concatenate(chunks)
