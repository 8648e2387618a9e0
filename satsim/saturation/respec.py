"""Rebuild a spec with some of its tensors replaced or dropped, addressed by their names."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import fields, replace
from typing import Any

import numpy as np

from satsim.errors import SatsimError
from satsim.model.spec import ModelSpec


def _rebuild(obj: Any, prefix: str, new: Mapping[str, np.ndarray | None], used: set[str]) -> Any:
    """Return ``obj`` with every tensor field whose full name is in ``new`` replaced."""
    changes = {}
    for f in fields(obj):
        name = f"{prefix}{f.name}"
        if f.metadata.get("tensor") and name in new:
            changes[f.name] = new[name]
            used.add(name)
    return replace(obj, **changes) if changes else obj


def with_tensors(spec: ModelSpec, new: Mapping[str, np.ndarray | None]) -> ModelSpec:
    """Return ``spec`` with the named tensors replaced (None drops an optional tensor)."""
    used: set[str] = set()
    blocks = []
    for layer, block in enumerate(spec.blocks):
        parts = {}
        for part in ("attn", "mlp", "ln1", "ln2"):
            sub = getattr(block, part)
            if sub is not None:
                parts[part] = _rebuild(sub, f"blocks.{layer}.{part}.", new, used)
        blocks.append(replace(block, **parts))
    changes: dict[str, Any] = {"blocks": tuple(blocks)}
    if "embed.W_E" in new:
        changes["W_E"] = new["embed.W_E"]
        used.add("embed.W_E")
    changes["positional"] = _rebuild(spec.positional, "pos_embed.", new, used)
    if spec.ln_final is not None:
        changes["ln_final"] = _rebuild(spec.ln_final, "ln_final.", new, used)
    changes["output"] = _rebuild(spec.output, "unembed.", new, used)
    unknown = sorted(set(new) - used)
    if unknown:
        raise SatsimError(f"model {spec.name!r} has no tensor {unknown[0]!r}")
    return replace(spec, **changes)


def map_named(spec: ModelSpec, fn: Callable[[str, np.ndarray], np.ndarray]) -> ModelSpec:
    """Return ``spec`` with ``fn(name, tensor)`` applied to every tensor."""
    return with_tensors(spec, {name: fn(name, a) for name, a in spec.tensors().items()})
