"""satsim on a CUDA GPU in one short run: the CUDA tests, then five measurements.

On a GPU machine, from the repository root (no install: satsim runs from the checkout):

    PYTHONPATH=. python3 bench/gpu_check.py --out OUT            # about 2-3 minutes
    PYTHONPATH=. python3 bench/gpu_check.py --stages batched --out OUT --budget-s 230  # 2 min

On a CPU machine, the same code paths at tiny sizes (CI runs this):

    python bench/gpu_check.py --device cpu --quick --out /tmp/gpu_check

Stages, in order; each is timed, catches its own errors (a failed stage is recorded and the next
one runs) and is skipped when the time left under ``--budget-s`` is below what it needs:

- tests: ``pytest -m cuda`` in a subprocess on the test files that hold such tests (the soft twin
  against the CPU reference in float32 and float64, the torch saturated attention against the
  NumPy reference on the attention tests' hypothesis cases);
- throughput: the Dyck-1 test set of ``satsim eval --lang dyck1`` through satsim's CPU simulator
  and through the soft twin on the device (float32, and bfloat16 by autocast, where flash
  attention can apply), with the attention kernel torch chose; a forward-only batch too;
- training: steps per second of the default ``satsim train`` run (Dyck-1, next-symbol), plain
  optimiser steps and a short instrumented run, beside the same steps on the CPU;
- homogeneity: Figure 5's curves under the authors' protocol at the paper's sizes, float64, c on
  linspace(1, 10, 20) against c = 1000, compared seed by seed with the stored CPU run;
- attention: satsim.soft.hard_attention (exact tie sets, float64 scores) at B 8, H 4, d 64,
  causal, T 2048 and 8192, beside torch's SDPA in float32 and bfloat16; and its tie sets and
  outputs against the NumPy reference on exact integer ties at T 2048;
- batched: models·steps per second of M models trained as one stack (satsim.training.group), at
  FLaRe's small size and FLaRe's transformer, M = 1, 8, 32, 128 (bench/batched_training.py),
  last: under the default budget it gets what the others leave, so run it alone as above.

Prints progress as it goes and rewrites OUT/gpu_check.json and OUT/gpu_check.md (tables) with
every line, so a run that is killed keeps what it measured; with OUT/pytest_cuda.txt and
OUT/homogeneity_authors.png, four files.
"""

from __future__ import annotations

import argparse
import gc
import json
import math
import os
import platform
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import traceback
import xml.etree.ElementTree as ElementTree
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RESERVE_S = 5.0
"""Seconds kept back at the end for writing the results."""


class StageTimeout(Exception):
    """A stage ran past its share of the budget."""


@dataclass(frozen=True)
class Sizes:
    """The sizes of one run: the full GPU run or --quick."""

    bins: tuple[tuple[int, int], ...]
    strings_per_bin: int
    forward_batch: tuple[int, int]  # strings, length
    train_steps: int
    instrumented_steps: int
    cpu_train_steps: int
    homogeneity: dict  # EncoderSizes fields; empty: the paper's
    seeds: int
    attention: tuple[tuple[int, int, int, int], ...]  # B, H, T, d
    exact_check: tuple[int, int, int, int]  # B, H, T, d checked against the NumPy reference
    batched: tuple[tuple[int, ...], int, float]  # stacked training: M values, rounds, seconds


FULL = Sizes(
    bins=((0, 16), (17, 64), (65, 256), (257, 1024), (1025, 4096), (4097, 16384)),
    strings_per_bin=200, forward_batch=(32, 4096), train_steps=200, instrumented_steps=100,
    cpu_train_steps=50, homogeneity={}, seeds=5,
    attention=((8, 4, 2048, 64), (8, 4, 8192, 64)), exact_check=(1, 1, 2048, 64),
    batched=((1, 8, 32, 128), 2, 2.0))
QUICK = Sizes(
    bins=((0, 16), (17, 64)), strings_per_bin=10, forward_batch=(4, 64), train_steps=5,
    instrumented_steps=3, cpu_train_steps=3,
    homogeneity=dict(layers=2, d_model=16, heads=2, d_ff=8, length=4, sequences=3), seeds=1,
    attention=((2, 2, 64, 8), (2, 2, 128, 8)), exact_check=(1, 1, 64, 8),
    batched=((1, 2), 1, 0.1))


