"""Numba kernels of softmax, saturated and unique-hard attention, fused per query.

Same meaning as :mod:`satsim.reference.attention`, without ever building a T×S matrix: each query
computes its score row into a scratch row of length S, takes the max, then the tie-set mean (or
the softmax average) in one more pass. Items (batch × heads) whose scores do not depend on the
key, or not on the query, take fast paths with the same results:

- same scores: the allowed keys of the item are identical rows, or every real query is zero.
  Every allowed key ties, so the output is their mean (softmax and saturated) or the first or
  last of them (unique-hard), kept as a running prefix when causal: O(T·e).
- same queries: every real query is the same row, so the scores s_j are computed once.
  Bidirectional, one query is attended and its result copied. Causal, queries in ascending
  order: the running max only grows, so does the tie threshold (see :func:`tie_threshold`), and
  a key that falls below it never comes back (one below it on arrival is never kept). A
  min-heap of scores gives the tie set (its size, and its value sum as a running compensated
  sum), a FIFO queue its leftmost member, a stack its rightmost: O(T log T + T·e). Causal
  softmax takes the general path.
A zero query inside a general item ties all its allowed keys too and skips its score row.

Everything that touches scores (dot products, max, threshold, gap) is compiled without fastmath,
so that the general path, the fast paths and the reference agree bit for bit on scores, tie sets
and tie gaps; fastmath ({'reassoc', 'contract', 'nsz', 'arcp'}, never the full set, which assumes
no inf) is kept to the loops that average values.
"""

from __future__ import annotations

import numba
import numpy as np

from satsim.engine.kernels import CALLEE, lock_cache_writes

SOFTMAX, SATURATED, UNIQUE_LEFT, UNIQUE_RIGHT, SCORE_CLASS = 0, 1, 2, 3, 4
"""Kind codes of :func:`attend`. The kernels' ``beta`` is softmax's β, or SCORE_CLASS's width δ."""

_FASTMATH = {"reassoc", "contract", "nsz", "arcp"}  # not True: a max starting at -inf needs inf
# Strict functions say fastmath=False explicitly: left unset, a callee inherits its caller's flags.
GENERAL, SAME_SCORES, SAME_QUERIES, UNKNOWN = 0, 1, 2, -1
"""Paths of an item: general, every allowed key ties, every query the same row; or detect."""
QUERY_BLOCK = 32
"""Queries per block of a general item."""
NO_COUNT, NOWHERE = np.int64(0), np.int64(-1)
"""Starting values of counters and positions that reach a callee: typed int64, not as literals
(Numba compiles a callee once more for a literal argument, as a variable holds one before its
loop; about 0.2 s of cold compile each)."""


MAX_SCORE = 1e300
"""Scores bounded by this stay finite through max, threshold and gap; larger bounds are refused."""


@numba.njit(cache=True, fastmath=False, **CALLEE)
def score_pair(q_row, k_row, scale):
    """Return scale * (q . k) in float64, summed left to right, strictly (as the reference)."""
    total = 0.0
    for t in range(q_row.shape[0]):
        total += np.float64(q_row[t]) * np.float64(k_row[t])
    return scale * total


@numba.njit(cache=True, fastmath=False)
def tie_threshold(max_score, atol, rtol):
    """Return M - (atol + rtol*|M|) as M*(1∓rtol) - atol: non-decreasing in M, also in floats."""
    if max_score >= 0.0:
        return max_score * (1.0 - rtol) - atol
    return max_score * (1.0 + rtol) - atol


@numba.njit(cache=True, fastmath=False, **CALLEE)
def _add_compensated(total, error, values, sign):
    """Add sign * values to the Neumaier sum (total, error); strict, or it is optimised away."""
    for c in range(values.shape[0]):
        x = sign * np.float64(values[c])
        t = total[c] + x
        if abs(total[c]) >= abs(x):
            error[c] += (total[c] - t) + x
        else:
            error[c] += (x - t) + total[c]
        total[c] = t


@numba.njit(cache=True, fastmath=_FASTMATH, **CALLEE)
def _accumulate(total, weight, values):
    """Add weight * values to the float64 running total."""
    for c in range(values.shape[0]):
        total[c] += weight * values[c]


