"""The five transformer sublayers of the paper's section 4.2, each with a random affine head.

Every sublayer is post-norm, as in BERT and the paper's Appendix B: ``LN(f(x) + x)`` (or
``LN(f(x))`` without the residual), where LN is a LayerNorm followed by its learned affine map
(γ, β). The variants:

- ``attention``: one self-attention head over the whole input sequence, query/key/value maps and
  an output map (Appendix B, Definitions 5-6), scores divided by √d_k, bidirectional, no positions;
  every linear map has a bias; residual connection.
- ``attention-no-bias``: the same without the biases of the four linear maps.
- ``ffn``: ``W2 relu(W1 x + b1) + b2`` with inner width = hidden size (the paper fixes "the hidden
  size of each component" to 10); residual connection.
- ``ffn-no-bias``: the same without b1, b2.
- ``ffn-no-bias-no-residual``: the same without biases and without the residual (Definition 7).

"No bias" removes the biases of the linear maps only; LayerNorm keeps its affine β, which the
paper's Appendix B keeps as part of LN (and which a "bias before LayerNorm" argument does not
cover). The head is a random affine map (weights and bias) from the hidden size to ``classes``
logits (``head_bias=False`` drops its bias, a control); by default it is part of the loss, not of
θ (see ``gradient``). Initialisation is PyTorch's default:
linear weights and biases U(-1/√fan_in, 1/√fan_in), γ = 1, β = 0; all in float64.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from torch import nn

from satsim.errors import SatsimError


@dataclass(frozen=True)
class Variant:
    """One sublayer variant: attention or feed-forward, with or without biases and residual."""

    name: str
    kind: str
    bias: bool
    residual: bool


VARIANTS: dict[str, Variant] = {v.name: v for v in (
    Variant("attention", "attention", bias=True, residual=True),
    Variant("attention-no-bias", "attention", bias=False, residual=True),
    Variant("ffn", "ffn", bias=True, residual=True),
    Variant("ffn-no-bias", "ffn", bias=False, residual=True),
    Variant("ffn-no-bias-no-residual", "ffn", bias=False, residual=False),
)}


def get_variant(name: str) -> Variant:
    """Return the variant called ``name``, or raise SatsimError listing the known ones."""
    try:
        return VARIANTS[name]
    except KeyError:
        raise SatsimError(f"unknown variant {name!r}; choose from {', '.join(VARIANTS)}") from None


class SelfAttentionSublayer(nn.Module):
    """One softmax self-attention head over a single sequence, output map, residual, LayerNorm."""

    def __init__(self, hidden: int, bias: bool, residual: bool):
        super().__init__()
        self.query = nn.Linear(hidden, hidden, bias=bias)
        self.key = nn.Linear(hidden, hidden, bias=bias)
        self.value = nn.Linear(hidden, hidden, bias=bias)
        self.output = nn.Linear(hidden, hidden, bias=bias)
        self.norm = nn.LayerNorm(hidden)
        self.residual = residual
        self.scale = 1.0 / math.sqrt(hidden)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Map a (T, hidden) sequence to (T, hidden)."""
        scores = self.query(x) @ self.key(x).T * self.scale
        mixed = self.output(torch.softmax(scores, dim=-1) @ self.value(x))
        return self.norm(mixed + x if self.residual else mixed)


class FeedForwardSublayer(nn.Module):
    """Position-wise ``W2 relu(W1 x)``, residual, LayerNorm."""

    def __init__(self, hidden: int, bias: bool, residual: bool):
        super().__init__()
        self.first = nn.Linear(hidden, hidden, bias=bias)
        self.second = nn.Linear(hidden, hidden, bias=bias)
        self.norm = nn.LayerNorm(hidden)
        self.residual = residual

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Map (N, hidden) vectors to (N, hidden)."""
        out = self.second(torch.relu(self.first(x)))
        return self.norm(out + x if self.residual else out)


class Probe(nn.Module):
    """A sublayer followed by a random affine head: inputs (n, hidden) → logits (n, classes)."""

    def __init__(self, variant: Variant, hidden: int, classes: int, head_bias: bool = True):
        super().__init__()
        self.variant = variant
        cls = SelfAttentionSublayer if variant.kind == "attention" else FeedForwardSublayer
        self.sublayer = cls(hidden, bias=variant.bias, residual=variant.residual)
        self.head = nn.Linear(hidden, classes, bias=head_bias)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Return the logits of every input row."""
        return self.head(self.sublayer(x))


def build_probe(variant: str | Variant, *, hidden: int = 10, classes: int = 10, seed: int = 0,
                head_bias: bool = True) -> Probe:
    """A float64 probe with PyTorch's default initialisation drawn from ``seed``.

    ``head_bias=False`` makes the head linear instead of affine (a control: with it and the head
    in θ, the ``ffn-no-bias-no-residual`` probe is 2-homogeneous in θ up to LayerNorm's ε).
    """
    if isinstance(variant, str):
        variant = get_variant(variant)
    if hidden < 1 or classes < 2:
        raise SatsimError("hidden size must be >= 1 and classes >= 2")
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        probe = Probe(variant, hidden, classes, head_bias)
    return probe.double()
