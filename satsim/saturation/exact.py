"""The exact saturated limit lim f(x; cθ) of one string, by asymptotic expansion in c.

Every activation is carried as Σ_k c^k x_k (see :mod:`satsim.saturation.series`). Attention
keeps, degree by degree from the top, the keys whose score coefficient is maximal among those
still tied: a gap at any positive degree k saturates, since exp(c^k·gap) beats every power of c.
Keys still tied at every positive degree share the weight softmax(degree-0 scores). The values
are averaged over what is left.

The leading-order network is the first step of this: it ties keys on the top-degree scores only
and takes each stream's top-degree term. The findings list where that is not enough — a tie set
of the top-degree scores that a lower-degree term splits, a row whose top-degree term vanishes —
so that a user knows when :func:`satsim.saturation.limit` is not the limit.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from satsim.engine.kernels.second_process import wait_beside
from satsim.model.architecture import Backend, Branch, Step, position_term, run
from satsim.model.encoding import encode
from satsim.model.masks import mask_codes
from satsim.model.scaling import Rates, rated
from satsim.model.spec import LayerNormSpec, ModelSpec, OutputSpec
from satsim.reference.forward import ACTIVATION_FUNCTIONS
from satsim.saturation.kernels.expansion import PREFIX_CLASSES, expanded_attention
from satsim.saturation.reference import HeadLimit
from satsim.saturation.series import (
    NO_DEGREE,
    ORDERS,
    SPAN,
    TOL,
    Series,
    add,
    constant,
    contract,
    layer_norm,
    leading,
    relu,
    relu_like,
    truncate,
)


@dataclass(frozen=True)
class Finding:
    """One place where the leading-order network differs from the exact limit."""

    kind: str  # tie-split-below-leading-order | leading-term-vanishes | tie-unresolved |
    # undetermined
    where: str  # hook name
    position: int
    detail: str
    harmless: bool = False  # True when the leading-order output is unaffected

    def __str__(self) -> str:
        return f"{self.kind} at {self.where} position {self.position}: {self.detail}"


@dataclass(frozen=True)
class ExactLimit:
    """The exact limit of one string: every stream and the logits as expansions in c."""

    string: str
    streams: list[Series]
    heads: list[HeadLimit]
    logits: Series
    findings: list[Finding]
    readout: str = "per-position"

    def direction(self, index: int) -> np.ndarray:
        """Limit direction of every row of stream ``index``: its leading nonzero term, (T, d)."""
        return row_leading(self.streams[index])[0]

    def logit_signs(self) -> np.ndarray:
        """Sign of every logit as c → ∞, (T, n_outputs); NaN where the limit is undetermined."""
        return np.sign(leading(self.logits)[0])

    @property
    def determined(self) -> bool:
        """Whether every readout logit's sign is determined."""
        signs = self.logit_signs()
        return not np.isnan(signs[-1] if self.readout == "last" else signs).any()


def row_leading(x: Series) -> tuple[np.ndarray, np.ndarray]:
    """Per row (last axis): the coefficients at the highest degree where the row is nonzero."""
    degrees, stacked = x.stack()
    alive = (stacked != 0).any(axis=-1)
    first = np.argmax(alive, axis=0)
    rows = np.take_along_axis(stacked, first[None, ..., None], axis=0)[0]
    degree = np.where(alive.any(axis=0), np.asarray(degrees)[first], NO_DEGREE)
    return rows, degree


SCORE_CACHE = 1 << 22
"""Score coefficients (8 bytes each) a layer may keep for every pair of query and key classes."""


def _coefficients(x: Series) -> tuple[np.ndarray, np.ndarray]:
    """Coefficients from the top degree down as one contiguous array, and which are not all 0."""
    _, stacked = x.stack()
    stacked = np.ascontiguousarray(stacked, dtype=np.float64)
    return stacked, (stacked != 0).reshape(len(stacked), -1).any(axis=1)


