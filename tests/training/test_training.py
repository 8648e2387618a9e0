"""Training: data, loss, instrumentation, checkpoints, resumption, and the CLI."""

import json
import math
import shutil

import numpy as np
import pytest
import torch
from click.testing import CliRunner

from satsim.cli.main import cli
from satsim.errors import SatsimError
from satsim.model.io import load_spec
from satsim.training.checkpoint import load_checkpoint
from satsim.training.config import TrainConfig
from satsim.training.data import run_data
from satsim.training.init import initial_spec
from satsim.training.instruments import cosine, dot, norms, parameter_record
from satsim.training.loop import Trainer, train
from tests.support.paths import DATA

FIELDS = {"step", "loss", "accuracy", "norm", "norm_layers", "norm_groups", "grad_projection",
          "update_norm", "update_projection", "direction_cosine", "representation_similarity",
          "lr", "elapsed"}
pytestmark = pytest.mark.usefixtures("one_torch_thread")
SMALL = dict(steps=60, log_every=10, checkpoint_every=20, train_size=300, eval_size=40,
             d_model=8, d_head=4, d_mlp=16, probe_size=4)


def rows(run):
    return [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]


@pytest.mark.slow  # runs long
def test_dyck1_next_symbol_trains_to_99_percent_in_distribution(tmp_path):
    config = TrainConfig(steps=400, log_every=50, checkpoint_every=200)
    result = train(config, tmp_path / "run")
    assert result.eval["validation"] >= 0.99
    metrics = rows(tmp_path / "run")
    assert [r["step"] for r in metrics] == [0, 50, 100, 150, 200, 250, 300, 350, 399]
    for row in metrics:
        assert FIELDS <= set(row)
        assert all(value is not None for key, value in row.items()
                   if not (key in ("direction_cosine", "checkpoint_cosine") and row["step"] == 0))
        assert len(row["representation_similarity"]) == 1 + 2 * config.layers
        assert set(row["norm_layers"]) == {"embed", "blocks.0", "blocks.1", "ln_final", "unembed"}
    assert {r["step"] for r in metrics if "eval" in r} == {0, 200}
    assert metrics[0]["checkpoint_cosine"] is None and 0.9 < metrics[4]["checkpoint_cosine"] < 1
    assert metrics[-1]["norm"] > metrics[0]["norm"]  # the norm grew
    spec = load_spec(str(tmp_path / "run" / "final.safetensors"))
    assert spec.output.labels == ("(", ")", "<eos>") and spec.output.task == "next-symbol"


@pytest.mark.slow  # runs long
def test_a_killed_run_resumes_to_the_same_weights_and_metrics(tmp_path):
    config = TrainConfig(**SMALL)
    whole = train(config, tmp_path / "whole")
    seen = []

    def kill_at_45(k):
        seen.append(k)
        if len(seen) == 45:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        train(config, tmp_path / "cut", progress=kill_at_45)
    resumed = train(config, tmp_path / "cut", resume=True)
    assert resumed.resumed_from == 40 and whole.resumed_from is None
    a = load_spec(str(tmp_path / "whole" / "final.safetensors")).tensors()
    b = load_spec(str(tmp_path / "cut" / "final.safetensors")).tensors()
    assert all(np.array_equal(a[name], b[name]) for name in a)
    for x, y in zip(rows(tmp_path / "whole"), rows(tmp_path / "cut"), strict=True):
        x.pop("elapsed"), y.pop("elapsed")
        assert x == y


def test_batches_depend_on_seed_and_step_only_and_validation_is_unseen():
    config = TrainConfig(**SMALL)
    data = run_data(config, initial_spec(config, ("(", ")")))
    first, again = data.batch(0, 7, 16), data.batch(0, 7, 16)
    assert first.strings == again.strings and torch.equal(first.tokens, again.tokens)
    assert data.batch(0, 8, 16).strings != first.strings
    assert not set(data.held_out["validation"].strings) & set(data.train.strings)
    assert set(data.held_out) == {"validation", "test-52-100", "test-102-150"}


def test_next_symbol_targets_are_the_oracle_sets():
    import languages

    config = TrainConfig(**SMALL)
    data = run_data(config, initial_spec(config, ("(", ")")))
    language = languages.get("dyck1")
    batch = data.batch(0, 0, 8)
    labels = ("(", ")", "<eos>")
    for row, string in enumerate(batch.strings):
        want = [frozenset(labels[k] for k in range(3) if target[k] > 0.5)
                for target in batch.targets[row, : len(string) + 1]]
        assert want == language.next_symbols(string)
        assert int(batch.mask[row].sum()) == len(string) + 1


