"""Compiling a cold kernel's callees in two processes: the parts are the kernel's own
specialisations, and saves to the cache are serialised by a lock. No timing here."""

import fcntl
import os
import subprocess
import sys

import pytest

from satsim.engine import kernels
from satsim.engine.kernels import (
    classes,
    fused,
    layers,
    parallel_compile,
    queries,
    second_process,
    tiles,
)
from tests.support.paths import REPO


def test_every_cached_kernel_saves_under_the_lock():
    for module in (queries, layers, classes, tiles, fused):
        for value in vars(module).values():
            if getattr(value, "py_func", None) is not None and \
                    value.py_func.__module__ == module.__name__:
                assert value._cache._cache_file.save.__name__ == "locked_save", value


def test_a_locked_save_holds_the_folder_lock_while_saving(tmp_path):
    held = []

    def save(key, data):
        with open(tmp_path / kernels.CACHE_LOCK, "a") as other:  # a second, competing holder
            try:
                fcntl.flock(other, fcntl.LOCK_EX | fcntl.LOCK_NB)
                held.append(False)
            except BlockingIOError:
                held.append(True)
        held.append((key, data))

    kernels._locked(save, str(tmp_path))("key", "data")
    assert held == [True, ("key", "data")]
    with open(tmp_path / kernels.CACHE_LOCK, "a") as after:  # released afterwards
        fcntl.flock(after, fcntl.LOCK_EX | fcntl.LOCK_NB)


def test_one_cpu_or_a_path_without_parts_starts_no_second_process(monkeypatch):
    def must_not_start(*args, **kwargs):
        raise AssertionError("started a process")

    monkeypatch.setattr(second_process.subprocess, "Popen", must_not_start)
    assert not parallel_compile.compile_callees("layers", "float32")
    monkeypatch.setattr(second_process, "cpus", lambda: 1)
    assert not parallel_compile.compile_callees("fused-fast", "float32")


def test_no_second_process_to_start_leaves_the_compile_to_this_one(monkeypatch):
    def cannot_start(*args, **kwargs):
        raise OSError("no interpreter")

    monkeypatch.setattr(second_process, "cpus", lambda: 2)
    monkeypatch.setattr(second_process.subprocess, "Popen", cannot_start)
    assert not parallel_compile.compile_callees("fused-fast", "float32")


SCRIPT = """
import sys
import numpy as np
sys.path.insert(0, {repo!r})
from satsim import Simulator, constructions
from satsim.engine.kernels import parallel_compile
import satsim.engine.program as program
from tests.support.helpers import random_spec

used = []
real = parallel_compile.compile_callees
program.compile_callees = lambda *args: used.append((args[0], real(*args))) or used[-1][1]
which, strings = sys.argv[1], sys.argv[2:]
if which in ("float32", "float64"):  # learned positions: the kernel for every path
    spec, path = random_spec(0, dtype=np.dtype(which)), "fused"
else:
    spec, path = constructions.build(which), "fused-fast"
print(len(Simulator(spec).logits(strings)))
own, side = parallel_compile.PARTS[path]
for dispatcher, signature in own(spec.dtype) + side(spec.dtype):
    assert [tuple(s) for s in dispatcher.signatures] == [tuple(signature)], dispatcher
print(used == [(path, True)])
"""


@pytest.mark.slow  # compiles a whole-model kernel from an empty cache, in fresh processes
@pytest.mark.parametrize("which, strings", [
    ("dyck1", ["(())", "(()"]),  # a float32 construction: the fast paths
    ("anbn", ["aabb", "aab"]),  # float64
    ("float32", ["ab", "abba"]),  # every path
    ("float64", ["ab", "abba"]),
])
def test_the_parts_are_exactly_the_kernels_specialisations(which, strings, tmp_path):
    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path))
    done = subprocess.run([sys.executable, "-c", SCRIPT.format(repo=str(REPO)), which, *strings],
                          env=env, check=True, capture_output=True, text=True)
    assert done.stdout.splitlines() == ["2", "True"]  # ran, and compiled in two processes
    assert "compiling the whole-model kernel" in done.stderr
