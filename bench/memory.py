"""Peak resident memory of one long string through a spec with a content-dependent head.

Run: python bench/memory.py [--length 100000]. A child process builds a random float32 spec
(tests/support/helpers.random_spec: 1 layer, 1 causal head, no positional encoding, so that the
head's scores depend on content only), runs one string of ``--length`` symbols through the saturated
simulator, and reports its peak RSS (ru_maxrss) and time; the parent writes
bench/results/memory.json.
"""

from __future__ import annotations

import argparse
import json
import resource
import sys
import time
from pathlib import Path

from _common import machine, run_child, write


def child(length: int) -> dict:
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests" / "support"))
    import numpy as np
    from helpers import random_spec

    from satsim import Simulator

    spec = random_spec(0, n_layers=1, n_heads=1, positional="none", dtype=np.float32)
    simulator = Simulator(spec)
    simulator.logits(["ab"])
    base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    string = "".join(np.random.default_rng(0).choice(list("ab"), length))
    start = time.perf_counter()
    simulator.logits([string])
    seconds = time.perf_counter() - start
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return {"length": length, "seconds": seconds, "peak_rss_mb": peak / 1024,
            "rss_before_run_mb": base / 1024}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--length", type=int, default=100_000)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(args.length)))
        return
    result = run_child(__file__, ["--child", "--length", str(args.length)], args.threads)
    print(f"{result['length']:,} symbols: peak RSS {result['peak_rss_mb']:.0f} MB "
          f"(before the run {result['rss_before_run_mb']:.0f} MB), {result['seconds']:.1f} s")
    write("memory", {"machine": machine(), "threads": args.threads, **result})


if __name__ == "__main__":
    main()
