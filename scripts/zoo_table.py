"""The zoo table of docs/zoo.md: each model of lacoco-lab/decompiling_transformers, soft and hard.

    python scripts/zoo_table.py ZOO_DIR [-n 40] > docs/zoo_table.md

ZOO_DIR holds the zoo's checkpoint folders (``share/saved_models`` of the repository). For each
folder: import it (or say why not); draw 40 strings a bin (0-50, 51-100, 101-150) for the search
(seed 0; the search requires agreement on 0-50 and 51-100 and only measures 101-150, see
``--held-out``) and, apart, for scoring (seed 1): positive strings of the satsim language that
matches a formal-language task (right: every position's next-symbol set), or examples of an
algorithmic task of :mod:`satsim.interop.zoo_tasks` (right: the largest logit is the next token at
every position from ``<sep>`` on); and score, per bin, the share of strings right: soft (softmax),
limit (lim c→∞: ``limit_signs``, or ``limit_argmax`` for a categorical model; undetermined counts
as wrong), hard (every head saturated at the trained scores), tolerant-hard (every head
tolerant-hard at the δ of ``TOLERANT_WIDTHS`` that agrees best with the soft model on the search
strings) and the hybrid of ``satsim harden``, with each head's kind; and per bin the first c of
``SWEEP`` at which the model at cθ (float64), and the first β (the attention scores alone times β),
answers fewer than 99 % of the search strings as the model does ("-": none up to 10); and the first
c at which growing one sublayer alone (its parameters times c, the rest as trained) changes the
decisions on 0-50, with the sublayers that do it there.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

import languages
from satsim import Simulator
from satsim.analysis.harden import (
    TOLERANT_WIDTHS,
    WIDTHS,
    agreement_with_soft,
    first_changes,
    growth_first_changes,
    harden,
    heads_of,
    with_kinds,
)
from satsim.analysis.scoring import is_correct
from satsim.analysis.strings import bin_seed, test_set
from satsim.errors import SatsimError
from satsim.interop import zoo_tasks
from satsim.interop.hf_gpt2 import from_hf_gpt2
from satsim.model.io import save_spec
from satsim.model.readout import next_symbol_sets
from satsim.model.scaling import scale_spec
from satsim.saturation.signs import limit_argmax, limit_signs

BINS = ((0, 50), (51, 100), (101, 150))
SWEEP = (1.1, 1.25, 1.5, 2.0, 3.0, 5.0, 10.0)
"""The scales c (every parameter) and β (the attention scores alone) of the sweeps."""
HELD_OUT = 1
"""The longest bins the search leaves out (101-150): the bar is stated on 0-50 and 51-100."""
LANGUAGES = {"bce_D2": "d2", "bce_D3": "d3", "bce_D4": "d4", "bce_aastar": "aa-star",
             "bce_ababstar": "abab-star", "bce_aaaastar": "aaaa-star", "bce_abcde": "abcde",
             "bce_ab_d_bc": "ab-d-bc", "bce_012_0_2": "012-0-2",
             **{f"bce_tomita{i}": f"tomita{i}" for i in range(1, 8)}}
"""The satsim language of each zoo task whose definition satsim has."""


class _Language:
    """A formal-language task: positive strings, right where every next-symbol set is."""

    scored_from = None

    def __init__(self, name: str) -> None:
        self.language = languages.get(name)

    def groups(self, n: int, seed: int) -> list[list]:
        return [test_set(self.language, n, low, high, bin_seed(seed, i), negatives=False)[0]
                for i, (low, high) in enumerate(BINS)]

    def right(self, string, answer) -> bool:
        return is_correct(self.language, string, True, answer)

    def limit(self, spec):
        labels = np.array(spec.output.labels, dtype=object)

        def answers(group):
            signs = limit_signs(spec, group).signs
            return [None if np.isnan(sign).any() else next_symbol_sets(labels, sign, s)
                    for s, sign in zip(group, signs)]
        return answers


class _Algorithmic:
    """An algorithmic task: examples read with teacher forcing, right from ``<sep>`` on."""

    def __init__(self, task: zoo_tasks.ZooTask) -> None:
        self.task = task
        self.due: dict[tuple[str, ...], list[str]] = {}

    def groups(self, n: int, seed: int) -> list[list]:
        out = []
        for i, (low, high) in enumerate(BINS):
            group = []
            for whole in zoo_tasks.draw_examples(self.task, n, low, high, bin_seed(seed, i)):
                read = zoo_tasks.model_input(whole)
                self.due[tuple(read)] = whole
                group.append(read)
            out.append(group)
        return out

    @staticmethod
    def scored_from(read) -> int:
        return list(read).index(zoo_tasks.SEP)

    def right(self, read, answer) -> bool:
        return answer is not None and zoo_tasks.is_right(self.due[tuple(read)], answer)

    @staticmethod
    def limit(spec):
        return lambda group: limit_argmax(spec, group)


def _accuracy(task, groups, answers_of) -> list[float]:
    """Per bin, the share of strings answered right."""
    return [float(np.mean([task.right(s, a) for s, a in zip(group, answers_of(group))]))
            for group in groups]


def _tolerant_everywhere(spec, search, task):
    """Every head tolerant-hard at the δ of TOLERANT_WIDTHS that agrees best with the soft model."""
    soft = [Simulator(spec, "softmax").outputs(g) for g in search]
    start = task.scored_from or (lambda _: 0)
    best, best_share = None, -1.0
    for width in TOLERANT_WIDTHS:
        trial = with_kinds(spec, {head: ("tolerant-hard", width) for head in heads_of(spec)})
        share = min(float(np.mean([a[start(r):] == b[start(r):] for r, a, b in
                                   zip(g, Simulator(trial).outputs(g), s)]))
                    for g, s in zip(search, soft))
        if share > best_share:
            best, best_share = (trial, width), share
    return best


def _growth_cause(first: dict[str, float | None]) -> str:
    """The smallest c at which one sublayer's growth alone changes the decisions, and which."""
    found = [c for c in first.values() if c is not None]
    if not found:
        return "-"
    return f"{min(found):g}: " + ", ".join(g for g, c in first.items() if c == min(found))


