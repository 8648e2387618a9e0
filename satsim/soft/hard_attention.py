"""Saturated (average-hard) attention in PyTorch, on CPU or CUDA, with satsim's tie semantics.

The meaning is docs/semantics.md §1 and :mod:`satsim.reference.attention`: scores
s_ij = scale·q_i·k_j in float64 whatever the input dtype, the tie set
S_i = {j allowed : s_ij ≥ M_i − (atol + rtol·|M_i|)} with M_i the largest allowed score, and
the output the float64 mean of v over S_i, returned in q's dtype. "Allowed" is the mask's key
range (:mod:`satsim.model.masks`: causal, bidirectional, strict-past, future, strict-future)
minus padding. A query with no allowed key, or a padded query, outputs zeros.

The scores are one float64 matrix product per block of queries (a causal or strict-past block
reads only the keys it may see), so memory stays near ``block_bytes`` whatever T is. The
product sums in the BLAS's order, not the reference's left-to-right order: scores whose
products and partial sums are exact (small integers, dyadic rationals, so every exact tie) are
the reference's bit for bit, and others differ by about 1e-16 relative, far below the tie
tolerance.
"""

from __future__ import annotations

import math

import numpy as np
import torch
from torch import Tensor

from satsim.errors import SatsimError
from satsim.model.masks import key_range, mask_named
from satsim.model.settings import AttentionSettings, tie_tolerance
from satsim.model.spec import default_scale

_NUMPY_DTYPES = {torch.float32: np.float32, torch.float64: np.float64}


def _tolerance(q: Tensor, atol: float | None, rtol: float | None) -> tuple[float, float]:
    """The tie tolerance for q's dtype (float32 or float64), or the given one."""
    if q.dtype not in _NUMPY_DTYPES:
        raise SatsimError(f"saturated attention takes float32 or float64 inputs, not {q.dtype}")
    return tie_tolerance(_NUMPY_DTYPES[q.dtype], atol, rtol)


def _checked_mask(q: Tensor, k: Tensor, causal: bool, attn_mask: str | None) -> str:
    """The mask the call names, once the shapes allow it."""
    mask = mask_named(causal, attn_mask)
    if q.shape[-1] != k.shape[-1]:
        raise SatsimError(f"queries have width {q.shape[-1]} but keys {k.shape[-1]}")
    if mask != "bidirectional" and q.shape[-2] != k.shape[-2]:
        raise SatsimError(f"{mask} attention needs as many queries as keys, got "
                          f"T={q.shape[-2]}, S={k.shape[-2]}")
    return mask


def _keys_read(mask: str, stop: int, keys: int) -> int:
    """How many keys (from the first) a block of queries up to ``stop`` may read."""
    return stop if mask in ("causal", "strict-past") else keys


def _block_ties(q64: Tensor, k64: Tensor, start: int, mask: str, key_mask: Tensor | None,
                atol: float, rtol: float, scale: float) -> Tensor:
    """Tie sets (..., rows, keys) of the queries from ``start`` against the keys given."""
    scores = torch.matmul(q64, k64.transpose(-1, -2)).mul_(scale)
    rows, keys = scores.shape[-2], scores.shape[-1]
    allowed = None
    if mask != "bidirectional":
        query = torch.arange(start, start + rows, device=scores.device)[:, None]
        low, high = key_range(mask, query, keys)
        key = torch.arange(keys, device=scores.device)[None, :]
        allowed = (key >= low) & (key < high)
    if key_mask is not None:
        real = key_mask[..., None, :keys]
        allowed = real if allowed is None else allowed & real
    if allowed is not None:
        scores = scores.masked_fill_(~allowed, -math.inf)
    best = scores.amax(dim=-1, keepdim=True)
    ties = scores >= tie_threshold(best, atol, rtol)
    return ties if allowed is None else ties & allowed


