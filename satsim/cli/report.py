"""``satsim report RUN``: norm-growth fits, direction, soft vs saturated-limit accuracy, roles."""

from __future__ import annotations

import json

import click

from satsim.cli.options import NonEmptyPath, OutputPath, count
from satsim.cli.progress import Ticker


@click.command("report")
@click.argument("run_dir", metavar="RUN", type=NonEmptyPath(file_okay=False))
@click.option("--plot", "plot_dir", type=OutputPath(folder=True), default=None,
              help="Write the figures (PNG) into this folder.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
@click.option("--bins", "bins_text", default=None,
              help="Length bins like 0-50,51-100 (default: the run's split, then longer bins).")
@click.option("-n", "n", type=count(1), default=100, show_default=True,
              help="Strings per length bin (half positives, half hard negatives).")
@click.option("--seed", type=count(), default=0, show_default=True, help="Sampling seed.")
@click.option("--device", type=click.Choice(["auto", "cpu", "cuda"]), default="auto",
              show_default=True, help="Where the soft model runs.")
@click.option("--soft-max-len", type=count(), default=2048, show_default=True,
              help="Bins longer than this are run by the saturated limit only (O(T²) memory).")
@click.option("--roles-n", type=count(1), default=50, show_default=True,
              help="Strings (from the first bin) for the head roles.")
def command(run_dir, plot_dir, as_json, bins_text, n, seed, device, soft_max_len,
            roles_n) -> None:
    """Analyse a training run: ‖θ‖ fits, per-layer growth, direction, per-bin accuracy, roles."""
    from satsim.analysis.evaluation import parse_bins
    from satsim.soft import resolve_device
    from satsim.training.report import build_report, render

    bins = parse_bins(bins_text) if bins_text else None
    where = str(resolve_device(device))
    ticker = Ticker()

    def within_bin(model: str, bin_: tuple[int, int], done: int, total: int) -> None:
        if ticker.due():  # a long bin: a line every so often, not only when it ends
            click.echo(f"report: {model}, bin {bin_[0]}–{bin_[1]}: {done}/{total} strings "
                       f"({ticker.since_start()} into the report)", err=True)

    report = build_report(run_dir, bins, n, seed, device=where, soft_max_len=soft_max_len,
                          roles_n=roles_n,
                          progress=lambda line: click.echo(f"report: {line}", err=True),
                          on_strings=within_bin)
    if not as_json:
        click.echo(render(report))  # before the plots: a failed write loses nothing
    written = []
    if plot_dir:
        from satsim.training.plots import write_plots

        written = write_plots(report, plot_dir)
    if as_json:
        click.echo(json.dumps({**report.to_dict(), "plots": [str(p) for p in written]}))
    elif written:
        click.echo(f"\nplots: {', '.join(str(p) for p in written)}")
