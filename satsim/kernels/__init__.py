"""Numba kernels: plain-array signatures, one module per idea, each beside a NumPy reference."""

from __future__ import annotations

import sys

_announced = False


def _is_cached(kernel) -> bool:
    """Whether Numba's on-disk cache holds code of this dispatcher for its current source.

    Reads the cache index only (a small pickle, checked against the source file's stamp); it
    never compiles. Any surprise counts as not cached.
    """
    try:
        return bool(kernel._cache._cache_file._load_index())
    except Exception:  # noqa: BLE001 - private Numba API: be conservative
        return False


def cold_kernels() -> list[str]:
    """Names of the simulator's kernels with nothing in the on-disk cache (compiled on use)."""
    from satsim.kernels import attention, layers

    kernels = (attention.item_paths, attention.attend, layers.affine)
    return [kernel.__name__ for kernel in kernels if not _is_cached(kernel)]


def announce_compile(stream=None) -> bool:
    """Once per process: say on stderr that kernels are compiling, if the cache is cold."""
    global _announced
    if _announced:
        return False
    _announced = True
    if not cold_kernels():
        return False
    print("satsim: compiling kernels (first run only, cached afterwards)…",
          file=stream or sys.stderr, flush=True)
    return True
