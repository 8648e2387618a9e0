"""How the parameter norm grows: least-squares fits of ‖θ_t‖ against t, √t and t^¼, with R².

Each fixed form is y = a·f(t) + b with f(t) = t, √t or t^¼ (t = optimizer steps; f(0) = 0, so
step 0, the initialisation, is a valid point and gives b its meaning). The form with the
highest R² is reported as the best; nothing is assumed. Beside them, a free power law
y = a·t^k + b (k found by a bounded search, labelled ``power``) says which exponent the data
prefer; it never counts as a candidate for "best", since it has one parameter more.

``growth_rate`` is a model-free summary: the relative growth over the second half of training,
(y_end − y_mid) / |y_mid|, where mid is the first logged step at or after half the last step.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass

import numpy as np

FORMS: dict[str, float] = {"t": 1.0, "sqrt(t)": 0.5, "t^(1/4)": 0.25}
"""The fixed forms and their exponents."""

POWER_RANGE = (0.01, 3.0)
"""The exponents the free power law searches."""


@dataclass(frozen=True)
class Fit:
    """y ≈ a·t^k + b over the points, with its coefficient of determination."""

    form: str
    exponent: float
    a: float
    b: float
    r2: float | None  # None when y is constant (R² undefined)
    rmse: float

    def predict(self, t: np.ndarray) -> np.ndarray:
        """The fitted curve at steps ``t``."""
        return self.a * np.power(np.asarray(t, dtype=np.float64), self.exponent) + self.b

    def to_dict(self) -> dict:
        """A JSON-ready dict."""
        return asdict(self)


@dataclass(frozen=True)
class GrowthFits:
    """The fixed-form fits of one series, the best of them by R², and the free power law."""

    fits: list[Fit]
    best: str | None  # None when no fit has an R² (a constant series)
    power: Fit | None
    growth_rate: float | None
    start: float
    end: float

    def fit(self, form: str) -> Fit:
        """The fit of ``form`` (one of FORMS)."""
        return next(f for f in self.fits if f.form == form)

    def to_dict(self) -> dict:
        """A JSON-ready dict."""
        return {"fits": [f.to_dict() for f in self.fits], "best": self.best,
                "power": None if self.power is None else self.power.to_dict(),
                "growth_rate": self.growth_rate, "start": self.start, "end": self.end}


def fit_form(t: Sequence[float], y: Sequence[float], exponent: float, form: str = "") -> Fit:
    """Least-squares y = a·t^exponent + b, with R² (None for a constant y) and the RMS error."""
    t, y = np.asarray(t, dtype=np.float64), np.asarray(y, dtype=np.float64)
    if len(t) < 2 or np.any(t < 0):
        raise ValueError("a fit needs at least two points at steps t >= 0")
    x = np.power(t, exponent)
    design = np.stack([x, np.ones_like(x)], axis=1)
    (a, b), *_ = np.linalg.lstsq(design, y, rcond=None)
    residual = y - (a * x + b)
    ss_res = float(residual @ residual)
    ss_tot = float(((y - y.mean()) ** 2).sum())
    scale = max(float(np.abs(y).max()), 1e-300)
    r2 = None if ss_tot <= (1e-12 * scale) ** 2 * len(y) else 1.0 - ss_res / ss_tot
    return Fit(form or f"t^{exponent:g}", float(exponent), float(a), float(b), r2,
               float(np.sqrt(ss_res / len(y))))


def fit_power(t: Sequence[float], y: Sequence[float]) -> Fit | None:
    """The free power law y = a·t^k + b, k in POWER_RANGE, by grid then golden-section search."""
    if len(t) < 3:
        return None

    def loss(k: float) -> float:
        return fit_form(t, y, k).rmse

    grid = np.geomspace(*POWER_RANGE, 60)
    best = int(np.argmin([loss(k) for k in grid]))
    low, high = grid[max(best - 1, 0)], grid[min(best + 1, len(grid) - 1)]
    ratio = (np.sqrt(5) - 1) / 2
    for _ in range(60):
        left, right = high - ratio * (high - low), low + ratio * (high - low)
        if loss(left) < loss(right):
            high = right
        else:
            low = left
    fit = fit_form(t, y, (low + high) / 2)
    return Fit("power", fit.exponent, fit.a, fit.b, fit.r2, fit.rmse)


def growth_rate(t: Sequence[float], y: Sequence[float]) -> float | None:
    """Relative growth over the second half of training: (y_end − y_mid) / |y_mid|."""
    t, y = np.asarray(t, dtype=np.float64), np.asarray(y, dtype=np.float64)
    if len(t) < 2:
        return None
    mid = int(np.searchsorted(t, t[-1] / 2))
    if mid >= len(t) - 1 or y[mid] == 0:
        return None
    return float((y[-1] - y[mid]) / abs(y[mid]))


def fit_growth(t: Sequence[float], y: Sequence[float]) -> GrowthFits:
    """Fit every fixed form (and the free power law) to a norm series; pick the best by R²."""
    t, y = np.asarray(t, dtype=np.float64), np.asarray(y, dtype=np.float64)
    order = np.argsort(t)
    t, y = t[order], y[order]
    fits = [fit_form(t, y, k, name) for name, k in FORMS.items()]
    scored = [f for f in fits if f.r2 is not None]
    best = max(scored, key=lambda f: f.r2).form if scored else None
    return GrowthFits(fits, best, fit_power(t, y) if scored else None, growth_rate(t, y),
                      float(y[0]), float(y[-1]))
