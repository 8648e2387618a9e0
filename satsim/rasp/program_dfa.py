"""The DFA of a B-RASP program, its attentions looking at the past, the future or everywhere.

Two deterministic automata are built together, in program order: a left one reads the prefix
before a position (left to right) and a right one the suffix after it (right to left), so that
every definition at position i is a function of (L_i, w_i, R_i). A past attention adds to the
left automaton a memory per state of the right automaton built so far: at a prefix, for each
suffix state that may follow, the key-side reads of its leftmost (rightmost) qualifying
position (the keys' own values depend on the suffix). A future attention adds the mirror image
to the right automaton, and an attention over every position adds both (the query itself in
between). Memories of attentions with the same mask, side and score are one.

At the last position the suffix is empty, so the language's automaton is the left one with
``accept`` read there; its states are found breadth first from the empty string, then
minimised. Each automaton's states are numbered per number of memories (a state is the state
before its last memory, and that memory), so a definition reads only the memories it needs.
"""

from __future__ import annotations

import itertools
from collections import deque
from dataclasses import replace
from typing import NamedTuple

import numpy as np

from satsim.errors import SatsimError
from satsim.rasp.automata import DFA, minimal_dfa
from satsim.rasp.brasp import accepts
from satsim.rasp.syntax import And, At, Attend, Constant, Name, Node, Not, Or, Program, Symbol

MAX_DFA_STATES = 100_000
"""The most states either automaton, or the language's machine, may reach before refusal."""
MAX_DFA_READS = 5_000_000
"""The most key-side reads (one definition at a key position, for one state of each automaton)
before refusal: under a minute here; the extracted programs of bounded Dyck languages need
more."""
LEFT, RIGHT = 0, 1
"""The two automata: prefixes read left to right, suffixes read right to left."""


def _reads(node: Node, index: str) -> list[At]:
    """The distinct ``P[index]`` reads of an attention's formula."""
    if isinstance(node, At):
        return [node] if node.index == index else []
    if isinstance(node, Not):
        return _reads(node.arg, index)
    if isinstance(node, (And, Or)):
        return list(dict.fromkeys(r for arg in node.args for r in _reads(arg, index)))
    return []


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


class _Memory:
    """Attentions with one mask, side and score: their qualifying keys are the same."""

    def __init__(self, attend: Attend, defined: set[str]) -> None:
        self.mask, self.side, self.score = attend.mask, attend.side, attend.score
        self.i_reads = _reads(attend.score, "i")
        self.j_reads = list(_reads(attend.score, "j"))  # and of every value that shares it
        self.slots = list(itertools.product((False, True), repeat=len(self.i_reads)))
        self.parts: list[int | None] = [None, None]  # its memory in the left, right automaton
        self.defined = set(defined)  # the definitions before it: their values are known then

    def can_share(self, attend: Attend) -> bool:
        """Whether another attention's value reads at keys only what was known when added."""
        return all(not isinstance(r.vector, Name) or r.vector.name in self.defined
                   for r in _reads(attend.value, "j"))

    def add_reads(self, attend: Attend) -> None:
        """Keep the key-side reads of another attention's value too."""
        self.j_reads += [r for r in _reads(attend.value, "j") if r not in self.j_reads]


class _Part(NamedTuple):
    """A memory in one automaton, kept per class of the other automaton's states."""

    memory: _Memory
    others: int  # how many memories the other automaton had when it was added
    classes: list[int]  # per state of the other automaton (of that many memories), its class
    representatives: list[int]  # one state of each class


