"""Random C-RASP and B-RASP programs (as text), and naive interpreters written as loops.

The naive interpreters evaluate each position on its own, straight from the definitions, so
they share nothing with :mod:`satsim.rasp.crasp` and :mod:`satsim.rasp.brasp` (which work
vector by vector); the tests use them as an independent oracle.
"""

from __future__ import annotations

from hypothesis import strategies as st

from satsim.rasp.syntax import (
    Add,
    And,
    At,
    Attend,
    Compare,
    Constant,
    CountOf,
    Integer,
    Name,
    Not,
    Or,
    Scale,
    Symbol,
    Where,
)

OPS = {"<": lambda a, b: a < b, "<=": lambda a, b: a <= b, ">": lambda a, b: a > b,
       ">=": lambda a, b: a >= b, "==": lambda a, b: a == b, "!=": lambda a, b: a != b}


# ---- naive meanings -----------------------------------------------------------------------

def naive_crasp(program, string: str) -> bool:
    """accept at position n, each value computed from the definitions at its own position."""
    defs = program.names
    memo: dict = {}

    def value(node, i):
        key = (id(node), i)
        if key in memo:
            return memo[key]
        if isinstance(node, Symbol):
            out = i >= 1 and string[i - 1] == node.symbol
        elif isinstance(node, Constant):
            out = node.value
        elif isinstance(node, Integer):
            out = node.value
        elif isinstance(node, Name):
            out = value(defs[node.name].expr, i)
        elif isinstance(node, Not):
            out = not value(node.arg, i)
        elif isinstance(node, And):
            out = all(value(a, i) for a in node.args)
        elif isinstance(node, Or):
            out = any(value(a, i) for a in node.args)
        elif isinstance(node, CountOf):
            out = sum(1 for j in range(1, i + 1) if value(node.arg, j))
        elif isinstance(node, Add):
            out = value(node.left, i) + value(node.right, i)
        elif isinstance(node, Scale):
            out = node.factor * value(node.arg, i)
        elif isinstance(node, Where):
            out = value(node.then, i) if value(node.condition, i) else value(node.otherwise, i)
        elif isinstance(node, Compare):
            out = OPS[node.op](value(node.left, i), value(node.right, i))
        else:
            raise TypeError(node)
        memo[key] = out
        return out

    return bool(value(defs["accept"].expr, len(string)))


def naive_brasp(program, string: str) -> bool:
    """accept at position n; attention by looping over every key of every query."""
    defs = program.names
    n = len(string)
    memo: dict = {}

    def vector(node, i):
        key = (id(node), i)
        if key in memo:
            return memo[key]
        if isinstance(node, Symbol):
            out = i >= 1 and string[i - 1] == node.symbol
        elif isinstance(node, Constant):
            out = node.value
        elif isinstance(node, Name):
            out = vector(defs[node.name].expr, i)
        elif isinstance(node, Not):
            out = not vector(node.arg, i)
        elif isinstance(node, And):
            out = all(vector(a, i) for a in node.args)
        elif isinstance(node, Or):
            out = any(vector(a, i) for a in node.args)
        elif isinstance(node, Attend):
            allowed = {"past": lambda j: j < i, "future": lambda j: j > i,
                       "all": lambda j: True}[node.mask]
            keys = [j for j in range(1, n + 1) if allowed(j) and pair(node.score, i, j)]
            if keys:
                j = min(keys) if node.side == "leftmost" else max(keys)
                out = pair(node.value, i, j)
            else:
                out = pair(node.default, i, None)
        else:
            raise TypeError(node)
        memo[key] = out
        return out

    def pair(node, i, j):
        if isinstance(node, At):
            return vector(node.vector, i if node.index == "i" else j)
        if isinstance(node, Constant):
            return node.value
        if isinstance(node, Not):
            return not pair(node.arg, i, j)
        values = [pair(a, i, j) for a in node.args]
        return all(values) if isinstance(node, And) else any(values)

    return bool(vector(defs["accept"].expr, n))  # n = 0: position 0, no symbol, no keys


# ---- random programs ----------------------------------------------------------------------

def definition_names(draw, size: int, pool: list[str] | None) -> list[str | None]:
    """Names for 1 to ``size`` definitions: distinct names from ``pool``, else None each."""
    if pool is None:
        return [None] * draw(st.integers(1, size))
    return draw(st.lists(st.sampled_from(pool), min_size=1, max_size=size, unique=True))


