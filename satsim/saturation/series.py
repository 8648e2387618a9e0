"""Activations as finite expansions Σ_k c^k x_k in the scale c, known down to a degree ``floor``.

The arithmetic a transformer needs: sums, products with parameters (degree 1) and with other
expansions, ReLU (a coordinate survives iff its leading nonzero coefficient is positive), and
LayerNorm (the inverse norm as a power series in 1/c, truncated to ``ORDERS`` terms). Results
that cancel to rounding level (|x| ≤ TOL times the magnitude of what was added) are exact zeros,
so that a coefficient that vanishes in exact arithmetic vanishes here too.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

TOL = 1e-10
"""Relative size below which a computed coefficient counts as an exact zero."""

ORDERS = 16
"""How many degrees below its top an expansion keeps."""


@dataclass(frozen=True)
class Series:
    """x(c) = Σ_k c^k terms[k], exact for degrees >= floor (-inf: exact at every degree)."""

    terms: dict[int, np.ndarray]
    floor: float = -math.inf

    @property
    def top(self) -> int:
        """The nominal (graph) degree: the highest degree present, even if its coefficient is 0."""
        return max(self.terms)

    def stack(self) -> tuple[list[int], np.ndarray]:
        """Degrees from the top down (contiguous) and the coefficients stacked along axis 0."""
        low = min(self.terms)
        degrees = list(range(self.top, low - 1, -1))
        shape = np.broadcast_shapes(*(t.shape for t in self.terms.values()))
        zero = np.zeros(shape)
        return degrees, np.stack([np.broadcast_to(self.terms.get(k, zero), shape)
                                  for k in degrees])


def snap(value: np.ndarray, magnitude: np.ndarray) -> np.ndarray:
    """Zero the entries of ``value`` that are rounding noise relative to ``magnitude``."""
    return np.where(np.abs(value) <= TOL * magnitude, 0.0, value)


def truncate(terms: dict[int, np.ndarray], floor: float) -> Series:
    """Keep at most ORDERS degrees below the top, raising the floor to match."""
    floor = max(floor, max(terms) - ORDERS + 1)
    return Series({k: v for k, v in terms.items() if k >= floor}, floor)


def constant(value: np.ndarray, degree: int = 0) -> Series:
    """An exact single-degree expansion (a parameter has degree 1, a fixed input degree 0)."""
    return Series({degree: np.asarray(value, dtype=np.float64)})


def add(*parts: Series) -> Series:
    """Sum of expansions; exact down to the highest of their floors."""
    floor = max(p.floor for p in parts)
    total: dict[int, np.ndarray] = {}
    magnitude: dict[int, np.ndarray] = {}
    for part in parts:
        for k, v in part.terms.items():
            if k >= floor:
                total[k] = total.get(k, 0.0) + v
                magnitude[k] = magnitude.get(k, 0.0) + np.abs(v)
    return truncate({k: snap(total[k], magnitude[k]) for k in total}, floor)


def contract(x: Series, pattern: str, weight: np.ndarray, degree: int = 1) -> Series:
    """einsum(pattern, x, weight) with a parameter of the given degree."""
    weight = np.asarray(weight, dtype=np.float64)
    terms = {k + degree: snap(np.einsum(pattern, v, weight),
                              np.einsum(pattern, np.abs(v), np.abs(weight)))
             for k, v in x.terms.items()}
    return Series(terms, x.floor + degree)


def product(a: Series, b: Series, pattern: str) -> Series:
    """einsum(pattern, a, b) of two expansions: degrees add."""
    total: dict[int, np.ndarray] = {}
    magnitude: dict[int, np.ndarray] = {}
    for i, u in a.terms.items():
        for j, w in b.terms.items():
            total[i + j] = total.get(i + j, 0.0) + np.einsum(pattern, u, w)
            magnitude[i + j] = magnitude.get(i + j, 0.0) + np.einsum(pattern, np.abs(u), np.abs(w))
    floor = max(a.floor + b.top, b.floor + a.top)
    kept = {k: snap(total[k], magnitude[k]) for k in total if k >= floor}
    return truncate(kept, floor)


def leading(x: Series) -> tuple[np.ndarray, np.ndarray]:
    """Per entry: the leading nonzero coefficient and its degree (coefficient 0 where none)."""
    degrees, stacked = x.stack()
    nonzero = stacked != 0
    first = np.argmax(nonzero, axis=0)
    value = np.take_along_axis(stacked, first[None], axis=0)[0]
    degree = np.where(nonzero.any(axis=0), np.asarray(degrees)[first], np.iinfo(np.int64).min)
    return value, degree


def relu(x: Series) -> Series:
    """ReLU: a coordinate keeps its expansion iff its leading nonzero coefficient is positive."""
    value, _ = leading(x)
    keep = value > 0
    return Series({k: np.where(keep, v, 0.0) for k, v in x.terms.items()}, x.floor)


def _inverse_sqrt(p: np.ndarray) -> np.ndarray:
    """Power series of P(u)^(-1/2) from P's coefficients p (M, ...), by Miller's recurrence."""
    g = np.zeros_like(p)
    g[0] = p[0] ** -0.5
    for n in range(1, len(p)):
        acc = sum((0.5 * k - n) * p[k] * g[n - k] for k in range(1, n + 1))
        g[n] = acc / (n * p[0])
    return g


def layer_norm(x: Series, eps: float) -> tuple[Series, np.ndarray]:
    """LayerNorm without affine of rows of ``x``; also each row's leading input degree."""
    degrees, stacked = x.stack()
    centred = snap(stacked - stacked.mean(axis=-1, keepdims=True),
                   np.abs(stacked).max(axis=-1, keepdims=True))
    alive = (centred != 0).any(axis=-1)  # (G, rows...)
    first = np.argmax(alive, axis=0)
    lead = np.asarray(degrees)[first]
    nonzero_row = alive.any(axis=0) & (lead >= 0)
    index = first[None] + np.arange(ORDERS).reshape((-1,) + (1,) * first.ndim)
    inside = index < len(degrees)
    n = np.take_along_axis(centred, np.minimum(index, len(degrees) - 1)[..., None], axis=0)
    n = n * inside[..., None]
    d = centred.shape[-1]
    p = np.stack([sum((n[a] * n[m - a]).sum(axis=-1) for a in range(m + 1)) / d
                  for m in range(ORDERS)])
    for m in range(ORDERS):
        p[m] = np.where(2 * lead == m, p[m] + eps, p[m])
    p[0] = np.where(nonzero_row, p[0], 1.0)
    g = _inverse_sqrt(p)
    y = np.stack([sum(n[a] * g[m - a][..., None] for a in range(m + 1)) for m in range(ORDERS)])
    y = y * nonzero_row[..., None]
    known = ORDERS
    if math.isfinite(x.floor) and nonzero_row.any():
        known = min(known, int((lead[nonzero_row] - x.floor).min()) + 1)
    return Series({-m: y[m] for m in range(ORDERS)}, -(known - 1)), lead
