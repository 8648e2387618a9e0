"""The fused per-string forward kernel gives the layer-by-layer batches' logits bit for bit."""

from __future__ import annotations

import dataclasses
import os
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import languages
from satsim import AttentionSettings, SatsimError, Simulator, constructions
from satsim.engine import program as forward_module
from satsim.engine.batch import forward_batch
from satsim.engine.program import forward_fused, fuse
from satsim.model.encoding import encode
from satsim.model.spec import OutputSpec
from satsim.reference.forward import forward
from tests.support.helpers import architectures, random_spec

KINDS = ["saturated", "unique-left", "unique-right", "softmax"]
ARCHITECTURES = architectures(
    task=st.sampled_from(["recognition", "next-symbol"]),
    n_layers=st.integers(0, 3),
    n_heads=st.integers(1, 3),
)
STRINGS = st.lists(st.text(alphabet="ab", max_size=40), min_size=1, max_size=8)


def batch_logits(spec, strings, kind="saturated", beta=2.0):
    """Logits per string from forward_batch, one string per batch (no padding)."""
    settings_ = AttentionSettings(kind, beta)
    out = []
    for string in strings:
        logits = forward_batch(spec, [encode(spec, string)], settings_).logits[0]
        out.append(logits[-1] if spec.output.readout == "last" else logits)
    return out


def assert_same(fused, batched):
    assert len(fused) == len(batched)
    for a, b in zip(fused, batched):
        assert a.dtype == b.dtype
        np.testing.assert_array_equal(a, b)


def close(dtype):
    return {"rtol": 2e-3, "atol": 2e-3} if dtype == np.float32 else {"rtol": 1e-8, "atol": 1e-8}


def quantized(spec, step=0.5):
    """The spec with every tensor rounded to multiples of ``step``: scores tie exactly."""

    def round_tensor(x):
        return (np.round(x / step) * step).astype(x.dtype)

    from satsim.model.spec import map_tensors

    return map_tensors(spec, round_tensor)


def with_counting_heads(spec, flags):
    """The spec with W_K of the heads flagged (in layer-major order) zeroed: counting heads."""
    flags = iter(flags)
    blocks = []
    for block in spec.blocks:
        attn = block.attn
        W_K = attn.W_K.copy()
        for h in range(W_K.shape[0]):
            if next(flags, False):
                W_K[h] = 0
        blocks.append(dataclasses.replace(block, attn=dataclasses.replace(attn, W_K=W_K)))
    return dataclasses.replace(spec, blocks=tuple(blocks))


@settings(max_examples=80, deadline=None)
@given(arch=ARCHITECTURES, strings=STRINGS, seed=st.integers(0, 10_000),
       kind=st.sampled_from(KINDS), exact_ties=st.booleans(),
       counting=st.lists(st.booleans(), max_size=9))
def test_fused_matches_batches_bit_for_bit_and_reference(arch, strings, seed, kind, exact_ties,
                                                         counting):
    # Counting heads (zero W_K) make the fused path start with its fast-path variant.
    spec = with_counting_heads(random_spec(seed, **arch), counting)
    if exact_ties:
        spec = quantized(spec)
    simulator = Simulator(spec, kind, beta=2.0)
    assert simulator._fused() is not None
    fused = simulator.logits(strings)
    assert_same(fused, batch_logits(spec, strings, kind))
    assert_same(fused, Simulator(spec, kind, beta=2.0, fused=False).logits(strings))
    for string, logits in zip(strings, fused):
        expected = forward(spec, string, AttentionSettings(kind, 2.0)).logits
        np.testing.assert_allclose(logits, expected, **close(arch["dtype"]))


@pytest.mark.parametrize("name", constructions.names())
@pytest.mark.parametrize("task", ["recognition", "next-symbol"])
def test_fused_matches_batches_on_constructions(name, task):
    spec = constructions.build(name, task=task)
    language = languages.get(name)
    strings = (language.sample_positive(20, 0, 200, seed=1)
               + language.sample_negative(20, 0, 200, seed=2))
    simulator = Simulator(spec)
    assert_same(simulator.logits(strings), batch_logits(spec, strings))
    reference = Simulator(spec, fused=False)
    if task == "recognition":
        np.testing.assert_array_equal(simulator.accepts(strings), reference.accepts(strings))
    else:
        assert simulator.next_symbols(strings) == reference.next_symbols(strings)


