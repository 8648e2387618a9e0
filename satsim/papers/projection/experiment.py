"""The section 4.2 protocol: projection curves over scales c and accuracies a, and ρ*(a).

One *seed* fixes the probe's initialisation, the n random inputs (i.i.d. N(0, 1), shape
(n, hidden); for attention they are one sequence of length n) and the label noise (see
``labels``). For every scale c: scale θ and the inputs by c, take the argmax of the logits, build
the labels for every accuracy a from it, and record cθᵀ∇L (see ``gradient``). Never any training.

c*(a) is the first c of the scale grid (in the order given) where the projection is > 0, and
ρ*(a) = c*(a)·‖θ0‖; when the projection is never positive on the grid, c* and ρ* are infinite
("not reached").
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from satsim.errors import SatsimError
from satsim.papers.projection.gradient import projection_terms, theta_norm
from satsim.papers.projection.labels import LabelNoise
from satsim.papers.projection.sublayers import VARIANTS, build_probe, get_variant
from satsim.papers.projection.summary import finite_or_none, summarise

DEFAULT_SCALES: tuple[float, ...] = tuple(float(c) for c in range(1, 50)) + (1000.0,)
DEFAULT_ACCURACIES: tuple[float, ...] = tuple(round(0.75 + 0.025 * i, 3) for i in range(11))
CURVE_ACCURACIES: tuple[float, ...] = (1.0, 0.8)


def draw_inputs(n: int, hidden: int, seed: int) -> np.ndarray:
    """The seed's n random inputs, i.i.d. standard normal, shape (n, hidden)."""
    return np.random.default_rng([seed, 0x1a7]).standard_normal((n, hidden))


def first_positive(scales: Sequence[float], values: Sequence[float]) -> float:
    """The first scale whose value is > 0, or infinity when there is none."""
    for c, value in zip(scales, values):
        if value > 0:
            return float(c)
    return math.inf


@dataclass
class SeedRun:
    """Projections of one variant and one seed: one row per accuracy, one column per scale."""

    variant: str
    seed: int
    rho0: float
    scales: tuple[float, ...]
    accuracies: tuple[float, ...]
    values: np.ndarray     # (accuracies, scales) floats; ±0.0 where the value underflows
    signs: np.ndarray      # (accuracies, scales) in {-1, 0, 1}, exact even where values are 0
    log10_abs: np.ndarray  # (accuracies, scales) log10 |projection|

    def curve(self, accuracy: float) -> np.ndarray:
        """The projections at ``accuracy`` over the scales."""
        return self.values[_index(self.accuracies, accuracy)]

    def curve_signs(self, accuracy: float) -> np.ndarray:
        """The signs of the projections at ``accuracy`` (exact where the float underflows)."""
        return self.signs[_index(self.accuracies, accuracy)]

    def c_star(self, accuracy: float) -> float:
        """The first scale where the projection at ``accuracy`` is positive (inf if none)."""
        return first_positive(self.scales, self.curve_signs(accuracy))

    def rho_star(self, accuracy: float) -> float:
        """ρ*(a) = c*(a)·‖θ0‖ (inf if the projection never turns positive)."""
        return self.c_star(accuracy) * self.rho0


def _index(accuracies: Sequence[float], accuracy: float) -> int:
    """Position of ``accuracy`` in the grid (to 1e-9)."""
    for i, a in enumerate(accuracies):
        if abs(a - accuracy) < 1e-9:
            return i
    raise SatsimError(f"accuracy {accuracy} is not in the grid")


def projection_grid(variant: str, scales: Sequence[float] = DEFAULT_SCALES,
                    accuracies: Sequence[float] = DEFAULT_ACCURACIES, *, seed: int = 0,
                    n: int = 512, hidden: int = 10, classes: int = 10, scale_head: bool = False,
                    head_bias: bool = True,
                    on_scale: Callable[[], None] | None = None) -> SeedRun:
    """Run one variant and one seed over every (accuracy, scale) pair of the grid."""
    scales, accuracies = check_grid(scales, accuracies)
    if n < 1:
        raise SatsimError("n must be >= 1")
    probe = build_probe(variant, hidden=hidden, classes=classes, seed=seed, head_bias=head_bias)
    inputs = draw_inputs(n, hidden, seed)
    noise = LabelNoise.draw(n, classes, seed)
    shape = (len(accuracies), len(scales))
    values, signs, log10_abs = np.empty(shape), np.empty(shape, dtype=np.int8), np.empty(shape)
    for j, c in enumerate(scales):
        terms = projection_terms(probe, inputs, c, scale_head)
        argmax = terms.argmax
        for i, a in enumerate(accuracies):
            result = terms.projection(noise.labels(argmax, a))
            values[i, j], signs[i, j], log10_abs[i, j] = (result.value, result.sign,
                                                          result.log10_abs)
        if on_scale is not None:
            on_scale()
    return SeedRun(get_variant(variant).name, seed, theta_norm(probe, scale_head), scales,
                   accuracies, values, signs, log10_abs)


