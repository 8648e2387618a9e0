"""How attention is evaluated: its kind, softmax's β, and the tie tolerances per input dtype.

A key j of query i is in the tie set when s_ij >= M_i - (atol + rtol * |M_i|), where M_i is the
largest allowed score. Scores are always computed in float64, but they are dot products of inputs
that were rounded to the input dtype upstream (projections, LayerNorm), so the tolerance follows
the input dtype:

- float32: atol = rtol = 1e-5. float64: atol = rtol = 1e-9.
- Exact ties of exactly representable scores (small integers, dyadic rationals) are ties: their
  difference is 0, below any non-negative tolerance.
- Scores that differ by more than 1e-4 * max(1, |M_i|) are never ties: the tolerance is at most
  atol + rtol * |M_i| <= 2e-5 * max(1, |M_i|) (float32), far below that bound.
- The tolerance sits well above the rounding of dot products: BLAS and loop orders differ by about
  d * eps * |q| * |k|, i.e. about 1e-7 relative in float32 (eps = 6e-8) and 1e-15 in float64 for
  moderate d, so two scores that are equal in exact arithmetic still tie after rounding.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from satsim.errors import SatsimError

ATTENTION_KINDS = ("saturated", "unique-left", "unique-right", "softmax")
"""The attention kinds a run may choose for its heads (a head may fix its own: HEAD_KINDS)."""
EVALUATED_KINDS = ATTENTION_KINDS + ("score-class",)
"""Every kind a backend evaluates: the run's kinds and score-class(δ), which heads fix."""

DEFAULT_TOLERANCE: dict[type, tuple[float, float]] = {
    np.float32: (1e-5, 1e-5),
    np.float64: (1e-9, 1e-9),
}
"""(atol, rtol) of the tie test for each supported input dtype."""


def default_tolerance(dtype: np.dtype | type) -> tuple[float, float]:
    """Return the default (atol, rtol) for inputs of ``dtype`` (float32 or float64)."""
    key = np.dtype(dtype).type
    if key not in DEFAULT_TOLERANCE:
        raise SatsimError(f"no default tie tolerance for dtype {np.dtype(dtype)}; "
                         "use float32 or float64")
    return DEFAULT_TOLERANCE[key]


def tie_tolerance(dtype: np.dtype | type, atol: float | None = None,
                  rtol: float | None = None) -> tuple[float, float]:
    """The (atol, rtol) to use: the given ones, else the dtype's defaults; checked."""
    default_atol, default_rtol = default_tolerance(dtype)
    atol = default_atol if atol is None else float(atol)
    rtol = default_rtol if rtol is None else float(rtol)
    if not (math.isfinite(atol) and atol >= 0 and 0 <= rtol < 1):
        raise SatsimError(f"tolerances need atol >= 0 and 0 <= rtol < 1, got atol={atol}, "
                          f"rtol={rtol}")
    return atol, rtol


@dataclass(frozen=True)
class AttentionSettings:
    """How attention is evaluated: its kind, softmax's β, and the tie tolerances."""

    kind: str = "saturated"
    beta: float = 1.0
    atol: float | None = None
    rtol: float | None = None
    width: float = 0.0  # score-class's class width δ

    def __post_init__(self) -> None:
        if self.kind not in EVALUATED_KINDS:
            raise SatsimError(f"unknown attention kind {self.kind!r}; known: {ATTENTION_KINDS}")
        if not (np.isfinite(self.beta) and self.beta > 0):
            raise SatsimError(f"beta must be positive and finite, got {self.beta}")
        if not (math.isfinite(self.width) and self.width >= 0):
            raise SatsimError(f"a class width must be finite and >= 0, got {self.width}")


def head_settings(settings: AttentionSettings, kind: str,
                  delta: float | None) -> AttentionSettings:
    """How a head of ``kind`` (HEAD_KINDS) and width ``delta`` runs in a run with ``settings``.

    "run" takes the run's settings; soft is softmax at the run's β; saturated, and tolerant-hard
    without a width, the run's tie tolerance; tolerant-hard(δ) the tie set
    {j : s_j >= M - δ} (atol δ, rtol 0); score-class(δ) its classes of width δ.
    """
    if kind == "run":
        return settings
    if kind == "soft":
        return AttentionSettings("softmax", settings.beta)
    if kind == "score-class":
        return AttentionSettings("score-class", width=float(delta))
    if kind == "tolerant-hard" and delta is not None:
        return AttentionSettings("saturated", atol=float(delta), rtol=0.0)
    return AttentionSettings("saturated", atol=settings.atol, rtol=settings.rtol)


def overflow_remedy(dtype: np.dtype | type) -> str:
    """What to do when a model's activations overflow ``dtype``: widen it, else shrink weights."""
    return "smaller weights" if np.dtype(dtype) == np.float64 else "float64 or smaller weights"
