"""C-RASP and B-RASP: parse errors, the interpreters against naive loops, and compiled models
against the interpreters on random programs (every short string, and long ones)."""

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from satsim import Simulator
from satsim.errors import SatsimError
from satsim.rasp import (
    ProgramError,
    compile_program,
    interpreter,
    parse_program,
    program_of,
    read_program,
)
from satsim.rasp.verify import random_strings
from tests.support.helpers import every_string
from tests.support.paths import EXAMPLES
from tests.support.rasp_programs import brasp_programs, crasp_programs, naive_brasp, naive_crasp


@pytest.mark.parametrize(("language", "text", "message"), [
    ("crasp", 'x = 1\n', "1:1: the first definition is alphabet"),
    ("crasp", 'alphabet = "ab"\nx = count(Q("c"))\naccept = x > 0\n',
     "2:13: symbol 'c' is not in the alphabet 'ab'"),
    ("crasp", 'alphabet = "ab"\nx = count(Q("a"))\naccept = x\n',
     "3:10: accept must be a Boolean vector, not a count"),
    ("crasp", 'alphabet = "ab"\naccept = not count(Q("a"))\n',
     "2:14: a count is used where a Boolean is needed"),
    ("crasp", 'alphabet = "ab"\naccept = count(count(Q("a")))\n',
     "2:16: a count is used where a Boolean is needed"),
    ("crasp", 'alphabet = "ab"\naccept = opens > 0\nopens = count(Q("a"))\n',
     "2:10: unknown name 'opens' (define it before this line)"),
    ("crasp", 'alphabet = "ab"\naccept = (count(Q("a")) > 0\n', "2:10: syntax error"),
    ("crasp", 'alphabet = "ab"\nx = count(Q("a")) * count(Q("b"))\naccept = x > 0\n',
     "2:5: a count is multiplied only by an integer constant"),
    ("crasp", 'alphabet = "ab"\nx = Q("a")\nx = Q("b")\naccept = x\n', "3:1: 'x' is defined twice"),
    ("crasp", 'alphabet = "ab"\ncount = Q("a")\naccept = True\n', "2:1: 'count' is reserved"),
    ("crasp", 'alphabet = "ab"\nx = Q("a")\n', "no 'accept'"),
    ("crasp", 'alphabet = "aa"\naccept = True\n', "repeats a symbol"),
    ("crasp", 'alphabet = "ab"\naccept = leftmost(True, True, True, default=False)\n',
     "2:10: leftmost is B-RASP"),
    ("brasp", 'alphabet = "ab"\naccept = count(Q("a")) > 0\n', "2:10: comparisons of counts"),
    ("brasp", 'alphabet = "ab"\na = Q("a")\naccept = leftmost(j < i, a, True, default=False)\n',
     "3:26: inside attention, read a vector at a position: a[i] or a[j]"),
    ("brasp", 'alphabet = "ab"\naccept = leftmost(j <= i, True, True, default=False)\n',
     "2:19: the mask is j < i, j > i or True"),
    ("brasp", 'alphabet = "ab"\naccept = leftmost(True, True, True)\n',
     "2:10: leftmost needs a default"),
    ("brasp", 'alphabet = "ab"\na = Q("a")\naccept = leftmost(True, a[j], True, default=a[j])\n',
     "3:47: the default reads the query position only"),
    ("brasp", 'alphabet = "ab"\naccept = Q("a")[j]\n', "2:10: P[i] and P[j] appear only inside"),
    ("brasp", 'alphabet = "ab"\n\naccept = Q("a") and  rightmost(True, True, default=False)\n',
     "3:22: rightmost takes 3 arguments, got 2"),
    ("brasp", 'alphabet = "é"\naccept = Q("é") and Q("x")\n',
     "2:23: symbol 'x' is not in the alphabet"),  # characters, not UTF-8 bytes
])
def test_program_errors_are_one_line_with_line_and_column(language, text, message):
    with pytest.raises(ProgramError) as caught:
        parse_program(text, language, "p")
    assert message in str(caught.value)
    assert str(caught.value).startswith("p:") and "\n" not in str(caught.value)


