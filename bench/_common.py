"""Shared helpers of the bench scripts: machine description, medians, JSON output."""

from __future__ import annotations

import json
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path

RESULTS = Path(__file__).parent / "results"


def machine() -> dict:
    """CPU model, core count and the 1-minute load average (other jobs may share the machine)."""
    model = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return {"cpu": model, "cpus": os.cpu_count(), "load_average_1min": os.getloadavg()[0],
            "python": platform.python_version()}


def median_time(fn, repeats: int = 7, warmup: int = 1) -> float:
    """Median wall time of fn() over ``repeats`` runs after ``warmup`` untimed ones."""
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def run_child(script: str, args: list[str], threads: int) -> dict:
    """Run ``script`` in its own process with every thread pool set to ``threads``; parse its
    last stdout line as JSON."""
    env = dict(os.environ, NUMBA_NUM_THREADS=str(threads), OMP_NUM_THREADS=str(threads),
               OPENBLAS_NUM_THREADS=str(threads), MKL_NUM_THREADS=str(threads))
    done = subprocess.run([sys.executable, script, *args], env=env, check=True,
                          capture_output=True, text=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def run_in_checkout(script: str, code: str, args: list[str], threads: int) -> dict:
    """Run ``script`` in its own process importing satsim from the checkout ``code``, every
    thread pool set to ``threads``; its last stdout line as JSON, or {"failed": why}."""
    env = dict(os.environ, PYTHONPATH=code, NUMBA_NUM_THREADS=str(threads),
               OMP_NUM_THREADS=str(threads), OPENBLAS_NUM_THREADS=str(threads),
               MKL_NUM_THREADS=str(threads))
    done = subprocess.run([sys.executable, script, *args], env=env, text=True,
                          capture_output=True, check=False)
    if done.returncode != 0:
        return {"failed": (done.stderr.strip().splitlines() or ["?"])[-1][:160]}
    return json.loads(done.stdout.strip().splitlines()[-1])


def write(name: str, payload: dict) -> Path:
    """Write bench/results/<name>.json and return its path."""
    RESULTS.mkdir(exist_ok=True)
    path = RESULTS / f"{name}.json"
    path.write_text(json.dumps(payload, indent=2) + "\n")
    return path
