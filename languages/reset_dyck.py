"""Reset-Dyck-1: Dyck-1 with a reset symbol "1" that sets the counter back to 0.

A string is in the language iff the counter (+1 on "(", -1 on ")", 0 on "1") never goes below 0
and ends at 0; equivalently, it is u_1 1 u_2 1 ... 1 u_k with u_1 .. u_{k-1} prefixes of Dyck-1
words and u_k a Dyck-1 word. It is a one-counter language whose counter is reset, the operation
Bhattamishra et al. (2020) single out as hard for transformers.

Counting and sampling use the counter as a DFA with states 0..C, a state HIGH (counter > C) and a
dead state. For strings of length L <= 2C this is exact: a counter above C at time t > C has at
most L - t - 1 < C closes left, so it can reach 0 only through a reset, and HIGH, which ignores
brackets until a reset, agrees with the true counter on acceptance. C grows with the lengths
asked for (time and memory O(L^2) for the tables, built once per doubling of C).
"""

from __future__ import annotations

import numpy as np

from languages.base import EOS, GENERIC, Language, LanguageError, check_count
from languages.paths import PathCounter
from languages.references import BHATTAMISHRA
from languages.regular import RegularLanguage, dfa_graph
from languages.reset_segments import SegmentCounts, sample_reset_dyck

OPEN, CLOSE, RESET = "(", ")", "1"


def counter_automaton(cap: int) -> PathCounter:
    """Return the counter DFA with states 0..cap, HIGH = cap + 1 and dead = cap + 2."""
    high, dead = cap + 1, cap + 2
    delta = np.empty((cap + 3, 3), dtype=np.int64)
    c = np.arange(cap + 3)
    delta[:, 0] = np.minimum(c + 1, high)
    delta[:, 1] = np.where(c == 0, dead, np.where(c == high, high, c - 1))
    delta[:, 2] = 0
    delta[dead] = dead
    accept = c == 0
    return PathCounter(delta, accept, 0)


class ResetDyck1(Language):
    """Counter language over ( ) 1: "1" resets the counter, which must never go below 0."""

    name = "reset-dyck1"
    alphabet = (OPEN, CLOSE, RESET)
    description = 'Dyck-1 with a reset "1": the counter, set to 0 by "1", stays >= 0 and ends at 0'
    references = (BHATTAMISHRA,)
    kind = "deterministic context-free (one counter with reset)"
    negative_labels = (*GENERIC, "extra-close", "reset-blind")

    def __init__(self) -> None:
        self._cap = 64
        self.paths = counter_automaton(self._cap)
        self.segments = SegmentCounts()

    def _paths_for(self, length: int) -> PathCounter:
        """Return the counter DFA, enlarged if ``length`` needs a larger cap."""
        if length > 2 * self._cap:
            while length > 2 * self._cap:
                self._cap *= 2
            self.paths = counter_automaton(self._cap)
        return self.paths

    def with_max_depth(self, max_depth: int) -> RegularLanguage:
        """Return the sublanguage whose counter never exceeds ``max_depth`` (a DFA)."""
        cap = check_count(max_depth, "max_depth")
        if cap < 1:
            raise LanguageError("max_depth must be at least 1")

        def step(c: int, a: str) -> int | None:
            if a == RESET:
                return 0
            c += 1 if a == OPEN else -1
            return c if 0 <= c <= cap else None

        return BoundedResetDyck1(
            f"reset-dyck1-{cap}",
            dfa_graph(self.alphabet, 0, step, lambda c: c == 0),
            f"{self.description}; counter at most {cap}",
            self.references,
            "regular (depth-bounded reset-Dyck-1)",
        )

    def _counters(self, s: str) -> tuple[list[int], int]:
        """Return the counter after each prefix and the first prefix length where it was < 0."""
        ids = self.encode(s).tolist()
        c, out, dead = 0, [0], len(ids) + 1
        for i, a in enumerate(ids):
            c = 0 if a == 2 else c + (1 if a == 0 else -1)
            if c < 0 and dead > len(ids):
                dead = i + 1
            out.append(c)
        return out, dead

    def contains(self, s: str) -> bool:
        """Return True iff the counter never goes below 0 and ends at 0."""
        counters, dead = self._counters(s)
        return dead > len(s) and counters[-1] == 0

    def next_symbols(self, s: str) -> list[frozenset[str]]:
        """Return per prefix: ( and 1 always, ) iff the counter is positive, EOS iff it is 0."""
        counters, dead = self._counters(s)
        up, down = frozenset({OPEN, RESET, EOS}), frozenset({OPEN, RESET, CLOSE})
        return [
            frozenset() if i >= dead else (down if c > 0 else up) for i, c in enumerate(counters)
        ]

    def stats(self, s: str) -> dict[str, int]:
        """Return length, the largest counter value and the number of resets."""
        counters, _ = self._counters(s)
        return {"length": len(s), "max_depth": max(counters), "resets": s.count(RESET)}

    def count(self, length: int) -> int:
        """Return the number of strings of ``length`` (counter-DFA path count)."""
        length = check_count(length, "length")
        return self._paths_for(length).count(length)

    def has_positive(self, length: int) -> bool:
        """Return True: "1" * L is always in the language."""
        return True

    def is_full(self, length: int) -> bool:
        """Return True only for the empty string."""
        return length == 0

    def _positive(self, length: int, rng: np.random.Generator) -> str:
        return self._positives(length, 1, rng)[0]

    def _positives(self, length: int, k: int, rng: np.random.Generator) -> list[str]:
        return self._positives_for_lengths(np.full(k, length), rng)

    def _positives_for_lengths(self, lengths: np.ndarray, rng: np.random.Generator) -> list[str]:
        """Uniform members drawn segment by segment (see languages.reset_segments)."""
        return [sample_reset_dyck(self.segments, int(length), rng) for length in lengths]

    def _can_extra_close(self, length: int) -> bool:
        return length >= 1

    def _negs_extra_close(self, lengths: np.ndarray, rng: np.random.Generator) -> list[str]:
        """A positive of length L - 1 with one ")" inserted anywhere."""
        where = (rng.random(len(lengths)) * lengths).astype(int).tolist()
        sources = self._positives_for_lengths(lengths - 1, rng)
        return [w[:i] + CLOSE + w[i:] for w, i in zip(sources, where)]

    def _can_reset_blind(self, length: int) -> bool:
        return length >= 3

    def _negs_reset_blind(self, lengths: np.ndarray, rng: np.random.Generator) -> list[str]:
        """A Dyck-1 word with one "1" (two if L is even) inserted: fine if resets are ignored."""
        from languages.dyck1 import DYCK1

        resets = 2 - lengths % 2
        out = []
        for w, r in zip(DYCK1._positives_for_lengths(lengths - resets, rng), resets.tolist()):
            for _ in range(r):
                i = int(rng.integers(len(w) + 1))
                w = w[:i] + RESET + w[i:]
            out.append(w)
        return out


class BoundedResetDyck1(RegularLanguage):
    """Reset-Dyck-1 with a bounded counter: a DFA, reporting the same statistics."""

    _counters = ResetDyck1._counters
    stats = ResetDyck1.stats
