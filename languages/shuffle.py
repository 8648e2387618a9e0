"""Shuffle-Dyck-k: the true shuffle of k Dyck-1 languages over distinct bracket pairs.

A string is in the language iff each bracket type, read alone, is a Dyck-1 word; crossings such as
"([)]" are included (the nested-grammar samplers of older suites never produce them). Counting: a
string is a choice of the positions of each type (a multinomial) and one Dyck word per type, so
count(L) = sum over even l_1 + ... + l_k = L of L! / (l_1! ... l_k!) * prod D(l_i), with D the
number of (depth-bounded) Dyck-1 shapes. Sampling picks the l_i with those weights (exactly, in
integers), the positions uniformly, and one uniform shape per type.
"""

from __future__ import annotations

from collections.abc import Iterator
from math import comb

import numpy as np

from languages.base import EOS, GENERIC, Language, LanguageError, check_count
from languages.exact import WeightedChoice, uniform_below
from languages.references import BHATTAMISHRA, SUZGUN
from languages.shapes import PAIRS, DyckShapes, catalan

CACHED_UP_TO = 640  # type-length choices up to this length keep their running sums


class BracketNearMisses:
    """Near-miss negatives shared by the bracket languages: wrong type, extra close, wrong order."""

    def _can_wrong_type(self, length: int) -> bool:
        return self.k > 1 and length >= 2 and length % 2 == 0

    def _negs_wrong_type(self, lengths: np.ndarray, rng: np.random.Generator) -> list[str]:
        """One closing bracket of a positive replaced by a closing bracket of another type."""
        return wrong_type(self, self._positives_for_lengths(lengths, rng), rng)

    def _can_extra_close(self, length: int) -> bool:
        return length % 2 == 1

    def _negs_extra_close(self, lengths: np.ndarray, rng: np.random.Generator) -> list[str]:
        """A positive of length L - 1 with one closing bracket inserted anywhere."""
        return extra_close(self, self._positives_for_lengths(lengths - 1, rng), rng)

    def _can_wrong_order(self, length: int) -> bool:
        return length >= 2 and length % 2 == 0

    def _negs_wrong_order(self, lengths: np.ndarray, rng: np.random.Generator) -> list[str]:
        """Two different symbols of a positive swapped: the same counts in a wrong order."""
        return [swap_two(w, rng) for w in self._positives_for_lengths(lengths, rng)]


