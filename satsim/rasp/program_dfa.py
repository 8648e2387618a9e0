"""The DFA of a B-RASP program, built backwards from ``accept``.

A *letter* is what a position holds between two stages of the program: its symbol (while a
later definition reads symbols) and the value of every definition still to be read.

Stages, first to last. A stage is a run of attentions, none reading another's result, and the
Boolean definitions after them up to the next attention that reads one of the stage's own
definitions. Its attentions read the previous stage's letters. Each one remembers, per query
slot, what the leftmost (rightmost) qualifying key answers: its value for what the value reads
at the query. All attentions over the past share one left memory, read left to right over the
letters before the query; those over the future share one right memory, read right to left
over the letters after it. An attention over every position reads both, and the query itself in
between. So a stage maps a letter, with the left memory's state before it and the right
memory's state after it, to the next stage's letter. The letters a stage makes are every such
image (an over-approximation of the letters that occur, which is safe: a letter no string makes
is never read).

The language, last stage to first. The last stage's letters are accepted where ``accept``
holds at the last position. A stage pulls an automaton over its letters back to one over the
letters before: a left memory is run beside it, and the right memory's state at each position
is guessed, one automaton state per guess, checked at the end where the suffix is empty. Each
automaton is minimised, so it keeps only what ``accept`` needs; the intermediate definitions'
own automata are never built.
"""

from __future__ import annotations

import functools
from collections import deque
from dataclasses import dataclass, replace

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
    children,
    names_used,
)

MAX_DFA_STATES = 100_000
"""The most states a memory or an automaton may reach before refusal."""
MAX_DFA_CELLS = 2_000_000_000
"""The most cells computed before refusal: a memory's or an automaton's entry at one move (for
one slot, or one guess of the right memory), and a stage's letter at one (left memory state,
letter, right memory state)."""
MAX_STAGE_CELLS = 100_000_000
"""The most (left memory state, letter, right memory state) cells of one stage: a few arrays of
8 bytes a cell, so a few GB at most."""


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




@dataclass
class _Letters:
    """A stage's letters: each one's symbol (-1 where none is read later) and column values."""

    symbols: np.ndarray
    columns: dict[str, np.ndarray]

    def take(self, index: np.ndarray, names: set[str]) -> _Letters:
        """The letters at ``index`` (any shape, for broadcasting), with the columns ``names``."""
        return _Letters(self.symbols[index],
                        {k: v[index] for k, v in self.columns.items() if k in names})


@dataclass
class _Stage:
    """One stage's map: the next letter at (left memory state, letter, right memory state).

    A side without memory has one state that every letter keeps.
    """

    left: np.ndarray  # moves: state, letter at the end of the prefix -> state
    right: np.ndarray  # moves: state, letter at the front of the suffix -> state
    out: np.ndarray


class _Budget:
    """Cells computed so far, against ``MAX_DFA_CELLS`` (or the caller's limit)."""

    def __init__(self, cells: int) -> None:
        self.cells = self.left = cells

    def spend(self, cells: int) -> None:
        """Count cells; refuse past the limit."""
        self.left -= cells
        if self.left < 0:
            raise SatsimError(f"the program's automata need more than {self.cells:,} cells")


def _value(node: Node, alphabet: tuple[str, ...], here: _Letters,
           there: _Letters | None = None) -> np.ndarray:
    """A Boolean combination at letters ``here`` (``P[j]`` read at letters ``there``)."""
    if isinstance(node, Symbol):
        return here.symbols == (alphabet.index(node.symbol) if node.symbol in alphabet else -2)
    if isinstance(node, Constant):
        return np.bool_(node.value)
    if isinstance(node, Name):
        return here.columns[node.name]
    if isinstance(node, At):
        return _value(node.vector, alphabet, here if node.index == "i" else there)
    if isinstance(node, Not):
        return ~_value(node.arg, alphabet, here, there)
    if isinstance(node, (And, Or)):
        join = np.logical_and if isinstance(node, And) else np.logical_or
        return functools.reduce(join, [_value(arg, alphabet, here, there) for arg in node.args])
    raise TypeError(f"not a B-RASP Boolean node: {node!r}")


