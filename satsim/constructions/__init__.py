"""Hand-built transformers with explicit weights, one module per language."""

from __future__ import annotations

from collections.abc import Callable

from satsim.errors import SatsimError
from satsim.spec import ModelSpec

from . import dyck1

_BUILDERS: dict[str, Callable[..., ModelSpec]] = {
    "dyck1": dyck1.build,
}


def names() -> list[str]:
    """Names of the languages that have a hand-built construction."""
    return sorted(_BUILDERS)


def build(name: str, **options) -> ModelSpec:
    """Build the hand-made transformer for language ``name`` (options go to its builder)."""
    if name not in _BUILDERS:
        raise SatsimError(f"no construction for {name!r}; known: {', '.join(names())}")
    return _BUILDERS[name](**options)