class ShuffleDyck(BracketNearMisses, Language):
    """Strings over k bracket pairs in which every type alone is a Dyck-1 word."""

    negative_labels = (*GENERIC, "wrong-type", "extra-close", "wrong-order")
    kind = "counter (context-sensitive, not context-free)"
    length_note = "shuffle-Dyck strings have even length"

    def __init__(self, k: int, max_depth: int | None = None) -> None:
        if not 2 <= k <= len(PAIRS):
            raise LanguageError(f"shuffle-Dyck needs 2 to {len(PAIRS)} bracket types, got {k}")
        if max_depth is not None and max_depth < 1:
            raise LanguageError(f"shuffle-Dyck depth bound must be at least 1, got {max_depth}")
        self.k, self.max_depth = k, max_depth
        self.pairs = PAIRS[:k]
        self.alphabet = tuple("".join(self.pairs))
        bound = "" if max_depth is None else f"-{max_depth}"
        self.name = f"shuffle-dyck{k}{bound}"
        depth = "" if max_depth is None else f", each of depth at most {max_depth}"
        self.description = (
            f"shuffle of {k} Dyck-1 languages over {' '.join(self.pairs)}: every type balanced "
            f"on its own{depth}, crossings allowed"
        )
        self.references = (BHATTAMISHRA, SUZGUN)
        self.shapes = DyckShapes(max_depth)
        self._ways = [[1]] + [[] for _ in range(k)]  # _ways[j][n]: strings of length n, j types
        self._shape_counts: list[int] = []
        self._totals: dict[tuple[int, int], int] = {}
        self._choices: dict[tuple[int, int], WeightedChoice] = {}

    def with_max_depth(self, max_depth: int) -> ShuffleDyck:
        """Return the sublanguage where every type has depth <= max_depth."""
        return ShuffleDyck(self.k, check_count(max_depth, "max_depth"))

    # ---- oracle, next symbols, counts ---------------------------------------------------

    def _walk(self, s: str) -> tuple[list[list[int]], int]:
        """Return the per-type depths after each prefix, and the first prefix that went dead."""
        ids = self.encode(s).tolist()
        depth = [0] * self.k
        profile, dead = [list(depth)], len(ids) + 1
        cap = self.max_depth
        for i, a in enumerate(ids):
            t = a // 2
            depth[t] += -1 if a % 2 else 1
            if dead > len(ids) and (depth[t] < 0 or (cap is not None and depth[t] > cap)):
                dead = i + 1
            profile.append(list(depth))
        return profile, dead

    def contains(self, s: str) -> bool:
        """Return True iff every bracket type alone is a (depth-bounded) Dyck-1 word."""
        profile, dead = self._walk(s)
        return dead > len(s) and not any(profile[-1])

    def next_symbols(self, s: str) -> list[frozenset[str]]:
        """Return per prefix: opens (below the depth bound), closes of open types, EOS iff all 0."""
        profile, dead = self._walk(s)
        out = []
        for i, depth in enumerate(profile):
            if i >= dead:
                out.append(frozenset())
                continue
            allowed = [
                sym
                for t, (o, c) in enumerate(self.pairs)
                for sym in ([o] if self.max_depth is None or depth[t] < self.max_depth else [])
                + ([c] if depth[t] > 0 else [])
            ]
            out.append(frozenset(allowed + ([] if any(depth) else [EOS])))
        return out

    def stats(self, s: str) -> dict[str, int]:
        """Return length and the largest depth any single type reaches."""
        profile, _ = self._walk(s)
        return {"length": len(s), "max_depth": max(max(d) for d in profile)}

    def _extend(self, length: int) -> None:
        """Fill _ways[j][n] (strings of length n over j types) for n <= length (general case)."""
        shape = self._shape_counts
        shape.extend(self.shapes.count(m) for m in range(len(shape), length + 1))
        for n in range(len(self._ways[self.k]), length + 1):
            if n >= len(self._ways[0]):
                self._ways[0].append(0)
            for j in range(1, self.k + 1):
                below = self._ways[j - 1]
                self._ways[j].append(
                    sum(comb(n, m) * shape[m] * below[n - m] for m in range(0, n + 1, 2))
                    if n % 2 == 0
                    else 0
                )

    def _weights(self, j: int, n: int) -> Iterator[tuple[int, int]]:
        """Yield (l, weight) for the length l of one type among j types sharing even n symbols.

        The weight of l is C(n, l) D(l) W_{j-1}(n - l), W_{j-1} counting strings over the other
        j - 1 types. Without a depth bound and for j <= 3, W_1(2c) = Cat(c) and W_2(2c) =
        Cat(c) Cat(c + 1) (the shuffle of two Dyck-1 languages), so consecutive weights differ by
        a ratio of small integers: O(n) cheap steps instead of O(n^2) big products.
        """
        if self.max_depth is None and j <= 3:
            c = n // 2
            weight = catalan(c) * (catalan(c + 1) if j == 3 else 1)
            yield 0, weight
            for b in range(c):  # l = 2b -> 2b + 2, the rest c -> c - 1 pairs
                rest = c - b
                num = (n - 2 * b) * (n - 2 * b - 1) * 2 * (2 * b + 1) * (rest + 1)
                den = (2 * b + 1) * (2 * b + 2) * (b + 2) * 2 * (2 * rest - 1)
                if j == 3:
                    num, den = num * (rest + 2), den * 2 * (2 * rest + 1)
                weight = weight * num // den
                yield 2 * b + 2, weight
        else:
            self._extend(n)
            below, shape = self._ways[j - 1], self._shape_counts
            for m in range(0, n + 1, 2):
                yield m, comb(n, m) * shape[m] * below[n - m]

    def _total(self, j: int, n: int) -> int:
        """Return the number of strings of even length n over j types (cached)."""
        if (j, n) not in self._totals:
            self._totals[j, n] = sum(w for _, w in self._weights(j, n))
        return self._totals[j, n]

    def count(self, length: int) -> int:
        """Return sum over type lengths of multinomial x product of shape counts."""
        length = check_count(length, "length")
        return 0 if length % 2 else self._total(self.k, length)

    def has_positive(self, length: int) -> bool:
        """Return True iff ``length`` is even."""
        return length % 2 == 0

    def is_full(self, length: int) -> bool:
        """Return True only for the empty string."""
        return length == 0

    # ---- sampling -----------------------------------------------------------------------

    def _type_lengths(self, length: int, rng: np.random.Generator) -> list[int]:
        """Draw (l_1, ..., l_k) with probability proportional to its number of strings."""
        out, rest = [], length
        for j in range(self.k, 1, -1):
            if rest <= CACHED_UP_TO:  # keep the running sums of short lengths (small in memory)
                if (j, rest) not in self._choices:
                    self._choices[j, rest] = WeightedChoice([w for _, w in self._weights(j, rest)])
                m = 2 * self._choices[j, rest].draw(rng)
            else:  # scan the weights: O(rest) memory-free steps
                target = uniform_below(self._total(j, rest), rng)  # exact, in integers
                for m, weight in self._weights(j, rest):  # noqa: B007 (m is the result)
                    target -= weight
                    if target < 0:
                        break
            out.append(m)
            rest -= m
        return [*out, rest]

    def _positive(self, length: int, rng: np.random.Generator) -> str:
        return self._positives(length, 1, rng)[0]

    def _positives(self, length: int, k: int, rng: np.random.Generator) -> list[str]:
        sizes = np.array([self._type_lengths(length, rng) for _ in range(k)], dtype=np.int64)
        words = np.zeros((k, length), dtype=np.int64)
        places = [rng.permutation(np.repeat(np.arange(self.k), row)) for row in sizes]
        for t in range(self.k):
            for size in np.unique(sizes[:, t]).tolist():
                rows = np.flatnonzero(sizes[:, t] == size)
                shapes = self.shapes.sample(size, len(rows), rng)
                for row, shape in zip(rows.tolist(), shapes):
                    words[row, places[row] == t] = 2 * t + (shape < 0)
        return self._decode_rows(words) if length else [""] * k

    # ---- near-miss negatives ------------------------------------------------------------

