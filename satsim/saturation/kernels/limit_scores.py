"""Numba helpers: the score coefficients of the limit's attention, one degree at a time.

Queries and keys are power series in c, their coefficients stacked from the top degree down
(K, H, T, e); ``gap`` counts degrees below the top score degree. Shared by the limit's kernels
(:mod:`satsim.saturation.kernels.expansion`, :mod:`satsim.saturation.kernels.prefix_ties`).
"""

from __future__ import annotations

import numba

from satsim.engine.kernels import CALLEE


@numba.njit(cache=True, fastmath=False, **CALLEE)
def score_at(q, k, q_live, k_live, h, i, j, gap, scale, tol):
    """The score coefficient ``gap`` degrees below the top of query i and key j, snapped."""
    total = 0.0
    magnitude = 0.0
    for a in range(max(0, gap - k.shape[0] + 1), min(gap, q.shape[0] - 1) + 1):
        b = gap - a
        if not (q_live[a] and k_live[b]):
            continue
        for c in range(q.shape[3]):
            total += q[a, h, i, c] * k[b, h, j, c]
            magnitude += abs(q[a, h, i, c]) * abs(k[b, h, j, c])
    if abs(total) <= tol * magnitude:
        return 0.0
    return scale * total


@numba.njit(cache=True, fastmath=False, **CALLEE)
def gap_live(q_live, k_live, gap):
    """Whether any pair of live coefficients lands ``gap`` degrees below the top score degree."""
    for a in range(max(0, gap - k_live.shape[0] + 1), min(gap, q_live.shape[0] - 1) + 1):
        if q_live[a] and k_live[gap - a]:
            return True
    return False


@numba.njit(cache=True, fastmath=False, **CALLEE)
def class_score(cache, stamp, want, row, cls, gap, q, k, q_live, k_live, h, i, rep, scale, tol):
    """The score coefficient ``gap`` degrees below the top, for query i and key class ``cls``.

    Computed once per ``row`` of the cache (a query class) and stamp; row -1: no cache.
    """
    if row < 0:
        return score_at(q, k, q_live, k_live, h, i, rep, gap, scale, tol)
    if stamp[row, cls, gap] != want:
        cache[row, cls, gap] = score_at(q, k, q_live, k_live, h, i, rep, gap, scale, tol)
        stamp[row, cls, gap] = want
    return cache[row, cls, gap]


@numba.njit(cache=True, fastmath=False, **CALLEE)
def class_value(score, cls, gap):
    """The score ``gap`` degrees below the top for key class ``cls``; ``score`` holds the rest.

    ``score`` is (cache, stamp, want, row, q, k, q_live, k_live, h, i, reps of head h, scale,
    tol, live), ``live`` (gaps,) telling whether any pair of coefficients lands at each gap
    (0 where none does).
    """
    cache, stamp, want, row, q, k, q_live, k_live, h, i, reps, scale, tol, live = score
    if not live[gap]:
        return 0.0
    return class_score(cache, stamp, want, row, cls, gap, q, k, q_live, k_live, h, i, reps[cls],
                       scale, tol)
