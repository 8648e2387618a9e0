"""The snap point: the iteration after which the attention composition stops moving.

Let c_t(n) be next token n's composition over its slots after t updates (see ``measures``) and
δ_t = mean over n of TV(c_t(n), c_{t-1}(n)), t = 1..T, the per-iteration change. The snap point
is the smallest t such that δ_s < ε for every s in t+1..T: the iteration after which every
further update moves the composition by less than ε (total variation). It is 0 when δ never
reaches ε, and ``NOT_SNAPPED`` (-1) when the last update still moves it by ε or more.
"""

from __future__ import annotations

import numpy as np

DEFAULT_EPSILON = 1e-3
"""Default threshold ε on the per-iteration total-variation change of the composition."""
NOT_SNAPPED = -1
"""Snap point of a run whose last update still changes the composition by ε or more."""


def composition_change(compositions: np.ndarray) -> np.ndarray:
    """Return δ_t, t = 1..T, from compositions (..., T+1, N, slots): mean TV between iterations."""
    c = np.asarray(compositions, dtype=np.float64)
    return 0.5 * np.abs(np.diff(c, axis=-3)).sum(axis=-1).mean(axis=-1)


def snap_point(changes: np.ndarray, epsilon: float = DEFAULT_EPSILON) -> np.ndarray:
    """Return the snap point of each run, int (...), from its changes δ_1..δ_T (..., T)."""
    if not epsilon > 0:
        raise ValueError(f"the snap threshold epsilon must be positive, got {epsilon}")
    changes = np.asarray(changes, dtype=np.float64)
    T = changes.shape[-1]
    big = changes >= epsilon
    # index of the last update with δ >= ε, counted 1..T; 0 when there is none
    last = np.where(big.any(axis=-1), T - np.argmax(big[..., ::-1], axis=-1), 0)
    return np.where(last == T, NOT_SNAPPED, last).astype(np.int64)


def diverged(losses: np.ndarray) -> np.ndarray:
    """Return per run, bool (...), whether its loss (..., T+1) rose or was not finite.

    Such a run had a learning rate too large to train: its "snap" is the model freezing.
    """
    losses = np.asarray(losses, dtype=np.float64)
    return ~np.isfinite(losses).all(axis=-1) | (losses[..., -1] > losses[..., 0])
