"""B-RASP programs of one-layer hard next-symbol models with learned positions and norms.

These are the GPT-2 models of lacoco-lab/decompiling_transformers, hardened (docs/zoo.md).

Such a model reads at most N − 1 symbols (its position table has N rows), so every position is
one of finitely many, and the analysis enumerates them instead of closing classes symbolically:

1. **Key groups.** For a head, a query symbol and a query position, the score of every key
   (symbol, position) is computed from the weights (the layer's input is the token row plus
   the position row, whatever the rest of the string). Key symbols whose score ranges overlap
   there are merged into one group; the groups must then be strictly ordered, by more than the
   tie width plus ``SAFETY``. So at that position the head attends to the best group present
   in the prefix; the order may differ from one position to the next.
2. **Ties.** Inside a group, keys of different positions may score within the tie width (the
   default tolerance, or δ of a tolerant-hard head) of each other; then the head writes their
   mean. Every such mean is enumerated: a best key with any subset of the keys within the tie
   width (plus ``SAFETY``) below it, at most ``MAX_TIE`` of them, else their outputs' box.
3. **Decisions.** For every query symbol, every set of other symbols before it, and every
   position those fit in, each head attends to the symbols of its best group present; every
   combination of what the heads write (any such key or mean of tied keys, at any allowed
   position: an over-approximation, since it ignores that the keys come from one string) goes
   through the model's own arithmetic (the feed-forward, the final norm and the readout, over
   boxes of :mod:`satsim.rasp.intervals` where many keys may tie), every logit farther than
   ``SAFETY`` from 0. All positions and combinations must give the same next-symbol set; that
   set is then a function of the query symbol and the symbols seen before it.

When the three hold, the program equals the model on every input up to N − 1 symbols (up to
the float32 rounding that ``SAFETY`` covers); otherwise extraction is refused, naming the head,
the symbols and the position where it fails. The program defines ``next_<label>`` (whether the
label is predicted after each prefix; position 0 of the empty string is the prefix BOS alone)
and ``accept``: every symbol was predicted by the prefix before it, and the end label is
predicted at the end.
"""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass

import numpy as np

from satsim.errors import SatsimError
from satsim.model.architecture import steps
from satsim.model.settings import tie_tolerance
from satsim.model.spec import ModelSpec
from satsim.rasp import intervals
from satsim.rasp.brasp import run
from satsim.rasp.extract import NotExtractable
from satsim.rasp.intervals import Box
from satsim.rasp.parse import parse_program
from satsim.reference.forward import head_inputs, layer_norm

SAFETY = 1e-5
"""The margin every certified comparison keeps (scores and logits of these models are O(1–10);
float32 rounding moves them by about 10⁻⁶)."""
MAX_COMBINATIONS = 20_000_000
"""The most (query, selected keys) combinations the decision check evaluates."""
MAX_TIE = 3
"""The most optional keys of a tie whose means are enumerated one by one (beyond: their box)."""
END_LABELS = ("<eos>", "eos", "$")
"""Labels that mean "the string may end here" (the end label of ``accept``)."""


@dataclass
class PositionalExtraction:
    """The next-symbol set after each (last symbol, set of other symbols before it)."""

    spec: ModelSpec
    alphabet: tuple[str, ...]
    heads: int
    decisions: dict[tuple[str, frozenset[str]], frozenset[str]]
    start: frozenset[str]  # the set predicted after BOS alone
    max_symbols: int

    def summary(self) -> dict:
        """Heads, outcomes and the certificate, as JSON."""
        return {"certified": True, "certified_up_to_tokens": self.max_symbols,
                "heads": self.heads, "outcomes": len(self.decisions)}