@numba.njit(cache=True, fastmath=False, **CALLEE)
def write_mean(out_row, total, count):
    """Write total / count into out_row (cast to its dtype); a true division, never 1/count."""
    for c in range(out_row.shape[0]):
        out_row[c] = total[c] / count


@numba.njit(cache=True, fastmath=_FASTMATH, **CALLEE)
def uniform_gap(count):
    """Return the tie gap when all of ``count`` allowed scores are equal."""
    if count == 0:
        return np.nan
    return 0.0 if count >= 2 else np.inf


@numba.njit(cache=True, fastmath=False, **CALLEE)
def row_is_zero(row):
    """Return whether every element of the row is zero."""
    for t in range(row.shape[0]):
        if row[t] != 0:
            return False
    return True


@numba.njit(cache=True, fastmath=False, **CALLEE)
def rows_equal(a, b):
    """Return whether two rows are equal element by element."""
    for t in range(a.shape[0]):
        if a[t] != b[t]:
            return False
    return True


@numba.njit(cache=True, fastmath=False, **CALLEE)
def copy_row(dst, src):
    """Copy src into dst, element by element.

    An array-to-array slice assignment would compile Numba's shape-mismatch error message: whole
    seconds of cold compile for a check that cannot fail here.
    """
    for c in range(dst.shape[0]):
        dst[c] = src[c]


@numba.njit(cache=True, fastmath=False, **CALLEE)
def _first_true(flags):
    """Return the index of the first True flag, or -1."""
    for i in range(flags.shape[0]):
        if flags[i]:
            return i
    return -1


@numba.njit(cache=True, fastmath=_FASTMATH, **CALLEE)
def _write_all_tied(v, kind, total, count, first, last, out_row):
    """Write the output when all ``count`` allowed keys, first .. last, tie (none if count = 0)."""
    if count == 0:
        return
    if kind == UNIQUE_LEFT:
        copy_row(out_row, v[first])
    elif kind == UNIQUE_RIGHT:
        copy_row(out_row, v[last])
    else:
        write_mean(out_row, total, count)


@numba.njit(cache=True, fastmath=_FASTMATH, **CALLEE)
def _attend_all_tied(v, key_mask, n_keys, kind, total, out_row):
    """Every allowed key below n_keys ties: write the kind's output; return (tie size, tie gap)."""
    total[:] = 0.0
    count = NO_COUNT
    first = NOWHERE
    last = NOWHERE
    for j in range(n_keys):
        if key_mask[j]:
            count += 1
            last = j
            if first < 0:
                first = j
            if kind == SATURATED or kind == SOFTMAX or kind == SCORE_CLASS:
                _accumulate(total, 1.0, v[j])
    _write_all_tied(v, kind, total, count, first, last, out_row)
    return count, uniform_gap(count)


@numba.njit(cache=True, fastmath=False, **CALLEE)
def top_two(s, best, runner_up):
    """The largest and second-largest of (best, runner_up) and a new value s."""
    if s > best:
        return s, best
    if s > runner_up:
        return best, s
    return best, runner_up


@numba.njit(cache=True, fastmath=False, **CALLEE)
def take_key(kind, j, v, total, chosen):
    """Key j is in the tie set: add its value (saturated) or note it (unique); return the pick."""
    if kind == SATURATED:
        _accumulate(total, 1.0, v[j])
    elif chosen < 0 or kind == UNIQUE_RIGHT:
        chosen = j
    return chosen


@numba.njit(cache=True, fastmath=False, **CALLEE)
def emit_output(kind, total, size, chosen, v, out_row):
    """Write a hard head's output: the tie set's mean, or the value of the unique pick."""
    if kind == SATURATED:
        write_mean(out_row, total, size)
    else:
        copy_row(out_row, v[chosen])


@numba.njit(cache=True, fastmath=False, **CALLEE)
def _hard_output(scores, key_mask, n_keys, theta, kind, v, total, out_row):
    """Write the saturated mean or the unique-hard pick of the keys scoring ≥ theta; return |S|."""
    total[:] = 0.0
    size = NO_COUNT
    chosen = NOWHERE
    for j in range(n_keys):
        if key_mask[j] and scores[j] >= theta:
            size += 1
            chosen = take_key(kind, j, v, total, chosen)
    emit_output(kind, total, size, chosen, v, out_row)
    return size


