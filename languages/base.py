"""The Language base class: symbol checks, length selection, seeding and the negative-sampling loop.

A language supplies its oracle (``contains``), exact counts, next-symbol sets, one exact positive
sampler for a given length and labelled negative generators; the base class turns these into the
public samplers. Every sample is reproducible from (n, min_len, max_len, seed).
"""

from __future__ import annotations

import functools
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence

import numpy as np

EOS = "<eos>"
"""End-of-string marker in next-symbol sets; never a one-character symbol."""

SeedLike = int | np.random.Generator | None
MAX_TRIES = 10_000  # attempts per negative before giving up (a generator that never works)


class LanguageError(Exception):
    """A bad request to a language (unknown symbol, impossible length range, ...)."""


def check_count(value: object, what: str) -> int:
    """Return ``value`` as an int, or raise LanguageError if it is not a non-negative integer."""
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < 0:
        raise LanguageError(f"{what} must be a non-negative integer, got {value!r}")
    return int(value)


def generator(seed: SeedLike) -> np.random.Generator:
    """The random generator of a sampler's ``seed``: a non-negative int, a Generator or None."""
    if seed is None or isinstance(seed, np.random.Generator):
        return np.random.default_rng(seed)
    return np.random.default_rng(check_count(seed, "seed"))


