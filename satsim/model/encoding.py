"""From inputs to token ids and input vectors: BOS/EOS, symbol checks, positional information."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from satsim.errors import SatsimError
from satsim.model.architecture import position_term
from satsim.model.spec import ModelSpec


def symbol_table(spec: ModelSpec) -> np.ndarray:
    """Return a code point → token id table (-1: not an input symbol of the spec).

    For specs whose input symbols are all one character (``spec.character_symbols``).
    """
    index = {token: i for i, token in enumerate(spec.vocab) if token not in (spec.bos, spec.eos)}
    table = np.full(max((ord(c) for c in index), default=-1) + 1, -1, dtype=np.int64)
    for c, token_id in index.items():
        table[ord(c)] = token_id
    return table


Input = str | Sequence[str] | Sequence[int] | np.ndarray
"""One input to a model: text, a sequence of tokens, or a sequence of integer token ids."""
_WHITESPACE = re.compile(r"\s")


def text_symbols(spec: ModelSpec, text: str) -> Sequence[str]:
    """The input symbols of ``text``: its characters when all are one character, else its words.

    By character (the text itself) when every input symbol of the spec is one character and
    the text has no whitespace, else as whitespace-separated tokens: "3 1 4" reads as "314"
    does wherever whitespace is not itself a symbol. The one statement of how text reads.
    """
    if spec.character_symbols and (_WHITESPACE.search(text) is None
                                   or any(symbol.isspace() for symbol in spec.alphabet)):
        return text
    return text.split()


def symbols_text(spec: ModelSpec, symbols: Sequence[str]) -> str:
    """The text of ``symbols`` (the inverse of :func:`text_symbols`): joined bare or by spaces."""
    return ("" if spec.character_symbols else " ").join(symbols)


def encoder(spec: ModelSpec) -> Callable[[Input], np.ndarray]:
    """Return a function input → int64 token ids (BOS/EOS added), for encoding many inputs.

    The one statement of what an input is. Text (a ``str``) is read by :func:`text_symbols`
    (by character when every input symbol is one character, else by whitespace); a sequence
    of strings is a sequence of tokens (vocab entries); a sequence of integers (or an integer
    array) is a sequence of token ids. BOS and EOS are the spec's to add, never the input's.
    """
    table = symbol_table(spec) if spec.character_symbols else None
    symbol_id = {token: i for i, token in enumerate(spec.vocab)
                 if token not in (spec.bos, spec.eos)}
    specials = {spec.vocab.index(t): t for t in (spec.bos, spec.eos) if t is not None}
    bos = None if spec.bos is None else spec.vocab.index(spec.bos)
    eos = None if spec.eos is None else spec.vocab.index(spec.eos)

    def bad_token(token: object, position: int) -> SatsimError:
        if token in specials.values():
            return SatsimError(f"token {token!r} at position {position} is the BOS/EOS token of "
                               f"model {spec.name!r}, which the model adds itself")
        return SatsimError(f"symbol {token!r} at position {position} is not in the alphabet "
                           f"of model {spec.name!r} {spec.alphabet}")

    def from_characters(string: str) -> np.ndarray:
        codes = np.frombuffer(string.encode("utf-32-le", "surrogatepass"), dtype=np.uint32)
        inside = codes < table.size
        body = np.where(inside, table[np.where(inside, codes, 0)], -1) if table.size else (
            np.full(len(string), -1, dtype=np.int64))
        if body.size and body.min() < 0:
            position = int(np.argmax(body < 0))
            raise bad_token(string[position], position)
        return body

    def from_tokens(tokens: Sequence[str]) -> np.ndarray:
        body = np.empty(len(tokens), dtype=np.int64)
        for position, token in enumerate(tokens):
            if not isinstance(token, str) or token not in symbol_id:
                raise bad_token(token, position)
            body[position] = symbol_id[token]
        return body

    def from_ids(ids: np.ndarray) -> np.ndarray:
        ids = ids.astype(np.int64)
        bad = (ids < 0) | (ids >= len(spec.vocab)) | np.isin(ids, list(specials))
        if bad.any():
            position = int(np.argmax(bad))
            token_id = int(ids[position])
            if token_id in specials:
                raise SatsimError(f"token id {token_id} at position {position} is the BOS/EOS "
                                  f"token of model {spec.name!r}, which the model adds itself")
            raise SatsimError(f"token id {token_id} at position {position} is not an input "
                              f"symbol id of model {spec.name!r} (ids 0 … "
                              f"{len(spec.vocab) - 1}, BOS/EOS excluded)")
        return ids

    def body_of(item: Input) -> np.ndarray:
        if isinstance(item, str):
            symbols = text_symbols(spec, item)
            return from_characters(symbols) if isinstance(symbols, str) else from_tokens(symbols)
        try:
            array = np.asarray(item)
        except ValueError:  # ragged nesting
            array = np.empty(0, dtype=object).reshape(0, 0)
        if array.ndim == 1 and array.size == 0:
            return np.empty(0, dtype=np.int64)
        if array.ndim == 1 and np.issubdtype(array.dtype, np.integer):
            return from_ids(array)
        if array.ndim == 1 and array.dtype.kind == "U":
            return from_tokens(list(item))
        raise SatsimError(f"an input is text, a sequence of tokens or a sequence of integer "
                          f"token ids; got {type(item).__name__} {str(item)[:40]!r}")

    def encode_one(item: Input) -> np.ndarray:
        body = body_of(item)
        parts = ([np.array([bos])] if bos is not None else []) + [body] + (
            [np.array([eos])] if eos is not None else [])
        ids = np.concatenate(parts).astype(np.int64)
        check_length(spec, len(ids))
        return ids

    return encode_one


def check_input_list(inputs: Any) -> None:
    """Refuse what is not a list of inputs (one string, None, a number) in one line."""
    if isinstance(inputs, (str, bytes)):
        raise SatsimError("pass a list of strings, not a single string")
    if not hasattr(inputs, "__iter__"):
        raise SatsimError(f"pass a list of inputs (strings, token sequences or token ids), "
                          f"got {type(inputs).__name__}")


def encode_batch(spec: ModelSpec, inputs: Sequence[Input], *,
                 at_least_one: bool = False) -> list[np.ndarray]:
    """Token ids of each input (BOS/EOS added): the one batch encoder, and its input errors.

    An input that gives no tokens (the empty string to a model without BOS/EOS) is refused, and
    an empty list too where ``at_least_one``.
    """
    check_input_list(inputs)
    encode_one = encoder(spec)
    ids = [encode_one(item) for item in inputs]
    if any(len(seq) == 0 for seq in ids):
        raise SatsimError(f"the empty string gives no tokens to model {spec.name!r} (it has no "
                          f"BOS/EOS)")
    if at_least_one and not ids:
        raise SatsimError("give at least one string")
    return ids


def pad_ids(ids: Sequence[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """Token id arrays padded with 0 to the longest, (B, T) int64, and their lengths (B,)."""
    lengths = np.fromiter(map(len, ids), dtype=np.int64, count=len(ids))
    padded = np.zeros((len(ids), int(lengths.max(initial=0))), dtype=np.int64)
    if len(ids):
        padded[np.arange(padded.shape[1]) < lengths[:, None]] = np.concatenate(ids)
    return padded, lengths


def check_length(spec: ModelSpec, tokens: int) -> None:
    """Refuse an input of ``tokens`` tokens longer than the spec's ``max_tokens`` (one line)."""
    if spec.max_tokens is not None and tokens > spec.max_tokens:
        raise SatsimError(f"an input of {tokens:,} tokens is longer than model {spec.name!r} "
                          f"is exact for ({spec.max_tokens:,} tokens, BOS/EOS included)")


