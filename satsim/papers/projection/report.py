"""Text tables of a projection run: the per-variant findings and the ρ*(a) table."""

from __future__ import annotations

import math

import numpy as np

from satsim.papers.projection.experiment import ProjectionRun
from satsim.papers.projection.summary import summarise


def _scales_text(scales: list[float]) -> str:
    """Short form of a scale grid: '1…49, 1000' for a run of consecutive integers."""
    ints = [int(c) for c in scales if float(c).is_integer()]
    if len(ints) == len(scales) and len(scales) > 3:
        head = [c for i, c in enumerate(ints) if c == ints[0] + i]
        tail = ints[len(head):]
        if len(head) > 2:
            return ", ".join([f"{head[0]}…{head[-1]}"] + [str(c) for c in tail])
    return ", ".join(f"{c:g}" for c in scales)


def _num(value: float | None, fmt: str = ".3g") -> str:
    """A number, or ∞ for None / infinity."""
    return "∞" if value is None or math.isinf(value) else format(value, fmt)


def header(run: ProjectionRun) -> str:
    """One line with the settings."""
    s = run.settings
    head = ("affine" if s["head_bias"] else "linear") + (" head in θ" if s["scale_head"]
                                                          else " head fixed")
    seeds = s["seeds"]
    seed_text = ",".join(map(str, seeds))
    if len(seeds) > 2 and seeds == list(range(seeds[0], seeds[-1] + 1)):
        seed_text = f"{seeds[0]}–{seeds[-1]}"
    return (f"projection · n {s['n']} · hidden {s['hidden']} · classes {s['classes']} · "
            f"seeds {seed_text} · scales {_scales_text(s['scales'])} · {head} · float64")


def findings_table(run: ProjectionRun) -> list[str]:
    """Per variant: ρ0, the a = 1.0 signs and the a = 0.8 crossing."""
    width = max(len(v) for v in run.runs) + 2
    lines = [f"{'variant':<{width}}{'ρ0':>6}  {'a=1.0: <0 at all c':>18} "
             f"{'max+/peak':>10} {'log10|last|':>12}   {'a=0.8: c* per seed':<22}"
             f"{'ρ*(0.8)':>8}"]
    for name, runs in run.runs.items():
        s = summarise(runs)
        right, wrong = s.get("accuracy_1.0"), s.get("accuracy_0.8")
        cols = f"{name:<{width}}{s['rho0_median']:>6.2f}  "
        if right:
            cols += (f"{right['seeds_always_negative']:>10}/{len(runs)} seeds "
                     f"{right['max_positive_over_peak_abs']:>10.2g} "
                     f"{np.median(right['log10_abs_last']):>12.4g}   ")
        if wrong:
            cstars = ",".join(_num(c, "g") for c in wrong["c_star"])
            cols += f"{cstars:<22}{_num(wrong['rho_star_median'], '.3g'):>8}"
        lines.append(cols)
    lines.append("a=1.0: seeds whose projection is < 0 at every scale; max+/peak: the largest "
                 "positive value over the peak |value|; log10|last|: at the last scale (median)")
    return lines


def equilibrium_table(run: ProjectionRun) -> list[str]:
    """ρ*(a) (median over seeds) per accuracy and variant, and whether it rises with a."""
    names = list(run.runs)
    summaries = {name: summarise(runs)["equilibrium"] for name, runs in run.runs.items()}
    width = max(12, *(len(n) + 2 for n in names))
    lines = ["ρ*(a) = c*(a)·‖θ0‖, median over seeds (∞: never positive on the scale grid)",
             f"{'a':>6}" + "".join(f"{n:>{width}}" for n in names)]
    accuracies = summaries[names[0]]["accuracies"]
    for i, a in enumerate(accuracies):
        lines.append(f"{a:>6.3f}" + "".join(
            f"{_num(summaries[n]['rho_star_median'][i], '.2f'):>{width}}" for n in names))
    lines.append(f"{'rises':>6}" + "".join(
        f"{('yes' if summaries[n]['median_non_decreasing'] else 'NO'):>{width}}" for n in names))
    lines.append(f"{'seeds':>6}" + "".join(
        f"{summaries[n]['seeds_non_decreasing']:>{width - 2}}/{summaries[n]['seeds']}"
        for n in names))
    lines.append("rises: the median ρ*(a) never decreases as a grows; seeds: how many single "
                 "seeds' ρ*(a) never decrease")
    return lines
