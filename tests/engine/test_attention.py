"""The Numba attention kernels against the NumPy reference, the fast paths, and the public API."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from satsim.engine.attend import (
    AttentionResult,
    attention,
    saturated_attention,
    softmax_attention,
    unique_hard_attention,
)
from satsim.engine.kernels import queries as kernels
from satsim.errors import SatsimError
from satsim.model.settings import DEFAULT_TOLERANCE, default_tolerance
from satsim.reference import attention as ref

KINDS = ("saturated", "unique-left", "unique-right", "softmax")
HARD_KINDS = ("saturated", "unique-left", "unique-right")
DTYPES = (np.float32, np.float64)
MODEST = settings(max_examples=60, deadline=None)


@dataclass
class Case:
    q: np.ndarray
    k: np.ndarray
    v: np.ndarray
    key_mask: np.ndarray
    query_mask: np.ndarray
    causal: bool
    kind: str
    beta: float
    scale: float | None


def _values(rng, content, shape, dtype):
    if content == "integer":
        return rng.integers(-2, 3, size=shape).astype(dtype)
    if content == "levels":
        # A few integer levels, some nudged by 2**-20 (a tie in float32, not in float64) or
        # 2**-10 (never a tie): scores that rise and fall, so the causal heap pops.
        nudges = rng.choice([0.0, 0.0, 2.0**-20, 2.0**-10], size=shape)
        return (rng.integers(-2, 3, size=shape) + nudges).astype(dtype)
    return rng.normal(size=shape).astype(dtype)


@st.composite
def cases(draw, content="normal", queries="random", keys="random", kinds=KINDS):
    """Random attention inputs; ``queries``/``keys`` = "zero" or "same" steer them to fast paths."""
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    dtype = draw(st.sampled_from(DTYPES))
    n = draw(st.integers(1, 4))
    t = draw(st.integers(1, 40))
    causal = draw(st.booleans())
    s = t if causal else draw(st.integers(1, 40))
    d = draw(st.sampled_from((1, 4))) if content != "normal" else draw(st.integers(1, 6))
    e = draw(st.integers(1, 3))
    q = _values(rng, "integer" if content == "levels" else content, (n, t, d), dtype)
    k = _values(rng, content, (n, s, d), dtype)
    v = rng.normal(size=(n, s, e)).astype(dtype)
    key_mask = rng.random((n, s)) < draw(st.sampled_from((1.0, 0.8, 0.3, 0.0)))
    query_mask = rng.random((n, t)) < draw(st.sampled_from((1.0, 0.8, 0.3)))
    if queries == "zero":  # item 0 all zero (item path), elsewhere about half the rows
        q[0] = 0
        q[rng.random((n, t)) < 0.5] = 0
    if queries == "same":  # real queries equal; padded ones anything
        q[:] = q[:, :1]
        q[~query_mask] = _values(rng, "normal", (int((~query_mask).sum()), d), dtype)
    if keys == "same":
        k[:] = k[:, :1]
        k[~key_mask] = _values(rng, "normal", (int((~key_mask).sum()), d), dtype)
    kind = draw(st.sampled_from(kinds))
    beta = draw(st.sampled_from((0.5, 1.0, 3.0)))
    scale = draw(st.sampled_from((None, 1.0))) if content != "normal" else None
    return Case(q, k, v, key_mask, query_mask, causal, kind, beta, scale)


def reference(case: Case) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Output, tie size and tie gap of the reference for a case."""
    common = dict(causal=case.causal, key_mask=case.key_mask, query_mask=case.query_mask,
                  scale=case.scale)
    if case.kind == "softmax":
        out = ref.softmax_attention(case.q, case.k, case.v, beta=case.beta, **common)
    elif case.kind == "saturated":
        out = ref.saturated_attention(case.q, case.k, case.v, **common)
    else:
        side = case.kind.removeprefix("unique-")
        out = ref.unique_hard_attention(case.q, case.k, case.v, side=side, **common)
    return out, ref.tie_size(case.q, case.k, **common), ref.tie_gap(case.q, case.k, **common)


def run(case: Case) -> AttentionResult:
    return attention(case.q, case.k, case.v, kind=case.kind, beta=case.beta, causal=case.causal,
                     mask=case.key_mask, query_mask=case.query_mask, scale=case.scale)