@numba.njit(cache=True, fastmath=False, **CALLEE)
def class_weight(s, best, width):
    """A score's weight under score-class(δ): exp(−c·δ), c = ⌊(M − s)/δ⌋; width 0: exp(s − M)."""
    if width == 0.0:
        return np.exp(s - best)
    return np.exp(-(np.floor((best - s) / width) * width))


@numba.njit(cache=True, fastmath=False, **CALLEE)
def attend_query(q_row, k, v, key_mask, n_keys, kind, beta, atol, rtol, scale, scores, total,
                  out_row):
    """Attend one query to the allowed keys below n_keys; write out_row, return (size, gap)."""
    if row_is_zero(q_row):
        return _attend_all_tied(v, key_mask, n_keys, kind, total, out_row)
    best = -np.inf
    runner_up = -np.inf
    count = 0
    for j in range(n_keys):
        if key_mask[j]:
            s = score_pair(q_row, k[j], scale)
            scores[j] = s
            count += 1
            best, runner_up = top_two(s, best, runner_up)
    if count == 0:
        return 0, np.nan
    theta = tie_threshold(best, atol, rtol)
    if kind != SOFTMAX and kind != SCORE_CLASS:
        return _hard_output(scores, key_mask, n_keys, theta, kind, v, total, out_row), \
            best - runner_up
    total[:] = 0.0
    size = 0
    weights = 0.0
    for j in range(n_keys):
        if key_mask[j]:
            s = scores[j]
            if s >= theta:
                size += 1
            if kind == SCORE_CLASS:
                w = class_weight(s, best, beta)
            else:
                w = np.exp(beta * (s - best))
            weights += w
            _accumulate(total, w, v[j])
    write_mean(out_row, total, weights)
    return size, best - runner_up


@numba.njit(cache=True, fastmath=False)
def item_path(q, k, key_mask, query_mask, causal, kind):
    """Choose the path of one item: same scores, same queries or general."""
    first_key = _first_true(key_mask)
    same_keys = True
    for j in range(first_key + 1, k.shape[0]):
        if key_mask[j] and not rows_equal(k[j], k[first_key]):
            same_keys = False
            break
    first_query = _first_true(query_mask)
    if same_keys or first_query < 0:
        return SAME_SCORES
    for i in range(first_query + 1, q.shape[0]):
        if query_mask[i] and not rows_equal(q[i], q[first_query]):
            return GENERAL
    if row_is_zero(q[first_query]):
        return SAME_SCORES
    if causal and (kind == SOFTMAX or kind == SCORE_CLASS):
        return GENERAL
    return SAME_QUERIES


@numba.njit(cache=True, fastmath=False, **CALLEE)
def _prefix_mean(v, key_mask, query_mask, out, tie_size, tie_gap):
    """Causal head whose allowed keys all tie, mean kinds: the running mean of the prefix.

    The arithmetic of :func:`_accumulate` (weight 1) and :func:`write_mean`, written out in one
    loop: no call per position.
    """
    T, e = v.shape
    total = np.zeros(e)
    count = NO_COUNT
    for i in range(T):
        if key_mask[i]:
            count += 1
            for c in range(e):
                total[c] += np.float64(v[i, c])
        if query_mask[i] and count > 0:
            for c in range(e):
                out[i, c] = total[c] / count
            tie_size[i] = count
            tie_gap[i] = uniform_gap(count)


@numba.njit(cache=True, fastmath=_FASTMATH, **CALLEE)
def attend_same_scores(v, key_mask, query_mask, causal, kind, out, tie_size, tie_gap):
    """Every allowed key ties: mean (or first/last) of v over them, a running prefix if causal."""
    T = query_mask.shape[0]
    if causal and (kind == SATURATED or kind == SOFTMAX or kind == SCORE_CLASS):
        _prefix_mean(v, key_mask, query_mask, out, tie_size, tie_gap)
        return
    total = np.zeros(v.shape[1])
    if not causal:
        first_query = _first_true(query_mask)
        if first_query < 0:
            return
        count, gap = _attend_all_tied(v, key_mask, key_mask.shape[0], kind, total,
                                      out[first_query])
        for i in range(first_query, T):
            if query_mask[i]:
                copy_row(out[i], out[first_query])
                tie_size[i] = count
                tie_gap[i] = gap
        return
    count = NO_COUNT
    first = NOWHERE
    last = NOWHERE
    for i in range(T):
        if key_mask[i]:
            count += 1
            last = i
            if first < 0:
                first = i
        if query_mask[i] and count > 0:  # unique kinds: the mean kinds took the prefix mean
            _write_all_tied(v, kind, total, count, first, last, out[i])
            tie_size[i] = count
            tie_gap[i] = uniform_gap(count)


