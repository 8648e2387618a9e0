"""Dyck-1: balanced strings over "(" and ")" -- exact uniform sampling, hard negatives, depth."""

from __future__ import annotations

from math import comb

import numpy as np

from languages.base import EOS, Language, check_count
from languages.dyck import Dyck
from languages.exact import uniform_dyck_steps
from languages.registry import register

OPEN, CLOSE = "(", ")"
_NEXT = (frozenset(), frozenset({OPEN, EOS}), frozenset({OPEN, CLOSE}))  # dead, depth 0, depth>0


def _to_str(steps: np.ndarray) -> str:
    """Turn a +1/-1 step array into a string: +1 is "(" (byte 40), -1 is ")" (byte 41)."""
    return (40 + (steps < 0)).astype(np.uint8).tobytes().decode("ascii")


def shuffled_steps(n_open: int, n_close: int, rng: np.random.Generator) -> np.ndarray:
    """Return a uniformly random arrangement of n_open +1s and n_close -1s."""
    steps = np.full(n_open + n_close, -1, dtype=np.int8)
    steps[:n_open] = 1
    return rng.permutation(steps)


def _uniform_dycks(length: int, k: int, rng: np.random.Generator) -> list[str]:
    """Return k independent uniform Dyck words of even ``length`` (cycle lemma, no big integers)."""
    y = uniform_dyck_steps(length, k, rng)
    text = _to_str(y.reshape(-1))  # row-major: row i is text[i * length : (i + 1) * length]
    return [text[i * length : (i + 1) * length] for i in range(k)]


def _uniform_dyck(length: int, rng: np.random.Generator) -> str:
    """Return one uniformly random Dyck word of even ``length``."""
    return _uniform_dycks(length, 1, rng)[0]