def assert_matches_reference(case: Case) -> AttentionResult:
    result = run(case)
    out, size, gap = reference(case)
    np.testing.assert_array_equal(result.tie_size, size)
    np.testing.assert_array_equal(result.tie_gap, gap)  # scores agree bit for bit
    if case.q.dtype == np.float32:
        np.testing.assert_allclose(result.output, out, rtol=1e-5, atol=1e-6)
    else:
        np.testing.assert_allclose(result.output, out, rtol=1e-10, atol=1e-12)
    assert result.output.dtype == case.q.dtype
    assert result.tie_size.dtype == np.int64
    assert np.isfinite(result.output).all()
    return result


CODES = {"softmax": kernels.SOFTMAX, "saturated": kernels.SATURATED,
         "unique-left": kernels.UNIQUE_LEFT, "unique-right": kernels.UNIQUE_RIGHT}


def item_paths(case: Case) -> list[int]:
    """The kernel path (same scores, same queries, general) each item takes."""
    return [kernels.item_path(case.q[n], case.k[n], case.key_mask[n], case.query_mask[n],
                               case.causal, CODES[case.kind]) for n in range(case.q.shape[0])]


def general_path(case: Case) -> AttentionResult:
    """Run every item through the general per-query path, bypassing the fast paths."""
    n, t, d = case.q.shape
    out = np.zeros((n, t, case.v.shape[2]), dtype=case.q.dtype)
    size, gap = np.zeros((n, t), dtype=np.int64), np.full((n, t), np.nan)
    atol, rtol = default_tolerance(case.q.dtype)
    scale = ref.default_scale(d) if case.scale is None else case.scale
    for item in range(n):
        for start in range(0, t, kernels.QUERY_BLOCK):
            kernels._attend_block(case.q[item], case.k[item], case.v[item], case.key_mask[item],
                                  case.query_mask[item], case.causal, CODES[case.kind],
                                  case.beta, atol, rtol, scale, start, out[item], size[item],
                                  gap[item])
    return AttentionResult(out, size, gap)


def assert_fast_path_matches_general_path(case: Case) -> None:
    fast, general = run(case), general_path(case)
    np.testing.assert_array_equal(fast.tie_size, general.tie_size)
    np.testing.assert_array_equal(fast.tie_gap, general.tie_gap)
    rtol = 1e-6 if case.q.dtype == np.float32 else 1e-12
    np.testing.assert_allclose(fast.output, general.output, rtol=rtol, atol=1e-12)


# --- kernels against the reference -------------------------------------------------------------

@MODEST
@given(cases())
def test_random_inputs_match_reference(case):
    assert_matches_reference(case)


@MODEST
@given(cases(content="integer"))
def test_exact_integer_ties_match_reference(case):
    assert_matches_reference(case)


@MODEST
@given(cases(content="levels"))
def test_near_ties_on_score_levels_match_reference(case):
    assert_matches_reference(case)


# --- fast paths give the general path's results --------------------------------------------------

@MODEST
@given(cases(content="integer", queries="zero"))
def test_zero_queries_attend_uniformly(case):
    result = assert_matches_reference(case)
    assert_fast_path_matches_general_path(case)
    assert item_paths(case)[0] == kernels.SAME_SCORES
    real = case.query_mask[0]
    np.testing.assert_array_equal(result.tie_size[0][real], ref.allowed_keys(
        case.q.shape[1], case.k.shape[1], causal=case.causal, key_mask=case.key_mask[0],
    ).sum(axis=-1)[real])


@MODEST
@given(cases(keys="same"))
def test_identical_keys_attend_uniformly(case):
    assert_matches_reference(case)
    assert_fast_path_matches_general_path(case)
    assert set(item_paths(case)) == {kernels.SAME_SCORES}


@MODEST
@given(cases(content="levels", queries="same", kinds=HARD_KINDS))
def test_identical_queries_on_rising_and_falling_scores(case):
    assert_matches_reference(case)
    assert_fast_path_matches_general_path(case)
    assert kernels.GENERAL not in item_paths(case)


@MODEST
@given(cases(queries="same"))
def test_identical_random_queries_match_reference(case):
    assert_matches_reference(case)
    assert_fast_path_matches_general_path(case)


