"""How spread each head's soft attention is on a zoo model's examples, per length bin.

Run: python scripts/attention_spread.py ZOO_MODEL_FOLDER [-n 20] [--seed 7]. For every head and
every query from ``<sep>`` on (an algorithmic task) or every query (a formal language), the
number of keys that hold 90 % of the softmax weight (largest first) and the key with the largest
weight; per bin, the median and 90th percentile of the first and the most common positions of
the second. A selector puts its weight on a few keys whatever the length; a counter spreads it
over a number of keys that grows with the string (docs/zoo.md, count).
"""

from __future__ import annotations

import argparse
from collections import Counter
from pathlib import Path

import numpy as np

from satsim import Simulator
from satsim.interop import zoo_tasks
from satsim.interop.hf_gpt2 import from_hf_gpt2
from satsim.model.masks import key_range

BINS = ((0, 50), (51, 100), (101, 150))
MASS = 0.9


def keys_for_mass(scores: np.ndarray) -> tuple[int, int]:
    """How many keys hold MASS of the softmax of ``scores``, and the index of the largest."""
    weights = np.exp(scores - scores.max())
    weights /= weights.sum()
    order = np.argsort(-weights, kind="stable")
    return int(np.searchsorted(np.cumsum(weights[order]), MASS) + 1), int(order[0])


def main() -> None:
    """Print one line per bin and head."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("folder", type=Path)
    parser.add_argument("-n", type=int, default=20, help="examples per bin")
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    spec = from_hf_gpt2(args.folder).astype(np.float64)
    task = zoo_tasks.task_of(args.folder.name)
    if task is None:
        raise SystemExit(f"{args.folder.name} is not an algorithmic zoo task")
    simulator = Simulator(spec, "softmax")
    for b, (low, high) in enumerate(BINS):
        reads = [zoo_tasks.model_input(whole) for whole in
                 zoo_tasks.draw_examples(task, args.n, low, high, args.seed + b)]
        found: dict[tuple[int, int], list[tuple[int, int]]] = {}
        for read, trace in zip(reads, simulator.traces(reads)):
            first = list(read).index(zoo_tasks.SEP)
            for layer, heads in enumerate(trace.layers):
                for h, (q, k) in enumerate(zip(heads.queries, heads.keys)):
                    scores = heads.scale * (q @ k.T)
                    for i in range(first, len(q)):
                        lo, hi = key_range(heads.masks[h], i, len(q))
                        need, top = keys_for_mass(scores[i, lo:hi])
                        found.setdefault((layer, h), []).append((need, lo + top))
        for (layer, h), rows in sorted(found.items()):
            need = np.array([r[0] for r in rows])
            tops = Counter(r[1] for r in rows).most_common(2)
            where = ", ".join(f"position {p} {c / len(rows):.2f}" for p, c in tops)
            print(f"{low}-{high} head {layer}.{h}: keys for {MASS:.0%} of the weight median "
                  f"{np.median(need):.0f}, p90 {np.percentile(need, 90):.0f}; largest weight "
                  f"at {where}")


if __name__ == "__main__":
    main()