@numba.njit(cache=True, fastmath=False, **CALLEE)
def _heap_push(scores, positions, size, score, position):
    """Push (score, position) onto the min-heap held in scores[:size], positions[:size]."""
    i = size
    while i > 0:
        parent = (i - 1) // 2
        if scores[parent] <= score:
            break
        scores[i] = scores[parent]
        positions[i] = positions[parent]
        i = parent
    scores[i] = score
    positions[i] = position


@numba.njit(cache=True, fastmath=False, **CALLEE)
def _heap_pop(scores, positions, size):
    """Remove the minimum of the min-heap of ``size`` entries; return its position."""
    top = positions[0]
    size -= 1
    score = scores[size]
    position = positions[size]
    i = 0
    while True:
        child = 2 * i + 1
        if child >= size:
            break
        if child + 1 < size and scores[child + 1] < scores[child]:
            child += 1
        if scores[child] >= score:
            break
        scores[i] = scores[child]
        positions[i] = positions[child]
        i = child
    scores[i] = score
    positions[i] = position
    return top


@numba.njit(cache=True, fastmath=False, **CALLEE)
def _attend_same_queries(q, k, v, key_mask, query_mask, causal, kind, beta, atol, rtol, scale,
                         out, tie_size, tie_gap):
    """Every real query is the same row: scores s_j once; causal tie sets by heap, queue, stack."""
    S, e = k.shape[0], v.shape[1]
    attend_same_queries_into(q, k, v, key_mask, query_mask, causal, kind, beta, atol, rtol,
                              scale, out, tie_size, tie_gap, np.empty(S), np.empty(S),
                              np.empty(S, dtype=np.int64), np.empty(S, dtype=np.int64),
                              np.empty(e), np.empty(e))


@numba.njit(cache=True, fastmath=False, **CALLEE)
def attend_same_queries_into(q, k, v, key_mask, query_mask, causal, kind, beta, atol, rtol,
                              scale, out, tie_size, tie_gap, scores, heap_scores, heap_positions,
                              line, total, error):
    """:func:`_attend_same_queries` with caller-owned scratch, so that it allocates nothing.

    Scratch: scores, heap_scores (float64), heap_positions, line (int64), each of length S, and
    total, error (float64) of length e; all overwritten.
    """
    T, S = q.shape[0], k.shape[0]
    first_query = _first_true(query_mask)
    total[:] = 0.0
    error[:] = 0.0
    if not causal:
        size, gap = attend_query(q[first_query], k, v, key_mask, S, kind, beta, atol, rtol,
                                  scale, scores, total, out[first_query])
        for i in range(first_query, T):
            if query_mask[i]:
                copy_row(out[i], out[first_query])
                tie_size[i] = size
                tie_gap[i] = gap
        return
    query = q[first_query]
    heap_size = NO_COUNT
    # line: FIFO queue (unique-left) or stack (unique-right)
    head = 0
    tail = 0
    best = -np.inf
    runner_up = -np.inf
    for i in range(T):
        if key_mask[i]:
            s = score_pair(query, k[i], scale)
            scores[i] = s
            best, runner_up = top_two(s, best, runner_up)
            # A key below the threshold now is below every later one (the max only grows):
            # it never ties, so it never enters the heap, the line or the sum.
            if s >= tie_threshold(best, atol, rtol):
                _heap_push(heap_scores, heap_positions, heap_size, s, i)
                heap_size += 1
                line[tail] = i
                tail += 1
                if kind == SATURATED:
                    _add_compensated(total, error, v[i], 1.0)
        if not query_mask[i] or heap_size == 0:
            continue
        theta = tie_threshold(best, atol, rtol)
        while heap_scores[0] < theta:  # never empties: theta <= best, and best is in the heap
            dropped = _heap_pop(heap_scores, heap_positions, heap_size)
            heap_size -= 1
            if kind == SATURATED:
                _add_compensated(total, error, v[dropped], -1.0)
        tie_size[i] = heap_size
        tie_gap[i] = best - runner_up
        if kind == SATURATED:
            for c in range(v.shape[1]):
                out[i, c] = (total[c] + error[c]) / heap_size
        elif kind == UNIQUE_LEFT:
            while scores[line[head]] < theta:
                head += 1
            copy_row(out[i], v[line[head]])
        else:
            while scores[line[tail - 1]] < theta:
                tail -= 1
            copy_row(out[i], v[line[tail - 1]])


