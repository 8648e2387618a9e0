"""Star-freeness of the suite's regular languages, checked on the languages themselves, and the
automatic B-RASP compilation of every star-free one, checked against its oracle."""

from dataclasses import replace

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import languages
from satsim.errors import SatsimError
from satsim.rasp import (
    compile_program,
    decide_language,
    holonomy_program,
    parse_program,
    regular_names,
    verify,
)
from satsim.rasp import star_free_program as program_text
from satsim.rasp.automata import language_dfa, minimal_dfa
from tests.support.helpers import every_string
from tests.support.paths import REPO

SMALL = 100
"""Languages whose minimal DFA has more states are decided in docs/rasp.md, not here (dyck-3-5's
365 states take over a minute, dyck-2-10's 2,048 far longer)."""
REGULAR = [name for name in regular_names() if language_dfa(languages.get(name)).states <= SMALL]
COMPILED_HERE = 20
"""Star-free languages with larger minimal DFAs (dyck-3-3, dyck-2-5) compile into models of
10⁵–10⁶ parameters; they are checked in docs/rasp.md, not in CI."""
STAR_FREE = [name for name in REGULAR if decide_language(name).star_free
             and language_dfa(languages.get(name)).states <= COMPILED_HERE]


def longest_within(alphabet, count, most=8):
    """The largest length L ≤ ``most`` with at most ``count`` words of length ≤ L."""
    length = 0
    while length < most and sum(len(alphabet) ** k for k in range(length + 2)) <= count:
        length += 1
    return length


def reaching_words(dfa):
    """A shortest word to each state from the start, and from each state to acceptance."""
    reach = {dfa.start: ""}
    for _ in range(dfa.states):
        for q, word in list(reach.items()):
            for a, symbol in enumerate(dfa.alphabet):
                reach.setdefault(dfa.delta[q][a], word + symbol)
    finish = {q: "" for q in dfa.accepting}
    for _ in range(dfa.states):
        for q in range(dfa.states):
            for a, symbol in enumerate(dfa.alphabet):
                if q not in finish and dfa.delta[q][a] in finish:
                    finish[q] = symbol + finish[dfa.delta[q][a]]
    return list(reach.values()), list(finish.values())


@pytest.mark.slow  # runs long
@pytest.mark.parametrize("name", REGULAR)
def test_the_decision_holds_on_the_language_itself(name):
    """Not star-free: the witness w has u·wᵏ·v in L differ from u·wᵏ⁺¹·v for every large k.
    Star-free: no short word does that (a necessary condition, checked through the oracle)."""
    language = languages.get(name)
    decision = decide_language(name)
    big = decision.dfa_states + 2  # past every index of the monoid
    short = every_string(language.alphabet, longest_within(language.alphabet, 50))
    before, after = reaching_words(language_dfa(language))  # contexts that reach every state
    prefixes, suffixes = before[:16] + short, after[:16] + short

    def differs(w: str) -> bool:
        return any(language.contains(u + w * k + v) != language.contains(u + w * (k + 1) + v)
                   for u in prefixes for v in suffixes for k in (big, big + 1))

    if decision.star_free:
        assert decision.witness is None
        short = every_string(language.alphabet, longest_within(language.alphabet, 100))
        assert not any(differs(w) for w in short if w)
    else:
        assert differs(decision.witness)


def test_tomita_languages_are_star_free_as_the_literature_says():
    # Tomita 1, 2, 4, 7 are star-free; 3, 5, 6 count modulo a number (Bhattamishra et al. 2020).
    decided = {n: decide_language(f"tomita{n}").star_free for n in range(1, 8)}
    assert decided == {1: True, 2: True, 3: False, 4: True, 5: False, 6: False, 7: True}


