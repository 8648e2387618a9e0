"""The saturation view: trained soft attention beside argmax-uniform attention on the same logits.

Saturated attention (docs/semantics.md §1) puts weight 1/|S| on every position of the tie set S (the
positions whose logit is within tolerance of the maximum) and 0 elsewhere. Here the scores are
the logits Z[m, l] themselves, fed to ``satsim.reference.attention`` with a one-dimensional query
of 1 and keys equal to the logits (scale 1), so tie sets follow the library's default float64
tolerance. Repeated tokens always tie exactly, so gaps are measured between *tokens*:

- ``tie_gap``: best minus second-best logit among a next token's tokens (0: a tie);
- ``tie_tokens``: how many of those tokens are in the tie set;
- ``top_is_heaviest``: whether the arg-max token is the distinct token of weight 1.0;
- on sequences: ``support`` (positions in the tie set), ``soft_support`` (exp of the entropy over
  positions, the soft attention's effective number of positions), ``tv`` (total variation
  between the soft and the saturated weights over the 127 positions), ``max_weight`` (largest
  soft weight on one position).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from satsim.papers.scan_snap import measures
from satsim.papers.scan_snap.data import Task
from satsim.reference.attention import tie_gap, tie_sets


def _as_scores(logits: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Return (q, k) whose scores at scale 1 are exactly ``logits`` (..., S): q = 1, k = logits."""
    logits = np.asarray(logits, dtype=np.float64)
    return np.ones(logits.shape[:-1] + (1, 1)), logits[..., None]


@dataclass
class SaturationView:
    """Per-run summaries (leading dims of the input), averaged over next tokens or sequences."""

    tie_gap: np.ndarray
    tie_tokens: np.ndarray
    top_is_heaviest: np.ndarray
    support: np.ndarray
    soft_support: np.ndarray
    tv: np.ndarray
    max_weight: np.ndarray

    def summary(self) -> dict[str, float]:
        """Return every field averaged over all runs, as plain floats."""
        return {name: float(np.mean(getattr(self, name))) for name in self.__dataclass_fields__}


def token_ties(z_slots: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Return each next token's tie gap and tie-set size over its tokens, (..., N) each."""
    q, k = _as_scores(z_slots)
    gaps = tie_gap(q, k, scale=1.0)[..., 0]
    sizes = tie_sets(q, k, scale=1.0)[..., 0, :].sum(axis=-1)
    return gaps, sizes


def sequence_ties(z_seq: np.ndarray, counts: np.ndarray) -> dict[str, np.ndarray]:
    """Return support, soft support, TV and max weight per sequence, from slot logits and counts."""
    q, k = _as_scores(z_seq)
    present = np.asarray(counts) > 0
    ties = tie_sets(q, k, key_mask=present, scale=1.0)[..., 0, :]
    support = (counts * ties).sum(axis=-1)
    saturated = np.where(ties, 1.0 / np.maximum(support, 1)[..., None], 0.0)
    soft = measures.position_weights(z_seq, counts)
    return {"support": support,
            "soft_support": np.exp(measures.position_entropy(z_seq, counts)),
            "tv": 0.5 * (counts * np.abs(soft - saturated)).sum(axis=-1),
            "max_weight": soft.max(axis=-1)}


def saturation_view(z: np.ndarray, task: Task, labels: np.ndarray,
                    counts: np.ndarray) -> SaturationView:
    """Compare soft and saturated attention of runs Z (C, S, K, L) on seed batches (S, B)."""
    z_slots = measures.token_logits(z, task)                              # (C, S, N, slots)
    gaps, sizes = token_ties(z_slots)
    heaviest = np.argmax(z_slots, axis=-1) == task.n_slots - 1
    z_seq = np.take_along_axis(z_slots, labels[None, :, :, None], axis=2)  # (C, S, B, slots)
    seq = sequence_ties(z_seq, counts[None])
    return SaturationView(tie_gap=gaps.mean(axis=-1), tie_tokens=sizes.mean(axis=-1),
                          top_is_heaviest=heaviest.mean(axis=-1),
                          **{name: value.mean(axis=-1) for name, value in seq.items()})
