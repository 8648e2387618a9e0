"""The meaning of a C-RASP program (Yang and Chiang 2024), written from the definitions.

Every vector has a value at each position i = 0, 1, …, n of an input w₁…wₙ; position i stands
for the prefix w₁…wᵢ, and position 0 for the empty prefix, where no symbol is read:

- ``Q("a")`` is true at i iff wᵢ = a (never at 0); ``True``, ``False``, an integer k are constant;
- ``not``, ``and``, ``or`` act position by position;
- ``count(P)`` at i is the number of j with 1 ≤ j ≤ i and P true at j (0 at position 0);
- ``C1 + C2``, ``C1 - C2``, ``k * C`` and the comparisons act position by position;
- ``where(P, C1, C2)`` is C1 where P holds, else C2.

The program accepts w iff ``accept`` is true at position n: the last position, or position 0 for
the empty string.
"""

from __future__ import annotations

import numpy as np

from satsim.errors import SatsimError
from satsim.rasp.syntax import (
    Add,
    And,
    Compare,
    Constant,
    CountOf,
    Integer,
    Name,
    Node,
    Not,
    Or,
    Program,
    Scale,
    Symbol,
    Where,
    children,
)

COMPARE = {"<": np.less, "<=": np.less_equal, ">": np.greater, ">=": np.greater_equal,
           "==": np.equal, "!=": np.not_equal}


def run(program: Program, string: str) -> dict[str, np.ndarray]:
    """Every defined vector at positions 0..n: bool or int64 arrays of length n + 1."""
    program.check_input("crasp", string)
    symbols = np.array([""] + list(string), dtype=object)
    bounds: dict[str, tuple[int, int]] = {}
    for definition in program.definitions:
        bounds[definition.name] = count_bound(definition.expr, bounds)
        for node in _subtree(definition.expr):  # inside comparisons and conditions too
            slope, offset = count_bound(node, bounds)
            if slope * len(string) + offset >= 2**62:
                raise SatsimError(f"{definition.name} could exceed the int64 range on a string "
                                  f"of {len(string):,} symbols")
    values: dict[str, np.ndarray] = {}
    for definition in program.definitions:
        values[definition.name] = _value(definition.expr, symbols, values)
    return values


def accepts(program: Program, string: str) -> bool:
    """Whether the program accepts ``string``: ``accept`` at its last position."""
    return bool(run(program, string)["accept"][-1])


def _subtree(node: Node) -> list[Node]:
    """``node`` and every node below it."""
    return [node, *(below for child in children(node) for below in _subtree(child))]


def count_bound(node: Node, bounds: dict[str, tuple[int, int]]) -> tuple[int, int]:
    """(a, b) with |C| ≤ a·i + b at every position i, for a count (Booleans: (0, 1))."""
    if isinstance(node, Integer):
        return 0, abs(node.value)
    if isinstance(node, CountOf):
        return 1, 0
    if isinstance(node, Name):
        return bounds[node.name]
    if isinstance(node, Add):
        (a1, b1), (a2, b2) = count_bound(node.left, bounds), count_bound(node.right, bounds)
        return a1 + a2, b1 + b2
    if isinstance(node, Scale):
        a, b = count_bound(node.arg, bounds)
        return abs(node.factor) * a, abs(node.factor) * b
    if isinstance(node, Where):
        (a1, b1), (a2, b2) = count_bound(node.then, bounds), count_bound(node.otherwise, bounds)
        return max(a1, a2), max(b1, b2)
    return 0, 1


def _value(node: Node, symbols: np.ndarray, values: dict[str, np.ndarray]) -> np.ndarray:
    """The vector ``node`` denotes, at every position 0..n."""
    n1 = len(symbols)
    if isinstance(node, Symbol):
        return symbols == node.symbol
    if isinstance(node, Constant):
        return np.full(n1, node.value)
    if isinstance(node, Integer):
        return np.full(n1, node.value, dtype=np.int64)
    if isinstance(node, Name):
        return values[node.name]
    if isinstance(node, Not):
        return ~_value(node.arg, symbols, values)
    if isinstance(node, (And, Or)):
        parts = [_value(arg, symbols, values) for arg in node.args]
        combine = np.logical_and if isinstance(node, And) else np.logical_or
        return combine.reduce(parts)
    if isinstance(node, CountOf):
        holds = _value(node.arg, symbols, values).copy()
        holds[0] = False  # position 0 reads no symbol: nothing to count
        return np.cumsum(holds, dtype=np.int64)
    if isinstance(node, Add):
        return _value(node.left, symbols, values) + _value(node.right, symbols, values)
    if isinstance(node, Scale):
        return node.factor * _value(node.arg, symbols, values)
    if isinstance(node, Where):
        return np.where(_value(node.condition, symbols, values),
                        _value(node.then, symbols, values),
                        _value(node.otherwise, symbols, values))
    if isinstance(node, Compare):
        return COMPARE[node.op](_value(node.left, symbols, values),
                                _value(node.right, symbols, values))
    raise TypeError(f"not a C-RASP node: {node!r}")
