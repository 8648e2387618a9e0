"""The Ray engine of ``satsim sweep``: each planned run (or stack) is a Ray task.

A run's task calls ``run_one``; with stacks, a task calls ``run_group`` on runs of one
architecture. The driver joins a cluster (``address``, else ``RAY_ADDRESS``, else a local one it
starts) and submits one task per run (or stack) with its CPUs and GPUs. Rows come back to the
driver as runs finish; the runs themselves write under the same absolute ``--out`` path on
whichever node they run. A task whose worker dies is retried by Ray (``max_retries``) and
``run_one`` (or ``run_group``) resumes it from its last checkpoint in that folder (on another
node only if ``--out`` is a shared filesystem).
"""

from __future__ import annotations

import os
import socket
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import ray

from satsim.errors import SatsimError, first_line
from satsim.training.runs import failed_row, run_group, run_one

RETRIES = 3
"""How many times Ray reruns a task whose worker died (the run then resumes from a checkpoint)."""
CONNECT_SECONDS = 10.0
"""How long a cluster's address may take to accept a connection before the sweep gives up."""
GCS_ATTEMPTS = "1"
"""Ray's attempts at a cluster's control store once its port answers (``RAY_gcs_server_port_
wait_time_s``, unless set already): one, about 40 s, instead of Ray's default of many minutes."""


def gpus_for(planned: dict, gpus_per_run: float | None) -> float:
    """GPUs a run asks Ray for: ``gpus_per_run`` if given, else one for a run on --device cuda."""
    if gpus_per_run is not None:
        return gpus_per_run
    return 1.0 if planned["settings"].get("device") == "cuda" else 0.0


def connect(address: str | None) -> bool:
    """Join the cluster at ``address`` (or RAY_ADDRESS, or start a local one); True if started.

    A cluster that cannot be found or reached is a one-line SatsimError naming the address,
    after a bounded wait: Ray itself retries an unreachable address for many minutes.
    """
    if ray.is_initialized():
        return False
    given = address or os.environ.get("RAY_ADDRESS") or None
    if given is not None and given != "local" and not given.startswith("ray://"):
        _check_reachable(given)
        os.environ.setdefault("RAY_gcs_server_port_wait_time_s", GCS_ATTEMPTS)
    try:
        ray.init(address=address, include_dashboard=False, logging_level="WARNING",
                 log_to_driver=False)
    except ConnectionError as error:
        raise SatsimError(f"cannot join a Ray cluster at {given}: "
                          f"{first_line(error)}") from None
    return True


def _check_reachable(given: str) -> None:
    """Refuse an address where no Ray cluster is found or nothing accepts a connection."""
    from ray._private.services import canonicalize_bootstrap_address

    advice = "start one (ray start --head) or give its address with --address or RAY_ADDRESS"
    try:
        resolved = canonicalize_bootstrap_address(given)
    except (ConnectionError, ValueError) as error:
        raise SatsimError(f"no Ray cluster at address {given!r} "
                          f"({first_line(error)}); {advice}") from None
    host, _, port = resolved.rpartition(":")
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=CONNECT_SECONDS).close()
    except (OSError, ValueError) as error:
        reason = getattr(error, "strerror", None) or str(error) or type(error).__name__
        raise SatsimError(f"cannot reach a Ray cluster at address {given!r} ({resolved}: "
                          f"{reason}); {advice}") from None


@contextmanager
def session(address: str | None) -> Iterator[None]:
    """Joined to a cluster (see :func:`connect`) for the block; a cluster it started is stopped."""
    started = connect(address)
    try:
        yield
    finally:
        if started:
            ray.shutdown()


def ray_rows(todo: list[dict], root: Path, *, address: str | None = None,
             cpus_per_run: int = 1, gpus_per_run: float | None = None,
             max_retries: int = RETRIES,
             worker: Callable[..., dict] = run_one) -> Iterator[dict]:
    """Rows of the planned runs as their Ray tasks finish, in any order.

    Each task is named ``satsim-run-NAME`` (its worker's process title reads
    ``ray::satsim-run-NAME`` while it runs). A task that Ray gave up on gives a row with
    ``error``: its worker died ``max_retries`` + 1 times, or it raised an internal error (the row
    then keeps the remote ``traceback``). Tasks still pending when the driver stops are
    cancelled; their runs resume from their checkpoints next time. ``worker`` (default
    :func:`run_one`) makes each row from ``(planned, root, cpus_per_run)``.
    """
    if not todo:  # a finished sweep: no cluster to start
        return
    with session(address):
        _check_cpus(cpus_per_run)
        yield from _rows(todo, root, cpus_per_run, gpus_per_run, max_retries, worker)


def _check_cpus(cpus_per_run: int) -> None:
    """Refuse runs that no node of the cluster has the CPUs for (Ray would wait forever)."""
    largest = max((node["Resources"].get("CPU", 0) for node in ray.nodes() if node["Alive"]),
                  default=0)
    if cpus_per_run > largest:
        raise SatsimError(f"--cpus-per-run {cpus_per_run}: the Ray cluster's largest node has "
                          f"{largest:g} CPUs; give at most {largest:g}")


def ray_group_rows(groups: list[list[dict]], root: Path, *, address: str | None = None,
                   cpus_per_run: int = 1, gpus_per_run: float | None = None,
                   max_retries: int = RETRIES,
                   worker: Callable[..., list[dict]] = run_group) -> Iterator[dict]:
    """Rows of planned stacks (runs of one architecture), one Ray task per stack, in any order.

    Each task (``satsim-group-FIRST-of-N``) trains its stack with ``worker`` (default
    :func:`run_group`) and gives every run's row; a task Ray gave up on gives each of its runs a
    row with ``error``. As in :func:`ray_rows`, a retried task resumes its runs.
    """
    if not groups:
        return
    with session(address):
        _check_cpus(cpus_per_run)
        yield from _rows(groups, root, cpus_per_run, gpus_per_run, max_retries, worker,
                         grouped=True)


def _rows(todo: list, root: Path, cpus_per_run: int, gpus_per_run: float | None,
          max_retries: int, worker: Callable, grouped: bool = False) -> Iterator[dict]:
    """Submit a task per planned run (or per stack); yield the rows as they finish."""
    pending = {}
    try:
        remote = ray.remote(worker)
        pending = {
            remote.options(num_cpus=cpus_per_run,
                           num_gpus=gpus_for(unit[0] if grouped else unit, gpus_per_run),
                           max_retries=max_retries, name=_task_name(unit, grouped))
            .remote(unit, str(root), cpus_per_run): unit
            for unit in todo}
        while pending:
            done, _ = ray.wait(list(pending), num_returns=1)
            unit = pending.pop(done[0])
            members = unit if grouped else [unit]
            try:
                found = ray.get(done[0])
                yield from (found if grouped else [found])
            except ray.exceptions.RayTaskError as error:  # an internal error: keep its traceback
                cause = error.cause
                for planned in members:
                    yield {**failed_row(planned, f"internal error: {type(cause).__name__}: "
                                                 f"{cause}"), "traceback": str(error)}
            except ray.exceptions.RayError as error:
                for planned in members:
                    yield failed_row(planned, f"Ray gave up on it: {first_line(error)}")
    finally:
        for ref in pending:
            ray.cancel(ref, force=True)


def _task_name(unit, grouped: bool) -> str:
    """A Ray task's name: ``satsim-run-NAME``, or ``satsim-group-FIRST-of-N`` for a stack."""
    if grouped:
        return f"satsim-group-{unit[0]['name']}-of-{len(unit)}"
    return f"satsim-run-{unit['name']}"
