"""Minimal DFAs, their transition monoids, and star-freeness (Schützenberger).

A regular language is star-free iff the transition monoid of its minimal DFA is aperiodic:
every element x has x^k = x^(k+1) for some k. Where it is not, an element with a cycle of
length p > 1 among its powers is the witness: x^k ≠ x^(k+1) for every k ≥ 1.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

import numpy as np

from satsim.errors import SatsimError

MAX_MONOID = 200_000
"""Monoid elements :func:`transition_monoid` enumerates before it refuses."""


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
    """The minimal DFA of a regular language of the suite (one that holds a DFA table)."""
    delta = getattr(language, "delta", None)
    if delta is None:
        raise SatsimError(f"language {language.name!r} is not given as a DFA (star-freeness is "
                          "decided for the suite's regular languages only)")
    return minimal_dfa(tuple(language.alphabet), np.asarray(delta), int(language.start),
                       np.asarray(language.accept))


@dataclass(frozen=True)
class Monoid:
    """The transition monoid: every transformation (state images) with a shortest word."""

    elements: dict[tuple[int, ...], str]


def transition_monoid(dfa: DFA, limit: int = MAX_MONOID) -> Monoid:
    """All transformations of the states by words, each with a shortest word giving it."""
    identity = tuple(range(dfa.states))
    letters = [tuple(row[a] for row in dfa.delta) for a in range(len(dfa.alphabet))]
    words = {identity: ""}
    queue = deque([identity])
    while queue:
        x = queue.popleft()
        for symbol, letter in zip(dfa.alphabet, letters):
            y = tuple(letter[q] for q in x)  # x, then the letter
            if y not in words:
                words[y] = words[x] + symbol
                if len(words) > limit:
                    raise SatsimError(f"the transition monoid has more than {limit:,} elements; "
                                      "too large to decide here")
                queue.append(y)
    return Monoid(words)


@dataclass(frozen=True)
class Decision:
    """Whether a regular language is star-free, with the sizes and, if not, the witness."""

    star_free: bool
    dfa_states: int
    monoid_size: int
    witness: str | None  # a word whose transformation x has x^k ≠ x^(k+1) for all k ≥ 1
    period: int  # the witness's cycle length among its powers (1 when star-free)
    index: int  # the least k with x^k = x^(k+1) for all x (star-free), else the witness's

    def as_dict(self) -> dict:
        """JSON-ready fields."""
        return {"star_free": self.star_free, "dfa_states": self.dfa_states,
                "monoid_size": self.monoid_size,
                "witness": None if self.witness is None else
                {"word": self.witness, "period": self.period, "k": self.index}}


def _powers(x: tuple[int, ...]) -> tuple[int, int]:
    """(index, period) of x: x^index = x^(index + period), both least."""
    seen: dict[tuple[int, ...], int] = {}
    power, k = x, 1
    while power not in seen:
        seen[power] = k
        power = tuple(power[q] for q in x)  # one more x after x^k: x^(k+1)
        k += 1
    return seen[power], k - seen[power]


def decide(dfa: DFA) -> Decision:
    """Star-freeness of the DFA's language: aperiodicity of its minimal DFA's monoid."""
    monoid = transition_monoid(dfa)
    worst = 1
    for x, word in sorted(monoid.elements.items(), key=lambda item: (len(item[1]), item[1])):
        index, period = _powers(x)
        if period > 1:
            return Decision(False, dfa.states, len(monoid.elements), word, period, index)
        worst = max(worst, index)
    return Decision(True, dfa.states, len(monoid.elements), None, 1, worst)
