"""The programs in examples/: each compiled model against its interpreter on every string up to
length 10 and on strings of 10⁴ symbols, and each interpreter against the language it is
written for (the suite's oracle, or a plain Python statement of it)."""

from pathlib import Path

import pytest

import languages
from satsim import Simulator
from satsim.rasp import compile_program, interpreter, read_program, verify
from satsim.rasp.verify import all_strings_up_to
from tests.support.paths import EXAMPLES


def a_before_b(s: str) -> bool:
    return "a" in s and "b" in s[s.index("a"):]


def every_a_then_b(s: str) -> bool:
    return "a" not in s or "b" in s[s.rindex("a"):]


def affine(s: str) -> bool:
    late_b = s[s.index("a"):].count("b") if "a" in s else 0
    return 2 * s.count("a") - 3 * s.count("b") + 1 >= late_b


MEANINGS = {  # file: the suite language, or a Python statement of the same language
    "dyck1.crasp": "dyck1", "majority.crasp": "majority", "anbn.crasp": "anbn",
    "affine.crasp": affine, "tomita4.brasp": "tomita4", "first.brasp": "first",
    "a_before_b.brasp": a_before_b, "a_then_b.brasp": every_a_then_b,
}


def test_every_example_has_a_meaning_here():
    assert sorted(p.name for p in EXAMPLES.glob("*.*rasp")) == sorted(MEANINGS)


@pytest.mark.parametrize("name", sorted(MEANINGS))
def test_example_matches_its_interpreter_and_its_language(name):
    program = read_program(EXAMPLES / name)
    meaning = MEANINGS[name]
    samples = []
    if isinstance(meaning, str):  # the suite's oracle, and its long positives and negatives
        language = languages.get(meaning)
        meaning = language.contains
        samples = (language.sample_positive(2, 9_000, 10_000, seed=1)
                   + language.sample_negative(2, 9_000, 10_000, seed=1))
    spec = compile_program(program, Path(name).stem)
    meant = interpreter(program)
    check = verify(spec, meant, program.alphabet, max_len=10, long_count=2, long_len=10_000,
                   extra=samples)
    assert check.ok, check.summary()
    assert check.exhaustive_max_len == 10 and check.long_max_len == 10_000
    short, _ = all_strings_up_to(program.alphabet, 8)
    for string in short + samples:  # the program says what it is meant to say
        assert meant(string) == meaning(string), string


@pytest.mark.slow  # a fresh process
def test_a_model_carries_its_program_and_show_prints_it(tmp_path):
    from tests.support.helpers import run_satsim as run_cli

    out = tmp_path / "tomita4.safetensors"
    result = run_cli("compile", str(EXAMPLES / "tomita4.brasp"), "-o", str(out))
    assert result.returncode == 0, result.stderr
    assert "exact up to" in result.stdout
    shown = run_cli("show", "--model", str(out))
    assert "program:" in shown.stdout and "three_zeros = zero and after_two" in shown.stdout
    assert "strict-past" in shown.stdout
    verified = run_cli("verify", str(out), "--max-len", "6", "--long", "1", "--long-len", "300")
    assert verified.returncode == 0 and "agrees" in verified.stdout
    assert Simulator(__import__("satsim").load_spec(out)).accepts(["1001", "10001"]).tolist() \
        == [True, False]


def test_cli_errors_are_one_line(tmp_path):
    from tests.support.helpers import invoke_satsim as run_cli

    bad = tmp_path / "bad.crasp"
    bad.write_text('alphabet = "ab"\naccept = count(Q("a"))\n')
    for args, message in [(["compile", str(bad)], "bad.crasp:2:10: accept must be a Boolean"),
                          (["compile", str(tmp_path / "x.txt")], "ends in .crasp or .brasp"),
                          (["compile", "--lang", "parity-even"], "parity-even is not star-free"),
                          (["compile"], "give a program FILE, --lang L, --regex R or --dfa FILE"),
                          (["decide", "--lang", "dyck1"], "not regular as the suite gives it")]:
        result = run_cli(*args)
        assert result.returncode == 2, (args, result.stderr)
        assert result.stderr.startswith("error: ") and message in result.stderr
        assert result.stderr.count("\n") == 1


def test_verifying_against_two_meanings_runs_the_model_once(monkeypatch):
    from satsim.rasp.verify import verify_all

    program = read_program(EXAMPLES / "tomita4.brasp")
    spec = compile_program(program, "tomita4")
    meant = interpreter(program)
    runs, accepts = [], Simulator.accepts
    monkeypatch.setattr(Simulator, "accepts",
                        lambda self, strings: runs.append(len(strings)) or accepts(self, strings))
    found = verify_all(spec, {"right": meant, "wrong": lambda s: not meant(s)}, program.alphabet,
                       max_len=6, long_count=2, long_len=300)
    assert found["right"].ok and found["right"].exhaustive_max_len == 6
    assert found["wrong"].wrong == sum(runs) == 2 ** 7 - 1 + 2  # each string run once


@pytest.mark.parametrize("name", ["dyck1.crasp", "anbn.crasp"])
def test_verify_draws_long_strings_of_both_answers_where_random_ones_are_all_rejected(name):
    from satsim.rasp.verify import random_strings

    program = read_program(EXAMPLES / name)
    meaning = interpreter(program)
    assert not any(meaning(s) for s in random_strings(program.alphabet, 20, 10_000))
    calls = []
    check = verify(compile_program(program), meaning, program.alphabet, max_len=6,
                   long_count=20, long_len=10_000, progress=lambda *done: calls.append(done))
    assert check.ok and check.long_strings == 20 and check.long_max_len == 10_000
    assert 0 < check.long_accepted < 20
    assert calls[-1] == (20, 20) and calls == sorted(calls)  # the long part reports progress
