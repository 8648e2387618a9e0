"""The network graph's degrees (seed 001, Table 1) and the leading-order limit network."""

import numpy as np
import pytest

from satsim import Simulator, constructions
from satsim.analysis.measures import token_cosine
from satsim.saturation import (
    degrees,
    growth_exponent,
    leading_order,
    limit,
    max_safe_scale,
    network_graph,
    rated,
    run_limit,
    scale_spec,
)
from satsim.saturation.limit import LIMIT_EPS
from tests.support.helpers import random_spec

STRINGS = ["abba", "ba", "bbbab", "a"]


def test_degrees_follow_table_1_in_a_post_norm_model_with_affine_layer_norm():
    deg = degrees(random_spec(0, norm="post", affine=True))
    assert deg["hook_embed"] == 1 and deg["hook_pos_embed"] == 1  # lookup of a parameter
    assert deg["blocks.0.attn.hook_q"] == 2  # Linear: k -> k + 1 (its bias, 1, is dropped)
    assert deg["blocks.0.attn.hook_attn_scores"] == 4  # product: degrees add
    assert deg["blocks.0.attn.hook_pattern"] == 0  # softmax
    assert deg["blocks.0.attn.hook_z"] == 2 and deg["blocks.0.hook_attn_out"] == 3
    assert deg["blocks.0.ln1.hook_in"] == 3  # sum: the highest degree
    assert deg["blocks.0.ln1.hook_normalized"] == 0  # LayerNorm
    assert deg["blocks.0.ln1.hook_out"] == 1  # LayerNorm + affine
    assert deg["blocks.1.mlp.hook_pre"] == 2 and deg["blocks.1.mlp.hook_post"] == 2  # ReLU keeps
    assert deg["hook_logits"] == 2


def test_degrees_in_a_pre_norm_model_without_affine_and_with_sinusoids():
    spec = random_spec(0, norm="pre", affine=False, positional="sinusoidal")
    graph = network_graph(spec)
    deg = dict(graph.nodes(data="degree"))
    assert deg["hook_pos_embed"] == 0 and deg["blocks.0.hook_resid_pre"] == 1
    assert deg["blocks.0.attn.hook_q"] == 1  # LN (0) then Linear: the bias (1) survives
    assert deg["blocks.0.attn.hook_attn_scores"] == 2
    assert graph.nodes["blocks.0.attn.hook_pattern"]["saturates"]
    assert deg["blocks.0.hook_resid_mid"] == 2 and deg["blocks.1.hook_resid_post"] == 2
    assert graph.nodes["blocks.0.attn.hook_q"]["dropped"] == []
    assert graph.nodes["blocks.0.hook_attn_out"]["dropped"] == ["blocks.0.attn.b_O"]
    assert graph.nodes["blocks.0.hook_resid_pre"]["dropped"] == ["hook_pos_embed"]
    assert graph.nodes["blocks.0.hook_resid_mid"]["dropped"] == ["blocks.0.hook_resid_pre"]
    assert graph.nodes["blocks.1.hook_resid_mid"]["dropped"] == []


@pytest.mark.parametrize("norm,kept", [("none", [False] * 4), ("post", [False] * 4),
                                       ("pre", [False, True, True, True])])
def test_residual_streams_of_lower_degree_are_dropped(norm, kept):
    assert list(leading_order(random_spec(0, norm=norm)).residual) == kept


def test_limit_spec_drops_biases_after_weights_sinusoids_and_layer_norm_eps():
    spec = random_spec(0, norm="post", affine=True, positional="sinusoidal")
    lim = limit(spec)
    a = lim.blocks[0].attn
    assert a.b_Q is None and a.b_K is None and a.b_V is None and a.b_O is None
    assert lim.blocks[0].mlp.b_in is None and lim.output.b_U is None
    assert lim.blocks[0].ln1.eps == LIMIT_EPS and lim.blocks[0].ln1.affine  # γ, β stay (degree 1)
    assert lim.positional.kind == "none" and lim.residual is False
    np.testing.assert_array_equal(lim.blocks[1].attn.W_Q, spec.blocks[1].attn.W_Q)