class Run:
    """The run's settings, clock, device and results; writes the JSON after every stage."""

    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.sizes = QUICK if args.quick else FULL
        self.out = Path(args.out)
        self.start = time.perf_counter()
        self.results: dict = {"script": "bench/gpu_check.py", "argv": sys.argv[1:],
                              "quick": args.quick, "budget_s": args.budget_s, "stages": {}}
        self.torch = None
        self.device = None

    def elapsed(self) -> float:
        return time.perf_counter() - self.start

    def left(self) -> float:
        return self.args.budget_s - self.elapsed() - RESERVE_S

    def log(self, message: str) -> None:
        """Print progress, and write what is known so far (a killed run keeps it)."""
        print(f"[{self.elapsed():7.1f} s] {message}", flush=True)
        self.save()

    def sync(self) -> None:
        if self.device is not None and self.device.type == "cuda":
            self.torch.cuda.synchronize()

    def save(self) -> None:
        """Rewrite gpu_check.json and gpu_check.md with the results so far."""
        self.results["seconds"] = self.elapsed()
        for name, text in (("gpu_check.json", json.dumps(_plain(self.results), indent=1) + "\n"),
                           ("gpu_check.md", markdown(self.results))):
            temporary = self.out / f".{name}.tmp"
            temporary.write_text(text)
            os.replace(temporary, self.out / name)


def _plain(value):
    """JSON-ready: NumPy scalars as numbers, non-finite floats as strings."""
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if hasattr(value, "item") and not isinstance(value, (str, bytes)):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    return value


# --- timing and SDPA kernels ---------------------------------------------------------------------

def median_seconds(run: Run, fn: Callable[[], object], repeats: int = 5,
                   warmup: int = 2) -> float:
    """Median seconds of fn() after warm-ups: CUDA events on a GPU, the wall clock on a CPU."""
    torch = run.torch
    for _ in range(warmup):
        fn()
    run.sync()
    times = []
    for _ in range(repeats):
        if run.device.type == "cuda":
            begin, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            begin.record()
            fn()
            end.record()
            end.synchronize()
            times.append(begin.elapsed_time(end) / 1000)
        else:
            clock = time.perf_counter()
            fn()
            times.append(time.perf_counter() - clock)
    return statistics.median(times)


SDPA_KERNELS = (  # profiler op name fragment → kernel, most specific first
    ("_scaled_dot_product_flash_attention_for_cpu", "flash (CPU)"),
    ("_scaled_dot_product_flash_attention", "flash"),
    ("_scaled_dot_product_efficient_attention", "memory-efficient"),
    ("_scaled_dot_product_cudnn_attention", "cuDNN"),
    ("_scaled_dot_product_attention_math", "math"),
)


def sdpa_kernels(run: Run, fn: Callable[[], object]) -> list[str]:
    """The SDPA kernels fn() ran, read from the op names torch's profiler records."""
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU]) as recorded:
        fn()
        run.sync()
    names = {event.name for event in recorded.events()}
    found = []
    for fragment, kernel in SDPA_KERNELS:
        if any(fragment in name for name in names) and kernel not in found:
            if kernel == "flash" and "flash (CPU)" in found:
                continue
            found.append(kernel)
    return found or ["none (written-out softmax)"]


# --- stage (a): the CUDA tests -------------------------------------------------------------------

def stage_tests(run: Run, cap: float, result: dict) -> None:
    """pytest -m cuda on the test files that mark tests cuda; counts from its JUnit XML."""
    files = sorted(str(p.relative_to(ROOT)) for p in (ROOT / "tests").rglob("test_*.py")
                   if "mark.cuda" in p.read_text())
    result["files"] = files
    with tempfile.TemporaryDirectory() as tmp:
        report = Path(tmp) / "junit.xml"
        command = [sys.executable, "-m", "pytest", "-q", "-m", "cuda", "-p", "no:cacheprovider",
                   "--continue-on-collection-errors", f"--junitxml={report}", *files]
        run.log(f"tests: {' '.join(command[1:])}")
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(
            filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))
        try:
            done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True,
                                  timeout=cap)
            output, code = done.stdout + done.stderr, done.returncode
        except subprocess.TimeoutExpired as expired:
            output = expired.stdout or ""
            if isinstance(output, bytes):
                output = output.decode(errors="replace")
            output, code = output + f"\n(timed out after {cap:.0f} s)", None
        (run.out / "pytest_cuda.txt").write_text(output[-200_000:])
        counts = _junit_counts(report)
    tail = output.strip().splitlines()[-1] if output.strip() else ""
    run.log(f"tests: {tail}")
    result.update(returncode=code, summary=tail, **counts)
    if code not in (0, 5) or counts.get("failed") or counts.get("errors"):
        result["status"] = "failed"


