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

from satsim.engine.kernels import CALLEE
from satsim.engine.kernels.queries import NOWHERE, score_pair, tie_threshold
from satsim.model.masks import BIDIRECTIONAL, CAUSAL, FUTURE, STRICT_FUTURE, STRICT_PAST


@numba.njit(cache=True, **CALLEE)
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


@numba.njit(cache=True, fastmath=False, **CALLEE)
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


@numba.njit(cache=True, fastmath=False, **CALLEE)
def _join(v, scores, lo, hi, threshold, low, high, first, weakest):
    """Add the members among keys [lo, hi) to a tie set; return its (first, weakest) anew.

    A tie set is its first member, its least member score and its per-column value range
    (``low``, ``high``, NaN ignored). As the attention kernels, a NaN score is a member.
    """
    for j in range(lo, hi):
        if scores[j] < threshold:
            continue
        first = j if first < 0 or j < first else first
        weakest = min(weakest, scores[j])
        _widen(v, j, low, high)
    return first, weakest


@numba.njit(cache=True, fastmath=False, **CALLEE)
def _members(v, scores, lo, hi, threshold, low, high):
    """The widened tie set of keys [lo, hi) from their scores: (first member, least score)."""
    low[:] = np.inf
    high[:] = -np.inf
    return _join(v, scores, lo, hi, threshold, low, high, NOWHERE, np.inf)


@numba.njit(cache=True, fastmath=False, **CALLEE)
def _widen(v, j, low, high):
    """Take key j's value row into the per-column range (NaN ignored)."""
    for c in range(v.shape[1]):
        value = np.float64(v[j, c])
        if value < low[c]:
            low[c] = value
        if value > high[c]:
            high[c] = value


@numba.njit(cache=True, fastmath=False, **CALLEE)
def _spread_from(v_first, low, high):
    """max_c max(high_c - v_first_c, v_first_c - low_c): the largest |v_j - v_first| of the set.

    Equal to taking each member in turn (rounding is monotone); a NaN difference is ignored.
    """
    spread = 0.0
    for c in range(v_first.shape[0]):
        first = np.float64(v_first[c])
        for gap in (high[c] - first, first - low[c]):
            if gap > spread:
                spread = gap
    return spread


@numba.njit(cache=True, **CALLEE)
def _same_row(a, b):
    """Whether two query rows are equal entry for entry (they score every key alike)."""
    for c in range(a.shape[0]):
        if a[c] != b[c]:
            return False
    return True


@numba.njit(cache=True, fastmath=False)
def tie_value_spread(q, k, v, lengths, tie_size, live, masks, scale, atol, rtol, relative):
    """Per (string, head): the largest value difference inside one tie set, and the value scale.

    q, k (B, H, T, d), v (B, H, T, e); ``lengths`` (B,) real positions; ``tie_size`` (B, H, T)
    from the attention run (only queries tying two or more keys are looked at); ``live`` (H,)
    heads to look at; ``masks`` (H,) their mask codes (:data:`satsim.model.masks.MASK_CODES`).
    Returns ``spread`` (B, H) and ``magnitude`` (B, H), the largest |v| of the
    string's real positions. A head's scan stops once spread > relative * magnitude.

    Queries are taken in the order in which their key ranges grow (descending for the future
    masks). A query equal to the one before scores the same keys alike, so its tie set is the
    one before's updated with the keys it adds: the best score, and per value column the least
    and largest member value; only a raised best whose threshold drops a member rescans the
    range's stored scores. A constant query then costs O(1) a key instead of O(T). A query
    whose successor differs from it is scanned alone (:func:`_query_spread`), as every query was.
    """
    batch, heads, length = q.shape[0], q.shape[1], q.shape[2]
    spread = np.zeros((batch, heads))
    magnitude = np.zeros((batch, heads))
    scores = np.empty(length)
    low = np.empty(v.shape[3])
    high = np.empty(v.shape[3])
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
            descending = masks[h] == FUTURE or masks[h] == STRICT_FUTURE
            kept = False  # whether the state below holds the previous query's tie set
            follows = False  # whether the next query equals this one
            lo, hi = 0, 0
            best, threshold, first, weakest = -np.inf, -np.inf, -1, np.inf
            for step in range(n):
                i = n - 1 - step if descending else step
                needed = tie_size[b, h, i] >= 2
                start, stop = key_bounds(masks[h], i, n)
                after = i - 1 if descending else i + 1  # the next query in this order
                same = follows  # this query equals the previous one
                follows = step + 1 < n and _same_row(q[b, h, i], q[b, h, after])
                if kept and same and start <= lo and stop >= hi:
                    raised = best
                    for a, z in ((start, lo), (hi, stop)):  # the keys this query adds
                        for j in range(a, z):
                            scores[j] = score_pair(q[b, h, i], k[b, h, j], scale)
                            if scores[j] > raised:
                                raised = scores[j]
                    if raised > best:
                        best = raised
                        threshold = tie_threshold(best, 2.0 * atol, 2.0 * rtol)
                    if weakest < threshold and not needed:  # rescan only a set that is read
                        kept = False
                        continue
                    if weakest < threshold:  # a member leaves: rescan the stored scores
                        first, weakest = _members(v[b, h], scores, start, stop, threshold,
                                                  low, high)
                    else:
                        for a, z in ((start, lo), (hi, stop)):
                            first, weakest = _join(v[b, h], scores, a, z, threshold, low, high,
                                                   first, weakest)
                elif needed and not follows:
                    kept = False  # the next query differs: this one's scan alone, as before
                    found = _query_spread(q[b, h, i], k[b, h], v[b, h], start, stop, scale, atol,
                                          rtol, scores, limit)
                    if found > spread[b, h]:
                        spread[b, h] = found
                    if spread[b, h] > limit:
                        break
                    continue
                elif needed:
                    best = -np.inf
                    for j in range(start, stop):
                        scores[j] = score_pair(q[b, h, i], k[b, h, j], scale)
                        best = max(best, scores[j])
                    threshold = tie_threshold(best, 2.0 * atol, 2.0 * rtol)
                    first, weakest = _members(v[b, h], scores, start, stop, threshold, low,
                                              high)
                    kept = True
                else:
                    kept = False
                    continue
                lo, hi = start, stop
                if needed and first >= 0:
                    found = _spread_from(v[b, h, first], low, high)
                    if found > spread[b, h]:
                        spread[b, h] = found
                    if spread[b, h] > limit:
                        break
    return spread, magnitude
