"""The one-layer model of Scan and Snap on batched parameters, in torch.

One query token m attends to the 127 context tokens (not to itself) with logits Z[m, l] (no 1/√d,
no positions); f is the l2-normalised attention-weighted sum of the context tokens' one-hot
vectors; the output logits are Y f. In the published protocol (the authors' ``Model2``) Y is an
M×M map and the cross-entropy runs over the whole vocabulary of M tokens; only Y's columns of
context tokens ever meet a non-zero f, so Y is stored as (M, L) (or (N, L) for the next-token-only
ablation) and Z, whose only used rows are the K query tokens', as (K, L). Because no position
information enters, a sequence acts only through how often each token occurs: with counts c_l,
the softmax over positions puts c_l·exp(Z[m,l]) / Σ c·exp(Z[m,·]) on token l, which is what
``next_token_logits`` computes from token counts (only the tokens that a next token's context can
hold need a logit).
``position_logits`` is the same model written over positions, for checking.

Parameters carry leading run dimensions (C, S): C hyper-parameter cells and S seeds; data carry
the seed dimension only (every cell of a seed sees the same sequences).
"""

from __future__ import annotations

import torch


def next_token_logits(z: torch.Tensor, y: torch.Tensor, queries: torch.Tensor,
                      tokens: torch.Tensor, counts: torch.Tensor) -> torch.Tensor:
    """Return output logits (C, S, B, O) from Z (C,S,K,L), Y (C,S,O,L) and seed data.

    ``queries`` (S, B) are the query indices, ``tokens`` (S, B, J) the context tokens that may
    occur in each sequence (a next token's slots) and ``counts`` (S, B, J) how often each occurs.
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
    """Return each run's mean cross-entropy over its batch, (C, S); labels (S, B) index Y's rows."""
    logits = next_token_logits(z, y, queries, tokens, counts)
    C, S, B, n_out = logits.shape
    target = labels.expand(C, S, B).reshape(-1)
    losses = torch.nn.functional.cross_entropy(logits.reshape(-1, n_out), target,
                                               reduction="none")
    return losses.view(C, S, B).mean(dim=-1)


def position_logits(z: torch.Tensor, y: torch.Tensor, queries: torch.Tensor,
                    context: torch.Tensor) -> torch.Tensor:
    """Return output logits (B, O) of one run, attending over the positions of ``context``."""
    scores = z[queries[:, None], context]                              # (B, T)
    weights = torch.softmax(scores, dim=-1)
    one_hot = torch.nn.functional.one_hot(context, z.shape[-1]).to(z.dtype)  # (B, T, L)
    mixed = torch.einsum("bt,btl->bl", weights, one_hot)
    f = mixed / mixed.norm(dim=-1, keepdim=True)
    return f @ y.T
