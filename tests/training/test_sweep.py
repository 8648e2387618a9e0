"""Sweeps: planning a grid, running it (resumable, finished runs skipped), the results table."""

import hashlib
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import time

import numpy as np
import pytest
from click.testing import CliRunner

from satsim.cli.main import cli
from satsim.errors import SatsimError
from satsim.model.io import load_spec
from satsim.training.config import DEFAULTS
from satsim.training.sweep import collect, plan, run_sweep
from tests.support.helpers import run_satsim, set_options

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
    assert all(r["resumed_from"] is None for r in rows)
    assert all(r["steps"] == 12 and "validation" in r["eval"] and r["theta_norm"] > 0
               for r in rows)
    final = tmp_path / "runs" / "s0" / "final.safetensors"
    stamp = final.stat().st_mtime_ns
    assert run_sweep(configs, tmp_path) == rows and final.stat().st_mtime_ns == stamp
    assert collect(tmp_path) == rows
    lines = (tmp_path / "results.jsonl").read_text().splitlines()
    assert [json.loads(line)["name"] for line in lines] == ["s0", "s1"]


def test_collect_reads_rows_returned_to_the_driver_or_else_the_run_folders(tmp_path):
    configs = plan(TINY, {"seed": [0, 1]})
    rows = run_sweep(configs, tmp_path / "driver")
    shutil.copytree(tmp_path / "driver", tmp_path / "elsewhere")
    shutil.rmtree(tmp_path / "driver" / "runs")  # runs trained on other nodes, no shared disk
    assert collect(tmp_path / "driver") == rows
    shutil.rmtree(tmp_path / "elsewhere" / "results")  # runs mapped by another engine
    assert collect(tmp_path / "elsewhere") == rows


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
                          (["--seed", "0", "--address", "auto"], "--address is an option of"),
                          (["--seed", "0", "--engine", "ray", "--jobs", "2"],
                           "--jobs is an option of --engine local"),
                          ([], "nothing to sweep")]:
        bad = runner.invoke(cli, ["sweep", "--out", str(tmp_path), *args],
                            standalone_mode=False)
        assert message in str(bad.exception)


def test_a_sweep_too_big_for_memory_is_refused_before_writing(tmp_path):
    configs = plan({**TINY, "d_model": 100_000}, {"seed": [0, 1]})
    with pytest.raises(SatsimError, match="2 runs at once, the largest training with d_model "
                                          "100000, .* needs about .* or --jobs$"):
        run_sweep(configs, tmp_path / "s", jobs=2)
    assert not (tmp_path / "s").exists()


def test_the_table_orders_held_out_sets_by_their_lengths(capsys):
    from satsim.cli.sweep import _table

    row = {"name": "s0", "theta_norm": 1.0, "elapsed": 2.0,
           "eval": {"test-102-150": 0.1, "validation": 0.9, "test-52-100": 0.5, "test-8-9": 0.7}}
    _table([row])
    header, line = capsys.readouterr().out.splitlines()
    assert header.split()[1:5] == ["test-8-9", "test-52-100", "test-102-150", "validation"]
    assert line.split()[1:5] == ["0.7000", "0.5000", "0.1000", "0.9000"]


def test_a_sweep_with_a_mistyped_language_writes_nothing(tmp_path):
    # It used to write plan.json and run it, and every corrected sweep into the folder was
    # refused as another plan.
    bad = CliRunner().invoke(cli, ["sweep", "--out", str(tmp_path / "s"), "--lang", "dyk1",
                                   "--seed", "0"], standalone_mode=False)
    assert "unknown language 'dyk1'" in str(bad.exception) and not (tmp_path / "s").exists()


def folder_state(root) -> dict[str, str]:
    """Every file under ``root`` with a hash of its bytes (to show nothing was written)."""
    return {str(path.relative_to(root)): hashlib.sha256(path.read_bytes()).hexdigest()
            for path in sorted(root.rglob("*")) if path.is_file()}


def final_weights(run) -> dict[str, np.ndarray]:
    """The final tensors of a run."""
    return load_spec(str(run / "final.safetensors")).tensors()


