"""The FLaRe benchmark's figure: per language, soft model beside its limit, bin by bin."""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path

from satsim.benchmarks.flare import columns, scale_column
from satsim.benchmarks.stats import CURVE_WIDTH
from satsim.output import save_figure

PANELS_PER_ROW = 7
HEADER = 1.0
"""Inches above the panels for the title and the legend."""


def plot_benchmark(manifest: dict, languages: Sequence[dict], constructions: Sequence[dict],
                   path: str | Path) -> None:
    """Write one panel per language: each column's accuracy against length.

    The soft model, its scaled twins, its saturated limit and the limit at initialisation on
    satsim's test strings, pooled over trials in groups of CURVE_WIDTH lengths; with FLaRe's
    data, the model and its limit on FLaRe's test split too (dotted); a hand-built construction
    per bin where one exists.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    evaluation = manifest["evaluation"]
    bins = evaluation["bins"]
    x = [(low + high) / 2 for low, high in bins]
    built = {row["language"]: row for row in constructions if row["language"]}
    others = [row for row in constructions if not row["language"]]
    panels = len(languages) + bool(others)
    rows = math.ceil(panels / PANELS_PER_ROW)
    cols = min(PANELS_PER_ROW, panels)
    width, height = max(2.6 * cols, 10.0), 2.3 * rows + HEADER
    figure, axes = plt.subplots(rows, cols, figsize=(width, height), sharex=True, sharey=True,
                                squeeze=False)
    styles = {"soft": dict(color="tab:blue", lw=1.6, label="soft (trained)"),
              "limit": dict(color="tab:red", lw=1.6, label="saturated limit"),
              "limit_init": dict(color="tab:grey", lw=1, ls="-.",
                                 label="limit at initialisation")}
    faded = ["#7fb2e5", "#bfd8f2"]
    for c, colour in zip(evaluation["scales"], faded):
        styles[scale_column(c)] = dict(color=colour, lw=1, ls="--", label=f"soft at {c:g}θ")
    for ax, entry in zip(axes.flat, languages):
        for column in columns(evaluation):
            _curve(ax, entry["curve"], column, styles[column])
        test = entry.get("flare_test")
        if test:
            for column in ("soft", "limit"):
                _curve(ax, test["curve"], column, {**styles[column], "ls": ":", "lw": 1.2,
                                                   "label": f"{styles[column]['label']}, "
                                                            "FLaRe's test split"})
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
    figure.suptitle(f"FLaRe, scale {manifest['scale']}: accuracy against length "
                    f"({CURVE_WIDTH}-length groups, {manifest['trials']} trials pooled); "
                    "★ construction per bin; grey dotted: chance",
                    fontsize=10, y=1 - 0.15 / height)
    figure.legend(handles, labels, loc="upper center", ncol=min(len(labels), 5), fontsize=8,
                  frameon=False, bbox_to_anchor=(0.5, 1 - 0.4 / height))
    figure.tight_layout(rect=(0, 0, 1, top))
    save_figure(figure, path, dpi=130)
    plt.close(figure)


def _curve(ax, curve: dict | None, column: str, style: dict) -> None:
    """One column's accuracy per length group (trials pooled), at each group's middle."""
    if not curve:
        return
    width = curve["width"]
    points = [(width * g + (width - 1) / 2, hits / n)
              for g, (n, hits) in enumerate(zip(curve["n"], curve[column])) if n]
    if points:
        ax.plot(*zip(*points), **style)


def _frame(ax, title: str, x: list[float], bins) -> None:
    """A panel's title, axes (length; the bins' edges marked) and chance line."""
    ax.axhline(0.5, color="grey", lw=0.8, ls=":")
    for low, _ in bins[1:]:
        ax.axvline(low - 0.5, color="grey", lw=0.5, alpha=0.5)
    ax.set_title(title, fontsize=9)
    ax.set_ylim(-0.02, 1.02)
    ax.set_xlabel("length", fontsize=7)
    ax.tick_params(labelsize=7)


def _other_constructions(ax, rows: Sequence[dict], x: list[int], bins) -> None:
    """One panel for the constructions of languages outside the benchmark, named in it."""
    for row in rows:
        ax.plot(x, [b["accuracy"] for b in row["bins"]], "k*", ms=11)
    names = "\n".join(row["construction"] for row in rows)
    ax.text(0.03, 0.05, names, transform=ax.transAxes, fontsize=7, va="bottom")
    _frame(ax, "other constructions\n(saturated)", x, bins)
