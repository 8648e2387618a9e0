"""``satsim scan-snap``: the Scan-and-Snap experiments (attention training dynamics)."""

from __future__ import annotations

import json

import click

from satsim.cli.options import OutputPath, count, cpu_count, machine_cpus, real
from satsim.cli.progress import progressbar
from satsim.errors import SatsimError
from satsim.papers.scan_snap.data import LOSSES, N_COMMON
from satsim.papers.scan_snap.grid import GRIDS
from satsim.papers.scan_snap.snap import DEFAULT_EPSILON


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
@click.option("--zero-init", is_flag=True, help="Start Z and Y at zero instead of the authors' "
              "nn.Linear(M, M) initialisation (always on for --setting fig4).")
@click.option("--loss", "loss_kind", type=click.Choice(LOSSES), default="vocab",
              show_default=True, help="Decoder and cross-entropy over the whole vocabulary "
              "(the published protocol) or over the next tokens only (an ablation).")
@click.option("--epsilon", type=real(0, min_open=True), default=DEFAULT_EPSILON,
              show_default=True, help="Snap threshold on the per-iteration TV change of the "
              "attention composition.")
@click.option("--threads", type=cpu_count(), default=min(2, machine_cpus()), show_default=True,
              help="torch CPU threads.")
@click.option("--trace", "trace_text", metavar="K,ETA_Z,R", default=None,
              help="Trace one setting every iteration instead of running the grid.")
@click.option("--setting", "named", type=click.Choice(["fig4"]), default=None,
              help="Trace a named setting: fig4 is the paper's Figure 4 (2 query tokens, one "
              "next token each, zero init, η_Z = η_Y = 1).")
@click.option("--common", type=count(), default=N_COMMON, show_default=True,
              help="Common tokens shared by every next token (--trace and --setting only).")
@click.option("--common-per-query", type=count(), default=0, show_default=True,
              help="Common tokens of each query token (--trace and --setting only).")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
@click.option("--plot", "plot_dir", type=OutputPath(folder=True), default=None,
              help="Write PNG figures (and a trace's arrays) into this folder.")
def command(grid_name, seeds, iters, batch, device, zero_init, loss_kind, epsilon, threads,
            trace_text, named, common, common_per_query, as_json, plot_dir) -> None:
    """Reproduce Scan and Snap: attention entropy over K × η_Z × r, snap points, saturation."""
    from satsim.engine.resources import check_memory
    from satsim.papers.scan_snap.data import Task
    from satsim.papers.scan_snap.trace import FIG4, fig4_task, parse_setting
    from satsim.torch_setup import import_torch

    if trace_text is not None and named is not None:
        raise SatsimError("give either --trace or --setting, not both")
    layout = dict(n_common=common, common_per_query=common_per_query)
    if trace_text is None and named is None and (common, common_per_query) != (N_COMMON, 0):
        raise SatsimError("--common and --common-per-query apply to --trace and --setting; the "
                          "grid is Figure 6's layout")
    trace = None
    if trace_text is not None:
        k, eta_z, ratio = parse_setting(trace_text)
        trace = dict(task=Task(k, **layout), eta_z=eta_z, ratio=ratio, zero_init=zero_init)
    elif named == "fig4":
        trace = dict(task=fig4_task(**layout), name="fig4", **FIG4)
    if trace is not None:
        task = trace["task"]
        check_memory(run_bytes(task.n_queries, task.n_vocab, seeds, iters, batch, history=True),
                     f"the trace of K={task.n_queries}", "lower K, --seeds, --iters or --batch")
    else:
        grid = GRIDS[grid_name]
        k = max(grid.n_queries)
        check_memory(run_bytes(k, Task(k).n_vocab, seeds * len(grid.eta_z) * len(grid.ratio),
                               iters, batch, history=False),
                     f"the {grid_name} grid", "lower --seeds, --iters or --batch")
    import_torch(threads)
    from satsim.soft.device import resolve_device

    device = str(resolve_device(device))
    run = dict(iters=iters, batch=batch, loss=loss_kind, device=device, epsilon=epsilon)
    if trace is not None:
        _trace(trace, seeds, run, as_json, plot_dir)
    else:
        _grid(GRIDS[grid_name], seeds, dict(run, zero_init=zero_init), as_json, plot_dir,
              threads)


