"""tracr's compiled models beside satsim's saturated attention on the same weights.

For each program of tracr's library (frac_prevs, pair_balance, length, hist, sort_unique,
reverse; programs and vocabularies from scripts/tracr_fixtures.py) and each max_seq_len: the
fraction of sampled inputs where tracr's own compiled model equals ``rasp.evaluate``, the same for
satsim's saturated attention on tracr's weights (``satsim.interop.from_tracr``), and for satsim's
softmax at β = 1 against tracr's outputs; compile and run times. Each (program, max_seq_len)
compiles in its own process. Needs tracr-pypi and satsim in one environment:

    python3.11 -m venv .venv-tracr && .venv-tracr/bin/pip install -e . tracr-pypi
    nice -n 10 .venv-tracr/bin/python bench/tracr_exactness.py --max-seq-len 5 10 20 40 64

``--fixtures DIR`` instead reads fixtures written by scripts/tracr_fixtures.py (tracr's outputs
and compile times as recorded there; no tracr needed). mlp_exactness follows docs/notes_tracr.md:
10⁴ up to max_seq_len 64, 10⁵ up to 128, 10⁶ beyond (``--mlp-exactness`` fixes one value).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from _common import machine, write  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
PROGRAMS = ("frac_prevs", "pair_balance", "length", "hist", "sort_unique", "reverse")


def exactness_for(max_seq_len: int) -> int:
    """The mlp_exactness that keeps the selector-width MLP exact up to ``max_seq_len``."""
    return 10_000 if max_seq_len <= 64 else 100_000 if max_seq_len <= 128 else 1_000_000


def agrees(outputs: list, expected: list, atol: float) -> bool:
    """Labels equal the program's values as text; numbers within atol; a tie never agrees."""
    from satsim.model.readout import Tie

    return len(outputs) == len(expected) and all(
        abs(got - want) <= atol if isinstance(got, float) and want is not None  # rasp: 1 or True
        else not isinstance(got, Tie) and got == str(want)
        for got, want in zip(outputs, expected))


def tracr_agrees(outputs: list, expected: list) -> bool:
    """tracr's own outputs against rasp.evaluate (float32 numbers within 1e-5)."""
    return len(outputs) == len(expected) and all(
        a == b if not isinstance(a, float) or b is None else abs(a - b) <= 1e-5
        for a, b in zip(outputs, expected))


def satsim_columns(spec, cases: list) -> dict:
    """satsim's saturated accuracy against rasp, softmax(β=1) against tracr, and run seconds."""
    from satsim.engine.simulator import Simulator

    inputs = [case["tokens"] for case in cases]
    saturated = Simulator(spec)
    saturated.outputs(inputs[:1])  # compile or load the kernels before timing
    start = time.perf_counter()
    outputs = saturated.outputs(inputs)
    seconds = time.perf_counter() - start
    softmax = Simulator(spec, "softmax", beta=1.0).outputs(inputs)
    return {
        "satsim": sum(agrees(o, c["rasp"], 1e-9) for o, c in zip(outputs, cases)) / len(cases),
        "softmax_eq_tracr": (sum(agrees(o, c["tracr"], 1e-5) for o, c in zip(softmax, cases))
                             / len(cases)),
        "satsim_seconds": seconds,
    }


def one_compiled(program: str, max_seq_len: int, samples: int, mlp_exactness: int) -> dict:
    """Compile one program with tracr, run tracr and satsim on seeded samples (child process)."""
    import random

    sys.path.insert(0, str(ROOT / "scripts"))
    from tracr.compiler import compiling
    from tracr.rasp import rasp
    from tracr_fixtures import BOS, jsonable, sample_inputs
    from tracr_fixtures import PROGRAMS as MAKERS

    from satsim.interop.tracr import from_tracr

    sop, vocab = MAKERS[program](max_seq_len)
    start = time.perf_counter()
    assembled = compiling.compile_rasp_to_model(sop, vocab=set(vocab), max_seq_len=max_seq_len,
                                                compiler_bos=BOS, mlp_exactness=mlp_exactness)
    compile_seconds = time.perf_counter() - start
    rng = random.Random(f"{program}-{max_seq_len}")
    cases = []
    tracr_seconds = 0.0
    for tokens in sample_inputs(program, vocab, max_seq_len, samples, rng):
        start = time.perf_counter()
        decoded = assembled.apply([BOS, *tokens]).decoded[1:]
        tracr_seconds += time.perf_counter() - start
        cases.append({"tokens": [str(t) for t in tokens],
                      "rasp": [jsonable(v) for v in rasp.evaluate(sop, tokens)],
                      "tracr": [jsonable(v) for v in decoded]})
    spec = from_tracr(assembled, sop, name=f"{program}_n{max_seq_len}")
    tracr_right = sum(tracr_agrees(c["tracr"], c["rasp"]) for c in cases) / len(cases)
    return {"program": program, "max_seq_len": max_seq_len, "mlp_exactness": mlp_exactness,
            "inputs": len(cases), "tracr": tracr_right, "compile_seconds": compile_seconds,
            "tracr_seconds": tracr_seconds, "source": "compiled"} | satsim_columns(spec, cases)


