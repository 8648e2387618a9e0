"""Numba kernels for the position-wise parts of the forward pass: affine maps and LayerNorm.

Rows are independent, so each kernel runs ``prange`` over rows and accumulates in float64.
Their NumPy references are in :mod:`satsim.reference.forward`.
"""

from __future__ import annotations

import numba
import numpy as np

FASTMATH = {"reassoc", "contract", "nsz", "arcp"}


ROWS_PER_CHUNK = 256


@numba.njit(cache=True, parallel=True, fastmath=FASTMATH)
def affine(x, weight, bias, relu):  # pragma: no cover - compiled
    """Return x @ weight + bias for each row of x (rows × d_in), optionally through ReLU."""
    rows, d_in = x.shape
    d_out = weight.shape[1]
    out = np.empty((rows, d_out), dtype=x.dtype)
    n_chunks = (rows + ROWS_PER_CHUNK - 1) // ROWS_PER_CHUNK
    for chunk in numba.prange(n_chunks):
        acc = np.empty(d_out, dtype=np.float64)  # one float64 accumulator per chunk of rows
        for r in range(chunk * ROWS_PER_CHUNK, min(rows, (chunk + 1) * ROWS_PER_CHUNK)):
            for c in range(d_out):
                acc[c] = bias[c]
            for i in range(d_in):
                xi = np.float64(x[r, i])
                if xi != 0.0:
                    for c in range(d_out):
                        acc[c] += xi * weight[i, c]
            for c in range(d_out):
                value = acc[c]
                if relu and value < 0.0:
                    value = 0.0
                out[r, c] = value
    return out


@numba.njit(cache=True, parallel=True, fastmath=FASTMATH)
def layer_norm(x, weight, bias, eps, use_affine):  # pragma: no cover - compiled
    """Normalise each row of x to zero mean and unit (biased) variance, then scale and shift."""
    rows, d = x.shape
    out = np.empty_like(x)
    for r in numba.prange(rows):
        mean = 0.0
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
    return out
