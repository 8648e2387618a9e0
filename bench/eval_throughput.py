"""`satsim eval --lang dyck1` throughput: the saturated simulator vs its soft twin (PyTorch).

Run: python bench/eval_throughput.py [--threads 2] [--n 10000]. The test set is the one
``satsim eval --lang dyck1 -n N --bins 1-1000`` builds (half positives, half hard negatives,
lengths up to 1,000); then one string of 10⁶ symbols. The simulator runs in this process with
``--threads`` Numba threads; the soft twin (softmax attention, float32, CPU, the same spec and
strings, batched by length) runs in its own process with torch threads set, on the first
``--soft-n`` strings. Medians of 3; prints a table and writes bench/results/eval_throughput.json.
"""

from __future__ import annotations

import argparse
import json
import sys

from _common import machine, median_time, run_child, write


def strings(n: int):
    import languages
    from satsim.evaluation import test_set

    return test_set(languages.get("dyck1"), n, 1, 1000, seed=0)


def soft_child(n: int, threads: int) -> dict:
    import torch

    from satsim import constructions
    from satsim.soft import SoftTransformer

    torch.set_num_threads(threads)
    texts = sorted(strings(n)[0], key=len)
    soft = SoftTransformer.from_spec(constructions.build("dyck1"), device="cpu")
    soft.run(texts[:4])

    def run():
        for start in range(0, len(texts), 64):
            soft.run(texts[start : start + 64])

    seconds = median_time(run, 3, warmup=0)
    return {"strings": len(texts), "tokens": sum(map(len, texts)), "seconds": seconds}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--n", type=int, default=10_000)
    parser.add_argument("--soft-n", type=int, default=1_000)
    parser.add_argument("--soft-child", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.soft_child:
        print(json.dumps(soft_child(args.soft_child, args.threads)))
        return
    import numba
    import numpy as np

    import languages
    from satsim import Simulator, constructions
    from satsim.evaluation import predict

    numba.set_num_threads(args.threads)
    simulator = Simulator(constructions.build("dyck1"))
    predict(simulator, ["()"])
    texts, labels = strings(args.n)
    tokens = sum(map(len, texts))
    verdicts = None

    def run():
        nonlocal verdicts
        verdicts = predict(simulator, texts)

    seconds = median_time(run, 3, warmup=0)
    assert [bool(x) for x in verdicts] == list(labels), "wrong answer"
    dyck1 = languages.get("dyck1")
    long = dyck1.sample_positive(1, 1_000_000, 1_000_000, seed=3)
    long_seconds = median_time(lambda: predict(simulator, long), 3, warmup=0)
    soft = run_child(__file__, ["--soft-child", str(args.soft_n), "--threads",
                                str(args.threads)], args.threads)
    rows = {
        "satsim": {"strings": len(texts), "tokens": tokens, "seconds": seconds,
                   "tokens_per_second": tokens / seconds},
        "satsim_one_1e6_string": {"tokens": 10**6, "seconds": long_seconds,
                                  "tokens_per_second": 10**6 / long_seconds},
        "soft_twin_cpu_float32": dict(soft, tokens_per_second=soft["tokens"] / soft["seconds"]),
    }
    for name, row in rows.items():
        print(f"{name:24} {row['tokens']:>12,} tokens {row['seconds']:9.3f} s "
              f"{row['tokens_per_second']:>14,.0f} tokens/s")
    ratio = rows["satsim"]["tokens_per_second"] / rows["soft_twin_cpu_float32"]["tokens_per_second"]
    print(f"satsim / soft twin: {ratio:.1f}×")
    del np
    write("eval_throughput", {"machine": machine(), "threads": args.threads, "rows": rows,
                              "speedup_vs_soft_twin": ratio})
    print("wrote bench/results/eval_throughput.json", file=sys.stderr)


if __name__ == "__main__":
    main()
