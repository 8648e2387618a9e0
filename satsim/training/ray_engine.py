"""The Ray engine of ``satsim sweep``: each planned run is a Ray task that calls ``run_one``.

The driver joins a cluster (``address``, else ``RAY_ADDRESS``, else a local one it starts) and
submits one task per run with its CPUs and GPUs. Rows come back to the driver as runs finish;
the runs themselves write under the same absolute ``--out`` path on whichever node they run.
A task whose worker dies is retried by Ray (``max_retries``) and ``run_one`` resumes it from its
last checkpoint in that folder (on another node only if ``--out`` is a shared filesystem).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import ray

from satsim.training.runs import failed_row, run_one

RETRIES = 3
"""How many times Ray reruns a task whose worker died (the run then resumes from a checkpoint)."""


def gpus_for(planned: dict, gpus_per_run: float | None) -> float:
    """GPUs a run asks Ray for: ``gpus_per_run`` if given, else one for a run on --device cuda."""
    if gpus_per_run is not None:
        return gpus_per_run
    return 1.0 if planned["settings"].get("device") == "cuda" else 0.0


def connect(address: str | None) -> bool:
    """Join the cluster at ``address`` (or RAY_ADDRESS, or start a local one); True if started."""
    if ray.is_initialized():
        return False
    ray.init(address=address, include_dashboard=False, logging_level="WARNING",
             log_to_driver=False)
    return True


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
    started = connect(address)
    pending = {}
    try:
        remote = ray.remote(worker)
        pending = {
            remote.options(num_cpus=cpus_per_run, num_gpus=gpus_for(planned, gpus_per_run),
                           max_retries=max_retries, name=f"satsim-run-{planned['name']}")
            .remote(planned, str(root), cpus_per_run): planned
            for planned in todo}
        while pending:
            done, _ = ray.wait(list(pending), num_returns=1)
            planned = pending.pop(done[0])
            try:
                yield ray.get(done[0])
            except ray.exceptions.RayTaskError as error:  # an internal error: keep its traceback
                cause = error.cause
                yield {**failed_row(planned, f"internal error: {type(cause).__name__}: {cause}"),
                       "traceback": str(error)}
            except ray.exceptions.RayError as error:
                yield failed_row(planned, f"Ray gave up on it: {str(error).splitlines()[0]}")
    finally:
        for ref in pending:
            ray.cancel(ref, force=True)
        if started:
            ray.shutdown()