@st.composite
def crasp_programs(draw, alphabet: str = "ab", size: int = 5,
                   names: list[str] | None = None) -> str:
    """A random C-RASP program: Boolean and count definitions over the earlier ones.

    The definitions are named from ``names`` when given (else b0, c1, ...).
    """
    booleans: list[str] = []
    counts: list[str] = []
    lines = [f'alphabet = "{alphabet}"']

    def boolean(depth: int) -> str:
        choices = ["symbol", "const"] + (["name"] if booleans else [])
        if depth > 0:
            choices += ["not", "and", "or", "compare"]
        kind = draw(st.sampled_from(choices))
        if kind == "symbol":
            return f'Q("{draw(st.sampled_from(alphabet))}")'
        if kind == "const":
            return draw(st.sampled_from(["True", "False"]))
        if kind == "name":
            return draw(st.sampled_from(booleans))
        if kind == "not":
            return f"not ({boolean(depth - 1)})"
        if kind in ("and", "or"):
            return f"({boolean(depth - 1)}) {kind} ({boolean(depth - 1)})"
        op = draw(st.sampled_from(sorted(OPS)))
        return f"({count(depth - 1)}) {op} ({count(depth - 1)})"

    def count(depth: int) -> str:
        choices = ["count", "integer"] + (["name"] if counts else [])
        if depth > 0:
            choices += ["add", "sub", "scale", "where", "count"]
        kind = draw(st.sampled_from(choices))
        if kind == "count":
            return f"count({boolean(max(depth - 1, 0))})"
        if kind == "integer":
            return str(draw(st.integers(-3, 3)))
        if kind == "name":
            return draw(st.sampled_from(counts))
        if kind == "add":
            return f"({count(depth - 1)}) + ({count(depth - 1)})"
        if kind == "sub":
            return f"({count(depth - 1)}) - ({count(depth - 1)})"
        if kind == "scale":
            return f"{draw(st.integers(-3, 3))} * ({count(depth - 1)})"
        return f"where({boolean(depth - 1)}, {count(depth - 1)}, {count(depth - 1)})"

    for index, name in enumerate(definition_names(draw, size, names)):
        if draw(st.booleans()):
            name = name or f"c{index}"
            lines.append(f"{name} = {count(2)}")
            counts.append(name)
        else:
            name = name or f"b{index}"
            lines.append(f"{name} = {boolean(2)}")
            booleans.append(name)
    lines.append(f"accept = {boolean(2)}")
    return "\n".join(lines) + "\n"


@st.composite
def brasp_programs(draw, alphabet: str = "ab", size: int = 5,
                   names: list[str] | None = None) -> str:
    """A random B-RASP program: Boolean definitions and attention over the earlier ones.

    The definitions are named from ``names`` when given (else p0, p1, ...).
    """
    defined: list[str] = []
    lines = [f'alphabet = "{alphabet}"']

    def read(index: str) -> str:
        if defined and draw(st.booleans()):
            return f"{draw(st.sampled_from(defined))}[{index}]"
        return f'Q("{draw(st.sampled_from(alphabet))}")[{index}]'

    def pair(depth: int, indices: str) -> str:
        kind = draw(st.sampled_from(["read", "read", "const"] + (["not", "and", "or"]
                                                                   if depth else [])))
        if kind == "read":
            return read(draw(st.sampled_from(indices)))
        if kind == "const":
            return draw(st.sampled_from(["True", "False"]))
        if kind == "not":
            return f"not ({pair(depth - 1, indices)})"
        return f"({pair(depth - 1, indices)}) {kind} ({pair(depth - 1, indices)})"

    def boolean(depth: int) -> str:
        choices = ["symbol", "attend", "attend"] + (["name"] if defined else [])
        if depth > 0:
            choices += ["not", "and", "or"]
        kind = draw(st.sampled_from(choices))
        if kind == "symbol":
            return f'Q("{draw(st.sampled_from(alphabet))}")'
        if kind == "name":
            return draw(st.sampled_from(defined))
        if kind == "not":
            return f"not ({boolean(depth - 1)})"
        if kind in ("and", "or"):
            return f"({boolean(depth - 1)}) {kind} ({boolean(depth - 1)})"
        side = draw(st.sampled_from(["leftmost", "rightmost"]))
        mask = draw(st.sampled_from(["j < i", "j > i", "True"]))
        return (f"{side}({mask}, {pair(2, 'ij')}, {pair(2, 'ij')}, "
                f"default={pair(1, 'i')})")

    for index, name in enumerate(definition_names(draw, size, names)):
        name = name or f"p{index}"
        lines.append(f"{name} = {boolean(1)}")
        defined.append(name)
    lines.append(f"accept = {boolean(1)}")
    return "\n".join(lines) + "\n"
