"""The ``satsim`` command line: eval, run and languages."""

from __future__ import annotations

import json
import sys

import click

from satsim.errors import SatsimError
from satsim.reference.forward import ATTENTION_KINDS


def _load_model(lang_name: str, model_path: str | None):
    """The saved model at ``model_path``, or the language's hand-built construction."""
    from satsim import constructions
    from satsim.spec import ModelSpec

    if model_path is not None:
        return ModelSpec.load(model_path)
    if lang_name not in constructions.names():
        raise SatsimError(
            f"language {lang_name!r} has no built-in construction "
            f"(built in: {', '.join(constructions.names())}); pass --model PATH"
        )
    return constructions.build(lang_name)


def _simulator(lang_name: str, model_path: str | None, attention: str, beta: float,
               atol: float | None, rtol: float | None):
    from satsim.simulator import Simulator

    return Simulator(_load_model(lang_name, model_path), attention, beta=beta, atol=atol, rtol=rtol)


def _language(name: str):
    import languages

    return languages.get(name)


model_options = [
    click.option("--lang", "lang_name", required=True, help="Language (see `satsim languages`)."),
    click.option("--model", "model_path", type=click.Path(dir_okay=False),
                 help="A saved model spec (.safetensors); default: the language's construction."),
    click.option("--attention", type=click.Choice(ATTENTION_KINDS), default="saturated",
                 show_default=True, help="How every head attends."),
    click.option("--beta", type=float, default=1.0, show_default=True,
                 help="Inverse temperature for --attention softmax."),
    click.option("--atol", type=float, default=None, help="Absolute tie tolerance."),
    click.option("--rtol", type=float, default=None, help="Relative tie tolerance."),
]


def with_model_options(fn):
    """Attach the options that choose a language, a model and an attention kind."""
    for option in reversed(model_options):
        fn = option(fn)
    return fn


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="satsim")
def cli() -> None:
    """Exact saturated-attention transformers on formal languages."""


@cli.command("eval")
@with_model_options
@click.option("-n", "n", type=int, default=200, show_default=True,
              help="Strings per length bin (half positives, half hard negatives).")
@click.option("--seed", type=int, default=0, show_default=True, help="Sampling seed.")
@click.option("--bins", "bins_text", default=None,
              help="Length bins like 0-16,17-64 (default: 0-16 up to 4097-16384).")
@click.option("--min-len", type=int, default=None, help="One bin from --min-len …")
@click.option("--max-len", type=int, default=None, help="… to --max-len.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
def eval_command(lang_name, model_path, attention, beta, atol, rtol, n, seed, bins_text,
                 min_len, max_len, as_json) -> None:
    """Test a model against the language's oracle, per length bin."""
    from satsim.evaluation import DEFAULT_BINS, evaluate, parse_bins

    language = _language(lang_name)
    if bins_text and (min_len is not None or max_len is not None):
        raise SatsimError("give either --bins or --min-len/--max-len, not both")
    if min_len is not None or max_len is not None:
        bins_text = f"{0 if min_len is None else min_len}-{64 if max_len is None else max_len}"
    bins = parse_bins(bins_text) if bins_text else DEFAULT_BINS
    simulator = _simulator(lang_name, model_path, attention, beta, atol, rtol)

    def show(result) -> None:
        if not as_json:
            click.echo(f"{result.min_len:>7}–{result.max_len:<7} {result.n:>6} "
                       f"{result.accuracy:>9.4f} {result.tokens_per_second:>14,.0f}")

    if not as_json:
        temperature = f" (beta={beta})" if attention == "softmax" else ""
        click.echo(f"language {language.name} · model {simulator.spec.name} · attention "
                   f"{attention}{temperature} · seed {seed}")
        click.echo(f"{'length':<15} {'strings':>6} {'accuracy':>9} {'tokens/s':>14}")
    report = evaluate(simulator, language, bins=bins, n=n, seed=seed, on_bin=show)
    if as_json:
        click.echo(json.dumps(report.to_dict()))
    else:
        click.echo(f"overall: {report.n} strings, accuracy {report.accuracy:.4f}")


@cli.command("run")
@with_model_options
@click.argument("strings", nargs=-1)
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object per string.")
def run_command(lang_name, model_path, attention, beta, atol, rtol, strings, as_json) -> None:
    """Run the model on STRINGS (or one string per line of standard input) beside the oracle."""
    language = _language(lang_name)
    if not strings:
        if sys.stdin.isatty():
            raise SatsimError("give STRINGS, or pipe one string per line into standard input")
        strings = tuple(line.rstrip("\n") for line in sys.stdin)
    for string in strings:
        language.contains(string)  # symbols outside the alphabet stop here, with a message
    simulator = _simulator(lang_name, model_path, attention, beta, atol, rtol)
    accepted = simulator.accepts(list(strings))
    for string, verdict in zip(strings, accepted):
        truth = language.contains(string)
        shown = string if len(string) <= 60 else f"{string[:28]}…{string[-28:]} ({len(string)})"
        if as_json:
            click.echo(json.dumps({"string": string if len(string) <= 1000 else None,
                                   "length": len(string), "accepted": bool(verdict),
                                   "in_language": truth, "correct": bool(verdict) == truth}))
        else:
            mark = "ok" if bool(verdict) == truth else "WRONG"
            click.echo(f"{'accept' if verdict else 'reject':<7} oracle "
                       f"{'in ' if truth else 'out'}  {mark:<5} {shown!r}")


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
    for row in rows:
        mark = "*" if row["construction"] else " "
        click.echo(f"{mark} {row['name']:<16} {''.join(row['alphabet']):<8} {row['description']}")
    click.echo("* has a built-in construction (satsim eval --lang NAME)")


def _add_discovered_commands() -> None:
    from satsim.commands import discover

    for command in discover():
        cli.add_command(command)


_add_discovered_commands()


def main() -> None:
    """Entry point: run the CLI and turn bad input into a one-line message and exit code 2."""
    try:
        cli.main(standalone_mode=False)
    except click.ClickException as error:
        error.show()
        sys.exit(error.exit_code)
    except click.exceptions.Abort:
        click.echo("aborted", err=True)
        sys.exit(130)
    except (SatsimError, ValueError) as error:
        click.echo(f"error: {str(error).splitlines()[0]}", err=True)
        sys.exit(2)


if __name__ == "__main__":
    main()