def _junit_counts(report: Path) -> dict:
    """Tests, passed, failed, errors and skipped, and the failing tests' names and messages."""
    if not report.exists():
        return {}
    suite = ElementTree.parse(report).getroot()
    suite = suite if suite.tag == "testsuite" else suite.find("testsuite")
    count = {key: int(suite.get(key, 0)) for key in ("tests", "failures", "errors", "skipped")}
    failures = []
    for case in suite.iter("testcase"):
        for problem in (*case.findall("failure"), *case.findall("error")):
            failures.append({"test": f"{case.get('classname')}::{case.get('name')}",
                             "message": (problem.get("message") or "")[:500]})
    return {"tests": count["tests"], "skipped": count["skipped"], "failed": count["failures"],
            "errors": count["errors"],
            "passed": count["tests"] - count["failures"] - count["errors"] - count["skipped"],
            "failures": failures[:20]}


# --- stage (b): soft twin throughput beside the simulator -----------------------------------------

def stage_throughput(run: Run, cap: float, result: dict) -> None:
    """The Dyck-1 test set through the CPU simulator and the soft twin on the device."""
    import numba

    import languages
    from satsim import Simulator, constructions
    from satsim.analysis.evaluation import evaluate, evaluate_predictor
    from satsim.analysis.scoring import predict
    from satsim.training.evaluate import soft_predictor

    torch, sizes = run.torch, run.sizes
    spec, dyck1 = constructions.build("dyck1"), languages.get("dyck1")
    clock = time.perf_counter()
    simulator = Simulator(spec)
    predict(simulator, ["()"])
    result.update(simulator_threads=numba.get_num_threads(),
                  simulator_ready_s=time.perf_counter() - clock, soft_device=str(run.device))
    run.log(f"throughput: simulator ready in {result['simulator_ready_s']:.1f} s (Numba "
            "compile or cache load)")
    models = {"simulator": evaluate(simulator, dyck1, sizes.bins, sizes.strings_per_bin)}
    run.log(f"throughput: simulator {_overall(models['simulator'])}")
    kernels = result["sdpa_kernels"] = {}
    sample = dyck1.sample_positive(4, 1000, 1000, seed=5) if not run.args.quick else ["(())"]
    for name, autocast in (("soft float32", None), ("soft bfloat16 autocast", torch.bfloat16)):
        predictor = soft_predictor(spec, str(run.device), "float32")

        def answers(strings, predictor=predictor, autocast=autocast):
            if autocast is None:
                return predictor(strings)
            with torch.autocast(device_type=run.device.type, dtype=autocast):
                return predictor(strings)

        models[name] = evaluate_predictor(answers, spec, dyck1, "softmax", sizes.bins,
                                          sizes.strings_per_bin)
        kernels[name] = sdpa_kernels(run, lambda answers=answers: answers(sample))
        run.log(f"throughput: {name} {_overall(models[name])}; SDPA kernel {kernels[name]}")
    bins = result["bins"] = []
    for index, (low, high) in enumerate(sizes.bins):
        row = {"min_len": low, "max_len": high}
        for name, report in models.items():
            found = report.bins[index]
            row.update({"strings": found.n, "tokens": found.tokens,
                        f"{name} tokens_per_second": found.tokens_per_second,
                        f"{name} accuracy": found.accuracy})
        bins.append(row)
    result["overall"] = {name: _totals(report) for name, report in models.items()}
    _forward_only(run, dyck1, result.setdefault("forward_only", {}))


def _totals(report) -> dict:
    tokens = sum(b.tokens for b in report.bins)
    seconds = sum(b.seconds for b in report.bins)
    return {"tokens": tokens, "seconds": seconds, "tokens_per_second": tokens / seconds,
            "accuracy": report.accuracy}


def _overall(report) -> str:
    totals = _totals(report)
    return (f"{totals['tokens_per_second']:,.0f} tokens/s over {totals['tokens']:,} tokens, "
            f"accuracy {totals['accuracy']:.3f}")


