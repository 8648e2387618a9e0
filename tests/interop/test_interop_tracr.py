"""tracr-compiled RASP programs as specs: saturated attention gives rasp.evaluate's outputs.

The oracle is RASP's own evaluator (``rasp.evaluate``), whose outputs the fixtures in
tests/data/tracr/ hold beside tracr's compiled outputs (``scripts/tracr_fixtures.py`` wrote
them with tracr-pypi 1.0.0). The live test compiles a program when tracr is installed.
"""

import math

import numpy as np
import pytest

from satsim.engine.simulator import Simulator
from satsim.errors import SatsimError
from satsim.interop.tracr import load_tracr_fixture, spec_from_tracr_arrays
from satsim.model.readout import Tie
from satsim.model.spec import PositionalSpec
from tests.support.paths import DATA, REPO

FIXTURES = sorted((DATA / "tracr").glob("*.json"))


def agrees(outputs: list, expected: list, atol: float, argmax: bool = False) -> bool:
    """Labels equal the program's values (as text); numbers within atol; a tie never agrees,
    unless ``argmax`` (tracr's own readout, which takes one of the tied labels)."""
    return len(outputs) == len(expected) and all(
        abs(got - want) <= atol if isinstance(got, float) and want is not None
        else str(want) in got.labels if isinstance(got, Tie) and argmax
        else not isinstance(got, Tie) and got == str(want)
        for got, want in zip(outputs, expected))


@pytest.fixture(scope="module", params=FIXTURES, ids=lambda path: path.stem)
def fixture(request):
    return load_tracr_fixture(request.param)


def test_fixtures_cover_the_seven_programs():
    programs = {path.stem.rsplit("_n", 1)[0] for path in FIXTURES}
    assert programs == {"frac_prevs", "pair_balance", "length", "hist", "sort_unique", "reverse",
                        "sort_freq"}


def test_saturated_outputs_equal_rasp_evaluate(fixture):
    """In float64, on every fixture (tracr's own model is wrong on many of the long ones)."""
    spec, description = fixture
    cases = description["cases"]
    outputs = Simulator(spec).outputs([case["tokens"] for case in cases])
    wrong = [(case["tokens"], got) for case, got in zip(cases, outputs)
             if not agrees(got, case["rasp"], 1e-9)]
    assert not wrong, wrong[:2]


@pytest.mark.slow  # runs long
@pytest.mark.parametrize("path", FIXTURES, ids=lambda path: path.stem)
def test_a_float32_import_is_refused_or_exact(path):
    """float32 imports where its rounding keeps every tie set, and is then exact; where it is
    refused, the float32 model (cast without the check) is indeed wrong on some input."""
    try:
        spec, description = load_tracr_fixture(path, dtype=np.float32)
    except SatsimError as error:
        assert "\n" not in str(error) and "float32 cannot hold the ties" in str(error)
        spec, description = load_tracr_fixture(path)
        spec, refused = spec.astype(np.float32), True
    else:
        assert spec.dtype == np.float32
        refused = False
    cases = description["cases"]
    outputs = Simulator(spec).outputs([case["tokens"] for case in cases])
    exact = all(agrees(got, case["rasp"], 1e-5) for case, got in zip(cases, outputs))
    assert exact != refused


def test_sort_freq_at_32_is_refused_in_float32():
    """Issue 25's case: float32 splits its tie sets (mlp_exactness 10⁴ turns 1/(w + 1) into
    counts), so it is refused, naming the head; float64 is exact."""
    path = FIXTURES[0].parent / "sort_freq_n32.json"
    with pytest.raises(SatsimError, match=r"float32 cannot hold the ties .* layer \d head 0"):
        load_tracr_fixture(path, dtype=np.float32)


