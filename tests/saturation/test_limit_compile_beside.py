"""The saturated limit's kernels compiled in a second process while a report compiles the rest."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest

from satsim.engine.kernels import second_process
from satsim.saturation import exact, kernels_beside
from satsim.training import report as report_module
from tests.support.helpers import random_spec
from tests.support.paths import REPO
from tests.training.test_report import make_run

SCRIPT = """
import json, sys, tempfile
from pathlib import Path
sys.path.insert(0, {repo!r})
from numba.core import event
from satsim.engine.kernels import second_process
from satsim.saturation.kernels_beside import side_part
from satsim.saturation.exact import expanded_attention
from satsim.training.report import build_report
from tests.support.helpers import random_spec
from tests.training.test_report import make_run

compiled = []

class Compiled(event.Listener):
    def on_start(self, ev):
        compiled.append(ev.data["dispatcher"].py_func.__name__)

    def on_end(self, ev):
        pass

event.register("numba:compile", Compiled())
with tempfile.TemporaryDirectory() as folder:
    run = make_run(Path(folder) / "run", spec=random_spec(0, positional="none"))
    build_report(run, n=5, roles_n=5, device="cpu")
kernels = [*side_part(), (expanded_attention, None)]
print(json.dumps({{
    "compiled here": sorted({{d.py_func.__name__ for d, _ in kernels}} & set(compiled)),
    "as listed": [sig is None or [tuple(s) for s in d.signatures] == [tuple(sig)]
                  for d, sig in kernels],
    "left running": list(second_process._beside)}}))
"""


def report_from_empty_cache(tmp_path) -> dict:
    """Run a report of a random model in a fresh process and cache: what it compiled itself."""
    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path / "cache"), PYTHONPATH=str(REPO))
    done = subprocess.run([sys.executable, "-c", SCRIPT.format(repo=str(REPO))], env=env,
                          check=True, capture_output=True, text=True, cwd=REPO)
    return json.loads(done.stdout.splitlines()[-1])


@pytest.mark.slow  # compiles the report's kernels from an empty cache
def test_a_cold_report_takes_the_limit_kernels_from_the_second_process(tmp_path):
    if second_process.cpus() < 2:
        pytest.skip("one CPU: no second process")
    found = report_from_empty_cache(tmp_path)
    # Each kernel ran here with exactly the listed signature (a report that took another would
    # have compiled it here), loaded from the cache the second process wrote.
    assert found == {"compiled here": [], "as listed": [True] * 6, "left running": []}


def test_a_warm_cache_or_one_cpu_starts_no_second_process(monkeypatch):
    def must_not_start(*args, **kwargs):
        raise AssertionError("started a process")

    monkeypatch.setattr(second_process.subprocess, "Popen", must_not_start)
    monkeypatch.setattr(kernels_beside, "cold_dispatchers", lambda *args: [])
    assert not kernels_beside.limit_kernels_beside("model = None", "ab")
    monkeypatch.setattr(kernels_beside, "cold_dispatchers", lambda *args: ["expanded_attention"])
    monkeypatch.setattr(second_process, "cpus", lambda: 1)
    assert not kernels_beside.limit_kernels_beside("model = None", "ab")
    second_process.wait_beside(exact.BESIDE)  # nothing started: returns at once


def test_the_report_hands_the_second_process_its_own_model_and_waits_for_it(tmp_path,
                                                                            monkeypatch):
    run = make_run(tmp_path / "run", spec=random_spec(0, positional="none"))
    handed, waited = [], []
    monkeypatch.setattr(kernels_beside, "limit_kernels_beside",
                        lambda code, string: handed.append((code, string)))
    monkeypatch.setattr(second_process, "wait_beside", waited.append)
    report_module.build_report(run, n=2, roles_n=2, device="cpu")
    (code, string), = handed
    namespace = {}
    exec(code, namespace)  # what the second process runs before the limit's kernels
    final = report_module.load_run(run).final
    assert namespace["model"].name == final.name
    assert all(np.array_equal(a, b) for a, b in zip(namespace["model"].tensors().values(),
                                                    final.tensors().values()))
    assert set(string) <= set(final.alphabet) and waited == [exact.BESIDE]
