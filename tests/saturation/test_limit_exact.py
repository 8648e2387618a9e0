"""The exact limit by asymptotic expansion, and the findings where leading order is not enough."""

import itertools

import numpy as np
import pytest

import languages
from satsim import constructions
from satsim.analysis.measures import decide, row_cosines
from satsim.model.spec import (
    AttentionSpec,
    BlockSpec,
    LayerNormSpec,
    ModelSpec,
    OutputSpec,
)
from satsim.reference.forward import layer_norm as reference_layer_norm
from satsim.saturation import exact_limit, leading_order, run_limit
from satsim.saturation.series import Series, add, constant, layer_norm, product, relu
from satsim.soft import SoftTransformer
from tests.support.helpers import random_spec


def evaluate(series, c):
    return sum(c**degree * term for degree, term in series.terms.items())


@pytest.mark.parametrize("c", [10.0, 1000.0])
def test_layer_norm_series_matches_layer_norm_at_finite_c(c):
    rng = np.random.default_rng(0)
    terms = {2: rng.standard_normal((3, 5)), 1: rng.standard_normal((3, 5)), 0: np.ones((3, 5))}
    terms[2][1] = 4.0  # row 1: constant top term, so it is normalised one degree lower
    out, lead = layer_norm(Series(terms), eps=1e-5)
    assert lead.tolist() == [2, 1, 2] and out.top == 0
    direct = reference_layer_norm(evaluate(Series(terms), c), LayerNormSpec(eps=1e-5))
    np.testing.assert_allclose(evaluate(out, c), direct, rtol=0, atol=1e-12)


def test_relu_keeps_a_coordinate_iff_its_leading_coefficient_is_positive():
    x = add(constant([0.0, 0.0, 1.0, 0.0], 2), constant([1.0, -1.0, -5.0, 0.0], 1))
    out = relu(x)
    np.testing.assert_array_equal(out.terms[2], [0, 0, 1, 0])
    np.testing.assert_array_equal(out.terms[1], [1, 0, -5, 0])


def test_products_add_degrees_and_cancellations_are_exact_zeros():
    a = add(constant([1.0, 2.0], 2), constant([0.5, 0.0], 0))
    b = constant([3.0, -1.5], 1)
    p = product(a, b, "i,i->")
    assert sorted(p.terms) == [1, 3] and float(p.terms[3]) == 0.0 and float(p.terms[1]) == 1.5


def bias_breaks_ties():
    """One head whose queries are a bias (degree 1) under a zero W_Q: top-degree scores all tie."""
    f = np.float64
    attn = AttentionSpec(W_Q=np.zeros((1, 2, 1), f), W_K=np.array([[[0.0], [1.0]]]),
                         W_V=np.array([[[0.0], [1.0]]]), W_O=np.array([[[0.0, 1.0]]]),
                         b_Q=np.array([[1.0]]))
    return ModelSpec(vocab=("<bos>", "a", "b"), W_E=np.array([[1.0, 0.0], [1.0, 1.0], [1.0, -1.0]]),
                     blocks=(BlockSpec(attn=attn),),
                     output=OutputSpec(W_U=np.array([[0.0], [1.0]])), bos="<bos>", name="bias-ties")


def test_a_tie_split_by_a_lower_order_term_is_reported_and_changes_the_decision():
    spec = bias_breaks_ties()
    limit = exact_limit(spec, "abb")
    splits = [f for f in limit.findings if f.kind == "tie-split-below-leading-order"]
    assert [f.position for f in splits] == [1, 2, 3] and not any(f.harmless for f in splits)
    assert "degree-3 term" in splits[-1].detail
    assert "the leading-order output changes" in str(splits[-1])
    soft = SoftTransformer.from_spec(spec, device="cpu").scaled(1000.0).run(["abb"])
    assert decide(spec, soft.logits_of(0)) == [True]  # attends to the 'a': logit c^4 > 0
    assert decide(spec, limit.logit_signs()) == [True]
    leading = run_limit(leading_order(spec), ["abb"])  # b_Q dropped: uniform average, negative
    assert decide(spec, leading.logits[0]) == [False]


def test_harmless_splits_in_random_models_leave_the_leading_order_output_unchanged():
    limit = exact_limit(random_spec(3, norm="post", d_model=16, d_head=8, d_mlp=16), "abbabaabba")
    assert limit.findings and all(f.harmless for f in limit.findings)


@pytest.mark.slow  # runs long
def test_the_exact_limit_of_the_dyck1_construction_recognises_dyck1():
    spec = constructions.build("dyck1")
    dyck1 = languages.get("dyck1")
    for n in range(9):
        for symbols in itertools.product("()", repeat=n):
            string = "".join(symbols)
            assert decide(spec, exact_limit(spec, string).logit_signs()) == [dyck1.contains(string)]