@numba.njit(cache=True, fastmath=_FASTMATH, **CALLEE)
def _approx_scores(q, k, start, stop, causal, approx):
    """Set approx[i - start, j] = q_i . k_j in q's dtype for queries start .. stop - 1.

    Two queries and four keys at a time (eight independent sums, k rows loaded once for both
    queries); causal rows hold keys j <= i at least. Fastmath: any order, any contraction;
    :func:`score_bound` bounds the error.
    """
    d = q.shape[1]
    zero = np.zeros(1, dtype=q.dtype)[0]
    for i in range(start, stop, 2):
        i1 = min(i + 1, stop - 1)
        n = i1 + 1 if causal else k.shape[0]
        row_a = approx[i - start]
        row_b = approx[i1 - start]
        j = 0
        while j + 4 <= n:
            a0 = a1 = a2 = a3 = b0 = b1 = b2 = b3 = zero
            for t in range(d):
                qa = q[i, t]
                qb = q[i1, t]
                k0, k1, k2, k3 = k[j, t], k[j + 1, t], k[j + 2, t], k[j + 3, t]
                a0 += qa * k0
                a1 += qa * k1
                a2 += qa * k2
                a3 += qa * k3
                b0 += qb * k0
                b1 += qb * k1
                b2 += qb * k2
                b3 += qb * k3
            row_a[j], row_a[j + 1], row_a[j + 2], row_a[j + 3] = a0, a1, a2, a3
            row_b[j], row_b[j + 1], row_b[j + 2], row_b[j + 3] = b0, b1, b2, b3
            j += 4
        while j < n:
            a0 = b0 = zero
            for t in range(d):
                a0 += q[i, t] * k[j, t]
                b0 += q[i1, t] * k[j, t]
            row_a[j] = a0
            row_b[j] = b0
            j += 1


@numba.njit(cache=True, fastmath=False, **CALLEE)
def score_bound(d, itemsize, scale, q_norm, k_norm_max):
    """Bound |scale * approx_j - s_j| for every key: s_j the exact-order float64 score.

    Any-order sums of d products in precision u are within γ_d = d·u/(1 - d·u) of the true sum
    relative to Σ|q_t k_t| <= |q|·|k| (and the strict float64 sum within γ_d(2^-53)), plus an
    absolute term for underflow; the factor 4 covers the float64 rounding of the bounds.
    """
    u = 2.0**-24 if itemsize == 4 else 2.0**-53
    gamma = d * u / (1.0 - d * u) + d * 2.0**-53 / (1.0 - d * 2.0**-53)
    tiny = d * (2.0**-140 if itemsize == 4 else 2.0**-1060)
    return 4.0 * abs(scale) * (gamma * q_norm * k_norm_max + tiny)


