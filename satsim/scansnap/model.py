"""The one-layer model of Scan and Snap on batched parameters, in torch.

One query token m attends to the 127 context tokens (not to itself) with logits Z[m, l] (no 1/√d,
no positions); f is the l2-normalised attention-weighted sum of the context tokens' one-hot
vectors; the next-token logits are Y f. Because no position information enters, a sequence acts
only through how often each token occurs: with counts c_l, the softmax over positions puts
c_l·exp(Z[m,l]) / Σ c·exp(Z[m,·]) on token l, which is what ``next_token_logits`` computes from
token counts (only the 20 tokens that a next token's context can hold need a logit).
``position_logits`` is the same model written over positions, for checking.

Parameters carry leading run dimensions (C, S): C hyper-parameter cells and S seeds; data carry
the seed dimension only (every cell of a seed sees the same sequences).
"""

from __future__ import annotations

import torch


def next_token_logits(z: torch.Tensor, y: torch.Tensor, queries: torch.Tensor,
                      tokens: torch.Tensor, counts: torch.Tensor) -> torch.Tensor:
    """Return next-token logits (C, S, B, 2K) from Z (C,S,K,L), Y (C,S,2K,L) and seed data.

    ``queries`` (S, B) are the query ids, ``tokens`` (S, B, J) the context tokens that may occur
    in each sequence (a next token's 20 slots) and ``counts`` (S, B, J) how often each occurs.
    """
    C, S, K, L = z.shape
    B, J = tokens.shape[1:]
    index = (queries[..., None] * L + tokens).reshape(1, S, B * J).expand(C, S, B * J)
    logits = torch.gather(z.reshape(C, S, K * L), 2, index).view(C, S, B, J)  # Z[m, l]
    attention = torch.softmax(logits + torch.log(counts), dim=-1)   # mass on each token
    f = attention / attention.norm(dim=-1, keepdim=True)
    dense = torch.zeros((C, S, B, L), dtype=f.dtype, device=f.device)
    dense = dense.scatter(3, tokens.expand(C, S, B, J), f)          # f as an L-vector
    return torch.einsum("csbl,csnl->csbn", dense, y)


def run_losses(z: torch.Tensor, y: torch.Tensor, queries: torch.Tensor, tokens: torch.Tensor,
               counts: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """Return each run's mean cross-entropy over its batch, (C, S); labels are (S, B)."""
    logits = next_token_logits(z, y, queries, tokens, counts)
    C, S, B, n_next = logits.shape
    target = labels.expand(C, S, B).reshape(-1)
    losses = torch.nn.functional.cross_entropy(logits.reshape(-1, n_next), target,
                                               reduction="none")
    return losses.view(C, S, B).mean(dim=-1)


def position_logits(z: torch.Tensor, y: torch.Tensor, queries: torch.Tensor,
                    context: torch.Tensor) -> torch.Tensor:
    """Return next-token logits (B, 2K) of one run, attending over the positions of ``context``."""
    scores = z[queries[:, None], context]                              # (B, T)
    weights = torch.softmax(scores, dim=-1)
    one_hot = torch.nn.functional.one_hot(context, z.shape[-1]).to(z.dtype)  # (B, T, L)
    mixed = torch.einsum("bt,btl->bl", weights, one_hot)
    f = mixed / mixed.norm(dim=-1, keepdim=True)
    return f @ y.T
