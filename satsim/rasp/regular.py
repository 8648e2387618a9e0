"""The suite's regular languages: star-freeness, and a B-RASP program for each star-free one."""

from __future__ import annotations

import languages
from languages import RegularLanguage
from satsim.errors import SatsimError
from satsim.rasp.automata import Decision, decide, language_dfa
from satsim.rasp.holonomy import brasp_text, cascade, check_cascade_size
from satsim.rasp.nesting import nesting_program


def regular_names() -> list[str]:
    """The registered regular languages: those given by a DFA, and the depth-bounded Dyck ones."""
    return [name for name in languages.names()
            if isinstance(languages.get(name), RegularLanguage)
            or _bounded_dyck(languages.get(name))]


def decide_language(name: str) -> Decision:
    """Whether the regular language ``name`` is star-free (its minimal DFA's monoid)."""
    return decide(language_dfa(languages.get(name)))


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


def _bounded_dyck(language) -> bool:
    """Whether the language is Dyck over bracket pairs with a depth bound."""
    return isinstance(getattr(language, "max_depth", None), int) and hasattr(language, "pairs")