def wrong_type(language: Language, words: list[str], rng: np.random.Generator) -> list[str]:
    """Return each word with one closing bracket turned into a closer of another type."""
    k, out = len(language.pairs), []
    for w, u, x in zip(words, rng.random(len(words)), rng.integers(1, k, size=len(words))):
        ids = language.encode(w)
        closes = np.flatnonzero(ids % 2 == 1)
        i = int(closes[int(u * len(closes))])
        out.append(w[:i] + language.pairs[(ids[i] // 2 + int(x)) % k][1] + w[i + 1 :])
    return out


def extra_close(language: Language, words: list[str], rng: np.random.Generator) -> list[str]:
    """Return each word with one closing bracket of a random type inserted anywhere."""
    where = (rng.random(len(words)) * np.array([len(w) + 1 for w in words])).astype(int)
    types = rng.integers(len(language.pairs), size=len(words)).tolist()
    return [w[:i] + language.pairs[t][1] + w[i:] for w, i, t in zip(words, where.tolist(), types)]


def swap_two(w: str, rng: np.random.Generator) -> str:
    """Return ``w`` with two positions holding different symbols swapped (w if there are none)."""
    if len(set(w)) < 2:
        return w
    while True:
        i, j = sorted(rng.integers(len(w), size=2).tolist())
        if w[i] != w[j]:
            return w[:i] + w[j] + w[i + 1 : j] + w[i] + w[j + 1 :]
