"""The zoo table of docs/zoo.md: each model of lacoco-lab/decompiling_transformers, soft and hard.

    python scripts/zoo_table.py ZOO_DIR [-n 40] > docs/zoo_table.md

ZOO_DIR holds the zoo's checkpoint folders (``share/saved_models`` of the repository). For each
folder: import it (or say why not); draw 40 positive strings a bin (0-50, 51-100, 101-150) of
the satsim language that matches its task, for the search (seed 0) and, apart, for scoring
(seed 1); and score, per bin, the share of strings right at every position:
soft (softmax), limit (lim c→∞ by ``limit_signs``; undetermined counts as wrong), hard (every
head saturated at the trained scores), tolerant-hard (every head tolerant-hard at the one δ of
the grid that agrees best with the soft model on the search strings) and the hybrid of
``satsim harden``, with each head's kind.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

import languages
from satsim import Simulator
from satsim.analysis.harden import WIDTHS, harden, heads_of, with_kinds
from satsim.analysis.scoring import is_correct
from satsim.analysis.strings import bin_seed, test_set
from satsim.errors import SatsimError
from satsim.interop.hf_gpt2 import from_hf_gpt2
from satsim.model.readout import next_symbol_sets
from satsim.saturation.signs import limit_signs

BINS = ((0, 50), (51, 100), (101, 150))
LANGUAGES = {"bce_D2": "d2", "bce_D3": "d3", "bce_D4": "d4", "bce_aastar": "aa-star",
             "bce_ababstar": "abab-star", "bce_aaaastar": "aaaa-star", "bce_abcde": "abcde",
             "bce_ab_d_bc": "ab-d-bc", "bce_012_0_2": "012-0-2",
             **{f"bce_tomita{i}": f"tomita{i}" for i in range(1, 8)}}
"""The satsim language of each zoo task whose definition satsim has."""


def _strings(language, n: int, seed: int) -> list[list[str]]:
    return [test_set(language, n, low, high, bin_seed(seed, i), negatives=False)[0]
            for i, (low, high) in enumerate(BINS)]


def _accuracy(language, groups, answers_of) -> list[float]:
    """Per bin, the share of strings whose answers are right at every position."""
    return [float(np.mean([is_correct(language, s, True, a)
                           for s, a in zip(group, answers_of(group))])) for group in groups]


def _limit_answers(spec):
    labels = np.array(spec.output.labels, dtype=object)

    def answers(group):
        signs = limit_signs(spec, group).signs
        return [None if np.isnan(sign).any() else next_symbol_sets(labels, sign, s)
                for s, sign in zip(group, signs)]
    return answers


def _tolerant_everywhere(spec, search):
    """Every head tolerant-hard at the grid's δ that agrees best with the soft model."""
    soft = [Simulator(spec, "softmax").next_symbols(g) for g in search]
    best, best_share = None, -1.0
    for width in (None, *WIDTHS):
        trial = with_kinds(spec, {head: ("tolerant-hard", width) for head in heads_of(spec)})
        share = min(float(np.mean([a == b for a, b in zip(Simulator(trial).next_symbols(g), s)]))
                    for g, s in zip(search, soft))
        if share > best_share:
            best, best_share = (trial, width), share
    return best


def row(folder: Path, n: int) -> str:
    """One model's line of the table (or the reason it has none)."""
    task = folder.name.split("-")[0]
    try:
        spec = from_hf_gpt2(folder)
    except SatsimError as error:
        return f"| {folder.name} | refused: {error} |"
    if task not in LANGUAGES:
        return (f"| {folder.name} | imported ({spec.output.task}); not scored: satsim has no "
                f"generator and oracle for task {task!r} |")
    language = languages.get(LANGUAGES[task])
    search, scored = _strings(language, n, 0), _strings(language, n, 1)
    start = time.perf_counter()
    result = harden(spec, search, BINS)
    tolerant, width = _tolerant_everywhere(spec, search)
    columns = {
        "soft": _accuracy(language, scored, Simulator(spec, "softmax").next_symbols),
        "limit": _accuracy(language, scored, _limit_answers(spec)),
        "hard": _accuracy(language, scored, Simulator(spec, "saturated").next_symbols),
        "tolerant-hard": _accuracy(language, scored, Simulator(tolerant).next_symbols),
        "hybrid": _accuracy(language, scored, Simulator(result.spec).next_symbols),
    }
    kinds = " ".join(f"{r.layer}.{r.head}:{r.kind}" + ("" if r.delta is None else f"({r.delta:g})")
                     + (f"[{'/'.join(map(str, r.classes))}]" if r.classes else "")
                     for r in result.heads)
    cells = " | ".join("/".join(f"{a:.2f}" for a in accuracy) for accuracy in columns.values())
    seconds = time.perf_counter() - start
    tolerant_width = "τ" if width is None else f"{width:g}"
    return (f"| {folder.name} | {cells} | {tolerant_width} | {result.hardened}/"
            f"{len(result.heads)} | {kinds} | {seconds:.0f} s |")


def main() -> None:
    """Print the table for every checkpoint folder under ZOO_DIR."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("zoo", type=Path)
    parser.add_argument("-n", type=int, default=40, help="strings per bin")
    args = parser.parse_args()
    print("| model | soft | limit | hard | tolerant-hard | hybrid | tolerant δ | hardened | "
          "head kinds [classes per bin] | time |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    start = time.perf_counter()
    for folder in sorted(p for p in args.zoo.iterdir() if p.is_dir()):
        print(row(folder, args.n), flush=True)
    print(f"\nwhole run: {time.perf_counter() - start:.0f} s", file=sys.stderr)


if __name__ == "__main__":
    main()
