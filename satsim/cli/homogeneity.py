"""``satsim homogeneity``: Figure 5 of the norm-growth paper, under the authors' protocol or not."""

from __future__ import annotations

import json

import click

from satsim.cli.options import PlotPath, count, cpu_count
from satsim.cli.progress import progressbar
from satsim.papers.homogeneity.curves import PROTOCOLS, REFERENCE_C


def encoder_bytes(sizes) -> float:
    """Rough bytes of one random encoder: its weights and its batch's activations.

    Both are counted twice (the model spec and its torch copy), as float64.
    """
    d = sizes.d_model
    weights = sizes.layers * (4 * d * (d + 1) + 2 * d * sizes.d_ff + 6 * d) + sizes.vocab * d
    tokens = sizes.sequences * sizes.length
    activations = sizes.layers * tokens * (6 * d + sizes.d_ff + sizes.heads * sizes.length)
    return 8.0 * (2 * weights + 2 * activations)


@click.command("homogeneity")
@click.option("--protocol", type=click.Choice(list(PROTOCOLS)), default="authors",
              show_default=True, help="authors: their script's model (0/1 score mask, "
              "LN(f(x)) + x); standard: post- and pre-LN, causal and bidirectional.")
@click.option("--seeds", type=count(1), default=5, show_default=True,
              help="Random encoders (and input batches) per model.")
@click.option("--first-seed", type=count(0), default=0, show_default=True,
              help="The first seed; seeds run from it upward.")
@click.option("--layers", type=count(1), default=12, show_default=True,
              help="Encoder layers.")
@click.option("--d-model", type=count(1), default=768, show_default=True,
              help="Width of the residual stream (a multiple of --heads).")
@click.option("--heads", type=count(1), default=12, show_default=True, help="Attention heads.")
@click.option("--d-ff", type=count(1), default=512, show_default=True,
              help="Width of the feed-forward layer.")
@click.option("--device", default="auto", show_default=True, help="auto, cpu, cuda or cuda:N.")
@click.option("--dtype", type=click.Choice(["float64", "float32"]), default="float64",
              show_default=True, help="float32 is what the authors ran.")
@click.option("--threads", type=cpu_count(), default=None,
              help="torch CPU threads (default: torch's).")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
@click.option("--plot", "plot_path", type=PlotPath(), default=None,
              help="Write a PNG of the curves here.")
def command(protocol, seeds, first_seed, layers, d_model, heads, d_ff, device, dtype, threads,
            as_json, plot_path) -> None:
    """Homogeneity curves of random encoders (the norm-growth paper, appendix B.1, Figure 5).

    Merrill et al., "Effects of Parameter Norm Growth During Transformer Training", EMNLP 2021.
    """
    from satsim.papers.homogeneity.encoders import EncoderSizes
    from satsim.torch_setup import import_torch

    sizes = EncoderSizes(layers=layers, d_model=d_model, heads=heads, d_ff=d_ff)
    from satsim.engine.resources import check_memory

    check_memory(encoder_bytes(sizes) + 1000.0 * len(PROTOCOLS[protocol]) * seeds,
                 f"{seeds:,} seeds of a {layers:,}-layer encoder of width {d_model:,} "
                 f"(feed-forward {d_ff:,})", "lower --layers, --d-model, --d-ff or --seeds")
    import_torch(threads)
    from satsim.papers.homogeneity.curves import homogeneity_curves
    from satsim.soft import resolve_device

    where = resolve_device(device)
    total = len(PROTOCOLS[protocol]) * seeds
    with progressbar(total, f"{protocol} curves") as bar:
        curves = homogeneity_curves(protocol, seeds, sizes, first_seed=first_seed,
                                    device=str(where), dtype=dtype,
                                    on_curve=lambda: bar.update(1))
    title = (f"{protocol} protocol: {layers} layers, d_model {d_model}, {heads} heads, d_ff "
             f"{d_ff}; {seeds} seeds")
    if as_json:
        setup = {"protocol": protocol, "seeds": seeds, "first_seed": first_seed,
                 "sizes": vars(sizes), "reference_c": REFERENCE_C, "dtype": dtype,
                 "device": str(where)}
        click.echo(json.dumps({"setup": setup, "curves": [c.to_dict() for c in curves]}))
    else:
        _table(curves, f"{title}; {dtype} on {where}")
    if plot_path is not None:  # after the curves are out, so a failed write loses nothing
        from satsim.papers.homogeneity.plot import plot_curves

        plot_curves(curves, plot_path, title)


def _table(curves, title: str) -> None:
    """Print mean [min, max] over seeds per c, a column per model."""
    from satsim.papers.homogeneity.plot import curve_label

    click.echo(f"cosine of the pooled encoder output at c vs c = {REFERENCE_C:g} ({title})")
    for index, curve in enumerate(curves):
        click.echo(f"  [{index}] {curve_label(curve)}")
    click.echo(f"{'c':>6}" + "".join(f"{'[' + str(i) + '] mean [min, max]':>25}"
                                     for i in range(len(curves))))
    for row, c in enumerate(curves[0].c):
        cells = (f"{k.cosine_mean[row]:.3f} [{k.cosine_min[row]:.3f}, {k.cosine_max[row]:.3f}]"
                 for k in curves)
        click.echo(f"{c:>6.2f}" + "".join(f"{cell:>25}" for cell in cells))
