"""Speed-up of `satsim sweep --engine ray` over one process for a sweep of 8 short runs.

Run: python bench/sweep_ray.py [--steps 300] [--cpus 2] [--repeats 1]
Times the same plan (8 seeds of a small Dyck-1 model) into fresh folders with the local engine in
this process (one torch thread) and with the Ray engine on a local cluster of ``--cpus`` CPUs
(one CPU and one torch thread per run), including and excluding the cluster's start, alternating
which goes first; prints the best of ``--repeats`` and the runs' summed training time.
Checks that the two tables agree (all but the timings), and writes bench/results/sweep_ray.json
with the 1-minute load average before and after (other jobs may share the machine).
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

from _common import machine, write


def main() -> None:
    """Time the local and the Ray engine on the same plan and print the speed-up."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--cpus", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=1)
    args = parser.parse_args()

    from satsim.torch_setup import import_torch

    import_torch(1)
    import ray

    from satsim.training.config import DEFAULTS
    from satsim.training.sweep import plan, run_sweep

    base = {**DEFAULTS, "steps": args.steps, "train_size": 200, "eval_size": 50,
            "checkpoint_every": 100, "log_every": 25, "device": "cpu"}
    configs = plan(base, {"seed": list(range(8))})
    load_before = os.getloadavg()[0]
    times: dict[str, list[float]] = {"local": [], "ray": [], "ray_with_start": []}
    training: dict[str, list[float]] = {"local": [], "ray": []}
    with tempfile.TemporaryDirectory() as scratch:
        for repeat in range(args.repeats):
            rows = {}
            for engine in (["local", "ray"] if repeat % 2 == 0 else ["ray", "local"]):
                start = time.perf_counter()
                if engine == "ray":
                    ray.init(num_cpus=args.cpus, include_dashboard=False,
                             logging_level="WARNING", log_to_driver=False)
                started = time.perf_counter()
                rows[engine] = run_sweep(configs, Path(scratch) / f"{engine}{repeat}",
                                         engine=engine)
                times[engine].append(time.perf_counter() - started)
                training[engine].append(sum(row["elapsed"] for row in rows[engine]))
                if engine == "ray":
                    times["ray_with_start"].append(time.perf_counter() - start)
                    ray.shutdown()
            timing = ("elapsed", "resumed_from")
            if ([{k: v for k, v in r.items() if k not in timing} for r in rows["local"]]
                    != [{k: v for k, v in r.items() if k not in timing} for r in rows["ray"]]):
                raise SystemExit("the Ray table differs from the local one")
    load_after = os.getloadavg()[0]
    best = {name: min(values) for name, values in times.items()}
    speedup = best["local"] / best["ray"]
    speedup_with_start = best["local"] / best["ray_with_start"]
    print(f"8 runs of {args.steps} steps; load {load_before:.2f} → {load_after:.2f}")
    print(f"one process        {best['local']:7.1f} s")
    print(f"ray, {args.cpus} CPUs        {best['ray']:7.1f} s   speed-up {speedup:.2f}×")
    print(f"ray with its start {best['ray_with_start']:7.1f} s   speed-up "
          f"{speedup_with_start:.2f}×")
    path = write("sweep_ray", {"machine": machine(), "steps": args.steps, "cpus": args.cpus,
                               "load_before": load_before, "load_after": load_after,
                               "seconds": times, "training_seconds": training,
                               "speedup": speedup,
                               "speedup_with_start": speedup_with_start})
    print("seconds per repeat:", {name: [round(t, 1) for t in values]
                                  for name, values in times.items()})
    print("summed training time of the 8 runs (their own clocks):",
          {name: [round(t, 1) for t in values] for name, values in training.items()})
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
