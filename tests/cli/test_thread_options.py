"""Thread and process counts are checked against the machine before they are set: `train
--threads 100000` crashed with a segmentation fault (torch's OpenMP threads)."""

import subprocess
import sys

import pytest

from satsim.cli.options import machine_cpus

pytestmark = pytest.mark.slow  # thread counts set in fresh processes

COUNTED = [
    ["train", "--threads"],
    ["projection", "--threads"],
    ["homogeneity", "--threads"],
    ["scan-snap", "--threads"],
    ["sweep", "--out", "unused", "--seed", "0", "--jobs"],
    ["benchmark", "flare", "--out", "unused", "--jobs"],
]


@pytest.mark.parametrize("value", [machine_cpus() + 1, 100_000])
@pytest.mark.parametrize("args", COUNTED, ids=lambda args: f"{args[0]} {args[-1]}")
def test_more_threads_or_processes_than_cpus_are_refused_in_one_line(args, value, tmp_path):
    result = subprocess.run([sys.executable, "-m", "satsim", *args, str(value)],
                            capture_output=True, text=True, cwd=tmp_path, timeout=120)
    cpus = machine_cpus()
    command = " ".join(args[:2] if args[1] == "flare" else args[:1])
    assert result.returncode == 2 and result.stderr == (
        f"error: Invalid value for '{args[-1]}': {value} is more than this machine's {cpus} "
        f"CPUs; give 1 to {cpus} (see 'satsim {command} -h')\n")
    assert not (tmp_path / "unused").exists()
