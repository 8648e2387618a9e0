"""The DFA of a B-RASP program, its attentions looking at the past, the future or everywhere.

Two deterministic automata are kept: a left one reads the prefix before a position (left to
right) and a right one the suffix after it (right to left). Beside them is a table of every
definition still to be read, at every (L, a, R): its value at a position whose prefix state is
L, whose symbol is a and whose suffix state is R. Every such triple is met at some position of
some string, so the table is the definitions' meaning.

The definitions are taken in program order. A Boolean combination is one more column of the
table. An attention over the past extends the left automaton with a memory: for each suffix
state that may follow the prefix, what the leftmost (rightmost) qualifying position answers
(each attention's value there, for each tuple of what the values read at the query; the keys'
own values depend on the suffix). An attention over the future extends the right automaton
with the mirror image, and one over every position both (the query itself in between).
Columns no later definition reads are dropped, and before each memory each automaton is
minimised against the table (two states are one when their rows agree and their successors
are one), so the automata carry what is still to be read, never the memories themselves.

At the last position the suffix is empty, so the language's automaton is the left one with
``accept`` read there, then minimised.
"""

from __future__ import annotations

from collections import deque
from dataclasses import replace

import numpy as np

from satsim.errors import SatsimError
from satsim.rasp.automata import DFA, minimal_dfa
from satsim.rasp.brasp import accepts
from satsim.rasp.syntax import (
    And,
    At,
    Attend,
    Constant,
    Definition,
    Name,
    Node,
    Not,
    Or,
    Program,
    Symbol,
    names_used,
)

MAX_DFA_STATES = 100_000
"""The most states either automaton, or the language's machine, may reach before refusal."""
LEFT, RIGHT = 0, 1
"""The two automata: prefixes read left to right, suffixes read right to left."""
VIEW = " memory"
"""A column of what a memory holds at each query, kept while its attention is built."""
MAX_DFA_READS = 2_000_000_000
"""The most key-side reads (a memory's entry for one state of the other automaton, at one
transition) and table cells (a definition at one (L, a, R)) before refusal: under a minute
here, and at most this many bytes in one table."""


def _split_attentions(program: Program) -> list[Definition]:
    """The definitions ``accept`` needs, each attention inside an expression lifted out.

    A lifted attention is a definition of its own, before the one that uses it, under a name
    no program can write.
    """
    out: list[Definition] = []

    def lift(node: Node, definition: Definition) -> Node:
        if isinstance(node, Attend):
            name = f" attention {len(out)}"
            out.append(Definition(name, node, "bool", definition.line))
            return Name(name, "bool")
        if isinstance(node, Not):
            return replace(node, arg=lift(node.arg, definition))
        if isinstance(node, (And, Or)):
            return replace(node, args=tuple(lift(arg, definition) for arg in node.args))
        return node

    for definition in program.needed():
        if isinstance(definition.expr, Attend):
            out.append(definition)
        else:
            out.append(replace(definition, expr=lift(definition.expr, definition)))
    return out


def _groups(definitions: list[Definition]) -> list[list[Definition]]:
    """The definitions in order, grouped where consecutive attentions share a memory.

    Attentions with one mask, side and score, none reading another, are one group.
    """
    groups: list[list[Definition]] = []
    for definition in definitions:
        expr, last = definition.expr, groups[-1] if groups else None
        if isinstance(expr, Attend) and last and isinstance(last[0].expr, Attend) and \
                (expr.mask, expr.side, expr.score) == (last[0].expr.mask, last[0].expr.side,
                                                        last[0].expr.score) and \
                not names_used(expr) & {d.name for d in last}:
            last.append(definition)
        else:
            groups.append([definition])
    return groups


def _reads(node: Node, index: str) -> list[At]:
    """The distinct ``P[index]`` reads of an attention's formula, in order."""
    if isinstance(node, At):
        return [node] if node.index == index else []
    if isinstance(node, Not):
        return _reads(node.arg, index)
    if isinstance(node, (And, Or)):
        return list(dict.fromkeys(r for arg in node.args for r in _reads(arg, index)))
    return []


