"""Numba kernels: plain-array signatures, one module per idea, each beside a NumPy reference."""

from __future__ import annotations

import os
import sys

COMPILE_SECONDS = {"fused-fast": 11, "fused": 16, "layers": 10, "tiles": 4, "classes": 10}
"""Seconds each path's kernels take to compile from an empty cache on this project's 2-core
machine at low load (``bench/startup.py`` measures them; a loaded machine takes longer)."""
PATH_NAMES = {
    "fused-fast": "whole-model kernel for the fast attention paths",
    "fused": "whole-model kernel for every attention path",
    "layers": "layer-by-layer kernels",
    "tiles": "score-tile kernels",
    "classes": "key-class kernels",
}
"""What each path's compile notice calls it."""


def _is_cached(kernel) -> bool:
    """Whether Numba's on-disk cache holds code of this dispatcher for its current source.

    Reads the cache index only (a small pickle, checked against the source file's stamp) and
    looks for an entry of this very function: variants of one closure share an index, told apart
    by the hash of their closure's contents. It never compiles. Any surprise counts as not cached.
    """
    try:
        cache = kernel._cache
        _, magic, hashes = cache._index_key(None, kernel.targetctx.codegen())
        return any(key[1:] == (magic, hashes) for key in cache._cache_file._load_index())
    except Exception:  # noqa: BLE001 - private Numba API: be conservative
        return False


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


def cold_kernels(path: str | None = None) -> list[str]:
    """Names of the simulator's kernels (of one ``path``, or all) with nothing in the cache."""
    return [name for name, kernel in _kernels(path).items() if not _is_cached(kernel)]


_checked: set = set()


def announce_compile(stream=None, path: str | None = None) -> bool:
    """Say on stderr that a path's kernels are compiling, and for about how long, if cold.

    ``path`` ("fused", "fused-fast", "layers", "tiles", "classes" or None for all) names the
    kernels to run; each path is checked the first time it runs in a process, so a warm path
    stays quiet and every cold one speaks.
    """
    from numba import config

    if path in _checked or config.DISABLE_JIT:  # NUMBA_DISABLE_JIT: nothing compiles
        return False
    _checked.add(path)
    if not cold_kernels(path):
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
