"""The NumPy statement of the limit's attention: the oracle the compiled kernel is held to.

:func:`limit_weights` compares keys degree by degree from the top over whole (H, T, S) score
series and :func:`weighted_sum` averages the values over what is left; the exact limit runs the
same limit query by query in :mod:`satsim.saturation.kernels.expansion`
(:func:`satsim.saturation.exact.limit_attention`), which the tests hold to these two, as the
engine is held to :mod:`satsim.reference`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from satsim.model.masks import allowed_matrix, head_allowed
from satsim.saturation.series import (
    ORDERS,
    TOL,
    Series,
    _complete,
    _keys,
    _live,
    exp_series,
    ratio_series,
    snap,
    truncate,
)


@dataclass(frozen=True)
class HeadLimit:
    """Tie sets of one attention layer in the limit, (H, T) arrays."""

    lead_size: np.ndarray  # tie-set size under the top-degree scores alone
    size: np.ndarray  # tie-set size once every positive degree has been compared
    split_at: np.ndarray  # degree whose term first split the leading tie set (0: none)
    unresolved: np.ndarray  # ties left while terms of positive degree are unknown


@dataclass(frozen=True)
class TieBreak:
    """Limit attention of one layer: weights as an expansion in c, tie sets, statistics."""

    weights: Series  # (H, T, S) per degree 0, -1, ...: exp(lower-order scores), normalised
    support: np.ndarray  # bool (H, T, S): keys tied at every positive degree
    lead: np.ndarray  # bool (H, T, S): tie sets of the top-degree scores alone
    head: HeadLimit


def limit_weights(scores: Series, mask: str | Sequence[str], heads: int | None = None,
                  n: int | None = None, orders: int = ORDERS) -> TieBreak:
    """Attention weights of lim softmax(scores(c)): compare keys degree by degree from the top.

    A gap at a positive degree removes a key (its weight is exponentially small). Keys tied at
    every positive degree share the weight exp(s_0 + s_-1/c + ...) normalised, a power series in
    1/c. A query whose tie set or weights depend on terms that are not known gets NaN weights.
    ``heads`` and ``n`` give the shape (heads, n, n) where the scores' terms are broadcast
    (default: their broadcast shape). ``mask`` is the attention mask of every head, or one per
    head (:mod:`satsim.model.masks`); a query with no allowed key gets zero weights.
    """
    shape = np.broadcast_shapes(*(np.shape(t) for t in scores.terms.values()))
    n = shape[-1] if n is None else n
    lead_axes = shape[:-2] if heads is None else (heads,)
    allowed = allowed_matrix(mask, n) if isinstance(mask, str) else head_allowed(mask, n)
    candidates = np.broadcast_to(allowed, lead_axes + (n, n)).copy()
    unknown = np.zeros(candidates.shape[:-1], dtype=bool)
    lead, split_at = None, np.zeros(candidates.shape[:-1], dtype=np.int64)
    for degree in range(scores.top, 0, -1):
        if degree < scores.floor:
            break
        value = np.broadcast_to(scores.terms.get(degree, 0.0), candidates.shape)
        unknown |= (candidates & np.isnan(value)).any(axis=-1)
        best = np.where(candidates, np.nan_to_num(value, nan=-np.inf), -np.inf).max(
            axis=-1, keepdims=True)
        spread = np.where(candidates, np.nan_to_num(np.abs(value)), 0.0).max(axis=-1,
                                                                             keepdims=True)
        keep = candidates & (value >= best - TOL * spread)
        if lead is None:
            lead = keep
        else:
            split = keep.sum(axis=-1) < candidates.sum(axis=-1)
            split_at = np.where(split & (split_at == 0), degree, split_at)
        candidates = np.where(unknown[..., None], candidates, keep)
    lead = candidates if lead is None else lead
    size = candidates.sum(axis=-1)
    unresolved = unknown | ((size > 1) & (scores.floor > 0))
    orders = orders if not math.isfinite(scores.floor) else max(1, min(orders, 1 - scores.floor))
    a = np.stack([np.where(candidates, scores.terms.get(-m, 0.0), 0.0) for m in range(orders)])
    base = a[0] - np.where(candidates, a[0], -np.inf).max(axis=-1, keepdims=True)
    numerators = np.where(candidates, np.exp(np.where(candidates, base, 0.0)), 0.0) * exp_series(a)
    with np.errstate(invalid="ignore", divide="ignore"):  # 0/0 where nothing is allowed
        weights = ratio_series(numerators, numerators.sum(axis=-1, keepdims=True))
    weights = np.where((size == 0)[None, ..., None], 0.0, weights)  # nothing to attend
    weights = np.where(unresolved[None, ..., None], np.nan, weights)
    unresolved |= np.isnan(weights[0]).any(axis=-1)
    head = HeadLimit(lead.sum(axis=-1), size, split_at, unresolved)
    series = Series({-m: weights[m] for m in range(orders)},
                    _weights_floor(scores, candidates, orders))
    return TieBreak(series, candidates, lead, head)


def _weights_floor(scores: Series, candidates: np.ndarray, orders: int) -> float:
    """Degree down to which the weight series is known.

    Every degree when the scores are exact and no term below degree 0 differs between the keys
    of a tie set (then there are no 1/c corrections); else as many terms as were computed.
    """
    if math.isfinite(scores.floor):
        return -(orders - 1)
    for degree, value in scores.terms.items():
        if degree >= 0:
            continue
        value = np.broadcast_to(value, candidates.shape)
        high = np.where(candidates, value, -np.inf).max(axis=-1)
        low = np.where(candidates, value, np.inf).min(axis=-1)
        if not np.all(high - low <= TOL * np.maximum(np.abs(high), np.abs(low))):
            return -(orders - 1)
    return -math.inf


def weighted_sum(weights: Series, values: Series, support: np.ndarray) -> Series:
    """Σ_s weights[h,t,s] values[h,s,e] of two expansions, for attention (zero pairs skipped).

    ``support`` (H, T, S) marks the keys whose weight is not exponentially small: an unknown
    value elsewhere cannot reach the output.
    """
    total: dict[int, np.ndarray] = {}
    magnitude: dict[int, np.ndarray] = {}
    reach = support.astype(np.float64)
    live_w, live_v = _live(weights), _live(values)
    pairs = [(i, j) for i in weights.terms for j in values.terms]
    for i, j in [p for p in pairs if live_w[p[0]] and live_v[p[1]]] or pairs[:1]:
        w, v = weights.terms[i], _keys(values.terms[j], weights.terms[i])
        known = np.nan_to_num(v, nan=0.0)
        part = w @ known
        unknown = np.isnan(v)
        if unknown.any():
            part = np.where(reach @ unknown.astype(np.float64) > 0, np.nan, part)
        total[i + j] = total.get(i + j, 0.0) + part
        magnitude[i + j] = magnitude.get(i + j, 0.0) + np.abs(w) @ np.abs(known)
    _complete(total, magnitude, {i + j for i, j in pairs})
    floor = max(weights.floor + values.top, values.floor + weights.top)
    kept = {k: snap(total[k], magnitude[k]) for k in total if k >= floor}
    return truncate(kept, floor)
