"""Compare two FLaRe benchmark folders whose models are paired by seed (satsim.benchmarks.compare).

Run: `python scripts/flare_compare.py FIRST SECOND [--names standard,beta] [--json OUT.json]`.
FIRST and SECOND are `satsim benchmark flare --out` folders made with the same languages,
trials, base seed and evaluation (e.g. without and with `--set attention_beta=100`). Prints the
markdown table of satsim.benchmarks.compare.comparison_table; `--json` writes the numbers.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from satsim.benchmarks.compare import compare_rows, comparison_table


def read_folder(folder: Path) -> tuple[dict, list[dict]]:
    """A finished benchmark folder's manifest and model rows."""
    manifest = json.loads((folder / "benchmark.json").read_text())
    rows = [json.loads(line) for line in (folder / "models.jsonl").read_text().splitlines()
            if line.strip()]
    return manifest, rows


def fail(message: str) -> None:
    """End with one ``error:`` line on stderr and exit status 2 (bad input)."""
    print(f"error: {message}", file=sys.stderr)
    sys.exit(2)


def main() -> None:
    """Read both folders, refuse unpaired ones, print (and write) the comparison."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("first", type=Path)
    parser.add_argument("second", type=Path)
    parser.add_argument("--names", default="first,second")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    names = args.names.split(",")
    try:
        (one, first), (two, second) = read_folder(args.first), read_folder(args.second)
    except (OSError, ValueError) as error:
        fail(f"cannot read a finished benchmark folder: {error}")
    if len(names) != 2:
        fail("--names takes two comma-separated names")
    for key in ("languages", "trials", "seed", "evaluation", "scale", "data"):
        if one.get(key) != two.get(key):
            fail(f"the two benchmarks differ in {key}: their models are not paired")
    try:
        comparison = compare_rows(first, second, one["languages"])
    except ValueError as error:
        fail(f"{error}")
    print(comparison_table(comparison, *names))
    if args.json is not None:
        record = {"first": {"name": names[0], "folder": str(args.first),
                            "overrides": one["overrides"]},
                  "second": {"name": names[1], "folder": str(args.second),
                             "overrides": two["overrides"]}, **comparison}
        args.json.write_text(json.dumps(record, indent=1) + "\n")


if __name__ == "__main__":
    main()
