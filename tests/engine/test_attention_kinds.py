"""Per-head attention kinds (tolerant-hard(δ), score-class(δ), soft, saturated) against oracles.

The oracles are written from docs/semantics.md §1 and share no code with satsim: scores are put
in directly (q = 1, k = the scores, scale 1, so s_j = k_j exactly); tie sets and class indices
follow the definition's floating-point statement (the threshold fl(M − δ), the class
⌊fl(fl(M − s)/δ)⌋) and are also checked against exact rationals away from a rounding boundary;
means are exact fractions, score-class and softmax weights mpmath at 50 digits.
"""

from __future__ import annotations

import math
from dataclasses import replace
from fractions import Fraction

import mpmath
import numpy as np
import pytest
from hypothesis import assume, example, given, settings
from hypothesis import strategies as st

from satsim import Simulator, load_spec, save_spec
from satsim.engine.attend import attention
from satsim.errors import SatsimError
from satsim.model.spec import AttentionSpec
from satsim.reference import attention as ref
from satsim.reference.forward import forward
from tests.support.helpers import random_spec

MODEST = settings(max_examples=60, deadline=None)
WIDTHS = st.sampled_from([1e-12, 1e-9, 1e-6, 0.01, 0.02, 0.1, 0.5, 1.0, 3.0])


@st.composite
def near_ties(draw):
    """Scores around multiples of a width δ: on the boundary, just inside or just outside it.

    Exact ties, nudges of a few ulps and of 1e-3·δ, one key, values that are zero.
    """
    width = draw(WIDTHS)
    base = draw(st.sampled_from([0.0, 1.0, -2.5, 37.0, 1e-3]))
    n = draw(st.integers(1, 9))
    scores = []
    for _ in range(n):
        steps = draw(st.integers(0, 4))
        nudge = draw(st.sampled_from([0.0, 0.0, 1e-3, -1e-3, 2**-40, -(2**-40)]))
        scores.append(base - steps * width + nudge * width)
    values = [draw(st.sampled_from([0.0, 0.0, 1.0, -3.0, 0.25, 1e3])) for _ in range(n)]
    return width, np.array(scores), np.array(values)


def _run(kind, scores, values, **options):
    """The engine's and the reference's outputs for one query (q = 1) over the given scores."""
    q = np.ones((1, 1))
    k = scores[:, None].astype(np.float64)
    v = values[:, None].astype(np.float64)
    engine = attention(q, k, v, kind=kind, scale=1.0, attn_mask="bidirectional",
                       **options).output[0, 0]
    if kind == "score-class":
        reference = ref.score_class_attention(q, k, v, width=options["width"], scale=1.0)
    else:
        reference = ref.saturated_attention(q, k, v, scale=1.0, atol=options["atol"],
                                            rtol=options["rtol"])
    return engine, reference[0, 0]


def _members(scores, width):
    """Tolerant-hard's tie set by the definition: s_j >= fl(M − δ)."""
    threshold = float(max(scores)) - width
    return [float(s) >= threshold for s in scores]


@MODEST
@given(near_ties())
@example((1.0, np.array([-0.999, -1.999]), np.array([0.0, 0.0])))  # a gap of 2^-53 at the edge
def test_tolerant_hard_is_the_exact_mean_over_the_keys_within_delta(case):
    width, scores, values = case
    engine, reference = _run("saturated", scores, values, atol=width, rtol=0.0)
    members = _members(scores, width)
    best = Fraction(float(max(scores)))
    edge = 4 * Fraction(math.ulp(max(abs(float(max(scores))), width,  # fl(M − δ)'s rounding
                                     abs(float(max(scores)) - width))))
    for s, member in zip(scores, members):  # the float threshold is the exact one off its edge
        exact_gap = best - Fraction(float(s)) - Fraction(width)
        if abs(exact_gap) > edge:
            assert member == (exact_gap <= 0)
    chosen = [Fraction(float(x)) for x, m in zip(values, members) if m]
    expected = float(sum(chosen) / len(chosen))
    assert engine == pytest.approx(expected, rel=1e-14, abs=1e-12)
    assert reference == pytest.approx(expected, rel=1e-14, abs=1e-12)


def _class_oracle(scores, values, width):
    """Score-class(δ) from the class counts and class value sums, in mpmath at 50 digits."""
    best = float(max(scores))
    counts, sums = {}, {}
    for s, x in zip(scores, values):
        c = math.floor((best - float(s)) / width)
        exact = math.floor((Fraction(best) - Fraction(float(s))) / Fraction(width))
        ratio = (best - float(s)) / width
        if abs(ratio - round(ratio)) > 1e-9 * max(1.0, abs(ratio)):  # off a class boundary
            assert c == exact
        counts[c] = counts.get(c, 0) + 1
        sums[c] = sums.get(c, mpmath.mpf(0)) + mpmath.mpf(float(x))
    with mpmath.workdps(50):
        weight = {c: mpmath.exp(-c * mpmath.mpf(width)) for c in counts}
        top = mpmath.fsum(weight[c] * sums[c] for c in counts)
        bottom = mpmath.fsum(weight[c] * counts[c] for c in counts)
        return float(top / bottom), len(counts)


