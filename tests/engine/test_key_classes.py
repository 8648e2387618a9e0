"""Keys that repeat: the class path gives the per-query path's tie sets, gaps and outputs bit for
bit (and the reference's tie sets), on inputs with exact key repetitions and large tie sets."""

from __future__ import annotations

from contextlib import contextmanager

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from satsim import Simulator
from satsim.engine.kernels import classes, tiles
from tests.engine.test_attention import HARD_KINDS, Case, assert_matches_reference, run
from tests.engine.test_attention_tiles import fused_only
from tests.engine.test_fused_forward import assert_same, batch_logits, quantized
from tests.support.helpers import random_spec

MODEST = settings(max_examples=50, deadline=None)


@contextmanager
def class_path(on: bool):
    """Within this block general items of hard kinds take (on) or never take the class path."""
    before = classes.MIN_KEYS
    classes.MIN_KEYS = 0 if on else 1 << 62
    try:
        yield
    finally:
        classes.MIN_KEYS = before


@st.composite
def repeated_keys(draw):
    """Keys drawn from a few rows (exact repetitions), queries from a few rows or integers;
    values per key class (sums of equal values) or random; padding; every hard kind."""
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    dtype = draw(st.sampled_from((np.float32, np.float64)))
    n = draw(st.integers(1, 3))
    t = draw(st.integers(1, 80))
    causal = draw(st.booleans())
    s = t if causal else draw(st.integers(1, 80))
    d = draw(st.sampled_from((1, 3, 8)))
    e = draw(st.integers(1, 3))
    n_classes = draw(st.integers(1, 9))
    content = draw(st.sampled_from(("integer", "normal")))
    rows = (rng.integers(-2, 3, size=(n, n_classes, d)) if content == "integer"
            else rng.normal(size=(n, n_classes, d))).astype(dtype)
    labels = rng.integers(0, n_classes, size=(n, s))
    k = np.take_along_axis(rows, labels[..., None], axis=1)
    q = rng.integers(-2, 3, size=(n, t, d)).astype(dtype)
    if draw(st.booleans()):  # queries that repeat too (a layer-0 query of the token)
        q = np.take_along_axis(q[:, :3], rng.integers(0, min(3, t), size=(n, t, 1)), axis=1)
    q[rng.random((n, t)) < 0.1] = 0  # zero queries tie every allowed key
    if draw(st.booleans()):
        values = rng.normal(size=(n, n_classes, e)).astype(dtype)
        v = np.take_along_axis(values, labels[..., None], axis=1)
    else:
        v = (rng.normal(size=(n, s, e)) * 10.0 ** rng.integers(-6, 6, size=(n, s, 1))
             ).astype(dtype)
    key_mask = rng.random((n, s)) < draw(st.sampled_from((1.0, 0.7)))
    query_mask = rng.random((n, t)) < draw(st.sampled_from((1.0, 0.7)))
    kind = draw(st.sampled_from(HARD_KINDS))
    scale = draw(st.sampled_from((None, 1.0, -1.0)))
    return Case(q, k, v, key_mask, query_mask, causal, kind, 1.0, scale)


def assert_classes_match(case: Case) -> None:
    """Class path = reference (tie sets, gaps) and = the per-query kernel (outputs too)."""
    with class_path(True):
        by_classes = assert_matches_reference(case)
    with class_path(False), fused_only():
        per_query = run(case)
    np.testing.assert_array_equal(by_classes.tie_size, per_query.tie_size)
    np.testing.assert_array_equal(by_classes.tie_gap, per_query.tie_gap)
    assert by_classes.output.tobytes() == per_query.output.tobytes()  # the same sums, bit for bit


@pytest.mark.slow  # runs long
@MODEST
@given(repeated_keys())
def test_class_path_matches_the_per_query_kernel_and_the_reference(case):
    assert_classes_match(case)


