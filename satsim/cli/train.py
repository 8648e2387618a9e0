"""``satsim train``: train a soft transformer on a language task, with norm-growth metrics."""

from __future__ import annotations

import json
from contextlib import ExitStack
from pathlib import Path

import click
from click.core import ParameterSource

from satsim.cli.options import OutputPath, count, cpu_count, get_language, real
from satsim.cli.progress import progressbar
from satsim.errors import SatsimError
from satsim.output import check_output_folder
from satsim.training.checkpoint import holds_run
from satsim.training.config import (
    DEFAULTS,
    DTYPES,
    NORMS,
    OPTIMIZERS,
    POSITIONALS,
    TRAIN_TASKS,
    TrainConfig,
    resumed_config,
)


def _option(name: str, kind, help_text: str, **extra):
    """A --name option whose default comes from DEFAULTS."""
    flag = "--" + name.replace("_", "-")
    extra.setdefault("show_default", True)
    return click.option(flag, name, type=kind, default=DEFAULTS[name], help=help_text, **extra)


def _read_data_folder(settings: dict, context) -> None:
    """--data: its absolute path; --lang (else the folder's) and --train-size unless given.

    The default --batch-size shrinks to a folder of fewer strings; a larger one given is refused.
    """
    from languages import flare

    folder = Path(settings["data"]).resolve()
    if not folder.is_dir():
        raise SatsimError(f"--data: {folder} is not a folder; give a dataset folder in FLaRe's "
                          "layout (satsim sample --flare writes one)")
    settings["data"] = str(folder)
    given = {name for name in ("lang", "train_size", "split", "batch_size")
             if context.get_parameter_source(name) == ParameterSource.COMMANDLINE}
    if "split" in given:
        raise SatsimError("--split goes without --data: the folder's splits are the data "
                          "(leave out --split)")
    settings["split"] = "flare"  # the report's default length bins
    if "lang" in given:
        flare.check_folder_language(folder, get_language(settings["lang"]).name)
    else:
        settings["lang"] = flare.folder_language(folder).name
    if "train_size" not in given:
        split = flare.read_split(folder, get_language(settings["lang"]))
        size = len(split.positives) if settings["task"] == "next-symbol" else len(split.strings)
        settings["train_size"] = max(size, 1)
    if "batch_size" not in given:
        settings["batch_size"] = min(settings["batch_size"], settings["train_size"])


@click.command("train")
@_option("lang", str, "Language to train on (satsim languages).")
@_option("task", click.Choice(TRAIN_TASKS), "Task.")
@_option("split", str, "Split preset: bhattamishra, deletang, flare or satsim.")
@_option("steps", count(1), "Optimiser steps.")
@_option("batch_size", count(1), "Strings per batch.")
@_option("optimizer", click.Choice(OPTIMIZERS), "Optimiser.")
@_option("lr", real(0, min_open=True), "Learning rate.")
@_option("weight_decay", real(0), "Weight decay.")
@_option("momentum", real(0, 1, max_open=True), "SGD momentum.")
@_option("clip_norm", real(0), "Scale each step's gradient to at most this L2 norm (0: no "
         "clipping; FLaRe clips at 5).")
@_option("attention_beta", real(0, min_open=True),
         "Inverse temperature of the attention scores at the last step, grown geometrically "
         "from 1 at step 0 (toward saturated attention); saved models carry it in their score "
         "scales.")
@_option("layers", count(1), "Blocks.")
@_option("d_model", count(1), "Residual width.")
@_option("heads", count(1), "Heads per layer.")
@_option("d_head", count(1), "Query/key/value width per head.")
@_option("d_mlp", count(1), "Feed-forward width.")
@_option("norm", click.Choice(NORMS), "LayerNorm placement.")
@_option("positional", click.Choice(POSITIONALS), "Positional encoding.")
@_option("seed", count(0), "Seed of the data, the initialisation and the batches.")
@_option("train_size", count(1), "Training strings.")
@_option("checkpoint_every", count(1), "Steps between checkpoints.")
@_option("log_every", count(1), "Steps between metrics rows.")
@_option("device", str, "auto, cpu, cuda or cuda:N.")
@_option("dtype", click.Choice(DTYPES), "Precision of training.")
@_option("data", str, "Train on this dataset folder in FLaRe's layout (its root split; "
         "datasets/* held out) instead of sampling --split; --lang defaults to its language "
         "and --train-size to all its strings.", show_default=False)
@click.option("--out", "out", type=OutputPath(folder=True), default=None,
              help="Run directory (default runs/LANG-TASK-seedS).")
@click.option("--resume", is_flag=True,
              help="Continue the run in --out from its last intact checkpoint, with its saved "
                   "settings (only --steps may change).")
@click.option("--threads", type=cpu_count(), default=1, show_default=True,
              help="torch CPU threads (small models run fastest on one).")
@click.option("--json", "as_json", is_flag=True, help="Print the summary as one JSON object.")
@click.pass_context
def command(context, out, resume, threads, as_json, **settings) -> None:
    """Train a soft transformer on a language; record norms, projections and saturation."""
    if settings["data"]:
        _read_data_folder(settings, context)
    default = f"runs/{settings['lang']}-{settings['task']}-seed{settings['seed']}"
    run = Path(out) if out else check_output_folder(default, "--out")  # --out: checked on parse
    if resume:
        if not (run / "config.json").exists():
            raise SatsimError(f"nothing to resume: {run} holds no run (config.json)")
        given = {name for name in settings
                 if context.get_parameter_source(name) == ParameterSource.COMMANDLINE}
        config = resumed_config(TrainConfig.load(run / "config.json"), settings, given)
    else:
        config = TrainConfig.from_dict({**DEFAULTS, **settings})
        if holds_run(run):
            raise SatsimError(f"{run} already holds a run; add --resume or choose another --out")
    from satsim.torch_setup import import_torch

    import_torch(threads)
    from satsim.soft.device import resolve_device
    from satsim.training.loop import train

    resolve_device(config.device)
    with ExitStack() as stack:
        first_step, bars = [0], []

        def advance(steps: int) -> None:
            # The bar opens after the first step, so that its clock (and so its time estimate)
            # leaves out the set-up, the held-out evaluation at step 0 and any resumed steps.
            if not bars:
                bars.append(stack.enter_context(progressbar(
                    max(config.steps - first_step[0], 0), f"training {config.lang}")))
            bars[0].update(steps)

        try:
            result = train(config, run, resume=resume, progress=advance,
                           notice=lambda message: click.echo(message, err=True),
                           on_start=lambda step: first_step.__setitem__(0, step))
        except KeyboardInterrupt:
            click.echo(f"interrupted; continue with: satsim train --resume --out {run}", err=True)
            raise click.exceptions.Abort() from None
    if as_json:
        click.echo(json.dumps(result.to_dict()))
        return
    click.echo(f"run {run}: {config.steps} steps in {result.elapsed:.1f} s, ‖θ‖ = "
               f"{result.norm:.3f}")
    for split, accuracy in result.eval.items():
        click.echo(f"  {split:<16} string accuracy {accuracy:.4f}")
    click.echo(f"report: satsim report {run}")