def row(folder: Path, n: int, save: Path | None = None, widths=WIDTHS,
        held_out: int = HELD_OUT, prefer: str = "selector") -> str:
    """One model's line of the table (or the reason it has none)."""
    name = folder.name.split("-")[0]
    try:
        spec = from_hf_gpt2(folder)
    except SatsimError as error:
        return f"| {folder.name} | refused: {error} |"
    algorithmic = zoo_tasks.task_of(folder.name)
    if algorithmic is not None:
        task = _Algorithmic(algorithmic)
    elif name in LANGUAGES:
        task = _Language(LANGUAGES[name])
    else:
        return (f"| {folder.name} | imported ({spec.output.task}); not scored: satsim has no "
                f"generator and oracle for task {name!r} |")
    start = time.perf_counter()
    search, scored = task.groups(n, 0), task.groups(n, 1)
    result = harden(spec, search, BINS, task.scored_from, widths, held_out, prefer)
    if save is not None:
        save_spec(result.spec, save / f"{folder.name}.safetensors")
    tolerant, width = _tolerant_everywhere(spec, search, task)
    columns = {
        "soft": _accuracy(task, scored, Simulator(spec, "softmax").outputs),
        "limit": _accuracy(task, scored, task.limit(spec)),
        "hard": _accuracy(task, scored, Simulator(spec, "saturated").outputs),
        "tolerant-hard": _accuracy(task, scored, Simulator(tolerant).outputs),
        "hybrid": _accuracy(task, scored, Simulator(result.spec).outputs),
    }
    wide = spec.astype(np.float64)
    sweeps = [first_changes(spec, search, SWEEP, at, task.scored_from) for at in (
        lambda c: Simulator(scale_spec(wide, c), "softmax"),
        lambda beta: Simulator(spec, "softmax", beta=beta))]
    kinds = " ".join(f"{r.layer}.{r.head}:{r.kind}" + ("" if r.delta is None else f"({r.delta:g})")
                     + (f"[{'/'.join(map(str, r.classes))}]" if r.classes else "")
                     for r in result.heads)
    cells = " | ".join("/".join(f"{a:.2f}" for a in accuracy) for accuracy in columns.values())
    seconds = time.perf_counter() - start
    tolerant_width = "τ" if width is None else f"{width:g}"
    held_out = agreement_with_soft(spec, scored, Simulator(result.spec, "softmax"),
                                   task.scored_from)
    agreement = " · ".join("/".join(f"{a:.2f}" for a in shares)
                           for shares in (result.agreement, held_out))
    flips = " | ".join("/".join("-" if v is None else f"{v:g}" for v in sweep) for sweep in sweeps)
    flips += " | " + _growth_cause(growth_first_changes(spec, search[0], SWEEP, task.scored_from))
    return (f"| {folder.name} | {cells} | {agreement} | {tolerant_width} | {result.hardened}/"
            f"{len(result.heads)} | {kinds} | {flips} | {seconds:.0f} s |")


def main() -> None:
    """Print the table for every checkpoint folder under ZOO_DIR."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("zoo", type=Path)
    parser.add_argument("-n", type=int, default=40, help="strings per bin")
    parser.add_argument("--only", nargs="*", default=(), help="folders whose names have one")
    parser.add_argument("--save", type=Path, default=None, help="write each hybrid here")
    parser.add_argument("--held-out", type=int, default=HELD_OUT,
                        help="longest bins the search leaves out (0: search every bin)")
    parser.add_argument("--prefer", choices=("selector", "counter"), default="selector",
                        help="which kind a head that keeps the decisions both ways tries first")
    parser.add_argument("--widths", type=lambda text: tuple(map(float, text.split(","))),
                        default=WIDTHS, help="score-class widths, ascending, comma-separated")
    args = parser.parse_args()
    print("| model | soft | limit | hard | tolerant-hard | hybrid | hybrid = soft (search · held "
          "out) | tolerant δ | hardened | head kinds [classes per bin] | c first change | "
          "β first change | one sublayer grown (0-50): first c | time |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    start = time.perf_counter()
    for folder in sorted(p for p in args.zoo.iterdir() if p.is_dir()
                         if not args.only or any(word in p.name for word in args.only)):
        print(row(folder, args.n, args.save, args.widths, args.held_out, args.prefer),
              flush=True)
    print(f"\nwhole run: {time.perf_counter() - start:.0f} s", file=sys.stderr)


if __name__ == "__main__":
    main()
