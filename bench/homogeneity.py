"""Homogeneity curves of random encoders (Merrill et al. 2021, B.1, Figure 5), both protocols.

Run: python bench/homogeneity.py [--protocol authors|standard|both] [--seeds 20] [--device auto]
Writes bench/results/homogeneity_<protocol>.json (the ``satsim homogeneity --json`` object plus
timing and machine load) and bench/results/homogeneity_<protocol>.png, and prints Markdown
tables of mean [min, max] over seeds at a few c. The experiment is ``satsim.papers.homogeneity``.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

RESULTS = Path(__file__).parent / "results"
SHOWN = (0, 2, 4, 6, 8, 10, 14, 19)  # indices into c = linspace(1, 10, 20)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--protocol", choices=["authors", "standard", "both"], default="both")
    parser.add_argument("--seeds", type=int, default=20)
    parser.add_argument("--device", default="auto")
    parser.add_argument("--dtype", choices=["float64", "float32"], default="float64")
    parser.add_argument("--threads", type=int, default=None)
    args = parser.parse_args()

    from satsim.torch_setup import import_torch

    torch = import_torch(args.threads)
    from satsim.papers.homogeneity import PROTOCOLS, REFERENCE_C, EncoderSizes, homogeneity_curves
    from satsim.papers.homogeneity.plot import curve_label, plot_curves
    from satsim.soft import resolve_device

    device = resolve_device(args.device)
    protocols = list(PROTOCOLS) if args.protocol == "both" else [args.protocol]
    RESULTS.mkdir(exist_ok=True)
    for protocol in protocols:
        start, load = time.perf_counter(), os.getloadavg()
        curves = homogeneity_curves(protocol, args.seeds, device=str(device), dtype=args.dtype)
        seconds = time.perf_counter() - start
        setup = {"protocol": protocol, "seeds": args.seeds, "sizes": vars(EncoderSizes()),
                 "reference_c": REFERENCE_C, "dtype": args.dtype, "device": str(device),
                 "torch_threads": torch.get_num_threads(), "seconds": seconds,
                 "loadavg_before": load, "loadavg_after": os.getloadavg()}
        out = RESULTS / f"homogeneity_{protocol}"
        out.with_suffix(".json").write_text(json.dumps(
            {"setup": setup, "curves": [c.to_dict() for c in curves]}, indent=1))
        plot_curves(curves, str(out.with_suffix(".png")),
                    f"Figure 5, {protocol} protocol ({args.seeds} seeds; band: min–max)")
        print(f"\n{protocol} protocol, {args.seeds} seeds, {seconds:.0f} s on {device} "
              f"(load {load[0]:.2f}): mean [min, max] of the pooled output cosine vs c = 1000")
        print("| c | " + " | ".join(curve_label(c) for c in curves) + " |")
        print("|---" * (len(curves) + 1) + "|")
        for i in SHOWN:
            cells = (f"{c.cosine_mean[i]:.3f} [{c.cosine_min[i]:.3f}, {c.cosine_max[i]:.3f}]"
                     for c in curves)
            print(f"| {curves[0].c[i]:.2f} | " + " | ".join(cells) + " |")
        print(f"wrote {out.with_suffix('.json')} and {out.with_suffix('.png')}")


if __name__ == "__main__":
    main()