def same_weights(a, b) -> bool:
    """Bit-identical final tensors of two runs."""
    wa, wb = final_weights(a), final_weights(b)
    return wa.keys() == wb.keys() and all(np.array_equal(wa[k], wb[k]) for k in wa)


def test_a_sweep_folder_refuses_another_plan_before_writing_anything(tmp_path):
    rows = run_sweep(plan(TINY, {"seed": [0, 1]}), tmp_path)
    held = json.loads((tmp_path / "plan.json").read_text())
    for planned in held:  # as written before the dtype setting existed: the same plan
        del planned["settings"]["dtype"]
    (tmp_path / "plan.json").write_text(json.dumps(held))
    assert run_sweep(plan(TINY, {"seed": [0, 1]}), tmp_path) == rows
    before = folder_state(tmp_path)
    other_steps = plan({**TINY, "steps": 18}, {"seed": [0, 1]})
    with pytest.raises(SatsimError, match="holds another sweep .run s0 has steps=12, not 18"):
        run_sweep(other_steps, tmp_path)
    with pytest.raises(SatsimError, match="holds another sweep .it plans runs s0, s1"):
        run_sweep(plan(TINY, {"seed": [0, 1, 2]}), tmp_path)
    (tmp_path / "plan.json").unlink()  # no plan to compare: each run's own config still is
    with pytest.raises(SatsimError, match="runs/s0 holds a run with other settings"):
        run_sweep(other_steps, tmp_path)
    del before["plan.json"]
    assert folder_state(tmp_path) == before


@pytest.mark.slow  # a fresh process
def test_cli_rerun_with_other_settings_is_one_error_line_not_the_old_table(tmp_path):
    args = ["sweep", "--out", str(tmp_path), "--seed", "0", *set_options(dict(
            [("steps", 12), ("train_size", 80), ("eval_size", 20), ("d_model", 8),
             ("d_head", 4), ("d_mlp", 8), ("log_every", 4), ("checkpoint_every", 6),
             ("probe_size", 2), ("device", "cpu")]))]
    first = run_satsim(*args)
    assert first.returncode == 0 and first.stdout.splitlines()[1].startswith("s0 ")
    before = folder_state(tmp_path)
    again = run_satsim(*args, "--set", "lr=0.01")
    assert again.returncode == 2 and again.stdout == ""
    assert again.stderr.strip().splitlines()[-1] == (
        f"error: {tmp_path} holds another sweep (run s0 has lr=0.003, not 0.01); rerun it with "
        "its own options, or choose another --out")
    assert folder_state(tmp_path) == before


@pytest.mark.slow  # a fresh process
def test_a_diverging_run_is_named_and_the_other_rows_are_written(tmp_path):
    configs = plan({**TINY, "optimizer": "sgd"}, {"lr": [0.01, 1e30], "seed": [0]})
    rows = run_sweep(configs, tmp_path)
    assert [r["name"] for r in rows] == ["lr0.01", "lr1e+30"]
    assert "validation" in rows[0]["eval"] and "error" not in rows[0]
    assert rows[1]["error"] == "the loss became nan at step 1; lower the lr"
    lines = (tmp_path / "results.jsonl").read_text().splitlines()
    assert [json.loads(line) for line in lines] == rows
    assert collect(tmp_path) == rows
    result = run_satsim("sweep", "--out", str(tmp_path), "--lr", "0.01,1e30", "--seed", "0",
                        *set_options({**TINY, "optimizer": "sgd"}, ("lr", "seed")))
    table = result.stdout.splitlines()
    assert table[1].startswith("lr0.01 ") and table[2].split() == [
        "lr1e+30", "failed:", "the", "loss", "became", "nan", "at", "step", "1;", "lower",
        "the", "lr"]
    assert result.returncode == 2 and result.stderr.splitlines()[-1] == (
        "error: 1 of 2 runs failed (lr1e+30); the first, lr1e+30: the loss became nan at "
        "step 1; lower the lr")