class Language(ABC):
    """A formal language: membership oracle, exact counts, samplers and next-symbol sets."""

    name: str
    alphabet: tuple[str, ...]
    description: str
    references: tuple[str, ...] = ()
    negative_labels: tuple[str, ...] = ()
    length_note: str = ""  # appended to "no positive strings in range" errors
    kind: str = ""  # where it sits: "regular", "star-free regular", "counter", ...

    def __repr__(self) -> str:
        return f"<Language {self.name!r}>"

    # ---- what a language supplies -------------------------------------------------------

    @abstractmethod
    def contains(self, s: str) -> bool:
        """Return True iff ``s`` is in the language (ValueError on a symbol not in the alphabet)."""

    @abstractmethod
    def count(self, length: int) -> int:
        """Return the exact number of strings of ``length`` in the language."""

    @abstractmethod
    def next_symbols(self, s: str) -> list[frozenset[str]]:
        """Return, for each prefix s[:0] .. s[:len(s)], the symbols (and EOS) that may follow."""

    @abstractmethod
    def _positive(self, length: int, rng: np.random.Generator) -> str:
        """Return a uniformly random string of the language of this (possible) length."""

    # ---- shared helpers -----------------------------------------------------------------

    def _positives(self, length: int, k: int, rng: np.random.Generator) -> list[str]:
        """Return k independent uniform positives of ``length`` (languages may vectorise this)."""
        return [self._positive(length, rng) for _ in range(k)]

    def _positives_for_lengths(self, lengths: np.ndarray, rng: np.random.Generator) -> list[str]:
        """Return one uniform positive per entry of ``lengths`` (batched by length here)."""
        out = [""] * len(lengths)
        for length in np.unique(lengths).tolist():  # batch by length; lengths are already iid
            where = np.flatnonzero(lengths == length).tolist()
            for i, s in zip(where, self._positives(length, len(where), rng), strict=True):
                out[i] = s
        return out

    def has_positive(self, length: int) -> bool:
        """Return True iff the language has at least one string of ``length``."""
        return self.count(length) > 0

    def is_full(self, length: int) -> bool:
        """Return True iff every string of ``length`` over the alphabet is in the language."""
        return self.count(length) == len(self.alphabet) ** length

    def has_negative(self, length: int) -> bool:
        """Return True iff some negative generator can produce ``length``."""
        return bool(self.generators_for(length))

    def stats(self, s: str) -> dict[str, int]:
        """Return per-string statistics worth reporting (length; languages add e.g. depth)."""
        self.encode(s)
        return {"length": len(s)}

    def with_max_depth(self, max_depth: int) -> Language:
        """Return the sublanguage of nesting depth <= max_depth (only for nested languages)."""
        raise LanguageError(f"{self.name} has no nesting depth to bound")

    def encode(self, s: str) -> np.ndarray:
        """Return the alphabet indices (int8) of ``s``; LanguageError names the first bad symbol."""
        if not isinstance(s, str):
            raise LanguageError(f"{self.name} strings must be str, got {type(s).__name__}")
        points = np.frombuffer(s.encode("utf-32-le", "surrogatepass"), dtype=np.uint32)
        ids = np.full(len(points), -1, dtype=np.int8)
        for k, symbol in enumerate(self.alphabet):
            ids[points == ord(symbol)] = k
        bad = np.flatnonzero(ids < 0)
        if bad.size:
            i = int(bad[0])
            raise LanguageError(
                f"symbol {s[i]!r} at position {i} is not in the alphabet of {self.name} "
                f"{self.alphabet}"
            )
        return ids

    def decode(self, ids: np.ndarray) -> str:
        """Return the string whose alphabet indices are ``ids`` (the inverse of ``encode``)."""
        points = np.array([ord(a) for a in self.alphabet], dtype=np.uint32)
        return points[np.asarray(ids, dtype=np.int64)].tobytes().decode("utf-32-le")

    def _decode_rows(self, ids: np.ndarray) -> list[str]:
        """Return one string per row of a (k, length) index matrix."""
        k, length = ids.shape
        text = self.decode(ids.reshape(-1))
        return [text[i * length : (i + 1) * length] for i in range(k)]

    def _draw_lengths(
        self,
        n: int,
        min_len: int,
        max_len: int,
        ok: Callable[[int], bool],
        kind: str,
        rng: np.random.Generator,
    ) -> list[int]:
        """Return n lengths drawn uniformly from those in [min_len, max_len] where ok holds."""
        n = check_count(n, "n")
        min_len = check_count(min_len, "min_len")
        max_len = check_count(max_len, "max_len")
        if min_len > max_len:
            raise LanguageError(f"min_len ({min_len}) is greater than max_len ({max_len})")
        lengths = [L for L in range(min_len, max_len + 1) if ok(L)]
        if not lengths:
            note = f" ({self.length_note})" if self.length_note and kind == "positive" else ""
            raise LanguageError(
                f"{self.name} has no {kind} strings with length in [{min_len}, {max_len}]{note}"
            )
        return [int(L) for L in rng.choice(lengths, size=n)] if n else []

    # ---- negative generators ------------------------------------------------------------
    # A generator "g" is either generic ("replace", "insert", "delete": one edit of a uniform
    # positive; "random": a uniform string) or language-specific: a method _negs_g (batch) or
    # _neg_g (one string) with _can_g(length) saying whether it can produce that length.
    # Every candidate is checked by the oracle before it is returned.

    def generators_for(self, length: int) -> tuple[str, ...]:
        """Return the labels of the negative generators that can produce ``length``."""
        return tuple(g for g in self.negative_labels if self._can(g, length))

    def _can(self, label: str, length: int) -> bool:
        """Return True iff generator ``label`` can produce a negative of ``length``."""
        special = getattr(self, "_can_" + label.replace("-", "_"), None)
        if special is not None:
            return bool(special(length))
        if label not in GENERIC:
            raise LanguageError(f"{self.name} has no rule for negative generator {label!r}")
        if self.is_full(length):
            return False
        if label == "random":
            return True
        if label == "replace":
            return len(self.alphabet) > 1 and self.has_positive(length)
        if label == "insert":
            return length >= 1 and self.has_positive(length - 1)
        return self.has_positive(length + 1)  # delete

    def _negative(self, label: str, length: int, rng: np.random.Generator) -> str:
        """Return a candidate negative of ``length`` from generator ``label`` (checked later)."""
        return getattr(self, "_neg_" + label.replace("-", "_"))(length, rng)

    def _negatives(
        self, label: str, lengths: np.ndarray, rng: np.random.Generator
    ) -> list[str | None]:
        """Return one candidate of generator ``label`` per length (None: none this time)."""
        key = label.replace("-", "_")
        batch = getattr(self, "_negs_" + key, None)
        if batch is not None:
            return batch(lengths, rng)
        if hasattr(self, "_neg_" + key) or label not in GENERIC:
            return [self._negative(label, length, rng) for length in lengths.tolist()]
        if label == "random":
            return self._random_strings(lengths, rng)
        return [bad for _, bad in self._edit_pairs(label, lengths, rng)]

    def _random_strings(self, lengths: np.ndarray, rng: np.random.Generator) -> list[str]:
        """Return one uniform string over the alphabet per length."""
        ids = rng.integers(len(self.alphabet), size=int(np.sum(lengths)), dtype=np.int64)
        text = self.decode(ids)
        ends = np.cumsum(lengths).tolist()
        return [text[end - length : end] for end, length in zip(ends, lengths.tolist())]

    def _edit_pairs(
        self, kind: str, lengths: np.ndarray, rng: np.random.Generator
    ) -> list[tuple[str, str | None]]:
        """Return per length a (uniform positive, the same with one random edit) pair.

        ``kind`` is "replace" (a symbol by a different one), "insert" or "delete"; the edited
        string has the given length. Languages with an exact way to find the edits that leave
        the language override this.
        """
        size = len(self.alphabet)
        source_lengths = lengths + EDIT_SHIFT[kind]
        sources = self._positives_for_lengths(source_lengths, rng)
        where = (rng.random(len(lengths)) * (source_lengths + (kind == "insert"))).astype(int)
        shift = rng.integers(1 if kind == "replace" else 0, size, size=len(lengths)).tolist()
        pairs = []
        for w, i, x in zip(sources, where.tolist(), shift):
            if kind == "replace":
                bad = w[:i] + self.alphabet[(self.alphabet.index(w[i]) + x) % size] + w[i + 1 :]
            elif kind == "insert":
                bad = w[:i] + self.alphabet[x] + w[i:]
            else:
                bad = w[:i] + w[i + 1 :]
            pairs.append((w, bad))
        return pairs

    def _verified(
        self,
        lengths: np.ndarray,
        make: Callable[[np.ndarray], list],
        candidate: Callable[[object], str | None],
        what: str,
    ) -> list:
        """Draw items with make(lengths) until each one's candidate string is a negative.

        Items whose candidate is None or in the language are drawn again (with their lengths),
        several copies at a time once failures are common.
        """
        out: list = [None] * len(lengths)
        todo = np.arange(len(lengths))
        copies = rounds = 0
        while todo.size:
            rounds += 1
            if rounds > MAX_TRIES:
                raise RuntimeError(f"{what} of {self.name}: no negative in {MAX_TRIES} rounds")
            copies = 1 if rounds == 1 else min(32, 2 * copies)
            ask = np.repeat(todo, copies)
            items = make(lengths[ask])
            done = set()
            for i, item in zip(ask.tolist(), items):
                s = candidate(item)
                if s is not None and len(s) != lengths[i]:
                    raise RuntimeError(f"{what} of {self.name} gave a wrong length")
                if i not in done and s is not None and not self.contains(s):
                    out[i] = item
                    done.add(i)
            todo = np.array([i for i in todo.tolist() if i not in done], dtype=np.int64)
        return out

    def _draw_labelled(
        self,
        n: int,
        min_len: int,
        max_len: int,
        usable: Callable[[int], tuple[str, ...]],
        kind: str,
        rng: np.random.Generator,
    ) -> tuple[np.ndarray, list[str]]:
        """Return n lengths (uniform over lengths with some usable label) and a label for each."""
        usable = functools.cache(usable)
        lengths = self._draw_lengths(n, min_len, max_len, lambda L: bool(usable(L)), kind, rng)
        picks = rng.random(len(lengths)).tolist()
        labels = []
        for length, u in zip(lengths, picks):
            gens = usable(length)
            labels.append(gens[int(u * len(gens))])
        return np.array(lengths, dtype=np.int64), labels

    # ---- public samplers ----------------------------------------------------------------

    def sample_positive(self, n: int, min_len: int, max_len: int, seed: SeedLike = 0) -> list[str]:
        """Return n strings: length uniform over possible lengths in range, then uniform."""
        rng = generator(seed)
        lengths = np.array(
            self._draw_lengths(n, min_len, max_len, self.has_positive, "positive", rng), dtype=int
        )
        return self._positives_for_lengths(lengths, rng) if n else []

    def _label_pool(self, labels: Sequence[str] | None) -> set[str]:
        """Return the allowed generator labels, or raise if ``labels`` names unknown ones."""
        if labels is None:
            return set(self.negative_labels)
        allowed = {labels} if isinstance(labels, str) else set(labels)
        unknown = sorted(allowed - set(self.negative_labels))
        if unknown or not allowed:
            raise LanguageError(
                f"unknown negative generator(s) {unknown} for {self.name}; "
                f"known: {', '.join(self.negative_labels)}"
            )
        return allowed

    def sample_negative_labelled(
        self,
        n: int,
        min_len: int,
        max_len: int,
        seed: SeedLike = 0,
        *,
        labels: Sequence[str] | None = None,
    ) -> list[tuple[str, str]]:
        """Return n oracle-checked (negative, generator label) pairs; ``labels`` restricts them.

        The length is uniform over the lengths in range that some allowed generator can produce,
        then the generator uniform over those that can produce it.
        """
        allowed = self._label_pool(labels)

        def usable(length: int) -> tuple[str, ...]:
            return tuple(g for g in self.generators_for(length) if g in allowed)

        rng = generator(seed)
        lengths, labels = self._draw_labelled(n, min_len, max_len, usable, "negative", rng)
        out: list[tuple[str, str]] = [("", "")] * len(labels)
        for label in sorted(set(labels)):
            where = np.array([i for i, g in enumerate(labels) if g == label], dtype=np.int64)
            found = self._verified(
                lengths[where],
                lambda ls, g=label: self._negatives(g, ls, rng),
                lambda s: s,
                f"negative generator {label!r}",
            )
            for i, s in zip(where.tolist(), found):
                out[i] = (s, label)
        return out

    def sample_negative(
        self,
        n: int,
        min_len: int,
        max_len: int,
        seed: SeedLike = 0,
        *,
        labels: Sequence[str] | None = None,
    ) -> list[str]:
        """Return n oracle-checked negatives (the strings of ``sample_negative_labelled``)."""
        pairs = self.sample_negative_labelled(n, min_len, max_len, seed, labels=labels)
        return [s for s, _ in pairs]

    def sample_boundary_pairs(
        self, n: int, min_len: int, max_len: int, seed: SeedLike = 0
    ) -> list[tuple[str, str, str]]:
        """Return n (positive, negative, edit) triples one edit apart, both lengths in range.

        The negative's length is uniform over the lengths where some edit ("replace", "insert",
        "delete") of a positive in range leaves the language, then the edit uniform among those.
        """
        lo, hi = check_count(min_len, "min_len"), check_count(max_len, "max_len")

        def usable(length: int) -> tuple[str, ...]:
            return tuple(
                g for g in EDITS if lo <= length + EDIT_SHIFT[g] <= hi and self._can(g, length)
            )

        rng = generator(seed)
        lengths, kinds = self._draw_labelled(n, lo, hi, usable, "boundary-pair", rng)
        out: list[tuple[str, str, str]] = [("", "", "")] * len(kinds)
        for kind in sorted(set(kinds)):
            where = np.array([i for i, g in enumerate(kinds) if g == kind], dtype=np.int64)
            found = self._verified(
                lengths[where],
                lambda ls, g=kind: self._edit_pairs(g, ls, rng),
                lambda pair: pair[1],
                f"boundary pairs by {kind!r}",
            )
            for i, (good, bad) in zip(where.tolist(), found):
                out[i] = (good, bad, kind)
        return out


EDITS = ("replace", "insert", "delete")
EDIT_SHIFT = {"replace": 0, "insert": -1, "delete": 1}  # source length minus edited length
GENERIC = (*EDITS, "random")
