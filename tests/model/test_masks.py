"""Attention masks (causal, bidirectional, strict past, future, strict future) in every backend.

The reference is checked against the masks' definition written as loops; the compiled kernels
(all four attention kinds, exact ties, padding) against the reference; the spec file keeps
per-head masks; a query with no allowed key attends nothing in every backend.
"""

from dataclasses import replace

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from satsim import Simulator, load_spec, save_spec
from satsim.engine.attend import attention
from satsim.model.masks import MASKS, allowed_count, allowed_matrix, key_range
from satsim.model.spec import AttentionSpec
from satsim.reference import attention as ref
from satsim.reference.forward import forward
from tests.support.helpers import random_spec

KINDS = ["saturated", "unique-left", "unique-right", "softmax"]
DEFINITION = {"causal": lambda i, j: j <= i, "bidirectional": lambda i, j: True,
              "strict-past": lambda i, j: j < i, "future": lambda i, j: j >= i,
              "strict-future": lambda i, j: j > i}


@pytest.mark.parametrize("mask", MASKS)
@pytest.mark.parametrize("n", [0, 1, 2, 7])
def test_allowed_keys_are_the_definition(mask, n):
    expected = np.array([[DEFINITION[mask](i, j) for j in range(n)] for i in range(n)],
                        dtype=bool).reshape(n, n)
    assert np.array_equal(allowed_matrix(mask, n), expected)
    assert np.array_equal(allowed_count(mask, n), expected.sum(axis=1))
    for i in range(n):
        low, high = key_range(mask, i, n)
        assert np.array_equal(np.flatnonzero(expected[i]), np.arange(low, high))


@st.composite
def problems(draw):
    """Batches with exact score ties (integer q, k), padding, and any mask and kind."""
    seed = draw(st.integers(0, 10**6))
    rng = np.random.default_rng(seed)
    b, t, d, e = draw(st.integers(1, 3)), draw(st.integers(1, 40)), draw(st.integers(1, 3)), 2
    dtype = draw(st.sampled_from([np.float32, np.float64]))
    spread = draw(st.sampled_from([0, 1, 2, 5]))  # 0: every score ties
    q = rng.integers(-spread, spread + 1, (b, 2, t, d)).astype(dtype)
    k = rng.integers(-spread, spread + 1, (b, 2, t, d)).astype(dtype)
    v = rng.standard_normal((b, 2, t, e)).astype(dtype)
    lengths = rng.integers(0, t + 1, b)
    padding = (np.arange(t)[None, :] < lengths[:, None])[:, None, :]
    return q, k, v, padding, draw(st.sampled_from(MASKS)), draw(st.sampled_from(KINDS))


@settings(max_examples=150, deadline=None)
@given(problem=problems())
def test_kernels_match_the_reference_under_every_mask(problem):
    q, k, v, padding, mask, kind = problem
    result = attention(q, k, v, kind=kind, attn_mask=mask, mask=padding, query_mask=padding,
                       beta=1.5)
    common = dict(attn_mask=mask, key_mask=padding, query_mask=padding)
    if kind == "softmax":
        expected = ref.softmax_attention(q, k, v, beta=1.5, **common)
    elif kind == "saturated":
        expected = ref.saturated_attention(q, k, v, **common)
    else:
        expected = ref.unique_hard_attention(q, k, v, side=kind.removeprefix("unique-"), **common)
    tight = 1e-5 if q.dtype == np.float32 else 1e-12
    np.testing.assert_allclose(result.output, expected, rtol=tight, atol=tight)
    np.testing.assert_array_equal(result.tie_size, ref.tie_size(q, k, **common))
    gap = ref.tie_gap(q, k, **common)
    np.testing.assert_allclose(result.tie_gap, gap, rtol=1e-12, atol=0)


@pytest.mark.parametrize("mask", ["strict-past", "strict-future"])
def test_a_query_with_no_allowed_key_attends_nothing(mask):
    spec = random_spec(3, mask=mask, norm="none", residual=False, biases=False, n_layers=1)
    first = 0 if mask == "strict-past" else -1  # the query that sees no key
    for kind in KINDS:
        out = attention(*(np.ones((1, 4, 2)) for _ in range(3)), kind=kind, attn_mask=mask)
        assert np.all(out.output[0, first] == 0) and out.tie_size[0, first] == 0
        assert np.isnan(out.tie_gap[0, first])
    # The whole model, every backend: BOS alone (the empty string) sees nothing at strict past.
    expected = forward(spec, "").logits
    assert np.all(np.isfinite(expected))
    np.testing.assert_allclose(Simulator(spec).logits([""])[0], expected, rtol=1e-12)
    np.testing.assert_allclose(Simulator(spec, fused=False).logits([""])[0], expected,
                               rtol=1e-12)


def test_heads_of_one_layer_may_have_different_masks():
    spec = random_spec(5, mask="per-head", n_heads=5, n_layers=2)
    masks = spec.blocks[0].attn.head_masks
    assert len(masks) == 5 and len(set(masks)) > 1
    strings = ["", "a", "abba", "babab" * 3]
    for string, logits in zip(strings, Simulator(spec).logits(strings)):
        np.testing.assert_allclose(logits, forward(spec, string).logits, rtol=1e-9, atol=1e-12)
    fused, batched = Simulator(spec).logits(strings), Simulator(spec, fused=False).logits(strings)
    for got, expected in zip(fused, batched):
        assert np.array_equal(got, expected)


def test_masks_survive_the_spec_file(tmp_path):
    spec = random_spec(2, mask="per-head", n_heads=4)
    save_spec(spec, tmp_path / "m.safetensors")
    loaded = load_spec(tmp_path / "m.safetensors")
    assert [b.attn.mask for b in loaded.blocks] == [b.attn.mask for b in spec.blocks]


def test_a_version_3_file_with_a_causal_flag_still_reads(tmp_path):
    import json

    from safetensors.numpy import save

    from satsim.model.io import spec_config

    spec = random_spec(1, causal=False)
    config = spec_config(spec)
    config["version"] = 3
    for block in config["blocks"]:
        block["attn"] = {"causal": False, "scale": None}
    for key in ("source", "source_language", "max_tokens"):
        del config[key]
    tensors = {name: np.ascontiguousarray(a) for name, a in spec.tensors().items()}
    (tmp_path / "old.safetensors").write_bytes(save(tensors, {"satsim": json.dumps(config)}))
    loaded = load_spec(tmp_path / "old.safetensors")
    assert all(b.attn.mask == "bidirectional" for b in loaded.blocks)


def test_unknown_masks_and_wrong_counts_are_spec_errors():
    attn = random_spec(0).blocks[0].attn
    with pytest.raises(Exception, match="unknown attention mask 'sideways'"):
        replace(attn, mask="sideways")
    with pytest.raises(Exception, match="3 masks for 2 heads"):
        replace(attn, mask=("causal",) * 3)
    assert isinstance(replace(attn, mask=["future", "causal"]), AttentionSpec)


def test_a_causal_flag_beside_another_mask_is_refused_not_ignored():
    from satsim.errors import SatsimError
    from satsim.reference.attention import tie_sets

    x = np.zeros((1, 3, 2))
    for call in (lambda: attention(x, x, x, causal=True, attn_mask="future"),
                 lambda: tie_sets(x, x, causal=True, attn_mask="bidirectional")):
        with pytest.raises(SatsimError, match="name two masks"):
            call()
    assert attention(x, x, x, causal=True, attn_mask="causal").output.shape == x.shape
