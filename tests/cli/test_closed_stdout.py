"""Output that cannot be written is an error: with standard output closed (`satsim ... >&-`),
every command that prints says so in one line and exits with code 2; one that only writes a
file still succeeds."""

import subprocess
import sys

import pytest

from tests.support.paths import EXAMPLES
from tests.training.test_report import make_run

pytestmark = pytest.mark.slow  # python -m satsim with standard output closed

CLOSED = "standard output is closed, so the output was lost; redirect it to a file (> FILE) or " \
         "to /dev/null"


def with_stdout_closed(*args) -> subprocess.CompletedProcess:
    """satsim with descriptor 1 closed, as the shell's `>&-` leaves it."""
    return subprocess.run([sys.executable, "-m", "satsim", *map(str, args)], stdout=None,
                          stderr=subprocess.PIPE, text=True, timeout=600,
                          preexec_fn=lambda: __import__("os").close(1))


@pytest.mark.parametrize("args", [
    ["sample", "--lang", "dyck1", "-n", "3"],
    ["show", "--lang", "dyck1"],
    ["decide", "--lang", "first", "--json"],
    ["compile", EXAMPLES / "majority.crasp", "--json"],
    ["languages"],
], ids=lambda args: args[0])
def test_a_command_that_prints_into_a_closed_standard_output_says_so(args):
    result = with_stdout_closed(*args)
    assert result.returncode == 2 and result.stderr.splitlines()[-1] == f"error: {CLOSED}", \
        result.stderr
    assert "Traceback" not in result.stderr


def test_a_report_into_a_closed_standard_output_says_so(tmp_path):
    run = make_run(tmp_path / "run")
    result = with_stdout_closed("report", run, "--bins", "0-10", "-n", "4", "--device", "cpu",
                                "--roles-n", "4")
    assert result.returncode == 2 and result.stderr.splitlines()[-1] == f"error: {CLOSED}", \
        result.stderr


def test_a_command_that_writes_only_a_file_needs_no_standard_output(tmp_path):
    out = tmp_path / "s.txt"
    result = with_stdout_closed("sample", "--lang", "dyck1", "-n", "3", "--out", out)
    assert result.returncode == 0, result.stderr
    assert len(out.read_text().splitlines()) == 3