@settings(max_examples=20, deadline=None)
@given(st.integers(0, 2**32 - 1), st.sampled_from(HARD_KINDS), st.booleans())
def test_many_unions_of_classes_sum_directly_past_the_table(seed, kind, causal):
    # Keys are 9 one-hot rows, queries 0/1 rows: the tie set of a query is the union of the
    # classes where it has a 1 (up to 2^9 unions, more than the table of running sums holds).
    rng = np.random.default_rng(seed)
    t = 300
    rows = np.eye(9)
    k = rows[rng.integers(0, 9, size=(1, t))]
    q = rng.integers(0, 2, size=(1, t, 9)).astype(np.float64)
    v = rng.normal(size=(1, t, 2))
    case = Case(q, k, v, np.ones((1, t), bool), np.ones((1, t), bool), causal, kind, 1.0, 1.0)
    assert_classes_match(case)


@MODEST
@given(repeated_keys())
def test_class_path_matches_the_tiled_path(case):
    with class_path(True):
        by_classes = run(case)
    before = tiles.TILE_SCORES
    tiles.TILE_SCORES = 0
    try:
        with class_path(False):
            tiled = run(case)
    finally:
        tiles.TILE_SCORES = before
    np.testing.assert_array_equal(by_classes.tie_size, tiled.tie_size)
    np.testing.assert_array_equal(by_classes.tie_gap, tiled.tie_gap)
    assert by_classes.output.tobytes() == tiled.output.tobytes()


def test_items_with_few_classes_take_the_class_path_and_others_not():
    rng = np.random.default_rng(0)
    t = 200
    k = np.stack([rng.integers(0, 3, size=(t, 1)) * np.ones((1, 4)),  # 3 classes
                  rng.normal(size=(t, 4))])  # 200 classes
    labels = np.empty(t, dtype=np.int64)
    representatives = np.empty(classes.MAX_CLASSES, dtype=np.int64)
    mask = np.ones(t, bool)
    assert classes.key_classes(k[0], mask, labels, representatives) == 3
    assert classes.key_classes(k[1], mask, labels, representatives) == -1
    paths = np.zeros(2, dtype=np.int64)  # both general
    assert classes.few_classes(k, np.ones((2, t), bool), paths).tolist() == [True, False]
    paths[0] = 1  # same scores: not a general item
    assert classes.few_classes(k, np.ones((2, t), bool), paths).tolist() == [False, False]


@pytest.mark.parametrize("kind", HARD_KINDS)
def test_models_without_positions_match_on_long_strings(kind, monkeypatch):
    # Layer-0 keys are functions of the token; quantised weights: large exact tie sets.
    spec = quantized(random_spec(4, positional="none", norm="pre", task="next-symbol",
                                 dtype=np.float32), step=0.5)
    rng = np.random.default_rng(2)
    strings = ["".join(rng.choice(list("ab"), n)) for n in (0, 5, 200, 700)]
    monkeypatch.setattr(classes, "MIN_KEYS", 0)
    fused = Simulator(spec, kind).logits(strings)
    layered = Simulator(spec, kind, fused=False).logits(strings)
    monkeypatch.setattr(classes, "MIN_KEYS", 1 << 62)
    assert_same(fused, batch_logits(spec, strings, kind))
    assert_same(layered, batch_logits(spec, strings, kind))


def test_long_tiled_work_reports_progress(monkeypatch, capsys):
    monkeypatch.setattr(tiles, "PROGRESS_PAIRS", 0)
    monkeypatch.setattr(tiles, "TILE_SCORES", 0)
    rng = np.random.default_rng(0)
    q, k, v = (rng.normal(size=(1, 64, 4)) for _ in range(3))
    run(Case(q, k, v, np.ones((1, 64), bool), np.ones((1, 64), bool), True, "saturated", 1.0,
             None))
    assert "satsim: attention over 64 queries, 1 head(s) by BLAS tiles: 0% of the tiles started" \
        in capsys.readouterr().err
