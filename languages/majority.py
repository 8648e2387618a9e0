"""Majority: strings over {a, b} with strictly more a than b."""

from __future__ import annotations

from math import comb

import numpy as np

from languages.base import EOS, GENERIC, Language, check_count
from languages.references import BUTOI_FLARE, HAHN, HAO, MERRILL


class Majority(Language):
    """Strings over {a, b} with more a than b."""

    name = "majority"
    alphabet = ("a", "b")
    description = "strings over {a, b} with strictly more a than b"
    references = (HAHN, HAO, MERRILL, BUTOI_FLARE)
    kind = "deterministic context-free (counter)"
    negative_labels = (*GENERIC, "near-tie")

    def _margins(self, s: str) -> np.ndarray:
        """Return #a - #b after each prefix."""
        steps = 1 - 2 * self.encode(s).astype(np.int64)
        return np.concatenate([[0], np.cumsum(steps)])

    def contains(self, s: str) -> bool:
        """Return True iff ``s`` has more a than b."""
        return bool(self._margins(s)[-1] > 0)

    def next_symbols(self, s: str) -> list[frozenset[str]]:
        """Return per prefix: a and b always (more a can follow), EOS iff more a than b."""
        with_eos, without = frozenset({"a", "b", EOS}), frozenset({"a", "b"})
        return [with_eos if m > 0 else without for m in self._margins(s).tolist()]

    def stats(self, s: str) -> dict[str, int]:
        """Return length and the margin #a - #b."""
        return {"length": len(s), "margin": int(self._margins(s)[-1])}

    def count(self, length: int) -> int:
        """Return sum over i > L/2 of C(L, i) = (2^L - [L even] C(L, L/2)) / 2."""
        n = check_count(length, "length")
        return (2**n - (comb(n, n // 2) if n % 2 == 0 else 0)) // 2

    def has_positive(self, length: int) -> bool:
        """Return True iff ``length`` >= 1."""
        return length >= 1

    def is_full(self, length: int) -> bool:
        """Return False: b^L is never in the language."""
        return False

    def _positive(self, length: int, rng: np.random.Generator) -> str:
        return self._positives(length, 1, rng)[0]

    def _positives(self, length: int, k: int, rng: np.random.Generator) -> list[str]:
        # Rejection from uniform strings is exactly uniform over the accepted ones, and accepts
        # with probability count / 2^L >= 1/4 (L >= 1), so it is also fast.
        out: list[str] = []
        while len(out) < k:
            need = k - len(out)
            bits = rng.integers(2, size=(3 * need + 8, length), dtype=np.int64)
            keep = bits[2 * bits.sum(axis=1) < length][:need]
            out.extend(self._decode_rows(keep))
        return out

    def _can_insert(self, length: int) -> bool:
        """Inserting b breaks only a margin-1 positive (odd length L - 1)."""
        return length >= 2 and length % 2 == 0

    def _can_delete(self, length: int) -> bool:
        """Deleting an a breaks only a margin-1 positive (odd length L + 1)."""
        return length % 2 == 0

    def _can_near_tie(self, length: int) -> bool:
        return True

    def _negs_near_tie(self, lengths: np.ndarray, rng: np.random.Generator) -> list[str]:
        """As many a as b (L even) or one fewer (L odd), uniformly arranged: the nearest misses."""
        return [
            self.decode(rng.permutation(np.repeat([0, 1], [n // 2, n - n // 2])))
            for n in lengths.tolist()
        ]
