"""Which scales c a dtype can hold: activations grow like c^k, LayerNorm variances like c^2k.

The largest power of c in a forward pass at cθ (the growth exponent) is read off the network
graph: the highest node degree, or twice the degree of a LayerNorm's input. A scale is safe when
c^exponent stays below the dtype's largest value divided by ``HEADROOM``, which leaves room for
activations at θ of up to about 10^3 (squared in a variance).
"""

from __future__ import annotations

import numpy as np
from numpy.typing import DTypeLike

from satsim.errors import SatsimError
from satsim.model.degrees import growth_exponent, network_graph
from satsim.model.spec import ModelSpec

HEADROOM = 1e6


def max_safe_scale(spec: ModelSpec, dtype: DTypeLike) -> float:
    """Return the largest c whose forward pass at cθ should not overflow ``dtype``."""
    exponent = growth_exponent(network_graph(spec))
    return float((np.finfo(dtype).max / HEADROOM) ** (1.0 / max(exponent, 1)))


def check_scale(spec: ModelSpec, c: float, dtype: DTypeLike) -> None:
    """Raise SatsimError when a forward pass at cθ would overflow ``dtype``."""
    safe = max_safe_scale(spec, dtype)
    if c > safe:
        exponent = growth_exponent(network_graph(spec))
        raise SatsimError(
            f"c = {c:g} overflows {np.dtype(dtype)} in {spec.name!r}: its activations grow like "
            f"c^{exponent}, so {np.dtype(dtype)} holds c up to about {safe:.3g}; use "
            f"{'a smaller c' if np.dtype(dtype) == np.float64 else 'float64 or a smaller c'}"
        )
