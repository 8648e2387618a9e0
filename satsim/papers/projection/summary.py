"""The findings of a run, per variant, as numbers the acceptance criteria can be read from.

- a = 1.0: is the projection < 0 at every scale (per seed), where is it positive, how large is
  the largest positive value against the curve's peak magnitude, and how small is the last value
  (log10 of its magnitude: the float underflows at c = 1000)?
- a = 0.8: c*(0.8) and ρ*(0.8) per seed, and the value at the last scale.
- ρ*(a): the median over seeds at every accuracy, and whether it is non-decreasing in a (for the
  median, and for how many single seeds).

Medians over seeds treat "not reached" as +inf (it sorts last); JSON shows it as null.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np


def finite_or_none(value: float) -> float | None:
    """JSON has no infinity: "not reached" (or log10 of zero) becomes None."""
    return None if math.isinf(value) else float(value)



def rho_star_table(runs) -> np.ndarray:
    """ρ*(a) of every seed run at its accuracies: shape (seeds, accuracies), inf: not reached."""
    return np.array([[r.rho_star(a) for a in r.accuracies] for r in runs])


def non_decreasing(values: Sequence[float]) -> bool:
    """True when every value is >= the one before it (inf >= inf counts)."""
    return all(b >= a for a, b in zip(values, values[1:]))


def correct_summary(runs) -> dict:
    """The a = 1.0 findings over the seeds (signs from the log-space sum, so exact at c = 1000)."""
    curves = np.array([r.curve(1.0) for r in runs])
    signs = np.array([r.curve_signs(1.0) for r in runs])
    log10 = np.array([r.log10_abs[list(r.accuracies).index(1.0)] for r in runs])
    scales = np.array(runs[0].scales)
    positive = [[float(c) for c in scales[row > 0]] for row in signs]
    return {"always_negative": bool((signs < 0).all()),
            "seeds_always_negative": int((signs < 0).all(axis=1).sum()),
            "positive_scales": positive,
            "max_value": float(curves.max()),
            "max_positive_over_peak_abs": float(max(
                (row.max() / np.abs(row).max() for row in curves if row.max() > 0),
                default=0.0)),
            "peak_abs_scale": [float(scales[i]) for i in np.abs(curves).argmax(axis=1)],
            "value_first": curves[:, 0].tolist(), "value_last": curves[:, -1].tolist(),
            "log10_abs_last": log10[:, -1].tolist()}


def wrong_summary(runs, accuracy: float = 0.8) -> dict:
    """The a = 0.8 findings over the seeds."""
    c_star = [r.c_star(accuracy) for r in runs]
    rho_star = [r.rho_star(accuracy) for r in runs]
    curves = np.array([r.curve(accuracy) for r in runs])
    return {"accuracy": accuracy, "c_star": [finite_or_none(c) for c in c_star],
            "c_star_median": finite_or_none(float(np.median(c_star))),
            "rho_star": [finite_or_none(r) for r in rho_star],
            "rho_star_median": finite_or_none(float(np.median(rho_star))),
            "positive_after_c_star": bool(all(
                (curve[np.array(r.scales) >= c] > 0).all()
                for r, c, curve in zip(runs, c_star, curves) if not math.isinf(c))),
            "value_last": curves[:, -1].tolist()}


def equilibrium_summary(runs) -> dict:
    """ρ*(a) per seed and median, and whether it rises with a."""
    accuracies = list(runs[0].accuracies)
    table = rho_star_table(runs)
    median = np.median(table, axis=0)
    return {"accuracies": accuracies,
            "rho_star_median": [finite_or_none(v) for v in median],
            "c_star_median": [finite_or_none(v) for v in np.median(
                [[r.c_star(a) for a in accuracies] for r in runs], axis=0)],
            "median_non_decreasing": non_decreasing(list(median)),
            "seeds_non_decreasing": int(sum(non_decreasing(list(row)) for row in table)),
            "seeds": len(runs),
            "reached_below_1": bool(np.isfinite(table[:, np.array(accuracies) < 1]).all())}


def summarise(runs) -> dict:
    """All findings of one variant's seed runs."""
    out = {"rho0": [r.rho0 for r in runs],
           "rho0_median": float(np.median([r.rho0 for r in runs])),
           "equilibrium": equilibrium_summary(runs)}
    accuracies = runs[0].accuracies
    if any(abs(a - 1.0) < 1e-9 for a in accuracies):
        out["accuracy_1.0"] = correct_summary(runs)
    if any(abs(a - 0.8) < 1e-9 for a in accuracies):
        out["accuracy_0.8"] = wrong_summary(runs)
    return out