def _row_classes(rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per head, a class number for every row and a representative row of each class.

    Rows (keys or queries) equal bit for bit in every coefficient share a class; ``rows`` is
    (K, H, T, e).
    """
    terms, heads, length, _ = rows.shape
    classes = np.zeros((heads, length), dtype=np.int64)
    reps = np.zeros((heads, length), dtype=np.int64)
    for h in range(heads):
        flat = np.ascontiguousarray(rows[:, h].transpose(1, 0, 2).reshape(length, -1))
        as_bytes = flat.view(np.dtype((np.void, flat.dtype.itemsize * flat.shape[1]))).ravel()
        _, first, inverse = np.unique(as_bytes, return_index=True, return_inverse=True)
        classes[h] = inverse.ravel()
        reps[h, : len(first)] = first
    return classes, reps


BESIDE = "saturated limit"
"""The name of the process that may compile the kernel meanwhile
(:mod:`satsim.saturation.kernels_beside`)."""


def limit_attention(q: Series, k: Series, v: Series, scale: float, masks: Sequence[str],
                    orders: int = ORDERS) -> tuple[HeadLimit, np.ndarray, Series]:
    """Limit attention of one layer, (H, T, e) series in, through the compiled kernel.

    The same limit as :mod:`satsim.saturation.reference` (limit_weights, weighted_sum: its NumPy
    statement), computed query by query: the lower score degrees only for the keys still tied.
    ``masks`` holds each head's attention mask (:mod:`satsim.model.masks`). Returns the tie
    statistics, per (head, query) whether the leading tie set's mean differs from the limit's at the
    values' top degree (NaN: unknown), and the output series.
    """
    q_terms, q_live = _coefficients(q)
    k_terms, k_live = _coefficients(k)
    v_terms, v_live = _coefficients(v)
    top = q.top + k.top
    floor = max(q.floor + k.top, k.floor + q.top)
    low = (q.top - len(q_terms) + 1) + (k.top - len(k_terms) + 1)
    if low < top - SPAN + 1:
        floor = max(floor, top - SPAN + 1)
    kept = orders if not math.isfinite(floor) else max(1, min(orders, 1 - int(floor)))
    classes, reps = _row_classes(k_terms)
    query_classes, _ = _row_classes(q_terms)
    wait_beside(BESIDE)  # where a second process compiles the kernel
    z, lead_size, size, split_at, unresolved, moved, lower_agree = expanded_attention(
        q_terms, q_live, k_terms, k_live, v_terms, v_live, classes, reps, query_classes, top,
        float(floor), low, float(scale), mask_codes(masks), kept, TOL, SCORE_CACHE)
    exact_weights = not math.isfinite(floor) and bool(lower_agree.all())
    weights_floor = -math.inf if exact_weights else -(kept - 1)
    out_floor = max(weights_floor + v.top, v.floor)
    terms = {v.top - g: z[g] for g in range(len(z)) if v.top - g >= out_floor}
    head = HeadLimit(lead_size, size, split_at, unresolved)
    return head, moved, truncate(terms, out_floor)


class _Evaluator(Backend[Series]):
    """Walks one string through a spec, expansion by expansion, collecting findings."""

    def __init__(self, spec: ModelSpec, orders: int = ORDERS) -> None:
        self.spec = spec if spec.dtype == np.float64 else spec.astype(np.float64)
        self.orders = orders
        self.findings: list[Finding] = []
        self.heads: list[HeadLimit] = []
        self.length = 0  # tokens of the string being run
        self.streams: list[Series] = []

    def note_vanishing(self, x: Series, where: str) -> None:
        """Record the rows whose top-degree term is zero (one finding per row)."""
        _, degree = row_leading(x)
        top = x.top
        positions = np.flatnonzero((degree < top) & (degree > NO_DEGREE))
        for position, lower in zip(positions.tolist(), degree[positions].tolist()):
            self.findings.append(Finding(
                "leading-term-vanishes", where, position,
                f"the degree-{top} term is zero; the direction comes from degree {lower}"))

    def embed(self, ids: np.ndarray) -> Series:
        """The embedded stream: tokens, plus positions (degree 1 from parameters, 0 if fixed)."""
        spec, pos = self.spec, self.spec.positional
        term = position_term(pos, len(ids), spec.d_model,
                             lambda name, n: constant(pos.W_pos[:n], 1),
                             lambda features, name: constant(features @ pos.W_feat, 1),
                             lambda table: constant(table, 0), model=spec.name)
        tokens = constant(spec.W_E[ids], 1)
        x = tokens if term is None else add(tokens, term)
        self.length = len(ids)
        self.streams = [x]
        return x

    def norm(self, x: Series, ln: LayerNormSpec, name: str) -> Series:
        """LayerNorm or RMSNorm of a series, noting undetermined and vanishing rows."""
        where = f"{name}.hook_normalized"
        y, lead = layer_norm(x, ln.eps, ln.centred, self.orders)
        alive = lead > NO_DEGREE
        for position in np.flatnonzero(np.isnan(y.terms[0]).all(axis=-1)):
            self.findings.append(Finding(
                "undetermined", where, int(position),
                "the LayerNorm input's leading term lies below the terms that are known, so "
                "its direction is undetermined"))
        for position in np.flatnonzero(alive & (lead < x.top)):
            self.findings.append(Finding(
                "leading-term-vanishes", where, int(position),
                f"LayerNorm input's degree-{x.top} term is constant across the row; it is "
                f"normalised at degree {int(lead[position])}"))
        if not ln.affine:
            return y
        scaled = contract(y, "...d,d->...d", ln.w)
        return scaled if ln.b is None else add(scaled, constant(ln.b, 1))

    def linear(self, x: Series, pattern: str, weight, bias, bias_shape=None) -> Series:
        out = contract(x, pattern, weight)
        if bias is None:
            return out
        return add(out, constant(bias if bias_shape is None else bias.reshape(bias_shape), 1))

    def attention(self, x: Series, branch: Branch) -> Series:
        """Attention weights as series in 1/c, noting split and unresolved ties."""
        attn, where = branch.module, branch.name
        h = attn.n_heads
        q = self.linear(x, "td,hde->hte", attn.W_Q, attn.b_Q, (h, 1, -1))
        k = self.linear(x, "td,hde->hte", attn.W_K, attn.b_K, (h, 1, -1))
        v = self.linear(x, "td,hde->hte", attn.W_V, attn.b_V, (h, 1, -1))
        head, change, z = limit_attention(q, k, v, attn.score_scale, attn.head_masks,
                                         self.orders)
        self.heads.append(head)
        values = np.nan_to_num(v.terms[v.top])
        self.report(head, change / max(float(np.abs(values).max()), 1e-300), where)
        return self.linear(z, "hte,hed->td", attn.W_O, attn.b_O)

    def report(self, head: HeadLimit, change: np.ndarray, where: str) -> None:
        """Record tie sets split below the leading order, and whether that moves the output.

        ``change`` (H, T): how far the split moves the output's top value term, relative to
        the values' scale (NaN where a value is unknown).
        """
        split = np.nonzero(head.size < head.lead_size)
        columns = (split[0], split[1], head.lead_size[split], head.split_at[split],
                   head.size[split], change[split])  # as lists: one finding per position
        for h, position, tied, degree, left, moved in zip(*(c.tolist() for c in columns)):
            harmless = moved <= TOL
            effect = ("harmless: the split-off values agree at leading order" if harmless
                      else "the leading-order output changes" if moved > TOL
                      else "unknown whether the leading-order output changes: a value is unknown")
            self.findings.append(Finding(
                "tie-split-below-leading-order", f"{where} head {h}", position,
                f"the top-degree scores tie {tied} keys; the degree-{degree} term leaves "
                f"{left} ({effect})", harmless=harmless))
        for h, position in zip(*np.nonzero(head.unresolved)):
            self.findings.append(Finding(
                "tie-unresolved", f"{where} head {h}", int(position),
                f"{int(head.size[h, position])} keys tie at every degree known; the weights "
                f"depend on terms not tracked, so this output is undetermined"))

    def feed_forward(self, x: Series, branch: Branch) -> Series:
        """The feed-forward sublayer."""
        mlp = branch.module
        pre = self.linear(x, "td,de->te", mlp.W_in, mlp.b_in)
        if mlp.activation == "relu":
            hidden = relu(pre)
        else:
            hidden = relu_like(pre, ACTIVATION_FUNCTIONS[mlp.activation])
        return self.linear(hidden, "te,ed->td", mlp.W_out, mlp.b_out)

    def add(self, terms: list[Series], step: Step) -> Series:
        """The residual sum."""
        return add(*terms)

    def leave(self, x: Series, step: Step) -> Series:
        """Keep the stream and note rows whose top term vanishes."""
        self.note_vanishing(x, step.out_name)
        self.streams.append(x)
        return x

    def unembed(self, x: Series, output: OutputSpec) -> Series:
        """The logits, noting undetermined and vanishing ones."""
        logits = self.linear(x, "td,do->to", output.W_U, output.b_U)
        self.note_vanishing_logits(logits)
        return logits

    def run(self, string: str) -> ExactLimit:
        """The exact limit of ``string``, with its findings."""
        logits = run(self.spec, self, encode(self.spec, string))
        return ExactLimit(string, self.streams, self.heads, logits, self.findings,
                          self.spec.output.readout)

    def note_vanishing_logits(self, logits: Series) -> None:
        value, degree = leading(logits)
        last = self.spec.output.readout == "last"
        rows, values = (degree[-1:], value[-1:]) if last else (degree, value)
        offset = len(degree) - len(rows)
        labels = self.spec.output.labels
        for position, label in zip(*np.nonzero(np.isnan(values))):
            self.findings.append(Finding(
                "undetermined", f"hook_logits[{labels[label]}]", int(position + offset),
                "the sign of this logit depends on terms that are not known; no answer"))
        vanished = (rows < logits.top) & (rows > NO_DEGREE) & ~np.isnan(values)
        for position, label in zip(*np.nonzero(vanished)):
            self.findings.append(Finding(
                "leading-term-vanishes", f"hook_logits[{self.spec.output.labels[label]}]",
                int(position + offset),
                f"the degree-{logits.top} logit is zero; its sign comes from degree "
                f"{int(rows[position, label])}"))


def exact_limit(spec: ModelSpec, string: str, rates: Rates | None = None,
                orders: int = ORDERS) -> ExactLimit:
    """Return the exact limit of ``string`` through ``spec`` scaled at ``rates``, with findings.

    ``orders`` terms are kept of every infinite series (LayerNorm's inverse norm, the softmax
    weights); fewer are cheaper, and whatever they cannot determine is NaN.
    """
    return _Evaluator(rated(spec, rates), orders).run(string)


def exact_limit_bytes(spec: ModelSpec, tokens: int) -> float:
    """About the peak bytes :func:`exact_limit` holds for a string of ``tokens`` tokens.

    It keeps every residual stream (one per sublayer, and the embedding) as a series of
    (tokens, d_model) terms, a layer's score cache of up to SCORE_CACHE coefficients, and a
    head's tie filters kept per query class (:data:`PREFIX_CLASSES` lists per positive score
    degree, of a token each; SPAN + 1 degrees counted, more than any model here reaches).
    Measured at up to 420 bytes per token, model dimension and stream on trained models
    (tracemalloc, float64, 200 to 3,200 tokens, d_model 8 to 64) and up to 525 on the compiled
    example programs, whose series run to more degrees (peak RSS, 10⁵ tokens, d_model 9 to 16):
    560 here, plus the cache, the filters and 16 MB.
    """
    streams = 1 + len(spec.sublayers())
    filters = 8.0 * PREFIX_CLASSES * (SPAN + 1) * tokens
    return 8.0 * SCORE_CACHE + filters + 16e6 + 560.0 * spec.d_model * streams * tokens
