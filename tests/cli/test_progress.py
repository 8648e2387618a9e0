"""Long work says how far it is, also when standard error is a file (a log), not a terminal."""

import subprocess
import sys

import pytest

from satsim.cli.progress import elapsed
from tests.training.test_report import make_run

EVERY_UPDATE = "import satsim.cli.progress as progress\nprogress.LINE_EVERY = 0.0"


def satsim_logged(*args: str) -> subprocess.CompletedProcess:
    """satsim with standard error into a pipe and a progress line due at every update."""
    code = (f"import sys\n{EVERY_UPDATE}\nfrom satsim.cli.main import main\n"
            "sys.argv = ['satsim', *sys.argv[1:]]\nmain()")
    return subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True,
                          timeout=600)


@pytest.mark.slow  # a fresh process
def test_curves_in_a_log_get_progress_lines():
    # click's bar writes its label into a file and nothing more until the work ends.
    result = satsim_logged("homogeneity", "--seeds", "2", "--layers", "1", "--d-model", "8",
                           "--heads", "2", "--d-ff", "4")
    assert result.returncode == 0, result.stderr
    lines = result.stderr.splitlines()
    assert lines[0] == "authors curves"
    assert [line.split(" after ")[0] for line in lines[1:]] == [
        f"authors curves: {done}/4" for done in (1, 2, 3, 4)]


@pytest.mark.slow  # a fresh process
def test_a_report_says_how_far_each_bin_is(tmp_path):
    run = make_run(tmp_path / "run")
    result = satsim_logged("report", str(run), "--bins", "0-10", "-n", "20", "--device", "cpu",
                           "--roles-n", "4")
    assert result.returncode == 0, result.stderr
    parts = [line for line in result.stderr.splitlines() if "strings (" in line]
    assert [line.split(" (")[0] for line in parts] == (
        [f"report: saturated limit, bin 0–10: {done}/20 strings" for done in range(2, 21, 2)]
        + [f"report: soft model, bin 0–10: {done}/20 strings" for done in range(2, 21, 2)])


def test_durations_read_as_a_person_would_say_them():
    assert [elapsed(s) for s in (0, 59.9, 60, 725, 7380)] == [
        "0 s", "59 s", "1 min 0 s", "12 min 5 s", "2 h 3 min"]
