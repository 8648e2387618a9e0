"""Run the leading-order network through the simulator's compiled forward pass, as one batch."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from satsim.engine.batch import LayerTrace, forward_batch
from satsim.model.encoding import encode_batch
from satsim.model.settings import AttentionSettings
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
    return encode_batch(network.spec, strings, at_least_one=True)


def run_limit(network: LeadingOrder, strings: Sequence[str], attention: str = "saturated",
              atol: float | None = None, rtol: float | None = None) -> LimitRun:
    """Run ``strings`` through the leading-order network (saturated attention by default)."""
    ids = encode_all(network, strings)
    settings = AttentionSettings(attention, 1.0, atol, rtol)
    run = forward_batch(network.spec, ids, settings, trace=True)
    return LimitRun(run.residuals, run.layers, run.logits, np.array([len(s) for s in ids]))