@pytest.mark.slow  # a fresh process
def test_the_ray_engine_without_ray_is_one_line_naming_the_extra(tmp_path):
    code = ("import sys; sys.modules['ray'] = None; from satsim.cli.main import main; "
            "sys.argv = ['satsim', *sys.argv[1:]]; main()")
    result = subprocess.run([sys.executable, "-c", code, "sweep", "--out", str(tmp_path),
                             "--seed", "0,1", "--engine", "ray"], capture_output=True, text=True)
    assert result.returncode == 2 and result.stderr.splitlines() == [
        'error: this command needs ray, which is not installed; install it with: '
        'pip install "satsim[ray]"']
    assert not tmp_path.exists() or not any(tmp_path.iterdir())


NO_LOCAL_CLUSTER = ("import ray._private.services as services; "
                    "import functools; services.find_gcs_addresses = functools.cache(lambda: []); "
                    "services.find_bootstrap_address = lambda temp_dir=None: None; ")
"""Hide any Ray cluster another process runs on this machine from `auto`."""


@pytest.mark.slow  # a fresh process
@pytest.mark.parametrize(("address", "environment", "named"), [
    ("127.0.0.1:1", {}, "'127.0.0.1:1' ("),
    (None, {"RAY_ADDRESS": "127.0.0.1:1"}, "'127.0.0.1:1' ("),
    ("auto", {}, "no Ray cluster at address 'auto' (Could not find any running Ray instance"),
])
def test_a_ray_cluster_that_is_not_there_is_one_line_naming_its_address(tmp_path, address,
                                                                        environment, named):
    # Ray itself retries an unreachable address for minutes; `auto` without a cluster raised a
    # ConnectionError labelled as a bug. The timeout is a guard against a hang, not a measure.
    code = (NO_LOCAL_CLUSTER + "import sys; from satsim.cli.main import main; "
            "sys.argv = ['satsim', *sys.argv[1:]]; main()")
    where = ["--address", address] if address else []
    result = subprocess.run([sys.executable, "-c", code, "sweep", "--out", str(tmp_path / "s"),
                             "--seed", "0", "--set", "steps=1", "--engine", "ray", *where],
                            capture_output=True, text=True, timeout=300,
                            env={**os.environ, **environment})
    assert result.returncode == 2, result.stderr
    error = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert len(error) == 1 and named in error[0] and "Traceback" not in result.stderr
    assert not (tmp_path / "s").exists()  # refused before anything was written


def metric_lines(root) -> int:
    """How many metrics rows the runs under ``root`` have logged so far."""
    return sum(len(path.read_text().splitlines()) for path in root.glob("runs/*/metrics.jsonl"))


@pytest.mark.slow  # a fresh process
def test_sweeps_killed_at_random_moments_resume_to_the_same_weights_or_refuse(tmp_path):
    """SIGKILL `satsim sweep` at random moments; reruns end bit-identical, other plans refused."""
    settings = {**TINY, "steps": 150, "checkpoint_every": 10, "log_every": 5}
    configs = plan(settings, {"seed": [0, 1]})
    whole = tmp_path / "whole"
    reference = run_sweep(configs, whole)
    cut = tmp_path / "cut"
    code = ("import sys; from satsim.cli.main import main; "
            "sys.argv = ['satsim', *sys.argv[1:]]; main()")
    args = [sys.executable, "-c", code, "sweep", "--out", str(cut), "--seed", "0,1",
            *set_options(settings, ("seed",))]
    moments = random.Random(17)
    kills = 0
    for _ in range(3):  # each kill lands after some progress, at a random moment after it
        logged = metric_lines(cut)
        process = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        while metric_lines(cut) <= logged and process.poll() is None:
            time.sleep(0.02)
        time.sleep(moments.uniform(0.0, 0.3))
        if process.poll() is None:  # on a fast machine the sweep may already have finished
            os.kill(process.pid, signal.SIGKILL)
            kills += 1
        process.wait()
        before = folder_state(cut)  # a different plan is refused whatever state the kill left
        with pytest.raises(SatsimError, match="holds another sweep|holds a run with other"):
            run_sweep(plan({**settings, "d_model": 12}, {"seed": [0, 1]}), cut)
        assert folder_state(cut) == before
    assert kills >= 1
    finished = subprocess.run(args, capture_output=True, text=True)
    assert finished.returncode == 0, finished.stderr
    rows = [json.loads(line) for line in (cut / "results.jsonl").read_text().splitlines()]
    timing = ("elapsed", "resumed_from")
    assert ([{k: v for k, v in r.items() if k not in timing} for r in rows]
            == [{k: v for k, v in r.items() if k not in timing} for r in reference])
    for planned in configs:
        run = cut / "runs" / planned["name"]
        assert same_weights(run, whole / "runs" / planned["name"])
        steps = [row["step"] for row in map(json.loads, (run / "metrics.jsonl").open())
                 if "step" in row]
        assert steps == sorted(set(steps)) and steps[-1] == settings["steps"] - 1


