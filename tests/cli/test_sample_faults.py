"""Fault injection on `satsim sample --out`: a kill or an interrupt at any moment leaves the old
file or the whole new one, never a part; a rerun writes the same bytes as an unbroken run."""

import random
import signal
import subprocess
import sys
import time

import pytest

from satsim.output import partial_path

pytestmark = pytest.mark.slow  # satsim sample processes killed at random moments

SAMPLE = [sys.executable, "-m", "satsim", "sample", "--lang", "dyck1", "-n", "30000",
          "--max-len", "100", "--json", "--seed", "3"]


def modified(path) -> int | None:
    """The file's modification time (None while it does not exist)."""
    try:
        return path.stat().st_mtime_ns
    except FileNotFoundError:
        return None


def test_a_sample_killed_or_interrupted_leaves_the_old_file_or_the_whole_new_one(tmp_path):
    whole = subprocess.run(SAMPLE, capture_output=True, check=True).stdout
    out = tmp_path / "d.jsonl"
    out.write_bytes(b"old\n")
    moments = random.Random(5)
    for sent in (signal.SIGKILL, signal.SIGKILL, signal.SIGINT):
        # A kill leaves its partial file (nothing runs after SIGKILL); a later run removes it.
        before = out.read_bytes()
        process = subprocess.Popen([*SAMPLE, "--out", str(out)], stdout=subprocess.DEVNULL,
                                   stderr=subprocess.PIPE, text=True)
        temporary = partial_path(out, process.pid)
        while process.poll() is None and modified(temporary) is None:  # until it writes
            time.sleep(0.01)
        time.sleep(moments.uniform(0.0, 0.5))
        if process.poll() is None:
            process.send_signal(sent)
        _, err = process.communicate()
        # Never a part: the file before this run, or (a signal landing late) the whole new one.
        assert out.read_bytes() in ((whole,) if process.returncode == 0 else (before, whole))
        if process.returncode != 0 and sent == signal.SIGINT:  # Ctrl-C: "aborted", no leftover
            assert process.returncode == 130 and err.splitlines()[-1] == "aborted", err
            assert not temporary.exists()
    finished = subprocess.run([*SAMPLE, "--out", str(out)], capture_output=True, text=True)
    assert finished.returncode == 0, finished.stderr
    assert out.read_bytes() == whole and sorted(p.name for p in tmp_path.iterdir()) == [out.name]
