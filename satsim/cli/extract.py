"""``satsim extract MODEL -o OUT.brasp``: the B-RASP program of a finite-valued hard model."""

from __future__ import annotations

import json

import click

from satsim.cli.options import NonEmptyPath, OutputPath, count, load_model


@click.command("extract")
@click.argument("path", metavar="MODEL", type=NonEmptyPath())
@click.option("-o", "--output", "out", type=OutputPath(), required=True,
              help="Write the program here (.brasp).")
@click.option("--max-len", type=count(), default=6, show_default=True,
              help="Check the program against the model on every string up to this length.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON summary.")
def command(path, out, max_len, as_json) -> None:
    """Extract a B-RASP program equal to MODEL, certified by closing its classes.

    MODEL is a .safetensors model or a Hugging Face GPT-2 checkpoint folder.

    Exit code 1 if the program and the model disagree on a checked string.
    """
    from satsim.errors import SatsimError
    from satsim.output import write_text_atomically
    from satsim.rasp.extract import check_program, extract, seen_classes, write_program
    from satsim.rasp.verify import all_strings_up_to

    if not str(out).endswith(".brasp"):
        raise SatsimError(f"-o {out}: extract writes a B-RASP program; name it NAME.brasp")
    spec = load_model(None, path)
    extraction = extract(spec)
    text = write_program(extraction)
    alphabet = tuple(t for t in spec.vocab if t != spec.bos)
    strings, max_len = all_strings_up_to(alphabet, max_len)
    wrong = check_program(spec, text, strings)
    write_text_atomically(out, text)
    summary = dict(extraction.summary(), seen_classes_per_layer=seen_classes(extraction, strings),
                   program=str(out), lines=len(text.splitlines()),
                   checked_strings=len(strings), checked_max_len=max_len, disagreements=len(wrong),
                   first_disagreement=wrong[0] if wrong else None)
    if as_json:
        click.echo(json.dumps(summary))
    else:
        click.echo(f"wrote {out}: {summary['lines']} lines; classes per layer "
                   f"{summary['classes_per_layer']} ({summary['seen_classes_per_layer']} seen on "
                   f"the checked strings); closure certified for inputs up to "
                   f"{extraction.max_tokens} tokens; {len(strings)} strings to length "
                   f"{max_len}: {len(wrong)} disagreements")
    if wrong:
        raise SystemExit(1)
