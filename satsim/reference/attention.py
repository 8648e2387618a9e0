"""Reference semantics of softmax, saturated and unique-hard attention in plain NumPy.

Readable, not fast: every function builds the full (..., T, S) score matrix. Shapes are
q (..., T, d), k (..., S, d), v (..., S, e) with broadcasting leading dims; ``key_mask``
broadcasts to (..., S) and ``query_mask`` to (..., T), True marking a real position.
``attn_mask`` names which keys each query may attend by position (:mod:`satsim.model.masks`);
None takes ``causal`` ("causal" when True, else "bidirectional").

Scores s_ij = scale * (q_i . k_j) are computed in float64 whatever the input dtype, summing the
products over d from left to right, exactly as the Numba kernels do, so the two agree bit for bit
on scores and hence on tie sets. Value averages are float64; outputs return in q's dtype.

A query with no allowed key, or a padded query, gets a zero output row, tie size 0 and tie gap NaN.
"""

from __future__ import annotations

import numpy as np

from satsim.errors import SatsimError
from satsim.model.masks import allowed_matrix, mask_named
from satsim.model.settings import tie_tolerance
from satsim.model.spec import default_scale


def tie_threshold(max_score: np.ndarray, atol: float, rtol: float) -> np.ndarray:
    """Return M - (atol + rtol*|M|), written so that it is non-decreasing in M in floating point."""
    max_score = np.asarray(max_score, dtype=np.float64)
    return np.where(max_score >= 0.0, max_score * (1.0 - rtol) - atol,
                    max_score * (1.0 + rtol) - atol)


def attention_scores(q: np.ndarray, k: np.ndarray, scale: float | None = None) -> np.ndarray:
    """Return float64 scores scale * q_i . k_j of shape (..., T, S)."""
    q64 = np.asarray(q, dtype=np.float64)
    k64 = np.asarray(k, dtype=np.float64)
    d = q64.shape[-1]
    scale = default_scale(d) if scale is None else float(scale)
    dots = np.zeros(np.broadcast_shapes(q64.shape[:-1] + (1,), k64.shape[:-2] + (1, k64.shape[-2])))
    for t in range(d):
        dots = dots + q64[..., :, None, t] * k64[..., None, :, t]
    return scale * dots


def allowed_keys(T: int, S: int, *, causal: bool = False, key_mask: np.ndarray | None = None,
                 attn_mask: str | None = None) -> np.ndarray:
    """Return which keys each query may attend, bool (..., T, S): unpadded, and by the mask."""
    mask = mask_named(causal, attn_mask)
    if mask != "bidirectional" and T != S:
        raise SatsimError(f"{mask} attention needs as many queries as keys, got T={T}, S={S}")
    allowed = allowed_matrix(mask, T, S)
    if key_mask is not None:
        allowed = allowed & np.asarray(key_mask, dtype=bool)[..., None, :]
    return allowed


def _masked_scores(q, k, causal, key_mask, scale, attn_mask) -> tuple[np.ndarray, np.ndarray]:
    """Return scores with disallowed keys at -inf, and the allowed-key matrix."""
    scores = attention_scores(q, k, scale)
    allowed = allowed_keys(scores.shape[-2], scores.shape[-1], causal=causal, key_mask=key_mask,
                           attn_mask=attn_mask)
    scores, allowed = np.broadcast_arrays(scores, allowed)
    return np.where(allowed, scores, -np.inf), allowed


def _real_queries(query_mask: np.ndarray | None) -> np.ndarray:
    """Return the query mask as a bool array broadcastable to (..., T), True when None."""
    return np.asarray(True if query_mask is None else query_mask, dtype=bool)


def tie_sets(q: np.ndarray, k: np.ndarray, *, causal: bool = False,
             key_mask: np.ndarray | None = None, atol: float | None = None,
             rtol: float | None = None, scale: float | None = None,
             attn_mask: str | None = None) -> np.ndarray:
    """Return each query's tie set, bool (..., T, S): allowed keys within tolerance of the max."""
    atol, rtol = tie_tolerance(np.asarray(q).dtype, atol, rtol)
    scores, allowed = _masked_scores(q, k, causal, key_mask, scale, attn_mask)
    best = scores.max(axis=-1, keepdims=True, initial=-np.inf)
    return allowed & (scores >= tie_threshold(best, atol, rtol))


