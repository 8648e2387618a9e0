"""The synthetic data of Scan and Snap: common and distinct context tokens, queries, next tokens.

The layout follows the authors' generator (``Dataset2`` of luckmatters' ``decoder_only.py``). With
K query tokens, ``next_per_query`` next tokens per query (2 in Figure 6, 1 in Figure 4), N = K·that
next tokens, ``n_common`` global common tokens and ``common_per_query`` common tokens per query,
the vocabulary of M tokens is, in id order:

- the ``n_common`` common tokens (weight 1 for every next token);
- each query m's ``common_per_query`` tokens (weight 1 for the next tokens of query m);
- for next token n, its 10 distinct tokens, weights 0.1, 0.2, …, 1.0;
- the K query tokens (``query_token``), then the N next tokens (``next_token_id``).

For Figure 6's default (10 common, none per query, 2 next tokens per query), M = 10 + 23K. P(l | n)
is next token n's weights normalised (total 15.5 there). A sequence is n uniform, 127 context
tokens i.i.d. from P(l | n), then n's query token m = n // next_per_query; the label is n. Inside a
task each next token's tokens are also addressed by *slot* (commons, then the query's commons,
then distinct tokens by increasing weight); P(slot) is the same for every n, which is how tokens
are drawn.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np

from satsim.errors import SatsimError

N_COMMON = 10
"""Common tokens of the published settings, shared by every next token."""
N_DISTINCT = 10
"""Distinct tokens of each next token."""
CONTEXT_LENGTH = 127
"""Context tokens per sequence (the query token comes after them)."""
COMMON_WEIGHT = 1.0
"""Co-occurrence weight of every common token (global or per query)."""
DISTINCT_WEIGHTS = np.arange(1, N_DISTINCT + 1) / N_DISTINCT
"""Co-occurrence weights 0.1, 0.2, …, 1.0 of a next token's distinct tokens, by slot."""
LOSSES = ("vocab", "next-token")
"""Decoder outputs: the whole vocabulary (the published protocol), or the next tokens only."""


@dataclass(frozen=True)
class Task:
    """The token layout for K query tokens and their next tokens."""

    n_queries: int
    next_per_query: int = 2
    n_common: int = N_COMMON
    common_per_query: int = 0
    context_length: int = CONTEXT_LENGTH

    def __post_init__(self) -> None:
        if self.n_queries < 1:
            raise SatsimError(f"the number of query tokens K must be >= 1, got {self.n_queries}")
        if self.next_per_query < 1:
            raise SatsimError(f"each query needs at least one next token, got "
                              f"{self.next_per_query}")
        if self.n_common < 0 or self.common_per_query < 0:
            raise SatsimError(f"common-token counts must be >= 0, got {self.n_common} and "
                              f"{self.common_per_query}")
        if self.context_length < 1:
            raise SatsimError(f"the context length must be at least 1, got {self.context_length}")

    @property
    def n_next(self) -> int:
        """Number of next tokens (labels), K·next_per_query."""
        return self.n_queries * self.next_per_query

    @property
    def n_shared(self) -> int:
        """Non-distinct slots of a next token: the global commons and its query's commons."""
        return self.n_common + self.common_per_query

    @property
    def n_slots(self) -> int:
        """Tokens that can occur with one next token: its shared tokens and its 10 distinct ones."""
        return self.n_shared + N_DISTINCT

    @property
    def n_context(self) -> int:
        """Number of context tokens: global commons, per-query commons, distinct tokens."""
        return self.n_common + self.common_per_query * self.n_queries + N_DISTINCT * self.n_next

    @property
    def n_vocab(self) -> int:
        """Vocabulary size M: context tokens, query tokens and next tokens (10 + 23K in Fig. 6)."""
        return self.n_context + self.n_queries + self.n_next

    def query_of(self, next_token: np.ndarray | int) -> np.ndarray:
        """Return the query index (0..K-1) that next token(s) ``n`` determine."""
        return np.asarray(next_token) // self.next_per_query

    def query_token(self, query: np.ndarray | int) -> np.ndarray:
        """Return the vocabulary id of query index(es) ``m``."""
        return self.n_context + np.asarray(query)

    def next_token_id(self, next_token: np.ndarray | int) -> np.ndarray:
        """Return the vocabulary id of next token(s) ``n``."""
        return self.n_context + self.n_queries + np.asarray(next_token)

    @cached_property
    def slot_weights(self) -> np.ndarray:
        """Return the co-occurrence weights by slot: 1.0 for shared slots, then 0.1 … 1.0."""
        return np.concatenate([np.full(self.n_shared, COMMON_WEIGHT), DISTINCT_WEIGHTS])

    @cached_property
    def slot_probabilities(self) -> np.ndarray:
        """Return P(slot | n), the normalised slot weights (the same for every n)."""
        return self.slot_weights / self.slot_weights.sum()

    @cached_property
    def slot_tokens(self) -> np.ndarray:
        """Return the context-token id of every (next token, slot), int64 (N, n_slots)."""
        n = np.arange(self.n_next)[:, None]
        common = np.broadcast_to(np.arange(self.n_common), (self.n_next, self.n_common))
        per_query = (self.n_common + self.common_per_query * self.query_of(n)
                     + np.arange(self.common_per_query))
        distinct = (self.n_common + self.common_per_query * self.n_queries + N_DISTINCT * n
                    + np.arange(N_DISTINCT))
        return np.concatenate([common, per_query, distinct], axis=1).astype(np.int64)

    @cached_property
    def conditional(self) -> np.ndarray:
        """Return P(l | n) over all context tokens, float64 (N, n_context)."""
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
    """(B,) int64: the query index m of n (its token is the last of the sequence)."""
    context: np.ndarray
    """(B, 127) int64: the context token ids, in order."""

    def sequences(self, task: Task) -> np.ndarray:
        """Return whole sequences (B, 128) of vocabulary ids: the context, then the query token."""
        return np.concatenate([self.context, task.query_token(self.queries)[:, None]], axis=1)

    def slot_counts(self, task: Task) -> np.ndarray:
        """Return how often each slot of n occurs in the context, int64 (B, n_slots)."""
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


def output_rows(task: Task, loss: str) -> int:
    """Return how many rows Y has: M (the whole vocabulary) or N (next tokens only)."""
    if loss not in LOSSES:
        raise SatsimError(f"unknown loss {loss!r}; use one of {', '.join(LOSSES)}")
    return task.n_vocab if loss == "vocab" else task.n_next


def targets(task: Task, next_tokens: np.ndarray, loss: str) -> np.ndarray:
    """Return the Y row that is the label of each next token: its vocabulary id, or n itself."""
    return task.next_token_id(next_tokens) if loss == "vocab" else np.asarray(next_tokens)
