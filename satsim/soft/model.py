"""The soft twin: a ModelSpec as a PyTorch module with the same weights, attending by softmax(β).

Parameters are registered under the spec's own tensor names (``blocks.0.attn.W_Q``), so
``state_dict()`` and ``spec.tensors()`` agree key for key and ``to_spec`` returns the same bits.
The forward pass is the reference semantics of :mod:`satsim.reference.forward`, batched with
padding; activations are cached under TransformerLens hook names. Without a cache and without
gradients (evaluation), attention is one call of torch's ``scaled_dot_product_attention``, which
runs a fused kernel (flash, memory-efficient) where one applies and never holds the T×T score
matrix then.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from torch import Tensor, nn
from torch.nn import functional as F

from satsim.errors import SatsimError
from satsim.model.architecture import Backend, Branch, Step, position_term, run_blocks, steps
from satsim.model.degrees import growth_exponent, network_graph
from satsim.model.encoding import Input, encode_batch, pad_ids
from satsim.model.masks import head_allowed
from satsim.model.readout import decode
from satsim.model.respec import with_tensors
from satsim.model.safety import check_scale
from satsim.model.scaling import Rates, scale_factors
from satsim.model.settings import AttentionSettings, default_tolerance, head_settings
from satsim.model.spec import LayerNormSpec, ModelSpec, OutputSpec
from satsim.soft.device import resolve_device, resolve_dtype
from satsim.soft.hard_attention import kind_weights


class _Tensors(nn.Module):
    """A bag of named parameters (one spec component: an embedding, a head stack, a norm)."""

    def __init__(self, tensors: dict[str, Tensor]) -> None:
        super().__init__()
        for name, value in tensors.items():
            self.register_parameter(name, nn.Parameter(value))

    def get(self, name: str) -> Tensor | None:
        """The parameter ``name``, or None if the spec has no such (optional) tensor."""
        return self._parameters.get(name)


class _Block(nn.Module):
    """One layer's parameter bags: attn, mlp, ln1, ln2 (absent ones are None)."""

    def __init__(self, parts: dict[str, _Tensors | None]) -> None:
        super().__init__()
        for name, part in parts.items():
            setattr(self, name, part)


@dataclass
class SoftRun:
    """A padded batch through the soft twin: logits, residual streams and (optionally) hooks."""

    logits: Tensor  # (B, T, n_outputs), or (B, P, n_outputs) at the positions ``logits_at``
    residuals: list[Tensor]  # (B, T, d) after the embedding and after every sublayer
    final: Tensor  # (B, T, d) what the unembedding reads: the last stream after ln_final
    lengths: Tensor  # (B,)
    cache: dict[str, Tensor] | None
    logits_at: list[int] | None = None

    def logits_of(self, row: int) -> np.ndarray:
        """Float64 logits of string ``row`` at its real positions, (n, n_outputs)."""
        if self.logits_at is not None:
            raise ValueError("this run has logits at some positions only (logits_at)")
        return self.logits[row, : int(self.lengths[row])].double().cpu().numpy()

    def residual_arrays(self) -> list[np.ndarray]:
        """The residual streams as float64 NumPy arrays (B, T, d)."""
        return [r.double().cpu().numpy() for r in self.residuals]


def _layer_norm(x: Tensor, ln: LayerNormSpec, w: Tensor | None,
                b: Tensor | None) -> tuple[Tensor, Tensor]:
    """Normalised rows (before the scale and shift) and the norm's output (LayerNorm or RMS)."""
    centred = x - x.mean(dim=-1, keepdim=True) if ln.centred else x
    normalized = centred / torch.sqrt((centred**2).mean(dim=-1, keepdim=True) + ln.eps)
    out = normalized if w is None else normalized * w
    return normalized, (out if b is None else out + b)


ACTIVATIONS = {
    "relu": torch.relu,
    "gelu": lambda z: torch.nn.functional.gelu(z, approximate="none"),
    "gelu_tanh": lambda z: torch.nn.functional.gelu(z, approximate="tanh"),
    "silu": torch.nn.functional.silu,
}
"""Each feed-forward activation on torch tensors."""


