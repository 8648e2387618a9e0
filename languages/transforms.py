"""FLaRe's string languages: a word, a marker and a transform of the word; palindromes; copies.

- marked-reversal w#wᴿ, marked-copy w#w, odds-first w#(w₁w₃…w₂w₄…), bucket-sort w#sorted(w):
  count(2n+1) = |Σ|ⁿ, and a uniform positive is a uniform word w with its transform.
- unmarked-reversal wwᴿ: count(2n) = 2ⁿ.
- missing-duplicate-string: ww with one 1 blanked to _: count(2n) = n·2ⁿ (a copy ww and one of
  its 1s; different choices give different strings). A uniform positive is a uniform blank
  position i, then w uniform among the words with a 1 at i mod n.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from languages.answered import Answered, forced_suffix
from languages.base import EOS, GENERIC, Language, LanguageError, check_count
from languages.references import BUTOI_FLARE, DELETANG

Transform = Callable[[str], str]
Confusion = Callable[[str, np.random.Generator], str]


def odds_first(w: str) -> str:
    """The symbols at odd positions (1st, 3rd, ...), then those at even positions."""
    return w[::2] + w[1::2]


def _resorted_with_one_change(w: str, rng: np.random.Generator, symbols: str) -> str:
    """sorted(w) after one symbol of w is changed: sorted, but with the wrong counts."""
    i = int(rng.integers(len(w)))
    others = [a for a in symbols if a != w[i]]
    return "".join(sorted(w[:i] + others[int(rng.integers(len(others)))] + w[i + 1 :]))


class MarkedTransform(Answered):
    """w + "#" + f(w) for words w over ``symbols``."""

    marker = "#"
    length_note = "its strings have odd length"

    def __init__(self, name: str, symbols: str, transform: Transform, description: str,
                 kind: str, confusion: tuple[str, Confusion, int]) -> None:
        self.name = name
        self.symbols = symbols
        self.alphabet = (*symbols, self.marker)
        self.answer_symbols = tuple(symbols)
        self.transform = transform
        self.description = description
        self.kind = kind
        self.references = (DELETANG, BUTOI_FLARE)
        self.shortest_answered = 3
        self.confusion, self._confuse, self._confusion_shortest_word = confusion
        self.negative_labels = (*GENERIC, "wrong-answer", self.confusion)

    def answer(self, text: str) -> str:
        """Return f(text)."""
        self.encode(text)
        if self.marker in text:
            raise LanguageError(f"{text!r} is not an input of {self.name}: it holds {self.marker}")
        return self.transform(text)

    def contains(self, s: str) -> bool:
        """Return True iff s is w#f(w) with one marker."""
        self.encode(s)
        if s.count(self.marker) != 1:
            return False
        w, _, rest = s.partition(self.marker)
        return rest == self.transform(w)

    def next_symbols(self, s: str) -> list[frozenset[str]]:
        """Before the marker anything may follow; after it, only f(w), then EOS."""
        self.encode(s)
        anything = frozenset(self.alphabet)
        if self.marker not in s:
            return [anything] * (len(s) + 1)
        w, _, rest = s.partition(self.marker)
        return [anything] * (len(w) + 1) + forced_suffix(rest, self.transform(w))

    def count(self, length: int) -> int:
        """Return |Σ|^n for length 2n + 1, else 0."""
        length = check_count(length, "length")
        return len(self.symbols) ** (length // 2) if length % 2 else 0

    def has_positive(self, length: int) -> bool:
        """Return True iff ``length`` is odd."""
        return length % 2 == 1

    def _words(self, n: int, k: int, rng: np.random.Generator) -> list[str]:
        """Return k uniform words of length n over the symbols."""
        ids = rng.integers(len(self.symbols), size=(k, n))
        return ["".join(self.symbols[i] for i in row) for row in ids.tolist()]

    def _positive(self, length: int, rng: np.random.Generator) -> str:
        return self._positives(length, 1, rng)[0]

    def _positives(self, length: int, k: int, rng: np.random.Generator) -> list[str]:
        return [w + self.marker + self.transform(w) for w in self._words(length // 2, k, rng)]

    def _can(self, label: str, length: int) -> bool:
        if label == self.confusion:
            return length % 2 == 1 and length // 2 >= self._confusion_shortest_word
        return super()._can(label, length)

    def _negatives(self, label: str, lengths: np.ndarray,
                   rng: np.random.Generator) -> list[str | None]:
        if label != self.confusion:
            return super()._negatives(label, lengths, rng)
        return [w + self.marker + self._confuse(w, rng)
                for w in (self._words(n // 2, 1, rng)[0] for n in lengths.tolist())]


def _copy(w: str, rng: np.random.Generator) -> str:
    return w


def _reverse(w: str, rng: np.random.Generator) -> str:
    return w[::-1]


MARKED_REVERSAL = MarkedTransform(
    "marked-reversal", "01", lambda w: w[::-1],
    "w#w reversed, w over {0, 1}", "deterministic context-free", ("copy", _copy, 2))
MARKED_COPY = MarkedTransform(
    "marked-copy", "01", lambda w: w,
    "w#w, w over {0, 1}", "context-sensitive (not context-free)", ("reversal", _reverse, 2))
ODDS_FIRST = MarkedTransform(
    "odds-first", "01", odds_first,
    "w#v, v the symbols of w at odd positions then those at even positions, w over {0, 1}",
    "context-sensitive (not context-free)", ("copy", _copy, 3))
BUCKET_SORT = MarkedTransform(
    "bucket-sort", "12345", lambda w: "".join(sorted(w)),
    "w#sorted(w), w over {1, ..., 5}", "context-sensitive (not context-free)",
    ("wrong-counts", lambda w, rng: _resorted_with_one_change(w, rng, "12345"), 1))


class UnmarkedReversal(Language):
    """Even-length palindromes over {0, 1}: w followed by w reversed."""

    name = "unmarked-reversal"
    alphabet = ("0", "1")
    description = "w followed by w reversed (even-length palindromes), w over {0, 1}"
    kind = "context-free (not deterministic)"
    references = (DELETANG, BUTOI_FLARE)
    length_note = "its strings have even length"
    negative_labels = (*GENERIC, "odd-palindrome", "copy")

    def contains(self, s: str) -> bool:
        """Return True iff s has even length and reads the same backwards."""
        self.encode(s)
        return len(s) % 2 == 0 and s == s[::-1]

    def next_symbols(self, s: str) -> list[frozenset[str]]:
        """Both symbols always (p x can be completed by its reversal); EOS iff a member."""
        self.encode(s)
        both, with_eos = frozenset(self.alphabet), frozenset({*self.alphabet, EOS})
        return [with_eos if self.contains(s[:i]) else both for i in range(len(s) + 1)]

    def count(self, length: int) -> int:
        """Return 2^n for length 2n, else 0."""
        length = check_count(length, "length")
        return 0 if length % 2 else 2 ** (length // 2)

    def has_positive(self, length: int) -> bool:
        """Return True iff ``length`` is even."""
        return length % 2 == 0

    def _positive(self, length: int, rng: np.random.Generator) -> str:
        return self._positives(length, 1, rng)[0]

    def _halves(self, n: int, k: int, rng: np.random.Generator) -> list[str]:
        return ["".join(map(str, row)) for row in rng.integers(2, size=(k, n)).tolist()]

    def _positives(self, length: int, k: int, rng: np.random.Generator) -> list[str]:
        return [w + w[::-1] for w in self._halves(length // 2, k, rng)]

    def _can_odd_palindrome(self, length: int) -> bool:
        return length % 2 == 1

    def _neg_odd_palindrome(self, length: int, rng: np.random.Generator) -> str:
        """A palindrome w a wᴿ, but of odd length."""
        w = self._halves(length // 2, 1, rng)[0]
        return w + str(int(rng.integers(2))) + w[::-1]

    def _can_copy(self, length: int) -> bool:
        return length % 2 == 0 and length >= 4

    def _neg_copy(self, length: int, rng: np.random.Generator) -> str:
        """A copy ww instead of a reversal (a negative unless w is a palindrome)."""
        w = self._halves(length // 2, 1, rng)[0]
        return w + w


BLANK = "_"


class MissingDuplicate(Language):
    """ww with exactly one of its 1s replaced by _, w over {0, 1}."""

    name = "missing-duplicate-string"
    alphabet = ("0", "1", BLANK)
    description = "ww, w over {0, 1}, with exactly one of its 1s blanked out as _"
    kind = "context-sensitive (not context-free)"
    references = (DELETANG, BUTOI_FLARE)
    length_note = "its strings have even length at least 2"
    negative_labels = (*GENERIC, "wrong-blank", "no-blank")

    def contains(self, s: str) -> bool:
        """Return True iff s has one _ and, with it read as 1, is a copy ww."""
        self.encode(s)
        if s.count(BLANK) != 1 or len(s) % 2:
            return False
        filled = s.replace(BLANK, "1")
        half = len(s) // 2
        return filled[:half] == filled[half:]

    def next_symbols(self, s: str) -> list[frozenset[str]]:
        """Anything until the blank, then 0 and 1 (EOS iff a member); a second blank is fatal."""
        self.encode(s)
        anything, bits = frozenset(self.alphabet), frozenset({"0", "1"})
        out, blanks = [], 0
        for i in range(len(s) + 1):
            blanks += i > 0 and s[i - 1] == BLANK
            if blanks == 0:
                out.append(anything)
            elif blanks == 1:
                out.append(bits | {EOS} if self.contains(s[:i]) else bits)
            else:
                out.append(frozenset())
        return out

    def count(self, length: int) -> int:
        """Return n·2^n for length 2n: a copy ww and one of its 1s (2·n·2^(n-1) pairs)."""
        length = check_count(length, "length")
        return 0 if length % 2 else (length // 2) * 2 ** (length // 2)

    def has_positive(self, length: int) -> bool:
        """Return True iff ``length`` is even and at least 2."""
        return length % 2 == 0 and length >= 2

    def _blanked(self, n: int, rng: np.random.Generator, under: str) -> str:
        """A copy ww blanked at a uniform position i, w uniform with w[i mod n] = ``under``."""
        i = int(rng.integers(2 * n))
        w = rng.integers(2, size=n).astype(str).tolist()
        w[i % n] = under
        copy = "".join(w) * 2
        return copy[:i] + BLANK + copy[i + 1 :]

    def _positive(self, length: int, rng: np.random.Generator) -> str:
        return self._blanked(length // 2, rng, "1")

    def _can_wrong_blank(self, length: int) -> bool:
        return self.has_positive(length)

    def _neg_wrong_blank(self, length: int, rng: np.random.Generator) -> str:
        """A copy ww with a 0 blanked out instead of a 1."""
        return self._blanked(length // 2, rng, "0")

    def _can_no_blank(self, length: int) -> bool:
        return length % 2 == 0

    def _neg_no_blank(self, length: int, rng: np.random.Generator) -> str:
        """A plain copy ww with nothing blanked out."""
        w = "".join(rng.integers(2, size=length // 2).astype(str).tolist())
        return w + w