def encode(spec: ModelSpec, item: Input) -> np.ndarray:
    """Return the int64 token ids of one input with the model's BOS/EOS added."""
    return encoder(spec)(item)


def input_length(spec: ModelSpec, ids: np.ndarray) -> int:
    """The number of input tokens in encoded ``ids`` (BOS and EOS excluded)."""
    return len(ids) - (spec.bos is not None) - (spec.eos is not None)


def input_text(spec: ModelSpec, ids: np.ndarray) -> str:
    """The text form of encoded ``ids`` (BOS/EOS dropped): characters, or tokens with spaces."""
    start = spec.bos is not None
    body = [spec.vocab[i] for i in ids[start : start + input_length(spec, ids)]]
    return symbols_text(spec, body)


def positional_vectors(spec: ModelSpec, n: int) -> np.ndarray | None:
    """Return the (n, d_model) positional vectors for a sequence of n tokens, or None."""
    pos = spec.positional

    def rows(name: str, count: int) -> np.ndarray:
        return pos.W_pos[:count]

    def product(features: np.ndarray, name: str) -> np.ndarray:
        return (features @ pos.W_feat.astype(np.float64)).astype(spec.dtype)

    return position_term(pos, n, spec.d_model, rows, product,
                         lambda table: table.astype(spec.dtype), model=spec.name)


def embed(spec: ModelSpec, ids: np.ndarray) -> np.ndarray:
    """Input vectors of token ids, (n, d_model): token rows plus positional information.

    The one NumPy statement of the embedding. Ids may be a (B, n) batch when the positional
    rows do not depend on the length (every row gets those of n positions).
    """
    ids = np.asarray(ids)
    x = spec.W_E[ids]
    extra = positional_vectors(spec, ids.shape[-1])
    if extra is not None:
        x += extra
    return x


def embed_batch(spec: ModelSpec, ids: Sequence[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """Padded input vectors (B, T, d) and the padding mask (B, T) of token id arrays."""
    padded, lengths = pad_ids(ids)
    mask = np.arange(padded.shape[1]) < lengths[:, None]
    if spec.positional.depends_on_length:
        # Position features may depend on the string's length: embed each string alone.
        x = np.zeros((*padded.shape, spec.d_model), dtype=spec.dtype)
        for row, seq in enumerate(ids):
            x[row, : len(seq)] = embed(spec, seq)
        return x, mask
    # Positional rows do not depend on the string's length: one gather, one add for the batch.
    x = embed(spec, padded)
    if not mask.all():
        x[~mask] = 0
    return x, mask
