"""Inputs as text, tokens or token ids, and the categorical and numerical per-position readouts."""

import json
import random

import numpy as np
import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from satsim import constructions
from satsim.analysis.evaluation import evaluate
from satsim.analysis.measures import decide
from satsim.analysis.traces import render_json, render_text
from satsim.cli.main import cli
from satsim.engine.simulator import Simulator
from satsim.errors import SatsimError, SpecError
from satsim.model.encoding import encode, input_text
from satsim.model.io import load_spec, save_spec
from satsim.model.readout import Tie, categorical
from satsim.model.spec import ModelSpec, OutputSpec
from satsim.saturation.signs import LimitPredictor, limit_signs
from tests.support.helpers import run_satsim

rng = random.Random(15)


def random_strings(alphabet, count=12, longest=9):
    return [""] + ["".join(rng.choice(alphabet) for _ in range(rng.randint(1, longest)))
                   for _ in range(count)]


@pytest.mark.parametrize("name,task", [("dyck1", "recognition"), ("reset-dyck1", "next-symbol"),
                                       ("shuffle-dyck2", "recognition")])
def test_tokens_and_ids_give_what_strings_give(name, task):
    spec = constructions.build(name, task=task)
    strings = random_strings(spec.alphabet)
    as_tokens = [list(s) for s in strings]
    as_ids = [[spec.vocab.index(c) for c in s] for s in strings]
    as_arrays = [np.array(ids, dtype=np.int32) for ids in as_ids]
    for fused in (True, False):
        sim = Simulator(spec, fused=fused)
        expected = sim.logits(strings)
        for inputs in (as_tokens, as_ids, as_arrays):
            for got, want in zip(sim.logits(inputs), expected):
                np.testing.assert_array_equal(got, want)
            assert sim.outputs(inputs) == sim.outputs(strings)
    trace_text, trace_tokens = sim.trace(strings[3]), sim.trace(as_tokens[3])
    assert trace_tokens.string == trace_text.string == strings[3]
    assert render_text(spec, trace_tokens) == render_text(spec, trace_text)


def test_soft_twin_takes_tokens_and_ids(one_torch_thread):
    from satsim.soft import SoftTransformer

    spec = constructions.build("dyck1")
    twin = SoftTransformer.from_spec(spec, device="cpu", dtype="float64")
    strings = ["(()", "()()", ")"]
    ids = [[spec.vocab.index(c) for c in s] for s in strings]
    want = twin.run(strings).logits
    assert np.array_equal(twin.run([list(s) for s in strings]).logits, want)
    assert np.array_equal(twin.run(ids).logits, want)
    assert twin.outputs(ids, beta=1.0) == twin.outputs(strings, beta=1.0)


@pytest.mark.parametrize("bad,message", [
    (["(", "x"], "symbol 'x' at position 1 is not in the alphabet"),
    ("(x", "symbol 'x' at position 1 is not in the alphabet"),
    (["<bos>", "("], "token '<bos>' at position 0 is the BOS/EOS token"),
    ([0, 1], "token id 0 at position 0 is the BOS/EOS token"),
    ([["("], [")", ")"]], "an input is text, a sequence of tokens or a sequence of integer"),
    ([[1, 2]], "an input is text, a sequence of tokens or a sequence of integer"),
    ([1, 7], "token id 7 at position 1 is not an input symbol id"),
    ([1, -1], "token id -1 at position 1 is not an input symbol id"),
    ([1.0, 2.0], "an input is text, a sequence of tokens or a sequence of integer token ids"),
    (["(", 1], "symbol 1 at position 1 is not in the alphabet"),
])
def test_bad_tokens_are_one_line_errors(bad, message):
    spec = constructions.build("dyck1")
    with pytest.raises(SatsimError, match=message) as error:
        Simulator(spec).logits([bad])
    assert "\n" not in str(error.value)
    with pytest.raises(SatsimError, match=message):
        encode(spec, bad)


def word_model(task="categorical", eos=True, w_u=None, labels=("p", "q", "r")):
    """No blocks: the logits are W_E[token] @ W_U, which the tests compute by hand."""
    vocab = ("<s>", "one", "two", "10", "x") + (("</s>",) if eos else ())
    w_e = np.eye(len(vocab))
    if w_u is None:
        w_u = np.zeros((len(vocab), len(labels)))
        w_u[1] = [3.0, 1.0, -1.0]  # one: p
        w_u[2] = [2.0, 2.0, 0.5]  # two: p and q tie
        w_u[3] = [0.0, 0.0, 0.25]  # 10: r
        w_u[4] = [1.0, 1.0, 1.0]  # x: all three tie
    output = OutputSpec(W_U=w_u, labels=labels, task=task, readout="per-position")
    return ModelSpec(vocab=vocab, W_E=w_e, output=output, bos="<s>",
                     eos="</s>" if eos else None, name="words")


