"""Head roles: a head that focuses on a few positions is local, one that averages is global.

This is the head analysis of the norm-growth paper, made exact: there a position counted as
attended when its softmax weight at c = 1000 exceeded 1e-5 (with padding unmasked). In a
saturated network the attended set *is* the tie set, so its size is read off directly.

A query counts toward the classification when it could tell the two roles apart, i.e. when more
than ``local_max`` keys were allowed. A head is **global** when its median tie set covers at
least ``global_fraction`` of the allowed keys, **local** when its median tie set has at most
``local_max`` positions, and **mixed** otherwise.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass

import numpy as np

from satsim.engine.simulator import Simulator, Trace
from satsim.model.masks import allowed_count

SIZE_BUCKETS = ((1, 1), (2, 2), (3, 4), (5, 8), (9, 16), (17, 64), (65, 256), (257, None))


@dataclass(frozen=True)
class HeadRole:
    """The role of one head and the distribution of its tie-set sizes."""

    layer: int
    head: int
    role: str
    queries: int
    median_tie_size: float
    median_fraction: float
    mean_fraction: float
    size_histogram: dict[str, int]

    def to_dict(self) -> dict:
        """A JSON-ready dict."""
        return asdict(self)


def _bucket_label(low: int, high: int | None) -> str:
    if high is None:
        return f"{low}+"
    return str(low) if low == high else f"{low}-{high}"


def _histogram(sizes: np.ndarray) -> dict[str, int]:
    counts = {}
    for low, high in SIZE_BUCKETS:
        upper = np.inf if high is None else high
        counts[_bucket_label(low, high)] = int(np.sum((sizes >= low) & (sizes <= upper)))
    return counts


def head_roles(
    simulator: Simulator,
    strings: Sequence[str],
    local_max: int = 3,
    global_fraction: float = 0.5,
) -> list[HeadRole]:
    """Classify every head of the simulator's model on ``strings`` as local, global or mixed."""
    return roles_from_traces(simulator.traces(list(strings)), local_max, global_fraction)


def roles_from_traces(
    traces: Sequence[Trace], local_max: int = 3, global_fraction: float = 0.5
) -> list[HeadRole]:
    """Classify every head as local, global or mixed from traces the caller already has."""
    tie_sizes = [[None if heads is None else (heads.tie_size, heads.masks)
                  for heads in trace.layers] for trace in traces]
    return roles_from_tie_sizes(tie_sizes, local_max, global_fraction)


def roles_from_tie_sizes(
    tie_sizes: Sequence[Sequence[tuple[np.ndarray, Sequence[str]] | None]], local_max: int = 3,
    global_fraction: float = 0.5,
) -> list[HeadRole]:
    """Classify every head from per-string, per-layer ((H, T) tie sizes, head masks) or None."""
    sizes: dict[tuple[int, int], list[np.ndarray]] = {}
    fractions: dict[tuple[int, int], list[np.ndarray]] = {}
    for layers in tie_sizes:
        for layer, entry in enumerate(layers):
            if entry is None:
                continue
            tie_size, masks = entry
            for head in range(tie_size.shape[0]):
                allowed = allowed_count(masks[head], tie_size.shape[-1])
                informative = allowed > local_max
                size = tie_size[head][informative]
                sizes.setdefault((layer, head), []).append(size)
                fractions.setdefault((layer, head), []).append(size / allowed[informative])
    roles = []
    for (layer, head), chunks in sorted(sizes.items()):
        size = np.concatenate(chunks)
        fraction = np.concatenate(fractions[(layer, head)])
        if len(size) == 0:
            role, median_size, median_fraction, mean_fraction = "undetermined", 0.0, 0.0, 0.0
        else:
            median_size = float(np.median(size))
            median_fraction = float(np.median(fraction))
            mean_fraction = float(np.mean(fraction))
            if median_fraction >= global_fraction:
                role = "global"
            elif median_size <= local_max:
                role = "local"
            else:
                role = "mixed"
        roles.append(HeadRole(layer, head, role, int(len(size)), median_size, median_fraction,
                              mean_fraction, _histogram(size)))
    return roles
