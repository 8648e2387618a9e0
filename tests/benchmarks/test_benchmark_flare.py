"""`satsim benchmark flare` on a tiny configuration: its rows, resumed after kills, refusals.

The same tiny benchmark (two languages, two trials, a one-layer model) runs once for the module;
the other tests compare against its tables byte for byte. The Ray engine's test is in
tests/benchmarks/test_benchmark_flare_ray.py.
"""

import json
import os
import random
import shutil
import signal
import statistics
import subprocess
import sys
import time

import numpy as np
import pytest
import torch
from click.testing import CliRunner

import languages
from satsim.analysis.strings import bin_seed
from satsim.analysis.strings import test_set as draw
from satsim.benchmarks import flare, stats
from satsim.cli.main import cli
from satsim.model.io import load_spec
from satsim.saturation import exact_limit
from satsim.soft import SoftTransformer
from satsim.training.checkpoint import spec_path
from satsim.training.config import TrainConfig
from satsim.training.data import run_data
from satsim.training.report import flat_parameters
from tests.cli.test_cli_errors import one_error_line
from tests.support.helpers import run_satsim, stack_sizes

pytestmark = [pytest.mark.slow,  # a benchmark run, killed at random moments and resumed
              pytest.mark.usefixtures("one_torch_thread")]
TINY = {"steps": 40, "train_size": 60, "eval_size": 10, "layers": 1, "d_model": 8, "heads": 1,
        "d_head": 4, "d_mlp": 8, "checkpoint_every": 10, "log_every": 5, "probe_size": 2}
ARGS = ["--lang", "majority,parity", "--trials", "2", "-n", "10",
        *[f"--set={key}={value}" for key, value in TINY.items()]]
TABLES = ("models.jsonl", "languages.jsonl", "constructions.jsonl")


