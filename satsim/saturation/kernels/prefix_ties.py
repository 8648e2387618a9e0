"""Numba helpers: the limit's tie sets of a growing key set, kept per query class.

:func:`satsim.saturation.kernels.expansion.expanded_attention` filters, for every query, the allowed
key classes degree by degree from the top score degree (keep the values ≥ best − TOL·spread,
best and spread over the classes still tied). Queries equal in every coefficient (a query
class) see the same scores, and consecutive queries of a mask see the same keys plus at most
one, so where a head has few query classes the filter is kept per class and updated as keys
arrive (O(degrees) a key where ties are exact or clear, instead of O(keys) a query): per
degree index t the
candidates C_t (classes tied at every degree above), their best value, spread, the largest
value among those removed at t, and their key count; per class its level (how many degrees it
survived). An arrival that could bring a removed class back (the threshold falls below a
removed value) or meets an unknown (NaN) or infinite score rebuilds the filter from every key,
as the per-query filter would; a NaN or infinite score leaves the query class to the per-query
filter.

The tie sets are those of the per-query filter exactly: the same values (one function computes
every score), the same thresholds (best and spread are maxima over the same sets), the same
candidate lists in the order the classes were admitted. Only the sum over the leading tie set
(for the size of a split's effect) is added up in another order.

State of one head, per query class ``qc`` (arrays indexed [qc, ...]):
``level`` (classes,): degrees survived, -1 before the class is seen; ``seen`` (classes,): keys
of the class this query class has counted; ``lists`` (degrees + 1, T): C_u for u ≥ 1 in
admission order, ``sizes`` their lengths; ``best``, ``spread``, ``removed`` (degrees,);
``count`` (degrees + 1,): keys in C_u; ``lead`` (features,): the sum of the top value term over
C_1's keys; ``flags`` [lead stale, per-query filter from now on, keys of the log counted].
"""

from __future__ import annotations

import math

import numba
import numpy as np

from satsim.engine.kernels import CALLEE
from satsim.saturation.kernels.limit_scores import class_value

LEAD_STALE, PER_QUERY, COUNTED = 0, 1, 2
"""Indices into a query class's ``flags``."""

REBUILT, UNKNOWN = 1, 2
"""What :func:`_filter_down` reports besides 0 (done)."""


@numba.njit(cache=True, fastmath=False, **CALLEE)
def new_state(query_classes, key_classes, degrees, length, features):
    """Empty per-query-class state for one head (see the module docstring)."""
    return (np.full((query_classes, key_classes), -1, dtype=np.int64),
            np.zeros((query_classes, key_classes), dtype=np.int64),
            np.empty((query_classes, degrees + 1, length), dtype=np.int64),
            np.zeros((query_classes, degrees + 1), dtype=np.int64),
            np.full((query_classes, degrees), -np.inf),
            np.zeros((query_classes, degrees)),
            np.full((query_classes, degrees), -np.inf),
            np.zeros((query_classes, degrees + 1), dtype=np.int64),
            np.zeros((query_classes, features)),
            np.zeros((query_classes, 3), dtype=np.int64))


@numba.njit(cache=True, fastmath=False, **CALLEE)
def reset_state(state):
    """Forget every key (a new head)."""
    level, seen, _, sizes, best, spread, removed, count, lead, flags = state
    level[:] = -1
    seen[:] = 0
    sizes[:] = 0
    best[:] = -np.inf
    spread[:] = 0.0
    removed[:] = -np.inf
    count[:] = 0
    lead[:] = 0.0
    flags[:] = 0


@numba.njit(cache=True, fastmath=False, **CALLEE)
def _filter_down(state, qc, start, source, n_source, score, values, tol):
    """Refilter C_start (``source``, complete, in admission order) and every degree below it.

    Sets the stats, lists, counts and levels from degree index ``start`` down. Returns UNKNOWN
    if a score is NaN or infinite (the per-query filter handles those), else 0.
    """
    level, seen, lists, sizes, best, spread, removed, count, _, flags = state
    degrees = best.shape[1]
    if start == 0:
        flags[qc, LEAD_STALE] = 1
    current, n = source, n_source
    for t in range(start, degrees):
        high, wide = -np.inf, 0.0
        for idx in range(n):
            value = class_value(score, current[idx], t)
            if not math.isfinite(value):  # as the per-query filter treats them: left to it
                return UNKNOWN
            values[idx] = value
            high = max(high, value)
            wide = max(wide, abs(value))
        threshold = high - tol * wide
        best[qc, t], spread[qc, t], removed[qc, t] = high, wide, -np.inf
        kept, keys = 0, 0
        for idx in range(n):
            cls = current[idx]
            if values[idx] >= threshold:
                lists[qc, t + 1, kept] = cls
                kept += 1
                keys += seen[qc, cls]
            else:
                level[qc, cls] = t
                removed[qc, t] = max(removed[qc, t], values[idx])
        sizes[qc, t + 1], count[qc, t + 1] = kept, keys
        current, n = lists[qc, t + 1], kept
    for idx in range(n):
        level[qc, current[idx]] = degrees
    return 0


