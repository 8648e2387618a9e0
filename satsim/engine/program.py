"""The fused per-string program: a spec encoded for one kernel call over whole strings.

:func:`fuse` encodes the steps of :func:`satsim.model.architecture.steps` (one program row per
step, its norms, residual and sublayer) and the parameters into flat arrays;
:func:`forward_fused` runs strings through :func:`satsim.engine.kernels.fused.forward_strings`
and returns the logits of :func:`satsim.engine.batch.forward_batch`, bit for bit.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np

from satsim.engine.attend import KIND_CODES
from satsim.engine.batch import norm_parameters, side_by_side
from satsim.engine.kernels import announce_compile, classes
from satsim.engine.kernels import fused as fk
from satsim.engine.kernels.layers import ACTIVATION_CODES
from satsim.engine.kernels.parallel_compile import compile_callees
from satsim.engine.kernels.queries import SAME_SCORES, UNKNOWN
from satsim.model.architecture import counting_heads, steps
from satsim.model.encoding import positional_vectors
from satsim.model.masks import MASK_CODES
from satsim.model.settings import AttentionSettings, tie_tolerance
from satsim.model.spec import LayerNormSpec, ModelSpec

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


@dataclass
class FusedModel:
    """A spec encoded for :func:`satsim.engine.kernels.fused.forward_strings`.

    ``general_paths`` says which compiled variant runs first (see :func:`forward_fused`); it is
    the only field that changes, once, when a string needs the general paths.
    """

    spec: ModelSpec
    W_E: np.ndarray
    params: np.ndarray
    reals: np.ndarray
    program: np.ndarray
    known: np.ndarray
    head_masks: np.ndarray
    dims: np.ndarray
    general_paths: bool


def starts_with_general_paths(known: np.ndarray, compiled: bool = False) -> bool:
    """Whether a model with these head paths (-1: unknown) should run the full kernel first.

    A model with a head whose path is known by construction (a counting head, as hand-built
    models have) is expected to need the fast paths only; a model with heads none of which is
    known (a trained one) is expected to need the general ones, and so is a ``compiled`` program
    with a head not known: its other heads compare counts or pick positions, which takes the
    key-class or per-query path (every example program does on strings up to length 5). A wrong
    guess costs time only: the compile of a variant the strings do not need.
    """
    unknown = bool((known < 0).any())
    return unknown and (compiled or not bool((known >= 0).any()))


def fuse(spec: ModelSpec) -> FusedModel | None:
    """Encode ``spec`` for the fused kernel, or None if it needs the layer-by-layer path.

    Models whose heads fix their own kinds (hybrids) take the layer-by-layer path, which runs
    each head's kind.
    """
    if spec.fixed_kinds:
        return None
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

    def put_norm(columns: np.ndarray, ln: LayerNormSpec | None) -> None:
        if ln is None:
            columns[:] = (0, 0, 0, -1, 0)
            return
        w, b = norm_parameters(ln, d, dtype)
        columns[:] = (put(w), put(b), int(ln.affine), put_real(ln.eps), int(ln.centred))

    rows: list[np.ndarray] = []
    known: list[int] = []
    head_masks: list[int] = []
    widest = {"cols": 0, "dh": 0, "dv": 0, "stack": 0, "mlp": 0}
    for step in steps(spec):
        if len(step.branches) > 1:
            return None  # a parallel block: the layer-by-layer path runs it
        [branch] = step.branches
        sub = branch.module
        row = np.zeros(fk.PROGRAM_WIDTH, dtype=np.int64)
        row[fk.KEEP] = int(step.keep)
        put_norm(row[fk.IN_NORM : fk.IN_NORM + fk.NORM_WIDTH], branch.norm)
        put_norm(row[fk.OUT_NORM : fk.OUT_NORM + fk.NORM_WIDTH], step.norm_out)
        if branch.kind == "attn":
            heads, _, d_head = sub.W_Q.shape
            d_v = sub.W_V.shape[2]
            if d_head == 0:
                return None  # attention refuses empty keys: keep its error
            projection, bias = side_by_side([sub.W_Q, sub.W_K, sub.W_V],
                                            [sub.b_Q, sub.b_K, sub.b_V], dtype)
            n_cols = projection.shape[1]
            row[fk.KIND] = fk.ATTENTION
            row[fk.ATTN_H], row[fk.ATTN_DH], row[fk.ATTN_DV] = heads, d_head, d_v
            row[fk.ATTN_PROJ_W], row[fk.ATTN_PROJ_B] = put(projection), put(bias)
            row[fk.ATTN_COLS] = n_cols
            row[fk.ATTN_W_O] = put(sub.W_O.reshape(heads * d_v, d))
            row[fk.ATTN_B_O] = put(sub.b_O, d)
            row[fk.ATTN_KNOWN] = len(known)
            row[fk.ATTN_SCALE] = put_real(sub.score_scale)
            known.extend(SAME_SCORES if c else UNKNOWN for c in counting_heads(sub))
            head_masks.extend(MASK_CODES[mask] for mask in sub.head_masks)
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
            row[fk.MLP_ACTIVATION] = ACTIVATION_CODES[sub.activation]
            widest["mlp"] = max(widest["mlp"], d_mlp)
        rows.append(row)
    out = spec.output
    dims = np.zeros(fk.DIMS_WIDTH, dtype=np.int64)
    dims[fk.D_MODEL], dims[fk.N_OUT] = d, len(out.labels)
    dims[fk.MAX_COLS], dims[fk.MAX_DH], dims[fk.MAX_DV] = widest["cols"], widest["dh"], widest["dv"]
    dims[fk.MAX_STACK], dims[fk.MAX_MLP] = widest["stack"], widest["mlp"]
    dims[fk.READ_LAST] = int(out.readout == "last")
    put_norm(dims[fk.FINAL_NORM : fk.FINAL_NORM + fk.NORM_WIDTH], spec.ln_final)
    dims[fk.W_U], dims[fk.B_U] = put(out.W_U), put(out.b_U, len(out.labels))
    program = np.stack(rows) if rows else np.zeros((0, fk.PROGRAM_WIDTH), dtype=np.int64)
    return FusedModel(
        spec=spec, W_E=np.array(spec.W_E), params=np.concatenate(chunks),
        reals=np.array(reals + [0.0]), program=program, known=np.array(known + [0], np.int64),
        head_masks=np.array(head_masks + [0], np.int64), dims=dims,
        general_paths=starts_with_general_paths(np.array(known, np.int64),
                                                bool(spec.source)),
    )


def positional_rows(spec: ModelSpec, lengths: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The positional table and each string's first row in it, for strings of these lengths.

    Tables that do not depend on the length come once, for the longest string; position
    features do, so each distinct length gets its own rows. The table is a writable copy: a
    view of the spec's read-only W_pos would be a second signature of the kernel, compiled again
    (and silently: the compile notice looks for the dtype, not for every flag of every array).
    """
    n = len(lengths)
    if spec.positional.kind == "none" or n == 0:
        return np.zeros((0, spec.d_model), dtype=spec.dtype), np.zeros(n, dtype=np.int64)
    if not spec.positional.depends_on_length:
        table = np.require(positional_vectors(spec, int(lengths.max())), spec.dtype, ("C", "W"))
        return table, np.zeros(n, dtype=np.int64)
    distinct, inverse = np.unique(lengths, return_inverse=True)
    first_rows = np.concatenate([[0], np.cumsum(distinct)[:-1]]).astype(np.int64)
    table = np.concatenate([positional_vectors(spec, int(length)) for length in distinct])
    return np.ascontiguousarray(table, spec.dtype), first_rows[inverse]


