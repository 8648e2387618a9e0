"""Figures of a grid run or a trace, drawn with matplotlib's object API (no pyplot state)."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from satsim.output import save_figure
from satsim.papers.scan_snap.data import DISTINCT_WEIGHTS
from satsim.papers.scan_snap.measures import uniform_distinct_entropy

if TYPE_CHECKING:
    from satsim.papers.scan_snap.grid import GridResult
    from satsim.papers.scan_snap.trace import TraceResult

DPI = 90


def _save(fig: Figure, path: str) -> str:
    """Write ``fig`` as PNG to ``path`` and return the path."""
    FigureCanvasAgg(fig)
    save_figure(fig, path, dpi=DPI)
    return path


def _default_k(result: GridResult) -> int:
    """Return the K whose curves are drawn: 3 if in the grid, else the smallest."""
    ks = result.grid.n_queries
    return 3 if 3 in ks else min(ks)


def grid_heatmap(result: GridResult, path: str, field: str = "entropy") -> str:
    """Draw mean final entropy (or mean snap point) per (η_Z, r), one panel per K."""
    grid = result.grid
    values = np.array([[[result.cell(k, e, r).snap_mean if field == "snap"
                         else float(result.cell(k, e, r).entropy.mean())
                         for r in grid.ratio] for e in grid.eta_z] for k in grid.n_queries])
    finite = values[np.isfinite(values)]
    vmin, vmax = (finite.min(), finite.max()) if finite.size else (0.0, 1.0)
    fig = Figure(figsize=(2.6 * len(grid.n_queries) + 0.8, 2.9), layout="constrained")
    axes = fig.subplots(1, len(grid.n_queries), squeeze=False)[0]
    image = None
    for ax, k, panel in zip(axes, grid.n_queries, values):
        image = ax.imshow(panel, origin="lower", cmap="viridis", vmin=vmin, vmax=vmax,
                          aspect="auto")
        for (i, j), v in np.ndenumerate(panel):
            text = "–" if not np.isfinite(v) else (f"{v:.0f}" if field == "snap" else f"{v:.2f}")
            ax.text(j, i, text, ha="center", va="center", fontsize=7,
                    color="white" if np.isfinite(v) and v < (vmin + vmax) / 2 else "black")
        ax.set_xticks(range(len(grid.ratio)), [f"{r:g}" for r in grid.ratio])
        ax.set_yticks(range(len(grid.eta_z)), [f"{e:g}" for e in grid.eta_z])
        ax.set_xlabel("r = η_Y / η_Z")
        ax.set_title(f"K = {k}", fontsize=10)
    axes[0].set_ylabel("η_Z")
    label = ("snap point (iteration)" if field == "snap"
             else f"entropy at t = {result.iters} (nats)")
    fig.colorbar(image, ax=list(axes), shrink=0.9, label=label)
    return _save(fig, path)


def entropy_curves(result: GridResult, path: str, n_queries: int | None = None) -> str:
    """Draw the published entropy against iteration: η_Z varied at the smallest r, and r varied."""
    k = _default_k(result) if n_queries is None else n_queries
    grid = result.grid
    fig = Figure(figsize=(8.4, 3.2), layout="constrained")
    left, right = fig.subplots(1, 2, sharey=True)
    middle = grid.eta_z[len(grid.eta_z) // 2]
    for ax, cells, title in (
            (left, [result.cell(k, e, grid.ratio[0]) for e in grid.eta_z],
             f"K = {k}, r = {grid.ratio[0]:g}: varying η_Z"),
            (right, [result.cell(k, middle, r) for r in grid.ratio],
             f"K = {k}, η_Z = {middle:g}: varying r")):
        colors = [f"C{i}" for i in range(len(cells))]
        for c, color in zip(cells, colors):
            label = f"η_Z = {c.eta_z:g}" if ax is left else f"r = {c.ratio:g}"
            ax.plot(c.entropy_curve, color=color, label=label)
            if np.isfinite(c.snap_mean):
                t = int(round(c.snap_mean))
                ax.plot([t], [c.entropy_curve[t]], "o", color=color, ms=5)
        ax.axhline(uniform_distinct_entropy(), color="gray", ls=":", lw=1)
        ax.set_title(title, fontsize=10)
        ax.set_xlabel("iteration")
        ax.legend(fontsize=8)
    left.set_ylabel("entropy of c_n on distinct tokens (nats)")
    fig.suptitle(f"dots: mean snap point (ε = {result.epsilon:g}); dotted: uniform-z entropy",
                 fontsize=9)
    return _save(fig, path)


def z_by_weight(result: GridResult, path: str, n_queries: int | None = None) -> str:
    """Draw final z of each distinct token against its co-occurrence weight, per setting."""
    k = _default_k(result) if n_queries is None else n_queries
    grid = result.grid
    fig = Figure(figsize=(4.6, 3.4), layout="constrained")
    ax = fig.subplots()
    settings = [(e, grid.ratio[0]) for e in grid.eta_z] + [(grid.eta_z[-1], grid.ratio[-1])]
    for i, (e, r) in enumerate(dict.fromkeys(settings)):
        c = result.cell(k, e, r)
        ax.plot(DISTINCT_WEIGHTS, c.z_distinct - c.z_common, "o-", color=f"C{i}", ms=3,
                label=f"η_Z = {e:g}, r = {r:g}")
    ax.axhline(0.0, color="gray", ls=":", lw=1)
    ax.set_xlabel("co-occurrence weight of the distinct token")
    ax.set_ylabel("final z − mean z of common tokens")
    ax.set_title(f"K = {k}, mean over seeds and next tokens", fontsize=10)
    ax.legend(fontsize=7)
    return _save(fig, path)


def trace_figure(trace: TraceResult, path: str) -> str:
    """Draw a trace: attention shares, three entropies, final z by weight, the composition."""
    rows = trace.rows()
    t = np.array([row["t"] for row in rows])
    fig = Figure(figsize=(14, 3.2), layout="constrained")
    a, b, c, d = fig.subplots(1, 4)
    a.plot(t, [row["distinct_share"] for row in rows], label="distinct tokens")
    a.plot(t, [row["common_share"] for row in rows], label="common tokens")
    a.set_ylabel("share of attention")
    b.plot(t, [row["entropy_distinct"] for row in rows], label="c_n on distinct (published)")
    b.plot(t, [row["entropy_tokens"] for row in rows], label="c_n on all of n's tokens")
    b.plot(t, np.array([row["entropy_positions"] for row in rows]) / np.log(127),
           label="over 127 positions / ln 127")
    b.set_ylabel("entropy (nats)")
    snaps = trace.snap[trace.snap >= 0]
    for ax in (a, b):
        ax.set_xlabel("iteration")
        ax.legend(fontsize=7)
        if len(snaps):
            ax.axvline(snaps.mean(), color="gray", ls="--", lw=1)
    z = trace.z_slots[:, -1]                                              # (S, N, slots)
    shared = trace.runs.task.n_shared
    c.plot(DISTINCT_WEIGHTS,
           (z[..., shared:] - z[..., :shared].mean(-1, keepdims=True)).mean((0, 1)), "o-", ms=3)
    c.axhline(0.0, color="gray", ls=":", lw=1)
    c.set_xlabel("co-occurrence weight")
    c.set_ylabel("final z − mean common z")
    shown = min(len(rows), 51)
    image = d.imshow([row["composition"] for row in rows[:shown]], aspect="auto",
                     interpolation="nearest")
    d.axvline(shared - 0.5, color="w", ls="--", lw=1)
    d.set_xlabel("token (shared, then distinct by weight)")
    d.set_ylabel("iteration")
    d.set_title("composition c_n, mean over n and seeds", fontsize=9)
    fig.colorbar(image, ax=d)
    s = trace.runs.settings[0]
    fig.suptitle(f"{trace.name}: K = {trace.runs.task.n_queries}, η_Z = {s.eta_z:g}, "
                 f"r = {s.ratio:g}, "
                 f"{len(trace.runs.seeds)} seeds; dashed: mean snap point", fontsize=9)
    return _save(fig, path)


def write_grid_plots(result: GridResult, directory: str) -> list[str]:
    """Write the heat maps, entropy curves and z-by-weight figures of a grid run."""
    os.makedirs(directory, exist_ok=True)
    join = os.path.join
    return [grid_heatmap(result, join(directory, "scan_snap_heatmap.png")),
            grid_heatmap(result, join(directory, "scan_snap_snap.png"), field="snap"),
            entropy_curves(result, join(directory, "scan_snap_entropy.png")),
            z_by_weight(result, join(directory, "scan_snap_z.png"))]


def write_trace_plots(trace: TraceResult, directory: str) -> list[str]:
    """Write the trace figure and the trace arrays (.npz) into ``directory``."""
    os.makedirs(directory, exist_ok=True)
    stem = os.path.join(directory, "scan_snap_fig4" if trace.name == "fig4" else "scan_snap_trace")
    trace.save(stem + ".npz")
    return [trace_figure(trace, stem + ".png"), stem + ".npz"]