def _check_supported(spec: ModelSpec) -> None:
    """Refuse what the enumeration does not cover, naming it."""
    if spec.positional.kind != "learned" or spec.output.task != "next-symbol":
        raise NotExtractable("this extraction handles next-symbol models with learned positions")
    if len(spec.blocks) != 1 or spec.blocks[0].attn is None:
        raise NotExtractable(f"this extraction handles one-layer models; this one has "
                             f"{len(spec.blocks)} layers")
    if spec.norm not in ("none", "pre"):
        raise NotExtractable(f"this extraction handles pre-norm models; this one is {spec.norm}")
    if spec.bos is None or spec.eos is not None or spec.parallel or spec.residual is not True:
        raise NotExtractable("this extraction handles models with BOS, no EOS, sequential "
                             "blocks and every skip connection")
    long = [t for t in spec.vocab if t != spec.bos and len(t) != 1]
    if long:
        raise NotExtractable(f"a B-RASP program reads one-character symbols; this model reads "
                             f"{long[0]!r}")
    attn = spec.blocks[0].attn
    for h, mask in enumerate(attn.head_masks):
        if mask != "causal":
            raise NotExtractable(f"head 0.{h} has the {mask} mask; this extraction handles causal")


def _check_hard(spec: ModelSpec) -> None:
    """Refuse a head that is not hard (a counter or soft), naming it."""
    for h, kind in enumerate(spec.blocks[0].attn.head_kinds):
        if kind not in ("run", "saturated", "tolerant-hard"):
            raise NotExtractable(f"head 0.{h} is {kind}: this extraction handles saturated and "
                                 "tolerant-hard heads")


