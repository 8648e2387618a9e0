"""Dyck-1 next-symbol training runs with norm-growth instrumentation, and their reports.

Run: python bench/training_dyck1.py [--steps 3000] [--out runs/bench-dyck1]
Trains three small models on the bhattamishra split (pre-LN with Adam, post-LN with Adam,
pre-LN with SGD and momentum), each with `satsim train`'s defaults otherwise, then computes
`satsim report` for each. Writes bench/results/training_dyck1.json (the reports, without the
per-tensor fits) and prints one summary line per run.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from _common import RESULTS, machine

RUNS = {
    "pre-adam": {"norm": "pre", "optimizer": "adam", "lr": 3e-3},
    "post-adam": {"norm": "post", "optimizer": "adam", "lr": 3e-3},
    "pre-sgd": {"norm": "pre", "optimizer": "sgd", "lr": 0.05, "momentum": 0.9},
}


def main() -> None:
    """Train (or resume) every run, report on it, and write the JSON."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=3000)
    parser.add_argument("--out", default="runs/bench-dyck1")
    args = parser.parse_args()

    from satsim.torch_setup import import_torch

    import_torch(1)
    from satsim.training.config import TrainConfig
    from satsim.training.loop import train
    from satsim.training.report import build_report

    reports = {}
    for name, settings in RUNS.items():
        run = Path(args.out) / name
        config = TrainConfig(steps=args.steps, device="cpu", **settings)
        start = time.perf_counter()
        if not (run / "summary.json").exists():
            train(config, run, resume=(run / "config.json").exists())
        report = build_report(run, n=100, device="cpu").to_dict()
        report.pop("groups", None)
        report["wall_seconds"] = time.perf_counter() - start
        reports[name] = report
        bins = " ".join(f"{b['min_len']}-{b['max_len']}: {b['soft']['accuracy']:.2f}/"
                        f"{b['limit']['accuracy']:.2f}" for b in report["bins"] if b["soft"])
        print(f"{name:<10} ‖θ‖ {report['norm']['start']:.2f} → "
              f"{report['norm']['end']:.2f}, best fit {report['norm']['best']}; "
              f"soft/limit accuracy {bins}")
    RESULTS.mkdir(exist_ok=True)
    out = RESULTS / "training_dyck1.json"
    out.write_text(json.dumps({"machine": machine(), "steps": args.steps, "runs": reports},
                              indent=1) + "\n")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
