"""Cut tests/data/flare from a checkout of FLaRe's data (github.com/rycolab/flare).

Run: `python scripts/flare_fixture.py FLARE_CHECKOUT [--out tests/data/flare]`. satsim is never
imported: the fixture is FLaRe's own bytes. Every language folder keeps FLaRe's layout with the
first lines of each split: ROOT_LINES strings at the root, SPLIT_LINES in each datasets/<name>/
(SQRT_TEST_LINES for compute-sqrt's test split, whose lines 6-8 carry FLaRe's float-rounded
labels). Every file keeps exactly the lines of those strings: main.tok and labels.txt line for
line, next-symbols.jsonl and log-probabilities.txt one line per positive among them,
num-edits.txt and edit-distances.txt one line per negative. A file FLaRe's checkout lacks (its
large test/next-symbols.jsonl in some copies) is left out.
"""

from __future__ import annotations

import argparse
from pathlib import Path

ROOT_LINES, SPLIT_LINES, SQRT_TEST_LINES = 10, 4, 8
PER_STRING = ("main.tok", "labels.txt")
PER_POSITIVE = ("next-symbols.jsonl", "log-probabilities.txt")
PER_NEGATIVE = ("num-edits.txt", "edit-distances.txt")


def lines(path: Path) -> list[bytes]:
    """The newline-terminated lines of a file, each with its newline."""
    return path.read_bytes().splitlines(keepends=True)


def cut(source: Path, target: Path, count: int) -> None:
    """Copy the first ``count`` strings of one split folder, every file aligned to them."""
    if not (source / "main.tok").is_file():
        return
    target.mkdir(parents=True, exist_ok=True)
    labels = [line.strip() == b"1" for line in lines(source / "labels.txt")[:count]]
    keep = {name: len(labels) for name in PER_STRING}
    keep |= {name: sum(labels) for name in PER_POSITIVE}
    keep |= {name: len(labels) - sum(labels) for name in PER_NEGATIVE}
    for name, n in keep.items():
        if (source / name).is_file():
            (target / name).write_bytes(b"".join(lines(source / name)[:n]))


def main() -> None:
    """Cut every language folder of the checkout."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("checkout", type=Path)
    parser.add_argument("--out", type=Path, default=Path("tests/data/flare"))
    args = parser.parse_args()
    for language in sorted(p for p in args.checkout.iterdir() if (p / "main.tok").is_file()):
        cut(language, args.out / language.name, ROOT_LINES)
        for split in sorted((language / "datasets").iterdir()):
            long = language.name == "compute-sqrt" and split.name == "test"
            cut(split, args.out / language.name / "datasets" / split.name,
                SQRT_TEST_LINES if long else SPLIT_LINES)


if __name__ == "__main__":
    main()
