"""The suite's regular languages: star-freeness, and a B-RASP program for each star-free one."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import languages
from languages import RegularLanguage
from satsim.engine.resources import check_memory
from satsim.errors import SatsimError
from satsim.rasp.automata import (
    Decision,
    check_stack_states,
    decide,
    language_dfa,
    monoid_cost,
    stack_monoid_size,
)
from satsim.rasp.holonomy import brasp_text, cascade, check_cascade_size
from satsim.rasp.nesting import nesting_program


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
    dfa = language_dfa(language)
    check_cascade_size(dfa)
    verdict = decide(dfa)
    if not verdict.star_free:
        raise SatsimError(f"{name} is not star-free, so no B-RASP program (no masked "
                          f"hard-attention transformer) recognises it: the word "
                          f"{verdict.witness!r} acts on its minimal DFA as x with x^k ≠ x^(k+1) "
                          f"for every k (its powers cycle with period {verdict.period})")
    return brasp_text(cascade(dfa, verdict), f"{name}: {language.description}")


def _duration(seconds: float) -> str:
    """'40 s', '51 min', '3 h'."""
    if seconds < 60:
        return f"{max(1, round(seconds))} s"
    return f"{round(seconds / 60)} min" if seconds < 5400 else f"{round(seconds / 3600)} h"


def _bounded_dyck(language) -> bool:
    """Whether the language is Dyck over bracket pairs with a depth bound."""
    return isinstance(getattr(language, "max_depth", None), int) and hasattr(language, "pairs")