def _forward_only(run: Run, dyck1, result: dict) -> None:
    """One batch of Dyck-1 words through two soft twins, the forward pass alone.

    The Dyck-1 construction (d_head 1, d_v 2: no flash kernel takes unequal widths) and the
    default ``satsim train`` model at initialisation (d_head 8), which flash can run in bfloat16.
    """
    from satsim import constructions
    from satsim.soft import SoftTransformer
    from satsim.training.config import TrainConfig
    from satsim.training.init import initial_spec

    torch = run.torch
    count, length = run.sizes.forward_batch
    strings = dyck1.sample_positive(count, length, length, seed=7)
    specs = {"dyck1 construction": constructions.build("dyck1"),
             "default train model": initial_spec(TrainConfig(), dyck1.alphabet)}
    result.update(strings=count, length=length, models={})
    for model, spec in specs.items():
        soft = SoftTransformer.from_spec(spec, device=run.device, dtype="float32")
        tokens, lengths = soft.encode(strings)
        rows = result["models"][model] = {}
        for name, autocast in (("float32", None), ("bfloat16 autocast", torch.bfloat16)):
            def forward(soft=soft, tokens=tokens, lengths=lengths, autocast=autocast):
                with torch.no_grad(), torch.autocast(device_type=run.device.type,
                                                     dtype=autocast or torch.bfloat16,
                                                     enabled=autocast is not None):
                    return soft(tokens, lengths).logits

            seconds = median_seconds(run, forward)
            rows[name] = {"seconds": seconds, "tokens_per_second": count * length / seconds,
                          "sdpa_kernels": sdpa_kernels(run, forward)}
            run.log(f"throughput: forward only, {model}, {count} × {length}, {name}: "
                    f"{count * length / seconds:,.0f} tokens/s ({rows[name]['sdpa_kernels']})")


# --- stage (c): training steps per second ---------------------------------------------------------

def stage_training(run: Run, cap: float, result: dict) -> None:
    """The default satsim train run: plain optimiser steps per second, then an instrumented run."""
    from satsim.training.config import TrainConfig
    from satsim.training.loop import Trainer, train

    sizes = run.sizes
    config = TrainConfig(device=str(run.device))
    result["config"] = config.to_dict()
    with tempfile.TemporaryDirectory() as tmp:
        plain = {"device": (str(run.device), sizes.train_steps)}
        if run.device.type == "cuda":
            plain["cpu"] = ("cpu", sizes.cpu_train_steps)
        for key, (device, steps) in plain.items():
            clock = time.perf_counter()
            trainer = Trainer(replace(config, device=device), Path(tmp) / f"steps-{device}")
            setup = time.perf_counter() - clock
            for t in range(3):
                trainer.step(t, logged=False)
            run.sync()
            clock = time.perf_counter()
            for t in range(3, 3 + steps):
                trainer.step(t, logged=False)
            run.sync()
            seconds = time.perf_counter() - clock
            result[key] = {
                "device": device, "setup_s": setup, "steps": steps,
                "steps_per_second": steps / seconds}
            run.log(f"training: {steps} plain steps on {device}: {steps / seconds:.1f} steps/s "
                    f"(setup {setup:.1f} s)")
        steps = sizes.instrumented_steps
        done = train(replace(config, steps=steps), Path(tmp) / "run")
        result["instrumented"] = {"steps": steps, "seconds": done.elapsed,
                                  "steps_per_second": steps / done.elapsed,
                                  "held_out_accuracy": done.eval,
                                  "every": {"log": config.log_every,
                                            "checkpoint": config.checkpoint_every}}
        run.log(f"training: instrumented run of {steps} steps: {steps / done.elapsed:.1f} "
                f"steps/s")


# --- stage (c'): many models trained as one stack -------------------------------------------------

def stage_batched(run: Run, cap: float, result: dict) -> None:
    """Models·steps/s of M models trained as one stack (bench/batched_training.py), both sizes.

    On CUDA the stacked step replays a captured CUDA graph; the unbatched loop is timed beside.
    """
    sys.path.insert(0, str(ROOT / "bench"))
    from batched_training import SIZES, measure

    models, rounds, seconds = run.sizes.batched
    measure(list(models), list(SIZES), str(run.device), rounds, seconds,
            say=lambda line: run.log(f"batched: {line}"), results=result)
    if run.device.type == "cuda":
        result["graph_against_eager"] = _graph_against_eager(str(run.device))
        run.log(f"batched: graph against eager steps: {result['graph_against_eager']}")


def _graph_against_eager(device: str) -> dict:
    """Four models, ten plain steps replayed as a CUDA graph and run eagerly: the largest gap."""
    from batched_training import trainers

    from satsim.training.group import Stack

    gaps = {}
    with tempfile.TemporaryDirectory() as folder:
        for size in ("small", "flare"):
            flats = []
            for graphs in (True, False):
                stack = Stack(trainers(size, 4, device, Path(folder)), graphs=graphs)
                for _ in range(10):
                    stack.step([False] * 4)
                flats.append(stack.flat.detach())
            gaps[size] = float((flats[0] - flats[1]).abs().max())
    return {"steps": 10, "models": 4, "max_abs_difference": gaps}


# --- stage (d): homogeneity curves ---------------------------------------------------------------

