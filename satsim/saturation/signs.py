"""Which decisions the saturated model makes: the sign of every logit as c → ∞, right or NaN.

The leading-order network (:func:`satsim.saturation.limit`) is the limit wherever nothing it
dropped can matter (docs/saturation.md gives the argument). It runs in the compiled engine, and
the same run checks, per string, the three places where a dropped lower-order term decides:

- a LayerNorm input row whose top-degree part is constant (it centres to zero): the direction
  comes from a lower degree;
- a readout logit that is zero at the top degree: its sign comes from a lower degree;
- a tie set of size > 1 whose keys carry different values, so that a lower-order score term
  that splits it or weights its keys unequally moves the output. Where the tied values agree
  (to rounding: within VANISHING of the head's largest value), every weighting of them gives
  the same mean; a head whose keys are all one row (W_K = 0) or whose queries are zero
  (W_Q = 0, no b_Q) never splits.

Strings flagged by any check are answered by the exact expansion
(:func:`satsim.saturation.exact_limit`), which returns NaN where even it cannot decide.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from satsim.engine.batch import forward_batch
from satsim.errors import SatsimError
from satsim.model.architecture import Backend, Branch, counting_heads
from satsim.model.architecture import run as run_model
from satsim.model.encoding import encode_batch, positional_vectors
from satsim.model.masks import mask_codes
from satsim.model.readout import input_rows, next_symbol_sets
from satsim.model.scaling import Rates
from satsim.model.settings import AttentionSettings, tie_tolerance
from satsim.model.spec import LayerNormSpec, ModelSpec, OutputSpec
from satsim.saturation.exact import ExactLimit, exact_limit
from satsim.saturation.kernels.tie_values import tie_value_spread
from satsim.saturation.limit import LeadingOrder, leading_order
from satsim.saturation.series import ORDERS, Series, leading, snap

VANISHING = 1e-9
"""Relative size below which a float64 leading-order quantity counts as zero at its degree."""

BATCH_TOKENS = 1 << 16
"""Padded tokens per batch of the leading-order run."""
PADDING = 1.25
"""A batch's longest string is at most this times its shortest (plus 8 tokens): little padding."""


@dataclass(frozen=True)
class LimitSigns:
    """Per string: the sign of each readout logit as c → ∞ (NaN: undetermined), and how."""

    signs: list[np.ndarray]  # shaped like the simulator's logits of that string
    exact: np.ndarray  # bool per string: answered by the exact expansion
    reasons: list[str]  # per string: why the exact expansion was needed ('' if it was not)

    @property
    def undetermined(self) -> np.ndarray:
        """Bool per string: some readout sign is undetermined."""
        return np.array([bool(np.isnan(s).any()) for s in self.signs], dtype=bool)

    def summary(self) -> str:
        """One line: how many strings needed the exact expansion, how many stay undetermined."""
        n = len(self.signs)
        return (f"{int(self.exact.sum())} of {n} strings needed the exact expansion; "
                f"{int(self.undetermined.sum())} undetermined")


def exempt_heads(spec: ModelSpec) -> list[np.ndarray]:
    """Per attention layer, (H,) bool: heads that score every key alike at every degree.

    These are the engine's counting heads (:func:`satsim.model.architecture.counting_heads`),
    read off the source spec, whose biases the leading-order network may have dropped.
    """
    return [counting_heads(block.attn) for block in spec.blocks if block.attn is not None]


def _vanishing_rows(x: np.ndarray, bound: float, centre: bool = True) -> np.ndarray:
    """Per row of a (B, T, d) norm input: whether it (centred, for LayerNorm) is rounding-level.

    Rounding-level means small beside the row itself, beside the string's largest row, or
    beside ``bound``, an a-priori bound on any row at that point of the network.
    """
    centred = np.linalg.norm(x - x.mean(axis=-1, keepdims=True) if centre else x, axis=-1)
    norms = np.linalg.norm(x, axis=-1)
    scale = np.maximum(np.maximum(norms, norms.max(axis=-1, keepdims=True)), bound)
    return centred <= VANISHING * scale


