"""Numba kernels: plain-array signatures, one module per idea, each beside a NumPy reference."""

from __future__ import annotations

import os
import sys
from contextlib import contextmanager

import numpy as np

try:
    import fcntl
except ImportError:  # not POSIX: no lock, and no second compiling process either
    fcntl = None

COMPILE_SECONDS = {"fused-fast": 10, "fused": 18, "layers": 15, "tiles": 6, "classes": 17}
"""Seconds each path's kernels take to compile from an empty cache on this project's 2-core
machine at low load: the CPU seconds, which a loaded machine stretches into more wall time
(``bench/startup.py --kernels`` gives each kernel's compile CPU seconds per command;
bench/README.md, Target 4, has each measurement)."""
CALLEE = {"no_cpython_wrapper": True, "no_cfunc_wrapper": True}
"""Options of a kernel that only other kernels call: no entry points from Python or C (Numba
builds both for every compiled function otherwise; they are a good part of a small function's
compile, and a cached callee loads and links without them)."""
PATH_NAMES = {
    "fused-fast": "whole-model kernel for the fast attention paths",
    "fused": "whole-model kernel for every attention path",
    "layers": "layer-by-layer kernels",
    "tiles": "score-tile kernels",
    "classes": "key-class kernels",
}
"""What each path's compile notice calls it."""


def _is_cached(kernel, dtype=None) -> bool:
    """Whether Numba's on-disk cache holds code of this dispatcher for its current source.

    With ``dtype`` (float32 or float64), code for arrays of that dtype: an entry whose narrowest
    floating array argument has it (float64 scratch arrays come with either). Reads the cache
    index only (a small pickle, checked against the source file's stamp) and never compiles.
    Any surprise counts as not cached.
    """
    try:
        cache = kernel._cache
        _, magic, hashes = cache._index_key(None, kernel.targetctx.codegen())
        return any(key[1:] == (magic, hashes) and (dtype is None or _data_dtype(key[0]) == dtype)
                   for key in cache._cache_file._load_index())
    except Exception:  # noqa: BLE001 - private Numba API: be conservative
        return False


def _data_dtype(signature):
    """The narrowest floating dtype of a compiled signature's array arguments (None if none)."""
    widths = [np.dtype(str(arg.dtype)) for arg in signature
              if getattr(arg, "ndim", 0) and str(getattr(arg, "dtype", "")).startswith("float")]
    return min(widths, key=lambda dtype: dtype.itemsize) if widths else None


def _kernels(path: str | None) -> dict:
    """The dispatchers of a path, by name: "fused", "fused-fast", "layers", "tiles", "classes"."""
    from satsim.engine.kernels import classes, fused, layers, queries, tiles

    paths = {
        "layers": {"item_paths": queries.item_paths, "attend": queries.attend,
                   "affine": layers.affine},
        "fused": {"forward_strings": fused.forward_strings},
        "fused-fast": {"forward_fast_paths": fused.forward_fast_paths},
        "tiles": {"attend_tile": tiles.attend_tile, "key_norm_max": tiles.key_norm_max},
        "classes": {"few_classes": classes.few_classes,
                    "attend_items_by_classes": classes.attend_items_by_classes},
    }
    if path is not None:
        return paths[path]
    return {name: kernel for kernels in paths.values() for name, kernel in kernels.items()}


def cold_kernels(path: str | None = None, dtype=None) -> list[str]:
    """Names of the simulator's kernels (of one ``path``, or all) with nothing in the cache.

    With ``dtype``, nothing for arrays of that dtype (a float64 model after a float32 one
    compiles anew).
    """
    return cold_dispatchers(_kernels(path), dtype)


def cold_dispatchers(kernels: dict, dtype=None) -> list[str]:
    """Names of the dispatchers of ``kernels`` (by name) with nothing cached (for ``dtype``)."""
    dtype = None if dtype is None else np.dtype(dtype)
    return [name for name, kernel in kernels.items() if not _is_cached(kernel, dtype)]


