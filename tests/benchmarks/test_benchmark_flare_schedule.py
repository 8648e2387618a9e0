"""The FLaRe benchmark with FLaRe's schedule (--set lr_patience / stop_patience): it monitors
validation-long, and picks each model's checkpoint by the lowest cross-entropy there; and
--select final, which scores each model where training ended."""

import json

import pytest
from click.testing import CliRunner

from satsim.benchmarks import flare
from satsim.cli.main import cli

pytestmark = pytest.mark.usefixtures("one_torch_thread")
TINY = {"steps": 40, "train_size": 60, "eval_size": 10, "layers": 1, "d_model": 8, "heads": 1,
        "d_head": 4, "d_mlp": 8, "checkpoint_every": 5, "log_every": 5, "probe_size": 2,
        "lr": 0.05, "lr_patience": 1, "stop_patience": 1}


def test_the_schedule_monitors_validation_long_and_selection_follows_its_cross_entropy():
    configs = flare.plan(flare.SMALL, ["parity"], 2, {"stop_patience": 10})
    assert {c["settings"]["monitor"] for c in configs} == {"validation-long"}
    assert {c["evaluation"]["select"] for c in configs} == {"validation-long:cross-entropy"}
    plain = flare.plan(flare.SMALL, ["parity"], 1)
    assert plain[0]["evaluation"]["select"] == "validation-long"
    assert plain[0]["settings"]["stop_patience"] == 0


def test_a_scheduled_benchmark_picks_the_lowest_cross_entropy_checkpoint(tmp_path):
    args = ["benchmark", "flare", "--out", str(tmp_path / "b"), "--lang", "majority",
            "--trials", "1", "-n", "2", "--json",
            *[f"--set={key}={value}" for key, value in TINY.items()]]
    result = CliRunner().invoke(cli, args, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    row = next(json.loads(line) for line in result.stdout.splitlines()
               if json.loads(line)["kind"] == "model")
    metrics = [json.loads(line) for line in
               (tmp_path / "b" / "runs" / "majority-t1" / "metrics.jsonl").read_text().splitlines()]
    losses = [(m["monitor_loss"], m["step"]) for m in metrics if "monitor_loss" in m]
    best = min((loss, step) for loss, step in losses if step > 0)
    assert row["selected_step"] == best[1] and row["seed"] == flare.trial_seed(0, "majority", 1)
    assert row["held_out"] == next(m["eval"] for m in metrics if m["step"] == best[1])
    summary = json.loads((tmp_path / "b" / "runs" / "majority-t1" / "summary.json").read_text())
    assert summary["steps"] < TINY["steps"]  # the schedule stopped it (patience 1)


def test_select_final_scores_every_model_as_training_left_it(tmp_path):
    assert flare.plan(flare.SMALL, ["parity"], 1, final=True)[0]["evaluation"]["select"] == "final"
    tiny = {**TINY, "lr_patience": 0, "stop_patience": 0, "attention_beta": 10}
    args = ["benchmark", "flare", "--out", str(tmp_path / "b"), "--lang", "majority",
            "--trials", "1", "-n", "2", "--json", "--select", "final",
            *[f"--set={key}={value}" for key, value in tiny.items()]]
    result = CliRunner().invoke(cli, args, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    row = next(json.loads(line) for line in result.stdout.splitlines()
               if json.loads(line)["kind"] == "model")
    summary = json.loads((tmp_path / "b" / "runs" / "majority-t1" / "summary.json").read_text())
    assert (row["selected_step"], row["held_out"]) == (40, summary["eval"])
    assert json.loads((tmp_path / "b" / "benchmark.json").read_text())["evaluation"][
        "select"] == "final"


def test_runs_trained_before_the_schedule_existed_are_scored_with_its_defaults(tmp_path):
    tiny = {**TINY, "lr_patience": 0, "stop_patience": 0}
    args = ["benchmark", "flare", "--out", str(tmp_path / "b"), "--lang", "majority",
            "--trials", "1", "-n", "2", "--json",
            *[f"--set={key}={value}" for key, value in tiny.items()]]
    first = CliRunner().invoke(cli, args, catch_exceptions=False)
    assert first.exit_code == 0, first.output
    before = (tmp_path / "b" / "models.jsonl").read_text()
    config = tmp_path / "b" / "runs" / "majority-t1" / "config.json"
    held = json.loads(config.read_text())
    for key in ("lr_patience", "lr_decay", "stop_patience", "monitor"):
        del held[key]  # as an earlier version wrote it
    config.write_text(json.dumps(held))
    (tmp_path / "b" / "results" / "majority-t1.json").unlink()
    again = CliRunner().invoke(cli, args, catch_exceptions=False)
    assert again.exit_code == 0, again.output
    assert (tmp_path / "b" / "models.jsonl").read_text() == before
