"""Regular expressions and user automata: against Python's re and a brute-force monoid."""

import json
import re

import networkx as nx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from satsim.errors import SatsimError
from satsim.rasp import compile_program, parse_program, verify
from satsim.rasp.automaton_io import dfa_from_graph, dfa_from_json
from satsim.rasp.batch import BatchSettings, expression_row, read_expressions, run_batch
from satsim.rasp.determinise import regex_dfa
from satsim.rasp.regex import parse_regex
from satsim.rasp.regular import (
    automaton_language,
    decide_user,
    dfa_minimised,
    dfa_program,
    regex_language,
)
from tests.support.helpers import every_string

ABC = "abc"


WORDS8 = every_string(ABC, 8)

# Each strategy draws an expression twice: in satsim's syntax and, written here independently of
# the parser, in Python's re syntax.
leaves = st.one_of(
    st.sampled_from(ABC).map(lambda s: (s, s)),
    st.sampled_from([("ε", "(?:)"), ("()", "(?:)"), ("∅", "(?!)"), ("[]", "(?!)"),
                     ("[ab]", "[ab]"), ("[a-c]", "[abc]"), ("[b-c]", "[bc]"), ("[^a]", "[bc]"),
                     ("[^ac]", "b")]),
)


def _compound(children):
    pair = st.tuples(children, children)
    return st.one_of(
        pair.map(lambda p: (f"({p[0][0]}){p[1][0]}", f"(?:{p[0][1]})(?:{p[1][1]})")),
        st.tuples(pair, st.sampled_from(["+", "|", " + "])).map(
            lambda q: (f"({q[0][0][0]}{q[1]}{q[0][1][0]})",
                       f"(?:(?:{q[0][0][1]})|(?:{q[0][1][1]}))")),
        children.map(lambda c: (f"({c[0]})*", f"(?:{c[1]})*")),
        children.map(lambda c: (f"({c[0]})?", f"(?:{c[1]})?")),
    )


expressions = st.recursive(leaves, _compound, max_leaves=10)


@settings(max_examples=100, deadline=None, derandomize=True)
@given(expressions)
def test_the_minimal_dfa_of_an_expression_is_pythons_re_on_every_string_to_length_8(pair):
    ours, python = pair
    language = regex_language(ours, ABC)
    pattern = re.compile(python)
    want = [pattern.fullmatch(w) is not None for w in WORDS8]
    assert [language.dfa.accepts(w) for w in WORDS8] == want
    assert dfa_minimised(language.dfa).states == language.dfa.states  # nothing merges further
    # the translation the compiled models are checked against (stars in star normal form)
    assert [language.contains(w) for w in WORDS8] == want


@pytest.mark.parametrize("ours, python", [
    ("a(b|c)*", "a(b|c)*"), ("(a+b)*a(a+b)", "(a|b)*a(a|b)"), ("ab*c + ca*", "ab*c|ca*"),
    ("a??b**", "a?b*"), ("(a?)*", "a*"), ("a*?", "a*"), ("[a-b]c?", "[ab]c?"),
    (r"a\+b", r"a\+b"), ("a\\ b", "a b")])
def test_written_expressions_mean_what_docs_regular_says(ours, python):
    language = regex_language(ours)
    for word in every_string(language.alphabet, 6):
        assert language.dfa.accepts(word) == (re.fullmatch(python, word) is not None), word
        assert language.contains(word) == language.dfa.accepts(word)


@pytest.mark.parametrize("text, column, message", [
    ("a+", 3, "nothing on its right"), ("(a", 1, "never closed"), ("ab)", 3, "closes no"),
    ("*a", 1, "applies to nothing"), ("a||b", 3, "nothing on its left"), ("[ab", 1, "never"),
    ("[c-a]", 2, "reversed"), ("a\\", 2, "escapes nothing"), ("a]", 2, "closes no '['"),
    ("(a+)", 4, "nothing on its right"), ("", 1, "empty")])
def test_a_malformed_expression_is_one_line_naming_the_column(text, column, message):
    with pytest.raises(SatsimError, match=rf"^column {column}: .*{re.escape(message)}") as info:
        parse_regex(text)
    assert "\n" not in str(info.value)


def test_the_alphabet_is_the_symbols_used_or_the_one_given():
    assert parse_regex("b(a+c)").alphabet == ("a", "b", "c")
    assert parse_regex("[^a]", "abc").python_pattern() == "[bc]"
    with pytest.raises(SatsimError, match="column 4: symbol 'd' is not in the alphabet 'abc'"):
        parse_regex("ab d", "abc")
    with pytest.raises(SatsimError, match="uses no symbol"):
        parse_regex("()")


