"""The soft twin at cθ beside the leading-order network, the exact limit and limit_signs, on
friendly and adversarial random shapes (docs/saturation.md section 6).

For each shape and seed: mean per-token cosine of the last stream (soft twin at cθ, float64,
against the leading-order network and against the exact limit's direction) at c = 1, 10, 100,
1000, and the fraction of strings whose decisions at c = 1000 agree with each limit (an
undetermined limit_signs answer counts as disagreeing).

    python bench/limit_convergence.py [--seeds 6] [--strings 20]
"""

from __future__ import annotations

import argparse
import os
import sys
from dataclasses import replace
from pathlib import Path

os.environ.setdefault("NUMBA_NUM_THREADS", "1")
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "support"))

import numpy as np  # noqa: E402
from _common import machine, write  # noqa: E402
from helpers import random_spec  # noqa: E402

from satsim.analysis.measures import convergence  # noqa: E402
from satsim.torch_setup import import_torch  # noqa: E402

SCALES = (1.0, 10.0, 100.0, 1000.0)
SHAPES = {
    "post, d_mlp 16": {"norm": "post", "d_mlp": 16},
    "pre, d_mlp 16": {"norm": "pre", "d_mlp": 16},
    "none, d_mlp 16": {"norm": "none", "d_mlp": 16},
    "post, d_mlp 2": {"norm": "post", "d_mlp": 2},
    "none, d_mlp 2": {"norm": "none", "d_mlp": 2},
    "post, d_mlp 16, W_Q=0 b_Q≠0 in block 1": {"norm": "post", "d_mlp": 16, "zero_query": True},
    "none, d_mlp 16, W_Q=0 b_Q≠0 in block 1": {"norm": "none", "d_mlp": 16, "zero_query": True},
}


def build(seed: int, norm: str, d_mlp: int, zero_query: bool = False):
    spec = random_spec(seed, d_model=16, n_heads=2, d_head=8, d_mlp=d_mlp, norm=norm,
                       positional="learned")
    if zero_query:
        blocks = list(spec.blocks)
        attn = blocks[1].attn
        blocks[1] = replace(blocks[1], attn=replace(attn, W_Q=np.zeros_like(attn.W_Q),
                                                    b_Q=np.ones((attn.n_heads, attn.d_head))))
        spec = replace(spec, blocks=tuple(blocks))
    return spec


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=6)
    parser.add_argument("--strings", type=int, default=20)
    args = parser.parse_args()
    import_torch(threads=1)
    rng = np.random.default_rng(0)
    rows = []
    for name, shape in SHAPES.items():
        runs = []
        for seed in range(args.seeds):
            strings = ["".join(rng.choice(["a", "b"], int(rng.integers(1, 13))))
                       for _ in range(args.strings)]
            runs.append(convergence(build(seed, **shape), strings, SCALES, device="cpu"))
        row = {"shape": name, "seeds": args.seeds, "strings": args.strings,
               "leading_cosine": [float(np.mean([r.cosine[i][-1] for r in runs]))
                                  for i in range(len(SCALES))],
               "exact_cosine": [float(np.mean([r.exact_cosine[i][-1] for r in runs]))
                                for i in range(len(SCALES))],
               "agree_leading": float(np.mean([r.agreement[-1] for r in runs])),
               "agree_exact": float(np.mean([r.exact_agreement[-1] for r in runs])),
               "agree_limit_signs": float(np.mean([r.signs_agreement[-1] for r in runs])),
               "limit_signs_exact_path": sum(r.signs_exact for r in runs),
               "undetermined": sum(r.signs_undetermined for r in runs)}
        rows.append(row)
        print(row, flush=True)
    write("limit_convergence", {"machine": machine(), "scales": SCALES, "rows": rows})


if __name__ == "__main__":
    main()
