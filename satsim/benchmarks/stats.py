"""Statistics of the FLaRe benchmark's columns: bootstrap intervals and McNemar's exact test.

Every statistic here works from counts of right answers (or of agreements) per trial, which is
all a percentile bootstrap of a mean of 0/1 values needs: resampling a trial's n test strings
with replacement draws its count of right answers from Binomial(n, right / n). An interval of
a language's mean over trials resamples every trial's strings independently, so it covers the
sampling of the test strings; the spread over trials is the standard deviation beside it.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

REPLICATES = 10_000
"""Bootstrap replicates of every interval."""
LEVEL = 0.95
"""The intervals' coverage."""
BOOTSTRAP_SEED = 36
"""The bootstrap's seed: the same counts give the same interval."""


def bootstrap_interval(hits: Sequence[int], sizes: Sequence[int]) -> list[float] | None:
    """The percentile-bootstrap interval of the mean over trials of hits[t] / sizes[t].

    None when no trial has a string.
    """
    pairs = [(h, n) for h, n in zip(hits, sizes) if n > 0]
    if not pairs:
        return None
    rng = np.random.default_rng(BOOTSTRAP_SEED)
    means = np.zeros(REPLICATES)
    for h, n in pairs:
        means += rng.binomial(n, h / n, size=REPLICATES) / n
    means /= len(pairs)
    tail = (1 - LEVEL) / 2
    low, high = np.quantile(means, [tail, 1 - tail])
    return [float(low), float(high)]


def mcnemar_exact(only_first: int, only_second: int) -> float:
    """McNemar's exact two-sided p-value from the discordant pairs (binomial, p = ½).

    ``only_first``: strings the first predictor gets right and the second wrong; ``only_second``
    the reverse. 1.0 when there are no discordant pairs.
    """
    total = only_first + only_second
    if total == 0:
        return 1.0
    term = tail = 1  # C(total, 0), then C(total, k) term by term, in exact integers
    for k in range(min(only_first, only_second)):
        term = term * (total - k) // (k + 1)
        tail += term
    return min(1.0, 2 * tail / 2**total)


def holm(pvalues: Sequence[float]) -> list[float]:
    """Holm's step-down adjustment of ``pvalues`` for multiple comparisons (same order)."""
    order = sorted(range(len(pvalues)), key=lambda i: pvalues[i])
    adjusted = [0.0] * len(pvalues)
    running = 0.0
    for rank, index in enumerate(order):
        running = max(running, min(1.0, (len(pvalues) - rank) * pvalues[index]))
        adjusted[index] = running
    return adjusted


# --- the controls of the limit column, per test set and over trials ---------------------------

CURVE_WIDTH = 20
"""Lengths per point of the per-length accuracy curves."""


def pair_counts(soft: list, limit: list, soft_right: np.ndarray,
                limit_right: np.ndarray) -> dict:
    """The model beside its limit on one test set, string by string.

    ``agree``: strings where both give the same determined answer; ``soft_only`` /
    ``limit_only``: strings only the model / only the limit gets right (McNemar's discordant
    pairs); ``limit_constant``: the limit gives one answer to every string it decides.
    """
    decided = {answer for answer in limit if answer is not None}
    return {"agree": sum(a is not None and a == b for a, b in zip(soft, limit)),
            "soft_only": int((soft_right & ~limit_right).sum()),
            "limit_only": int((~soft_right & limit_right).sum()),
            "limit_constant": len(decided) <= 1}


def length_curve(lengths: np.ndarray, rights: dict[str, np.ndarray]) -> dict:
    """Strings and right answers per length group (CURVE_WIDTH lengths each), per column."""
    groups = lengths // CURVE_WIDTH
    size = int(groups.max()) + 1 if len(groups) else 0
    return {"width": CURVE_WIDTH, "n": np.bincount(groups, minlength=size).tolist(),
            **{name: np.bincount(groups, weights=right, minlength=size).astype(int).tolist()
               for name, right in rights.items()}}


def summed_curves(curves: Sequence[dict]) -> dict | None:
    """Trials' curves summed group by group (None for no curves)."""
    if not curves:
        return None
    size = max(len(c["n"]) for c in curves)
    out: dict = {"width": curves[0]["width"]}
    for key in (k for k in curves[0] if k != "width"):
        total = np.zeros(size, dtype=int)
        for curve in curves:
            total[: len(curve[key])] += curve[key]
        out[key] = total.tolist()
    return out


def controls(cells: Sequence[dict], names: Sequence[str]) -> dict:
    """A language's trials on one test set: intervals, agreement, McNemar, constant limits.

    ``ci``: every column's bootstrap interval of the mean accuracy; ``agreement``: mean
    per-string model–limit agreement and its interval; ``mcnemar``: the discordant pairs summed
    over trials and the exact p-value of model against limit; ``constant_limits``: the share of
    trials whose limit gives one answer throughout.
    """
    sizes = [c["n"] for c in cells]
    soft_only = sum(c["soft_only"] for c in cells)
    limit_only = sum(c["limit_only"] for c in cells)
    agreement = [c["agree"] / c["n"] for c in cells if c["n"]]
    return {
        "ci": {name: bootstrap_interval([c["hits"][name] for c in cells], sizes)
               for name in names},
        "agreement": float(np.mean(agreement)) if agreement else None,
        "agreement_ci": bootstrap_interval([c["agree"] for c in cells], sizes),
        "mcnemar": {"soft_only": soft_only, "limit_only": limit_only,
                    "p": mcnemar_exact(soft_only, limit_only)},
        "constant_limits": (float(np.mean([c["limit_constant"] for c in cells]))
                            if cells else None)}
