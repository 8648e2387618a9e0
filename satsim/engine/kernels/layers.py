"""Numba kernels for the position-wise parts of the forward pass: affine maps and LayerNorm.

Rows are independent and accumulate in float64. Each kernel comes twice, with the same row
function, compiled strictly (no fastmath: contraction or reassociation could differ between the
two callers' inlined copies) and hence bit-identical results: ``affine`` / ``layer_norm`` run
serially, and ``affine_parallel`` / ``layer_norm_parallel`` run ``prange`` over chunks of rows.
A parallel region costs tens of microseconds on an idle machine and milliseconds on a shared one
(its threads wait for a core), so :func:`use_parallel` keeps small work serial. Their NumPy
references are in :mod:`satsim.reference.forward`.
"""

from __future__ import annotations

import math
import threading
from contextlib import contextmanager

import numba
import numpy as np

from satsim.engine.kernels import CALLEE, lock_cache_writes

FASTMATH = {"reassoc", "contract", "nsz", "arcp"}

ROWS_PER_CHUNK = 256
ROW_BLOCK = 64
IDENTITY, RELU, GELU, GELU_TANH, SILU = 0, 1, 2, 3, 4
ACTIVATION_CODES = {"relu": RELU, "gelu": GELU, "gelu_tanh": GELU_TANH, "silu": SILU}
"""Kernel codes of the feed-forward activations (IDENTITY: a plain affine map)."""
PARALLEL_WORK = 1 << 24
"""Multiply-adds (or comparable steps) below which a kernel runs serially: about 10 ms of work."""


_local = threading.local()


def use_parallel(work: int) -> bool:
    """Whether work of this many steps is worth a parallel region (more than one thread, too).

    Never inside :func:`serial_kernels`: its callers already run several batches at once.
    """
    if getattr(_local, "serial", False):
        return False
    return work >= PARALLEL_WORK and numba.get_num_threads() > 1


@contextmanager
def serial_kernels():
    """Within this block, this thread runs every kernel serially.

    The serial kernels release the GIL, so threads running batches side by side use the cores
    without nested parallel regions.
    """
    before = getattr(_local, "serial", False)
    _local.serial = True
    try:
        yield
    finally:
        _local.serial = before


@numba.njit(cache=True, fastmath=False, **CALLEE)
def activate(value, activation):  # pragma: no cover - compiled
    """``value`` through the activation with this code (see ACTIVATION_CODES)."""
    if activation == RELU:
        return 0.0 if value < 0.0 else value
    if activation == GELU:
        # erf, not erfc: Numba's erfc rounds differently in the fused and layer kernels
        return 0.5 * value * (1.0 + math.erf(value / math.sqrt(2.0)))
    if activation == GELU_TANH:
        inner = math.sqrt(2.0 / math.pi) * (value + 0.044715 * value * value * value)
        return 0.5 * value * (1.0 + math.tanh(inner))
    if activation == SILU:
        return value / (1.0 + math.exp(-value))
    return value


@numba.njit(cache=True, fastmath=False, **CALLEE)
def _affine_rows(x, weight, bias, activation, out, start, stop):  # pragma: no cover - compiled
    """Write activation(x[r] @ weight + bias) to out[r] for start <= r < stop."""
    used = np.empty(x.shape[1], dtype=np.int64)
    xt = np.empty((x.shape[1], ROW_BLOCK), dtype=np.float64)
    acc = np.empty((weight.shape[1], ROW_BLOCK), dtype=np.float64)
    affine_rows_into(x, weight, bias, activation, out, start, stop, used, xt, acc)


@numba.njit(cache=True, fastmath=False, **CALLEE)
def affine_rows_into(x, weight, bias, activation, out, start, stop, used, xt,
                     acc):  # pragma: no cover - compiled
    """:func:`_affine_rows` with caller-owned scratch, so that it allocates nothing.

    Scratch: used (≥ d_in,) int64, xt (≥ d_in, ROW_BLOCK) and acc (≥ d_out, ROW_BLOCK)
    float64. Blocks of ROW_BLOCK rows are transposed to float64 so that the inner loop runs
    over rows (vectorised); each output still sums bias, then the products in input order.
    """
    d_in = x.shape[1]
    d_out = weight.shape[1]
    # Inputs whose weights are all zero add nothing (zero weights are skipped): not copied.
    n_used = 0
    for i in range(d_in):
        for c in range(d_out):
            if weight[i, c] != 0.0:
                used[n_used] = i
                n_used += 1
                break
    for block in range(start, stop, ROW_BLOCK):
        n = min(ROW_BLOCK, stop - block)
        for r in range(n):
            for u in range(n_used):
                xt[used[u], r] = x[block + r, used[u]]
        for c in range(d_out):
            b = np.float64(bias[c])
            for r in range(n):
                acc[c, r] = b
        for u in range(n_used):
            i = used[u]
            for c in range(d_out):
                w = np.float64(weight[i, c])
                if w != 0.0:
                    for r in range(n):
                        acc[c, r] += xt[i, r] * w
        for r in range(n):
            for c in range(d_out):
                value = acc[c, r]
                if activation != IDENTITY:
                    value = activate(value, activation)
                out[block + r, c] = value


