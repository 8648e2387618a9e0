"""Sweeps: a grid of training runs, run here (a process pool) or on a Ray cluster.

A sweep is a plain list of configs (:func:`plan`); :func:`satsim.training.runs.run_one` trains one
of them into ``ROOT/runs/NAME`` and returns its result row. A run that finished is not run again,
and one that was interrupted resumes from its last checkpoint.

A sweep folder knows its plan: ``ROOT/plan.json`` is written once, and a later call with another
plan is refused before anything is written (:func:`check_plan`). Each finished run's row is
recorded by the driver in ``ROOT/results/NAME.json`` as it arrives (so rows returned from other
machines are kept where the driver runs), and ``ROOT/results.jsonl`` holds the table in plan order.
A run that fails for its own reasons (a diverging loss, a bad setting) gives a row with an
``error`` and the other runs go on.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from contextlib import ExitStack
from multiprocessing import get_context
from pathlib import Path

from satsim.errors import SatsimError
from satsim.output import write_text_atomically
from satsim.training.budget import (
    check_training_disk,
    check_training_memory,
    run_disk_bytes,
    training_bytes,
)
from satsim.training.config import TrainConfig
from satsim.training.runs import canonical_settings, read_json, result_row, run_group, run_one

Worker = Callable[..., dict]
"""What makes a planned run's row: ``worker(planned, root[, threads])``, top-level (picklable)."""
GroupWorker = Callable[..., list[dict]]
"""Trains planned runs as one stack, gives their rows: ``worker(group, root[, threads])``."""

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


def _plan_difference(held, configs: list[dict]) -> str | None:
    """How the plan held in a sweep folder differs from the new one, in words (None: it is it).

    Settings are compared with defaults filled in, so a plan written before a setting existed
    still matches when the new setting is at its default.
    """
    if not isinstance(held, list) or not all(isinstance(c, dict) for c in held):
        return "its plan.json is not a list of runs"
    old_names = [c.get("name") for c in held]
    if old_names != [c["name"] for c in configs]:
        return f"it plans runs {', '.join(map(str, old_names))}"
    for old, new in zip(held, configs):
        before = canonical_settings(old.get("settings", {}))
        if before is None:
            return f"run {new['name']} has settings this version does not know"
        after = canonical_settings(new["settings"])
        changed = [key for key in after if before[key] != after[key]]
        if changed:
            key = changed[0]
            return f"run {new['name']} has {key}={before[key]!r}, not {after[key]!r}"
    return None


def check_plan(configs: list[dict], root: str | Path) -> None:
    """Refuse a sweep folder that holds another plan, or a run or row with other settings.

    Reads only: nothing is written until the plan, every existing run's config.json and every
    recorded row agree with ``configs``.
    """
    root = Path(root)
    if (root / "plan.json").exists():
        difference = _plan_difference(read_json(root / "plan.json"), configs)
        if difference is not None:
            raise SatsimError(f"{root} holds another sweep ({difference}); "
                              "rerun it with its own options, or choose another --out")
    for planned in configs:
        wanted = canonical_settings(planned["settings"])
        config = root / "runs" / planned["name"] / "config.json"
        if config.exists() and canonical_settings(read_json(config)) != wanted:
            raise SatsimError(f"{config.parent} holds a run with other settings than the plan's; "
                              "choose another --out")
        recorded = _recorded(root, planned["name"])
        if recorded is not None and canonical_settings(_row_settings(recorded)) != wanted:
            raise SatsimError(f"{root / 'results' / planned['name']}.json records a run with "
                              "other settings than the plan's; choose another --out")


def _row_settings(row: dict) -> dict:
    """The training settings inside a result row."""
    return {key: row[key] for key in TrainConfig.__dataclass_fields__ if key in row}


