"""Hand-built transformers with explicit weights, one module per idea.

``build(name)`` returns the recogniser; ``build(name, task="next-symbol")`` the next-symbol
predictor (one logit per symbol and EOS at every position). Each is built homogeneous (no
residual stream, no biases; :mod:`satsim.circuits.lifting`), so its soft twin at uniform
scale cθ converges to the construction itself; only the Dyck-1 recogniser, the benchmark model,
keeps its residual stream.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

from satsim.errors import SatsimError
from satsim.model.spec import LANGUAGE_TASKS, ModelSpec

from .blocks import build_blocks
from .dyck import build_shuffle_dyck
from .reset_dyck import build_reset_dyck1
from .simple import build_first, build_majority

_BUILDERS: dict[str, Callable[..., ModelSpec]] = {
    "dyck1": partial(build_shuffle_dyck, 1, "dyck1"),
    "shuffle-dyck2": partial(build_shuffle_dyck, 2, "shuffle-dyck2"),
    "shuffle-dyck3": partial(build_shuffle_dyck, 3, "shuffle-dyck3"),
    "anbn": partial(build_blocks, "ab", "anbn"),
    "anbncn": partial(build_blocks, "abc", "anbncn"),
    "anbncndn": partial(build_blocks, "abcd", "anbncndn"),
    "majority": build_majority,
    "first": build_first,
    "reset-dyck1": build_reset_dyck1,
}


def names() -> list[str]:
    """Names of the languages that have a hand-built construction."""
    return sorted(_BUILDERS)


def build(name: str, task: str = "recognition", **options) -> ModelSpec:
    """Build the hand-made transformer for language ``name`` (options go to its builder)."""
    if name not in _BUILDERS:
        raise SatsimError(f"no construction for {name!r}; known: {', '.join(names())}")
    if task not in LANGUAGE_TASKS:
        raise SatsimError(f"unknown task {task!r}; known: {', '.join(LANGUAGE_TASKS)}")
    return _BUILDERS[name](task=task, **options)
