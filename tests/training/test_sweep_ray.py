"""The Ray engine of `satsim sweep` on a real local Ray cluster: same table, worker deaths survived.

Ray comes with the test extra, so a missing Ray is an error here, not a skip; without it, run
``pytest -m "not ray"``.
"""

import json
import os
import signal
import threading
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from satsim.cli.main import cli
from satsim.training.runs import run_one
from satsim.training.sweep import plan, run_sweep
from tests.support.helpers import set_options
from tests.training.test_sweep import TINY, same_weights

pytestmark = [pytest.mark.slow, pytest.mark.ray,  # slow: a local Ray cluster
              pytest.mark.usefixtures("one_torch_thread", "ray_cluster")]
TIMING = ("elapsed", "resumed_from")
RAY_CPUS = 3
"""The local cluster's CPUs (conftest's ray_cluster)."""


def without_timing(rows: list[dict]) -> list[dict]:
    """Rows without the fields that depend on the clock or on interruptions."""
    return [{k: v for k, v in row.items() if k not in TIMING} for row in rows]


def test_a_ray_sweep_equals_the_local_sweep_bit_for_bit(tmp_path):
    configs = plan(TINY, {"seed": [0, 1, 2, 3]})
    local = run_sweep(configs, tmp_path / "local")
    result = CliRunner().invoke(cli, [
        "sweep", "--out", str(tmp_path / "ray"), "--seed", "0,1,2,3", "--engine", "ray",
        "--cpus-per-run", "1", "--json",
        *set_options(TINY, ("seed",))], catch_exceptions=False)
    rows = [json.loads(line) for line in result.stdout.splitlines()]
    assert without_timing(rows) == without_timing(local)
    assert [row["theta_norm"] for row in rows] == [row["theta_norm"] for row in local]
    for planned in configs:
        assert same_weights(tmp_path / "ray" / "runs" / planned["name"],
                            tmp_path / "local" / "runs" / planned["name"])
    recorded = sorted(p.name for p in (tmp_path / "ray" / "results").iterdir())
    assert recorded == ["s0.json", "s1.json", "s2.json", "s3.json"]


def test_a_ray_sweep_in_stacks_equals_the_local_one_bit_for_bit(tmp_path):
    configs = plan(TINY, {"seed": [0, 1, 2, 3]})
    local = run_sweep(configs, tmp_path / "local", group_size=2)
    remote = run_sweep(configs, tmp_path / "ray", engine="ray", group_size=2)
    assert without_timing(remote) == without_timing(local)
    for planned in configs:
        assert same_weights(tmp_path / "ray" / "runs" / planned["name"],
                            tmp_path / "local" / "runs" / planned["name"])


def worker_running(task_name: str) -> int | None:
    """The pid of the Ray worker whose process title says it runs ``task_name``, if any."""
    for entry in Path("/proc").iterdir():
        try:
            title = (entry / "cmdline").read_bytes().split(b"\0")[0]
        except OSError:
            continue
        if entry.name.isdigit() and title == f"ray::{task_name}".encode():
            return int(entry.name)
    return None


def test_a_killed_worker_is_retried_and_its_run_resumes_to_the_same_weights(tmp_path):
    settings = {**TINY, "steps": 300, "checkpoint_every": 20, "log_every": 20,
                "optimizer": "sgd"}
    configs = plan(settings, {"lr": [0.003, 1e30]})
    long_run = tmp_path / "sweep" / "runs" / "lr0.003"
    rows = []
    driver = threading.Thread(target=lambda: rows.extend(
        run_sweep(configs, tmp_path / "sweep", engine="ray")))
    driver.start()
    marker = long_run / "checkpoints" / "step-00000020.state.pt"
    while not marker.exists() and driver.is_alive():
        time.sleep(0.01)
    pid = worker_running("satsim-run-lr0.003")
    assert pid is not None and not (long_run / "summary.json").exists()
    os.kill(pid, signal.SIGKILL)
    driver.join(timeout=300)
    assert not driver.is_alive()
    resumed, diverged = rows
    assert resumed["name"] == "lr0.003" and 20 <= resumed["resumed_from"] < 300
    summary = json.loads((long_run / "summary.json").read_text())
    assert summary["resumed_from"] == resumed["resumed_from"]
    steps = [row["step"] for row in map(json.loads, (long_run / "metrics.jsonl").open())
             if "step" in row]
    assert steps == sorted(set(steps)) and steps[-1] == 299
    assert diverged["error"] == "the loss became nan at step 1; lower the lr"
    whole = run_one(configs[0], str(tmp_path / "whole"))
    assert whole["resumed_from"] is None
    assert without_timing([whole]) == without_timing([resumed])
    assert same_weights(long_run, tmp_path / "whole" / "runs" / "lr0.003")


def test_runs_on_cuda_ask_ray_for_a_gpu():
    from satsim.training.ray_engine import gpus_for

    on = {"settings": {"device": "cuda"}}
    off = {"settings": {"device": "cpu"}}
    assert [gpus_for(on, None), gpus_for(off, None), gpus_for(off, 0.5), gpus_for(on, 0.25)] \
        == [1.0, 0.0, 0.5, 0.25]


def test_more_cpus_per_run_than_any_node_has_are_refused_instead_of_waiting(tmp_path):
    result = CliRunner().invoke(cli, [
        "sweep", "--out", str(tmp_path / "ray"), "--seed", "0", "--engine", "ray",
        "--cpus-per-run", str(RAY_CPUS + 1), *set_options(TINY, ("seed",))],
        standalone_mode=False)
    assert str(result.exception) == (f"--cpus-per-run {RAY_CPUS + 1}: the Ray cluster's largest "
                                     f"node has {RAY_CPUS} CPUs; give at most {RAY_CPUS}")
