"""Minimal DFAs, their transition monoids, and star-freeness (Schützenberger).

A regular language is star-free iff the transition monoid of its minimal DFA is aperiodic:
every element x has x^k = x^(k+1) for some k. Where it is not, an element with a cycle of
length p > 1 among its powers is the witness: x^k ≠ x^(k+1) for every k ≥ 1.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import numpy as np

from satsim.engine import resources
from satsim.errors import SatsimError

MAX_STATES = 1 << 16
"""The most states of a minimal DFA whose monoid is decided (states are uint16)."""


@dataclass(frozen=True)
class DFA:
    """A complete DFA: ``delta[q][a]`` for states 0..n-1 and symbol indices, start, accepting."""

    alphabet: tuple[str, ...]
    delta: tuple[tuple[int, ...], ...]
    start: int
    accepting: frozenset[int]

    @property
    def states(self) -> int:
        """The number of states."""
        return len(self.delta)

    def run(self, string: str) -> int:
        """The state after reading ``string`` from the start."""
        q = self.start
        for symbol in string:
            q = self.delta[q][self.alphabet.index(symbol)]
        return q

    def accepts(self, string: str) -> bool:
        """Whether the DFA accepts ``string``."""
        return self.run(string) in self.accepting


def minimal_dfa(alphabet: tuple[str, ...], delta: np.ndarray, start: int,
                accept: np.ndarray) -> DFA:
    """The minimal complete DFA of a complete DFA table (unreachable states dropped).

    States are merged by Hopcroft's partition refinement; the blocks are numbered in the order
    of their smallest reachable state.
    """
    table = np.asarray(delta).tolist()
    reachable, queue = {start}, deque([start])
    while queue:
        q = queue.popleft()
        for target in table[q]:
            if target not in reachable:
                reachable.add(target)
                queue.append(target)
    states = sorted(reachable)
    block = _hopcroft(table, states, {q for q in states if accept[q]}, len(alphabet))
    number: dict[int, int] = {}
    for q in states:
        number.setdefault(block[q], len(number))
    rows: dict[int, tuple[int, ...]] = {}
    for q in states:
        rows.setdefault(number[block[q]], tuple(number[block[t]] for t in table[q]))
    accepting = frozenset(number[block[q]] for q in states if accept[q])
    return DFA(tuple(alphabet), tuple(rows[i] for i in range(len(rows))),
               number[block[start]], accepting)


def _hopcroft(table: list[list[int]], states: list[int], accepting: set[int],
              symbols: int) -> dict[int, int]:
    """The coarsest partition of ``states`` that respects acceptance and the transitions.

    Each state's block id; a block splits by the states that reach a splitter block on a
    symbol, and the smaller half is queued as a splitter (the larger keeps the block's id, and
    its place in the queue), so the work is O(states · symbols · log states).
    """
    inverse: list[dict[int, list[int]]] = [{} for _ in range(symbols)]
    for q in states:
        for a, t in enumerate(table[q]):
            inverse[a].setdefault(t, []).append(q)
    blocks = [part for part in (accepting, set(states) - accepting) if part]
    block = {q: b for b, part in enumerate(blocks) for q in part}
    waiting = {(b, a) for b in range(len(blocks)) for a in range(symbols)}
    while waiting:
        splitter, a = waiting.pop()
        touched: dict[int, set[int]] = {}
        for t in blocks[splitter]:
            for q in inverse[a].get(t, ()):
                touched.setdefault(block[q], set()).add(q)
        for b, inside in touched.items():
            if len(inside) == len(blocks[b]):
                continue
            outside = blocks[b] - inside
            small, large = (inside, outside) if len(inside) <= len(outside) else \
                (outside, inside)
            blocks[b] = large
            blocks.append(small)
            for q in small:
                block[q] = len(blocks) - 1
            # the new block is the smaller half: queued whether or not b was still waiting
            waiting.update((len(blocks) - 1, c) for c in range(symbols))
    return block


def language_dfa(language) -> DFA:
    """The minimal DFA of a regular language of the suite.

    A language given by a DFA table (:class:`languages.RegularLanguage`), or a depth-bounded
    Dyck language, whose DFA is its stack of open brackets.
    """
    delta = getattr(language, "delta", None)
    if delta is not None:
        return minimal_dfa(tuple(language.alphabet), np.asarray(delta), int(language.start),
                           np.asarray(language.accept))
    if isinstance(getattr(language, "max_depth", None), int) and hasattr(language, "pairs"):
        check_stack_states(language.name, len(language.pairs), language.max_depth)
        return minimal_dfa(*_stack_dfa(language.pairs, language.max_depth))
    raise SatsimError(f"language {language.name!r} is not regular as the suite gives it (no "
                      "DFA); star-freeness is decided for the regular languages")


def stack_states(kinds: int, depth: int) -> int:
    """States of the minimal DFA of Dyck over ``kinds`` bracket types, ``depth`` deep at most.

    Each stack of open brackets is one, and the dead state another.
    """
    return sum(kinds**height for height in range(depth + 1)) + 1


def check_stack_states(name: str, kinds: int, depth: int) -> int:
    """The states of :func:`stack_states`, refused in one line past :data:`MAX_STATES`."""
    states = stack_states(kinds, depth)
    if states > MAX_STATES:
        raise SatsimError(f"the minimal DFA of {name} has {_about(states)} states (every stack "
                          f"of up to {depth} brackets of {kinds} types, and a dead state); "
                          f"star-freeness is decided for at most {MAX_STATES:,}: lower the "
                          "depth M or the bracket types K")
    return states


def stack_monoid_size(kinds: int, depth: int) -> int:
    """The size of that DFA's transition monoid, known before it is enumerated.

    Besides the zero, an element reads a closing word c (length a) then an opening word o
    (length b), defined on the stacks ending in c's partners whose height h keeps every step
    within ``depth``: a ≤ h ≤ H for a bound H from a to depth − max(a, b) + a, each bound a
    different element (a peak ``(ᵗ)ᵗ`` inside the word lowers H). Checked against the
    enumeration in the tests.
    """
    return 1 + sum(kinds**(a + b) * (depth - max(a, b) + 1)
                   for a in range(depth + 1) for b in range(depth + 1))


def _about(count: int) -> str:
    """A count for a message, as 1,234,567 or, past a trillion, as about 10^k."""
    return f"{count:,}" if count < 10**12 else f"about 10^{len(str(count)) - 1}"


def _stack_dfa(pairs: tuple[str, ...], depth: int) -> tuple:
    """(alphabet, delta, start, accept) of bracket pairs nested at most ``depth`` deep."""
    alphabet = tuple("".join(pairs))
    stacks, queue = {(): 0}, deque([()])
    rows: list[list[object]] = []
    while queue:
        stack = queue.popleft()
        row: list[object] = []
        for symbol in alphabet:
            kind = next(i for i, pair in enumerate(pairs) if symbol in pair)
            if symbol == pairs[kind][0]:
                nxt = stack + (kind,) if len(stack) < depth else None
            else:
                nxt = stack[:-1] if stack and stack[-1] == kind else None
            if nxt is not None and nxt not in stacks:
                stacks[nxt] = len(stacks)
                queue.append(nxt)
            row.append(nxt)
        rows.append(row)
    dead = len(stacks)
    delta = np.array([[dead if t is None else stacks[t] for t in row] for row in rows]
                     + [[dead] * len(alphabet)])
    accept = np.array([stack == () for stack in stacks] + [False])
    return alphabet, delta, 0, accept


MAX_ELEMENTS = 30_000_000
"""Monoid elements :func:`monoid_elements` tells apart (by 128-bit fingerprints, about 2.5 GB)
before it refuses (or fewer, as :func:`element_limit` says)."""
ELEMENT_BYTES = 160
"""Bytes an element of the monoid costs beside its row of states: its fingerprint in the set
of those seen, and its word."""
CELLS_PER_SECOND = 1.5e7
"""State images (elements × states × letters) enumerated per second, as measured here on one
core (dyck-2-7 and dyck-3-5); for estimates only."""


def monoid_cost(states: int, letters: int, elements: int) -> tuple[float, float]:
    """(bytes, seconds) to enumerate a monoid of ``elements`` on ``states`` states, about.

    The bytes count every element's row (two bytes a state) as if all were held at once: an
    upper bound, as only two word lengths are.
    """
    return elements * (2 * states + ELEMENT_BYTES), elements * states * letters / CELLS_PER_SECOND


def element_limit(states: int) -> int:
    """Elements a DFA's monoid may have before it is refused: the most that fit in free memory.

    At most :data:`MAX_ELEMENTS`.
    """
    return max(1, min(MAX_ELEMENTS, resources.available_memory() // (2 * states + ELEMENT_BYTES)))

CHUNK_CELLS = 1 << 25
"""State images handled at once (a chunk of elements times the states)."""


def _fingerprints(rows: np.ndarray, multipliers: np.ndarray) -> np.ndarray:
    """Two 64-bit fingerprints of each row of state images, (B, 2) uint64.

    Each is Σ_q row[q]·m[q] mod 2⁶⁴ with random odd multipliers m. Two different rows differ by
    at most 2¹⁶ in any entry, so they agree on one fingerprint with probability at most 2⁻⁴⁸
    and on both at most 2⁻⁹⁶: over the 30 million elements refused beyond, below 2⁻⁴⁷ that
    two are ever taken for one.
    """
    wide = rows.astype(np.uint64)
    return np.stack([(wide * m).sum(axis=1) for m in multipliers], axis=1)


def _key(high: int, low: int) -> int:
    """One set key of a row's two fingerprints."""
    return high << 64 | low


