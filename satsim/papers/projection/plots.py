"""Figure 1 of the paper, redrawn: projection vs cρ0 at a = 1.0 and 0.8, and ρ*(a) vs a."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from satsim.output import save_figure
from satsim.papers.projection.experiment import ProjectionRun
from satsim.papers.projection.summary import rho_star_table

CURVE_MAX_SCALE = 100.0  # c = 1000 stays in the data and tables, off the curves (as the paper)


def write_figure(run: ProjectionRun, path: str | Path) -> str:
    """Draw the three panels into ``path`` (PNG); return the path written."""
    from matplotlib import rcParams
    from matplotlib.figure import Figure

    fig = Figure(figsize=(12, 9), constrained_layout=True)
    grid = fig.add_gridspec(2, 2)
    panels = [fig.add_subplot(grid[0, 0]), fig.add_subplot(grid[0, 1]),
              fig.add_subplot(grid[1, :])]
    colours = rcParams["axes.prop_cycle"].by_key()["color"]
    for k, (name, runs) in enumerate(run.runs.items()):
        colour = colours[k % len(colours)]
        scales = np.array(runs[0].scales)
        keep = scales <= CURVE_MAX_SCALE if (scales <= CURVE_MAX_SCALE).any() else scales > 0
        rho0 = float(np.median([r.rho0 for r in runs]))
        for ax, accuracy in zip(panels[:2], (1.0, 0.8)):
            if accuracy not in runs[0].accuracies:
                continue
            for r in runs:
                ax.plot(scales[keep] * r.rho0, r.curve(accuracy)[keep], color=colour, lw=0.6,
                        alpha=0.3)
            median = np.median([r.curve(accuracy) for r in runs], axis=0)
            ax.plot(scales[keep] * rho0, median[keep], color=colour, lw=2, label=name)
        accuracies = np.array(runs[0].accuracies)
        table = rho_star_table(runs)
        median = np.median(table, axis=0)
        finite = np.isfinite(median)
        panels[2].plot(accuracies[finite], median[finite], "o-", color=colour, label=name)
        for a, row in zip(accuracies, table.T):
            shown = row[np.isfinite(row)]
            panels[2].scatter([a] * len(shown), shown, color=colour, s=8, alpha=0.35)
    n = run.settings["n"]
    for ax, accuracy in zip(panels[:2], (1.0, 0.8)):
        ax.axhline(0, color="black", lw=0.6)
        ax.set_xlabel(r"$c\rho_0$ (scaled norm)")
        ax.set_ylabel(r"$c\theta_0^\top \nabla L_{|c\theta_0}$")
        ax.set_title(f"accuracy {accuracy:.0%} (n = {n}; thin: seeds, bold: median)")
    panels[0].legend(fontsize="small")
    panels[2].set_xlabel("accuracy a")
    panels[2].set_ylabel(r"$\rho^*(a) = c^*(a)\,\Vert\theta_0\Vert$")
    panels[2].set_title("norm at projection equilibrium (median over seeds; dots: seeds; "
                        "never positive: not drawn)")
    panels[2].legend(fontsize="small")
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    save_figure(fig, path, dpi=110)
    return str(path)
