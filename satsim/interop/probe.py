"""What the importers' self-checks share: the probe's lengths and tokens, and the tolerance.

An import runs its source model and satsim's softmax-at-β equivalent of the imported spec on a
probe batch (random token sequences, seeded, so an import is reproducible) and refuses when they
differ by more than :func:`tolerance`: ``TOLERANCE_FACTOR`` roundings of the dtype the source
computes in, relative to the scale of the compared values. Two correct computations of the same
function differ by a few roundings per operation; a missing hook, norm or flag moves the values
by a sizeable fraction of their scale.
"""

from __future__ import annotations

import numpy as np

PROBE_SEED = 25
"""The seed of the probe's random tokens."""

TOLERANCE_FACTOR = 2.0**10
"""Roundings of the source's dtype allowed per unit of scale (docs/interop.md: calibration)."""


def tolerance(eps: float, scale: float, sensitivity: float = 0.0) -> float:
    """The largest difference that counts as rounding: FACTOR · ε · max(scale, sensitivity)."""
    return TOLERANCE_FACTOR * eps * max(scale, sensitivity)


def sensitivity(reference: np.ndarray, narrow: np.ndarray) -> float:
    """How far one relative rounding moves the values: |float32 run − float64 run| / ε₃₂."""
    return largest_difference(narrow, reference) / float(np.finfo(np.float32).eps)


def probe_lengths(longest: int, causal: bool) -> list[int]:
    """The probe's sequence lengths, up to ``longest``.

    A causal model's longest sequence holds every shorter one as a prefix (its logits at
    position p are those of the first p + 1 tokens alone), so it is the only one run; a
    bidirectional model runs ⌈longest/2⌉ and ``longest``.
    """
    if causal:
        return [longest]
    return sorted({(longest + 1) // 2, longest})


def probe_tokens(alphabet_size: int, lengths: list[int]) -> list[np.ndarray]:
    """One sequence of seeded random token ids in [0, alphabet_size) per length."""
    rng = np.random.default_rng(PROBE_SEED)
    return [rng.integers(0, alphabet_size, length) for length in lengths]


def largest_difference(ours: np.ndarray, theirs: np.ndarray) -> float:
    """The largest |ours − theirs| over finite entries (∞ where only one side is finite)."""
    ours, theirs = np.asarray(ours, np.float64), np.asarray(theirs, np.float64)
    if ours.shape != theirs.shape:
        return float("inf")
    with np.errstate(invalid="ignore", over="ignore"):
        gap = ours - theirs
        largest = np.abs(gap, out=gap).max(initial=0.0)
    if np.isfinite(largest):  # every entry is finite on both sides: one pass suffices
        return float(largest)
    finite = np.isfinite(theirs)
    if not np.array_equal(finite, np.isfinite(ours)) or np.isnan(theirs).any():
        return float("inf")
    if not finite.any():
        return 0.0
    with np.errstate(over="ignore"):  # a gap beyond float64 is ∞, as it should be
        return float(np.abs(ours[finite] - theirs[finite]).max())


def scale_of(values: np.ndarray) -> float:
    """The largest magnitude among the finite entries (0 when there are none)."""
    values = np.asarray(values, np.float64)
    finite = values[np.isfinite(values)]
    return float(np.abs(finite).max()) if finite.size else 0.0