def benchmark(out, *extra):
    """Run the command in this process; its JSON lines by kind."""
    result = CliRunner().invoke(cli, ["benchmark", "flare", "--out", str(out), *ARGS, *extra,
                                      "--json"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    rows: dict[str, list[dict]] = {}
    for line in result.stdout.splitlines():
        row = json.loads(line)
        rows.setdefault(row.pop("kind"), []).append(row)
    return rows


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    """The tiny benchmark, run whole: its folder and its JSON lines."""
    out = tmp_path_factory.mktemp("flare") / "whole"
    return out, benchmark(out)


def tables(folder) -> dict[str, bytes]:
    return {name: (folder / name).read_bytes() for name in TABLES}


def test_every_model_is_scored_per_bin_on_the_checkpoint_validation_picked(reference):
    out, rows = reference
    models = rows["model"]
    assert [m["name"] for m in models] == ["majority-t1", "majority-t2", "parity-t1", "parity-t2"]
    for model in models:
        run = out / "runs" / model["name"]
        assert [(c["min_len"], c["max_len"]) for c in model["bins"]] == list(flare.BINS)
        candidates = [(r["step"], r["eval"]["validation-long"])
                      for r in map(json.loads, (run / "metrics.jsonl").open()) if "eval" in r]
        summary = json.loads((run / "summary.json").read_text())
        candidates.append((summary["steps"], summary["eval"]["validation-long"]))
        best = max(accuracy for _, accuracy in candidates)
        assert model["selected_step"] == min(s for s, a in candidates if a == best)
        spec = load_spec(str(spec_path(run, model["selected_step"])))
        language = languages.get(model["lang"])
        twin = SoftTransformer.from_spec(spec, device="cpu", dtype="float64")
        for index, cell in enumerate(model["bins"]):
            strings, labels = draw(language, 10, cell["min_len"], cell["max_len"],
                                       bin_seed(0, index))
            assert (cell["n"], cell["positives"]) == (10, int(labels.sum()))
            logits = twin.run(strings).logits.numpy()
            ends = [len(s) for s in strings]  # BOS first: the last symbol's position
            accepted = logits[np.arange(len(strings)), ends, 0] > 0
            assert cell["soft"] == np.mean(accepted == labels)
            assert cell["hits"]["soft"] == int((accepted == labels).sum())
            if index == 0 and model["trial"] == 1:  # the limits against the exact expansion
                signs, right = exact_limit_answers(spec, strings, labels)
                assert cell["limit"] == np.mean(right)
                assert cell["undetermined"] == int(np.isnan(signs).sum())
                decided = signs[~np.isnan(signs)] > 0
                assert cell["limit_constant"] == (len(set(decided.tolist())) <= 1)
                assert cell["agree"] == int(((signs > 0) == accepted)[~np.isnan(signs)].sum())
                soft_right = accepted == labels
                assert (cell["soft_only"], cell["limit_only"]) == (
                    int((soft_right & ~right).sum()), int((~soft_right & right).sum()))
                initial = load_spec(str(spec_path(run, 0)))
                _, right_init = exact_limit_answers(initial, strings, labels)
                assert cell["limit_init"] == np.mean(right_init)
        assert sum(model["curve"]["n"]) == sum(cell["n"] for cell in model["bins"])
        assert sum(model["curve"]["limit"]) == sum(cell["hits"]["limit"]
                                                   for cell in model["bins"])


def exact_limit_answers(spec, strings, labels):
    """The exact expansion's limit sign per string and whether it is right (NaN: undetermined)."""
    exact = spec.astype(np.float64)
    signs = np.array([exact_limit(exact, s).logit_signs()[-1, 0] for s in strings])
    return signs, (~np.isnan(signs)) & ((signs > 0) == labels)


def test_no_two_models_share_an_initialisation_or_a_batch_order(reference):
    out, rows = reference
    models = rows["model"]
    seeds = [m["seed"] for m in models]
    assert seeds == [flare.trial_seed(0, m["language"], m["trial"]) for m in models]
    assert len(set(seeds)) == len(models)  # two trials of a language, one trial of two languages
    starts, orders = [], []
    for model in models:
        run = out / "runs" / model["name"]
        config = TrainConfig.load(run / "config.json")
        assert config.seed == model["seed"]
        spec = load_spec(str(spec_path(run, 0)))
        starts.append(flat_parameters(spec))
        data = run_data(config, spec)
        orders.append([tuple(data.batch_rows(config.seed, t, config.batch_size))
                       for t in range(config.steps)])
    for i in range(len(models)):
        for j in range(i):
            assert not np.allclose(starts[i], starts[j]), (models[i]["name"], models[j]["name"])
            assert orders[i] != orders[j], (models[i]["name"], models[j]["name"])
            assert all(a != b for a, b in zip(orders[i], orders[j]))  # not one batch shared


def test_trial_seeds_are_the_same_in_every_process_and_distinct_at_the_paper_scale():
    code = ("from satsim.benchmarks import flare; "
            "print([c['settings']['seed'] for c in flare.plan(flare.PAPER, list(flare.FLARE), "
            "10)])")
    seen = set()
    for hash_seed in ("1", "2"):
        env = {**os.environ, "PYTHONHASHSEED": hash_seed}
        done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                              env=env, check=True)
        seen.add(done.stdout)
    (printed,) = seen
    seeds = json.loads(printed)
    assert len(seeds) == 180 == len(set(seeds))
    other = [c["settings"]["seed"] for c in flare.plan(flare.PAPER, list(flare.FLARE), 10,
                                                       seed=1)]
    assert not set(seeds) & set(other)  # another base seed: other seeds throughout


def test_trials_are_aggregated_as_flare_reports_them(reference):
    _, rows = reference
    for entry in rows["language"]:
        mine = [m for m in rows["model"] if m["language"] == entry["language"]]
        assert entry["trials"] == 2 and entry["failed"] == 0
        for index, cell in enumerate(entry["bins"]):
            for column in ("soft", "soft_c10", "soft_c100", "limit", "limit_init"):
                values = [m["bins"][index][column] for m in mine]
                assert cell[column]["mean"] == pytest.approx(statistics.fmean(values))
                assert cell[column]["std"] == pytest.approx(statistics.pstdev(values))
                assert cell[column]["max"] == max(values)
            assert cell["undetermined"] == sum(m["bins"][index]["undetermined"] for m in mine)
            mine_cells = [m["bins"][index] for m in mine]
            test = cell["mcnemar"]
            assert (test["soft_only"], test["limit_only"]) == (
                sum(c["soft_only"] for c in mine_cells), sum(c["limit_only"] for c in mine_cells))
            assert test["p"] == stats.mcnemar_exact(test["soft_only"], test["limit_only"])
            assert test["p"] <= test["p_holm"] <= 1
            assert cell["agreement"] == pytest.approx(
                statistics.fmean(c["agree"] / c["n"] for c in mine_cells))
            assert cell["constant_limits"] == statistics.fmean(
                c["limit_constant"] for c in mine_cells)
            low, high = cell["ci"]["soft"]
            assert low <= cell["soft"]["mean"] <= high
    from satsim import constructions

    built = rows["construction"]
    assert [row["construction"] for row in built] == constructions.names()
    assert [row["construction"] for row in built if row["language"]] == ["majority"]
    assert all(b["accuracy"] == 1.0 for row in built for b in row["bins"])


def test_a_finished_benchmark_reruns_without_training_and_prints_the_same_rows(reference):
    out, rows = reference
    final = out / "runs" / "parity-t2" / "final.safetensors"
    stamp = final.stat().st_mtime_ns
    assert benchmark(out) == rows and final.stat().st_mtime_ns == stamp
    table = (out / "table.md").read_text()
    assert "| majority |" in table and "| parity |" in table


def test_models_trained_as_one_stack_give_the_table_of_models_trained_one_by_one(
        reference, tmp_path, monkeypatch):
    stacks = stack_sizes(monkeypatch)
    _, rows = reference
    stacked = benchmark(tmp_path / "stacked", "--group-size", "4")
    assert stacks == [4]  # both languages share an architecture and alphabet size
    # float32 sums in another order in a stack: the same models to rounding, so the same
    # decisions on these strings and the same checkpoints picked
    for alone, mine in zip(rows["model"], stacked["model"]):
        assert (mine["name"], mine["selected_step"]) == (alone["name"], alone["selected_step"])
        assert mine["held_out"] == alone["held_out"]
        for cell_alone, cell in zip(alone["bins"], mine["bins"]):
            for column in ("soft", "soft_c10", "soft_c100", "limit"):
                assert cell[column] == cell_alone[column]
        assert mine["norm_growth"]["end"] == pytest.approx(alone["norm_growth"]["end"],
                                                           rel=1e-5)


def test_a_model_that_cannot_be_scored_is_an_error_row_and_the_others_stay(reference, tmp_path):
    whole, _ = reference
    broken = tmp_path / "broken"
    shutil.copytree(whole, broken)
    run = broken / "runs" / "majority-t1"
    step = json.loads((broken / "results" / "majority-t1.json").read_text())["selected_step"]
    (broken / "results" / "majority-t1.json").unlink()
    (run / "benchmark.json").unlink()
    spec_path(run, step).write_bytes(b"not a safetensors file")
    result = run_satsim("benchmark", "flare", "--out", str(broken), *ARGS)
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert "majority-t1" in result.stdout and "failed: " in result.stdout
    rows = [json.loads(line) for line in (broken / "models.jsonl").open()]
    assert "error" in rows[0] and all("error" not in row for row in rows[1:])
    assert result.stderr.splitlines()[-1] == (  # the reason, not only that it failed
        f"error: 1 of 4 models failed (majority-t1); the first, majority-t1: {rows[0]['error']}"
        "; the tables leave them out")
    majority = json.loads((broken / "languages.jsonl").read_text().splitlines()[0])
    assert (majority["trials"], majority["failed"]) == (1, 1)


def metric_lines(root) -> int:
    return sum(len(path.read_text().splitlines()) for path in root.glob("runs/*/metrics.jsonl"))


def test_a_benchmark_killed_at_random_moments_resumes_to_the_same_tables(reference, tmp_path):
    whole, _ = reference
    cut = tmp_path / "cut"
    code = ("import sys; from satsim.cli.main import main; "
            "sys.argv = ['satsim', *sys.argv[1:]]; main()")
    args = [sys.executable, "-c", code, "benchmark", "flare", "--out", str(cut), *ARGS]
    moments = random.Random(27)
    kills = 0
    for _ in range(2):  # each kill lands at a random moment after some progress
        logged = metric_lines(cut)
        process = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        while metric_lines(cut) <= logged and process.poll() is None:
            time.sleep(0.02)
        time.sleep(moments.uniform(0.0, 1.0))
        if process.poll() is None:
            os.kill(process.pid, signal.SIGKILL)
            kills += 1
        process.wait()
    assert kills >= 1
    finished = subprocess.run(args, capture_output=True, text=True, timeout=600)
    assert finished.returncode == 0, finished.stderr
    assert tables(cut) == tables(whole)


def test_the_paper_scale_plans_flares_model_size_and_draws_each_trials_optimiser():
    configs = flare.plan(flare.PAPER, flare.language_names(), 10)
    assert len(configs) == 180 and configs == flare.plan(flare.PAPER, list(flare.FLARE), 10)
    settings = [c["settings"] for c in configs]
    assert {(s["layers"], s["d_model"], s["heads"], s["d_mlp"]) for s in settings} == {
        (5, 32, 8, 128)}
    assert all(1e-4 <= s["lr"] <= 1e-2 for s in settings)
    assert all(round(128 / 21) <= s["batch_size"] <= round(4096 / 21) for s in settings)
    assert len({s["lr"] for s in settings}) == 180
    assert {c["settings"]["lang"] for c in configs if c["model"]["language"] == "parity"} == {
        "parity-odd"}


@pytest.mark.parametrize("extra, message", [
    (["--lang", "dyck1"], "'dyck1' is not one of FLaRe's languages"),
    (["--set", "task=next-symbol"], "task is fixed by the benchmark"),
    (["--set", "stepz=3"], "unknown training setting 'stepz'"),
    (["--set", "steps"], "--set takes KEY=VALUE"),
    (["--set", "positional=learned"], "more than the 256 rows of a learned positional table"),
    (["--engine", "ray", "--jobs", "2"], "--jobs is an option of --engine local"),
    (["--trials", "0"], "Invalid value for '--trials'"),
    (["--scale", "huge"], "Invalid value for '--scale'"),
    (["-n", "2000000000"], "-n 2000000000 (strings per length bin) needs about"),
    (["--trials", "2000000000"], "--trials 2000000000 (36,000,000,000 models) needs about"),
    pytest.param(["--set", "device=cuda"], "device 'cuda' was asked for, but torch sees no CUDA",
                 marks=pytest.mark.skipif(torch.cuda.is_available(), reason="a GPU is here")),
])
def test_bad_options_are_one_line_errors_before_any_work(tmp_path, extra, message):
    result = run_satsim("benchmark", "flare", "--out", str(tmp_path / "b"), *extra)
    assert message in one_error_line(result)
    assert not (tmp_path / "b").exists()


def test_a_folder_of_another_benchmark_or_a_file_is_refused_untouched(reference, tmp_path):
    whole, _ = reference
    before = tables(whole)
    other = run_satsim("benchmark", "flare", "--out", str(whole), *ARGS[:-1], "--set=steps=41")
    assert "holds another benchmark" in one_error_line(other)
    fewer = run_satsim("benchmark", "flare", "--out", str(whole), *ARGS, "-n", "12")
    assert "holds another benchmark (its evaluation differs" in one_error_line(fewer)
    assert tables(whole) == before
    (tmp_path / "file").write_text("")
    assert "is a file" in one_error_line(run_satsim("benchmark", "flare", "--out",
                                                    str(tmp_path / "file")))


def test_a_run_that_logged_one_norm_has_no_growth_fit_and_no_traceback(tmp_path):
    from satsim.benchmarks.flare import norm_growth

    (tmp_path / "metrics.jsonl").write_text(json.dumps({"step": 0, "norm": 3.5}) + "\n")
    assert norm_growth(tmp_path) == {"start": 3.5, "end": 3.5, "growth_rate": None,
                                     "best": None, "best_r2": None, "power": None}
