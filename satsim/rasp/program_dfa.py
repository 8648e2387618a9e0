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
from dataclasses import replace

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


def _intern(node: Node, table: dict) -> Node:
    """``node`` rebuilt so that equal subtrees are one object (the first one met)."""
    if isinstance(node, Not):
        node = replace(node, arg=_intern(node.arg, table))
    elif isinstance(node, (And, Or)):
        node = replace(node, args=tuple(_intern(arg, table) for arg in node.args))
    elif isinstance(node, At):
        node = replace(node, vector=_intern(node.vector, table))
    elif isinstance(node, Attend):
        node = replace(node, score=_intern(node.score, table), value=_intern(node.value, table),
                       default=_intern(node.default, table))
    return table.setdefault(node, node)


class _Machine:
    """The program as a left-to-right machine over attention memories.

    Its expressions are interned (equal subtrees are one object), so attentions and their reads
    are looked up by ``id`` (hashing a syntax node hashes its whole subtree), and compiled once
    into nested closures, which every step of every state calls.
    """

    def __init__(self, program: Program) -> None:
        table: dict = {}
        self.exprs = [(d.name, _intern(d.expr, table)) for d in program.definitions]
        found = [sub for _, expr in self.exprs for sub in (expr, *_subnodes(expr))
                 if isinstance(sub, Attend)]
        self.attends = list({id(a): a for a in found}.values())
        self.slot = {id(a): k for k, a in enumerate(self.attends)}
        self.i_reads = [_reads(a.score, "i") for a in self.attends]
        self.j_reads = [list(dict.fromkeys(_reads(a.score, "j") + _reads(a.value, "j")))
                        for a in self.attends]
        self.i_all = [list(dict.fromkeys(reads + _reads(a.value, "i") + _reads(a.default, "i")))
                      for reads, a in zip(self.i_reads, self.attends)]
        self.envs = [[{id(r): bit for r, bit in zip(reads, bits)}
                      for bits in itertools.product((False, True), repeat=len(reads))]
                     for reads in self.i_reads]
        # every formula compiled once into nested closures; reads keyed by the At's id
        self.slot_ids = [[id(r) for r in reads] for reads in self.i_reads]
        self.i_ids = [[id(r) for r in reads] for reads in self.i_all]
        self.j_ids = [[id(r) for r in reads] for reads in self.j_reads]
        self.i_values = [[self._value(r.vector) for r in reads] for reads in self.i_all]
        self.j_values = [[self._value(r.vector) for r in reads] for reads in self.j_reads]
        self.scores = [self._pair(a.score) for a in self.attends]
        self.values_at = [self._pair(a.value) for a in self.attends]
        self.defaults = [self._pair(a.default) for a in self.attends]
        self.definitions = [(name, self._value(expr)) for name, expr in self.exprs]

    def empty(self) -> tuple:
        """The memory before any symbol: no position seen by any attention."""
        return tuple(tuple(None for _ in range(2 ** len(reads))) for reads in self.i_reads)

    def step(self, memory: tuple, symbol: str) -> tuple[tuple, bool]:
        """The memory after one more symbol, and ``accept`` at that position."""
        values: dict[str, bool] = {}
        for name, value in self.definitions:
            values[name] = value(values, symbol, memory)
        grown = []
        for k, (a, slots) in enumerate(zip(self.attends, memory)):
            here = tuple(read(values, symbol, memory) for read in self.j_values[k])
            at_j = dict(zip(self.j_ids[k], here))
            score, rightmost = self.scores[k], a.side == "rightmost"
            grown.append(tuple(here if score(env, at_j) and (kept is None or rightmost) else kept
                               for env, kept in zip(self.envs[k], slots)))
        return tuple(grown), values["accept"]

    def _attend(self, k: int, values: dict, symbol: str, memory: tuple) -> bool:
        """Attention ``k`` at the position just read, from its memory."""
        a = self.attends[k]
        at_i = {key: read(values, symbol, memory)
                for key, read in zip(self.i_ids[k], self.i_values[k])}
        index = 0  # the slot of these query-side bits, in the order of itertools.product
        for key in self.slot_ids[k]:
            index = 2 * index + at_i[key]
        kept = memory[k][index]
        if a.mask == "future":
            kept = None  # at the last position nothing lies after it
        elif a.mask == "all":  # at the last position: every position so far, i included
            here = {key: read(values, symbol, memory)
                    for key, read in zip(self.j_ids[k], self.j_values[k])}
            if self.scores[k](at_i, here) and (kept is None or a.side == "rightmost"):
                kept = tuple(here[key] for key in self.j_ids[k])
        if kept is None:
            return self.defaults[k](at_i, {})
        return self.values_at[k](at_i, dict(zip(self.j_ids[k], kept)))

    def _value(self, node: Node):
        """``node`` as a function of (definitions so far, symbol, memory)."""
        if isinstance(node, Symbol):
            symbol = node.symbol
            return lambda values, at, memory: at == symbol
        if isinstance(node, Constant):
            constant = bool(node.value)
            return lambda values, at, memory: constant
        if isinstance(node, Name):
            name = node.name
            return lambda values, at, memory: values[name]
        if isinstance(node, Attend):
            k, attend = self.slot[id(node)], self._attend
            return lambda values, at, memory: attend(k, values, at, memory)
        if isinstance(node, Not):
            arg = self._value(node.arg)
            return lambda values, at, memory: not arg(values, at, memory)
        args = [self._value(arg) for arg in node.args]
        if isinstance(node, And):
            return lambda values, at, memory: all(f(values, at, memory) for f in args)
        return lambda values, at, memory: any(f(values, at, memory) for f in args)

    def _pair(self, node: Node):
        """An attention formula as a function of its reads at i and at j (by ``id``)."""
        if isinstance(node, At):
            key = id(node)
            if node.index == "i":
                return lambda at_i, at_j: at_i[key]
            return lambda at_i, at_j: at_j[key]
        if isinstance(node, Constant):
            constant = bool(node.value)
            return lambda at_i, at_j: constant
        if isinstance(node, Not):
            arg = self._pair(node.arg)
            return lambda at_i, at_j: not arg(at_i, at_j)
        args = [self._pair(arg) for arg in node.args]
        if isinstance(node, And):
            return lambda at_i, at_j: all(f(at_i, at_j) for f in args)
        return lambda at_i, at_j: any(f(at_i, at_j) for f in args)


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
