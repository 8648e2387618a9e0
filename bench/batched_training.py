"""Models·steps per second of M models trained as one stack (satsim.training.group), M = 1 … 128.

Two sizes: the FLaRe benchmark's small model (2 layers, d_model 16, 2 heads of 8, d_mlp 32) and
FLaRe's transformer (5 layers, d_model 32, 8 heads of 4, d_mlp 128); both recognise one FLaRe
language with batches of 32 strings of lengths 0–40 (FLaRe samples its batch per trial; 32 here
for both). Each model has its own seed, hence its own initial weights and batches. Only the
training step is timed (plain steps, no logged rows, evaluations or checkpoints). The M values
are interleaved round by round in one session and each M's median is kept; the unbatched loop
(``Trainer.step``, one model at a time as ``satsim train`` does it) is timed beside them. On the
CPU torch runs on one thread. The load average is printed before and after.

    python bench/batched_training.py --quick          # a few minutes; last line: M=32 / M=1
    python bench/batched_training.py                  # M = 1, 8, 32, 128, three rounds
    PYTHONPATH=. python3 bench/batched_training.py --device cuda --json OUT/batched.json

The last line printed is the ratio of models·steps/s at M = 32 to M = 1 at the small size (the
stacked step at M = 1), written as ``12.3x``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

for _name in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS", "NUMBA_NUM_THREADS"):
    os.environ.setdefault(_name, "1")
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

SIZES = {
    "small": {"layers": 2, "d_model": 16, "heads": 2, "d_head": 8, "d_mlp": 32},
    "flare": {"layers": 5, "d_model": 32, "heads": 8, "d_head": 4, "d_mlp": 128},
}
"""The benchmark's two architectures (satsim.benchmarks.flare's small scale, FLaRe's paper)."""
SETTINGS = {"task": "recognition", "split": "flare", "norm": "pre", "positional": "sinusoidal",
            "optimizer": "adam", "lr": 3e-3, "batch_size": 32, "train_size": 256,
            "eval_size": 8, "probe_size": 4, "lang": "majority"}
"""Everything else (a small training set: its size does not change the cost of a step)."""


def trainers(size: str, count: int, device: str, folder: Path) -> list:
    """``count`` trainers of ``size``, seeds 1…count (their data and initial weights differ)."""
    from satsim.training.config import TrainConfig
    from satsim.training.loop import Trainer

    return [Trainer(TrainConfig.from_dict({**SETTINGS, **SIZES[size], "seed": seed,
                                           "device": device}), folder / f"{size}-{seed}")
            for seed in range(1, count + 1)]


def _sync(device: str) -> None:
    if device == "cuda":
        import torch

        torch.cuda.synchronize()


def timed_steps(step, device: str, seconds: float, warmup: int) -> tuple[int, float]:
    """Steps run and their seconds: ``warmup`` untimed, then until ``seconds`` have passed."""
    for _ in range(warmup):
        step()
    _sync(device)
    start, count = time.perf_counter(), 0
    while count < 3 or time.perf_counter() - start < seconds:
        step()
        count += 1
    _sync(device)
    return count, time.perf_counter() - start


def stacked_rate(group: list, device: str, seconds: float, notes: set) -> float:
    """Models·steps per second of ``group`` trained as one stack (a refused CUDA graph: notes)."""
    from satsim.training.group import Stack

    stack = Stack(group)
    flags = [False] * len(group)
    count, elapsed = timed_steps(lambda: stack.step(flags), device, seconds,
                                 warmup=3 if device == "cuda" else 1)
    if stack.graph_error:
        notes.add(f"CUDA graph refused, steps ran eagerly: {stack.graph_error}")
    return len(group) * count / elapsed


def loop_rate(trainer, device: str, seconds: float) -> float:
    """Steps per second of one model through the unbatched loop (``Trainer.step``)."""
    state = iter(range(10**9))
    count, elapsed = timed_steps(lambda: trainer.step(next(state), False), device, seconds,
                                 warmup=1)
    return count / elapsed


def measure(models: list[int], sizes: list[str], device: str, rounds: int, seconds: float,
            say=print, results: dict | None = None) -> dict:
    """Per size: the median models·steps/s of every M (and of the loop) over ``rounds``.

    ``results`` (a dict filled as each size finishes, so a run cut short keeps what it has)
    is returned.
    """
    import torch

    torch.set_num_threads(1)
    results = {} if results is None else results
    results.update({"device": device, "threads": torch.get_num_threads(), "rounds": rounds,
                    "load_before": os.getloadavg(), "sizes": {}})
    if device == "cuda":
        results["gpu"] = torch.cuda.get_device_name()
    with tempfile.TemporaryDirectory() as folder:
        for size in sizes:
            start = time.perf_counter()
            pool = trainers(size, max(models), device, Path(folder))
            say(f"{size}: built {len(pool)} models in {time.perf_counter() - start:.0f} s")
            rates: dict[str, list[float]] = {"loop": [], **{str(m): [] for m in models}}
            notes: set[str] = set()
            for number in range(rounds):
                rates["loop"].append(loop_rate(pool[0], device, seconds))
                for m in models:  # interleaved: every M measured in every round
                    rates[str(m)].append(stacked_rate(pool[:m], device, seconds, notes))
                say(f"{size} round {number + 1}: " + ", ".join(
                    f"{key} {values[-1]:.0f}" for key, values in rates.items()))
            results["sizes"][size] = {key: statistics.median(values)
                                      for key, values in rates.items()}
            results["sizes"][size]["rounds"] = rates
            if notes:
                results.setdefault("notes", []).extend(sorted(notes))
                say(f"{size}: " + "; ".join(sorted(notes)))
    results["load_after"] = os.getloadavg()
    return results


def ratio(results: dict, size: str, m: int = 32) -> float:
    """Models·steps/s at M = ``m`` over M = 1 (both stacked) at ``size``."""
    rates = results["sizes"][size]
    return rates[str(m)] / rates["1"]


def table(results: dict) -> str:
    """The medians as a markdown table, with ratios to M = 1 and to the loop."""
    lines = ["| size | M | models·steps/s | × M = 1 | × loop |", "|---|---|---|---|---|"]
    for size, rates in results["sizes"].items():
        lines.append(f"| {size} | loop | {rates['loop']:.1f} | | 1.0 |")
        for key, value in rates.items():
            if not key.isdigit():
                continue
            lines.append(f"| {size} | {key} | {value:.1f} | {value / rates['1']:.1f} | "
                         f"{value / rates['loop']:.1f} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true",
                        help="M = 1, 8, 32, two rounds, about 1 s a measurement")
    parser.add_argument("--device", default="cpu", choices=("cpu", "cuda"))
    parser.add_argument("--json", type=Path, help="also write the results here")
    args = parser.parse_args(argv)
    models = [1, 8, 32] if args.quick else [1, 8, 32, 128]
    rounds, seconds = (2, 1.0) if args.quick else (3, 2.0)
    print(f"device {args.device}, torch threads 1, load average {os.getloadavg()}", flush=True)
    results = measure(models, list(SIZES), args.device, rounds, seconds,
                      say=lambda line: print(line, flush=True))
    print(table(results))
    print(f"load average after: {results['load_after']}")
    out = args.json or (Path(os.environ["OUT"]) / "batched_training.json"
                        if os.environ.get("OUT") else None)
    if out is not None:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(results, indent=2) + "\n")
    print(f"M=32 vs M=1 at FLaRe's size: {ratio(results, 'flare'):.1f}x")
    print(f"{ratio(results, 'small'):.1f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
