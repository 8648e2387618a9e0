"""Activations, RMSNorm, attention scales and parallel blocks in every backend.

The independent oracle is support/mp_oracle.py (mpmath, its own loops): the NumPy reference must
match it at c = 1; the kernels (layer by layer and fused), the soft twin and the spec file must
match the reference; the exact limit is checked against the oracle at large c in
test_limit_oracle.py, whose adversarial specs draw these options too.
"""

import math

import mpmath
import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from satsim import Simulator, SpecError, load_spec, save_spec
from satsim.engine.kernels.layers import ACTIVATION_CODES, affine
from satsim.model.encoding import encode
from satsim.model.settings import AttentionSettings
from satsim.reference.forward import ACTIVATION_FUNCTIONS, forward
from satsim.saturation import network_graph
from satsim.saturation.limit import leading_order
from satsim.soft import SoftTransformer
from satsim.soft.model import ACTIVATIONS as TORCH_ACTIVATIONS
from tests.support.helpers import random_spec
from tests.support.mp_oracle import ACTIVATIONS as MP_ACTIVATIONS
from tests.support.mp_oracle import mp_logits

OPTIONS = [
    {"activation": "gelu"}, {"activation": "gelu_tanh"}, {"activation": "silu"},
    {"norm_kind": "rms"}, {"norm_kind": "rms", "affine": False},
    {"norm_kind": "rms", "norm": "post"},
    {"scale": 0.37}, {"scale": 1.0}, {"scale": 0.0},
    {"parallel": True}, {"parallel": True, "norm": "none"},
    {"parallel": True, "activation": "silu", "norm_kind": "rms", "scale": 0.5},
]
STRINGS = ["", "a", "ab", "abba", "babab"]


def make(options, seed=0, **extra):
    settings = {"norm": "pre", "d_model": 6, "d_mlp": 5, "n_ctx": 16, **options, **extra}
    return random_spec(seed, **settings)


@pytest.mark.parametrize("options", OPTIONS, ids=str)
def test_the_reference_matches_the_high_precision_oracle(options):
    spec = make(options)
    for string in STRINGS[1:4]:
        want = np.array(mp_logits(spec, string, 1.0, dps=30), dtype=float)[-1]
        got = forward(spec, string, AttentionSettings("softmax")).logits
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("options", OPTIONS, ids=str)
@pytest.mark.parametrize("kind", ["softmax", "saturated"])
def test_the_kernels_match_the_reference_and_fused_matches_layers_bit_for_bit(options, kind):
    spec = make(options, task="next-symbol")
    fused = Simulator(spec, attention=kind).logits(STRINGS)
    layers = Simulator(spec, attention=kind, fused=False).logits(STRINGS)
    for string, a, b in zip(STRINGS, fused, layers):
        assert np.array_equal(a, b)
        np.testing.assert_allclose(a, forward(spec, string, AttentionSettings(kind)).logits,
                                   rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("options", OPTIONS, ids=str)
def test_the_soft_twin_matches_the_reference(options):
    spec = make(options)
    run = SoftTransformer(spec, device="cpu", dtype="float64").run(STRINGS[1:], cache=True)
    for row, string in enumerate(STRINGS[1:]):
        want = forward(spec, string, AttentionSettings("softmax")).logits
        np.testing.assert_allclose(run.logits_of(row)[-1], want, rtol=1e-12, atol=1e-12)
    assert "blocks.0.hook_resid_post" in run.cache
    if spec.parallel:  # attention and feed-forward read the same stream: no middle stream
        assert "blocks.0.hook_resid_mid" not in run.cache


@pytest.mark.parametrize("options", OPTIONS, ids=str)
def test_the_spec_file_keeps_every_option(options, tmp_path):
    spec = make(options)
    save_spec(spec, tmp_path / "m.safetensors")
    again = load_spec(tmp_path / "m.safetensors")
    assert again.parallel == spec.parallel
    for a, b in zip(spec.blocks, again.blocks):
        assert (a.mlp.activation, a.attn.scale, a.ln1.kind if a.ln1 else None) == (
            b.mlp.activation, b.attn.scale, b.ln1.kind if b.ln1 else None)
    assert np.array_equal(Simulator(spec).logits(["abba"])[0],
                          Simulator(again).logits(["abba"])[0])


finite = st.floats(-60, 60, allow_nan=False) | st.sampled_from([0.0, -0.0, 1e-300, -1e-300,
                                                                  1e-8, -1e-8, 30.0, -30.0])


@settings(max_examples=200, deadline=None)
@given(values=st.lists(finite, min_size=1, max_size=8), name=st.sampled_from(
    ["relu", "gelu", "gelu_tanh", "silu"]))
def test_every_activation_matches_mpmath_in_numpy_numba_and_torch(values, name):
    x = np.array(values)
    with mpmath.workdps(40):
        want = np.array([float(MP_ACTIVATIONS[name](mpmath.mpf(v))) for v in values])
    numba_out = affine(x[:, None], np.ones((1, 1)), np.zeros(1), ACTIVATION_CODES[name])[:, 0]
    torch_out = TORCH_ACTIVATIONS[name](torch.tensor(x)).numpy()
    for got in (ACTIVATION_FUNCTIONS[name](x), numba_out, torch_out):
        np.testing.assert_allclose(got, want, rtol=1e-13, atol=1e-15)


def test_relu_keeps_a_nan_as_before():
    x = np.array([[np.nan], [-1.0], [2.0]])
    out = affine(x, np.ones((1, 1)), np.zeros(1), ACTIVATION_CODES["relu"])[:, 0]
    assert math.isnan(out[0]) and out[1] == 0 and out[2] == 2


def test_the_limit_network_takes_relu_where_a_smooth_activation_grows():
    spec = make({"activation": "gelu"})
    limit = leading_order(spec).spec
    assert all(b.mlp.activation == "relu" for b in limit.blocks)
    graph = network_graph(spec)
    assert graph.nodes["blocks.0.mlp.hook_post"]["op"] == "gelu"
    assert graph.nodes["blocks.0.ln1.hook_normalized"]["op"] == "layernorm"
    rms = network_graph(make({"norm_kind": "rms"}))
    assert rms.nodes["blocks.0.ln1.hook_normalized"]["op"] == "rmsnorm"
    assert "blocks.0.ln1.hook_out" not in rms  # RMSNorm has no shift


def test_a_parallel_block_is_one_step_and_its_options_are_checked():
    spec = make({"parallel": True}, n_layers=1)
    ids = encode(spec, "ab")
    assert len(forward(spec, "ab").residuals) == 2  # the embedding, then one step per block
    assert len(ids) == 3
    with pytest.raises(SpecError, match="parallel"):
        make({"parallel": True, "norm": "post"})
    with pytest.raises(SpecError, match="RMSNorm has a scale w only"):
        from satsim.model.spec import LayerNormSpec
        LayerNormSpec(w=np.ones(3), b=np.zeros(3), kind="rms")
    with pytest.raises(SpecError, match="unknown activation"):
        make({"activation": "gelu_fast"})