def projection_curve(variant: str, scales: Sequence[float] = DEFAULT_SCALES,
                     accuracy: float = 1.0, *, seed: int = 0, n: int = 512, hidden: int = 10,
                     classes: int = 10, scale_head: bool = False,
                     head_bias: bool = True) -> np.ndarray:
    """cθ0ᵀ·∇L at cθ0 for every c in ``scales``, labels forced to ``accuracy``."""
    run = projection_grid(variant, scales, [accuracy], seed=seed, n=n, hidden=hidden,
                          classes=classes, scale_head=scale_head, head_bias=head_bias)
    return run.values[0]


def norm_equilibrium(variant: str, accuracies: Sequence[float] = DEFAULT_ACCURACIES,
                     scales: Sequence[float] = DEFAULT_SCALES, *, seed: int = 0, n: int = 512,
                     hidden: int = 10, classes: int = 10, scale_head: bool = False,
                     head_bias: bool = True) -> np.ndarray:
    """ρ*(a) = c*(a)·‖θ0‖ for every a in ``accuracies`` (inf where never positive)."""
    run = projection_grid(variant, scales, accuracies, seed=seed, n=n, hidden=hidden,
                          classes=classes, scale_head=scale_head, head_bias=head_bias)
    return np.array([run.rho_star(a) for a in run.accuracies])


def check_grid(scales: Sequence[float], accuracies: Sequence[float]
               ) -> tuple[tuple[float, ...], tuple[float, ...]]:
    """Validate the grids; return them as tuples of floats (accuracies sorted, unique)."""
    scales = tuple(float(c) for c in scales)
    if not scales or any(not math.isfinite(c) or c <= 0 for c in scales):
        raise SatsimError("scales must be a non-empty list of positive numbers")
    acc = sorted({round(float(a), 9) for a in accuracies})
    if not acc or any(not 0.0 <= a <= 1.0 for a in acc):
        raise SatsimError("accuracies must be a non-empty list of numbers in [0, 1]")
    return scales, tuple(acc)


@dataclass
class ProjectionRun:
    """Every variant × seed run of an experiment, with the settings."""

    settings: dict
    runs: dict[str, list[SeedRun]] = field(default_factory=dict)

    def to_dict(self) -> dict:
        """JSON-ready: settings, per-variant per-seed curves and ρ*, and the summary."""
        out = {"settings": self.settings, "variants": {}}
        for name, runs in self.runs.items():
            out["variants"][name] = {
                "summary": summarise(runs),
                "seeds": [{"seed": r.seed, "rho0": r.rho0,
                           "c_star": [finite_or_none(r.c_star(a)) for a in r.accuracies],
                           "rho_star": [finite_or_none(r.rho_star(a)) for a in r.accuracies],
                           "projection": {f"{a:g}": r.curve(a).tolist()
                                          for a in CURVE_ACCURACIES if a in r.accuracies},
                           "log10_abs": {f"{a:g}": [finite_or_none(v) for v in
                                                    r.log10_abs[_index(r.accuracies, a)]]
                                         for a in CURVE_ACCURACIES if a in r.accuracies},
                           "sign": {f"{a:g}": r.curve_signs(a).tolist()
                                    for a in CURVE_ACCURACIES if a in r.accuracies}}
                          for r in runs]}
        return out


def run_experiment(variants: Sequence[str] = tuple(VARIANTS),
                   scales: Sequence[float] = DEFAULT_SCALES,
                   accuracies: Sequence[float] = DEFAULT_ACCURACIES,
                   seeds: Sequence[int] = tuple(range(5)), *, n: int = 512, hidden: int = 10,
                   classes: int = 10, scale_head: bool = False, head_bias: bool = True,
                   on_scale: Callable[[], None] | None = None) -> ProjectionRun:
    """Run the whole protocol; the curve accuracies 1.0 and 0.8 are always added to the grid."""
    variants = [get_variant(v).name for v in variants]
    if not variants or not seeds:
        raise SatsimError("give at least one variant and one seed")
    scales, accuracies = check_grid(scales, tuple(accuracies) + CURVE_ACCURACIES)
    settings = {"variants": variants, "scales": list(scales), "accuracies": list(accuracies),
                "seeds": list(seeds), "n": n, "hidden": hidden, "classes": classes,
                "scale_head": scale_head, "head_bias": head_bias,
                "loss": "mean softmax cross-entropy",
                "dtype": "float64"}
    result = ProjectionRun(settings)
    for name in variants:
        result.runs[name] = [projection_grid(name, scales, accuracies, seed=s, n=n,
                                             hidden=hidden, classes=classes,
                                             scale_head=scale_head, head_bias=head_bias,
                                             on_scale=on_scale)
                             for s in seeds]
    return result