def test_dyck1_findings_explain_why_the_leading_order_network_fails():
    kinds = {(f.kind, f.where, f.harmless) for f in exact_limit(constructions.build("dyck1"),
                                                                "(()))(").findings}
    assert ("tie-split-below-leading-order", "blocks.1.attn head 0", False) in kinds
    assert ("leading-term-vanishes", "blocks.1.hook_resid_mid", False) in kinds


def test_the_empty_dyck1_string_is_decided_below_the_top_degree():
    [finding] = [f for f in exact_limit(constructions.build("dyck1"), "").findings
                 if f.where.startswith("hook_logits")]
    assert "degree-8 logit is zero; its sign comes from degree 4" in finding.detail


@pytest.mark.parametrize("norm", ["none", "pre", "post"])
def test_exact_limit_directions_match_the_soft_twin_at_large_c(norm):
    spec = random_spec(5, norm=norm, positional="sinusoidal")
    strings = ["abbab", "ba", "aaab"]
    soft = SoftTransformer.from_spec(spec, device="cpu").scaled(1e4).run(strings)
    for row, string in enumerate(strings):
        limit = exact_limit(spec, string)
        for index, stream in enumerate(soft.residual_arrays()):
            got = stream[row, : len(string) + 1]
            want = limit.direction(index)
            assert row_cosines(got, want).min() > 1 - 1e-6, (string, index)


def test_layer_norm_of_a_row_of_negative_degree_is_normalised_against_eps():
    terms = {-1: np.array([[1.0, -2.0, 4.0]]), -2: np.array([[0.5, 0.0, -1.0]])}
    out, lead = layer_norm(Series(terms), eps=1e-2)
    assert lead.tolist() == [-1] and max(out.terms) == 0
    for c in (1e3, 1e4):
        direct = reference_layer_norm(evaluate(Series(terms), c), LayerNormSpec(eps=1e-2))
        np.testing.assert_allclose(evaluate(out, c), direct, rtol=1e-9, atol=0)


def test_a_row_zero_above_a_finite_floor_normalises_to_nan_not_to_zero():
    out, _ = layer_norm(Series({2: np.zeros((1, 3)), 1: np.ones((1, 3))}, floor=1), eps=1e-5)
    assert np.isnan(out.terms[0]).all()


def test_relu_of_an_unknown_coordinate_stays_unknown_and_of_a_known_zero_stays_zero():
    x = Series({1: np.array([np.nan, 0.0, 2.0]), 0: np.array([1.0, 0.0, -1.0])}, floor=0)
    out = relu(x)
    assert np.isnan(out.terms[1][0]) and out.terms[1][1] == 0 and out.terms[0][2] == -1


@pytest.mark.parametrize("c", [30.0, 300.0])
def test_limit_weights_match_softmax_of_the_expanded_scores_at_finite_c(c):
    from satsim.saturation.reference import limit_weights

    rng = np.random.default_rng(2)
    top = np.round(rng.standard_normal((1, 4, 4)))  # integer top scores: exact ties
    scores = Series({2: top, 0: rng.standard_normal((1, 4, 4)),
                     -1: rng.standard_normal((1, 4, 4))})
    ties = limit_weights(scores, "causal")
    raw = np.where(np.tril(np.ones((4, 4), bool)), evaluate(scores, c), -np.inf)
    direct = np.exp(raw - raw.max(axis=-1, keepdims=True))
    direct /= direct.sum(axis=-1, keepdims=True)
    got = evaluate(ties.weights, c)
    # what is left is the exponentially small weight of keys a top-degree gap removed
    assert np.abs(got - direct).max() < 1e-9 + np.exp(-0.5 * c**2) * 4


def test_limit_signs_answers_a_split_tie_from_the_exact_expansion():
    from satsim.saturation import limit_signs

    result = limit_signs(bias_breaks_ties(), ["abb", "b"])
    assert result.exact.tolist() == [True, True]
    assert [s.tolist() for s in result.signs][0] == [1.0]
    assert "tie set" in result.reasons[0]


def test_limit_signs_has_the_simulators_logit_shapes_and_leaves_safe_strings_to_leading_order():
    from satsim.engine.simulator import Simulator
    from satsim.saturation import limit_signs

    for task in ("recognition", "next-symbol"):
        spec = random_spec(0, norm="pre", d_model=16, d_mlp=32, task=task)
        strings = ["ab", "abba", "b"]
        result = limit_signs(spec, strings)
        logits = Simulator(spec).logits(strings)
        assert [s.shape for s in result.signs] == [x.shape for x in logits]
        assert not result.exact.any() and not result.undetermined.any()


def test_an_undetermined_answer_is_never_counted_correct():
    from satsim.analysis.scoring import count_correct

    assert count_correct(None, ["a", "b"], np.array([True, False]), [None, None]) == 0
    assert count_correct(None, ["a", "b"], np.array([True, False]), [True, None]) == 1