def test_gradient_projection_is_the_derivative_along_theta():
    """θᵀ∇L = d/dε L((1 + ε)θ) at ε = 0, checked by central differences in float64."""
    config = TrainConfig(**{**SMALL, "dtype": "float64", "task": "recognition", "lang": "anbn"})
    trainer = Trainer(config, "unused")
    batch = trainer.data.batch(0, 0, 32)
    model = trainer.model

    def loss_at(scale):
        from satsim.training.objective import loss_and_correct

        twin = model.scaled(scale) if scale != 1.0 else model
        logits = twin(batch.tokens, batch.lengths).logits
        return loss_and_correct(logits, batch, config.task)[0]

    loss = loss_at(1.0)
    model.zero_grad()
    loss.backward()
    theta = {n: p.detach().double() for n, p in model.named_parameters()}
    grad = {n: p.grad.double() for n, p in model.named_parameters()}
    eps = 1e-6  # central differences: truncation ~ eps², rounding ~ 1e-16 / eps
    with torch.no_grad():
        numeric = (float(loss_at(1 + eps)) - float(loss_at(1 - eps))) / (2 * eps)
    assert dot(theta, grad) == pytest.approx(numeric, rel=1e-6, abs=1e-12)


def test_parameter_record_measures_norms_updates_and_direction():
    theta = {"blocks.0.attn.W_Q": torch.tensor([3.0, 0.0]), "unembed.W_U": torch.tensor([4.0])}
    grad = {"blocks.0.attn.W_Q": torch.tensor([1.0, 2.0]), "unembed.W_U": torch.tensor([-1.0])}
    after = {"blocks.0.attn.W_Q": torch.tensor([3.0, 1.0]), "unembed.W_U": torch.tensor([6.0])}
    record = parameter_record(theta, grad, after, previous=after)
    assert record["norm"] == 5.0
    assert record["norm_layers"] == {"blocks.0": 3.0, "unembed": 4.0}
    assert record["grad_projection"] == 3.0 - 4.0
    assert record["update_norm"] == pytest.approx(math.sqrt(5.0))
    assert record["update_projection"] == 8.0
    assert record["direction_cosine"] == pytest.approx(cosine(theta, after))
    assert norms(theta)[2] == {"blocks.0.attn.W_Q": 3.0, "unembed.W_U": 4.0}


@pytest.mark.parametrize("optimizer", ["sgd", "adam", "adamw"])
def test_recognition_loss_falls_with_every_optimizer(tmp_path, optimizer):
    lr = 0.3 if optimizer == "sgd" else 1e-2
    config = TrainConfig(**{**SMALL, "task": "recognition", "lang": "anbn", "steps": 40,
                            "optimizer": optimizer, "lr": lr,
                            "momentum": 0.9 * (optimizer == "sgd"),
                            "weight_decay": 0.01 * (optimizer == "adamw")})
    train(config, tmp_path / optimizer)
    metrics = rows(tmp_path / optimizer)
    assert np.mean([r["loss"] for r in metrics[-2:]]) < metrics[0]["loss"]


@pytest.mark.parametrize("settings, message", [
    ({"optimizer": "lbfgs"}, "unknown optimizer"),
    ({"lr": float("nan")}, "lr must be"),
    ({"steps": 0}, "steps must be"),
    ({"split": "nope"}, "unknown split preset"),
    ({"task": "transduction"}, "unknown task"),
    ({"momentum": 1.0}, "momentum must be below 1, got 1.0"),
    ({"batch_size": 2001, "train_size": 2000}, "batch_size 2001 is more than train_size 2000"),
    ({"lang": "dyk1"}, "unknown language 'dyk1'"),
    ({"positional": "learned", "split": "deletang"},
     "up to 500 symbols .* more than the 256 rows of a learned positional table"),
])
def test_bad_settings_are_one_line_errors(settings, message):
    with pytest.raises(SatsimError, match=message):
        TrainConfig(**settings)
    with pytest.raises(SatsimError, match="unknown training settings"):
        TrainConfig.from_dict({"layer": 2})


