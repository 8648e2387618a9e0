"""The synthetic data of Scan and Snap: common and distinct context tokens, queries, next tokens.

Vocabulary of context tokens (``Task.n_context`` = 10 + 20·K of them):

- ids 0..9 are the 10 common tokens, each with weight 1 for every next token;
- for next token n (0 ≤ n < 2K), ids 10 + 10n + j (j = 0..9) are its distinct tokens, with
  weights 0.1·(j + 1), i.e. 0.1, 0.2, …, 1.0;
- P(l | n) is these 20 weights normalised (total 15.5), zero for every other context token.

There are K query tokens (ids n_context + m in the full vocabulary); next tokens 2m and 2m + 1
share query m, so a next token determines its query (m = n // 2). A sequence is: n uniform, then
127 context tokens i.i.d. from P(l | n), then the query token; the label is n. Inside a task each
next token's 20 tokens are also addressed by *slot* s = 0..19 (commons first, then distinct
tokens by increasing weight); P(slot) is the same for every n, which is how tokens are drawn.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np

from satsim.errors import SatsimError

N_COMMON = 10
"""Common tokens, shared by every next token."""
N_DISTINCT = 10
"""Distinct tokens of each next token."""
CONTEXT_LENGTH = 127
"""Context tokens per sequence (the query token comes after them)."""
COMMON_WEIGHT = 1.0
"""Co-occurrence weight of every common token."""
DISTINCT_WEIGHTS = np.arange(1, N_DISTINCT + 1) / N_DISTINCT
"""Co-occurrence weights 0.1, 0.2, …, 1.0 of a next token's distinct tokens, by slot."""


@dataclass(frozen=True)
class Task:
    """The token layout for K query tokens (2K next tokens)."""

    n_queries: int
    context_length: int = CONTEXT_LENGTH

    def __post_init__(self) -> None:
        if self.n_queries < 1:
            raise SatsimError(f"the number of query tokens K must be >= 1, got {self.n_queries}")
        if self.context_length < 1:
            raise SatsimError(f"the context length must be at least 1, got {self.context_length}")

    @property
    def n_next(self) -> int:
        """Number of next tokens (labels), 2K."""
        return 2 * self.n_queries

    @property
    def n_context(self) -> int:
        """Number of context tokens, 10 + 10·2K."""
        return N_COMMON + N_DISTINCT * self.n_next

    @property
    def n_slots(self) -> int:
        """Tokens that can occur with one next token: 10 common + 10 distinct."""
        return N_COMMON + N_DISTINCT

    def query_of(self, next_token: np.ndarray | int) -> np.ndarray:
        """Return the query token id (0..K-1) that next token(s) ``n`` determine: n // 2."""
        return np.asarray(next_token) // 2

    @cached_property
    def slot_weights(self) -> np.ndarray:
        """Return the 20 co-occurrence weights by slot: ten 1.0, then 0.1 … 1.0."""
        return np.concatenate([np.full(N_COMMON, COMMON_WEIGHT), DISTINCT_WEIGHTS])

    @cached_property
    def slot_probabilities(self) -> np.ndarray:
        """Return P(slot | n), the normalised slot weights (the same for every n)."""
        return self.slot_weights / self.slot_weights.sum()

    @cached_property
    def slot_tokens(self) -> np.ndarray:
        """Return the context-token id of every (next token, slot), int64 (2K, 20)."""
        common = np.broadcast_to(np.arange(N_COMMON), (self.n_next, N_COMMON))
        distinct = N_COMMON + N_DISTINCT * np.arange(self.n_next)[:, None] + np.arange(N_DISTINCT)
        return np.concatenate([common, distinct], axis=1).astype(np.int64)

    @cached_property
    def conditional(self) -> np.ndarray:
        """Return P(l | n) over all context tokens, float64 (2K, n_context)."""
        p = np.zeros((self.n_next, self.n_context))
        np.put_along_axis(p, self.slot_tokens,
                          np.broadcast_to(self.slot_probabilities, self.slot_tokens.shape), axis=1)
        return p


@dataclass(frozen=True)
class Batch:
    """Sequences of one batch: labels n, their query tokens, and the context tokens."""

    next_tokens: np.ndarray
    """(B,) int64: the label n of each sequence."""
    queries: np.ndarray
    """(B,) int64: the query token m = n // 2 (the last token of the sequence)."""
    context: np.ndarray
    """(B, 127) int64: the context token ids, in order."""

    def sequences(self, task: Task) -> np.ndarray:
        """Return whole sequences (B, 128): the context, then the query token (id n_context + m)."""
        return np.concatenate([self.context, task.n_context + self.queries[:, None]], axis=1)

    def slot_counts(self, task: Task) -> np.ndarray:
        """Return how often each of the 20 slots of n occurs in the context, int64 (B, 20)."""
        slot_of = np.full((len(self.next_tokens), task.n_context), -1, dtype=np.int64)
        rows = np.arange(len(self.next_tokens))[:, None]
        slot_of[rows, task.slot_tokens[self.next_tokens]] = np.arange(task.n_slots)
        slots = slot_of[rows, self.context]
        if (slots < 0).any():
            raise SatsimError("a context token does not belong to its next token")
        flat = (rows * task.n_slots + slots).ravel()
        counts = np.bincount(flat, minlength=len(self.next_tokens) * task.n_slots)
        return counts.reshape(len(self.next_tokens), task.n_slots)

    def token_counts(self, task: Task) -> np.ndarray:
        """Return how often each context token occurs in the context, int64 (B, n_context)."""
        rows = np.arange(len(self.next_tokens))[:, None]
        flat = (rows * task.n_context + self.context).ravel()
        counts = np.bincount(flat, minlength=len(self.next_tokens) * task.n_context)
        return counts.reshape(len(self.next_tokens), task.n_context)


def sample_batch(rng: np.random.Generator, task: Task, batch: int) -> Batch:
    """Draw ``batch`` sequences: n uniform, 127 context tokens i.i.d. from P(l | n), the query."""
    if batch < 1:
        raise SatsimError(f"the batch size must be at least 1, got {batch}")
    next_tokens = rng.integers(0, task.n_next, size=batch)
    slots = rng.choice(task.n_slots, size=(batch, task.context_length), p=task.slot_probabilities)
    context = task.slot_tokens[next_tokens[:, None], slots]
    return Batch(next_tokens=next_tokens, queries=task.query_of(next_tokens), context=context)
