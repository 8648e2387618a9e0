"""satsim extract to C-RASP: counting heads back to counts and comparisons, checked against the
original program's interpreter (and the loops of its definitions) on every short string."""

from __future__ import annotations

import itertools
import random
import subprocess
import sys
from dataclasses import replace

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from satsim.rasp import compile_program, interpreter, parse_program, read_program
from satsim.rasp.extract import NotExtractable, check_program
from satsim.rasp.extract_counts import extract_counts
from tests.support.helpers import every_string
from tests.support.rasp_programs import crasp_programs, naive_crasp

CRASP_EXAMPLES = ("majority", "dyck1", "anbn", "affine")


@pytest.mark.parametrize("name", CRASP_EXAMPLES)
def test_crasp_example_round_trip(name):
    original = read_program(f"examples/{name}.crasp")
    spec = compile_program(original, name)
    extraction = extract_counts(spec)
    extracted = parse_program(extraction.text, "crasp", name)
    rng = random.Random(0)
    # long strings near balance, where the comparisons turn
    long = ["".join(rng.choice(original.alphabet) for _ in range(rng.randrange(50, 300)))
            for _ in range(100)]
    strings = every_string(original.alphabet, 8) + long
    meaning, back = interpreter(original), interpreter(extracted)
    assert [back(s) for s in strings] == [meaning(s) for s in strings]
    assert sum(map(meaning, strings)) > 0  # the check sees both answers
    assert check_program(spec, extraction.text, strings[:127] + long[:10], "crasp") == []
    compile_program(extracted, "again")  # satsim compile accepts it
    assert extraction.summary()["certified"] is False  # counts: exact arithmetic, not closure


def test_majority_reads_as_a_comparison_of_two_counts():
    text = extract_counts(compile_program(read_program("examples/majority.crasp"))).text
    assert "count_a = count(Q(\"a\"))" in text and "count_b = count(Q(\"b\"))" in text
    assert "count_a > count_b" in text  # 2a > 2b + 1 over the integers


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=crasp_programs(size=3))
def test_random_crasp_programs_compiled_then_extracted_mean_what_they_meant(text):
    """Random C-RASP programs: the extracted program agrees with the loops of the definitions."""
    original = parse_program(text, "crasp")
    try:
        extraction = extract_counts(compile_program(original))
    except NotExtractable as refusal:  # allowed only as a stated limit
        assert "more than" in str(refusal)
        return
    back = interpreter(parse_program(extraction.text, "crasp"))
    for string in every_string("ab", 6):
        assert back(string) == naive_crasp(original, string), string


def test_non_causal_heads_and_brasp_models_are_refused():
    spec = compile_program(read_program("examples/majority.crasp"))
    block = spec.blocks[0]
    changed = replace(spec, blocks=(replace(block, attn=replace(block.attn, mask="bidirectional")),)
                      + spec.blocks[1:])
    with pytest.raises(NotExtractable, match="block 0 head 0 is run with a bidirectional mask"):
        extract_counts(changed)
    with pytest.raises(NotExtractable, match="no positional encoding"):
        extract_counts(compile_program(read_program("examples/first.brasp")))


def run_cli(*args):
    """``python -m satsim ARGS`` as the user runs it."""
    done = subprocess.run([sys.executable, "-m", "satsim", *args], capture_output=True,
                          text=True, timeout=600)
    return done.returncode, done.stdout + done.stderr


@pytest.mark.slow  # fresh processes
def test_cli_extract_crasp_writes_a_program_compile_accepts(tmp_path):
    model = tmp_path / "dyck1.safetensors"
    assert run_cli("compile", "examples/dyck1.crasp", "-o", str(model))[0] == 0
    out = tmp_path / "back.crasp"
    pair = tmp_path / "pair.safetensors"
    code, output = run_cli("extract", str(model), "-o", str(out), "--json", "--pair", str(pair))
    assert code == 0, output
    assert '"disagreements": 0' in output and '"certified": false' in output
    # satsim verify checks the model against the extracted program it now carries
    code, output = run_cli("verify", str(pair), "--max-len", "7", "--long", "3")
    assert code == 0 and "agrees" in output, output
    assert run_cli("compile", str(out), "-o", str(tmp_path / "again.safetensors"))[0] == 0
    code, output = run_cli("extract", str(model), "-o", str(tmp_path / "x.brasp"))
    assert code == 2 and "-o NAME.crasp extracts counts" in output


def _holds(literal, values):
    """Whether an integer assignment satisfies a literal (its key's form within its bounds)."""
    total = sum(c * values[v] for v, c in literal.key)
    return (literal.lo is None or total >= literal.lo) and \
        (literal.hi is None or total <= literal.hi) and total not in literal.ne


@settings(max_examples=200, deadline=None)
@given(const=st.fractions(-4, 4, max_denominator=4),
       coef=st.lists(st.fractions(-4, 4, max_denominator=4), min_size=3, max_size=3),
       op=st.sampled_from([">", "==", "<"]))
def test_a_comparison_becomes_an_integer_literal_that_means_it(const, coef, op):
    """form·(i + 1) op 0 over counts, against the literal, on every small assignment."""
    from satsim.rasp.extract_counts import Form, U, _Program

    form = Form(const, {U: coef[0], "count_a": coef[1], "count_b": coef[2]})
    literal = _Program(["a", "b"]).compare(form, op)
    for a, b, extra in itertools.product(range(5), range(5), range(3)):
        i = a + b + extra  # the length: at least the two counts
        numerator = const * (i + 1) + coef[0] + coef[1] * a + coef[2] * b
        want = {">": numerator > 0, "==": numerator == 0, "<": numerator < 0}[op]
        got = literal if isinstance(literal, bool) else _holds(
            literal, {"length": i, "count_a": a, "count_b": b})
        assert got == want, (a, b, i)
        if not isinstance(literal, bool):  # and its complement
            assert _holds(literal.negated(), {"length": i, "count_a": a, "count_b": b}) != want
