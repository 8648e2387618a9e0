"""`satsim eval --lang dyck1` throughput: the saturated simulator vs its soft twin (PyTorch).

Run: python bench/eval_throughput.py [--threads 2] [--n 10000]. The test set is the one
``satsim eval --lang dyck1 -n N --bins 1-1000`` builds (half positives, half hard negatives,
lengths up to 1,000); then one string of 10⁶ symbols. The simulator runs in this process with
``--threads`` Numba threads, through the fused per-string kernel and, interleaved, through
the layer-by-layer batches; encoding alone and the fused kernels alone are timed too. The soft
twin (softmax attention, float32, CPU, the same spec and strings, batched by length) runs in its
own process with torch threads set, on the first ``--soft-n`` strings. Medians of wall clock
and of process CPU time; prints a table and writes bench/results/eval_throughput.json.
"""

from __future__ import annotations

import argparse
import json
import sys

from _common import machine, median_time, run_child, write


def strings(n: int):
    import languages
    from satsim.analysis.strings import test_set

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


def interleaved(fns: dict, repeats: int) -> dict:
    """Median wall and CPU seconds of each fn, the fns run in turn ``repeats`` times."""
    import statistics
    import time

    walls: dict = {name: [] for name in fns}
    cpus: dict = {name: [] for name in fns}
    for _ in range(repeats):
        for name, fn in fns.items():
            wall, cpu = time.perf_counter(), time.process_time()
            fn()
            walls[name].append(time.perf_counter() - wall)
            cpus[name].append(time.process_time() - cpu)
    return {name: (statistics.median(walls[name]), statistics.median(cpus[name]))
            for name in fns}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--n", type=int, default=10_000)
    parser.add_argument("--soft-n", type=int, default=1_000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--soft-child", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.soft_child:
        print(json.dumps(soft_child(args.soft_child, args.threads)))
        return
    import numba

    import languages
    from satsim import Simulator, constructions
    from satsim.analysis.scoring import predict
    from satsim.engine.program import forward_fused

    numba.set_num_threads(args.threads)
    load_before = machine()["load_average_1min"]
    spec = constructions.build("dyck1")
    fused = Simulator(spec)
    layered = Simulator(spec, fused=False)
    for simulator in (fused, layered):
        predict(simulator, ["()"])
    texts, labels = strings(args.n)
    tokens = sum(map(len, texts))
    for simulator in (fused, layered):
        assert [bool(x) for x in predict(simulator, texts)] == list(labels), "wrong answer"
    ids, starts, lengths = fused.encode_all(texts)
    model = fused._fused()

    def kernel_only():
        forward_fused(model, ids, starts, lengths, fused.settings, workers=args.threads)

    times = interleaved({
        "satsim": lambda: predict(fused, texts),
        "satsim_layer_by_layer": lambda: predict(layered, texts),
        "encode_only": lambda: fused.encode_all(texts),
        "fused_kernels_only": kernel_only,
    }, args.repeats)
    dyck1 = languages.get("dyck1")
    long = dyck1.sample_positive(1, 1_000_000, 1_000_000, seed=3)
    times.update({name + "_one_1e6_string": value for name, value in interleaved({
        "satsim": lambda: predict(fused, long),
        "satsim_layer_by_layer": lambda: predict(layered, long),
    }, 3).items()})
    load_after = machine()["load_average_1min"]
    soft = run_child(__file__, ["--soft-child", str(args.soft_n), "--threads",
                                str(args.threads)], args.threads)
    rows = {}
    for name, (wall, cpu) in times.items():
        count = 10**6 if name.endswith("1e6_string") else tokens
        rows[name] = {"tokens": count, "seconds": wall, "cpu_seconds": cpu,
                      "tokens_per_second": count / wall}
    rows["satsim"]["strings"] = len(texts)
    rows["soft_twin_cpu_float32"] = dict(soft, tokens_per_second=soft["tokens"] / soft["seconds"])
    for name, row in rows.items():
        cpu = f"{row['cpu_seconds']:8.3f} s cpu" if "cpu_seconds" in row else " " * 14
        print(f"{name:38} {row['tokens']:>10,} tokens {row['seconds']:8.3f} s {cpu} "
              f"{row['tokens_per_second']:>13,.0f} tokens/s")
    ratio = rows["satsim"]["tokens_per_second"] / rows["soft_twin_cpu_float32"]["tokens_per_second"]
    print(f"satsim / soft twin: {ratio:.1f}×; load average {load_before:.1f} → {load_after:.1f}")
    write("eval_throughput", {
        "machine": machine(), "threads": args.threads, "load_average_before": load_before,
        "load_average_after": load_after,
        "timed": "Simulator.accepts on the test set (encoding + kernels + Python), wall clock; "
                 "sampling the strings and the oracle check are not timed",
        "rows": rows, "speedup_vs_soft_twin": ratio})
    print("wrote bench/results/eval_throughput.json", file=sys.stderr)


if __name__ == "__main__":
    main()