def run_bytes(k: int, width: int, runs: int, iters: int, batch: int, history: bool) -> float:
    """Rough float64 bytes of ``runs`` runs with K query tokens and M = ``width`` tokens."""
    per_run = (4 * batch * width + 12 * k * width + (iters + 1) * 16
               + (iters + 1) * 3 * k * width * history)  # + per-iteration measures (+ Z, Y)
    return 8.0 * runs * per_run


def _grid(grid, seeds, common, as_json, plot_dir, threads) -> None:
    """Run a grid, print its table or JSON, draw its figures."""
    from satsim.papers.scan_snap.grid import run_grid
    from satsim.papers.scan_snap.report import divergence_note, grid_matrix, grid_table

    total = len(grid.n_queries) * common["iters"]
    with progressbar(total, f"{grid.name} grid, {grid.n_cells} cells × {seeds} seeds") as bar:
        result = run_grid(grid, seeds, on_step=lambda _: bar.update(1), **common)
    files = _plots("grid", result, plot_dir)
    if as_json:
        click.echo(json.dumps({**result.to_dict(), "plots": files}))
        return
    init = "zero init" if result.zero_init else "nn.Linear(M, M) init"
    click.echo(f"scan-snap · grid {grid.name} · {seeds} seeds · {result.iters} iterations · batch "
               f"{result.batch} · {init} · loss over {_loss_text(result.loss)} · "
               f"{result.device} · {threads} threads")
    for line in grid_table(result) + [""] + grid_matrix(result):
        click.echo(line)
    for line in divergence_note(sum(int(c.diverged.sum()) for c in result.cells),
                                sum(len(c.snap) for c in result.cells)):
        click.echo(line)
    click.echo(f"wall time {result.wall_s:.1f} s")
    for path in files:
        click.echo(f"wrote {path}")


def _loss_text(loss: str) -> str:
    """Return how a header names the loss."""
    return "the whole vocabulary" if loss == "vocab" else "next tokens only (ablation)"


def _trace(setting, seeds, run, as_json, plot_dir) -> None:
    """Trace one setting, print its per-iteration table or JSON, draw its figure."""
    from satsim.papers.scan_snap.report import trace_table
    from satsim.papers.scan_snap.trace import run_trace

    task, eta_z, ratio = setting["task"], setting["eta_z"], setting["ratio"]
    label = setting.get("name") or f"K={task.n_queries} η_Z={eta_z:g} r={ratio:g}"
    with progressbar(run["iters"], f"trace {label}") as bar:
        trace = run_trace(seeds=seeds, on_step=lambda _: bar.update(1), **setting, **run)
    files = _plots("trace", trace, plot_dir)
    if as_json:
        click.echo(json.dumps({**trace.to_dict(), "plots": files}))
        return
    init = "zero init" if trace.zero_init else "nn.Linear(M, M) init"
    click.echo(f"scan-snap trace {trace.name} · K {task.n_queries} × {task.next_per_query} next "
               f"· {task.n_common} common + {task.common_per_query} per query · M "
               f"{task.n_vocab} · η_Z {eta_z:g} · η_Y {eta_z * ratio:g} (r {ratio:g}) · {init} "
               f"· loss over {_loss_text(run['loss'])} · {seeds} seeds · "
               f"{trace.runs.iters} iterations")
    for line in trace_table(trace, early=20 if trace.name == "fig4" else 0):
        click.echo(line)
    sat = trace.to_dict()["saturation"]
    click.echo("saturation view at the end: " + ", ".join(f"{k} {v:.3f}" for k, v in sat.items()))
    for path in files:
        click.echo(f"wrote {path}")


def _plots(kind: str, result, plot_dir) -> list[str]:
    """Write the figures of a grid or a trace when a folder was given."""
    if plot_dir is None:
        return []
    from satsim.papers.scan_snap import plots

    if kind == "grid":
        return plots.write_grid_plots(result, plot_dir)
    return plots.write_trace_plots(result, plot_dir)
