"""M training models of one architecture as one computation: parameters stacked on a model axis.

A stack holds every parameter of M models in one flat buffer (M, P), each tensor a view of its
slice, so the forward pass runs each sublayer as one batched matmul over the M models and the
optimiser updates the whole buffer at once (:mod:`satsim.training.stacked_optim`). The walk is the
model's own (:func:`satsim.model.architecture.run_blocks`); :class:`StackedPass` supplies its
operations on (M, B, T, d) streams.

Models may differ in their vocabulary size (one language's alphabet against another's): the
embedding is padded to the largest, and the padded rows are never read, so they get no gradient.
Attention is causal (every model ``satsim train`` builds): strings are padded on the right, so a
real query never reaches a padded key, and causal attention alone computes the soft twin's
function at every real position (padded positions are never read).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch
from torch import Tensor
from torch.nn import functional as F

from satsim.model.architecture import Backend, Branch, position_term, run_blocks
from satsim.model.spec import LayerNormSpec, ModelSpec, OutputSpec
from satsim.soft.model import ACTIVATIONS, _layer_norm

EMBEDDING = "embed.W_E"
"""The one tensor whose rows (the vocabulary) may differ between the models of a stack."""


def stack_shapes(spec: ModelSpec) -> dict[str, tuple[int, ...]]:
    """Every tensor's shape, the embedding's vocabulary left out: equal for stackable models."""
    return {name: tuple(array.shape[1:]) if name == EMBEDDING else tuple(array.shape)
            for name, array in spec.tensors().items()}


def check_stackable(spec: ModelSpec) -> None:
    """Refuse (as an internal error) a spec the stacked pass does not compute."""
    for block in spec.blocks:
        if block.attn is not None and (set(block.attn.head_masks) != {"causal"}
                                       or block.attn.scale is not None):
            raise ValueError("a stacked model needs causal attention at the default scale")
    if spec.parallel or spec.positional.depends_on_length or spec.positional.kind == "features":
        raise ValueError("a stacked model needs sequential blocks and plain positions")


ROW_QUANTUM = 64
"""A row's length is a multiple of this: torch's vectorised element loops (the optimiser's
update) then never leave a scalar tail inside a row, whose rounding (no fused multiply-add)
would make a model's update depend on how many models share the stack."""