@numba.njit(cache=True, fastmath=False, **CALLEE)
def _attend_query_filtered(q_row, k, v, key_mask, n_keys, kind, atol, rtol, scale, approx,
                           bound, scores, total, out_row):
    """Run :func:`attend_query` for a hard kind, from approximate scores.

    Only keys that may be among the top two or in the tie set get their exact score, so the max,
    the runner-up, the tie set and the gap are exactly those of the exact scores.
    """
    first_best = -np.inf
    second_best = -np.inf
    count = 0
    for j in range(n_keys):
        if key_mask[j]:
            a = scale * np.float64(approx[j])
            count += 1
            first_best, second_best = top_two(a, first_best, second_best)
    if count == 0:
        return 0, np.nan
    # Exact max >= first_best - bound, exact runner-up >= second_best - bound: a key whose exact
    # score is below both the runner-up's and the tie threshold's lower bound plays no part.
    cut = min(second_best - bound, tie_threshold(first_best - bound, atol, rtol)) - bound
    best = -np.inf
    runner_up = -np.inf
    for j in range(n_keys):
        s = -np.inf
        if key_mask[j] and scale * np.float64(approx[j]) >= cut:
            s = score_pair(q_row, k[j], scale)
            best, runner_up = top_two(s, best, runner_up)
        scores[j] = s
    theta = tie_threshold(best, atol, rtol)
    return _hard_output(scores, key_mask, n_keys, theta, kind, v, total, out_row), best - runner_up


@numba.njit(cache=True, fastmath=_FASTMATH)
def _attend_block(q, k, v, key_mask, query_mask, causal, kind, beta, atol, rtol, scale, start,
                  out, tie_size, tie_gap):
    """Run the general path for queries start .. start + QUERY_BLOCK - 1 of one item.

    Hard kinds score the block's keys approximately first (in q's dtype, register-blocked) and
    compute exact float64 scores only for keys near the top (see :func:`_attend_query_filtered`);
    softmax, and inputs so large that approximate scores could overflow, score every key exactly.
    """
    S, d = k.shape
    stop = min(start + QUERY_BLOCK, q.shape[0])
    n_keys_max = stop if causal else S
    scores = np.empty(S)
    total = np.empty(v.shape[1])
    filtered = kind != SOFTMAX and kind != SCORE_CLASS
    if filtered:
        k_norm_max = 0.0
        for j in range(n_keys_max):
            if key_mask[j]:
                norm = 0.0
                for t in range(d):
                    norm += np.float64(k[j, t]) ** 2
                k_norm_max = max(k_norm_max, norm)
        k_norm_max = np.sqrt(k_norm_max) * (1.0 + 1e-6)
        approx = np.empty((QUERY_BLOCK, n_keys_max), dtype=q.dtype)
        _approx_scores(q, k, start, stop, causal, approx)
    for i in range(start, stop):
        if not query_mask[i]:
            continue
        n_keys = i + 1 if causal else S
        q_norm = 0.0
        if filtered:
            for t in range(d):
                q_norm += np.float64(q[i, t]) ** 2
            q_norm = np.sqrt(q_norm) * (1.0 + 1e-6)
        if filtered and q_norm > 0.0 and q_norm * k_norm_max <= 1e36:
            bound = score_bound(d, q.itemsize, scale, q_norm, k_norm_max)
            size, gap = _attend_query_filtered(q[i], k, v, key_mask, n_keys, kind, atol, rtol,
                                               scale, approx[i - start], bound, scores, total,
                                               out[i])
        else:
            size, gap = attend_query(q[i], k, v, key_mask, n_keys, kind, beta, atol, rtol,
                                      scale, scores, total, out[i])
        tie_size[i] = size
        tie_gap[i] = gap


@numba.njit(cache=True, nogil=True, fastmath=False)
def item_paths(q, k, key_mask, query_mask, causal, kind, known):
    """Return each item's path, (N,) int64: ``known`` where >= 0, else detected (see attend)."""
    paths = known.copy()
    for n in range(q.shape[0]):
        if paths[n] < 0:
            paths[n] = item_path(q[n], k[n], key_mask[n], query_mask[n], causal, kind)
    return paths


@numba.njit(cache=True, fastmath=_FASTMATH, **CALLEE)
def _attend_item(q, k, v, key_mask, query_mask, causal, kind, beta, atol, rtol, scale, path,
                 out, tie_size, tie_gap):
    """Run one item's fast path if it has one; return its path (detected if ``path`` < 0)."""
    if path < 0:
        path = item_path(q, k, key_mask, query_mask, causal, kind)
    if path == SAME_SCORES:
        attend_same_scores(v, key_mask, query_mask, causal, kind, out, tie_size, tie_gap)
    elif path == SAME_QUERIES:
        _attend_same_queries(q, k, v, key_mask, query_mask, causal, kind, beta, atol, rtol,
                             scale, out, tie_size, tie_gap)
    return path