def stage_homogeneity(run: Run, cap: float, result: dict) -> None:
    """Figure 5 under the authors' protocol in float64, against the stored CPU curves."""
    import numpy as np

    from satsim.papers.homogeneity import REFERENCE_C, EncoderSizes, homogeneity_curves
    from satsim.papers.homogeneity.plot import plot_curves

    sizes = EncoderSizes(**run.sizes.homogeneity)
    seeds = run.args.seeds or run.sizes.seeds
    result.update(protocol="authors", seeds=seeds, sizes=vars(sizes), dtype="float64",
                  reference_c=REFERENCE_C)
    done = []

    def heard() -> None:
        done.append(1)
        run.log(f"homogeneity: curve {len(done)} of {2 * seeds}")

    curves = homogeneity_curves("authors", seeds, sizes, device=str(run.device),
                                dtype="float64", on_curve=heard)
    result["curves"] = [c.to_dict() for c in curves]
    stored = ROOT / "bench" / "results" / "homogeneity_authors.json"
    if stored.exists():
        cpu = json.loads(stored.read_text())
        if cpu["setup"]["sizes"] == vars(sizes) and cpu["setup"]["dtype"] == "float64":
            gaps = [np.abs(np.array(g.per_seed) - np.array(c["per_seed"][:seeds])).max()
                    for g, c in zip(curves, cpu["curves"])]
            result["max_abs_difference_from_cpu_run"] = float(max(gaps))
            run.log(f"homogeneity: largest difference from the stored CPU curves "
                    f"{max(gaps):.2e}")
    try:
        plot_curves(curves, str(run.out / "homogeneity_authors.png"),
                    f"Figure 5, authors' protocol, {_seeds(seeds)}, float64 on {run.device}")
    except ImportError as missing:
        result["plot"] = f"not drawn: {missing}"


def _seeds(count: int) -> str:
    return f"{count} seed" + ("" if count == 1 else "s")


# --- stage (e): exact saturated attention beside SDPA ---------------------------------------------

def stage_attention(run: Run, cap: float, result: dict) -> None:
    """satsim.soft.hard_attention: exact ties against the NumPy reference, then its speed."""
    import numpy as np

    from satsim.reference import attention as reference
    from satsim.soft.hard_attention import saturated_attention, tie_sets

    torch = run.torch
    generator = torch.Generator(device="cpu").manual_seed(0)
    b, h, t, d = run.sizes.exact_check
    q, k = (torch.randint(-2, 3, (b, h, t, d), generator=generator).double() for _ in range(2))
    v = torch.randn((b, h, t, d), generator=generator, dtype=torch.float64)
    got = saturated_attention(q.to(run.device), k.to(run.device), v.to(run.device), causal=True)
    ties = tie_sets(q.to(run.device), k.to(run.device), causal=True).cpu().numpy()
    want_ties = reference.tie_sets(q.numpy(), k.numpy(), causal=True)
    want = reference.saturated_attention(q.numpy(), k.numpy(), v.numpy(), causal=True)
    check = {"shape": [b, h, t, d], "inputs": "q, k integers in [-2, 2] (exact ties)",
             "tie_sets_equal": bool(np.array_equal(ties, want_ties)),
             "queries_with_ties": int((want_ties.sum(-1) > 1).sum()),
             "max_abs_output_difference": float(np.abs(got.cpu().numpy() - want).max())}
    result["exact_check"] = check
    if not (check["tie_sets_equal"] and check["max_abs_output_difference"] < 1e-12):
        result["status"] = "failed"
    run.log(f"attention: exact check {check}")
    result["gflops"] = "useful causal work 2·B·H·T²·d (scores and values, half of each)"
    rows = result["timings"] = []
    for shape in run.sizes.attention:
        rows.append({})
        _attention_timings(run, *shape, rows[-1])


ATTENTION_CALLS = ("saturated (torch, float64 scores)", "SDPA float32", "SDPA bfloat16")


def _attention_timings(run: Run, b: int, h: int, t: int, d: int, row: dict) -> None:
    """Causal attention on random float32 inputs: the exact saturated kind and SDPA."""
    from satsim.soft.hard_attention import saturated_attention

    torch = run.torch
    sdpa = torch.nn.functional.scaled_dot_product_attention
    q, k, v = (torch.randn((b, h, t, d), device=run.device) for _ in range(3))
    low = [x.to(torch.bfloat16) for x in (q, k, v)]
    calls = dict(zip(ATTENTION_CALLS, (lambda: saturated_attention(q, k, v, causal=True),
                                       lambda: sdpa(q, k, v, is_causal=True),
                                       lambda: sdpa(*low, is_causal=True))))
    row.update(B=b, H=h, T=t, d=d)
    for name, call in calls.items():
        if run.device.type == "cuda":
            torch.cuda.reset_peak_memory_stats()
        seconds = median_seconds(run, call)
        row[name] = {"ms": 1000 * seconds, "gflops": 2 * b * h * t * t * d / seconds / 1e9}
        if name.startswith("SDPA"):
            row[name]["kernel"] = sdpa_kernels(run, call)
        if run.device.type == "cuda":
            row[name]["peak_gib"] = torch.cuda.max_memory_allocated() / 2**30
        run.log(f"attention: T {t}: {name} {1000 * seconds:.2f} ms")


