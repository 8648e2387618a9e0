"""The compiled forward pass of padded batches, layer by layer.

Same meaning as :func:`satsim.reference.forward.forward`, but batched over strings of
different lengths (padding is masked out of attention) and fast; it can keep traces.
:mod:`satsim.engine.program` runs whole strings in one kernel with the same logits.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from satsim.engine.attend import AttentionResult, attention
from satsim.engine.kernels.layers import ACTIVATION_CODES
from satsim.engine.kernels.layers import run_affine as affine
from satsim.engine.kernels.layers import run_layer_norm as layer_norm
from satsim.errors import SatsimError
from satsim.model.architecture import Backend, Branch, Step, counting_heads, run
from satsim.model.encoding import embed_batch
from satsim.model.settings import AttentionSettings, head_settings, overflow_remedy
from satsim.model.spec import AttentionSpec, FeedForwardSpec, LayerNormSpec, ModelSpec, OutputSpec


@dataclass(frozen=True)
class LayerTrace:
    """What one attention layer computed for a batch: per-head queries, keys, values, ties."""

    queries: np.ndarray  # (B, H, T, d_head)
    keys: np.ndarray  # (B, H, T, d_head)
    head_outputs: np.ndarray  # (B, H, T, d_v)
    tie_size: np.ndarray  # (B, H, T) int64
    tie_gap: np.ndarray  # (B, H, T) float64
    values: np.ndarray  # (B, H, T, d_v): what each key carries


@dataclass(frozen=True)
class BatchRun:
    """Logits of every position, and on request the residual stream and the attention traces."""

    logits: np.ndarray  # (B, T, n_outputs)
    residuals: list[np.ndarray] | None
    layers: list[LayerTrace] | None


def bias_or_zeros(vector: np.ndarray | None, size: int, dtype: np.dtype) -> np.ndarray:
    """The bias, or zeros where the spec has none."""
    return np.zeros(size, dtype=dtype) if vector is None else vector


def norm_parameters(ln: LayerNormSpec, d: int, dtype: np.dtype) -> tuple[np.ndarray, np.ndarray]:
    """The norm's weight and bias as the kernels take them (ones and zeros where absent)."""
    w = ln.w if ln.w is not None else np.ones(d, dtype=dtype)
    b = ln.b if ln.b is not None else np.zeros(d, dtype=dtype)
    return w, b


def side_by_side(weights: list[np.ndarray], biases: list[np.ndarray | None],
                 dtype: np.dtype) -> tuple[np.ndarray, np.ndarray]:
    """Per-head [H, d, e] projections as one [d, Σ H·e] matrix and its bias, heads in order.

    The column layout of the attention projections in both engines (the fused program and the
    batches), so that their queries, keys and values are the same numbers.
    """
    flat = [weight.transpose(1, 0, 2).reshape(weight.shape[1], -1) for weight in weights]
    bias = [bias_or_zeros(None if b is None else b.reshape(-1), f.shape[1], dtype)
            for b, f in zip(biases, flat)]
    return np.ascontiguousarray(np.concatenate(flat, axis=1)), np.concatenate(bias)


