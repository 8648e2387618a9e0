"""Minimal DFAs, their transition monoids, and star-freeness (Schützenberger).

A regular language is star-free iff the transition monoid of its minimal DFA is aperiodic:
every element x has x^k = x^(k+1) for some k. Where it is not, an element with a cycle of
length p > 1 among its powers is the witness: x^k ≠ x^(k+1) for every k ≥ 1.
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass

import numpy as np

from satsim.errors import SatsimError

MAX_CELLS = 60_000_000
"""Monoid elements times states :func:`transition_monoid` holds before it refuses (about a
quarter of a gigabyte of state images)."""


@dataclass(frozen=True)
class DFA:
    """A complete DFA: ``delta[q][a]`` for states 0..n-1 and symbol indices, start, accepting."""

    alphabet: tuple[str, ...]
    delta: tuple[tuple[int, ...], ...]
    start: int
    accepting: frozenset[int]

    @property
    def states(self) -> int:
        """The number of states."""
        return len(self.delta)

    def run(self, string: str) -> int:
        """The state after reading ``string`` from the start."""
        q = self.start
        for symbol in string:
            q = self.delta[q][self.alphabet.index(symbol)]
        return q

    def accepts(self, string: str) -> bool:
        """Whether the DFA accepts ``string``."""
        return self.run(string) in self.accepting


def minimal_dfa(alphabet: tuple[str, ...], delta: np.ndarray, start: int,
                accept: np.ndarray) -> DFA:
    """The minimal complete DFA of a complete DFA table (unreachable states dropped)."""
    reachable, queue = {start}, deque([start])
    while queue:
        q = queue.popleft()
        for target in delta[q]:
            if int(target) not in reachable:
                reachable.add(int(target))
                queue.append(int(target))
    states = sorted(reachable)
    block = {q: int(bool(accept[q])) for q in states}
    while True:  # Moore's refinement: split blocks by the blocks of the successors
        signature = {q: (block[q], *(block[int(t)] for t in delta[q])) for q in states}
        names = {s: i for i, s in enumerate(sorted(set(signature.values())))}
        refined = {q: names[signature[q]] for q in states}
        if len(set(refined.values())) == len(set(block.values())):
            break
        block = refined
    number = {b: i for i, b in enumerate(sorted(set(block.values()), key=lambda b: min(
        q for q in states if block[q] == b)))}
    table: dict[int, tuple[int, ...]] = {}
    for q in states:
        table.setdefault(number[block[q]], tuple(number[block[int(t)]] for t in delta[q]))
    accepting = frozenset(number[block[q]] for q in states if accept[q])
    return DFA(tuple(alphabet), tuple(table[i] for i in range(len(table))),
               number[block[start]], accepting)


def language_dfa(language) -> DFA:
    """The minimal DFA of a regular language of the suite.

    A language given by a DFA table (:class:`languages.RegularLanguage`), or a depth-bounded
    Dyck language, whose DFA is its stack of open brackets.
    """
    delta = getattr(language, "delta", None)
    if delta is not None:
        return minimal_dfa(tuple(language.alphabet), np.asarray(delta), int(language.start),
                           np.asarray(language.accept))
    if isinstance(getattr(language, "max_depth", None), int) and hasattr(language, "pairs"):
        return minimal_dfa(*_stack_dfa(language.pairs, language.max_depth))
    raise SatsimError(f"language {language.name!r} is not regular as the suite gives it (no "
                      "DFA); star-freeness is decided for the regular languages")


def _stack_dfa(pairs: tuple[str, ...], depth: int) -> tuple:
    """(alphabet, delta, start, accept) of bracket pairs nested at most ``depth`` deep."""
    alphabet = tuple("".join(pairs))
    stacks, queue = {(): 0}, deque([()])
    rows: list[list[object]] = []
    while queue:
        stack = queue.popleft()
        row: list[object] = []
        for symbol in alphabet:
            kind = next(i for i, pair in enumerate(pairs) if symbol in pair)
            if symbol == pairs[kind][0]:
                nxt = stack + (kind,) if len(stack) < depth else None
            else:
                nxt = stack[:-1] if stack and stack[-1] == kind else None
            if nxt is not None and nxt not in stacks:
                stacks[nxt] = len(stacks)
                queue.append(nxt)
            row.append(nxt)
        rows.append(row)
    dead = len(stacks)
    delta = np.array([[dead if t is None else stacks[t] for t in row] for row in rows]
                     + [[dead] * len(alphabet)])
    accept = np.array([stack == () for stack in stacks] + [False])
    return alphabet, delta, 0, accept


@dataclass(frozen=True)
class Monoid:
    """The transition monoid: every transformation of the states by a word, with a shortest word.

    ``elements[r]`` maps state q to ``elements[r, q]``; ``words[r]`` gives it (breadth-first, so
    the shortest, the empty word first).
    """

    elements: np.ndarray
    words: list[str]


def transition_monoid(dfa: DFA, limit: int | None = None) -> Monoid:
    """All transformations of the states by words, each with a shortest word giving it.

    Refused past ``limit`` elements (default: :data:`MAX_CELLS` over the number of states).
    """
    limit = limit or MAX_CELLS // dfa.states
    letters = np.array([[row[a] for row in dfa.delta] for a in range(len(dfa.alphabet))],
                       dtype=np.int32).reshape(len(dfa.alphabet), dfa.states)
    found = [np.arange(dfa.states, dtype=np.int32)]
    words = [""]
    seen = {found[0].tobytes()}
    frontier = [0]
    while frontier:
        rows = np.stack([found[r] for r in frontier])
        nxt = []
        for symbol, letter in zip(dfa.alphabet, letters):
            for r, row in zip(frontier, letter[rows]):  # each element, then the letter
                key = row.tobytes()
                if key not in seen:
                    seen.add(key)
                    found.append(row)
                    words.append(words[r] + symbol)
                    nxt.append(len(found) - 1)
                    if len(found) > limit:
                        raise SatsimError(f"the transition monoid of the {dfa.states}-state "
                                          f"minimal DFA has more than {limit:,} elements; too "
                                          "large to decide here")
        frontier = nxt
    return Monoid(np.stack(found), words)


@dataclass(frozen=True)
class Decision:
    """Whether a regular language is star-free, with the sizes and, if not, the witness."""

    star_free: bool
    dfa_states: int
    monoid_size: int
    witness: str | None  # a word whose transformation x has x^k ≠ x^(k+1) for all k ≥ 1
    period: int  # the witness's cycle length among its powers (1 when star-free)

    def as_dict(self) -> dict:
        """JSON-ready fields."""
        return {"star_free": self.star_free, "dfa_states": self.dfa_states,
                "monoid_size": self.monoid_size,
                "witness": None if self.witness is None else
                {"word": self.witness, "period": self.period}}


def _period(x: np.ndarray) -> int:
    """The length of the cycle that the powers x, x², … end in."""
    seen: dict[bytes, int] = {}
    power, k = x, 1
    while power.tobytes() not in seen:
        seen[power.tobytes()] = k
        power = x[power]  # x^k, then x
        k += 1
    return k - seen[power.tobytes()]


def decide(dfa: DFA) -> Decision:
    """Star-freeness of the DFA's language: aperiodicity of its minimal DFA's monoid.

    On n states every x has x^N = x^(N+1) for some N ≤ n exactly when its powers do not cycle,
    so x^N with N the first power of two ≥ n (by squaring) against x^(N+1) decides every
    element at once.
    """
    monoid = transition_monoid(dfa)
    x = monoid.elements
    power = x
    for _ in range(max(1, math.ceil(math.log2(max(dfa.states, 2))))):
        power = np.take_along_axis(power, power, axis=1)  # x^(2t) = x^t then x^t
    cycling = np.flatnonzero(~(np.take_along_axis(x, power, axis=1) == power).all(axis=1))
    if len(cycling):
        first = cycling[0]  # breadth-first order: a shortest witness
        return Decision(False, dfa.states, len(x), monoid.words[first], _period(x[first]))
    return Decision(True, dfa.states, len(x), None, 1)
