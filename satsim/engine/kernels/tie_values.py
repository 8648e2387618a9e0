"""Numba kernel: whether the keys of a tie set carry different values.

A saturated head's output is the mean of its tie set's values. Where every key of a tie set
carries the same value row, any other weighting of those keys (the one lower-order score terms
give in the limit, see docs/saturation.md) leaves the output unchanged. This kernel finds, per
string and head, the largest difference between the value rows of two keys of one tie set, so
that a caller can tell rounding noise from keys that really differ.

The tie set of a query is recomputed from its queries and keys, as the attention kernels compute
it (:func:`satsim.engine.kernels.queries.score_pair`, the same threshold), but with the
tolerances doubled: a key at the edge of the tie set counts as a member, so the answer errs on
the side of "different". The NumPy meaning is :func:`satsim.reference.attention.tie_sets` with
those tolerances, and the tests compare the two.
"""

from __future__ import annotations

import numba
import numpy as np

from satsim.engine.kernels.queries import score_pair, tie_threshold
from satsim.model.masks import BIDIRECTIONAL, CAUSAL, FUTURE, STRICT_PAST


@numba.njit(cache=True)
def key_bounds(mask, i, n):
    """The keys query ``i`` of ``n`` may attend under mask code ``mask``: the range [lo, hi).

    The compiled statement of :func:`satsim.model.masks.key_range`.
    """
    if mask == CAUSAL:
        return 0, i + 1
    if mask == STRICT_PAST:
        return 0, i
    if mask == FUTURE:
        return i, n
    if mask == BIDIRECTIONAL:
        return 0, n
    return i + 1, n  # strict future


@numba.njit(cache=True, fastmath=False)
def _query_spread(q_row, k, v, lo, hi, scale, atol, rtol, scores, limit):
    """Largest |v_j - v_f| over the members j of one query's widened tie set (f: the first).

    Stops early once the spread exceeds ``limit``.
    """
    best = -np.inf
    for j in range(lo, hi):
        scores[j] = score_pair(q_row, k[j], scale)
        if scores[j] > best:
            best = scores[j]
    threshold = tie_threshold(best, 2.0 * atol, 2.0 * rtol)
    first = -1
    spread = 0.0
    for j in range(lo, hi):
        if scores[j] < threshold:
            continue
        if first < 0:
            first = j
            continue
        for c in range(v.shape[1]):
            gap = abs(np.float64(v[j, c]) - np.float64(v[first, c]))
            if gap > spread:
                spread = gap
        if spread > limit:
            return spread
    return spread


@numba.njit(cache=True, fastmath=False)
def tie_value_spread(q, k, v, lengths, tie_size, live, masks, scale, atol, rtol, relative):
    """Per (string, head): the largest value difference inside one tie set, and the value scale.

    q, k (B, H, T, d), v (B, H, T, e); ``lengths`` (B,) real positions; ``tie_size`` (B, H, T)
    from the attention run (only queries tying two or more keys are looked at); ``live`` (H,)
    heads to look at; ``masks`` (H,) their mask codes (:data:`satsim.model.masks.MASK_CODES`).
    Returns ``spread`` (B, H) and ``magnitude`` (B, H), the largest |v| of the
    string's real positions. A head's scan stops once spread > relative * magnitude.
    """
    batch, heads, length = q.shape[0], q.shape[1], q.shape[2]
    spread = np.zeros((batch, heads))
    magnitude = np.zeros((batch, heads))
    scores = np.empty(length)
    for b in range(batch):
        n = lengths[b]
        for h in range(heads):
            if not live[h]:
                continue
            largest = 0.0
            for j in range(n):
                for c in range(v.shape[3]):
                    largest = max(largest, abs(np.float64(v[b, h, j, c])))
            magnitude[b, h] = largest
            limit = relative * largest
            for i in range(n):
                if tie_size[b, h, i] < 2:
                    continue
                lo, hi = key_bounds(masks[h], i, n)
                found = _query_spread(q[b, h, i], k[b, h], v[b, h], lo, hi, scale, atol, rtol,
                                      scores, limit)
                if found > spread[b, h]:
                    spread[b, h] = found
                if spread[b, h] > limit:
                    break
    return spread, magnitude
