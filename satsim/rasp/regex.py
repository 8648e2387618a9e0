r"""Regular expressions as the field writes them: the syntax tree, and its Python ``re`` twin.

Syntax (docs/regular.md): ``+`` and ``|`` are union, juxtaposition is concatenation, postfix
``*`` is the Kleene star and postfix ``?`` "optional"; there is no postfix plus (``+`` is union,
so one or more ``a`` is ``aa*``). ``ε`` or ``()`` is the empty word, ``∅`` or ``[]`` the empty
language; ``[abc]``, ``[a-c]`` are classes and ``[^ab]`` every symbol of the alphabet but those.
Whitespace is ignored; any other character is a symbol, and ``\`` makes an operator character
(or a space) a symbol. The parser uses an explicit stack and refuses nesting deeper than
:data:`MAX_NESTING`, so the recursive walks of the tree stay shallow.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from satsim.errors import SatsimError

MAX_NESTING = 100
"""Parentheses nested deeper than this are refused."""

MAX_LENGTH = 100_000
"""Expressions longer than this (characters) are refused."""

OPERATORS = set("+|*?()[]\\") | {"ε", "∅"}

# A node is a tuple: ("set", symbols) matches one symbol of the set (∅ when empty),
# ("not", symbols) one symbol of the alphabet outside the set, ("eps",), ("cat", parts),
# ("alt", parts), ("star", node), ("opt", node).
Node = tuple


@dataclass(frozen=True)
class Regex:
    """A parsed expression: its text, its tree, and its alphabet (sorted symbols)."""

    text: str
    tree: Node
    alphabet: tuple[str, ...]

    def python_pattern(self) -> str:
        """The same language in Python ``re`` syntax (for ``re.fullmatch``)."""
        return _python(self.tree, self.alphabet)


def parse_regex(text: str, alphabet: str | None = None) -> Regex:
    """Parse ``text``; the alphabet is ``alphabet``'s characters, else the symbols used.

    A malformed expression is a one-line :class:`SatsimError` naming the column (from 1).
    """
    if len(text) > MAX_LENGTH:
        raise SatsimError(f"the expression has {len(text):,} characters; at most "
                          f"{MAX_LENGTH:,} are parsed")
    tree, used = _Parser(text).parse()
    if alphabet is None:
        symbols = tuple(sorted(set(used)))
    else:
        symbols = tuple(dict.fromkeys(alphabet))
        if not symbols:
            raise SatsimError("the alphabet is empty; give its symbols, like --alphabet abc")
        for symbol, column in used.items():
            if symbol not in symbols:
                raise SatsimError(f"column {column}: symbol {symbol!r} is not in the alphabet "
                                  f"{''.join(symbols)!r}")
    if not symbols:
        raise SatsimError("the expression uses no symbol; give its alphabet with --alphabet")
    return Regex(text, tree, symbols)


class _Parser:
    """Left to right, with a stack of open groups; each group is a list of alternatives."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.used: dict[str, int] = {}  # symbol -> column of its first use

    def error(self, column: int, message: str) -> SatsimError:
        return SatsimError(f"column {column}: {message} (in {_shown(self.text)})")

    def parse(self) -> tuple[Node, dict[str, int]]:
        groups: list[tuple[int, list[list[Node]]]] = [(0, [[]])]  # (column opened, alternatives)
        i, text = 0, self.text
        while i < len(text):
            char, column = text[i], i + 1
            alternatives = groups[-1][1]
            if char.isspace():
                pass
            elif char == "(":
                if len(groups) > MAX_NESTING:
                    raise self.error(column, f"parentheses nested deeper than {MAX_NESTING}")
                groups.append((column, [[]]))
            elif char == ")":
                if len(groups) == 1:
                    raise self.error(column, "')' closes no '('")
                opened, inner = groups.pop()
                groups[-1][1][-1].append(self.union(inner, column, empty_ok=True))
            elif char in "+|":
                if not alternatives[-1]:
                    raise self.error(column, f"{char!r} (union) has nothing on its left")
                alternatives.append([])
            elif char in "*?":
                if not alternatives[-1]:
                    raise self.error(column, f"{char!r} applies to nothing")
                alternatives[-1][-1] = _postfix(char, alternatives[-1][-1])
            elif char == "[":
                node, i = self.char_class(i)
                alternatives[-1].append(node)
                continue
            elif char == "]":
                raise self.error(column, "']' closes no '['")
            elif char == "ε":
                alternatives[-1].append(("eps",))
            elif char == "∅":
                alternatives[-1].append(("set", frozenset()))
            else:
                if char == "\\":
                    if i + 1 == len(text):
                        raise self.error(column, "'\\' at the end escapes nothing")
                    i += 1
                    char = text[i]
                self.used.setdefault(char, column)
                alternatives[-1].append(("set", frozenset(char)))
            i += 1
        if len(groups) > 1:
            raise self.error(groups[-1][0], "'(' is never closed")
        if not groups[0][1][0] and len(groups[0][1]) == 1:
            raise self.error(1, "the expression is empty (write ε or () for the empty word)")
        return self.union(groups[0][1], len(text) + 1, empty_ok=False), self.used

    def union(self, alternatives: list[list[Node]], column: int, empty_ok: bool) -> Node:
        """The group's alternatives as one node; ``()`` alone is ε, an empty operand an error."""
        if len(alternatives) == 1 and not alternatives[0] and empty_ok:
            return ("eps",)
        if not alternatives[-1]:
            raise self.error(column, "a union ('+' or '|') has nothing on its right ('+' is "
                                     "union here: write aa* for one or more a)")
        parts = [alt[0] if len(alt) == 1 else ("cat", tuple(alt)) for alt in alternatives]
        return parts[0] if len(parts) == 1 else ("alt", tuple(parts))

    def char_class(self, i: int) -> tuple[Node, int]:
        """The class opening at ``text[i]``: its node and the index after its ']'."""
        text, opened = self.text, i + 1
        i += 1
        negated = i < len(text) and text[i] == "^"
        i += negated
        members: list[tuple[str, int]] = []
        while i < len(text) and text[i] != "]":
            if text[i] == "\\":
                i += 1
                if i == len(text):
                    break
            members.append((text[i], i + 1))
            i += 1
        if i == len(text):
            raise self.error(opened, "'[' is never closed")
        symbols: set[str] = set()
        k = 0
        while k < len(members):
            (low, column), ahead = members[k], members[k + 1:k + 3]
            if len(ahead) == 2 and ahead[0][0] == "-" and text[ahead[0][1] - 2] != "\\":
                high = ahead[1][0]
                if ord(high) < ord(low):
                    raise self.error(column, f"the range {low}-{high} is empty (reversed)")
                if ord(high) - ord(low) > 1_000:
                    raise self.error(column, f"the range {low}-{high} spans more than 1,000 "
                                             "symbols")
                span = [chr(c) for c in range(ord(low), ord(high) + 1)]
                k += 3
            else:
                span = [low]
                k += 1
            for symbol in span:
                symbols.add(symbol)
                self.used.setdefault(symbol, column)
        return ("not" if negated else "set", frozenset(symbols)), i + 1


