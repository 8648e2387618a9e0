"""One run of a sweep: train it into its folder (or find it finished) and give its row.

:func:`run_one` is a top-level function of plain arguments, so any engine that maps a function
over inputs (a process pool, a Ray cluster) runs a sweep without change; :func:`run_group` trains
several planned runs of one architecture as one stack and gives their rows.
"""

from __future__ import annotations

import json
from pathlib import Path

from satsim.errors import SatsimError, first_line
from satsim.training.config import TrainConfig


def canonical_settings(settings: dict) -> dict | None:
    """Settings in canonical form (every field, defaults filled); None if they are not a config.

    A data folder's digest is left out: a run stamps it when it starts, a plan never has it, and
    the training loop itself refuses a folder that changed since.
    """
    try:
        found = TrainConfig.from_dict(settings).to_dict()
    except (SatsimError, TypeError):
        return None
    found.pop("data_digest", None)
    return found


def read_json(path: Path):
    """A JSON file of the sweep folder, or a one-line error naming it."""
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError) as error:
        raise SatsimError(f"cannot read {path} ({error}); move it away to go on") from None


def result_row(name: str, run: Path) -> dict:
    """The results-table row of a finished run: its settings and its summary."""
    config = read_json(run / "config.json")
    summary = read_json(run / "summary.json")
    return {"name": name, **config, "eval": summary["eval"], "theta_norm": summary["norm"],
            "resumed_from": summary.get("resumed_from"), "elapsed": summary["elapsed"]}


def failed_row(planned: dict, error: str) -> dict:
    """The results-table row of a run that failed: its settings and why."""
    return {"name": planned["name"], **planned["settings"], "error": error}


def failures_line(rows: list[dict], noun: str) -> str | None:
    """How many of ``rows`` failed and why the first did, in one line (None if none failed)."""
    failed = [row for row in rows if "error" in row]
    if not failed:
        return None
    return (f"{len(failed)} of {len(rows)} {noun} failed ({', '.join(r['name'] for r in failed)}"
            f"); the first, {failed[0]['name']}: {failed[0]['error']}")


def _pending(planned: dict, root: str) -> tuple[TrainConfig, Path, bool] | None:
    """A planned run still to train: its config, folder and whether to resume (None: done).

    A folder holding a run with other settings is refused (SatsimError).
    """
    run = Path(root) / "runs" / planned["name"]
    if (run / "summary.json").exists():
        return None
    config = TrainConfig.from_dict(planned["settings"])
    held = run / "config.json"
    if held.exists() and canonical_settings(read_json(held)) != canonical_settings(
            config.to_dict()):
        raise SatsimError(f"{run} holds a run with other settings than the plan's")
    return config, run, held.exists()


def run_one(planned: dict, root: str, threads: int = 1) -> dict:
    """Train one planned run under ``root`` (skip if finished, resume if cut) and return its row.

    A run that fails for its own reasons (a SatsimError: diverging loss, bad setting, a run
    folder holding other settings) returns a row with ``error`` instead of raising.
    """
    from satsim.torch_setup import import_torch

    import_torch(threads)
    from satsim.training.loop import train

    try:
        pending = _pending(planned, root)
        if pending is not None:
            config, run, resume = pending
            train(config, run, resume=resume)
        return result_row(planned["name"], Path(root) / "runs" / planned["name"])
    except SatsimError as error:
        return failed_row(planned, first_line(error))


def run_group(group: list[dict], root: str, threads: int = 1) -> list[dict]:
    """Train planned runs of one architecture as one stack (see satsim.training.group); rows.

    Each run is skipped if finished and resumed if cut, as :func:`run_one` does; a run that
    fails for its own reasons gives its row with ``error`` and the others go on.
    """
    from satsim.torch_setup import import_torch

    import_torch(threads)
    from satsim.training.group import train_group

    failed, todo = {}, []
    for planned in group:
        try:
            pending = _pending(planned, root)
        except SatsimError as error:
            failed[planned["name"]] = failed_row(planned, first_line(error))
            continue
        if pending is not None:
            todo.append((planned, *pending))
    if todo:
        results = train_group([config for _, config, _, _ in todo],
                              [run for _, _, run, _ in todo],
                              resume=[resume for _, _, _, resume in todo])
        for (planned, *_), result in zip(todo, results):
            if isinstance(result, SatsimError):
                failed[planned["name"]] = failed_row(planned, first_line(result))
    rows = []
    for planned in group:
        try:
            rows.append(failed.get(planned["name"])
                        or result_row(planned["name"], Path(root) / "runs" / planned["name"]))
        except SatsimError as error:
            rows.append(failed_row(planned, first_line(error)))
    return rows
