"""``satsim verify``: a compiled model (or a program, compiled now) against its interpreter."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click

from satsim.cli.options import NonEmptyPath, count
from satsim.cli.progress import every_so_often


@click.command("verify")
@click.argument("path", metavar="FILE", type=NonEmptyPath(dir_okay=False))
@click.option("--lang", "lang_name", default=None,
              help="Also check against this language's oracle, adding its long samples "
                   "(positives and hard negatives) to the random strings.")
@click.option("--max-len", type=count(), default=10, show_default=True,
              help="Check every string up to this length (as far as 100,000 strings go) ...")
@click.option("--long", "long_count", type=count(), default=20, show_default=True,
              help="... and this many random strings ...")
@click.option("--long-len", type=count(1), default=10_000, show_default=True,
              help="... of up to this many symbols (one of exactly this many).")
@click.option("--seed", type=count(), default=0, show_default=True,
              help="Seed of the random strings.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
def command(path, lang_name, max_len, long_count, long_len, seed, as_json) -> None:
    """Check a compiled model FILE (.safetensors) against the program it carries.

    FILE may also be a program (.crasp, .brasp): it is compiled, then checked. Exit code 1 if
    the model and the interpreter disagree on a string.
    """
    from satsim.errors import SatsimError
    from satsim.model.io import load_spec
    from satsim.rasp import compile_program, interpreter, program_of, read_program
    from satsim.rasp.syntax import LANGUAGES
    from satsim.rasp.verify import check_long_strings, language_samples, verify_all

    if Path(path).suffix.lstrip(".") in LANGUAGES:
        program = read_program(path)
        check_long_strings(long_count, long_len, lang_name is not None, len(program.definitions))
        spec = compile_program(program, Path(path).stem)
    else:
        spec = load_spec(path)
        program = program_of(spec)
        check_long_strings(long_count, long_len, lang_name is not None, len(program.definitions))
    meanings = {"interpreter": interpreter(program)}
    if lang_name is not None:
        import languages

        language = languages.get(lang_name)
        if set(program.alphabet) != set(language.alphabet):
            raise SatsimError(f"the program's alphabet {''.join(program.alphabet)!r} is not "
                              f"{lang_name}'s {''.join(language.alphabet)!r}")
        meanings[f"oracle of {lang_name}"] = language.contains
        extra = language_samples(language, long_count, long_len, seed)
    else:
        extra = []
    try:
        results = verify_all(spec, meanings, program.alphabet, max_len, long_count, long_len,
                             seed, extra, progress=every_so_often("long strings checked"))
    except MemoryError:
        raise SatsimError("out of memory; lower --long, --long-len or --max-len") from None
    if as_json:
        click.echo(json.dumps({"model": spec.name, "language": program.language,
                               **{what.split()[0]: r.as_dict() for what, r in results.items()},
                               "ok": all(r.ok for r in results.values())}))
    else:
        for what, result in results.items():
            click.echo(f"{spec.name} against its {what}: {result.summary()}")
    if not all(r.ok for r in results.values()):
        sys.exit(1)