def test_dyck1_decisions_match_the_oracle_and_the_batches():
    spec = constructions.build("dyck1")
    dyck1 = languages.get("dyck1")
    strings = dyck1.sample_positive(200, 0, 3000, seed=5) + dyck1.sample_negative(200, 0, 3000,
                                                                                  seed=6)
    fused = Simulator(spec).accepts(strings)
    np.testing.assert_array_equal(fused, Simulator(spec, fused=False).accepts(strings))
    np.testing.assert_array_equal(fused, [dyck1.contains(s) for s in strings])


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("causal", [True, False])
def test_general_heads_with_long_strings_and_exact_ties(kind, causal):
    # Longer than a query block, integer weights: many exact ties on the general path.
    spec = quantized(random_spec(3, causal=causal, n_ctx=400, dtype=np.float32), step=1.0)
    rng = np.random.default_rng(0)
    strings = ["".join(rng.choice(list("ab"), n)) for n in (0, 1, 31, 32, 33, 100, 300)]
    fused = Simulator(spec, kind).logits(strings)
    assert_same(fused, batch_logits(spec, strings, kind, beta=1.0))


def test_threads_and_chunks_do_not_change_results(monkeypatch):
    spec = random_spec(4, task="next-symbol", positional="features", dtype=np.float32)
    simulator = Simulator(spec)
    rng = np.random.default_rng(1)
    strings = ["".join(rng.choice(list("ab"), n)) for n in rng.integers(0, 60, 50)]
    monkeypatch.setattr(forward_module, "FUSED_THREAD_TOKENS", 0)
    ids, starts, lengths = simulator.encode_all(strings)
    model = fuse(spec)
    one, _ = forward_fused(model, ids, starts, lengths, simulator.settings, workers=1)
    two, _ = forward_fused(model, ids, starts, lengths, simulator.settings, workers=2)
    np.testing.assert_array_equal(one, two)


@pytest.mark.parametrize("workers", [1, 2])
def test_position_feature_rows_are_bounded_by_groups_without_changing_results(monkeypatch,
                                                                              workers):
    """Many distinct lengths: position rows come in groups of a budget, results unchanged."""
    spec = random_spec(5, task="next-symbol", positional="features", dtype=np.float64)
    simulator = Simulator(spec)
    rng = np.random.default_rng(2)
    strings = ["".join(rng.choice(list("ab"), n)) for n in rng.integers(0, 80, 60)]
    ids, starts, lengths = simulator.encode_all(strings)
    model = fuse(spec)
    whole, _ = forward_fused(model, ids, starts, lengths, simulator.settings, workers=workers)
    tables = []
    real_rows = forward_module.positional_rows

    def recorded(spec_, group_lengths):
        table, first = real_rows(spec_, group_lengths)
        tables.append(len(table))
        return table, first

    monkeypatch.setattr(forward_module, "FUSED_POSITION_ROWS", 200)
    monkeypatch.setattr(forward_module, "positional_rows", recorded)
    grouped, _ = forward_fused(model, ids, starts, lengths, simulator.settings, workers=workers)
    np.testing.assert_array_equal(whole, grouped)
    assert len(tables) > 5 and max(tables) <= 200 + int(lengths.max())


def test_encode_all_matches_encoding_one_by_one():
    both = dataclasses.replace(random_spec(2), vocab=("<bos>", "a", "<eos>"), eos="<eos>")
    for spec in (random_spec(0), constructions.build("dyck1"), both,
                 dataclasses.replace(random_spec(1), eos="<bos>", bos=None)):
        simulator = Simulator(spec)
        strings = ["", "ab", "a", "bbab"] if spec.bos or spec.eos else ["ab", "a"]
        strings = [s.replace("a", spec.alphabet[0]).replace("b", spec.alphabet[-1])
                   for s in strings]
        ids, starts, lengths = simulator.encode_all(strings)
        for string, start, length in zip(strings, starts, lengths):
            np.testing.assert_array_equal(ids[start : start + length], encode(spec, string))
        assert simulator.encode_all([])[0].size == 0
    greek = dataclasses.replace(random_spec(0), vocab=("<bos>", "α", "b"))  # beyond latin-1
    ids, starts, lengths = Simulator(greek).encode_all(["αb", "", "bα"])
    np.testing.assert_array_equal(ids, [0, 1, 2, 0, 0, 2, 1])
    with pytest.raises(SatsimError, match="symbol '€' at position 1"):
        Simulator(random_spec(0)).encode_all(["ab", "a€"])


