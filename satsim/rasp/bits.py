"""Boolean vectors of a compiled program: formulas over symbols and bits, and where each is written.

A formula is written into an embedding column or computed by one feed-forward.

Both compilers build Boolean vectors as formulas (:mod:`satsim.rasp.ir`) whose variables are
tokens (:class:`~satsim.rasp.ir.Token`: the symbol a, or BOS) and dimensions that hold exact
bits (what sign and attention heads write, and earlier feed-forwards). Dimensions are strings
and tokens are not, so no dimension, whatever the program names its definitions, is ever read
as a token. A formula of
symbols alone is a function of the token: a column of the embedding. Any other is a feed-forward
over bits, its symbol-only parts read from embedding columns. Formulas are inlined into the ones
that use them until they read more than :data:`INLINE_LIMIT` variables; then they get a
dimension of their own. A formula whose cover would take more than
:data:`satsim.rasp.logic.MAX_CUBES` neurons is computed from its parts, each written first (one
more layer).
"""

from __future__ import annotations

from abc import ABC, abstractmethod

from satsim.circuits.parts import ONE, Neuron
from satsim.circuits.schedule import BOS_DIM, Circuit
from satsim.rasp import syntax
from satsim.rasp.ir import (
    FALSE,
    TRUE,
    Conjunction,
    Formula,
    Negation,
    Token,
    Var,
    conjoin,
    constant,
    depth,
    disjoin,
    negate,
    operands,
    substitute,
    var,
    variables,
)
from satsim.rasp.logic import cube_neuron, cubes, gate_neurons
from satsim.rasp.syntax import Definition, Node, Program

BOS_ATOM = var(Token(None))
"""The formula true at BOS only."""
INLINE_LIMIT = 8
"""Variables a formula may read before it is written into a dimension of its own."""
DEPTH_LIMIT = 50
"""How deep a formula may nest before it is written into a dimension of its own (so that
definitions built on definitions never nest formulas past Python's recursion limit)."""


def symbol_atom(symbol: str) -> Formula:
    """The formula true where the symbol is ``symbol``."""
    return var(Token(symbol))


def of_token(formula: Formula, symbol: str | None) -> float:
    """A symbol-only formula's value at a token (None: BOS, where every symbol is false)."""
    def atom(token: Token) -> Formula:
        return TRUE if token.symbol == symbol else FALSE
    return 1.0 if substitute(formula, atom) == TRUE else 0.0


def symbols_only(formula: Formula) -> bool:
    """Whether the formula reads symbols alone (it is a function of the token)."""
    return all(isinstance(read, Token) for read in variables(formula))


class Bits:
    """Where each Boolean formula of a program is written in a circuit."""

    def __init__(self, circuit: Circuit) -> None:
        self.circuit = circuit
        self.dims: dict[Formula, str] = {}

    def bit(self, formula: Formula, hint: str = "bit") -> str:
        """A dimension that holds ``formula`` as an exact 0/1 bit at every position."""
        if isinstance(formula, Var) and isinstance(formula.variable, str):
            return formula.variable
        if formula == BOS_ATOM:
            return BOS_DIM
        if formula in self.dims:
            return self.dims[formula]
        if symbols_only(formula):
            name = self.circuit.token_dim(hint, lambda symbol: of_token(formula, symbol))
        else:
            found = cubes(self.with_columns(formula))
            name = self.circuit.fresh(hint)
            if found is None:  # too large for one layer: its parts first, then a gate of them
                parts = [self.bit(part, hint) for part in operands(formula)]
                neurons = gate_neurons(type(formula), parts, name)
            else:
                neurons = [cube_neuron(cube, name) for cube in found]
            self.circuit.feed_forward(neurons or [Neuron({ONE: 0.0}, {name: 0.0})], [name])
        self.dims[formula] = name
        return name

    def with_columns(self, formula: Formula) -> Formula:
        """The formula with each maximal symbol-only part read from an embedding column."""
        if symbols_only(formula):
            return var(self.bit(formula, "token_bit")) if variables(formula) else formula
        if isinstance(formula, Var):
            return formula
        if isinstance(formula, Negation):
            return negate(self.with_columns(formula.arg))
        parts = [self.with_columns(f) for f in formula.args]
        return conjoin(*parts) if isinstance(formula, Conjunction) else disjoin(*parts)

    def compact(self, formula: Formula, hint: str = "bit") -> Formula:
        """The formula, or a read of its own dimension once it reads many variables or is deep."""
        if depth(formula) <= DEPTH_LIMIT and (symbols_only(formula)
                                              or len(variables(formula)) <= INLINE_LIMIT):
            return formula
        return var(self.bit(formula, hint))

    def readout(self, accept: Formula, empty_accepts: bool) -> dict[str, float]:
        """The logit 2·accept − 1, and at BOS (the empty string) the sign ``empty_accepts``.

        At BOS the accept bit is some 0/1 value; adding ±2·BOS fixes the sign there.
        """
        form = {ONE: -1.0, BOS_DIM: 2.0 if empty_accepts else -2.0}
        if accept in (TRUE, FALSE):
            form[ONE] += 2.0 if accept == TRUE else 0.0
        else:
            name = self.bit(accept, "accept")
            form[name] = form.get(name, 0.0) + 2.0
        return form


class ProgramCompiler(ABC):
    """What both compilers share: the circuit, its bits, and the formulas of Boolean vectors.

    A language adds its own Boolean node, its length bound and its meaning on the empty string;
    :mod:`satsim.rasp.stages` runs the stages.
    """

    description = ""
    """What the compiled model says it is."""

    def __init__(self, program: Program) -> None:
        self.program = program
        self.circuit = Circuit(program.alphabet)
        self.bits = Bits(self.circuit)
        self.booleans: dict[str, Formula] = {}

    def define(self, definition: Definition) -> None:
        """One definition's formula (the formulas stage), its own dimension where it is large."""
        self.circuit.context = definition.name
        self.booleans[definition.name] = self.bits.compact(self.boolean(definition.expr),
                                                           definition.name)

    def readout(self, accept: Formula) -> dict[str, float]:
        """The logit 2·accept − 1 as a linear form, ``accept`` written as a bit if it is not one."""
        self.circuit.context = "accept"
        return self.bits.readout(accept, self.accepts_empty())

    @abstractmethod
    def accepts_empty(self) -> bool:
        """Whether the program accepts the empty string (its interpreter's answer)."""

    @abstractmethod
    def max_tokens(self) -> int:
        """The longest input (tokens, BOS included) on which the compiled model is exact."""

    def boolean(self, node: Node) -> Formula:
        """The formula of a Boolean vector over symbol atoms and exact bit dimensions."""
        if isinstance(node, syntax.Symbol):
            return symbol_atom(node.symbol)
        if isinstance(node, syntax.Constant):
            return constant(node.value)
        if isinstance(node, syntax.Name):
            return self.booleans[node.name]
        if isinstance(node, syntax.Not):
            return negate(self.boolean(node.arg))
        if isinstance(node, syntax.And):
            return conjoin(*(self.boolean(arg) for arg in node.args))
        if isinstance(node, syntax.Or):
            return disjoin(*(self.boolean(arg) for arg in node.args))
        return self.language_boolean(node)

    @abstractmethod
    def language_boolean(self, node: Node) -> Formula:
        """The formula of a Boolean node only one of the languages has."""
