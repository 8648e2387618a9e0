"""Acceptance: the soft twin at cθ converges, layer by layer, to the saturated limit network.

Per-layer cosine between the soft twin at cθ (float64) and the saturated leading-order network
rises with c and is ≥ 0.999 at c = 1000, on inputs whose tie sets are well separated, for random
specs without biases and with biases and residuals; naive softmax→argmax substitution does not
converge when biases or residuals are present.
"""

from dataclasses import replace

import numpy as np
import pytest

from satsim.analysis.measures import convergence
from satsim.model.spec import LayerNormSpec
from satsim.saturation import leading_order
from tests.support.helpers import random_spec

SCALES = [1.0, 10.0, 100.0, 1000.0]


def random_strings(n, length, seed=0):
    rng = np.random.default_rng(seed)
    return ["".join(rng.choice(list("ab"), length)) for _ in range(n)]


def rises_to_one(cosine):
    """Every stream's cosine climbs (up to rounding) and ends at >= 0.999."""
    table = np.array(cosine)  # [scale][stream]
    assert np.all(np.diff(table, axis=0) > -1e-6), table
    assert table[-1].min() >= 0.999, table


@pytest.mark.parametrize("norm", ["none", "pre", "post"])
@pytest.mark.parametrize("residual", [True, False])
def test_without_biases_the_soft_twin_converges_to_the_limit_network(norm, residual):
    spec = random_spec(11, norm=norm, residual=residual, biases=False, d_model=16, d_head=8,
                       d_mlp=16)
    result = convergence(spec, random_strings(6, 10), SCALES, device="cpu", exact=False)
    assert result.tie_margin > 1e-4
    rises_to_one(result.cosine)
    assert result.agreement[-1] == 1.0


@pytest.mark.parametrize("norm", ["none", "pre", "post"])
def test_with_biases_and_residuals_the_limit_converges_and_naive_substitution_does_not(norm):
    spec = random_spec(12, norm=norm, biases=True, residual=True, d_model=16, d_head=8, d_mlp=16)
    result = convergence(spec, random_strings(6, 10, seed=1), SCALES, device="cpu")
    assert result.tie_margin > 1e-4
    rises_to_one(result.cosine)
    rises_to_one(result.exact_cosine)
    assert result.agreement[-1] == result.exact_agreement[-1] == 1.0
    naive = np.array(result.naive_cosine)
    assert naive[1:, -1].max() < 0.95  # the last stream stays far from naive substitution
    assert abs(naive[-1, -1] - naive[-2, -1]) < 0.01  # on a plateau, not on its way to 1


def test_the_design_reference_experiment():
    """DESIGN §3: 2 layers, biases and residuals, d 16, 2 heads, length 12, causal, post-LN."""
    spec = random_spec(0, norm="post", n_layers=2, d_model=16, n_heads=2, d_head=8, d_mlp=16)
    result = convergence(spec, random_strings(8, 11, seed=2), SCALES, device="cpu", exact=False)
    final = [row[-1] for row in result.cosine]
    naive = [row[-1] for row in result.naive_cosine]
    assert final[0] < 0.9 and final[1] > 0.99 and final[2] > 0.9999 and final[3] > 1 - 1e-6
    assert naive[0] > final[0] and max(naive[1:]) < 0.9


def test_non_uniform_rates_converge_to_the_limit_of_the_reweighted_model():
    spec = random_spec(13, norm="pre", d_model=16, d_head=8, d_mlp=16)
    rates = {"blocks.1.*": 4.0, "embed.W_E": 0.25, "unembed.*": 2.0}
    result = convergence(spec, random_strings(4, 8, seed=3), [1.0, 30.0, 3000.0], rates=rates,
                         device="cpu", exact=False)
    rises_to_one(result.cosine)


def test_a_float32_twin_converges_at_moderate_c():
    spec = random_spec(14, norm="post", d_model=16, d_head=8, d_mlp=16)
    result = convergence(spec, random_strings(4, 8, seed=4), [1.0, 100.0, 1000.0], device="cpu",
                         dtype="float32", exact=False)
    assert np.array(result.cosine)[-1].min() > 0.999


def test_sublayers_of_lower_degree_than_the_stream_vanish_from_the_limit():
    """Pre-LN with γ, β in block 0 and plain LayerNorms in block 1: block 1 adds degree 2 to a
    degree-3 stream, so the limit keeps the stream and silences block 1."""
    spec = random_spec(4, norm="pre", d_model=16, d_head=8, d_mlp=16)
    plain = replace(spec.blocks[1], ln1=LayerNormSpec(), ln2=LayerNormSpec())
    spec = replace(spec, blocks=(spec.blocks[0], plain))
    network = leading_order(spec)
    assert not network.spec.blocks[1].attn.W_O.any() and not network.spec.blocks[1].mlp.W_out.any()
    result = convergence(spec, random_strings(5, 9), SCALES, device="cpu", exact=False)
    rises_to_one(result.cosine)
