"""Numba kernel: the limit of softmax attention over power series in the scale c.

Queries, keys and values are power series in c in the exact limit (:mod:`satsim.saturation.exact`).

Each of q, k, v arrives as its coefficients stacked from its top degree down, (K, H, T, e). For
every query the kernel compares its keys degree by degree from the top score degree, as
:func:`satsim.saturation.reference.limit_weights` (the NumPy meaning) does: a gap at a positive
degree removes a key; the keys left share the weights exp(s_0 + s_-1/c + ...) normalised, a
power series in 1/c; the output is that series times the values'. The saving is in the order of
work: the top-degree score of every allowed key needs one dot product, and the lower degrees
are computed only for the keys still tied, never for a T×T matrix of every degree.

Coefficients below TOL times the magnitude of what was summed are exact zeros; a NaN
coefficient is unknown and spreads to whatever it reaches, as in :mod:`satsim.saturation.series`.
"""

from __future__ import annotations

import math

import numba
import numpy as np

from satsim.engine.kernels import CALLEE
from satsim.engine.kernels.queries import NO_COUNT
from satsim.model.masks import BIDIRECTIONAL, CAUSAL, FUTURE, STRICT_FUTURE, STRICT_PAST
from satsim.saturation.kernels.limit_scores import class_score, gap_live
from satsim.saturation.kernels.prefix_ties import (
    catch_up,
    lead_sum,
    new_state,
    reset_state,
)

PREFIX_CLASSES = 4
"""Heads with at most this many query classes keep each class's tie filter as keys arrive
(:mod:`satsim.saturation.kernels.prefix_ties`); the others filter every query's keys afresh."""


@numba.njit(cache=True, fastmath=False, **CALLEE)
def _exp_series(a, e):
    """Coefficients e of exp(Σ_{m≥1} a[m] u^m) (a[0] ignored)."""
    e[0] = 1.0
    for n in range(1, a.shape[0]):
        acc = 0.0
        for m in range(1, n + 1):
            acc += m * a[m] * e[n - m]
        e[n] = acc / n


@numba.njit(cache=True, fastmath=False, **CALLEE)
def _ratio_series(num, den, out, tol):
    """Coefficients of num(u) / den(u) for one key (den[0] ≠ 0), snapped to exact zeros."""
    for n in range(num.shape[0]):
        carried = 0.0
        scale = abs(num[n])
        for m in range(1, n + 1):
            carried += den[m] * out[n - m]
            scale += abs(den[m] * out[n - m])
        value = num[n] - carried
        out[n] = (0.0 if abs(value) <= tol * scale else value) / den[0]


@numba.njit(cache=True, fastmath=False, **CALLEE)
def _class_weights(a, count, members, cand, top0, series, num, den, weights, shared, tol):
    """Each candidate class's weight series in 1/c, for the score terms ``a`` (orders, classes).

    exp(a_0 - top0 + Σ_m a_m u^m) per key, over the sum of it across every key. Where every
    class has the same terms below degree 0 (no 1/c corrections, or equal ones), the
    normalised series is computed once and scaled: it is linear in its numerator.
    """
    orders = a.shape[0]
    same_tails = True
    for idx in range(1, count):
        for m in range(1, orders):
            if not a[m, idx] == a[m, 0]:  # NaN: not the same
                same_tails = False
    if same_tails and count > 0:
        for m in range(orders):
            series[m] = a[m, 0]
        _exp_series(series, shared)
        total = 0.0
        for idx in range(count):
            total += members[cand[idx]] * math.exp(a[0, idx] - top0)
        for m in range(orders):
            den[m] = total * shared[m]
        _ratio_series(shared, den, series, tol)
        for idx in range(count):
            base = math.exp(a[0, idx] - top0)
            for m in range(orders):
                weights[m, idx] = base * series[m]
        return
    for m in range(orders):
        den[m] = 0.0
    for idx in range(count):
        for m in range(orders):
            series[m] = a[m, idx]
        _exp_series(series, weights[:, idx])
        base = math.exp(a[0, idx] - top0)
        for m in range(orders):
            num[m, idx] = base * weights[m, idx]
            den[m] += members[cand[idx]] * num[m, idx]
    for idx in range(count):
        _ratio_series(num[:, idx], den, weights[:, idx], tol)


