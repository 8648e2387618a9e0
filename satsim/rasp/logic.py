"""The ReLU neurons that compute a Boolean formula (:mod:`satsim.rasp.ir`) over exact 0/1 bits.

A feed-forward computes a formula over residual dimensions (:func:`cubes` takes dimensions
only) exactly in one layer from a *disjoint* cover by cubes (conjunctions of literals, no two
true at once): each cube is one neuron relu(Σ positive − Σ negative − (#positive − 1)), which is
1 when the cube holds and ≤ 0 otherwise, and the formula is their sum. Inputs are exact 0/1
values, so every sum is a small integer and the result is exactly 0 or 1. The cover comes from
Shannon expansion on the most frequent variable, stopping where the formula becomes constant.
"""

from __future__ import annotations

from collections import Counter

from satsim.circuits.parts import ONE, Neuron
from satsim.rasp.ir import (
    Conjunction,
    Const,
    Formula,
    Negation,
    Var,
    operands,
    restrict,
    variables,
)

MAX_CUBES = 4096
"""Cubes one formula may take before its compiler materialises parts of it instead."""
MAX_CUBE_VARIABLES = 40
"""Variables past which a formula is not expanded into cubes at all (its parts are written
first, then combined by :func:`gate_neurons`)."""


def _occurrences(f: Formula, counts: Counter) -> None:
    if isinstance(f, Var):
        counts[f.variable] += 1
    for g in operands(f):
        _occurrences(g, counts)


def cubes(f: Formula, limit: int = MAX_CUBES) -> list[dict[str, bool]] | None:
    """A disjoint cover of ``f`` by cubes ({dim: required value}), or None past ``limit``.

    None also for a formula of more than :data:`MAX_CUBE_VARIABLES` variables.
    """
    if len(variables(f)) > MAX_CUBE_VARIABLES:
        return None
    found: list[dict[str, bool]] = []

    def expand(g: Formula, cube: dict[str, bool]) -> bool:
        if isinstance(g, Const):  # False: no cube; True: the cube so far
            if not g.value:
                return True
            found.append(cube)
            return len(found) <= limit
        counts: Counter = Counter()
        _occurrences(g, counts)
        dim = max(sorted(counts), key=counts.__getitem__)
        return (expand(restrict(g, dim, True), {**cube, dim: True})
                and expand(restrict(g, dim, False), {**cube, dim: False}))

    return found if expand(f, {}) else None


def gate_neurons(gate: type[Formula], dims: list[str], target: str) -> list[Neuron]:
    """Neurons writing ``gate`` (Negation, Conjunction, Disjunction) of bits ``dims`` to ``target``.

    and: relu(Σx − (m − 1)); or: 1 − relu(1 − Σx), the 1 from a neuron reading ``one``; not:
    relu(1 − x). Every sum is a small integer, so the result is exactly 0 or 1.
    """
    if gate is Negation:
        return [cube_neuron({dims[0]: False}, target)]
    if gate is Conjunction:
        return [cube_neuron(dict.fromkeys(dims, True), target)]
    return [cube_neuron({}, target), cube_neuron(dict.fromkeys(dims, False), target, -1.0)
            if len(dims) == 1 else Neuron({ONE: 1.0, **{d: -1.0 for d in dims}}, {target: -1.0})]


def cube_neuron(cube: dict[str, bool], target: str, weight: float = 1.0) -> Neuron:
    """The neuron that adds ``weight`` to ``target`` where every literal of ``cube`` holds."""
    reads: dict[str, float] = {dim: (1.0 if value else -1.0) for dim, value in cube.items()}
    positives = sum(cube.values())
    if positives != 1:
        reads[ONE] = reads.get(ONE, 0.0) - (positives - 1)
    return Neuron(reads, {target: weight})