class SoftTransformer(nn.Module):
    """A ModelSpec run in PyTorch with softmax(β) attention, on CPU or CUDA, float32 or float64."""

    def __init__(self, spec: ModelSpec, device: str | torch.device = "auto",
                 dtype: Any = None) -> None:
        super().__init__()
        self.spec = spec
        self.scale = 1.0
        dtype = resolve_dtype(spec.dtype if dtype is None else dtype)
        device = resolve_device(device)
        tensors = spec.tensors()

        def bag(prefix: str) -> _Tensors:
            # np.array: a writable copy of the read-only spec array, which as_tensor then shares
            return _Tensors({name[len(prefix) + 1:]: torch.as_tensor(np.array(array), dtype=dtype,
                                                                     device=device)
                             for name, array in tensors.items() if name.startswith(prefix + ".")})

        self.embed = bag("embed")
        self.pos_embed = bag("pos_embed")
        self.blocks = nn.ModuleList(
            _Block({part: bag(f"blocks.{layer}.{part}") if getattr(block, part) else None
                    for part in ("attn", "mlp", "ln1", "ln2")})
            for layer, block in enumerate(spec.blocks)
        )
        self.ln_final = bag("ln_final") if spec.ln_final is not None else None
        self.unembed = bag("unembed")

    @classmethod
    def from_spec(cls, spec: ModelSpec, device: str | torch.device = "auto",
                  dtype: Any = None) -> SoftTransformer:
        """Build the soft twin of ``spec`` (dtype defaults to the spec's)."""
        return cls(spec, device=device, dtype=dtype)

    @property
    def device(self) -> torch.device:
        """Where the parameters live."""
        return self.embed.W_E.device

    @property
    def dtype(self) -> torch.dtype:
        """The parameters' floating type."""
        return self.embed.W_E.dtype

    def to_spec(self) -> ModelSpec:
        """Return the spec with this module's current weights (bit for bit, in its dtype)."""
        arrays = {name: p.detach().cpu().numpy().copy() for name, p in self.named_parameters()}
        return with_tensors(self.spec, arrays)

    def scaled(self, c: float, rates: Rates | None = None) -> SoftTransformer:
        """Return a copy at cθ: every parameter times c and its group's rate (see scaling)."""
        factors = scale_factors([name for name, _ in self.named_parameters()], c, rates)
        largest = c * max([1.0, *(rates or {}).values()])
        check_scale(self.spec, largest, np.float32 if self.dtype == torch.float32 else np.float64)
        twin = copy.deepcopy(self, {id(self.spec): self.spec})  # the spec is frozen: share it
        with torch.no_grad():
            for name, param in twin.named_parameters():
                param.mul_(factors[name])
        twin.scale = self.scale * c
        return twin

    def _positions(self, n: int, lengths: Tensor) -> Tensor | None:
        """Positional vectors (T, d), or (B, T, d) when they depend on each string's length."""
        pos = self.spec.positional

        def rows(name: str, count: int) -> Tensor:
            return self.pos_embed.W_pos[:count]

        def term(count: int) -> Tensor | None:
            return position_term(
                pos, count, self.spec.d_model, rows,
                lambda features, name: self._tensor(features) @ self.pos_embed.W_feat,
                self._tensor, model=self.spec.name)

        if not pos.depends_on_length:
            return term(n)
        table = torch.zeros((len(lengths), n, self.spec.d_model), dtype=self.dtype,
                            device=self.device)
        for row, length in enumerate(lengths.tolist()):
            table[row, :length] = term(length)
        return table

    def _pass(self, key_mask: Tensor, beta: float, cache: bool) -> SoftPass:
        """The backend one forward pass walks the model with."""
        return SoftPass(self, key_mask, beta, cache)

    def _steps(self) -> tuple[Step, ...]:
        """The residual steps the forward pass takes (the spec's)."""
        return steps(self.spec)

    def _tensor(self, array: np.ndarray) -> Tensor:
        return torch.tensor(array, dtype=self.dtype, device=self.device)

    def forward(self, tokens: Tensor, lengths: Tensor | None = None, *, beta: float = 1.0,
                cache: bool = False, logits_at: Sequence[int] | None = None) -> SoftRun:
        """Run token ids (B, T), padded past ``lengths``; attention is softmax(β·scores).

        ``logits_at`` unembeds only those positions (every one by default): the unembedding
        is per position, and over a large vocabulary it is most of a run's cost.
        """
        if not (math.isfinite(beta) and beta > 0):
            raise SatsimError(f"beta must be positive and finite, got {beta}")
        batch, n = tokens.shape
        if lengths is None:
            lengths = torch.full((batch,), n, dtype=torch.long)
        key_mask = torch.arange(n, device=self.device)[None, :] < lengths.to(self.device)[:, None]
        soft = self._pass(key_mask, beta, cache)
        final = run_blocks(self.spec, soft, soft.embed(tokens), self._steps())
        at = None if logits_at is None else [int(position) for position in logits_at]
        read = final if at is None else final[:, at]
        return SoftRun(soft.unembed(read, self.spec.output), soft.residuals, final, lengths,
                       soft.hooks, at)

    def encode(self, strings: Sequence[Input]) -> tuple[Tensor, Tensor]:
        """Padded token ids (B, T) and lengths (B,) of the inputs (BOS/EOS added).

        Each input is text, a sequence of tokens or of token ids, as the simulator takes them.
        """
        padded, lengths = pad_ids(encode_batch(self.spec, strings, at_least_one=True))
        return torch.from_numpy(padded).to(self.device), torch.from_numpy(lengths)

    def run(self, strings: Sequence[Input], *, beta: float = 1.0,
            cache: bool = False) -> SoftRun:
        """Run inputs without gradients; a non-finite result raises a one-line overflow error."""
        tokens, lengths = self.encode(strings)
        with torch.no_grad():
            result = self(tokens, lengths, beta=beta, cache=cache)
        if not all(bool(torch.isfinite(t).all()) for t in [result.logits, *result.residuals]):
            exponent = growth_exponent(network_graph(self.spec))
            raise SatsimError(
                f"the soft twin of {self.spec.name!r} overflowed {self.dtype} at c = "
                f"{self.scale:g} (activations grow like c^{exponent}); use "
                f"{'a smaller c' if self.dtype == torch.float64 else 'float64 or a smaller c'}")
        return result

    def outputs(self, inputs: Sequence[Input], *, beta: float = 1.0) -> list:
        """The decoded answer per input, as :meth:`satsim.engine.simulator.Simulator.outputs`.

        Categorical ties use the default tie tolerance of the twin's dtype.
        """
        result = self.run(inputs, beta=beta)
        numpy_dtype = np.float64 if self.dtype == torch.float64 else np.float32
        atol, rtol = default_tolerance(numpy_dtype)
        return [decode(self.spec, result.logits_of(row), atol, rtol)
                for row in range(len(result.lengths))]


