"""Compile a C-RASP program into a saturated transformer, exact at every length up to a bound.

The bound is float64's, stated in the model as :attr:`ModelSpec.max_tokens`.

The model reads BOS·w; position i (BOS is 0) stands for the prefix w₁…wᵢ, and BOS for the empty
prefix. Every count C is carried *scaled*, as C/(i + 1):

- ``count(P)``: a uniform causal head (zero query, so every key ties) averages the bit
  P ∧ ¬BOS over positions 0..i and writes count(P)/(i + 1); averaging the BOS bit gives
  u = 1/(i + 1), the scaled constant 1. Heads meeting in one block share one head.
- ``C1 + C2``, ``k * C`` and integer constants are linear forms over those dimensions;
  ``where(P, C1, C2)`` is four ReLUs, relu(±C − K(1 − P)) for C1 and relu(±C − K·P) for C2,
  with K above every |C|/(i + 1) (a compile-time bound: |C| ≤ a·i + b).
- A comparison of counts is the sign of an integer L = C1 − C2 (``L >= 0`` is L + ½ > 0, ``L > 0``
  is L − ½ > 0, ``==`` both of L + ½ > 0 and −L + ½ > 0); y = (L ± ½)/(i + 1) is never 0 and is at
  least 1/(2(i + 1)) away from it. A *sign head* turns it into an exact bit: its query is y,
  its keys 2·BOS − 1, its value the BOS bit. If y > 0, BOS alone has the top score and the head
  writes 1; if y < 0, the other positions tie exactly (their keys are equal) and it writes 0.
- Boolean operations are one feed-forward each (:mod:`satsim.rasp.logic`, exact on bits); a
  formula of symbols alone is a column of the embedding.

The readout is 2·accept − 1 at the last position. BOS stands for the empty string, where the
program's value is a constant of the compiler, added as ±2·BOS.

Exactness: bits are exact; scaled counts carry rounding errors bounded from the coefficients,
and a sign is right while that error is below 1/(2(i + 1)). A constant's error shrinks with
1/(i + 1) as that margin does (u is rounded relatively), so the coefficients of counts lower
the bound, and a large constant only once |k|·2⁻⁵⁰ nears ¼. The tie test must also separate
BOS from the others: 2|y| > atol + rtol·|y| at the default float64 tolerances. The smaller of
the two bounds on i is the model's ``max_tokens``; longer inputs are refused, never answered.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from satsim.circuits.parts import ONE, Head, Neuron
from satsim.circuits.schedule import BOS_DIM
from satsim.errors import SatsimError
from satsim.model.settings import default_tolerance
from satsim.rasp import crasp
from satsim.rasp.bits import BOS_ATOM, ProgramCompiler
from satsim.rasp.ir import TRUE, Formula, Scaled, conjoin, negate, var
from satsim.rasp.syntax import (
    Add,
    Compare,
    CountOf,
    Definition,
    Integer,
    Name,
    Node,
    Program,
    Scale,
    Where,
)

UNIT = 2.0**-53
"""The unit roundoff of float64."""


def gamma(n: int) -> float:
    """The relative error bound of an n-term float64 sum (Higham's γ_n)."""
    return n * UNIT / (1 - n * UNIT)


@dataclass(frozen=True)
class Quality:
    """A dimension's bound on |value| and on its rounding error (of a :class:`Scaled` term)."""

    bound: float
    error: float


class CraspCompiler(ProgramCompiler):
    """The formulas stage of a C-RASP program: counts as scaled forms, comparisons as bits."""

    description = "compiled from a C-RASP program"

    def __init__(self, program: Program) -> None:
        super().__init__(program)
        self.quality: dict[str, Quality] = {}
        self.counts: dict[str, Scaled] = {}
        self.count_dims: dict[Formula, str] = {}
        self.sign_dims: dict[tuple, str] = {}
        self.sign_errors: list[tuple[float, float]] = []  # (fixed, per token): see :meth:`sign`
        self.unit_dim: str | None = None

    # ---- Boolean vectors --------------------------------------------------------------

    def language_boolean(self, node: Node) -> Formula:
        """A comparison of counts, through its sign heads."""
        if isinstance(node, Compare):
            return self.comparison(node)
        raise TypeError(f"not a Boolean C-RASP node: {node!r}")

    # ---- counts -----------------------------------------------------------------------

    def unit(self) -> str:
        """The dimension u = 1/(i + 1): the mean of the BOS bit over positions 0..i."""
        if self.unit_dim is None:
            context, self.circuit.context = self.circuit.context, ""  # shared by every count
            copies = self.circuit.attention(Head({}, {}, {BOS_DIM: self.circuit.fresh("unit")}))
            self.circuit.context = context
            self.unit_dim = copies[BOS_DIM]
            self.quality[self.unit_dim] = Quality(1.0, 2 * UNIT)  # relative too: see sign_error
        return self.unit_dim

    def scaled(self, node: Node) -> Scaled:
        """A count vector as a linear form over scaled dimensions."""
        if isinstance(node, Integer):
            return Scaled(((self.unit(), node.value),)) if node.value else Scaled(())
        if isinstance(node, Name):
            return self.counts[node.name]
        if isinstance(node, CountOf):
            return Scaled(((self.count_dim(self.boolean(node.arg)), 1),))
        if isinstance(node, Add):
            return _combine(self.scaled(node.left), self.scaled(node.right))
        if isinstance(node, Scale):
            return _combine(self.scaled(node.arg), factor=node.factor)
        if isinstance(node, Where):
            return self.where(node)
        raise TypeError(f"not a count C-RASP node: {node!r}")

    def count_dim(self, holds: Formula) -> str:
        """count(P)/(i + 1): the causal mean of the bit P ∧ ¬BOS."""
        counted = conjoin(holds, negate(BOS_ATOM))
        if counted not in self.count_dims:
            source = self.bits.bit(counted, "counted")
            self.unit()  # the counting head also writes u
            name = self.circuit.attention(Head({}, {}, {source: self.circuit.fresh("count")}))[
                source]
            self.quality[name] = Quality(1.0, 2 * UNIT)
            self.count_dims[counted] = name
        return self.count_dims[counted]

    def form_quality(self, form: Scaled) -> Quality:
        """Bounds of a linear form computed as one float64 dot product."""
        size = sum(abs(c) * self.quality[d].bound for d, c in form.terms)
        carried = sum(abs(c) * self.quality[d].error for d, c in form.terms)
        return Quality(size, carried + gamma(len(form.terms) + 1) * size)

    def where(self, node: Where) -> Scaled:
        """The count ``where(P, C1, C2)``: four ReLUs written into one new dimension."""
        condition = self.bits.bit(self.boolean(node.condition), "condition")
        then, otherwise = self.scaled(node.then), self.scaled(node.otherwise)
        q1, q2 = self.form_quality(then), self.form_quality(otherwise)
        big = math.floor(max(q1.bound, q2.bound)) + 1.0  # K > every |C|/(i + 1)
        name = self.circuit.fresh("where")
        neurons = []
        for form, gate in ((then, -1.0), (otherwise, 1.0)):  # gate: C1 needs P, C2 needs ¬P
            for sign in (1.0, -1.0):
                reads = {d: sign * c for d, c in form.terms}
                if gate < 0:  # relu(±C1 − K + K·P)
                    reads[condition] = reads.get(condition, 0.0) + big
                    reads[ONE] = reads.get(ONE, 0.0) - big
                else:  # relu(±C2 − K·P)
                    reads[condition] = reads.get(condition, 0.0) - big
                neurons.append(Neuron(reads, {name: sign}))
        self.circuit.feed_forward(neurons, [name])
        terms = max(len(then.terms), len(otherwise.terms)) + 3
        error = q1.error + q2.error + 2 * gamma(terms + 4) * (q1.bound + q2.bound + 4 * big)
        self.quality[name] = Quality(max(q1.bound, q2.bound), error)
        return Scaled(((name, 1),))

    # ---- comparisons ------------------------------------------------------------------

    def comparison(self, node: Compare) -> Formula:
        """A comparison of counts as a formula over sign bits [(±L ± ½)/(i + 1) > 0]."""
        difference = _combine(self.scaled(node.left), self.scaled(node.right), factor2=-1)

        def at_least() -> Formula:  # L >= 0
            return self.sign(difference, 0.5)

        def at_most() -> Formula:  # L <= 0
            return self.sign(_combine(difference, factor=-1), 0.5)

        formulas = {">=": at_least, "<=": at_most, ">": lambda: negate(at_most()),
                    "<": lambda: negate(at_least()),
                    "==": lambda: conjoin(at_least(), at_most()),
                    "!=": lambda: negate(conjoin(at_least(), at_most()))}
        return formulas[node.op]()

    def sign(self, form: Scaled, half: float) -> Formula:
        """The bit [(L + half)/(i + 1) > 0] from a sign head; L is ``form``, an integer."""
        terms = dict(form.terms)
        terms[self.unit()] = terms.get(self.unit(), 0) + half
        key = tuple(sorted((d, c) for d, c in terms.items() if c))
        if not key:  # never reached: half ≠ 0
            return TRUE
        if key not in self.sign_dims:
            query = {d: float(c) for d, c in key}
            head = Head(query, {BOS_DIM: 2.0, ONE: -1.0}, {BOS_DIM: self.circuit.fresh("sign")})
            name = self.circuit.attention(head)[BOS_DIM]
            self.sign_errors.append(self.sign_error(key))
            self.quality[name] = Quality(1.0, 0.0)
            self.sign_dims[key] = name
        return var(self.sign_dims[key])

    def sign_error(self, key: tuple[tuple[str, float], ...]) -> tuple[float, float]:
        """The rounding error of y = Σ c·x over ``key``: (fixed, per token), fixed + per/T.

        The constant's term k·u is apart: u = 1/T is the mean of one nonzero bit, rounded
        relatively (its Quality's error is relative), so k·u errs by |k|·err(u)/T, and its
        part of the dot product's rounding, γ·|k|/T, also shrinks with 1/T, as the margin does.
        Every other term keeps its absolute bound (:meth:`form_quality`).
        """
        unit = self.unit()
        offset = abs(dict(key).get(unit, 0))
        rest = self.form_quality(Scaled(tuple((d, c) for d, c in key if d != unit)))
        rounding = gamma(len(key) + 1)
        return (rest.error + rounding * rest.bound,
                offset * (self.quality[unit].error + rounding))

    # ---- the program ------------------------------------------------------------------

    def define(self, definition: Definition) -> None:
        """One definition's formula or scaled count (the formulas stage)."""
        if definition.kind == "bool":
            super().define(definition)
        else:
            self.circuit.context = definition.name
            self.counts[definition.name] = self.scaled(definition.expr)

    def accepts_empty(self) -> bool:
        """Whether the program accepts the empty string (its interpreter's answer)."""
        return crasp.accepts(self.program, "")

    def max_tokens(self) -> int:
        """The longest input (tokens, BOS included) on which every sign is right."""
        atol, rtol = default_tolerance(float)
        # With T tokens, |y| ≥ 1/(2T) exactly; rounding moves it by at most fixed + per/T,
        # kept below half of that (T·fixed ≤ 1/4 − per), so the computed |y| ≥ 1/(4T), and the
        # tie test needs 2|y| > atol + rtol·|y|.
        limit = math.ceil((2 - rtol) / (4 * atol)) - 1
        for fixed, per_token in self.sign_errors:
            if per_token >= 0.25:
                limit = 0
            elif fixed > 0:
                limit = min(limit, math.floor((0.25 - per_token) / fixed))
        if limit < 2:
            raise SatsimError("the program's counts are too large to compile exactly: its "
                              "comparisons lose their sign in float64")
        return min(limit, 2**53)


def _combine(first: Scaled, second: Scaled | None = None, factor: int = 1,
             factor2: int = 1) -> Scaled:
    """factor·first + factor2·second, as one linear form (zero terms dropped)."""
    terms: dict[str, int] = {}
    for form, k in ((first, factor), (second, factor2)):
        for d, c in (form.terms if form is not None else ()):
            terms[d] = terms.get(d, 0) + k * c
    return Scaled(tuple((d, c) for d, c in terms.items() if c))
