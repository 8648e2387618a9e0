"""Languages of strings input · marker · answer, the answer a string computed from the input.

FLaRe's transduction languages (after Deletang et al. 2023: reversal, copy, odds first, bucket
sort, stack manipulation, binary arithmetic, square roots) all have this shape. ``split`` and
``answer`` give the transduction view, and the "wrong-answer" near miss is a positive with one
answer symbol changed: the input stays well formed, the answer is wrong in one place.
"""

from __future__ import annotations

from abc import abstractmethod

import numpy as np

from languages.base import EOS, Language, LanguageError


class Answered(Language):
    """A language of input + marker + answer(input), the marker occurring once."""

    marker: str
    answer_symbols: tuple[str, ...]
    shortest_answered: int  # the shortest length at which some positive has a non-empty answer

    @abstractmethod
    def answer(self, text: str) -> str:
        """Return the answer written after the marker for input ``text`` (LanguageError if bad)."""

    def split(self, s: str) -> tuple[str, str]:
        """Return (input, answer) of a string of the language."""
        if not self.contains(s):
            raise LanguageError(f"{s!r} is not in {self.name}")
        given, _, answer = s.partition(self.marker)
        return given, answer

    def _can_wrong_answer(self, length: int) -> bool:
        return length >= self.shortest_answered and self.has_positive(length)

    def _negs_wrong_answer(self, lengths: np.ndarray, rng: np.random.Generator) -> list[str | None]:
        """A positive with one answer symbol replaced by another (None: its answer is empty)."""
        out: list[str | None] = []
        for w in self._positives_for_lengths(lengths, rng):
            start = w.index(self.marker) + 1
            if start == len(w):
                out.append(None)
                continue
            i = start + int(rng.integers(len(w) - start))
            others = [a for a in self.answer_symbols if a != w[i]]
            out.append(w[:i] + others[int(rng.integers(len(others)))] + w[i + 1 :])
        return out


def forced_suffix(written: str, target: str, padding: str | None = None) -> list[frozenset[str]]:
    """Next-symbol sets after each prefix of ``written`` when only ``target`` may be written.

    Each prefix of ``written`` that agrees with ``target`` may go on with target's next symbol;
    once target is complete, with EOS or ``padding`` (a symbol that may repeat at the end, as
    the zeros of a little-endian number). From the first disagreement on, nothing may follow.
    """
    end = frozenset({EOS} if padding is None else {EOS, padding})
    out: list[frozenset[str]] = []
    dead = False
    for j in range(len(written) + 1):
        if j and not dead:
            expected = target[j - 1] if j <= len(target) else padding
            dead = written[j - 1] != expected
        out.append(frozenset() if dead else frozenset({target[j]}) if j < len(target) else end)
    return out