def _position_groups(spec: ModelSpec, lengths: np.ndarray,
                     order: np.ndarray) -> list[np.ndarray]:
    """Split the length-sorted ``order`` so each group's position-feature rows fit the budget."""
    if not spec.positional.depends_on_length:
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

    Strings run in the kernel variant ``model.general_paths`` names; those that the fast-path
    variant cannot finish run again in the full one, which later calls then start with. Both
    variants call the same functions, so the logits do not depend on the route.
    """
    spec = model.spec
    n = len(lengths)
    rows = n if spec.output.readout == "last" else len(ids)
    out = np.zeros((rows, len(spec.output.labels)), dtype=spec.dtype)
    status = np.zeros(n, dtype=np.int64)
    order = np.argsort(-lengths, kind="stable")
    if not model.general_paths:
        if announce_compile(path="fused-fast", dtype=spec.dtype):
            compile_callees("fused-fast", spec.dtype)
        _run_variant(fk.forward_fast_paths, model, ids, starts, lengths, order, settings, workers,
                     out, status)
        order = order[status[order] == fk.NEEDS_GENERAL]
        status[order] = fk.OK
        if len(order):
            model.general_paths = True
    if len(order):
        if announce_compile(path="fused", dtype=spec.dtype):
            compile_callees("fused", spec.dtype)
        _run_variant(fk.forward_strings, model, ids, starts, lengths, order, settings, workers,
                     out, status)
    return out, status


def _run_variant(kernel, model: FusedModel, ids: np.ndarray, starts: np.ndarray,
                 lengths: np.ndarray, order: np.ndarray, settings: AttentionSettings,
                 workers: int, out: np.ndarray, status: np.ndarray) -> None:
    """Run the strings ``order`` (longest first) through one variant of the fused kernel."""
    spec = model.spec
    atol, rtol = tie_tolerance(spec.dtype, settings.atol, settings.rtol)
    # Long general heads go layer by layer: hard kinds there take BLAS score tiles, and with
    # several threads one string's queries are split among them.
    hard = settings.kind != "softmax"
    general_limit = FUSED_GENERAL_LIMIT if workers > 1 or hard else np.iinfo(np.int64).max
    pos_start = np.zeros(len(lengths), dtype=np.int64)
    for group in _position_groups(spec, lengths, order):
        pos_table, pos_start[group] = positional_rows(spec, lengths[group])
        # Round-robin over the length-sorted strings: chunks of about the same number of
        # tokens. Threads only for work worth more than starting them (about a millisecond).
        tokens = int(lengths[group].sum())
        n_chunks = (1 if workers <= 1 or len(group) < 2 or tokens < FUSED_THREAD_TOKENS
                    else min(len(group), 4 * workers))
        chunks = [np.ascontiguousarray(group[c::n_chunks]) for c in range(n_chunks)]

        def run(chunk: np.ndarray, table: np.ndarray = pos_table) -> None:
            kernel(ids, starts, lengths, chunk, model.W_E, table, pos_start, model.params,
                   model.reals, model.program, model.known, model.head_masks, model.dims,
                   KIND_CODES[settings.kind], float(settings.beta), atol, rtol, general_limit,
                   classes.MIN_KEYS, out, status)

        if n_chunks == 1:
            run(chunks[0])
        else:
            with ThreadPoolExecutor(min(workers, n_chunks)) as pool:
                list(pool.map(run, chunks))
