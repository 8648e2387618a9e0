"""Saturated, unique-hard and softmax attention on arrays of any batch shape, run by Numba kernels.

Shapes: q (..., T, d), k (..., S, d), v (..., S, e) → output (..., T, e); the leading dims of q, k,
v and the masks broadcast together. ``mask`` marks real keys (broadcastable to (..., S)),
``query_mask`` real queries (broadcastable to (..., T)); padded queries get zero rows.
``attn_mask`` names which keys a query may attend by position (:mod:`satsim.model.masks`; None:
``causal``). The meaning of every kind, tie set and diagnostic is
:mod:`satsim.reference.attention`; tolerances default to :mod:`satsim.model.settings`.

The kernels know two masks, causal and bidirectional; the others reduce to them exactly
(:func:`reduce_mask`): the future masks are the past ones on the reversed sequence (with
leftmost and rightmost exchanged), and the strict past is the causal mask with every key moved
one position later, so that query i sees the keys before it and query 0 none.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numba
import numpy as np

from satsim.engine.kernels import announce_compile, classes, tiles
from satsim.engine.kernels import queries as kernels
from satsim.engine.kernels.layers import use_parallel
from satsim.engine.kernels.queries import MAX_SCORE
from satsim.errors import SatsimError
from satsim.model.masks import MASKS, REVERSED, mask_named
from satsim.model.settings import EVALUATED_KINDS, tie_tolerance
from satsim.model.spec import default_scale

KIND_CODES = {
    "softmax": kernels.SOFTMAX,
    "saturated": kernels.SATURATED,
    "unique-left": kernels.UNIQUE_LEFT,
    "unique-right": kernels.UNIQUE_RIGHT,
    "score-class": kernels.SCORE_CLASS,
}
SCORE_MATRIX_KINDS = (kernels.SOFTMAX, kernels.SCORE_CLASS)
"""Kinds that weigh every key (no tie filter): they take neither key classes nor score tiles."""


@dataclass(frozen=True)
class AttentionResult:
    """Attention output (..., T, e) with per-query tie size (int64) and tie gap (float64), (..., T).

    tie_gap is the max score minus the runner-up (0 for an exact tie, inf for a single allowed key,
    NaN for a padded query or one with no allowed key).
    """

    output: np.ndarray
    tie_size: np.ndarray
    tie_gap: np.ndarray


def _float_array(name: str, x) -> np.ndarray:
    """Return x as a float32/float64 array of at least 2 dims with finite entries."""
    try:
        x = np.asarray(x)
    except ValueError:  # NumPy refuses nested lists of unequal lengths
        raise SatsimError(f"{name} is a ragged list; give an array of shape (..., length, "
                          "dim)") from None
    if x.dtype not in (np.float32, np.float64):
        raise SatsimError(f"{name} must be float32 or float64, got dtype {x.dtype}")
    if x.ndim < 2:
        raise SatsimError(f"{name} must have shape (..., length, dim), got shape {x.shape}")
    if not math.isfinite(_max_abs(x)):
        raise SatsimError(f"{name} contains NaN or inf")
    return x


def _max_abs(x: np.ndarray) -> float:
    """Return max |x| (0 if empty): NaN or inf when x has a NaN or inf, in one pass, no copy."""
    if x.size == 0:
        return 0.0
    return max(float(x.max()), -float(x.min()))


def _bool_mask(name: str, mask, length: int) -> np.ndarray:
    """Return a boolean padding mask (..., length), True for real positions."""
    mask = np.asarray(True if mask is None else mask)
    if mask.dtype != np.bool_:
        raise SatsimError(f"{name} must be a boolean array (True = real position), "
                          f"got dtype {mask.dtype}")
    if mask.ndim == 0:
        mask = np.broadcast_to(mask, (length,))
    if mask.shape[-1] not in (1, length):
        raise SatsimError(f"{name} of shape {mask.shape} does not broadcast to (..., {length})")
    return mask


def _check_positive(name: str, value: float) -> float:
    """Return value as a float after checking it is finite and > 0."""
    value = float(value)
    if not (math.isfinite(value) and value > 0):
        raise SatsimError(f"{name} must be finite and > 0, got {value}")
    return value


SWAPPED_SIDES = {"unique-left": "unique-right", "unique-right": "unique-left"}
"""Leftmost and rightmost exchanged, as on a reversed sequence."""


@dataclass(frozen=True)
class Reduced:
    """A masked attention problem restated for the causal or bidirectional kernels."""

    q: np.ndarray
    k: np.ndarray
    v: np.ndarray
    key_mask: np.ndarray
    query_mask: np.ndarray
    kind: str
    causal: bool
    reversed: bool  # the outputs come back in reversed order


def reduce_mask(q: np.ndarray, k: np.ndarray, v: np.ndarray, key_mask: np.ndarray,
                query_mask: np.ndarray, kind: str, mask: str) -> Reduced:
    """Restate attention under ``mask`` as causal or bidirectional attention, exactly.

    Arrays are (..., T, ·) with T == S for every mask but bidirectional; the masks are
    (..., S) and (..., T). Reversing the positions turns the future masks into the past ones
    (and leftmost into rightmost); moving every key one position later (key 0 masked out)
    turns the strict past into the causal mask.
    """
    flipped = mask in ("future", "strict-future")
    if flipped:
        q, k, v = q[..., ::-1, :], k[..., ::-1, :], v[..., ::-1, :]
        key_mask, query_mask = key_mask[..., ::-1], query_mask[..., ::-1]
        kind, mask = SWAPPED_SIDES.get(kind, kind), REVERSED[mask]
    if mask == "strict-past":
        def later(x: np.ndarray) -> np.ndarray:
            return np.concatenate([np.zeros_like(x[..., :1, :]), x[..., :-1, :]], axis=-2)

        k, v = later(k), later(v)
        key_mask = np.concatenate([np.zeros_like(key_mask[..., :1]), key_mask[..., :-1]],
                                  axis=-1)
        mask = "causal"
    return Reduced(q, k, v, key_mask, query_mask, kind, mask == "causal", flipped)


def attention(q: np.ndarray, k: np.ndarray, v: np.ndarray, *, kind: str = "saturated",
              beta: float = 1.0, causal: bool = False, mask: np.ndarray | None = None,
              query_mask: np.ndarray | None = None, atol: float | None = None,
              rtol: float | None = None, scale: float | None = None,
              same_scores: np.ndarray | bool | None = None,
              attn_mask: str | None = None, width: float = 0.0) -> AttentionResult:
    """Run attention of the given kind and return its output with tie diagnostics.

    ``width`` is score-class's class width δ (:func:`satsim.reference.attention.class_indices`);
    its tie size is the size of the top class' tie set at the tolerance, as softmax's.

    ``same_scores`` (bool, broadcastable to the batch dims) is the caller's promise that an item's
    keys, or its queries, are constant by construction (a counting head: zero key map, or zero
    query map and bias), so every allowed key ties; such items run as prefix means without the
    check. Items not promised are checked at run time, with the same result.
    """
    if kind not in KIND_CODES:
        raise SatsimError(f"unknown attention kind {kind!r}; known: {', '.join(EVALUATED_KINDS)}")
    attn_mask = mask_named(causal, attn_mask)
    if attn_mask not in MASKS:
        raise SatsimError(f"unknown attention mask {attn_mask!r}; known: {', '.join(MASKS)}")
    q, k, v = _float_array("q", q), _float_array("k", k), _float_array("v", v)
    if not q.dtype == k.dtype == v.dtype:
        raise SatsimError(f"q, k, v must share one dtype, got {q.dtype}, {k.dtype}, {v.dtype}")
    (T, d), (S, d_k), (S_v, e) = q.shape[-2:], k.shape[-2:], v.shape[-2:]
    if d != d_k or S != S_v:
        raise SatsimError(f"q (..., T, d), k (..., S, d), v (..., S, e) do not fit: shapes "
                          f"{q.shape}, {k.shape}, {v.shape}")
    if d == 0:
        raise SatsimError(f"q and k need a non-empty last dim, got shapes {q.shape}, {k.shape}")
    if attn_mask != "bidirectional" and T != S:
        raise SatsimError(f"{attn_mask} attention needs as many queries as keys, got q {q.shape} "
                          f"and k {k.shape}")
    key_mask, real_queries = _bool_mask("mask", mask, S), _bool_mask("query_mask", query_mask, T)
    try:
        batch = np.broadcast_shapes(q.shape[:-2], k.shape[:-2], v.shape[:-2], key_mask.shape[:-1],
                                    real_queries.shape[:-1])
    except ValueError:
        raise SatsimError(
            f"batch dims do not broadcast: q {q.shape}, k {k.shape}, v {v.shape}, "
            f"mask {key_mask.shape}, query_mask {real_queries.shape}") from None
    beta = _check_positive("beta", beta)
    width = float(width)
    if not (math.isfinite(width) and width >= 0):
        raise SatsimError(f"a class width must be finite and >= 0, got {width}")
    atol, rtol = tie_tolerance(q.dtype, atol, rtol)
    scale = default_scale(d) if scale is None else float(scale)
    if not math.isfinite(scale):
        raise SatsimError(f"scale must be finite, got {scale}")
    if q.size and k.size:
        # |s_ij| <= |scale| * d * max|q| * max|k| bounds every partial sum of a score, too.
        bound = abs(scale) * d * _max_abs(q) * _max_abs(k)
        if not bound <= MAX_SCORE:
            raise SatsimError(f"scores could overflow float64: |scale|·d·max|q|·max|k| = "
                              f"{bound:.3g} exceeds {MAX_SCORE:g}")

    def flat(x: np.ndarray, tail: tuple[int, ...]) -> np.ndarray:
        # C-contiguous and writable: the kernels are compiled once per dtype, not per layout.
        if x.shape != batch + tail:
            x = np.broadcast_to(x, batch + tail)
        return np.require(x.reshape((math.prod(batch),) + tail), requirements=("C", "W"))

    n_items = math.prod(batch)
    q, k, v = flat(q, (T, d)), flat(k, (S, d)), flat(v, (S, e))
    key_mask, real_queries = flat(key_mask, (S,)), flat(real_queries, (T,))
    problem = reduce_mask(q, k, v, key_mask, real_queries, kind, attn_mask)
    q, k, v = (np.require(x, requirements=("C", "W")) for x in (problem.q, problem.k, problem.v))
    key_mask, real_queries = (np.require(x, requirements=("C", "W"))
                              for x in (problem.key_mask, problem.query_mask))
    causal, code = problem.causal, KIND_CODES[problem.kind]
    if code == kernels.SCORE_CLASS:
        beta = width  # the kernels' parameter of the kind
    known = np.full(n_items, kernels.UNKNOWN, dtype=np.int64)
    if same_scores is not None:
        promised = np.broadcast_to(np.asarray(same_scores, dtype=bool), batch).reshape(-1)
        known[promised] = kernels.SAME_SCORES
    paths = kernels.item_paths(q, k, key_mask, real_queries, causal, code, known)
    by_classes = np.zeros(0, dtype=np.int64)
    if (code not in SCORE_MATRIX_KINDS and S >= classes.MIN_KEYS and scale != 0
            and (paths == kernels.GENERAL).any()):
        announce_compile(path="classes", dtype=k.dtype)
        by_classes = np.flatnonzero(classes.few_classes(k, key_mask, paths))
        paths[by_classes] = classes.KEY_CLASSES
    general = np.flatnonzero(paths == kernels.GENERAL)
    item_work = T * S * d // (2 if causal else 1)
    work = general.size * item_work + n_items * T * (d + e)
    parallel = use_parallel(work)
    if code in SCORE_MATRIX_KINDS or general.size == 0 or T * S < tiles.TILE_SCORES or scale == 0:
        kernel = kernels.attend_parallel if parallel else kernels.attend
        out, tie_size, tie_gap = kernel(q, k, v, key_mask, real_queries, causal, code, beta,
                                        atol, rtol, scale, paths)
    else:
        out, tie_size, tie_gap = _attend_by_tiles(q, k, v, key_mask, real_queries, causal, code,
                                                  atol, rtol, scale, paths, general, parallel)
    if by_classes.size:  # items whose keys form classes
        out[by_classes], tie_size[by_classes], tie_gap[by_classes] = \
            classes.attend_items_by_classes(q[by_classes], k[by_classes], v[by_classes],
                                            key_mask[by_classes], real_queries[by_classes],
                                            causal, code, atol, rtol, scale)
    if problem.reversed:
        out, tie_size, tie_gap = out[:, ::-1], tie_size[:, ::-1], tie_gap[:, ::-1]
    return AttentionResult(np.ascontiguousarray(out).reshape(batch + (T, e)),
                           np.ascontiguousarray(tie_size).reshape(batch + (T,)),
                           np.ascontiguousarray(tie_gap).reshape(batch + (T,)))


def _attend_by_tiles(q, k, v, key_mask, real_queries, causal, code, atol, rtol, scale, paths,
                     general, parallel):
    """Hard kinds: fast-path items by the fused kernel, general items by BLAS score tiles."""
    n_items, T = q.shape[0], q.shape[1]
    out = np.zeros((n_items, T, v.shape[2]), dtype=q.dtype)
    tie_size = np.zeros((n_items, T), dtype=np.int64)
    tie_gap = np.full((n_items, T), np.nan)
    fast = np.flatnonzero((paths != kernels.GENERAL) & (paths != classes.KEY_CLASSES))
    if fast.size:
        parts = kernels.attend(q[fast], k[fast], v[fast], key_mask[fast], real_queries[fast],
                               causal, code, 1.0, atol, rtol, scale, paths[fast])
        out[fast], tie_size[fast], tie_gap[fast] = parts
    threads = numba.get_num_threads() if parallel else 1
    announce_compile(path="tiles", dtype=q.dtype)
    tiles.attend_tiled(q, k, v, key_mask, real_queries, causal, code, atol, rtol, scale, general,
                       out, tie_size, tie_gap, threads=threads)
    return out, tie_size, tie_gap


def saturated_attention(q: np.ndarray, k: np.ndarray, v: np.ndarray, *, causal: bool = False,
                        mask: np.ndarray | None = None, query_mask: np.ndarray | None = None,
                        atol: float | None = None, rtol: float | None = None,
                        scale: float | None = None, attn_mask: str | None = None) -> np.ndarray:
    """Return the mean of v over each query's tie set (average-hard attention), (..., T, e)."""
    return attention(q, k, v, kind="saturated", causal=causal, mask=mask, query_mask=query_mask,
                     atol=atol, rtol=rtol, scale=scale, attn_mask=attn_mask).output