@MODEST
@given(near_ties())
def test_score_class_is_a_softmax_over_classes_weighted_by_their_counts(case):
    width, scores, values = case
    engine, reference = _run("score-class", scores, values, width=width)
    expected, n_classes = _class_oracle(scores, values, width)
    scale = max(1.0, float(np.abs(values).max()))
    assert engine == pytest.approx(expected, rel=1e-12, abs=1e-12 * scale)
    assert reference == pytest.approx(expected, rel=1e-12, abs=1e-12 * scale)
    q, k = np.ones((1, 1)), scores[:, None]
    assert ref.class_count(q, k, width=width, scale=1.0)[0] == n_classes


@MODEST
@given(st.lists(st.floats(-20, 20, allow_nan=False), min_size=1, max_size=12, unique=True),
       st.integers(0, 2**31))
def test_score_class_with_every_score_its_own_class_is_softmax(scores, seed):
    scores = np.array(scores)
    ordered = np.sort(scores)
    assume(len(scores) == 1 or np.diff(ordered).min() > 1e-6)
    values = np.random.default_rng(seed).normal(size=len(scores))
    with mpmath.workdps(50):
        weights = [mpmath.exp(mpmath.mpf(float(s)) - mpmath.mpf(float(ordered[-1])))
                   for s in scores]
        softmax = float(mpmath.fsum(w * mpmath.mpf(float(x)) for w, x in zip(weights, values))
                        / mpmath.fsum(weights))
    for width in (0.0, 1e-13):
        engine, reference = _run("score-class", scores, values, width=width)
        assert engine == pytest.approx(softmax, rel=1e-9, abs=1e-11)
        assert reference == pytest.approx(softmax, rel=1e-9, abs=1e-11)
    q, k, v = np.ones((1, 1)), scores[:, None], values[:, None]
    exact_softmax = attention(q, k, v, kind="softmax", scale=1.0).output
    assert np.array_equal(attention(q, k, v, kind="score-class", width=0.0, scale=1.0).output,
                          exact_softmax)


@MODEST
@given(st.lists(st.floats(-1e3, 1e3, allow_nan=False), min_size=1, max_size=12),
       st.lists(st.sampled_from([0.0, 1.0, -3.0, 0.25, 1e3, 2.0**-30]), min_size=12,
                max_size=12))
def test_score_class_at_one_class_is_the_exact_mean_of_the_values(scores, values):
    from satsim.analysis.harden import ONE_CLASS

    scores, values = np.array(scores), np.array(values[: len(scores)])
    expected = float(sum(Fraction(float(x)) for x in values) / len(values))
    engine, reference = _run("score-class", scores, values, width=ONE_CLASS)
    assert engine == pytest.approx(expected, rel=1e-14, abs=1e-14)
    assert reference == pytest.approx(expected, rel=1e-14, abs=1e-14)
    assert ref.class_count(np.ones((1, 1)), scores[:, None], width=ONE_CLASS, scale=1.0)[0] == 1


def _with_kinds(spec, kinds, deltas):
    """``spec`` with every layer's heads given these kinds and widths."""
    blocks = tuple(replace(block, attn=replace(block.attn, kind=kinds, delta=deltas))
                   for block in spec.blocks)
    return replace(spec, blocks=blocks)


STRINGS = ["", "a", "ab", "abba", "babab" * 3, "aab" * 9]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_tolerant_hard_at_the_default_tolerance_is_saturated_bit_for_bit(dtype):
    spec = random_spec(3, n_heads=3, dtype=dtype, mask="per-head")
    hybrid = _with_kinds(spec, ("tolerant-hard", "saturated", "tolerant-hard"), None)
    for got, expected in zip(Simulator(hybrid).logits(STRINGS), Simulator(spec).logits(STRINGS)):
        assert np.array_equal(got, expected)
    for string in STRINGS:
        assert np.array_equal(forward(hybrid, string).logits, forward(spec, string).logits)


