"""The compiled, batched forward pass agrees with the plain NumPy reference."""

import dataclasses

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from satsim import AttentionSettings, SatsimError, Simulator
from satsim.reference.forward import forward
from tests.support.helpers import architectures, random_spec

ARCHITECTURES = architectures()
STRINGS = st.lists(st.text(alphabet="ab", max_size=20), min_size=1, max_size=6)


def close(dtype):
    return {"rtol": 2e-3, "atol": 2e-3} if dtype == np.float32 else {"rtol": 1e-8, "atol": 1e-8}


@settings(max_examples=60, deadline=None)
@given(arch=ARCHITECTURES, strings=STRINGS, seed=st.integers(0, 10_000),
       kind=st.sampled_from(["saturated", "unique-left", "unique-right", "softmax"]))
def test_simulator_matches_reference_on_random_models(arch, strings, seed, kind):
    spec = random_spec(seed, **arch)
    simulator = Simulator(spec, kind, beta=2.0)
    batched = simulator.logits(strings)
    for string, logits in zip(strings, batched):
        expected = forward(spec, string, AttentionSettings(kind, 2.0)).logits
        np.testing.assert_allclose(logits, expected, **close(arch["dtype"]))


@pytest.mark.parametrize("task", ["recognition", "next-symbol"])
def test_batching_and_padding_do_not_change_results(task):
    spec = random_spec(7, task=task, causal=False)
    strings = ["", "a", "abba", "b" * 30, "ab" * 9]
    simulator = Simulator(spec, max_batch_tokens=40)  # forces several padded batches
    together = simulator.logits(strings)
    for string, logits in zip(strings, together):
        np.testing.assert_allclose(logits, simulator.logits([string])[0], rtol=1e-12)


@pytest.mark.parametrize("norm", ["none", "pre", "post"])
def test_per_sublayer_residuals_match_reference(norm):
    spec = dataclasses.replace(random_spec(9, norm=norm), residual=(True, False, False, True))
    for string, logits in zip(["ab", "abba", ""], Simulator(spec).logits(["ab", "abba", ""])):
        np.testing.assert_allclose(logits, forward(spec, string).logits, rtol=1e-9, atol=1e-9)


def test_trace_residuals_match_reference():
    spec = random_spec(11, norm="pre")
    trace = Simulator(spec).trace("abbab")
    expected = forward(spec, "abbab")
    assert len(trace.residuals) == len(expected.residuals)
    for got, want in zip(trace.residuals, expected.residuals):
        np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-9)
    assert trace.tokens == ("<bos>", "a", "b", "b", "a", "b")
    assert trace.layers[0].tie_size.shape == (2, 6)


def test_trace_tie_sets_agree_with_tie_sizes():
    trace = Simulator(random_spec(5)).trace("abababba")
    for layer, heads in enumerate(trace.layers):
        for head in range(heads.tie_size.shape[0]):
            for query in range(len(trace.tokens)):
                members = trace.tie_set(layer, head, query)
                assert len(members) == heads.tie_size[head, query]
                assert members.max() <= query  # causal


def test_next_symbol_predictions_have_one_set_per_prefix():
    spec = random_spec(2, task="next-symbol")
    [sets] = Simulator(spec).next_symbols(["abba"])
    assert len(sets) == 5
    assert all(s <= {"a", "b", "<eos>"} for s in sets)


def test_bad_symbol_and_bad_options_are_one_line_errors():
    simulator = Simulator(random_spec(0))
    with pytest.raises(SatsimError, match="symbol 'c' at position 2"):
        simulator.accepts(["abc"])
    with pytest.raises(SatsimError, match="unknown attention kind"):
        Simulator(random_spec(0), "hardmax")
    with pytest.raises(SatsimError, match="beta must be positive"):
        Simulator(random_spec(0), "softmax", beta=float("nan"))
    with pytest.raises(SatsimError, match="longer than the learned positional table"):
        simulator.accepts(["a" * 100])


@pytest.mark.parametrize("scale", [0.0, 0.05, 3.0, None])
def test_traces_rebuild_tie_sets_and_attention_with_the_layers_own_scale(scale):
    # A trace's recomputed tie sets and attention maps use the layer's score scale, so they are
    # the sets the kernels attended (at scale 0 every allowed key ties).
    from satsim.analysis.traces import attention_matrix

    spec = random_spec(3, scale=scale, positional="none")
    trace = Simulator(spec).trace("abbab")
    for layer, heads in enumerate(trace.layers):
        for head in range(heads.tie_size.shape[0]):
            weights = attention_matrix(trace, layer, head)
            for query in range(heads.tie_size.shape[1]):
                size = heads.tie_size[head, query]
                assert len(trace.tie_set(layer, head, query)) == size
                assert np.count_nonzero(weights[query]) == size
                if scale == 0.0:
                    assert size == query + 1