def test_program_files_are_read_by_suffix(tmp_path):
    (tmp_path / "a.crasp").write_text('alphabet = "ab"\naccept = count(Q("a")) > 1\n')
    assert read_program(tmp_path / "a.crasp").language == "crasp"
    (tmp_path / "a.txt").write_text("")
    with pytest.raises(SatsimError, match="ends in .crasp or .brasp"):
        read_program(tmp_path / "a.txt")
    with pytest.raises(SatsimError, match="no such program file"):
        read_program(tmp_path / "missing.brasp")


def test_python_syntax_that_is_not_the_language_is_refused():
    for text, message in [('alphabet = "ab"\naccept = Q("a") & Q("b")\n', "2:10: use 'and'"),
                          ('alphabet = "ab"\naccept = [Q("a")]\n', "2:10: a list is not part"),
                          ('alphabet = "ab"\nx, y = 1, 2\naccept = True\n', "2:1: each line")]:
        with pytest.raises(ProgramError, match=message):
            parse_program(text, "crasp")


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=crasp_programs(alphabet="abc"), seed=st.integers(0, 1000))
def test_the_crasp_interpreter_is_the_naive_meaning(text, seed):
    program = parse_program(text, "crasp")
    strings = every_string("abc", 4) + random_strings(("a", "b", "c"), 4, 60, seed)
    meaning = interpreter(program)
    for string in strings:
        assert meaning(string) == naive_crasp(program, string), (text, string)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=brasp_programs(alphabet="abc"), seed=st.integers(0, 1000))
def test_the_brasp_interpreter_is_the_naive_meaning(text, seed):
    program = parse_program(text, "brasp")
    strings = every_string("abc", 4) + random_strings(("a", "b", "c"), 4, 40, seed)
    meaning = interpreter(program)
    for string in strings:
        assert meaning(string) == naive_brasp(program, string), (text, string)


def check_compiled(text: str, language: str, seed: int, long: int = 2000) -> None:
    """The compiled model decides as the interpreter on every short and some long strings."""
    program = parse_program(text, language)
    spec = compile_program(program)
    assert program_of(spec) == program
    alphabet = program.alphabet
    strings = every_string(alphabet, 6) + random_strings(alphabet, 6, long, seed)
    meaning = interpreter(program)
    got = Simulator(spec).accepts(strings)
    want = np.array([meaning(s) for s in strings])
    wrong = np.flatnonzero(got != want)
    assert not len(wrong), (text, strings[wrong[0]] if len(wrong) else None)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=crasp_programs(), seed=st.integers(0, 1000))
def test_compiled_crasp_programs_decide_as_their_interpreter(text, seed):
    check_compiled(text, "crasp", seed)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=brasp_programs(), seed=st.integers(0, 1000))
def test_compiled_brasp_programs_decide_as_their_interpreter(text, seed):
    check_compiled(text, "brasp", seed)


def test_the_reference_forward_pass_agrees_with_the_simulator_on_compiled_models():
    from satsim.reference.forward import forward

    for text, language in [('alphabet = "ab"\nd = count(Q("a")) - 2 * count(Q("b"))\n'
                            'accept = where(d > 0, d, 0 - d) == 1\n', "crasp"),
                           ('alphabet = "ab"\nx = leftmost(j > i, Q("b")[j], Q("a")[i], '
                            'default=False)\naccept = rightmost(j < i, x[j], not x[i], '
                            'default=True)\n', "brasp")]:
        spec = compile_program(parse_program(text, language))
        strings = every_string("ab", 5)
        simulated = Simulator(spec).accepts(strings)
        for string, decision in zip(strings, simulated):
            assert (forward(spec, string).logits[0] > 0) == decision


def test_a_compiled_model_refuses_inputs_past_its_exact_length():
    from dataclasses import replace

    spec = compile_program(parse_program('alphabet = "ab"\naccept = count(Q("a")) > 2\n',
                                         "crasp"))
    assert spec.max_tokens > 10**8
    short = replace(spec, max_tokens=5)
    assert Simulator(short).accepts(["aaaa"]).tolist() == [True]
    for fused in (True, False):
        with pytest.raises(SatsimError, match="longer than model .* is exact for"):
            Simulator(short, fused=fused).accepts(["aaaaa"])