def test_cli_trains_resumes_and_refuses_bad_input(tmp_path):
    runner = CliRunner()
    out = str(tmp_path / "run")
    args = ["train", "--steps", "20", "--train-size", "100", "--d-model", "8", "--out", out]
    result = runner.invoke(cli, [*args, "--json"])
    assert result.exit_code == 0, result.output
    summary = json.loads(result.output.strip().splitlines()[-1])
    assert summary["steps"] == 20 and set(summary["eval"]) >= {"validation"}
    again = runner.invoke(cli, args, standalone_mode=False)
    assert isinstance(again.exception, SatsimError)
    assert "already holds a run" in str(again.exception)
    resumed = runner.invoke(cli, ["train", "--resume", "--out", out, "--json"])
    assert json.loads(resumed.output.strip().splitlines()[-1])["resumed_from"] == 20
    missing = runner.invoke(cli, ["train", "--resume", "--out", str(tmp_path / "none")],
                            standalone_mode=False)
    assert "nothing to resume" in str(missing.exception)
    unknown = runner.invoke(cli, ["train", "--lang", "klingon", "--out", str(tmp_path / "k")],
                            standalone_mode=False)
    assert "unknown language" in str(unknown.exception) and not (tmp_path / "k").exists()


def test_a_failed_start_leaves_nothing_that_blocks_a_corrected_one(tmp_path):
    runner = CliRunner()
    out = tmp_path / "run"
    refused = runner.invoke(cli, ["train", "--positional", "learned", "--split", "deletang",
                                  "--out", str(out)], standalone_mode=False)
    assert "learned positional table" in str(refused.exception) and not out.exists()
    # A start that stopped before its first checkpoint (killed, or failed in its first
    # evaluation) leaves its lock, config and empty metrics: not a run.
    out.mkdir()
    (out / ".lock").write_text("pid 1\n")
    TrainConfig(**SMALL).save(out / "config.json")
    (out / "metrics.jsonl").write_text("")
    args = ["train", "--steps", "20", "--train-size", "100", "--d-model", "8", "--out", str(out)]
    started = runner.invoke(cli, [*args, "--json"])
    assert started.exit_code == 0, started.output
    assert json.loads(started.output.strip().splitlines()[-1])["resumed_from"] is None
    assert TrainConfig.load(out / "config.json").steps == 20
    again = runner.invoke(cli, args, standalone_mode=False)  # now it holds a run
    assert "already holds a run" in str(again.exception)


@pytest.mark.slow  # runs long
def test_a_damaged_newest_checkpoint_is_passed_over_with_a_notice(tmp_path):
    config = TrainConfig(**{**SMALL, "steps": 40})
    train(config, tmp_path / "run")
    final = load_spec(str(tmp_path / "run" / "final.safetensors")).tensors()
    (tmp_path / "run" / "checkpoints" / "step-00000040.state.pt").write_bytes(b"not a checkpoint")
    spec_20 = tmp_path / "run" / "checkpoints" / "step-00000020.safetensors"
    spec_20.write_bytes(spec_20.read_bytes()[:100])  # truncated
    notices = []
    resumed = train(config, tmp_path / "run", resume=True, notice=notices.append)
    assert "checkpoint 40 is damaged (cannot read checkpoint state" in notices[0]
    assert "checkpoint 20 is damaged" in notices[1] and resumed.resumed_from is None
    again = load_spec(str(tmp_path / "run" / "final.safetensors")).tensors()
    assert all(np.array_equal(final[name], again[name]) for name in final)
    assert [row["step"] for row in rows(tmp_path / "run")] == [0, 10, 20, 30, 39]


def test_an_empty_optimizer_state_is_a_damaged_checkpoint(tmp_path):
    # An empty file's error has no message, whose first line the refusal used to read.
    train(TrainConfig(**{**SMALL, "steps": 20}), tmp_path / "run")
    (tmp_path / "run" / "checkpoints" / "step-00000020.state.pt").write_bytes(b"")
    with pytest.raises(SatsimError, match=r"cannot read checkpoint state .*step-00000020"
                                          r"\.state\.pt: EOFError$"):
        load_checkpoint(tmp_path / "run", 20)


def test_a_half_written_last_metrics_line_is_dropped_on_resume(tmp_path):
    config = TrainConfig(**{**SMALL, "steps": 40})
    whole = train(config, tmp_path / "run")
    metrics = tmp_path / "run" / "metrics.jsonl"
    text = metrics.read_text()
    metrics.write_text(text + text.splitlines()[-1][:37])  # a kill in the middle of a row
    train(config, tmp_path / "run", resume=True)
    assert [r["step"] for r in rows(tmp_path / "run")] == [0, 10, 20, 30, 39]
    metrics.write_text("{\"step\": 0,\n" + text)
    with pytest.raises(SatsimError, match="metrics.jsonl line 1 is not a metrics row"):
        train(config, tmp_path / "run", resume=True)
    assert whole.resumed_from is None


