"""Hard attention kinds by tiles: approximate scores from BLAS, exact rescoring by Numba.

A tile is ``rows`` queries of a few items against the keys they may see (causal: keys up to the
tile's last query). Its approximate scores q_i · k_j come from one BLAS matrix product in q's
dtype; then the filter of :func:`satsim.engine.kernels.queries._attend_query_filtered` (same cut,
same error bound) takes each row's top three approximate scores in one pass, finds the keys
whose approximate score could put them among the top two or in the tie set and rescores only
those exactly (float64, left to right, as the reference), so max, runner-up, tie set and gap are
bit for bit those of :func:`satsim.engine.kernels.queries.attend` and of the reference, and so is
the output (the same sum over the tie set in key order). When the third largest lies below the cut,
as it does unless scores nearly tie, the candidates are the top two and the row is not scanned
again.

Threads: one way only (no Numba or BLAS thread pool inside another, DESIGN §6). ``threads``
Python threads each take a tile, run BLAS with one thread on it, then the serial Numba filter
(which releases the GIL) while the tile is still in cache.
"""

from __future__ import annotations

import ctypes
import glob
import os
import queue
import sys
import threading
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager

import numba
import numpy as np

from satsim.engine.kernels import CALLEE, lock_cache_writes, stamp_module_kernels
from satsim.engine.kernels import queries as _queries_module
from satsim.engine.kernels.queries import (
    NO_COUNT,
    NOWHERE,
    attend_query,
    emit_output,
    score_bound,
    score_pair,
    take_key,
    tie_threshold,
    top_two,
)

TILE_ROWS = 256
"""Queries per tile at most: 256 × 2048 float32 scores are 2 MiB, an L2 cache here."""
TILE_BYTES = 2 << 20
"""Approximate scores per tile at most: items are grouped, or rows cut, to stay below it."""
TILE_SCORES = 1 << 18
"""Query-key pairs per item (T·S) from which general items of hard kinds take tiles. Measured
(B·H = 32, causal): from T = 512 on, tiles win (1.3-1.5× at T = 512, d = 16 and 64; 2× at
T = 2048, d = 64); at T = 256 and below, the fused kernel wins (1.1-1.9×) whatever d."""
PROGRESS_PAIRS = 2_000_000_000
"""Query-key pairs of one call from which tiles report progress on stderr."""
PROGRESS_SECONDS = 5.0
"""Seconds between two progress lines."""
_CHUNK = 32
_FASTMATH = {"reassoc", "contract", "nsz", "arcp"}


@numba.njit(cache=True, nogil=True, fastmath=_FASTMATH, **CALLEE)
def _norm_bound(row):
    """Return an upper bound of |row| in float64 (0 only if every square underflows to 0).

    A float64 sum of d squares, in any order, is within γ_d(2^-53) of the true one (< 1e-6 for
    any d below 10^9), so the factor 1 + 1e-6 covers it and the square root; squares lose at most
    2^-1074 each to underflow, covered by the added sqrt(d)·2^-537.
    """
    norm = 0.0
    for t in range(row.shape[0]):
        x = np.float64(row[t])
        norm += x * x
    if norm == 0.0:
        return 0.0
    return (np.sqrt(norm) + np.sqrt(np.float64(row.shape[0])) * 2.0**-537) * (1.0 + 1e-6)


@numba.njit(cache=True, nogil=True, fastmath=False)
def key_norm_max(k, key_mask):
    """Return an upper bound of max |k_j| over the allowed keys (0 if none), in float64."""
    best = 0.0
    for j in range(k.shape[0]):
        if key_mask[j]:
            best = max(best, _norm_bound(k[j]))
    return best


@numba.njit(cache=True, nogil=True, fastmath=False, **CALLEE)
def _lower_float32(x):
    """Return a float32 f <= x (float64), -FLT_MAX at least: a >= f for every finite a >= x."""
    lowest = np.float32(-3.4028234663852886e38)
    if not x > -3.4e38:
        return lowest
    f = np.float32(x)
    if np.float64(f) > x:
        f = np.nextafter(f, lowest)
    return f


