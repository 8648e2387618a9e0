"""The first, compiling run says so; runs with a warm cache say nothing. No timing here."""

import os
import subprocess
import sys

import pytest

from satsim.engine.kernels import COMPILE_SECONDS
from tests.support.paths import REPO

pytestmark = pytest.mark.slow  # cold and warm kernel caches in fresh processes

SCRIPT = """
from satsim.engine.kernels import cold_kernels, announce_compile
print(sorted(cold_kernels()))
announce_compile()
announce_compile()  # once per path and process at most
"""


def _run(env):
    return subprocess.run([sys.executable, "-c", SCRIPT], env=env, check=True,
                          capture_output=True, text=True)


def test_cold_cache_is_announced_without_compiling(tmp_path):
    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path))
    done = _run(env)
    assert done.stdout.strip() == ("['affine', 'attend', 'attend_items_by_classes', "
                                   "'attend_tile', 'few_classes', 'forward_fast_paths', "
                                   "'forward_strings', 'item_paths', 'key_norm_max']")
    total = sum(COMPILE_SECONDS.values())  # a kernel of no known path: every path's time
    assert done.stderr.count(f"compiling the kernels (about {total} s here; once, cached") == 1
    assert not list(tmp_path.rglob("*.nb*"))  # the check itself compiled nothing


def test_warm_cache_is_quiet():
    repo = str(REPO)
    subprocess.run([sys.executable, "-c", "from satsim import Simulator, constructions; "
                    "Simulator(constructions.build('dyck1')).accepts(['()']); "
                    f"import sys; sys.path.insert(0, {repo!r}); "
                    "from tests.support.helpers import random_spec; "
                    "Simulator(random_spec(0)).logits(['ab']); "
                    "Simulator(constructions.build('dyck1'), fused=False).accepts(['()']); "
                    "import numpy as np; from satsim import saturated_attention; "
                    "x = np.random.default_rng(0).standard_normal((1, 512, 2)).astype(np.float32); "
                    "saturated_attention(x, x, x); "
                    "saturated_attention(x, np.repeat(x[:, :2], 256, axis=1), x)"],
                   check=True)
    done = _run(dict(os.environ))
    assert done.stdout.strip() == "[]"
    assert "compiling" not in done.stderr


def test_no_compile_notice_when_numba_is_disabled(tmp_path):
    # NUMBA_DISABLE_JIT runs the kernels as Python (for debugging): nothing compiles, so no notice.
    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path), NUMBA_DISABLE_JIT="1")
    done = subprocess.run([sys.executable, "-c", "from satsim import Simulator, constructions; "
                           "print(Simulator(constructions.build('dyck1')).accepts(['(())', '(']))"],
                          env=env, check=True, capture_output=True, text=True)
    assert done.stdout.strip() == "[ True False]"
    assert "compiling" not in done.stderr