class _Automaton:
    """One side's states, numbered per number of memories, and their transitions."""

    def __init__(self) -> None:
        self.parts: list[_Part] = []
        self.keys: list[list[tuple]] = [[()]]  # per count: (state before the last memory, value)
        self.numbers: list[dict] = [{(): 0}]
        self.values: list[list[tuple]] = []  # per memory: its distinct values
        self.value_numbers: list[dict] = []
        self.moves: list[dict] = [{}]
        self.starts = [0]
        self.reached: dict[int, int] = {0: 1}
        self.fewer: dict[tuple[int, int, int], int] = {}  # see before

    def number(self, count: int, key: tuple) -> int:
        """The state of ``count`` memories with this key."""
        if key not in self.numbers[count]:
            if len(self.keys[count]) >= MAX_DFA_STATES:
                raise SatsimError(f"the program's automata pass {MAX_DFA_STATES} states")
            self.numbers[count][key] = len(self.keys[count])
            self.keys[count].append(key)
        return self.numbers[count][key]

    def value_number(self, part: int, value: tuple) -> int:
        """The number of one memory's value."""
        numbers = self.value_numbers[part]
        if value not in numbers:
            numbers[value] = len(self.values[part])
            self.values[part].append(value)
        return numbers[value]

    def before(self, count: int, state: int, fewer: int) -> int:
        """The state with only the first ``fewer`` memories."""
        assert fewer <= count, (fewer, count)
        key = (count, state, fewer)
        if key not in self.fewer:
            earlier = state
            for k in range(count, fewer, -1):
                earlier = self.keys[k][earlier][0]
            self.fewer[key] = earlier
        return self.fewer[key]

    def memory(self, count: int, state: int, part: int) -> tuple:
        """The value of memory ``part`` in a state of ``count`` memories."""
        return self.values[part][self.keys[part + 1][self.before(count, state, part + 1)][1]]