@numba.njit(cache=True, nogil=True, fastmath=FASTMATH)
def affine(x, weight, bias, activation):  # pragma: no cover - compiled
    """Return activation(x @ weight + bias) for each row of x (rows × d_in)."""
    out = np.empty((x.shape[0], weight.shape[1]), dtype=x.dtype)
    _affine_rows(x, weight, bias, activation, out, 0, x.shape[0])
    return out


@numba.njit(cache=True, parallel=True, fastmath=FASTMATH)
def affine_parallel(x, weight, bias, activation):  # pragma: no cover - compiled
    """:func:`affine` with chunks of rows in parallel."""
    rows = x.shape[0]
    out = np.empty((rows, weight.shape[1]), dtype=x.dtype)
    n_chunks = (rows + ROWS_PER_CHUNK - 1) // ROWS_PER_CHUNK
    for chunk in numba.prange(n_chunks):
        _affine_rows(x, weight, bias, activation, out, chunk * ROWS_PER_CHUNK,
                     min(rows, (chunk + 1) * ROWS_PER_CHUNK))
    return out


@numba.njit(cache=True, fastmath=False, **CALLEE)
def layer_norm_rows(x, weight, bias, eps, use_affine, centre, out, start,
                    stop):  # pragma: no cover - compiled
    """Normalise rows start .. stop - 1 of x into out (subtracting the mean when ``centre``)."""
    d = x.shape[1]
    for r in range(start, stop):
        mean = 0.0
        if centre:
            for c in range(d):
                mean += x[r, c]
            mean /= d
        var = 0.0
        for c in range(d):
            diff = x[r, c] - mean
            var += diff * diff
        inv = 1.0 / np.sqrt(var / d + eps)
        for c in range(d):
            y = (x[r, c] - mean) * inv
            if use_affine:
                y = y * weight[c] + bias[c]
            out[r, c] = y


@numba.njit(cache=True, nogil=True, fastmath=FASTMATH)
def layer_norm(x, weight, bias, eps, use_affine, centre):  # pragma: no cover - compiled
    """Normalise each row of x (LayerNorm, or RMSNorm without ``centre``), then scale, shift."""
    out = np.empty_like(x)
    layer_norm_rows(x, weight, bias, eps, use_affine, centre, out, 0, x.shape[0])
    return out


@numba.njit(cache=True, parallel=True, fastmath=FASTMATH)
def layer_norm_parallel(x, weight, bias, eps, use_affine, centre):  # pragma: no cover
    """:func:`layer_norm` with chunks of rows in parallel."""
    rows = x.shape[0]
    out = np.empty_like(x)
    n_chunks = (rows + ROWS_PER_CHUNK - 1) // ROWS_PER_CHUNK
    for chunk in numba.prange(n_chunks):
        layer_norm_rows(x, weight, bias, eps, use_affine, centre, out, chunk * ROWS_PER_CHUNK,
                         min(rows, (chunk + 1) * ROWS_PER_CHUNK))
    return out


def read_only(array: np.ndarray) -> np.ndarray:
    """A read-only view of ``array`` (no copy).

    Numba compiles a kernel anew for each mix of writable and read-only arguments; the weights of
    a spec are read-only and the ones built on the fly are not, so the kernels always get
    read-only weights: one specialisation (about a second of cold compile each) instead of two.
    """
    view = array.view()
    view.flags.writeable = False
    return view


def run_affine(x, weight, bias, activation=IDENTITY):
    """:func:`affine` or :func:`affine_parallel`, by the amount of work."""
    kernel = affine_parallel if use_parallel(x.shape[0] * x.shape[1] * weight.shape[1]) else affine
    return kernel(x, read_only(weight), read_only(bias), activation)


def run_layer_norm(x, weight, bias, eps, use_affine, centre=True):
    """:func:`layer_norm` or :func:`layer_norm_parallel`, by the amount of work."""
    kernel = layer_norm_parallel if use_parallel(4 * x.size) else layer_norm
    return kernel(x, read_only(weight), read_only(bias), eps, use_affine, centre)


lock_cache_writes(globals())
