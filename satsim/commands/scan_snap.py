"""``satsim scan-snap``: the Scan-and-Snap experiments (attention training dynamics)."""

from __future__ import annotations

import json
import sys

import click

from satsim.commands.options import OutputPath, count
from satsim.scansnap.grid import GRIDS
from satsim.scansnap.snap import DEFAULT_EPSILON


def _progress(total: int, label: str):
    """Return a click progress bar on standard error."""
    return click.progressbar(length=total, label=label, file=sys.stderr)


@click.command("scan-snap")
@click.option("--grid", "grid_name", type=click.Choice(list(GRIDS)), default="small",
              show_default=True, help="Settings to sweep: the published K × η_Z × r grid, or a "
              "2 × 2 × 2 one.")
@click.option("--seeds", type=count(1), default=10, show_default=True,
              help="Seeds per setting.")
@click.option("--iters", type=count(1), default=100, show_default=True,
              help="SGD iterations.")
@click.option("--batch", type=count(1), default=128, show_default=True,
              help="Sequences per batch.")
@click.option("--device", default="auto", show_default=True,
              help="auto, cpu, cuda or cuda:N.")
@click.option("--zero-init", is_flag=True, help="Start Z and Y at zero instead of PyTorch's "
              "default Linear initialisation.")
@click.option("--epsilon", type=click.FloatRange(min=0, min_open=True), default=DEFAULT_EPSILON,
              show_default=True, help="Snap threshold on the per-iteration TV change of the "
              "attention composition.")
@click.option("--threads", type=count(1), default=2, show_default=True,
              help="torch CPU threads.")
@click.option("--trace", "trace_text", metavar="K,ETA_Z,R", default=None,
              help="Trace one setting every iteration instead of running the grid.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
@click.option("--plot", "plot_dir", type=OutputPath(folder=True), default=None,
              help="Write PNG figures (and a trace's arrays) into this folder.")
def command(grid_name, seeds, iters, batch, device, zero_init, epsilon, threads, trace_text,
            as_json, plot_dir) -> None:
    """Reproduce Scan and Snap: attention entropy over K × η_Z × r, snap points, saturation."""
    from satsim.commands.torch_setup import import_torch
    from satsim.resources import check_memory
    from satsim.scansnap.trace import parse_setting

    setting = parse_setting(trace_text) if trace_text is not None else None
    if setting is not None:
        check_memory(run_bytes(setting[0], seeds, iters, batch, history=True),
                     f"--trace K={setting[0]}", "lower K, --seeds, --iters or --batch")
    else:
        grid = GRIDS[grid_name]
        check_memory(run_bytes(max(grid.n_queries), seeds * len(grid.eta_z) * len(grid.ratio),
                               iters, batch, history=False),
                     f"the {grid_name} grid", "lower --seeds, --iters or --batch")
    import_torch(threads)
    from satsim.scansnap.train import resolve_device

    device = str(resolve_device(device))
    common = dict(iters=iters, batch=batch, zero_init=zero_init, device=device, epsilon=epsilon)
    if setting is not None:
        _trace(setting, seeds, common, as_json, plot_dir)
    else:
        _grid(GRIDS[grid_name], seeds, common, as_json, plot_dir, threads)


def run_bytes(k: int, runs: int, iters: int, batch: int, history: bool) -> float:
    """Rough float64 bytes of ``runs`` runs with K query tokens side by side (L = 10 + 20K)."""
    width = 10 + 20 * k
    per_run = (4 * batch * width + 12 * k * width + (iters + 1) * 16
               + (iters + 1) * 3 * k * width * history)  # + per-iteration measures (+ Z, Y)
    return 8.0 * runs * per_run


def _grid(grid, seeds, common, as_json, plot_dir, threads) -> None:
    """Run a grid, print its table or JSON, draw its figures."""
    from satsim.scansnap.grid import run_grid
    from satsim.scansnap.report import divergence_note, grid_matrix, grid_table

    total = len(grid.n_queries) * common["iters"]
    with _progress(total, f"{grid.name} grid, {grid.n_cells} cells × {seeds} seeds") as bar:
        result = run_grid(grid, seeds, on_step=lambda _: bar.update(1), **common)
    files = _plots("grid", result, plot_dir)
    if as_json:
        click.echo(json.dumps({**result.to_dict(), "plots": files}))
        return
    init = "zero init" if result.zero_init else "default init"
    click.echo(f"scan-snap · grid {grid.name} · {seeds} seeds · {result.iters} iterations · batch "
               f"{result.batch} · {init} · {result.device} · {threads} threads")
    for line in grid_table(result) + [""] + grid_matrix(result):
        click.echo(line)
    for line in divergence_note(sum(int(c.diverged.sum()) for c in result.cells),
                                sum(len(c.snap) for c in result.cells)):
        click.echo(line)
    click.echo(f"wall time {result.wall_s:.1f} s")
    for path in files:
        click.echo(f"wrote {path}")


def _trace(setting, seeds, common, as_json, plot_dir) -> None:
    """Trace one setting, print its per-iteration table or JSON, draw its figure."""
    from satsim.scansnap.report import trace_table
    from satsim.scansnap.trace import run_trace

    k, eta_z, ratio = setting
    with _progress(common["iters"], f"trace K={k} η_Z={eta_z:g} r={ratio:g}") as bar:
        trace = run_trace(k, eta_z, ratio, seeds, on_step=lambda _: bar.update(1), **common)
    files = _plots("trace", trace, plot_dir)
    if as_json:
        click.echo(json.dumps({**trace.to_dict(), "plots": files}))
        return
    click.echo(f"scan-snap trace · K {k} · η_Z {eta_z:g} · η_Y {eta_z * ratio:g} (r {ratio:g}) · "
               f"{seeds} seeds · {trace.runs.iters} iterations")
    for line in trace_table(trace):
        click.echo(line)
    sat = trace.to_dict()["saturation"]
    click.echo("saturation view at the end: " + ", ".join(f"{k} {v:.3f}" for k, v in sat.items()))
    for path in files:
        click.echo(f"wrote {path}")


def _plots(kind: str, result, plot_dir) -> list[str]:
    """Write the figures of a grid or a trace when a folder was given."""
    if plot_dir is None:
        return []
    from satsim.scansnap import plots

    if kind == "grid":
        return plots.write_grid_plots(result, plot_dir)
    return plots.write_trace_plots(result, plot_dir)
