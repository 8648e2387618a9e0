"""The FLaRe benchmark's statistics against brute force: McNemar's exact test by enumerating
every outcome, Holm's adjustment by running its step-down procedure, the bootstrap by resampling
strings one by one."""

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from satsim.benchmarks import flare, stats


def enumerated_mcnemar(only_first: int, only_second: int) -> float:
    """P(a result at least as far from an even split as this one), over all 2^n outcomes."""
    n = only_first + only_second
    if n == 0:
        return 1.0
    observed = abs(only_first - n / 2)
    extreme = sum(abs(sum(bits) - n / 2) >= observed
                  for bits in itertools.product((0, 1), repeat=n))
    return extreme / 2**n


@given(st.integers(0, 9), st.integers(0, 9))
def test_mcnemar_is_the_exact_binomial_test_of_the_discordant_pairs(b, c):
    assert stats.mcnemar_exact(b, c) == pytest.approx(enumerated_mcnemar(b, c), rel=1e-12)


def step_down_rejects(pvalues: list[float], alpha: float) -> set[int]:
    """Holm's procedure at level alpha: reject the smallest p-values while p_(k) ≤ α/(m−k)."""
    rejected = set()
    for k, index in enumerate(sorted(range(len(pvalues)), key=lambda i: pvalues[i])):
        if (len(pvalues) - k) * pvalues[index] > alpha:  # p_(k) > α/(m−k), without rounding α
            break
        rejected.add(index)
    return rejected


@settings(max_examples=200)
@given(st.lists(st.floats(0, 1), min_size=1, max_size=7))
def test_holm_adjusted_p_is_the_smallest_level_at_which_the_procedure_rejects(pvalues):
    adjusted = stats.holm(pvalues)
    m = len(pvalues)
    levels = sorted({min(1.0, (m - k) * p) for k in range(m) for p in pvalues} | {1.0})
    for index, value in enumerate(adjusted):
        rejecting = [a for a in levels if index in step_down_rejects(pvalues, a)]
        expected = min(rejecting) if rejecting else 1.0
        assert value == pytest.approx(expected, abs=1e-12)


@pytest.mark.parametrize("hits, sizes", [([80], [100]), ([30, 45, 12], [50, 60, 40])])
def test_the_bootstrap_interval_is_that_of_resampling_each_trials_strings(hits, sizes):
    rng = np.random.default_rng(0)
    means = np.zeros(20_000)
    for h, n in zip(hits, sizes):
        strings = np.array([1] * h + [0] * (n - h))
        means += strings[rng.integers(0, n, size=(20_000, n))].mean(axis=1)
    means /= len(hits)
    low, high = stats.bootstrap_interval(hits, sizes)
    assert low == pytest.approx(np.quantile(means, 0.025), abs=0.01)
    assert high == pytest.approx(np.quantile(means, 0.975), abs=0.01)
    assert stats.bootstrap_interval([5], [5]) == [1.0, 1.0]
    assert stats.bootstrap_interval([], []) is None


def test_pair_counts_and_curves_count_string_by_string():
    soft = [True, False, True, None, False]
    limit = [True, True, None, False, False]
    labels = np.array([True, True, False, False, False])
    soft_right = np.array([a is not None and a == y for a, y in zip(soft, labels)])
    limit_right = np.array([a is not None and a == y for a, y in zip(limit, labels)])
    counts = stats.pair_counts(soft, limit, soft_right, limit_right)
    assert counts == {"agree": 2, "soft_only": 0, "limit_only": 2, "limit_constant": False}
    assert stats.pair_counts(soft, [None, True, True, None, True], soft_right,
                             np.zeros(5, bool))["limit_constant"]
    curve = stats.length_curve(np.array([0, 19, 20, 45]), {"soft": np.array([1, 0, 1, 1])})
    assert curve == {"width": 20, "n": [2, 1, 1], "soft": [1, 1, 1]}
    assert stats.summed_curves([curve, {"width": 20, "n": [1], "soft": [0]}]) == {
        "width": 20, "n": [3, 1, 1], "soft": [1, 1, 1]}


def test_a_p_value_below_a_floats_range_is_printed_as_a_bound_not_as_zero():
    from satsim.benchmarks.tables import _p

    assert stats.mcnemar_exact(5426, 0) == 0.0  # 2^-5425 underflows
    assert _p(stats.mcnemar_exact(5426, 0)) == "< 1e-300"
    assert _p(stats.mcnemar_exact(3, 10)) == "0.092"


def test_each_bin_table_row_has_every_column_the_acceptance_names():
    from satsim.benchmarks.tables import bin_tables

    evaluation = flare.evaluation_settings(10)
    evaluation["bins"] = [[0, 40]]
    value = {"mean": 0.75, "std": 0.05, "max": 0.8}
    cell = {"strings": 20, "undetermined": 0, "agreement": 0.6, "agreement_ci": [0.4, 0.8],
            "constant_limits": 0.5, **{c: value for c in flare.columns(evaluation)}}
    table = bin_tables([{"language": "first", "bins": [cell]}], [], evaluation, markdown=True)
    head, _, row = table.splitlines()[2:5]
    assert head.split(" | ")[1:8] == ["soft", "c = 10", "c = 100", "limit", "limit at init",
                                      "agreement [95% CI]", "constant limits"]
    assert row == ("| first | " + " | ".join(["0.75 ± 0.05 (0.80)"] * 5)
                   + " | 0.60 [0.40, 0.80] | 0.50 | 0/20 |  |")