# --- the run -------------------------------------------------------------------------------------

STAGES: dict[str, tuple[Callable[[Run, float, dict], None], float, float]] = {
    # name: (stage, most seconds it may take, fewest seconds it needs to start)
    "tests": (stage_tests, 120.0, 30.0),
    "throughput": (stage_throughput, 90.0, 25.0),
    "training": (stage_training, 60.0, 15.0),
    "homogeneity": (stage_homogeneity, 90.0, 20.0),
    "attention": (stage_attention, 60.0, 10.0),
    "batched": (stage_batched, 240.0, 30.0),
}


def environment(run: Run) -> dict:
    """Python, CPU, package versions and the device torch sees."""
    import numba
    import numpy

    sys.path.insert(0, str(ROOT / "bench"))
    from _common import machine

    torch = run.torch
    found = {**machine(), "platform": platform.platform(), "numpy": numpy.__version__,
             "numba": numba.__version__, "torch": torch.__version__,
             "torch_cuda": torch.version.cuda, "cuda_available": torch.cuda.is_available(),
             "torch_threads": torch.get_num_threads()}
    if torch.cuda.is_available():
        properties = torch.cuda.get_device_properties(0)
        found.update(gpu=properties.name, gpu_memory_gib=properties.total_memory / 2**30,
                     compute_capability=f"{properties.major}.{properties.minor}",
                     gpu_count=torch.cuda.device_count(),
                     cudnn=torch.backends.cudnn.version(),
                     sdpa_enabled={name: getattr(torch.backends.cuda, f"{flag}_sdp_enabled")()
                                   for name, flag in (("flash", "flash"), ("cuDNN", "cudnn"),
                                                      ("memory-efficient", "mem_efficient"),
                                                      ("math", "math"))})
    return found


def run_stage(run: Run, name: str) -> None:
    """Run one stage under its time cap, recording its result, error or skip."""
    stage, most, fewest = STAGES[name]
    left = run.left()
    if left < fewest:
        run.results["stages"][name] = {"status": "skipped",
                                       "reason": f"{left:.0f} s left, needs about {fewest:.0f} s"}
        run.log(f"{name}: skipped ({left:.0f} s left)")
        return
    cap = min(most, left)
    run.log(f"{name}: starting (at most {cap:.0f} s)")

    def over(signum, frame):
        raise StageTimeout(f"stopped after {cap:.0f} s")

    clock = time.perf_counter()
    result = run.results["stages"][name] = {"status": "running"}  # stages fill it as they go
    previous = signal.signal(signal.SIGALRM, over)
    signal.setitimer(signal.ITIMER_REAL, cap + (5.0 if name == "tests" else 0.0))
    try:
        stage(run, cap, result)
    except StageTimeout as timeout:
        result.update(status="timeout", error=str(timeout))
    except Exception as error:  # a failing stage is recorded; the others still run
        result.update(status="error", error=f"{type(error).__name__}: {error}",
                      traceback=traceback.format_exc()[-4000:])
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    if result["status"] == "running":
        result["status"] = "ok"
    result["seconds"] = time.perf_counter() - clock
    run.log(f"{name}: {result['status']} in {result['seconds']:.1f} s"
            + (f": {result['error']}" if "error" in result else ""))
    gc.collect()
    if run.device.type == "cuda":
        run.torch.cuda.empty_cache()
    run.save()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True, help="folder for gpu_check.json and .md")
    parser.add_argument("--device", default="cuda", help="cuda (default), cuda:N or cpu")
    parser.add_argument("--quick", action="store_true", help="tiny sizes (for a CPU and CI)")
    parser.add_argument("--budget-s", type=float, default=300.0,
                        help="overall deadline; a stage that would not fit is skipped")
    parser.add_argument("--stages", default=",".join(STAGES),
                        help=f"comma-separated subset of {','.join(STAGES)}")
    parser.add_argument("--seeds", type=int, default=None,
                        help="homogeneity seeds (default 5; 1 with --quick)")
    args = parser.parse_args()
    stages = [s for s in args.stages.split(",") if s]
    unknown = [s for s in stages if s not in STAGES]
    if unknown:
        parser.error(f"unknown stages {unknown}; known: {list(STAGES)}")
    Path(args.out).mkdir(parents=True, exist_ok=True)
    sys.path.insert(0, str(ROOT))
    run = Run(args)
    from satsim.torch_setup import import_torch

    run.torch = import_torch()
    run.log(f"torch {run.torch.__version__} imported")
    try:
        from satsim.soft import resolve_device

        run.device = resolve_device(args.device)
        if run.device.type == "cuda":
            run.torch.zeros(1, device=run.device)  # start CUDA before any stage is timed
    except Exception as error:
        run.results["environment"] = {"error": f"{type(error).__name__}: {error}",
                                      "cuda_available": run.torch.cuda.is_available(),
                                      "torch": run.torch.__version__,
                                      "torch_cuda": run.torch.version.cuda,
                                      "traceback": traceback.format_exc()[-4000:]}
        run.log(f"no usable device: {error}")
        run.save()
        return 1
    try:
        run.results["environment"] = environment(run)
    except Exception as error:  # a missing detail is no reason to stop
        run.results["environment"] = {"error": f"{type(error).__name__}: {error}"}
    run.results["device"] = str(run.device)
    run.log(f"device {run.device}: {run.results['environment'].get('gpu', 'CPU')}")
    run.save()
    for name in stages:
        run_stage(run, name)
    run.save()
    run.log(f"done; wrote {run.out / 'gpu_check.json'} and {run.out / 'gpu_check.md'}")
    return 0 if all(s["status"] == "ok" for s in run.results["stages"].values()) else 1


