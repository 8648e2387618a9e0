"""The compilers' IR (satsim/rasp/ir.py) against truth tables: simplified formulas mean what
their unsimplified trees mean, the ReLU neurons of satsim/rasp/logic.py compute them exactly,
and ``program_text`` prints B-RASP that the interpreter reads with the same meaning."""

from __future__ import annotations

import itertools

from hypothesis import given, settings
from hypothesis import strategies as st

from satsim.circuits.parts import ONE
from satsim.rasp.brasp import accepts
from satsim.rasp.ir import (
    Conjunction,
    Const,
    Defined,
    Disjunction,
    Negation,
    Token,
    Var,
    program_text,
    restrict,
    substitute,
    var,
)
from satsim.rasp.logic import cube_neuron, cubes, gate_neurons
from satsim.rasp.parse import parse_program

DIMS = ("x", "y", "z")


def trees(leaves) -> st.SearchStrategy:
    """Formula trees built with the raw constructors (nothing simplified)."""
    def branch(kids):
        args = st.lists(kids, min_size=2, max_size=3).map(tuple)
        return st.one_of(kids.map(Negation), args.map(Conjunction), args.map(Disjunction))
    return st.recursive(st.sampled_from([Const(True), Const(False), *leaves]), branch,
                        max_leaves=10)


def truth(f, value) -> bool:
    """The value of a raw tree, ``value`` giving each variable's."""
    if isinstance(f, Const):
        return f.value
    if isinstance(f, Var):
        return value(f.variable)
    if isinstance(f, Negation):
        return not truth(f.arg, value)
    parts = [truth(g, value) for g in f.args]
    return all(parts) if isinstance(f, Conjunction) else any(parts)


def assignments():
    for bits in itertools.product((False, True), repeat=len(DIMS)):
        yield dict(zip(DIMS, bits))


def relu_sum(neurons, values: dict[str, bool]) -> float:
    """What the neurons write into ``out``, each relu(reads·x) times its weight."""
    x = {ONE: 1.0, **{d: float(b) for d, b in values.items()}}
    return sum(max(0.0, sum(w * x[d] for d, w in n.reads.items())) * n.writes["out"]
               for n in neurons)


@settings(max_examples=200, deadline=None)
@given(f=trees([Var(d) for d in DIMS]), fixed=st.sampled_from(DIMS), to=st.booleans())
def test_simplified_and_restricted_formulas_mean_what_the_trees_mean(f, fixed, to):
    simplified = substitute(f, var)  # rebuilt through negate, conjoin and disjoin
    restricted = restrict(f, fixed, to)
    for values in assignments():
        assert truth(simplified, values.__getitem__) == truth(f, values.__getitem__)
        assert truth(restricted, values.__getitem__) == truth(f, {**values, fixed: to}.__getitem__)


@settings(max_examples=200, deadline=None)
@given(f=trees([Var(d) for d in DIMS]))
def test_the_cube_cover_is_disjoint_and_its_neurons_compute_the_formula(f):
    found = cubes(substitute(f, var))
    neurons = [cube_neuron(cube, "out") for cube in found]
    for values in assignments():
        holding = [c for c in found if all(values[d] == b for d, b in c.items())]
        assert len(holding) == truth(f, values.__getitem__)  # one cube where true, none else
        assert relu_sum(neurons, values) == float(truth(f, values.__getitem__))


def test_gate_neurons_compute_not_and_or_of_bits():
    gates = {Negation: lambda bits: not bits[0], Conjunction: all, Disjunction: any}
    for gate, meaning in gates.items():
        for dims in ([DIMS[0]], list(DIMS[:2]), list(DIMS)):
            neurons = gate_neurons(gate, dims, "out")
            for values in assignments():
                assert relu_sum(neurons, values) == float(meaning([values[d] for d in dims]))


@settings(max_examples=100, deadline=None)
@given(f=trees([Var(Token("a")), Var(Token("b")), Var(Defined("x"))]))
def test_program_text_is_b_rasp_with_the_formulas_meaning(f):
    text = f'alphabet = "ab"\nx = not Q("a")\naccept = {program_text(substitute(f, var))}\n'
    program = parse_program(text, "brasp")
    for n in range(4):
        for string in map("".join, itertools.product("ab", repeat=n)):
            last = string[-1] if string else None  # accept is read at the last position

            def value(v, last=last):
                return last == v.symbol if isinstance(v, Token) else last != "a"
            assert accepts(program, string) == truth(f, value), (text, string)

