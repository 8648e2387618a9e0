"""limit_signs against the float64 soft twin at c = 10⁴, 10⁵, 10⁶, and its cost beside the plain
leading-order run (issue: "The saturated limit must be right on every model").

Part 1, correctness: random specs (d_model 16, 2 layers, 2 heads of 8, d_mlp 2 or 4, post-LN or
no LayerNorm, biases on or off, learned positions) and the same specs with W_Q = 0, b_Q ≠ 0 in
block 1. Wherever the soft twin's readout signs agree at all three scales, limit_signs and
exact_limit(...).logit_signs() must agree with them; the script counts disagreements (must be
0) and undetermined strings (at most 5 %).

Part 2, cost: on strings that need no fallback, limit_signs beside
Simulator(limit(spec)).logits, timed interleaved.

    python bench/limit_signs.py [--seeds 6] [--strings 40]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from itertools import product
from pathlib import Path

os.environ.setdefault("NUMBA_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "support"))

import numpy as np  # noqa: E402
from _common import machine, write  # noqa: E402
from helpers import random_spec, zero_query  # noqa: E402

from satsim.engine.simulator import Simulator  # noqa: E402
from satsim.saturation import exact_limit, limit, limit_signs  # noqa: E402
from satsim.soft import SoftTransformer  # noqa: E402
from satsim.torch_setup import import_torch  # noqa: E402

SCALES = (1e4, 1e5, 1e6)


def soft_signs(spec, strings):
    """Readout signs of the float64 soft twin at each scale, (scales, strings, ...)."""
    soft = SoftTransformer.from_spec(spec, device="cpu", dtype="float64")
    out = []
    for c in SCALES:
        run = soft.scaled(c).run(strings)
        rows = [np.sign(run.logits_of(i)) for i in range(len(strings))]
        out.append([r[-1] if spec.output.readout == "last" else r for r in rows])
    return out


def correctness(seeds: int, n: int) -> dict:
    rng = np.random.default_rng(0)
    rows = []
    for d_mlp, norm, biases, variant, seed in product((2, 4), ("post", "none"), (True, False),
                                                      ("random", "W_Q=0,b_Q≠0"), range(seeds)):
        spec = random_spec(seed, d_model=16, n_heads=2, d_head=8, d_mlp=d_mlp, norm=norm,
                           biases=biases, positional="learned")
        if variant != "random":
            spec = zero_query(spec, 1)
        strings = ["".join(rng.choice(["a", "b"], int(rng.integers(1, 17)))) for _ in range(n)]
        soft = soft_signs(spec, strings)
        fast = limit_signs(spec, strings)
        settled = wrong_fast = wrong_exact = undetermined = 0
        for i, string in enumerate(strings):
            if not all(np.array_equal(soft[0][i], s[i]) for s in soft[1:]):
                continue
            settled += 1
            exact = exact_limit(spec, string).logit_signs()
            exact = exact[-1] if spec.output.readout == "last" else exact
            if np.isnan(fast.signs[i]).any():
                undetermined += 1
            elif not np.array_equal(fast.signs[i], soft[0][i]):
                wrong_fast += 1
            if not np.isnan(exact).any() and not np.array_equal(exact, soft[0][i]):
                wrong_exact += 1
        rows.append({"d_mlp": d_mlp, "norm": norm, "biases": biases, "variant": variant,
                     "seed": seed, "strings": n, "settled": settled,
                     "exact_path": int(fast.exact.sum()), "undetermined": undetermined,
                     "wrong_limit_signs": wrong_fast, "wrong_exact_limit": wrong_exact})
        print(rows[-1], flush=True)
    return {"rows": rows,
            "settled": sum(r["settled"] for r in rows),
            "wrong_limit_signs": sum(r["wrong_limit_signs"] for r in rows),
            "wrong_exact_limit": sum(r["wrong_exact_limit"] for r in rows),
            "undetermined": sum(r["undetermined"] for r in rows),
            "exact_path": sum(r["exact_path"] for r in rows)}


def cost(repeats: int = 5) -> dict:
    rng = np.random.default_rng(1)
    out = []
    for norm in ("pre", "post"):
        spec = random_spec(0, d_model=16, n_heads=2, d_head=8, d_mlp=32, norm=norm,
                           positional="learned", n_ctx=512)
        strings = ["".join(rng.choice(["a", "b"], int(rng.integers(1, 257)))) for _ in range(400)]
        plain = [s for s, e in zip(strings, limit_signs(spec, strings).exact) if not e]
        runs = {"plain": Simulator(limit(spec)).logits,
                "plain_layer_by_layer": Simulator(limit(spec), fused=False).logits,
                "limit_signs": lambda strings, spec=spec: limit_signs(spec, strings)}
        for fn in runs.values():
            fn(plain[:2])
        times = {name: [] for name in runs}
        for _ in range(repeats):  # interleaved
            for name, fn in runs.items():
                start = time.perf_counter()
                fn(plain)
                times[name].append(time.perf_counter() - start)
        med = {k: float(np.median(v)) for k, v in times.items()}
        out.append({"norm": norm, "strings": len(plain), "tokens": sum(map(len, plain)),
                    **{f"{k}_s": v for k, v in med.items()},
                    "ratio_to_fused": med["limit_signs"] / med["plain"],
                    "ratio_to_layer_by_layer": med["limit_signs"] / med["plain_layer_by_layer"],
                    "load": os.getloadavg()[0]})
        print(out[-1], flush=True)
    return {"rows": out}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=6)
    parser.add_argument("--strings", type=int, default=40)
    parser.add_argument("--cost-only", action="store_true", help="Skip the correctness part.")
    args = parser.parse_args()
    import_torch(threads=1)
    if args.cost_only:  # re-time the cost part; keep the correctness part already written
        path = Path(__file__).parent / "results" / "limit_signs.json"
        result = json.loads(path.read_text()) if path.exists() else {}
        result.update({"machine": machine(), "cost": cost(), "load_after": os.getloadavg()[0]})
        write("limit_signs", result)
        return
    result = {"machine": machine(), "correctness": correctness(args.seeds, args.strings),
              "cost": cost(), "load_after": os.getloadavg()[0]}
    c = result["correctness"]
    print(f"settled strings {c['settled']}: limit_signs wrong {c['wrong_limit_signs']}, "
          f"exact_limit wrong {c['wrong_exact_limit']}, undetermined {c['undetermined']} "
          f"({100 * c['undetermined'] / max(c['settled'], 1):.2f} %), "
          f"exact path {c['exact_path']}")
    write("limit_signs", result)


if __name__ == "__main__":
    main()