@pytest.mark.parametrize("kind", HARD_KINDS)
@pytest.mark.parametrize("dtype", DTYPES)
def test_long_causal_same_queries_path_matches_general_path(kind, dtype):
    rng = np.random.default_rng(7)
    t = 500
    levels = rng.integers(-3, 1, size=(1, t, 1)) + np.arange(t)[None, :, None] // 50  # rising
    k = levels + rng.choice([0.0, 2.0**-20], size=(1, t, 1))
    case = Case(q=np.ones((1, t, 1), dtype=dtype), k=k.astype(dtype),
                v=rng.normal(size=(1, t, 2)).astype(dtype), key_mask=rng.random((1, t)) < 0.9,
                query_mask=rng.random((1, t)) < 0.9, causal=True, kind=kind, beta=1.0,
                scale=None)
    assert item_paths(case) == [kernels.SAME_QUERIES]
    assert_fast_path_matches_general_path(case)
    sizes = run(case).tie_size[0][case.query_mask[0]]
    assert sizes.max() > 1 and (np.diff(sizes) < 0).any()  # ties grew, then the heap popped


# --- edge cases and tie semantics ----------------------------------------------------------------

@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("causal", [False, True])
def test_fully_padded_rows_give_zeros_not_nan(kind, causal):
    rng = np.random.default_rng(0)
    q, k, v = rng.normal(size=(3, 5, 2)), rng.normal(size=(3, 5, 2)), rng.normal(size=(3, 5, 3))
    key_mask = np.ones((3, 5), dtype=bool)
    key_mask[0] = False  # no key at all
    key_mask[1, 0] = False  # causal: query 0 has no allowed key
    query_mask = np.ones((3, 5), dtype=bool)
    query_mask[2, 3] = False
    result = attention(q, k, v, kind=kind, causal=causal, mask=key_mask, query_mask=query_mask)
    assert np.isfinite(result.output).all()
    assert (result.output[0] == 0).all() and (result.tie_size[0] == 0).all()
    assert np.isnan(result.tie_gap[0]).all()
    assert (result.output[2, 3] == 0).all() and result.tie_size[2, 3] == 0
    assert np.isnan(result.tie_gap[2, 3])
    if causal:
        assert (result.output[1, 0] == 0).all() and np.isnan(result.tie_gap[1, 0])


@pytest.mark.parametrize("kind", KINDS)
def test_single_allowed_key_has_infinite_gap(kind):
    q, k = np.ones((1, 4, 2)), np.arange(8.0).reshape(1, 4, 2)
    v = np.arange(4.0).reshape(1, 4, 1)
    result = attention(q, k, v, kind=kind, causal=True)
    assert result.tie_gap[0, 0] == np.inf and result.tie_size[0, 0] == 1
    assert result.output[0, 0, 0] == 0.0
    single = attention(q, k, v, kind=kind, mask=np.array([False, False, True, False]))
    assert (single.tie_gap == np.inf).all() and (single.output[..., 0] == 2.0).all()


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("kind", HARD_KINDS)
def test_equal_scores_tie_and_scores_apart_by_2e_4_do_not(dtype, kind):
    q = np.ones((1, 1, 1), dtype=dtype)
    v = np.array([[[1.0], [3.0]]], dtype=dtype)
    for top in (1.0, 0.0, -1.0, 100.0):
        tied = attention(q, np.array([[[top], [top]]], dtype=dtype), v, kind=kind, scale=1.0)
        assert tied.tie_size[0, 0] == 2 and tied.tie_gap[0, 0] == 0.0
        expected = {"saturated": 2.0, "unique-left": 1.0, "unique-right": 3.0}[kind]
        assert tied.output[0, 0, 0] == expected
        apart = 2e-4 * max(1.0, abs(top))
        keys = np.array([[[top - apart], [top]]], dtype=dtype)
        split = attention(q, keys, v, kind=kind, scale=1.0)
        assert split.tie_size[0, 0] == 1 and split.output[0, 0, 0] == 3.0
        assert split.tie_gap[0, 0] > 1e-4 * max(1.0, abs(top))


def test_default_tolerances():
    assert default_tolerance(np.float32) == DEFAULT_TOLERANCE[np.float32] == (1e-5, 1e-5)
    assert default_tolerance(np.dtype("float64")) == (1e-9, 1e-9)
    with pytest.raises(SatsimError, match="float16"):
        default_tolerance(np.float16)


@MODEST
@given(cases(content="integer", kinds=("saturated",)))
def test_softmax_with_huge_beta_reaches_saturated(case):
    # Integer inputs and default scale 1/sqrt(d) with d in {1, 4}: scores are exact multiples
    # of 1/2, so distinct scores are at least 1/2 apart and equal ones tie exactly.
    case.scale = None
    saturated = run(case).output
    case.kind, case.beta = "softmax", 1e6
    soft = run(case).output
    np.testing.assert_allclose(soft, saturated, rtol=1e-6, atol=1e-6)


