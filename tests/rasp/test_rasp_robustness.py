"""C-RASP and B-RASP programs at the edges: nesting at and past the limit, and long chains of
definitions, each either compiled to its meaning or refused in one line."""

import itertools

import numpy as np
import pytest

from satsim import Simulator
from satsim.rasp import ProgramError, compile_program, interpreter, parse_program
from satsim.rasp.parse import MAX_NESTING


def decides_as_its_meaning(text: str, language: str) -> None:
    """The compiled model decides every string up to length 6 as the interpreter does."""
    program = parse_program(text, language)
    strings = ["".join(t) for k in range(7) for t in itertools.product(program.alphabet,
                                                                           repeat=k)]
    meaning = interpreter(program)
    want = [meaning(s) for s in strings]
    assert np.array_equal(Simulator(compile_program(program)).accepts(strings), want), text


NESTED = {  # a program nesting n levels of one construct
    "sum": ("crasp", lambda n: "accept = " + " + ".join(['count(Q("a"))'] * n) + " > 2"),
    "not": ("crasp", lambda n: "accept = " + "not " * n + 'Q("a")'),
    "minus": ("crasp", lambda n: "accept = " + "-" * n + 'count(Q("a")) < 1'),
    "where": ("crasp", lambda n: "accept = " + 'where(Q("a"), ' * n + 'count(Q("b"))'
              + ", 1)" * n + " > 1"),
    "and-or": ("crasp", lambda n: "accept = " + "".join(
        f'(Q("{"ab"[k % 2]}") {("and", "or")[k % 2]} ' for k in range(n)) + "True" + ")" * n),
    "attention": ("brasp", lambda n: "accept = rightmost(j < i, " + "not " * n
                  + 'Q("a")[j], Q("b")[i] and Q("a")[j], default=Q("b"))'),
}


@pytest.mark.parametrize("construct", sorted(NESTED))
def test_nesting_up_to_the_limit_compiles_to_its_meaning_and_past_it_is_one_line(construct):
    language, body = NESTED[construct]
    program = lambda n: f'alphabet = "ab"\n{body(n)}\n'  # noqa: E731
    deepest = None
    for n in range(MAX_NESTING // 4, MAX_NESTING + 1):
        try:
            parse_program(program(n), language)
        except ProgramError as error:
            assert f"more than {MAX_NESTING} levels" in str(error), str(error)
            break
        deepest = n
    assert deepest is not None and deepest >= MAX_NESTING // 3
    decides_as_its_meaning(program(deepest), language)
    for n in (deepest + 1, 330, 2000, 100_000):
        with pytest.raises(ProgramError, match=rf"^<program>:\d+:\d+: .*{MAX_NESTING}") as caught:
            parse_program(program(n), language)
        assert "\n" not in str(caught.value)


@pytest.mark.slow  # runs long
@pytest.mark.parametrize("language", ["crasp", "brasp"])
def test_a_long_chain_of_definitions_each_built_on_the_last_compiles_to_its_meaning(language):
    lines = ['alphabet = "ab"', 'b0 = Q("a")']
    for k in range(1, 1500):
        lines.append(f'b{k} = (b{k - 1} and Q("b")) or not Q("a")' if k % 2 else
                     f'b{k} = (b{k - 1} or Q("b")) and Q("a")')
    lines.append("accept = b1499 or b1498")
    decides_as_its_meaning("\n".join(lines) + "\n", language)


BIG = "1000000000 * (30 * count(Q(\"a\"))) - 1000000000 * (30 * count(Q(\"b\")))"  # 3·10¹⁰·d
AT_THE_BOUND = {  # program → its meaning in exact integers, from d = count(a) − count(b)
    f"{BIG} < 1000000000 * (60 * 1) + 1": lambda d: 30 * 10**9 * d < 60 * 10**9 + 1,
    f"{BIG} == 1000000000 * (60 * 1)": lambda d: 30 * 10**9 * d == 60 * 10**9,
    f"{BIG} >= 1000000000 * (90 * 1) - 1": lambda d: 30 * 10**9 * d >= 90 * 10**9 - 1,
    f"{BIG} + 1000000000 * (30 * 1) > 0": lambda d: 30 * 10**9 * (d + 1) > 0,
}


@pytest.mark.parametrize("comparison", sorted(AT_THE_BOUND))
def test_large_constants_are_exact_up_to_the_stated_length_and_refused_past_it(comparison):
    """At the stated bound, every string whose count difference puts the comparison one unit
    from its threshold is answered as exact integer arithmetic says; one token more is refused.
    """
    from satsim.errors import SatsimError

    spec = compile_program(parse_program(f'alphabet = "abc"\naccept = {comparison}\n', "crasp"))
    length = spec.max_tokens - 1  # symbols; BOS is the other token
    assert 1_000 < length < 100_000  # the counts' coefficients bound it, not the constants
    rng = np.random.default_rng(0)
    strings, differences = [], []
    for d in range(-4, 6):
        for filler in (0, 7, length // 3):
            a = (length - filler + d) // 2
            b = a - d
            symbols = list("a" * a + "b" * b + "c" * (length - a - b))
            strings.append("".join(rng.permutation(symbols)))
            differences.append(d)
    want = [AT_THE_BOUND[comparison](d) for d in differences]
    assert any(want) and not all(want)
    assert Simulator(spec).accepts(strings).tolist() == want
    with pytest.raises(SatsimError, match="is exact for"):
        Simulator(spec).accepts([strings[0] + "c"])


def test_a_large_plain_constant_keeps_the_generic_length_bound():
    compiled = [compile_program(parse_program(f'alphabet = "ab"\naccept = {text}\n', "crasp"))
                for text in ('count(Q("a")) < 1000000000', 'count(Q("a")) < 2')]
    assert compiled[0].max_tokens == compiled[1].max_tokens > 10**8
