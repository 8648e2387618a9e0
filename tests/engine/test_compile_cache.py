"""Kernels are compiled once and loaded from Numba's on-disk cache by later processes."""

import subprocess
import sys

import pytest

pytestmark = pytest.mark.slow  # Numba's on-disk cache across fresh processes

SCRIPT = """
import numpy as np
from satsim import Simulator, constructions, saturated_attention
from satsim.engine.kernels import fused, layers, queries, tiles
Simulator(constructions.build("dyck1")).accepts(["(()())", ")("])
Simulator(constructions.build("dyck1"), fused=False).accepts(["(()())", ")("])
q, k, v = (np.random.default_rng(0).standard_normal((1, 512, 4)).astype(np.float32)
           for _ in range(3))
saturated_attention(q, k, v, causal=True)  # long enough for BLAS score tiles
for kernel in (queries.attend, layers.affine, fused.forward_fast_paths, tiles.attend_tile,
               tiles.key_norm_max):
    stats = kernel.stats
    print(kernel.__name__, sum(stats.cache_hits.values()), sum(stats.cache_misses.values()))
"""


def test_second_process_loads_every_kernel_from_the_cache():
    subprocess.run([sys.executable, "-c", SCRIPT], check=True, capture_output=True)
    second = subprocess.run([sys.executable, "-c", SCRIPT], check=True, capture_output=True,
                            text=True)
    for line in second.stdout.splitlines():
        name, hits, misses = line.split()
        assert int(hits) > 0 and int(misses) == 0, line
