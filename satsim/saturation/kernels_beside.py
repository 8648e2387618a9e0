"""The saturated limit's kernels compiled in a second process while this one compiles the rest.

From an empty cache, ``satsim report`` compiles two sets of kernels: the layer-by-layer path
(the leading-order network runs on it) and the saturated limit's own, the exact expansion
(:func:`satsim.saturation.exact.limit_attention`) above all. With a second CPU, a second
process compiles the limit's kernels meanwhile: first the tie-value check and the key-class and
score-tile paths, by their signatures (:func:`side_part`, held to what a report compiles by
``tests/saturation/test_limit_compile_beside.py``), then the exact expansion by running a model
through it. This process takes them from the cache; before its first exact expansion it waits
for the second one (:data:`satsim.saturation.exact.BESIDE`).
"""

from __future__ import annotations

import numba
import numpy as np
from numba.core import types

from satsim.engine.kernels import classes, cold_dispatchers, tiles
from satsim.engine.kernels.second_process import array_type, compile_beside
from satsim.saturation.exact import BESIDE, exact_limit, expanded_attention
from satsim.saturation.kernels.tie_values import tie_value_spread


def side_part() -> list:
    """The (dispatcher, signature) pairs compiled first: float64, as the limit runs."""
    f64, i64 = types.float64, types.int64
    real = [array_type(np.float64, n) for n in range(5)]
    whole = [array_type(np.int64, n) for n in range(4)]
    flag = [array_type(np.bool_, n) for n in range(3)]
    items = (real[3], real[3], real[3], flag[2], flag[2], types.boolean, i64, f64, f64, f64)
    return [
        (tie_value_spread, (real[4], real[4], real[4], whole[1], whole[3], flag[1], whole[1],
                            f64, f64, f64, f64)),
        (classes.few_classes, (real[3], flag[2], whole[1])),
        (classes.attend_items_by_classes, items),
        (tiles.key_norm_max, (real[2], flag[1])),
        (tiles.attend_tile, (*items, whole[1], i64, real[1], real[3], real[3], whole[2],
                             real[2])),
    ]


def compile_side(model_code: str, string: str) -> None:
    """What the second process runs: :func:`side_part`, then ``string`` through the model."""
    for dispatcher, signature in side_part():
        dispatcher.compile(signature)
    namespace: dict = {}
    exec(model_code, namespace)  # noqa: S102 - the caller's own code, run in its own process
    exact_limit(namespace["model"], string)


def limit_kernels_beside(model_code: str, string: str) -> bool:
    """On a cold cache, compile the limit's kernels in a second process, meanwhile.

    ``model_code`` is Python that binds ``model`` to the model whose limit will run, and
    ``string`` one of its inputs: running it compiles exactly the specialisation
    :func:`satsim.saturation.exact.exact_limit` takes. Return whether a process started.
    """
    if numba.config.DISABLE_JIT:  # nothing compiles
        return False
    kernels = {dispatcher.py_func.__name__: dispatcher for dispatcher, _ in side_part()}
    kernels["expanded_attention"] = expanded_attention
    if not cold_dispatchers(kernels, np.float64):
        return False
    return compile_beside(BESIDE, f"from {__name__} import compile_side\n"
                                f"compile_side({model_code!r}, {string!r})")
