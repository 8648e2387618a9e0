"""Extract a program from every zoo hybrid whose heads are all hard (docs/zoo.md, "Programs").

Run: python scripts/zoo_extract.py HYBRIDS_DIR [--out DIR] [--max-len 8] [--random 1000]
[--random-len 100]. HYBRIDS_DIR holds the hybrids that ``scripts/zoo_table.py --save`` wrote.
For each hybrid with no soft head, ``satsim extract`` (the library calls behind it) either
writes a program, checked against the hybrid on every string to --max-len and --random random
strings of --random-len symbols, and compared with the task's language (its accept: every
symbol predicted, the end predicted; DFA equivalence), or says why it refuses. One Markdown
row per hybrid.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from zoo_table import LANGUAGES  # this folder is on the path of a script run from it

import languages
from satsim.analysis.harden import heads_of
from satsim.errors import SatsimError
from satsim.model.io import load_spec
from satsim.rasp.automata import language_dfa
from satsim.rasp.extract_positional import (
    check_positional,
    extract_positional,
    write_positional_program,
)
from satsim.rasp.parse import parse_program
from satsim.rasp.program_dfa import brasp_dfa, equivalent
from satsim.rasp.verify import all_strings_up_to, strings_of_length

EXHAUSTIVE = 1_000_000
"""The most strings of the exhaustive check (every string to --max-len, or as far as fits)."""


def row(path: Path, out: Path, max_len: int, n_random: int, random_len: int) -> str:
    """One hybrid's line: its heads, and the program's size and check, or the refusal."""
    spec = load_spec(path)
    heads = heads_of(spec)
    name = path.name.removesuffix(".safetensors")
    if any(spec.blocks[layer].attn.head_kinds[h] == "soft" for layer, h in heads):
        return f"| {name} | {len(heads)} | some head is soft: no program sought | | | | |"
    start = time.perf_counter()
    try:
        extraction = extract_positional(spec)
    except SatsimError as refusal:
        return (f"| {name} | {len(heads)} | refused: {refusal} | | | | "
                f"{time.perf_counter() - start:.0f} s |")
    text = write_positional_program(extraction)
    (out / f"{name}.brasp").write_text(text)
    alphabet = extraction.alphabet
    strings, max_len = all_strings_up_to(alphabet, max_len, budget=EXHAUSTIVE)
    strings += strings_of_length(alphabet, n_random, min(random_len, extraction.max_symbols), 0)
    wrong = check_positional(spec, text, strings)
    return (f"| {name} | {len(heads)} | program, certified up to {extraction.max_symbols} "
            f"symbols | {len(text.splitlines())} lines | every string to length {max_len} and "
            f"{n_random:,} of length {min(random_len, extraction.max_symbols)} ({len(strings):,}): "
            f"{len(wrong)} disagreements | {_same_language(name, text)} | "
            f"{time.perf_counter() - start:.0f} s |")


def _same_language(name: str, text: str) -> str:
    """Whether the program's accept is exactly the task's language (DFA equivalence)."""
    language = LANGUAGES.get(name.split("-")[0])
    if language is None:
        return "-"
    dfa = brasp_dfa(parse_program(text, "brasp"))
    apart = equivalent(dfa, language_dfa(languages.get(language)))
    return (f"exactly {language} ({dfa.states} states)" if apart is None else
            f"not {language}: they differ on {apart!r}")


def main() -> None:
    """Print the table for every hybrid in HYBRIDS_DIR."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("hybrids", type=Path)
    parser.add_argument("--out", type=Path, default=Path("zoo-programs"))
    parser.add_argument("--max-len", type=int, default=8)
    parser.add_argument("--random", type=int, default=1000)
    parser.add_argument("--random-len", type=int, default=100)
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    print("| hybrid | heads | extraction | program | checked against the hybrid | accept | time |")
    print("|---|---|---|---|---|---|---|")
    start = time.perf_counter()
    for path in sorted(args.hybrids.glob("*.safetensors")):
        print(row(path, args.out, args.max_len, args.random, args.random_len), flush=True)
    print(f"\nwhole run: {time.perf_counter() - start:.0f} s", file=sys.stderr)


if __name__ == "__main__":
    main()
