"""Comparing two FLaRe benchmarks paired by seed: the two-level bootstrap against resampling
trials and strings one by one, the means against hand counts, unpaired models refused."""

import json
import subprocess
import sys

import numpy as np
import pytest

from satsim.benchmarks.compare import compare_rows, paired_difference_interval


def brute_force_interval(first, second, replicates=20_000, seed=0):
    """Resample trial indices, then every picked trial's strings one by one, in both."""
    rng = np.random.default_rng(seed)
    total = np.zeros(replicates)
    for one, two in zip(first, second):
        strings = [[np.array([1] * h + [0] * (n - h)) for h, n in group] for group in (one, two)]
        for r in range(replicates):
            picks = rng.integers(0, len(one), size=len(one))
            means = [np.mean([s[i][rng.integers(0, len(s[i]), len(s[i]))].mean() for i in picks])
                     for s in strings]
            total[r] += means[1] - means[0]
    total /= len(first)
    return np.quantile(total, [0.025, 0.975])


@pytest.mark.parametrize("first, second", [
    ([[(30, 40), (20, 40), (35, 40)]], [[(38, 40), (25, 40), (36, 40)]]),
    ([[(10, 20), (12, 20)], [(5, 30), (29, 30)]], [[(15, 20), (11, 20)], [(9, 30), (30, 30)]]),
])
def test_the_interval_is_that_of_resampling_trials_then_each_trials_strings(first, second):
    low, high = paired_difference_interval(first, second)
    expected = brute_force_interval(first, second, replicates=4_000)
    assert low == pytest.approx(expected[0], abs=0.02)
    assert high == pytest.approx(expected[1], abs=0.02)


def test_a_certain_difference_has_a_point_interval_and_swapping_negates_it():
    assert paired_difference_interval([[(0, 10), (0, 5)]], [[(10, 10), (5, 5)]]) == [1.0, 1.0]
    one, two = [[(30, 40), (20, 40), (35, 40)]], [[(38, 40), (25, 40), (36, 40)]]
    low, high = paired_difference_interval(one, two)
    back = paired_difference_interval(two, one)
    assert back[0] == pytest.approx(-high, abs=0.01) and back[1] == pytest.approx(-low, abs=0.01)
    with pytest.raises(ValueError):
        paired_difference_interval([[(1, 2)]], [[(1, 2), (2, 2)]])


def _row(language, trial, seed, soft, limit, agree, n=10):
    cell = {"min_len": 0, "max_len": 40, "n": n, "hits": {"soft": soft, "limit": limit},
            "agree": agree}
    return {"name": f"{language}-t{trial}", "language": language, "trial": trial, "seed": seed,
            "bins": [cell]}


def test_the_comparison_pairs_models_by_trial_and_averages_languages():
    first = [_row("a", 1, 11, 5, 5, 10), _row("a", 2, 12, 7, 5, 8), _row("b", 1, 21, 10, 0, 0),
             {"name": "b-t2", "language": "b", "trial": 2, "error": "diverged"}]
    second = [_row("a", 1, 11, 9, 9, 10), _row("a", 2, 12, 8, 8, 10), _row("b", 1, 21, 10, 10, 10),
              _row("b", 2, 22, 1, 1, 10)]
    out = compare_rows(first, second, ["a", "b", "c"])
    assert [e["language"] for e in out["languages"]] == ["a", "b"]
    assert [e["trials"] for e in out["languages"]] == [2, 1]
    a = out["languages"][0]["bins"][0]
    assert a["soft"]["first"] == pytest.approx(0.6) and a["soft"]["second"] == pytest.approx(0.85)
    assert a["agreement"]["difference"] == pytest.approx(1.0 - 0.9)
    pooled = out["pooled"][0]
    assert pooled["limit"]["first"] == pytest.approx((0.5 + 0.0) / 2)
    assert pooled["limit"]["second"] == pytest.approx((0.85 + 1.0) / 2)
    assert pooled["limit"]["ci"][0] <= pooled["limit"]["difference"] <= pooled["limit"]["ci"][1]
    second[0] = _row("a", 1, 99, 9, 9, 10)
    with pytest.raises(ValueError, match="not paired"):
        compare_rows(first, second, ["a"])


def test_the_script_refuses_benchmarks_that_are_not_paired_in_one_line(tmp_path):
    for name, seed in (("one", 0), ("two", 1)):
        folder = tmp_path / name
        folder.mkdir()
        (folder / "benchmark.json").write_text(json.dumps(
            {"languages": ["a"], "trials": 1, "seed": seed, "evaluation": {}, "scale": "small",
             "data": None, "overrides": {}}))
        (folder / "models.jsonl").write_text(json.dumps(_row("a", 1, 11, 5, 5, 10)) + "\n")
    script = ["scripts/flare_compare.py", str(tmp_path / "one"), str(tmp_path / "two")]
    done = subprocess.run([sys.executable, *script], capture_output=True, text=True)
    assert done.returncode == 2
    assert done.stderr.strip() == "error: the two benchmarks differ in seed: their models are " \
                                  "not paired"
    (tmp_path / "two" / "benchmark.json").write_text(
        (tmp_path / "one" / "benchmark.json").read_text())
    done = subprocess.run([sys.executable, *script, "--json", str(tmp_path / "c.json")],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert "| a | 0–40 | 0.50 / 0.50, +0.00" in done.stdout
    assert json.loads((tmp_path / "c.json").read_text())["pooled"][0]["soft"]["difference"] == 0