class _Machine:
    """The two automata and the table of the definitions still to be read."""

    def __init__(self, alphabet: tuple[str, ...], max_reads: int) -> None:
        self.alphabet = alphabet
        self.symbols = np.arange(len(alphabet))
        self.left = np.zeros((1, len(alphabet)), dtype=np.int64)  # prefix state, one symbol on
        self.right = np.zeros((1, len(alphabet)), dtype=np.int64)  # suffix state, one before
        self.left_start = self.right_start = 0
        self.columns: dict = {}  # per definition: its value at (left state, symbol, right state)
        self.max_reads = self.reads_left = max_reads

    @property
    def shape(self) -> tuple[int, int, int]:
        """The table's shape: left states, symbols, right states."""
        return (len(self.left), len(self.alphabet), len(self.right))

    def spend_table(self, more: int) -> None:
        """Count the table's cells, for its columns and ``more``, before they are made."""
        self.spend(int(np.prod(self.shape)) * (len(self.columns) + more))

    def spend(self, reads: int) -> None:
        """Count key-side reads and table cells against the budget."""
        self.reads_left -= reads
        if self.reads_left < 0:
            raise SatsimError(f"the program's automata need more than {self.max_reads:,} key "
                              "reads")

    def vector(self, node: Node, at_i: dict | None = None, at_j: list | None = None,
               j_reads: list[At] | None = None) -> np.ndarray:
        """A Boolean combination's value at every (L, a, R).

        Inside an attention formula, ``P[i]`` comes from ``at_i`` (a value or an array per
        read) and ``P[j]`` from ``at_j`` (an array per read of ``j_reads``).
        """
        if isinstance(node, Symbol):
            here = self.symbols == self.alphabet.index(node.symbol) \
                if node.symbol in self.alphabet else np.zeros(len(self.alphabet), dtype=bool)
            return np.broadcast_to(here[None, :, None], self.shape)
        if isinstance(node, Constant):
            return np.full(self.shape, bool(node.value))
        if isinstance(node, Name):
            return self.columns[node.name]
        if isinstance(node, At):
            if node.index == "i":
                return np.broadcast_to(at_i[node], self.shape)
            return at_j[j_reads.index(node)]
        if isinstance(node, Not):
            return ~self.vector(node.arg, at_i, at_j, j_reads)
        if isinstance(node, (And, Or)):
            join = np.logical_and if isinstance(node, And) else np.logical_or
            return join.reduce([self.vector(arg, at_i, at_j, j_reads) for arg in node.args])
        raise TypeError(f"not a B-RASP Boolean node: {node!r}")

    def define(self, group: list[Definition], later: set[str]) -> None:
        """One definition, or a group sharing a memory; then only what ``later`` names is kept.

        Both automata are minimised before a memory is added.
        """
        if isinstance(group[0].expr, Attend):
            self.minimise()
            columns = self.attend([d.expr for d in group])
        else:
            columns = [self.vector(d.expr) for d in group]
        for definition, column in zip(group, columns):
            self.columns[definition.name] = np.ascontiguousarray(column)
        self.columns = {name: c for name, c in self.columns.items() if name in later}

    def attend(self, nodes: list[Attend]) -> list[np.ndarray]:
        """Attentions with one mask, side and score: their values at every (L, a, R).

        A key is remembered by what it answers: each attention's value there, for each tuple
        of what the values read at the query. The past's memory is added first, the automata
        minimised, then the future's.
        """
        node = nodes[0]
        score_i = _reads(node.score, "i")
        value_i = list(dict.fromkeys(r for each in nodes for r in _reads(each.value, "i")))
        slots, cases = _Tuples(len(score_i)), _Tuples(len(value_i))
        slots.at(self.reads(score_i), self.shape)  # what occurs now is all that ever occurs
        cases.at(self.reads(value_i), self.shape)
        answers = _Tuples(len(nodes) * len(cases.numbers))
        sides = {"past": (LEFT,), "future": (RIGHT,), "all": (LEFT, RIGHT)}[node.mask]
        for side in sides:
            first_stays = (node.side == "leftmost") == (side == LEFT)
            offered = self.offers(nodes, score_i, value_i, slots, cases, answers)
            held = self.remember(side, offered, first_stays)
            chosen = self.at_query(held, slots, score_i)
            for k, column in enumerate(self.found(len(nodes), chosen, value_i, cases, answers)):
                self.columns[(VIEW, side, k)] = column
            self.minimise()
        found = {side: [self.columns.pop((VIEW, side, k)) for k in range(len(nodes) + 1)]
                 for side in sides}
        if node.mask == "all":  # the query itself, between the past and the future
            offered = self.offers(nodes, score_i, value_i, slots, cases, answers)
            found["itself"] = self.found(len(nodes), self.at_query(offered, slots, score_i),
                                         value_i, cases, answers)
        order = [found[k] for k in (LEFT, "itself", RIGHT) if k in found]
        if node.side == "rightmost":
            order.reverse()
        columns = []
        for k, each in enumerate(nodes):
            at_i = dict(zip(_reads(each.default, "i"), self.reads(_reads(each.default, "i"))))
            column = self.vector(each.default, at_i)
            for where, *values in reversed(order):
                column = np.where(where, values[k], column)
            columns.append(column)
        return columns

    def at_query(self, per_slot: np.ndarray, slots: _Tuples, score_i: list[At]) -> np.ndarray:
        """At every (L, a, R) as a query, the entry of ``per_slot`` for its slot."""
        slot = slots.at(self.reads(score_i), self.shape)
        return np.take_along_axis(per_slot, slot[..., None], -1)[..., 0]

    def reads(self, reads: list[At]) -> list[np.ndarray]:
        """Each read's vector at every (L, a, R)."""
        return [np.broadcast_to(self.vector(r.vector), self.shape) for r in reads]

    def offers(self, nodes: list[Attend], score_i: list[At], value_i: list[At], slots: _Tuples,
               cases: _Tuples, answers: _Tuples) -> np.ndarray:
        """Per (L, a, R) as a key and per query slot: its answers' number if it qualifies, or -1."""
        j_reads = list(dict.fromkeys(_reads(nodes[0].score, "j") + [
            r for each in nodes for r in _reads(each.value, "j")]))
        at_j = self.reads(j_reads)
        answered = [self.vector(each.value, dict(zip(value_i, map(bool, case))), at_j, j_reads)
                    for each in nodes for case in cases.table()]
        code = answers.at(answered, self.shape)
        offered = np.full((*self.shape, len(slots.numbers)), -1, dtype=np.int64)
        for s, values in enumerate(slots.table()):
            fixed = dict(zip(score_i, map(bool, values)))
            offered[..., s] = np.where(self.vector(nodes[0].score, fixed, at_j, j_reads), code,
                                       -1)
        self.spend(offered.size)
        return offered

    def found(self, count: int, chosen: np.ndarray, value_i: list[At], cases: _Tuples,
              answers: _Tuples) -> list[np.ndarray]:
        """Where a key was chosen (its answers' number, not -1), and each attention's value.

        A value is the chosen key's answer for what the value reads at the query; False where
        no key was chosen.
        """
        where = chosen >= 0
        table = answers.table()[np.maximum(chosen, 0)]
        case = cases.at(self.reads(value_i), self.shape)[..., None]
        width = len(cases.numbers)
        return [where] + [where & np.take_along_axis(table[..., k * width:(k + 1) * width],
                                                     case, -1)[..., 0] for k in range(count)]

    def remember(self, side: int, offered: np.ndarray, first_stays: bool) -> np.ndarray:
        """Extend one automaton by a memory; what it holds at every (L, a, R), per query slot."""
        if side == LEFT:
            kept, self.left, old = _extend(self.left, self.left_start, self.right, offered,
                                           first_stays, self)
            self.left_start = 0
            self.spend_table(offered.shape[-1])
            self.columns = {name: c[old] for name, c in self.columns.items()}
            states = np.arange(len(self.left))[:, None, None]
            held = kept[states, self.right.T[None, :, :]]  # the suffix from the query on
        else:
            kept, self.right, old = _extend(self.right, self.right_start, self.left,
                                            offered.transpose(2, 1, 0, 3), first_stays, self)
            self.right_start = 0
            self.spend_table(offered.shape[-1])
            self.columns = {name: c[:, :, old] for name, c in self.columns.items()}
            states = np.arange(len(self.right))[None, None, :]
            held = kept[states, self.left[:, :, None]]  # the prefix up to the query
        return held

    def minimise(self) -> None:
        """Merge each automaton's states whose rows of the table and successors agree."""
        classes = _coarsest(self.left, self.columns.values(), 0)
        self.left, self.left_start, keep = _quotient(self.left, self.left_start, classes)
        self.columns = {name: c[keep] for name, c in self.columns.items()}
        classes = _coarsest(self.right, self.columns.values(), 2)
        self.right, self.right_start, keep = _quotient(self.right, self.right_start, classes)
        self.columns = {name: np.ascontiguousarray(c[:, :, keep])
                        for name, c in self.columns.items()}


