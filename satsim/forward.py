"""The compiled forward pass: padded batches layer by layer, or whole strings in one kernel.

Same meaning as :func:`satsim.reference.forward.forward`, but batched over strings of
different lengths (padding is masked out of attention) and fast. :func:`forward_batch` runs a
padded batch one layer at a time and can keep traces; :func:`forward_fused` runs each string
through the whole model in :mod:`satsim.kernels.fused` and returns the same logits bit for bit.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np

from satsim.attention import _KIND_CODES, attention
from satsim.encoding import embed, positional_vectors
from satsim.kernels import classes
from satsim.kernels import fused as fk
from satsim.kernels.attention import SAME_SCORES, UNKNOWN
from satsim.kernels.layers import run_affine as affine
from satsim.kernels.layers import run_layer_norm as layer_norm
from satsim.reference.attention import default_scale
from satsim.reference.forward import AttentionSettings, sublayer
from satsim.spec import AttentionSpec, FeedForwardSpec, LayerNormSpec, ModelSpec
from satsim.tolerance import tie_tolerance


@dataclass(frozen=True)
class LayerTrace:
    """What one attention layer computed for a batch: per-head queries, keys, outputs, ties."""

    queries: np.ndarray  # (B, H, T, d_head)
    keys: np.ndarray  # (B, H, T, d_head)
    head_outputs: np.ndarray  # (B, H, T, d_v)
    tie_size: np.ndarray  # (B, H, T) int64
    tie_gap: np.ndarray  # (B, H, T) float64


@dataclass(frozen=True)
class BatchRun:
    """Logits of every position, and on request the residual stream and the attention traces."""

    logits: np.ndarray  # (B, T, n_outputs)
    residuals: list[np.ndarray] | None
    layers: list[LayerTrace] | None


def _bias(vector: np.ndarray | None, size: int, dtype: np.dtype) -> np.ndarray:
    return np.zeros(size, dtype=dtype) if vector is None else vector


def _rows(x: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(x.reshape(-1, x.shape[-1]))


def apply_layer_norm(x: np.ndarray, ln: LayerNormSpec) -> np.ndarray:
    """LayerNorm of (B, T, d) through the Numba kernel."""
    d = x.shape[-1]
    w = ln.w if ln.affine else np.ones(d, dtype=x.dtype)
    b = ln.b if ln.affine else np.zeros(d, dtype=x.dtype)
    return layer_norm(_rows(x), w, b, ln.eps, ln.affine).reshape(x.shape)


def apply_feed_forward(x: np.ndarray, mlp: FeedForwardSpec) -> np.ndarray:
    """ReLU feed-forward of (B, T, d) through the Numba kernels."""
    d_mlp = mlp.W_in.shape[1]
    hidden = affine(_rows(x), mlp.W_in, _bias(mlp.b_in, d_mlp, x.dtype), True)
    out = affine(hidden, mlp.W_out, _bias(mlp.b_out, x.shape[-1], x.dtype), False)
    return out.reshape(x.shape)


def _project(x: np.ndarray, weights: list[np.ndarray], biases: list[np.ndarray | None]
             ) -> list[np.ndarray]:
    """Per-head projections of (B, T, d) by [H, d, e] weights → (B, H, T, e) each, in one pass.

    Every output column is summed on its own, so the result does not depend on which
    projections share the pass over x.
    """
    batch, length, _ = x.shape
    flat, flat_bias, widths = [], [], []
    for weight, bias in zip(weights, biases):
        heads, d, e = weight.shape
        flat.append(weight.transpose(1, 0, 2).reshape(d, heads * e))
        flat_bias.append(_bias(None if bias is None else bias.reshape(-1), heads * e, x.dtype))
        widths.append((heads, e))
    out = affine(_rows(x), np.ascontiguousarray(np.concatenate(flat, axis=1)),
                 np.concatenate(flat_bias), False)
    results, start = [], 0
    for heads, e in widths:
        part = out[:, start : start + heads * e].reshape(batch, length, heads, e)
        results.append(np.ascontiguousarray(part.transpose(0, 2, 1, 3)))
        start += heads * e
    return results


def counting_heads(attn: AttentionSpec) -> np.ndarray:
    """Heads whose scores are constant for every query by construction, from the weights, (H,).

    A zero key map makes every key the row b_K; a zero query map and bias make every query zero.
    Either way every allowed key ties, and the head is a (prefix) mean of its values.
    """
    constant_keys = ~attn.W_K.reshape(attn.W_K.shape[0], -1).any(axis=1)
    zero_queries = ~attn.W_Q.reshape(attn.W_Q.shape[0], -1).any(axis=1)
    if attn.b_Q is not None:
        zero_queries &= ~attn.b_Q.reshape(attn.b_Q.shape[0], -1).any(axis=1)
    return constant_keys | zero_queries


def apply_attention(
    x: np.ndarray, mask: np.ndarray, attn: AttentionSpec, settings: AttentionSettings
) -> tuple[np.ndarray, LayerTrace]:
    """Multi-head self-attention of (B, T, d) with padding ``mask`` (B, T)."""
    q, k, v = _project(x, [attn.W_Q, attn.W_K, attn.W_V], [attn.b_Q, attn.b_K, attn.b_V])
    head_mask = mask[:, None, :]
    result = attention(
        q, k, v, kind=settings.kind, beta=settings.beta, causal=attn.causal, mask=head_mask,
        query_mask=head_mask, atol=settings.atol, rtol=settings.rtol,
        same_scores=counting_heads(attn),
    )
    batch, heads, length, d_v = result.output.shape
    stacked = np.ascontiguousarray(result.output.transpose(0, 2, 1, 3).reshape(-1, heads * d_v))
    w_out = np.ascontiguousarray(attn.W_O.reshape(heads * d_v, -1))
    out = affine(stacked, w_out, _bias(attn.b_O, x.shape[-1], x.dtype), False)
    trace = LayerTrace(q, k, result.output, result.tie_size, result.tie_gap)
    return out.reshape(x.shape), trace


def _sublayer(x: np.ndarray, fn, ln: LayerNormSpec | None, spec: ModelSpec,
              keep: bool, norm_inputs: list[np.ndarray] | None = None) -> np.ndarray:
    normalize = apply_layer_norm
    if norm_inputs is not None:
        def normalize(h: np.ndarray, norm: LayerNormSpec) -> np.ndarray:
            norm_inputs.append(h)
            return apply_layer_norm(h, norm)
    return sublayer(x, fn, ln, spec, keep, normalize=normalize)


def embed_batch(spec: ModelSpec, ids: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """Return padded input vectors (B, T, d) and the padding mask (B, T) for token id arrays."""
    length = max(len(seq) for seq in ids)
    if spec.positional.kind not in ("none", "learned", "sinusoidal"):
        # Position features may depend on the string's length: embed each string alone.
        x = np.zeros((len(ids), length, spec.d_model), dtype=spec.dtype)
        mask = np.zeros((len(ids), length), dtype=bool)
        for row, seq in enumerate(ids):
            x[row, : len(seq)] = embed(spec, seq)
            mask[row, : len(seq)] = True
        return x, mask
    # Positional rows do not depend on the string's length: one gather, one add for the batch.
    lengths = np.array([len(seq) for seq in ids])
    mask = np.arange(length) < lengths[:, None]
    padded = np.zeros((len(ids), length), dtype=np.int64)
    padded[mask] = np.concatenate(ids)
    x = spec.W_E[padded]
    extra = positional_vectors(spec, int(lengths.max()))
    if extra is not None:
        x += extra
    if not mask.all():
        x[~mask] = 0
    return x, mask


def forward_batch(
    spec: ModelSpec, ids: list[np.ndarray], settings: AttentionSettings, trace: bool = False,
    norm_inputs: list[np.ndarray] | None = None,
) -> BatchRun:
    """Run a batch of token id arrays through the compiled kernels.

    ``norm_inputs``, when given, receives the input (B, T, d) of every LayerNorm in order.
    """
    x, mask = embed_batch(spec, ids)
    residuals = [x] if trace else None
    layers: list[LayerTrace] | None = [] if trace else None
    for layer, block in enumerate(spec.blocks):
        if block.attn is not None:
            traces: list[LayerTrace] = []

            def run_attention(h, a=block.attn, sink=traces):
                out, layer_trace = apply_attention(h, mask, a, settings)
                sink.append(layer_trace)
                return out

            x = _sublayer(x, run_attention, block.ln1, spec, spec.keeps_residual(layer, "attn"),
                          norm_inputs)
            if trace:
                residuals.append(x)
                layers.append(traces[0])
        if block.mlp is not None:
            x = _sublayer(x, lambda h, m=block.mlp: apply_feed_forward(h, m), block.ln2, spec,
                          spec.keeps_residual(layer, "mlp"), norm_inputs)
            if trace:
                residuals.append(x)
    if spec.ln_final is not None:
        if norm_inputs is not None:
            norm_inputs.append(x)
        x = apply_layer_norm(x, spec.ln_final)
    out = spec.output
    logits = affine(_rows(x), out.W_U, _bias(out.b_U, len(out.labels), x.dtype), False)
    return BatchRun(logits.reshape(x.shape[0], x.shape[1], -1), residuals, layers)


FUSED_THREAD_TOKENS = 1 << 14
"""Tokens below which :func:`forward_fused` runs in the calling thread."""
FUSED_GENERAL_LIMIT = 4096
"""Strings longer than this with a head on the general O(T²) path are left to the
layer-by-layer path (hard kinds, or several threads), whose attention scores by BLAS tiles and
spreads one string over the threads."""
FUSED_POSITION_ROWS = 1 << 18
"""Rows of position-feature vectors one fused call may hold: strings of many distinct lengths
(a test set of 10⁴ lengths up to 10⁴ would need 5·10⁷ rows, 17 GB at d = 44 in float64) run
in groups of this budget."""


@dataclass(frozen=True)
class FusedModel:
    """A spec flattened for :func:`satsim.kernels.fused.forward_strings`: parameters, program."""

    spec: ModelSpec
    W_E: np.ndarray
    params: np.ndarray
    reals: np.ndarray
    program: np.ndarray
    known: np.ndarray
    dims: np.ndarray


def fuse(spec: ModelSpec) -> FusedModel | None:
    """Flatten ``spec`` for the fused kernel, or None if it needs the layer-by-layer path."""
    dtype = spec.dtype
    d = spec.d_model
    chunks: list[np.ndarray] = []
    size = 0
    reals: list[float] = []

    def put(array: np.ndarray | None, length: int | None = None) -> int:
        nonlocal size
        array = np.zeros(length, dtype=dtype) if array is None else np.asarray(array, dtype=dtype)
        offset = size
        chunks.append(array.reshape(-1))
        size += array.size
        return offset

    def put_real(value: float) -> int:
        reals.append(float(value))
        return len(reals) - 1

    def put_norm(row: np.ndarray, ln: LayerNormSpec | None) -> None:
        if ln is None:
            row[fk.LN_W : fk.LN_EPS + 1] = (0, 0, 0, -1)
            return
        w = ln.w if ln.affine else np.ones(d, dtype=dtype)
        b = ln.b if ln.affine else np.zeros(d, dtype=dtype)
        row[fk.LN_W : fk.LN_EPS + 1] = (put(w), put(b), int(ln.affine), put_real(ln.eps))

    rows: list[np.ndarray] = []
    known: list[int] = []
    widest = {"cols": 0, "dh": 0, "dv": 0, "stack": 0, "mlp": 0}
    for layer, block in enumerate(spec.blocks):
        for kind, ln in (("attn", block.ln1), ("mlp", block.ln2)):
            sub = getattr(block, kind)
            if sub is None:
                continue
            row = np.zeros(fk.PROGRAM_WIDTH, dtype=np.int64)
            row[fk.KEEP] = int(spec.keeps_residual(layer, kind))
            put_norm(row, ln)
            if kind == "attn":
                heads, _, d_head = sub.W_Q.shape
                d_v = sub.W_V.shape[2]
                if d_head == 0:
                    return None  # attention refuses empty keys: keep its error
                flat = [w.transpose(1, 0, 2).reshape(d, -1) for w in (sub.W_Q, sub.W_K, sub.W_V)]
                biases = [None if b is None else b.reshape(-1) for b in (sub.b_Q, sub.b_K, sub.b_V)]
                projection = np.concatenate(flat, axis=1)
                bias = np.concatenate([_bias(b, f.shape[1], dtype) for b, f in zip(biases, flat)])
                n_cols = projection.shape[1]
                row[fk.KIND] = fk.ATTENTION
                row[fk.ATTN_H], row[fk.ATTN_DH], row[fk.ATTN_DV] = heads, d_head, d_v
                row[fk.ATTN_CAUSAL] = int(sub.causal)
                row[fk.ATTN_PROJ_W], row[fk.ATTN_PROJ_B] = put(projection), put(bias)
                row[fk.ATTN_COLS] = n_cols
                row[fk.ATTN_W_O] = put(sub.W_O.reshape(heads * d_v, d))
                row[fk.ATTN_B_O] = put(sub.b_O, d)
                row[fk.ATTN_KNOWN] = len(known)
                row[fk.ATTN_SCALE] = put_real(default_scale(d_head))
                known.extend(SAME_SCORES if c else UNKNOWN for c in counting_heads(sub))
                widest["cols"] = max(widest["cols"], n_cols)
                widest["dh"] = max(widest["dh"], d_head)
                widest["dv"] = max(widest["dv"], d_v)
                widest["stack"] = max(widest["stack"], heads * d_v)
            else:
                d_mlp = sub.W_in.shape[1]
                row[fk.KIND] = fk.FEED_FORWARD
                row[fk.MLP_D] = d_mlp
                row[fk.MLP_W_IN], row[fk.MLP_B_IN] = put(sub.W_in), put(sub.b_in, d_mlp)
                row[fk.MLP_W_OUT], row[fk.MLP_B_OUT] = put(sub.W_out), put(sub.b_out, d)
                widest["mlp"] = max(widest["mlp"], d_mlp)
            rows.append(row)
    out = spec.output
    dims = np.zeros(fk.DIMS_WIDTH, dtype=np.int64)
    dims[fk.D_MODEL], dims[fk.N_OUT] = d, len(out.labels)
    dims[fk.MAX_COLS], dims[fk.MAX_DH], dims[fk.MAX_DV] = widest["cols"], widest["dh"], widest["dv"]
    dims[fk.MAX_STACK], dims[fk.MAX_MLP] = widest["stack"], widest["mlp"]
    dims[fk.READ_LAST] = int(out.readout == "last")
    dims[fk.NORM] = {"none": fk.NORM_NONE, "pre": fk.NORM_PRE, "post": fk.NORM_POST}[spec.norm]
    final = np.zeros(fk.PROGRAM_WIDTH, dtype=np.int64)
    put_norm(final, spec.ln_final)
    dims[fk.FINAL_W : fk.FINAL_EPS + 1] = final[fk.LN_W : fk.LN_EPS + 1]
    dims[fk.W_U], dims[fk.B_U] = put(out.W_U), put(out.b_U, len(out.labels))
    program = np.stack(rows) if rows else np.zeros((0, fk.PROGRAM_WIDTH), dtype=np.int64)
    return FusedModel(
        spec=spec, W_E=np.array(spec.W_E), params=np.concatenate(chunks),
        reals=np.array(reals + [0.0]), program=program, known=np.array(known + [0], np.int64),
        dims=dims,
    )


def positional_rows(spec: ModelSpec, lengths: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The positional table and each string's first row in it, for strings of these lengths.

    Tables that do not depend on the length come once, for the longest string; position
    features do, so each distinct length gets its own rows.
    """
    n = len(lengths)
    if spec.positional.kind == "none" or n == 0:
        return np.zeros((0, spec.d_model), dtype=spec.dtype), np.zeros(n, dtype=np.int64)
    if spec.positional.kind != "features":
        table = np.ascontiguousarray(positional_vectors(spec, int(lengths.max())), spec.dtype)
        return table, np.zeros(n, dtype=np.int64)
    distinct, inverse = np.unique(lengths, return_inverse=True)
    first_rows = np.concatenate([[0], np.cumsum(distinct)[:-1]]).astype(np.int64)
    table = np.concatenate([positional_vectors(spec, int(length)) for length in distinct])
    return np.ascontiguousarray(table, spec.dtype), first_rows[inverse]


