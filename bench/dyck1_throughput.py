"""Throughput of the saturated simulator on the Dyck-1 construction, by string length.

Run: python bench/dyck1_throughput.py [--threads N]. Prints a table and writes
bench/results/dyck1_throughput.json. Each row is the median of 3 timed runs after a warm-up.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import time
from pathlib import Path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=os.cpu_count())
    args = parser.parse_args()
    os.environ["NUMBA_NUM_THREADS"] = str(args.threads)

    import numba

    import languages
    from satsim import Simulator, constructions

    numba.set_num_threads(args.threads)
    dyck1 = languages.get("dyck1")
    simulator = Simulator(constructions.build("dyck1"))
    simulator.accepts(["()"])
    cases = [(10_000, 100), (1_000, 1_000), (100, 10_000), (10, 100_000), (1, 1_000_000)]
    rows = []
    for count, length in cases:
        strings = dyck1.sample_positive(count // 2 or 1, length, length, seed=1)
        strings += dyck1.sample_negative(count - len(strings), length, length, seed=2)
        truth = [dyck1.contains(s) for s in strings]
        times = []
        for _ in range(3):
            start = time.perf_counter()
            verdicts = simulator.accepts(strings)
            times.append(time.perf_counter() - start)
        assert list(verdicts) == truth, "wrong answer"
        seconds = statistics.median(times)
        tokens = sum(len(s) for s in strings)
        rows.append({"strings": len(strings), "length": length, "seconds": seconds,
                     "tokens_per_second": tokens / seconds})
        print(f"{len(strings):>7} strings × {length:>9,}  {seconds:8.3f} s  "
              f"{tokens / seconds:>14,.0f} tokens/s")
    out = Path(__file__).parent / "results" / "dyck1_throughput.json"
    out.write_text(json.dumps({"machine": platform.processor() or platform.machine(),
                               "cpus": os.cpu_count(), "threads": args.threads,
                               "rows": rows}, indent=2))


if __name__ == "__main__":
    main()
