"""Random encoders as the authors' Figure 5 script draws them, as satsim specs.

Sizes and initialisation follow ``plot_trans_scale.py`` and ``src/si_transformer.py`` of
viking-sudo-rm/norm-growth: 12 layers, d_model 768, 12 heads, d_ff 512, vocabulary 10, 10
sequences of 10 tokens; PyTorch's defaults (embeddings N(0, 1), every linear weight and bias
U(±1/√fan_in), LayerNorm γ = 1, β = 0); biases everywhere and a learned positional table. The
weights depend on the seed only, so every arrangement of one seed shares them.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from satsim.errors import SatsimError
from satsim.model.masks import mask_of
from satsim.model.spec import (
    AttentionSpec,
    BlockSpec,
    FeedForwardSpec,
    LayerNormSpec,
    ModelSpec,
    OutputSpec,
    PositionalSpec,
)


@dataclass(frozen=True)
class EncoderSizes:
    """The shape of the random encoders and of their input batch (the authors' defaults)."""

    layers: int = 12
    d_model: int = 768
    heads: int = 12
    d_ff: int = 512
    vocab: int = 10
    length: int = 10
    sequences: int = 10

    def __post_init__(self) -> None:
        if min(self.layers, self.d_model, self.heads, self.d_ff, self.length,
               self.sequences) < 1 or not 1 <= self.vocab <= 10:
            raise SatsimError("encoder sizes must be positive, with a vocabulary of 1 to 10")
        if self.d_model % self.heads:
            raise SatsimError(f"d_model {self.d_model} is not divisible by {self.heads} heads")


def random_encoder(sizes: EncoderSizes, seed: int, *, norm: str, causal: bool) -> ModelSpec:
    """An encoder with PyTorch's default initialisation; ``norm`` 'post' or 'pre' (final LN)."""
    rng = np.random.default_rng(seed)
    d, heads, d_head = sizes.d_model, sizes.heads, sizes.d_model // sizes.heads

    def linear(fan_in: int, *shape: int) -> np.ndarray:
        bound = 1 / np.sqrt(fan_in)
        return rng.uniform(-bound, bound, shape)

    def layer_norm() -> LayerNormSpec:
        return LayerNormSpec(w=np.ones(d), b=np.zeros(d))

    vocab = tuple(str(token) for token in range(sizes.vocab))
    W_E = rng.standard_normal((sizes.vocab, d))
    W_pos = rng.standard_normal((sizes.length, d))
    blocks = []
    for _ in range(sizes.layers):
        W_Q, W_K, W_V = (linear(d, heads, d, d_head) for _ in range(3))
        b_Q, b_K, b_V = (linear(d, heads, d_head) for _ in range(3))
        attn = AttentionSpec(W_Q=W_Q, W_K=W_K, W_V=W_V, W_O=linear(d, heads, d_head, d),
                             b_Q=b_Q, b_K=b_K, b_V=b_V, b_O=linear(d, d), mask=mask_of(causal))
        mlp = FeedForwardSpec(W_in=linear(d, d, sizes.d_ff), b_in=linear(d, sizes.d_ff),
                              W_out=linear(sizes.d_ff, sizes.d_ff, d),
                              b_out=linear(sizes.d_ff, d))
        blocks.append(BlockSpec(attn=attn, mlp=mlp, ln1=layer_norm(), ln2=layer_norm()))
    drawn = ModelSpec(
        vocab=vocab, W_E=W_E, blocks=tuple(blocks), output=OutputSpec(W_U=linear(d, d, 1)),
        positional=PositionalSpec(kind="learned", W_pos=W_pos), norm="post")
    return arranged(drawn, seed, norm=norm, causal=causal)


def arranged(encoder: ModelSpec, seed: int, *, norm: str, causal: bool) -> ModelSpec:
    """Seed ``seed``'s ``encoder`` with LayerNorm placement ``norm`` and mask ``causal``."""
    d = encoder.d_model
    ln_final = LayerNormSpec(w=np.ones(d), b=np.zeros(d)) if norm == "pre" else None
    blocks = tuple(replace(block, attn=replace(block.attn, mask=mask_of(causal)))
                   for block in encoder.blocks)
    return replace(encoder, blocks=blocks, norm=norm, ln_final=ln_final,
                   name=f"random {norm}-LN encoder, seed {seed}")