# --- public API ----------------------------------------------------------------------------------

def test_leading_dims_and_mask_broadcast():
    rng = np.random.default_rng(1)
    q = rng.integers(-2, 3, size=(2, 3, 6, 4)).astype(np.float64)
    k = rng.integers(-2, 3, size=(2, 1, 6, 4)).astype(np.float64)  # shared across heads
    v = rng.normal(size=(2, 3, 6, 5))
    mask = np.array([[True] * 6, [True] * 4 + [False] * 2])[:, None, :]  # (2, 1, 6)
    for kind in KINDS:
        result = attention(q, k, v, kind=kind, causal=True, mask=mask, query_mask=mask)
        assert result.output.shape == (2, 3, 6, 5)
        assert result.tie_size.shape == result.tie_gap.shape == (2, 3, 6)
        common = dict(causal=True, key_mask=mask, query_mask=mask)
        np.testing.assert_array_equal(result.tie_size, ref.tie_size(q, k, **common))
        np.testing.assert_array_equal(result.tie_gap, ref.tie_gap(q, k, **common))
    out = saturated_attention(q, k, v, causal=True, mask=mask)
    np.testing.assert_allclose(out, ref.saturated_attention(q, k, v, causal=True, key_mask=mask))
    assert (out[1, :, :4] == saturated_attention(q[1], k[1], v[1], causal=True)[:, :4]).all()


def test_named_wrappers_equal_attention():
    rng = np.random.default_rng(2)
    q, k, v = rng.normal(size=(5, 3)), rng.normal(size=(7, 3)), rng.normal(size=(7, 2))
    np.testing.assert_array_equal(saturated_attention(q, k, v), attention(q, k, v).output)
    for side in ("left", "right"):
        np.testing.assert_array_equal(unique_hard_attention(q, k, v, side=side),
                                      attention(q, k, v, kind=f"unique-{side}").output)
    np.testing.assert_array_equal(softmax_attention(q, k, v, beta=2.0),
                                  attention(q, k, v, kind="softmax", beta=2.0).output)
    assert saturated_attention(q.astype(np.float32), k.astype(np.float32),
                               v.astype(np.float32)).dtype == np.float32


def test_empty_inputs():
    assert attention(np.zeros((0, 4, 2)), np.zeros((0, 3, 2)), np.zeros((0, 3, 1))).output.shape \
        == (0, 4, 1)
    empty_keys = attention(np.ones((4, 2)), np.zeros((0, 2)), np.zeros((0, 1)))
    assert (empty_keys.output == 0).all() and np.isnan(empty_keys.tie_gap).all()


@pytest.mark.parametrize(("call", "message"), [
    (lambda q, k, v: attention(q, k[:, :2], v), "do not fit"),
    (lambda q, k, v: attention(q, k, v[:3]), "do not fit"),
    (lambda q, k, v: attention(q, k.astype(np.float32), v), "share one dtype"),
    (lambda q, k, v: attention(q.astype(int), k, v), "float32 or float64"),
    (lambda q, k, v: attention(q[0], k, v), r"shape \(..., length, dim\)"),
    (lambda q, k, v: attention(np.full_like(q, np.nan), k, v), "NaN or inf"),
    (lambda q, k, v: attention(q, k, v, kind="hard"), "unknown attention kind"),
    (lambda q, k, v: attention(q, k, v, kind="softmax", beta=0.0), "beta"),
    (lambda q, k, v: attention(q, k, v, kind="softmax", beta=np.inf), "beta"),
    (lambda q, k, v: attention(q[:3], k, v, causal=True), "causal"),
    (lambda q, k, v: attention(q, k, v, mask=np.ones(4)), "boolean"),
    (lambda q, k, v: attention(q, k, v, mask=np.ones(3, dtype=bool)), "broadcast"),
    (lambda q, k, v: attention(q, k, v, rtol=1.0), "rtol"),
    (lambda q, k, v: attention(np.ones((2, 4, 3)), k, np.ones((3, 4, 1))), "batch dims"),
    (lambda q, k, v: unique_hard_attention(q, k, v, side="middle"), "side"),
    (lambda q, k, v: attention(q * 1e160, k * 1e160, v), "overflow"),
])
def test_invalid_inputs_raise_a_satsim_error(call, message):
    q, k, v = np.ones((4, 3)), np.ones((4, 3)), np.ones((4, 2))
    with pytest.raises(SatsimError, match=message):
        call(q, k, v)