def monoid_elements(dfa: DFA, limit: int | None = None) -> Iterator[tuple[np.ndarray, list[str]]]:
    """The transition monoid breadth-first, in batches: elements and a shortest word of each.

    Row r of a batch (uint16) maps state q to ``rows[r, q]`` and is given by ``words[r]``; the
    empty word comes first, and no element comes before one of a shorter word. Only two word
    lengths are held at a time; the elements seen are told apart by fingerprints
    (:func:`_fingerprints`). Refused past ``limit`` elements (None: :func:`element_limit`).
    """
    states = dfa.states
    if states > MAX_STATES:
        raise SatsimError(f"the minimal DFA has {states:,} states; its monoid is decided for "
                          f"DFAs of at most {MAX_STATES:,} states")
    limit = element_limit(states) if limit is None else limit
    letters = np.array([[row[a] for row in dfa.delta] for a in range(len(dfa.alphabet))],
                       dtype=np.uint16).reshape(len(dfa.alphabet), states)
    multipliers = np.random.default_rng(0).integers(0, 1 << 63, (2, states), dtype=np.uint64)
    multipliers = multipliers * np.uint64(2) + np.uint64(1)
    identity = np.arange(states, dtype=np.uint16)[None]
    seen = {_key(*_fingerprints(identity, multipliers)[0].tolist())}
    chunk = max(1, CHUNK_CELLS // states)
    layer = [(identity, [""])]
    while layer:
        yield from layer
        batches = _Batches(chunk)
        for symbol, letter in zip(dfa.alphabet, letters):
            for elements, words in layer:
                rows = letter[elements]  # each element, then the letter
                new = []
                for r, pair in enumerate(_fingerprints(rows, multipliers).tolist()):
                    key = _key(*pair)
                    if key not in seen:
                        seen.add(key)
                        new.append(r)
                batches.add(rows[new], [words[r] + symbol for r in new])
                if len(seen) > limit:
                    raise SatsimError(f"the transition monoid of the {states:,}-state minimal "
                                      f"DFA has more than {limit:,} elements (as many as are "
                                      "decided here, in the memory free); too large to decide "
                                      "here")
        layer = batches.done()


class _Batches:
    """Rows and words gathered into batches of about ``size`` rows."""

    def __init__(self, size: int) -> None:
        self.size = size
        self.full: list[tuple[np.ndarray, list[str]]] = []
        self.rows: list[np.ndarray] = []
        self.words: list[str] = []

    def add(self, rows: np.ndarray, words: list[str]) -> None:
        """Append rows with their words; close a batch once it holds ``size`` rows."""
        self.rows.append(rows)
        self.words.extend(words)
        if len(self.words) >= self.size:
            self.full.append((np.concatenate(self.rows), self.words))
            self.rows, self.words = [], []

    def done(self) -> list[tuple[np.ndarray, list[str]]]:
        """Every batch, the last one possibly short."""
        if self.words:
            self.full.append((np.concatenate(self.rows), self.words))
        return self.full


@dataclass(frozen=True)
class Decision:
    """Whether a regular language is star-free, with the sizes and, if not, the witness."""

    star_free: bool
    dfa_states: int
    monoid_size: int
    witness: str | None  # a word whose transformation x has x^k ≠ x^(k+1) for all k ≥ 1
    period: int  # the witness's cycle length among its powers (1 when star-free)

    def as_dict(self) -> dict:
        """JSON-ready fields."""
        return {"star_free": self.star_free, "dfa_states": self.dfa_states,
                "monoid_size": self.monoid_size,
                "witness": None if self.witness is None else
                {"word": self.witness, "period": self.period}}


def _period(x: np.ndarray) -> int:
    """The length of the cycle that the powers x, x², … end in."""
    seen: dict[bytes, int] = {}
    power, k = x, 1
    while power.tobytes() not in seen:
        seen[power.tobytes()] = k
        power = x[power]  # x^k, then x
        k += 1
    return k - seen[power.tobytes()]


def _cycling(x: np.ndarray) -> np.ndarray:
    """Which rows x of transformations of n states have powers that cycle (x^N ≠ x^(N+1)).

    On n states every x has x^N = x^(N+1) for some N ≤ n exactly when its powers do not cycle,
    so x^N with N the first power of two ≥ n (by squaring) against x^(N+1) decides each row.
    """
    power = x
    for _ in range(max(1, math.ceil(math.log2(max(x.shape[1], 2))))):
        power = np.take_along_axis(power, power, axis=1)  # x^(2t) = x^t then x^t
    return ~(np.take_along_axis(x, power, axis=1) == power).all(axis=1)


PASSING_CELLS = 100_000_000
"""The monoid cells (elements times states) a decision made in passing may enumerate: dyck-3-5's
monoid (148,924 elements on 365 states) fits, dyck-2-10's (5,584,228 on 2,048) does not."""


def star_free_in_passing(dfa: DFA) -> bool | None:
    """Star-freeness where the monoid has at most ``PASSING_CELLS`` cells, else None (undecided)."""
    limit = min(element_limit(dfa.states), max(1, PASSING_CELLS // dfa.states))
    try:
        return decide(dfa, limit).star_free
    except SatsimError:  # too many states or elements
        return None


def decide(dfa: DFA, limit: int | None = None,
           progress: Callable[[int, int], None] | None = None) -> Decision:
    """Star-freeness of the DFA's language: aperiodicity of its minimal DFA's monoid.

    Every element of the monoid is checked (:func:`_cycling`); the witness is the first that
    cycles in breadth-first order, so its word is a shortest one. ``progress(elements, word
    length)`` is called after each batch of elements.
    """
    size, witness, period = 0, None, 1
    for elements, words in monoid_elements(dfa, limit):
        size += len(elements)
        if progress is not None:
            progress(size, len(words[-1]))
        if witness is not None:
            continue
        rows = elements.astype(np.int64)
        cycling = np.flatnonzero(_cycling(rows))
        if len(cycling):
            witness, period = words[cycling[0]], _period(rows[cycling[0]])
    return Decision(witness is None, dfa.states, size, witness, period)