def _postfix(operator: str, node: Node) -> Node:
    """``node*`` or ``node?``, with stacked operators merged (``a**`` is ``a*``)."""
    if node[0] == "star" or (node[0] == "opt" and operator == "?"):
        return node
    if node[0] == "opt":
        return ("star", node[1])
    return ("star" if operator == "*" else "opt", node)


def symbols_of(node: Node, alphabet: tuple[str, ...]) -> frozenset[str]:
    """The symbols a ``set`` or ``not`` node matches."""
    return node[1] if node[0] == "set" else frozenset(alphabet) - node[1]


def _python(node: Node, alphabet: tuple[str, ...]) -> str:
    """The node in Python ``re`` syntax, every operand in a non-capturing group.

    Stars are written in star normal form (Brüggemann-Klein 1993): the body of a star matches
    no ε through a nested star, so ``(b*a*)*`` is written ``(?:b|a)*``; Python's backtracking
    matcher would otherwise take exponential time on nested stars.
    """
    kind = node[0]
    if kind in ("set", "not"):
        symbols = sorted(symbols_of(node, alphabet))
        if not symbols:
            return "(?!)"
        return re.escape(symbols[0]) if len(symbols) == 1 else \
            "[" + "".join(re.escape(s) for s in symbols) + "]"
    if kind == "eps":
        return "(?:)"
    if kind == "cat":
        return "".join(f"(?:{_python(part, alphabet)})" for part in node[1])
    if kind == "alt":
        return "|".join(dict.fromkeys(f"(?:{_python(part, alphabet)})" for part in node[1]))
    if kind == "opt":
        return _python(node[1], alphabet) if _nullable(node[1]) else \
            f"(?:{_python(node[1], alphabet)})?"
    body = _without_empty(node[1])
    return "(?:)" if body is None else f"(?:{_python(body, alphabet)})*"


def _nullable(node: Node) -> bool:
    """Whether the node matches the empty word."""
    kind = node[0]
    if kind in ("eps", "star", "opt"):
        return True
    if kind == "cat":
        return all(map(_nullable, node[1]))
    return kind == "alt" and any(map(_nullable, node[1]))


def _without_empty(node: Node) -> Node | None:
    """A node E° with (E°)* = E*, with no star or ? on top (None: E* is ε)."""
    kind = node[0]
    if kind in ("star", "opt"):
        return _without_empty(node[1])
    if kind == "eps":
        return None
    if kind == "alt" or (kind == "cat" and all(map(_nullable, node[1]))):
        parts: dict[Node, None] = {}  # flattened, each once, single symbols in one class
        for part in map(_without_empty, node[1]):
            for inner in () if part is None else part[1] if part[0] == "alt" else (part,):
                parts[inner] = None
        symbols = frozenset().union(*(p[1] for p in parts if p[0] == "set"))
        merged = [p for p in parts if p[0] != "set"] + ([("set", symbols)] if symbols else [])
        return None if not merged else merged[0] if len(merged) == 1 else ("alt", tuple(merged))
    return node


def _shown(text: str) -> str:
    """The expression for a message, shortened when long."""
    return repr(text) if len(text) <= 60 else f"{text[:50]!r}… ({len(text):,} characters)"
