"""The meaning of a whole model: a plain NumPy forward pass of one string, no Numba.

The simulator's compiled forward pass must agree with this one; tests compare the two.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from satsim.model.architecture import Backend, Branch, Step, run
from satsim.model.encoding import embed, encode
from satsim.model.settings import AttentionSettings, head_settings
from satsim.model.spec import (
    AttentionSpec,
    FeedForwardSpec,
    LayerNormSpec,
    ModelSpec,
    OutputSpec,
)
from satsim.reference import attention as ref


@dataclass(frozen=True)
class ReferenceRun:
    """The residual stream after every sublayer and the output logits of one string."""

    ids: np.ndarray
    residuals: list[np.ndarray]
    logits: np.ndarray


def layer_norm(x: np.ndarray, ln: LayerNormSpec) -> np.ndarray:
    """LayerNorm (zero mean, unit variance) or RMSNorm (unit mean square), then γ (and β)."""
    centred = x - x.mean(axis=-1, keepdims=True) if ln.centred else x
    y = centred / np.sqrt((centred**2).mean(axis=-1, keepdims=True) + ln.eps)
    if ln.w is not None:
        y = y * ln.w
    return y if ln.b is None else y + ln.b


_erfc = np.vectorize(math.erfc, otypes=[float])

ACTIVATION_FUNCTIONS = {
    "relu": lambda z: np.maximum(z, 0),
    "gelu": lambda z: 0.5 * z * _erfc(-z / math.sqrt(2)),  # erfc: no cancellation for z < 0
    "gelu_tanh": lambda z: 0.5 * z * (1 + np.tanh(math.sqrt(2 / math.pi) * (z + 0.044715 * z**3))),
    "silu": lambda z: z / (1 + np.exp(-z)),
}
"""Each feed-forward activation on NumPy arrays (the definitions; see docs/semantics.md)."""


def feed_forward(x: np.ndarray, mlp: FeedForwardSpec) -> np.ndarray:
    """The feed-forward sublayer with its activation."""
    hidden = x @ mlp.W_in + (0 if mlp.b_in is None else mlp.b_in)
    activated = ACTIVATION_FUNCTIONS[mlp.activation](hidden)
    return activated @ mlp.W_out + (0 if mlp.b_out is None else mlp.b_out)


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


def attend(q, k, v, mask: str, settings: AttentionSettings,
           scale: float | None = None) -> np.ndarray:
    """Apply the chosen attention kind to (q, k, v) under ``mask``; scores are scale·q·k."""
    if settings.kind == "softmax":
        return ref.softmax_attention(q, k, v, beta=settings.beta, attn_mask=mask, scale=scale)
    if settings.kind == "score-class":
        return ref.score_class_attention(q, k, v, width=settings.width, attn_mask=mask,
                                         scale=scale)
    if settings.kind == "saturated":
        return ref.saturated_attention(q, k, v, attn_mask=mask, atol=settings.atol,
                                       rtol=settings.rtol, scale=scale)
    side = settings.kind.removeprefix("unique-")
    return ref.unique_hard_attention(q, k, v, side=side, attn_mask=mask, atol=settings.atol,
                                     rtol=settings.rtol, scale=scale)


def self_attention(x: np.ndarray, attn: AttentionSpec, settings: AttentionSettings) -> np.ndarray:
    """Multi-head self-attention sublayer: the heads' outputs projected by W_O and summed."""
    q, k, v = head_inputs(x, attn)
    heads = np.zeros(v.shape, dtype=q.dtype)
    for h, (mask, kind, delta) in enumerate(zip(attn.head_masks, attn.head_kinds,
                                                 attn.head_deltas)):
        heads[h] = attend(q[h], k[h], v[h], mask, head_settings(settings, kind, delta),
                          attn.score_scale)
    out = np.einsum("hte,hed->td", heads, attn.W_O)
    return out if attn.b_O is None else out + attn.b_O


class ReferenceBackend(Backend[np.ndarray]):
    """The walk's operations on one string's (n, d) NumPy arrays; keeps every stream."""

    def __init__(self, spec: ModelSpec, settings: AttentionSettings) -> None:
        self.spec = spec
        self.settings = settings
        self.residuals: list[np.ndarray] = []

    def embed(self, ids: np.ndarray) -> np.ndarray:
        """The input vectors of one string's token ids, the first stream kept."""
        x = embed(self.spec, ids)
        self.residuals.append(x)
        return x

    def norm(self, x: np.ndarray, ln: LayerNormSpec, name: str) -> np.ndarray:
        """LayerNorm."""
        return layer_norm(x, ln)

    def attention(self, x: np.ndarray, branch: Branch) -> np.ndarray:
        """Self-attention with the run's attention kind."""
        return self_attention(x, branch.module, self.settings)

    def feed_forward(self, x: np.ndarray, branch: Branch) -> np.ndarray:
        """The feed-forward sublayer."""
        return feed_forward(x, branch.module)

    def leave(self, x: np.ndarray, step: Step) -> np.ndarray:
        """Keep the stream."""
        self.residuals.append(x)
        return x

    def unembed(self, x: np.ndarray, output: OutputSpec) -> np.ndarray:
        """Logits of every position, or of the last one."""
        logits = x @ output.W_U + (0 if output.b_U is None else output.b_U)
        return logits[-1] if output.readout == "last" else logits


def forward(
    spec: ModelSpec, string: str, settings: AttentionSettings | None = None
) -> ReferenceRun:
    """Run ``string`` through ``spec`` with plain NumPy and return every residual and the logits."""
    ids = encode(spec, string)
    backend = ReferenceBackend(spec, settings or AttentionSettings())
    logits = run(spec, backend, ids)
    return ReferenceRun(ids=ids, residuals=backend.residuals, logits=logits.astype(spec.dtype))
