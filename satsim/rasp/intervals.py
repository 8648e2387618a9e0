"""Boxes through a model's layers, for certifying a decision over a whole set of inputs.

Each value is a centre and a radius per coordinate, and every operation returns a box that
holds its image of every point of the input box.

Used to certify a decision for every mean of a set of rows at once (a mean of rows lies in
their bounding box). A box of radius 0 is a point, and then every operation is the model's own
arithmetic (docs/semantics.md), in float64.
"""

from __future__ import annotations

from functools import cache

import numpy as np

from satsim.model.spec import FeedForwardSpec, LayerNormSpec
from satsim.reference import forward as reference
from satsim.reference.forward import ACTIVATION_FUNCTIONS

Box = tuple[np.ndarray, np.ndarray]
"""(centre, radius), each of shape (..., d), radius >= 0."""


def bounding_box(rows: np.ndarray) -> Box:
    """The smallest box holding ``rows`` (shape (k, d)): it holds every mean of them too."""
    lo, hi = rows.min(axis=0), rows.max(axis=0)
    return (lo + hi) / 2, (hi - lo) / 2


def affine(box: Box, W: np.ndarray, b: np.ndarray | None = None) -> Box:
    """The affine map x ↦ x W + b over the box."""
    centre, radius = box
    out = centre @ W
    return (out if b is None else out + b), radius @ np.abs(W)


def _from_bounds(lo: np.ndarray, hi: np.ndarray) -> Box:
    """The box [lo, hi]."""
    return (lo + hi) / 2, (hi - lo) / 2


def layer_norm(box: Box, ln: LayerNormSpec) -> Box:
    """LayerNorm (or RMSNorm) over the box: centring is linear, the scale an interval."""
    centre, radius = box
    d = centre.shape[-1]
    if ln.centred:
        c_mid = centre - centre.mean(axis=-1, keepdims=True)
        c_rad = radius * (1 - 1 / d) + (radius.sum(axis=-1, keepdims=True) - radius) / d
    else:
        c_mid, c_rad = centre, radius
    lo, hi = c_mid - c_rad, c_mid + c_rad
    square_hi = np.maximum(lo**2, hi**2)
    square_lo = np.where(lo > 0, lo**2, np.where(hi < 0, hi**2, 0.0))
    inv_hi = 1 / np.sqrt(square_lo.mean(axis=-1, keepdims=True) + ln.eps)
    inv_lo = 1 / np.sqrt(square_hi.mean(axis=-1, keepdims=True) + ln.eps)
    out_centre, out_radius = _from_bounds(np.minimum(lo * inv_lo, lo * inv_hi),
                                          np.maximum(hi * inv_lo, hi * inv_hi))
    if ln.w is not None:
        out_centre, out_radius = out_centre * ln.w, out_radius * np.abs(ln.w)
    if ln.b is not None:
        out_centre = out_centre + ln.b
    exact = (radius == 0).all(axis=-1, keepdims=True)  # a point: the norm's own formula
    return (np.where(exact, reference.layer_norm(centre, ln), out_centre),
            np.where(exact, 0.0, out_radius))


@cache
def _lowest_point(activation: str) -> float:
    """Where ``activation`` takes its least value (each is falling, then rising)."""
    f = ACTIVATION_FUNCTIONS[activation]
    lo, hi = -10.0, 0.0
    for _ in range(200):  # ternary search on a unimodal function
        a, b = lo + (hi - lo) / 3, hi - (hi - lo) / 3
        if f(np.array(a)) <= f(np.array(b)):
            hi = b
        else:
            lo = a
    return (lo + hi) / 2


def activation(box: Box, name: str) -> Box:
    """An activation that falls, then rises, over the box.

    Its values at the box's ends, and its least value where the box holds the lowest point.
    """
    f = ACTIVATION_FUNCTIONS[name]
    centre, radius = box
    lo, hi = centre - radius, centre + radius
    f_lo, f_hi = f(lo), f(hi)
    low = _lowest_point(name)
    least = f(np.array(low)) - 1e-12 * (1 + abs(float(f(np.array(low)))))
    bottom = np.where((lo < low) & (low < hi), least, np.minimum(f_lo, f_hi))
    top = np.maximum(f_lo, f_hi)
    exact = radius == 0
    return _from_bounds(np.where(exact, f_lo, bottom), np.where(exact, f_lo, top))


def feed_forward(box: Box, mlp: FeedForwardSpec) -> Box:
    """The feed-forward sublayer over the box."""
    hidden = affine(box, mlp.W_in.astype(np.float64), mlp.b_in)
    return affine(activation(hidden, mlp.activation), mlp.W_out.astype(np.float64), mlp.b_out)


def add(a: Box, b: Box) -> Box:
    """The sum of two boxes."""
    return a[0] + b[0], a[1] + b[1]