# --- the markdown tables -------------------------------------------------------------------------

def markdown(results: dict) -> str:
    """The summary table and each stage's table."""
    env = results.get("environment", {})
    where = env.get("gpu") or env.get("cpu", "?")
    lines = [f"Device {results.get('device')} ({where}); torch {env.get('torch')} "
             f"(CUDA {env.get('torch_cuda')}), Python {env.get('python')}, {env.get('cpus')} "
             f"CPUs ({env.get('cpu')}), load {env.get('load_average_1min', 0):.2f}; "
             f"{'--quick, ' if results['quick'] else ''}{results.get('seconds', 0):.0f} s in all.",
             "", "| stage | status | seconds | result |", "| --- | --- | ---: | --- |"]
    for name, stage in results["stages"].items():
        try:
            summary = _summary(name, stage)
        except (KeyError, IndexError, TypeError):  # still running, or stopped early
            summary = ""
        lines.append(f"| {name} | {stage['status']} | {stage.get('seconds', 0):.1f} | "
                     f"{summary} |")
    for name, stage in results["stages"].items():
        try:
            table = TABLES[name](stage) if name in TABLES else []
        except (KeyError, IndexError, TypeError):  # the stage stopped before its numbers
            continue
        lines += ["", *table] if table else []
    return "\n".join(lines) + "\n"


def _summary(name: str, stage: dict) -> str:
    if "error" in stage or "reason" in stage:
        return str(stage.get("error") or stage.get("reason")).replace("|", "/")[:200]
    if name == "tests":
        return (f"{stage.get('passed', 0)} passed, {stage.get('failed', 0)} failed, "
                f"{stage.get('errors', 0)} errors, {stage.get('skipped', 0)} skipped")
    if name == "throughput":
        overall = stage["overall"]
        return ", ".join(f"{model} {row['tokens_per_second']:,.0f} tok/s"
                         for model, row in overall.items())
    if name == "training":
        return (f"{stage['device']['steps_per_second']:.1f} plain steps/s on the device, "
                f"{stage['instrumented']['steps_per_second']:.1f} instrumented")
    if name == "batched":
        if not stage["sizes"]:  # still measuring its first size
            return ""
        largest = max(int(key) for key in next(iter(stage["sizes"].values())) if key.isdigit())
        return ", ".join(f"{size} {rates[str(largest)] / rates['1']:.1f}x at M = {largest}"
                         for size, rates in stage["sizes"].items())
    if name == "homogeneity":
        gap = stage.get("max_abs_difference_from_cpu_run")
        return _seeds(stage["seeds"]) + ("" if gap is None else f", ≤ {gap:.1e} from CPU")
    if name == "attention":
        check = stage["exact_check"]
        return (f"tie sets {'equal' if check['tie_sets_equal'] else 'DIFFER'} to the reference "
                f"({check['queries_with_ties']} tied queries)")
    return ""


