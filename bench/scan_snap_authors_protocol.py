"""Scan and Snap's Figure 6 grid re-run under the authors' protocol by plain, independent code.

Run: python bench/scan_snap_authors_protocol.py [--seeds 10] [--grid paper|small]
Writes bench/results/scan_snap_authors_protocol.json and prints, per cell, this run's entropy
beside `satsim scan-snap`'s (bench/results/scan_snap_paper.json) with the difference in standard
errors.

This is a second implementation of the published protocol (the authors' ``Model2`` and ``Dataset2``
in luckmatters' ``ssl/real-dataset/decoder_only.py``, overrides of ``scan_snap/figure_6.log``),
written without satsim.papers.scan_snap, to check that the satsim trainer's choices do not move the
grid: it keeps what satsim replaces. Each run is one model with two full ``nn.Linear(M, M,
bias=False)`` matrices (PyTorch's own initialisation), float32, torch's RNG seeded per run, a fresh
batch of 128 sequences per step (next token uniform, 127 context tokens by ``torch.multinomial``),
attention of the last token over the 127 context positions with logit Z[last, token], f =
attention-weighted one-hot sum / its norm, logits Y f over all M tokens, cross-entropy, and two
``torch.optim.SGD`` (momentum 0.9) stepped after each backward. After 100 updates the measure is the
entropy of c_n ∝ P(l | n)·exp(Z[last, l]) over n's 10 distinct tokens, averaged over next tokens.
"""

from __future__ import annotations

import argparse
import json
import math
import time

import numpy as np
import torch
from _common import RESULTS, machine, write

GRIDS = {"paper": ((1, 3, 5, 10), (0.5, 1.0, 2.0, 3.0), (1.0, 2.0, 5.0, 10.0)),
         "small": ((1, 3), (0.5, 2.0), (1.0, 5.0))}
CONTEXT, BATCH, ITERS = 127, 128, 100


def facts(k: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor, int]:
    """Return each next token's context tokens (2K, 20), their probabilities (20,), its last
    (query) token and its own id, and the vocabulary size M = 10 + 23K."""
    unique0, last0 = 10, 10 + 20 * k
    next0 = last0 + k
    tokens = torch.tensor([list(range(10)) + list(range(unique0 + 10 * n, unique0 + 10 * n + 10))
                           for n in range(2 * k)])
    weights = torch.cat([torch.ones(10), torch.linspace(0.1, 1.0, 10)])
    last = last0 + torch.arange(2 * k) // 2
    return tokens, weights / weights.sum(), last, next0 + torch.arange(2 * k), next0 + 2 * k


def one_run(k: int, eta_z: float, ratio: float, seed: int) -> float:
    """Train one run for 100 steps and return the final distinct-token entropy (nats)."""
    tokens, probs, last, label, m = facts(k)
    torch.manual_seed(1000 * k + seed)
    y_map, z_map = torch.nn.Linear(m, m, bias=False), torch.nn.Linear(m, m, bias=False)
    opt_y = torch.optim.SGD(y_map.parameters(), lr=eta_z * ratio, momentum=0.9)
    opt_z = torch.optim.SGD(z_map.parameters(), lr=eta_z, momentum=0.9)
    rows = torch.arange(BATCH)[:, None]
    for _ in range(ITERS):
        n = torch.randint(0, 2 * k, (BATCH,))
        context = tokens[n[:, None], torch.multinomial(probs.expand(BATCH, -1), CONTEXT, True)]
        scores = z_map.weight[last[n][:, None], context]                 # Z[last, token]
        attention = torch.softmax(scores, dim=-1)
        mixed = torch.zeros(BATCH, m).index_put((rows.expand_as(context), context), attention,
                                                accumulate=True)
        logits = y_map(mixed / mixed.norm(dim=-1, keepdim=True))
        loss = torch.nn.functional.cross_entropy(logits, label[n])
        opt_y.zero_grad()
        opt_z.zero_grad()
        loss.backward()
        opt_y.step()
        opt_z.step()
    with torch.no_grad():
        z = z_map.weight[last[:, None], tokens[:, 10:]].double() + torch.log(probs[10:]).double()
        c = torch.softmax(z, dim=-1)
        return float(-(c * torch.log(c)).sum(dim=-1).mean())


def main() -> None:
    """Run the grid, compare with satsim's paper-grid results when present, write JSON."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--grid", choices=list(GRIDS), default="paper")
    args = parser.parse_args()
    torch.set_num_threads(1)
    ks, etas, ratios = GRIDS[args.grid]
    satsim_path = RESULTS / "scan_snap_paper.json"
    ours = {}
    if satsim_path.exists():
        ours = {(c["K"], c["eta_z"], c["r"]): c["entropy"]
                for c in json.loads(satsim_path.read_text())["cells"]}
    start, cells = time.perf_counter(), []
    for k in ks:
        for eta_z in etas:
            for ratio in ratios:
                values = [one_run(k, eta_z, ratio, seed) for seed in range(args.seeds)]
                cell = {"K": k, "eta_z": eta_z, "r": ratio, "entropy": values,
                        "entropy_mean": float(np.mean(values)),
                        "entropy_std": float(np.std(values, ddof=1))}
                if (k, eta_z, ratio) in ours:
                    other = np.asarray(ours[(k, eta_z, ratio)])
                    se = math.sqrt(np.var(values, ddof=1) / len(values)
                                   + np.var(other, ddof=1) / len(other))
                    cell["satsim_mean"] = float(other.mean())
                    cell["difference_in_se"] = float((np.mean(values) - other.mean()) / se)
                cells.append(cell)
                print(f"K {k:>2} η_Z {eta_z:>3g} r {ratio:>2g}: {cell['entropy_mean']:.3f} ± "
                      f"{cell['entropy_std']:.3f}" + (
                          f"  satsim {cell['satsim_mean']:.3f}  Δ {cell['difference_in_se']:+.2f}"
                          " s.e." if "satsim_mean" in cell else ""), flush=True)
    wall = time.perf_counter() - start
    path = write("scan_snap_authors_protocol", {
        "grid": args.grid, "seeds": args.seeds, "iters": ITERS, "batch": BATCH,
        "wall_s": wall, "machine": machine(), "cells": cells})
    print(f"wall time {wall:.0f} s; wrote {path}")


if __name__ == "__main__":
    main()
