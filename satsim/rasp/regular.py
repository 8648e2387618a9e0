"""Regular languages: star-freeness, and a B-RASP program for each star-free one.

The suite's languages by name; a user's as a regular expression (:mod:`satsim.rasp.regex`) or
an automaton (:mod:`satsim.rasp.automaton_io`), through the same minimal DFA, decision and
holonomy cascade.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

import languages
from languages import RegularLanguage
from satsim.engine.resources import check_memory
from satsim.errors import SatsimError
from satsim.rasp.automata import (
    DFA,
    Decision,
    check_stack_states,
    decide,
    language_dfa,
    minimal_dfa,
    monoid_cost,
    stack_monoid_size,
)
from satsim.rasp.automaton_io import read_dfa
from satsim.rasp.determinise import MAX_STATES, MAX_WORK, regex_dfa
from satsim.rasp.holonomy import brasp_text, cascade, check_cascade_size
from satsim.rasp.nesting import nesting_program
from satsim.rasp.regex import parse_regex

MAX_MONOID = 1_000_000
"""Monoid elements a user's language is decided with at most ..."""

MAX_MONOID_CELLS = 100_000_000
"""... and at most this many state images (elements times states), which bounds the memory."""


@dataclass(frozen=True)
class UserLanguage:
    """A user's regular language: its name, minimal DFA, and a matcher independent of it."""

    name: str
    dfa: DFA
    contains: Callable[[str], bool]  # Python re for an expression; the automaton as given

    @property
    def alphabet(self) -> tuple[str, ...]:
        """The symbols, in order."""
        return self.dfa.alphabet

    def samples(self, count: int, max_len: int, seed: int = 0) -> list[str]:
        """Long strings for a check: positives and one-edit negatives of the minimal DFA.

        Of max_len/2 to max_len symbols, half each (none of a kind the language has not got);
        only strings: the check labels them with the language's own matcher.
        """
        from languages.base import LanguageError
        from languages.regular import dfa_graph

        dfa = self.dfa
        graph = dfa_graph(dfa.alphabet, dfa.start,
                          lambda q, symbol: dfa.delta[q][dfa.alphabet.index(symbol)],
                          lambda q: q in dfa.accepting)
        sampler = RegularLanguage(self.name, graph, self.name)
        found = []
        for draw, wanted in ((sampler.sample_positive, count - count // 2),
                             (sampler.sample_negative, count // 2)):
            try:
                found += draw(wanted, max_len // 2, max_len, seed=seed) if wanted else []
            except LanguageError:
                pass
        return found


def regex_language(text: str, alphabet: str | None = None, max_states: int = MAX_STATES,
                   max_work: int = MAX_WORK) -> UserLanguage:
    """The language of a regular expression (:mod:`satsim.rasp.regex`), checked by ``re``."""
    regex = parse_regex(text, alphabet)
    pattern = re.compile(regex.python_pattern())
    return UserLanguage(text, regex_dfa(regex, max_states, max_work),
                        lambda string: pattern.fullmatch(string) is not None)


def automaton_language(path: str | Path) -> UserLanguage:
    """The language of the automaton in a JSON file, checked by running it as given."""
    given = read_dfa(path)
    return UserLanguage(Path(path).name, dfa_minimised(given), given.accepts)


def dfa_minimised(dfa: DFA) -> DFA:
    """The minimal DFA of any complete DFA."""
    return minimal_dfa(dfa.alphabet, np.array(dfa.delta, dtype=np.int64), dfa.start,
                       np.array([q in dfa.accepting for q in range(dfa.states)]))


def decide_user(language: UserLanguage, max_monoid: int = MAX_MONOID) -> Decision:
    """Star-freeness of a user's language, refused past the monoid bounds."""
    return decide(language.dfa, min(max_monoid, max(1, MAX_MONOID_CELLS // language.dfa.states)))


def dfa_program(dfa: DFA, name: str, description: str = "",
                verdict: Decision | None = None) -> str:
    """A B-RASP program for a star-free language: its minimal DFA's holonomy cascade.

    Refused, with the witness, for a language that is not star-free.
    """
    check_cascade_size(dfa)
    for symbol in dfa.alphabet:
        if not symbol.isprintable() or symbol.isspace():
            raise SatsimError(f"{name}: the symbol {symbol!r} is not a visible character, which "
                              "B-RASP programs need (deciding star-freeness takes any symbol)")
    verdict = verdict or decide(dfa)
    if not verdict.star_free:
        raise SatsimError(f"{name} is not star-free, so no B-RASP program (no masked "
                          f"hard-attention transformer) recognises it: the word "
                          f"{verdict.witness!r} acts on its minimal DFA as x with x^k ≠ x^(k+1) "
                          f"for every k (its powers cycle with period {verdict.period})")
    return brasp_text(cascade(dfa, verdict), f"{name}: {description}" if description else name)


def regular_names() -> list[str]:
    """The registered regular languages: those given by a DFA, and the depth-bounded Dyck ones."""
    return [name for name in languages.names()
            if isinstance(languages.get(name), RegularLanguage)
            or _bounded_dyck(languages.get(name))]


@dataclass(frozen=True)
class Estimate:
    """What deciding a language costs, known before the monoid is enumerated."""

    states: int
    elements: int | None  # the monoid's size where it is known in advance, else None
    bytes: float | None
    seconds: float | None

    def describe(self) -> str:
        """'a monoid of 5,584,228 elements on 2,048 states: about 51 min and 23.8 GB'."""
        if self.elements is None:
            return f"a minimal DFA of {self.states:,} states (its monoid's size is not known " \
                   "in advance)"
        size = f"{self.bytes / 1e9:,.1f}" if self.bytes >= 1e8 else f"{self.bytes / 1e9:.2g}"
        return (f"a monoid of {self.elements:,} elements on {self.states:,} states: about "
                f"{_duration(self.seconds)} and {size} GB")


def decision_estimate(name: str) -> Estimate:
    """The cost of :func:`decide_language`, known before any work.

    Refused at once where the DFA alone is too large. The monoid's size is known in advance for
    the depth-bounded Dyck languages; for the others, the enumeration refuses once it fills the
    memory free.
    """
    language = languages.get(name)
    if not _bounded_dyck(language):
        return Estimate(language_dfa(language).states, None, None, None)
    kinds, depth = len(language.pairs), language.max_depth
    states = check_stack_states(name, kinds, depth)
    elements = stack_monoid_size(kinds, depth)
    return Estimate(states, elements, *monoid_cost(states, 2 * kinds, elements))


def check_decision(name: str, estimate: Estimate) -> None:
    """Refuse, in one line, deciding ``name`` where its estimate exceeds the memory free."""
    if estimate.bytes is not None:
        check_memory(estimate.bytes, f"deciding {name} (a monoid of {estimate.elements:,} "
                     f"elements on {estimate.states:,} states, about "
                     f"{_duration(estimate.seconds)})", "choose a smaller language (for "
                     "dyck-K-M, a smaller depth M or fewer bracket types K)")


def decide_language(name: str, progress: Callable[[int, int], None] | None = None) -> Decision:
    """Whether the regular language ``name`` is star-free (its minimal DFA's monoid).

    Refused before any work where :func:`check_decision` says so; ``progress(elements, word
    length)`` follows the enumeration.
    """
    check_decision(name, decision_estimate(name))
    return decide(language_dfa(languages.get(name)), progress=progress)


def star_free_program(name: str) -> str:
    """A B-RASP program for the star-free language ``name`` (refused, with the witness, if not).

    A depth-bounded Dyck language gets the program of its nesting levels
    (:mod:`satsim.rasp.nesting`); every other, the holonomy cascade of its minimal DFA
    (:func:`holonomy_program`).
    """
    language = languages.get(name)
    if _bounded_dyck(language):
        return nesting_program(language.pairs, language.max_depth,
                               f"{name}: {language.description}")
    return holonomy_program(name)


def holonomy_program(name: str) -> str:
    """A B-RASP program for the star-free language ``name``: its minimal DFA's holonomy cascade.

    Refused, with the witness, for a language that is not star-free (:mod:`satsim.rasp.holonomy`).
    """
    language = languages.get(name)
    return dfa_program(language_dfa(language), name, language.description)


def _duration(seconds: float) -> str:
    """'40 s', '51 min', '3 h'."""
    if seconds < 60:
        return f"{max(1, round(seconds))} s"
    return f"{round(seconds / 60)} min" if seconds < 5400 else f"{round(seconds / 3600)} h"


def _bounded_dyck(language) -> bool:
    """Whether the language is Dyck over bracket pairs with a depth bound."""
    return isinstance(getattr(language, "max_depth", None), int) and hasattr(language, "pairs")
