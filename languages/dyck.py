"""Dyck-k (k bracket types) and its depth-bounded sublanguages dyck-k-m.

A Dyck-k word is a Dyck-1 shape plus a type for each matched pair, so count(2m) = D(2m) k^m and a
uniform word is a uniform shape (cycle lemma, or the depth DFA when bounded) with uniform types.
"""

from __future__ import annotations

import numpy as np

from languages.base import EOS, GENERIC, Language, LanguageError, check_count
from languages.references import BHATTAMISHRA, BUTOI_FLARE, HAHN, YAO
from languages.shapes import PAIRS, DyckShapes, sample_many, typed
from languages.shuffle import BracketNearMisses, ShuffleDyck

MAX_BOUND = 1000


class Dyck(BracketNearMisses, Language):
    """Well-nested strings over k bracket pairs, optionally of nesting depth at most max_depth."""

    kind = "deterministic context-free"
    length_note = "Dyck strings have even length"

    def __init__(self, k: int, max_depth: int | None = None) -> None:
        if not 1 <= k <= len(PAIRS):
            raise LanguageError(f"Dyck-k needs 1 to {len(PAIRS)} bracket types, got {k}")
        if max_depth is not None and not 1 <= max_depth <= MAX_BOUND:
            raise LanguageError(f"Dyck depth bound must be in 1..{MAX_BOUND}, got {max_depth}")
        if k == 1 and max_depth is None:
            raise LanguageError("unbounded Dyck-1 is the language dyck1")
        self.k, self.max_depth = k, max_depth
        self.pairs = PAIRS[:k]
        self.alphabet = tuple("".join(self.pairs))
        self._closer = {o: c for o, c in self.pairs}
        if max_depth is None:
            self.name = f"dyck{k}"
            self.description = f"well-nested brackets of {k} types {' '.join(self.pairs)}"
            self.references = (BHATTAMISHRA, HAHN, BUTOI_FLARE)
        else:
            self.name = f"dyck-{k}-{max_depth}"
            self.description = (
                f"well-nested brackets of {k} type{'s' if k > 1 else ''} "
                f"{' '.join(self.pairs)} with nesting depth at most {max_depth}"
            )
            self.references = (YAO, HAHN, BUTOI_FLARE)
            self.kind = "regular (depth-bounded Dyck)"
        self.shapes = DyckShapes(max_depth)
        labels = [*GENERIC, "extra-close", "wrong-order"]
        if k > 1:
            labels[4:4] = ["wrong-type", "crossing"]
        if max_depth is not None:
            labels.append("too-deep")
        self.negative_labels = tuple(labels)

    def with_max_depth(self, max_depth: int) -> Dyck:
        """Return the sublanguage of nesting depth <= max_depth (dyck-k-m)."""
        return Dyck(self.k, check_count(max_depth, "max_depth"))

    # ---- oracle, next symbols, counts ---------------------------------------------------

    def _stacks(self, s: str) -> tuple[list[tuple[int, str | None]], int]:
        """Return (depth, expected closer) after each prefix and the first dead prefix length."""
        self.encode(s)
        stack: list[str] = []
        out, dead = [(0, None)], len(s) + 1
        cap = self.max_depth
        for i, c in enumerate(s):
            if dead <= len(s):
                out.append((0, None))
                continue
            if c in self._closer:
                stack.append(self._closer[c])
                if cap is not None and len(stack) > cap:
                    dead = i + 1
            elif not stack or stack.pop() != c:
                dead = i + 1
            out.append((len(stack), stack[-1] if stack else None))
        return out, dead

    def contains(self, s: str) -> bool:
        """Return True iff every closer matches the latest open bracket and all are closed."""
        out, dead = self._stacks(s)
        return dead > len(s) and out[-1][0] == 0

    def next_symbols(self, s: str) -> list[frozenset[str]]:
        """Return per prefix: opens (below the bound), the top's closer, EOS iff balanced."""
        out, dead = self._stacks(s)
        opens = [o for o, _ in self.pairs]
        sets = []
        for i, (depth, closer) in enumerate(out):
            if i >= dead:
                sets.append(frozenset())
                continue
            allowed = list(opens) if self.max_depth is None or depth < self.max_depth else []
            allowed += [closer] if closer else [EOS]
            sets.append(frozenset(allowed))
        return sets

    def stats(self, s: str) -> dict[str, int]:
        """Return length and the maximum nesting depth (opens minus closes over prefixes)."""
        steps = np.where(self.encode(s) % 2 == 0, 1, -1)
        depth = np.concatenate([[0], np.cumsum(steps)])
        return {"length": len(s), "max_depth": int(depth.max())}

    def count(self, length: int) -> int:
        """Return shapes(length) x k^(length/2)."""
        length = check_count(length, "length")
        return 0 if length % 2 else self.shapes.count(length) * self.k ** (length // 2)

    def has_positive(self, length: int) -> bool:
        """Return True iff ``length`` is even."""
        return length % 2 == 0

    def is_full(self, length: int) -> bool:
        """Return True only for the empty string."""
        return length == 0

    # ---- sampling -----------------------------------------------------------------------

    def _words(self, shapes: DyckShapes, lengths: np.ndarray, rng: np.random.Generator) -> list:
        """Return one word per length: a uniform shape from ``shapes`` with uniform types."""
        steps = sample_many(shapes, lengths, rng)
        out = [""] * len(lengths)
        for length in np.unique(lengths).tolist():
            where = np.flatnonzero(lengths == length).tolist()
            if length == 0:
                continue
            types = rng.integers(self.k, size=(len(where), length // 2))
            rows = typed(np.stack([steps[i] for i in where]), types)
            for i, w in zip(where, self._decode_rows(rows)):
                out[i] = w
        return out

    def _positive(self, length: int, rng: np.random.Generator) -> str:
        return self._positives(length, 1, rng)[0]

    def _positives(self, length: int, k: int, rng: np.random.Generator) -> list[str]:
        return self._words(self.shapes, np.full(k, length), rng)

    def _positives_for_lengths(self, lengths: np.ndarray, rng: np.random.Generator) -> list[str]:
        return self._words(self.shapes, np.asarray(lengths, dtype=np.int64), rng)

    # ---- near-miss negatives ------------------------------------------------------------

    def _can_crossing(self, length: int) -> bool:
        return self.k > 1 and length >= 4 and length % 2 == 0

    def _negs_crossing(self, lengths: np.ndarray, rng: np.random.Generator) -> list[str]:
        """A uniform shuffle-Dyck string: every type balanced, crossings like ([)] allowed."""
        if not hasattr(self, "_shuffle"):
            self._shuffle = ShuffleDyck(self.k)
        return self._shuffle._positives_for_lengths(lengths, rng)

    def _can_too_deep(self, length: int) -> bool:
        return self.max_depth is not None and length % 2 == 0 and length >= 2 * self.max_depth + 2

    def _negs_too_deep(self, lengths: np.ndarray, rng: np.random.Generator) -> list[str]:
        """A uniform Dyck-k word whose depth is exactly one more than the bound."""
        if not hasattr(self, "_deeper"):
            self._deeper = DyckShapes(self.max_depth + 1, exact_depth=True)
        return self._words(self._deeper, lengths, rng)
