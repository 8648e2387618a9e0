"""The ``satsim`` command line: eval, run and languages."""

from __future__ import annotations

import errno
import io
import json
import sys
import traceback
from collections.abc import Sequence
from typing import NoReturn

import click

from languages.base import LanguageError
from satsim.cli.options import (
    INPUT_HELP,
    INPUT_STRING,
    check_oracle,
    count,
    get_language,
    refuse_empty_values,
    simulator_from_options,
    with_model_options,
    with_model_options_language_optional,
)
from satsim.errors import SatsimError
from satsim.output import ENVIRONMENT_ERRNOS, describe_os_error

OPTIONAL_MODULES = {"torch": "soft", "matplotlib": "plot", "ray": "ray"}
"""Optional dependencies by the extra that installs them (see pyproject.toml)."""

USER_ERRORS = (SatsimError, LanguageError)
"""What the command line prints as one ``error:`` line with exit code 2 (see satsim.errors)."""

REPORT_TO = "the satsim issue tracker"


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="satsim")
def cli() -> None:
    """Exact saturated-attention transformers on formal languages."""


@cli.command("eval")
@with_model_options
@click.option("-n", "n", type=count(1), default=200, show_default=True,
              help="Strings per length bin (half positives, half hard negatives).")
@click.option("--seed", type=count(), default=0, show_default=True, help="Sampling seed.")
@click.option("--bins", "bins_text", default=None,
              help="Length bins like 0-16,17-64 (default: 0-16 up to 4097-16384).")
@click.option("--min-len", type=count(), default=None,
              help="One bin from --min-len (default 0) …")
@click.option("--max-len", type=count(), default=None,
              help="… to --max-len (default the larger of 64 and --min-len).")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
def eval_command(lang_name, model_path, task, attention, beta, atol, rtol, n, seed, bins_text,
                 min_len, max_len, as_json) -> None:
    """Test a model against the language's oracle, per length bin."""
    from satsim.analysis.evaluation import DEFAULT_BINS, evaluate, parse_bins

    language = get_language(lang_name)
    if bins_text and (min_len is not None or max_len is not None):
        raise SatsimError("give either --bins or --min-len/--max-len, not both")
    if min_len is not None or max_len is not None:
        low = 0 if min_len is None else min_len
        bins_text = f"{low}-{max(64, low) if max_len is None else max_len}"
    bins = parse_bins(bins_text) if bins_text else DEFAULT_BINS
    simulator = simulator_from_options(lang_name, model_path, task, attention, beta, atol, rtol)
    temperature = f" (beta={beta})" if attention == "softmax" else ""
    header = [f"language {language.name} · model {simulator.spec.name} · attention "
              f"{attention}{temperature} · seed {seed}",
              f"{'length':<15} {'strings':>6} {'accuracy':>9} {'tokens/s':>14}"]

    def show(result) -> None:  # the header waits for the first row: errors come before it
        if not as_json:
            if header:
                click.echo("\n".join(header))
                header.clear()
            click.echo(f"{result.min_len:>7}–{result.max_len:<7} {result.n:>6} "
                       f"{result.accuracy:>9.4f} {result.tokens_per_second:>14,.0f}")

    def progress(done: int, total: int) -> None:  # a large bin, on a terminal: in place
        if sys.stderr.isatty():
            line = f"  {done:,}/{total:,} strings of this bin" if done < total else ""
            click.echo(f"\r\033[K{line}", nl=False, err=True)

    report = evaluate(simulator, language, bins=bins, n=n, seed=seed, on_bin=show,
                      on_progress=progress)
    if as_json:
        click.echo(json.dumps(report.to_dict()))
    else:
        click.echo(f"overall: {report.n} strings, accuracy {report.accuracy:.4f}")


@cli.command("run", help="Run the model on STRINGS (or one per line of standard input), beside "
             "the language's oracle with --lang. " + INPUT_HELP)
@with_model_options_language_optional
@click.argument("strings", nargs=-1, type=INPUT_STRING)
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object per string.")
def run_command(lang_name, model_path, task, attention, beta, atol, rtol, strings,
                as_json) -> None:
    """Run the model on STRINGS beside the oracle (or without one, for a saved model alone)."""
    language = get_language(lang_name) if lang_name is not None else None
    if not strings:
        if sys.stdin is None or sys.stdin.isatty():  # None: standard input is closed
            raise SatsimError("give STRINGS, or pipe one string per line into standard input")
        strings = tuple(line.rstrip("\n") for line in sys.stdin)
    simulator = simulator_from_options(lang_name, model_path, task, attention, beta, atol, rtol)
    check_oracle(language, simulator.spec)
    if language is None:
        _show_answers(simulator, strings, as_json)
        return
    from satsim.analysis.scoring import verdicts
    from satsim.model.readout import answer_json

    for verdict in verdicts(simulator, language, strings):
        string, answer = verdict.string, verdict.answer
        if as_json:
            click.echo(json.dumps({"string": string if len(string) <= 1000 else None,
                                   "length": len(string), "answer": answer_json(answer),
                                   "in_language": verdict.in_language,
                                   "correct": verdict.correct}))
        else:
            shown = string if len(string) <= 60 else f"{string[:28]}…{string[-28:]} ({len(string)})"
            oracle = "in " if verdict.in_language else "out"
            click.echo(f"{verdict.word:<7} oracle {oracle}  "
                       f"{'ok' if verdict.correct else 'WRONG':<5} {shown!r}")


