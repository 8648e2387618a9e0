"""Dyck shapes: uniform +1/-1 step sequences of balanced words, and bracket matching.

Shapes may have bounded depth; the matching of brackets turns a shape into a word over k types.

A Dyck-k word is a Dyck-1 shape with a type chosen for each matched pair, so a uniform shape with
independent uniform types is a uniform Dyck-k word, and the same holds under a depth bound (the
depth profile does not depend on the types).
"""

from __future__ import annotations

from math import comb

import numpy as np

from languages.exact import uniform_dyck_steps
from languages.paths import PathCounter

PAIRS = ("()", "[]", "{}", "<>")
"""Bracket pairs in order: Dyck-k uses the first k."""


def catalan(m: int) -> int:
    """Return the m-th Catalan number."""
    return comb(2 * m, m) // (m + 1)


def depth_automaton(max_depth: int, exact: bool = False) -> PathCounter:
    """Return the DFA over {open, close} of Dyck-1 words of depth <= max_depth (or == if exact).

    States are depth d in 0..max_depth (and, with ``exact``, a flag for having reached
    max_depth); the last state is dead.
    """
    depths = max_depth + 1
    flags = 2 if exact else 1
    dead = depths * flags
    delta = np.full((dead + 1, 2), dead, dtype=np.int64)
    accept = np.zeros(dead + 1, dtype=bool)
    for flag in range(flags):
        for d in range(depths):
            state = flag * depths + d
            if d < max_depth:
                up_flag = 1 if exact and d + 1 == max_depth else flag
                delta[state, 0] = up_flag * depths + d + 1
            if d > 0:
                delta[state, 1] = state - 1
            accept[state] = d == 0 and (flag == 1 or not exact)
    return PathCounter(delta, accept, 0)


class DyckShapes:
    """Uniform Dyck-1 shapes (rows of +1 open / -1 close) of a length, depth-bounded or not."""

    def __init__(self, max_depth: int | None = None, exact_depth: bool = False) -> None:
        self.max_depth = max_depth
        self._paths = None if max_depth is None else depth_automaton(max_depth, exact_depth)

    def count(self, length: int) -> int:
        """Return the number of shapes of ``length``."""
        if self._paths is None:
            return 0 if length % 2 else catalan(length // 2)
        return self._paths.count(length)

    def sample(self, length: int, k: int, rng: np.random.Generator) -> np.ndarray:
        """Return k independent uniform shapes of ``length`` as a (k, length) int8 array."""
        if self._paths is None:
            return uniform_dyck_steps(length, k, rng)
        rows = self._paths.sample(np.full(k, length), rng)
        if not rows:
            return np.zeros((0, length), dtype=np.int8)
        return (1 - 2 * np.stack(rows)).astype(np.int8).reshape(k, length)


def sample_many(shapes: DyckShapes, lengths: np.ndarray, rng: np.random.Generator) -> list:
    """Return one uniform shape (int8 +1/-1 array) per entry of ``lengths``."""
    if shapes._paths is not None:
        return [(1 - 2 * ids).astype(np.int8) for ids in shapes._paths.sample(lengths, rng)]
    out: list = [None] * len(lengths)
    for length in np.unique(lengths).tolist():
        where = np.flatnonzero(lengths == length).tolist()
        for i, row in zip(where, shapes.sample(length, len(where), rng)):
            out[i] = row
    return out


def matching(steps: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Return (open positions, close positions) of matched pairs, each (k, length // 2).

    An open at depth h (after it) is matched by the next close from depth h; ordering positions
    by (level, position), where a close's level is the depth before it, lists each level's opens
    and closes alternately, so consecutive entries pair up.
    """
    k, length = steps.shape
    after = np.cumsum(steps, axis=1, dtype=np.int64)
    level = np.where(steps > 0, after, after + 1)
    order = np.argsort(level * (length + 1) + np.arange(length), axis=1, kind="stable")
    return order[:, 0::2], order[:, 1::2]


def typed(steps: np.ndarray, types: np.ndarray) -> np.ndarray:
    """Return bracket ids (2 * type for an open, 2 * type + 1 for a close) for shapes and types.

    ``types`` gives one type per matched pair, (k, length // 2), in order of the opens' levels.
    """
    opens, closes = matching(steps)
    ids = np.empty(steps.shape, dtype=np.int64)
    rows = np.arange(len(steps))[:, None]
    ids[rows, opens] = 2 * types
    ids[rows, closes] = 2 * types + 1
    return ids
