"""Positional information: none, a learned table, sinusoids, or features of (i, n).

Features are computed from the 1-based token position i (the first token, BOS when the model
has one, is i = 1) and the number of tokens n, so a construction can work at any length.
"""

from __future__ import annotations

import numpy as np

POSITION_KINDS = ("none", "learned", "sinusoidal", "features")

FEATURES = {
    "1": lambda i, n: np.ones_like(i),
    "i": lambda i, n: i,
    "1/i": lambda i, n: 1.0 / i,
    "i/n": lambda i, n: i / n,
    "n": lambda i, n: np.full_like(i, n),
    "1/n": lambda i, n: np.full_like(i, 1.0 / n),
    "(-1)^i": lambda i, n: np.where(i % 2 == 0, 1.0, -1.0),
}


def position_features(names: tuple[str, ...], n: int) -> np.ndarray:
    """Return the (n, len(names)) float64 matrix of the named features for positions 1..n."""
    i = np.arange(1, n + 1, dtype=np.float64)
    columns = [FEATURES[name](i, float(n)) for name in names]
    return np.stack(columns, axis=1) if columns else np.zeros((n, 0))


def sinusoidal_table(n: int, d_model: int) -> np.ndarray:
    """Return the (n, d_model) sinusoidal encoding (Vaswani et al.) of positions 0..n-1."""
    position = np.arange(n, dtype=np.float64)[:, None]
    pair = np.arange(0, d_model, 2, dtype=np.float64)
    angle = position / np.power(10000.0, pair / d_model)
    table = np.zeros((n, d_model))
    table[:, 0::2] = np.sin(angle)
    table[:, 1::2] = np.cos(angle[:, : d_model // 2])
    return table