def _average(weights: np.ndarray, v: np.ndarray, query_mask, dtype) -> np.ndarray:
    """Average v by row-normalised weights; all-zero rows and padded queries give zero rows."""
    totals = weights.sum(axis=-1, keepdims=True)
    weights = np.divide(weights, totals, out=np.zeros_like(weights), where=totals > 0)
    out = weights @ np.asarray(v, dtype=np.float64)
    return np.where(_real_queries(query_mask)[..., None], out, 0.0).astype(dtype)


def softmax_attention(q: np.ndarray, k: np.ndarray, v: np.ndarray, *, beta: float = 1.0,
                      causal: bool = False, key_mask: np.ndarray | None = None,
                      query_mask: np.ndarray | None = None,
                      scale: float | None = None, attn_mask: str | None = None) -> np.ndarray:
    """Return softmax(beta * scores) attention over allowed keys, (..., T, e)."""
    scores, allowed = _masked_scores(q, k, causal, key_mask, scale, attn_mask)
    best = scores.max(axis=-1, keepdims=True, initial=-np.inf)
    shifted = np.where(allowed, beta * (scores - np.where(np.isfinite(best), best, 0.0)), -np.inf)
    return _average(np.exp(shifted), v, query_mask, np.asarray(q).dtype)


def saturated_attention(q: np.ndarray, k: np.ndarray, v: np.ndarray, *, causal: bool = False,
                        key_mask: np.ndarray | None = None, query_mask: np.ndarray | None = None,
                        atol: float | None = None, rtol: float | None = None,
                        scale: float | None = None, attn_mask: str | None = None) -> np.ndarray:
    """Return the mean of v over each query's tie set (average-hard attention), (..., T, e)."""
    ties = tie_sets(q, k, causal=causal, key_mask=key_mask, atol=atol, rtol=rtol, scale=scale,
                    attn_mask=attn_mask)
    return _average(ties.astype(np.float64), v, query_mask, np.asarray(q).dtype)


def class_indices(scores: np.ndarray, best: np.ndarray, width: float) -> np.ndarray:
    """Each score's class ⌊(M − s)/δ⌋ below the best score M (float64 operations), float.

    The classes of score-class(δ) attention: fixed-width buckets anchored at the query's best
    score, class c holding the scores s with c·δ <= M − s < (c+1)·δ as floating point computes
    (M − s)/δ. Width 0: every distinct score its own class (the index is then M − s itself).
    """
    gaps = np.asarray(best, dtype=np.float64) - np.asarray(scores, dtype=np.float64)
    if width == 0:
        return gaps
    with np.errstate(invalid="ignore"):
        return np.floor(gaps / width)


def score_class_attention(q: np.ndarray, k: np.ndarray, v: np.ndarray, *, width: float,
                          causal: bool = False, key_mask: np.ndarray | None = None,
                          query_mask: np.ndarray | None = None, scale: float | None = None,
                          attn_mask: str | None = None) -> np.ndarray:
    """Score-class(δ) attention, (..., T, e): softmax over score classes weighted by their counts.

    Every key of class c (:func:`class_indices`) takes the class value M − c·δ, so its weight is
    exp(−c·δ) and the output Σ_c e^{−cδ} Σ_{j∈c} v_j / Σ_c n_c e^{−cδ} depends on the scores only
    through the class counts n_c. Width 0 is softmax (β = 1).
    """
    if width == 0:
        return softmax_attention(q, k, v, causal=causal, key_mask=key_mask,
                                 query_mask=query_mask, scale=scale, attn_mask=attn_mask)
    scores, allowed = _masked_scores(q, k, causal, key_mask, scale, attn_mask)
    best = scores.max(axis=-1, keepdims=True, initial=-np.inf)
    classes = class_indices(scores, np.where(np.isfinite(best), best, 0.0), width)
    weights = np.where(allowed, np.exp(-np.where(allowed, classes, 0.0) * width), 0.0)
    return _average(weights, v, query_mask, np.asarray(q).dtype)


