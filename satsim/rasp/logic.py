"""Boolean formulas over named 0/1 residual dimensions, and the ReLU neurons that compute them.

A formula is a nested tuple: ``("var", v)``, ``("const", bool)``, ``("not", f)``, ``("and", (f,
...))`` or ``("or", (f, ...))``. A variable v is a residual dimension (a string) or a compiler's
own kind of variable (a token, a read inside attention: never a string), so the two cannot be
confused whatever a dimension is called; :func:`cubes` takes dimensions only. A feed-forward
computes it exactly in one layer from a *disjoint* cover by cubes (conjunctions of literals, no
two true at once): each cube is one neuron relu(Σ positive − Σ negative − (#positive − 1)),
which is 1 when the cube holds and ≤ 0 otherwise, and the formula is their sum. Inputs are exact
0/1 values, so every sum is a small integer and the result is exactly 0 or 1. The cover comes
from Shannon expansion on the most frequent variable, stopping where the formula becomes
constant.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Hashable

from satsim.constructions.parts import Neuron

Formula = tuple
TRUE: Formula = ("const", True)
FALSE: Formula = ("const", False)
ONE = "one"
"""The residual dimension that is 1 at every position (thresholds are weights on it)."""
MAX_CUBES = 4096
"""Cubes one formula may take before its compiler materialises parts of it instead."""
MAX_CUBE_VARIABLES = 40
"""Variables past which a formula is not expanded into cubes at all (its parts are written
first, then combined by :func:`gate_neurons`)."""


def var(variable: Hashable) -> Formula:
    """The formula that reads one variable (a dimension, or a compiler's own variable)."""
    return ("var", variable)


def negate(f: Formula) -> Formula:
    """The negation of f, simplified."""
    if f[0] == "const":
        return ("const", not f[1])
    if f[0] == "not":
        return f[1]
    return ("not", f)


def conjoin(*fs: Formula) -> Formula:
    """The conjunction of the formulas, simplified (constants dropped or absorbing)."""
    parts: list[Formula] = []
    for f in fs:
        if f == FALSE:
            return FALSE
        if f == TRUE:
            continue
        parts.extend(f[1] if f[0] == "and" else (f,))
    return TRUE if not parts else parts[0] if len(parts) == 1 else ("and", tuple(parts))


def disjoin(*fs: Formula) -> Formula:
    """The disjunction of the formulas, simplified."""
    parts: list[Formula] = []
    for f in fs:
        if f == TRUE:
            return TRUE
        if f == FALSE:
            continue
        parts.extend(f[1] if f[0] == "or" else (f,))
    return FALSE if not parts else parts[0] if len(parts) == 1 else ("or", tuple(parts))


def variables(f: Formula) -> set[Hashable]:
    """The variables a formula reads."""
    if f[0] == "var":
        return {f[1]}
    if f[0] == "const":
        return set()
    if f[0] == "not":
        return variables(f[1])
    return set().union(*(variables(g) for g in f[1]))


def substitute(f: Formula, value: Callable[[Hashable], Formula]) -> Formula:
    """The formula with each variable replaced by ``value(dim)``, simplified."""
    if f[0] == "var":
        return value(f[1])
    if f[0] == "const":
        return f
    if f[0] == "not":
        return negate(substitute(f[1], value))
    parts = [substitute(g, value) for g in f[1]]
    return conjoin(*parts) if f[0] == "and" else disjoin(*parts)


def restrict(f: Formula, variable: Hashable, value: bool) -> Formula:
    """The formula with ``variable`` fixed to ``value``."""
    return substitute(f, lambda v: ("const", value) if v == variable else var(v))


def depth(f: Formula) -> int:
    """How deep the formula nests (a variable or a constant: 1), walked without recursion."""
    deepest, todo = 0, [(f, 1)]
    while todo:
        g, level = todo.pop()
        deepest = max(deepest, level)
        if g[0] == "not":
            todo.append((g[1], level + 1))
        elif g[0] in ("and", "or"):
            todo.extend((h, level + 1) for h in g[1])
    return deepest


def _occurrences(f: Formula, counts: Counter) -> None:
    if f[0] == "var":
        counts[f[1]] += 1
    elif f[0] == "not":
        _occurrences(f[1], counts)
    elif f[0] in ("and", "or"):
        for g in f[1]:
            _occurrences(g, counts)


def cubes(f: Formula, limit: int = MAX_CUBES) -> list[dict[str, bool]] | None:
    """A disjoint cover of ``f`` by cubes ({dim: required value}), or None past ``limit``.

    None also for a formula of more than :data:`MAX_CUBE_VARIABLES` variables.
    """
    if len(variables(f)) > MAX_CUBE_VARIABLES:
        return None
    found: list[dict[str, bool]] = []

    def expand(g: Formula, cube: dict[str, bool]) -> bool:
        if g == FALSE:
            return True
        if g == TRUE:
            found.append(cube)
            return len(found) <= limit
        counts: Counter = Counter()
        _occurrences(g, counts)
        dim = max(sorted(counts), key=counts.__getitem__)
        return (expand(restrict(g, dim, True), {**cube, dim: True})
                and expand(restrict(g, dim, False), {**cube, dim: False}))

    return found if expand(f, {}) else None


def gate_neurons(op: str, dims: list[str], target: str) -> list[Neuron]:
    """Neurons writing ``op`` ("not", "and", "or") of exact bits ``dims`` into ``target``.

    and: relu(Σx − (m − 1)); or: 1 − relu(1 − Σx), the 1 from a neuron reading ``one``; not:
    relu(1 − x). Every sum is a small integer, so the result is exactly 0 or 1.
    """
    if op == "not":
        return [cube_neuron({dims[0]: False}, target)]
    if op == "and":
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