def _blocks(q: Tensor, k: Tensor, block_bytes: int):
    """(start, stop) of query blocks whose float64 score blocks take about ``block_bytes``."""
    lead = torch.broadcast_shapes(q.shape[:-2], k.shape[:-2])
    per_query = 8 * max(1, math.prod(lead)) * max(1, k.shape[-2])
    rows = max(1, block_bytes // per_query)
    return [(start, min(start + rows, q.shape[-2])) for start in range(0, q.shape[-2], rows)]


def tie_threshold(best: Tensor, atol: float, rtol: float) -> Tensor:
    """M - (atol + rtol|M|), written as :func:`satsim.reference.attention.tie_threshold` is."""
    return torch.where(best >= 0, best * (1.0 - rtol) - atol, best * (1.0 + rtol) - atol)


def _as_mask(mask: Tensor | None, device: torch.device) -> Tensor | None:
    return None if mask is None else torch.as_tensor(mask, device=device).to(torch.bool)


def tie_sets(q: Tensor, k: Tensor, *, causal: bool = False, key_mask: Tensor | None = None,
             atol: float | None = None, rtol: float | None = None, scale: float | None = None,
             block_bytes: int = 1 << 30, attn_mask: str | None = None) -> Tensor:
    """Each query's tie set, bool (..., T, S): the allowed keys within tolerance of the max."""
    mask = _checked_mask(q, k, causal, attn_mask)
    atol, rtol = _tolerance(q, atol, rtol)
    scale = default_scale(q.shape[-1]) if scale is None else float(scale)
    key_mask = _as_mask(key_mask, q.device)
    q64, k64 = q.to(torch.float64), k.to(torch.float64)
    lead = torch.broadcast_shapes(q.shape[:-2], k.shape[:-2])
    if key_mask is not None:
        lead = torch.broadcast_shapes(lead, key_mask.shape[:-1])
    ties = torch.zeros((*lead, q.shape[-2], k.shape[-2]), dtype=torch.bool, device=q.device)
    if k.shape[-2] == 0:
        return ties
    for start, stop in _blocks(q, k, block_bytes):
        keys = _keys_read(mask, stop, k.shape[-2])
        ties[..., start:stop, :keys] = _block_ties(q64[..., start:stop, :], k64[..., :keys, :],
                                                   start, mask, key_mask, atol, rtol, scale)
    return ties


def saturated_attention(q: Tensor, k: Tensor, v: Tensor, *, causal: bool = False,
                        key_mask: Tensor | None = None, query_mask: Tensor | None = None,
                        atol: float | None = None, rtol: float | None = None,
                        scale: float | None = None, block_bytes: int = 1 << 30,
                        attn_mask: str | None = None) -> Tensor:
    """The mean of v over each query's tie set, (..., T, e), in q's dtype on q's device.

    Shapes as in :mod:`satsim.reference.attention`: q (..., T, d), k (..., S, d), v (..., S, e),
    leading dimensions broadcasting; ``key_mask`` (..., S) and ``query_mask`` (..., T) mark real
    positions with True; ``attn_mask`` names the mask (or ``causal``, as there). ``block_bytes``
    bounds the float64 scores held at once.
    """
    mask = _checked_mask(q, k, causal, attn_mask)
    if v.shape[-2] != k.shape[-2]:
        raise SatsimError(f"{k.shape[-2]} keys but {v.shape[-2]} values")
    atol, rtol = _tolerance(q, atol, rtol)
    scale = default_scale(q.shape[-1]) if scale is None else float(scale)
    key_mask = _as_mask(key_mask, q.device)
    q64, k64, v64 = (x.to(torch.float64) for x in (q, k, v))
    lead = torch.broadcast_shapes(q.shape[:-2], k.shape[:-2], v.shape[:-2])
    if key_mask is not None:
        lead = torch.broadcast_shapes(lead, key_mask.shape[:-1])
    out = torch.zeros((*lead, q.shape[-2], v.shape[-1]), dtype=torch.float64, device=q.device)
    if k.shape[-2] > 0:
        for start, stop in _blocks(q, k, block_bytes):
            keys = _keys_read(mask, stop, k.shape[-2])
            weights = _block_ties(q64[..., start:stop, :], k64[..., :keys, :], start, mask,
                                  key_mask, atol, rtol, scale).to(torch.float64)
            weights /= weights.sum(dim=-1, keepdim=True).clamp_min_(1.0)  # empty rows stay 0
            out[..., start:stop, :] = torch.matmul(weights, v64[..., :keys, :])
    if query_mask is not None:
        out = torch.where(_as_mask(query_mask, q.device)[..., None], out, 0.0)
    return out.to(q.dtype)


def kind_weights(scores: Tensor, allowed: Tensor, way: AttentionSettings,
                 dtype: torch.dtype) -> Tensor:
    """One head's attention weights (..., T, S), float64, for a fixed kind (docs/semantics.md).

    ``scores`` are float64 with the keys that are not allowed at −∞; ``way`` says the kind
    (:func:`satsim.model.settings.head_settings`): saturated (the tie set's mean at the tolerance
    of inputs of ``dtype``), score-class(δ) (weight exp(−⌊(M − s)/δ⌋·δ), softmax at δ = 0), or
    softmax(β). A query with no allowed key gets zero weights.
    """
    best = scores.amax(dim=-1, keepdim=True)
    best = torch.where(torch.isfinite(best), best, torch.zeros_like(best))
    if way.kind == "softmax" or (way.kind == "score-class" and way.width == 0):
        beta = way.beta if way.kind == "softmax" else 1.0
        weights = torch.exp(beta * (scores - best))
    elif way.kind == "score-class":
        classes = torch.floor((best - scores) / way.width)
        weights = torch.exp(-torch.where(allowed, classes, 0.0) * way.width)
    elif way.kind == "saturated":
        atol, rtol = tie_tolerance(_NUMPY_DTYPES[dtype], way.atol, way.rtol)
        weights = (scores >= tie_threshold(best, atol, rtol)).to(torch.float64)
    else:
        raise SatsimError(f"the soft twin runs no {way.kind} heads")
    weights = torch.where(allowed, weights, 0.0)
    return weights / weights.sum(dim=-1, keepdim=True).clamp_min(1e-300)