class Dyck1(Language):
    """Dyck-1: strings of "(" and ")" whose depth never goes below 0 and ends at 0."""

    name = "dyck1"
    alphabet = (OPEN, CLOSE)
    description = "balanced parentheses over one bracket pair: depth never negative, ends at 0"
    references = (
        "Bhattamishra, Ahuja, Goyal 2020 (EMNLP): On the ability and limitations of transformers",
        "Hahn 2020 (TACL): Theoretical limitations of self-attention",
        "Yao et al. 2021 (ACL): Self-attention networks can process bounded hierarchical languages",
        "Butoi et al. 2025: FLaRe, training neural networks as recognizers of formal languages",
    )
    negative_labels = ("flip", "insert", "delete", "dip-once", "wrong-order", "random")
    length_note = "dyck1 strings have even length"
    kind = "deterministic context-free"
    pairs = ("()",)

    def with_max_depth(self, max_depth: int) -> Language:
        """Return Dyck-1 words of nesting depth <= max_depth (the language dyck-1-M)."""
        return Dyck(1, check_count(max_depth, "max_depth"))

    # ---- oracle, depth, next symbols, counts --------------------------------------------

    def depth_profile(self, s: str) -> np.ndarray:
        """Return the int64 depths after each prefix s[:0] .. s[:len(s)] (first entry 0)."""
        steps = 1 - 2 * self.encode(s).astype(np.int64)
        depths = np.zeros(len(steps) + 1, dtype=np.int64)
        np.cumsum(steps, out=depths[1:])
        return depths

    def depth(self, s: str) -> int:
        """Return the final depth of ``s``: number of "(" minus number of ")"."""
        return int(self.depth_profile(s)[-1])

    def max_depth(self, s: str) -> int:
        """Return the maximum nesting depth reached by any prefix of ``s``."""
        return int(self.depth_profile(s).max())

    def stats(self, s: str) -> dict[str, int]:
        """Return length, final depth, and minimum and maximum prefix depth of ``s``."""
        d = self.depth_profile(s)
        return {
            "length": len(s),
            "depth": int(d[-1]),
            "min_depth": int(d.min()),
            "max_depth": int(d.max()),
        }

    def contains(self, s: str) -> bool:
        """Return True iff no prefix of ``s`` has depth below 0 and ``s`` ends at depth 0."""
        d = self.depth_profile(s)
        return bool(d[-1] == 0 and d.min() >= 0)

    def next_symbols(self, s: str) -> list[frozenset[str]]:
        """Return per prefix: "(" always, ")" iff depth > 0, EOS iff depth 0; empty once dead."""
        d = self.depth_profile(s)
        alive = np.minimum.accumulate(d) >= 0
        code = np.where(alive, np.where(d == 0, 1, 2), 0)
        return [_NEXT[c] for c in code.tolist()]

    def count(self, length: int) -> int:
        """Return the number of Dyck words of ``length``: Catalan(length/2), or 0 if odd."""
        length = check_count(length, "length")
        m = length // 2
        return 0 if length % 2 else comb(2 * m, m) // (m + 1)

    def has_positive(self, length: int) -> bool:
        """Return True iff ``length`` is even."""
        return length % 2 == 0

    # ---- sampling -----------------------------------------------------------------------

    def _positive(self, length: int, rng: np.random.Generator) -> str:
        return _uniform_dyck(length, rng)

    def _positives(self, length: int, k: int, rng: np.random.Generator) -> list[str]:
        return _uniform_dycks(length, k, rng)

    def generators_for(self, length: int) -> tuple[str, ...]:
        """Return "flip", "dip-once", "wrong-order", "random" (even) or "insert", ... (odd)."""
        if length <= 0:
            return ()
        if length % 2:
            return ("insert", "delete", "random")
        return ("flip", "dip-once", "wrong-order", "random")

    def _neg_flip(self, length: int, rng: np.random.Generator) -> str:
        """Flip one symbol of a positive (the final depth becomes +-2)."""
        w = _uniform_dyck(length, rng)
        i = int(rng.integers(length))
        return w[:i] + (CLOSE if w[i] == OPEN else OPEN) + w[i + 1 :]

    def _neg_insert(self, length: int, rng: np.random.Generator) -> str:
        """Insert one random symbol at a random place of a positive of length L-1."""
        w = _uniform_dyck(length - 1, rng)
        i = int(rng.integers(length))
        return w[:i] + self.alphabet[int(rng.integers(2))] + w[i:]

    def _neg_delete(self, length: int, rng: np.random.Generator) -> str:
        """Delete one random symbol of a positive of length L+1."""
        w = _uniform_dyck(length + 1, rng)
        i = int(rng.integers(length + 1))
        return w[:i] + w[i + 1 :]

    def _neg_dip_once(self, length: int, rng: np.random.Generator) -> str:
        """Return u + ")(" + v for Dyck words u, v: positive u()v with a top-level "()" swapped."""
        # The split |u| = 2a is uniform over 0 .. L/2 - 1, so the single dip to depth -1 falls
        # anywhere in the string rather than mostly at the ends; u and v are uniform given a.
        a = int(rng.integers(length // 2))
        return _uniform_dyck(2 * a, rng) + CLOSE + OPEN + _uniform_dyck(length - 2 - 2 * a, rng)

    def _neg_wrong_order(self, length: int, rng: np.random.Generator) -> str:
        """Shuffle L/2 "(" and L/2 ")" uniformly (Dyck words are rejected by the caller)."""
        return _to_str(shuffled_steps(length // 2, length // 2, rng))

    def _neg_random(self, length: int, rng: np.random.Generator) -> str:
        """Draw a uniformly random string of ``length`` (positives are rejected by the caller)."""
        return _to_str(rng.integers(0, 2, size=length, dtype=np.int8) * -2 + 1)


DYCK1 = register(Dyck1())


def depth_profile(s: str) -> np.ndarray:
    """Return the Dyck-1 depth after each prefix of ``s`` (len(s) + 1 entries)."""
    return DYCK1.depth_profile(s)


def depth(s: str) -> int:
    """Return the final Dyck-1 depth of ``s``."""
    return DYCK1.depth(s)


def max_depth(s: str) -> int:
    """Return the maximum Dyck-1 nesting depth of ``s``."""
    return DYCK1.max_depth(s)