def tear(path) -> None:
    """Cut a file in half, as a failing disk or a careless copy would."""
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])


def test_torn_sweep_files_give_the_same_weights_or_a_refusal_naming_them(tmp_path):
    configs = plan(TINY, {"seed": [0, 1]})
    whole = tmp_path / "whole"
    reference = run_sweep(configs, whole)

    def copy(name: str):
        shutil.copytree(whole, tmp_path / name)
        return tmp_path / name

    for torn in ("plan.json", "results/s0.json", "runs/s0/config.json"):
        root = copy(torn.replace("/", "-"))
        tear(root / torn)
        with pytest.raises(SatsimError, match=f"cannot read {root / torn} .*move it away"):
            run_sweep(configs, root)
    root = copy("results-table")  # the table is written, never read: it is written again
    tear(root / "results.jsonl")
    assert run_sweep(configs, root) == reference
    root = copy("summary")  # a run whose summary is torn fails alone, with the file named
    (root / "results" / "s0.json").unlink()
    tear(root / "runs" / "s0" / "summary.json")
    rows = run_sweep(configs, root)
    assert "cannot read" in rows[0]["error"] and "summary.json" in rows[0]["error"]
    assert rows[1] == reference[1]
    root = copy("checkpoint")  # an unfinished run with a torn newest checkpoint resumes
    for done in ("results/s1.json", "runs/s1/summary.json", "runs/s1/final.safetensors"):
        (root / done).unlink()
    tear(root / "runs" / "s1" / "checkpoints" / "step-00000012.safetensors")
    rows = run_sweep(configs, root)
    assert rows[1]["resumed_from"] == 6
    assert same_weights(root / "runs" / "s1", whole / "runs" / "s1")


def test_a_run_on_a_data_folder_matches_its_plan_once_its_digest_is_stamped(tmp_path):
    from satsim.training.sweep import check_plan

    planned = plan({**DEFAULTS, "data": str(tmp_path / "data"), "steps": 5}, {"seed": [0]})
    run = tmp_path / "runs" / planned[0]["name"]
    run.mkdir(parents=True)
    stamped = {**planned[0]["settings"], "data_digest": "sha256:1234"}
    (run / "config.json").write_text(json.dumps(stamped))
    check_plan(planned, tmp_path)  # the digest a run stamps is not another setting
    (run / "config.json").write_text(json.dumps({**stamped, "steps": 6}))
    with pytest.raises(SatsimError, match="other settings than the plan's"):
        check_plan(planned, tmp_path)


@pytest.mark.slow  # a fresh process
def test_a_device_this_machine_lacks_is_refused_before_any_run(tmp_path):
    import torch

    if torch.cuda.is_available():
        pytest.skip("a GPU is here")
    result = run_satsim("sweep", "--out", str(tmp_path / "s"), "--seed", "0,1",
                        "--set", "device=cuda")
    assert result.returncode == 2 and result.stderr.splitlines()[-1] == (
        "error: device 'cuda' was asked for, but torch sees no CUDA GPU here")
    assert not (tmp_path / "s").exists()