def test_text_of_a_token_model_is_split_on_whitespace():
    spec = word_model()
    assert not spec.character_symbols
    sim = Simulator(spec)
    want = sim.logits([["two", "10", "one"]])[0]
    np.testing.assert_array_equal(sim.logits(["two  10 one"])[0], want)
    np.testing.assert_array_equal(sim.logits([[2, 3, 1]])[0], want)
    assert input_text(spec, encode(spec, ["two", "10"])) == "two 10"
    with pytest.raises(SatsimError, match="symbol 'three' at position 1"):
        sim.logits(["one three"])


def digit_model() -> ModelSpec:
    """Ten one-character tokens "0" … "9", no BOS/EOS, per-position categorical (a TL import)."""
    vocab = tuple(str(i) for i in range(10))
    w_u = np.eye(10)[:, [0, 3, 4]] * np.arange(1, 11)[:, None]
    output = OutputSpec(W_U=w_u, labels=("a", "b", "c"), task="categorical",
                        readout="per-position")
    return ModelSpec(vocab=vocab, W_E=np.eye(10), output=output, name="digits")


def test_one_character_tokens_may_be_separated_by_spaces(tmp_path):
    # docs/interop.md: `satsim run --model m.safetensors "3 1 4"`, for a TransformerLens model
    # of ten tokens or fewer, was refused (the space is no symbol).
    spec = digit_model()
    assert spec.character_symbols
    for fused in (True, False):
        sim = Simulator(spec, fused=fused)
        want = sim.logits(["314", "0"])
        for got, expected in zip(sim.logits(["3 1 4", " 0 "]), want):
            np.testing.assert_array_equal(got, expected)
    with pytest.raises(SatsimError, match="symbol '31' at position 0 is not in the alphabet"):
        Simulator(spec).logits(["31 4"])
    save_spec(spec, tmp_path / "m.safetensors")
    result = CliRunner().invoke(cli, ["run", "--model", str(tmp_path / "m.safetensors"), "3 1 4",
                                      "314"])
    assert result.exit_code == 0, result.output
    assert result.output.splitlines() == ["'3 1 4': b tie(a|b|c) c", "'314': b tie(a|b|c) c"]


def test_categorical_reads_the_largest_logit_and_reports_ties():
    sim = Simulator(word_model())
    got = sim.outputs([["one", "two", "10", "x"], []])
    assert got == [["p", Tie(("p", "q")), "r", Tie(("p", "q", "r"))], []]
    assert str(got[0][1]) == "tie(p|q)" and Tie(("p", "q")) != "p"


def test_categorical_tie_tolerance():
    rows = np.array([[1.0, 1.0 - 1e-12, 0.0], [1.0, 1.0 - 1e-3, 0.0]])
    assert categorical(("a", "b", "c"), rows, 1e-9, 1e-9) == [Tie(("a", "b")), "a"]


def test_numerical_reads_one_logit_at_every_input_token():
    w_u = np.array([[0.0], [0.5], [-2.25], [1e-3], [7.0], [99.0]])
    spec = word_model("numerical", w_u=w_u, labels=("value",))
    assert Simulator(spec).outputs([["x", "one", "two", "10"]]) == [[7.0, 0.5, -2.25, 1e-3]]
    no_eos = word_model("numerical", eos=False, w_u=w_u[:5], labels=("value",))
    assert Simulator(no_eos).outputs(["two"]) == [[-2.25]]


def test_per_position_outputs_need_a_valid_output_spec():
    with pytest.raises(SpecError, match="numerical output has exactly one logit"):
        word_model("numerical")
    with pytest.raises(SpecError, match="read at every position"):
        OutputSpec(W_U=np.zeros((3, 2)), labels=("a", "b"), task="categorical", readout="last")
    with pytest.raises(SpecError, match="a next-symbol output is read at every position"):
        OutputSpec(W_U=np.zeros((3, 2)), labels=("a", "b"), task="next-symbol", readout="last")
    with pytest.raises(SpecError, match="labels must be distinct"):
        OutputSpec(W_U=np.zeros((3, 2)), labels=("a", "a"), task="categorical",
                   readout="per-position")


