"""Many runs trained as one stack: each follows its run trained alone, and a group killed with
SIGKILL mid-way resumes to the same files bit for bit as an uninterrupted group."""

import json
import os
import shutil
import signal
import subprocess
import sys
import time

import numpy as np
import pytest
import torch

from satsim.errors import SatsimError
from satsim.training.config import TrainConfig
from satsim.training.group import common_checkpoint, group_key, train_group
from satsim.training.loop import train
from satsim.training.stacked_optim import StackedOptimizer
from tests.support.helpers import stack_sizes
from tests.support.training import weights

BASE = {"task": "recognition", "split": "flare", "positional": "sinusoidal", "layers": 2,
        "d_model": 8, "heads": 2, "d_head": 4, "d_mlp": 16, "steps": 240, "batch_size": 16,
        "train_size": 100, "eval_size": 20, "checkpoint_every": 60, "log_every": 60,
        "probe_size": 4, "dtype": "float64", "device": "cpu"}
# Three languages (each its own strings and vocabulary), three seeds and
# learning rates; the second run stops early and leaves the stack.
GROUP = [{"lang": "parity-even", "seed": 1, "lr": 3e-3},
         {"lang": "majority", "seed": 2, "lr": 1e-2, "steps": 150},
         {"lang": "dyck1", "seed": 3, "lr": 1e-3}]


def configs(**changes):
    return [TrainConfig.from_dict({**BASE, **member, **changes}) for member in GROUP]


def metrics(run):
    rows = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
    for row in rows:
        row.pop("elapsed")
    return rows


def flat(run, name="final.safetensors"):
    return weights(run / name)


@pytest.mark.parametrize("kind", ["adam", "adamw", "sgd"])
def test_the_stacked_optimiser_moves_each_row_exactly_as_torch_moves_that_model(kind):
    rng = np.random.default_rng(4)
    lrs = [3e-3, 3e-3, 3e-3] if kind == "sgd" else [1e-3, 3e-2, 7e-3]
    start = torch.from_numpy(rng.standard_normal((3, 50))).float()
    grads = [torch.from_numpy(rng.standard_normal((3, 50))).float() for _ in range(6)]
    stacked = start.clone()
    optimizer = StackedOptimizer(kind, lrs, 0.01, 0.9 if kind == "sgd" else 0.0, stacked)
    for grad in grads:
        optimizer.step(stacked, grad)
    for row, lr in enumerate(lrs):
        alone = torch.nn.Parameter(start[row].clone())
        make = {"adam": torch.optim.Adam, "adamw": torch.optim.AdamW}.get(kind)
        reference = (make([alone], lr=lr, weight_decay=0.01) if make else
                     torch.optim.SGD([alone], lr=lr, momentum=0.9, weight_decay=0.01))
        for grad in grads:
            alone.grad = grad[row].clone()
            reference.step()
        assert torch.equal(alone.detach(), stacked[row])  # bit for bit
        state = optimizer.torch_state(row, [(optimizer.first[row], optimizer.second[row])])
        expected = reference.state_dict()["state"]
        assert state.keys() == expected.keys()
        for key, value in expected[0].items():
            assert torch.equal(state[0][key], value), key


def test_a_group_key_separates_what_cannot_share_a_stack():
    a, b, c = configs()
    assert group_key(a, 1) == group_key(b, 1) == group_key(c, 1)
    wider = TrainConfig.from_dict({**BASE, **GROUP[0], "d_model": 16})
    assert group_key(wider, 1) != group_key(a, 1)
    assert group_key(a, 1) != group_key(a, 3)  # next-symbol logits per symbol differ


