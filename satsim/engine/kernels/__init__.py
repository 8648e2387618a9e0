"""Numba kernels: plain-array signatures, one module per idea, each beside a NumPy reference."""

from __future__ import annotations

import os
import sys

COMPILE_SECONDS = {"fused": 23, "layers": 17, "tiles": 9, "classes": 4}
"""CPU seconds each path's kernels take to compile on this project's 2-core machine (measured
with an empty NUMBA_CACHE_DIR; a loaded machine takes longer in wall time)."""


def _is_cached(kernel) -> bool:
    """Whether Numba's on-disk cache holds code of this dispatcher for its current source.

    Reads the cache index only (a small pickle, checked against the source file's stamp); it
    never compiles. Any surprise counts as not cached.
    """
    try:
        return bool(kernel._cache._cache_file._load_index())
    except Exception:  # noqa: BLE001 - private Numba API: be conservative
        return False


def _kernels(path: str | None) -> tuple:
    """The dispatchers of a path: "fused", "layers", "tiles", "classes" (repeated keys), None."""
    from satsim.engine.kernels import classes, fused, layers, queries, tiles

    chosen = ()
    if path in (None, "layers"):
        chosen += (queries.item_paths, queries.attend, layers.affine)
    if path in (None, "fused"):
        chosen += (fused.forward_strings,)
    if path in (None, "tiles"):
        chosen += (tiles.attend_tile, tiles.key_norm_max)
    if path in (None, "classes"):
        chosen += (classes.few_classes, classes.attend_items_by_classes)
    return chosen


def cold_kernels(path: str | None = None) -> list[str]:
    """Names of the simulator's kernels (of one ``path``, or all) with nothing in the cache."""
    return [kernel.__name__ for kernel in _kernels(path) if not _is_cached(kernel)]


_checked: set = set()


def announce_compile(stream=None, path: str | None = None) -> bool:
    """Say on stderr that a path's kernels are compiling, and for about how long, if cold.

    ``path`` ("fused", "layers", "tiles", "classes" or None for all) names the kernels to run; each
    path is checked the first time it runs in a process, so a warm path stays quiet and every
    cold one speaks.
    """
    if path in _checked:
        return False
    _checked.add(path)
    if not cold_kernels(path):
        return False
    seconds = COMPILE_SECONDS.get(path, sum(COMPILE_SECONDS.values()))
    what = "kernels" if path is None else f"{path} kernels"
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