def _scores_fit(q: Tensor, k: Tensor, factor: float) -> bool:
    """Whether every score factor·q·k is far below the dtype's largest number.

    A fused kernel may turn an overflowing score into a finite answer, where the written-out
    softmax gives NaN and the run's overflow check reports it; so only scores bounded by
    ‖q‖·‖k‖·|factor| < max/2¹⁶ run fused (a bound that overflows itself fails it too).
    """
    with torch.no_grad():
        bound = (torch.linalg.vector_norm(q, dim=-1).amax()
                 * torch.linalg.vector_norm(k, dim=-1).amax() * abs(factor))
        return bool(bound < torch.finfo(q.dtype).max / 2**16)


class SoftPass(Backend[Tensor]):
    """The walk's operations on padded (B, T, d) torch tensors, caching TransformerLens hooks."""

    def __init__(self, model: SoftTransformer, key_mask: Tensor, beta: float,
                 cache: bool) -> None:
        self.model = model
        self.key_mask = key_mask
        self.beta = beta
        self.hooks: dict[str, Tensor] | None = {} if cache else None
        self.residuals: list[Tensor] = []

    def embed(self, tokens: Tensor) -> Tensor:
        """Token rows plus positions of padded ids (B, T), hooked: the first residual stream."""
        model, (batch, n) = self.model, tokens.shape
        x = self.hook("hook_embed", model.embed.W_E[tokens])
        pos = model._positions(n, self.key_mask.sum(dim=-1).cpu())
        if pos is not None:
            x = x + self.hook("hook_pos_embed", pos.expand(batch, n, -1))
        self.residuals.append(x)
        return x

    def hook(self, name: str, value: Tensor) -> Tensor:
        """Cache ``value`` under hook ``name`` when caching."""
        if self.hooks is not None:
            self.hooks[name] = value
        return value

    def norm(self, x: Tensor, ln: LayerNormSpec, name: str) -> Tensor:
        """LayerNorm with the module's parameters for ``name``."""
        bag = self.model.get_submodule(name)
        normalized, out = _layer_norm(x, ln, bag.get("w"), bag.get("b"))
        self.hook(f"{name}.hook_normalized", normalized)
        return out

    def attention(self, x: Tensor, branch: Branch) -> Tensor:
        """Softmax(β·scores) attention over the allowed keys."""
        attn, p = self.model.get_submodule(branch.name), branch.name

        def project(weight: str, bias: str) -> Tensor:
            out = torch.einsum("btd,hde->bhte", x, attn.get(weight))
            return out if attn.get(bias) is None else out + attn.get(bias)[None, :, None, :]

        q, k, v = project("W_Q", "b_Q"), project("W_K", "b_K"), project("W_V", "b_V")
        for name, value in (("q", q), ("k", k), ("v", v)):
            self.hook(f"{p}.hook_{name}", value.transpose(1, 2))
        scale = branch.module.scale
        factor = self.beta * branch.module.score_scale
        masks = set(branch.module.head_masks)
        fusable = (masks in ({"causal"}, {"bidirectional"}) and self.fused_softmax()
                   and not branch.module.fixed_kinds)
        if fusable and _scores_fit(q, k, factor):
            z = self.fused_attention(q, k, v, factor, masks == {"causal"})
        else:
            scores = torch.einsum("bhte,bhse->bhts", q, k)
            # Divided by √d rather than times score_scale: a product rounds otherwise in float32,
            # and the documented training runs (README, bench/results) were made this way.
            scores = scores / math.sqrt(q.shape[-1]) if scale is None else scores * scale
            n = x.shape[1]
            by_position = torch.from_numpy(head_allowed(branch.module.head_masks, n)).to(x.device)
            allowed = self.key_mask[:, None, None, :] & by_position[None]
            scores = self.hook(f"{p}.hook_attn_scores", self.mask_scores(scores, allowed))
            weights = torch.softmax(self.beta * scores, dim=-1)
            if branch.module.fixed_kinds:
                weights = self.kind_weights(q, k, weights, allowed, branch)
            # A query with no allowed key (strict past at position 0) attends nothing: zero.
            weights = torch.where(allowed.any(dim=-1, keepdim=True), weights, 0.0)
            pattern = self.hook(f"{p}.hook_pattern", weights)
            z = pattern @ v
        self.hook(f"{p}.hook_z", z.transpose(1, 2))
        out = torch.einsum("bhte,hed->btd", z, attn.W_O)
        return self.hook(branch.out_name, out if attn.get("b_O") is None else out + attn.b_O)

    def kind_weights(self, q: Tensor, k: Tensor, weights: Tensor, allowed: Tensor,
                     branch: Branch) -> Tensor:
        """The softmax weights (B, H, T, S) with each head that fixes its kind's weights instead.

        A fixed kind's scores are formed again in float64, as the simulator forms them.
        """
        attn, run_way = branch.module, AttentionSettings("softmax", self.beta)
        heads = []
        for h, (kind, delta) in enumerate(zip(attn.head_kinds, attn.head_deltas)):
            way = head_settings(run_way, kind, delta)
            if way.kind == "softmax":
                heads.append(weights[:, h])
                continue
            scores = torch.einsum("bte,bse->bts", q[:, h].double(), k[:, h].double())
            scores = self.mask_scores(scores * attn.score_scale, allowed[:, h])
            heads.append(kind_weights(scores, allowed[:, h], way, q.dtype).to(weights.dtype))
        return torch.stack(heads, dim=1)

    def fused_softmax(self) -> bool:
        """Whether attention may run as one fused call: no scores or pattern to cache, no grad.

        Training keeps the written-out softmax: a fused kernel sums in another order, and in
        float32 a different rounding sends training down another trajectory, so documented
        runs (README, bench/results) would no longer reproduce.
        """
        return self.hooks is None and not torch.is_grad_enabled()

    def fused_attention(self, q: Tensor, k: Tensor, v: Tensor, factor: float,
                        causal: bool) -> Tensor:
        """Softmax(factor·q·k) attention by torch's scaled_dot_product_attention.

        torch picks the kernel (flash, memory-efficient, cuDNN or plain math); the fused ones
        never hold a T×T matrix. A causal head needs no padding mask: strings are padded on the
        right, so a real query never reaches a padded key (padded rows are never read).
        """
        if causal:
            return F.scaled_dot_product_attention(q, k, v, is_causal=True, scale=factor)
        return F.scaled_dot_product_attention(q, k, v, attn_mask=self.key_mask[:, None, None, :],
                                              scale=factor)

    def mask_scores(self, scores: Tensor, allowed: Tensor) -> Tensor:
        """Exclude the keys that are not allowed (score −∞, so weight 0)."""
        return scores.masked_fill(~allowed, -math.inf)

    def feed_forward(self, x: Tensor, branch: Branch) -> Tensor:
        """The feed-forward sublayer with its activation."""
        mlp, p = self.model.get_submodule(branch.name), branch.name
        pre = x @ mlp.W_in if mlp.get("b_in") is None else x @ mlp.W_in + mlp.b_in
        activation = ACTIVATIONS[branch.module.activation]
        post = self.hook(f"{p}.hook_post", activation(self.hook(f"{p}.hook_pre", pre)))
        out = post @ mlp.W_out
        return self.hook(branch.out_name, out if mlp.get("b_out") is None else out + mlp.b_out)

    def enter(self, x: Tensor, step: Step) -> Tensor:
        """Cache the block's input stream."""
        if step.starts_block:
            self.hook(step.in_name, x)
        return x

    def leave(self, x: Tensor, step: Step) -> Tensor:
        """Keep and cache the stream the step wrote."""
        self.residuals.append(self.hook(step.out_name, x))
        return x

    def unembed(self, x: Tensor, output: OutputSpec) -> Tensor:
        """Logits of every position."""
        unembed = self.model.unembed
        logits = x @ unembed.W_U
        return logits if unembed.get("b_U") is None else logits + unembed.b_U