def one_fixture(path: Path) -> dict:
    """satsim on a fixture's cases; tracr's accuracy and times as the fixture recorded them."""
    from satsim.interop.tracr import load_tracr_fixture

    spec, description = load_tracr_fixture(path)
    cases = description["cases"]
    tracr_right = sum(tracr_agrees(c["tracr"], c["rasp"]) for c in cases) / len(cases)
    return {"program": description["program"], "max_seq_len": description["max_seq_len"],
            "mlp_exactness": description["mlp_exactness"], "inputs": len(cases),
            "tracr": tracr_right, "compile_seconds": description["compile_seconds"],
            "tracr_seconds": description["tracr_apply_seconds"],
            "source": str(path)} | satsim_columns(spec, cases)


def child(args: list[str], timeout: float) -> dict:
    """Run one row in its own process; {"failed": why} when it fails or runs past ``timeout``."""
    try:
        done = subprocess.run([sys.executable, __file__, "--child", *args], capture_output=True,
                              text=True, timeout=timeout, env=dict(os.environ))
    except subprocess.TimeoutExpired:
        return {"failed": f"not done in {timeout:.0f} s"}
    if done.returncode != 0:
        print(done.stderr[-2000:], file=sys.stderr)
        return {"failed": "error: " + (done.stderr.strip().splitlines() or ["?"])[-1][:80]}
    return json.loads(done.stdout.strip().splitlines()[-1])


def table(rows: list[dict]) -> str:
    """The rows as a markdown table."""
    lines = ["| program | max_seq_len | mlp_exactness | inputs | tracr = rasp | satsim = rasp "
             "| satsim softmax β=1 = tracr | compile s | tracr run s | satsim run s |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        if r.get("failed"):
            lines.append(f"| {r['program']} | {r['max_seq_len']} | | | {r['failed']} | | | | | |")
            continue
        lines.append(f"| {r['program']} | {r['max_seq_len']} | {r['mlp_exactness']:,} | "
                     f"{r['inputs']} | {r['tracr']:.2f} | {r['satsim']:.2f} | "
                     f"{r['softmax_eq_tracr']:.2f} | {r['compile_seconds']:.1f} | "
                     f"{r['tracr_seconds']:.1f} | {r['satsim_seconds']:.3f} |")
    return "\n".join(lines)


def main() -> None:
    """Run every row (each in its own process), print the table, write results/."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--programs", nargs="+", choices=PROGRAMS, default=list(PROGRAMS))
    parser.add_argument("--max-seq-len", type=int, nargs="+", default=[5, 10, 20, 40, 64])
    parser.add_argument("--samples", type=int, default=20)
    parser.add_argument("--mlp-exactness", type=int, default=None)
    parser.add_argument("--timeout", type=float, default=900, help="Seconds per row.")
    parser.add_argument("--fixtures", type=Path, help="Read fixtures from this folder instead.")
    parser.add_argument("--name", default="tracr_exactness", help="results/<name>.json")
    parser.add_argument("--child", nargs="+", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        if args.child[0] == "fixture":
            row = one_fixture(Path(args.child[1]))
        else:
            program, n, samples, exactness = args.child
            row = one_compiled(program, int(n), int(samples), int(exactness))
        print(json.dumps(row))
        return
    rows = []
    if args.fixtures:
        jobs = [(["fixture", str(p)], p.stem.rsplit("_n", 1)[0], int(p.stem.rsplit("_n", 1)[1]))
                for p in sorted(args.fixtures.glob("*.json"))]
    else:
        jobs = [([program, str(n), str(args.samples),
                  str(args.mlp_exactness or exactness_for(n))], program, n)
                for n in args.max_seq_len for program in args.programs]
    for job, program, n in jobs:
        row = {"program": program, "max_seq_len": n} | child(job, args.timeout)
        row["load_average_1min"] = os.getloadavg()[0]
        rows.append(row)
        print(json.dumps(row), flush=True)
    print(table(rows))
    path = write(args.name, {"machine": machine(), "rows": rows})
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