@numba.njit(cache=True, fastmath=False, **CALLEE)
def _classes_agree_below(cache, stamp, want, row, q, k, q_live, k_live, h, i, reps, cand, count,
                         first_gap, last_gap, scale, tol):
    """Whether the score coefficients ``first_gap`` to ``last_gap`` below the top agree.

    To TOL, across the ``count`` candidate key classes (represented by the keys ``reps``).
    """
    if count < 2:
        return True
    for gap in range(first_gap, last_gap + 1):
        high, low = -np.inf, np.inf
        for idx in range(count):
            value = class_score(cache, stamp, want, row, cand[idx], gap, q, k, q_live, k_live, h,
                                 i, reps[cand[idx]], scale, tol)
            if math.isnan(value):
                return False
            high = max(high, value)
            low = min(low, value)
        if not high - low <= tol * max(abs(high), abs(low)):
            return False
    return True


@numba.njit(cache=True, fastmath=False, **CALLEE)
def _admit(v, h, j, cls, members, sums, magnitudes, active, n_active):
    """Add key j to its class's count and value sums; return the number of active classes."""
    if members[cls] == 0:
        active[n_active] = cls
        n_active += 1
    members[cls] += 1
    for r in range(v.shape[0]):
        for c in range(v.shape[3]):
            value = v[r, h, j, c]
            sums[cls, r, c] += value
            if not math.isnan(value):
                magnitudes[cls, r, c] += abs(value)
    return n_active


