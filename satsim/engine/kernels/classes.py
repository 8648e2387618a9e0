"""Hard attention over keys that repeat: one score per key class, tie sets as unions of classes.

Equal key rows give equal scores against every query, so a query's tie set is a union of key classes
(all of a class's allowed positions up to the query, or none of them). A layer-0 key of a model
without positions is a function of the token, so a long string has as many classes as symbols.
:func:`attend_by_classes` scores each class once per query (the strict float64 score of
:func:`satsim.engine.kernels.queries.score_pair`, so max, runner-up, threshold and gap are those of
every other path, bit for bit), counts tie sets from per-class counts, and takes unique-hard picks
from per-class first and last positions.

The saturated mean must be the reference's sum: the tie set's values added one by one in key
order, in float64. A union of classes C is summed once per C as a running sum that only ever
advances (causal queries come in ascending order, and each later tie set of the same classes
holds the earlier one's keys, then later ones), so every query's total is that very sequence of
additions, not a sum of per-class prefix sums (whose rounding would differ). At most
``_MAX_SETS`` unions are kept; a query whose union is not among them sums its tie set directly,
as the per-query path does.
"""

from __future__ import annotations

import numba
import numpy as np

from satsim.engine.kernels import CALLEE, lock_cache_writes, stamp_module_kernels
from satsim.engine.kernels import queries as _queries_module
from satsim.engine.kernels.queries import (
    GENERAL,
    NO_COUNT,
    SATURATED,
    UNIQUE_LEFT,
    copy_row,
    row_is_zero,
    rows_equal,
    score_pair,
    tie_threshold,
    uniform_gap,
    write_mean,
)

MAX_CLASSES = 64
"""Key classes at most (a union of classes is a 64-bit mask)."""
_MAX_SETS = 32
KEY_CLASSES = 3
"""Path of an item run by classes (after attention's GENERAL, SAME_SCORES, SAME_QUERIES)."""
MIN_KEYS = 512
"""Keys per item from which general items of hard kinds are checked for classes (below, the
per-query kernel costs about what the check does)."""


@numba.njit(cache=True, nogil=True, fastmath=False)
def key_classes(k, key_mask, labels, representatives):
    """Label each allowed key with its class (equal rows, first seen first); -1 if not allowed.

    Write the first position of each class to ``representatives`` (length MAX_CLASSES); return
    the number of classes, or -1 as soon as there are more than MAX_CLASSES.
    """
    n_classes = 0
    previous = -1
    for j in range(k.shape[0]):
        labels[j] = -1
        if not key_mask[j]:
            continue
        if previous >= 0 and rows_equal(k[j], k[representatives[previous]]):
            labels[j] = previous
            continue
        found = -1
        for c in range(n_classes):
            if rows_equal(k[j], k[representatives[c]]):
                found = c
                break
        if found < 0:
            if n_classes == MAX_CLASSES:
                return -1
            representatives[n_classes] = j
            found = n_classes
            n_classes += 1
        labels[j] = found
        previous = found
    return n_classes


@numba.njit(cache=True, nogil=True, fastmath=False, **CALLEE)
def _add_values(v, labels, members, start, stop, total):
    """Add v_j for the keys start .. stop - 1 whose class is in ``members``, in key order."""
    one = np.uint64(1)
    for j in range(start, stop):
        c = labels[j]
        if c >= 0 and (members >> np.uint64(c)) & one:
            for t in range(v.shape[1]):
                total[t] += np.float64(v[j, t])


@numba.njit(cache=True, nogil=True, fastmath=False, **CALLEE)
def _running_sum(v, labels, members, stop, set_masks, set_ends, set_sums, n_sets, total):
    """Return the row of set_sums holding the sum over keys below ``stop`` in ``members``.

    Advances that union's running sum (adding a new one while there is room); -1 where the
    table is full, after summing into ``total`` directly. Return (row, n_sets).
    """
    row = -1
    for r in range(n_sets):
        if set_masks[r] == members:
            row = r
            break
    if row < 0 and n_sets < set_masks.shape[0]:
        row = n_sets
        n_sets += 1
        set_masks[row] = members
        set_ends[row] = 0
        set_sums[row, :] = 0.0
    if row < 0:
        total[:] = 0.0
        _add_values(v, labels, members, NO_COUNT, stop, total)
        return row, n_sets
    _add_values(v, labels, members, set_ends[row], stop, set_sums[row])
    set_ends[row] = stop
    return row, n_sets


