"""FLaRe's published datasets through satsim: byte-for-byte round trips, and its labels and
next-symbol sets against satsim's oracles.

Run: python bench/flare_data.py FLARE_CHECKOUT (a checkout of github.com/rycolab/flare, one
folder per language). For every language and split: read the folder (languages.flare), write it
again into a temporary folder and compare every file byte for byte; count the strings whose
label is not the oracle's and the positives whose next-symbol sets are not ``next_symbols``;
time the read and the write. Prints a table and writes bench/results/flare_data.json.
"""

from __future__ import annotations

import argparse
import filecmp
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from _common import machine, write  # noqa: E402

import languages  # noqa: E402
from languages import flare  # noqa: E402


def check(folder: Path) -> dict:
    """One language folder: round trip, disagreements with the oracle, seconds."""
    lang = languages.get(flare.FLARE[folder.name].language)
    start = time.perf_counter()
    splits = flare.read_dataset(folder, lang)
    read = time.perf_counter() - start
    with tempfile.TemporaryDirectory() as out:
        start = time.perf_counter()
        flare.write_dataset(Path(out) / "copy", splits, lang)
        written = time.perf_counter() - start
        different = []
        for name, source in flare.split_folders(folder).items():
            target = Path(out) / "copy" / ("" if name == flare.TRAIN else f"datasets/{name}")
            files = sorted(p.name for p in source.iterdir() if p.is_file())
            same = filecmp.cmpfiles(source, target, files, shallow=False)[0]
            different += [f"{name}/{f}" for f in files if f not in same]
    labels = {name: len(flare.label_disagreements(lang, split)) for name, split in splits.items()}
    sets = {name: sum(lang.next_symbols(s) != theirs
                      for s, theirs in zip(split.positives, split.next_symbols))
            for name, split in splits.items() if split.next_symbols is not None}
    return {"language": folder.name, "satsim": lang.name, "strings": sum(
        len(s.strings) for s in splits.values()), "splits": list(splits),
            "files_not_identical": different, "label_disagreements": labels,
            "next_symbol_disagreements": sets, "read_seconds": read, "write_seconds": written}


def main() -> None:
    """Check every language folder of the checkout and print the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("checkout", type=Path)
    args = parser.parse_args()
    rows = [check(args.checkout / name) for name in sorted(flare.FLARE)
            if (args.checkout / name).is_dir()]
    print(f"{'FLaRe language':<26} {'strings':>7} {'bytes':>9} {'labels≠':>8} {'sets≠':>7} "
          f"{'read s':>7} {'write s':>7}")
    for r in rows:
        print(f"{r['language']:<26} {r['strings']:>7} "
              f"{'same' if not r['files_not_identical'] else 'DIFFER':>9} "
              f"{sum(r['label_disagreements'].values()):>8} "
              f"{sum(r['next_symbol_disagreements'].values()):>7} "
              f"{r['read_seconds']:>7.2f} {r['write_seconds']:>7.2f}")
    path = write("flare_data", {"machine": machine(), "rows": rows})
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
