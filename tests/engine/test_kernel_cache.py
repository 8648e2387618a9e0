"""Kernels from Numba's on-disk cache, across fresh processes, in the orders users hit them.

Each process here is a new interpreter with the same fresh NUMBA_CACHE_DIR, as a user's
successive commands are: what one compiled, the next loads.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from satsim.model.settings import ATTENTION_KINDS
from tests.support.paths import REPO

pytestmark = pytest.mark.slow  # Numba's on-disk cache across fresh processes, in every order

REPO_ROOT = str(REPO)
FAST_NOTICE = "compiling the whole-model kernel for the fast attention paths"
FULL_NOTICE = "compiling the whole-model kernel for every attention path"

RUN_EVERY_KIND = """
import sys
sys.path.insert(0, {repo!r})
import numpy as np
from tests.support.helpers import random_spec
from satsim import AttentionSettings, Simulator, constructions
from satsim.engine.kernels import fused
from satsim.reference.forward import forward

kind = sys.argv[1]
dyck1 = constructions.build("dyck1")  # hand-built: the fast variant (softmax: then the full one)
trained = random_spec(0, dtype=np.float32)  # learned positions: the full variant
for spec, strings in ((dyck1, ["", "(", "()", "(()())", ")(", "(()"]),
                      (trained, ["", "a", "ab", "abba", "bbbaab"])):
    logits = Simulator(spec, kind, beta=2.0).logits(strings)
    for string, got in zip(strings, logits):
        want = forward(spec, string, AttentionSettings(kind, beta=2.0)).logits
        np.testing.assert_allclose(got, want, rtol=2e-3, atol=2e-3)
for kernel in (fused.forward_fast_paths, fused.forward_strings):
    print(sum(kernel.stats.cache_hits.values()), sum(kernel.stats.cache_misses.values()))
"""

STOP_BEFORE_THE_KERNEL = """
import sys
from satsim import Simulator, constructions
from satsim.engine import program

class Stop(Exception):
    pass

def stop(*args):
    raise Stop

program._run_variant = stop  # the compile notice is checked, the kernel never runs
for name in ("dyck1", "anbn"):
    print(f"-- {name}", file=sys.stderr, flush=True)
    try:
        Simulator(constructions.build(name)).accepts([""])
    except Stop:
        pass
"""


def _python(code: str, cache: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", code, *args], check=True, capture_output=True,
                          text=True, env=dict(os.environ, NUMBA_CACHE_DIR=str(cache)))


@pytest.fixture(scope="module")
def cache_of_both_variants(tmp_path_factory):
    """A cache where each fused variant was compiled by a process of its own (the issue's order):
    `eval --lang dyck1` compiles the fast variant alone; `eval --attention softmax` then loads it
    and compiles the full one."""
    cache = tmp_path_factory.mktemp("numba-cache")
    build = "from satsim import Simulator, constructions; Simulator(constructions.build('dyck1'"
    first = _python(build + ")).accepts(['(()())'])", cache)
    assert FAST_NOTICE in first.stderr and FULL_NOTICE not in first.stderr
    second = _python(build + "), attention='softmax').accepts(['(()())'])", cache)
    assert FULL_NOTICE in second.stderr and FAST_NOTICE not in second.stderr
    return cache


@pytest.mark.parametrize("kind", ATTENTION_KINDS)
def test_every_attention_kind_runs_both_variants_from_the_cache(cache_of_both_variants, kind):
    # Before the variants had names of their own, both compiled first in their process shared
    # one symbol name; loaded together, the full one ran with the fast one's environment:
    # "NRT_adapt_ndarray_to_python: descr is NULL".
    done = _python(RUN_EVERY_KIND.format(repo=REPO_ROOT), cache_of_both_variants, kind)
    assert "compiling" not in done.stderr
    for line in done.stdout.splitlines():
        hits, misses = map(int, line.split())
        assert hits > 0 and misses == 0


def test_a_float64_model_after_a_float32_one_is_announced(cache_of_both_variants):
    # dyck1 is float32 and cached; anbn is float64, for which nothing is: it must say so.
    done = _python(STOP_BEFORE_THE_KERNEL, cache_of_both_variants)
    dyck1, anbn = done.stderr.split("-- anbn")
    assert "compiling" not in dyck1
    assert anbn.count(FAST_NOTICE) == 1
