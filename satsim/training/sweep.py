"""Sweeps: a grid of training runs, run here or handed to any distributed engine.

A sweep is a plain list of configs (:func:`plan`); :func:`run_one` trains one of them into
``ROOT/runs/NAME`` and returns its result row, and it is a top-level function of plain
arguments, so an engine that maps a function over inputs (a process pool here; Ray, Dask or a
batch queue elsewhere) runs a sweep without change. A run that finished is not run again, and
one that was interrupted resumes from its last checkpoint. :func:`collect` reads every run's
summary into the results table.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from multiprocessing import get_context
from pathlib import Path

from satsim.errors import SatsimError
from satsim.training.config import TrainConfig

SHORT = {"lang": "", "task": "", "seed": "s", "lr": "lr", "optimizer": "", "weight_decay": "wd",
         "layers": "L", "d_model": "d", "heads": "h", "norm": "", "steps": "n"}


def run_name(config: dict, varied: Sequence[str]) -> str:
    """A readable directory name from the settings that vary across the sweep."""
    parts = [f"{SHORT.get(key, key)}{config[key]:g}" if isinstance(config[key], float)
             else f"{SHORT.get(key, key)}{config[key]}" for key in varied]
    return "-".join(parts) or "run"


def plan(base: dict, grid: dict[str, Sequence]) -> list[dict]:
    """Every combination of the ``grid`` values over ``base`` settings, each with its name."""
    for key in grid:
        if key not in TrainConfig.__dataclass_fields__:
            raise SatsimError(f"cannot sweep over unknown setting {key!r}")
        if not grid[key]:
            raise SatsimError(f"no values to sweep for {key!r}")
    varied = [key for key in grid if len(grid[key]) > 1] or list(grid)[:1]
    configs = []
    for values in itertools.product(*grid.values()):
        settings = {**base, **dict(zip(grid, values))}
        TrainConfig.from_dict(settings)  # validate before anything runs
        configs.append({"name": run_name(settings, varied), "settings": settings})
    names = [c["name"] for c in configs]
    if len(set(names)) != len(names):
        raise SatsimError("the sweep repeats a combination of settings")
    return configs


def result_row(name: str, run: Path) -> dict:
    """The results-table row of a finished run: its settings and its summary."""
    config = json.loads((run / "config.json").read_text())
    summary = json.loads((run / "summary.json").read_text())
    return {"name": name, **config, "eval": summary["eval"], "theta_norm": summary["norm"],
            "elapsed": summary["elapsed"]}


def run_one(planned: dict, root: str, threads: int = 1) -> dict:
    """Train one planned run under ``root`` (skip if finished, resume if cut) and return its row."""
    from satsim.commands.torch_setup import import_torch

    import_torch(threads)
    from satsim.training.loop import train

    run = Path(root) / "runs" / planned["name"]
    if not (run / "summary.json").exists():
        config = TrainConfig.from_dict(planned["settings"])
        train(config, run, resume=(run / "config.json").exists())
    return result_row(planned["name"], run)


def run_sweep(configs: list[dict], root: str | Path, *, jobs: int = 1,
              on_result: Callable[[dict], None] | None = None) -> list[dict]:
    """Run every planned config (``jobs`` processes at once) and write ROOT/results.jsonl."""
    root = Path(root)
    root.mkdir(parents=True, exist_ok=True)
    (root / "plan.json").write_text(json.dumps(configs, indent=2) + "\n")
    rows = []
    if jobs == 1:
        results = (run_one(c, str(root)) for c in configs)
        for row in results:
            rows.append(row)
            if on_result:
                on_result(row)
    else:
        with ProcessPoolExecutor(jobs, mp_context=get_context("spawn")) as pool:
            for row in pool.map(run_one, configs, [str(root)] * len(configs)):
                rows.append(row)
                if on_result:
                    on_result(row)
    (root / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return rows


def collect(root: str | Path) -> list[dict]:
    """Result rows of every finished run under ROOT/runs (for sweeps run elsewhere)."""
    runs = Path(root) / "runs"
    if not runs.is_dir():
        raise SatsimError(f"{root} holds no sweep (no runs/ folder)")
    return [result_row(run.name, run) for run in sorted(runs.iterdir())
            if (run / "summary.json").exists()]
