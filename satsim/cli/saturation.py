"""``satsim saturation``: per-layer convergence of the soft twin at cθ to the saturated limit."""

from __future__ import annotations

import json

import click
import numpy as np

from satsim.cli.options import NonEmptyPath, PlotPath, count, get_language, load_model
from satsim.errors import SatsimError
from satsim.output import save_figure


def parse_scales(text: str) -> list[float]:
    """Parse ``'1,2,5,10'`` into positive finite scales."""
    try:
        scales = [float(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise SatsimError(f"--scales takes numbers like 1,10,1000, got {text!r}") from None
    if not scales or not all(np.isfinite(c) and c > 0 for c in scales):
        raise SatsimError(f"--scales must be positive finite numbers, got {text!r}")
    return scales


def _table(title: str, streams: list[str], cosine: list[list[float]], agreement: list[float],
           scales: list[float]) -> None:
    """One block of the report: a row per stream and a row of decision agreement, a column per c."""
    click.echo(title)
    click.echo(f"  {'':<34}" + "".join(f"{'c=' + format(c, 'g'):>11}" for c in scales))
    for index, stream in enumerate(streams):
        click.echo(f"  {stream:<34}" + "".join(f"{row[index]:>11.6f}" for row in cosine))
    click.echo(f"  {'decisions agree':<34}" + "".join(f"{a:>11.3f}" for a in agreement))


def _report(result, device: str, dtype: str) -> None:
    click.echo(f"model {result.model} · {result.n_strings} strings · device {device} · {dtype}")
    _table("soft twin at cθ vs the leading-order saturated network (mean per-token cosine)",
           result.streams, result.cosine, result.agreement, result.scales)
    if result.exact_cosine is not None:
        _table("soft twin at cθ vs the exact limit (asymptotic expansion in c)",
               result.streams, result.exact_cosine, result.exact_agreement, result.scales)
    _table("soft twin at cθ vs naive substitution (θ with saturated attention: the β → ∞ limit)",
           result.streams, result.naive_cosine, result.naive_agreement, result.scales)
    click.echo("soft twin at cθ vs limit_signs (the checked limit: decisions)")
    agree = "".join(f"{a:>11.3f}" for a in result.signs_agreement)
    click.echo(f"  {'decisions agree':<34}{agree}")
    click.echo(f"  limit_signs: {result.signs_exact} of {result.n_strings} strings needed the "
               f"exact expansion, {result.signs_undetermined} undetermined (counted as "
               "disagreeing)")
    click.echo(f"smallest tie margin in the limit network: {result.tie_margin:.3g}")
    if result.findings:
        listed = ", ".join(f"{kind}: {count}" for kind, count in sorted(result.findings.items()))
        click.echo(f"where the leading-order network is not the limit: {listed}")
        click.echo("  (see satsim.saturation.exact_limit(spec, string).findings)")


def _plot(result, path: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4))
    for index, stream in enumerate(result.streams):
        left.plot(result.scales, [row[index] for row in result.cosine], marker="o", label=stream)
    left.set(xscale="log", xlabel="c", ylabel="cosine", title="soft at cθ vs leading-order limit")
    left.legend(fontsize=7)
    finals = {"leading-order limit": result.cosine, "naive substitution": result.naive_cosine}
    if result.exact_cosine is not None:
        finals["exact limit"] = result.exact_cosine
    for label, table in finals.items():
        right.plot(result.scales, [row[-1] for row in table], marker="o", label=label)
    right.set(xscale="log", xlabel="c", ylabel="cosine", title=f"last stream ({result.model})")
    right.legend(fontsize=8)
    fig.tight_layout()
    save_figure(fig, path, dpi=120)
    plt.close(fig)


@click.command("saturation")
@click.option("--lang", "lang_name", default=None,
              help="Language: its construction (unless --model) and its test strings.")
@click.option("--model", "model_path", type=NonEmptyPath(dir_okay=False), default=None,
              help="A saved model spec (.safetensors).")
@click.option("--scales", "scales_text", default="1,2,5,10,100,1000", show_default=True,
              help="Scales c at which to run the soft twin.")
@click.option("--rates", "rates_text", default=None,
              help="Per-group rates PATTERN=R,... (e.g. 'blocks.*.attn.*=2').")
@click.option("--device", type=click.Choice(["auto", "cpu", "cuda"]), default="auto",
              show_default=True, help="Where the soft twin runs.")
@click.option("--dtype", type=click.Choice(["float64", "float32"]), default="float64",
              show_default=True, help="Precision of the soft twin.")
@click.option("-n", "n", type=count(), default=20, show_default=True, help="Number of strings.")
@click.option("--max-len", type=count(), default=16, show_default=True, help="Longest string.")
@click.option("--seed", type=count(), default=0, show_default=True, help="Sampling seed.")
@click.option("--exact/--no-exact", default=True, show_default=True,
              help="Also compare with the exact limit (asymptotic expansion; slower).")
@click.option("--plot", "plot_path", type=PlotPath(), default=None,
              help="Draw the curves into this image file.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
def command(lang_name, model_path, scales_text, rates_text, device, dtype, n, max_len, seed,
            exact, plot_path, as_json) -> None:
    """Per-layer convergence of the soft twin at cθ to the saturated limit network."""
    from satsim.analysis.measures import convergence
    from satsim.analysis.strings import sample_strings
    from satsim.model.scaling import parse_rates
    from satsim.soft import resolve_device

    spec = load_model(lang_name, model_path)
    spec.require_language_task("satsim saturation (it compares decisions)")
    scales = parse_scales(scales_text)
    rates = parse_rates(rates_text) if rates_text else None
    language = get_language(lang_name) if lang_name is not None else None
    strings = sample_strings(spec, language, n, max_len, seed)
    where = str(resolve_device(device))
    result = convergence(spec, strings, scales, rates=rates, device=where, dtype=dtype,
                         exact=exact)
    if as_json:
        click.echo(json.dumps({**result.to_dict(), "device": where, "dtype": dtype}))
    else:
        _report(result, where, dtype)
    if plot_path:  # after the results are out, so a failed write loses nothing
        _plot(result, plot_path)
