"""``satsim decide``: whether a regular language of the suite is star-free."""

from __future__ import annotations

import json

import click


@click.command("decide")
@click.option("--lang", "lang_name", default=None,
              help="A regular language of the suite (default: every one, as a table).")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object (a list for all).")
def command(lang_name, as_json) -> None:
    """Decide star-freeness: whether the transition monoid of the minimal DFA is aperiodic.

    Star-free languages are exactly those of masked hard-attention transformers and B-RASP
    (Yang, Chiang and Angluin 2024); `satsim compile --lang L` compiles them. For one that is
    not, the witness is a word whose transformation x has x^k ≠ x^(k+1) for every k.
    """
    from satsim.rasp import decide_language, regular_names

    names = [lang_name] if lang_name is not None else regular_names()
    rows = [{"language": name, **decide_language(name).as_dict()} for name in names]
    if as_json:
        click.echo(json.dumps(rows[0] if lang_name is not None else rows))
        return
    width = max(len(row["language"]) for row in rows)
    click.echo(f"{'language':<{width}}  star-free  DFA states  monoid  witness x: x^k ≠ x^(k+1)")
    for row in rows:
        witness = row["witness"]
        shown = "-" if witness is None else (f"{witness['word']!r} (powers cycle with period "
                                             f"{witness['period']})")
        click.echo(f"{row['language']:<{width}}  {'yes' if row['star_free'] else 'no':<9}  "
                   f"{row['dfa_states']:>10}  {row['monoid_size']:>6}  {shown}")