def _throughput_table(stage: dict) -> list[str]:
    models = list(stage["overall"])
    lines = [f"Dyck-1 test set: simulator on {stage['simulator_threads']} CPU threads, soft twin "
             f"on {stage['soft_device']} (SDPA kernels: "
             + "; ".join(f"{m}: {', '.join(k)}" for m, k in stage["sdpa_kernels"].items()) + ").",
             "", "| length | strings | tokens | " + " | ".join(
                 f"{m} tok/s | acc." for m in models) + " |",
             "| --- | ---: | ---: |" + " ---: | ---: |" * len(models)]
    for row in stage["bins"]:
        cells = " | ".join(f"{row[f'{m} tokens_per_second']:,.0f} | {row[f'{m} accuracy']:.3f}"
                           for m in models)
        lines.append(f"| {row['min_len']}–{row['max_len']} | {row['strings']} | "
                     f"{row['tokens']:,} | {cells} |")
    forward = stage.get("forward_only", {})
    if not forward.get("models"):
        return lines
    lines += ["", f"| forward pass alone, {forward['strings']} Dyck-1 words × "
              f"{forward['length']} | float32 tok/s (SDPA kernel) | bfloat16 autocast tok/s "
              "(SDPA kernel) |", "| --- | ---: | ---: |"]
    for model, rows in forward["models"].items():
        cells = " | ".join(f"{rows[name]['tokens_per_second']:,.0f} "
                           f"({', '.join(rows[name]['sdpa_kernels'])})" if name in rows
                           else "not run" for name in ("float32", "bfloat16 autocast"))
        lines.append(f"| {model} | {cells} |")
    return lines


def _training_table(stage: dict) -> list[str]:
    lines = ["| training (default Dyck-1 run) | device | steps | steps/s |",
             "| --- | --- | ---: | ---: |"]
    for key, label in (("device", "plain optimiser steps"), ("cpu", "plain optimiser steps")):
        if key in stage:
            row = stage[key]
            lines.append(f"| {label} | {row['device']} | {row['steps']} | "
                         f"{row['steps_per_second']:.1f} |")
    row = stage["instrumented"]
    lines.append(f"| instrumented run (log every {row['every']['log']}, checkpoints) | "
                 f"{stage['config']['device']} | {row['steps']} | {row['steps_per_second']:.1f} |")
    return lines


def _homogeneity_table(stage: dict) -> list[str]:
    curves = stage["curves"]
    lines = [f"Homogeneity, authors' protocol, {_seeds(stage['seeds'])}, float64: mean [min, max] "
             "of the pooled output cosine against c = 1000.", "",
             "| c | " + " | ".join(f"{c['arrangement']}, {c['mask']}" for c in curves) + " |",
             "| ---: |" + " --- |" * len(curves)]
    for i in (0, 4, 8, 19):
        cells = " | ".join(f"{c['cosine_mean'][i]:.3f} [{c['cosine_min'][i]:.3f}, "
                           f"{c['cosine_max'][i]:.3f}]" for c in curves)
        lines.append(f"| {curves[0]['c'][i]:.2f} | {cells} |")
    return lines


def _attention_table(stage: dict) -> list[str]:
    names = ATTENTION_CALLS
    lines = ["| B, H, T, d (causal) | " + " | ".join(names) + " |",
             "| --- |" + " ---: |" * len(names)]

    def cell(timing: dict | None) -> str:
        if timing is None:
            return "not run"
        kernel = f" ({', '.join(timing['kernel'])})" if "kernel" in timing else ""
        return f"{timing['ms']:.2f} ms{kernel}"

    for row in stage.get("timings", []):
        if "T" in row:
            cells = " | ".join(cell(row.get(n)) for n in names)
            lines.append(f"| {row['B']}, {row['H']}, {row['T']}, {row['d']} | {cells} |")
    check = stage["exact_check"]
    lines += ["", f"Exact ties ({check['inputs']}, shape {check['shape']}): tie sets "
              f"{'equal to' if check['tie_sets_equal'] else 'DIFFERENT from'} the NumPy "
              f"reference's ({check['queries_with_ties']} queries tie), outputs within "
              f"{check['max_abs_output_difference']:.1e}."]
    return lines


def _batched_table(stage: dict) -> list[str]:
    sys.path.insert(0, str(ROOT / "bench"))
    from batched_training import table

    return [f"Stacked training on {stage['device']} (load {stage['load_before'][0]:.1f}): "
            "models·steps per second, median of the rounds.", "", table(stage)]


TABLES = {"throughput": _throughput_table, "training": _training_table,
          "batched": _batched_table,
          "homogeneity": _homogeneity_table, "attention": _attention_table}


if __name__ == "__main__":
    sys.exit(main())
