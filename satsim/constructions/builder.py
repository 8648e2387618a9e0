"""A terse builder for hand-made transformers over named residual dimensions.

A construction names its residual dimensions, then adds layers of heads and ReLU neurons that
read and write those names; the builder turns them into a validated :class:`ModelSpec`.
Weights are sparse dicts: ``{"depth": -1e4}`` reads (or writes) one dimension with that weight;
``{("depth", 1): 2}`` addresses column 1 of a multi-column query/key map.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from satsim.constructions.residual import Residual
from satsim.spec import (
    AttentionSpec,
    BlockSpec,
    FeedForwardSpec,
    ModelSpec,
    OutputSpec,
    PositionalSpec,
)

BOS = "<bos>"
Weights = dict


@dataclass(frozen=True)
class Head:
    """One attention head: sparse query and key maps, and value copies ``{source: target}``.

    Scores are (query·key)/√d_head, where d_head is the widest query/key map of the layer.
    """

    query: Weights
    key: Weights
    value: dict[str, str]
    causal: bool = True
    value_scale: float = 1.0


@dataclass(frozen=True)
class Neuron:
    """One ReLU unit of a feed-forward layer: relu(reads·x + bias), written with ``writes``."""

    reads: Weights
    writes: Weights
    bias: float = 0.0


def _columns(weights: Weights) -> int:
    return 1 + max((key[1] if isinstance(key, tuple) else 0) for key in weights) if weights else 1


@dataclass
class Builder:
    """Collects embedding, positional features, layers and readout of a construction."""

    name: str
    symbols: tuple[str, ...]
    dims: tuple[str, ...]
    dtype: type = np.float32
    description: str = ""
    blocks: list[BlockSpec] = field(default_factory=list)
    features: dict[str, Weights] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.r = Residual(*self.dims, dtype=self.dtype)
        self.vocab = (BOS, *self.symbols)
        self.token_rows: dict[str, Weights] = {}

    def embed(self, rows: dict[str, Weights]) -> None:
        """Set the embedding of each token (BOS included) as {token: {dim: value}}."""
        self.token_rows.update(rows)

    def position_features(self, features: dict[str, Weights]) -> None:
        """Add positional features (names of satsim.positions.FEATURES) written into dims."""
        self.features.update(features)

    def layer(self, heads: list[Head] = (), neurons: list[Neuron] = ()) -> None:
        """Append a block with these heads (attention) and these neurons (feed-forward)."""
        attn = self._attention(list(heads)) if heads else None
        mlp = self._feed_forward(list(neurons)) if neurons else None
        self.blocks.append(BlockSpec(attn=attn, mlp=mlp))

    def _attention(self, heads: list[Head]) -> AttentionSpec:
        if len({h.causal for h in heads}) != 1:
            raise ValueError("all heads of one layer share causal or bidirectional attention")
        d_head = max(max(_columns(h.query), _columns(h.key)) for h in heads)
        d_v = max(len(h.value) for h in heads)
        w_q = np.stack([self.r.read(h.query, d_head) for h in heads])
        w_k = np.stack([self.r.read(h.key, d_head) for h in heads])
        w_v = np.zeros((len(heads), self.r.width, d_v), dtype=self.dtype)
        w_o = np.zeros((len(heads), d_v, self.r.width), dtype=self.dtype)
        for index, head in enumerate(heads):
            for column, (source, target) in enumerate(head.value.items()):
                w_v[index, self.r.index[source], column] = 1
                w_o[index, column, self.r.index[target]] = head.value_scale
        return AttentionSpec(W_Q=w_q, W_K=w_k, W_V=w_v, W_O=w_o, causal=heads[0].causal)

    def _feed_forward(self, neurons: list[Neuron]) -> FeedForwardSpec:
        w_in = self.r.columns([neuron.reads for neuron in neurons])
        w_out = np.ascontiguousarray(self.r.columns([neuron.writes for neuron in neurons]).T)
        bias = np.array([neuron.bias for neuron in neurons], dtype=self.dtype)
        has_bias = bool(np.any(bias))
        return FeedForwardSpec(W_in=w_in, W_out=w_out, b_in=bias if has_bias else None)

    def _positional(self) -> PositionalSpec:
        if not self.features:
            return PositionalSpec()
        names = tuple(self.features)
        w_feat = np.ascontiguousarray(self.r.columns([self.features[n] for n in names]).T)
        return PositionalSpec("features", features=names, W_feat=w_feat)

    def build(self, readout: dict[str, Weights], task: str = "recognition",
              bias: dict[str, float] | None = None) -> ModelSpec:
        """Finish the model: ``readout`` maps each output label to the dims its logit reads."""
        labels = tuple(readout)
        w_u = self.r.columns([readout[label] for label in labels])
        b_u = None
        if bias:
            b_u = np.array([bias.get(label, 0.0) for label in labels], dtype=self.dtype)
        output = OutputSpec(W_U=w_u, b_U=b_u, labels=labels, task=task,
                            readout="last" if task == "recognition" else "per-position")
        return ModelSpec(
            vocab=self.vocab,
            W_E=self.r.embedding(self.vocab, self.token_rows),
            blocks=tuple(self.blocks),
            output=output,
            positional=self._positional(),
            bos=BOS,
            name=self.name,
            description=self.description,
            dim_names=self.dims,
        )