@pytest.mark.slow  # runs long
def test_each_run_of_a_group_follows_its_run_alone_in_float64(tmp_path):
    group = configs()
    results = train_group(group, [tmp_path / f"group{i}" for i in range(len(group))])
    assert [result.steps for result in results] == [240, 150, 240]
    for index, config in enumerate(group):
        alone, stacked = tmp_path / f"alone{index}", tmp_path / f"group{index}"
        train(config, alone)
        a, b = flat(alone), flat(stacked)
        # Adam amplifies the rounding noise of a zero gradient (the key bias) to ~1e-11, so
        # the distance is measured against the whole parameter vector.
        assert np.linalg.norm(a - b) <= 1e-10 * np.linalg.norm(a)
        rows_a, rows_b = metrics(alone), metrics(stacked)
        assert [r["step"] for r in rows_a] == [r["step"] for r in rows_b]
        for row_a, row_b in zip(rows_a, rows_b):
            assert row_b["loss"] == pytest.approx(row_a["loss"], rel=1e-10)
            assert row_b["norm"] == pytest.approx(row_a["norm"], rel=1e-12)
            assert row_b["accuracy"] == row_a["accuracy"]
            assert row_b.get("eval") == row_a.get("eval")
        checkpoints = sorted(p.name for p in (alone / "checkpoints").iterdir())
        assert checkpoints == sorted(p.name for p in (stacked / "checkpoints").iterdir())
        for name in checkpoints:
            if name.endswith(".safetensors"):
                a, b = flat(alone / "checkpoints", name), flat(stacked / "checkpoints", name)
                assert np.linalg.norm(a - b) <= 1e-10 * np.linalg.norm(a)
        summary_a = json.loads((alone / "summary.json").read_text())
        summary_b = json.loads((stacked / "summary.json").read_text())
        assert summary_b["eval"] == summary_a["eval"]
    # a checkpoint of the group resumes alone: its optimiser state is torch's
    resumed = tmp_path / "resumed"
    (resumed / "checkpoints").mkdir(parents=True)
    for name in ("step-00000060.safetensors", "step-00000060.state.pt"):
        (resumed / "checkpoints" / name).write_bytes(
            (tmp_path / "group0" / "checkpoints" / name).read_bytes())
    train(group[0], resumed, resume=True, notice=lambda message: None)
    a, b = flat(tmp_path / "alone0"), flat(resumed)
    assert np.linalg.norm(a - b) <= 1e-10 * np.linalg.norm(a)


@pytest.mark.slow  # runs long
def test_runs_with_other_batch_sizes_share_a_stack_and_each_follows_its_run_alone(tmp_path):
    group = [TrainConfig.from_dict({**config.to_dict(), "batch_size": size, "steps": 80,
                                    "checkpoint_every": 40, "log_every": 40})
             for config, size in zip(configs(), (16, 5, 11))]
    assert len({group_key(config, 1) for config in group}) == 1
    train_group(group, [tmp_path / f"group{i}" for i in range(3)])
    for index, config in enumerate(group):
        train(config, tmp_path / f"alone{index}")
        a, b = flat(tmp_path / f"alone{index}"), flat(tmp_path / f"group{index}")
        assert np.linalg.norm(a - b) <= 1e-10 * np.linalg.norm(a)
        assert [r["accuracy"] for r in metrics(tmp_path / f"group{index}")] == [
            r["accuracy"] for r in metrics(tmp_path / f"alone{index}")]


def test_a_run_that_diverges_leaves_the_stack_with_its_error_and_the_others_go_on(tmp_path):
    group = configs(steps=40, checkpoint_every=20, log_every=20)
    group[1] = TrainConfig.from_dict({**group[1].to_dict(), "lr": 1e200})
    results = train_group(group, [tmp_path / f"group{i}" for i in range(3)])
    assert "the loss became" in str(results[1]) and "lower the lr" in str(results[1])
    assert not (tmp_path / "group1" / "summary.json").exists()
    alone = tmp_path / "alone2"
    train(group[2], alone)
    a, b = flat(alone), flat(tmp_path / "group2")
    assert results[2].steps == 40 and np.linalg.norm(a - b) <= 1e-10 * np.linalg.norm(a)


