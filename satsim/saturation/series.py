"""Activations as finite expansions Σ_k c^k x_k in the scale c, known down to a degree ``floor``.

The arithmetic a transformer needs: sums, products with parameters (degree 1) and with other
expansions, ReLU (a coordinate survives iff its leading nonzero coefficient is positive),
LayerNorm (the inverse norm as a power series in 1/c, truncated to ``orders`` terms), and the
exp/ratio series of softmax weights. Results that cancel to rounding level (|x| ≤ TOL times the
magnitude of what was added) are exact zeros, so that a coefficient that vanishes in exact
arithmetic vanishes here too.

Truncation is never silent. Every expansion knows its ``floor``: below it nothing is known. An
entry whose known coefficients are all zero above a finite floor has an unknown leading term,
and a coefficient that cannot be determined at all is NaN; NaN propagates through every
operation, so an output that depends on an unknown is NaN, never a plausible number.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

TOL = 1e-10
"""Relative size below which a computed coefficient counts as an exact zero."""

ORDERS = 16
"""How many terms an infinite series (LayerNorm's inverse norm, softmax weights) keeps."""

SPAN = 48
"""How many degrees below its top any expansion keeps (a polynomial in c is kept whole up to
this span, so a deep model without LayerNorm is exact at every degree)."""


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
    """Keep at most SPAN degrees below the top; the floor rises only if a term is dropped."""
    lowest = max(terms) - SPAN + 1
    if min(terms) < lowest:
        floor = max(floor, lowest)
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


_LINEAR = {
    "td,de->te": lambda u, w: u @ w,
    "td,do->to": lambda u, w: u @ w,
    "td,hde->hte": lambda u, w: u[..., None, :, :] @ w,
    "hte,hed->td": lambda u, w: (u @ w).sum(axis=-3),
    "...d,d->...d": lambda u, w: u * w,
}
"""The linear maps of a transformer as (BLAS) products on every coefficient at once."""


def contract(x: Series, pattern: str, weight: np.ndarray, degree: int = 1) -> Series:
    """einsum(pattern, x, weight) with a parameter of the given degree."""
    weight = np.asarray(weight, dtype=np.float64)
    linear = _LINEAR.get(pattern)
    if linear is None:
        terms = {k + degree: snap(np.einsum(pattern, v, weight),
                                  np.einsum(pattern, np.abs(v), np.abs(weight)))
                 for k, v in x.terms.items()}
        return Series(terms, x.floor + degree)
    degrees = list(x.terms)
    shape = np.broadcast_shapes(*(np.shape(t) for t in x.terms.values()))
    stacked = np.stack([np.broadcast_to(x.terms[k], shape) for k in degrees])
    out = snap(linear(stacked, weight), linear(np.abs(stacked), np.abs(weight)))
    return Series({k + degree: out[n] for n, k in enumerate(degrees)}, x.floor + degree)


def _keys(w: np.ndarray, u: np.ndarray) -> np.ndarray:
    """Values ``w`` (h, s, e) with a broadcast key axis stretched to the S keys of ``u``."""
    return np.broadcast_to(w, w.shape[:-2] + (u.shape[-1], w.shape[-1]))


_MATMUL = {"hte,hse->hts": lambda u, w: u @ np.swapaxes(w, -1, -2),
           "hts,hse->hte": lambda u, w: u @ _keys(w, u)}
"""Attention's two contractions as (BLAS) matrix products; einsum does the rest."""


def _contract(pattern: str, u: np.ndarray, w: np.ndarray) -> np.ndarray:
    """einsum(pattern, u, w), by matmul where the pattern is a batched matrix product."""
    fast = _MATMUL.get(pattern)
    return fast(u, w) if fast is not None else np.einsum(pattern, u, w)


def _live(x: Series) -> dict[int, bool]:
    """Per degree: whether the coefficient has an entry that is not exactly 0 (NaN counts)."""
    return {k: bool((v != 0).any()) for k, v in x.terms.items()}


def _complete(total: dict, magnitude: dict, degrees) -> None:
    """Give every degree in ``degrees`` a coefficient (zeros where no pair contributed)."""
    shape = np.broadcast_shapes(*(np.shape(t) for t in total.values()))
    for k in degrees:
        total.setdefault(k, np.zeros(shape))
        magnitude.setdefault(k, np.zeros(shape))


def product(a: Series, b: Series, pattern: str) -> Series:
    """einsum(pattern, a, b) of two expansions: degrees add (pairs of zero terms skipped)."""
    total: dict[int, np.ndarray] = {}
    magnitude: dict[int, np.ndarray] = {}
    live_a, live_b = _live(a), _live(b)
    pairs = [(i, j) for i in a.terms for j in b.terms]
    for i, j in [p for p in pairs if live_a[p[0]] and live_b[p[1]]] or pairs[:1]:
        u, w = a.terms[i], b.terms[j]
        total[i + j] = total.get(i + j, 0.0) + _contract(pattern, u, w)
        magnitude[i + j] = magnitude.get(i + j, 0.0) + _contract(pattern, np.abs(u), np.abs(w))
    _complete(total, magnitude, {i + j for i, j in pairs})
    floor = max(a.floor + b.top, b.floor + a.top)
    kept = {k: snap(total[k], magnitude[k]) for k in total if k >= floor}
    return truncate(kept, floor)


NO_DEGREE = np.iinfo(np.int64).min
"""The degree reported for an entry with no nonzero coefficient."""


def first_nonzero(x: Series) -> tuple[np.ndarray, np.ndarray]:
    """Per entry: the first coefficient from the top that is nonzero or NaN, and its degree.

    An entry with no such coefficient gets value 0 and degree NO_DEGREE.
    """
    degrees, stacked = x.stack()
    alive = stacked != 0  # NaN != 0 too: an unknown coefficient stops the search
    first = np.argmax(alive, axis=0)
    value = np.take_along_axis(stacked, first[None], axis=0)[0]
    found = alive.any(axis=0)
    return np.where(found, value, 0.0), np.where(found, np.asarray(degrees)[first], NO_DEGREE)


def leading(x: Series) -> tuple[np.ndarray, np.ndarray]:
    """Per entry: the leading nonzero coefficient and its degree; NaN where it is not known.

    An entry whose known coefficients are all zero has no known leading term: above a finite
    floor it lies below what is known, and even an expansion exact at every power of c leaves
    out the exponentially small weights (e^(-c^k·gap)) of keys that attention removed, which
    can decide the sign of what is zero at every power.
    """
    value, degree = first_nonzero(x)
    return np.where(degree == NO_DEGREE, np.nan, value), degree


def relu(x: Series) -> Series:
    """ReLU: a coordinate keeps its expansion iff its leading nonzero coefficient is positive.

    A coordinate zero at every known degree is zero at every known degree after ReLU too, so
    that needs no sign; one whose leading coefficient is unknown (NaN) stays unknown.
    """
    value, _ = first_nonzero(x)
    keep = value > 0
    unknown = np.isnan(value)
    return Series({k: np.where(unknown, np.nan, np.where(keep, v, 0.0))
                   for k, v in x.terms.items()}, x.floor)


def relu_like(x: Series, fn: Callable[[np.ndarray], np.ndarray]) -> Series:
    """GELU or SiLU (``fn`` on arrays): ReLU's expansion where a coordinate grows with c.

    At a positive leading degree the activation differs from ReLU by an exponentially small
    amount (z·Φ(-z) for GELU, z·σ(-z) for SiLU), so its expansion is ReLU's at every power of
    c. A bounded coordinate (leading degree 0 or below) gives fn of its degree-0 coefficient at
    degree 0; its lower coefficients would need the activation's Taylor series and are left
    unknown (NaN), so whatever depends on them is undetermined, never guessed.
    """
    value, degree = first_nonzero(x)
    rectified = relu(x)
    bounded = (degree <= 0) & (degree != NO_DEGREE)
    shape = np.broadcast_shapes(*(t.shape for t in x.terms.values()))
    zero = np.zeros(shape)
    at_zero = np.where(bounded, fn(np.where(degree == 0, value, 0.0)),
                       rectified.terms.get(0, zero))
    terms = {}
    for k in range(max(x.top, 0), min(min(x.terms), 0) - 1, -1):
        if k == 0:
            terms[k] = at_zero
        else:
            terms[k] = np.where(bounded, 0.0 if k > 0 else np.nan, rectified.terms.get(k, zero))
    return Series(terms, x.floor)


def _inverse_sqrt(p: np.ndarray) -> np.ndarray:
    """Power series of P(u)^(-1/2) from P's coefficients p (M, ...), by Miller's recurrence."""
    g = np.zeros_like(p)
    g[0] = p[0] ** -0.5
    for n in range(1, len(p)):
        acc = sum((0.5 * k - n) * p[k] * g[n - k] for k in range(1, n + 1))
        g[n] = acc / (n * p[0])
    return g


def layer_norm(x: Series, eps: float, centre: bool = True, orders: int = ORDERS
               ) -> tuple[Series, np.ndarray]:
    """LayerNorm (RMSNorm without ``centre``) of rows of ``x``, no affine; each row's input degree.

    A row whose centred input has leading degree L normalises to degree min(L, 0): the variance
    is c^2L·P(1/c) + ε, whose inverse square root is a power series in 1/c. A row with an unknown
    leading term (NaN, or zero at every degree known above a finite floor) is NaN; coefficients
    below what the input determines are NaN too.
    """
    degrees, stacked = x.stack()
    centred = (snap(stacked - stacked.mean(axis=-1, keepdims=True),
                    np.abs(stacked).max(axis=-1, keepdims=True)) if centre else stacked)
    alive = (centred != 0).any(axis=-1)  # (G, rows...); a NaN coefficient counts as alive
    found = alive.any(axis=0)
    first = np.argmax(alive, axis=0)
    lead = np.where(found, np.asarray(degrees)[first], NO_DEGREE)
    index = first[None] + np.arange(orders).reshape((-1,) + (1,) * first.ndim)
    inside = (index < len(degrees))[..., None]
    n = np.take_along_axis(centred, np.minimum(index, len(degrees) - 1)[..., None], axis=0)
    n = np.where(inside, n, 0.0)  # n[m]: the coefficient of degree lead - m
    unknown = found & np.isnan(n[0]).any(axis=-1)
    if math.isfinite(x.floor):
        unknown |= ~found
    level = np.where(found, lead, 0)
    shift = np.maximum(0, -2 * level)  # ε dominates the variance of a row of negative degree
    d = centred.shape[-1]
    squares = np.stack([sum((n[a] * n[k - a]).sum(axis=-1) for a in range(k + 1)) / d
                        for k in range(orders)])  # coefficient of degree 2·lead - k
    p = np.stack([np.where(m >= shift, np.take_along_axis(
        squares, np.clip(m - shift, 0, orders - 1)[None], axis=0)[0], 0.0)
        for m in range(orders)])  # coefficient of degree max(2·lead, 0) - m
    for m in range(orders):
        p[m] = np.where(np.maximum(2 * level, 0) == m, p[m] + eps, p[m])
    p[0] = np.where(found & ~unknown, p[0], 1.0)
    g = _inverse_sqrt(p)
    y = np.stack([sum(n[a] * g[m - a][..., None] for a in range(m + 1)) for m in range(orders)])
    known = np.full(lead.shape, orders)
    if math.isfinite(x.floor):
        known = np.minimum(known, np.where(found, lead - x.floor + 1, orders))
    order = np.arange(orders).reshape((-1,) + (1,) * lead.ndim)
    y = np.where((order >= known[None])[..., None], np.nan, y)
    y = np.where(unknown[None, ..., None], np.nan, np.where(found[None, ..., None], y, 0.0))
    top = np.minimum(level, 0)  # each row's output degree
    span = orders - int(top.min(initial=0))
    terms = {}
    for j in range(span):  # degree -j
        m = j + top  # which y coefficient lands at degree -j in each row
        row = np.take_along_axis(y, np.clip(m, 0, orders - 1)[None, ..., None], axis=0)[0]
        terms[-j] = np.where((m < 0)[..., None], 0.0,
                             np.where((m >= orders)[..., None], np.nan, row))
    return Series(terms, -(span - 1)), lead


def exp_series(a: np.ndarray) -> np.ndarray:
    """Coefficients of exp(Σ_{k≥1} a[k] u^k) in powers of u (a[0] is ignored), along axis 0."""
    e = np.zeros_like(a)
    e[0] = 1.0
    for n in range(1, len(a)):
        e[n] = sum(k * a[k] * e[n - k] for k in range(1, n + 1)) / n
    return e


def ratio_series(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    """Coefficients of num(u) / den(u) along axis 0 (den[0] nonzero), snapped to exact zeros."""
    out = np.zeros_like(num)
    for n in range(len(num)):
        carried = sum(den[k] * out[n - k] for k in range(1, n + 1)) if n else 0.0
        scale = np.abs(num[n]) + (sum(np.abs(den[k] * out[n - k]) for k in range(1, n + 1))
                                  if n else 0.0)
        out[n] = snap(num[n] - carried, scale) / den[0]
    return out