def test_fused_path_keeps_the_errors():
    simulator = Simulator(random_spec(0))
    with pytest.raises(SatsimError, match="symbol 'c' at position 2"):
        simulator.logits(["ab", "abc"])
    with pytest.raises(SatsimError, match="pass a list of strings"):
        simulator.logits("ab")
    with pytest.raises(SatsimError, match="longer than the learned positional table"):
        simulator.accepts(["a" * 100])
    assert simulator.logits([]) == []
    dyck1 = Simulator(constructions.build("dyck1"))
    for mark in ("*", "+"):  # the code points that stand for BOS and EOS while encoding
        with pytest.raises(SatsimError, match=rf"symbol '\{mark}' at position 1"):
            dyck1.accepts(["()", f"({mark})"])
    assert simulator.accepts([]).shape == (0,)
    no_special = dataclasses.replace(random_spec(0), bos=None, vocab=("c", "a", "b"))
    with pytest.raises(SatsimError, match="empty string gives no tokens"):
        Simulator(no_special).logits(["a", ""])


def test_scores_that_could_overflow_raise_the_checked_error():
    spec = random_spec(0, dtype=np.float64, positional="none", norm="none")
    attn = spec.blocks[0].attn
    big = dataclasses.replace(attn, W_Q=attn.W_Q * 1e155, W_K=attn.W_K * 1e155)
    spec = dataclasses.replace(spec, blocks=(dataclasses.replace(spec.blocks[0], attn=big),)
                               + spec.blocks[1:])
    with pytest.raises(SatsimError, match="overflow"):
        Simulator(spec).logits(["ab"])


def test_readout_rows_only_after_the_last_attention():
    # A per-position readout needs every row; a last-position one only the last (same logits).
    spec = random_spec(6, n_layers=3)
    per_position = dataclasses.replace(spec, output=OutputSpec(
        W_U=spec.output.W_U, b_U=spec.output.b_U, labels=("x",), task="recognition",
        readout="per-position"))
    strings = ["abab", "b", "aabba"]
    last = Simulator(spec).logits(strings)
    every = Simulator(per_position).logits(strings)
    for a, b in zip(last, every):
        np.testing.assert_array_equal(a, b[-1])


ONLY_FAST = """
from satsim import Simulator, constructions
from satsim.engine.kernels import classes, cold_kernels, fused, queries
Simulator(constructions.build("dyck1")).accepts(["(()())", ")(", "(" * 600 + ")" * 600])
print(queries.attend_unit.signatures, classes.attend_by_classes.signatures,
      fused.forward_strings.signatures, sorted(cold_kernels("fused") + cold_kernels("fused-fast")))
"""


@pytest.mark.slow  # a fresh process
def test_a_hand_built_model_compiles_only_the_fast_attention_paths(tmp_path):
    done = subprocess.run([sys.executable, "-c", ONLY_FAST], check=True, capture_output=True,
                          text=True, env=dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path)))
    assert done.stdout.split("\n")[0] == "[] [] [] ['forward_strings']"
    assert "compiling the whole-model kernel for the fast attention paths" in done.stderr
    assert "every attention path" not in done.stderr


def test_fast_variant_first_then_the_strings_it_cannot_finish_in_the_full_one(monkeypatch):
    from satsim.engine.kernels import fused

    spec = with_counting_heads(random_spec(6, positional="none"), [True])
    strings = ["", "ab", "abba", "a" * 40]
    simulator = Simulator(spec)
    ids, starts, lengths = simulator.encode_all(strings)
    ran = []
    for name in ("forward_fast_paths", "forward_strings"):
        kernel = getattr(fused, name)
        monkeypatch.setattr(fused, name, lambda *args, _k=kernel, _n=name: (
            ran.append((_n, sorted(args[3].tolist()))), _k(*args))[1])
    model = fuse(spec)
    assert not model.general_paths  # a counting head: a hand-built model, fast paths first
    logits, status = forward_fused(model, ids, starts, lengths, simulator.settings)
    # "" is BOS alone: one key, every head ties, the fast paths finish it.
    assert ran == [("forward_fast_paths", [0, 1, 2, 3]), ("forward_strings", [1, 2, 3])]
    assert status.tolist() == [0, 0, 0, 0] and model.general_paths
    assert_same(list(logits), batch_logits(spec, strings))
    ran.clear()
    forward_fused(model, ids, starts, lengths, simulator.settings)
    assert ran == [("forward_strings", [0, 1, 2, 3])]  # later calls go straight to the full one
    assert fuse(random_spec(6)).general_paths  # no head known by construction: full first