@pytest.mark.slow  # runs long
def test_sgd_with_momentum_in_a_stack_resumes_from_a_checkpoint_and_from_its_last_one(tmp_path):
    group = [TrainConfig.from_dict({**config.to_dict(), "optimizer": "sgd", "momentum": 0.9,
                                    "lr": 0.05, "steps": 60, "checkpoint_every": 20,
                                    "log_every": 20}) for config in configs()[:2]]
    runs = [tmp_path / f"group{i}" for i in range(2)]
    train_group(group, runs)
    alone = tmp_path / "alone0"
    train(group[0], alone)
    a = flat(alone)
    assert np.linalg.norm(a - flat(runs[0])) <= 1e-10 * np.linalg.norm(a)
    resumed = tmp_path / "resumed"  # from step 20: the momentum buffer comes back
    (resumed / "checkpoints").mkdir(parents=True)
    for name in ("step-00000020.safetensors", "step-00000020.state.pt"):
        (resumed / "checkpoints" / name).write_bytes((runs[0] / "checkpoints" / name).read_bytes())
    (done,) = train_group(group[:1], [resumed], resume=True, notice=lambda message: None)
    assert done.resumed_from == 20
    assert np.linalg.norm(a - flat(resumed)) <= 1e-10 * np.linalg.norm(a)
    (runs[1] / "summary.json").unlink()  # cut after its last checkpoint: nothing left to train
    (runs[1] / "final.safetensors").unlink()
    before = (runs[1] / "metrics.jsonl").read_text()
    (done,) = train_group(group[1:], runs[1:], resume=True, notice=lambda message: None)
    assert done.steps == 60 and done.resumed_from == 60
    assert (runs[1] / "metrics.jsonl").read_text() == before


GROUP_SCRIPT = """
import sys, json
from satsim.training.config import TrainConfig
from satsim.training.group import train_group
settings, root = json.loads(sys.argv[1]), sys.argv[2]
group = [TrainConfig.from_dict(s) for s in settings]
train_group(group, [f"{root}/run{i}" for i in range(len(group))], resume=True,
            notice=lambda message: None)
"""


