"""A second Python process that compiles kernels into Numba's cache while this one works.

Numba compiles in the calling thread, one function after another; a second process is the way to
use a second CPU. Both write the same on-disk cache, under its lock
(:func:`satsim.engine.kernels.lock_cache_writes`), and whatever the second process has saved
when this one needs it loads from there instead of compiling.
"""

from __future__ import annotations

import os
import subprocess
import sys

import numba
import numpy as np
from numba.core import types

from satsim.engine.kernels import fcntl

WAIT_SECONDS = 120
"""How long this process waits for the second one before going on without it."""


def array_type(dtype, ndim: int = 1) -> types.Array:
    """Numba's type of a C-contiguous, writable array: a piece of a signature to compile."""
    return types.Array(numba.from_dtype(np.dtype(dtype)), ndim, "C")


def cpus() -> int:
    """CPUs this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def start(code: str) -> subprocess.Popen | None:
    """A second Python process running ``code`` (None where it cannot help or start).

    None on one CPU, without a cache lock, or where no process can start (an embedded Python).
    """
    if cpus() < 2 or fcntl is None:
        return None
    try:
        return subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.DEVNULL,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    except OSError:
        return None


def finish(second: subprocess.Popen) -> None:
    """Wait for a second process, at most WAIT_SECONDS (then stop it: its part is left undone)."""
    try:
        second.wait(timeout=WAIT_SECONDS)
    except subprocess.TimeoutExpired:
        second.kill()
        second.wait()


_beside: dict[str, subprocess.Popen] = {}


def compile_beside(name: str, code: str) -> bool:
    """Start ``code`` (Python that compiles kernels by running them) in a second process.

    For kernels this process will need later and has other compiling to do first: they compile
    on the second CPU meanwhile, into the cache. :func:`wait_beside` with the same ``name`` waits
    for it just before they are first called. Return whether a process started.
    """
    if name in _beside:
        return False
    second = start(code)
    if second is not None:
        _beside[name] = second
    return second is not None


def wait_beside(name: str) -> None:
    """Wait for the second process :func:`compile_beside` started under ``name``, if any."""
    second = _beside.pop(name, None)
    if second is not None:
        finish(second)
