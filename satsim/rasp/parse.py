"""Read C-RASP and B-RASP programs: Python-syntax lines ``name = expression``, type-checked.

Every problem is one :class:`ProgramError` line ``SOURCE:LINE:COLUMN: what is wrong``: a syntax
error, an unknown name, a count used as a Boolean, a symbol outside the alphabet, an operation
the program's language does not have.
"""

from __future__ import annotations

import ast
from pathlib import Path

from satsim.errors import SatsimError
from satsim.rasp.syntax import (
    BOOL,
    COMPARISONS,
    COUNT,
    LANGUAGE_NAMES,
    LANGUAGES,
    RESERVED,
    Add,
    And,
    At,
    Attend,
    Compare,
    Constant,
    CountOf,
    Definition,
    Integer,
    Name,
    Node,
    Not,
    Or,
    Program,
    Scale,
    Symbol,
    Where,
)

MAX_NESTING = 100
"""The deepest a definition's expression may nest (its syntax tree's depth), so that reading,
compiling and interpreting it stay within Python's recursion limit; deeper parts get names."""
MAX_CONSTANT = 10**9
"""The largest integer constant a C-RASP program may write (counts stay exact in float64)."""
_OPERATORS = {ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">=", ast.Eq: "==",
              ast.NotEq: "!="}


class ProgramError(SatsimError):
    """A program that does not parse or type-check: ``SOURCE:LINE:COLUMN: message``."""


def read_program(path: str | Path) -> Program:
    """Read a program file; its suffix (``.crasp`` or ``.brasp``) says its language."""
    path = Path(path)
    language = path.suffix.removeprefix(".")
    if language not in LANGUAGES:
        raise SatsimError(f"{path}: a program file ends in .crasp or .brasp, not "
                          f"{path.suffix or 'nothing'!r}")
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise SatsimError(f"no such program file: {path}") from None
    except UnicodeDecodeError as error:
        raise SatsimError(f"{path} is not UTF-8 text ({error.reason})") from None
    return parse_program(text, language, str(path))


def parse_program(text: str, language: str, source: str = "<program>") -> Program:
    """Parse and type-check ``text`` as a program in ``language`` ("crasp" or "brasp")."""
    if language not in LANGUAGES:
        raise SatsimError(f"unknown program language {language!r}; known: {', '.join(LANGUAGES)}")
    return _Reader(text, language, source).program()


