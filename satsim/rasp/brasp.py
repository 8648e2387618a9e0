"""The meaning of a B-RASP program (Yang, Chiang and Angluin 2024), written from the definitions.

Every vector is Boolean, with a value at each position i = 1..n of an input w₁…wₙ:

- ``Q("a")`` is true at i iff wᵢ = a; ``True``, ``False`` are constant; ``not``, ``and``, ``or``
  act position by position;
- ``leftmost(MASK, SCORE, VALUE, default=D)`` at i: among the positions j allowed by the mask
  (``j < i``, ``j > i``, or every j for ``True``) with SCORE(i, j) true, take the leftmost; the
  vector is VALUE(i, j) there, and D(i) where no j qualifies. ``rightmost`` takes the rightmost.
  SCORE and VALUE read vectors at i (``P[i]``) and at j (``P[j]``); D reads them at i.

The program accepts w iff ``accept`` is true at position n. The empty string (n = 0) is read at
one position 0 holding no symbol, which no attention can select: there every ``Q`` is false and
every attention takes its default.
"""

from __future__ import annotations

import itertools

import numpy as np

from satsim.rasp.syntax import (
    And,
    At,
    Attend,
    Constant,
    Name,
    Node,
    Not,
    Or,
    Program,
    Symbol,
)


def run(program: Program, string: str) -> dict[str, np.ndarray]:
    """Every defined vector at positions 1..n (position 0 alone for the empty string)."""
    program.check_input("brasp", string)
    state = _Positions(string)
    for definition in program.definitions:
        state.values[definition.name] = state.vector(definition.expr)
    return state.values


def accepts(program: Program, string: str) -> bool:
    """Whether the program accepts ``string``: ``accept`` at its last position."""
    return bool(run(program, string)["accept"][-1])


class _Positions:
    """The positions of one input and the vectors defined so far."""

    def __init__(self, string: str) -> None:
        self.symbols = np.array(list(string) or [""], dtype=object)
        self.selectable = np.full(len(self.symbols), bool(string))  # position 0 is not
        self.values: dict[str, np.ndarray] = {}

    def vector(self, node: Node) -> np.ndarray:
        """The vector ``node`` denotes, position by position."""
        if isinstance(node, Symbol):
            return self.symbols == node.symbol
        if isinstance(node, Constant):
            return np.full(len(self.symbols), node.value)
        if isinstance(node, Name):
            return self.values[node.name]
        if isinstance(node, Not):
            return ~self.vector(node.arg)
        if isinstance(node, (And, Or)):
            parts = [self.vector(arg) for arg in node.args]
            return (np.logical_and if isinstance(node, And) else np.logical_or).reduce(parts)
        if isinstance(node, Attend):
            return self.attend(node)
        raise TypeError(f"not a B-RASP node: {node!r}")

    def attend(self, node: Attend) -> np.ndarray:
        """leftmost/rightmost attention: the chosen j's VALUE, or the default."""
        n = len(self.symbols)
        chosen = np.full(n, -1)  # the selected position j of each i, -1: none
        query_reads = sorted({_key(a) for a in _reads(node.score) if a.index == "i"})
        at_i = {key: self.vector(vector) for key, vector in
                ((_key(a), a.vector) for a in _reads(node.score) if a.index == "i")}
        rows = np.stack([at_i[key] for key in query_reads], axis=1) if query_reads else \
            np.zeros((n, 0), dtype=bool)
        for fixed in itertools.product((False, True), repeat=len(query_reads)):
            queries = np.flatnonzero((rows == np.array(fixed, dtype=bool)).all(axis=1))
            if not len(queries):
                continue
            env = dict(zip(query_reads, fixed))
            qualifies = self.pair(node.score, lambda a, env=env: np.full(n, env[_key(a)]),
                                  self.at_j) & self.selectable
            chosen[queries] = _select(qualifies, queries, node.side, node.mask)
        found = chosen >= 0
        j = np.where(found, chosen, 0)
        value = self.pair(node.value, self.at_i, lambda a: self.vector(a.vector)[j])
        default = self.pair(node.default, self.at_i, self.at_j)
        return np.where(found, value, default)

    def at_i(self, read: At) -> np.ndarray:
        return self.vector(read.vector)

    def at_j(self, read: At) -> np.ndarray:
        return self.vector(read.vector)

    def pair(self, node: Node, at_i, at_j) -> np.ndarray:
        """A SCORE/VALUE/default formula, with P[i] from ``at_i`` and P[j] from ``at_j``."""
        if isinstance(node, At):
            return np.asarray((at_i if node.index == "i" else at_j)(node), dtype=bool)
        if isinstance(node, Constant):
            return np.full(len(self.symbols), node.value)
        if isinstance(node, Not):
            return ~self.pair(node.arg, at_i, at_j)
        parts = [self.pair(arg, at_i, at_j) for arg in node.args]
        return (np.logical_and if isinstance(node, And) else np.logical_or).reduce(parts)


def _select(qualifies: np.ndarray, queries: np.ndarray, side: str, mask: str) -> np.ndarray:
    """For each query i, the leftmost/rightmost j allowed by ``mask`` where ``qualifies``."""
    n = len(qualifies)
    positions = np.arange(n)
    hits = np.flatnonzero(qualifies)
    if not len(hits):
        return np.full(len(queries), -1)
    if mask == "all":
        return np.full(len(queries), hits[0] if side == "leftmost" else hits[-1])
    if mask == "past":  # j < i
        if side == "leftmost":
            return np.where(hits[0] < queries, hits[0], -1)
        last_before = np.maximum.accumulate(np.where(qualifies, positions, -1))  # last j ≤ i
        return np.concatenate([[-1], last_before[:-1]])[queries]
    if side == "rightmost":  # j > i
        return np.where(hits[-1] > queries, hits[-1], -1)
    next_after = np.minimum.accumulate(np.where(qualifies, positions, n)[::-1])[::-1]  # first j ≥ i
    after = np.concatenate([next_after[1:], [n]])[queries]
    return np.where(after < n, after, -1)


def _reads(node: Node) -> list[At]:
    """The P[i] and P[j] reads of a SCORE/VALUE/default formula."""
    if isinstance(node, At):
        return [node]
    if isinstance(node, Not):
        return _reads(node.arg)
    if isinstance(node, (And, Or)):
        return [read for arg in node.args for read in _reads(arg)]
    return []


def _key(read: At) -> str:
    """A read's vector, as a key: its name, or the symbol of Q("a")."""
    vector = read.vector
    return vector.name if isinstance(vector, Name) else f'Q("{vector.symbol}")'
