"""Compile a cold kernel's callees in two processes at once, on a machine with a second CPU.

A second process compiles one part of the callees into Numba's on-disk cache while this one
compiles the rest; the kernel's own compile then loads that part from the cache. Numba compiles
a kernel's callees one after another inside the kernel's type inference, so this is the one way
to use a second core for it. For the whole-model kernels (what ``satsim eval``, ``verify`` and
``compile`` compile), and only when their cache is cold
(:mod:`satsim.engine.kernels.second_process` starts and waits for the process).

Each part is a list of (dispatcher, signature): exactly the specialisations the kernel's own
compile makes (``tests/engine/test_parallel_compile.py`` holds them to it), so nothing compiles
twice but a few small shared helpers. Saves to the cache are serialised by a lock
(:func:`satsim.engine.kernels.lock_cache_writes`).
"""

from __future__ import annotations

import numpy as np
from numba.core import types

from satsim.engine.kernels import classes, queries
from satsim.engine.kernels import fused as fk
from satsim.engine.kernels.second_process import array_type, finish, start


def _rows_and_mask(dtype) -> tuple:
    """Types of a (T, width) block of the model's dtype and of a (T,) mask."""
    return array_type(dtype, 2), array_type(np.bool_)


def _side_part(dtype) -> list:
    """What the second process compiles: the same-query attention path (a third of the work)."""
    rows, mask = _rows_and_mask(dtype)
    f64, i64 = array_type(np.float64), array_type(np.int64)
    signature = (rows, rows, rows, mask, mask, types.boolean, types.int64, types.float64,
                 types.float64, types.float64, types.float64, rows, i64, f64, f64, f64, i64,
                 i64, f64, f64)
    return [(queries.attend_same_queries_into, signature)]


def _own_part(dtype) -> list:
    """What this process compiles meanwhile: the other callees of the fast-path kernel."""
    rows, mask = _rows_and_mask(dtype)
    flat, f64, i64 = array_type(dtype), array_type(np.float64), array_type(np.int64)
    rows64 = array_type(np.float64, 2)
    scratch = types.Tuple((i64, rows64, rows64, f64, f64, i64, i64, f64, f64))
    return [
        (fk._matrix, (flat, types.int64, types.int64, types.int64)),
        (fk._normalize, (flat, f64, i64, rows, rows, types.int64, types.int64)),
        (fk._feed_forward, (flat, i64, rows, rows, types.int64, flat, scratch)),
        (fk._max_abs_qkv, (rows, types.int64)),
        (fk._reverse_rows, (rows,)),
        (fk._rows_one_later, (rows,)),
        (queries.item_path, (rows, rows, mask, mask, types.boolean, types.int64)),
        (queries.attend_same_scores, (rows, mask, mask, types.boolean, types.int64, rows, i64,
                                      f64)),
    ]


def _general_signature(dtype, *middle) -> tuple:
    """Argument types of a general path's entry point: q, k, v, masks, causal, kind, ``middle``.

    Then out, tie sizes and tie gaps, as the attention sublayer passes them.
    """
    rows, mask = _rows_and_mask(dtype)
    return (rows, rows, rows, mask, mask, types.boolean, types.int64, *middle, rows,
            array_type(np.int64), array_type(np.float64))


def _side_part_all(dtype) -> list:
    """The second process's part for every path: the fast one's and the per-query kernel."""
    f64 = types.float64
    return _side_part(dtype) + [(queries.attend_unit, _general_signature(
        dtype, f64, f64, f64, f64, types.int64))]


def _own_part_all(dtype) -> list:
    """The calling process's part for every path: the fast one's and the key-class path."""
    f64, i64 = types.float64, array_type(np.int64)
    return _own_part(dtype) + [(classes.attend_if_classes, _general_signature(
        dtype, f64, f64, f64, i64, i64))]


PARTS = {"fused-fast": (_own_part, _side_part), "fused": (_own_part_all, _side_part_all)}
"""Per kernel path: (this process's part, the second process's part), each a function of the
dtype."""


def _compile(part: list) -> None:
    """Compile each (dispatcher, signature) of a part (loading it from the cache if there)."""
    for dispatcher, signature in part:
        dispatcher.compile(signature)


def compile_callees(path: str, dtype) -> bool:
    """Compile the callees of a cold path's kernel here and in a second process at once.

    Return whether it did: not for a path without parts, nor where no second process starts
    (then the kernel compiles its callees itself, as before). A second process that fails or
    takes too long only leaves its part to the kernel's own compile.
    """
    if path not in PARTS:
        return False
    own, side = PARTS[path]
    second = start(f"from {__name__} import compile_side; "
                   f"compile_side({path!r}, {np.dtype(dtype).name!r})")
    if second is None:
        return False
    try:
        _compile(own(dtype))
    finally:
        finish(second)
    return True


def compile_side(path: str, dtype) -> None:
    """Compile the second process's part of a path's callees (what that process runs)."""
    _compile(PARTS[path][1](dtype))
