"""The tiled path (BLAS approximate scores, exact rescoring of near-top keys) gives the reference's
max, runner-up, tie set and gap bit for bit, and the fused kernel's outputs."""

from __future__ import annotations

from contextlib import contextmanager

import numba
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from satsim.engine.attend import attention
from satsim.engine.kernels import layers, tiles
from tests.engine.test_attention import HARD_KINDS, Case, assert_matches_reference, cases, run

MODEST = settings(max_examples=60, deadline=None)


@contextmanager
def forced_tiles(parallel: bool = False):
    """Within this block every general item of a hard kind takes the tiled path, in tiles of 5
    queries and about 2 items; ``parallel``: two Python threads share the tiles."""
    before = tiles.TILE_SCORES, tiles.TILE_ROWS, tiles.TILE_BYTES, layers.PARALLEL_WORK
    tiles.TILE_SCORES, tiles.TILE_ROWS, tiles.TILE_BYTES = 0, 5, 2000
    if parallel:
        layers.PARALLEL_WORK = 0
    try:
        yield
    finally:
        tiles.TILE_SCORES, tiles.TILE_ROWS, tiles.TILE_BYTES, layers.PARALLEL_WORK = before


@contextmanager
def fused_only():
    """Within this block no item takes the tiled path."""
    before = tiles.TILE_SCORES
    tiles.TILE_SCORES = 1 << 62
    try:
        yield
    finally:
        tiles.TILE_SCORES = before


def assert_tiles_match(case: Case, parallel: bool = False) -> None:
    """Tiled path = reference (tie sets, gaps bit for bit) and = the fused kernel (outputs too)."""
    with forced_tiles(parallel):
        tiled = assert_matches_reference(case)
    with fused_only():
        fused = run(case)
    np.testing.assert_array_equal(tiled.tie_size, fused.tie_size)
    np.testing.assert_array_equal(tiled.tie_gap, fused.tie_gap)
    np.testing.assert_array_equal(tiled.output, fused.output)  # same sum over the same tie set


@st.composite
def near_ties(draw, spread="bound"):
    """Integer queries against keys on integer levels nudged by amounts at, below and above the
    float32 rounding of a score (2^-22 .. 2^-30 relative) or at the tie tolerance's edge; or
    ("cluster") real queries against copies of one key a few float32 ulps apart, so that
    float32 scores reorder the exact ones."""
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    dtype = draw(st.sampled_from((np.float32, np.float64)))
    n = draw(st.integers(1, 3))
    t = draw(st.integers(2, 48))
    causal = draw(st.booleans())
    s = t if causal else draw(st.integers(1, 48))
    d = draw(st.sampled_from((2, 3, 8) if spread != "cluster" else (3, 8, 16)))
    q = rng.integers(-2, 3, size=(n, t, d)).astype(dtype)
    q[..., 0] = rng.choice([1, 2], size=(n, t))  # non-zero queries: no all-tied shortcut
    levels = rng.integers(0, 3, size=(n, s, d)).astype(np.float64)
    if spread == "cluster":  # real queries, keys one row apart by a few float32 ulps
        q = rng.normal(size=(n, t, d)).astype(dtype)
        q[..., 0] = 1.0
        levels = np.repeat(rng.normal(size=(n, 1, d)), s, axis=1)
        levels[..., 0] = 0.0
        levels[:, rng.integers(0, s), 0] = 0.01  # one key on top: the cluster holds the runner-up
        nudges = levels * rng.choice([0.0, 2.0**-22, -(2.0**-23), 2.0**-24, -(2.0**-25)],
                                     size=(n, s, d))
    elif spread == "bound":
        nudges = rng.choice([0.0, 2.0**-22, -(2.0**-22), 2.0**-25, -(2.0**-25), 2.0**-30],
                            size=(n, s, d))
    else:  # at the tie tolerance: 1e-5 relative and absolute, give or take a float32 ulp
        nudges = rng.choice([0.0, -1e-5, -2e-5, -2e-5 - 2.0**-24, -2e-5 + 2.0**-24],
                            size=(n, s, d))
    k = (levels + nudges).astype(dtype)
    v = rng.normal(size=(n, s, 2)).astype(dtype)
    key_mask = rng.random((n, s)) < draw(st.sampled_from((1.0, 0.9, 0.5)))
    query_mask = rng.random((n, t)) < draw(st.sampled_from((1.0, 0.8)))
    kind = draw(st.sampled_from(HARD_KINDS))
    scale = draw(st.sampled_from((None, 1.0, -1.0)))
    return Case(q, k, v, key_mask, query_mask, causal, kind, 1.0, scale)


@MODEST
@given(cases(kinds=HARD_KINDS))
def test_tiles_on_random_inputs(case):
    assert_tiles_match(case)


@MODEST
@given(cases(content="integer", kinds=HARD_KINDS))
def test_tiles_on_exact_integer_ties(case):
    assert_tiles_match(case)


@MODEST
@given(cases(content="levels", kinds=HARD_KINDS))
def test_tiles_on_score_levels(case):
    assert_tiles_match(case)


@settings(max_examples=120, deadline=None)
@given(near_ties())
def test_tiles_on_near_ties_within_the_float32_error_bound(case):
    assert_tiles_match(case)


