"""The homogeneity curves as one figure: each model's mean over seeds, its spread shaded."""

from __future__ import annotations

from collections.abc import Sequence

from satsim.output import save_figure
from satsim.papers.homogeneity.curves import Curve

LABELS = {"post": "post-LN  LN(x + f(x))", "pre": "pre-LN  x + f(LN x), final LN",
          "ln-of-branch": "authors' pre-norm  LN(f(x)) + x"}


def curve_label(curve: Curve) -> str:
    """A reader's name for a curve: its arrangement and its mask."""
    return f"{LABELS[curve.arrangement]}, {curve.mask} mask"


def plot_curves(curves: Sequence[Curve], path: str, title: str) -> None:
    """Write a PNG of the curves (mean line, min–max band) to ``path``."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(7, 4.5))
    ax = fig.subplots()
    for curve in curves:
        (line,) = ax.plot(curve.c, curve.cosine_mean, marker="o", markersize=3,
                          label=curve_label(curve))
        ax.fill_between(curve.c, curve.cosine_min, curve.cosine_max, color=line.get_color(),
                        alpha=0.2)
    ax.set(xlabel="scaling factor c", ylabel="cosine with the encoder at c = 1000", title=title,
           ylim=(min(0.0, *(min(c.cosine_min) for c in curves)), 1.02))
    ax.legend(fontsize="small", loc="lower right")
    fig.tight_layout()
    save_figure(fig, path, dpi=120)