def _write_atomic(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` (its folder made if missing) so a kill leaves old or new."""
    path.parent.mkdir(parents=True, exist_ok=True)
    write_text_atomically(path, text)


def _recorded(root: Path, name: str) -> dict | None:
    """The row the driver recorded for run ``name``, if any."""
    path = root / "results" / f"{name}.json"
    return read_json(path) if path.exists() else None


def plan_groups(todo: list[dict], size: int, jobs: int = 1) -> list[list[dict]]:
    """The planned runs in stacks of one :func:`~satsim.training.group.group_key`, plan order.

    A stack holds at most ``size`` runs, and fewer where ``jobs`` stacks of its largest run's
    :func:`~satsim.training.budget.training_bytes` each would not fit in the memory free now.
    """
    import languages
    from satsim.engine.resources import available_memory
    from satsim.training.group import group_key

    keyed: dict[tuple, list[tuple[dict, float]]] = {}
    for planned in todo:
        config = TrainConfig.from_dict(planned["settings"])
        alphabet = len(languages.get(config.lang).alphabet)
        labels = 1 if config.task == "recognition" else alphabet + 1
        keyed.setdefault(group_key(config, labels), []).append(
            (planned, training_bytes(config, alphabet)))
    groups = []
    for members in keyed.values():
        largest = max(needed for _, needed in members)
        step = max(1, min(size, int(available_memory() // (largest * jobs))))
        groups += [[planned for planned, _ in members[start:start + step]]
                   for start in range(0, len(members), step)]
    return groups


def _stacks(root: Path, todo: list[dict], group_size: int, jobs: int) -> list[list[dict]]:
    """The stacks to train: as first planned for this folder (ROOT/stacks.json), else planned now.

    A stacked model's float rounding depends on the runs beside it, so a resumed sweep trains
    each run in the stack it started in (those of its runs still to do), whatever the memory
    free now; a rerun with another ``group_size`` is refused.
    """
    path = root / "stacks.json"
    if not todo:
        return []
    if path.exists():
        stored = read_json(path)
        if stored["group_size"] != group_size:
            raise SatsimError(f"{root} was trained in stacks of up to {stored['group_size']} "
                              f"runs; resume it with --group-size {stored['group_size']}, or "
                              "give a fresh --out")
        by_name = {planned["name"]: planned for planned in todo}
        return [[by_name[name] for name in names if name in by_name]
                for names in stored["groups"] if any(name in by_name for name in names)]
    return plan_groups(todo, group_size, jobs) if group_size > 1 else [[run] for run in todo]


def _local_group_rows(groups: list[list[dict]], root: Path, jobs: int,
                      worker: GroupWorker) -> Iterator[dict]:
    """Rows of the planned stacks as each stack finishes, here or in ``jobs`` processes."""
    if jobs == 1:
        for group in groups:
            yield from worker(group, str(root))
        return
    with ProcessPoolExecutor(jobs, mp_context=get_context("spawn")) as pool:
        futures = [pool.submit(worker, group, str(root)) for group in groups]
        for future in as_completed(futures):
            yield from future.result()


def _local_rows(todo: list[dict], root: Path, jobs: int, worker: Worker = run_one
                ) -> Iterator[dict]:
    """Rows of the planned runs as they finish, in this process or ``jobs`` processes."""
    if jobs == 1:
        yield from (worker(planned, str(root)) for planned in todo)
        return
    with ProcessPoolExecutor(jobs, mp_context=get_context("spawn")) as pool:
        futures = [pool.submit(worker, planned, str(root)) for planned in todo]
        yield from (future.result() for future in as_completed(futures))


def run_sweep(configs: list[dict], root: str | Path, *, jobs: int = 1, engine: str = "local",
              ray_options: dict | None = None,
              on_result: Callable[[dict], None] | None = None,
              worker: Worker = run_one, group_size: int = 1,
              group_worker: GroupWorker = run_group) -> list[dict]:
    """Run every planned config and write ROOT/results.jsonl; return the rows in plan order.

    The plan is checked against the folder first (:func:`check_plan`); runs with a recorded
    row are not run again. ``engine`` is ``"local"`` (``jobs`` processes) or ``"ray"``
    (``ray_options`` as for :func:`satsim.training.ray_engine.ray_rows`). Each row is
    recorded and passed to ``on_result`` as its run finishes, in any order. ``worker`` makes a
    planned run's row (default :func:`run_one`; any top-level function with its arguments,
    such as a benchmark's train-then-evaluate). With ``group_size`` above 1 the runs that share
    an architecture train as stacks of up to that many (:func:`plan_groups`), each stack made
    by ``group_worker`` (default :func:`run_group`).
    """
    root = Path(root).resolve()
    check_plan(configs, root)
    rows = {}
    for planned in configs:
        recorded = _recorded(root, planned["name"])
        if recorded is not None and "error" not in recorded:
            rows[planned["name"]] = recorded
    todo = [planned for planned in configs if planned["name"] not in rows]
    if engine == "local" and todo:
        check_devices(todo)
        _check_memory(todo, min(jobs, len(todo)), root)
    stacks = _stacks(root, todo, group_size, jobs if engine == "local" else 1)
    with ExitStack() as stack:
        if engine == "ray" and todo:  # joined before writing: a cluster not found leaves nothing
            from satsim.training.ray_engine import ray_group_rows, ray_rows, session

            options = dict(ray_options or {})
            stack.enter_context(session(options.pop("address", None)))
            arriving = (ray_group_rows(stacks, root, worker=group_worker, **options)
                        if group_size > 1
                        else ray_rows(todo, root, worker=worker, **options))
        elif group_size > 1:
            arriving = _local_group_rows(stacks, root, jobs, group_worker)
        else:
            arriving = _local_rows(todo, root, min(jobs, max(len(todo), 1)), worker)
        return _record_rows(configs, root, rows, arriving, on_result, (group_size, stacks))


def check_devices(todo: list[dict]) -> None:
    """Refuse, before any run starts here, a device this machine lacks (cuda without a GPU)."""
    from satsim.soft.device import resolve_device

    for device in sorted({planned["settings"]["device"] for planned in todo}):
        resolve_device(device)


def _check_memory(todo: list[dict], at_once: int, root: Path) -> None:
    """Refuse, before writing, runs beyond free memory (``at_once`` at a time) or disk."""
    import languages

    sizes = []
    for planned in todo:
        config = TrainConfig.from_dict(planned["settings"])
        alphabet = len(languages.get(config.lang).alphabet)
        sizes.append((training_bytes(config, alphabet), config, alphabet))
    needed, config, alphabet = max(sizes, key=lambda size: size[0])
    check_training_memory(config, alphabet, runs=at_once, needed=needed)
    _, config, alphabet = max(sizes, key=lambda size: run_disk_bytes(size[1], size[2]))
    check_training_disk(config, alphabet, root, runs=len(todo))


def _record_rows(configs: list[dict], root: Path, rows: dict, arriving: Iterator[dict],
                 on_result: Callable[[dict], None] | None,
                 stacks: tuple[int, list[list[dict]]]) -> list[dict]:
    """Write the plan and its stacks, record each arriving row, then the table (plan order)."""
    root.mkdir(parents=True, exist_ok=True)
    if not (root / "plan.json").exists():
        _write_atomic(root / "plan.json", json.dumps(configs, indent=2) + "\n")
    group_size, groups = stacks
    if groups and not (root / "stacks.json").exists():
        _write_atomic(root / "stacks.json", json.dumps({"group_size": group_size, "groups": [
            [planned["name"] for planned in group] for group in groups]}) + "\n")
    for row in rows.values():
        if on_result:
            on_result(row)
    for row in arriving:
        _write_atomic(root / "results" / f"{row['name']}.json", json.dumps(row) + "\n")
        rows[row["name"]] = row
        if on_result:
            on_result(row)
    table = [rows[planned["name"]] for planned in configs]
    _write_atomic(root / "results.jsonl", "".join(json.dumps(row) + "\n" for row in table))
    return table


def collect(root: str | Path) -> list[dict]:
    """Rows of the runs that have finished or failed, in plan order (for sweeps run elsewhere).

    A row comes from ROOT/results/NAME.json (recorded by the driver, wherever the run ran) or
    else from ROOT/runs/NAME/summary.json (a run that finished on this filesystem).
    """
    root = Path(root)
    if (root / "plan.json").exists():
        names = [planned["name"] for planned in read_json(root / "plan.json")]
    elif (root / "runs").is_dir():
        names = sorted(run.name for run in (root / "runs").iterdir())
    else:
        raise SatsimError(f"{root} holds no sweep (no plan.json or runs/ folder)")
    rows = []
    for name in names:
        recorded = _recorded(root, name)
        if recorded is not None and "error" not in recorded:
            rows.append(recorded)
        elif (root / "runs" / name / "summary.json").exists():
            rows.append(result_row(name, root / "runs" / name))
        elif recorded is not None:
            rows.append(recorded)
    return rows