class _TwoWay:
    """The left and right automata of a program, and its definitions at (L_i, w_i, R_i)."""

    def __init__(self, program: Program, max_reads: int = MAX_DFA_READS) -> None:
        table: dict = {}
        self.alphabet = tuple(program.alphabet)
        self.max_reads = self.reads_left = max_reads
        self.exprs = {d.name: _intern(d.expr, table) for d in program.definitions}
        self.sides = (_Automaton(), _Automaton())
        self.memory_of: dict[int, _Memory] = {}
        self.needs: dict[str, tuple[int, int]] = {}
        self.known: dict = {}  # each definition at each point read, see value
        defined: set[str] = set()
        by_score: dict[tuple, _Memory] = {}
        first_needed: dict[str, list[_Memory]] = {}  # per definition, the memories it adds
        for d in program.definitions:
            expr = self.exprs[d.name]
            first_needed[d.name] = []
            for attend in (a for a in (expr, *_subnodes(expr)) if isinstance(a, Attend)):
                if id(attend) in self.memory_of:
                    continue
                shared = by_score.get((attend.mask, attend.side, id(attend.score)))
                if shared is None or not shared.can_share(attend):
                    shared = by_score[(attend.mask, attend.side, id(attend.score))] = \
                        _Memory(attend, defined)
                    first_needed[d.name].append(shared)
                shared.add_reads(attend)
                self.memory_of[id(attend)] = shared
            defined.add(d.name)
        for d in program.definitions:
            for memory in first_needed[d.name]:
                if memory.mask in ("past", "all"):
                    self._add(LEFT, memory)
                if memory.mask in ("future", "all"):
                    self._add(RIGHT, memory)
            self.needs[d.name] = self._needs(self.exprs[d.name])

    def _needs(self, node: Node) -> tuple[int, int]:
        """How many memories of each automaton ``node``'s value depends on."""
        if isinstance(node, Name):
            return self.needs[node.name]
        if isinstance(node, At):
            return self._needs(node.vector)
        found = []
        if isinstance(node, Attend):
            memory = self.memory_of[id(node)]
            for side, part in enumerate(memory.parts):
                if part is not None:  # its memory, and the other side's states it is kept for
                    counts = [part + 1, self.sides[side].parts[part].others]
                    found.append(tuple(counts) if side == LEFT else tuple(reversed(counts)))
            found += [self._needs(n) for n in (node.score, node.value, node.default)]
        elif isinstance(node, Not):
            found.append(self._needs(node.arg))
        elif isinstance(node, (And, Or)):
            found += [self._needs(arg) for arg in node.args]
        return (max((f[0] for f in found), default=0), max((f[1] for f in found), default=0))

    def _add(self, side: int, memory: _Memory) -> None:
        """A memory for one more attention group, in the automaton of ``side``."""
        this, other = self.sides[side], self.sides[1 - side]
        count = len(other.parts)
        part = len(this.parts)
        classes, representatives = self._classes(side, memory, part, count)
        memory.parts[side] = part
        this.parts.append(_Part(memory, count, classes, representatives))
        this.values.append([])
        this.value_numbers.append({})
        this.keys.append([])
        this.numbers.append({})
        this.moves.append({})
        empty = tuple(tuple(None for _ in memory.slots) for _ in representatives)
        this.starts.append(this.number(part + 1, (this.starts[part],
                                                  this.value_number(part, empty))))

    def _classes(self, side: int, memory: _Memory, part: int, count: int
                 ) -> tuple[list[int], list[int]]:
        """Classes of the other side's states the new memory need not tell apart; one of each.

        Two states (of ``count`` memories) are one class when the memory's key-side reads agree
        at every (state of this side, symbol) and the states one symbol further are one class
        (the coarsest such partition): then the memory kept for the one is the memory kept for
        the other.
        """
        other = 1 - side
        own, states = self.reach(side, part), self.reach(other, count)
        self._spend(own * states * len(self.alphabet) * len(memory.j_reads))

        def point(state: int, symbol: str, o: int) -> tuple:
            return (part, state, symbol, count, o) if side == LEFT else \
                (count, o, symbol, part, state)

        classes = _numbered([tuple(self.value(r.vector, point(state, symbol, o))
                                   for state in range(own) for symbol in self.alphabet
                                   for r in memory.j_reads) for o in range(states)])
        while True:
            finer = _numbered([(classes[o], *(classes[self.step(other, count, o, symbol)]
                                              for symbol in self.alphabet))
                               for o in range(states)])
            if max(finer) == max(classes):
                break
            classes = finer
        representatives = list({c: o for o, c in reversed(list(enumerate(classes)))}.values())
        return classes, sorted(representatives, key=classes.__getitem__)

    def _spend(self, reads: int) -> None:
        """Count key-side reads against the budget."""
        self.reads_left -= reads
        if self.reads_left < 0:
            raise SatsimError(f"the program's automata need more than {self.max_reads:,} key "
                              "reads")

    def reach(self, side: int, count: int) -> int:
        """How many states of ``count`` memories the automaton of ``side`` reaches (all found)."""
        automaton = self.sides[side]
        if count not in automaton.reached:
            queue, seen = deque([automaton.starts[count]]), {automaton.starts[count]}
            while queue:
                state = queue.popleft()
                for symbol in self.alphabet:
                    target = self.step(side, count, state, symbol)
                    if target not in seen:
                        seen.add(target)
                        queue.append(target)
            automaton.reached[count] = len(seen)
        return automaton.reached[count]

    def step(self, side: int, count: int, state: int, symbol: str) -> int:
        """The state after one more symbol (read after the prefix, or before the suffix)."""
        if count == 0:
            return 0
        this = self.sides[side]
        moves = this.moves[count]
        if (state, symbol) not in moves:
            earlier, value = this.keys[count][state]
            part = count - 1
            memory, others, classes, representatives = this.parts[part]
            old = this.values[part][value]
            self._spend(len(old) * len(memory.j_reads))
            row = []
            for o in representatives:  # the other side's state at this position, per class
                point = (part, earlier, symbol, others, o) if side == LEFT else \
                    (others, o, symbol, part, earlier)
                row.append(self._remember(memory, side, old[classes[self.step(
                    1 - side, others, o, symbol)]], point))
            moves[(state, symbol)] = this.number(count, (
                self.step(side, count - 1, earlier, symbol),
                this.value_number(part, tuple(row))))
        return moves[(state, symbol)]

    def _remember(self, memory: _Memory, side: int, kept: tuple, point: tuple) -> tuple:
        """A memory after one more position as a key, per slot of query-side reads."""
        here = tuple(self.value(r.vector, point) for r in memory.j_reads)
        at_j = dict(zip(map(id, memory.j_reads), here))
        first_stays = (memory.side == "leftmost") == (side == LEFT)
        return tuple(here if _pair(memory.score, dict(zip(map(id, memory.i_reads), slot)), at_j)
                     and not (first_stays and before is not None) else before
                     for slot, before in zip(memory.slots, kept))

    def value(self, node: Node, point: tuple) -> bool:
        """``node`` at a position: point is (left count, L_i, w_i, right count, R_i)."""
        if isinstance(node, Symbol):
            return point[2] == node.symbol
        if isinstance(node, Constant):
            return bool(node.value)
        if isinstance(node, Name):
            left, state, symbol, right, suffix = point
            need_left, need_right = self.needs[node.name]
            key = (node.name, need_left, self.sides[LEFT].before(left, state, need_left), symbol,
                   need_right, self.sides[RIGHT].before(right, suffix, need_right))
            if key not in self.known:
                self.known[key] = self.value(self.exprs[node.name], key[1:])
            return self.known[key]
        if isinstance(node, Not):
            return not self.value(node.arg, point)
        if isinstance(node, And):
            return all(self.value(arg, point) for arg in node.args)
        if isinstance(node, Or):
            return any(self.value(arg, point) for arg in node.args)
        return self._attend(node, point)

    def _attend(self, node: Attend, point: tuple) -> bool:
        """An attention at a position, from the memories on both sides."""
        memory = self.memory_of[id(node)]
        left, state, symbol, right, suffix = point
        at_i = {id(r): self.value(r.vector, point) for r in
                dict.fromkeys(memory.i_reads + _reads(node.value, "i") + _reads(node.default, "i"))}
        slot = memory.slots.index(tuple(at_i[id(r)] for r in memory.i_reads))
        found = [None, None]
        for side, (count, here) in enumerate(((left, state), (right, suffix))):
            part = memory.parts[side]
            if part is not None:
                _, others, classes, _ = self.sides[side].parts[part]
                there = (right, suffix) if side == LEFT else (left, state)
                o = self.step(1 - side, others, self.sides[1 - side].before(*there, others), symbol)
                found[side] = self.sides[side].memory(count, here, part)[classes[o]][slot]
        past, future = found
        itself = None
        if node.mask == "all":
            reads = tuple(self.value(r.vector, point) for r in memory.j_reads)
            if _pair(node.score, at_i, dict(zip(map(id, memory.j_reads), reads))):
                itself = reads
        order = {"past": [past], "future": [future]}.get(
            node.mask, [past, itself, future] if node.side == "leftmost" else
            [future, itself, past])
        kept = next((k for k in order if k is not None), None)
        if kept is None:
            return _pair(node.default, at_i, {})
        return _pair(node.value, at_i, dict(zip(map(id, memory.j_reads), kept)))


