"""The FLaRe benchmark's figure: per language, soft model beside its limit, bin by bin."""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path

from satsim.benchmarks.flare import columns, scale_column
from satsim.benchmarks.tables import bin_label
from satsim.output import save_figure

PANELS_PER_ROW = 7
HEADER = 0.75
"""Inches above the panels for the title and the legend."""


def plot_benchmark(manifest: dict, languages: Sequence[dict], constructions: Sequence[dict],
                   path: str | Path) -> None:
    """Write one panel per language: the accuracy per bin of each model kind.

    The soft model (mean, ± std band, maximum over trials), its scaled twins, its saturated
    limit, and a hand-built construction where one exists.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    evaluation = manifest["evaluation"]
    bins = evaluation["bins"]
    x = list(range(len(bins)))
    built = {row["language"]: row for row in constructions if row["language"]}
    others = [row for row in constructions if not row["language"]]
    panels = len(languages) + bool(others)
    rows = math.ceil(panels / PANELS_PER_ROW)
    cols = min(PANELS_PER_ROW, panels)
    width, height = max(2.6 * cols, 10.0), 2.3 * rows + HEADER
    figure, axes = plt.subplots(rows, cols, figsize=(width, height), sharex=True, sharey=True,
                                squeeze=False)
    styles = {"soft": dict(color="tab:blue", marker="o", lw=2, label="soft (trained)"),
              "limit": dict(color="tab:red", marker="s", lw=2, label="saturated limit")}
    faded = ["#7fb2e5", "#bfd8f2"]
    for c, colour in zip(evaluation["scales"], faded):
        styles[scale_column(c)] = dict(color=colour, marker=".", lw=1, ls="--",
                                       label=f"soft at {c:g}θ")
    for ax, entry in zip(axes.flat, languages):
        for column in columns(evaluation):
            cells = [cell[column] for cell in entry["bins"]]
            points = [(i, cell) for i, cell in zip(x, cells) if cell is not None]
            if not points:
                continue
            xs, values = zip(*points)
            means = [v["mean"] for v in values]
            ax.plot(xs, means, **styles[column])
            if column in ("soft", "limit"):
                low = [v["mean"] - v["std"] for v in values]
                high = [v["mean"] + v["std"] for v in values]
                ax.fill_between(xs, low, high, color=styles[column]["color"], alpha=0.15, lw=0)
                ax.plot(xs, [v["max"] for v in values], color=styles[column]["color"],
                        marker="^", ls="none", ms=4, alpha=0.7)
        if entry["language"] in built:
            row = built[entry["language"]]
            ax.plot(x, [b["accuracy"] for b in row["bins"]], "k*", ms=11,
                    label="construction (saturated)")
        undetermined = sum(cell["undetermined"] for cell in entry["bins"])
        title = entry["language"] + (f"\n{undetermined} undetermined" if undetermined else "")
        _frame(ax, title, x, bins)
    if others:
        _other_constructions(axes.flat[len(languages)], others, x, bins)
    for ax in list(axes.flat)[panels:]:
        ax.axis("off")
    for ax in axes[:, 0]:
        ax.set_ylabel("accuracy", fontsize=8)
    handles, labels = [], []
    for ax in axes.flat:
        for handle, label in zip(*ax.get_legend_handles_labels()):
            if label not in labels:
                handles.append(handle)
                labels.append(label)
    top = 1 - HEADER / height
    figure.suptitle(f"FLaRe, scale {manifest['scale']}: accuracy per length bin, mean over "
                    f"{manifest['trials']} trials (band ± std, ▲ max); dotted: chance",
                    fontsize=10, y=1 - 0.15 / height)
    figure.legend(handles, labels, loc="upper center", ncol=len(labels), fontsize=8,
                  frameon=False, bbox_to_anchor=(0.5, 1 - 0.4 / height))
    figure.tight_layout(rect=(0, 0, 1, top))
    save_figure(figure, path, dpi=130)
    plt.close(figure)


def _frame(ax, title: str, x: list[int], bins) -> None:
    """A panel's title, axes and chance line."""
    ax.axhline(0.5, color="grey", lw=0.8, ls=":")
    ax.set_title(title, fontsize=9)
    ax.set_ylim(-0.02, 1.02)
    ax.set_xticks(x, [bin_label(*b) for b in bins], fontsize=7)
    ax.tick_params(axis="y", labelsize=7)


def _other_constructions(ax, rows: Sequence[dict], x: list[int], bins) -> None:
    """One panel for the constructions of languages outside the benchmark, named in it."""
    for row in rows:
        ax.plot(x, [b["accuracy"] for b in row["bins"]], "k*", ms=11)
    names = "\n".join(row["construction"] for row in rows)
    ax.text(0.03, 0.05, names, transform=ax.transAxes, fontsize=7, va="bottom")
    _frame(ax, "other constructions\n(saturated)", x, bins)
