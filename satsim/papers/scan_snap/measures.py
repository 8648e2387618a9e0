"""Measures of the attention composition, in NumPy (no torch).

Everything starts from the attention logits of a next token's slots (its shared tokens, then
its 10 distinct tokens), ``z_slots[..., n, s] = Z[m(n), token(n, s)]`` (see ``token_logits``).
The composition of next token n is c_n(s) ∝ P(s | n)·exp(z_s): the expected share of the query's
attention that lands on each slot, since a slot occurs P(s | n)·127 times in expectation. The
published measure restricts c_n to the 10 distinct slots and renormalises; its entropy, averaged
over next tokens, is ``distinct_entropy``. Entropies are in nats.
"""

from __future__ import annotations

import numpy as np

from satsim.papers.scan_snap.data import Task


def entropy(p: np.ndarray, axis: int = -1) -> np.ndarray:
    """Return the Shannon entropy -Σ p log p (nats) along ``axis``, with 0·log 0 = 0."""
    p = np.asarray(p, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.where(p > 0, -p * np.log(np.where(p > 0, p, 1.0)), 0.0)
    return terms.sum(axis=axis)


def _softmax(x: np.ndarray) -> np.ndarray:
    """Return softmax over the last axis; -inf entries get weight 0."""
    top = np.max(x, axis=-1, keepdims=True)
    e = np.exp(x - np.where(np.isfinite(top), top, 0.0))
    return e / e.sum(axis=-1, keepdims=True)


def token_logits(z: np.ndarray, task: Task) -> np.ndarray:
    """Return the logits of every next token's slots, (..., N, n_slots), from Z (..., K, L)."""
    z = np.asarray(z, dtype=np.float64)
    queries = task.query_of(np.arange(task.n_next))
    return z[..., queries[:, None], task.slot_tokens]


def composition(z_slots: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """Return c(s) ∝ weights(s)·exp(z_s) over the last axis (the expected attention per slot)."""
    return _softmax(np.asarray(z_slots, dtype=np.float64) + np.log(weights))


def distinct_composition(z_slots: np.ndarray, task: Task) -> np.ndarray:
    """Return c_n restricted to the 10 distinct slots and renormalised, (..., 10)."""
    shared = task.n_shared
    return composition(np.asarray(z_slots)[..., shared:], task.slot_weights[shared:])


def distinct_entropy(z_slots: np.ndarray, task: Task) -> np.ndarray:
    """Return the published measure: entropy of c_n on distinct slots, averaged over next tokens."""
    return entropy(distinct_composition(z_slots, task)).mean(axis=-1)


def distinct_share(z_slots: np.ndarray, task: Task) -> np.ndarray:
    """Return the attention share on distinct tokens, averaged over next tokens (common: 1 - it)."""
    shared = task.n_shared
    return composition(z_slots, task.slot_weights)[..., shared:].sum(axis=-1).mean(axis=-1)


def total_variation(p: np.ndarray, q: np.ndarray, axis: int = -1) -> np.ndarray:
    """Return the total-variation distance ½ Σ |p - q| along ``axis``."""
    return 0.5 * np.abs(np.asarray(p) - np.asarray(q)).sum(axis=axis)


def position_weights(z_slots: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """Return the softmax weight of one position holding each slot, (..., B, J), given counts."""
    counts = np.asarray(counts)
    logits = np.where(counts > 0, np.asarray(z_slots, dtype=np.float64), -np.inf)
    top = logits.max(axis=-1, keepdims=True)
    e = np.where(counts > 0, np.exp(logits - top), 0.0)
    return e / (counts * e).sum(axis=-1, keepdims=True)


def position_entropy(z_slots: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """Return the entropy of the softmax over the 127 positions of each sequence, (..., B)."""
    w = position_weights(z_slots, counts)
    with np.errstate(divide="ignore"):
        logs = np.where(w > 0, np.log(np.where(w > 0, w, 1.0)), 0.0)
    return -(counts * w * logs).sum(axis=-1)


def uniform_distinct_entropy() -> float:
    """Return the entropy of the normalised distinct weights k/55 (z = 0): ln 55 - Σ k ln k / 55."""
    k = np.arange(1, 11, dtype=np.float64)
    return float(np.log(k.sum()) - (k * np.log(k)).sum() / k.sum())


def sample_std(x: np.ndarray) -> float:
    """Return the sample standard deviation (ddof 1), 0 for a single value."""
    return float(np.std(x, ddof=1)) if len(x) > 1 else 0.0