@numba.njit(cache=True, nogil=True, fastmath=False, **CALLEE)
def _lowest_candidate(first, second, magnitude, bound, atol, rtol):
    """Return the row value below which a key plays no part, given the row's top two.

    The cut of :func:`satsim.engine.kernels.queries._attend_query_filtered` on |scale|·approx: the
    exact max is >= |scale|·first - bound and the exact runner-up >= |scale|·second - bound, so a
    key with |scale|·approx below min(runner-up's bound, tie threshold of the max's) - bound is
    neither. Divided by |scale|, lowered by a relative 1e-12 for that division's rounding and
    rounded down to a float32: a few more keys than the cut, never fewer.
    """
    first_best = magnitude * np.float64(first)
    second_best = magnitude * np.float64(second)
    cut = min(second_best - bound, tie_threshold(first_best - bound, atol, rtol)) - bound
    low = cut / magnitude
    return _lower_float32(low - abs(low) * 1e-12 - 1e-300)


@numba.njit(cache=True, nogil=True, fastmath=False, **CALLEE)
def _attend_query_tile(q_row, k, v, n_keys, kind, atol, rtol, scale, approx, bound, candidates,
                       cand_scores, total, out_row):
    """:func:`satsim.engine.kernels.queries._attend_query_filtered` over a row of a tile.

    ``approx[j]`` is the approximate q·k_j times the sign of scale (-inf for a key not allowed),
    so |scale|·approx orders the keys as the scores do. The keys at or above the cut get their
    exact scores, which give max, runner-up, tie set and gap, and the output from the tie set in
    key order, as :func:`satsim.engine.kernels.queries._hard_output` does, bit for bit.
    """
    # The row's three largest values (with multiplicity) and the keys of the first two: one
    # pass whose outer compare is almost always false, so well predicted.
    first = second = third = -np.inf
    where_first = where_second = -1
    for j in range(n_keys):
        x = approx[j]
        if x > third:
            if x > second:
                third = second
                if x > first:
                    second, where_second = first, where_first
                    first, where_first = x, j
                else:
                    second, where_second = x, j
            else:
                third = x
    if first == -np.inf:  # no allowed key: allowed keys have finite approximate scores
        return 0, np.nan
    low = _lowest_candidate(first, second, abs(scale), bound, atol, rtol)
    count = 0
    if second > -np.inf and third < low:  # the usual case: just the top two (low < second)
        candidates[0] = min(where_first, where_second)
        candidates[1] = max(where_first, where_second)
        count = 2
    for chunk in range(0, n_keys if count == 0 else 0, _CHUNK):
        stop = min(chunk + _CHUNK, n_keys)
        hits = np.int32(0)
        for j in range(chunk, stop):  # vectorised: an OR of compares, no branch
            hits |= np.int32(1) if approx[j] >= low else np.int32(0)
        if hits == 0:
            continue
        for j in range(chunk, stop):
            if approx[j] >= low:  # never for a key not allowed (-inf < low)
                candidates[count] = j
                count += 1
    best = -np.inf
    runner_up = -np.inf
    for c in range(count):
        s = score_pair(q_row, k[candidates[c]], scale)
        cand_scores[c] = s
        best, runner_up = top_two(s, best, runner_up)
    theta = tie_threshold(best, atol, rtol)
    total[:] = 0.0
    size = NO_COUNT
    chosen = NOWHERE
    for c in range(count):
        if cand_scores[c] >= theta:
            size += 1
            chosen = take_key(kind, candidates[c], v, total, chosen)
    emit_output(kind, total, size, chosen, v, out_row)
    return size, best - runner_up


