"""One Numba kernel for a whole model on whole strings: embedding → every block → readout.

:func:`forward_strings` runs a list of strings one after another; each string goes layer by
layer through buffers sized for that string (a few kilobytes, so they stay in cache), and only
the readout logits are written out. It calls the very row functions of the layer-by-layer path
(:func:`satsim.engine.kernels.layers.affine_rows_into`, ``layer_norm_rows``) and the same per-item
attention functions and paths as :func:`satsim.engine.kernels.queries.attend` (prefix mean for
counting heads, the incremental tie set for same-query heads, the exact per-query kernel
otherwise), so every logit is bit for bit that of the batched path. It releases the GIL: the
caller runs slices of the strings in threads.

The model comes as a flat parameter array and an integer program, one row per sublayer (see
``ATTN_*`` / ``MLP_*``); :mod:`satsim.engine.program` builds both from a :class:`ModelSpec`.

The kernel is compiled in two variants from this one source: :data:`forward_fast_paths`, with
only the attention paths that need no score matrix, and :data:`forward_strings`, with every
path; :func:`satsim.engine.program.forward_fused` routes strings between them.
"""

from __future__ import annotations

import numba
import numpy as np

from satsim.engine.kernels import CALLEE, lock_cache_writes, stamp_module_kernels
from satsim.engine.kernels import classes as _classes_module
from satsim.engine.kernels import layers as _layers_module
from satsim.engine.kernels import queries as _queries_module
from satsim.engine.kernels.classes import MAX_CLASSES, attend_if_classes
from satsim.engine.kernels.layers import IDENTITY, ROW_BLOCK, affine_rows_into, layer_norm_rows
from satsim.engine.kernels.queries import (
    MAX_SCORE,
    SAME_QUERIES,
    SAME_SCORES,
    SOFTMAX,
    UNIQUE_LEFT,
    UNIQUE_RIGHT,
    attend_same_queries_into,
    attend_same_scores,
    attend_unit,
    item_path,
    unit_count,
)
from satsim.model.masks import BIDIRECTIONAL, FUTURE, STRICT_FUTURE, STRICT_PAST

ATTENTION, FEED_FORWARD = 0, 1
"""Sublayer kinds (column ``KIND`` of a program row)."""

NORM_W, NORM_B, NORM_AFFINE, NORM_EPS, NORM_CENTRE = range(5)
NORM_WIDTH = 5
"""Columns of a norm from its first column: offsets of w and b, affine, the index of eps in
``reals`` (-1: no norm there), and whether it subtracts the mean (LayerNorm, not RMSNorm)."""
# Columns of a program row, one row per step of :func:`satsim.model.architecture.steps`.
# Offsets index the flat parameter array.
KIND, KEEP = 0, 1
IN_NORM = 2  # the branch's input norm ("pre")
OUT_NORM = IN_NORM + NORM_WIDTH  # the norm after the sum ("post")
FIRST = OUT_NORM + NORM_WIDTH  # the sublayer's own columns
# attention: heads, d_head, d_v, projection [d, n_cols] and bias, W_O [H*d_v, d], b_O,
# first row of its heads in ``known`` and ``head_masks``, index of its score scale in ``reals``
(ATTN_H, ATTN_DH, ATTN_DV, ATTN_PROJ_W, ATTN_PROJ_B, ATTN_COLS, ATTN_W_O, ATTN_B_O,
 ATTN_KNOWN, ATTN_SCALE) = range(FIRST, FIRST + 10)
# feed-forward: d_mlp, W_in [d, d_mlp], b_in, W_out [d_mlp, d], b_out, activation code
MLP_D, MLP_W_IN, MLP_B_IN, MLP_W_OUT, MLP_B_OUT, MLP_ACTIVATION = range(FIRST, FIRST + 6)
PROGRAM_WIDTH = FIRST + 10
# ``dims``: d_model, n_outputs, the widest projection, d_head, d_v, H·d_v and d_mlp, readout last,
# then the final norm, then W_U and b_U offsets.
(D_MODEL, N_OUT, MAX_COLS, MAX_DH, MAX_DV, MAX_STACK, MAX_MLP, READ_LAST) = range(8)
FINAL_NORM = 8
W_U, B_U = FINAL_NORM + NORM_WIDTH, FINAL_NORM + NORM_WIDTH + 1
DIMS_WIDTH = B_U + 1
PLAIN_IDENTITY = np.int64(IDENTITY)
"""IDENTITY for :func:`affine_rows_into` calls, typed int64 in the kernels as a row's activation
code is (Numba compiles a callee anew for each literal argument: passed as literals, IDENTITY and
a start of 0 made three specialisations of it, half a second of cold compile each, where one
does)."""
OK, OVERFLOWED, LONG_GENERAL, NEEDS_GENERAL = 0, 1, 2, 3
"""``status`` of a string: done; its queries, keys or values are not finite or its scores could
overflow float64 (the caller reruns it on the checked path, which raises the error); it has
a head on the general O(T²) path and more than ``general_limit`` tokens (the caller runs it on
the layer-by-layer path, whose attention scores by BLAS tiles and splits one string's queries
among threads); or it has a head on the class or general path and ran in
:data:`forward_fast_paths`, which lacks them (the caller reruns it in :data:`forward_strings`)."""