@numba.njit(cache=True, nogil=True, fastmath=False)
def attend_by_classes(q, k, v, query_mask, causal, kind, atol, rtol, scale, labels,
                      representatives, n_classes, out, tie_size, tie_gap):
    """Attend one item (q (T, d), k (S, d), v (S, e)) of a hard kind whose keys form classes.

    ``labels`` and ``representatives`` (each class's first key) as :func:`key_classes` wrote
    them for k and its key mask, with ``n_classes`` classes; ``scale`` nonzero (so equal scores
    are equal bits: a zero score is scale·(+0), never of both signs, and the gap of a repeated
    max is +0 as in key order).
    Writes out, tie_size, tie_gap rows of the real queries.
    """
    T, S, e = q.shape[0], k.shape[0], v.shape[1]
    one = np.uint64(1)
    counts = np.zeros(n_classes, dtype=np.int64)
    last = np.full(n_classes, -1, dtype=np.int64)
    class_scores = np.empty(n_classes)
    set_masks = np.zeros(_MAX_SETS, dtype=np.uint64)
    set_ends = np.zeros(_MAX_SETS, dtype=np.int64)
    set_sums = np.zeros((_MAX_SETS, e))
    total = np.empty(e)
    n_sets = NO_COUNT
    seen = 0  # keys below this position are counted
    present = NO_COUNT  # allowed keys counted so far
    for i in range(T):
        stop = i + 1 if causal else S
        for j in range(seen, stop):
            c = labels[j]
            if c >= 0:
                counts[c] += 1
                last[c] = j
                present += 1
        seen = max(seen, stop)
        if not query_mask[i]:
            continue
        if present == 0:
            continue
        members = np.uint64(0)
        if row_is_zero(q[i]):  # every allowed key ties (as the per-query path: no scores)
            for c in range(n_classes):
                if counts[c] > 0:
                    members |= one << np.uint64(c)
            size = present
            gap = uniform_gap(present)
        else:
            best = -np.inf
            for c in range(n_classes):
                if counts[c] > 0:
                    s = score_pair(q[i], k[representatives[c]], scale)
                    class_scores[c] = s
                    best = max(best, s)
            # Runner-up: the max again if two keys reach it, else the best of the rest.
            at_best = 0
            runner_up = -np.inf
            for c in range(n_classes):
                if counts[c] > 0:
                    if class_scores[c] == best:
                        at_best += counts[c]
                    else:
                        runner_up = max(runner_up, class_scores[c])
            if at_best >= 2:
                runner_up = best
            theta = tie_threshold(best, atol, rtol)
            size = NO_COUNT
            for c in range(n_classes):
                if counts[c] > 0 and class_scores[c] >= theta:
                    members |= one << np.uint64(c)
                    size += counts[c]
            gap = best - runner_up
        tie_size[i] = size
        tie_gap[i] = gap
        if kind == SATURATED:
            row, n_sets = _running_sum(v, labels, members, stop, set_masks, set_ends, set_sums,
                                       n_sets, total)
            write_mean(out[i], set_sums[row] if row >= 0 else total, size)
            continue
        pick = -1
        for c in range(n_classes):
            if (members >> np.uint64(c)) & one:
                if kind == UNIQUE_LEFT:  # a class's first key is its representative
                    first = representatives[c]
                    pick = first if pick < 0 else min(pick, first)
                else:
                    pick = max(pick, last[c])
        copy_row(out[i], v[pick])


@numba.njit(cache=True, nogil=True, fastmath=False)
def few_classes(k, key_mask, paths):
    """Return, per item (N,), whether it is GENERAL in ``paths`` and its keys form classes."""
    labels = np.empty(k.shape[1], dtype=np.int64)
    representatives = np.empty(MAX_CLASSES, dtype=np.int64)
    chosen = np.zeros(k.shape[0], dtype=np.bool_)
    for n in range(k.shape[0]):
        if paths[n] == GENERAL:
            chosen[n] = key_classes(k[n], key_mask[n], labels, representatives) >= 0
    return chosen


@numba.njit(cache=True, nogil=True, fastmath=False, **CALLEE)
def attend_if_classes(q, k, v, key_mask, query_mask, causal, kind, atol, rtol, scale, labels,
                      representatives, out, tie_size, tie_gap):
    """Label one item's keys; if they form classes, attend by them and return True, else False.

    Scratch: labels (S,) and representatives (MAX_CLASSES,) int64, overwritten. Outputs as
    :func:`attend_by_classes` writes them; nothing is written when it returns False.
    """
    n_classes = key_classes(k, key_mask, labels, representatives)
    if n_classes < 0:
        return False
    attend_by_classes(q, k, v, query_mask, causal, kind, atol, rtol, scale, labels,
                      representatives, n_classes, out, tie_size, tie_gap)
    return True


@numba.njit(cache=True, nogil=True, fastmath=False)
def attend_items_by_classes(q, k, v, key_mask, query_mask, causal, kind, atol, rtol, scale):
    """Run every item by :func:`attend_by_classes` (each must have keys in classes).

    Arrays as for :func:`satsim.engine.kernels.queries.attend`, scale nonzero; return (out,
    tie_size, tie_gap) as it does.
    """
    n_items, T, S = q.shape[0], q.shape[1], k.shape[1]
    out = np.zeros((n_items, T, v.shape[2]), dtype=q.dtype)
    tie_size = np.zeros((n_items, T), dtype=np.int64)
    tie_gap = np.full((n_items, T), np.nan)
    labels = np.empty(S, dtype=np.int64)
    representatives = np.empty(MAX_CLASSES, dtype=np.int64)
    for n in range(n_items):
        attend_if_classes(q[n], k[n], v[n], key_mask[n], query_mask[n], causal, kind, atol, rtol,
                          scale, labels, representatives, out[n], tie_size[n], tie_gap[n])
    return out, tie_size, tie_gap


stamp_module_kernels(globals(), (_queries_module,))
lock_cache_writes(globals())