def _norm(array: np.ndarray | None) -> float:
    """The spectral norm of a matrix, the Euclidean norm of a vector (0 for None)."""
    if array is None:
        return 0.0
    return float(np.linalg.norm(array, 2 if array.ndim == 2 else None))


class _Bounds(Backend[float]):
    """The walk on a-priori bounds of row norms; keeps each norm's input bound and the norm."""

    def __init__(self, spec: ModelSpec) -> None:
        self.spec = spec
        self.d_model = spec.d_model
        self.norms: list[tuple[float, LayerNormSpec]] = []

    def embed(self, ids: np.ndarray) -> float:
        """A bound on the input rows of any string of ``len(ids)`` tokens: token plus position."""
        bound = float(np.linalg.norm(self.spec.W_E, axis=1).max())
        positions = positional_vectors(self.spec, len(ids))
        if positions is not None:
            bound += float(np.linalg.norm(positions, axis=1).max())
        return bound

    def norm(self, x: float, ln: LayerNormSpec, name: str) -> float:
        """A normalised row has norm √d before γ (and β)."""
        self.norms.append((x, ln))
        scale = 1.0 if ln.w is None else float(np.abs(ln.w).max())
        return float(np.sqrt(self.d_model)) * scale + _norm(ln.b)

    def attention(self, x: float, branch: Branch) -> float:
        """A head's output is a mean of values, so bounded like one value row."""
        sub = branch.module
        return sum(_norm(sub.W_O[h]) * (_norm(sub.W_V[h]) * x + _norm(
            None if sub.b_V is None else sub.b_V[h])) for h in range(sub.n_heads)) + _norm(sub.b_O)

    def feed_forward(self, x: float, branch: Branch) -> float:
        """Every activation satisfies |act(z)| <= |z|."""
        sub = branch.module
        return _norm(sub.W_out) * (_norm(sub.W_in) * x + _norm(sub.b_in)) + _norm(sub.b_out)

    def unembed(self, x: float, output: OutputSpec) -> np.ndarray:
        """A bound per logit."""
        return np.linalg.norm(output.W_U, axis=0) * x + (
            0 if output.b_U is None else np.abs(output.b_U))


def row_bounds(spec: ModelSpec, length: int) -> tuple[list[tuple[float, LayerNormSpec]],
                                                       np.ndarray]:
    """A-priori bounds on row norms of a (leading-order) network on strings of ``length`` tokens.

    Returns (bound, norm) for every norm input (in order) and a bound on each readout logit. A
    computed value that should be zero is rounding: cancellations leave about 1e-16 of the
    bound, never 1e-9 of it.
    """
    bounds = _Bounds(spec)
    logits = run_model(spec, bounds, np.zeros(length, dtype=np.int64))
    return bounds.norms, logits


