"""Fast uniform sampling of Reset-Dyck-1 strings by segments, for lengths in the thousands.

A member of length L is u_1 1 u_2 1 … 1 u_k: u_1 … u_{k-1} are Dyck prefixes (paths that never
go below 0, any end height) and u_k is a Dyck word. With P(m) = C(m, ⌊m/2⌋) Dyck prefixes and
D(m) Dyck words of length m, the counts obey N(L) = D(L) + Σ_{m<L} P(m) N(L-1-m). We keep them
as float64 logarithms (so probabilities carry a relative error of about 1e-12, not an
approximation in the method). A string is drawn segment by segment: it either ends now with a
Dyck word, with probability D(rem)/N(rem), or it continues with a prefix of length m, with
probability P(m) N(rem-1-m)/N(rem). These weights fall geometrically in m, so the scan over m
is short.

A uniform Dyck prefix of length m comes from a uniform arrangement of ⌈m/2⌉ opens and ⌊m/2⌋
closes. Each close that reaches a new minimum becomes an open. This is a bijection onto the
non-negative paths of length m, checked exhaustively in the tests.
"""

from __future__ import annotations

from math import lgamma

import numpy as np

from languages.dyck1 import shuffled_steps
from languages.exact import uniform_dyck_steps


def _log_binomial(n: np.ndarray, k: np.ndarray) -> np.ndarray:
    lg = np.vectorize(lgamma)
    return lg(n + 1.0) - lg(k + 1.0) - lg(n - k + 1.0)


class SegmentCounts:
    """Log-counts of Reset-Dyck-1 strings, their segments, grown on demand."""

    def __init__(self) -> None:
        self._grow(64)

    def _grow(self, length: int) -> None:
        m = np.arange(length + 1, dtype=np.float64)
        self.log_prefix = _log_binomial(m, np.floor(m / 2))
        half = m / 2
        log_dyck = _log_binomial(m, half) - np.log(half + 1)
        self.log_dyck = np.where(np.arange(length + 1) % 2 == 0, log_dyck, -np.inf)
        log_n = np.empty(length + 1)
        log_n[0] = 0.0
        for total in range(1, length + 1):
            terms = self.log_prefix[:total] + log_n[total - 1 :: -1]
            top = max(terms.max(), self.log_dyck[total])
            mass = np.exp(terms - top).sum() + np.exp(self.log_dyck[total] - top)
            log_n[total] = top + np.log(mass)
        self.log_n = log_n

    def ensure(self, length: int) -> None:
        """Make the tables cover strings of ``length`` symbols."""
        if length >= len(self.log_n):
            self._grow(max(length, 2 * (len(self.log_n) - 1)))


def uniform_prefix_steps(length: int, rng: np.random.Generator) -> np.ndarray:
    """A uniform non-negative ±1 path of ``length`` steps (any end height)."""
    steps = shuffled_steps((length + 1) // 2, length // 2, rng)
    heights = np.cumsum(steps, dtype=np.int64)
    previous_low = np.minimum.accumulate(np.concatenate([[0], heights]))[:-1]
    steps[heights < previous_low] = 1
    return steps


def sample_reset_dyck(counts: SegmentCounts, length: int, rng: np.random.Generator) -> str:
    """One uniform Reset-Dyck-1 string of ``length`` symbols (``length`` must have members)."""
    counts.ensure(length)
    pieces: list[np.ndarray] = []
    remaining = length
    while True:
        total = counts.log_n[remaining]
        draw = rng.random()
        accumulated = np.exp(counts.log_dyck[remaining] - total)
        if draw < accumulated:
            pieces.append(uniform_dyck_steps(remaining, 1, rng)[0])
            break
        m = 0
        while m < remaining - 1:
            accumulated += np.exp(counts.log_prefix[m] + counts.log_n[remaining - 1 - m] - total)
            if draw < accumulated:
                break
            m += 1
        pieces.append(uniform_prefix_steps(m, rng))
        pieces.append(np.zeros(1, dtype=np.int8))  # the reset
        remaining -= m + 1
    steps = np.concatenate(pieces)
    codes = np.where(steps == 1, ord("("), np.where(steps == -1, ord(")"), ord("1")))
    return codes.astype(np.uint8).tobytes().decode("ascii")
