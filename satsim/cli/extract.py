"""``satsim extract MODEL -o OUT.brasp|OUT.crasp``: the program of a hard model."""

from __future__ import annotations

import json

import click

from satsim.cli.options import NonEmptyPath, OutputPath, count, load_model
from satsim.cli.progress import every_so_often

MAX_RANDOM = 1_000_000
"""The most random strings ``--random`` may ask for."""
MAX_RANDOM_SYMBOLS = 100_000_000
"""The most symbols the random strings may hold together."""


@click.command("extract")
@click.argument("path", metavar="MODEL", type=NonEmptyPath())
@click.option("-o", "--output", "out", type=OutputPath(), required=True,
              help="Write the program here: .brasp (finite-valued models, certified) or .crasp "
                   "(counting heads).")
@click.option("--max-len", type=count(), default=6, show_default=True,
              help="Check the program against the model on every string up to this length.")
@click.option("--random", "n_random", type=count(), default=None,
              help=f"Also check this many random strings (seed 0; at most {MAX_RANDOM:,}).")
@click.option("--random-len", type=count(1), default=None,
              help="The length of the strings of --random [default: 100].")
@click.option("--dfa", "dfa_out", type=OutputPath(), default=None,
              help="Also write the B-RASP program's minimal DFA here (JSON, for `satsim decide "
                   "--dfa`); the summary gives its size and star-freeness either way.")
@click.option("--pair", "pair_out", type=OutputPath(), default=None,
              help="Also write MODEL carrying the extracted program (.safetensors), so that "
                   "`satsim verify` checks the model against it.")
@click.option("--lang", "lang_name", default=None,
              help="Also decide whether the B-RASP program's accept is exactly this regular "
                   "language (DFA equivalence), else give the shortest string telling them apart.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON summary.")
def command(path, out, max_len, n_random, random_len, dfa_out, pair_out, lang_name,
            as_json) -> None:
    """Extract a program equal to MODEL: B-RASP (.brasp) or C-RASP (.crasp).

    B-RASP is certified by closing the model's classes; C-RASP writes its counting heads as
    counts and comparisons, in exact arithmetic of the weights. A one-layer next-symbol model
    with learned positions (a hardened GPT-2 of the zoo) gets a B-RASP program of what each
    prefix predicts, certified over every position its table holds.

    MODEL is a .safetensors model or a Hugging Face GPT-2 checkpoint folder.

    Exit code 1 if the program and the model disagree on a checked string.
    """
    from satsim.errors import SatsimError
    from satsim.output import write_text_atomically
    from satsim.rasp.extract import check_program, extract, seen_classes, write_program
    from satsim.rasp.extract_counts import extract_counts
    from satsim.rasp.verify import all_strings_up_to, strings_of_length

    n_random, random_len = _random_check(n_random, random_len)
    language = str(out).rsplit(".", 1)[-1]
    if language not in ("brasp", "crasp"):
        raise SatsimError(f"-o {out}: extract writes a B-RASP or C-RASP program; name it "
                          "NAME.brasp (finite-valued models) or NAME.crasp (counting heads)")
    target = None
    if lang_name is not None:
        from satsim.cli.options import get_language
        from satsim.rasp.automata import language_dfa

        if language != "brasp":
            raise SatsimError("--lang: DFA equivalence is decided for B-RASP programs (-o "
                              "NAME.brasp)")
        target = lang_name, language_dfa(get_language(lang_name))
    spec = load_model(None, path)
    alphabet = tuple(t for t in spec.vocab if t != spec.bos)
    if target is not None and tuple(target[1].alphabet) != alphabet:
        raise SatsimError(f"--lang {lang_name} reads {''.join(target[1].alphabet)!r}; the model "
                          f"reads {''.join(alphabet)!r}: give a language over its symbols")
    strings, max_len = all_strings_up_to(alphabet, max_len)
    strings += strings_of_length(alphabet, n_random, random_len, seed=0)
    if spec.positional.kind == "learned":
        _positional(spec, language, strings, out, dfa_out, pair_out, as_json, target,
                    dict(checked_max_len=max_len, checked_random=n_random, random_len=random_len))
        return
    if language == "brasp":
        extraction = extract(spec, progress=every_so_often("closing the classes, blocks"))
        text = write_program(extraction)
        summary = dict(extraction.summary(),
                       seen_classes_per_layer=seen_classes(extraction, strings),
                       **_automaton(text, dfa_out, target))
    else:
        if dfa_out is not None:
            raise SatsimError("--dfa: a DFA is produced for B-RASP programs (-o NAME.brasp)")
        counted = extract_counts(spec)
        text, summary = counted.text, counted.summary()
    wrong = check_program(spec, text, strings, language)
    write_text_atomically(out, text)
    if pair_out is not None:
        from dataclasses import replace

        from satsim.model.io import save_spec

        save_spec(replace(spec, source=text, source_language=language), pair_out)
    summary.update(program=str(out), lines=len(text.splitlines()),
                   checked_strings=len(strings), checked_max_len=max_len,
                   checked_random=n_random, random_len=random_len,
                   disagreements=len(wrong), first_disagreement=wrong[0] if wrong else None)
    if as_json:
        click.echo(json.dumps(summary))
    elif language == "brasp":
        click.echo(f"wrote {out}: {summary['lines']} lines; classes per layer "
                   f"{summary['classes_per_layer']} ({summary['seen_classes_per_layer']} seen on "
                   f"the checked strings); closure certified for inputs up to "
                   f"{extraction.max_tokens} tokens; {_checked(summary)}: {len(wrong)} "
                   "disagreements; " + _dfa_text(summary, "minimal DFA"))
    else:
        click.echo(f"wrote {out}: {summary['lines']} lines; {summary['counts']} counts, "
                   f"{summary['comparisons']} comparisons; exact in rational arithmetic for "
                   f"inputs up to {counted.exact_up_to_tokens} tokens (float rounding not "
                   f"bounded); {_checked(summary)}: {len(wrong)} disagreements")
    if wrong:
        raise SystemExit(1)