@settings(max_examples=120, deadline=None)
@given(near_ties(spread="cluster"))
def test_tiles_on_keys_a_few_float32_ulps_apart(case):
    assert_tiles_match(case)


@MODEST
@given(near_ties(spread="tolerance"))
def test_tiles_on_near_ties_at_the_tie_tolerance(case):
    assert_tiles_match(case)


@MODEST
@given(st.one_of(cases(kinds=HARD_KINDS), cases(content="integer", kinds=HARD_KINDS),
                 cases(content="integer", queries="zero", kinds=HARD_KINDS), near_ties()))
def test_tiles_with_two_threads_and_fast_path_items(case):
    if numba.get_num_threads() < 2:
        pytest.skip("needs two Numba threads")
    assert_tiles_match(case, parallel=True)


@pytest.mark.parametrize("kind", HARD_KINDS)
@pytest.mark.parametrize("causal", [False, True])
def test_tiles_on_all_equal_scores_of_different_keys(kind, causal):
    # Keys differ only where queries are zero: every allowed key ties, yet the items are general.
    rng = np.random.default_rng(3)
    n, t, d = 2, 40, 3
    q = np.zeros((n, t, d), dtype=np.float32)
    q[..., 0] = rng.choice([1.0, 2.0, -1.0], size=(n, t))
    q[:, 0, 1] = 1.0  # one differing query row keeps the item off the same-queries path
    k = rng.normal(size=(n, t, d)).astype(np.float32)
    k[..., 0] = 0.75
    k[:, 0, 1] = 0.0
    case = Case(q, k, rng.normal(size=(n, t, 2)).astype(np.float32),
                rng.random((n, t)) < 0.9, np.ones((n, t), dtype=bool), causal, kind, 1.0, None)
    assert_tiles_match(case)
    sizes = run(case).tie_size
    assert sizes.max() > 10


def test_tiles_on_the_tie_threshold_edge_after_float32_rounding():
    # Max 1 + 2^-30 (1.0 in float32); a key at 0.99999, tied; keys f + δ just above and below
    # the exact tie threshold, whose float32 scores round to f, just below the threshold of the
    # float32 max: only the error bound keeps them among the candidates.
    atol, rtol = 1e-5, 1e-5
    best = 1.0 + 2.0**-30
    theta = best * (1 - rtol) - atol
    f = np.float32(1.0 * (1 - rtol) - atol)
    if f > 1.0 * (1 - rtol) - atol:
        f = np.nextafter(f, np.float32(0))
    offsets = np.array([2.0**-31, 2.0**-33, -(2.0**-33), -(2.0**-31)])
    deltas = (theta - np.float64(f) + offsets).astype(np.float32)
    assert (deltas < 2.0**-25).all()  # f + δ rounds to f in float32
    k = np.array([[1.0, 2.0**-30], [0.99999, 0.0]] + [[f, delta] for delta in deltas])
    k = k.astype(np.float32)[None]
    s = k.shape[1]
    case = Case(np.ones((1, s, 2), dtype=np.float32), k,
                np.arange(2 * s, dtype=np.float32).reshape(1, s, 2), np.ones((1, s), bool),
                np.ones((1, s), bool), False, "saturated", 1.0, 1.0)
    assert_tiles_match(case)
    assert (run(case).tie_size == 4).all()  # the max, 0.99999 and the two above theta


def test_tiles_are_the_default_for_long_sequences_and_match_the_fused_kernel():
    rng = np.random.default_rng(5)
    q, k, v = (rng.standard_normal((2, 2, 512, 8)).astype(np.float32) for _ in range(3))
    q[0, 0, :, 0] = np.round(q[0, 0, :, 0])  # some exact ties between rounded keys
    k[0, 0] = np.round(k[0, 0])
    assert 512 * 512 >= tiles.TILE_SCORES
    for kind in HARD_KINDS:
        tiled = attention(q, k, v, kind=kind, causal=True)
        with fused_only():
            fused = attention(q, k, v, kind=kind, causal=True)
        np.testing.assert_array_equal(tiled.tie_size, fused.tie_size)
        np.testing.assert_array_equal(tiled.tie_gap, fused.tie_gap)
        np.testing.assert_array_equal(tiled.output, fused.output)


def test_softmax_never_takes_tiles(monkeypatch):
    def fail(*args, **kwargs):
        raise AssertionError("softmax took the tiled path")

    monkeypatch.setattr(tiles, "attend_tiled", fail)
    rng = np.random.default_rng(6)
    q, k, v = (rng.standard_normal((1, 24, 4)) for _ in range(3))
    with forced_tiles():
        attention(q, k, v, kind="softmax", causal=True)
        with pytest.raises(AssertionError, match="tiled path"):
            attention(q, k, v, kind="saturated", causal=True)


@pytest.mark.parametrize("n_items, n_queries, n_keys, rows, expected", [
    (32, 2048, 2048, None, (1, 256)),
    (32, 512, 512, None, (16, 64)),
    (3, 40, 40, 16, (3, 16)),
])
def test_tile_shape(n_items, n_queries, n_keys, rows, expected):
    assert tiles.tile_shape(n_items, n_queries, n_keys, rows) == expected
