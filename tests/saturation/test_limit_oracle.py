"""The saturated limit against an independent oracle: the soft model at c = 10⁶ and 10¹² in
high-precision arithmetic (mpmath), on random and adversarial specs searched by hypothesis."""

from dataclasses import replace

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from satsim.model.settings import AttentionSettings
from satsim.model.spec import map_tensors
from satsim.reference.forward import forward
from satsim.saturation import exact_limit
from satsim.saturation.signs import limit_signs
from tests.support.helpers import random_spec
from tests.support.mp_oracle import mp_logits, mp_signs


@st.composite
def adversarial_specs(draw):
    """Small specs with the shapes that break a limit: tiny MLPs, zero or low-rank W_Q / W_K
    beside biases, weights on a coarse grid (exact score ties, exact zeros), 1 to 3 layers; every
    activation, LayerNorm and RMSNorm, given attention scales, parallel blocks."""
    norm = draw(st.sampled_from(["none", "pre", "post"]))
    spec = random_spec(
        draw(st.integers(0, 10**6)),
        d_model=draw(st.sampled_from([3, 4, 6])),
        n_layers=draw(st.integers(1, 3)),
        n_heads=draw(st.integers(1, 2)),
        d_head=draw(st.integers(1, 3)),
        d_mlp=draw(st.integers(1, 4)),
        norm=norm,
        activation=draw(st.sampled_from(["relu", "relu", "gelu", "gelu_tanh", "silu"])),
        norm_kind=draw(st.sampled_from(["layer", "layer", "rms"])),
        scale=draw(st.sampled_from([None, None, 0.5, 1.0, 0.0])),
        parallel=norm != "post" and draw(st.booleans()),
        residual=draw(st.booleans()),
        biases=draw(st.booleans()),
        affine=draw(st.booleans()),
        mask=draw(st.sampled_from(["causal", "causal", "bidirectional", "strict-past", "future",
                                   "strict-future", "per-head"])),
        positional=draw(st.sampled_from(["none", "learned"])),
        n_ctx=12,
    )
    if draw(st.booleans()):  # a coarse grid: exact ties and exact zeros everywhere
        spec = map_tensors(spec, lambda a: np.round(2 * a) / 2)
    blocks = list(spec.blocks)
    for layer in draw(st.sets(st.integers(0, len(blocks) - 1), max_size=2)):
        attn = blocks[layer].attn
        how = draw(st.sampled_from(["zero-query", "zero-key", "rank-one"]))
        if how == "zero-query":
            changes = {"W_Q": np.zeros_like(attn.W_Q)}
            if attn.b_Q is not None and draw(st.booleans()):
                changes["b_Q"] = np.ones((attn.n_heads, attn.d_head))
        elif how == "zero-key":
            changes = {"W_K": np.zeros_like(attn.W_K)}
        else:
            changes = {"W_K": attn.W_K[:, :, :1].repeat(attn.d_head, axis=2)}
        blocks[layer] = replace(blocks[layer], attn=replace(attn, **changes))
    return replace(spec, blocks=tuple(blocks))


strings = st.lists(st.text("ab", max_size=5), min_size=1, max_size=4)


@settings(max_examples=100, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow])
@given(spec=adversarial_specs(), strings=strings)
def test_limit_signs_and_the_exact_limit_match_the_high_precision_soft_model(spec, strings):
    fast = limit_signs(spec, strings)
    for row, string in enumerate(strings):
        far, farther = mp_signs(spec, string, 1e6, dps=160), mp_signs(spec, string, 1e12, dps=320)
        exact = exact_limit(spec, string).logit_signs()
        exact = exact[-1] if spec.output.readout == "last" else exact
        settled = far == farther  # the oracle's sign is the same at both scales
        for name, got in (("limit_signs", fast.signs[row]), ("exact_limit", exact)):
            decided = settled & ~np.isnan(got)
            assert np.array_equal(got[decided], far[decided]), (name, string, got, far)


def test_the_oracle_agrees_with_the_reference_at_c_equal_one():
    for norm in ("none", "pre", "post"):
        spec = random_spec(1, norm=norm, positional="sinusoidal", d_model=6, d_mlp=3)
        want = forward(spec, "abba", AttentionSettings("softmax")).logits
        got = np.array(mp_logits(spec, "abba", 1.0, dps=30), dtype=float)[-1]
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
