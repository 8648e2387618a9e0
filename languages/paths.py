"""Exact counting and exactly uniform sampling of the accepted strings of a complete DFA.

N_r[q] is the number of strings of length r accepted from state q: N_0[q] = [q accepting] and
N_r[q] = sum over symbols a of N_{r-1}[delta(q, a)], in Python integers. A uniform string of
length L is a walk from the start that, with r symbols still to go in state q, takes symbol a with
probability N_{r-1}[delta(q, a)] / N_r[q].

The walk runs on all strings at once with float64 thresholds t_j = (N_{r-1} summed over the first
j symbols) / N_r[q], each correctly rounded (Python's int / int), so within 2**-54 of the exact
ratio. A uniform u from ``rng.random()`` is the first 53 bits of a uniform real V; when u is more
than MARGIN from every threshold, V and u fall on the same side of every exact ratio, so the float
decision is the exact one. Otherwise (probability about 2**-39 per step) the choice is redone in
integers with more random bits (``exact.refine_choice``). The result is exactly uniform.
"""

from __future__ import annotations

from itertools import accumulate

import numpy as np

from languages.exact import refine_choice

MARGIN = 2.0**-40  # far above the 2**-54 rounding error of a threshold


class PathCounter:
    """Exact counts by length and uniform sampling for a complete DFA given as a table."""

    def __init__(self, delta: np.ndarray, accept: np.ndarray, start: int) -> None:
        self.delta = np.asarray(delta, dtype=np.int64)  # (states, symbols), every entry a state
        self.accept = np.asarray(accept, dtype=bool)
        self.start = int(start)
        self._first = self.accept.astype(np.int64).astype(object)  # N_0 as Python ints
        self._layer = self._first
        self._counts: list[int] = [int(self._layer[self.start])]
        self._thresholds: list[np.ndarray] = [np.zeros((len(self.accept), self.symbols - 1))]
        self._stacked = np.zeros((0, len(self.accept), self.symbols - 1))
        self._exact_layers: dict[int, np.ndarray] = {}

    @property
    def symbols(self) -> int:
        """Return the alphabet size."""
        return self.delta.shape[1]

    def _extend(self, length: int) -> None:
        """Compute N_r and the thresholds of layer r for every r up to ``length``."""
        while len(self._counts) <= length:
            successors = self._layer[self.delta]  # N_{r-1}[delta(q, a)], object (states, symbols)
            running = np.cumsum(successors, axis=1)
            total = running[:, -1]
            safe = np.where(total == 0, 1, total)
            self._thresholds.append((running[:, :-1] / safe[:, None]).astype(np.float64))
            self._layer = total
            self._counts.append(int(total[self.start]))

    def count(self, length: int) -> int:
        """Return the number of accepted strings of ``length``."""
        self._extend(length)
        return self._counts[length]

    def _table(self, length: int) -> np.ndarray:
        """Return the thresholds of layers 0 .. length as one float64 array."""
        self._extend(length)
        if len(self._stacked) <= length:
            self._stacked = np.stack(self._thresholds)
        return self._stacked

    def _exact_layer(self, r: int) -> np.ndarray:
        """Return N_r (Python ints), recomputed; used only for the rare exact decisions."""
        if r not in self._exact_layers:
            layer = self._first
            for _ in range(r):
                layer = self._layer_sum(layer)
            if len(self._exact_layers) > 64:
                self._exact_layers.clear()
            self._exact_layers[r] = layer
        return self._exact_layers[r]

    def _layer_sum(self, layer: np.ndarray) -> np.ndarray:
        """Return the next layer: each state's sum over its successors."""
        return layer[self.delta].sum(axis=1)

    def _exact_choice(self, r: int, state: int, u: float, rng: np.random.Generator) -> int:
        """Return the symbol the exact walk takes from ``state`` with r to go, given u."""
        below = self._exact_layer(r - 1)
        cumulative = list(accumulate(int(below[s]) for s in self.delta[state]))
        return refine_choice(cumulative, u, rng)

    def sample(self, lengths: np.ndarray, rng: np.random.Generator) -> list[np.ndarray]:
        """Return one uniform accepted string (symbol indices) per requested length."""
        lengths = np.asarray(lengths, dtype=np.int64)
        k = len(lengths)
        if k == 0:
            return []
        order = np.argsort(-lengths, kind="stable")
        by_length = lengths[order]
        longest = int(by_length[0])
        for length in np.unique(lengths).tolist():
            if self.count(length) == 0:
                raise ValueError(f"no accepted string of length {length}")
        table = self._table(longest)
        ids = np.zeros((k, longest), dtype=np.int16)
        state = np.full(k, self.start, dtype=np.int64)
        active = np.searchsorted(-by_length, -np.arange(longest + 1), side="right")
        for r in range(longest, 0, -1):
            m = int(active[r])  # strings with at least r symbols still to go
            here = state[:m]
            if self.symbols > 1:
                u = rng.random(m)
                thresholds = table[r, here]
                symbol = (u[:, None] >= thresholds).sum(axis=1)
                close = (np.abs(u[:, None] - thresholds) <= MARGIN).any(axis=1)
                for i in np.flatnonzero(close).tolist():
                    symbol[i] = self._exact_choice(r, int(here[i]), float(u[i]), rng)
            else:
                symbol = np.zeros(m, dtype=np.int64)
            ids[np.arange(m), by_length[:m] - r] = symbol
            state[:m] = self.delta[here, symbol]
        out: list[np.ndarray] = [np.empty(0, dtype=np.int16)] * k
        for row, i in enumerate(order.tolist()):
            out[i] = ids[row, : by_length[row]]
        return out
