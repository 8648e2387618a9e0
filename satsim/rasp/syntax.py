"""The programs: C-RASP and B-RASP as typed syntax trees (what :mod:`satsim.rasp.parse` builds).

A program is ``alphabet = "..."`` then definitions ``name = expression``, each a vector over the
positions of the input. C-RASP has Boolean and count vectors; B-RASP Boolean vectors only,
with attention. The trees keep where each node was written (line, column), so that a compiler
can say where a program asks for something it refuses.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from satsim.errors import SatsimError
from satsim.model.spec import PROGRAM_LANGUAGES

LANGUAGES = PROGRAM_LANGUAGES
"""The program languages, named as their file suffixes."""
LANGUAGE_NAMES = {"crasp": "C-RASP", "brasp": "B-RASP"}
"""Each language's name for a reader."""
BOOL, COUNT = "bool", "count"
"""The types of vectors."""
COMPARISONS = ("<", "<=", ">", ">=", "==", "!=")
RESERVED = ("alphabet", "Q", "count", "where", "leftmost", "rightmost", "i", "j", "True",
            "False", "not", "and", "or", "default")
"""Names a definition may not take."""
MASK_NAMES = ("past", "future", "all")
"""B-RASP attention masks: j < i, j > i, every position."""


@dataclass(frozen=True)
class Node:
    """A syntax node; ``at`` is its (line, column), 1-based, and takes no part in equality."""

    at: tuple[int, int] = field(default=(0, 0), compare=False, kw_only=True)


# ---- Boolean vectors (both languages) ----------------------------------------------------

@dataclass(frozen=True)
class Symbol(Node):
    """``Q("a")``: the symbol at i is a."""

    symbol: str


@dataclass(frozen=True)
class Constant(Node):
    """``True`` or ``False`` at every position (also inside attention)."""

    value: bool


@dataclass(frozen=True)
class Not(Node):
    """``not P``."""

    arg: Node


@dataclass(frozen=True)
class And(Node):
    """``P and Q and ...``."""

    args: tuple[Node, ...]


@dataclass(frozen=True)
class Or(Node):
    """``P or Q or ...``."""

    args: tuple[Node, ...]


@dataclass(frozen=True)
class Name(Node):
    """A defined vector, by name, at position i."""

    name: str
    kind: str  # BOOL or COUNT


# ---- C-RASP ------------------------------------------------------------------------------

@dataclass(frozen=True)
class Compare(Node):
    """``C1 op C2`` between counts: a Boolean vector."""

    op: str
    left: Node
    right: Node


@dataclass(frozen=True)
class Integer(Node):
    """An integer constant, as a count vector."""

    value: int


@dataclass(frozen=True)
class CountOf(Node):
    """``count(P)``: the number of j ≤ i with P(j)."""

    arg: Node


@dataclass(frozen=True)
class Add(Node):
    """``C1 + C2``."""

    left: Node
    right: Node


@dataclass(frozen=True)
class Scale(Node):
    """``k * C`` (``C1 - C2`` is ``C1 + (-1) * C2``) with an integer constant k."""

    factor: int
    arg: Node


@dataclass(frozen=True)
class Where(Node):
    """``where(P, C1, C2)``: C1 where P holds, else C2."""

    condition: Node
    then: Node
    otherwise: Node


# ---- B-RASP ------------------------------------------------------------------------------

@dataclass(frozen=True)
class At(Node):
    """``P[i]`` or ``P[j]`` inside attention: a Boolean vector read at the query or the key.

    ``vector`` is a :class:`Name` or a :class:`Symbol` (``Q("a")[j]``).
    """

    vector: Node
    index: str  # "i" or "j"


@dataclass(frozen=True)
class Attend(Node):
    """``leftmost(MASK, SCORE, VALUE, default=D)`` or ``rightmost(...)``.

    At each i: the leftmost (rightmost) j allowed by the mask with SCORE(i, j); the vector is
    VALUE(i, j) there, and D(i) where no j qualifies. SCORE and VALUE are Boolean combinations of
    ``At`` nodes and constants; D of ``At(…, "i")`` and constants.
    """

    side: str  # "leftmost" or "rightmost"
    mask: str  # one of MASK_NAMES
    score: Node
    value: Node
    default: Node


@dataclass(frozen=True)
class Definition:
    """``name = expression`` on line ``line``."""

    name: str
    expr: Node
    kind: str
    line: int


@dataclass(frozen=True)
class Program:
    """A parsed, type-checked program: its alphabet and its definitions in order."""

    language: str
    alphabet: tuple[str, ...]
    definitions: tuple[Definition, ...]
    text: str = field(default="", compare=False)

    @property
    def names(self) -> dict[str, Definition]:
        """The definitions by name."""
        return {d.name: d for d in self.definitions}

    def check_input(self, language: str, string: str) -> None:
        """Refuse, in one line, running as ``language`` or a string outside the alphabet."""
        if self.language != language:
            raise SatsimError(f"a {self.language} program needs its own interpreter")
        bad = [s for s in string if s not in self.alphabet]
        if bad:
            raise SatsimError(f"symbol {bad[0]!r} is not in the program's alphabet "
                              f"{''.join(self.alphabet)!r}")

    def needed(self) -> tuple[Definition, ...]:
        """The definitions ``accept`` depends on (itself included), in order."""
        names, wanted, todo = self.names, {"accept"}, ["accept"]
        while todo:
            for name in names_used(names[todo.pop()].expr) - wanted:
                wanted.add(name)
                todo.append(name)
        return tuple(d for d in self.definitions if d.name in wanted)


def children(node: Node) -> tuple[Node, ...]:
    """The nodes directly below ``node``."""
    if isinstance(node, (Not, CountOf)):
        return (node.arg,)
    if isinstance(node, (And, Or)):
        return node.args
    if isinstance(node, (Compare, Add)):
        return (node.left, node.right)
    if isinstance(node, Scale):
        return (node.arg,)
    if isinstance(node, Where):
        return (node.condition, node.then, node.otherwise)
    if isinstance(node, Attend):
        return (node.score, node.value, node.default)
    if isinstance(node, At):
        return (node.vector,)
    return ()


def names_used(node: Node) -> set[str]:
    """The defined vectors ``node`` reads (at i, or inside attention at i or j)."""
    found = {node.name} if isinstance(node, Name) else set()
    for child in children(node):
        found |= names_used(child)
    return found
