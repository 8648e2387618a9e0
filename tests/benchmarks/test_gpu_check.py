"""bench/gpu_check.py at tiny sizes on the CPU: every stage runs and writes its JSON and tables."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.paths import BENCH

pytestmark = pytest.mark.slow  # bench/gpu_check.py in a fresh process

SCRIPT = BENCH / "gpu_check.py"
STAGES = ["tests", "throughput", "training", "homogeneity", "attention", "batched"]


def gpu_check(out: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(SCRIPT), "--device", "cpu", "--out", str(out),
                           *args], capture_output=True, text=True, timeout=600,
                          cwd=SCRIPT.parent.parent)


@pytest.fixture(scope="module")
def quick(tmp_path_factory):
    out = tmp_path_factory.mktemp("gpu_check")
    done = gpu_check(out, "--quick")
    return done, json.loads((out / "gpu_check.json").read_text()), (out / "gpu_check.md")


def test_every_stage_runs_at_tiny_sizes_and_succeeds(quick):
    done, results, _ = quick
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert list(results["stages"]) == STAGES
    for name, stage in results["stages"].items():
        assert stage["status"] == "ok", (name, stage.get("error"), stage.get("traceback"))
        assert stage["seconds"] > 0
    assert results["device"] == "cpu" and results["environment"]["torch"]
    for stage in STAGES:
        assert f"{stage}: starting" in done.stdout  # progress as it goes


def test_the_stages_report_what_they_measured(quick):
    _, results, _ = quick
    stages = results["stages"]
    tests = stages["tests"]
    assert tests["files"] and tests["failed"] == tests["errors"] == 0
    assert tests["tests"] == tests["skipped"] > 0  # the cuda tests, skipped without a GPU
    throughput = stages["throughput"]
    assert [(b["min_len"], b["max_len"]) for b in throughput["bins"]] == [(0, 16), (17, 64)]
    for model in ("simulator", "soft float32", "soft bfloat16 autocast"):
        assert throughput["overall"][model]["tokens_per_second"] > 0
    assert throughput["overall"]["simulator"]["accuracy"] == 1.0
    assert all(throughput["sdpa_kernels"].values())
    training = stages["training"]
    assert training["device"]["steps_per_second"] > 0
    assert training["instrumented"]["steps_per_second"] > 0
    batched = stages["batched"]
    assert batched["device"] == "cpu" and batched["threads"] == 1
    for size in ("small", "flare"):
        rates = batched["sizes"][size]
        assert set(rates) == {"loop", "1", "2", "rounds"}
        assert all(rates[key] > 0 for key in ("loop", "1", "2"))
    homogeneity = stages["homogeneity"]
    assert [(c["arrangement"], c["mask"]) for c in homogeneity["curves"]] == [
        ("post", "multiplicative"), ("ln-of-branch", "multiplicative")]
    assert all(len(c["cosine_mean"]) == 20 for c in homogeneity["curves"])
    check = stages["attention"]["exact_check"]
    assert check["tie_sets_equal"] and check["queries_with_ties"] > 0
    assert check["max_abs_output_difference"] < 1e-12
    assert [row["T"] for row in stages["attention"]["timings"]] == [64, 128]


def test_the_markdown_has_a_row_per_stage_and_their_tables(quick):
    _, _, markdown = quick
    text = markdown.read_text()
    assert "| stage | status | seconds | result |" in text
    for stage in STAGES:
        assert f"| {stage} | ok |" in text
    for header in ("| length | strings | tokens |", "| training (default Dyck-1 run) |",
                   "| size | M | models·steps/s | × M = 1 | × loop |",
                   "| B, H, T, d (causal) |", "Homogeneity, authors' protocol"):
        assert header in text


def test_a_stage_that_would_not_fit_the_budget_is_skipped(tmp_path):
    done = gpu_check(tmp_path, "--quick", "--budget-s", "1", "--stages", "attention")
    results = json.loads((tmp_path / "gpu_check.json").read_text())
    assert done.returncode == 1
    assert results["stages"]["attention"]["status"] == "skipped"
    assert "| attention | skipped |" in (tmp_path / "gpu_check.md").read_text()


def test_an_unknown_stage_is_refused(tmp_path):
    done = gpu_check(tmp_path, "--stages", "tests,warp")
    assert done.returncode == 2 and "unknown stages ['warp']" in done.stderr
