"""The compilers' intermediate representation: typed Boolean formulas and scaled counts.

A :data:`Formula` is a frozen tree of :class:`Const`, :class:`Var`, :class:`Negation`,
:class:`Conjunction` and :class:`Disjunction`. A variable (:data:`Variable`) has one of three
types, so that none is ever taken for another, whatever a program names its definitions:

- a residual dimension, a ``str``: the name of an exact 0/1 bit of the circuit;
- a :class:`Token`: true where the input token is a given symbol (or BOS);
- a :class:`Read`: a Boolean vector read at the query (``i``) or the key (``j``) inside a
  B-RASP attention;
- a :class:`Defined`: a named definition of a program, printed as B-RASP by
  :func:`program_text` (:mod:`satsim.rasp.extract` still writes its programs as text).

Formulas are built with :func:`negate`, :func:`conjoin` and :func:`disjoin`, which simplify
(constants absorb or drop out, nested conjunctions and disjunctions flatten), so that equal
vectors built the same way are equal formulas: a formula is the key of the dimension that holds
it. A C-RASP count is carried as :class:`Scaled`, a linear form over dimensions.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Token:
    """True where the token is ``symbol`` (None: BOS); a variable, never a dimension."""

    symbol: str | None


@dataclass(frozen=True, slots=True)
class Read:
    """A Boolean vector (its formula) read at ``index`` "i" (the query) or "j" (the key)."""

    index: str
    vector: Formula


@dataclass(frozen=True, slots=True)
class Defined:
    """A definition of a program, by name: what a program written from a model reads."""

    name: str


Variable = str | Token | Read | Defined
"""What a formula reads: a residual dimension (a ``str``), a :class:`Token`, a :class:`Read` or
a :class:`Defined` vector."""


@dataclass(frozen=True, slots=True)
class Const:
    """True or False everywhere."""

    value: bool


@dataclass(frozen=True, slots=True)
class Var:
    """The value of one variable."""

    variable: Variable


@dataclass(frozen=True, slots=True)
class Negation:
    """``not arg``."""

    arg: Formula


@dataclass(frozen=True, slots=True)
class Conjunction:
    """``args[0] and args[1] and ...`` (at least two, none a conjunction or a constant)."""

    args: tuple[Formula, ...]


@dataclass(frozen=True, slots=True)
class Disjunction:
    """``args[0] or args[1] or ...`` (at least two, none a disjunction or a constant)."""

    args: tuple[Formula, ...]


Formula = Const | Var | Negation | Conjunction | Disjunction
TRUE: Formula = Const(True)
FALSE: Formula = Const(False)


@dataclass(frozen=True, slots=True)
class Scaled:
    """A C-RASP count C carried as C/(i + 1): a linear form over residual dimensions."""

    terms: tuple[tuple[str, int | float], ...]  # (dimension, coefficient; ½ for a sign's offset)


def var(variable: Variable) -> Formula:
    """The formula that reads one variable."""
    return Var(variable)


def constant(value: bool) -> Formula:
    """The constant formula ``value``."""
    return TRUE if value else FALSE


def negate(f: Formula) -> Formula:
    """The negation of f, simplified."""
    if isinstance(f, Const):
        return constant(not f.value)
    if isinstance(f, Negation):
        return f.arg
    return Negation(f)


def conjoin(*fs: Formula) -> Formula:
    """The conjunction of the formulas, simplified (constants dropped or absorbing)."""
    return _join(Conjunction, fs, unit=TRUE, zero=FALSE)


def disjoin(*fs: Formula) -> Formula:
    """The disjunction of the formulas, simplified."""
    return _join(Disjunction, fs, unit=FALSE, zero=TRUE)


def _join(kind: type[Conjunction | Disjunction], fs: tuple[Formula, ...], unit: Formula,
          zero: Formula) -> Formula:
    """``kind`` of the formulas: ``unit`` drops out, ``zero`` absorbs, ``kind`` flattens."""
    parts: list[Formula] = []
    for f in fs:
        if isinstance(f, Const):
            if f == zero:
                return zero
            continue
        parts.extend(f.args if isinstance(f, kind) else (f,))
    return unit if not parts else parts[0] if len(parts) == 1 else kind(tuple(parts))


def operands(f: Formula) -> tuple[Formula, ...]:
    """The formulas directly below ``f``."""
    if isinstance(f, Negation):
        return (f.arg,)
    if isinstance(f, (Conjunction, Disjunction)):
        return f.args
    return ()


def variables(f: Formula) -> set[Variable]:
    """The variables a formula reads."""
    if isinstance(f, Var):
        return {f.variable}
    return set().union(*(variables(g) for g in operands(f)))


def substitute(f: Formula, value: Callable[[Variable], Formula]) -> Formula:
    """The formula with each variable v replaced by ``value(v)``, simplified."""
    if isinstance(f, Var):
        return value(f.variable)
    if isinstance(f, Const):
        return f
    if isinstance(f, Negation):
        return negate(substitute(f.arg, value))
    parts = [substitute(g, value) for g in f.args]
    return conjoin(*parts) if isinstance(f, Conjunction) else disjoin(*parts)


def restrict(f: Formula, variable: Variable, value: bool) -> Formula:
    """The formula with ``variable`` fixed to ``value``."""
    return substitute(f, lambda v: constant(value) if v == variable else Var(v))


def depth(f: Formula) -> int:
    """How deep the formula nests (a variable or a constant: 1), walked without recursion."""
    deepest, todo = 0, [(f, 1)]
    while todo:
        g, level = todo.pop()
        deepest = max(deepest, level)
        todo.extend((h, level + 1) for h in operands(g))
    return deepest


def sort_key(f: Formula) -> tuple:
    """A total order on formulas (by kind, then content; dimensions before tokens before reads)."""
    if isinstance(f, Const):
        return ("const", f.value)
    if isinstance(f, Var):
        return ("var", _variable_key(f.variable))
    kind = {Negation: "not", Conjunction: "and", Disjunction: "or"}[type(f)]
    return (kind, tuple(sort_key(g) for g in operands(f)))


def _variable_key(v: Variable) -> tuple:
    if isinstance(v, str):
        return (0, v)
    if isinstance(v, Token):
        return (1, v.symbol is None, v.symbol or "")
    if isinstance(v, Read):
        return (2, v.index, sort_key(v.vector))
    return (3, v.name)


def program_text(f: Formula) -> str:
    """The formula as a B-RASP expression (each conjunction and disjunction in parentheses)."""
    if isinstance(f, Const):
        return str(f.value)
    if isinstance(f, Var):
        return _variable_text(f.variable)
    if isinstance(f, Negation):
        return f"not {program_text(f.arg)}"
    word = " and " if isinstance(f, Conjunction) else " or "
    return "(" + word.join(program_text(g) for g in f.args) + ")"


def _variable_text(v: Variable) -> str:
    if isinstance(v, Defined):
        return v.name
    if isinstance(v, Read):
        return f"{program_text(v.vector)}[{v.index}]"
    if isinstance(v, Token) and v.symbol is not None:
        return f'Q("{v.symbol}")'
    raise TypeError(f"{v!r} is not part of B-RASP")
