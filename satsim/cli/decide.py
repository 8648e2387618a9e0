"""``satsim decide``: whether a regular language is star-free.

The suite's, an expression's, an automaton's, or those of a file of expressions.
"""

from __future__ import annotations

import json
import sys

import click

from satsim.cli.options import NonEmptyPath, count, cpu_count, given_options, real

TABLE_SECONDS = 60.0
"""The table (no --lang) skips, with their estimate, the languages estimated to take longer."""
NOTE_SECONDS = 10.0
"""Work estimated past this many seconds is announced, with its estimate, before it starts."""


def regular_options(command):
    """--regex, --dfa and --alphabet: a user's regular language."""
    command = click.option("--alphabet", default=None,
                           help="With --regex: the symbols (default: those the expression "
                                "uses).")(command)
    command = click.option("--dfa", "dfa_path", type=NonEmptyPath(dir_okay=False), default=None,
                           help="A JSON automaton (satsim's format or automata-lib's DFA; "
                                "docs/regular.md).")(command)
    return click.option("--regex", default=None,
                        help="A regular expression: + or | union, * star, ? optional, ε or () "
                             "empty word, [a-c] classes (docs/regular.md).")(command)


def user_language(regex: str | None, dfa_path: str | None, alphabet: str | None):
    """The language of --regex or --dfa (None when neither is given)."""
    from satsim.errors import SatsimError
    from satsim.rasp.regular import automaton_language, regex_language

    if regex is not None and dfa_path is not None:
        raise SatsimError("give --regex or --dfa, not both")
    if alphabet is not None and regex is None:
        raise SatsimError("--alphabet goes with --regex (an automaton lists its own)")
    if regex is not None:
        return regex_language(regex, alphabet)
    return None if dfa_path is None else automaton_language(dfa_path)


@click.command("decide")
@click.option("--lang", "lang_name", default=None,
              help="A regular language of the suite (default: every one, as a table, where "
                   "those estimated past a minute are skipped with their estimate).")
@regular_options
@click.option("--regex-file", "regex_file", type=click.File("r", encoding="utf-8"),
              default=None, help="Expressions, one a line (# starts a comment line): one row "
                                 "each.")
@click.option("--compile", "compile_models", is_flag=True,
              help="With --regex-file: compile every star-free one and check the model against "
                   "the expression (Python re) on every string up to --max-len.")
@click.option("--max-len", type=count(), default=8, show_default=True,
              help="With --compile: the length the check reaches.")
@click.option("--timeout", type=real(0, min_open=True), default=60.0,
              show_default=True, help="With --regex-file: CPU seconds per expression before "
                                      "it is refused (or ten times as many of wall time).")
@click.option("--memory", "memory_mb", type=count(1), default=2048, show_default=True,
              help="With --regex-file: MiB of memory per expression before it is refused.")
@click.option("--jobs", type=cpu_count(), default=1, show_default=True,
              help="With --regex-file: expressions decided at once (one worker process each).")
@click.option("--json", "as_json", is_flag=True,
              help="Print one JSON object (a list for the suite; a line each for --regex-file).")
def command(lang_name, regex, dfa_path, alphabet, regex_file, compile_models, max_len, timeout,
            memory_mb, jobs, as_json) -> None:
    """Decide star-freeness: whether the transition monoid of the minimal DFA is aperiodic.

    Star-free languages are exactly those of masked hard-attention transformers and B-RASP
    (Yang, Chiang and Angluin 2024); `satsim compile --lang L` (or --regex, --dfa) compiles
    them. For one that is not, the witness is a word whose transformation x has
    x^k ≠ x^(k+1) for every k. Each suite language's cost is estimated first: beyond the
    memory free it is refused, and long work says so on standard error, with a progress line
    every 30 s.
    """
    from satsim.errors import SatsimError
    from satsim.rasp import regular_names

    given = [name for name, value in (("--lang", lang_name), ("--regex", regex),
                                      ("--dfa", dfa_path), ("--regex-file", regex_file))
             if value is not None]
    if len(given) > 1:
        raise SatsimError(f"give one of {', '.join(given)}")
    if compile_models and regex_file is None:
        raise SatsimError("--compile goes with --regex-file (satsim compile --regex compiles "
                          "one)")
    batch_only = given_options("timeout", "memory_mb", "jobs")
    if batch_only and regex_file is None:
        raise SatsimError(f"{', '.join(batch_only)}: only with --regex-file (a batch of "
                          f"expressions); leave {'it' if len(batch_only) == 1 else 'them'} out")
    if given_options("max_len") and not compile_models:
        raise SatsimError("--max-len goes with --regex-file --compile (the check's length)")
    if regex_file is not None:
        _batch(regex_file, alphabet, compile_models, max_len, timeout, memory_mb, jobs, as_json)
        return
    language = user_language(regex, dfa_path, alphabet)
    if language is not None:
        from satsim.rasp.regular import decide_user

        row = {"expression" if regex is not None else "automaton": language.name,
               "alphabet": "".join(language.alphabet), **decide_user(language).as_dict()}
        click.echo(json.dumps(row) if as_json else _table([{"language": language.name, **row}]))
        return
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


def _batch(lines, alphabet, compile_models, max_len, timeout, memory_mb, jobs, as_json) -> None:
    """One row per expression of the file, progress on standard error."""
    from satsim.errors import SatsimError
    from satsim.rasp.batch import BatchSettings, read_expressions, run_batch

    if alphabet == "":
        raise SatsimError("--alphabet is empty; give its symbols, like --alphabet abc")
    expressions = read_expressions(lines)
    settings = BatchSettings(alphabet, compile_models, max_len, timeout=timeout,
                             memory_mb=memory_mb)
    counts = {"star-free": 0, "not star-free": 0, "refused": 0, "wrong": 0}
    if not as_json:
        click.echo(f"{'star-free':<9}  {'DFA':>5}  {'monoid':>8}  {'model':<14}  "
                   f"{'check':<14}  expression / witness / refusal")
    for index, row in enumerate(run_batch(expressions, settings, jobs), 1):
        counts["refused" if "refused" in row else
               "star-free" if row["star_free"] else "not star-free"] += 1
        counts["wrong"] += bool(row.get("check", {}).get("wrong"))
        click.echo(json.dumps(row) if as_json else _batch_line(row))
        print(f"[{index}/{len(expressions)}] {row['seconds']:.2f} s  "
              f"{', '.join(f'{n} {k}' for k, n in counts.items())}", file=sys.stderr)
    print(f"done: {len(expressions)} expressions, "
          f"{', '.join(f'{n} {k}' for k, n in counts.items())}", file=sys.stderr)


def _batch_line(row: dict) -> str:
    """A batch row as a table line."""
    if "refused" in row:
        return f"{'?':<9}  {'':>5}  {'':>8}  {'':<14}  {'':<14}  {row['expression']}  " \
               f"refused: {row['refused']}"
    model = row.get("model")
    shown = f"{model['layers']}L {model['heads']}H d{model['d_model']}" if model else "-"
    check = row.get("check")
    checked = "-" if check is None else (f"ok ({check['strings']:,})" if not check["wrong"]
                                         else f"{check['wrong']} WRONG")
    witness = row["witness"]
    after = "" if witness is None else f"  witness {witness['word']!r} (period " \
                                       f"{witness['period']})"
    return (f"{'yes' if row['star_free'] else 'no':<9}  {row['dfa_states']:>5}  "
            f"{row['monoid_size']:>8}  {shown:<14}  {checked:<14}  {row['expression']}{after}")


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
