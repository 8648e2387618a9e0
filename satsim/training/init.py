"""The randomly initialised spec a run starts from (weights N(0, 1/fan_in), zero biases)."""

from __future__ import annotations

import numpy as np

from languages.base import EOS
from satsim.model.spec import (
    BOS,
    AttentionSpec,
    BlockSpec,
    FeedForwardSpec,
    LayerNormSpec,
    ModelSpec,
    OutputSpec,
    PositionalSpec,
)
from satsim.training.config import TrainConfig


def output_labels(task: str, alphabet: tuple[str, ...]) -> tuple[str, ...]:
    """The logits a model of ``task`` has: one 'accept', or every symbol then EOS."""
    return ("accept",) if task == "recognition" else (*alphabet, EOS)


def initial_spec(config: TrainConfig, alphabet: tuple[str, ...]) -> ModelSpec:
    """A random spec with the run's architecture over ``alphabet`` (seeded by config.seed)."""
    rng = np.random.default_rng([config.seed, 17])
    dtype = np.dtype(config.dtype)
    d, h, e, m = config.d_model, config.heads, config.d_head, config.d_mlp

    def weight(*shape: int, fan_in: int) -> np.ndarray:
        return (rng.standard_normal(shape) / np.sqrt(fan_in)).astype(dtype)

    def zeros(*shape: int) -> np.ndarray:
        return np.zeros(shape, dtype=dtype)

    def norm() -> LayerNormSpec | None:
        if config.norm == "none":
            return None
        return LayerNormSpec(w=np.ones(d, dtype=dtype), b=zeros(d))

    blocks = tuple(
        BlockSpec(
            attn=AttentionSpec(
                W_Q=weight(h, d, e, fan_in=d), W_K=weight(h, d, e, fan_in=d),
                W_V=weight(h, d, e, fan_in=d), W_O=weight(h, e, d, fan_in=h * e),
                b_Q=zeros(h, e), b_K=zeros(h, e), b_V=zeros(h, e), b_O=zeros(d), mask="causal",
            ),
            mlp=FeedForwardSpec(W_in=weight(d, m, fan_in=d), W_out=weight(m, d, fan_in=m),
                                b_in=zeros(m), b_out=zeros(d)),
            ln1=norm(), ln2=norm(),
        )
        for _ in range(config.layers)
    )
    positional = {
        "none": PositionalSpec(),
        "sinusoidal": PositionalSpec("sinusoidal"),
        "learned": PositionalSpec("learned", W_pos=weight(config.n_ctx, d, fan_in=d)),
    }[config.positional]
    labels = output_labels(config.task, alphabet)
    output = OutputSpec(W_U=weight(d, len(labels), fan_in=d), b_U=zeros(len(labels)),
                        labels=labels, task=config.task,
                        readout="last" if config.task == "recognition" else "per-position")
    return ModelSpec(
        vocab=(BOS, *alphabet), W_E=weight(len(alphabet) + 1, d, fan_in=1), blocks=blocks,
        output=output, positional=positional, norm=config.norm,
        ln_final=norm() if config.norm == "pre" else None, bos=BOS,
        name=f"{config.lang}-{config.task}-seed{config.seed}",
        description=f"trained by satsim train on {config.lang} ({config.task})",
    )
