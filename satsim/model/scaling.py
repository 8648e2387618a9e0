"""Scaling a model toward saturation: θ ↦ cθ, each parameter group at its own rate.

A rate is a constant factor on c for the tensors whose names match a glob pattern, so a
group with rate r follows the trajectory θ_g ↦ r·c·θ_g. This is the paper's non-uniform
saturation (Merrill et al. 2021, appendix C): rates whose ratios converge reach the same limit as
uniform scaling of the re-weighted parameters r·θ, which is how :func:`rated` and the limit use
them.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from fnmatch import fnmatchcase

import numpy as np

from satsim.errors import SatsimError
from satsim.model.respec import map_named
from satsim.model.spec import ModelSpec

Rates = Mapping[str, float]


def check_rates(names: list[str], rates: Rates | None) -> None:
    """Raise SatsimError unless every rate is positive and finite and matches some tensor."""
    for pattern, rate in (rates or {}).items():
        if not (isinstance(rate, int | float) and math.isfinite(rate) and rate > 0):
            raise SatsimError(f"rate for {pattern!r} must be positive and finite, got {rate!r}")
        if not any(fnmatchcase(name, pattern) for name in names):
            raise SatsimError(f"rate pattern {pattern!r} matches no tensor of the model")


def rate_of(name: str, rates: Rates | None) -> float:
    """Return the rate of tensor ``name``: the last matching pattern's, else 1."""
    found = 1.0
    for pattern, rate in (rates or {}).items():
        if fnmatchcase(name, pattern):
            found = float(rate)
    return found


def parse_rates(text: str) -> dict[str, float]:
    """Parse ``'blocks.*.attn.*=2,unembed.*=0.5'`` into a rate mapping."""
    rates = {}
    for item in filter(None, (part.strip() for part in text.split(","))):
        pattern, sep, value = item.partition("=")
        try:
            rate = float(value)
        except ValueError:
            rate = math.nan
        if not sep or not math.isfinite(rate):
            raise SatsimError(f"a rate is PATTERN=NUMBER, got {item!r}")
        rates[pattern.strip()] = rate
    return rates


def scale_factors(names: list[str], c: float, rates: Rates | None = None) -> dict[str, float]:
    """Return the factor c·rate that takes each named tensor to cθ (c and rates checked)."""
    if not (math.isfinite(c) and c > 0):
        raise SatsimError(f"scale c must be positive and finite, got {c}")
    check_rates(names, rates)
    return {name: c * rate_of(name, rates) for name in names}


def scale_spec(spec: ModelSpec, c: float, rates: Rates | None = None) -> ModelSpec:
    """Return the model at cθ (every tensor times c and its group's rate)."""
    factors = scale_factors(list(spec.tensors()), c, rates)

    def scaled(name: str, array: np.ndarray) -> np.ndarray:
        out = array * array.dtype.type(factors[name])
        if not np.all(np.isfinite(out)):
            raise SatsimError(f"{name} overflows {array.dtype} at c = {c:g}; use "
                              f"{'a smaller c' if array.dtype == np.float64 else 'float64'}")
        return out

    return map_named(spec, scaled)


def rated(spec: ModelSpec, rates: Rates | None) -> ModelSpec:
    """Return the re-weighted model r·θ whose uniform limit equals the non-uniform one.

    The limit c → ∞ is that of softmax heads: a model whose heads fix their own kinds (a
    hybrid) has none, and is refused.
    """
    if spec.fixed_kinds:
        raise SatsimError(f"model {spec.name!r} fixes attention kinds per head (a hybrid); the "
                          "limit c → ∞ is defined for softmax heads only: take the limit of the "
                          "soft model")
    return spec if not rates else scale_spec(spec, 1.0, rates)