# Exact aperiodicity, by brute force: Myhill–Nerode classes told apart by every word of up to
# n symbols, the monoid by closure on the classes, and x^m = x^(m+1) tested with m past n.
def brute_force(dfa):
    n = dfa.states
    tests = every_string(dfa.alphabet, n)

    def signature(q):
        return tuple(_run(dfa, q, w) in dfa.accepting for w in tests)

    reachable = {_run(dfa, dfa.start, w) for w in every_string(dfa.alphabet, n)}
    classes = {}
    for q in sorted(reachable):
        classes.setdefault(signature(q), len(classes))
    of = {q: classes[signature(q)] for q in reachable}
    states = sorted(set(of.values()))
    rep = {c: min(q for q in reachable if of[q] == c) for c in states}
    letters = [tuple(of[dfa.delta[rep[c]][a]] for c in states) for a in range(len(dfa.alphabet))]
    monoid, frontier = {tuple(states)}, [tuple(states)]
    while frontier:
        frontier = [y for x in frontier for y in (tuple(g[q] for q in x) for g in letters)
                    if y not in monoid and not monoid.add(y)]

    def power(x, k):
        y = tuple(states)
        for _ in range(k):
            y = tuple(x[q] for q in y)
        return y

    aperiodic = all(power(x, len(states) + 1) == power(x, len(states) + 2) for x in monoid)
    return aperiodic, len(states), len(monoid)


def _run(dfa, q, word):
    for symbol in word:
        q = dfa.delta[q][dfa.alphabet.index(symbol)]
    return q


@st.composite
def partial_automata(draw):
    """satsim's JSON format: named states, some transitions left out (they go to the sink)."""
    states = [f"q{i}" for i in range(draw(st.integers(1, 5)))]
    alphabet = ABC[:draw(st.integers(1, 3))]
    transitions = {q: {a: draw(st.sampled_from(states)) for a in alphabet
                       if draw(st.integers(0, 5))} for q in states}
    accepting = [q for q in states if draw(st.booleans())]
    return {"alphabet": alphabet, "states": states, "start": draw(st.sampled_from(states)),
            "accepting": accepting, "transitions": transitions}


@settings(max_examples=120, deadline=None, derandomize=True)
@given(data=partial_automata())
def test_star_freeness_of_random_automata_matches_a_brute_force_monoid(tmp_path_factory, data):
    path = tmp_path_factory.mktemp("dfa") / "a.json"
    path.write_text(json.dumps(data))
    language = automaton_language(path)
    verdict = decide_user(language)
    aperiodic, states, size = brute_force(dfa_from_json(data))
    assert (verdict.star_free, verdict.dfa_states, verdict.monoid_size) == \
        (aperiodic, states, size)
    for word in every_string(language.alphabet, 5):
        assert language.dfa.accepts(word) == language.contains(word)
    # the same automaton in automata-lib's shape and as a networkx graph
    shaped = {"states": data["states"], "input_symbols": list(data["alphabet"]),
              "transitions": data["transitions"], "initial_state": data["start"],
              "final_states": data["accepting"]}
    graph = nx.MultiDiGraph()
    graph.add_nodes_from((q, {"accepting": q in data["accepting"]}) for q in data["states"])
    graph.add_edges_from((q, t, {"label": a}) for q, moves in data["transitions"].items()
                         for a, t in moves.items())
    as_graph = dfa_from_graph(graph, data["start"], alphabet=data["alphabet"])
    for other in (dfa_from_json(shaped), as_graph):
        for word in every_string(other.alphabet, 5):
            assert other.accepts(word) == language.contains(word)


def test_a_networkx_graph_with_symbol_lists_on_edges_and_a_start_attribute():
    graph = nx.DiGraph()
    graph.add_node(0, start=True)
    graph.add_node(1, accepting=True)
    graph.add_edge(0, 1, label="ab")  # either symbol
    graph.add_edge(1, 1, label=["a"])
    dfa = dfa_from_graph(graph)
    assert [dfa.accepts(w) for w in ["", "a", "b", "ba", "bb", "aaa"]] == \
        [False, True, True, True, False, True]
    many = nx.MultiDiGraph([(0, 1, {"label": "a"}), (0, 0, {"label": "a"})])
    with pytest.raises(SatsimError, match="two edges on 'a'"):
        dfa_from_graph(many, 0)


