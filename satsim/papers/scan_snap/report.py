"""Plain-text tables of a grid run or a trace."""

from __future__ import annotations

from typing import TYPE_CHECKING

from satsim.papers.scan_snap.measures import sample_std, uniform_distinct_entropy

if TYPE_CHECKING:
    from satsim.papers.scan_snap.grid import Cell, GridResult
    from satsim.papers.scan_snap.trace import TraceResult


def _snap_text(cell: Cell) -> str:
    """Return 'mean (snapped/seeds)' for a cell's snap point; '!' when a seed diverged."""
    done = int((cell.snap >= 0).sum())
    mean = "–" if not done else f"{cell.snap_mean:.1f}"
    return f"{mean} ({done}/{len(cell.snap)}){'!' if cell.diverged.any() else ''}"


def divergence_note(seeds_diverged: int, seeds: int) -> list[str]:
    """A line saying that some runs diverged, so their snap points are no snap (or nothing)."""
    if not seeds_diverged:
        return []
    return [f"note: {seeds_diverged}/{seeds} runs diverged (loss ended above where it began or "
            "not finite; '!' in the table): their snap points are the model freezing, not "
            "learning; lower η_Z or r"]


def grid_table(result: GridResult) -> list[str]:
    """Return the per-cell table: entropy mean ± std, shares, snap point, saturation view."""
    lines = [f"entropy of c_n on distinct tokens at t = {result.iters} (nats), mean ± std over "
             f"{result.seeds} seeds; uniform z gives {uniform_distinct_entropy():.4f}",
             f"{'K':>3} {'η_Z':>5} {'r':>4} {'entropy':>15} {'distinct':>9} "
             f"{'snap ε=' + format(result.epsilon, 'g'):>13} {'tie gap':>8} {'TV→sat':>7} "
             f"{'support':>8}"]
    for c in result.cells:
        d = c.to_dict()
        sat = c.saturation
        lines.append(f"{c.n_queries:>3} {c.eta_z:>5g} {c.ratio:>4g} "
                     f"{d['entropy_mean']:>7.3f} ± {d['entropy_std']:.3f} "
                     f"{d['distinct_share_mean']:>9.3f} {_snap_text(c):>13} "
                     f"{sat['tie_gap']:>8.3f} {sat['tv']:>7.3f} "
                     f"{sat['soft_support']:>4.0f}/{sat['support']:<3.0f}")
    lines.append("distinct: attention share on distinct tokens (t = 0 about 0.355); tie gap: best "
                 "minus second-best token logit; TV→sat: total variation between soft and "
                 "saturated attention over positions; support: soft effective positions "
                 "(exp entropy) / saturated tie-set positions")
    return lines


def grid_matrix(result: GridResult, markdown: bool = False) -> list[str]:
    """Return the compact table: one row per (K, η_Z), one column per r, 'mean ± std'."""
    grid = result.grid
    head = ["K", "η_Z", *[f"r = {r:g}" for r in grid.ratio]]
    rows = []
    for k in grid.n_queries:
        for e in grid.eta_z:
            cells = [result.cell(k, e, r) for r in grid.ratio]
            rows.append([f"{k}", f"{e:g}", *[f"{c.entropy.mean():.3f} ± {sample_std(c.entropy):.3f}"
                                             for c in cells]])
    if markdown:
        out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
        return out + ["| " + " | ".join(r) + " |" for r in rows]
    widths = [max(len(x[i]) for x in [head, *rows]) for i in range(len(head))]
    return [" ".join(x.rjust(w) for x, w in zip(r, widths)) for r in [head, *rows]]


def trace_table(trace: TraceResult, every: int = 10, early: int = 0) -> list[str]:
    """Return the trace every ``every`` iterations, every other one up to ``early``, the last."""
    rows = trace.rows()
    lines = [f"{'t':>4} {'loss':>9} {'common':>7} {'distinct':>9} {'H(tokens)':>9} "
             f"{'H(dist)':>8} {'H(pos)':>7} {'change δ':>9}"]
    for row in rows:
        t = row["t"]
        if t % every and t != len(rows) - 1 and not (t <= early and t % 2 == 0):
            continue
        change = "" if row["change"] is None else f"{row['change']:.2e}"
        lines.append(f"{t:>4} {row['loss']:>9.3g} {row['common_share']:>7.3f} "
                     f"{row['distinct_share']:>9.3f} {row['entropy_tokens']:>9.3f} "
                     f"{row['entropy_distinct']:>8.3f} {row['entropy_positions']:>7.3f} "
                     f"{change:>9}")
    lines.append("common / distinct: share of the query's attention on each kind of token "
                 "(mean over next tokens and seeds); H: entropies of c_n over all of n's tokens, "
                 "over its distinct tokens, over the 127 positions")
    snaps = trace.snap
    done = snaps[snaps >= 0]
    mean = f"{done.mean():.1f}" if len(done) else "–"
    lines.append(f"snap point (ε = {trace.epsilon:g}): mean {mean} over {len(done)}/{len(snaps)} "
                 f"seeds that snapped; per seed {[int(s) for s in snaps]} (-1: not snapped)")
    return lines + divergence_note(int(trace.diverged.sum()), len(snaps))