def _extend(moves: np.ndarray, start: int, other: np.ndarray, offers: np.ndarray,
            first_stays: bool, machine: _Machine) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """One automaton extended by a memory, its states found breadth first from the start.

    ``offers[s, a, o, slot]`` is what a key read with this automaton in state s, symbol a and
    the other automaton in state o (on the key's far side) offers. The memory is kept per state
    of the other automaton on the query's far side: o for the key read next, and ``other[o, a]``
    for the keys already read. Returns the memories, the new moves and each new state's old
    state.
    """
    others, slots = offers.shape[2], offers.shape[3]
    empty = np.full((others, slots), -1, dtype=np.int64)
    number = {(start, empty.tobytes()): 0}
    kept, old, rows, queue = [empty], [start], [], deque([0])
    while queue:
        state = queue.popleft()
        row = []
        for a in range(moves.shape[1]):
            before = kept[state][other[:, a]]
            offered = offers[old[state], a]
            if first_stays:
                after = np.where(before >= 0, before, offered)
            else:
                after = np.where(offered >= 0, offered, before)
            machine.spend(after.size)
            key = (int(moves[old[state], a]), after.tobytes())
            if key not in number:
                if len(number) >= MAX_DFA_STATES:
                    raise SatsimError(f"the program's automata pass {MAX_DFA_STATES:,} states")
                number[key] = len(number)
                kept.append(after)
                old.append(key[0])
                queue.append(number[key])
            row.append(number[key])
        rows.append(row)
    return np.stack(kept), np.array(rows, dtype=np.int64), np.array(old, dtype=np.int64)