def test_the_minimal_dfa_accepts_the_language_with_no_fewer_states():
    for name in REGULAR:
        language = languages.get(name)
        dfa = language_dfa(language)
        for word in every_string(language.alphabet, 6 if len(language.alphabet) <= 3 else 3):
            assert dfa.accepts(word) == language.contains(word)
        again = minimal_dfa(dfa.alphabet, np.array(dfa.delta), dfa.start,
                            np.array([q in dfa.accepting for q in range(dfa.states)]))
        assert again.states == dfa.states


@pytest.mark.slow  # runs long
@pytest.mark.parametrize("name", STAR_FREE)
def test_every_star_free_language_compiles_and_is_right(name):
    language = languages.get(name)
    program = parse_program(program_text(name), "brasp", name)
    spec = compile_program(program, name)
    samples = (language.sample_positive(2, 1_000, 10_000, seed=3)
               + language.sample_negative(2, 1_000, 10_000, seed=3))
    check = verify(spec, language.contains, language.alphabet, max_len=10, long_count=2,
                   long_len=10_000, extra=samples, budget=6_000)
    assert check.ok, check.summary()


def test_a_monoid_too_large_to_enumerate_is_refused_in_one_line():
    from satsim.rasp.automata import decide

    big = language_dfa(languages.get("dyck-2-5"))
    assert big.states == 64
    with pytest.raises(SatsimError, match="64-state minimal DFA has more than 1,000 .* too large"):
        decide(big, limit=1_000)


def test_a_language_that_is_not_star_free_is_refused_with_its_witness():
    with pytest.raises(Exception, match="parity-even is not star-free.*'1'.*period 2"):
        program_text("parity-even")


def brute_monoid(dfa):
    """Every transformation of the states by a word, as tuples, with its shortest word's length."""
    identity = tuple(range(dfa.states))
    found, frontier = {identity: 0}, [identity]
    while frontier:
        nxt = []
        for x in frontier:
            for a in range(len(dfa.alphabet)):
                y = tuple(dfa.delta[q][a] for q in x)
                if y not in found:
                    found[y] = found[x] + 1
                    nxt.append(y)
        frontier = nxt
    return found


def cycles(x):
    """Whether the powers of the transformation x cycle: x^k ≠ x^(k+1) for every k ≤ |x|."""
    power = x
    for _ in range(len(x) + 1):
        power = tuple(x[q] for q in power)
    return tuple(x[q] for q in power) != power


@settings(max_examples=60, deadline=None, derandomize=True)
@given(st.integers(1, 7), st.integers(1, 3), st.data())
def test_the_monoid_and_the_decision_match_a_brute_force_closure(states, symbols, data):
    from satsim.rasp.automata import DFA, decide, monoid_elements

    delta = data.draw(st.lists(st.lists(st.integers(0, states - 1), min_size=symbols,
                                        max_size=symbols), min_size=states, max_size=states))
    dfa = DFA(tuple("abc"[:symbols]), tuple(map(tuple, delta)), 0, frozenset({0}))
    want = brute_monoid(dfa)
    got = []
    for rows, words in monoid_elements(dfa):
        for row, word in zip(rows.tolist(), words):
            assert row == [replace(dfa, start=q).run(word) for q in range(states)]
            assert len(word) == want[tuple(row)]  # a shortest word
            got.append(tuple(row))
    assert len(got) == len(set(got)) and set(got) == set(want)
    decision = decide(dfa)
    assert decision.monoid_size == len(want)
    assert decision.star_free == (not any(cycles(x) for x in want))


def test_a_dfa_too_large_for_the_cascade_is_refused_before_any_work():
    with pytest.raises(SatsimError, match="2,048 states; its holonomy cascade is built for at"):
        holonomy_program("dyck-2-10")