def test_traces_show_the_outputs():
    spec = word_model()
    trace = Simulator(spec).trace(["one", "two"])
    assert "categorical outputs per token: p tie(p|q)" in render_text(spec, trace)
    assert render_json(spec, trace)["outputs"] == ["p", {"tie": ["p", "q"]}]
    assert trace.tokens == ("<s>", "one", "two", "</s>")


def test_language_analyses_refuse_per_position_models():
    import languages

    spec = word_model()
    for call in (lambda: evaluate(Simulator(spec), languages.get("dyck1"), n=2),
                 lambda: LimitPredictor(spec),
                 lambda: decide(spec, np.zeros((3, 3)))):
        with pytest.raises(SatsimError, match="needs a recognition or next-symbol model") as e:
            call()
        assert "\n" not in str(e.value)
    # the sign of every logit in the limit is defined for any task
    signs = limit_signs(spec, ["one two"]).signs[0]
    assert signs.shape == (4, len(spec.output.labels))


def test_token_model_saves_and_loads(tmp_path):
    spec = word_model()
    save_spec(spec, tmp_path / "words.safetensors")
    loaded = load_spec(tmp_path / "words.safetensors")
    assert loaded.vocab == spec.vocab and loaded.output.labels == spec.output.labels
    assert loaded.output.task == "categorical" and loaded.eos == "</s>"
    assert Simulator(loaded).outputs(["one 10"]) == [["p", "r"]]


@pytest.mark.slow  # a fresh process
def test_cli_runs_token_models(tmp_path):
    path = tmp_path / "words.safetensors"
    save_spec(word_model(), path)
    runner = CliRunner()
    result = runner.invoke(cli, ["run", "--model", str(path), "one two", "10"])
    assert result.exit_code == 0, result.output
    assert result.output.splitlines() == ["'one two': p tie(p|q)", "'10': r"]
    result = runner.invoke(cli, ["run", "--model", str(path), "--json", "x 10"])
    assert json.loads(result.output) == {"string": "x 10", "tokens": 2,
                                         "answer": [{"tie": ["p", "q", "r"]}, "r"]}
    result = runner.invoke(cli, ["trace", "--model", str(path), "two"])
    assert result.exit_code == 0 and "outputs per token: tie(p|q)" in result.output
    for args, message in ((["run", "--model", str(path), "one zz"], "symbol 'zz' at position 1"),
                          (["run", "--model", str(path), "--lang", "dyck1", "one"],
                           "needs a recognition or next-symbol model")):
        result = run_satsim(*args)
        assert result.returncode == 2 and result.stderr.startswith("error: ")
        assert message in result.stderr and len(result.stderr.strip().splitlines()) == 1
    assert "separated by spaces" in runner.invoke(cli, ["run", "--help"]).output


@pytest.mark.slow  # a fresh process
def test_head_roles_of_a_model_without_a_language(tmp_path):
    from satsim.analysis.strings import sample_strings

    spec = word_model()
    inputs = sample_strings(spec, None, 30, 4, seed=3, min_len=2)
    assert inputs == sample_strings(spec, None, 30, 4, seed=3, min_len=2)
    for text in inputs:  # multi-character symbols: tokens separated by spaces
        assert 2 <= len(text.split(" ")) <= 4 and set(text.split(" ")) <= set(spec.alphabet)
    path = tmp_path / "words.safetensors"
    save_spec(spec, path)
    result = run_satsim("roles", "--model", str(path), "-n", "8", "--max-len", "5", "--json")
    assert result.returncode == 0, result.stderr
    heads = [(r["layer"], r["head"]) for r in json.loads(result.stdout)]
    assert heads == [(layer, head) for layer, block in enumerate(spec.blocks)
                     for head in range(block.attn.n_heads)]
    result = run_satsim("roles", "--model", str(path), "--min-len", "6", "--max-len", "5")
    assert result.returncode == 2 and result.stderr == "error: --min-len 6 is above --max-len 5\n"


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from(["one", "two", "10", "x"]), max_size=8),
       st.text(alphabet="ontwx10 ", min_size=1, max_size=4))
def test_token_forms_agree_and_the_first_bad_token_is_named(tokens, other):
    spec = word_model()
    want = encode(spec, tokens)
    assert np.array_equal(encode(spec, " ".join(tokens)), want)
    assert np.array_equal(encode(spec, [spec.vocab.index(t) for t in tokens]), want)
    assert want[0] == 0 and want[-1] == len(spec.vocab) - 1
    if other.strip() and other.strip() not in spec.alphabet and " " not in other.strip():
        with pytest.raises(SatsimError, match=f"symbol '{other.strip()}' at position "
                                              f"{len(tokens)} is not in the alphabet"):
            encode(spec, tokens + [other.strip()])