def test_soft_heads_run_softmax_in_the_simulator_bit_for_bit():
    spec = random_spec(4, n_heads=2, mask="per-head")
    hybrid = _with_kinds(spec, "soft", None)
    softmax = Simulator(spec, "softmax", fused=False).logits(STRINGS)
    for got, expected in zip(Simulator(hybrid).logits(STRINGS), softmax):
        assert np.array_equal(got, expected)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_a_hybrid_runs_the_same_in_every_backend(seed):
    from satsim.soft.model import SoftTransformer

    spec = random_spec(seed, n_heads=4, mask="per-head", norm="pre", task="next-symbol")
    hybrid = _with_kinds(spec, ("soft", "tolerant-hard", "score-class", "saturated"),
                         (None, 0.3, 0.25, None))
    engine = Simulator(hybrid).logits(STRINGS)
    soft = SoftTransformer.from_spec(hybrid, device="cpu").run(STRINGS)
    for row, string in enumerate(STRINGS):
        expected = forward(hybrid, string).logits
        np.testing.assert_allclose(engine[row], expected, rtol=1e-9, atol=1e-11)
        np.testing.assert_allclose(soft.logits_of(row), expected, rtol=1e-8, atol=1e-10)
    assert not np.allclose(np.concatenate(engine), np.concatenate(Simulator(spec).logits(STRINGS)))


def test_kinds_survive_the_spec_file_and_old_files_run_as_before(tmp_path):
    spec = _with_kinds(random_spec(2, n_heads=3), ("score-class", "soft", "tolerant-hard"),
                       (0.02, None, 0.1))
    save_spec(spec, tmp_path / "m.safetensors")
    loaded = load_spec(tmp_path / "m.safetensors")
    assert [b.attn.head_kinds for b in loaded.blocks] == [b.attn.head_kinds for b in spec.blocks]
    assert loaded.blocks[0].attn.head_deltas == (0.02, None, 0.1)
    plain = random_spec(2, n_heads=3)
    save_spec(plain, tmp_path / "plain.safetensors")
    assert load_spec(tmp_path / "plain.safetensors").blocks[0].attn.head_kinds == ("run",) * 3
    assert not plain.fixed_kinds and spec.fixed_kinds


def test_bad_kinds_and_widths_are_spec_errors():
    attn = random_spec(0).blocks[0].attn
    for kind, delta, message in (("argmax", None, "unknown head kind 'argmax'"),
                                 ("score-class", None, "needs its class width"),
                                 ("soft", 0.1, "takes no width"),
                                 ("tolerant-hard", -1.0, "finite number >= 0"),
                                 ("score-class", float("nan"), "finite number >= 0"),
                                 (("soft",) * 3, None, "3 entries for 2 heads")):
        with pytest.raises(SatsimError, match=message):
            replace(attn, kind=kind, delta=delta)
    assert isinstance(replace(attn, kind=["soft", "score-class"], delta=[None, 1]), AttentionSpec)


def test_the_limit_of_a_hybrid_is_refused():
    from satsim.saturation.exact import exact_limit
    from satsim.saturation.limit import limit

    hybrid = _with_kinds(random_spec(1), ("soft", "score-class"), (None, 0.1))
    for take in (lambda: limit(hybrid), lambda: exact_limit(hybrid, "ab")):
        with pytest.raises(SatsimError, match="fixes attention kinds per head"):
            take()


@MODEST
@given(near_ties())
def test_the_soft_twin_weighs_fixed_kinds_as_the_oracles(case):
    import torch

    from satsim.model.settings import AttentionSettings
    from satsim.soft.hard_attention import kind_weights

    width, scores, values = case
    s = torch.from_numpy(scores[None, :])
    allowed = torch.ones_like(s, dtype=torch.bool)
    ways = {"score-class": AttentionSettings("score-class", width=width),
            "tolerant-hard": AttentionSettings("saturated", atol=width, rtol=0.0)}
    for name, way in ways.items():
        out = float(kind_weights(s, allowed, way, torch.float64)[0] @ torch.from_numpy(values))
        if name == "score-class":
            expected = _class_oracle(scores, values, width)[0]
        else:
            chosen = [Fraction(float(x)) for x, m in zip(values, _members(scores, width)) if m]
            expected = float(sum(chosen) / len(chosen))
        assert out == pytest.approx(expected, rel=1e-12, abs=1e-12 * max(1.0, np.abs(values).max()))


@pytest.mark.parametrize("mask", ["causal", "bidirectional", "strict-past", "future"])
@pytest.mark.parametrize("queries", ["general", "one row", "zero"])
def test_score_class_takes_every_kernel_path_as_the_reference(mask, queries):
    rng = np.random.default_rng(3)
    q, k, v = (rng.normal(size=(2, 3, 40, 4)) for _ in range(3))
    if queries == "one row":
        q[:] = q[:, :, :1]
    elif queries == "zero":
        q[:] = 0.0
    for width in (0.0, 0.05, 0.7):
        got = attention(q, k, v, kind="score-class", width=width, attn_mask=mask).output
        expected = ref.score_class_attention(q, k, v, width=width, attn_mask=mask)
        np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-12)
