"""The figures of ``satsim report --plot DIR``: one PNG per question (matplotlib, Agg, lazy)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from satsim.output import save_figure
from satsim.training.report import Report

PLOTS = ("norm", "layers", "projections", "direction", "similarity", "accuracy", "training")
"""The files written, as DIR/<name>.png."""


def _pyplot():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _norm(ax, report: Report) -> None:
    t, y = report.run.series("norm")
    ax.plot(t, y, "k.", label="‖θ_t‖")
    grid = np.linspace(t.min(), t.max(), 200)
    for fit in report.norm.fits:
        r2 = "–" if fit.r2 is None else f"{fit.r2:.4f}"
        best = " (best)" if fit.form == report.norm.best else ""
        ax.plot(grid, fit.predict(grid), label=f"a·{fit.form} + b, R² {r2}{best}")
    if report.norm.power is not None:
        p = report.norm.power
        ax.plot(grid, p.predict(grid), ":", label=f"free power k = {p.exponent:.2f}")
    ax.set(xlabel="step t", ylabel="‖θ‖", title="parameter norm and its fits")
    ax.legend(fontsize=7)


def _layers(ax, report: Report) -> None:
    for name, (t, y) in report.run.named_series("norm_layers").items():
        ax.plot(t, y, label=name)
    ax.set(xlabel="step t", ylabel="‖θ_layer‖", title="per-layer norms")
    ax.legend(fontsize=7)


def _projections(ax, report: Report) -> None:
    for key in ("grad_projection", "update_projection", "update_norm"):
        t, y = report.run.series(key)
        if len(t):
            ax.plot(t, y, label=key)
    ax.axhline(0, color="grey", lw=0.5)
    ax.set_yscale("symlog", linthresh=1e-4)  # both signs, over decades
    ax.set(xlabel="step t", ylabel="value (symmetric log)", title="θᵀ∇L, θᵀΔθ and ‖Δθ‖")
    ax.legend(fontsize=7)


def _direction(ax, report: Report) -> None:
    t, y = report.run.series("direction_cosine")
    ax.plot(t, y, ".-", label="cos(θ_t, θ previous logged)")
    points = [(c["step"], c["cosine_to_final"]) for c in report.checkpoint_direction
              if c["cosine_to_final"] is not None]
    if points:
        ax.plot(*zip(*points), "o-", label="cos(θ_checkpoint, θ_final)")
    ax.set(xlabel="step t", ylabel="cosine", title="direction convergence")
    ax.legend(fontsize=7)


def _similarity(ax, report: Report) -> None:
    from satsim.model.architecture import stream_names

    t, values = report.run.similarity()
    names = stream_names(report.run.final)
    for stream in range(values.shape[1]):
        name = names[stream] if len(names) == values.shape[1] else f"stream {stream}"
        ax.plot(t, values[:, stream], label=name)
    ax.set(xlabel="step t", ylabel="cos(f(x;θ), f(x;1000θ))", title="representation similarity")
    if values.shape[1]:
        ax.legend(fontsize=7)


def _accuracy(ax, report: Report) -> None:
    labels = [f"{p.min_len}–{p.max_len}" for p in report.bins]
    x = np.arange(len(labels))
    for offset, kind in ((-0.2, "soft"), (0.2, "limit")):
        heights = [getattr(p, kind).accuracy if getattr(p, kind) else np.nan for p in report.bins]
        ax.bar(x + offset, heights, width=0.4, label=kind)
    ax.set_xticks(x, labels, rotation=30, fontsize=7)
    ax.set(ylim=(0, 1.15), xlabel="length bin", ylabel="string accuracy",
           title="soft model vs its saturated limit")
    ax.legend(fontsize=7, loc="upper center", ncol=2)


def _training(ax, report: Report) -> None:
    t, loss = report.run.series("loss")
    ax.plot(t, loss, color="C0", label="loss")
    ax.set_yscale("log")
    ax.set(xlabel="step t", ylabel="training loss (log)", title="training loss and batch accuracy")
    right = ax.twinx()
    t, accuracy = report.run.series("accuracy")
    right.plot(t, accuracy, color="C1", label="batch accuracy")
    right.set(ylabel="batch accuracy", ylim=(0, 1.05))
    lines = ax.get_lines() + right.get_lines()
    ax.legend(lines, [line.get_label() for line in lines], fontsize=7)


DRAW = {"norm": _norm, "layers": _layers, "projections": _projections, "direction": _direction,
        "similarity": _similarity, "accuracy": _accuracy, "training": _training}


def write_plots(report: Report, folder: str | Path) -> list[Path]:
    """Draw every figure of PLOTS into ``folder`` (created if needed); return the paths."""
    plt = _pyplot()
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for name in PLOTS:
        fig, ax = plt.subplots(figsize=(7, 4.5))
        DRAW[name](ax, report)
        fig.tight_layout()
        path = folder / f"{name}.png"
        save_figure(fig, path, dpi=110)
        plt.close(fig)
        paths.append(path)
    return paths