@pytest.mark.parametrize("example", ["dyck1.crasp", "majority.crasp", "tomita4.brasp"])
def test_a_compiled_program_with_a_comparing_head_starts_in_the_full_variant(example, monkeypatch):
    from pathlib import Path

    from satsim.engine.kernels import fused
    from satsim.rasp import compile_program, read_program

    path = Path(__file__).resolve().parents[2] / "examples" / example
    spec = compile_program(read_program(str(path)), "example")
    model = fuse(spec)
    assert (model.known[:-1] < 0).any() and model.general_paths
    monkeypatch.setattr(fused, "forward_fast_paths", None)  # never called
    simulator = Simulator(spec)
    strings = ["", "".join(spec.alphabet) * 3]
    ids, starts, lengths = simulator.encode_all(strings)
    logits, status = forward_fused(model, ids, starts, lengths, simulator.settings)
    assert status.tolist() == [0, 0]
    assert_same(list(logits), batch_logits(spec, strings))
    assert not fuse(constructions.build("dyck1")).general_paths  # hand-built: fast paths first


def test_logits_accepts_and_next_symbols_take_the_fused_path(monkeypatch):
    import satsim.engine.simulator as simulator_module

    def refuse(*args, **kwargs):
        raise AssertionError("the layer-by-layer path ran")

    recogniser = Simulator(constructions.build("dyck1"))
    predictor = Simulator(constructions.build("dyck1", task="next-symbol"))
    expected = (recogniser.accepts(["()", ")("]), predictor.next_symbols(["(()"]))
    monkeypatch.setattr(simulator_module, "forward_batch", refuse)
    assert recogniser.accepts(["()", ")("]).tolist() == expected[0].tolist() == [True, False]
    assert predictor.next_symbols(["(()"]) == expected[1]
    with pytest.raises(AssertionError, match="layer-by-layer"):
        recogniser.trace("()")  # traces keep the layer-by-layer path


def test_the_fused_kernel_cache_is_keyed_to_its_callees_sources():
    # Every kernel of a module that calls another module, not only the entry points: a caller
    # compiled anew loads its callees from their own cache entries.
    import os

    from satsim.engine.kernels import classes, fused, layers, queries, tiles

    for module, callees in ((fused, (queries, layers, classes)), (tiles, (queries,)),
                            (classes, (queries,))):
        kernels = [value for value in vars(module).values()
                   if getattr(value, "py_func", None) is not None
                   and value.py_func.__module__ == module.__name__]
        assert len(kernels) >= 3
        for kernel in kernels:
            stamp = kernel._cache._cache_file._source_stamp
            for callee in callees:
                st = os.stat(callee.__file__)
                assert (st.st_mtime, st.st_size) in stamp, (kernel, callee)


@pytest.mark.parametrize("task", ["recognition", "next-symbol"])
def test_long_strings_with_general_heads_go_layer_by_layer(monkeypatch, task):
    import numba

    from satsim.engine.kernels import fused

    monkeypatch.setattr(forward_module, "FUSED_GENERAL_LIMIT", 8)
    monkeypatch.setattr(numba, "get_num_threads", lambda: 2)
    spec = random_spec(8, task=task, dtype=np.float32)
    strings = ["ab", "abbab", "abababbbab", "a" * 30, "ba"]
    simulator = Simulator(spec)
    ids, starts, lengths = simulator.encode_all(strings)
    _, status = forward_fused(fuse(spec), ids, starts, lengths, simulator.settings, workers=2)
    assert (status == fused.LONG_GENERAL).tolist() == [n > 8 for n in lengths]
    assert_same(simulator.logits(strings), batch_logits(spec, strings))


@pytest.mark.parametrize("use_fused", [True, False])
def test_bad_tolerances_are_refused_on_both_paths(use_fused):
    simulator = Simulator(constructions.build("dyck1"), atol=-1.0, rtol=5.0, fused=use_fused)
    with pytest.raises(SatsimError, match="tolerances need atol >= 0"):
        simulator.accepts(["()", ")("])


@pytest.mark.parametrize("use_fused", [True, False])
def test_logits_that_overflow_are_refused_not_read_as_a_decision(use_fused):
    # A feed-forward that overflows float32 gives inf/NaN logits; NaN > 0 would read as reject.
    spec = random_spec(0, dtype=np.float32, norm="none", positional="none")
    last = spec.blocks[-1]
    huge = dataclasses.replace(last.mlp, W_in=last.mlp.W_in * np.float32(1e30),
                               W_out=last.mlp.W_out * np.float32(1e30))
    spec = dataclasses.replace(spec, blocks=spec.blocks[:-1] + (
        dataclasses.replace(last, mlp=huge),))
    with pytest.raises(SatsimError, match="logits that are not finite"):
        Simulator(spec, fused=use_fused).accepts(["abab", "b"])