class _Checker:
    """Runs batches through the leading-order network and flags the strings it cannot answer."""

    def __init__(self, network: LeadingOrder) -> None:
        self.spec = network.spec
        self.settings = AttentionSettings("saturated")
        self.tolerance = tie_tolerance(np.float64)
        self.exempt = exempt_heads(network.source)
        attention = [b.attn for b in network.source.blocks if b.attn is not None]
        self.mask_codes = [mask_codes(a.head_masks) for a in attention]
        self.scales = [a.score_scale for a in attention]

    def run(self, ids: list[np.ndarray]) -> tuple[list[np.ndarray], list[str], np.ndarray]:
        """Leading-order readout logits, why each string's cannot be trusted, the logit bounds.

        The logits are the top-degree coefficients; the bounds are per output.
        """
        norm_inputs: list[np.ndarray] = []
        run = forward_batch(self.spec, ids, self.settings, trace=True, norm_inputs=norm_inputs)
        lengths = np.array([len(seq) for seq in ids])
        valid = np.arange(run.logits.shape[1])[None, :] < lengths[:, None]
        norm_bounds, logit_bounds = row_bounds(self.spec, int(lengths.max()))
        reasons = np.full(len(ids), "", dtype=object)
        if self.spec.output.readout == "last":
            readout = run.logits[np.arange(len(ids)), lengths - 1]
            logits = list(readout)
            vanished = (np.abs(readout) <= VANISHING * logit_bounds).any(axis=-1)
        else:
            logits = [run.logits[row, :n] for row, n in enumerate(lengths)]
            vanished = ((np.abs(run.logits) <= VANISHING * logit_bounds) & valid[..., None]).any(
                axis=(1, 2))
        reasons[vanished] = "a readout logit is zero at the top degree"
        for x, (bound, ln) in zip(norm_inputs, norm_bounds):
            flat = _vanishing_rows(x, bound, ln.centred) & valid
            reasons[(reasons == "") & flat.any(axis=1)] = (
                "a norm input vanishes (LayerNorm: centres to zero) at the top degree")
        atol, rtol = self.tolerance
        for index, layer in enumerate(run.layers):
            spread, magnitude = tie_value_spread(
                layer.queries, layer.keys, layer.values, lengths, layer.tie_size,
                ~self.exempt[index], self.mask_codes[index], self.scales[index], atol, rtol,
                VANISHING)
            differ = (spread > VANISHING * magnitude).any(axis=1)
            reasons[differ & (reasons == "")] = (
                f"a tie set at attention layer {index} holds keys whose values differ")
        return logits, list(reasons), logit_bounds


def batches(ids: Sequence[np.ndarray]) -> list[list[int]]:
    """Indices of ``ids`` in batches of similar lengths.

    A batch holds at most BATCH_TOKENS padded tokens, and its longest string is at most PADDING
    times its shortest (plus 8 tokens).
    """
    order = sorted(range(len(ids)), key=lambda i: len(ids[i]))
    out, start = [], 0
    while start < len(order):
        stop = start + 1
        shortest = len(ids[order[start]])
        while (stop < len(order) and (stop - start + 1) * len(ids[order[stop]]) <= BATCH_TOKENS
               and len(ids[order[stop]]) <= PADDING * shortest + 8):
            stop += 1
        out.append(order[start:stop])
        start = stop
    return out


def first_orders(network: LeadingOrder) -> int:
    """How many terms of each infinite series the exact expansion tries first.

    Without norms every activation is a polynomial in c, kept whole, and the only infinite
    series are the softmax weights in 1/c, whose terms below degree 0 matter only where a later
    tie or sign needs the outputs' lower degrees: one term first. With norms, the softmax
    weights need the scores down to degree 0, i.e. ``top`` degrees below their top degree, and
    the queries and keys as far below theirs: about 2·top + 1 terms of the norms' series. Fewer
    terms are cheaper; where they leave a sign undetermined, :func:`limit_signs` tries again
    with every term (``ORDERS``).
    """
    graph = network.graph
    if not any(graph.nodes[node]["op"] in ("layernorm", "rmsnorm") for node in graph):
        return 1
    tops = [graph.nodes[node]["degree"] for node in graph
            if node.endswith(".hook_attn_scores")]
    return min(ORDERS, 2 * max(tops, default=0) + 1)


def _exact(network: LeadingOrder, string: str, orders: int,
           unsettled: Callable[[ExactLimit], bool]) -> ExactLimit:
    """The exact limit with ``orders`` terms first, and with every term where that is unsettled."""
    found = exact_limit(network.source, string, orders=orders)
    if orders < ORDERS and unsettled(found):
        found = exact_limit(network.source, string)
    return found