@numba.njit(cache=True, fastmath=False)
def expanded_attention(q, q_live, k, k_live, v, v_live, key_class, reps, query_class, score_top,
                       score_floor, score_low, scale, masks, orders, tol, budget):
    """Limit attention of one layer over power-series queries, keys and values.

    q (Kq, H, T, e), k (Kk, H, T, e), v (Kv, H, T, f): coefficients from each one's top degree
    down; ``*_live`` (K,) marks the coefficients that are not zero everywhere. Keys whose rows
    (every coefficient) are equal score alike at every degree: ``key_class`` (H, T) numbers
    those classes per head and ``reps`` (H, T) gives a key of each class, so scores and weights
    are computed once per class and values summed per class (running sums over the queries in
    the order that only adds keys: ascending for the past masks, descending for the future
    ones; ``masks`` (H,) holds each head's code, :data:`satsim.model.masks.MASK_CODES`); queries
    equal in every coefficient share a ``query_class`` (H, T), and where the scores of every
    pair of classes fit in ``budget`` entries each pair's are computed once per head; with at
    most PREFIX_CLASSES query classes, each class's tie filter is kept as the keys arrive
    (:mod:`satsim.saturation.kernels.prefix_ties`) rather than redone per query. Scores
    have top degree ``score_top`` and are known down to ``score_floor`` (-inf: every degree),
    the lowest computed being ``score_low``. ``orders`` terms of the weights' series are kept.

    Returns, per (h, i): the output's coefficients z (orders + Kv - 1, H, T, f) from the values'
    top degree down; the tie-set size under the top-degree scores alone; the size once every
    positive degree has been compared; the degree whose term first split the leading tie set
    (0: none); whether the weights are unresolved (NaN); the largest change of the output's
    top-degree coefficient between the leading tie set's mean and the limit weights where the
    tie set split (else 0; NaN: unknown); and whether every score term below degree 0 agrees
    across the keys left.
    """
    heads, length = q.shape[1], q.shape[2]
    terms, features = v.shape[0], v.shape[3]
    z = np.zeros((orders + terms - 1, heads, length, features))
    lead_size = np.zeros((heads, length), dtype=np.int64)
    size = np.zeros((heads, length), dtype=np.int64)
    split_at = np.zeros((heads, length), dtype=np.int64)
    unresolved = np.zeros((heads, length), dtype=np.bool_)
    moved = np.zeros((heads, length))
    lower_agree = np.ones((heads, length), dtype=np.bool_)
    members = np.zeros(length, dtype=np.int64)
    sums = np.zeros((length, terms, features))
    magnitudes = np.zeros((length, terms, features))
    active = np.empty(length, dtype=np.int64)
    cand = np.empty(length, dtype=np.int64)
    values = np.empty(length)
    keep = np.empty(length, dtype=np.bool_)
    lead = np.empty(length, dtype=np.int64)
    n_lead = 0  # classes in the leading tie set, when the query filters its own keys
    a = np.empty((orders, length))
    series = np.empty(orders)
    shared = np.empty(orders)
    num = np.empty((orders, length))
    den = np.empty(orders)
    weights = np.empty((orders, length))
    total = np.empty((orders + terms - 1, features))
    magnitude = np.empty((orders + terms - 1, features))
    gaps = score_top - min(score_low, 0) + 1
    key_classes = key_class.max() + 1
    query_classes = query_class.max() + 1
    cached = query_classes * key_classes * gaps <= budget
    rows = query_classes if cached else 0
    cache = np.empty((rows, key_classes, gaps))
    stamp = np.zeros((rows, key_classes, gaps), dtype=np.int64)
    live = np.zeros(gaps, dtype=np.bool_)
    for gap in range(gaps):
        live[gap] = gap_live(q_live, k_live, gap)
    degrees = 0  # the positive score degrees compared
    while score_top - degrees >= 1 and score_top - degrees >= score_floor:
        degrees += 1
    prefix = degrees >= 1 and query_classes <= PREFIX_CLASSES
    state = new_state(query_classes if prefix else 0, key_classes if prefix else 0, degrees,
                      length if prefix else 0, features)
    _, _, lists, sizes, _, _, _, counts, _, _ = state
    log = np.empty(length, dtype=np.int64)
    for h in range(heads):
        members[:] = 0
        sums[:] = 0.0
        magnitudes[:] = 0.0
        n_active = NO_COUNT
        n_log = 0
        if prefix:
            reset_state(state)
        mask = masks[h]
        descending = mask == FUTURE or mask == STRICT_FUTURE
        if mask == BIDIRECTIONAL:
            for j in range(length):
                n_active = _admit(v, h, j, key_class[h, j], members, sums, magnitudes, active,
                                  n_active)
                log[j] = j
            n_log = length
        for step in range(length):
            i = length - 1 - step if descending else step
            row = query_class[h, i] if cached else -1
            want = h + 1
            newest = -1  # the key this query adds to those of the query before it
            if mask == CAUSAL or mask == FUTURE:
                newest = i
            elif mask == STRICT_PAST:
                newest = i - 1
            elif mask == STRICT_FUTURE and i + 1 < length:
                newest = i + 1
            if newest >= 0:
                n_active = _admit(v, h, newest, key_class[h, newest], members, sums, magnitudes,
                                  active, n_active)
                log[n_log] = newest
                n_log += 1
            if n_active == 0:  # no allowed key: the output is zero, the tie set empty
                continue
            qc = query_class[h, i]
            from_prefix = prefix and catch_up(
                state, qc, log, n_log, active, n_active, members, key_class, v, h,
                (cache, stamp, want, row, q, k, q_live, k_live, h, i, reps[h], scale, tol, live),
                values, tol)
            if from_prefix:  # the filter kept for this query class
                count, keys = sizes[qc, degrees], counts[qc, degrees]
                for c in range(count):  # a loop: a slice copy compiles its shape-error text
                    cand[c] = lists[qc, degrees, c]
                lead_size[h, i] = counts[qc, 1]
                for t in range(1, degrees):
                    if counts[qc, t + 1] < counts[qc, t]:
                        split_at[h, i] = score_top - t
                        break
                unknown = False
            else:  # this query's own filter over every allowed key class
                count = n_active
                keys = 0
                for idx in range(count):
                    cand[idx] = active[idx]
                    keys += members[active[idx]]
                unknown = False
                first = True
                degree = score_top
                while degree >= 1 and degree >= score_floor:
                    gap = score_top - degree
                    best = -np.inf
                    spread = 0.0
                    for idx in range(count):
                        value = 0.0
                        if live[gap]:
                            value = class_score(cache, stamp, want, row, cand[idx], gap, q, k,
                                                q_live, k_live, h, i, reps[h, cand[idx]], scale,
                                                tol)
                        values[idx] = value
                        if math.isnan(value):
                            unknown = True
                        else:
                            best = max(best, value)
                            spread = max(spread, abs(value))
                    kept = 0
                    kept_keys = 0
                    for idx in range(count):
                        keep[idx] = values[idx] >= best - tol * spread
                        if keep[idx]:
                            kept += 1
                            kept_keys += members[cand[idx]]
                    if first:
                        first = False
                        lead_size[h, i] = kept_keys
                        n_lead = 0
                        for idx in range(count):
                            if keep[idx]:
                                lead[n_lead] = cand[idx]
                                n_lead += 1
                    elif kept_keys < keys and split_at[h, i] == 0:
                        split_at[h, i] = degree
                    if not unknown:
                        n = 0
                        for idx in range(count):
                            if keep[idx]:
                                cand[n] = cand[idx]
                                n += 1
                        count = n
                        keys = kept_keys
                    degree -= 1
                if first:  # no positive degree compared: the leading tie set is every key
                    lead_size[h, i] = keys
            size[h, i] = keys
            bad = unknown or (keys > 1 and score_floor > 0)
            # Weights per class: exp(s_0 - max s_0) times exp of the 1/c terms, normalised.
            top0 = -np.inf
            for idx in range(count):
                for m in range(orders):
                    degree = -m
                    if degree > score_top or degree < score_low or degree < score_floor:
                        a[m, idx] = 0.0
                    else:
                        a[m, idx] = class_score(cache, stamp, want, row, cand[idx],
                                                 score_top - degree, q, k, q_live, k_live, h, i,
                                                 reps[h, cand[idx]], scale, tol)
                if math.isnan(a[0, idx]):
                    top0 = np.nan
                elif not math.isnan(top0):
                    top0 = max(top0, a[0, idx])
            _class_weights(a, count, members, cand, top0, series, num, den, weights, shared,
                           tol)
            for idx in range(count):
                if math.isnan(weights[0, idx]):
                    bad = True
            unresolved[h, i] = bad
            if score_floor == -np.inf and score_low < 0:
                lower_agree[h, i] = _classes_agree_below(
                    cache, stamp, want, row, q, k, q_live, k_live, h, i, reps[h], cand, count,
                    score_top - min(-1, score_top), score_top - score_low, scale, tol)
            if bad:  # unknown weights: NaN wherever they meet a value term that is not all 0
                for idx in range(count):
                    for m in range(orders):
                        weights[m, idx] = np.nan
            if keys < lead_size[h, i] and bad:
                moved[h, i] = np.nan
            elif keys < lead_size[h, i]:  # a split: how far the leading tie set's mean moves
                for c in range(features):
                    if from_prefix:
                        lead_mean = lead_sum(state, qc, sums)[c]
                    else:
                        lead_mean = 0.0
                        for idx in range(n_lead):
                            lead_mean += sums[lead[idx], 0, c]
                    lead_mean /= lead_size[h, i]
                    limit_mean = 0.0
                    for idx in range(count):
                        limit_mean += weights[0, idx] * sums[cand[idx], 0, c]
                    change = abs(lead_mean - limit_mean)
                    if math.isnan(change) or math.isnan(moved[h, i]):
                        moved[h, i] = np.nan  # an unknown value: unknown whether it moved
                    else:
                        moved[h, i] = max(moved[h, i], change)
            total[:] = 0.0
            magnitude[:] = 0.0
            for m in range(orders):
                for idx in range(count):
                    w = weights[m, idx]
                    if w == 0.0:  # a zero weight adds nothing, even beside an unknown value
                        continue
                    cls = cand[idx]
                    for r in range(terms):
                        if not v_live[r]:
                            continue
                        for c in range(features):
                            total[m + r, c] += w * sums[cls, r, c]
                            magnitude[m + r, c] += abs(w) * magnitudes[cls, r, c]
            for out in range(z.shape[0]):
                for c in range(features):
                    value = total[out, c]
                    z[out, h, i, c] = 0.0 if abs(value) <= tol * magnitude[out, c] else value
    return z, lead_size, size, split_at, unresolved, moved, lower_agree