def unique_hard_attention(q: np.ndarray, k: np.ndarray, v: np.ndarray, *, side: str = "left",
                          causal: bool = False, mask: np.ndarray | None = None,
                          query_mask: np.ndarray | None = None, atol: float | None = None,
                          rtol: float | None = None, scale: float | None = None,
                          attn_mask: str | None = None) -> np.ndarray:
    """Return v at the leftmost or rightmost position of each query's tie set, (..., T, e)."""
    if side not in ("left", "right"):
        raise SatsimError(f"side must be 'left' or 'right', got {side!r}")
    return attention(q, k, v, kind=f"unique-{side}", causal=causal, mask=mask,
                     query_mask=query_mask, atol=atol, rtol=rtol, scale=scale,
                     attn_mask=attn_mask).output


def softmax_attention(q: np.ndarray, k: np.ndarray, v: np.ndarray, *, beta: float = 1.0,
                      causal: bool = False, mask: np.ndarray | None = None,
                      query_mask: np.ndarray | None = None,
                      scale: float | None = None, attn_mask: str | None = None) -> np.ndarray:
    """Return softmax(beta * scores) attention over the allowed keys, (..., T, e)."""
    return attention(q, k, v, kind="softmax", beta=beta, causal=causal, mask=mask,
                     query_mask=query_mask, scale=scale, attn_mask=attn_mask).output
