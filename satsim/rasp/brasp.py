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
    return {name: values[0] for name, values in _run_all(program, [string]).items()}


def accepts(program: Program, string: str) -> bool:
    """Whether the program accepts ``string``: ``accept`` at its last position."""
    return bool(run(program, string)["accept"][-1])


BATCH_CELLS = 1 << 20
"""Positions read at once: strings of one length are run together, this many symbols a batch."""


def accepts_all(program: Program, strings: list[str]) -> list[bool]:
    """Whether the program accepts each string; strings of one length are run as one batch."""
    by_length: dict[int, list[int]] = {}
    for k, string in enumerate(strings):
        program.check_input("brasp", string)
        by_length.setdefault(len(string), []).append(k)
    accepted = [False] * len(strings)
    for length, indices in by_length.items():
        step = max(1, BATCH_CELLS // max(1, length))
        for start in range(0, len(indices), step):
            batch = indices[start:start + step]
            last = _run_all(program, [strings[k] for k in batch])["accept"][:, -1]
            for k, value in zip(batch, last.tolist()):
                accepted[k] = value
    return accepted


def _run_all(program: Program, strings: list[str]) -> dict[str, np.ndarray]:
    """Every defined vector of strings of one length, a row each."""
    state = _Positions(strings)
    for definition in program.definitions:
        state.values[definition.name] = state.vector(definition.expr)
    return state.values


class _Positions:
    """The positions of inputs of one length (a row each) and the vectors defined so far."""

    def __init__(self, strings: list[str]) -> None:
        self.symbols = np.array([list(s) or [""] for s in strings], dtype=object).reshape(
            len(strings), -1)
        self.selectable = np.full(self.symbols.shape, bool(strings[0]))  # position 0 is not
        self.values: dict[str, np.ndarray] = {}

    def vector(self, node: Node) -> np.ndarray:
        """The vector ``node`` denotes, position by position."""
        if isinstance(node, Symbol):
            return self.symbols == node.symbol
        if isinstance(node, Constant):
            return np.full(self.symbols.shape, node.value)
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
        chosen = np.full(self.symbols.shape, -1)  # the selected position j of each i, -1: none
        query_reads = sorted({_key(a) for a in _reads(node.score) if a.index == "i"})
        at_i = {key: self.vector(vector) for key, vector in
                ((_key(a), a.vector) for a in _reads(node.score) if a.index == "i")}
        rows = np.stack([at_i[key] for key in query_reads], axis=-1) if query_reads else \
            np.zeros((*self.symbols.shape, 0), dtype=bool)
        for fixed in itertools.product((False, True), repeat=len(query_reads)):
            queries = (rows == np.array(fixed, dtype=bool)).all(axis=-1)
            if not queries.any():
                continue
            env = dict(zip(query_reads, fixed))
            qualifies = self.pair(node.score,
                                  lambda a, env=env: np.full(self.symbols.shape, env[_key(a)]),
                                  self.at_j) & self.selectable
            chosen = np.where(queries, _select(qualifies, node.side, node.mask), chosen)
        found = chosen >= 0
        j = np.where(found, chosen, 0)
        value = self.pair(node.value, self.at_i,
                          lambda a: np.take_along_axis(self.vector(a.vector), j, axis=1))
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
            return np.full(self.symbols.shape, node.value)
        if isinstance(node, Not):
            return ~self.pair(node.arg, at_i, at_j)
        parts = [self.pair(arg, at_i, at_j) for arg in node.args]
        return (np.logical_and if isinstance(node, And) else np.logical_or).reduce(parts)


def _select(qualifies: np.ndarray, side: str, mask: str) -> np.ndarray:
    """Per row and query i, the leftmost/rightmost j allowed by ``mask`` where ``qualifies``.

    -1 where none qualifies.
    """
    n = qualifies.shape[1]
    positions = np.broadcast_to(np.arange(n), qualifies.shape)
    last_upto = np.maximum.accumulate(np.where(qualifies, positions, -1), axis=1)  # j ≤ i
    first_from = np.minimum.accumulate(np.where(qualifies, positions, n)[:, ::-1],
                                       axis=1)[:, ::-1]  # first j ≥ i
    first, last = first_from[:, :1], last_upto[:, -1:]  # over every position, n and -1: none
    if mask == "all":
        pick = first if side == "leftmost" else last
        return np.broadcast_to(np.where(pick < n, pick, -1), qualifies.shape)
    if mask == "past":  # j < i
        if side == "leftmost":
            return np.where(first < positions, first, -1)
        return np.concatenate([np.full((len(qualifies), 1), -1), last_upto[:, :-1]], axis=1)
    if side == "rightmost":  # j > i
        return np.where(last > positions, last, -1)
    after = np.concatenate([first_from[:, 1:], np.full((len(qualifies), 1), n)], axis=1)
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
