"""Small regular languages of the transformer literature, each a DFA.

Parity, (aa)*, (abab)*, (01)* (FLaRe's repeat-01), D_n, first and even pairs; those that count
modulo a number are not star-free. (aaaa)*, a+b+c+d+e+, [ab]*d[bc]* and [012]*02* are the other
regular languages of the decompiling-transformers zoo.
"""

from __future__ import annotations

from languages.references import (
    BHATTAMISHRA,
    BUTOI_FLARE,
    CHIANG,
    DELETANG,
    HAHN,
    HUANG_ZOO,
)
from languages.registry import register
from languages.regular import RegularLanguage, dfa_graph


def _parity(name: str, odd: int, what: str) -> RegularLanguage:
    """Binary strings whose number of 1s has parity ``odd`` (FLaRe's parity is the odd one)."""
    return RegularLanguage(
        name,
        dfa_graph("01", 0, lambda q, a: q ^ (a == "1"), lambda q: q == odd),
        f"binary strings with {what} number of 1s",
        (HAHN, BHATTAMISHRA, CHIANG, DELETANG, *((BUTOI_FLARE,) if odd else ())),
        "regular",
    )


def _cycle(name: str, word: str, alphabet: str, refs: tuple[str, ...],
           kind: str = "regular (not star-free)") -> RegularLanguage:
    """Strings of the form word* (a cycle of len(word) states, 0 accepting).

    word* is star-free iff word is primitive (not a power of a shorter word): (aa)* and (abab)*
    count modulo 2, (01)* does not.
    """
    n = len(word)
    return RegularLanguage(
        name,
        dfa_graph(
            alphabet, 0, lambda q, a: (q + 1) % n if a == word[q] else None, lambda q: q == 0
        ),
        f"({word})*: zero or more repetitions of {word}",
        refs,
        kind,
    )


def _d(n: int) -> RegularLanguage:
    """D_n = (a D_{n-1} b)*: Dyck-1 over a/b with depth at most n."""
    return RegularLanguage(
        f"d{n}",
        dfa_graph(
            "ab",
            0,
            lambda q, x: (q + 1 if q < n else None) if x == "a" else (q - 1 if q > 0 else None),
            lambda q: q == 0,
        ),
        f"D_{n} = (a D_{n - 1} b)*, D_0 = empty: balanced a/b strings of depth at most {n}",
        (BHATTAMISHRA,),
        f"star-free regular (dot-depth {n})",
    )


def _first_step(q: str, a: str) -> str | None:
    """Start reads the first symbol: 1 accepts forever, 0 dies."""
    if q == "start":
        return "yes" if a == "1" else None
    return "yes"


def _blocks_step(q: str, a: str) -> str | None:
    """a+b+c+d+e+: the state is the last symbol read; each may repeat or pass to the next."""
    order = "abcde"
    if q == "start":
        return "a" if a == "a" else None
    return a if a in (q, order[order.index(q) + 1 : order.index(q) + 2]) else None


def _ab_d_bc_step(q: str, a: str) -> str | None:
    """[ab]*d[bc]*: before the d, a or b; the d; after it, b or c."""
    if q == "before":
        return {"a": "before", "b": "before", "d": "after"}.get(a)
    return "after" if a in "bc" else None


def _even_pairs_step(q: tuple[str, str] | str, a: str) -> tuple[str, str]:
    """Remember the first and the last symbol."""
    return (a, a) if q == "start" else (q[0], a)


for language in (
    _parity("parity-even", 0, "an even"),
    _parity("parity-odd", 1, "an odd"),
    _cycle("aa-star", "aa", "a", (BHATTAMISHRA,)),
    _cycle("abab-star", "abab", "ab", (BHATTAMISHRA,)),
    _cycle("repeat-01", "01", "01", (BUTOI_FLARE,), "star-free regular"),
    _d(2),
    _d(3),
    _d(4),
    RegularLanguage(
        "first",
        dfa_graph("01", "start", _first_step, lambda q: q == "yes"),
        "binary strings whose first symbol is 1",
        (CHIANG, BUTOI_FLARE),
        "star-free regular",
    ),
    RegularLanguage(
        "even-pairs",
        dfa_graph("ab", "start", _even_pairs_step, lambda q: q == "start" or q[0] == q[1]),
        "strings over {a, b} with an even number of ab and ba factors (first symbol = last)",
        (DELETANG, BUTOI_FLARE),
        "star-free regular",
    ),
    _cycle("aaaa-star", "aaaa", "a", (HUANG_ZOO,)),
    RegularLanguage(
        "abcde",
        dfa_graph("abcde", "start", _blocks_step, lambda q: q == "e"),
        "a+b+c+d+e+: one or more a, then b, c, d and e, each one or more times",
        (HUANG_ZOO,),
        "star-free regular",
    ),
    RegularLanguage(
        "ab-d-bc",
        dfa_graph("abcd", "before", _ab_d_bc_step, lambda q: q == "after"),
        "[ab]*d[bc]*: a and b, one d, then b and c",
        (HUANG_ZOO,),
        "star-free regular",
    ),
    RegularLanguage(
        "012-0-2",
        dfa_graph("012", "other", lambda q, a: {"0": "zero", "1": "other"}.get(a, q),
                  lambda q: q == "zero"),
        "[012]*02*: strings over {0, 1, 2} whose last symbol other than 2 is 0",
        (HUANG_ZOO,),
        "star-free regular",
    ),
):
    register(language)
