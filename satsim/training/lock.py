"""A run folder's owner: one ``satsim train`` at a time writes into it (an flock on run/.lock)."""

from __future__ import annotations

import fcntl
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from satsim.errors import SatsimError


@contextmanager
def run_lock(run: Path) -> Iterator[None]:
    """Hold the run folder's lock for the block; a second holder is refused in one line.

    The lock is the kernel's (flock), so it ends with its process, killed or not: a stale lock
    file never blocks a resume.
    """
    run.mkdir(parents=True, exist_ok=True)
    with open(run / ".lock", "a+") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.seek(0)
            owner = handle.read().strip() or "another process"
            raise SatsimError(f"{run} is being written by another satsim train ({owner}); "
                              "wait for it to finish or choose another --out") from None
        handle.seek(0)
        handle.truncate()
        handle.write(f"pid {os.getpid()}\n")
        handle.flush()
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)
