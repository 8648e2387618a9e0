"""The DFA of a B-RASP program whose attentions look only at the past, except at the end.

Reading left to right, each attention keeps, per value of what its score reads at the query,
the key-side reads of the leftmost (rightmost) qualifying position seen so far; with those,
every definition at the next position follows from its symbol. The states are these memories
(and whether ``accept`` holds at the position just read), found breadth first from the empty
string. A ``j > i`` or ``True`` attention is exact here only at the last position (there it
sees no future, or every position so far), so it may feed ``accept`` at the last position but
no vector read at another position; a program where it does is refused.
"""

from __future__ import annotations

import itertools
from collections import deque

import numpy as np

from satsim.errors import SatsimError
from satsim.rasp.automata import DFA, minimal_dfa
from satsim.rasp.brasp import accepts
from satsim.rasp.syntax import And, At, Attend, Constant, Name, Node, Not, Or, Program, Symbol

MAX_DFA_STATES = 100_000
"""The most states the left-to-right construction may reach before it is refused."""


def _names(node: Node) -> list[tuple[str, str | None]]:
    """(name, index) of every vector ``node`` reads (index "i"/"j" inside attention, else None)."""
    if isinstance(node, Name):
        return [(node.name, None)]
    if isinstance(node, At):
        return [(name, node.index) for name, _ in _names(node.vector)]
    if isinstance(node, Attend):
        return _names(node.score) + _names(node.value) + _names(node.default)
    if isinstance(node, Not):
        return _names(node.arg)
    if isinstance(node, (And, Or)):
        return [read for arg in node.args for read in _names(arg)]
    return []


def _reads(node: Node, index: str) -> list[At]:
    """The distinct ``P[index]`` reads of an attention's formula."""
    if isinstance(node, At):
        return [node] if node.index == index else []
    if isinstance(node, Not):
        return _reads(node.arg, index)
    if isinstance(node, (And, Or)):
        return list(dict.fromkeys(r for arg in node.args for r in _reads(arg, index)))
    return []


def _check_past_only(program: Program) -> None:
    """Refuse a program where a j > i or True attention feeds a vector read elsewhere."""
    exprs = {d.name: d.expr for d in program.definitions}
    anywhere: set[str] = set()
    todo = [name for d in program.definitions for name, index in _names(d.expr) if index == "j"]
    while todo:
        name = todo.pop()
        if name in anywhere or name not in exprs:
            continue
        anywhere.add(name)
        todo.extend(n for n, _ in _names(exprs[name]))
    for name in sorted(anywhere):
        if any(isinstance(sub, Attend) and sub.mask != "past"
               for sub in (exprs[name], *_subnodes(exprs[name]))):
            raise SatsimError(f"{name} looks at the future or at every position and is read "
                              "at other positions: the left-to-right DFA construction does "
                              "not cover it")


def _subnodes(node: Node) -> list[Node]:
    """Every node below ``node``."""
    if isinstance(node, Not):
        return [node.arg, *_subnodes(node.arg)]
    if isinstance(node, (And, Or)):
        return [n for arg in node.args for n in (arg, *_subnodes(arg))]
    return []