class _Reader:
    """One pass over the statements, with the types of the names defined so far."""

    def __init__(self, text: str, language: str, source: str) -> None:
        self.text, self.language, self.source = text, language, source
        self.lines = text.splitlines()
        self.kinds: dict[str, str] = {}
        self.alphabet: tuple[str, ...] = ()

    # ---- errors -----------------------------------------------------------------------

    def where(self, node: ast.AST) -> tuple[int, int]:
        """(line, column), 1-based, counting characters (ast counts UTF-8 bytes)."""
        line = getattr(node, "lineno", 1)
        offset = getattr(node, "col_offset", 0)
        text = self.lines[line - 1] if 0 < line <= len(self.lines) else ""
        return line, len(text.encode("utf-8")[:offset].decode("utf-8", "replace")) + 1

    def error(self, node: ast.AST | tuple[int, int], message: str) -> ProgramError:
        line, column = node if isinstance(node, tuple) else self.where(node)
        return ProgramError(f"{self.source}:{line}:{column}: {message}")

    # ---- statements -------------------------------------------------------------------

    def program(self) -> Program:
        try:
            module = ast.parse(self.text, filename=self.source)
        except SyntaxError as error:
            line, column = error.lineno or 1, error.offset or 1
            limit = f" (a definition nests at most {MAX_NESTING} levels)" if "nested" in \
                error.msg else ""
            raise self.error((line, column), f"syntax error: {error.msg}{limit}") from None
        except (RecursionError, MemoryError):  # how Python's parser says "nested too deeply"
            raise self.error((1, 1), f"the program nests too deeply for Python's parser "
                             f"(a definition nests at most {MAX_NESTING} levels)") from None
        statements = module.body
        for statement in statements:
            self.check_nesting(statement)
        if not statements:
            raise self.error((1, 1), 'a program starts with alphabet = "..."')
        self.alphabet = self.read_alphabet(statements[0])
        definitions = []
        for statement in statements[1:]:
            name, value = self.assignment(statement)
            if name in self.kinds:
                raise self.error(statement.targets[0], f"{name!r} is defined twice")
            expr, kind = self.expression(value)
            self.kinds[name] = kind
            definitions.append(Definition(name, expr, kind, statement.lineno))
        if "accept" not in self.kinds:
            raise self.error((len(self.lines) or 1, 1), "the program defines no 'accept' "
                             "(it accepts iff accept is true at the last position)")
        if self.kinds["accept"] != BOOL:
            accept = next(s for s in statements[1:] if self.assignment(s)[0] == "accept")
            raise self.error(accept.value, "accept must be a Boolean vector, not a count")
        return Program(self.language, self.alphabet, tuple(definitions), self.text)

    def check_nesting(self, statement: ast.stmt) -> None:
        """Refuse an expression nested past :data:`MAX_NESTING` (walked without recursion)."""
        todo = [(child, 1) for child in ast.iter_child_nodes(statement)]
        while todo:
            node, depth = todo.pop()
            if isinstance(node, ast.expr) and depth > MAX_NESTING:
                raise self.error(node, f"this expression nests more than {MAX_NESTING} levels "
                                 "deep; define its inner parts as names of their own (x = ...)")
            deeper = depth + isinstance(node, ast.expr)
            todo.extend((child, deeper) for child in ast.iter_child_nodes(node))

    def assignment(self, statement: ast.stmt) -> tuple[str, ast.expr]:
        if not (isinstance(statement, ast.Assign) and len(statement.targets) == 1
                and isinstance(statement.targets[0], ast.Name)):
            raise self.error(statement, "each line is one definition: name = expression")
        name = statement.targets[0].id
        if name in RESERVED:
            raise self.error(statement.targets[0], f"{name!r} is reserved; choose another name")
        return name, statement.value

    def read_alphabet(self, statement: ast.stmt) -> tuple[str, ...]:
        if not (isinstance(statement, ast.Assign) and len(statement.targets) == 1
                and isinstance(statement.targets[0], ast.Name)
                and statement.targets[0].id == "alphabet"):
            raise self.error(statement, 'the first definition is alphabet = "..."')
        value = statement.value
        if not (isinstance(value, ast.Constant) and isinstance(value.value, str)):
            raise self.error(value, 'the alphabet is a string of symbols, like "ab"')
        symbols = tuple(value.value)
        if not symbols:
            raise self.error(value, "the alphabet is empty")
        if len(set(symbols)) != len(symbols):
            raise self.error(value, f"the alphabet {value.value!r} repeats a symbol")
        if any(not s.isprintable() or s.isspace() for s in symbols):
            raise self.error(value, "alphabet symbols are visible characters (no spaces)")
        return symbols

    # ---- expressions ------------------------------------------------------------------

    def expression(self, node: ast.expr) -> tuple[Node, str]:
        """The typed tree of a vector expression and its type (BOOL or COUNT)."""
        at = self.where(node)
        if isinstance(node, ast.Constant):
            if isinstance(node.value, bool):
                return Constant(node.value, at=at), BOOL
            if isinstance(node.value, int):
                if self.language != "crasp":
                    raise self.error(node, "B-RASP has Boolean vectors only (integers are "
                                     "C-RASP counts)")
                return Integer(self.constant(node, node.value), at=at), COUNT
            raise self.error(node, f"unexpected constant {node.value!r}")
        if isinstance(node, ast.Name):
            if node.id in ("i", "j"):
                raise self.error(node, f"{node.id!r} is a position: it appears only inside "
                                 "attention, as P[i], P[j] or in the mask")
            if node.id not in self.kinds:
                raise self.error(node, f"unknown name {node.id!r}" + (
                    " (define it before this line)" if node.id in self.later_names() else ""))
            return Name(node.id, self.kinds[node.id], at=at), self.kinds[node.id]
        if isinstance(node, ast.UnaryOp):
            return self.unary(node)
        if isinstance(node, ast.BoolOp):
            args = tuple(self.boolean(value) for value in node.values)
            return (And if isinstance(node.op, ast.And) else Or)(args, at=at), BOOL
        if isinstance(node, ast.Compare):
            return self.comparison(node), BOOL
        if isinstance(node, ast.BinOp):
            return self.arithmetic(node), COUNT
        if isinstance(node, ast.Call):
            return self.call(node)
        if isinstance(node, ast.Subscript):
            raise self.error(node, "P[i] and P[j] appear only inside leftmost/rightmost")
        raise self.error(node, f"{_describe(node)} is not part of {LANGUAGE_NAMES[self.language]}")

    def later_names(self) -> set[str]:
        module = ast.parse(self.text)
        return {s.targets[0].id for s in module.body
                if isinstance(s, ast.Assign) and isinstance(s.targets[0], ast.Name)}

    def constant(self, node: ast.AST, value: int) -> int:
        if abs(value) > MAX_CONSTANT:
            raise self.error(node, f"integer constants are limited to ±{MAX_CONSTANT:,}")
        return value

    def boolean(self, node: ast.expr) -> Node:
        expr, kind = self.expression(node)
        if kind != BOOL:
            raise self.error(node, "a count is used where a Boolean is needed (compare it: "
                             "C > 0)")
        return expr

    def count(self, node: ast.expr) -> Node:
        if self.language != "crasp":
            raise self.error(node, "B-RASP has no counts (use a .crasp program)")
        expr, kind = self.expression(node)
        if kind != COUNT:
            raise self.error(node, "a Boolean is used where a count is needed (count(P) "
                             "counts it)")
        return expr

    def unary(self, node: ast.UnaryOp) -> tuple[Node, str]:
        at = self.where(node)
        if isinstance(node.op, ast.Not):
            return Not(self.boolean(node.operand), at=at), BOOL
        if isinstance(node.op, ast.USub):
            if isinstance(node.operand, ast.Constant) and type(node.operand.value) is int:
                if self.language != "crasp":
                    raise self.error(node, "B-RASP has Boolean vectors only")
                return Integer(self.constant(node, -node.operand.value), at=at), COUNT
            return Scale(-1, self.count(node.operand), at=at), COUNT
        if isinstance(node.op, ast.UAdd):
            return self.count(node.operand), COUNT
        raise self.error(node, "use 'not' for negation (~ is not part of the language)")

    def comparison(self, node: ast.Compare) -> Node:
        if self.language != "crasp":
            raise self.error(node, "comparisons of counts are C-RASP (B-RASP compares "
                             "positions only in an attention mask)")
        operands = [node.left, *node.comparators]
        terms = [self.count(operand) for operand in operands]
        parts = []
        for index, op in enumerate(node.ops):
            if type(op) not in _OPERATORS:
                raise self.error(node, f"comparisons are {' '.join(COMPARISONS)}")
            parts.append(Compare(_OPERATORS[type(op)], terms[index], terms[index + 1],
                                 at=self.where(operands[index])))
        return parts[0] if len(parts) == 1 else And(tuple(parts), at=self.where(node))

    def arithmetic(self, node: ast.BinOp) -> Node:
        at = self.where(node)
        if isinstance(node.op, (ast.BitAnd, ast.BitOr, ast.BitXor)):
            raise self.error(node, "use 'and' and 'or' (& | ^ are not part of the language)")
        if isinstance(node.op, (ast.Add, ast.Sub)):
            left, right = self.count(node.left), self.count(node.right)
            if isinstance(node.op, ast.Sub):
                right = Scale(-1, right, at=self.where(node.right))
            return Add(left, right, at=at)
        if isinstance(node.op, ast.Mult):
            factor = _integer(node.left)
            arg = node.right
            if factor is None:
                factor, arg = _integer(node.right), node.left
            if factor is None:
                raise self.error(node, "a count is multiplied only by an integer constant "
                                 "(k * C)")
            return Scale(self.constant(node, factor), self.count(arg), at=at)
        raise self.error(node, "counts have +, - and k * C (an integer constant k) only")

    def call(self, node: ast.Call) -> tuple[Node, str]:
        at = self.where(node)
        function = node.func.id if isinstance(node.func, ast.Name) else None
        if function == "Q":
            self.arguments(node, 1)
            return Symbol(self.symbol(node.args[0]), at=at), BOOL
        if function == "count":
            if self.language != "crasp":
                raise self.error(node, "count is C-RASP (use a .crasp program)")
            self.arguments(node, 1)
            return CountOf(self.boolean(node.args[0]), at=at), COUNT
        if function == "where":
            if self.language != "crasp":
                raise self.error(node, "where is C-RASP (use a .crasp program)")
            self.arguments(node, 3)
            condition = self.boolean(node.args[0])
            return Where(condition, self.count(node.args[1]), self.count(node.args[2]),
                         at=at), COUNT
        if function in ("leftmost", "rightmost"):
            if self.language != "brasp":
                raise self.error(node, f"{function} is B-RASP (use a .brasp program)")
            return self.attention(node, function), BOOL
        raise self.error(node, f"unknown function {function or _describe(node.func)!r}; "
                         "known: " + ("Q, count, where" if self.language == "crasp" else
                                      "Q, leftmost, rightmost"))

    def arguments(self, node: ast.Call, expected: int, keywords: tuple[str, ...] = ()) -> None:
        name = node.func.id
        for keyword in node.keywords:
            if keyword.arg not in keywords:
                raise self.error(keyword.value, f"{name} takes no keyword {keyword.arg!r}")
        if len(node.args) != expected:
            raise self.error(node, f"{name} takes {expected} argument"
                             f"{'s' if expected != 1 else ''}, got {len(node.args)}")

    def symbol(self, node: ast.expr) -> str:
        if not (isinstance(node, ast.Constant) and isinstance(node.value, str)):
            raise self.error(node, 'Q takes one symbol in quotes, like Q("a")')
        if node.value not in self.alphabet:
            raise self.error(node, f"symbol {node.value!r} is not in the alphabet "
                             f"{''.join(self.alphabet)!r}")
        return node.value

    # ---- B-RASP attention -------------------------------------------------------------

    def attention(self, node: ast.Call, side: str) -> Node:
        args = list(node.args)
        default = [k.value for k in node.keywords if k.arg == "default"]
        if len(args) == 4 and not default:
            default = [args.pop()]
        self.arguments(ast.copy_location(ast.Call(func=node.func, args=args,
                                                  keywords=node.keywords), node), 3, ("default",))
        if not default:
            raise self.error(node, f"{side} needs a default: {side}(MASK, SCORE, VALUE, "
                             "default=D)")
        return Attend(side, self.mask(args[0]), self.pair(args[1], "ij"),
                      self.pair(args[2], "ij"), self.pair(default[0], "i"),
                      at=self.where(node))

    def mask(self, node: ast.expr) -> str:
        if isinstance(node, ast.Constant) and node.value is True:
            return "all"
        if (isinstance(node, ast.Compare) and len(node.ops) == 1
                and isinstance(node.left, ast.Name) and isinstance(node.comparators[0], ast.Name)
                and {node.left.id, node.comparators[0].id} == {"i", "j"}
                and type(node.ops[0]) in (ast.Lt, ast.Gt)):
            j_first = node.left.id == "j"
            before = isinstance(node.ops[0], ast.Lt) == j_first  # j < i, or i > j
            return "past" if before else "future"
        raise self.error(node, "the mask is j < i, j > i or True")

    def pair(self, node: ast.expr, indices: str) -> Node:
        """A Boolean combination of P[i] (and P[j] when ``indices`` is "ij") and constants."""
        at = self.where(node)
        if isinstance(node, ast.Constant) and isinstance(node.value, bool):
            return Constant(node.value, at=at)
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            return Not(self.pair(node.operand, indices), at=at)
        if isinstance(node, ast.BoolOp):
            args = tuple(self.pair(value, indices) for value in node.values)
            return (And if isinstance(node.op, ast.And) else Or)(args, at=at)
        if isinstance(node, ast.Subscript):
            return self.position_read(node, indices)
        if indices == "i" and isinstance(node, (ast.Name, ast.Call)):  # the default reads at i
            return self.position_read(ast.Subscript(node, ast.Name("i"), lineno=node.lineno,
                                                    col_offset=node.col_offset), "i")
        if isinstance(node, ast.Name) and node.id in self.kinds:
            index = " or P[j]" if indices == "ij" else ""
            raise self.error(node, f"inside attention, read a vector at a position: "
                             f"{node.id}[i]{index.replace('P', node.id)}")
        if isinstance(node, ast.Name) and node.id not in ("i", "j"):
            raise self.error(node, f"unknown name {node.id!r}")
        what = "the default is a Boolean combination" if indices == "i" else \
            "scores and values are Boolean combinations"
        raise self.error(node, f"{what} of P[i]{', P[j]' if indices == 'ij' else ''} and "
                         "True/False")

    def position_read(self, node: ast.Subscript, indices: str) -> Node:
        index = node.slice
        if not (isinstance(index, ast.Name) and index.id in ("i", "j")):
            raise self.error(index, "a vector is read at i or at j, like P[j]")
        if index.id not in indices:
            raise self.error(index, "the default reads the query position only: P[i]")
        target = node.value
        if isinstance(target, ast.Call) and isinstance(target.func, ast.Name) and \
                target.func.id == "Q":
            self.arguments(target, 1)
            vector = Symbol(self.symbol(target.args[0]), at=self.where(target))
            return At(vector, index.id, at=self.where(node))
        if not isinstance(target, ast.Name):
            raise self.error(target, "only a named vector or Q(\"a\") is read at a position")
        if target.id not in self.kinds:
            raise self.error(target, f"unknown name {target.id!r}")
        return At(Name(target.id, BOOL, at=self.where(target)), index.id, at=self.where(node))


def _integer(node: ast.expr) -> int | None:
    """The value of an integer constant (possibly negated), else None."""
    if isinstance(node, ast.Constant) and type(node.value) is int:
        return node.value
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        inner = _integer(node.operand)
        return None if inner is None else -inner
    return None


def _describe(node: ast.AST) -> str:
    """A short name for a Python construct a program may not use."""
    names = {ast.Lambda: "a lambda", ast.IfExp: "an if-expression", ast.List: "a list",
             ast.Tuple: "a tuple", ast.Dict: "a dict", ast.Attribute: "an attribute",
             ast.BinOp: "this arithmetic", ast.JoinedStr: "an f-string"}
    return names.get(type(node), type(node).__name__)
