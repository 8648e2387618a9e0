"""From strings to token ids and input vectors: BOS/EOS, symbol checks, positional information."""

from __future__ import annotations

import numpy as np

from satsim.errors import SatsimError
from satsim.model.architecture import position_term
from satsim.model.spec import ModelSpec


def _symbol_table(spec: ModelSpec) -> np.ndarray:
    """Return a code point → token id table (-1: not an input symbol of the spec).

    Every input symbol is one character (the spec checks this), so the table covers them all.
    """
    index = {token: i for i, token in enumerate(spec.vocab) if token not in (spec.bos, spec.eos)}
    table = np.full(max((ord(c) for c in index), default=-1) + 1, -1, dtype=np.int64)
    for c, token_id in index.items():
        table[ord(c)] = token_id
    return table


def encoder(spec: ModelSpec):
    """Return a function string → int64 token ids (BOS/EOS added), for encoding many strings."""
    table = _symbol_table(spec)
    bos = None if spec.bos is None else spec.vocab.index(spec.bos)
    eos = None if spec.eos is None else spec.vocab.index(spec.eos)
    offset = bos is not None
    extra = offset + (eos is not None)

    def encode_one(string: str) -> np.ndarray:
        ids = np.empty(len(string) + extra, dtype=np.int64)
        if bos is not None:
            ids[0] = bos
        body = ids[offset : offset + len(string)]
        codes = np.frombuffer(string.encode("utf-32-le"), dtype=np.uint32)
        inside = codes < table.size
        body[:] = np.where(inside, table[np.where(inside, codes, 0)], -1) if table.size else -1
        if body.size and body.min() < 0:
            position = int(np.argmax(body < 0))
            raise SatsimError(
                f"symbol {string[position]!r} at position {position} is not in the alphabet "
                f"of model {spec.name!r} {spec.alphabet}"
            )
        if eos is not None:
            ids[-1] = eos
        return ids

    return encode_one


def encode(spec: ModelSpec, string: str) -> np.ndarray:
    """Return the int64 token ids of ``string`` with the model's BOS/EOS added."""
    return encoder(spec)(string)


def positional_vectors(spec: ModelSpec, n: int) -> np.ndarray | None:
    """Return the (n, d_model) positional vectors for a sequence of n tokens, or None."""
    pos = spec.positional

    def rows(name: str, count: int) -> np.ndarray:
        if count > pos.W_pos.shape[0]:
            raise SatsimError(
                f"a sequence of {count} tokens is longer than the learned positional table "
                f"({pos.W_pos.shape[0]} positions) of model {spec.name!r}"
            )
        return pos.W_pos[:count]

    def product(features: np.ndarray, name: str) -> np.ndarray:
        return (features @ pos.W_feat.astype(np.float64)).astype(spec.dtype)

    return position_term(pos, n, spec.d_model, rows, product,
                         lambda table: table.astype(spec.dtype))


def embed(spec: ModelSpec, ids: np.ndarray) -> np.ndarray:
    """Return the (n, d_model) input vectors: token embedding plus positional information."""
    x = spec.W_E[ids]
    extra = positional_vectors(spec, len(ids))
    return x if extra is None else x + extra