def test_formulas_too_large_for_one_layer_are_built_from_their_parts():
    import string

    letters = string.ascii_lowercase
    lines = [f'alphabet = "{letters}"']
    for k, letter in enumerate(letters):
        lines.append(f'seen{k} = rightmost(j < i, Q("{letter}")[j], True, default=False)')
        lines.append(f'next{k} = leftmost(j > i, Q("{letter}")[j], True, default=False)')
    pairs = " or ".join(f"(seen{k} and not next{(k + 1) % 26})" for k in range(26))
    lines.append(f"accept = ({pairs}) and not (seen0 and seen1 and next2 and next3)")
    program = parse_program("\n".join(lines) + "\n", "brasp")
    spec = compile_program(program)
    rng = np.random.default_rng(0)
    strings = ["".join(rng.choice(list(letters), size=n)) for n in rng.integers(0, 40, 300)]
    meaning = interpreter(program)
    want = [meaning(s) for s in strings]
    assert 0 < sum(want) < len(want)
    assert Simulator(spec).accepts(strings).tolist() == want


def test_a_count_that_could_overflow_inside_a_comparison_is_refused_not_wrapped():
    from satsim.errors import SatsimError
    from satsim.rasp import interpreter

    program = parse_program('alphabet = "a"\n'
                            'accept = 1000000000 * (1000000000 * (10 * count(Q("a")))) > 0\n',
                            "crasp", "big")
    with pytest.raises(SatsimError, match="could exceed the int64 range"):
        interpreter(program)("a" * 10)


def compiler_names() -> list[str]:
    """Every name the compilers use for their own things, and each identifier inside one.

    Collected from the compilers themselves: each string constant in their source (dimension
    hints, prefixes, formula tags) and each dimension of the models of the example programs.
    """
    import ast
    import inspect
    import keyword
    import re

    from satsim.circuits import schedule
    from satsim.rasp import bits, compile_brasp, compile_crasp, logic
    from satsim.rasp.syntax import RESERVED

    found: set[str] = set()
    for module in (bits, schedule, logic, compile_crasp, compile_brasp):
        tree = ast.parse(inspect.getsource(module))
        docstrings = {id(node.value) for node in ast.walk(tree) if isinstance(node, ast.Expr)}
        found.update(node.value for node in ast.walk(tree) if isinstance(node, ast.Constant)
                     and isinstance(node.value, str) and id(node) not in docstrings)
    for path in sorted(EXAMPLES.glob("*.*rasp")):
        found.update(compile_program(read_program(path)).dim_names)
    pieces = {piece for text in found for piece in re.findall(r"[A-Za-z_][A-Za-z0-9_]*", text)}
    return sorted(name for name in pieces if not keyword.iskeyword(name)
                  and name not in (*RESERVED, "accept"))


COMPILER_NAMES = compiler_names()


@pytest.mark.parametrize(("language", "text"), [
    ("crasp", 'alphabet = "ab"\nsymbol = count(Q("a")) > count(Q("b"))\naccept = symbol\n'),
    ("brasp", 'alphabet = "ab"\nsymbol = leftmost(j < i, Q("a")[j], True, default=False)\n'
              'accept = symbol or Q("b")\n'),
])
def test_a_definition_named_like_a_compiler_prefix_compiles_to_its_meaning(language, text):
    check_compiled(text, language, seed=0, long=200)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), seed=st.integers(0, 1000))
def test_definitions_named_as_the_compilers_own_names_compile_to_their_meaning(data, seed):
    assert {"one", "bos", "unit", "sign", "qualifies"} <= set(COMPILER_NAMES)
    language = data.draw(st.sampled_from(["crasp", "brasp"]))
    programs = crasp_programs if language == "crasp" else brasp_programs
    check_compiled(data.draw(programs(names=COMPILER_NAMES)), language, seed, long=200)
