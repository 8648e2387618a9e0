"""The grid of K × η_Z × r settings, run seed-batched per K, summarised per cell."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from satsim.errors import SatsimError
from satsim.papers.scan_snap import measures
from satsim.papers.scan_snap.data import Task
from satsim.papers.scan_snap.saturation import saturation_view
from satsim.papers.scan_snap.snap import DEFAULT_EPSILON, NOT_SNAPPED, diverged, snap_point

if TYPE_CHECKING:
    from satsim.papers.scan_snap.train import Runs


@dataclass(frozen=True)
class Grid:
    """Settings to sweep: query-token counts K, learning rates η_Z and ratios r = η_Y / η_Z."""

    name: str
    n_queries: tuple[int, ...]
    eta_z: tuple[float, ...]
    ratio: tuple[float, ...]

    @property
    def n_cells(self) -> int:
        """Return the number of (K, η_Z, r) cells."""
        return len(self.n_queries) * len(self.eta_z) * len(self.ratio)


GRIDS: dict[str, Grid] = {
    "paper": Grid("paper", (1, 3, 5, 10), (0.5, 1.0, 2.0, 3.0), (1.0, 2.0, 5.0, 10.0)),
    "small": Grid("small", (1, 3), (0.5, 2.0), (1.0, 5.0)),
}
"""The published grid and a quick one (2 × 2 × 2)."""


@dataclass
class Cell:
    """One (K, η_Z, r) setting across seeds."""

    n_queries: int
    eta_z: float
    ratio: float
    entropy: np.ndarray
    """Published measure at the last iteration, per seed."""
    initial_entropy: np.ndarray
    distinct_share: np.ndarray
    initial_distinct_share: np.ndarray
    loss: np.ndarray
    snap: np.ndarray
    """Snap point per seed (NOT_SNAPPED = -1)."""
    entropy_curve: np.ndarray
    """Published measure per iteration, mean over seeds, (T+1,)."""
    z_distinct: np.ndarray
    """Final z of the distinct tokens by weight 0.1..1.0, mean over seeds and next tokens, (10,)."""
    z_common: float
    """Final z of the common tokens, mean over seeds, next tokens and tokens."""
    z_order: np.ndarray
    """Spearman rank correlation of final distinct z with weight, per seed (mean over n)."""
    saturation: dict[str, float] = field(default_factory=dict)
    diverged: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=bool))
    """Per seed: the loss ended above where it began (or was not finite)."""

    @property
    def snap_mean(self) -> float:
        """Return the mean snap point over the seeds that snapped (NaN if none did)."""
        done = self.snap[self.snap != NOT_SNAPPED]
        return float(done.mean()) if len(done) else float("nan")

    def to_dict(self) -> dict:
        """Return a JSON-ready summary."""
        done = self.snap[self.snap != NOT_SNAPPED]
        return {
            "K": self.n_queries, "eta_z": self.eta_z, "r": self.ratio,
            "eta_y": self.eta_z * self.ratio,
            "entropy_mean": float(self.entropy.mean()),
            "entropy_std": measures.sample_std(self.entropy),
            "entropy": self.entropy.tolist(),
            "initial_entropy_mean": float(self.initial_entropy.mean()),
            "distinct_share_mean": float(self.distinct_share.mean()),
            "initial_distinct_share_mean": float(self.initial_distinct_share.mean()),
            "loss_mean": float(self.loss.mean()), "loss": self.loss.tolist(),
            "snap_mean": None if not len(done) else float(done.mean()),
            "snap_std": None if not len(done) else measures.sample_std(done),
            "diverged": int(self.diverged.sum()),
            "snapped": int(len(done)), "snap": [None if s == NOT_SNAPPED else int(s)
                                                 for s in self.snap],
            "z_distinct": self.z_distinct.tolist(), "z_common": self.z_common,
            "z_order_spearman_mean": float(self.z_order.mean()),
            "saturation": self.saturation,
            "entropy_curve": self.entropy_curve.tolist(),
        }


@dataclass
class GridResult:
    """Every cell of a grid run, with the run's settings and wall time."""

    grid: Grid
    seeds: int
    iters: int
    batch: int
    zero_init: bool
    loss: str
    epsilon: float
    device: str
    cells: list[Cell]
    wall_s: float

    def cell(self, n_queries: int, eta_z: float, ratio: float) -> Cell:
        """Return the cell of one setting."""
        for c in self.cells:
            if (c.n_queries, c.eta_z, c.ratio) == (n_queries, eta_z, ratio):
                return c
        raise KeyError((n_queries, eta_z, ratio))

    def to_dict(self) -> dict:
        """Return a JSON-ready report."""
        return {"grid": self.grid.name, "seeds": self.seeds, "iters": self.iters,
                "batch": self.batch, "zero_init": self.zero_init, "loss": self.loss,
                "epsilon": self.epsilon,
                "device": self.device, "wall_s": self.wall_s,
                "analytic_uniform_entropy": measures.uniform_distinct_entropy(),
                "cells": [c.to_dict() for c in self.cells]}


