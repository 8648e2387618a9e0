"""satsim's compiled C-RASP programs beside tracr's compiled RASP programs, at n = 256 and 4096.

Three decisions both languages express, read at the last position:

- count: at least 3 a (C-RASP ``count(Q("a")) >= 3``; tracr ``make_count(tokens, "a") >= 3``);
- frac_prevs: more than half of the prefix is a (C-RASP ``2 * count(Q("a")) > count(True)``;
  tracr ``make_frac_prevs(tokens == "a") > 0.5``);
- pair_balance: as many ( as ) (C-RASP ``count(Q("(")) == count(Q(")"))``; tracr
  ``make_pair_balance(tokens, "(", ")") == 0``).

Inputs sit on the decision boundary (half just inside, half just outside, positions random).
satsim compiles each program once, for every length; tracr compiles per max_seq_len, in its own
process (``--timeout`` seconds), with mlp_exactness 10⁶ at 256 and 10⁸ at 4096. "right" counts
the inputs whose last-position decision equals the program's meaning.

    nice -n 10 python bench/rasp_vs_tracr.py --lengths 256 4096
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from _common import machine, write  # noqa: E402

CRASP = {
    "count": ('alphabet = "ab"\naccept = count(Q("a")) >= 3\n', lambda s: s.count("a") >= 3),
    "frac_prevs": ('alphabet = "ab"\naccept = 2 * count(Q("a")) > count(True)\n',
                   lambda s: 2 * s.count("a") > len(s)),
    "pair_balance": ('alphabet = "()"\naccept = count(Q("(")) == count(Q(")"))\n',
                     lambda s: s.count("(") == s.count(")")),
}


def boundary_inputs(program: str, n: int, count: int, seed: int) -> list[str]:
    """``count`` strings of n symbols, alternately just inside and just outside the language."""
    rng = random.Random(f"{program}-{n}-{seed}")
    out = []
    for index in range(count):
        inside = index % 2 == 0
        if program == "count":
            marked, symbol, other = (3 if inside else 2), "a", "b"
        elif program == "frac_prevs":
            marked, symbol, other = n // 2 + (1 if inside else 0), "a", "b"
        else:
            marked, symbol, other = n // 2 + (0 if inside else 1), "(", ")"
        places = set(rng.sample(range(n), marked))
        out.append("".join(symbol if i in places else other for i in range(n)))
    return out


def tracr_program(program: str):
    """The tracr RASP program and its vocabulary."""
    from tracr.compiler import lib
    from tracr.rasp import rasp

    if program == "count":
        count = lib.make_count(rasp.tokens, "a")
        return rasp.categorical(rasp.Map(lambda x: x >= 3, count)), {"a", "b"}
    if program == "frac_prevs":
        frac = lib.make_frac_prevs(rasp.tokens == "a")
        return rasp.categorical(rasp.Map(lambda x: x > 0.5, frac)), {"a", "b"}
    balance = lib.make_pair_balance(rasp.tokens, "(", ")")
    return rasp.categorical(rasp.Map(lambda x: x == 0, balance)), {"(", ")"}


def tracr_row(program: str, n: int, inputs: list[str]) -> dict:
    """Compile with tracr at max_seq_len n and run the inputs (in a child process)."""
    from tracr.compiler import compiling

    sop, vocab = tracr_program(program)
    exactness = 10**6 if n <= 256 else 10**8
    start = time.perf_counter()
    assembled = compiling.compile_rasp_to_model(sop, vocab=vocab, max_seq_len=n,
                                                compiler_bos="BOS", mlp_exactness=exactness)
    compiled = time.perf_counter() - start
    meaning = CRASP[program][1]
    start = time.perf_counter()
    right = sum(assembled.apply(["BOS", *s]).decoded[-1] == meaning(s) for s in inputs)
    config = assembled.model_config
    heads = _tracr_heads(assembled)
    return {"layers": config.num_layers, "heads": heads, "d_model": _tracr_width(assembled),
            "mlp_exactness": exactness, "compile_seconds": round(compiled, 1),
            "run_seconds": round(time.perf_counter() - start, 1), "right": right,
            "inputs": len(inputs)}


def _tracr_heads(assembled) -> int:
    """Attention heads with nonzero weights in tracr's model."""
    import numpy as np

    total = 0
    for name, params in assembled.params.items():
        if name.endswith("attn/query"):
            w = np.asarray(params["w"])
            per_head = w.reshape(w.shape[0], assembled.model_config.num_heads, -1)
            total += int(np.any(per_head != 0, axis=(0, 2)).sum())
    return total


def _tracr_width(assembled) -> int:
    """The residual width of tracr's model."""
    return len(assembled.residual_labels)


def satsim_row(program: str, n: int, inputs: list[str]) -> dict:
    """Compile the C-RASP program and run the inputs in the saturated simulator."""
    from satsim import Simulator
    from satsim.rasp import compile_program, interpreter, parse_program

    text, meaning = CRASP[program]
    parsed = parse_program(text, "crasp", program)
    spec = compile_program(parsed, program)
    simulator = Simulator(spec)
    simulator.accepts(inputs[:1])  # kernels loaded before timing
    start = time.perf_counter()
    decisions = simulator.accepts(inputs)
    seconds = time.perf_counter() - start
    meant = interpreter(parsed)
    assert all(meant(s) == meaning(s) for s in inputs)
    heads = sum(b.attn.n_heads for b in spec.blocks if b.attn is not None)
    return {"layers": spec.n_layers, "heads": heads, "d_model": spec.d_model,
            "max_tokens": spec.max_tokens, "run_seconds": round(seconds, 3),
            "right": int(sum(d == meaning(s) for d, s in zip(decisions, inputs))),
            "inputs": len(inputs)}


def child(program: str, n: int, inputs: list[str], timeout: float) -> dict:
    """tracr's row in its own process (JAX threads and forks do not mix); failures noted."""
    payload = json.dumps({"program": program, "n": n, "inputs": inputs})
    try:
        done = subprocess.run([sys.executable, __file__, "--child"], input=payload,
                              capture_output=True, text=True, timeout=timeout,
                              env=dict(os.environ))
    except subprocess.TimeoutExpired:
        return {"failed": f"not compiled in {timeout:.0f} s"}
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["no message"])[-1][:100]
        return {"failed": f"exit code {done.returncode}: {last}"}
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    """Every (program, length): satsim here, tracr in a child; print and write the rows."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--programs", nargs="+", choices=sorted(CRASP), default=sorted(CRASP))
    parser.add_argument("--lengths", type=int, nargs="+", default=[256, 4096])
    parser.add_argument("--inputs", type=int, default=6)
    parser.add_argument("--timeout", type=float, default=1200)
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        job = json.loads(sys.stdin.read())
        print(json.dumps(tracr_row(job["program"], job["n"], job["inputs"])))
        return
    rows = []
    for program in args.programs:
        for n in args.lengths:
            inputs = boundary_inputs(program, n, args.inputs, seed=0)
            row = {"program": program, "n": n, "satsim": satsim_row(program, n, inputs),
                   "tracr": child(program, n, inputs, args.timeout),
                   "load_average_1min": os.getloadavg()[0]}
            rows.append(row)
            print(json.dumps(row), flush=True)
    path = write("rasp_vs_tracr", {"machine": machine(), "rows": rows})
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