class _Layer:
    """The layer's input rows of every (symbol, position), and each head's scores and outputs."""

    def __init__(self, spec: ModelSpec) -> None:
        self.spec = spec
        attention, *feed_forward = steps(spec)  # one block: its norms where the walk puts them
        self.attn = attention.branches[0].module
        self.b_O = np.zeros(spec.d_model) if self.attn.b_O is None else \
            self.attn.b_O.astype(np.float64)
        self.mlp = feed_forward[0].branches[0] if feed_forward else None
        self.N = spec.positional.W_pos.shape[0]
        self.alphabet = tuple(t for t in spec.vocab if t != spec.bos)
        ids = [spec.vocab.index(t) for t in self.alphabet]
        E = spec.W_E.astype(np.float64)
        P = spec.positional.W_pos.astype(np.float64)
        self.x = E[ids][:, None, :] + P[None, :, :]  # [symbol, position, d]; position 0 unused
        self.x_bos = E[spec.vocab.index(spec.bos)] + P[0]
        rows = np.concatenate([self.x.reshape(-1, self.x.shape[-1]), self.x_bos[None]])
        ln1 = attention.branches[0].norm
        q, k, v = head_inputs(rows if ln1 is None else layer_norm(rows, ln1), self.attn)
        S, N = len(self.alphabet), self.N
        self.q = q[:, :-1].reshape(q.shape[0], S, N, -1)
        self.k = k[:, :-1].reshape(k.shape[0], S, N, -1)
        self.k_bos = k[:, -1]
        out = np.einsum("hte,hed->htd", v, self.attn.W_O.astype(np.float64))
        self.out = out[:, :-1].reshape(out.shape[0], S, N, -1)  # what a selected key writes
        self.out_bos = out[:, -1]
        self.scale = self.attn.score_scale
        self.atol, self.rtol = tie_tolerance(spec.dtype)
        self.deltas = [d if k == "tolerant-hard" else None
                       for k, d in zip(self.attn.head_kinds, self.attn.head_deltas)]
        self._scores: dict[tuple[int, int, int], tuple[np.ndarray, float]] = {}
        self.orders: dict[tuple[int, int, int], list[tuple[int, ...]]] = {}  # see _order
        self.decided: dict[tuple, dict] = {}  # see _decisions_at

    def scores(self, h: int, s: int, p: int) -> tuple[np.ndarray, float]:
        """Head h's scores of query (symbol s, position p): keys [symbol, position 1..p], BOS.

        Key positions 1..p−1 hold any symbol; position p is the query itself ([s, p − 1]).
        """
        if (h, s, p) not in self._scores:
            keys = self.k[h][:, 1:p + 1]
            self._scores[(h, s, p)] = (np.einsum("e,tpe->tp", self.q[h, s, p], keys) * self.scale,
                                       float(self.q[h, s, p] @ self.k_bos[h]) * self.scale)
        return self._scores[(h, s, p)]

    def keys(self, h: int, s: int, p: int, t: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The keys of symbol t (−1: BOS) that head h's query (s, p) sees.

        Their scores, what each writes if selected, and their positions (BOS at 0, the query
        itself at p).
        """
        scores, bos = self.scores(h, s, p)
        if t < 0:
            return np.array([bos]), self.out_bos[h][None], np.array([0])
        last = p if t == s else p - 1  # position p holds the query's own symbol
        return scores[t, :last], self.out[h, t, 1:last + 1], np.arange(1, last + 1)

    def width(self, h: int, score: float) -> float:
        """How far below ``score`` head h's keys still tie with it, plus the safety margin."""
        delta = self.deltas[h]
        return (self.atol + self.rtol * abs(score) if delta is None else delta) + SAFETY

    def decide(self, box: Box) -> Box:
        """The logits, as a box, of every layer output before the feed-forward in ``box``."""
        spec = self.spec
        x = box
        if self.mlp is not None:
            inner = x if self.mlp.norm is None else intervals.layer_norm(x, self.mlp.norm)
            x = intervals.add(x, intervals.feed_forward(inner, self.mlp.module))
        if spec.ln_final is not None:
            x = intervals.layer_norm(x, spec.ln_final)
        return intervals.affine(x, spec.output.W_U.astype(np.float64), spec.output.b_U)


def _key_ranges(layer: _Layer, h: int, s: int, p: int) -> dict[int, tuple[float, float]]:
    """Per key symbol at query (s, p), its lowest and highest score (BOS is symbol −1)."""
    ranges = {}
    for t in range(-1, len(layer.alphabet)):
        scores = layer.keys(h, s, p, t)[0]
        if scores.size:
            ranges[t] = (float(scores.min()), float(scores.max()))
    return ranges


def _order(layer: _Layer, h: int, s: int, p: int) -> list[tuple[int, ...]]:
    """Head h's key groups at query (symbol s, position p), best first, strictly ordered.

    Key symbols whose score ranges overlap (within the tie width) are one group; the groups
    must then lie apart by more than the tie width, else the extraction is refused.
    """
    if (h, s, p) in layer.orders:
        return layer.orders[(h, s, p)]
    ranges = _key_ranges(layer, h, s, p)
    parent = {t: t for t in ranges}

    def find(t: int) -> int:
        while parent[t] != t:
            t = parent[t]
        return t

    for a, b in itertools.combinations(ranges, 2):
        (lo_a, hi_a), (lo_b, hi_b) = ranges[a], ranges[b]
        w = layer.width(h, max(abs(lo_a), abs(hi_a), abs(lo_b), abs(hi_b)))
        if lo_a <= hi_b + w and lo_b <= hi_a + w:
            parent[find(a)] = find(b)
    members: dict[int, list[int]] = {}
    for t in parent:
        members.setdefault(find(t), []).append(t)
    spans = {tuple(sorted(m)): (min(ranges[t][0] for t in m), max(ranges[t][1] for t in m))
             for m in members.values()}
    ranked = sorted(spans, key=lambda g: -spans[g][1])
    for better, worse in zip(ranked, ranked[1:]):
        w = layer.width(h, max(map(abs, spans[better] + spans[worse])))
        if spans[better][0] <= spans[worse][1] + w:
            raise NotExtractable(f"head 0.{h}, query {layer.alphabet[s]!r} at position {p}: "
                                 "its key groups are not strictly ordered")
    layer.orders[(h, s, p)] = ranked
    return ranked


def _group_text(layer: _Layer, group: tuple[int, ...]) -> str:
    """A group's symbols, for messages."""
    return "{" + ", ".join("BOS" if t < 0 else repr(layer.alphabet[t]) for t in group) + "}"


def _writes(layer: _Layer, h: int, s: int, p: int, group: tuple[int, ...]
            ) -> tuple[np.ndarray, np.ndarray, list]:
    """Everything head h can write at query (s, p) when ``group`` is its best group present.

    The best key is any key of the group that no key surely present (BOS, the query itself)
    beats; the tie set is that key, every surely present key within the tie width below it,
    and any of the other keys within the tie width (plus ``SAFETY``): each such mean exactly
    when there are at most ``MAX_TIE`` optional keys, else the box of all of those keys' outputs.
    Returns the centres and radii, and per row its tie set as (symbol, position) keys (BOS is
    (−1, 0)), or None for a box.
    """
    found = [layer.keys(h, s, p, t) for t in group]
    keys = np.concatenate([scores for scores, _, _ in found])
    rows = np.concatenate([outputs for _, outputs, _ in found])
    names = [(t, int(q)) for t, (_, _, at) in zip(group, found) for q in at]
    sure = np.array([q in (0, p) for _, q in names])  # BOS and the query itself
    least_best = keys[sure].max() - SAFETY if sure.any() else -np.inf
    centres, radii, ties = [], [], []
    for top in np.flatnonzero(keys >= least_best):
        width = layer.width(h, keys[top])
        near = (keys <= keys[top] + SAFETY) & (keys >= keys[top] - width)
        near[top] = False
        forced = near & sure & (keys >= keys[top] - width + 2 * SAFETY)
        optional = np.flatnonzero(near & ~forced)
        tie = [top, *np.flatnonzero(forced)]
        if len(optional) > MAX_TIE:
            centre, radius = intervals.bounding_box(rows[tie + list(optional)])
            centres.append(centre)
            radii.append(radius)
            ties.append(None)
            continue
        for r in range(len(optional) + 1):
            for tied in itertools.combinations(optional, r):
                centres.append(rows[tie + list(tied)].mean(axis=0))
                radii.append(np.zeros(rows.shape[1]))
                ties.append([names[k] for k in tie + list(tied)])
    d = rows.shape[1]
    return np.array(centres).reshape(-1, d), np.array(radii).reshape(-1, d), ties


def _decide(layer: _Layer, s: int, present: tuple[int, ...]) -> frozenset[str]:
    """The next-symbol set of query symbol s after exactly the other symbols ``present``.

    s itself may occur before or not; the set must be one at every position.
    """
    labels = layer.spec.output.labels
    found: dict[tuple[bool, ...], tuple | None] = {}  # decision -> where it arose
    here = {-1, s, *present}
    for p in range(len(present) + 1, layer.N):
        orders = [_order(layer, h, s, p) for h in range(layer.attn.n_heads)]
        places = [next(k for k, g in enumerate(order) if here & set(g)) for order in orders]
        best = [tuple(t for t in order[k] if t in here) for order, k in zip(orders, places)]
        for decision, where in _decisions_at(layer, s, p, best, (orders[0], places[0])).items():
            if found.get(decision) is None:
                found[decision] = where
        if len(found) > 1:
            raise NotExtractable(
                f"query {layer.alphabet[s]!r} at position {p} after "
                + (_group_text(layer, present) if present else "no other symbol")
                + ", best key groups "
                + ", ".join(f"head 0.{h} {_group_text(layer, g)}" for h, g in enumerate(best))
                + ": " + _disagreement(layer, s, found))
    if not found:
        raise NotExtractable(f"query {layer.alphabet[s]!r}: no position holds "
                             f"{_group_text(layer, present)}")
    (decision,) = found
    return frozenset(label for label, on in zip(labels, decision) if on)


def _decisions_at(layer: _Layer, s: int, p: int, best: list[tuple[int, ...]],
                  first: tuple[list, int]) -> dict[tuple[bool, ...], tuple | None]:
    """Every decision at query (s, p) when head h attends to the symbols ``best[h]``.

    Those are the present symbols of its best group present (keys of the others do not occur).
    Each decision maps to where it arose (p, tie, and ``first``: head 0.0's order and the best
    group's place in it) when one head writes one enumerated mean, else None.
    """
    key = (s, p, tuple(best))
    if key in layer.decided:
        return layer.decided[key]
    parts = [_writes(layer, h, s, p, g) for h, g in enumerate(best)]
    if np.prod([len(c) for c, _, _ in parts], dtype=float) > MAX_COMBINATIONS / layer.N:
        raise NotExtractable(f"query {layer.alphabet[s]!r}: more than {MAX_COMBINATIONS:,} "
                             "combinations of what the heads write to check")
    centre, radius, ties = parts[0]
    for c, r, _ in parts[1:]:
        d = c.shape[-1]
        centre = (centre[:, None, :] + c[None, :, :]).reshape(-1, d)
        radius = (radius[:, None, :] + r[None, :, :]).reshape(-1, d)
    mid, rad = layer.decide((centre + layer.x[s, p] + layer.b_O, radius))
    undecided = np.abs(mid) <= rad + SAFETY
    if np.any(undecided):
        row, label = map(int, np.argwhere(undecided)[0])
        raise NotExtractable(
            f"query {layer.alphabet[s]!r} at position {p}: the logit of "
            f"{layer.spec.output.labels[label]!r} can come within {SAFETY} of 0 "
            f"({mid[row, label] - rad[row, label]:.3g} to {mid[row, label] + rad[row, label]:.3g})"
            ": the decision is not certain")
    found: dict[tuple[bool, ...], tuple | None] = {}
    for row, decision in enumerate(map(tuple, mid > 0)):
        tie = ties[row] if len(parts) == 1 else None
        if found.get(decision) is None:
            found[decision] = None if tie is None else (p, tie, *first)
    layer.decided[key] = found
    return found


def _disagreement(layer: _Layer, s: int, found: dict) -> str:
    """Why one query symbol after the same symbols has two decisions, in words.

    Where it can be built and checked: a pair of strings on which the model itself differs. Else
    only that the keys the analysis admits differ.
    """
    sources = [where for where in found.values() if where is not None]
    if len(sources) >= 2:
        strings = [_witness(layer, s, order, g, p, tie) for p, tie, order, g in sources[:2]]
        if None not in strings:
            from satsim.engine.simulator import Simulator

            first, second = (sets[-1] for sets in Simulator(layer.spec).next_symbols(strings))
            if first != second:
                return (_answers_text((strings[0], first), (strings[1], second))
                        + ", with the same last symbol and the same best group: the answer "
                        "depends on positions (the query's or the selected key's), not only on "
                        "the groups present")
    return ("keys it admits there give different next-symbol sets (the decision reads the "
            "positions, or the analysis's over-approximation of the keys that occur together "
            "is too coarse)")


def _string_text(string: str) -> str:
    """A string for messages: itself when short, else its runs (``0^146 1^2 0``)."""
    runs = [(symbol, len(list(group))) for symbol, group in itertools.groupby(string)]
    if len(string) <= 12 or len(runs) > 8:
        return repr(string) if len(string) <= 40 else f"{string[:20]!r}…{string[-10:]!r}"
    return "'" + " ".join(s if n == 1 else f"{s}^{n}" for s, n in runs) + "'"


def _answers_text(first: tuple[str, frozenset], second: tuple[str, frozenset]) -> str:
    """Two strings and what the model predicts after each, for messages."""
    return (f"the model itself predicts {_set_text(first[1])} after {_string_text(first[0])} "
            f"and {_set_text(second[1])} after {_string_text(second[0])}")


def _set_text(labels: frozenset[str]) -> str:
    """A next-symbol set, for messages."""
    return "{" + ", ".join(sorted(labels)) + "}"


def _witness(layer: _Layer, s: int, order: list[tuple[int, ...]], g: int, p: int,
             tie: list[tuple[int, int]]) -> str | None:
    """A string of p symbols ending in s whose head 0.0 attends to exactly ``tie`` in order[g].

    The tie's keys are in place; every other position holds a symbol of a worse group, or of
    the same group scoring below the tie width of the tie's best key (None if some position
    can hold neither).
    """
    scores, bos = layer.scores(0, s, p)
    best = max(bos if t < 0 else scores[t, q - 1] for t, q in tie)
    floor = best - layer.width(0, best) - SAFETY
    worse = [t for later in order[g + 1:] for t in later if t >= 0]
    same = [t for t in order[g] if t >= 0]
    chars = [None] * p
    chars[p - 1] = layer.alphabet[s]
    for t, q in tie:
        if t >= 0:
            chars[q - 1] = layer.alphabet[t]
    for q in range(1, p):
        if chars[q - 1] is None:
            fill = worse[:1] or [t for t in same if scores[t, q - 1] < floor][:1]
            if not fill:
                return None
            chars[q - 1] = layer.alphabet[fill[0]]
    return "".join(chars)


def extract_positional(spec: ModelSpec) -> PositionalExtraction:
    """Certify and tabulate a one-layer hard next-symbol model with learned positions.

    A refusal of the analysis names where it fails; where the model itself answers two strings
    differently that end in the same symbol after the same set of symbols, it quotes them too
    (then no program over the symbols seen equals the model). A refused counting or soft head
    quotes likewise two strings with the same counts of each symbol, where it finds them.
    """
    _check_supported(spec)
    try:
        _check_hard(spec)
    except NotExtractable as refusal:
        raise _quoting(refusal, counts_witness(spec), "end in the same symbol and hold as many "
                       "of each symbol", "the symbol counts") from None
    try:
        return _extract(spec)
    except NotExtractable as refusal:
        if "the model itself" in str(refusal):
            raise
        raise _quoting(refusal, seen_set_witness(spec), "end in the same symbol after the same "
                       "set of symbols", "the symbols seen") from None


def _quoting(refusal: NotExtractable, pair, alike: str, over: str) -> NotExtractable:
    """The refusal, quoting two strings that the model answers differently where found."""
    if pair is None:
        return refusal
    return NotExtractable(f"{refusal}; and {_answers_text(*pair)}, which {alike}: no program "
                          f"over the current symbol and {over} equals it")


def seen_set_witness(spec: ModelSpec, budget: int = 20_000
                     ) -> tuple[tuple[str, frozenset], tuple[str, frozenset]] | None:
    """Two short strings the model answers differently: same last symbol, same symbols before.

    Every string up to the length that ``budget`` strings allow is read, shortest first; None
    if no pair differs there.
    """
    from satsim.engine.simulator import Simulator
    from satsim.rasp.verify import all_strings_up_to

    alphabet = tuple(t for t in spec.vocab if t != spec.bos)
    strings = [w for w in all_strings_up_to(alphabet, spec.positional.W_pos.shape[0] - 1,
                                            budget)[0] if w]
    seen: dict[tuple[str, frozenset], tuple[str, frozenset]] = {}
    for string, sets in zip(strings, Simulator(spec).next_symbols(strings)):
        key = (string[-1], frozenset(string[:-1]))
        if key in seen and seen[key][1] != sets[-1]:
            return seen[key], (string, sets[-1])
        seen.setdefault(key, (string, sets[-1]))
    return None


def counts_witness(spec: ModelSpec, pairs: int = 1_000, chunk: int = 100
                   ) -> tuple[tuple[str, frozenset], tuple[str, frozenset]] | None:
    """Two strings the model answers differently: same last symbol, as many of each symbol.

    Per length from 2 to the longest input, in turn, random counts of the symbols are laid out
    in blocks in the alphabet's order and in the reverse order, the same last symbol after
    both (``pairs`` pairs, seed 0, read ``chunk`` pairs at a time, shortest first); None if no
    pair differs.
    """
    from satsim.engine.simulator import Simulator

    alphabet = tuple(t for t in spec.vocab if t != spec.bos)
    longest = spec.positional.W_pos.shape[0] - 1
    rng = np.random.default_rng(0)
    candidates = []
    for k in range(pairs):
        length = 2 + k * (longest - 1) // pairs
        counts = rng.multinomial(length - 1, [1 / len(alphabet)] * len(alphabet))
        last = alphabet[rng.integers(len(alphabet))]
        blocks = [symbol * n for symbol, n in zip(alphabet, counts)]
        if sum(n > 0 for n in counts) > 1:
            candidates.append(("".join(blocks) + last, "".join(reversed(blocks)) + last))
    simulator = Simulator(spec)
    for start in range(0, len(candidates), chunk):
        batch = candidates[start:start + chunk]
        answers = simulator.next_symbols([w for pair in batch for w in pair])
        for (first, second), a, b in zip(batch, answers[::2], answers[1::2]):
            if a[-1] != b[-1]:
                return (first, a[-1]), (second, b[-1])
    return None


def _extract(spec: ModelSpec) -> PositionalExtraction:
    """The analysis of :func:`extract_positional`, on a supported model."""
    layer = _Layer(spec)
    S = len(layer.alphabet)
    decisions = {}
    for s in range(S):
        others = [t for t in range(S) if t != s]
        for r in range(min(len(others), layer.N - 2) + 1):
            for present in itertools.combinations(others, r):
                seen = frozenset(layer.alphabet[t] for t in present)
                decisions[(layer.alphabet[s], seen)] = _decide(layer, s, present)
    bos_row = layer.x_bos + layer.b_O + layer.out_bos.sum(axis=0)  # BOS alone attends to itself
    start_logits = layer.decide((bos_row[None], np.zeros((1, bos_row.size))))[0][0]
    if np.any(np.abs(start_logits) <= SAFETY):
        raise NotExtractable(f"after BOS alone a logit is within {SAFETY} of 0")
    start = frozenset(label for label, z in zip(spec.output.labels, start_logits) if z > 0)
    return PositionalExtraction(spec, layer.alphabet, layer.attn.n_heads, decisions, start,
                                layer.N - 1)


def _ident(text: str) -> str:
    """A program name for a symbol or label (letters, digits and underscores)."""
    return re.sub(r"\W", "", text) or "sym"


def _any(terms: list[str]) -> str:
    """A disjunction (False when empty); ``and`` binds tighter, so no term needs brackets."""
    terms = [t for t in terms if t != "False"]
    if "True" in terms:
        return "True"
    return " or ".join(terms) or "False"


def _bracketed(term: str) -> bool:
    """Whether one pair of brackets encloses the whole of ``term``."""
    depth = 0
    for at, char in enumerate(term):
        depth += {"(": 1, ")": -1}.get(char, 0)
        if depth == 0 and at < len(term) - 1:
            return False
    return term.startswith("(")


def _all(terms: list[str]) -> str:
    """A conjunction (True when empty), with brackets around disjunctions."""
    terms = [t for t in terms if t != "True"]
    if "False" in terms:
        return "False"
    if len(terms) == 1:
        return terms[0]
    return " and ".join(f"({t})" if " or " in t and not _bracketed(t) else t
                        for t in terms) or "True"


def _cubes(k: int):
    """Every conjunction of literals over k variables: per variable 1, 0 or None (absent)."""
    return itertools.product((1, 0, None), repeat=k)


def _minimal_dnf(names: list[str], truth: dict[tuple[bool, ...], bool]) -> str:
    """A short disjunction of conjunctions over ``names`` that agrees with ``truth``.

    Rows absent from ``truth`` do not matter. The prime implicants, then a greedy cover of the
    true rows, fewest literals first.
    """
    true = {row for row, value in truth.items() if value}
    false = {row for row, value in truth.items() if not value}
    if not true:
        return "False"
    if not false:
        return "True"

    def covers(cube, row) -> bool:
        return all(c is None or bool(c) == r for c, r in zip(cube, row))

    implicants = [c for c in _cubes(len(names)) if not any(covers(c, row) for row in false)]
    size = {c: sum(x is not None for x in c) for c in implicants}
    primes = [c for c in implicants
              if not any(d != c and size[d] < size[c] and all(x is None or x == y for x, y in
                                                                zip(d, c)) for d in implicants)]
    chosen, left = [], set(true)
    while left:
        best = max(primes, key=lambda c: (sum(covers(c, r) for r in left), -size[c]))
        chosen.append(best)
        left -= {r for r in left if covers(best, r)}
    return _any([_all([name if x else f"not {name}" for name, x in zip(names, cube)
                       if x is not None]) for cube in chosen])


def write_positional_program(ex: PositionalExtraction) -> str:
    """The B-RASP program: presence of key groups, ``next_<label>`` per label, and ``accept``."""
    lines: dict[str, str] = {}

    def seen(symbol: str) -> str:
        name = f"seen_{_ident(symbol)}"
        lines.setdefault(name, f'leftmost(j < i, Q("{symbol}")[j], True, default=False)')
        return name

    def per_symbol(symbol: str, label: str) -> str:
        """Whether ``label`` is predicted at a position holding ``symbol``, from what it saw."""
        others = [t for t in ex.alphabet if t != symbol]
        truth = {}
        for row in itertools.product((False, True), repeat=len(others)):
            present = frozenset(t for t, on in zip(others, row) if on)
            if (symbol, present) in ex.decisions:  # else no input this long holds them all
                truth[row] = label in ex.decisions[(symbol, present)]
        return _minimal_dnf([seen(t) for t in others], truth)

    lines["at_start"] = _all([f'not Q("{t}")' for t in ex.alphabet])  # BOS alone: n = 0
    next_names = {}
    for label in ex.spec.output.labels:
        by_rule: dict[str, list[str]] = {}  # the symbols that predict the label by each rule
        for symbol in ex.alphabet:
            by_rule.setdefault(per_symbol(symbol, label), []).append(symbol)
        if by_rule.get("True") == list(ex.alphabet) and label in ex.start:
            formula = "True"
        else:
            formula = _any([_all([_any([f'Q("{s}")' for s in symbols]), rule])
                            for rule, symbols in by_rule.items()]
                           + (["at_start"] if label in ex.start else []))
        if formula != "False":
            next_names[label] = name = label_name(label)
            lines[name] = formula
    lines["follows"] = ("rightmost(j < i, True, " + _any(
        [f'Q("{t}")[i] and {next_names[t]}[j]' for t in ex.alphabet if t in next_names])
        + ", default=" + _any([f'Q("{t}")' for t in ex.alphabet if t in ex.start]) + ")")
    lines["broken"] = "leftmost(True, not follows[j], True, default=False)"
    end = next((label for label in END_LABELS if label in ex.spec.output.labels), None)
    if end is None:
        raise SatsimError(f"the model has no end label ({', '.join(END_LABELS)}): accept is "
                          "undefined")
    lines["accept"] = f"{next_names[end]} and not broken" if end in next_names else "False"
    used = " ".join(lines.values())
    lines = {k: v for k, v in lines.items()
             if not k.startswith(("seen_", "at_start")) or re.search(rf"\b{k}\b", used)}
    header = ["# extracted by satsim extract (one layer, learned positions): equal to the model "
              f"on every input up to {ex.max_symbols} symbols",
              "# next_X: after the prefix w1..wi, the model predicts X (labels never predicted "
              "are left out)",
              f'alphabet = "{"".join(ex.alphabet)}"']
    return "\n".join(header + [f"{k} = {v}" for k, v in lines.items()]) + "\n"


def label_name(label: str) -> str:
    """The program's name for "``label`` is predicted": ``next_`` and the label's word part."""
    return f"next_{_ident(label)}"


def predicted_sets(program, labels: tuple[str, ...], string: str,
                   start: list[frozenset[str]] | None = None) -> list[frozenset[str]]:
    """The program's next-symbol sets after each prefix of ``string``, BOS alone first.

    ``start``: that first set, ``predicted_sets(program, labels, "")``, when already known.
    """
    def sets(values: dict, rows) -> list[frozenset[str]]:
        return [frozenset(lb for lb in labels
                          if label_name(lb) in values and values[label_name(lb)][i])
                for i in rows]

    first = start if start is not None else sets(run(program, ""), [0])
    return first + (sets(run(program, string), range(len(string))) if string else [])


def check_positional(spec: ModelSpec, text: str, strings: list[str]) -> list[str]:
    """The strings where the program's ``next_<label>`` and the engine's next-symbol sets differ."""
    from satsim.engine.simulator import Simulator

    program = parse_program(text, "brasp", "<extracted program>")
    labels = spec.output.labels
    start = predicted_sets(program, labels, "")
    return [string for string, sets in zip(strings, Simulator(spec).next_symbols(strings))
            if predicted_sets(program, labels, string, start) != list(sets)]