def run_group(root, group):
    settings = json.dumps([config.to_dict() for config in group])
    return subprocess.Popen([sys.executable, "-c", GROUP_SCRIPT, settings, str(root)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


@pytest.mark.slow  # a fresh process
def test_a_group_killed_mid_way_resumes_to_the_uninterrupted_groups_files_bit_for_bit(tmp_path):
    group = configs(dtype="float32", steps=200, checkpoint_every=40, log_every=20)
    group[1] = TrainConfig.from_dict({**group[1].to_dict(), "steps": 130})
    whole, cut = tmp_path / "whole", tmp_path / "cut"
    baseline = run_group(whole, group)
    rng = np.random.default_rng(37)
    kills = 0
    for delay in rng.uniform(0.0, 1.5, size=3):
        process = run_group(cut, group)
        while not list(cut.glob("run*/checkpoints/*.state.pt")) and process.poll() is None:
            time.sleep(0.02)
        time.sleep(delay)
        if process.poll() is None:
            os.kill(process.pid, signal.SIGKILL)
            kills += 1
        process.communicate()
    finish = run_group(cut, group)
    _, err = finish.communicate()
    assert finish.returncode == 0, err
    _, err = baseline.communicate()
    assert baseline.returncode == 0, err
    assert kills >= 1
    for index in range(len(group)):
        a, b = whole / f"run{index}", cut / f"run{index}"
        assert np.array_equal(flat(a), flat(b))
        assert metrics(a) == metrics(b)


def test_a_group_cut_between_its_members_checkpoints_resumes_where_they_stood_together(
        tmp_path):
    # A kill between two members' checkpoints of one step leaves run0 at 160 and run2 at 120,
    # while run1 has finished at 130: the stack's rounding depends on who shares it, so the
    # group restarts every member at 120 (run1 retrains its last steps) and ends bit for bit.
    group = configs(dtype="float32", steps=200, checkpoint_every=40, log_every=20)
    group[1] = TrainConfig.from_dict({**group[1].to_dict(), "steps": 130})
    whole, cut = tmp_path / "whole", tmp_path / "cut"
    names = [f"run{index}" for index in range(len(group))]
    train_group(group, [whole / name for name in names], notice=lambda message: None)
    shutil.copytree(whole, cut)
    for name, last in (("run0", 160), ("run2", 120)):
        for path in (cut / name / "checkpoints").iterdir():
            if int(path.name.split("-")[1].split(".")[0]) > last:
                path.unlink()
        for done in ("final.safetensors", "summary.json"):
            (cut / name / done).unlink()
    assert common_checkpoint([cut / name for name in names]) == 120
    notices = []
    train_group(group, [cut / name for name in names], resume=True, notice=notices.append)
    assert sum("from step 120" in notice for notice in notices) == 3, notices
    for name in names:
        assert np.array_equal(flat(whole / name), flat(cut / name))
        assert metrics(whole / name) == metrics(cut / name)


def test_runs_are_stacked_by_architecture_and_the_memory_free(monkeypatch):
    from satsim.training import sweep

    settings = [{**BASE, **member, "steps": 10} for member in GROUP]
    wide = {**BASE, **GROUP[0], "d_model": 16, "seed": 9}
    planned = [{"name": f"r{i}", "settings": s} for i, s in enumerate([*settings, wide])]
    groups = sweep.plan_groups(planned, size=8)
    assert [[p["name"] for p in group] for group in groups] == [["r0", "r1", "r2"], ["r3"]]
    assert [len(group) for group in sweep.plan_groups(planned, size=2)] == [2, 1, 1]
    monkeypatch.setattr("satsim.engine.resources.available_memory", lambda: 1)
    assert [len(group) for group in sweep.plan_groups(planned, size=8)] == [1, 1, 1, 1]


@pytest.mark.slow  # runs long
def test_a_sweep_in_stacks_gives_the_rows_of_the_sweep_run_by_run(tmp_path, monkeypatch):
    from click.testing import CliRunner

    from satsim.cli.main import cli
    stacks = stack_sizes(monkeypatch)
    fixed = [f"--set={key}={value}" for key, value in
             {**BASE, "steps": 60, "checkpoint_every": 30, "log_every": 30}.items()]
    tables = {}
    for size in ("1", "3"):
        out = tmp_path / f"stacks-of-{size}"
        result = CliRunner().invoke(cli, ["sweep", "--out", str(out), "--lang", "parity-even",
                                          "--seed", "1,2,3", "--lr", "0.003", *fixed,
                                          "--group-size", size, "--json"],
                                    catch_exceptions=False)
        assert result.exit_code == 0, result.output
        tables[size] = [json.loads(line) for line in result.stdout.splitlines()]
    assert stacks == [3]  # the second sweep trained its three runs as one stack
    for alone, stacked in zip(tables["1"], tables["3"]):
        assert alone["name"] == stacked["name"] and alone["eval"] == stacked["eval"]
        assert stacked["theta_norm"] == pytest.approx(alone["theta_norm"], rel=1e-12)


def test_a_resumed_sweep_trains_each_run_in_the_stack_it_started_in(tmp_path, monkeypatch):
    from satsim.training import sweep

    planned = [{"name": f"r{i}", "settings": TrainConfig.from_dict(
        {**BASE, **GROUP[0], "seed": i}).to_dict()} for i in range(4)]
    given = []

    def rows(group):  # what run_group gives, as far as the sweep reads it
        return [{"name": run["name"], **run["settings"]} for run in group]

    def killed_at_the_second_stack(group, root):
        given.append([run["name"] for run in group])
        if len(given) == 2:
            raise KeyboardInterrupt  # the sweep is killed while its second stack trains
        return rows(group)
    with pytest.raises(KeyboardInterrupt):
        sweep.run_sweep(planned, tmp_path, group_size=2, group_worker=killed_at_the_second_stack)
    assert given == [["r0", "r1"], ["r2", "r3"]]
    # Less memory free now: planned afresh, the rest would train one by one
    monkeypatch.setattr("satsim.engine.resources.available_memory", lambda: 1)
    monkeypatch.setattr(sweep, "_check_memory", lambda *args: None)
    assert [len(group) for group in sweep.plan_groups(planned[2:], size=2)] == [1, 1]
    resumed = []
    table = sweep.run_sweep(planned, tmp_path, group_size=2, group_worker=lambda group, root: (
        resumed.append([run["name"] for run in group]) or rows(group)))
    assert resumed == [["r2", "r3"]] and [row["name"] for row in table] == ["r0", "r1", "r2", "r3"]
    (tmp_path / "results" / "r3.json").unlink()
    with pytest.raises(SatsimError, match="resume it with --group-size 2"):
        sweep.run_sweep(planned, tmp_path, group_size=3)
