"""Gradient projection of transformer sublayers (Merrill et al. 2021, §4.2, Figure 1).

Run: python bench/projection.py [--seeds 5]
Writes bench/results/projection.json, docs/img/projection.png (the main run),
docs/img/projection_scaled_head.png and docs/img/projection_scaled_linear_head.png (the two
variations), and prints the tables of each run.

Settings (the paper's grid): hidden 10, 512 random inputs (one sequence of 512 for attention),
10 classes, c = 1…49 and 1000, a = 0.75, 0.775, …, 1.0, seeds 0-4, float64.
- main: θ = the sublayer; the random affine head is part of the loss (fixed, not scaled);
- scaled_head: the affine head in θ, scaled with the sublayer;
- scaled_linear_head: a linear head (no bias) in θ (ffn-no-bias-no-residual is then exactly
  2-homogeneous: Theorem 2's setting).
The variations keep only their summaries in the JSON; the main run keeps every seed's curves.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from _common import RESULTS, machine

from satsim.torch_setup import import_torch

IMAGES = Path(__file__).parent.parent / "docs" / "img"
CONFIGS = {"main": {}, "scaled_head": {"scale_head": True},
           "scaled_linear_head": {"scale_head": True, "head_bias": False}}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seeds", type=int, default=5)
    args = parser.parse_args()
    import_torch(1)
    from satsim.papers.projection import report, run_experiment
    from satsim.papers.projection.plots import write_figure

    out = {"machine": machine(), "runs": {}}
    for name, options in CONFIGS.items():
        start = time.perf_counter()
        run = run_experiment(seeds=range(args.seeds), **options)
        wall = time.perf_counter() - start
        figure = IMAGES / ("projection.png" if name == "main" else f"projection_{name}.png")
        write_figure(run, figure)
        data = run.to_dict()
        if name != "main":
            for variant in data["variants"].values():
                variant.pop("seeds")
        out["runs"][name] = {**data, "wall_s": round(wall, 1),
                             "figure": str(figure.relative_to(IMAGES.parent.parent))}
        print(f"== {name} ({wall:.1f} s)")
        for line in [report.header(run), *report.findings_table(run), "",
                     *report.equilibrium_table(run), ""]:
            print(line)
    path = RESULTS / "projection.json"
    path.write_text(json.dumps(out, indent=1) + "\n")
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
