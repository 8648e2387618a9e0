"""From a regular expression to its minimal DFA: Thompson's NFA, then the subset construction.

The subset construction can need exponentially many states (``(a+b)*a(a+b)…(a+b)``), so it
stops with a one-line refusal past :data:`MAX_STATES` subsets or :data:`MAX_WORK` NFA states
visited, whichever comes first; nothing it holds grows beyond those.
"""

from __future__ import annotations

import numpy as np

from satsim.errors import SatsimError
from satsim.rasp.automata import DFA, minimal_dfa
from satsim.rasp.regex import Node, Regex, symbols_of

MAX_STATES = 20_000
"""Subsets (states of the DFA before minimisation) built at most."""

MAX_WORK = 20_000_000
"""NFA states visited at most, summed over the subsets and symbols (about a minute of work)."""


class _Thompson:
    """An NFA with one start and one final state; each state has a symbol edge or ε-edges."""

    def __init__(self, alphabet: tuple[str, ...]) -> None:
        self.alphabet = alphabet
        self.labels: list[frozenset[int] | None] = []  # symbol indices of the state's edge
        self.targets: list[int] = []  # where the symbol edge goes
        self.epsilon: list[list[int]] = []

    def state(self) -> int:
        self.labels.append(None)
        self.targets.append(-1)
        self.epsilon.append([])
        return len(self.labels) - 1

    def build(self, node: Node) -> tuple[int, int]:
        """Start and final state of the node's fragment."""
        kind = node[0]
        start, final = self.state(), self.state()
        if kind in ("set", "not"):
            self.labels[start] = frozenset(self.alphabet.index(s)
                                           for s in symbols_of(node, self.alphabet))
            self.targets[start] = final
        elif kind == "eps":
            self.epsilon[start].append(final)
        elif kind == "cat":
            previous = start
            for part in node[1]:
                first, last = self.build(part)
                self.epsilon[previous].append(first)
                previous = last
            self.epsilon[previous].append(final)
        elif kind == "alt":
            for part in node[1]:
                first, last = self.build(part)
                self.epsilon[start].append(first)
                self.epsilon[last].append(final)
        else:  # star or opt
            first, last = self.build(node[1])
            self.epsilon[start] += [first, final]
            self.epsilon[last].append(final)
            if kind == "star":
                self.epsilon[last].append(first)
        return start, final

    def closure(self, states) -> tuple[frozenset[int], int]:
        """The states ε-edges reach that matter (symbol edges, final); and how many it visited."""
        seen, stack = set(states), list(states)
        while stack:
            for nxt in self.epsilon[stack.pop()]:
                if nxt not in seen:
                    seen.add(nxt)
                    stack.append(nxt)
        kept = frozenset(q for q in seen if self.labels[q] is not None or not self.epsilon[q])
        return kept, len(seen)


def regex_dfa(regex: Regex, max_states: int = MAX_STATES, max_work: int = MAX_WORK) -> DFA:
    """The minimal complete DFA of the expression (refused past the bounds, in one line)."""
    nfa = _Thompson(regex.alphabet)
    start, final = nfa.build(regex.tree)
    first, work = nfa.closure([start])
    subsets, order, rows = {first: 0}, [first], []
    while len(rows) < len(order):
        current = order[len(rows)]
        row = []
        for a in range(len(regex.alphabet)):
            nxt, visited = nfa.closure({nfa.targets[q] for q in current
                                        if nfa.labels[q] is not None and a in nfa.labels[q]})
            work += visited + len(current)
            if nxt not in subsets:
                subsets[nxt] = len(order)
                order.append(nxt)
                if len(order) > max_states:
                    raise SatsimError(f"determinising the expression needs more than "
                                      f"{max_states:,} DFA states (exponential blow-up); "
                                      "refused")
            row.append(subsets[nxt])
        if work > max_work:
            raise SatsimError(f"determinising the expression takes more than {max_work:,} "
                              f"steps ({len(order):,} DFA states so far); refused")
        rows.append(row)
    accept = np.array([final in subset for subset in order])
    return minimal_dfa(regex.alphabet, np.array(rows, dtype=np.int64), 0, accept)
