"""``satsim benchmark flare``: FLaRe's protocol, every model beside its saturated limit."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click

from satsim.cli.options import NonEmptyPath, OutputPath, PlotPath, count, cpu_count, real
from satsim.cli.sweep import GROUP_HELP
from satsim.errors import SatsimError
from satsim.output import write_text_atomically


@click.group("benchmark")
def command() -> None:
    """Published benchmarks, with each trained model beside its exact saturated limit."""


@command.command("flare")
@click.option("--scale", type=click.Choice(["small", "paper"]), default="small",
              show_default=True,
              help="small: sized to finish on a 2-core CPU; paper: FLaRe's model size and "
              "trials (docs/benchmarks.md says where each departs from FLaRe).")
@click.option("--engine", type=click.Choice(["local", "ray"]), default="local",
              show_default=True, help="Train here (--jobs processes) or as Ray tasks.")
@click.option("--out", type=OutputPath(folder=True), required=True,
              help="Benchmark folder: rerun the same command on it to resume.")
@click.option("--lang", "lang_text", default="",
              help="FLaRe languages, comma-separated [default: all eighteen, or those --data "
              "holds].")
@click.option("--data", type=NonEmptyPath(exists=True, file_okay=False), default=None,
              help="Train on FLaRe's published data: a folder of language folders (main.tok, "
              "labels.txt, datasets/validation-long, datasets/test); each model is scored on "
              "its language's test split too, against FLaRe's labels.")
@click.option("--seed", type=count(0), default=0, show_default=True,
              help="Base seed: each (language, trial) draws its own from it.")
@click.option("--trials", type=count(1), default=None,
              help="Trials per language [default: the scale's].")
@click.option("-n", "n", type=count(1), default=None,
              help="Test strings per length bin and model [default: the scale's].")
@click.option("--set", "fixed", multiple=True, metavar="KEY=VALUE",
              help="Change a training setting of every model (repeatable), e.g. steps=50.")
@click.option("--jobs", type=cpu_count(), default=1, show_default=True,
              help="Models at once with --engine local (one process each).")
@click.option("--address", default=None,
              help="Ray cluster to join (default: RAY_ADDRESS, else a local cluster).")
@click.option("--cpus-per-run", type=count(1), default=None,
              help="CPUs of each Ray task [default: 1].")
@click.option("--gpus-per-run", type=real(0), default=None,
              help="GPUs of each Ray task [default: 1 for device=cuda, else 0].")
@click.option("--group-size", type=count(1), default=1, show_default=True, help=GROUP_HELP)
@click.option("--select", type=click.Choice(["best", "final"]), default="best", show_default=True,
              help="Score each model at its checkpoint with the best validation-long accuracy "
              "(with --set lr_patience / stop_patience: the lowest cross-entropy), or as "
              "training ended (final: e.g. at its last attention_beta).")
@click.option("--plot", "plot_path", type=PlotPath(), default=None,
              help="Write the figure (PNG) here.")
@click.option("--json", "as_json", is_flag=True,
              help="JSON lines: each model's row as it finishes, then one row per language "
              "and per construction.")
def flare_command(scale, engine, out, lang_text, data, seed, trials, n, fixed, jobs, address,
                  cpus_per_run, gpus_per_run, group_size, select, plot_path, as_json) -> None:
    """Train FLaRe's recognisers (0–40), score soft, scaled and saturated limit to length 500."""
    from satsim.benchmarks import flare
    from satsim.benchmarks.flare_data import data_languages
    from satsim.benchmarks.tables import model_line, summary
    from satsim.cli.sweep import _engine_options
    from satsim.training.grid import parse_pairs, parse_setting
    from satsim.training.runs import failures_line

    chosen = flare.scale_named(scale)
    if data is not None and not lang_text:
        languages = data_languages(data)
    else:
        languages = flare.language_names(lang_text)
    overrides = {key: parse_setting(key, value) for key, value in parse_pairs(fixed, "--set")}
    configs = flare.plan(chosen, languages, trials or chosen.trials, overrides, n, data, seed,
                         final=select == "final")
    manifest = flare.manifest_for(chosen, languages, configs, overrides, seed)
    ray_options = _engine_options(engine, jobs, address, cpus_per_run, gpus_per_run)
    flare.check_folder(configs, manifest, out, engine)

    total = len(configs)
    done = []
    found = {path.stem for path in (Path(out) / "results").glob("*.json")}
    changed = "".join(f", {key}={value}" for key, value in overrides.items())
    source = f"FLaRe's data in {manifest['data']}" if data else "satsim's samplers"
    click.echo(f"FLaRe benchmark, scale {chosen.name}{changed}: {len(languages)} languages × "
               f"{manifest['trials']} trials = {total} models on {source}, base seed {seed}, "
               f"{manifest['evaluation']['n']} test strings per bin; engine {engine}; folder "
               f"{out}", err=True)

    def heard(row: dict) -> None:
        done.append(row["name"])
        seconds = sum((row.get("seconds") or {}).values())
        how = "recorded before" if row["name"] in found else f"{seconds:.0f} s of work"
        click.echo(f"[{len(done)}/{total}] {row['name']} ({how})", err=True)
        if as_json:
            click.echo(json.dumps({"kind": "model", **row}))
        else:
            click.echo(model_line(row, manifest["evaluation"]))
        sys.stdout.flush()

    result = flare.run_benchmark(configs, manifest, out, engine=engine, jobs=jobs,
                                 ray_options=ray_options, on_row=heard, group_size=group_size)
    tables = summary(result.manifest, result.languages, result.constructions, markdown=True)
    write_text_atomically(Path(out) / "table.md", tables + "\n")
    if as_json:
        for row in result.languages:
            click.echo(json.dumps({"kind": "language", **row}))
        for row in result.constructions:
            click.echo(json.dumps({"kind": "construction", **row}))
    else:
        click.echo("\n" + summary(result.manifest, result.languages, result.constructions))
    if plot_path is not None:
        from satsim.benchmarks.plots import plot_benchmark

        plot_benchmark(result.manifest, result.languages, result.constructions, plot_path)
        click.echo(f"figure written to {plot_path}", err=True)
    failures = failures_line(result.rows, "models")
    if failures:
        raise SatsimError(f"{failures}; the tables leave them out")