def test_biases_after_a_plain_layer_norm_stay_in_the_limit():
    lim = limit(random_spec(0, norm="post", affine=False))
    assert lim.blocks[0].attn.b_Q is None  # layer 0 reads the embedding (degree 1)
    assert lim.blocks[1].attn.b_Q is not None  # layer 1 reads LN output (degree 0)
    assert lim.output.b_U is not None  # the last stream is LN output (0): logits and b_U are 1
    assert lim.blocks[1].mlp.b_in is not None


def test_a_pre_norm_limit_keeps_the_residual_at_some_sublayers_only():
    lim = limit(random_spec(0, norm="pre"))
    assert lim.residual == (False, True, True, True)
    assert lim.keeps_residual(0, "attn") is False and lim.keeps_residual(1, "mlp") is True


@pytest.mark.parametrize("norm", ["none", "post", "pre"])
def test_run_limit_is_the_simulator_on_the_limit_spec(norm):
    spec = random_spec(1, norm=norm, positional="features", task="next-symbol")
    run = run_limit(leading_order(spec), STRINGS)
    simulator = Simulator(limit(spec))
    for row, string in enumerate(STRINGS):
        trace = simulator.trace(string)
        n = len(trace.tokens)
        for ours, theirs in zip(run.residuals, trace.residuals):
            np.testing.assert_array_equal(ours[row, :n], theirs)
        np.testing.assert_array_equal(run.logits[row, :n], trace.logits)


@pytest.mark.parametrize("norm", ["none", "pre", "post"])
@pytest.mark.parametrize("biases", [True, False])
def test_the_leading_order_network_is_homogeneous(norm, biases):
    spec = random_spec(2, norm=norm, biases=biases, positional="sinusoidal")
    base = run_limit(leading_order(spec), STRINGS)
    scaled = run_limit(leading_order(scale_spec(spec, 7.0)), STRINGS)
    lengths = base.lengths.tolist()
    for a, b in zip(base.residuals, scaled.residuals):
        assert token_cosine(a, b, lengths) > 1 - 1e-12


def test_rates_reweight_the_parameters_before_the_limit():
    spec = random_spec(3, norm="post")
    rates = {"blocks.0.*": 3.0, "embed.W_E": 0.5}
    lim = leading_order(spec, rates).spec
    np.testing.assert_allclose(lim.W_E, spec.W_E * 0.5)
    np.testing.assert_allclose(lim.blocks[0].attn.W_K, spec.blocks[0].attn.W_K * 3.0)
    assert rated(spec, None) is spec


def test_growth_exponent_and_safe_scales():
    assert growth_exponent(network_graph(random_spec(0, norm="post", affine=True))) == 6
    dyck1 = constructions.build("dyck1")
    assert growth_exponent(network_graph(dyck1)) == 8
    assert 1e4 < max_safe_scale(dyck1, np.float32) < 2e4
    assert max_safe_scale(dyck1, np.float64) > 1e37


def test_the_limit_takes_position_features_of_the_length():
    # The degree graph once evaluated the features at n = 0, which divides by zero for 1/n.
    import dataclasses

    from satsim.saturation.signs import limit_signs

    spec = random_spec(0, positional="features")
    spec = dataclasses.replace(spec, positional=dataclasses.replace(
        spec.positional, features=("1/n", "i/n", "(-1)^i")))
    result = limit_signs(spec, ["ab", "ba"])
    assert all(np.isfinite(signs).all() for signs in result.signs)


def test_the_exact_limit_refuses_strings_longer_than_the_learned_positions():
    from satsim.errors import SatsimError
    from satsim.saturation.exact import exact_limit

    with pytest.raises(SatsimError, match="5 tokens is longer than the learned positional table"):
        exact_limit(random_spec(0, positional="learned", n_ctx=3), "abab")
