"""Which keys a query may attend by position: the attention masks, stated once.

Positions are 0-based token indices (BOS, when the model has one, is position 0). Query i of n
tokens may attend the keys j with

| mask | keys |
|---|---|
| ``causal`` | j ≤ i |
| ``bidirectional`` | every j |
| ``strict-past`` | j < i |
| ``future`` | j ≥ i |
| ``strict-future`` | j > i |

always minus padding. Every mask is one contiguous range of keys, :func:`key_range`. A query
with no allowed key (strict past at position 0, strict future at the last position) attends
nothing and outputs the zero vector (docs/semantics.md §1). A mask is a property of each head
(:attr:`satsim.model.spec.AttentionSpec.head_masks`); every backend reads it from there.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from satsim.errors import SatsimError

MASKS = ("causal", "bidirectional", "strict-past", "future", "strict-future")
"""The attention masks every backend evaluates."""

REVERSED = {"causal": "future", "future": "causal", "strict-past": "strict-future",
            "strict-future": "strict-past", "bidirectional": "bidirectional"}
"""Each mask seen on the reversed sequence (query and key positions read from the end)."""

MASK_CODES = {mask: code for code, mask in enumerate(MASKS)}
"""The integer code of each mask, as compiled kernels take it."""

CAUSAL, BIDIRECTIONAL, STRICT_PAST, FUTURE, STRICT_FUTURE = range(len(MASKS))
"""The codes one by one, for the kernels' branches."""


def mask_of(causal: bool) -> str:
    """The mask of the old causal flag: ``causal`` or ``bidirectional``."""
    return "causal" if causal else "bidirectional"


def mask_codes(masks: Sequence[str]) -> np.ndarray:
    """The codes of a list of masks (one per head), int64."""
    return np.array([MASK_CODES[mask] for mask in masks], dtype=np.int64)


def mask_named(causal: bool, attn_mask: str | None) -> str:
    """The mask a call names: ``attn_mask``, else the causal flag's; refused if both disagree."""
    if not attn_mask:
        return mask_of(causal)
    if causal and attn_mask != "causal":
        raise SatsimError(f"causal=True and attn_mask={attn_mask!r} name two masks; give one")
    return attn_mask


def key_range(mask: str, i, n: int):
    """The allowed keys of query ``i`` among ``n`` positions, as the half-open range [lo, hi).

    ``i`` may be an array of queries; then lo and hi are arrays (or a number where the mask
    does not depend on the query).
    """
    if mask == "causal":
        return 0, i + 1
    if mask == "strict-past":
        return 0, i
    if mask == "future":
        return i, n
    if mask == "strict-future":
        return i + 1, n
    return 0, n


def allowed_matrix(mask: str, queries: int, keys: int | None = None) -> np.ndarray:
    """Which keys each query may attend by position, bool (queries, keys).

    Every mask but ``bidirectional`` compares query and key positions, so it needs as many
    queries as keys (the caller checks).
    """
    keys = queries if keys is None else keys
    lo, hi = key_range(mask, np.arange(queries)[:, None], keys)
    j = np.arange(keys)[None, :]
    return np.broadcast_to((j >= lo) & (j < hi), (queries, keys)).copy()


def head_allowed(masks: Sequence[str], n: int) -> np.ndarray:
    """Per head, which keys each of ``n`` queries may attend by position, bool (H, n, n)."""
    return np.stack([allowed_matrix(mask, n) for mask in masks]) if len(masks) else \
        np.zeros((0, n, n), dtype=bool)


def allowed_count(mask: str, n: int) -> np.ndarray:
    """How many keys each of ``n`` queries may attend, int64 (n,)."""
    lo, hi = key_range(mask, np.arange(n, dtype=np.int64), n)
    return np.broadcast_to(np.asarray(hi) - np.asarray(lo), (n,)).astype(np.int64)