@dataclass(frozen=True)
class Layout:
    """Where each tensor of one model lives in the flat row of P values."""

    spec: ModelSpec  # the first model's: the structure every model of the stack shares
    shapes: dict[str, tuple[int, ...]]  # the stacked shape (embedding padded to the most rows)
    offsets: dict[str, int]
    size: int

    @classmethod
    def of(cls, specs: list[ModelSpec]) -> Layout:
        """The layout of models with equal :func:`stack_shapes`, the vocabulary padded."""
        shapes, offsets, size = {}, {}, 0
        for name, array in specs[0].tensors().items():
            shape = tuple(array.shape)
            if name == EMBEDDING:
                shape = (max(spec.tensors()[EMBEDDING].shape[0] for spec in specs), *shape[1:])
            shapes[name], offsets[name] = shape, size
            size += math.prod(shape)
        return cls(specs[0], shapes, offsets, -(-size // ROW_QUANTUM) * ROW_QUANTUM)

    def views(self, flat: Tensor) -> dict[str, Tensor]:
        """Each tensor as a view of the flat buffer, (M, *shape)."""
        return {name: flat[:, start:start + math.prod(shape)].view(flat.shape[0], *shape)
                for (name, shape), start in zip(self.shapes.items(), self.offsets.values())}

    def model_views(self, flat: Tensor, row: int, spec: ModelSpec) -> dict[str, Tensor]:
        """Model ``row``'s tensors as views of its row (its own vocabulary's embedding rows)."""
        views = self.views(flat[row:row + 1])
        return {name: (view[0, :spec.tensors()[name].shape[0]] if name == EMBEDDING else view[0])
                for name, view in views.items()}


class StackedPass(Backend[Tensor]):
    """The walk's operations on (M, B, T, d) streams with parameters (M, ...)."""

    def __init__(self, params: dict[str, Tensor], spec: ModelSpec,
                 constants: dict | None = None, betas: Tensor | None = None) -> None:
        self.params = params
        self.spec = spec
        self.constants = {} if constants is None else constants
        self.betas = betas  # (M,): each model's scores times its β (None: 1)

    def embed(self, tokens: Tensor) -> Tensor:
        """Each model's token rows plus positions for its padded batch, tokens (M, B, T).

        ``constants`` caches parameter-free tables (the sinusoids) on the device between calls,
        so that a captured CUDA graph copies nothing from the host.
        """
        spec, cache = self.spec, self.constants
        models, _, n = tokens.shape
        table = self.params[EMBEDDING]
        offsets = torch.arange(models, device=tokens.device)[:, None, None] * table.shape[1]
        x = F.embedding(tokens + offsets, table.reshape(-1, table.shape[-1]))

        def constant(array: np.ndarray) -> Tensor:
            key = (n, x.dtype, x.device)
            if key not in cache:
                cache[key] = torch.as_tensor(np.asarray(array), dtype=x.dtype, device=x.device)
            return cache[key]

        pos = position_term(spec.positional, n, spec.d_model,
                            lambda name, count: self.params[name][:, None, :count],
                            None,  # feature positions are refused by check_stackable
                            constant)
        return x if pos is None else x + pos

    def _bag(self, name: str, part: str) -> Tensor | None:
        return self.params.get(f"{name}.{part}")

    def norm(self, x: Tensor, ln: LayerNormSpec, name: str) -> Tensor:
        """LayerNorm (or RMSNorm) with each model's scale and shift."""
        w, b = self._bag(name, "w"), self._bag(name, "b")
        return _layer_norm(x, ln, None if w is None else w[:, None, None],
                           None if b is None else b[:, None, None])[1]

    def attention(self, x: Tensor, branch: Branch) -> Tensor:
        """Causal softmax attention, one fused call over every model, string and head."""
        p = branch.name
        models, batch, n, _ = x.shape
        rows = x.reshape(models, batch * n, -1)

        def project(weight: str, bias: str) -> Tensor:
            w = self._bag(p, weight)  # (M, h, d, e)
            heads, d, e = w.shape[1:]
            out = torch.bmm(rows, w.permute(0, 2, 1, 3).reshape(models, d, heads * e))
            out = out.view(models, batch, n, heads, e)
            b = self._bag(p, bias)
            out = out if b is None else out + b[:, None, None]
            return out.permute(0, 1, 3, 2, 4).reshape(models * batch, heads, n, e)

        q, k, v = project("W_Q", "b_Q"), project("W_K", "b_K"), project("W_V", "b_V")
        if self.betas is not None:  # β·scores, as q·β: rows are model-major (M·B)
            q = q * self.betas.repeat_interleave(batch)[:, None, None, None]
        z = causal_attention(q, k, v, branch.module.score_scale)
        w_o = self._bag(p, "W_O")  # (M, h, e, d)
        heads, e, d = w_o.shape[1:]
        z = z.view(models, batch, heads, n, e).permute(0, 1, 3, 2, 4).reshape(
            models, batch * n, heads * e)
        out = torch.bmm(z, w_o.reshape(models, heads * e, d)).view(models, batch, n, d)
        b_o = self._bag(p, "b_O")
        return out if b_o is None else out + b_o[:, None, None]

    def feed_forward(self, x: Tensor, branch: Branch) -> Tensor:
        """The feed-forward sublayer, one batched matmul per weight."""
        p = branch.name
        models, batch, n, d = x.shape
        pre = torch.bmm(x.reshape(models, batch * n, d), self._bag(p, "W_in"))
        b_in = self._bag(p, "b_in")
        pre = pre if b_in is None else pre + b_in[:, None]
        post = ACTIVATIONS[branch.module.activation](pre)
        out = torch.bmm(post, self._bag(p, "W_out"))
        b_out = self._bag(p, "b_out")
        out = out if b_out is None else out + b_out[:, None]
        return out.view(models, batch, n, d)

    def unembed(self, x: Tensor, output: OutputSpec) -> Tensor:
        """Logits of the positions in ``x``, (M, B, ..., K)."""
        shape = x.shape
        logits = torch.bmm(x.reshape(shape[0], -1, shape[-1]), self.params["unembed.W_U"])
        b_u = self.params.get("unembed.b_U")
        logits = logits if b_u is None else logits + b_u[:, None]
        return logits.view(*shape[:-1], -1)


def causal_attention(q: Tensor, k: Tensor, v: Tensor, scale: float) -> Tensor:
    """Softmax(scale·q·k) attention over the keys up to each query, (N, h, T, e).

    On CUDA one fused ``scaled_dot_product_attention``; on the CPU the written-out softmax,
    which for heads this small is faster than torch's CPU flash kernel.
    """
    if q.device.type == "cuda":
        return F.scaled_dot_product_attention(q, k, v, is_causal=True, scale=scale)
    shape, n, e = q.shape, q.shape[-2], q.shape[-1]
    future = torch.ones(n, n, dtype=torch.bool, device=q.device).triu(1)
    mask = torch.zeros((n, n), dtype=q.dtype, device=q.device).masked_fill(future, -math.inf)
    # mask + scale·q·kᵀ in one batched product: no pass over the scores to scale and mask them
    scores = torch.baddbmm(mask, q.reshape(-1, n, e), k.reshape(-1, n, e).transpose(1, 2),
                           alpha=scale)
    return torch.bmm(torch.softmax(scores, dim=-1), v.reshape(-1, n, e)).view(shape)


def stacked_forward(spec: ModelSpec, params: dict[str, Tensor], tokens: Tensor,
                    last: Tensor | None, constants: dict | None = None,
                    betas: Tensor | None = None) -> Tensor:
    """Logits of M models on their padded batches ``tokens`` (M, B, T).

    With ``last`` (M, B) only those positions are unembedded: logits (M, B, K); else every
    position's, (M, B, T, K). ``constants`` caches parameter-free tables (the sinusoids) on the
    device between calls, so that a captured CUDA graph copies nothing from the host. ``betas``
    (M,) multiplies each model's attention scores (None: 1).
    """
    walk = StackedPass(params, spec, constants, betas)
    final = run_blocks(spec, walk, walk.embed(tokens))
    if last is not None:
        final = torch.gather(final, 2, last[:, :, None, None].expand(-1, -1, 1, final.shape[-1]))
        final = final[:, :, 0]
    return walk.unembed(final, spec.output)