@pytest.mark.slow  # runs long
def test_softmax_at_beta_one_is_tracr_own_model(fixture, one_torch_thread):
    from satsim.soft import SoftTransformer

    spec, description = fixture
    cases = description["cases"]
    inputs = [case["tokens"] for case in cases]
    twin = SoftTransformer.from_spec(spec, device="cpu", dtype="float64").outputs(inputs, beta=1.0)
    simulated = Simulator(spec, "softmax", beta=1.0).outputs(inputs)
    for case, from_twin, from_simulator in zip(cases, twin, simulated):
        assert agrees(from_twin, case["tracr"], 1e-5, argmax=True)  # tracr ran in float32
        assert agrees(from_simulator, case["tracr"], 1e-5, argmax=True)


@pytest.mark.parametrize("name", ["frac_prevs_n20", "pair_balance_n20"])
def test_where_tracr_is_wrong_saturated_is_right_and_softmax_is_tracr(name):
    spec, description = load_tracr_fixture(FIXTURES[0].parent / f"{name}.json")
    wrong = [case for case in description["cases"] if not agrees(
        [float(v) for v in case["tracr"]], case["rasp"], 1e-5)]
    assert len(wrong) >= 5  # tracr's coldness 100/√key_size is too warm at max_seq_len 20
    inputs = [case["tokens"] for case in wrong]
    saturated = Simulator(spec).outputs(inputs)
    softmax = Simulator(spec, "softmax", beta=1.0).outputs(inputs)
    for case, hard, soft in zip(wrong, saturated, softmax):
        assert agrees(hard, case["rasp"], 1e-9) and agrees(soft, case["tracr"], 1e-5)


def test_spec_is_tracr_layout(fixture):
    spec, description = fixture
    assert spec.bos == description["bos_token"]
    assert description["pad_token"] not in spec.vocab
    assert set(spec.alphabet) == set(description["input_vocab"]) - {"BOS", "compiler_pad"}
    assert spec.n_layers == description["num_layers"]
    assert not spec.positional.W_pos[0].any()  # the BOS position carries no index
    attn = spec.blocks[0].attn
    assert math.isclose(attn.score_scale, 1 / math.sqrt(description["key_size"]))
    assert attn.mask == ("causal" if description["causal"] else "bidirectional")
    assert spec.norm == "none"
    output = description["output"]
    if output["kind"] == "categorical":
        assert spec.output.labels == tuple(str(v) for v in output["values"])
    else:
        assert spec.output.task == "numerical"
    w_u = spec.output.W_U
    read = [description["residual_labels"][int(np.argmax(column))] for column in w_u.T]
    assert read == description["output_labels"] and w_u.sum() == len(read)


@pytest.mark.parametrize("name", ["reverse_n10", "sort_unique_n10", "frac_prevs_n10"])
def test_a_shifted_position_table_breaks_exactness(name):
    """The check can fail: indices off by one row give wrong outputs on some inputs."""
    spec, description = load_tracr_fixture(FIXTURES[0].parent / f"{name}.json")
    rolled = np.roll(spec.positional.W_pos, 1, axis=0)
    from dataclasses import replace

    broken = replace(spec, positional=PositionalSpec(kind="learned", W_pos=rolled))
    cases = description["cases"]
    outputs = Simulator(broken).outputs([case["tokens"] for case in cases])
    assert not all(agrees(got, case["rasp"], 1e-9) for case, got in zip(cases, outputs))


def test_import_refuses_what_tracr_does_not_make():
    spec_path = FIXTURES[0]
    _, description = load_tracr_fixture(spec_path)
    with np.load(spec_path.with_suffix(".npz")) as arrays:
        params = {key: arrays[key] for key in arrays.files}
    layout = {key: description[key] for key in ("num_heads", "key_size", "causal", "input_vocab",
                                                "bos_token", "residual_labels", "output_labels")}
    values = description["output"].get("values")
    with pytest.raises(SatsimError, match="no layer norm and ReLU MLPs"):
        spec_from_tracr_arrays(params, **layout, output_values=values, layer_norm=True)
    with pytest.raises(SatsimError, match="output direction 'nowhere' is not in the residual"):
        spec_from_tracr_arrays(params, **(layout | {"output_labels": ["nowhere"]}),
                               output_values=None)
    with pytest.raises(SatsimError, match="does not hold 1 heads of size 3"):
        spec_from_tracr_arrays(params, **(layout | {"key_size": 3}), output_values=values)
    del params["pos_embed/embeddings"]
    with pytest.raises(SatsimError, match="tracr parameters lack 'pos_embed/embeddings'"):
        spec_from_tracr_arrays(params, **layout, output_values=values)