@pytest.mark.slow  # a fresh process
def test_a_training_process_killed_with_sigkill_resumes_to_the_same_weights(tmp_path):
    """The real thing: kill -9 a `satsim train` process once it has checkpoints, then resume."""
    import os
    import signal
    import subprocess
    import sys
    import time

    args = [sys.executable, "-m", "satsim", "train", "--steps", "200", "--checkpoint-every",
            "40", "--log-every", "20", "--train-size", "100", "--d-model", "8", "--device", "cpu"]
    subprocess.run([*args, "--out", str(tmp_path / "whole")], check=True, capture_output=True)
    cut = tmp_path / "cut"
    process = subprocess.Popen([*args, "--out", str(cut)], stderr=subprocess.DEVNULL,
                               stdout=subprocess.DEVNULL)
    marker = cut / "checkpoints" / "step-00000080.state.pt"
    while not marker.exists() and process.poll() is None:
        time.sleep(0.05)
    os.kill(process.pid, signal.SIGKILL)
    process.wait()
    assert not (cut / "final.safetensors").exists()
    subprocess.run([*args[:3], "train", "--resume", "--out", str(cut)], check=True,
                   capture_output=True)
    a = load_spec(str(tmp_path / "whole" / "final.safetensors")).tensors()
    b = load_spec(str(cut / "final.safetensors")).tensors()
    assert all(np.array_equal(a[name], b[name]) for name in a)


def test_resume_applies_more_steps_and_refuses_other_changed_options_by_name(tmp_path):
    runner = CliRunner()
    out = str(tmp_path / "run")
    args = ["train", "--steps", "10", "--train-size", "100", "--d-model", "8", "--out", out]
    assert runner.invoke(cli, args).exit_code == 0
    changed = runner.invoke(cli, ["train", "--resume", "--out", out, "--lr", "0.5",
                                  "--d-model", "16"], standalone_mode=False)
    assert isinstance(changed.exception, SatsimError)
    assert "only --steps may change: --d-model 16 (the run has 8), --lr 0.5 (the run has 0.003)" \
        in str(changed.exception)
    same = runner.invoke(cli, ["train", "--resume", "--out", out, "--d-model", "8", "--steps",
                               "15", "--json"])
    assert same.exit_code == 0, same.output
    summary = json.loads(same.output.strip().splitlines()[-1])
    assert summary["steps"] == 15 and summary["resumed_from"] == 10
    assert json.loads((tmp_path / "run" / "config.json").read_text())["steps"] == 15
    fewer = runner.invoke(cli, ["train", "--resume", "--out", out, "--steps", "12"],
                          standalone_mode=False)
    assert "already at step 15, past --steps 12" in str(fewer.exception)


@pytest.mark.parametrize("what", ["missing", "a file"])
def test_a_data_path_that_is_no_folder_is_one_line(tmp_path, what):
    path = tmp_path / "data"
    if what == "a file":
        path.write_text("( )\n")
    result = CliRunner().invoke(cli, ["train", "--data", str(path), "--out", str(tmp_path / "run")],
                                standalone_mode=False)
    assert isinstance(result.exception, SatsimError)
    assert str(result.exception).startswith(f"--data: {path} is not a folder")
    assert not (tmp_path / "run").exists()


def test_training_reads_a_flare_folder_and_refuses_it_changed(tmp_path):
    folder = tmp_path / "parity"  # FLaRe's name: the language is parity-odd
    shutil.copytree(DATA / "flare" / "parity", folder)
    run = tmp_path / "run"
    args = ["train", "--data", str(folder), "--task", "next-symbol", "--steps", "4",
            "--checkpoint-every", "2", "--log-every", "2", "--d-model", "8", "--d-head", "4",
            "--d-mlp", "16", "--out", str(run)]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 0, result.output
    assert "held-out split test has no next-symbols.jsonl: left out" in result.stderr
    config = TrainConfig.load(run / "config.json")
    positives = [s for s, label in zip((folder / "main.tok").read_text().splitlines(),
                                       (folder / "labels.txt").read_text().split()) if label == "1"]
    assert (config.lang, config.split, config.data) == ("parity-odd", "flare", str(folder))
    assert config.train_size == len(positives) and len(config.data_digest) == 64
    data = run_data(config, initial_spec(config, ("0", "1")))
    assert data.train.strings == [s.replace(" ", "") for s in positives]
    assert set(data.held_out) == {"validation-short", "validation-long", "test-short-held-out"}
    labels = (folder / "labels.txt").read_text()
    (folder / "labels.txt").write_text("0" + labels[1:] if labels[0] == "1" else "1" + labels[1:])
    resumed = CliRunner().invoke(cli, ["train", "--resume", "--out", str(run), "--steps", "6"])
    assert resumed.exit_code != 0 and "changed since the run started" in str(resumed.exception)


