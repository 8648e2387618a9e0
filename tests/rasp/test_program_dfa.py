"""The DFA of a B-RASP program (built backwards from accept, stage by stage), against the
program's interpreter and the loops of its definitions (naive_brasp); DFA equivalence of
extracted programs and of the suite's languages."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import languages
from satsim.errors import SatsimError
from satsim.rasp import compile_program, interpreter, parse_program, read_program, regular_names
from satsim.rasp.automata import decide, language_dfa
from satsim.rasp.extract import extract, write_program
from satsim.rasp.program_dfa import brasp_dfa, equivalent
from satsim.rasp.regular import star_free_program
from tests.support.helpers import every_string
from tests.support.rasp_programs import brasp_programs, naive_brasp


def _star_free(name: str) -> bool:
    try:
        star_free_program(name)
    except SatsimError:
        return False
    return True


def assert_dfa_means_the_program(text: str, alphabet: str, length: int) -> None:
    """The program's DFA accepts what the loops of its definitions accept, to ``length``."""
    program = parse_program(text, "brasp")
    dfa = brasp_dfa(program)
    for string in every_string(alphabet, length):
        assert dfa.accepts(string) == naive_brasp(program, string), string


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


@pytest.mark.parametrize("name", ["a_then_b", "a_before_b", "first", "tomita4"])
def test_every_example_dfa_is_its_program_and_the_extracted_one_is_equivalent(name):
    """a_then_b reads the future inside (b_later at every a): built like the others."""
    original = read_program(f"examples/{name}.brasp")
    dfa = brasp_dfa(original)
    strings = every_string(original.alphabet, 9)
    assert [dfa.accepts(s) for s in strings] == [naive_brasp(original, s) for s in strings]
    back = parse_program(write_program(extract(compile_program(original))), "brasp")
    assert equivalent(brasp_dfa(back), dfa) is None
    assert decide(dfa).star_free


def test_a_bounded_dyck_language_program_has_the_languages_dfa():
    """dyck-2-3's holonomy cascade: future and past attention at every level."""
    program = parse_program(star_free_program("dyck-2-3"), "brasp")
    dfa = brasp_dfa(program)
    assert equivalent(dfa, language_dfa(languages.get("dyck-2-3"))) is None
    assert dfa.states == 16  # the stacks of depth at most 3 over two types, and the dead state


@pytest.mark.parametrize("name", [n for n in regular_names() if _star_free(n)])
def test_every_star_free_program_of_the_suite_has_its_languages_dfa(name):
    dfa = brasp_dfa(parse_program(star_free_program(name), "brasp"))
    assert equivalent(dfa, language_dfa(languages.get(name))) is None


@pytest.mark.parametrize("name, states", [("dyck-2-10", 2048), ("dyck-3-5", 365)])
def test_the_programs_extracted_from_the_deepest_dyck_models_have_their_languages_dfa(
        name, states):
    """Compiled (21 and 11 layers of attention), extracted back, and the program's DFA has
    2,048 and 365 states (the stacks and the dead state): the language's."""
    spec = compile_program(parse_program(star_free_program(name), "brasp"), name)
    dfa = brasp_dfa(parse_program(write_program(extract(spec)), "brasp"))
    assert dfa.states == states
    assert equivalent(dfa, language_dfa(languages.get(name))) is None


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=brasp_programs())
def test_random_programs_dfa_means_the_program(text):
    """As generated (future and every-position masks at any depth): always built, and right."""
    assert_dfa_means_the_program(text, "ab", 7)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=brasp_programs(alphabet="abc", size=7))
def test_random_longer_programs_over_three_symbols_dfa_means_the_program(text):
    assert_dfa_means_the_program(text, "abc", 5)


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


def test_a_construction_past_its_budget_of_cells_is_refused(monkeypatch):
    from satsim.rasp import program_dfa

    program = parse_program(star_free_program("dyck-2-3"), "brasp")
    with pytest.raises(SatsimError, match="more than 50 cells"):
        brasp_dfa(program, max_cells=50)
    monkeypatch.setattr(program_dfa, "MAX_STAGE_CELLS", 10)
    with pytest.raises(SatsimError, match=r"\(memory, letter, memory\) cells; at most 10 "):
        brasp_dfa(program)