class _Tuples:
    """The tuples of values some Boolean arrays take in the table, numbered as first met.

    The numbers stay while the automata change.
    """

    def __init__(self, width: int) -> None:
        self.width = width
        self.numbers: dict[bytes, int] = {}

    def at(self, arrays: list[np.ndarray], shape: tuple[int, int, int]) -> np.ndarray:
        """The number of the arrays' tuple at every (L, a, R)."""
        where = np.zeros(int(np.prod(shape)), dtype=np.int64)  # distinct tuples so far, numbered
        for start in range(0, len(arrays), 56):  # 56 arrays at a time, as bits of a word
            bits = np.zeros(shape, dtype=np.int64)
            for k, array in enumerate(arrays[start:start + 56]):
                bits |= array.astype(np.int64) << k
            values, inverse = np.unique(bits.ravel(), return_inverse=True)
            where = np.unique(where * len(values) + inverse.ravel(), return_inverse=True)[1]
        first = np.unique(where, return_index=True)[1]
        met = np.array([np.broadcast_to(a, shape).ravel()[first] for a in arrays]
                       + [np.zeros(len(first), dtype=bool)], dtype=bool)
        numbers = np.array([self.numbers.setdefault(row.tobytes(), len(self.numbers))
                            for row in np.packbits(met.T, axis=1)], dtype=np.int64)
        return numbers[where.ravel()].reshape(shape)

    def table(self) -> np.ndarray:
        """Each number's tuple of values, a row each."""
        rows = np.frombuffer(b"".join(self.numbers), dtype=np.uint8)
        return np.unpackbits(rows.reshape(len(self.numbers), -1), axis=1)[
            :, :self.width].astype(bool)


def _coarsest(moves: np.ndarray, columns, axis: int) -> np.ndarray:
    """Each state's class in the coarsest partition that keeps rows apart and respects moves.

    A state's row is the table at it (``axis`` 0: left states, 2: right states), read one
    column at a time; then Moore's refinement.
    """
    classes = np.zeros(len(moves), dtype=np.int64)
    for column in columns:
        rows = np.packbits(np.moveaxis(column, axis, 0).reshape(len(moves), -1), axis=1)
        numbers: dict = {}
        classes = np.array([numbers.setdefault((k, row.tobytes()), len(numbers))
                            for k, row in zip(classes.tolist(), rows)], dtype=np.int64)
    while True:
        finer = _numbered(np.column_stack([classes, classes[moves]]))
        if finer.max(initial=0) == classes.max(initial=0):
            return finer
        classes = finer


def _numbered(rows: np.ndarray) -> np.ndarray:
    """Each row's number, distinct rows numbered in the order they first occur."""
    numbers: dict[bytes, int] = {}
    return np.array([numbers.setdefault(row.tobytes(), len(numbers)) for row in rows],
                    dtype=np.int64)


def _quotient(moves: np.ndarray, start: int, classes: np.ndarray
              ) -> tuple[np.ndarray, int, np.ndarray]:
    """The automaton on classes: its moves, its start, and one state of each class."""
    keep = np.unique(classes, return_index=True)[1]
    return classes[moves[keep]], int(classes[start]), keep


def brasp_dfa(program: Program, max_reads: int = MAX_DFA_READS) -> DFA:
    """The minimal DFA of a B-RASP program.

    Refused past ``MAX_DFA_STATES`` states of either automaton or ``max_reads`` key-side reads
    and table cells while building them.
    """
    machine = _Machine(tuple(program.alphabet), max_reads)
    definitions = _split_attentions(program)
    groups = _groups(definitions)
    later, read_later = [], {"accept"}  # per group, the names read after it
    for group in reversed(groups):
        later.append(read_later)
        read_later = read_later.union(*(names_used(d.expr) for d in group))
    for group, kept in zip(groups, reversed(later)):
        machine.define(group, kept)
    machine.minimise()
    accept = machine.columns["accept"][:, :, machine.right_start]  # the suffix is empty
    start = (machine.left_start, accepts(program, ""))
    number, rows, queue = {start: 0}, [], deque([start])
    while queue:
        state, _ = queue.popleft()
        row = []
        for a in range(len(machine.alphabet)):
            target = (int(machine.left[state, a]), bool(accept[state, a]))
            if target not in number:
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