@numba.njit(cache=True, nogil=True, fastmath=False)
def attend_tile(q, k, v, key_mask, query_mask, causal, kind, atol, rtol, scale, items, start,
                k_norms, approx, out, tie_size, tie_gap):
    """Attend queries start .. start + rows - 1 of items ``items`` (hard kind) from a tile.

    q, k, v, key_mask, query_mask, out, tie_size, tie_gap: all N items, as for
    :func:`satsim.engine.kernels.queries.attend`. ``approx[g, r, j]`` is q_i · k_j (i = start + r,
    n = items[g]) in q's dtype, summed in any order (BLAS), times the sign of scale, -inf for a
    key not allowed, for every key the tile's last query may see (row r reads keys up to i);
    ``k_norms[n]`` bounds |k_j| over item n's allowed keys.
    """
    S, d = k.shape[1], k.shape[2]
    candidates = np.empty(S, dtype=np.int64)
    cand_scores = np.empty(S)
    scores = np.empty(S)
    total = np.empty(v.shape[2])
    for g in range(items.shape[0]):
        n = items[g]
        for r in range(approx.shape[1]):
            i = start + r
            if not query_mask[n, i]:
                continue
            n_keys = i + 1 if causal else S
            q_norm = _norm_bound(q[n, i])
            # |approx| <= |q|·|k| <= 1e36 stays finite in float32. The bound of score_bound
            # holds for BLAS too: |fl(Σ_t q_t k_t) - Σ_t q_t k_t| <= γ_d Σ_t |q_t k_t| for any
            # summation order and any blocking, with or without fused multiply-adds (an FMA
            # rounds once where a product and a sum round twice), plus its absolute term for
            # gradual underflow (IEEE subnormals, as NumPy and OpenBLAS run: no flush-to-zero).
            # A zero q_norm (a zero query, or one whose squares underflow) takes the exact path.
            if q_norm > 0.0 and q_norm * k_norms[n] <= 1e36 and scale != 0.0:
                bound = score_bound(d, q.itemsize, scale, q_norm, k_norms[n])
                size, gap = _attend_query_tile(q[n, i], k[n], v[n], n_keys, kind, atol, rtol,
                                               scale, approx[g, r], bound, candidates,
                                               cand_scores, total, out[n, i])
            else:
                size, gap = attend_query(q[n, i], k[n], v[n], key_mask[n], n_keys, kind, 1.0,
                                          atol, rtol, scale, scores, total, out[n, i])
            tie_size[n, i] = size
            tie_gap[n, i] = gap


def _find_blas_threads():
    """Return (get, set) of the OpenBLAS thread count that NumPy uses, or None if not found."""
    folder = os.path.join(os.path.dirname(np.__file__), os.pardir, "numpy.libs")
    for path in sorted(glob.glob(os.path.join(folder, "lib*openblas*"))):
        try:
            lib = ctypes.CDLL(path)
        except OSError:
            continue
        for prefix in ("scipy_openblas_", "openblas_"):
            for suffix in ("64_", ""):
                get = getattr(lib, f"{prefix}get_num_threads{suffix}", None)
                put = getattr(lib, f"{prefix}set_num_threads{suffix}", None)
                if get is not None and put is not None:
                    get.restype = ctypes.c_int
                    put.argtypes = [ctypes.c_int]
                    return get, put
    return None


_blas = _find_blas_threads()
_blas_lock = threading.Lock()
_blas_users = 0
_blas_before = 1


@contextmanager
def _one_blas_thread():
    """Within this block NumPy's OpenBLAS runs one thread (restored by the last one leaving)."""
    global _blas_users, _blas_before
    with _blas_lock:
        if _blas_users == 0:
            _blas_before = _blas[0]()
            _blas[1](1)
        _blas_users += 1
    try:
        yield
    finally:
        with _blas_lock:
            _blas_users -= 1
            if _blas_users == 0:
                _blas[1](_blas_before)