def _numbered(keys: list) -> list[int]:
    """Each key's number, distinct keys numbered in the order they first occur."""
    numbers: dict = {}
    return [numbers.setdefault(key, len(numbers)) for key in keys]


def _pair(node: Node, at_i: dict, at_j: dict) -> bool:
    """An attention formula from its reads at i and at j (by ``id``)."""
    if isinstance(node, At):
        return (at_i if node.index == "i" else at_j)[id(node)]
    if isinstance(node, Constant):
        return bool(node.value)
    if isinstance(node, Not):
        return not _pair(node.arg, at_i, at_j)
    if isinstance(node, And):
        return all(_pair(arg, at_i, at_j) for arg in node.args)
    return any(_pair(arg, at_i, at_j) for arg in node.args)


def brasp_dfa(program: Program, max_reads: int = MAX_DFA_READS) -> DFA:
    """The minimal DFA of a B-RASP program.

    Refused past ``MAX_DFA_STATES`` states of either automaton or ``max_reads`` key-side reads
    while building them.
    """
    machine = _TwoWay(program, max_reads)
    left, right = machine.sides
    count, suffixes = len(left.parts), len(right.parts)
    accept = Name("accept", "bool")
    start = (left.starts[count], accepts(program, ""))
    number, rows, queue = {start: 0}, [], deque([start])
    while queue:
        state, _ = queue.popleft()
        row = []
        for symbol in machine.alphabet:  # at the last position the suffix is empty
            target = (machine.step(LEFT, count, state, symbol),
                      machine.value(accept, (count, state, symbol, suffixes,
                                             right.starts[suffixes])))
            if target not in number:
                if len(number) >= MAX_DFA_STATES:
                    raise SatsimError(f"the program's automaton passes {MAX_DFA_STATES} states")
                number[target] = len(number)
                queue.append(target)
            row.append(number[target])
        rows.append(row)
    accepting = np.array([a for (_, a) in sorted(number, key=number.get)], dtype=bool)
    return minimal_dfa(machine.alphabet, np.array(rows, dtype=np.int64), 0, accepting)


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
