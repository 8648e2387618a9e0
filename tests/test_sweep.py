"""Sweeps: planning a grid, running it (resumable, finished runs skipped), the results table."""

import json

import pytest
from click.testing import CliRunner

from satsim.cli import cli
from satsim.commands.train import DEFAULTS
from satsim.errors import SatsimError
from satsim.training.sweep import collect, plan, run_sweep

pytestmark = pytest.mark.usefixtures("one_torch_thread")
TINY = {**DEFAULTS, "steps": 12, "train_size": 80, "eval_size": 20, "d_model": 8, "d_head": 4,
        "d_mlp": 8, "log_every": 4, "checkpoint_every": 6, "probe_size": 2, "device": "cpu"}


def test_plan_is_the_product_of_the_grid_with_names_from_what_varies():
    configs = plan(TINY, {"lang": ["dyck1", "anbn"], "seed": [0, 1], "lr": [0.01]})
    assert [c["name"] for c in configs] == ["dyck1-s0", "dyck1-s1", "anbn-s0", "anbn-s1"]
    assert {c["settings"]["lr"] for c in configs} == {0.01}
    assert configs[3]["settings"]["steps"] == 12
    with pytest.raises(SatsimError, match="unknown setting"):
        plan(TINY, {"layerz": [1, 2]})
    with pytest.raises(SatsimError, match="unknown optimizer"):
        plan(TINY, {"optimizer": ["adam", "rprop"]})


def test_a_sweep_runs_every_config_skips_finished_runs_and_collects(tmp_path):
    configs = plan(TINY, {"seed": [0, 1]})
    rows = run_sweep(configs, tmp_path)
    assert [r["name"] for r in rows] == ["s0", "s1"] and [r["seed"] for r in rows] == [0, 1]
    assert all(r["steps"] == 12 and "validation" in r["eval"] and r["theta_norm"] > 0
               for r in rows)
    final = tmp_path / "runs" / "s0" / "final.safetensors"
    stamp = final.stat().st_mtime_ns
    assert run_sweep(configs, tmp_path) == rows and final.stat().st_mtime_ns == stamp
    assert collect(tmp_path) == rows
    lines = (tmp_path / "results.jsonl").read_text().splitlines()
    assert [json.loads(line)["name"] for line in lines] == ["s0", "s1"]


def test_cli_plans_runs_and_refuses_bad_grids(tmp_path):
    runner = CliRunner()
    result = runner.invoke(cli, ["sweep", "--out", str(tmp_path), "--lang", "dyck1,anbn",
                                 "--lr", "1e-3,1e-2", "--set", "steps=50", "--plan"])
    planned = [json.loads(line) for line in result.output.splitlines()]
    assert [p["name"] for p in planned] == ["dyck1-lr0.001", "dyck1-lr0.01", "anbn-lr0.001",
                                            "anbn-lr0.01"]
    assert all(p["settings"]["steps"] == 50 for p in planned)
    for args, message in [(["--vary", "layerz=1,2"], "unknown training setting"),
                          (["--set", "steps"], "KEY=VALUE"),
                          (["--seed", "x"], "seed needs an integer"),
                          ([], "nothing to sweep")]:
        bad = runner.invoke(cli, ["sweep", "--out", str(tmp_path), *args],
                            standalone_mode=False)
        assert message in str(bad.exception)