@st.composite
def programs_with_shared_scores(draw) -> str:
    """A random program, then attentions that share one mask, side and score (one memory)
    with values and defaults of their own, and ``accept`` reading two of them."""
    lines = draw(brasp_programs(size=3)).splitlines()[:-1]  # its accept left out
    reads = [line.split(" = ")[0] for line in lines[1:]] + ['Q("a")', 'Q("b")']

    def formula(indices: str) -> str:
        first, second = (f"{draw(st.sampled_from(reads))}[{draw(st.sampled_from(indices))}]"
                         for _ in range(2))
        return draw(st.sampled_from([first, f"not {first}", f"{first} and {second}",
                                     f"{first} or not {second}", "True"]))

    side = draw(st.sampled_from(["leftmost", "rightmost"]))
    mask = draw(st.sampled_from(["j < i", "j > i", "True"]))
    score = formula("ij")
    members = draw(st.integers(2, 4))
    for k in range(members):
        lines.append(f"s{k} = {side}({mask}, {score}, {formula('ij')}, "
                     f"default={formula('i')})")
    first, second = (f"s{draw(st.integers(0, members - 1))}" for _ in range(2))
    lines.append(f"accept = {first} {draw(st.sampled_from(['and', 'or']))} not {second}")
    return "\n".join(lines) + "\n"


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=programs_with_shared_scores())
def test_attentions_sharing_a_memory_dfa_means_the_program(text):
    assert_dfa_means_the_program(text, "ab", 7)


def test_attentions_reading_more_vectors_than_a_machine_word_has_bits():
    """One score reads 70 vectors at its keys; 60 attentions share it (one memory), each with
    a value of its own, so that a key's answers are 60 bits; accept reads the 69th vector's
    and the last attention's."""
    lines = ['alphabet = "ab"', 'prev_b = rightmost(j < i, True, Q("b")[j], default=False)',
             'first_a = leftmost(True, True, Q("a")[j], default=False)']
    parts = ['Q("a")', "prev_b", "first_a", "not prev_b", '(Q("a") and prev_b)']
    lines += [f"c{k} = {parts[k % 5]}" for k in range(68)]
    lines += ['c68 = (Q("b") and first_a)', "c69 = not first_a"]
    score = " or ".join(f"c{k}[j]" for k in range(70))
    lines += [f'late{k} = rightmost(j < i, ({score}), c{k + 10}[j], default=Q("b")[i])'
              for k in range(60)]
    lines.append("accept = (late58 and not late0) or (late59 and c69)")
    program = parse_program("\n".join(lines) + "\n", "brasp")
    dfa = brasp_dfa(program)
    strings = every_string("ab", 9)
    assert [dfa.accepts(s) for s in strings] == [naive_brasp(program, s) for s in strings]
    assert len({dfa.accepts(s) for s in strings}) == 2


def test_star_freeness_in_passing_is_undecided_past_its_cells(monkeypatch):
    """satsim extract decides star-freeness in passing only for small monoids (dyck-3-3's has
    1,787 elements on 41 states); past its cells it says undecided (None), not a verdict."""
    from satsim.rasp import automata

    dfa = language_dfa(languages.get("dyck-3-3"))
    assert automata.star_free_in_passing(dfa) is True
    assert automata.star_free_in_passing(language_dfa(languages.get("aa-star"))) is False
    monkeypatch.setattr(automata, "PASSING_CELLS", 41 * 1_000)
    assert automata.star_free_in_passing(dfa) is None


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=brasp_programs(alphabet="abc", size=6))
def test_the_batched_interpreter_means_the_program(text):
    """accepts_all runs strings of one length as one batch (every string to length 5 here):
    it agrees with the loops of the definitions, and with the interpreter string by string."""
    from satsim.rasp.brasp import accepts, accepts_all

    program = parse_program(text, "brasp")
    strings = every_string("abc", 5)
    batched = accepts_all(program, strings)
    assert batched == [naive_brasp(program, s) for s in strings]
    assert batched[:40] == [accepts(program, s) for s in strings[:40]]
    assert interpreter(program).many(strings) == batched  # what verify and extract call


def test_a_crasp_programs_meaning_answers_many_strings_one_by_one():
    meaning = interpreter(read_program("examples/dyck1.crasp"))
    strings = every_string("()", 6)
    assert meaning.many(strings) == [meaning(s) for s in strings]
    assert any(meaning.many(strings)) and not all(meaning.many(strings))
