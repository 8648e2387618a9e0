"""Round trip: every star-free language of the suite, compiled by satsim, extracted back.

For each language: its B-RASP program (star_free_program) is compiled, the model is extracted
(satsim.rasp.extract), and the extracted program's interpreter is compared with the language's
oracle (its contains) and with the model (the engine) on every string up to a length (at most
about 2,000 strings) and on random strings of length 100.
Writes bench/results/extract_round_trip.json.

    PYTHONPATH=. python bench/extract_round_trip.py [--random 100] [--only abcde,d2]
    PYTHONPATH=. python bench/extract_round_trip.py --programs DIR   # also the programs
    PYTHONPATH=. python bench/extract_round_trip.py --examples 100   # the 8 examples, 10^4

An extracted B-RASP program also gets its minimal DFA (satsim.rasp.program_dfa), compared with
the original's (the example program's, or the language's) by DFA equivalence; C-RASP examples
are extracted with counts (satsim.rasp.extract_counts).
"""

from __future__ import annotations

import argparse
import json
import random
import time
from pathlib import Path

import languages
from satsim.errors import SatsimError
from satsim.rasp import (
    compile_program,
    interpreter,
    parse_program,
    read_program,
    regular_names,
)
from satsim.rasp.automata import DFA, language_dfa, star_free_in_passing
from satsim.rasp.extract import NotExtractable, check_program, extract, write_program
from satsim.rasp.extract_counts import extract_counts
from satsim.rasp.program_dfa import MAX_DFA_CELLS, brasp_dfa, equivalent
from satsim.rasp.regular import star_free_program
from satsim.rasp.verify import all_strings_up_to


def round_trip(name: str, n_random: int, dfa_cells: int = MAX_DFA_CELLS,
               programs: Path | None = None) -> dict:
    """One language's round trip, as measured; the extracted program saved in ``programs``."""
    start = time.time()
    try:
        text = star_free_program(name)
    except SatsimError as error:
        return {"language": name, "star_free": False, "why": str(error)[:160]}
    language = languages.get(name)
    spec = compile_program(parse_program(text, "brasp", name), name)
    row = {"language": name, "star_free": True, "heads": sum(
        b.attn.n_heads for b in spec.blocks if b.attn is not None)}
    try:
        extraction = extract(spec)
        back = write_program(extraction)
    except NotExtractable as error:
        return dict(row, extracted=False, why=str(error), seconds=round(time.time() - start, 1))
    if programs is not None:
        programs.mkdir(parents=True, exist_ok=True)
        (programs / f"{name}.brasp").write_text(back, encoding="utf-8")
    program = parse_program(back, "brasp", f"{name} extracted")
    alphabet = tuple(language.alphabet)
    short, length = all_strings_up_to(alphabet, 12, budget=2000)
    rng = random.Random(0)
    long = ["".join(rng.choice(alphabet) for _ in range(100)) for _ in range(n_random)]
    oracle_wrong = [s for s, accepted in zip(short + long, interpreter(program).many(short + long))
                    if accepted != language.contains(s)]
    model_wrong = check_program(spec, back, short + long)
    dfa = _dfa_check(back, language_dfa(language), dfa_cells)
    return dict(row, extracted=True, **extraction.summary(), **dfa, lines=len(back.splitlines()),
                exhaustive_to_length=length, short_strings=len(short), random_len100=len(long),
                disagree_with_oracle=len(oracle_wrong), disagree_with_model=len(model_wrong),
                seconds=round(time.time() - start, 1))


def _dfa_check(text: str, original: DFA | None, cells: int = MAX_DFA_CELLS) -> dict:
    """The extracted program's minimal DFA, decide's verdict and DFA equivalence with the
    original's, or why there is no DFA."""
    try:
        dfa = brasp_dfa(parse_program(text, "brasp", "extracted"), cells)
    except SatsimError as refusal:
        return {"dfa": str(refusal)}
    row = {"dfa_states": dfa.states, "star_free": star_free_in_passing(dfa)}
    if original is not None:
        witness = equivalent(dfa, original)
        row["dfa_equivalent"] = witness is None
        row["dfa_witness"] = witness
    return row


def example_round_trip(path: str, n_long: int, long_len: int) -> dict:
    """An example program, compiled and extracted (B-RASP, or C-RASP with counts): the
    original's interpreter, the extracted program's and the model on every string to length 8
    and on long random strings; for B-RASP also the DFAs where they can be built."""
    start = time.time()
    original = read_program(path)
    spec = compile_program(original, path)
    language = original.language
    if language == "brasp":
        extraction = extract(spec)
        back = write_program(extraction)
        summary = extraction.summary()
        try:
            source_dfa = brasp_dfa(original)
        except SatsimError:
            source_dfa = None
        summary.update(_dfa_check(back, source_dfa))
    else:
        counted = extract_counts(spec)
        back, summary = counted.text, counted.summary()
    meaning = interpreter(parse_program(back, language, f"{path} extracted"))
    first = interpreter(original)
    short, length = all_strings_up_to(original.alphabet, 8)
    rng = random.Random(1)
    long = ["".join(rng.choice(original.alphabet) for _ in range(long_len))
            for _ in range(n_long)]
    return dict(example=path, **summary, lines=len(back.splitlines()),
                exhaustive_to_length=length, long_strings=n_long, long_len=long_len,
                disagree_with_original=sum(meaning(s) != first(s) for s in short + long),
                disagree_with_model=len(check_program(spec, back, short + long, language)),
                seconds=round(time.time() - start, 1))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--random", type=int, default=100)
    parser.add_argument("--skip", default="", help="languages left out (comma-separated)")
    parser.add_argument("--out", default="bench/results/extract_round_trip.json")
    parser.add_argument("--only", default="",
                        help="run only these languages (comma-separated); --out keeps its rows "
                             "of the others")
    parser.add_argument("--dfa-cells", type=int, default=MAX_DFA_CELLS,
                        help="the DFA construction's budget of cells (see MAX_DFA_CELLS)")
    parser.add_argument("--programs", type=Path, metavar="DIR",
                        help="also write each extracted program to DIR/LANGUAGE.brasp")
    parser.add_argument("--examples", type=int, default=0, metavar="K",
                        help="instead: the 8 example programs, with K random strings of 10^4")
    args = parser.parse_args()
    if args.examples:
        rows = [example_round_trip(str(path), args.examples, 10_000)
                for path in sorted(Path("examples").glob("*.?rasp"))]
        print(json.dumps(rows, indent=1))
        with open("bench/results/extract_examples.json", "w", encoding="utf-8") as handle:
            json.dump(rows, handle, indent=1)
        return
    rows = []
    only = [name for name in args.only.split(",") if name]
    kept = ({row["language"]: row for row in json.loads(Path(args.out).read_text())}
            if only and Path(args.out).exists() else {})
    names = regular_names()
    for index, name in enumerate(names):
        if only and name not in only:
            rows.extend([kept[name]] if name in kept else [])
            continue
        if name in args.skip.split(","):
            rows.append({"language": name, "skipped": "--skip"})
            continue
        rows.append(round_trip(name, args.random, args.dfa_cells, args.programs))
        print(json.dumps(rows[-1]), flush=True)
        _write(args.out, rows + [kept[n] for n in names[index + 1:] if n in kept])
    _write(args.out, rows)


def _write(path: str, rows: list[dict]) -> None:
    """The rows so far, and the kept rows of the languages still to come."""
    with open(path, "w", encoding="utf-8") as handle:
        json.dump(rows, handle, indent=1)


if __name__ == "__main__":
    main()
