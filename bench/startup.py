"""Start-up: wall time of `satsim eval --lang dyck1 -n 100`, with a cold and a warm kernel cache.

Run: python bench/startup.py [--repeats 3]. The cold run uses an empty NUMBA_CACHE_DIR (a
temporary folder, so the project's own cache is untouched) and must print the one-line
"compiling kernels" notice; warm runs reuse that folder. Median of the warm runs; prints a table
and writes bench/results/startup.json.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

from _common import machine, write

COMMAND = [sys.executable, "-m", "satsim", "eval", "--lang", "dyck1", "-n", "100"]


def timed(env: dict) -> tuple[float, str]:
    start = time.perf_counter()
    done = subprocess.run(COMMAND, env=env, check=True, capture_output=True, text=True)
    return time.perf_counter() - start, done.stderr


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as cache:
        env = dict(os.environ, NUMBA_CACHE_DIR=cache)
        cold, cold_err = timed(env)
        warm_runs = [timed(env) for _ in range(args.repeats)]
    warm = statistics.median(t for t, _ in warm_runs)
    announced = "compiling kernels" in cold_err
    quiet = all("compiling kernels" not in err for _, err in warm_runs)
    print(f"cold (compiling) run {cold:6.2f} s   notice printed: {announced}")
    print(f"warm run (median)    {warm:6.2f} s   no notice: {quiet}")
    write("startup", {"machine": machine(), "command": " ".join(COMMAND[2:]),
                      "cold_seconds": cold, "warm_seconds": warm,
                      "warm_runs": [t for t, _ in warm_runs],
                      "cold_run_announced": announced, "warm_runs_quiet": quiet})


if __name__ == "__main__":
    main()
