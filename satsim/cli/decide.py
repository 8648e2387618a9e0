"""``satsim decide``: whether a regular language of the suite is star-free."""

from __future__ import annotations

import json

import click

TABLE_SECONDS = 60.0
"""The table (no --lang) skips, with their estimate, the languages estimated to take longer."""
NOTE_SECONDS = 10.0
"""Work estimated past this many seconds is announced, with its estimate, before it starts."""


@click.command("decide")
@click.option("--lang", "lang_name", default=None,
              help="A regular language of the suite (default: every one, as a table, where "
                   "those estimated past a minute are skipped with their estimate).")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object (a list for all).")
def command(lang_name, as_json) -> None:
    """Decide star-freeness: whether the transition monoid of the minimal DFA is aperiodic.

    Star-free languages are exactly those of masked hard-attention transformers and B-RASP
    (Yang, Chiang and Angluin 2024); `satsim compile --lang L` compiles them. For one that is
    not, the witness is a word whose transformation x has x^k ≠ x^(k+1) for every k.
    Each language's cost is estimated first: beyond the memory free it is refused, and long
    work says so on standard error, with a progress line every 30 s.
    """
    from satsim.errors import SatsimError
    from satsim.rasp import regular_names

    if lang_name is not None:
        row = {"language": lang_name, **_decided(lang_name).as_dict()}
        click.echo(json.dumps(row) if as_json else _table([row]))
        return
    rows = []
    for name in regular_names():
        try:
            rows.append({"language": name, **_decided(name, TABLE_SECONDS).as_dict()})
        except SatsimError as error:  # one language too large: say so in its row
            rows.append({"language": name, "star_free": None, "undecided": str(error)})
    click.echo(json.dumps(rows) if as_json else _table(rows))


def _decided(name: str, most_seconds: float | None = None):
    """The decision on ``name``, announced when long, refused past ``most_seconds``."""
    from satsim.cli.progress import Ticker
    from satsim.errors import SatsimError
    from satsim.rasp.regular import check_decision, decide_language, decision_estimate

    estimate = decision_estimate(name)
    if most_seconds is not None and estimate.seconds is not None \
            and estimate.seconds > most_seconds:
        raise SatsimError(f"not decided in the table: {estimate.describe()}; decide it alone "
                          f"with satsim decide --lang {name}")
    check_decision(name, estimate)
    if estimate.seconds is not None and estimate.seconds > NOTE_SECONDS:
        click.echo(f"deciding {name}: {estimate.describe()}", err=True)
    ticker = Ticker()

    def progress(elements: int, length: int) -> None:
        if ticker.due():
            click.echo(f"  {name}: {elements:,} monoid elements, words of length {length} "
                       f"({ticker.since_start()})", err=True)

    return decide_language(name, progress)


def _table(rows: list[dict]) -> str:
    """The decisions as a text table."""
    width = max(len(row["language"]) for row in rows)
    lines = [f"{'language':<{width}}  star-free  DFA states  monoid  witness x: x^k ≠ x^(k+1)"]
    for row in rows:
        if row["star_free"] is None:
            lines.append(f"{row['language']:<{width}}  ?          {row['undecided']}")
            continue
        witness = row["witness"]
        shown = "-" if witness is None else (f"{witness['word']!r} (powers cycle with period "
                                             f"{witness['period']})")
        lines.append(f"{row['language']:<{width}}  {'yes' if row['star_free'] else 'no':<9}  "
                     f"{row['dfa_states']:>10}  {row['monoid_size']:>6}  {shown}")
    return "\n".join(lines)