@numba.njit(cache=True, fastmath=False, **CALLEE)
def _matrix(params, offset, rows, cols):
    """The [rows, cols] block of the flat parameter array at ``offset``."""
    return params[offset : offset + rows * cols].reshape((rows, cols))


@numba.njit(cache=True, fastmath=False, **CALLEE)
def _normalize(params, reals, row, x, out, start, stop):
    """The norm of rows start .. stop - 1 of x into out, with the norm columns ``row``."""
    d = x.shape[1]
    w, b = row[NORM_W], row[NORM_B]
    layer_norm_rows(x, params[w : w + d], params[b : b + d], reals[row[NORM_EPS]],
                    row[NORM_AFFINE] != 0, row[NORM_CENTRE] != 0, out, start, stop)


@numba.njit(cache=True, fastmath=False, **CALLEE)
def _max_abs_qkv(proj, width):
    """Max |·| of the query, key and value columns (widths width, width, rest), one pass.

    NaN where a column group holds a NaN.
    """
    max_q = 0.0
    max_k = 0.0
    max_v = 0.0
    nan_q = False
    nan_k = False
    nan_v = False
    for i in range(proj.shape[0]):
        for c in range(width):
            a = abs(np.float64(proj[i, c]))
            nan_q |= a != a
            max_q = a if a > max_q else max_q
        for c in range(width, 2 * width):
            a = abs(np.float64(proj[i, c]))
            nan_k |= a != a
            max_k = a if a > max_k else max_k
        for c in range(2 * width, proj.shape[1]):
            a = abs(np.float64(proj[i, c]))
            nan_v |= a != a
            max_v = a if a > max_v else max_v
    return (np.nan if nan_q else max_q), (np.nan if nan_k else max_k), \
        (np.nan if nan_v else max_v)


