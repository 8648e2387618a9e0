"""Run the leading-order network with the simulator's compiled kernels, residual per sublayer.

ModelSpec has one ``residual`` flag; the limit of a pre-LN model keeps the residual stream at
every sublayer but the first, so this evaluator takes one flag per sublayer. Where the flags are
all equal it computes exactly what ``Simulator(limit(spec)).trace`` computes.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from satsim.encoding import encode
from satsim.errors import SatsimError
from satsim.forward import (
    LayerTrace,
    apply_attention,
    apply_feed_forward,
    apply_layer_norm,
    embed_batch,
)
from satsim.kernels.layers import affine
from satsim.reference.forward import AttentionSettings
from satsim.saturation.limit import LeadingOrder


@dataclass(frozen=True)
class LimitRun:
    """A padded batch through the limit network: residual streams, heads and logits."""

    residuals: list[np.ndarray]  # (B, T, d) after the embedding and after every sublayer
    layers: list[LayerTrace]  # one per attention sublayer
    logits: np.ndarray  # (B, T, n_outputs)
    lengths: np.ndarray  # (B,)


def encode_all(network: LeadingOrder, strings: Sequence[str]) -> list[np.ndarray]:
    """Token ids of every string under the limit spec (same vocabulary as the source)."""
    ids = [encode(network.spec, s) for s in strings]
    if not ids or any(len(seq) == 0 for seq in ids):
        raise SatsimError("give at least one string that yields at least one token")
    return ids


def run_limit(network: LeadingOrder, strings: Sequence[str], attention: str = "saturated",
              atol: float | None = None, rtol: float | None = None) -> LimitRun:
    """Run ``strings`` through the leading-order network (saturated attention by default)."""
    spec = network.spec
    settings = AttentionSettings(attention, 1.0, atol, rtol)
    ids = encode_all(network, strings)
    x, mask = embed_batch(spec, ids)
    residuals: list[np.ndarray] = [x]
    layers: list[LayerTrace] = []
    flags = iter(network.residual)

    def attend(h: np.ndarray, attn) -> np.ndarray:
        out, trace = apply_attention(h, mask, attn, settings)
        layers.append(trace)
        return out

    for block in spec.blocks:
        sublayers = ((block.attn, block.ln1, attend), (block.mlp, block.ln2, apply_feed_forward))
        for sub, ln, fn in sublayers:
            if sub is None:
                continue
            keep = next(flags)
            if spec.norm == "pre":
                y = fn(apply_layer_norm(x, ln), sub)
                x = x + y if keep else y
            else:
                y = fn(x, sub)
                y = x + y if keep else y
                x = apply_layer_norm(y, ln) if spec.norm == "post" else y
            residuals.append(x)
    final = apply_layer_norm(x, spec.ln_final) if spec.ln_final is not None else x
    out = spec.output
    bias = out.b_U if out.b_U is not None else np.zeros(len(out.labels), dtype=spec.dtype)
    flat = np.ascontiguousarray(final.reshape(-1, final.shape[-1]))
    logits = affine(flat, out.W_U, bias, False).reshape(final.shape[0], final.shape[1], -1)
    return LimitRun(residuals, layers, logits, np.array([len(s) for s in ids]))