def _random_check(n_random: int | None, random_len: int | None) -> tuple[int, int]:
    """--random and --random-len as numbers, refused beyond what a check can hold."""
    from satsim.errors import SatsimError

    if random_len is not None and n_random is None:
        raise SatsimError("--random-len sets the length of --random's strings: give --random N "
                          "too")
    n_random, random_len = n_random or 0, random_len or 100
    if n_random > MAX_RANDOM or n_random * random_len > MAX_RANDOM_SYMBOLS:
        raise SatsimError(f"--random {n_random:,} --random-len {random_len:,}: the check holds at "
                          f"most {MAX_RANDOM:,} random strings and {MAX_RANDOM_SYMBOLS:,} symbols "
                          "of them; give fewer or shorter")
    return n_random, random_len


def _checked(summary: dict) -> str:
    """Which strings the check read, in words."""
    text = (f"{summary['checked_strings'] - summary['checked_random']} strings to length "
            f"{summary['checked_max_len']}")
    if summary["checked_random"]:
        text += f" and {summary['checked_random']} random of length {summary['random_len']}"
    return text


def _positional(spec, language, strings, out, dfa_out, pair_out, as_json, target,
                checked) -> None:
    """Extract, check and write the program of a one-layer model with learned positions."""
    from satsim.errors import SatsimError
    from satsim.output import write_text_atomically
    from satsim.rasp.extract_positional import (
        check_positional,
        extract_positional,
        write_positional_program,
    )

    if language != "brasp" or pair_out is not None:
        raise SatsimError("a model with learned positions is extracted as B-RASP (-o "
                          "NAME.brasp), without --pair (its readout is next-symbol)")
    extraction = extract_positional(spec)
    text = write_positional_program(extraction)
    wrong = check_positional(spec, text, strings)
    write_text_atomically(out, text)
    summary = dict(extraction.summary(), **_automaton(text, dfa_out, target), program=str(out),
                   lines=len(text.splitlines()), checked_strings=len(strings), **checked,
                   disagreements=len(wrong), first_disagreement=wrong[0] if wrong else None)
    if as_json:
        click.echo(json.dumps(summary))
    else:
        click.echo(f"wrote {out}: {summary['lines']} lines; certified for inputs up to "
                   f"{extraction.max_symbols} symbols (every position of the model's table); "
                   f"{_checked(summary)}: {len(wrong)} disagreements; " +
                   _dfa_text(summary, "minimal DFA of accept"))
    if wrong:
        raise SystemExit(1)


def _dfa_text(summary: dict, what: str) -> str:
    """The DFA part of the summary line: its size and star-freeness, or why there is none."""
    if not summary["dfa_states"]:
        return f"no DFA: {summary['dfa_refused']}" + _same_language(summary)
    star_free = summary["star_free"]
    return (f"{what} {summary['dfa_states']} states, star-free " +
            ("not decided (its monoid is large: `satsim decide --dfa` decides it alone)"
             if star_free is None else str(star_free)) + _same_language(summary))


def _same_language(summary: dict) -> str:
    """The --lang verdict, in words (empty without --lang)."""
    if "language" not in summary:
        return ""
    if summary["same_language"]:
        return f"; accept is exactly {summary['language']} (DFA equivalence)"
    return (f"; accept is not {summary['language']}: they differ on "
            f"{summary['told_apart_by']!r}")


def _automaton(text: str, dfa_out, target=None) -> dict:
    """The program's minimal DFA and its star-freeness (``decide``), or why there is none.

    With ``target`` (a language's name and minimal DFA): whether the program's accept is that
    language, and if not, the shortest string on which they differ.
    """
    from satsim.errors import SatsimError
    from satsim.output import write_text_atomically
    from satsim.rasp.automata import star_free_in_passing
    from satsim.rasp.parse import parse_program
    from satsim.rasp.program_dfa import brasp_dfa, dfa_json, equivalent

    try:
        dfa = brasp_dfa(parse_program(text, "brasp", "<extracted program>"))
    except SatsimError as refusal:
        if dfa_out is not None or target is not None:
            raise
        return {"dfa_states": None, "dfa_refused": str(refusal), "star_free": None}
    if dfa_out is not None:
        write_text_atomically(dfa_out, json.dumps(dfa_json(dfa)) + "\n")
    found = {"dfa_states": dfa.states, "star_free": star_free_in_passing(dfa)}
    if target is not None:
        name, target_dfa = target
        apart = equivalent(dfa, target_dfa)
        found.update(language=name, same_language=apart is None, told_apart_by=apart)
    return found
