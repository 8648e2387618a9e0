"""The Language base class: symbol checks, length selection, seeding and the negative-sampling loop.

A language supplies its oracle (``contains``), exact counts, next-symbol sets, one exact positive
sampler for a given length and labelled negative generators; the base class turns these into the
public samplers. Every sample is reproducible from (n, min_len, max_len, seed).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence

import numpy as np

EOS = "<eos>"
"""End-of-string marker in next-symbol sets; never a one-character symbol."""

SeedLike = int | np.random.Generator | None
MAX_TRIES = 10_000  # attempts per negative before giving up (a generator that never works)


class LanguageError(ValueError):
    """A bad request to a language (unknown symbol, impossible length range, ...)."""


def check_count(value: object, what: str) -> int:
    """Return ``value`` as an int, or raise LanguageError if it is not a non-negative integer."""
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < 0:
        raise LanguageError(f"{what} must be a non-negative integer, got {value!r}")
    return int(value)


class Language(ABC):
    """A formal language: membership oracle, exact counts, samplers and next-symbol sets."""

    name: str
    alphabet: tuple[str, ...]
    description: str
    references: tuple[str, ...] = ()
    negative_labels: tuple[str, ...] = ()
    length_note: str = ""  # appended to "no positive strings in range" errors

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
    def generators_for(self, length: int) -> tuple[str, ...]:
        """Return the labels of the negative generators that can produce ``length``."""

    @abstractmethod
    def _positive(self, length: int, rng: np.random.Generator) -> str:
        """Return a uniformly random string of the language of this (possible) length."""

    @abstractmethod
    def _negative(self, label: str, length: int, rng: np.random.Generator) -> str:
        """Return a candidate negative of ``length`` from generator ``label`` (checked later)."""

    # ---- shared helpers -----------------------------------------------------------------

    def _positives(self, length: int, k: int, rng: np.random.Generator) -> list[str]:
        """Return k independent uniform positives of ``length`` (languages may vectorise this)."""
        return [self._positive(length, rng) for _ in range(k)]

    def has_positive(self, length: int) -> bool:
        """Return True iff the language has at least one string of ``length``."""
        return self.count(length) > 0

    def has_negative(self, length: int) -> bool:
        """Return True iff some negative generator can produce ``length``."""
        return bool(self.generators_for(length))

    def stats(self, s: str) -> dict[str, int]:
        """Return per-string statistics worth reporting (length; languages add e.g. depth)."""
        self.encode(s)
        return {"length": len(s)}

    def encode(self, s: str) -> np.ndarray:
        """Return the alphabet indices (int8) of ``s``; ValueError names the first bad symbol."""
        if not isinstance(s, str):
            raise LanguageError(f"{self.name} strings must be str, got {type(s).__name__}")
        points = np.frombuffer(s.encode("utf-32-le"), dtype=np.uint32)
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

    # ---- public samplers ----------------------------------------------------------------

    def sample_positive(self, n: int, min_len: int, max_len: int, seed: SeedLike = 0) -> list[str]:
        """Return n strings: length uniform over possible lengths in range, then uniform."""
        rng = np.random.default_rng(seed)
        lengths = np.array(
            self._draw_lengths(n, min_len, max_len, self.has_positive, "positive", rng), dtype=int
        )
        out = [""] * n
        for length in np.unique(lengths).tolist():  # batch by length; lengths are already iid
            where = np.flatnonzero(lengths == length).tolist()
            for i, s in zip(where, self._positives(length, len(where), rng), strict=True):
                out[i] = s
        return out

    def sample_negative_labelled(
        self,
        n: int,
        min_len: int,
        max_len: int,
        seed: SeedLike = 0,
        *,
        labels: Sequence[str] | None = None,
    ) -> list[tuple[str, str]]:
        """Return n oracle-checked (negative, generator label) pairs; ``labels`` restricts them."""
        if labels is None:
            allowed = set(self.negative_labels)
        else:
            allowed = {labels} if isinstance(labels, str) else set(labels)
            unknown = sorted(allowed - set(self.negative_labels))
            if unknown or not allowed:
                raise LanguageError(
                    f"unknown negative generator(s) {unknown} for {self.name}; "
                    f"known: {', '.join(self.negative_labels)}"
                )

        def usable(length: int) -> tuple[str, ...]:
            return tuple(g for g in self.generators_for(length) if g in allowed)

        rng = np.random.default_rng(seed)
        lengths = self._draw_lengths(
            n, min_len, max_len, lambda L: bool(usable(L)), "negative", rng
        )
        out = []
        for length in lengths:
            gens = usable(length)
            label = gens[int(rng.integers(len(gens)))]
            out.append((self._verified_negative(label, length, rng), label))
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

    def _verified_negative(self, label: str, length: int, rng: np.random.Generator) -> str:
        """Run generator ``label`` until it yields a string the oracle rejects."""
        for _ in range(MAX_TRIES):
            s = self._negative(label, length, rng)
            if len(s) != length:
                raise RuntimeError(f"generator {label!r} of {self.name} gave length {len(s)}")
            if not self.contains(s):
                return s
        raise RuntimeError(
            f"negative generator {label!r} of {self.name} produced no negative of length "
            f"{length} in {MAX_TRIES} tries"
        )
