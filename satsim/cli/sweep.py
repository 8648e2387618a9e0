"""``satsim sweep``: a grid of training runs from one command, and its results table."""

from __future__ import annotations

import json
import re

import click

from satsim.cli.options import NonEmptyPath, count, cpu_count, real
from satsim.cli.progress import progressbar
from satsim.errors import SatsimError


def _by_numbers(name: str) -> list:
    """A sort key that reads the numbers in a name as numbers: test-52-100 before test-102-150."""
    return [int(part) if part.isdigit() else part for part in re.split(r"(\d+)", name)]


def _table(rows: list[dict]) -> None:
    """Print one line per run: name, held-out accuracies (— where a set is empty), ‖θ‖, time."""
    splits = sorted({split for row in rows for split in row.get("eval", {})}, key=_by_numbers)
    click.echo(f"{'run':<28} " + " ".join(f"{s:>13}" for s in splits) + f" {'‖θ‖':>9} {'s':>7}")
    for row in rows:
        if "error" in row:
            click.echo(f"{row['name']:<28} failed: {row['error']}")
            continue
        cells = " ".join(f"{row['eval'][s]:>13.4f}" if s in row["eval"] else f"{'—':>13}"
                         for s in splits)
        click.echo(f"{row['name']:<28} {cells} {row['theta_norm']:>9.3f} "
                   f"{row['elapsed']:>7.1f}")


GROUP_HELP = ("Train up to N runs of one architecture at once as one stack (one batched step; "
              "fewer where memory is short); each run's files are as if trained alone, to "
              "rounding.")


def _engine_options(engine: str, jobs: int, address, cpus_per_run, gpus_per_run) -> dict:
    """The Ray engine's options, refusing those that mean nothing to the chosen engine."""
    if engine == "local":
        given = [name for name, value in [("--address", address), ("--cpus-per-run", cpus_per_run),
                                          ("--gpus-per-run", gpus_per_run)] if value is not None]
        if given:
            raise SatsimError(f"{given[0]} is an option of --engine ray")
        return {}
    if jobs != 1:
        raise SatsimError("--jobs is an option of --engine local; Ray runs as many runs at once "
                          "as the cluster's CPUs allow (see --cpus-per-run)")
    import ray  # noqa: F401  (a missing extra is reported here, before anything runs)

    return {"address": address, "cpus_per_run": cpus_per_run or 1, "gpus_per_run": gpus_per_run}


@click.command("sweep")
@click.option("--out", "out", type=NonEmptyPath(file_okay=False), required=True,
              help="Sweep folder: plan.json, runs/NAME per run, results/NAME.json per "
              "finished run, results.jsonl.")
@click.option("--lang", default="", help="Languages, comma-separated.")
@click.option("--seed", default="", help="Seeds, comma-separated.")
@click.option("--lr", default="", help="Learning rates, comma-separated.")
@click.option("--vary", multiple=True, metavar="KEY=V1,V2",
              help="Any other training setting to sweep (repeatable).")
@click.option("--set", "fixed", multiple=True, metavar="KEY=VALUE",
              help="A setting shared by every run (repeatable), e.g. steps=500.")
@click.option("--jobs", type=cpu_count(), default=1, show_default=True,
              help="Runs at once (one process each, one torch thread each).")
@click.option("--engine", type=click.Choice(["local", "ray"]), default="local", show_default=True,
              help="Run here (--jobs processes) or as Ray tasks (needs satsim[ray]).")
@click.option("--address", default=None,
              help="Ray cluster to join (default: RAY_ADDRESS, else a local cluster).")
@click.option("--cpus-per-run", type=count(1), default=None,
              help="CPUs (and torch threads) of each Ray task [default: 1].")
@click.option("--gpus-per-run", type=real(0), default=None,
              help="GPUs of each Ray task [default: 1 for --set device=cuda, else 0].")
@click.option("--group-size", type=count(1), default=1, show_default=True,
              help=GROUP_HELP)
@click.option("--plan", "plan_only", is_flag=True,
              help="Print the planned runs as JSON lines and stop (to hand them to another "
              "engine: each line is the first argument of satsim.training.runs.run_one).")
@click.option("--collect", "collect_only", is_flag=True,
              help="Only gather the results of finished runs under --out.")
@click.option("--json", "as_json", is_flag=True, help="Print the results as JSON lines.")
def command(out, lang, seed, lr, vary, fixed, jobs, engine, address, cpus_per_run,
            gpus_per_run, group_size, plan_only, collect_only, as_json) -> None:
    """Train a grid of runs (languages × seeds × learning rates × …) and tabulate them."""
    from satsim.training.grid import base_settings, grid_from_lists
    from satsim.training.runs import failures_line
    from satsim.training.sweep import check_plan, collect, plan, run_sweep

    if collect_only:
        rows = collect(out)
    else:
        configs = plan(base_settings(fixed), grid_from_lists(lang, seed, lr, vary))
        if plan_only:
            for planned in configs:
                click.echo(json.dumps(planned))
            return
        ray_options = _engine_options(engine, jobs, address, cpus_per_run, gpus_per_run)
        check_plan(configs, out)
        with progressbar(len(configs), f"sweep of {len(configs)} runs",
                         item_show_func=lambda name: name) as bar:
            rows = run_sweep(configs, out, jobs=jobs, engine=engine, ray_options=ray_options,
                             on_result=lambda row: bar.update(1, row["name"]),
                             group_size=group_size)
    if as_json:
        for row in rows:
            click.echo(json.dumps(row))
    else:
        _table(rows)
    failures = failures_line(rows, "runs")
    if failures:
        raise SatsimError(failures)
