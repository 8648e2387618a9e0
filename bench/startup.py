"""Start-up: cold compile time of each kernel path, and `satsim eval` with a cold and a warm cache.

Run: python bench/startup.py [--repeats 3]. Every cold run uses its own empty NUMBA_CACHE_DIR (a
temporary folder, so the project's own cache is untouched).

- Per path (the keys of ``satsim.engine.kernels.COMPILE_SECONDS``): a fresh process runs the
  smallest call that takes that path and reports the seconds Numba spent compiling (wall time
  of the outermost compiles, from Numba's event stream) and its own CPU seconds.
- The README's main command, `satsim eval --lang dyck1`, cold (must print the compile notice)
  and warm (median of ``--repeats``, must print nothing about compiling).

Prints a table and writes bench/results/startup.json.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _common import machine, write

TRAINED = Path(__file__).parent / "models" / "dyck1-none.safetensors"
PATH_CALLS = {
    "fused-fast": "Simulator(constructions.build('dyck1')).accepts(['(()())'])",
    "fused": f"Simulator(load_spec({str(TRAINED)!r})).logits(['(()())'])",
    "layers": "Simulator(constructions.build('dyck1'), fused=False).accepts(['(()())'])",
    "tiles": "saturated_attention(x, x, x, causal=True)",
    "classes": "saturated_attention(x, np.repeat(x[:, :2], 256, axis=1), x)",
}
CHILD = """
import time
from numba.core import event

compiling = [0.0, 0]

class Outermost(event.Listener):
    def on_start(self, ev):
        compiling[1] += 1
        if compiling[1] == 1:
            self.start = time.perf_counter()

    def on_end(self, ev):
        compiling[1] -= 1
        if compiling[1] == 0:
            compiling[0] += time.perf_counter() - self.start

event.register("numba:compile", Outermost())
import numpy as np
from satsim import Simulator, constructions, load_spec, saturated_attention
x = np.random.default_rng(0).standard_normal((1, 512, 4)).astype(np.float32)
cpu = time.process_time()
{call}
print(compiling[0], time.process_time() - cpu)
"""
EVAL = [sys.executable, "-m", "satsim", "eval", "--lang", "dyck1"]


def compile_seconds(call: str) -> tuple[float, float]:
    """(Numba compile seconds, CPU seconds) of ``call`` in a fresh process with an empty cache."""
    with tempfile.TemporaryDirectory() as cache:
        done = subprocess.run([sys.executable, "-c", CHILD.replace("{call}", call)],
                              env=dict(os.environ, NUMBA_CACHE_DIR=cache), check=True,
                              capture_output=True, text=True)
    compile_s, cpu_s = map(float, done.stdout.split()[-2:])
    return compile_s, cpu_s


def timed(env: dict) -> tuple[float, float, str]:
    """(wall seconds, CPU seconds, stderr) of the README's main command."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(EVAL, env=env, check=True, capture_output=True, text=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, done.stderr


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    load_before = os.getloadavg()[0]
    paths = {}
    print(f"{'path':<12}{'compile s':>10}{'CPU s':>8}")
    for path, call in PATH_CALLS.items():
        compile_s, cpu_s = compile_seconds(call)
        paths[path] = {"compile_seconds": compile_s, "cpu_seconds": cpu_s}
        print(f"{path:<12}{compile_s:>10.1f}{cpu_s:>8.1f}")
    with tempfile.TemporaryDirectory() as cache:
        env = dict(os.environ, NUMBA_CACHE_DIR=cache)
        cold_wall, cold_cpu, cold_err = timed(env)
        warm_runs = [timed(env) for _ in range(args.repeats)]
    warm = statistics.median(wall for wall, _, _ in warm_runs)
    announced = "satsim: compiling" in cold_err
    quiet = all("compiling" not in err for _, _, err in warm_runs)
    print(f"{' '.join(EVAL[2:])}: cold {cold_wall:.1f} s wall, {cold_cpu:.1f} s CPU "
          f"(notice printed: {announced}); warm median {warm:.2f} s (quiet: {quiet})")
    write("startup", {"machine": machine(), "load_average_1min_before": load_before,
                      "paths": paths, "command": " ".join(EVAL[2:]),
                      "cold_seconds": cold_wall, "cold_cpu_seconds": cold_cpu,
                      "cold_notice": cold_err.strip(), "warm_seconds": warm,
                      "warm_runs": [wall for wall, _, _ in warm_runs],
                      "cold_run_announced": announced, "warm_runs_quiet": quiet})


if __name__ == "__main__":
    main()