def _show_answers(simulator, strings, as_json: bool) -> None:
    """Print the model's decoded answer for each input, without an oracle."""
    from satsim.model.encoding import text_symbols
    from satsim.model.readout import answer_json, answer_text

    for string, answer in zip(strings, simulator.outputs(list(strings))):
        if as_json:
            click.echo(json.dumps({"string": string if len(string) <= 1000 else None,
                                   "tokens": len(text_symbols(simulator.spec, string)),
                                   "answer": answer_json(answer)}))
        else:
            shown = string if len(string) <= 60 else f"{string[:28]}…{string[-28:]}"
            click.echo(f"{shown!r}: {answer_text(answer)}")


@cli.command("languages")
@click.option("--json", "as_json", is_flag=True, help="Print a JSON list.")
def languages_command(as_json) -> None:
    """List the registered languages."""
    import languages
    from satsim import constructions

    rows = []
    for name in languages.names():
        lang = languages.get(name)
        rows.append({"name": name, "alphabet": list(lang.alphabet), "description": lang.description,
                     "construction": name in constructions.names()})
    if as_json:
        click.echo(json.dumps(rows))
        return
    name_width = max(len(row["name"]) for row in rows)
    alphabet_width = max(len("".join(row["alphabet"])) for row in rows)
    for row in rows:
        mark = "*" if row["construction"] else " "
        alphabet = "".join(row["alphabet"])
        click.echo(f"{mark} {row['name']:<{name_width}}  {alphabet:<{alphabet_width}}  "
                   f"{row['description']}")
    click.echo("* has a built-in construction (satsim eval --lang NAME)")


def _add_discovered_commands() -> None:
    from satsim.cli import discover

    for command in discover():
        cli.add_command(command)


_add_discovered_commands()
refuse_empty_values(cli)


class _ClosedOutput(io.RawIOBase):
    """Standard output when satsim started without one: every write fails (EBADF)."""

    def writable(self) -> bool:
        return True

    def write(self, data) -> int:
        raise OSError(errno.EBADF, "standard output is closed")


def _stand_in_for_closed_stdout() -> bool:
    """Whether satsim started with standard output closed; if so, give it one that fails.

    Python leaves ``sys.stdout`` None then, and click prints nothing: the stand-in makes a
    write fail, as it fails on a full disk or a closed pipe. Unbuffered, a failed write is
    dropped and the exit's flush has nothing left to fail on.
    """
    if sys.stdout is not None:
        return False
    sys.stdout = io.TextIOWrapper(_ClosedOutput(), encoding="utf-8", write_through=True)
    return True


def main(args: Sequence[str] | None = None) -> None:
    """Entry point: bad input ends in one ``error:`` line (exit 2); a bug keeps its traceback.

    Standard output is flushed before the exit, so output that could not be written (a closed
    standard output, a full disk) is an error too, reported once here for every command.
    ``args`` is the command line after ``satsim`` (default: ``sys.argv[1:]``).
    """
    stdout_closed = _stand_in_for_closed_stdout()
    try:
        cli.main(args=args, prog_name="satsim", standalone_mode=False)
        sys.stdout.flush()
    except OSError as error:
        if stdout_closed and error.errno == errno.EBADF and error.filename is None:
            fail("standard output is closed, so the output was lost; redirect it to a file "
                 "(> FILE) or to /dev/null")
        _report_os_error(error)
    except click.exceptions.Abort:
        click.echo("aborted", err=True)
        sys.exit(130)
    except click.exceptions.NoArgsIsHelpError as error:  # `satsim` alone: its help, as asked
        click.echo(error.ctx.get_help())
        sys.exit(0)
    except click.ClickException as error:
        click.echo(f"error: {usage_message(error)}", err=True)
        sys.exit(2 if isinstance(error, click.UsageError) else error.exit_code)
    except USER_ERRORS as error:
        fail(str(error))
    except ModuleNotFoundError as error:
        extra = OPTIONAL_MODULES.get((error.name or "").split(".")[0])
        if extra is None:
            report_bug()
        fail(f"this command needs {error.name}, which is not installed; "
             f"install it with: pip install \"satsim[{extra}]\"")
    except MemoryError:
        fail("out of memory; ask for less (lower -n, shorter strings or a smaller batch)")
    except Exception:  # noqa: BLE001 - anything else is a bug: keep its traceback
        report_bug()


def _report_os_error(error: OSError) -> NoReturn:
    """A full disk or a missing permission in one line; any other OSError is a bug."""
    if error.errno not in ENVIRONMENT_ERRNOS:
        report_bug()
    fail(describe_os_error(error))


def usage_message(error: click.ClickException) -> str:
    """Click's message in one line, with where to find the command's help."""
    message = " ".join(error.format_message().split())
    context = getattr(error, "ctx", None)
    if isinstance(error, click.UsageError) and context is not None:
        message += f" (see '{context.command_path} -h')"
    return message


def fail(message: str) -> NoReturn:
    """Print one ``error:`` line and exit with code 2."""
    click.echo(f"error: {message.strip().splitlines()[0] if message.strip() else 'failed'}",
               err=True)
    sys.exit(2)


def report_bug() -> NoReturn:
    """Print the current exception's traceback and ask for a report; exit code 1."""
    traceback.print_exc()
    click.echo(f"satsim hit an internal error (a bug, not your input); please report it with the "
               f"command you ran and the traceback above: {REPORT_TO}", err=True)
    sys.exit(1)


if __name__ == "__main__":
    main()