def limit_signs(spec: ModelSpec, strings: Sequence[str], rates: Rates | None = None
                ) -> LimitSigns:
    """Sign of every readout logit of each string as c → ∞ (NaN where undetermined).

    Shapes follow the simulator's logits: (n_outputs,) for a last-position readout,
    (n_tokens, n_outputs) per position. Strings that the leading-order network cannot answer
    are answered by the exact expansion, and :attr:`LimitSigns.exact` says which. Signs are
    defined for every task; a categorical answer (the largest logit) is
    :func:`limit_argmax`'s.
    """
    network = leading_order(spec.astype(np.float64), rates)
    ids = encode_batch(network.spec, strings)
    checker = _Checker(network)
    signs: list[np.ndarray | None] = [None] * len(ids)
    reasons = [""] * len(ids)
    for batch in batches(ids):
        got, why, _ = checker.run([ids[i] for i in batch])
        for i, logits, reason in zip(batch, got, why):
            signs[i], reasons[i] = np.sign(logits), reason
    last = network.spec.output.readout == "last"
    orders = first_orders(network)
    for i, reason in enumerate(reasons):
        if reason:
            exact = _exact(network, strings[i], orders,
                           lambda found: np.isnan(found.logit_signs()).any()).logit_signs()
            signs[i] = exact[-1] if last else exact
    return LimitSigns(signs, np.array([bool(r) for r in reasons], dtype=bool), reasons)


def _lexicographic_top(stacked: np.ndarray) -> np.ndarray:
    """Per row, the label whose coefficients (degrees from the top down) are largest."""
    candidates = np.ones(stacked.shape[1:], dtype=bool)
    for coefficients in stacked:
        values = np.where(candidates, np.nan_to_num(coefficients, nan=-np.inf), -np.inf)
        candidates &= values == values.max(axis=-1, keepdims=True)
    return np.argmax(candidates, axis=-1)


def _exact_argmax(logits: Series) -> np.ndarray:
    """Per row, the index of the largest logit as c → ∞ from its expansion, or -1.

    The candidate is the lexicographically largest coefficient vector; it is the answer where its
    difference to every other logit has a known positive leading term (rounding noise of each
    degree's difference snapped to zero), and -1 where a difference is zero or unknown (a tie in
    the limit, or a term below what the expansion knows).
    """
    degrees, stacked = logits.stack()
    top = _lexicographic_top(stacked)
    rows = np.arange(top.size).reshape(top.shape)
    terms = {}
    for degree, coefficients in zip(degrees, stacked):
        best = coefficients[rows, top][..., None]
        terms[degree] = snap(best - coefficients, np.maximum(np.abs(best), np.abs(coefficients)))
    sign, _ = leading(Series(terms, logits.floor))
    others = np.ones(sign.shape, dtype=bool)
    np.put_along_axis(others, top[..., None], False, axis=-1)
    beaten = np.where(others, sign > 0, True).all(axis=-1)
    return np.where(beaten, top, -1)


def limit_argmax(spec: ModelSpec, inputs: Sequence, rates: Rates | None = None
                 ) -> list[list[str | None]]:
    """A categorical model's answer as c → ∞: per input token, the label of the largest logit.

    Exact: the label is the limit's argmax where the leading-order network's logits (unflagged
    by the checks of :func:`limit_signs`) have a top label ahead of the second by more than
    rounding at the top degree, else where the exact expansion puts one label ahead of every
    other at some degree; None where the top two tie in the limit or the limit cannot decide.
    Answers cover the input tokens (BOS's row dropped), as :meth:`Simulator.outputs` gives them.
    """
    if spec.output.task != "categorical" or spec.output.readout != "per-position":
        raise SatsimError(f"the limit's argmax needs a categorical per-position model; model "
                          f"{spec.name!r} has {spec.output.readout} {spec.output.task} outputs")
    network = leading_order(spec.astype(np.float64), rates)
    ids = encode_batch(network.spec, inputs)
    checker = _Checker(network)
    labels = spec.output.labels
    top: list[np.ndarray | None] = [None] * len(ids)
    for batch in batches(ids):
        got, why, bounds = checker.run([ids[i] for i in batch])
        for i, logits, reason in zip(batch, got, why):
            if reason:
                continue
            order = np.argsort(logits, axis=-1)
            first, second = order[:, -1], order[:, -2]
            rows = np.arange(len(logits))
            gap = logits[rows, first] - logits[rows, second]
            if (gap > VANISHING * (bounds[first] + bounds[second])).all():
                top[i] = first
    orders = first_orders(network)
    answers = []
    for i, found in enumerate(top):
        if found is None:
            found = _exact_argmax(_exact(network, inputs[i], orders,
                                         lambda e: (_exact_argmax(e.logits) < 0).any()).logits)
        rows = input_rows(spec, found[:, None])[:, 0]
        answers.append([None if k < 0 else labels[k] for k in rows])
    return answers