_checked: set = set()


def announce_compile(stream=None, path: str | None = None, dtype=None) -> bool:
    """Say on stderr that a path's kernels are compiling, and for about how long, if cold.

    ``path`` ("fused", "fused-fast", "layers", "tiles", "classes" or None for all) names the
    kernels to run and ``dtype`` the dtype of their arrays (None: any); each (path, dtype) is
    checked the first time it runs in a process, so a warm path stays quiet and every cold one
    speaks.
    """
    from numba import config

    key = (path, None if dtype is None else np.dtype(dtype))
    if key in _checked or config.DISABLE_JIT:  # NUMBA_DISABLE_JIT: nothing compiles
        return False
    _checked.add(key)
    if not cold_kernels(path, dtype):
        return False
    seconds = COMPILE_SECONDS.get(path, sum(COMPILE_SECONDS.values()))
    what = PATH_NAMES.get(path, "kernels")
    print(f"satsim: compiling the {what} (about {seconds} s here; once, cached afterwards)…",
          file=stream or sys.stderr, flush=True)
    return True


def stamp_with_callees(kernel, modules) -> None:
    """Key the kernel's on-disk cache to its callees' source files too, not its own file only.

    Numba checks only the stamp (mtime, size) of the file that defines a kernel, while a kernel
    that calls functions of other modules has their code compiled in: an edit there must not
    leave stale machine code behind.
    """
    try:
        cache_file = kernel._cache._cache_file
        stamps = [cache_file._source_stamp]
        for module in modules:
            st = os.stat(module.__file__)
            stamps.append((st.st_mtime, st.st_size))
        cache_file._source_stamp = tuple(stamps)
    except Exception:  # noqa: BLE001 - private Numba API: the plain stamp still works
        pass


def stamp_module_kernels(namespace: dict, modules) -> None:
    """Key the cache of every kernel defined in a module (its ``globals()``) to ``modules`` too.

    Every kernel, not only the entry points: a caller compiled anew loads its callee kernels from
    their own cache entries, which must not survive an edit of what those callees call.
    """
    for value in list(namespace.values()):
        py_func = getattr(value, "py_func", None)
        if py_func is not None and py_func.__module__ == namespace["__name__"]:
            stamp_with_callees(value, modules)


CACHE_LOCK = "satsim-cache.lock"
"""File in each Numba cache folder that :func:`lock_cache_writes` locks while saving."""


@contextmanager
def _cache_lock(folder: str):
    """Hold an exclusive lock on the cache folder's lock file (released if the process dies).

    A folder where no lock file can be made saves unlocked, as Numba alone would.
    """
    try:
        handle = open(os.path.join(folder, CACHE_LOCK), "a")  # noqa: SIM115 - closed below
    except OSError:
        yield
        return
    with handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def lock_cache_writes(namespace: dict) -> None:
    """Make every cached kernel of a module (its ``globals()``) save under a lock of its folder.

    Numba saves a cache entry as two files, each written atomically but not the pair: an index
    (signature → data file) and the data. Two processes saving two signatures of one kernel at
    once can both take the same data file, leaving the index pointing at the other signature's
    code. Under the lock, saves of processes compiling at once (``satsim warmup``, the second
    process of :mod:`satsim.engine.kernels.parallel_compile`) follow one another. No-op off POSIX.
    """
    if fcntl is None:
        return
    for value in list(namespace.values()):
        py_func = getattr(value, "py_func", None)
        if py_func is None or py_func.__module__ != namespace["__name__"]:
            continue
        try:
            cache_file = value._cache._cache_file
            folder = cache_file._cache_path
        except AttributeError:  # private Numba API, or a kernel without cache=True
            continue
        cache_file.save = _locked(cache_file.save, folder)


def _locked(save, folder: str):
    """``save`` under the lock of ``folder``."""

    def locked_save(key, data):
        with _cache_lock(folder):
            save(key, data)

    return locked_save