@numba.njit(cache=True, fastmath=False, **CALLEE)
def unit_count(n_queries):
    """Units of work of a general item: pairs of query blocks, as :func:`attend_unit` takes them."""
    return ((n_queries + QUERY_BLOCK - 1) // QUERY_BLOCK + 1) // 2


@numba.njit(cache=True, fastmath=_FASTMATH)
def attend_unit(q, k, v, key_mask, query_mask, causal, kind, beta, atol, rtol, scale, block,
                 out, tie_size, tie_gap):
    """Run query blocks ``block`` and last - ``block`` of a general item (equal causal cost)."""
    n_blocks = (q.shape[0] + QUERY_BLOCK - 1) // QUERY_BLOCK
    _attend_block(q, k, v, key_mask, query_mask, causal, kind, beta, atol, rtol, scale,
                  block * QUERY_BLOCK, out, tie_size, tie_gap)
    last = n_blocks - 1 - block
    if last != block:
        _attend_block(q, k, v, key_mask, query_mask, causal, kind, beta, atol, rtol, scale,
                      last * QUERY_BLOCK, out, tie_size, tie_gap)


@numba.njit(cache=True, nogil=True, fastmath=_FASTMATH)
def attend(q, k, v, key_mask, query_mask, causal, kind, beta, atol, rtol, scale, known):
    """Attend (N, T, d) queries to (N, S, d) keys and (N, S, e) values; masks (N, S), (N, T).

    Return (output (N, T, e) in q's dtype, tie_size (N, T) int64, tie_gap (N, T) float64).
    ``kind`` is SOFTMAX, SATURATED, UNIQUE_LEFT, UNIQUE_RIGHT or SCORE_CLASS (``beta`` its
    width δ); causal needs T == S. ``known``
    (N,) int64 gives an item's path when the caller knows it (SAME_SCORES: its keys, or its
    queries, are constant by construction), else -1: the path is detected from q and k. Serial;
    :func:`attend_parallel` gives the same results bit for bit, in parallel.
    """
    n_items, T = q.shape[0], q.shape[1]
    out = np.zeros((n_items, T, v.shape[2]), dtype=q.dtype)
    tie_size = np.zeros((n_items, T), dtype=np.int64)
    tie_gap = np.full((n_items, T), np.nan)
    units_per_item = unit_count(T)
    for n in range(n_items):
        path = _attend_item(q[n], k[n], v[n], key_mask[n], query_mask[n], causal, kind, beta,
                            atol, rtol, scale, known[n], out[n], tie_size[n], tie_gap[n])
        if path == GENERAL:
            for block in range(units_per_item):
                attend_unit(q[n], k[n], v[n], key_mask[n], query_mask[n], causal, kind, beta,
                             atol, rtol, scale, block, out[n], tie_size[n], tie_gap[n])
    return out, tie_size, tie_gap


@numba.njit(cache=True, parallel=True, fastmath=_FASTMATH)
def attend_parallel(q, k, v, key_mask, query_mask, causal, kind, beta, atol, rtol, scale,
                    known):
    """:func:`attend` with items, then units of two query blocks of general items, in parallel."""
    n_items, T = q.shape[0], q.shape[1]
    out = np.zeros((n_items, T, v.shape[2]), dtype=q.dtype)
    tie_size = np.zeros((n_items, T), dtype=np.int64)
    tie_gap = np.full((n_items, T), np.nan)
    paths = np.empty(n_items, dtype=np.int64)
    for n in numba.prange(n_items):
        paths[n] = _attend_item(q[n], k[n], v[n], key_mask[n], query_mask[n], causal, kind, beta,
                                atol, rtol, scale, known[n], out[n], tie_size[n], tie_gap[n])
    # General items in units of two query blocks, p and last - p, so causal units cost the same.
    general = np.nonzero(paths == GENERAL)[0]
    units_per_item = unit_count(T)
    for unit in numba.prange(general.shape[0] * units_per_item):
        n = general[unit // units_per_item]
        attend_unit(q[n], k[n], v[n], key_mask[n], query_mask[n], causal, kind, beta, atol,
                     rtol, scale, unit % units_per_item, out[n], tie_size[n], tie_gap[n])
    return out, tie_size, tie_gap


lock_cache_writes(globals())
