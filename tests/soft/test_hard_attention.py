"""Saturated attention in torch (satsim.soft.hard_attention) against the NumPy reference.

The inputs are the attention tests' adversarial cases (exact integer ties, score levels nudged
by 2**-20 and 2**-10, random scores; padding, empty rows, causal and bidirectional), on the CPU
and, marked ``cuda``, on a CUDA GPU.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from satsim.errors import SatsimError
from satsim.model.masks import MASKS
from satsim.reference import attention as ref
from satsim.soft.hard_attention import saturated_attention, tie_sets
from tests.engine.test_attention import cases

DEVICES = ["cpu", pytest.param("cuda", marks=pytest.mark.cuda)]
MODEST = settings(max_examples=60, deadline=None)


def tensors(case, device):
    return {name: torch.from_numpy(np.ascontiguousarray(getattr(case, name))).to(device)
            for name in ("q", "k", "v", "key_mask", "query_mask")}


def assert_matches_reference(case, device, block_bytes=1 << 30):
    t = tensors(case, device)
    common = dict(causal=case.causal, key_mask=case.key_mask, scale=case.scale)
    got_ties = tie_sets(t["q"], t["k"], causal=case.causal, key_mask=t["key_mask"],
                        scale=case.scale, block_bytes=block_bytes)
    np.testing.assert_array_equal(got_ties.cpu().numpy(), ref.tie_sets(case.q, case.k, **common))
    out = saturated_attention(t["q"], t["k"], t["v"], causal=case.causal,
                              key_mask=t["key_mask"], query_mask=t["query_mask"],
                              scale=case.scale, block_bytes=block_bytes)
    expected = ref.saturated_attention(case.q, case.k, case.v, query_mask=case.query_mask,
                                       **common)
    assert out.dtype == t["q"].dtype and out.device.type == device
    tolerance = dict(rtol=1e-6, atol=1e-6) if case.q.dtype == np.float32 else dict(
        rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(out.cpu().numpy(), expected, **tolerance)


@pytest.mark.parametrize("device", DEVICES)
@MODEST
@given(case=cases(content="integer"))
def test_exact_integer_ties_give_the_reference_tie_sets(device, case):
    assert_matches_reference(case, device)


@pytest.mark.parametrize("device", DEVICES)
@MODEST
@given(case=cases(content="levels"))
def test_score_levels_nudged_below_and_above_the_tolerance_tie_as_the_reference(device, case):
    assert_matches_reference(case, device)


@pytest.mark.parametrize("device", DEVICES)
@MODEST
@given(case=cases())
def test_random_scores_give_the_reference_tie_sets(device, case):
    assert_matches_reference(case, device)


@pytest.mark.parametrize("device", DEVICES)
@MODEST
@given(case=cases(content="levels"))
def test_query_blocks_of_one_row_give_the_same_answer(device, case):
    assert_matches_reference(case, device, block_bytes=1)


@pytest.mark.parametrize("device", DEVICES)
@MODEST
@given(case=cases(content="levels"), mask=st.sampled_from(MASKS), block_bytes=st.sampled_from(
    [1, 1 << 30]))
def test_every_mask_gives_the_reference_tie_sets_and_means(device, case, mask, block_bytes):
    if case.q.shape[-2] != case.k.shape[-2]:
        mask = "bidirectional"  # the one mask for as many queries as keys or not
    t = tensors(case, device)
    common = dict(key_mask=case.key_mask, scale=case.scale, attn_mask=mask)
    got = tie_sets(t["q"], t["k"], key_mask=t["key_mask"], scale=case.scale, attn_mask=mask,
                   block_bytes=block_bytes)
    np.testing.assert_array_equal(got.cpu().numpy(), ref.tie_sets(case.q, case.k, **common))
    out = saturated_attention(t["q"], t["k"], t["v"], key_mask=t["key_mask"],
                              query_mask=t["query_mask"], scale=case.scale, attn_mask=mask,
                              block_bytes=block_bytes)
    expected = ref.saturated_attention(case.q, case.k, case.v, query_mask=case.query_mask,
                                       **common)
    np.testing.assert_allclose(out.cpu().numpy(), expected, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_equal_scores_tie_and_scores_apart_by_2e_4_do_not(device, dtype):
    q = torch.ones((1, 1), dtype=dtype, device=device)
    v = torch.tensor([[1.0], [3.0]], dtype=dtype, device=device)
    for top in (1.0, 0.0, -1.0, 100.0):
        tied = torch.tensor([[top], [top]], dtype=dtype, device=device)
        assert saturated_attention(q, tied, v, scale=1.0).item() == 2.0
        apart = torch.tensor([[top - 2e-4 * max(1.0, abs(top))], [top]], dtype=dtype,
                             device=device)
        assert saturated_attention(q, apart, v, scale=1.0).item() == 3.0


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype,gap", [(torch.float32, 2.0**-8), (torch.float64, 2.0**-21)])
def test_the_tolerance_grows_with_the_largest_score(device, dtype, gap):
    # at |M| = 1000 the gap is beyond atol but within atol + rtol·|M|: a tie by rtol alone
    q = torch.ones((1, 1), dtype=dtype, device=device)
    v = torch.tensor([[1.0], [3.0]], dtype=dtype, device=device)
    for top in (1000.0, -1000.0):
        keys = torch.tensor([[top - gap], [top]], dtype=dtype, device=device)
        assert saturated_attention(q, keys, v, scale=1.0).item() == 2.0
        assert saturated_attention(q, keys, v, scale=1.0, rtol=0.0).item() == 3.0
        assert saturated_attention(q, keys, v, scale=1.0, atol=0.0, rtol=0.0).item() == 3.0
    exact = torch.tensor([[0.5], [0.5]], dtype=dtype, device=device)
    assert tie_sets(q, exact, scale=1.0, atol=0.0, rtol=0.0).all()  # an exact tie, no tolerance


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("causal", [True, False])
def test_a_query_without_allowed_keys_and_a_padded_query_give_zeros(device, causal):
    q = torch.ones((2, 3, 2), device=device)
    k, v = torch.ones((2, 3, 2), device=device), torch.full((2, 3, 1), 5.0, device=device)
    key_mask = torch.tensor([[False] * 3, [True] * 3], device=device)
    query_mask = torch.tensor([[True] * 3, [True, False, True]], device=device)
    out = saturated_attention(q, k, v, causal=causal, key_mask=key_mask, query_mask=query_mask)
    assert torch.equal(out[..., 0].cpu(), torch.tensor([[0.0, 0, 0], [5, 0, 5]]))
    assert not tie_sets(q, k, causal=causal, key_mask=key_mask)[0].any()


def test_bad_inputs_are_one_line_errors():
    q = torch.zeros((3, 2))
    with pytest.raises(SatsimError, match="as many queries as keys"):
        saturated_attention(q, torch.zeros((4, 2)), torch.zeros((4, 1)), causal=True)
    with pytest.raises(SatsimError, match="strict-future attention needs as many queries"):
        tie_sets(q, torch.zeros((4, 2)), attn_mask="strict-future")
    with pytest.raises(SatsimError, match="name two masks"):
        tie_sets(q, q, causal=True, attn_mask="future")
    with pytest.raises(SatsimError, match="float32 or float64"):
        saturated_attention(q.half(), q.half(), q.half())
    with pytest.raises(SatsimError, match="width"):
        tie_sets(q, torch.zeros((3, 5)))
    with pytest.raises(SatsimError, match="values"):
        saturated_attention(q, q, torch.zeros((2, 1)))
