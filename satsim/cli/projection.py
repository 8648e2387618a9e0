"""``satsim projection``: gradient projection of transformer sublayers at forced accuracy.

Reproduces section 4.2 / Figure 1 of the norm-growth paper (Merrill et al., "Effects of Parameter
Norm Growth During Transformer Training", EMNLP 2021). torch and matplotlib are imported inside
the command function only (``satsim eval`` must not pay for them).
"""

from __future__ import annotations

import json

import click

from satsim.cli.options import PlotPath, count, cpu_count
from satsim.cli.progress import progressbar
from satsim.errors import SatsimError

DEFAULT_VARIANTS = "attention,attention-no-bias,ffn,ffn-no-bias,ffn-no-bias-no-residual"


def parse_numbers(text: str, what: str) -> list[float]:
    """Parse a list like '1-49,1000' or '0.75:1:0.025,0.9' into floats.

    Items are numbers, integer ranges LO-HI, or LO:HI:STEP ranges (HI included when the steps
    land on it).
    """
    out: list[float] = []
    try:
        for item in (part.strip() for part in text.split(",")):
            if not item:
                raise ValueError
            if ":" in item:
                lo, hi, step = (float(v) for v in item.split(":"))
                if step <= 0 or hi < lo:
                    raise ValueError
                count = int((hi - lo) / step + 1e-9) + 1
                out.extend(round(lo + i * step, 12) for i in range(count))
            elif "-" in item[1:]:
                lo, hi = (int(v) for v in item.split("-"))
                if hi < lo:
                    raise ValueError
                out.extend(float(v) for v in range(lo, hi + 1))
            else:
                out.append(float(item))
    except ValueError:
        raise SatsimError(f"bad {what} {text!r}: give numbers, LO-HI or LO:HI:STEP, "
                          "separated by commas") from None
    return out


def probe_bytes(n: int, hidden: int, classes: int, attention: bool) -> float:
    """Rough float64 bytes of one probe: its weights, inputs, activations and their gradients."""
    weights = 4 * hidden * (hidden + 1) + (hidden + 1) * classes
    activations = n * (6 * hidden + 3 * classes) + (3 * n * n if attention else 0)
    return 8.0 * 3 * (weights + activations)


@click.command("projection")
@click.option("--variants", "variants_text", default=DEFAULT_VARIANTS, show_default=True,
              help="Comma-separated sublayer variants.")
@click.option("--scales", "scales_text", default="1-49,1000", show_default=True,
              help="Scales c, in order: numbers, LO-HI integer ranges, LO:HI:STEP ranges.")
@click.option("--accuracies", "accuracies_text", default="0.75:1:0.025", show_default=True,
              help="Accuracy grid for ρ*(a); 1.0 and 0.8 (the curves) are always added.")
@click.option("--seeds", type=count(1), default=5, show_default=True,
              help="Random initialisations (seeds FIRST … FIRST+N−1).")
@click.option("--first-seed", type=count(), default=0, show_default=True, help="First seed.")
@click.option("-n", "--n", "n", type=count(2), default=512, show_default=True,
              help="Random inputs (one sequence of this length for attention).")
@click.option("--hidden", type=count(1), default=10, show_default=True,
              help="Hidden size of the sublayer.")
@click.option("--classes", type=count(2), default=10, show_default=True,
              help="Classes of the random affine head.")
@click.option("--scale-head", is_flag=True,
              help="Put the head in θ: scaled by c, counted in the projection and in ‖θ0‖ "
                   "(default: the head is part of the loss, fixed).")
@click.option("--no-head-bias", is_flag=True,
              help="A linear head instead of an affine one (control: homogeneous logits).")
@click.option("--threads", type=cpu_count(), default=1, show_default=True,
              help="torch CPU threads.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
@click.option("--plot", "plot_path", type=PlotPath(), default=None,
              help="Write the three-panel figure (PNG) to this file.")
def command(variants_text, scales_text, accuracies_text, seeds, first_seed, n, hidden, classes,
            scale_head, no_head_bias, threads, as_json, plot_path) -> None:
    """Gradient projection cθᵀ∇L of sublayers vs scale c at forced accuracy, and ρ*(a)."""
    variants = [v.strip() for v in variants_text.split(",") if v.strip()]
    scales = parse_numbers(scales_text, "scales")
    accuracies = parse_numbers(accuracies_text, "accuracies")
    from satsim.torch_setup import import_torch

    import_torch(threads)  # before satsim.papers.projection imports torch: passive OpenMP waiting
    from satsim.papers.projection import report
    from satsim.papers.projection.experiment import check_grid, run_experiment
    from satsim.papers.projection.sublayers import get_variant

    for name in variants:
        get_variant(name)
    if not variants:
        raise SatsimError("give at least one variant")
    check_grid(scales, accuracies)
    from satsim.engine.resources import check_memory

    check_memory(probe_bytes(n, hidden, classes, attention=any("attention" in v for v in variants))
                 + 32.0 * len(variants) * seeds * len(scales) * (len(accuracies) + 2),
                 f"{seeds:,} seeds of a probe of {n:,} inputs, hidden size {hidden:,} and "
                 f"{classes:,} classes", "lower -n, --hidden, --classes or --seeds")
    seed_list = list(range(first_seed, first_seed + seeds))
    total = len(variants) * len(seed_list) * len(scales)
    with progressbar(total, "projection") as bar:
        run = run_experiment(variants, scales, accuracies, seed_list, n=n, hidden=hidden,
                             classes=classes, scale_head=scale_head,
                             head_bias=not no_head_bias, on_scale=lambda: bar.update(1))
    # The results come out before the figure is written, so a failed write loses nothing;
    # --json names the figure it is about to write.
    if as_json:
        click.echo(json.dumps({**run.to_dict(), "plots": [plot_path] if plot_path else []}))
    else:
        click.echo(report.header(run))
        for line in report.findings_table(run) + [""] + report.equilibrium_table(run):
            click.echo(line)
    if plot_path is not None:
        from satsim.papers.projection.plots import write_figure

        written = write_figure(run, plot_path)
        if not as_json:
            click.echo(f"wrote {written}")
