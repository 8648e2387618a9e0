"""``satsim trace``: what every head attended to and what every layer computed, for one string."""

from __future__ import annotations

import json

import click

from satsim.cli.options import (
    INPUT_HELP,
    INPUT_STRING,
    PlotPath,
    simulator_from_options,
    with_model_options_language_optional,
)


@click.command("trace", help="Trace STRING through the model: tie sets, tie gaps, and what each "
               "head and layer wrote. " + INPUT_HELP)
@with_model_options_language_optional
@click.argument("string", type=INPUT_STRING)
@click.option("--plot", "plot_path", type=PlotPath(),
              help="Also draw every head's attention map into this image file (PNG, PDF, SVG).")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
def command(lang_name, model_path, task, attention, beta, atol, rtol, string, plot_path,
            as_json) -> None:
    """Trace STRING through the model: tie sets, tie gaps, and what each head and layer wrote."""
    from satsim.analysis.head_roles import roles_from_traces
    from satsim.analysis.traces import check_plottable, plot_attention, render_json, render_text
    from satsim.cli.options import check_oracle, get_language

    language = get_language(lang_name) if lang_name is not None else None
    # a symbol outside the alphabet stops here
    member = language.contains(string) if language is not None else None
    simulator = simulator_from_options(lang_name, model_path, task, attention, beta, atol, rtol)
    check_oracle(language, simulator.spec)
    if plot_path:
        check_plottable(len(simulator.encode([string])[0]))
    trace = simulator.trace(string)
    roles = {(r.layer, r.head): r.role for r in roles_from_traces([trace])}
    if as_json:
        click.echo(json.dumps(render_json(simulator.spec, trace, roles)))
    else:
        click.echo(render_text(simulator.spec, trace, roles))
        if language is not None:
            click.echo(f"oracle: {string!r} is {'in' if member else 'not in'} {language.name}")
    if plot_path:  # after the trace is out, so a failed write loses nothing
        plot_attention(simulator.spec, trace, plot_path)
