"""`satsim decide --regex-file --compile` on random regular expressions over three symbols.

Draws ``--count`` random expressions over a, b, c (seeded): a random binary tree of 2 to
``--max-leaves`` symbols, each inner node a concatenation or a union (written ``+``), a star on
any subexpression with probability ``--star``. Writes them to bench/results/regex_batch.txt,
then times the command (as a user runs it, with ``--jobs`` workers: every expression decided, every
star-free one compiled and checked against Python re on all 9,841 strings of length 0-8) and
writes bench/results/regex_batch.json with the counts, the wall time, the CPU time of the
command and its workers, the slowest expressions and `uptime` before and after (other jobs
share the machine).

    python bench/regex_batch.py [--count 1000] [--max-leaves 12] [--star 0.3] [--seed 0] [--jobs 1]
"""

from __future__ import annotations

import argparse
import json
import random
import resource
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from _common import RESULTS, machine, write  # noqa: E402


def random_expression(rng: random.Random, leaves: int, star: float) -> tuple[str, str]:
    """A random expression of ``leaves`` symbols and its top operator ('+', '.' or '')."""
    if leaves == 1:
        text, top = rng.choice("abc"), ""
    else:
        left = rng.randint(1, leaves - 1)
        (a, top_a), (b, top_b) = (random_expression(rng, left, star),
                                  random_expression(rng, leaves - left, star))
        if rng.random() < 0.5:
            text, top = f"{a}+{b}", "+"
        else:
            text = (f"({a})" if top_a == "+" else a) + (f"({b})" if top_b == "+" else b)
            top = "."
    if rng.random() < star:
        return (f"({text})*" if top else f"{text}*"), ""
    return text, top


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=1000)
    parser.add_argument("--max-leaves", type=int, default=12)
    parser.add_argument("--star", type=float, default=0.3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--jobs", type=int, default=1)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    expressions = [random_expression(rng, rng.randint(2, args.max_leaves), args.star)[0]
                   for _ in range(args.count)]
    RESULTS.mkdir(exist_ok=True)
    listing = RESULTS / "regex_batch.txt"
    listing.write_text(f"# bench/regex_batch.py --count {args.count} --max-leaves "
                       f"{args.max_leaves} --star {args.star} --seed {args.seed}\n"
                       + "\n".join(expressions) + "\n")
    before = subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "satsim", "decide", "--regex-file",
                           str(listing), "--alphabet", "abc", "--compile", "--max-len", "8",
                           "--json", "--jobs", str(args.jobs)],
                          capture_output=True, text=True, check=True)
    wall = time.perf_counter() - started
    used = resource.getrusage(resource.RUSAGE_CHILDREN)  # the command and its workers
    after = subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()
    rows = [json.loads(line) for line in done.stdout.splitlines()]
    star_free = [r for r in rows if r.get("star_free")]
    checked = [r for r in star_free if r.get("check", {}).get("strings") == 9841]
    summary = {
        "expressions": len(rows), "star_free": len(star_free),
        "not_star_free": sum(r.get("star_free") is False for r in rows),
        "refused": [{"expression": r["expression"], "refused": r["refused"]} for r in rows
                    if "refused" in r],
        "star_free_compiled_and_checked_to_length_8": len(checked),
        "wrong": sum(r["check"]["wrong"] > 0 for r in checked),
        "wall_seconds": round(wall, 1), "jobs": args.jobs,
        "cpu_seconds": round(used.ru_utime + used.ru_stime, 1),
        "largest_model": max((r["model"] for r in star_free if "model" in r),
                             key=lambda m: m["d_model"], default=None),
        "slowest": sorted(({"expression": r["expression"], "seconds": r["seconds"]}
                           for r in rows), key=lambda r: -r["seconds"])[:5],
        "uptime_before": before, "uptime_after": after}
    print(json.dumps({k: v for k, v in summary.items() if k != "slowest"}, indent=1))
    write("regex_batch", {"machine": machine(), "args": vars(args), **summary, "rows": rows})


if __name__ == "__main__":
    main()