def tile_shape(n_items: int, n_queries: int, n_keys: int,
               rows: int | None = None) -> tuple[int, int]:
    """(items, queries) per tile: ``rows`` queries if given, else an eighth of the queries.

    An eighth (16 to TILE_ROWS) keeps the causal tiles' wasted upper triangles near 1/16 of the
    work; items are grouped up to TILE_BYTES of scores, so that small items make fewer tiles.
    """
    if rows is None:
        rows = min(TILE_ROWS, max(16, n_queries // 8 // 16 * 16),
                   TILE_BYTES // (4 * max(n_keys, 1)))
    rows = max(1, int(rows))
    group = max(1, min(n_items, TILE_BYTES // (4 * rows * max(n_keys, 1))))
    return group, rows


def attend_tiled(q, k, v, key_mask, query_mask, causal, kind, atol, rtol, scale, items, out,
                 tie_size, tie_gap, threads=1, rows=None):
    """Run the general items ``items`` of a hard kind by tiles, writing out, tie_size, tie_gap.

    Arrays as for :func:`satsim.engine.kernels.queries.attend` (C-contiguous), scale nonzero;
    ``threads`` Python threads share the tiles, each with one BLAS thread.
    """
    T, S = q.shape[1], k.shape[1]
    items = np.asarray(items, dtype=np.int64)
    group, rows = tile_shape(len(items), T, S, rows)
    groups = [items[g:g + group] for g in range(0, len(items), group)]
    starts = sorted(range(0, T, rows), reverse=causal)  # causal: largest tiles first
    units = queue.SimpleQueue()
    for start in starts:
        for members in groups:
            units.put((members, start))
    k_norms = np.zeros(q.shape[0])
    padded = {}
    for n in items:
        k_norms[n] = key_norm_max(k[n], key_mask[n])
        if not key_mask[n].all():
            padded[int(n)] = np.flatnonzero(~key_mask[n])
    flip = scale < 0

    def work() -> None:
        buffer = np.empty(group * rows * S, dtype=q.dtype)
        while True:
            try:
                members, start = units.get_nowait()
            except queue.Empty:
                return
            stop = min(start + rows, T)
            n_keys = stop if causal else S
            shape = (len(members), stop - start, n_keys)
            approx = buffer[:shape[0] * shape[1] * shape[2]].reshape(shape)
            first_item, last_item = members[0], members[-1] + 1
            if last_item - first_item == len(members):  # consecutive items: views, no copies
                q_tile, k_tile = q[first_item:last_item, start:stop], k[first_item:last_item]
            else:
                q_tile, k_tile = q[members, start:stop], k[members]
            np.matmul(q_tile, k_tile[:, :n_keys].transpose(0, 2, 1), out=approx)
            if flip:
                np.negative(approx, out=approx)
            for g, n in enumerate(members):
                if int(n) in padded:
                    approx[g][:, padded[int(n)][padded[int(n)] < n_keys]] = -np.inf
            attend_tile(q, k, v, key_mask, query_mask, causal, kind, atol, rtol, scale, members,
                        start, k_norms, approx, out, tie_size, tie_gap)

    threads = max(1, min(int(threads), units.qsize()))
    pairs = len(items) * T * S // (2 if causal else 1)
    with _progress(units, pairs, f"{T} queries, {len(items)} head(s)"):
        if _blas is None:  # BLAS threads out of reach: its own pool, then the filter, in turn
            work()
            return
        with _one_blas_thread():
            if threads == 1:
                work()
                return
            with ThreadPoolExecutor(threads) as pool:
                for future in [pool.submit(work) for _ in range(threads)]:
                    future.result()


@contextmanager
def _progress(units: queue.SimpleQueue, pairs: int, what: str):
    """Say on stderr, at the start and every PROGRESS_SECONDS, what share of ``units`` is taken.

    Only for work of at least PROGRESS_PAIRS query-key pairs (a few seconds here).
    """
    if pairs < PROGRESS_PAIRS:
        yield
        return
    total = units.qsize()
    done = threading.Event()

    def say() -> None:
        taken = 100 * (total - units.qsize()) // total
        print(f"satsim: attention over {what} by BLAS tiles: {taken}% of the tiles started",
              file=sys.stderr, flush=True)

    def report() -> None:
        while not done.wait(PROGRESS_SECONDS):
            say()

    say()
    reporter = threading.Thread(target=report, daemon=True)
    reporter.start()
    try:
        yield
    finally:
        done.set()
        reporter.join()


stamp_module_kernels(globals(), (_queries_module,))
lock_cache_writes(globals())
