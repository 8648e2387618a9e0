"""The parts a construction is written in: heads, ReLU neurons and layers over named dimensions.

Weights are sparse dicts: ``{"depth": -1e4}`` reads (or writes) one dimension with that weight;
``{("depth", 1): 2}`` addresses column 1 of a multi-column query/key map.
"""

from __future__ import annotations

from dataclasses import dataclass

Weights = dict
ONE = "one"
"""The residual dimension that is 1 at every position (thresholds are weights on it)."""


@dataclass(frozen=True)
class Head:
    """One attention head: sparse query and key maps, and value copies ``{source: target}``.

    Scores are (query·key)/√d_head, where d_head is the widest query/key map of the layer.
    """

    query: Weights
    key: Weights
    value: dict[str, str]
    mask: str = "causal"  # which keys by position (satsim.model.masks)
    value_scale: float = 1.0


@dataclass(frozen=True)
class Neuron:
    """One ReLU unit of a feed-forward layer: relu(reads·x), written with ``writes``.

    There are no biases: a threshold is a weight on the constant dimension ``one``.
    """

    reads: Weights
    writes: Weights


@dataclass(frozen=True)
class Layer:
    """One block: attention heads (may be empty), then feed-forward neurons (may be empty)."""

    heads: tuple[Head, ...] = ()
    neurons: tuple[Neuron, ...] = ()


def dim(key: str | tuple[str, int]) -> str:
    """The dimension a weight key addresses (a name, or the name of a (name, column) pair)."""
    return key[0] if isinstance(key, tuple) else key


def head_reads(heads: tuple[Head, ...]) -> set[str]:
    """Dimensions the heads read: queries, keys, and the sources of their values."""
    return {dim(k) for h in heads for k in (*h.query, *h.key, *h.value)}


def neuron_reads(neurons: tuple[Neuron, ...]) -> set[str]:
    """Dimensions the neurons read."""
    return {dim(k) for n in neurons for k in n.reads}
