"""The DFA of a B-RASP program (left to right over attention memories), against the program's
interpreter and the loops of its definitions; DFA equivalence of extracted programs."""

from __future__ import annotations

import re

import pytest
from hypothesis import HealthCheck, given, settings

import languages
from satsim.errors import SatsimError
from satsim.rasp import compile_program, interpreter, parse_program, read_program
from satsim.rasp.automata import decide, language_dfa
from satsim.rasp.extract import extract, write_program
from satsim.rasp.program_dfa import brasp_dfa, equivalent
from tests.support.helpers import every_string
from tests.support.rasp_programs import brasp_programs, naive_brasp

PAST_LOOKING = ("first", "a_before_b", "tomita4")


@pytest.mark.parametrize("name", PAST_LOOKING)
def test_example_dfa_is_the_program_and_the_extracted_one_is_equivalent(name):
    original = read_program(f"examples/{name}.brasp")
    dfa = brasp_dfa(original)
    meaning = interpreter(original)
    assert [dfa.accepts(s) for s in every_string(original.alphabet, 10)] == \
        [meaning(s) for s in every_string(original.alphabet, 10)]
    back = parse_program(write_program(extract(compile_program(original))), "brasp")
    assert equivalent(brasp_dfa(back), dfa) is None
    assert decide(dfa).star_free


def test_tomita4_extracted_equals_the_suite_language_dfa():
    back = parse_program(write_program(extract(compile_program(
        read_program("examples/tomita4.brasp")))), "brasp")
    assert equivalent(brasp_dfa(back), language_dfa(languages.get("tomita4"))) is None


def test_equivalent_returns_a_shortest_string_that_tells_them_apart():
    first, before = (read_program(f"examples/{n}.brasp") for n in ("first", "tomita4"))
    witness = equivalent(brasp_dfa(first), brasp_dfa(before))
    assert interpreter(first)(witness) != interpreter(before)(witness)
    shorter = every_string("01", len(witness) - 1)
    assert all(interpreter(first)(s) == interpreter(before)(s) for s in shorter)


def test_a_future_looking_definition_read_elsewhere_is_refused():
    with pytest.raises(SatsimError, match="b_later looks at the future"):
        brasp_dfa(read_program("examples/a_then_b.brasp"))


_MASK = re.compile(r"(leftmost|rightmost)\((True|j > i),")


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=brasp_programs())
def test_random_past_programs_dfa_agrees_with_the_definitions(text):
    """Every attention turned to j < i: the DFA is always built and means the program."""
    program = parse_program(_MASK.sub(r"\1(j < i,", text), "brasp")
    dfa = brasp_dfa(program)
    for string in every_string("ab", 6):
        assert dfa.accepts(string) == naive_brasp(program, string), string


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=brasp_programs())
def test_random_programs_dfa_is_refused_or_right(text):
    """As generated (future and every-position masks too): refused, or it means the program."""
    program = parse_program(text, "brasp")
    try:
        dfa = brasp_dfa(program)
    except SatsimError as refusal:
        assert "looks at the future" in str(refusal)
        return
    for string in every_string("ab", 6):
        assert dfa.accepts(string) == naive_brasp(program, string), string


@pytest.mark.slow  # fresh processes
def test_cli_extract_writes_the_dfa_that_decide_reads(tmp_path):
    import subprocess
    import sys

    def run(*args):
        done = subprocess.run([sys.executable, "-m", "satsim", *args], capture_output=True,
                              text=True, timeout=600)
        return done.returncode, done.stdout + done.stderr

    model, dfa = tmp_path / "t4.safetensors", tmp_path / "t4.json"
    assert run("compile", "examples/tomita4.brasp", "-o", str(model))[0] == 0
    code, output = run("extract", str(model), "-o", str(tmp_path / "t4.brasp"), "--dfa", str(dfa))
    assert code == 0 and "minimal DFA 4 states, star-free True" in output, output
    code, output = run("decide", "--dfa", str(dfa), "--json")
    assert code == 0 and '"star_free": true' in output and '"dfa_states": 4' in output, output
