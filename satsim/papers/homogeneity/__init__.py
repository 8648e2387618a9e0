"""Homogeneity curves of random encoders (Merrill et al. 2021, B.1, Figure 5), two protocols.

- ``authors``: the model of the authors' script (viking-sudo-rm/norm-growth,
  ``plot_trans_scale.py``): post-norm LN(x + f(x)) and their "pre-norm" LN(f(x)) + x, causal
  scores multiplied by a 0/1 mask (future keys keep weight), learned positions, biases;
- ``standard``: the same weights in post-LN LN(x + f(x)) and pre-LN x + f(LN x) with a final
  LayerNorm, each with causal (future keys excluded) and bidirectional attention.

The measure, for both: the cosine of the encoder output pooled over every sequence at c against
c = 1000. torch is imported on use (``satsim.soft``).
"""

from satsim.papers.homogeneity.curves import (
    PROTOCOLS,
    REFERENCE_C,
    SCALES,
    Curve,
    homogeneity_curves,
)
from satsim.papers.homogeneity.encoders import EncoderSizes, random_encoder

__all__ = [
    "PROTOCOLS",
    "REFERENCE_C",
    "SCALES",
    "Curve",
    "EncoderSizes",
    "homogeneity_curves",
    "random_encoder",
]
