"""Input-then-answer languages: a transduction task turned into a language by appending the answer.

The tasks come from Deletang et al. 2023; FLaRe recognises them the same way. All are regular,
so all are DFAs; they add a transduction view (input -> answer) and a "wrong-answer" near miss.
modular-arithmetic evaluates with the usual precedence (Deletang et al.); FLaRe's
modular-arithmetic-simple evaluates from left to right, so 1+2*3 is 2 in the first and 4 in the
second; the precedence answer is a near miss of modular-arithmetic-simple.
"""

from __future__ import annotations

import numpy as np

from languages.base import GENERIC, LanguageError
from languages.references import BUTOI_FLARE, DELETANG
from languages.registry import register
from languages.regular import RegularLanguage, dfa_graph

DIGITS = "01234"
MODULUS = 5


class AnswerLanguage(RegularLanguage):
    """A DFA language of strings input + separator + answer digit, with a transduction view."""

    negative_labels = (*GENERIC, "wrong-answer")
    separator = ""

    def split(self, s: str) -> tuple[str, str]:
        """Return (input, answer) of a string of the language."""
        if not self.contains(s):
            raise LanguageError(f"{s!r} is not in {self.name}")
        return s[: len(s) - 1 - len(self.separator)], s[-1]

    def answer(self, text: str) -> str:
        """Return the answer digit for a well-formed ``text`` (LanguageError if malformed)."""
        for d in DIGITS:
            if self.contains(text + self.separator + d):
                return d
        raise LanguageError(f"{text!r} is not a well-formed input of {self.name}")

    def _can_wrong_answer(self, length: int) -> bool:
        return self.has_positive(length)

    def _negs_wrong_answer(self, lengths: np.ndarray, rng: np.random.Generator) -> list[str]:
        """A positive with its answer digit replaced by one of the four wrong digits."""
        shift = rng.integers(1, MODULUS, size=len(lengths)).tolist()
        return [
            w[:-1] + DIGITS[(DIGITS.index(w[-1]) + x) % MODULUS]
            for w, x in zip(self._positives_for_lengths(lengths, rng), shift)
        ]


def _cycle_step(q: int | str, a: str) -> int | str | None:
    """Positions 0..4 while reading moves; the answer digit must equal the position."""
    if q == "done":
        return None
    if a in DIGITS:
        return "done" if int(a) == q else None
    return (q + {"L": -1, "R": 1, "S": 0}[a]) % MODULUS


def _arith_step(q: tuple, a: str) -> tuple | None:
    """Evaluate with precedence, * before + and -, over Z_5.

    ("num", s, c) waits for a number n to make the term c * n; ("op", s, t) has the sum s so far
    and the open term t; ("eq", v) waits for the answer v.
    """
    phase = q[0]
    if phase == "num":
        return ("op", q[1], q[2] * int(a) % MODULUS) if a in DIGITS else None
    if phase == "op":
        s, t = q[1], q[2]
        if a == "+":
            return ("num", (s + t) % MODULUS, 1)
        if a == "-":
            return ("num", (s + t) % MODULUS, MODULUS - 1)
        if a == "*":
            return ("num", s, t)
        if a == "=":
            return ("eq", (s + t) % MODULUS)
        return None
    if phase == "eq":
        return ("done",) if a in DIGITS and int(a) == q[1] else None
    return None


CYCLE = register(
    AnswerLanguage(
        "cycle-navigation",
        dfa_graph("LRS" + DIGITS, 0, _cycle_step, lambda q: q == "done"),
        "moves L/R/S (back, forward, stay) on a 5-cycle from 0, then the final position 0-4",
        (DELETANG, BUTOI_FLARE),
        "regular (not star-free)",
    )
)

ARITHMETIC = AnswerLanguage(
    "modular-arithmetic",
    dfa_graph(DIGITS + "+-*=", ("num", 0, 1), _arith_step, lambda q: q == ("done",)),
    "an expression over 0-4 with + - * (usual precedence), then = and its value mod 5",
    (DELETANG,),
    "regular (not star-free)",
)
ARITHMETIC.separator = "="
register(ARITHMETIC)


def _left_to_right_step(q: tuple, a: str) -> tuple | None:
    """Evaluate from left to right with no precedence (FLaRe's "simple" rule), over Z_5.

    ("num", v, op) waits for a number n to make v op n (the first number: op None); ("op", v)
    holds the value so far; ("eq", v) waits for the answer v.
    """
    phase = q[0]
    if phase == "num":
        if a not in DIGITS:
            return None
        v, op, n = q[1], q[2], int(a)
        return ("op", (n if op is None else {"+": v + n, "-": v - n, "*": v * n}[op]) % MODULUS)
    if phase == "op":
        if a in "+-*":
            return ("num", q[1], a)
        return ("eq", q[1]) if a == "=" else None
    if phase == "eq":
        return ("done",) if a in DIGITS and int(a) == q[1] else None
    return None


class LeftToRight(AnswerLanguage):
    """Modular arithmetic from left to right; the usual-precedence answer is a near miss."""

    negative_labels = (*GENERIC, "wrong-answer", "precedence")

    def _can_precedence(self, length: int) -> bool:
        return length % 2 == 1 and length >= 7  # at least two operators: a+b*c=d

    def _negs_precedence(self, lengths: np.ndarray, rng: np.random.Generator) -> list[str | None]:
        """The answer with * before + and − (modular-arithmetic's), where that differs."""
        out: list[str | None] = []
        for w in self._positives_for_lengths(lengths, rng):
            expression = w[:-2]
            usual = ARITHMETIC.answer(expression)
            out.append(None if usual == w[-1] else f"{expression}={usual}")
        return out


SIMPLE_ARITHMETIC = LeftToRight(
    "modular-arithmetic-simple",
    dfa_graph(DIGITS + "+-*=", ("num", 0, None), _left_to_right_step, lambda q: q == ("done",)),
    "an expression over 0-4 with + - * evaluated from left to right (no precedence), then = "
    "and its value mod 5",
    (BUTOI_FLARE,),
    "regular (not star-free)",
)
SIMPLE_ARITHMETIC.separator = "="
register(SIMPLE_ARITHMETIC)
