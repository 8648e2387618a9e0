"""Verify every hand-built construction at the acceptance sizes of the constructions issue.

Run: python bench/verify_constructions.py [--names a,b] [--quick]. For each construction and task:
every string up to a length that depends on the alphabet size; 10^4 random positives and hard
negatives up to length 10^4 (next-symbol: 10^3 up to 10^3); and strings of about 10^5 symbols.
The exact uniform samplers are used where they are fast at these lengths. For shuffle-Dyck and
reset-Dyck-1 the positives are built instead: merged Dyck words, or Dyck prefixes joined by
resets. Their negatives are random single edits that the oracle rejects. Results go to
bench/results/verify_constructions.json.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from _samplers import edited_negatives, joined_reset_segments, merged_shuffle_words

import languages
from satsim import Simulator, constructions
from satsim.analysis.verification import check_strings, exhaustive

EXHAUSTIVE = {"recognition": {2: 14, 3: 12, 4: 12, 6: 8}, "next-symbol": {2: 12, 3: 10, 4: 8, 6: 6}}
BUILT = {"shuffle-dyck2", "shuffle-dyck3", "reset-dyck1"}


def positives(name: str, n: int, min_len: int, max_len: int, seed: int) -> list[str]:
    """Random members: exact uniform samples, or built ones for the slow samplers."""
    if name == "reset-dyck1":
        return joined_reset_segments(n, min_len, max_len, seed)
    if name.startswith("shuffle-dyck"):
        return merged_shuffle_words(int(name[-1]), n, min_len, max_len, seed)
    return languages.get(name).sample_positive(n, min_len, max_len, seed=seed)


def negatives(name: str, members: list[str], n: int, min_len: int, max_len: int,
              seed: int) -> list[str]:
    """Hard negatives: the language's labelled generators, or oracle-checked edits."""
    language = languages.get(name)
    if name in BUILT:
        return edited_negatives(language, members, seed)[:n]
    return language.sample_negative(n, min_len, max_len, seed=seed)


def verify(name: str, task: str, quick: bool) -> list[dict]:
    """Run the three checks for one construction and task."""
    language = languages.get(name)
    simulator = Simulator(constructions.build(name, task=task))
    limit = EXHAUSTIVE[task][len(language.alphabet)] - (4 if quick else 0)
    n, max_len = (10_000, 10_000) if task == "recognition" else (1_000, 1_000)
    if quick:
        n, max_len = n // 10, max_len // 10
    rows = []
    start = time.perf_counter()
    rows.append(exhaustive(simulator, language, limit))
    members = positives(name, n // 2, 0, max_len, seed=1)
    others = negatives(name, members, n - len(members), 1, max_len, seed=2)
    rows.append(check_strings(simulator, language, members + others,
                              f"{len(members)}+{len(others)} random ≤ {max_len}"))
    if task == "recognition":
        long_members = positives(name, 2, 99_500, 100_000, seed=3)
        long_others = negatives(name, long_members, 2, 99_000, 100_001, seed=4)
        rows.append(check_strings(simulator, language, long_members + long_others,
                                  f"{len(long_members) + len(long_others)} of length ~10^5"))
    seconds = time.perf_counter() - start
    out = []
    for check in rows:
        out.append({"construction": name, "task": task, "check": check.name,
                    "strings": check.strings, "wrong": check.wrong,
                    "examples": list(check.examples)})
        mark = "ok" if check.wrong == 0 else f"{check.wrong} WRONG"
        print(f"{name:<14} {task:<12} {check.name:<32} {check.strings:>10,}  {mark}", flush=True)
    print(f"{'':<14} {'':<12} ({seconds:.0f} s)", flush=True)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--names", default=",".join(constructions.names()))
    parser.add_argument("--tasks", default="recognition,next-symbol")
    parser.add_argument("--quick", action="store_true", help="smaller sizes, for a smoke test")
    args = parser.parse_args()
    results = []
    out = Path(__file__).parent / "results" / "verify_constructions.json"
    for name in args.names.split(","):
        for task in args.tasks.split(","):
            results.extend(verify(name, task, args.quick))
            if not args.quick:  # written after every construction, so a long run keeps its part
                out.write_text(json.dumps(results, indent=1))
    bad = [r for r in results if r["wrong"]]
    print("all exact" if not bad else f"{len(bad)} checks with wrong answers")


if __name__ == "__main__":
    main()