def test_the_suites_own_graphs_read_as_networkx_automata_decide_as_the_suite_does():
    import languages
    from satsim.rasp import decide_language
    from satsim.rasp.regular import UserLanguage

    for name in ["tomita3", "tomita4", "first", "even-pairs"]:
        graph = languages.get(name).graph  # edges keyed by symbol, "accept", graph["start"]
        dfa = dfa_from_graph(graph)
        for word in every_string(dfa.alphabet, 6):
            assert dfa.accepts(word) == languages.get(name).contains(word)
        mine = decide_user(UserLanguage(name, dfa_minimised(dfa), dfa.accepts))
        assert mine == decide_language(name)


@pytest.mark.parametrize("data, message", [
    ({"alphabet": "ab", "start": 0, "accepting": []}, "missing transitions"),
    ({"alphabet": ["ab"], "start": 0, "accepting": [], "transitions": {}}, "not one character"),
    ({"alphabet": "ab", "start": 0, "accepting": [7], "transitions": {}}, "7 is not a state"),
    ({"alphabet": "a", "start": 0, "accepting": [], "transitions": {"0": {"b": 0}}},
     "reads 'b', which is not in the alphabet"),
    ({"alphabet": "a", "start": 0, "accepting": [], "transitions": {"0": {"a": [0, 1]}}},
     "not one state"),
    ([1, 2], "expected a JSON object")])
def test_a_malformed_automaton_is_one_line(data, message):
    with pytest.raises(SatsimError, match=re.escape(message)):
        dfa_from_json(data)


def test_a_star_free_expression_compiles_into_a_model_that_is_the_expression():
    language = regex_language("(a+b)*ab(a+c)*")
    spec = compile_program(parse_program(dfa_program(language.dfa, language.name), "brasp", "x"))
    check = verify(spec, language.contains, language.alphabet, max_len=8, long_count=4,
                   long_len=2_000)
    assert check.ok and check.exhaustive_strings == len(WORDS8), check.summary()


def test_quotes_and_backslashes_are_symbols_of_the_program_too_and_spaces_are_refused():
    language = regex_language(r'a"\\b*')
    assert language.alphabet == ('"', "\\", "a", "b")
    spec = compile_program(parse_program(dfa_program(language.dfa, "q"), "brasp", "q"))
    assert verify(spec, language.contains, language.alphabet, max_len=5, long_count=0).ok
    with pytest.raises(SatsimError, match="symbol ' ' is not a visible character"):
        dfa_program(regex_language(r"a\ b").dfa, "s")


def test_an_expression_that_is_not_star_free_is_refused_with_its_witness():
    with pytest.raises(SatsimError, match=r"x is not star-free.*the word 'a' .*period 6"):
        dfa_program(regex_language("(aaa)*b+(aa)*").dfa, "x")


# Hostile expressions: each refused with its reason, within a bound.
def test_an_exponential_determinisation_is_refused():
    with pytest.raises(SatsimError, match="more than 20,000 DFA states .*exponential"):
        regex_dfa(parse_regex("(a+b)*a" + "(a+b)" * 20))
    with pytest.raises(SatsimError, match="more than 100 DFA states"):
        regex_dfa(parse_regex("(a+b)*a" + "(a+b)" * 7), max_states=100)


def test_deep_nesting_and_very_long_expressions_are_refused_or_done_within_the_bounds():
    with pytest.raises(SatsimError, match="column 101: parentheses nested deeper than 100"):
        parse_regex("(" * 40_000 + "a" + ")" * 40_000)
    assert parse_regex("(" * 100 + "a" + ")" * 100).tree == ("set", frozenset("a"))
    with pytest.raises(SatsimError, match="at most 100,000 are parsed"):
        parse_regex("a" * 100_001)
    assert regex_dfa(parse_regex("ab" * 2_000)).states == 4_002  # a word and the sink
    assert regex_dfa(parse_regex("a" + "*" * 50_000)).states == 1  # a** is a*
    with pytest.raises(SatsimError, match="takes more than 10,000 steps"):
        regex_dfa(parse_regex("(a+b)*" * 2_000), max_work=10_000)


def test_a_monoid_past_its_bound_is_refused():
    language = regex_language("(a+b)*a(a+b)(a+b)(a+b)")
    size = decide_user(language).monoid_size
    with pytest.raises(SatsimError, match=f"more than {size - 1:,} elements"):
        decide_user(language, max_monoid=size - 1)


