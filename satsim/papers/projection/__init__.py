"""Gradient projection cθᵀ∇L of transformer sublayers (Merrill et al. 2021, section 4.2).

Reproduces the norm-growth paper's Figure 1 protocol: random sublayers of hidden size 10 with a
random affine head and softmax cross-entropy; parameters and inputs scaled by c; labels forced to
accuracy a from the model's own argmax; the projection recorded for every (c, a); ρ*(a), the
norm where it first turns positive. Imports torch: ``satsim eval`` never imports this package.

    >>> from satsim.papers.projection import projection_curve, norm_equilibrium
    >>> projection_curve("ffn", [1, 2, 5], accuracy=0.8, seed=0)      # array of 3 floats
    >>> norm_equilibrium("attention", [0.8, 0.9, 1.0], seed=0)        # ρ*(a), inf if never > 0
"""

from satsim.papers.projection.experiment import (
    CURVE_ACCURACIES,
    DEFAULT_ACCURACIES,
    DEFAULT_SCALES,
    ProjectionRun,
    SeedRun,
    norm_equilibrium,
    projection_curve,
    projection_grid,
    run_experiment,
)
from satsim.papers.projection.gradient import projection_autograd, projection_terms
from satsim.papers.projection.labels import LabelNoise, mistakes
from satsim.papers.projection.sublayers import VARIANTS, build_probe

__all__ = [
    "CURVE_ACCURACIES", "DEFAULT_ACCURACIES", "DEFAULT_SCALES", "LabelNoise", "ProjectionRun",
    "SeedRun", "VARIANTS", "build_probe", "mistakes", "norm_equilibrium",
    "projection_autograd", "projection_curve", "projection_grid", "projection_terms",
    "run_experiment",
]
