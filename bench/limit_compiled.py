"""limit_signs on compiled programs: the exact limit of every string, beside the model's run.

A compiled B-RASP or C-RASP model (examples/) needs the exact expansion on every string: its
ties are broken by lower-order score terms (leftmost / rightmost, the counting heads' BOS
share). Per program and length, random strings over the program's alphabet are timed through
``Simulator(spec).logits`` (the saturated run) and ``limit_signs(spec, strings)``, alternating,
CPU seconds, median of ``--repeats`` after one untimed call, one thread. With ``--baseline
DIR`` each (program, length) runs in two processes, one importing satsim from this checkout
and one from DIR, one after the other. Strings of ``--slow-cap`` symbols or more are left out
for the baseline where its limit took over ``--slow-seconds`` on a shorter length (it is
quadratic there). Writes bench/results/limit_compiled.json.

    python bench/limit_compiled.py [--baseline DIR] [--lengths 300 3000 10000 100000]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from _common import machine, run_in_checkout, write  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
PROGRAMS = ["a_before_b.brasp", "tomita4.brasp", "a_then_b.brasp", "first.brasp",
            "dyck1.crasp", "majority.crasp", "anbn.crasp"]


def child(program: str, length: int, strings: int, repeats: int) -> dict:
    """Compile one program and time its run and its limit on random strings (in a child)."""
    from satsim.engine.simulator import Simulator
    from satsim.rasp import compile_program, read_program
    from satsim.saturation import limit_signs

    spec = compile_program(read_program(str(ROOT / "examples" / program)))
    alphabet = [token for token in spec.vocab if not token.startswith("<")]
    rng = random.Random(length)
    texts = ["".join(rng.choice(alphabet) for _ in range(length)) for _ in range(strings)]
    simulator = Simulator(spec)
    runs = {"run": lambda: simulator.logits(texts), "limit": lambda: limit_signs(spec, texts)}
    result = limit_signs(spec, texts)
    times: dict[str, list[float]] = {name: [] for name in runs}
    runs["run"]()
    for _ in range(repeats):
        for name, fn in runs.items():
            start = time.process_time()
            fn()
            times[name].append(time.process_time() - start)
    row = {name: statistics.median(values) for name, values in times.items()}
    row |= {"exact_strings": int(result.exact.sum()),
            "undetermined_strings": int(result.undetermined.sum()),
            "signs": [[None if v != v else int(v) for v in signs.ravel()[-1:]]
                      for signs in result.signs]}
    return row


def main() -> None:
    """Every program at every length, this checkout and the baseline in turn; print, write."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", help="checkout of the code to compare with")
    parser.add_argument("--lengths", type=int, nargs="+", default=[300, 3000, 10_000, 100_000])
    parser.add_argument("--strings", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--programs", nargs="+", default=PROGRAMS)
    parser.add_argument("--slow-seconds", type=float, default=5.0)
    parser.add_argument("--slow-cap", type=int, default=10_000)
    parser.add_argument("--child", nargs=4, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        program, length, strings, repeats = args.child
        print(json.dumps(child(program, int(length), int(strings), int(repeats))))
        return
    codes = {"new": str(ROOT)}
    if args.baseline:
        codes["baseline"] = str(Path(args.baseline).resolve())
    rows = []
    for program in args.programs:
        slow = set()
        for length in args.lengths:
            for code, path in codes.items():
                if code in slow and length >= args.slow_cap:
                    continue
                row = {"program": program, "length": length, "code": code,
                       "load_average_1min": os.getloadavg()[0]}
                row |= run_in_checkout(__file__, path, ["--child", program, str(length),
                                                        str(args.strings), str(args.repeats)], 1)
                if row.get("limit", 0.0) > args.slow_seconds:
                    slow.add(code)
                rows.append(row)
                print(json.dumps({k: v for k, v in row.items() if k != "signs"}), flush=True)
    path = write("limit_compiled", {"machine": machine(), "threads": 1,
                                     "strings_per_length": args.strings, "rows": rows})
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