LIVE_CHECK = """
import itertools, sys
from tests.interop.test_interop_tracr import agrees
from tracr.compiler import compiling, lib
from tracr.rasp import rasp
from dataclasses import replace
import numpy as np
from satsim import Simulator
from satsim.errors import SatsimError
from satsim.interop import from_tracr
from satsim.interop.tracr_checks import check_against_tracr, probe_inputs
from satsim.model.spec import PositionalSpec

def refused(*args, **options):
    try:
        from_tracr(*args, **options)
    except SatsimError as error:
        assert "\\n" not in str(error)
        return str(error)
    raise AssertionError("imported")

program = lib.make_hist()
vocab = ["a", "b", "c"]
assembled = compiling.compile_rasp_to_model(program, vocab=set(vocab), max_seq_len=4,
                                            compiler_bos="BOS", mlp_exactness=100)
spec = from_tracr(assembled, program)  # checked against assembled.apply on the probe
inputs = [list(t) for n in range(1, 5) for t in itertools.product(vocab, repeat=n)]
for tokens, got in zip(inputs, Simulator(spec).outputs(inputs)):
    assert agrees(got, rasp.evaluate(program, tokens), 0), tokens
for tokens, got in zip(inputs[::7], Simulator(spec, "softmax").outputs(inputs[::7])):
    assert agrees(got, assembled.apply(["BOS", *tokens]).decoded[1:], 1e-5), tokens
print("checked", len(inputs))

# A program that is not the compiled output: another value set, another kind.
assert "the output encoder has" in refused(assembled, rasp.tokens)
assert "is numerical, but tracr compiled a categorical" in refused(
    assembled, rasp.numerical(rasp.Map(lambda t: 1, rasp.tokens)))
# The probe: a position table rolled by one row is caught at the embedding.
rolled = replace(spec, positional=PositionalSpec(
    kind="learned", W_pos=np.roll(spec.positional.W_pos, 1, axis=0)))
try:
    check_against_tracr(assembled, rolled, probe_inputs(spec), program.label)
    raise AssertionError("not caught")
except SatsimError as error:
    assert "first at the embedding" in str(error), error

# Same label values, another SOp: only running tracr's model tells them apart.
shifted = rasp.categorical(rasp.SequenceMap(lambda t, i: (i + 1) % 3, rasp.tokens,
                                            rasp.indices)).named("shifted")
assembled = compiling.compile_rasp_to_model(shifted, vocab={"a"}, max_seq_len=3,
                                            compiler_bos="BOS")
assert "not the output tracr compiled" in refused(assembled, rasp.indices)
assert from_tracr(assembled, shifted).output.labels == ("0", "1", "2")
print("refused")
"""


@pytest.mark.slow  # a fresh process
@pytest.mark.tracr
def test_live_compile_matches_rasp_and_tracr():
    """Compile small programs with tracr; compare on every input up to length 4; refusals.

    It runs in its own process: JAX starts threads, and later tests fork (Ray), which JAX warns
    may deadlock. tracr is in the test extra: without it this fails, never skips.
    """
    import subprocess
    import sys

    result = subprocess.run([sys.executable, "-c", LIVE_CHECK], capture_output=True, text=True,
                            timeout=600, cwd=REPO)  # the check imports tests.interop
    assert result.returncode == 0, result.stderr[-2000:]
    assert "checked 120" in result.stdout and "refused" in result.stdout
