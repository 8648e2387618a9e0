"""Named residual-stream dimensions, so hand-built weights read like the construction's idea."""

from __future__ import annotations

import numpy as np


class Residual:
    """A residual stream whose dimensions have names; builds weight matrices entry by entry."""

    def __init__(self, *names: str, dtype: type = np.float32) -> None:
        self.index = {name: i for i, name in enumerate(names)}
        self.dtype = dtype

    @property
    def width(self) -> int:
        """The model dimension."""
        return len(self.index)

    def read(self, entries: dict[str, float], width: int | None = None) -> np.ndarray:
        """A (d_model, width) matrix reading named dims into columns: {dim: weight} for column 0.

        ``entries`` maps a dim name, or a (dim, column) pair, to a weight.
        """
        columns = width or 1
        matrix = np.zeros((self.width, columns), dtype=self.dtype)
        for key, weight in entries.items():
            name, column = key if isinstance(key, tuple) else (key, 0)
            matrix[self.index[name], column] = weight
        return matrix

    def columns(self, forms: list[dict[str, float]]) -> np.ndarray:
        """A (d_model, len(forms)) matrix whose column i reads the linear form ``forms[i]``."""
        matrix = np.zeros((self.width, len(forms)), dtype=self.dtype)
        for column, form in enumerate(forms):
            for name, weight in form.items():
                matrix[self.index[name], column] = weight
        return matrix

    def embedding(self, vocab: tuple[str, ...], rows: dict[str, dict[str, float]]) -> np.ndarray:
        """Token embedding (len(vocab), d_model) from {token: {dim: value}}."""
        matrix = np.zeros((len(vocab), self.width), dtype=self.dtype)
        for token, entries in rows.items():
            for name, value in entries.items():
                matrix[vocab.index(token), self.index[name]] = value
        return matrix