def _position_groups(spec: ModelSpec, lengths: np.ndarray,
                     order: np.ndarray) -> list[np.ndarray]:
    """Split the length-sorted ``order`` so each group's position-feature rows fit the budget."""
    if spec.positional.kind != "features":
        return [order]
    groups, start, rows, previous = [], 0, 0, -1
    for index, string in enumerate(order.tolist()):
        length = int(lengths[string])
        if length != previous:
            if rows + length > FUSED_POSITION_ROWS and index > start:
                groups.append(order[start:index])
                start, rows = index, 0
            rows += length
            previous = length
    groups.append(order[start:])
    return groups


def forward_fused(
    model: FusedModel, ids: np.ndarray, starts: np.ndarray, lengths: np.ndarray,
    settings: AttentionSettings, workers: int = 1,
) -> tuple[np.ndarray, np.ndarray]:
    """Logits of strings held back to back in ``ids``, with one fused kernel call per chunk.

    Return (logits, status): logits (n_strings, n_outputs) for a last-position readout, else
    (len(ids), n_outputs) row by row; status[s] != 0 where string s was left undone (its logits
    are then undefined): ``fused.OVERFLOWED`` if it failed attention's checks,
    ``fused.LONG_GENERAL`` if it is longer than :data:`FUSED_GENERAL_LIMIT` and has a head on
    the general path, with a hard kind or several ``workers``. ``workers`` threads run
    chunks of strings side by side.
    """
    spec = model.spec
    atol, rtol = tie_tolerance(spec.dtype, settings.atol, settings.rtol)
    n = len(lengths)
    rows = n if spec.output.readout == "last" else len(ids)
    out = np.zeros((rows, len(spec.output.labels)), dtype=spec.dtype)
    status = np.zeros(n, dtype=np.int64)
    # Long general heads go layer by layer: hard kinds there take BLAS score tiles, and with
    # several threads one string's queries are split among them.
    hard = settings.kind != "softmax"
    general_limit = FUSED_GENERAL_LIMIT if workers > 1 or hard else np.iinfo(np.int64).max
    order = np.argsort(-lengths, kind="stable")
    pos_start = np.zeros(n, dtype=np.int64)
    for group in _position_groups(spec, lengths, order):
        pos_table, pos_start[group] = positional_rows(spec, lengths[group])
        # Round-robin over the length-sorted strings: chunks of about the same number of
        # tokens. Threads only for work worth more than starting them (about a millisecond).
        tokens = int(lengths[group].sum())
        n_chunks = (1 if workers <= 1 or len(group) < 2 or tokens < FUSED_THREAD_TOKENS
                    else min(len(group), 4 * workers))
        chunks = [np.ascontiguousarray(group[c::n_chunks]) for c in range(n_chunks)]

        def run(chunk: np.ndarray, table: np.ndarray = pos_table) -> None:
            fk.forward_strings(ids, starts, lengths, chunk, model.W_E, table, pos_start,
                               model.params, model.reals, model.program, model.known,
                               model.dims, _KIND_CODES[settings.kind], float(settings.beta),
                               atol, rtol, general_limit, classes.MIN_KEYS, out, status)

        if n_chunks == 1:
            run(chunks[0])
        else:
            with ThreadPoolExecutor(min(workers, n_chunks)) as pool:
                list(pool.map(run, chunks))
    return out, status
