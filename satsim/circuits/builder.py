"""A terse builder for hand-made transformers over named residual dimensions.

A construction names its residual dimensions, then adds layers of heads and ReLU neurons that
read and write those names (:mod:`satsim.circuits.parts`); the builder turns them into a
validated :class:`ModelSpec`. It is written as if every sublayer added to a residual stream.
By default the builder lifts it to a homogeneous network (:mod:`satsim.circuits.lifting`):
no residual connections and no biases, every live dimension re-written by every sublayer, so
the soft twin at uniform scale cθ converges to the construction itself.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from satsim.circuits.lifting import POS, SIGNED_FEATURES, lift
from satsim.circuits.parts import Head, Layer, Neuron, Weights
from satsim.circuits.residual import Residual
from satsim.model.spec import (
    BOS,
    AttentionSpec,
    BlockSpec,
    FeedForwardSpec,
    ModelSpec,
    OutputSpec,
    PositionalSpec,
)

__all__ = ["BOS", "Builder", "Head", "Neuron"]


def columns_read(weights: Weights) -> int:
    """The columns a head's query or key has (keys are dims or (dim, column) pairs)."""
    return 1 + max((key[1] if isinstance(key, tuple) else 0) for key in weights) if weights else 1


@dataclass
class Builder:
    """Collects embedding, positional features, layers and readout of a construction.

    ``homogeneous=False`` keeps the residual stream as written (no lifting). ``score_scale``
    sets every attention layer's score scale (None: 1/√d_head).
    """

    name: str
    symbols: tuple[str, ...]
    dims: tuple[str, ...]
    dtype: type = np.float32
    description: str = ""
    homogeneous: bool = True
    score_scale: float | None = None
    layers: list[Layer] = field(default_factory=list)
    features: dict[str, Weights] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.vocab = (BOS, *self.symbols)
        self.token_rows: dict[str, Weights] = {}

    def embed(self, rows: dict[str, Weights]) -> None:
        """Set the embedding of each token (BOS included) as {token: {dim: value}}."""
        self.token_rows.update(rows)

    def position_features(self, features: dict[str, Weights]) -> None:
        """Add positional features (names of satsim.model.positions.FEATURES) written into dims."""
        self.features.update(features)

    def layer(self, heads: list[Head] = (), neurons: list[Neuron] = ()) -> None:
        """Append a block with these heads (attention) and these neurons (feed-forward)."""
        self.layers.append(Layer(tuple(heads), tuple(neurons)))

    def weight_count(self) -> int:
        """The weights :meth:`build` will allocate for the blocks (before any lifting)."""
        width, total = len(self.dims), 0
        for layer in self.layers:
            if layer.heads:
                d_head = max(max(columns_read(h.query), columns_read(h.key)) for h in layer.heads)
                d_v = max(len(h.value) for h in layer.heads)
                total += len(layer.heads) * width * 2 * (d_head + d_v)
            total += 2 * width * len(layer.neurons)
        return total

    def _inputs(self) -> tuple[set[str], set[str]]:
        """Dims the embedding writes, and those of them that may be negative."""
        entries = [(d, v) for row in self.token_rows.values() for d, v in row.items()]
        entries += [(d, -1.0 if f in SIGNED_FEATURES else v)
                    for f, row in self.features.items() for d, v in row.items()]
        return {d for d, v in entries if v}, {d for d, v in entries if v < 0}

    def _lifted(self, readout: dict[str, Weights]) -> tuple[list[Layer], tuple, dict]:
        """Layers, dims and features of the model to build (lifted when homogeneous)."""
        if not self.homogeneous:
            return self.layers, self.dims, self.features
        layers, reads_pos = lift(self.layers, readout, self.dims, *self._inputs())
        if not reads_pos:
            return layers, self.dims, self.features
        features = {**self.features, "i": {**self.features.get("i", {}), POS: 1}}
        return layers, tuple(dict.fromkeys((*self.dims, POS))), features

    def _attention(self, r: Residual, heads: tuple[Head, ...]) -> AttentionSpec:
        d_head = max(max(columns_read(h.query), columns_read(h.key)) for h in heads)
        d_v = max(len(h.value) for h in heads)
        w_q = np.stack([r.read(h.query, d_head) for h in heads])
        w_k = np.stack([r.read(h.key, d_head) for h in heads])
        w_v = np.zeros((len(heads), r.width, d_v), dtype=self.dtype)
        w_o = np.zeros((len(heads), d_v, r.width), dtype=self.dtype)
        for index, head in enumerate(heads):
            for column, (source, target) in enumerate(head.value.items()):
                w_v[index, r.index[source], column] = 1
                w_o[index, column, r.index[target]] = head.value_scale
        masks = tuple(h.mask for h in heads)
        return AttentionSpec(W_Q=w_q, W_K=w_k, W_V=w_v, W_O=w_o,
                             mask=masks[0] if len(set(masks)) == 1 else masks,
                             scale=self.score_scale)

    def _feed_forward(self, r: Residual, neurons: tuple[Neuron, ...]) -> FeedForwardSpec:
        w_in = r.columns([neuron.reads for neuron in neurons])
        w_out = np.ascontiguousarray(r.columns([neuron.writes for neuron in neurons]).T)
        return FeedForwardSpec(W_in=w_in, W_out=w_out)

    def _block(self, r: Residual, layer: Layer) -> BlockSpec:
        attn = self._attention(r, layer.heads) if layer.heads else None
        mlp = self._feed_forward(r, layer.neurons) if layer.neurons else None
        return BlockSpec(attn=attn, mlp=mlp)

    def _positional(self, r: Residual, features: dict[str, Weights]) -> PositionalSpec:
        if not features:
            return PositionalSpec()
        names = tuple(features)
        w_feat = np.ascontiguousarray(r.columns([features[n] for n in names]).T)
        return PositionalSpec("features", features=names, W_feat=w_feat)

    def build(self, readout: dict[str, Weights], task: str = "recognition") -> ModelSpec:
        """Finish the model: ``readout`` maps each output label to the dims its logit reads."""
        layers, dims, features = self._lifted(readout)
        r = Residual(*dims, dtype=self.dtype)
        blocks = tuple(self._block(r, layer) for layer in layers)
        labels = tuple(readout)
        output = OutputSpec(W_U=r.columns([readout[label] for label in labels]), labels=labels,
                            task=task,
                            readout="last" if task == "recognition" else "per-position")
        return ModelSpec(
            vocab=self.vocab,
            W_E=r.embedding(self.vocab, self.token_rows),
            blocks=blocks,
            output=output,
            positional=self._positional(r, features),
            residual=not self.homogeneous,
            bos=BOS,
            name=self.name,
            description=self.description,
            dim_names=dims,
        )
