"""What a run records of its parameters (Merrill et al. 2021, §4, §7): norms and projections.

‖θ‖ globally, per layer and per parameter tensor; the gradient projection θᵀ∇L; the update
δ = θ_{t+1} − θ_t through its norm and θᵀδ; the cosine between θ at consecutive logged steps.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

import torch

from satsim.training.report import vector_cosine

LAYER_PARTS = ("embed", "pos_embed", "ln_final", "unembed")


def layer_of(name: str) -> str:
    """The layer a parameter belongs to: 'blocks.3', or embed/pos_embed/ln_final/unembed."""
    parts = name.split(".")
    return ".".join(parts[:2]) if parts[0] == "blocks" else parts[0]


def snapshot(named: Iterable[tuple[str, torch.Tensor]]) -> dict[str, torch.Tensor]:
    """Float64 copies of the parameters, by name (detached, on the CPU)."""
    return {name: p.detach().to("cpu", torch.float64).clone() for name, p in named}


def dot(a: dict[str, torch.Tensor], b: dict[str, torch.Tensor]) -> float:
    """Σ over tensors of ⟨a, b⟩ (float64)."""
    return float(sum(float((a[name] * b[name]).sum()) for name in a))


def norms(theta: dict[str, torch.Tensor]) -> tuple[float, dict[str, float], dict[str, float]]:
    """‖θ‖ globally, per layer and per tensor."""
    groups = {name: float(t.square().sum()) for name, t in theta.items()}
    layers: dict[str, float] = {}
    for name, squared in groups.items():
        layers[layer_of(name)] = layers.get(layer_of(name), 0.0) + squared
    return (math.sqrt(sum(groups.values())), {k: math.sqrt(v) for k, v in layers.items()},
            {k: math.sqrt(v) for k, v in groups.items()})


def cosine(a: dict[str, torch.Tensor], b: dict[str, torch.Tensor]) -> float | None:
    """Cosine between two parameter vectors (tensors flattened in name order).

    :func:`satsim.training.report.cosine` on the flattened vectors: None where either is zero.
    """
    return vector_cosine(dot(a, b), dot(a, a), dot(b, b))


def parameter_record(theta: dict[str, torch.Tensor], grad: dict[str, torch.Tensor],
                     after: dict[str, torch.Tensor], previous: dict[str, torch.Tensor] | None
                     ) -> dict:
    """The parameter fields of a metrics row: norms, θᵀ∇L, the update δ, direction cosine."""
    norm, per_layer, per_group = norms(theta)
    delta = {name: after[name] - theta[name] for name in theta}
    return {
        "norm": norm,
        "norm_layers": per_layer,
        "norm_groups": per_group,
        "grad_projection": dot(theta, grad),
        "update_norm": math.sqrt(dot(delta, delta)),
        "update_projection": dot(theta, delta),
        "direction_cosine": None if previous is None else cosine(theta, previous),
    }
