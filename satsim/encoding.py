"""From strings to token ids and input vectors: BOS/EOS, symbol checks, positional information."""

from __future__ import annotations

import numpy as np

from satsim.errors import SatsimError
from satsim.positions import position_features, sinusoidal_table
from satsim.spec import ModelSpec


def encode(spec: ModelSpec, string: str) -> np.ndarray:
    """Return the int64 token ids of ``string`` with the model's BOS/EOS added."""
    index = {token: i for i, token in enumerate(spec.vocab) if token not in (spec.bos, spec.eos)}
    ids = np.empty(len(string) + (spec.bos is not None) + (spec.eos is not None), dtype=np.int64)
    offset = 0
    if spec.bos is not None:
        ids[0] = spec.vocab.index(spec.bos)
        offset = 1
    try:
        ids[offset : offset + len(string)] = [index[symbol] for symbol in string]
    except KeyError:
        position = next(i for i, symbol in enumerate(string) if symbol not in index)
        raise SatsimError(
            f"symbol {string[position]!r} at position {position} is not in the alphabet of "
            f"model {spec.name!r} {spec.alphabet}"
        ) from None
    if spec.eos is not None:
        ids[-1] = spec.vocab.index(spec.eos)
    return ids


def positional_vectors(spec: ModelSpec, n: int) -> np.ndarray | None:
    """Return the (n, d_model) positional vectors for a sequence of n tokens, or None."""
    pos = spec.positional
    if pos.kind == "none":
        return None
    if pos.kind == "learned":
        if n > pos.W_pos.shape[0]:
            raise SatsimError(
                f"a sequence of {n} tokens is longer than the learned positional table "
                f"({pos.W_pos.shape[0]} positions) of model {spec.name!r}"
            )
        return pos.W_pos[:n]
    if pos.kind == "sinusoidal":
        return sinusoidal_table(n, spec.d_model).astype(spec.dtype)
    return (position_features(pos.features, n) @ pos.W_feat.astype(np.float64)).astype(spec.dtype)


def embed(spec: ModelSpec, ids: np.ndarray) -> np.ndarray:
    """Return the (n, d_model) input vectors: token embedding plus positional information."""
    x = spec.W_E[ids]
    extra = positional_vectors(spec, len(ids))
    return x if extra is None else x + extra