@pytest.mark.slow  # runs long
def test_the_batch_refuses_what_passes_a_bound_and_goes_on():
    assert read_expressions(["# a comment\n", "a*\n", "  \n", "(b+a)?\n"]) == ["a*", "(b+a)?"]
    slow = "(" + "+".join(f"a{'b' * (i % 40)}c" for i in range(4_000)) + ")*"  # about 2 s
    settings_ = BatchSettings(alphabet=ABC, compile=True, max_len=6, timeout=0.3)
    rows = list(run_batch(["(a+b)*c", slow, "(aa)*", "a+", "b?c"], settings_, jobs=2))
    assert [row["expression"] for row in rows] == ["(a+b)*c", slow, "(aa)*", "a+", "b?c"]
    assert rows[0]["star_free"] and rows[0]["check"]["wrong"] == 0
    assert rows[0]["check"]["strings"] == len(every_string(ABC, 6))
    assert rows[1]["refused"] in ("took more than 0.3 s of CPU time", "took more than 3 s")
    assert rows[2]["star_free"] is False and rows[2]["witness"] == {"word": "a", "period": 2}
    assert "column 3" in rows[3]["refused"]
    assert rows[4] == {**expression_row("b?c", settings_), "seconds": rows[4]["seconds"]}


def test_the_batch_refuses_an_expression_past_its_memory_bound():
    rows = list(run_batch(["(a+b)*a(a+b)(a+b)(a+b)(a+b)(a+b)(a+b)(a+b)(a+b)(a+b)(a+b)(a+b)"],
                          BatchSettings(memory_mb=1)))
    assert rows[0]["refused"] == "needed more than 1 MiB"


@pytest.mark.slow  # runs long
def test_the_command_line(tmp_path):
    from tests.support.helpers import invoke_satsim

    decided = invoke_satsim("decide", "--regex", "a(b|c)*", "--json")
    assert json.loads(decided.stdout) == {
        "expression": "a(b|c)*", "alphabet": "abc", "star_free": True, "dfa_states": 3,
        "monoid_size": 4, "witness": None}
    out = tmp_path / "m.safetensors"
    compiled = invoke_satsim("compile", "--regex", "(a+b)*bb", "--alphabet", "abc", "-o", str(out),
                          "--max-len", "6", "--long", "3", "--json")
    info = json.loads(compiled.stdout)
    assert info["verification"]["ok"] and info["verification"]["exhaustive_strings"] == 1093
    assert info["verification"]["long_accepted"] >= 1  # the positives sampled from the DFA
    assert out.stat().st_size > 0
    automaton = tmp_path / "even.json"
    automaton.write_text(json.dumps({"alphabet": "a", "start": 0, "accepting": [0],
                                     "transitions": {"0": {"a": 1}, "1": {"a": 0}}}))
    listed = tmp_path / "list.txt"
    listed.write_text("# two\n(ab)*\n(a+b\n")
    batch = invoke_satsim("decide", "--regex-file", str(listed), "--json", "--compile")
    rows = [json.loads(line) for line in batch.stdout.splitlines()]
    assert rows[0]["check"]["wrong"] == 0 and "column 1" in rows[1]["refused"]
    assert "[2/2]" in batch.stderr
    for args, message in [
            (["decide", "--regex", "a+"], "column 3: a union ('+' or '|') has nothing"),
            (["decide", "--regex", "(a+b)*a" + "(a+b)" * 20], "exponential blow-up"),
            (["decide", "--dfa", str(automaton)], None),
            (["compile", "--dfa", str(automaton)], "even.json is not star-free"),
            (["compile", "--regex", "(aa)*"], "(aa)* is not star-free"),
            (["decide", "--regex", "a", "--dfa", str(automaton)], "give one of --regex, --dfa"),
            (["decide", "--compile"], "--compile goes with --regex-file")]:
        result = invoke_satsim(*args)
        if message is None:
            assert result.returncode == 0 and "no" in result.stdout
            continue
        assert result.returncode == 2, (args, result.stderr)
        assert result.stderr.startswith("error: ") and message in result.stderr
        assert result.stderr.count("\n") == 1


@pytest.mark.parametrize("options", [["--memory", "5"], ["--timeout", "1"], ["--jobs", "1"],
                                     ["--max-len", "3"]])
def test_batch_options_without_a_batch_are_refused_not_ignored(options):
    from tests.support.helpers import invoke_satsim

    result = invoke_satsim("decide", "--lang", "first", *options)
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr.startswith("error: ") and options[0] in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
