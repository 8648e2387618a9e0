"""Rebuild a spec with some of its tensors replaced or dropped, addressed by their names."""

from __future__ import annotations

from collections.abc import Callable, Mapping

import numpy as np

from satsim.errors import SatsimError
from satsim.model.spec import ModelSpec, map_named_tensors


def with_tensors(spec: ModelSpec, new: Mapping[str, np.ndarray | None]) -> ModelSpec:
    """Return ``spec`` with the named tensors replaced (None drops an optional tensor)."""
    used: set[str] = set()

    def take(name: str, array: np.ndarray | None) -> np.ndarray | None:
        if name not in new:
            return array
        used.add(name)
        return new[name]

    rebuilt = map_named_tensors(spec, take)
    unknown = sorted(set(new) - used)
    if unknown:
        raise SatsimError(f"model {spec.name!r} has no tensor {unknown[0]!r}")
    return rebuilt


def map_named(spec: ModelSpec, fn: Callable[[str, np.ndarray], np.ndarray]) -> ModelSpec:
    """Return ``spec`` with ``fn(name, tensor)`` applied to every tensor."""
    return with_tensors(spec, {name: fn(name, a) for name, a in spec.tensors().items()})