def _rank(x: np.ndarray) -> np.ndarray:
    """Return the ranks 0..n-1 along the last axis (ties broken by position)."""
    return np.argsort(np.argsort(x, axis=-1, kind="stable"), axis=-1, kind="stable")


def spearman_with_weight(z_distinct: np.ndarray) -> np.ndarray:
    """Return the Spearman correlation of z over the 10 distinct slots with their weight order."""
    r = _rank(z_distinct).astype(np.float64)
    n = r.shape[-1]
    target = np.arange(n, dtype=np.float64)
    return 1.0 - 6.0 * ((r - target) ** 2).sum(axis=-1) / (n * (n * n - 1))


def summarise(runs: Runs, epsilon: float) -> list[Cell]:
    """Return one Cell per setting of a ``train.Runs`` (all of one K)."""
    task = runs.task
    z_slots = measures.token_logits(runs.z, task)                        # (C, S, N, slots)
    shared = task.n_shared
    snaps = snap_point(runs.change, epsilon)
    view = saturation_view(runs.z, task, runs.eval_labels, runs.eval_counts)
    order = spearman_with_weight(z_slots[..., shared:]).mean(axis=-1)   # (C, S)
    cells = []
    for i, s in enumerate(runs.settings):
        cells.append(Cell(
            n_queries=task.n_queries, eta_z=s.eta_z, ratio=s.ratio,
            entropy=runs.distinct_entropy[i, :, -1],
            initial_entropy=runs.distinct_entropy[i, :, 0],
            distinct_share=runs.distinct_share[i, :, -1],
            initial_distinct_share=runs.distinct_share[i, :, 0],
            loss=runs.loss[i, :, -1], snap=snaps[i], diverged=diverged(runs.loss[i]),
            entropy_curve=runs.distinct_entropy[i].mean(axis=0),
            z_distinct=z_slots[i, ..., shared:].mean(axis=(0, 1)),
            z_common=float(z_slots[i, ..., :shared].mean()),
            z_order=order[i],
            saturation={name: float(np.mean(getattr(view, name)[i]))
                        for name in view.__dataclass_fields__}))
    return cells


def run_grid(grid: Grid, seeds: int = 10, *, iters: int = 100, batch: int = 128,
             zero_init: bool = False, loss: str = "vocab", device: str = "cpu",
             epsilon: float = DEFAULT_EPSILON,
             on_step: Callable[[int], None] | None = None) -> GridResult:
    """Train every cell of ``grid`` for ``seeds`` seeds (all settings of one K in one batch)."""
    from satsim.papers.scan_snap.train import Setting, train
    from satsim.soft.device import resolve_device

    if seeds < 1:
        raise SatsimError(f"the number of seeds must be at least 1, got {seeds}")
    dev = str(resolve_device(device))
    settings = [Setting(e, r) for e in grid.eta_z for r in grid.ratio]
    start = time.perf_counter()
    cells: list[Cell] = []
    for k in grid.n_queries:
        runs = train(Task(k), settings, list(range(seeds)), iters=iters, batch=batch,
                     zero_init=zero_init, loss=loss, device=dev, on_step=on_step)
        cells.extend(summarise(runs, epsilon))
    return GridResult(grid=grid, seeds=seeds, iters=iters, batch=batch, zero_init=zero_init,
                      loss=loss, epsilon=epsilon, device=dev, cells=cells,
                      wall_s=time.perf_counter() - start)
