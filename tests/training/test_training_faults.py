"""Fault injection on `satsim train` processes: kills at random moments, a corrupt newest
checkpoint, two writers at once. Every time the run resumes to the same final weights bit for bit,
or the user gets a one-line refusal; the metrics file never mixes two runs."""

import json
import os
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

from satsim.model.io import load_spec
from tests.support.helpers import file_size_limit

pytestmark = pytest.mark.slow  # satsim train processes killed, corrupted, raced

TRAIN = ["train", "--steps", "60", "--checkpoint-every", "10", "--log-every", "10",
         "--train-size", "100", "--d-model", "8", "--d-head", "4", "--d-mlp", "16",
         "--device", "cpu"]
LOGGED = [0, 10, 20, 30, 40, 50, 59]


def satsim(*args: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "satsim", *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def weights(run):
    return load_spec(str(run / "final.safetensors")).tensors()


def metrics(run):
    rows = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
    for row in rows:
        row.pop("elapsed")
    return rows


def test_two_writers_at_once_one_is_refused_and_the_metrics_hold_one_run(tmp_path):
    whole = tmp_path / "whole"
    first, second = satsim(*TRAIN, "--out", str(whole)), satsim(*TRAIN, "--out", str(whole))
    outcomes = sorted([(p.wait(), p.communicate()[1]) for p in (first, second)])
    (ok, _), (refused, message) = outcomes
    assert ok == 0 and refused == 2, outcomes
    lines = [line for line in message.splitlines() if line.strip()]
    assert lines[-1].startswith("error: ") and "Traceback" not in message
    assert "being written by another satsim train" in message or "already holds a run" in message
    assert [row["step"] for row in metrics(whole)] == LOGGED


def test_random_kills_and_a_corrupt_checkpoint_resume_to_the_same_weights(tmp_path):
    whole, cut = tmp_path / "whole", tmp_path / "cut"
    baseline = satsim(*TRAIN, "--out", str(whole))
    rng = np.random.default_rng(16)
    kills = 0
    delays = rng.uniform(0.0, 2.0, size=4)
    for number, delay in enumerate(delays):
        resume = ["--resume"] if (cut / "config.json").exists() else []
        process = satsim(*TRAIN, *resume, "--out", str(cut))
        # Training has begun (steps and checkpoint writes from here on); before the last kill,
        # one checkpoint is complete, so that there is a newest one to corrupt below.
        begun = "metrics.jsonl" if number < len(delays) - 1 else "checkpoints/*.state.pt"
        while not list(cut.glob(begun)) and process.poll() is None:
            time.sleep(0.02)
        time.sleep(delay)
        if process.poll() is None:
            os.kill(process.pid, signal.SIGKILL)
            kills += 1
        process.wait()
        process.communicate()
    newest = max(path.with_name(path.name.replace(".state.pt", ".safetensors"))
                 for path in (cut / "checkpoints").glob("step-*.state.pt"))  # complete ones
    newest.write_bytes(newest.read_bytes()[: newest.stat().st_size // 2])  # a torn write
    finish = satsim(*TRAIN, "--resume", "--out", str(cut))
    _, err = finish.communicate()
    assert finish.returncode == 0, err
    assert f"checkpoint {int(newest.name[5:13])} is damaged" in err
    assert baseline.wait() == 0 and kills >= 1
    a, b = weights(whole), weights(cut)
    assert all(np.array_equal(a[name], b[name]) for name in a)
    assert metrics(cut) == metrics(whole)


def test_a_full_disk_stops_training_in_one_line_without_temporary_files_and_it_resumes(tmp_path):
    whole, cut = tmp_path / "whole", tmp_path / "cut"
    baseline = satsim(*TRAIN, "--out", str(whole))
    full = subprocess.run([sys.executable, "-m", "satsim", *TRAIN, "--out", str(cut)],
                          capture_output=True, text=True, preexec_fn=file_size_limit(12000))
    errors = [line for line in full.stderr.splitlines() if line.startswith("error: ")]
    assert full.returncode == 2 and "Traceback" not in full.stderr, full.stderr
    assert len(errors) == 1 and errors[0].startswith(f"error: the disk is full ({cut}/")
    assert not list(cut.rglob(".*.partial-*"))
    finish = satsim(*TRAIN, "--resume", "--out", str(cut))
    _, err = finish.communicate()
    assert finish.returncode == 0, err
    assert baseline.wait() == 0
    a, b = weights(whole), weights(cut)
    assert all(np.array_equal(a[name], b[name]) for name in a)
    assert metrics(cut) == metrics(whole)