@numba.njit(cache=True, fastmath=False, **CALLEE)
def _insert(state, qc, cls, score, values, tol):
    """Add a class's first key to the filter; REBUILT asks for a rebuild from every key."""
    level, seen, lists, sizes, best, spread, removed, count, _, flags = state
    degrees = best.shape[1]
    seen[qc, cls] = 1
    count[qc, 0] += 1
    for t in range(degrees):
        value = class_value(score, cls, t)
        if not math.isfinite(value):
            return REBUILT
        old = best[qc, t] - tol * spread[qc, t]
        best[qc, t] = max(best[qc, t], value)
        spread[qc, t] = max(spread[qc, t], abs(value))
        threshold = best[qc, t] - tol * spread[qc, t]
        if threshold < old and removed[qc, t] >= threshold:
            return REBUILT  # a class removed at this degree may be tied again
        dropped = False
        if threshold > old:  # survivors below the raised threshold leave
            kept = 0
            for idx in range(sizes[qc, t + 1]):
                other = lists[qc, t + 1, idx]
                mine = class_value(score, other, t)
                if mine >= threshold:
                    lists[qc, t + 1, kept] = other
                    kept += 1
                    continue
                dropped = True
                removed[qc, t] = max(removed[qc, t], mine)
                for u in range(t + 1, level[qc, other] + 1):
                    count[qc, u] -= seen[qc, other]
                level[qc, other] = t
            sizes[qc, t + 1] = kept
            if dropped and t == 0:
                flags[qc, LEAD_STALE] = 1
        survives = value >= threshold  # (the threshold rises only under a new best: it does)
        if survives:
            lists[qc, t + 1, sizes[qc, t + 1]] = cls
            sizes[qc, t + 1] += 1
            count[qc, t + 1] += 1
            level[qc, cls] = t + 1
        else:
            level[qc, cls] = t
            removed[qc, t] = max(removed[qc, t], value)
        if dropped:  # the degrees below hold classes that left: refilter them
            if _filter_down(state, qc, t + 1, lists[qc, t + 1], sizes[qc, t + 1], score, values,
                            tol) == UNKNOWN:
                return REBUILT
            return 0
        if not survives:
            return 0
    return 0


@numba.njit(cache=True, fastmath=False, **CALLEE)
def _rebuild(state, qc, active, n_active, members, score, values, tol):
    """The filter from every admitted key; False (per-query filter from now on) on a NaN."""
    level, seen, _, _, _, _, _, count, _, flags = state
    total = 0
    for idx in range(n_active):
        seen[qc, active[idx]] = members[active[idx]]
        total += members[active[idx]]
    count[qc, 0] = total
    if _filter_down(state, qc, 0, active, n_active, score, values, tol) == UNKNOWN:
        flags[qc, PER_QUERY] = 1
        return False
    return True


@numba.njit(cache=True, fastmath=False, **CALLEE)
def catch_up(state, qc, log, n_log, active, n_active, members, key_class, v, h, score, values,
             tol):
    """Bring query class ``qc`` up to every admitted key; False if it must filter per query.

    ``log`` holds the keys in the order they were admitted; the class's own counter of that
    log is ``flags[qc, COUNTED]``.
    """
    level, seen, _, _, _, _, _, count, lead, flags = state
    if flags[qc, PER_QUERY]:
        return False
    rebuild = False
    while flags[qc, COUNTED] < n_log and not rebuild:
        j = log[flags[qc, COUNTED]]
        flags[qc, COUNTED] += 1
        cls = key_class[h, j]
        if level[qc, cls] < 0:
            rebuild = _insert(state, qc, cls, score, values, tol) == REBUILT
        else:
            seen[qc, cls] += 1
            for u in range(level[qc, cls] + 1):
                count[qc, u] += 1
        if not rebuild and level[qc, cls] >= 1 and not flags[qc, LEAD_STALE]:
            for c in range(lead.shape[1]):
                lead[qc, c] += v[0, h, j, c]
    if rebuild:
        flags[qc, COUNTED] = n_log
        return _rebuild(state, qc, active, n_active, members, score, values, tol)
    return True


@numba.njit(cache=True, fastmath=False, **CALLEE)
def lead_sum(state, qc, sums):
    """The sum of the top value term over C_1's keys, (features,), from the class sums if stale."""
    _, _, lists, sizes, _, _, _, _, lead, flags = state
    if flags[qc, LEAD_STALE]:
        lead[qc] = 0.0
        for idx in range(sizes[qc, 1]):
            for c in range(lead.shape[1]):
                lead[qc, c] += sums[lists[qc, 1, idx], 0, c]
        flags[qc, LEAD_STALE] = 0
    return lead[qc]