def near_the_bound(language, count, seed):
    """Bracket strings whose depth hovers at the language's bound, a few with a wrong type."""
    rng = np.random.default_rng(seed)
    pairs, bound, out = language.pairs, language.max_depth, []
    for _ in range(count):
        symbols, stack = [], []
        for _ in range(int(rng.integers(1, 200))):
            if (len(stack) < bound + int(rng.random() < 0.3) and rng.random() < 0.6) or not stack:
                stack.append(int(rng.integers(len(pairs))))
                symbols.append(pairs[stack[-1]][0])
            else:
                kind = stack.pop() if rng.random() > 0.01 else int(rng.integers(len(pairs)))
                symbols.append(pairs[kind][1])
        symbols += [pairs[kind][1] for kind in reversed(stack) if rng.random() < 0.99]
        out.append("".join(symbols))
    return out


@pytest.mark.slow  # runs long
@pytest.mark.parametrize("name", ["dyck-2-3", "dyck-3-3", "dyck-2-10"])
def test_the_nesting_program_of_a_bounded_dyck_language_is_the_language(name):
    """Its meaning and its compiled model against the oracle: every short string, and strings
    whose depth hovers at the bound (one over it is a rejection)."""
    from satsim.engine.simulator import Simulator
    from satsim.rasp import interpreter

    language = languages.get(name)
    program = parse_program(program_text(name), "brasp", name)
    assert sum(d.name.startswith("ahead") for d in program.definitions) == language.max_depth
    meaning = interpreter(program)
    short = every_string(language.alphabet, 5 if len(language.alphabet) > 4 else 6)
    strings = short + near_the_bound(language, 300, seed=len(name))
    want = [language.contains(s) for s in strings]
    assert 30 < sum(want) < len(strings) - 30
    assert [meaning(s) for s in strings] == want
    accepted = Simulator(compile_program(program, name)).accepts(strings)
    assert [bool(a) for a in accepted] == want


def test_the_holonomy_route_still_compiles_a_bounded_dyck_language():
    language = languages.get("dyck-2-3")
    spec = compile_program(parse_program(holonomy_program("dyck-2-3"), "brasp", "h"), "h")
    check = verify(spec, language.contains, language.alphabet, max_len=6, long_count=2,
                   long_len=2_000, extra=near_the_bound(language, 40, seed=1), budget=6_000)
    assert check.ok, check.summary()


@pytest.mark.parametrize(("kinds", "depth"), [(1, 1), (1, 4), (2, 2), (2, 5), (3, 3), (4, 2)])
def test_the_size_of_a_bounded_dyck_monoid_is_known_before_enumerating_it(kinds, depth):
    from satsim.rasp.automata import decide, stack_monoid_size, stack_states

    calls = []
    decision = decide(language_dfa(languages.get(f"dyck-{kinds}-{depth}")),
                      progress=lambda elements, length: calls.append((elements, length)))
    assert decision.dfa_states == stack_states(kinds, depth)
    assert decision.monoid_size == stack_monoid_size(kinds, depth)
    assert calls[-1][0] == decision.monoid_size
    assert [length for _, length in calls] == sorted(length for _, length in calls)


@pytest.mark.parametrize(("name", "reason"), [
    ("dyck-4-8", "has 87,382 states"), ("dyck-4-1000", "has about 10^602 states"),
    ("dyck-1-1000", "deciding dyck-1-1000 (a monoid of 334,835,502 elements on 1,002 states, "
                    "about 12 h) needs about 724.6 GB of memory")])
def test_deciding_a_dyck_language_too_large_is_refused_before_any_work(name, reason):
    from tests.support.helpers import invoke_satsim

    result = invoke_satsim("decide", "--lang", name)
    assert result.returncode == 2 and result.stdout == ""
    line = result.stderr.strip()
    assert "\n" not in line and reason in line and "depth M" in line, line


def test_deciding_a_monoid_that_cannot_fit_in_memory_is_refused_before_any_work(monkeypatch):
    import satsim.engine.resources as resources
    from satsim.rasp.automata import monoid_elements

    monkeypatch.setattr(resources, "available_memory", lambda: 10**6)
    with pytest.raises(SatsimError, match=r"deciding dyck-2-5 \(a monoid of 5,215 elements on 64 "
                                          r"states, about 1 s\) needs about .* smaller depth M"):
        decide_language("dyck-2-5")
    # a monoid not known in advance is refused once its elements fill the memory free
    limit = 10**6 // (2 * 64 + 160)
    with pytest.raises(SatsimError, match=f"more than {limit:,} elements"):
        for _ in monoid_elements(language_dfa(languages.get("dyck-2-5"))):
            pass


