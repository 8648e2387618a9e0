"""``satsim roles``: classify every head as local or global on sampled strings."""

from __future__ import annotations

import json

import click

from satsim.cli.options import (
    count,
    simulator_from_options,
    with_model_options_language_optional,
)


@click.command("roles")
@with_model_options_language_optional
@click.option("-n", "n", type=count(), default=100, show_default=True, help="Strings to sample.")
@click.option("--min-len", type=count(), default=None,
              help="Shortest sampled string.  [default: 8, or --max-len if that is less]")
@click.option("--max-len", type=count(), default=None,
              help="Longest sampled string.  [default: 64, or --min-len if that is more]")
@click.option("--seed", type=count(), default=0, show_default=True, help="Sampling seed.")
@click.option("--limit", "of_limit", is_flag=True,
              help="Roles of the saturated limit lim f(x; cθ) (limit_tie_sizes) instead of the "
                   "model run with saturated attention.")
@click.option("--json", "as_json", is_flag=True, help="Print a JSON list, one object per head.")
def command(lang_name, model_path, task, attention, beta, atol, rtol, n, min_len, max_len, seed,
            of_limit, as_json) -> None:
    """Head roles from exact tie sets: local (a few positions) or global (most of the prefix).

    Strings come from the language's balanced test set with --lang, else (a saved model alone)
    uniformly from the model's input symbols. With --limit the tie sets are those of the
    saturated limit of the model scaled by c → ∞, as `satsim report` gives them.
    """
    from satsim.analysis.head_roles import head_roles, roles_from_tie_sizes
    from satsim.analysis.strings import sample_strings
    from satsim.cli.options import get_language

    if min_len is None:
        min_len = 8 if max_len is None else min(8, max_len)
    if max_len is None:
        max_len = max(64, min_len)
    language = get_language(lang_name) if lang_name is not None else None
    simulator = simulator_from_options(lang_name, model_path, task, attention, beta, atol, rtol)
    strings = sample_strings(simulator.spec, language, n, max_len, seed, min_len=min_len)
    if of_limit:
        from satsim.saturation.signs import limit_tie_sizes

        roles = roles_from_tie_sizes(limit_tie_sizes(simulator.spec, strings))
    else:
        roles = head_roles(simulator, strings)
    if as_json:
        click.echo(json.dumps([r.to_dict() for r in roles]))
        return
    click.echo(f"{'layer':>5} {'head':>4}  {'role':<8} {'median |S|':>10} {'median |S|/|J|':>15}"
               "  tie-set sizes")
    for r in roles:
        histogram = " ".join(f"{k}:{v}" for k, v in r.size_histogram.items() if v)
        click.echo(f"{r.layer:>5} {r.head:>4}  {r.role:<8} {r.median_tie_size:>10.1f} "
                   f"{r.median_fraction:>15.3f}  {histogram}")