def _data_folder(tmp_path, name="majority"):
    folder = tmp_path / name
    shutil.copytree(DATA / "flare" / "majority", folder)
    return folder


TRAIN_ON_DATA = ["train", "--steps", "2", "--checkpoint-every", "1", "--log-every", "1",
                 "--d-model", "8", "--d-head", "4", "--d-mlp", "16"]


@pytest.mark.parametrize("named", ["satsim.json", "FLaRe's name"])
def test_a_data_folder_of_another_language_than_lang_is_refused(tmp_path, named):
    folder = _data_folder(tmp_path, "majority" if named != "satsim.json" else "mine")
    if named == "satsim.json":
        (folder / "satsim.json").write_text('{"language": "majority", "splits": ["train"]}')
    where = "its satsim.json" if named == "satsim.json" else "its FLaRe name"
    result = CliRunner().invoke(cli, [*TRAIN_ON_DATA, "--data", str(folder), "--lang", "dyck1",
                                      "--out", str(tmp_path / "run")], standalone_mode=False)
    assert str(result.exception) == (f"{folder} holds majority ({where}), not dyck1: its labels "
                                     "are majority's; leave out --lang, or give --lang majority")
    assert not (tmp_path / "run").exists()
    config = TrainConfig(lang="dyck1", task="recognition", data=str(folder))
    with pytest.raises(SatsimError, match="holds majority"):  # a sweep's run: the same check
        run_data(config, initial_spec(config, ("(", ")")))


def test_a_data_folder_with_its_own_language_named_trains(tmp_path):
    folder = _data_folder(tmp_path)
    result = CliRunner().invoke(cli, [*TRAIN_ON_DATA, "--data", str(folder), "--lang", "majority",
                                      "--task", "recognition", "--out", str(tmp_path / "run")])
    assert result.exit_code == 0, result.output


def test_split_beside_data_is_refused(tmp_path):
    folder = _data_folder(tmp_path)
    result = CliRunner().invoke(cli, [*TRAIN_ON_DATA, "--data", str(folder), "--split", "satsim",
                                      "--out", str(tmp_path / "run")], standalone_mode=False)
    assert str(result.exception) == ("--split goes without --data: the folder's splits are the "
                                     "data (leave out --split)")


def test_a_broken_held_out_split_is_refused_by_name(tmp_path):
    folder = _data_folder(tmp_path)
    (folder / "datasets" / "test" / "main.tok").unlink()
    result = CliRunner().invoke(cli, [*TRAIN_ON_DATA, "--data", str(folder), "--task",
                                      "recognition", "--out", str(tmp_path / "run")],
                                standalone_mode=False)
    assert str(result.exception) == (f"{folder / 'datasets' / 'test'} holds no main.tok: a "
                                     "held-out split is broken; restore its files or remove "
                                     "the folder")
    assert not (tmp_path / "run").exists()


def test_a_run_whose_files_would_not_fit_on_the_disk_is_refused_before_writing(tmp_path):
    # --steps 2000000000 --checkpoint-every 1 wrote 50 kB a step until the disk was full.
    result = CliRunner().invoke(cli, ["train", "--steps", "2000000000", "--checkpoint-every",
                                      "1", "--out", str(tmp_path / "run")], standalone_mode=False)
    assert isinstance(result.exception, SatsimError)
    assert str(result.exception).startswith("2,000,000,000 steps with a checkpoint every 1 and a "
                                            "metrics row every 25 write about ")
    assert str(result.exception).endswith("lower --steps or raise --checkpoint-every and "
                                          "--log-every")
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize("d_model", [8, 32])
def test_the_disk_estimate_of_a_run_is_near_the_files_it_writes(tmp_path, d_model):
    from satsim.training.budget import run_disk_bytes

    run = tmp_path / "run"
    result = CliRunner().invoke(cli, ["train", "--steps", "6", "--checkpoint-every", "2",
                                      "--log-every", "1", "--train-size", "40", "--d-model",
                                      str(d_model), "--out", str(run)])
    assert result.exit_code == 0, result.output
    written = sum(p.stat().st_size for p in run.rglob("*") if p.is_file())
    estimate = run_disk_bytes(TrainConfig.load(run / "config.json"), 2)
    assert 0.75 * written < estimate < 1.5 * written