def test_the_decide_table_skips_what_would_take_long_and_says_how_long(monkeypatch):
    import json

    from click.testing import CliRunner

    from satsim.cli import decide

    monkeypatch.setattr(decide, "TABLE_SECONDS", 1.0)
    result = CliRunner().invoke(decide.command, ["--json"])
    assert result.exit_code == 0, result.output
    rows = {row["language"]: row for row in json.loads(result.stdout)}
    for name in ("dyck-2-10", "dyck-3-5"):
        assert rows[name]["star_free"] is None
        assert "not decided in the table: a monoid of" in rows[name]["undecided"]
        assert f"satsim decide --lang {name}" in rows[name]["undecided"]
    assert rows["dyck-2-5"]["star_free"] is True and rows["tomita3"]["star_free"] is False


@pytest.mark.slow  # runs long
def test_compiling_a_model_too_large_for_memory_is_refused_while_it_is_laid_out(monkeypatch):
    import satsim.engine.resources as resources
    from satsim.circuits.schedule import MODEL_COPIES

    program = parse_program(program_text("dyck-4-20"), "brasp")
    spec = compile_program(program)
    weights = sum(v.size for k, v in spec.tensors().items() if k.startswith("blocks."))
    monkeypatch.setattr(resources, "available_memory", lambda: MODEL_COPIES * 8 * weights - 1)
    with pytest.raises(SatsimError, match="the compiled model .* weights .* compile a smaller "
                                          "program"):
        compile_program(program)
    monkeypatch.setattr(resources, "available_memory", lambda: MODEL_COPIES * 8 * weights)
    assert compile_program(program).d_model == spec.d_model  # the estimate is the exact count
    monkeypatch.setattr(resources, "available_memory", lambda: 10**8)
    with pytest.raises(SatsimError, match="weights so far"):  # long before the whole layout
        compile_program(parse_program(program_text("dyck-4-1000"), "brasp"))


def markdown_table(text: str, header: str) -> dict[str, dict[str, str]]:
    """The rows of the table under ``header`` (its first line), by their first cell."""
    start = text.index(header)
    lines = text[start:].split("\n\n", 1)[0].splitlines()
    names = [cell.strip() for cell in lines[0].strip("|").split("|")]
    rows = [dict(zip(names, (cell.strip() for cell in line.strip("|").split("|"))))
            for line in lines[2:]]
    return {row[names[0]]: row for row in rows}


def test_the_compiled_sizes_in_docs_rasp_are_the_compilers():
    """The star-free and nesting-program tables of docs/rasp.md, against models compiled now."""

    from satsim.rasp import model_summary
    from satsim.rasp.holonomy import cascade

    text = (REPO / "docs" / "rasp.md").read_text()
    cascades = markdown_table(text, "| language | cascade levels | B-RASP definitions | layers |")
    nesting = markdown_table(text, "| language | B-RASP definitions | layers | heads | d_model |"
                                   " parameters |")
    assert len(cascades) == 10 and len(nesting) == 5
    for name, row in {**cascades, **nesting}.items():
        program = parse_program(program_text(name), "brasp", name)
        spec = compile_program(program, name)
        info = model_summary(spec)
        built = {"B-RASP definitions": len(program.definitions), "layers": info["layers"],
                 "heads": info["heads"], "d_model": info["d_model"]}
        if name in cascades:
            built["cascade levels"] = len(cascade(language_dfa(languages.get(name))).levels)
        else:
            built["parameters"] = sum(array.size for array in spec.tensors().values())
        documented = {key: int(row[key].replace(",", "")) for key in built}
        assert documented == built, name