class LimitPredictor:
    """Answers as the simulator gives them (accept, or next-symbol sets) from limit_signs.

    An undetermined string's answer is None, which no oracle label matches. The counts say how
    many strings needed the exact expansion and how many stayed undetermined.
    """

    def __init__(self, spec: ModelSpec, rates: Rates | None = None) -> None:
        spec.require_language_task("answers from the limit's signs")
        self.spec = spec
        self.rates = rates
        self.strings = 0
        self.exact = 0
        self.undetermined = 0

    def __call__(self, strings: Sequence[str]) -> list:
        """The saturated limit's answer for each string (None where undetermined)."""
        result = limit_signs(self.spec, list(strings), self.rates)
        self.strings += len(strings)
        self.exact += int(result.exact.sum())
        self.undetermined += int(result.undetermined.sum())
        labels = np.array(self.spec.output.labels)
        answers: list = []
        for string, signs in zip(strings, result.signs):
            if self.spec.output.task == "recognition":
                answers.append(None if np.isnan(signs).any() else bool(signs[0] > 0))
            else:
                undetermined = np.isnan(signs[: len(string) + 1]).any()
                answers.append(None if undetermined else next_symbol_sets(labels, signs, string))
        return answers

    def note(self) -> str:
        """How the answers were reached, for a report line."""
        return (f"saturated limit via limit_signs: {self.exact} of {self.strings} strings needed "
                f"the exact expansion, {self.undetermined} undetermined (counted wrong)")


def limit_tie_sizes(spec: ModelSpec, strings: Sequence[str], rates: Rates | None = None
                    ) -> list[list[tuple[np.ndarray, tuple[str, ...]] | None]]:
    """Per string and block: the (H, T) tie sizes of the limit's attention and its head masks.

    The leading-order run's sizes are the limit's where every tie set of a head that can split
    has one key (lower-order terms only ever split a tie set); other strings take the sizes of
    the exact expansion (keys tied at every positive degree), first with the terms that
    :func:`first_orders` gives, and with every term where those leave a tie unresolved.
    """
    network = leading_order(spec.astype(np.float64), rates)
    exempt = exempt_heads(network.source)
    masks = [b.attn.head_masks for b in spec.blocks if b.attn is not None]
    orders = first_orders(network)
    ids = encode_batch(network.spec, strings)
    sizes: list[list[np.ndarray]] = [[] for _ in strings]
    for batch in batches(ids):
        run = forward_batch(network.spec, [ids[i] for i in batch],
                            AttentionSettings("saturated"), trace=True)
        for row, i in enumerate(batch):
            n = len(ids[i])
            leading = [layer.tie_size[row, :, :n] for layer in run.layers]
            if not any((size[~free] > 1).any() for size, free in zip(leading, exempt)):
                sizes[i] = leading
                continue
            heads = _exact(network, strings[i], orders,
                           lambda found: any(h.unresolved.any() for h in found.heads)).heads
            sizes[i] = [h.size for h in heads]
    out = []
    for per_layer in sizes:
        found = iter(zip(per_layer, masks))
        out.append([None if block.attn is None else next(found) for block in spec.blocks])
    return out