@numba.njit(cache=True, fastmath=False, **CALLEE)
def _reverse_rows(x):
    """Reverse the order of the rows of x in place."""
    T = x.shape[0]
    for i in range(T // 2):
        for t in range(x.shape[1]):
            x[i, t], x[T - 1 - i, t] = x[T - 1 - i, t], x[i, t]


@numba.njit(cache=True, fastmath=False, **CALLEE)
def _rows_one_later(x):
    """Move every row of x one position later (row 0 becomes zeros), in place."""
    for i in range(x.shape[0] - 1, 0, -1):
        for t in range(x.shape[1]):
            x[i, t] = x[i - 1, t]
    if x.shape[0]:
        x[0, :] = 0


@numba.njit(cache=True, fastmath=False, **CALLEE)
def _attend_general(q, k, v, key_mask, query_mask, causal, kind, beta, atol, rtol, scale,
                    general_limit, class_min_keys, out, sizes, gaps):
    """A head on neither fast path: by key classes if they are few, else query by query.

    Hard kinds with at least class_min_keys keys take
    :func:`satsim.engine.kernels.classes.attend_by_classes` when their keys form classes, as the
    batched path does. Return LONG_GENERAL (nothing written) for the per-query kernel on more
    than general_limit tokens, else OK.
    """
    T = q.shape[0]
    if kind != SOFTMAX and T >= class_min_keys and scale != 0.0 and attend_if_classes(
            q, k, v, key_mask, query_mask, causal, kind, atol, rtol, scale,
            np.empty(T, dtype=np.int64), np.empty(MAX_CLASSES, dtype=np.int64), out, sizes, gaps):
        return OK
    if T > general_limit:
        return LONG_GENERAL
    for unit in range(unit_count(T)):
        attend_unit(q, k, v, key_mask, query_mask, causal, kind, beta, atol, rtol, scale, unit,
                     out, sizes, gaps)
    return OK


def _variant(function, general_paths: bool, **options):
    """Compile one variant of a closure under a name of its own (``…_all_paths``/``…_fast_paths``).

    Numba names compiled code and its environment by the qualified name and a counter that
    restarts in every process, so two variants of one closure, each compiled first in its own
    process, would share one symbol name. Loaded together from the cache, the second would then
    run with the first's environment (seen: "NRT_adapt_ndarray_to_python: descr is NULL").
    A name per variant keeps their symbols, environments and cache files apart.
    """
    suffix = "_all_paths" if general_paths else "_fast_paths"
    function.__name__ += suffix
    function.__qualname__ += suffix
    return numba.njit(cache=True, **options)(function)


def _attention_kernel(general_paths: bool):
    """Compile-time variant of the attention sublayer: with or without the general paths.

    The flag is a constant of the closure, so the branch it turns off is pruned before typing
    and never compiled. The closure holds nothing else: Numba keys its cache to the closure's
    contents, and a captured kernel would miss the cache in every new process.
    """

    def _attention(params, reals, known, head_masks, row, x, y, start, work, scratch, kind, beta,
                   atol, rtol, general_limit, class_min_keys):
        """Multi-head attention of every position of x (T, d); write rows start .. T - 1 of y.

        Return the string's status: OVERFLOWED when a query, key or value is not finite or scores
        could overflow float64 (the checks of :func:`satsim.engine.attend.attention`), NEEDS_GENERAL
        when a head is on neither fast path and general_paths is off, LONG_GENERAL when it takes
        the per-query kernel and T > general_limit (nothing written in either case), else OK.
        Each head's mask is reduced to the causal or bidirectional one as
        :func:`satsim.engine.attend.reduce_mask` does it.
        """
        (proj_buf, q_buf, k_buf, v_buf, o_buf, stacked_buf, mask, later_mask, tie_size,
         tie_gap) = work
        used, xt, acc, scores, heap_scores, heap_positions, line, total, error = scratch
        T, d = x.shape
        heads, d_head, d_v = row[ATTN_H], row[ATTN_DH], row[ATTN_DV]
        n_cols = row[ATTN_COLS]
        proj = proj_buf[: T * n_cols].reshape((T, n_cols))
        affine_rows_into(x, _matrix(params, row[ATTN_PROJ_W], d, n_cols),
                         params[row[ATTN_PROJ_B] : row[ATTN_PROJ_B] + n_cols], PLAIN_IDENTITY, proj,
                         np.int64(0), T, used, xt, acc)
        max_q, max_k, max_v = _max_abs_qkv(proj, heads * d_head)
        scale = reals[row[ATTN_SCALE]]
        bound = abs(scale) * d_head * max_q * max_k
        if not (max_q < np.inf and max_k < np.inf and max_v < np.inf and bound <= MAX_SCORE):
            return OVERFLOWED
        q = q_buf[: T * d_head].reshape((T, d_head))
        k = k_buf[: T * d_head].reshape((T, d_head))
        v = v_buf[: T * d_v].reshape((T, d_v))
        out = o_buf[: T * d_v].reshape((T, d_v))
        stacked = stacked_buf[: T * heads * d_v].reshape((T, heads * d_v))
        real = mask[:T]
        sizes = tie_size[:T]
        gaps = tie_gap[:T]
        for h in range(heads):
            q_col = h * d_head
            k_col = heads * d_head + h * d_head
            v_col = 2 * heads * d_head + h * d_v
            path = known[row[ATTN_KNOWN] + h]
            for i in range(T):
                if path < 0:  # a counting head never reads its queries and keys
                    for t in range(d_head):
                        q[i, t] = proj[i, q_col + t]
                        k[i, t] = proj[i, k_col + t]
                for t in range(d_v):
                    v[i, t] = proj[i, v_col + t]
            out[:] = 0
            head_mask = head_masks[row[ATTN_KNOWN] + h]
            head_kind = kind
            flipped = head_mask == FUTURE or head_mask == STRICT_FUTURE
            if flipped:  # the future is the past of the reversed string
                _reverse_rows(q)
                _reverse_rows(k)
                _reverse_rows(v)
                if kind == UNIQUE_LEFT:
                    head_kind = UNIQUE_RIGHT
                elif kind == UNIQUE_RIGHT:
                    head_kind = UNIQUE_LEFT
            key_mask = real
            if head_mask == STRICT_PAST or head_mask == STRICT_FUTURE:  # keys one later
                _rows_one_later(k)
                _rows_one_later(v)
                key_mask = later_mask[:T]
            causal = head_mask != BIDIRECTIONAL
            if path < 0:
                path = item_path(q, k, key_mask, real, causal, head_kind)
            # The paths of queries._attend_item, the same-query one with this kernel's scratch.
            if path == SAME_SCORES:
                attend_same_scores(v, key_mask, real, causal, head_kind, out, sizes, gaps)
            elif path == SAME_QUERIES:
                attend_same_queries_into(q, k, v, key_mask, real, causal, head_kind, beta, atol,
                                         rtol, scale, out, sizes, gaps, scores[:T],
                                         heap_scores[:T], heap_positions[:T], line[:T],
                                         total[:d_v], error[:d_v])
            elif general_paths:
                state = _attend_general(q, k, v, key_mask, real, causal, head_kind, beta, atol,
                                        rtol, scale, general_limit, class_min_keys, out, sizes,
                                        gaps)
                if state != OK:
                    return state
            else:
                return NEEDS_GENERAL
            if flipped:
                _reverse_rows(out)
            if heads > 1:
                for i in range(T):
                    for t in range(d_v):
                        stacked[i, h * d_v + t] = out[i, t]
        if heads == 1:
            stacked = out
        affine_rows_into(stacked, _matrix(params, row[ATTN_W_O], heads * d_v, d),
                         params[row[ATTN_B_O] : row[ATTN_B_O] + d], PLAIN_IDENTITY, y, start, T,
                         used, xt, acc)
        return OK

    return _variant(_attention, general_paths, fastmath=False, inline="always", **CALLEE)


_attention_all_paths = _attention_kernel(True)
_attention_fast_paths = _attention_kernel(False)


@numba.njit(cache=True, fastmath=False, **CALLEE)
def _feed_forward(params, row, x, y, start, hidden_buf, scratch):
    """The feed-forward sublayer on rows start .. T - 1 of x, into y."""
    T, d = x.shape
    d_mlp = row[MLP_D]
    used, xt, acc = scratch[0], scratch[1], scratch[2]
    hidden = hidden_buf[: T * d_mlp].reshape((T, d_mlp))
    affine_rows_into(x, _matrix(params, row[MLP_W_IN], d, d_mlp),
                      params[row[MLP_B_IN] : row[MLP_B_IN] + d_mlp], row[MLP_ACTIVATION], hidden,
                     start, T,
                      used, xt, acc)
    affine_rows_into(hidden, _matrix(params, row[MLP_W_OUT], d_mlp, d),
                      params[row[MLP_B_OUT] : row[MLP_B_OUT] + d], PLAIN_IDENTITY, y, start, T,
                      used, xt, acc)


def _forward_kernel(general_paths: bool):
    """Compile-time variant of the whole-model kernel: with or without the general paths."""

    def forward_strings(ids, starts, lengths, order, W_E, pos_table, pos_start, params, reals,
                        program, known, head_masks, dims, kind, beta, atol, rtol, general_limit,
                        class_min_keys, out, status):
        """Run the strings ``order`` (indices into starts/lengths) through the whole model.

        ``ids`` holds every string's token ids back to back, string s at starts[s] with lengths[s]
        tokens. Positional rows come from ``pos_table`` from row pos_start[s] (no positions: an
        empty table). Write the logits to ``out``: row s (last-position readout) or rows
        starts[s] .. starts[s] + lengths[s] - 1 (per position); set status[s] (see ``OK``) for a
        string left undone. Heads whose keys repeat take the class path from class_min_keys tokens
        on. ``known`` and ``head_masks`` hold each head's path (-1: detect) and mask code
        (:data:`satsim.model.masks.MASK_CODES`). Serial; releases the GIL.
        """
        d = dims[D_MODEL]
        n_out = dims[N_OUT]
        longest = 0
        for s in order:
            longest = max(longest, lengths[s])
        x_buf = np.empty(longest * d, dtype=W_E.dtype)
        h_buf = np.empty_like(x_buf)
        y_buf = np.empty_like(x_buf)
        hidden_buf = np.empty(longest * max(dims[MAX_MLP], 1), dtype=W_E.dtype)
        work = (np.empty(longest * max(dims[MAX_COLS], 1), dtype=W_E.dtype),
                np.empty(longest * max(dims[MAX_DH], 1), dtype=W_E.dtype),
                np.empty(longest * max(dims[MAX_DH], 1), dtype=W_E.dtype),
                np.empty(longest * max(dims[MAX_DV], 1), dtype=W_E.dtype),
                np.empty(longest * max(dims[MAX_DV], 1), dtype=W_E.dtype),
                np.empty(longest * max(dims[MAX_STACK], 1), dtype=W_E.dtype),
                np.ones(longest, dtype=np.bool_),
                np.arange(longest) > 0,
                np.zeros(longest, dtype=np.int64),
                np.zeros(longest, dtype=np.float64))
        logits_buf = np.empty(longest * n_out, dtype=W_E.dtype)
        widest_in = max(d, dims[MAX_STACK], dims[MAX_MLP], 1)
        widest_out = max(d, dims[MAX_COLS], dims[MAX_MLP], n_out, 1)
        scratch = (np.empty(widest_in, dtype=np.int64),
                   np.empty((widest_in, ROW_BLOCK), dtype=np.float64),
                   np.empty((widest_out, ROW_BLOCK), dtype=np.float64),
                   np.empty(longest), np.empty(longest), np.empty(longest, dtype=np.int64),
                   np.empty(longest, dtype=np.int64), np.empty(max(dims[MAX_DV], 1)),
                   np.empty(max(dims[MAX_DV], 1)))
        w_u = _matrix(params, dims[W_U], d, n_out)
        b_u = params[dims[B_U] : dims[B_U] + n_out]
        read_last = dims[READ_LAST] != 0
        has_pos = pos_table.shape[0] > 0
        # After the last attention sublayer only the read-out rows matter.
        last_attention = -1
        for index in range(program.shape[0]):
            if program[index, KIND] == ATTENTION:
                last_attention = index
        for s in order:
            T = lengths[s]
            first = starts[s]
            x = x_buf[: T * d].reshape((T, d))
            h = h_buf[: T * d].reshape((T, d))
            y = y_buf[: T * d].reshape((T, d))
            p0 = pos_start[s]
            for i in range(T):
                token = ids[first + i]
                for c in range(d):
                    value = W_E[token, c]
                    if has_pos:
                        value = value + pos_table[p0 + i, c]
                    x[i, c] = value
            start = 0
            state = OK
            for index in range(program.shape[0]):
                row = program[index]
                if index > last_attention and read_last:
                    start = T - 1
                # y <- branch(norm_in(x)), rows start .. T - 1
                source = x
                if row[IN_NORM + NORM_EPS] >= 0:
                    _normalize(params, reals, row[IN_NORM:], x, h, 0 if row[KIND] == ATTENTION
                               else start, T)
                    source = h
                if row[KIND] == ATTENTION:
                    attn_start = T - 1 if index == last_attention and read_last else 0
                    if general_paths:
                        state = _attention_all_paths(params, reals, known, head_masks, row,
                                                     source, y, attn_start, work, scratch, kind,
                                                     beta, atol, rtol, general_limit,
                                                     class_min_keys)
                    else:
                        state = _attention_fast_paths(params, reals, known, head_masks, row,
                                                      source, y, attn_start, work, scratch, kind,
                                                      beta, atol, rtol, general_limit,
                                                      class_min_keys)
                    if state != OK:
                        break
                    if index == last_attention and read_last:
                        start = T - 1
                else:
                    _feed_forward(params, row, source, y, start, hidden_buf, scratch)
                if row[KEEP] != 0:
                    for i in range(start, T):
                        for c in range(d):
                            y[i, c] = x[i, c] + y[i, c]
                if row[OUT_NORM + NORM_EPS] >= 0:
                    _normalize(params, reals, row[OUT_NORM:], y, x, start, T)
                else:
                    x, y = y, x
            if state != OK:
                status[s] = state
                continue
            if dims[FINAL_NORM + NORM_EPS] >= 0:
                _normalize(params, reals, dims[FINAL_NORM:], x, h, start, T)
                x, h = h, x
            logits = logits_buf[: T * n_out].reshape((T, n_out))
            affine_rows_into(x, w_u, b_u, PLAIN_IDENTITY, logits, start, T, scratch[0], scratch[1],
                              scratch[2])
            if read_last:
                for c in range(n_out):
                    out[s, c] = logits[T - 1, c]
            else:
                for i in range(T):
                    for c in range(n_out):
                        out[first + i, c] = logits[i, c]
        return status

    return _variant(forward_strings, general_paths, nogil=True, fastmath=False)


forward_strings = _forward_kernel(True)
forward_fast_paths = _forward_kernel(False)
"""``forward_strings`` with the fast paths only (prefix mean, every key tied, one query):
about a third less to compile, and enough for hand-built models; a string with a head on the
class or general path gets status NEEDS_GENERAL."""
stamp_module_kernels(globals(), (_queries_module, _classes_module, _layers_module))
lock_cache_writes(globals())
