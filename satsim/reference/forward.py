"""The meaning of a whole model: a plain NumPy forward pass of one string, no Numba.

The simulator's compiled forward pass must agree with this one; tests compare the two.
"""

from __future__ import annotations

import operator
from dataclasses import dataclass

import numpy as np

from satsim.encoding import embed, encode
from satsim.errors import SatsimError
from satsim.reference import attention as ref
from satsim.reference.attention import ATTENTION_KINDS
from satsim.spec import AttentionSpec, FeedForwardSpec, LayerNormSpec, ModelSpec


@dataclass(frozen=True)
class AttentionSettings:
    """How attention is evaluated: its kind, softmax's β, and the tie tolerances."""

    kind: str = "saturated"
    beta: float = 1.0
    atol: float | None = None
    rtol: float | None = None

    def __post_init__(self) -> None:
        if self.kind not in ATTENTION_KINDS:
            raise SatsimError(f"unknown attention kind {self.kind!r}; known: {ATTENTION_KINDS}")
        if not (np.isfinite(self.beta) and self.beta > 0):
            raise SatsimError(f"beta must be positive and finite, got {self.beta}")


@dataclass(frozen=True)
class ReferenceRun:
    """The residual stream after every sublayer and the output logits of one string."""

    ids: np.ndarray
    residuals: list[np.ndarray]
    logits: np.ndarray


def layer_norm(x: np.ndarray, ln: LayerNormSpec) -> np.ndarray:
    """Normalise each row to zero mean and unit variance, then apply γ, β when present."""
    mean = x.mean(axis=-1, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=-1, keepdims=True)
    y = (x - mean) / np.sqrt(var + ln.eps)
    return y * ln.w + ln.b if ln.affine else y


def feed_forward(x: np.ndarray, mlp: FeedForwardSpec) -> np.ndarray:
    """ReLU feed-forward sublayer."""
    hidden = x @ mlp.W_in + (0 if mlp.b_in is None else mlp.b_in)
    return np.maximum(hidden, 0) @ mlp.W_out + (0 if mlp.b_out is None else mlp.b_out)


def head_inputs(x: np.ndarray, attn: AttentionSpec) -> tuple[np.ndarray, ...]:
    """Per-head queries, keys and values, each shaped (n_heads, n, d)."""
    q = np.einsum("td,hde->hte", x, attn.W_Q)
    k = np.einsum("td,hde->hte", x, attn.W_K)
    v = np.einsum("td,hde->hte", x, attn.W_V)
    if attn.b_Q is not None:
        q = q + attn.b_Q[:, None, :]
    if attn.b_K is not None:
        k = k + attn.b_K[:, None, :]
    if attn.b_V is not None:
        v = v + attn.b_V[:, None, :]
    return q, k, v


def attend(q, k, v, causal: bool, settings: AttentionSettings) -> np.ndarray:
    """Apply the chosen attention kind to per-head (q, k, v)."""
    if settings.kind == "softmax":
        return ref.softmax_attention(q, k, v, beta=settings.beta, causal=causal)
    if settings.kind == "saturated":
        return ref.saturated_attention(q, k, v, causal=causal, atol=settings.atol,
                                       rtol=settings.rtol)
    side = settings.kind.removeprefix("unique-")
    return ref.unique_hard_attention(q, k, v, side=side, causal=causal, atol=settings.atol,
                                     rtol=settings.rtol)


def self_attention(x: np.ndarray, attn: AttentionSpec, settings: AttentionSettings) -> np.ndarray:
    """Multi-head self-attention sublayer: the heads' outputs projected by W_O and summed."""
    q, k, v = head_inputs(x, attn)
    heads = attend(q, k, v, attn.causal, settings)
    out = np.einsum("hte,hed->td", heads, attn.W_O)
    return out if attn.b_O is None else out + attn.b_O


def sublayer(x, fn, ln: LayerNormSpec | None, spec: ModelSpec, keep: bool,
             normalize=layer_norm, add=operator.add) -> np.ndarray:
    """Wrap a sublayer with its residual connection (``keep``) and the LayerNorm placement.

    The one statement of the placement rule: the soft twin (torch tensors) and the exact limit
    (series in c) call it with their own ``normalize`` and ``add``.
    """
    if spec.norm == "pre":
        y = fn(normalize(x, ln))
        return add(x, y) if keep else y
    y = fn(x)
    y = add(x, y) if keep else y
    return normalize(y, ln) if spec.norm == "post" else y


def forward(
    spec: ModelSpec, string: str, settings: AttentionSettings | None = None
) -> ReferenceRun:
    """Run ``string`` through ``spec`` with plain NumPy and return every residual and the logits."""
    settings = settings or AttentionSettings()
    ids = encode(spec, string)
    x = embed(spec, ids)
    residuals = [x]
    for layer, block in enumerate(spec.blocks):
        if block.attn is not None:
            x = sublayer(x, lambda h, a=block.attn: self_attention(h, a, settings), block.ln1, spec,
                         spec.keeps_residual(layer, "attn"))
            residuals.append(x)
        if block.mlp is not None:
            x = sublayer(x, lambda h, m=block.mlp: feed_forward(h, m), block.ln2, spec,
                         spec.keeps_residual(layer, "mlp"))
            residuals.append(x)
    if spec.ln_final is not None:
        x = layer_norm(x, spec.ln_final)
    out = spec.output
    logits = x @ out.W_U + (0 if out.b_U is None else out.b_U)
    if out.readout == "last":
        logits = logits[-1]
    return ReferenceRun(ids=ids, residuals=residuals, logits=logits.astype(spec.dtype))