def class_count(q: np.ndarray, k: np.ndarray, *, width: float, causal: bool = False,
                key_mask: np.ndarray | None = None, query_mask: np.ndarray | None = None,
                scale: float | None = None, attn_mask: str | None = None) -> np.ndarray:
    """The number of non-empty score classes of width ``width`` per query, int64 (..., T)."""
    scores, allowed = _masked_scores(q, k, causal, key_mask, scale, attn_mask)
    best = scores.max(axis=-1, keepdims=True, initial=-np.inf)
    classes = np.where(allowed, class_indices(scores, np.where(np.isfinite(best), best, 0.0),
                                              width), np.inf)
    ordered = np.sort(classes, axis=-1)
    distinct = np.isfinite(ordered) & np.concatenate(
        [np.ones(ordered.shape[:-1] + (1,), bool), ordered[..., 1:] != ordered[..., :-1]], -1)
    counts = distinct.sum(axis=-1, dtype=np.int64)
    return np.where(_real_queries(query_mask), counts, 0).astype(np.int64)


def unique_hard_attention(q: np.ndarray, k: np.ndarray, v: np.ndarray, *, side: str = "left",
                          causal: bool = False, key_mask: np.ndarray | None = None,
                          query_mask: np.ndarray | None = None, atol: float | None = None,
                          rtol: float | None = None, scale: float | None = None,
                          attn_mask: str | None = None) -> np.ndarray:
    """Return v at the leftmost or rightmost position of each query's tie set, (..., T, e)."""
    if side not in ("left", "right"):
        raise SatsimError(f"side must be 'left' or 'right', got {side!r}")
    ties = tie_sets(q, k, causal=causal, key_mask=key_mask, atol=atol, rtol=rtol, scale=scale,
                    attn_mask=attn_mask)
    positions = np.arange(ties.shape[-1])
    if side == "left":
        chosen = np.where(ties, positions, ties.shape[-1]).min(axis=-1, initial=ties.shape[-1])
    else:
        chosen = np.where(ties, positions, -1).max(axis=-1, initial=-1)
    one_hot = positions == chosen[..., None]
    return _average(one_hot.astype(np.float64), v, query_mask, np.asarray(q).dtype)


def tie_gap(q: np.ndarray, k: np.ndarray, *, causal: bool = False,
            key_mask: np.ndarray | None = None, query_mask: np.ndarray | None = None,
            scale: float | None = None, attn_mask: str | None = None) -> np.ndarray:
    """Return max score minus runner-up (one argmax removed), (..., T); inf: one key, NaN: none."""
    scores, allowed = _masked_scores(q, k, causal, key_mask, scale, attn_mask)
    ordered = np.sort(scores, axis=-1)
    best = ordered[..., -1] if ordered.shape[-1] >= 1 else np.full(ordered.shape[:-1], -np.inf)
    runner_up = ordered[..., -2] if ordered.shape[-1] >= 2 else np.full(best.shape, -np.inf)
    real = _real_queries(query_mask) & allowed.any(axis=-1)
    with np.errstate(invalid="ignore"):
        return np.where(real, best - runner_up, np.nan)


def tie_size(q: np.ndarray, k: np.ndarray, *, causal: bool = False,
             key_mask: np.ndarray | None = None, query_mask: np.ndarray | None = None,
             atol: float | None = None, rtol: float | None = None,
             scale: float | None = None, attn_mask: str | None = None) -> np.ndarray:
    """Return the number of keys in each query's tie set, int64 (..., T); 0 for padded queries."""
    ties = tie_sets(q, k, causal=causal, key_mask=key_mask, atol=atol, rtol=rtol, scale=scale,
                    attn_mask=attn_mask)
    sizes = ties.sum(axis=-1, dtype=np.int64)
    return np.where(_real_queries(query_mask), sizes, 0).astype(np.int64)