def _rows(x: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(x.reshape(-1, x.shape[-1]))


def apply_layer_norm(x: np.ndarray, ln: LayerNormSpec) -> np.ndarray:
    """LayerNorm or RMSNorm of (B, T, d) through the Numba kernel."""
    w, b = norm_parameters(ln, x.shape[-1], x.dtype)
    return layer_norm(_rows(x), w, b, ln.eps, ln.affine, ln.centred).reshape(x.shape)


def apply_feed_forward(x: np.ndarray, mlp: FeedForwardSpec) -> np.ndarray:
    """The feed-forward sublayer of (B, T, d) through the Numba kernels."""
    d_mlp = mlp.W_in.shape[1]
    hidden = affine(_rows(x), mlp.W_in, bias_or_zeros(mlp.b_in, d_mlp, x.dtype),
                    ACTIVATION_CODES[mlp.activation])
    out = affine(hidden, mlp.W_out, bias_or_zeros(mlp.b_out, x.shape[-1], x.dtype))
    return out.reshape(x.shape)


def _project(x: np.ndarray, weights: list[np.ndarray], biases: list[np.ndarray | None]
             ) -> list[np.ndarray]:
    """Per-head projections of (B, T, d) by [H, d, e] weights → (B, H, T, e) each, in one pass.

    Every output column is summed on its own, so the result does not depend on which
    projections share the pass over x.
    """
    batch, length, _ = x.shape
    out = affine(_rows(x), *side_by_side(weights, biases, x.dtype))
    results, start = [], 0
    for heads, _, e in (weight.shape for weight in weights):
        part = out[:, start : start + heads * e].reshape(batch, length, heads, e)
        results.append(np.ascontiguousarray(part.transpose(0, 2, 1, 3)))
        start += heads * e
    return results


def apply_attention(
    x: np.ndarray, mask: np.ndarray, attn: AttentionSpec, settings: AttentionSettings
) -> tuple[np.ndarray, LayerTrace]:
    """Multi-head self-attention of (B, T, d) with padding ``mask`` (B, T)."""
    q, k, v = _project(x, [attn.W_Q, attn.W_K, attn.W_V], [attn.b_Q, attn.b_K, attn.b_V])
    if not all(np.isfinite(part).all() for part in (q, k, v)):
        raise SatsimError(f"an attention layer's queries, keys or values overflowed {x.dtype} "
                          f"(the model's weights are too large for it); use "
                          f"{overflow_remedy(x.dtype)}")
    head_mask = mask[:, None, :]
    same_scores = counting_heads(attn)
    ways = [(m, head_settings(settings, kind, delta))
            for m, kind, delta in zip(attn.head_masks, attn.head_kinds, attn.head_deltas)]
    groups = {way: [h for h, other in enumerate(ways) if other == way]
              for way in dict.fromkeys(ways)}

    def run(way: tuple[str, AttentionSettings], heads) -> AttentionResult:
        m, how = way
        return attention(
            q[:, heads], k[:, heads], v[:, heads], kind=how.kind, beta=how.beta, attn_mask=m,
            mask=head_mask, query_mask=head_mask, atol=how.atol, rtol=how.rtol,
            scale=attn.score_scale, same_scores=same_scores[heads], width=how.width)

    if len(groups) <= 1:
        way = next(iter(groups), ("bidirectional", settings))
        result = run(way, slice(None))
    else:  # heads with different masks or kinds: one call per group, put back in head order
        parts = {way: run(way, heads) for way, heads in groups.items()}
        result = AttentionResult(*(_by_head(parts, groups, field)
                                   for field in ("output", "tie_size", "tie_gap")))
    batch, heads, length, d_v = result.output.shape
    stacked = np.ascontiguousarray(result.output.transpose(0, 2, 1, 3).reshape(-1, heads * d_v))
    w_out = np.ascontiguousarray(attn.W_O.reshape(heads * d_v, -1))
    out = affine(stacked, w_out, bias_or_zeros(attn.b_O, x.shape[-1], x.dtype))
    trace = LayerTrace(q, k, result.output, result.tie_size, result.tie_gap, v)
    return out.reshape(x.shape), trace


def _by_head(parts: dict, groups: dict, field: str) -> np.ndarray:
    """One field of per-mask attention results, (B, heads of the group, ...), in head order."""
    first = getattr(next(iter(parts.values())), field)
    heads = sum(len(group) for group in groups.values())
    out = np.empty((first.shape[0], heads, *first.shape[2:]), dtype=first.dtype)
    for way, group in groups.items():
        out[:, group] = getattr(parts[way], field)
    return out


class BatchBackend(Backend[np.ndarray]):
    """The walk's operations on padded (B, T, d) batches through the compiled kernels."""

    def __init__(self, spec: ModelSpec, settings: AttentionSettings, trace: bool,
                 norm_inputs: list[np.ndarray] | None) -> None:
        self.spec = spec
        self.mask = np.zeros((0, 0), dtype=bool)  # the padding mask, set by ``embed``
        self.settings = settings
        self.residuals: list[np.ndarray] | None = [] if trace else None
        self.layers: list[LayerTrace] | None = [] if trace else None
        self.norm_inputs = norm_inputs

    def embed(self, ids: list[np.ndarray]) -> np.ndarray:
        """Padded input vectors (B, T, d) of token id arrays; keeps their padding mask."""
        x, self.mask = embed_batch(self.spec, ids)
        if self.residuals is not None:
            self.residuals.append(x)
        return x

    def norm(self, x: np.ndarray, ln: LayerNormSpec, name: str) -> np.ndarray:
        """LayerNorm; its input is kept when asked."""
        if self.norm_inputs is not None:
            self.norm_inputs.append(x)
        return apply_layer_norm(x, ln)

    def attention(self, x: np.ndarray, branch: Branch) -> np.ndarray:
        """Masked multi-head attention; its trace is kept when asked."""
        out, layer_trace = apply_attention(x, self.mask, branch.module, self.settings)
        if self.layers is not None:
            self.layers.append(layer_trace)
        return out

    def feed_forward(self, x: np.ndarray, branch: Branch) -> np.ndarray:
        """The feed-forward sublayer."""
        return apply_feed_forward(x, branch.module)

    def leave(self, x: np.ndarray, step: Step) -> np.ndarray:
        """Keep the stream when tracing."""
        if self.residuals is not None:
            self.residuals.append(x)
        return x

    def unembed(self, x: np.ndarray, output: OutputSpec) -> np.ndarray:
        """Logits of every position, (B, T, n_outputs)."""
        bias = bias_or_zeros(output.b_U, len(output.labels), x.dtype)
        logits = affine(_rows(x), output.W_U, bias)
        return logits.reshape(x.shape[0], x.shape[1], -1)


def forward_batch(
    spec: ModelSpec, ids: list[np.ndarray], settings: AttentionSettings, trace: bool = False,
    norm_inputs: list[np.ndarray] | None = None,
) -> BatchRun:
    """Run a batch of token id arrays through the compiled kernels.

    ``norm_inputs``, when given, receives the input (B, T, d) of every LayerNorm in order.
    """
    backend = BatchBackend(spec, settings, trace, norm_inputs)
    logits = run(spec, backend, ids)
    return BatchRun(logits, backend.residuals, backend.layers)