def _reads_symbol(node: Node) -> bool:
    """Whether ``node`` reads a symbol anywhere."""
    return isinstance(node, Symbol) or any(_reads_symbol(child) for child in children(node))


def _offers(nodes: list[Attend], letters: _Letters, alphabet: tuple[str, ...]
            ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """What each letter offers as a key to each query slot, for attentions sharing a score.

    A slot is a tuple of what the score and the values read at the query. Returns, per slot
    and key letter, the number of the key's answers (its values there) or -1 where the score
    fails; each letter's slot; each answers' number's values.
    """
    count = len(letters.symbols)
    query = list(dict.fromkeys(_reads(nodes[0].score, "i") + [
        r for node in nodes for r in _reads(node.value, "i")]))
    reads = np.array([np.broadcast_to(_value(r, alphabet, letters), count) for r in query],
                     dtype=bool).reshape(len(query), count)
    _, first, slot = np.unique(reads.T, axis=0, return_index=True, return_inverse=True)
    read = set().union(*(names_used(node) for node in nodes))
    here, there = letters.take(first[:, None], read), letters.take(np.arange(count)[None, :], read)
    shape = (len(first), count)
    qualifies = np.broadcast_to(_value(nodes[0].score, alphabet, here, there), shape)
    values = np.stack([np.broadcast_to(_value(node.value, alphabet, here, there), shape)
                       for node in nodes], axis=-1)
    answers, number = np.unique(values.reshape(-1, len(nodes)), axis=0, return_inverse=True)
    return np.where(qualifies, number.reshape(shape), -1), slot.ravel(), answers


def _memory(offers: np.ndarray, first_stays: np.ndarray, budget: _Budget
            ) -> tuple[np.ndarray, np.ndarray]:
    """A memory's states, breadth first from the empty one, as keys are read one by one.

    ``offers[s, a]``: what key letter a offers at entry s (-1: nothing); an entry keeps what it
    holds where ``first_stays`` and something is held, else takes what is offered. Returns the
    moves (state, letter) and what each state holds.
    """
    empty = np.full(len(offers), -1, dtype=np.int64)
    if not len(offers):  # no attention on this side: one state
        return np.zeros((1, offers.shape[1]), dtype=np.int64), empty[None, :]
    number = {empty.tobytes(): 0}
    held, rows, queue = [empty], [], deque([0])
    stays, keys = first_stays[None, :], offers.T
    while queue:
        now = held[queue.popleft()][None, :]
        after = np.where(stays & (now >= 0) | (keys < 0), now, keys)
        budget.spend(after.size)
        rows.append(_numbers(number, after, held, queue))
    return np.array(rows, dtype=np.int64), np.stack(held)


def _numbers(number: dict, rows: np.ndarray, states: list, queue: deque) -> np.ndarray:
    """Each row's state number; a row not seen before is numbered, kept and queued."""
    rows = np.ascontiguousarray(rows)
    distinct, first, where = np.unique(rows.view(np.dtype((np.void, rows.shape[1] * 8))).ravel(),
                                       return_index=True, return_inverse=True)
    numbers = np.empty(len(distinct), dtype=np.int64)
    for k, (key, row) in enumerate(zip(distinct.tolist(), first)):
        if key not in number:
            if len(number) >= MAX_DFA_STATES:
                raise SatsimError(f"the program's automata pass {MAX_DFA_STATES:,} states")
            number[key] = len(number)
            states.append(rows[row])
            queue.append(number[key])
        numbers[k] = number[key]
    return numbers[where.ravel()]


def _stage(groups: list[list[Definition]], booleans: list[Definition], letters: _Letters,
           alphabet: tuple[str, ...], kept: set[str], symbols_kept: bool, budget: _Budget
           ) -> tuple[_Stage, _Letters]:
    """One stage's map and the letters it makes (``kept``: the names read later)."""
    count = len(letters.symbols)
    offered = [_offers([d.expr for d in group], letters, alphabet) for group in groups]
    moves, held, entries = {}, {}, {}
    for side, masks, leftmost_stays in (("left", ("past", "all"), True),
                                        ("right", ("future", "all"), False)):
        mine = [k for k, group in enumerate(groups) if group[0].expr.mask in masks]
        widths = np.cumsum([0] + [len(offered[k][0]) for k in mine])
        entries[side] = {k: slice(widths[n], widths[n + 1]) for n, k in enumerate(mine)}
        stays = np.repeat([(groups[k][0].expr.side == "leftmost") == leftmost_stays
                           for k in mine], np.diff(widths)).astype(bool)
        offers = np.concatenate([offered[k][0] for k in mine]) if mine else \
            np.zeros((0, count), dtype=np.int64)
        moves[side], held[side] = _memory(offers, stays, budget)
    shape = (len(moves["left"]), count, len(moves["right"]))
    if np.prod(shape) > MAX_STAGE_CELLS:
        raise SatsimError(f"a stage of the program's automata has {np.prod(shape):,} (memory, "
                          f"letter, memory) cells; at most {MAX_STAGE_CELLS:,} are built")
    budget.spend(int(np.prod(shape)) * len(groups))
    chosen = [_chosen(group[0].expr, offered[k], held, entries, k, shape)
              for k, group in enumerate(groups)]
    combination = np.broadcast_to(np.arange(count)[None, :, None], shape)
    for each in chosen:  # the distinct (letter, answers chosen) of this stage
        combination = np.unique(combination * (each.max(initial=0) + 2) + each + 1,
                                return_inverse=True)[1].reshape(shape)
    _, cell = np.unique(combination, return_index=True)
    letter = np.broadcast_to(np.arange(count)[None, :, None], shape).ravel()[cell]
    here = letters.take(letter, kept.union(*(names_used(d.expr) for g in groups for d in g),
                                           *(names_used(d.expr) for d in booleans)))
    for k, group in enumerate(groups):
        answers, pick = offered[k][2], chosen[k].ravel()[cell]
        for m, definition in enumerate(group):
            default = np.broadcast_to(_value(definition.expr.default, alphabet, here), len(cell))
            here.columns[definition.name] = np.where(pick >= 0, answers[np.maximum(pick, 0), m],
                                                     default)
    for definition in booleans:
        here.columns[definition.name] = np.broadcast_to(
            _value(definition.expr, alphabet, here), len(cell))
    names = sorted(name for name in here.columns if name in kept)
    budget.spend(len(cell) * (len(names) + 1))
    words = np.zeros((len(cell), 1 + (len(names) + 62) // 63), dtype=np.int64)
    words[:, 0] = here.symbols if symbols_kept else -1
    for k, name in enumerate(names):
        words[:, 1 + k // 63] |= here.columns[name].astype(np.int64) << (k % 63)
    _, first, made = np.unique(words.view(np.dtype((np.void, words.shape[1] * 8))).ravel(),
                               return_index=True, return_inverse=True)
    new = _Letters(words[first, 0], {name: here.columns[name][first] for name in names})
    return _Stage(moves["left"], moves["right"], made.ravel()[combination]), new


def _chosen(node: Attend, offered: tuple, held: dict, entries: dict, k: int,
            shape: tuple[int, int, int]) -> np.ndarray:
    """At every (left state, letter, right state): the chosen key's answers' number, or -1."""
    offers, slot, _ = offered
    count = shape[1]
    nothing = np.full((1, count, 1), -1, dtype=np.int64)
    before = held["left"][:, entries["left"][k]][:, slot][:, :, None] \
        if k in entries["left"] else nothing
    after = held["right"][:, entries["right"][k]][:, slot].T[None] \
        if k in entries["right"] else nothing
    itself = offers[slot, np.arange(count)][None, :, None] if node.mask == "all" else nothing
    first, middle, last = (before, itself, after) if node.side == "leftmost" else \
        (after, itself, before)
    return np.broadcast_to(np.where(first >= 0, first, np.where(middle >= 0, middle, last)),
                           shape)


def _stages(program: Program, budget: _Budget) -> tuple[list[_Stage], _Letters]:
    """The program's stages, first to last, and the last stage's letters."""
    alphabet = tuple(program.alphabet)
    groups = _groups(_split_attentions(program))
    after, read_later, symbols_later = [], {"accept"}, False
    for group in reversed(groups):  # per group, what is read after it
        after.append((read_later, symbols_later))
        read_later = read_later.union(*(names_used(d.expr) for d in group))
        symbols_later = symbols_later or any(_reads_symbol(d.expr) for d in group)
    after.reverse()
    plan, attentions, booleans, defined = [], [], [], set()
    for k, group in enumerate(groups):
        if isinstance(group[0].expr, Attend):
            if set().union(*(names_used(d.expr) for d in group)) & defined:
                plan.append((attentions, booleans, after[k - 1]))
                attentions, booleans, defined = [], [], set()
            attentions.append(group)
        else:
            booleans += group
        defined |= {d.name for d in group}
    plan.append((attentions, booleans, after[-1]))
    letters, stages = _Letters(np.arange(len(alphabet)), {}), []
    for attentions, booleans, (kept, symbols_kept) in plan:
        stage, letters = _stage(attentions, booleans, letters, alphabet, kept, symbols_kept,
                                budget)
        stages.append(stage)
    return stages, letters


def _pull_back(stage: _Stage, delta: np.ndarray, start: int, accepting: np.ndarray,
               budget: _Budget) -> tuple[np.ndarray, int, np.ndarray]:
    """An automaton over a stage's letters, pulled back to the letters before it, minimised.

    A state is the left memory's state, then per guess of the right memory's state on the
    suffix from here on, the later automaton's state (-1: no suffix makes that guess).
    """
    first = np.concatenate([[0], np.full(len(stage.right), start)]).astype(np.int64)
    number = {first.tobytes(): 0}
    states, rows, queue = [first], [], deque([0])
    while queue:
        state = states[queue.popleft()]
        left, guessed = int(state[0]), state[1:]
        before = guessed[stage.right]  # per guess after the letter, and letter
        after = np.where(before >= 0, delta[np.maximum(before, 0), stage.out[left].T], -1)
        budget.spend(after.size)
        rows.append(_numbers(number, np.column_stack([stage.left[left], after.T]), states,
                             queue))
    final = np.array([state[1] >= 0 and accepting[state[1]] for state in states])
    return _minimised(np.array(rows, dtype=np.int64), final)


def _minimised(delta: np.ndarray, accepting: np.ndarray) -> tuple[np.ndarray, int, np.ndarray]:
    """A complete automaton (start 0, every state reachable) minimised by Moore's refinement."""
    classes = accepting.astype(np.int64)
    while True:
        rows = np.column_stack([classes, classes[delta]])
        _, first, finer = np.unique(rows, axis=0, return_index=True, return_inverse=True)
        if len(first) == len(np.unique(classes)):
            break
        classes = finer.ravel()
    finer = finer.ravel()
    keep = np.unique(finer, return_index=True)[1]
    return finer[delta[keep]], int(finer[0]), accepting[keep]


def brasp_dfa(program: Program, max_cells: int = MAX_DFA_CELLS) -> DFA:
    """The minimal DFA of a B-RASP program.

    Refused past ``MAX_DFA_STATES`` states of a memory or an automaton, or ``max_cells`` cells
    computed while building them.
    """
    budget = _Budget(max_cells)
    stages, letters = _stages(program, budget)
    accept = letters.columns["accept"]  # start, then after an accepted or a refused letter
    delta = np.tile(np.where(accept, 1, 2), (3, 1)).astype(np.int64)
    accepting = np.array([accepts(program, ""), True, False])
    start = 0
    for stage in reversed(stages):
        delta, start, accepting = _pull_back(stage, delta, start, accepting, budget)
    return minimal_dfa(tuple(program.alphabet), delta, start, accepting)


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