class _Machine:
    """The program as a left-to-right machine over attention memories."""

    def __init__(self, program: Program) -> None:
        self.program = program
        found = [sub for d in program.definitions for sub in (d.expr, *_subnodes(d.expr))
                 if isinstance(sub, Attend)]
        self.attends = list(dict.fromkeys(found))
        self.i_reads = {a: _reads(a.score, "i") for a in self.attends}
        self.j_reads = {a: list(dict.fromkeys(_reads(a.score, "j") + _reads(a.value, "j")))
                        for a in self.attends}

    def empty(self) -> tuple:
        """The memory before any symbol: no position seen by any attention."""
        return tuple(tuple(None for _ in range(2 ** len(self.i_reads[a])))
                     for a in self.attends)

    def step(self, memory: tuple, symbol: str) -> tuple[tuple, bool]:
        """The memory after one more symbol, and ``accept`` at that position."""
        values: dict[str, bool] = {}
        for d in self.program.definitions:
            values[d.name] = self._value(d.expr, values, symbol, memory)
        grown = []
        for a, slots in zip(self.attends, memory):
            here = tuple(self._value(r.vector, values, symbol, memory) for r in self.j_reads[a])
            kept_slots = []
            for env, kept in zip(self._envs(a), slots):
                hit = self._pair(a.score, env, dict(zip(self.j_reads[a], here)))
                kept_slots.append(here if hit and (kept is None or a.side == "rightmost")
                                  else kept)
            grown.append(tuple(kept_slots))
        return tuple(grown), values["accept"]

    def _envs(self, a: Attend) -> list[dict]:
        reads = self.i_reads[a]
        return [dict(zip(reads, bits)) for bits in itertools.product((False, True),
                                                                   repeat=len(reads))]

    def _attend(self, a: Attend, slots: tuple, values: dict, symbol: str, memory) -> bool:
        def read(r: At) -> bool:
            return self._value(r.vector, values, symbol, memory)

        at_i = {r: read(r) for r in dict.fromkeys(
            self.i_reads[a] + _reads(a.value, "i") + _reads(a.default, "i"))}
        kept = slots[self._envs(a).index({r: at_i[r] for r in self.i_reads[a]})]
        if a.mask == "future":
            kept = None  # at the last position nothing lies after it
        elif a.mask == "all":  # at the last position: every position so far, i included
            here = {r: read(r) for r in self.j_reads[a]}
            if self._pair(a.score, at_i, here) and (kept is None or a.side == "rightmost"):
                kept = tuple(here[r] for r in self.j_reads[a])
        if kept is None:
            return self._pair(a.default, at_i, {})
        return self._pair(a.value, at_i, dict(zip(self.j_reads[a], kept)))

    def _value(self, node: Node, values: dict, symbol: str, memory: tuple) -> bool:
        if isinstance(node, Symbol):
            return node.symbol == symbol
        if isinstance(node, Constant):
            return bool(node.value)
        if isinstance(node, Name):
            return values[node.name]
        if isinstance(node, Attend):
            return self._attend(node, memory[self.attends.index(node)], values, symbol, memory)
        if isinstance(node, Not):
            return not self._value(node.arg, values, symbol, memory)
        parts = [self._value(arg, values, symbol, memory) for arg in node.args]
        return all(parts) if isinstance(node, And) else any(parts)

    def _pair(self, node: Node, at_i: dict, at_j: dict) -> bool:
        if isinstance(node, At):
            return (at_i if node.index == "i" else at_j)[node]
        if isinstance(node, Constant):
            return bool(node.value)
        if isinstance(node, Not):
            return not self._pair(node.arg, at_i, at_j)
        parts = [self._pair(arg, at_i, at_j) for arg in node.args]
        return all(parts) if isinstance(node, And) else any(parts)


def brasp_dfa(program: Program) -> DFA:
    """The minimal DFA of a B-RASP program (past-looking but at the end; else refused)."""
    _check_past_only(program)
    machine = _Machine(program)
    alphabet = tuple(program.alphabet)
    start = (machine.empty(), accepts(program, ""))
    number, rows, queue = {start: 0}, [], deque([start])
    while queue:
        memory, _ = queue.popleft()
        row = []
        for symbol in alphabet:
            target = machine.step(memory, symbol)
            if target not in number:
                if len(number) >= MAX_DFA_STATES:
                    raise SatsimError(f"the program's left-to-right machine passes "
                                      f"{MAX_DFA_STATES} states")
                number[target] = len(number)
                queue.append(target)
            row.append(number[target])
        rows.append(row)
    accept = np.array([a for (_, a) in sorted(number, key=number.get)], dtype=bool)
    return minimal_dfa(alphabet, np.array(rows, dtype=np.int64), 0, accept)


def equivalent(a: DFA, b: DFA) -> str | None:
    """None if two DFAs accept the same language, else a shortest string telling them apart.

    Breadth first over the product of the two (same alphabet).
    """
    if a.alphabet != b.alphabet:
        raise SatsimError(f"the alphabets differ: {''.join(a.alphabet)!r} and "
                          f"{''.join(b.alphabet)!r}")
    seen, queue = {(a.start, b.start): ""}, deque([(a.start, b.start)])
    while queue:
        p, q = queue.popleft()
        if (p in a.accepting) != (q in b.accepting):
            return seen[(p, q)]
        for k, symbol in enumerate(a.alphabet):
            pair = (a.delta[p][k], b.delta[q][k])
            if pair not in seen:
                seen[pair] = seen[(p, q)] + symbol
                queue.append(pair)
    return None


def dfa_json(dfa: DFA) -> dict:
    """The DFA in satsim's JSON automaton format (``satsim decide --dfa`` reads it)."""
    return {"alphabet": list(dfa.alphabet), "start": dfa.start,
            "accepting": sorted(dfa.accepting),
            "transitions": {str(q): dict(zip(dfa.alphabet, row))
                            for q, row in enumerate(dfa.delta)}}
