"""One long string through trained and random 2-layer models, against the matrix-product bound.

Run: python bench/long_strings.py [--threads 2] [--lengths 10000,20000,100000]
[--baseline DIR]. Models (Dyck-1 next-symbol, d_model 16, 2 heads of 8, pre-LN): trained by
``satsim train`` without positions and with learned positions (cached in bench/models/), and the
untrained initialisation of the same shape. The learned table has 256 rows; rows past them are
drawn as the initialisation draws them (N(0, 1/d), seed 1), so that a string of 10⁵ symbols has
a position each. One Dyck-1 string per length (seed 1).

For each length and model: the bound, the time of the causal score products of all 4 heads as
float32 matrix products with the heads' inner dimension 8 (256-query tiles; one head timed, the
faster of a run with one BLAS thread and one with ``--threads``), measured just before; then the
model's
``Simulator.logits`` on the string (wall time after a warm-up on a short string, the best of
3 runs, or of fewer where one takes over 5 s), this checkout and, with ``--baseline DIR`` (a
checkout of the code to compare with), that code, interleaved, each in its own process with
its thread counts set. The logits of the two must be equal bit for bit. Writes
bench/results/long_strings.json.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).parent
MODELS = HERE / "models"
TRAINED = {"trained-nopos": "none", "trained-learned": "learned"}
HEADS, D_HEAD = 4, 8  # the models' heads over both layers, and their inner dimension


def dyck1_string(length: int) -> str:
    """A Dyck-1 string of ``length`` symbols (even), a random walk kept at depth >= 0 (seed 1)."""
    import numpy as np

    rng = np.random.default_rng(1)
    out, depth = [], 0
    for i in range(length):
        left = length - i
        if depth == 0 or (depth < left - 1 and rng.random() < 0.5):
            out.append("(")
            depth += 1
        else:
            out.append(")")
            depth -= 1
    return "".join(out)


def load_model(name: str, longest: int):
    """The spec of a model: trained (from bench/models), or the untrained initialisation."""
    import numpy as np

    from satsim.model.io import load_spec
    from satsim.model.spec import PositionalSpec
    from satsim.training.config import TrainConfig
    from satsim.training.init import initial_spec

    if name == "random":
        return initial_spec(TrainConfig(seed=0), ("(", ")"))
    spec = load_spec(str(MODELS / f"dyck1-{TRAINED[name]}.safetensors"))
    table = spec.positional.W_pos
    if table is not None and table.shape[0] < longest:
        rng = np.random.default_rng(1)
        extra = rng.standard_normal((longest - table.shape[0], table.shape[1])) / np.sqrt(
            spec.d_model)
        table = np.concatenate([table, extra.astype(table.dtype)])
        spec = dataclasses.replace(spec, positional=PositionalSpec("learned", W_pos=table))
    return spec


def train_models() -> None:
    """Train the two models with ``satsim train`` (300 steps each) if bench/models lacks them."""
    MODELS.mkdir(exist_ok=True)
    for positional in TRAINED.values():
        target = MODELS / f"dyck1-{positional}.safetensors"
        if target.exists():
            continue
        with tempfile.TemporaryDirectory() as run:
            subprocess.run([sys.executable, "-m", "satsim", "train", "--steps", "300",
                            "--positional", positional, "--checkpoint-every", "300",
                            "--log-every", "100",
                            "--out", run], check=True, stdout=subprocess.DEVNULL)
            target.write_bytes((Path(run) / "final.safetensors").read_bytes())


def bound(length: int, d_head: int, heads: int) -> float:
    """Seconds of the causal float32 score products q·kᵀ of ``heads`` heads (256-query tiles)."""
    import numpy as np

    rng = np.random.default_rng(0)
    q = rng.standard_normal((length, d_head)).astype(np.float32)
    k = rng.standard_normal((length, d_head)).astype(np.float32)
    buffer = np.empty(256 * length, dtype=np.float32)
    start = time.perf_counter()
    for first in range(0, length, 256):
        stop = min(first + 256, length)
        out = buffer[: (stop - first) * stop].reshape(stop - first, stop)
        np.matmul(q[first:stop], k[:stop].T, out=out)
    return (time.perf_counter() - start) * heads


def worker(args: argparse.Namespace) -> None:
    """Time one model on one string; write its logits to args.out; print a JSON line."""
    import numpy as np

    if args.model == "bound":
        print(json.dumps({"seconds": bound(args.length, D_HEAD, HEADS)}))
        return
    from satsim import Simulator

    spec = load_model(args.model, args.length + 2)
    simulator = Simulator(spec)
    warm_up = [dyck1_string(600)]  # compile and load the kernels of both paths
    simulator.logits(warm_up)
    Simulator(spec, fused=False).logits(warm_up)
    string = dyck1_string(args.length)
    runs = []
    while len(runs) < 3 and (not runs or runs[-1][0] < 5.0):  # best of 3 runs under 5 s
        start, cpu = time.perf_counter(), time.process_time()
        logits = simulator.logits([string])[0]
        runs.append((time.perf_counter() - start, time.process_time() - cpu))
    np.save(args.out, logits)
    seconds, cpu = min(runs)
    print(json.dumps({"seconds": seconds, "cpu": cpu, "runs": len(runs)}))


def child(code: str, model: str, length: int, threads: int, out: str) -> dict:
    """Run the worker for (model, length) with ``code`` first on the path; return its JSON."""
    env = dict(os.environ, NUMBA_NUM_THREADS=str(threads), OMP_NUM_THREADS="1",
               OPENBLAS_NUM_THREADS=str(threads), MKL_NUM_THREADS=str(threads),
               PYTHONPATH=code)
    done = subprocess.run([sys.executable, __file__, "--worker", "--model", model, "--length",
                           str(length), "--out", out], env=env, check=True, capture_output=True,
                          text=True, cwd=code)
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--lengths", default="10000,20000,100000")
    parser.add_argument("--models", default="trained-nopos,trained-learned,random")
    parser.add_argument("--baseline", help="checkout of the code to compare with")
    parser.add_argument("--baseline-up-to", type=int, default=None,
                        help="run the baseline only on strings up to this length")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--model", help=argparse.SUPPRESS)
    parser.add_argument("--length", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--out", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        worker(args)
        return
    sys.path.insert(0, str(HERE))
    import numpy as np
    from _common import machine, write

    train_models()
    here = str(HERE.parent.resolve())
    codes = {"new": here}
    if args.baseline:
        codes["baseline"] = str(Path(args.baseline).resolve())
    rows = []
    print(f"{'model':<16} {'length':>7} {'bound s':>8} {'GFLOP/s':>7} " + " ".join(
        f"{name + ' s':>11} {'×bound':>7}" for name in codes) + "  equal  load")
    with tempfile.TemporaryDirectory() as scratch:
        for length in [int(x) for x in args.lengths.split(",")]:
            for model in args.models.split(","):
                # The bound beside each model's runs: the load changes by the minute here.
                limit = min(child(here, "bound", length, threads, "-")["seconds"]
                            for threads in {1, args.threads})
                row = {"model": model, "length": length, "bound_seconds": limit,
                       "bound_gflops": HEADS * 2 * D_HEAD * length * (length + 1) / 2 / limit / 1e9,
                       "load_before": os.getloadavg()[0]}
                compared = args.baseline and length <= (args.baseline_up_to or length)
                for name, code in codes.items():
                    out = os.path.join(scratch, f"{name}.npy")
                    if name == "new" or compared:
                        row[name] = child(code, model, length, args.threads, out)
                if compared:
                    new, base = (np.load(os.path.join(scratch, f"{n}.npy")) for n in codes)
                    row["bit_equal"] = bool(new.dtype == base.dtype and new.shape == base.shape
                                            and new.tobytes() == base.tobytes())
                row["load_after"] = os.getloadavg()[0]
                rows.append(row)
                cells = " ".join(f"{row[n]['seconds']:>11.2f} {row[n]['seconds'] / limit:>7.2f}"
                                 if n in row else f"{'-':>11} {'-':>7}" for n in codes)
                print(f"{model:<16} {length:>7} {limit:>8.2f} {row['bound_gflops']:>7.1f} {cells}  "
                      f"{str(row.get('bit_equal', '-')):>5}  {row['load_after']:.2f}", flush=True)
    write("long_strings", {"machine": machine(), "threads": args.threads, "rows": rows})


if __name__ == "__main__":
    main()
