"""Run many ``satsim`` command lines in one process, under an address-space cap and a timer.

Read by tests/cli/test_cli_extreme_values.py, which starts this file as a child process (one per
command, so that the imports and the compiled kernels are paid once): it reads a JSON object
``{"cap": bytes, "cases": [[id, argv, seconds], ...]}`` on standard input, then for
each case prints a line ``{"id": id, "start": true}`` and, once the case ends, its outcome:
exit code, standard output and error, and the peak resident memory of the case. A case that
outlives its timer ends with code "timeout"; one that the timer cannot stop (inside compiled
code) is killed by the parent, which knows the case from its start line.
"""

from __future__ import annotations

import json
import resource
import signal
import sys

from click.testing import CliRunner


class CaseTimeout(BaseException):
    """The case ran past its timer (a BaseException: satsim's entry point must not catch it)."""


def _on_alarm(signum, frame):
    raise CaseTimeout


def _peak_bytes() -> int:
    """The peak resident memory of this process since the last reset (VmHWM)."""
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    return 0


def _reset_peak() -> None:
    with open("/proc/self/clear_refs", "w") as handle:
        handle.write("5")


def run_case(argv: list[str], timeout: int) -> dict:
    """Run ``satsim ARGV`` through its entry point; its exit code, output and peak memory."""
    from satsim.cli.main import main

    runner = CliRunner()
    _reset_peak()
    with runner.isolation(input="") as (out, err, _):
        sys.argv = ["satsim", *argv]
        signal.alarm(timeout)
        try:
            main()
            code = 0
        except SystemExit as exit_:
            code = exit_.code if isinstance(exit_.code, int) else 1
        except CaseTimeout:
            code = "timeout"
        finally:
            signal.alarm(0)
            sys.stdout.flush()
            sys.stderr.flush()
        stdout = out.getvalue().decode("utf-8", "replace")
        stderr = err.getvalue().decode("utf-8", "replace")
    return {"code": code, "stdout": stdout[-2_000_000:], "stderr": stderr[-4000:],
            "peak": _peak_bytes()}


def serve() -> None:
    """Run the cases read from standard input, reporting each on standard output."""
    from satsim.cli import progress

    progress.LINE_EVERY = 2.0  # progress lines well within a case's timer
    request = json.load(sys.stdin)
    resource.setrlimit(resource.RLIMIT_AS, (request["cap"], request["cap"]))
    signal.signal(signal.SIGALRM, _on_alarm)
    report = sys.stdout
    for case_id, argv, seconds in request["cases"]:
        report.write(json.dumps({"id": case_id, "start": True, "seconds": seconds}) + "\n")
        report.flush()
        outcome = run_case(argv, seconds)
        report.write(json.dumps({"id": case_id, **outcome}) + "\n")
        report.flush()


if __name__ == "__main__":
    serve()
