"""Regular languages given by a DFA held as a networkx graph.

The graph gives everything: the oracle (run the DFA), next-symbol sets (a symbol may follow iff
its target can still reach an accepting state; EOS iff the state accepts), exact counts and
exactly uniform sampling (``paths.PathCounter``), and exact one-edit negatives (which edits of a
positive leave the language, found for all positions at once from forward states and backward
acceptance).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence

import networkx as nx
import numpy as np

from languages.base import EDIT_SHIFT, EDITS, EOS, GENERIC, Language, LanguageError, check_count
from languages.paths import PathCounter

EDIT_CHUNK_CELLS = 1 << 22  # bound on (strings x length x states) per vectorised edit search


def dfa_graph(
    alphabet: Sequence[str],
    start: Hashable,
    step: Callable[[Hashable, str], Hashable | None],
    accepting: Callable[[Hashable], bool],
) -> nx.MultiDiGraph:
    """Return the DFA reachable from ``start`` as a graph: edges keyed by symbol, node "accept".

    ``step(state, symbol)`` gives the next state, or None for the (implicit) dead state.
    """
    graph = nx.MultiDiGraph(start=start, alphabet=tuple(alphabet))
    graph.add_node(start, accept=bool(accepting(start)))
    todo = [start]
    while todo:
        state = todo.pop()
        for symbol in alphabet:
            target = step(state, symbol)
            if target is None:
                continue
            if target not in graph:
                graph.add_node(target, accept=bool(accepting(target)))
                todo.append(target)
            graph.add_edge(state, target, key=symbol)
    return graph


class RegularLanguage(Language):
    """A language given by a DFA (networkx MultiDiGraph, edge keys are symbols)."""

    negative_labels = GENERIC

    def __init__(
        self,
        name: str,
        graph: nx.MultiDiGraph,
        description: str,
        references: tuple[str, ...] = (),
        kind: str = "regular",
    ) -> None:
        self.name = name
        self.alphabet = tuple(graph.graph["alphabet"])
        self.description = description
        self.references = references
        self.kind = kind
        self.graph = graph
        if len(self.alphabet) == 1:  # one symbol: nothing to replace it with
            self.negative_labels = tuple(g for g in self.negative_labels if g != "replace")
        states = list(graph.nodes)
        index = {state: i for i, state in enumerate(states)}
        dead = len(states)
        delta = np.full((dead + 1, len(self.alphabet)), dead, dtype=np.int64)
        column = {symbol: j for j, symbol in enumerate(self.alphabet)}
        for u, v, symbol in graph.edges(keys=True):
            if delta[index[u], column[symbol]] != dead:
                raise LanguageError(f"{name}: two {symbol!r} edges leave state {u!r}")
            delta[index[u], column[symbol]] = index[v]
        accept = np.array([graph.nodes[s]["accept"] for s in states] + [False])
        final = {s for s in states if graph.nodes[s]["accept"]}
        live = set(final).union(*(nx.ancestors(graph, s) for s in final)) if final else set()
        alive = np.array([s in live for s in states] + [False])
        self.start = index[graph.graph["start"]]
        self.delta, self.accept = delta, accept
        self._rows = delta.tolist()
        self._accepting = accept.tolist()
        self._next = [
            frozenset(
                [a for a, t in zip(self.alphabet, delta[q]) if alive[t]]
                + ([EOS] if accept[q] else [])
            )
            for q in range(dead + 1)
        ]
        self.paths = PathCounter(delta, accept, self.start)
        self._edit_lengths: dict[str, EditLengths] = {}

    @property
    def states(self) -> int:
        """Return the number of DFA states, the dead state included."""
        return len(self.delta)

    # ---- oracle, next symbols, counts ---------------------------------------------------

    def run(self, s: str) -> list[int]:
        """Return the DFA state after each prefix s[:0] .. s[:len(s)]."""
        q, rows, out = self.start, self._rows, [self.start]
        for a in self.encode(s).tolist():
            q = rows[q][a]
            out.append(q)
        return out

    def contains(self, s: str) -> bool:
        """Return True iff the DFA accepts ``s``."""
        q, rows = self.start, self._rows
        for a in self.encode(s).tolist():
            q = rows[q][a]
        return self._accepting[q]

    def next_symbols(self, s: str) -> list[frozenset[str]]:
        """Return per prefix the symbols whose target can still accept, and EOS iff accepting."""
        return [self._next[q] for q in self.run(s)]

    def count(self, length: int) -> int:
        """Return the number of accepted strings of ``length`` (DFA path count)."""
        return self.paths.count(check_count(length, "length"))

    def _can(self, label: str, length: int) -> bool:
        """Return True iff generator ``label`` can produce ``length`` (edits decided exactly)."""
        if label not in EDITS:
            return super()._can(label, length)
        if label not in self._edit_lengths:
            self._edit_lengths[label] = EditLengths(self.delta, self.accept, self.start, label)
        return self._edit_lengths[label].possible(length)

    # ---- sampling -----------------------------------------------------------------------

    def _positive(self, length: int, rng: np.random.Generator) -> str:
        return self._positives(length, 1, rng)[0]

    def _positives(self, length: int, k: int, rng: np.random.Generator) -> list[str]:
        return self._positives_for_lengths(np.full(k, length), rng)

    def _positives_for_lengths(self, lengths: np.ndarray, rng: np.random.Generator) -> list[str]:
        return [self.decode(ids) for ids in self.paths.sample(lengths, rng)]

    def _edit_pairs(
        self, kind: str, lengths: np.ndarray, rng: np.random.Generator
    ) -> list[tuple[str, str | None]]:
        """Return per length (uniform positive, a uniform one of its edits that leave it).

        A positive without such an edit gets None (the caller draws again).
        """
        source_lengths = lengths + EDIT_SHIFT[kind]
        sources = self._positives_for_lengths(source_lengths, rng)
        edited: list[str | None] = [None] * len(sources)
        order = np.argsort(source_lengths, kind="stable").tolist()  # similar lengths together
        cells = (source_lengths + 1) * self.states
        start = 0
        while start < len(order):
            end = start + 1  # the chunk's last entry is its longest
            while end < len(order) and (end - start + 1) * cells[order[end]] <= EDIT_CHUNK_CELLS:
                end += 1
            chunk = order[start:end]
            for i, e in zip(chunk, self._edit_chunk(kind, [sources[i] for i in chunk], rng)):
                edited[i] = e
            start = end
        return list(zip(sources, edited))

    def _edit_chunk(
        self, kind: str, sources: list[str], rng: np.random.Generator
    ) -> list[str | None]:
        """Apply to each source one uniformly chosen rejecting edit (None if it has none)."""
        k, size = len(sources), len(self.alphabet)
        sizes = np.array([len(w) for w in sources], dtype=np.int64)
        n = int(sizes.max())
        words = np.zeros((k, n), dtype=np.int64)  # padded with symbol 0 past each end
        for i, w in enumerate(sources):
            words[i, : len(w)] = self.encode(w)
        forward = np.empty((k, n + 1), dtype=np.int64)
        forward[:, 0] = self.start
        for t in range(n):
            forward[:, t + 1] = self.delta[forward[:, t], words[:, t]]
        # accepts[t, i, q]: does state q accept after reading words[i, t:sizes[i]]?
        accepts = np.empty((n + 1, k, self.states), dtype=bool)
        accepts[n] = self.accept
        for t in range(n - 1, -1, -1):
            accepts[t] = np.take_along_axis(accepts[t + 1], self.delta[:, words[:, t]].T, axis=1)
            accepts[t, sizes == t] = self.accept
        by_string = accepts.transpose(1, 0, 2)  # (k, n + 1, states)
        inside = np.arange(n + (kind == "insert")) < (sizes + (kind == "insert"))[:, None]
        if kind == "delete":  # drop words[t]: state forward[t] reads words[t + 1:]
            ok = np.take_along_axis(by_string[:, 1:], forward[:, :n, None], axis=2)[..., 0]
            bad = ~ok & inside
        else:
            before = forward if kind == "insert" else forward[:, :n]
            after = by_string if kind == "insert" else by_string[:, 1:]
            ok = np.take_along_axis(after, self.delta[before], axis=2)  # (k, positions, symbols)
            bad = ~ok & inside[:, :, None]
            if kind == "replace":
                bad &= words[:, :, None] != np.arange(size)
        flat = bad.reshape(k, -1)
        score = np.where(flat, rng.random(flat.shape), -1.0)
        choice = score.argmax(axis=1).tolist()
        out: list[str | None] = []
        for w, row, c in zip(sources, flat.any(axis=1).tolist(), choice):
            if not row:
                out.append(None)
            elif kind == "delete":
                out.append(w[:c] + w[c + 1 :])
            else:
                t, x = divmod(c, size)
                out.append(w[:t] + self.alphabet[x] + w[t + (kind == "replace") :])
        return out

class EditLengths:
    """For which lengths L one edit of a positive gives a negative of length L (exactly).

    A run of the positive and of its edit is tracked as one state before the edit and a pair of
    states (original, edited) after it. Which of these are reachable when the edited string has
    L symbols is a breadth-first sweep over L; L is possible iff some reachable pair has the
    original accepting and the edited rejecting.
    """

    def __init__(self, delta: np.ndarray, accept: np.ndarray, start: int, kind: str) -> None:
        states, size = delta.shape
        self.kind, self.states = kind, states
        self.step = [delta[:, a] for a in range(size)]  # successor of each state by a
        pair = np.arange(states * states)
        first, second = pair // states, pair % states
        self.pair_step = [delta[first, a] * states + delta[second, a] for a in range(size)]
        self.good = accept[first] & ~accept[second]
        rows = np.arange(states)[:, None]
        if kind == "replace":  # (delta(p, a), delta(p, x)), a != x
            a, x = np.nonzero(~np.eye(size, dtype=bool))
            self.inject = delta[rows, a] * states + delta[rows, x]
        elif kind == "insert":  # original stays at p, the edit reads x
            self.inject = rows * states + delta
        else:  # delete: the original reads a, the edit skips it
            self.inject = delta * states + rows
        self.before = np.zeros(states, dtype=bool)
        self.before[start] = True
        self.after = np.zeros(states * states, dtype=bool)
        self.answers: list[bool] = []

    def possible(self, length: int) -> bool:
        """Return True iff some positive has an edit of this kind that is a negative of length."""
        while len(self.answers) <= length:
            if self.kind == "delete":  # an edit that consumes no symbol of the edited string
                self.after[self.inject[self.before].ravel()] = True
            self.answers.append(bool((self.after & self.good).any()))
            after = np.zeros_like(self.after)
            live = np.flatnonzero(self.after)
            for nxt in self.pair_step:
                after[nxt[live]] = True
            if self.kind != "delete":
                after[self.inject[self.before].ravel()] = True
            before = np.zeros_like(self.before)
            for nxt in self.step:
                before[nxt[self.before]] = True
            self.before, self.after = before, after
        return self.answers[length]
