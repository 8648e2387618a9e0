"""Import a TransformerLens 3.x HookedTransformer as a ModelSpec, reading its config.

``from_transformer_lens(model)`` reads ``model.cfg`` (a HookedTransformerConfig) and
``model.state_dict()``, and the effective attention divisor ``model.blocks[l].attn.attn_scale``
of every layer (TransformerLens ignores a custom ``attn_scale`` when ``use_attn_scale`` is off,
so the config alone can mislead). Every config setting that changes the forward pass and that
satsim does not represent is a one-line SatsimError naming it; every state-dict entry must be
used, so a feature this module does not know cannot slip through as unused weights. The facts
behind each verdict (TransformerLens 3.9.0) are in docs/notes_tl.md; the table is in
docs/interop.md.

The spec's vocabulary is the token ids as strings ("0", "1", ...), its output labels likewise
(one per column of W_U); it has no BOS or EOS (TransformerLens prepends none to token tensors),
and its readout is categorical at every position. TransformerLens always stores biases, zeros
included: they are kept, so the spec is the model as stored.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from typing import Any

import numpy as np

from satsim.errors import SatsimError
from satsim.model.masks import mask_of
from satsim.model.spec import (
    AttentionSpec,
    BlockSpec,
    FeedForwardSpec,
    LayerNormSpec,
    ModelSpec,
    OutputSpec,
    PositionalSpec,
)

NORMS = {"LN": ("layer", True), "LNPre": ("layer", False), "RMS": ("rms", True),
         "RMSPre": ("rms", False)}
"""TransformerLens normalization_type → (satsim norm kind, has learned weights)."""

ACTIVATIONS = {"relu": "relu", "gelu": "gelu", "gelu_new": "gelu_tanh",
               "gelu_pytorch_tanh": "gelu_tanh", "silu": "silu"}
"""TransformerLens act_fn → satsim activation (gelu_new and gelu_pytorch_tanh: the tanh form)."""

REFUSED_ACTIVATIONS = {
    "solu": "softmax-weighted SoLU", "solu_ln": "SoLU followed by a LayerNorm",
    "gelu_fast": "GELU with a 10-digit constant, neither satsim form exactly",
    "xielu": "trainable xIELU", "relu2": "squared ReLU",
}
REFUSED_POSITIONS = {
    "rotary": "rotary positions", "alibi": "ALiBi distance biases",
    "shortformer": "positions added to the query and key inputs only",
    "relative_positional_bias": "T5 relative position biases",
}
OLMO_ARCHITECTURES = ("Olmo2ForCausalLM", "Olmo3ForCausalLM", "OlmoeForCausalLM",
                      "GptOssForCausalLM")


def _on(value: Any) -> bool:
    return value not in (None, False)


def _positive(value: Any) -> bool:
    return value is not None and value > 0


REFUSED: dict[str, tuple[Callable[[Any], bool], str]] = {
    "use_local_attn": (_on, "local attention windows"),
    "attn_scores_soft_cap": (_positive, "a tanh soft cap on attention scores"),
    "output_logits_soft_cap": (_positive, "a tanh soft cap on the logits"),
    "n_key_value_heads": (_on, "grouped-query attention"),
    "gated_mlp": (_on, "a gated MLP"),
    "scale_attn_by_inverse_layer_idx": (_on, "a score divisor that grows with the layer"),
    "use_qk_norm": (_on, "RMSNorm on queries and keys"),
    "clip_qkv": (_on, "clamped queries, keys and values"),
    "use_logn_attn": (_on, "log-length query scaling"),
    "use_attention_sinks": (_on, "learned attention sinks"),
    "post_embedding_ln": (_on, "a LayerNorm after the embedding"),
    "use_normalization_before_and_after": (_on, "extra norms on the sublayer outputs"),
    "num_experts": (_on, "a mixture of experts"),
    "original_architecture": (lambda v: v in OLMO_ARCHITECTURES,
                              "post-norm blocks with q/k norms, or experts"),
    "load_in_4bit": (_on, "4-bit quantised weights"),
    "quantization_method": (_on, "quantised weights"),
}
"""Settings that change the forward pass in a way satsim does not represent: when refused."""

READ = ("d_model", "d_head", "n_layers", "n_ctx", "n_heads", "d_mlp", "d_vocab", "d_vocab_out",
        "eps", "act_fn", "normalization_type", "final_rms", "attn_only", "parallel_attn_mlp",
        "use_attn_scale", "attn_scale", "attention_dir", "positional_embedding_type", "dtype")
NO_EFFECT = (
    # hooks only, or nothing the forward pass of token ids reads
    "use_attn_result", "use_split_qkv_input", "use_attn_in", "use_hook_mlp_in", "use_hook_tokens",
    "device", "n_devices", "model_name", "seed", "init_mode", "initializer_range", "init_weights",
    "default_prepend_bos", "tokenizer_name", "tokenizer_prepends_bos", "from_checkpoint",
    "checkpoint_index", "checkpoint_label_type", "checkpoint_value", "n_params",
    "trust_remote_code", "decoder_start_token_id", "tie_word_embeddings", "uses_rms_norm",
    "layer_norm_folding", "relative_attention_max_distance", "relative_attention_num_buckets",
    # read only with a refused setting on
    "window_size", "attn_types", "experts_per_token", "norm_topk_prob", "train_seq_length",
    "ungroup_grouped_query_attention", "rotary_dim", "rotary_base", "rotary_base_local",
    "rotary_scaling_factor", "rotary_adjacent_pairs", "use_NTK_by_parts_rope",
    "NTK_by_parts_low_freq_factor", "NTK_by_parts_high_freq_factor", "NTK_by_parts_factor",
    "NTK_original_ctx_len", "use_yarn_rope", "yarn_factor", "yarn_attention_factor",
    "yarn_beta_fast", "yarn_beta_slow", "yarn_original_max_position_embeddings",
    "yarn_truncate", "yarn_global_attn_only", "use_dynamic_ntk_rope",
)
"""Config fields known not to change the function of a model with the READ fields supported."""

BUFFERS = (".IGNORE", ".mask")


def _refuse(field: str, value: Any, reason: str) -> SatsimError:
    return SatsimError(f"TransformerLens setting {field}={value!r} is not supported by satsim "
                       f"({reason})")


def check_config(cfg: Any) -> None:
    """Raise a one-line SatsimError for the first setting satsim cannot represent exactly."""
    position = getattr(cfg, "positional_embedding_type", "standard")
    if position != "standard":
        reason = REFUSED_POSITIONS.get(position, "an unknown positional embedding")
        raise _refuse("positional_embedding_type", position, reason)
    for field, (refused, reason) in REFUSED.items():
        value = getattr(cfg, field, None)
        if refused(value):
            raise _refuse(field, value, reason)
    if cfg.normalization_type is not None and cfg.normalization_type not in NORMS:
        raise _refuse("normalization_type", cfg.normalization_type, "an unknown norm")
    if not cfg.attn_only and cfg.act_fn not in ACTIVATIONS:
        reason = REFUSED_ACTIVATIONS.get(cfg.act_fn, "an unknown activation")
        raise _refuse("act_fn", cfg.act_fn, reason)
    if cfg.attention_dir not in ("causal", "bidirectional"):
        raise _refuse("attention_dir", cfg.attention_dir, "an unknown attention direction")
    if dataclasses.is_dataclass(cfg):
        known = set(READ) | set(NO_EFFECT) | set(REFUSED)
        for f in dataclasses.fields(cfg):
            default = f.default if f.default is not dataclasses.MISSING else None
            value = getattr(cfg, f.name)
            if f.name not in known and value != default:
                raise _refuse(f.name, value, "a setting this importer, written against "
                              "TransformerLens 3.9, does not know")


class _StateDict:
    """The model's state dict as float64 arrays, handed out once each; what is left is an error."""

    def __init__(self, state: Any) -> None:
        self.arrays = {name: _float64(value) for name, value in state.items()
                       if not name.endswith(BUFFERS)}
        self.float64 = any(str(value.dtype).endswith("float64") for value in state.values())

    def take(self, name: str) -> np.ndarray:
        """The array ``name``; its absence is an error."""
        if name not in self.arrays:
            raise SatsimError(f"the TransformerLens state dict has no {name!r}, which its config "
                              "implies")
        return self.arrays.pop(name)

    def take_norm(self, name: str, norm_type: str | None, eps: float) -> LayerNormSpec | None:
        """The norm ``name`` of a TransformerLens normalization type (None: no norm)."""
        if norm_type is None:
            return None
        kind, learned = NORMS[norm_type]
        w = self.take(f"{name}.w") if learned else None
        b = self.take(f"{name}.b") if learned and kind == "layer" else None
        return LayerNormSpec(w=w, b=b, eps=float(eps), kind=kind)

    def check_used(self) -> None:
        """Raise if some weight was not taken: the config does not describe the model."""
        if self.arrays:
            name = sorted(self.arrays)[0]
            raise SatsimError(f"the TransformerLens state dict has {name!r}, which satsim's "
                              "reading of the config does not use (a feature it does not know)")


def _float64(value: Any) -> np.ndarray:
    """A float64 NumPy copy of a tensor or array (exact for every float type)."""
    if hasattr(value, "detach"):
        value = value.detach().cpu().double().numpy()
    return np.array(value, dtype=np.float64)


def _divisors(model: Any, n_layers: int) -> list[float]:
    """The number each layer's attention scores are divided by, read off the modules."""
    blocks = getattr(model, "blocks", None)
    if blocks is None or len(blocks) != n_layers:
        raise SatsimError("the model has no blocks[l].attn.attn_scale for each of its "
                          f"{n_layers} layers; pass a HookedTransformer")
    return [float(block.attn.attn_scale) for block in blocks]


def _scale(divisor: float, d_head: int) -> float | None:
    """The spec's score scale for a divisor: None (1/√d_head) when it is √d_head."""
    if not (math.isfinite(divisor) and divisor > 0):
        raise SatsimError(f"TransformerLens attention divisor {divisor!r} is not positive")
    return None if divisor == math.sqrt(d_head) else 1.0 / divisor


def _block(state: _StateDict, cfg: Any, layer: int, divisor: float) -> BlockSpec:
    p = f"blocks.{layer}"
    attn = AttentionSpec(**{name: state.take(f"{p}.attn.{name}") for name in (
        "W_Q", "W_K", "W_V", "W_O", "b_Q", "b_K", "b_V", "b_O")},
        mask=mask_of(cfg.attention_dir == "causal"), scale=_scale(divisor, cfg.d_head))
    ln1 = state.take_norm(f"{p}.ln1", cfg.normalization_type, cfg.eps)
    if cfg.attn_only:
        return BlockSpec(attn=attn, ln1=ln1)
    mlp = FeedForwardSpec(**{name: state.take(f"{p}.mlp.{name}") for name in (
        "W_in", "W_out", "b_in", "b_out")}, activation=ACTIVATIONS[cfg.act_fn])
    ln2 = state.take_norm(f"{p}.ln2", cfg.normalization_type, cfg.eps)
    return BlockSpec(attn=attn, mlp=mlp, ln1=ln1, ln2=ln2)


def final_norm_type(cfg: Any) -> str | None:
    """The normalization type of ln_final: the blocks', or RMS(Pre) under LN(Pre) with final_rms."""
    norm_type = cfg.normalization_type
    if getattr(cfg, "final_rms", False) and norm_type in ("LN", "LNPre"):
        return "RMS" if norm_type == "LN" else "RMSPre"
    return norm_type


def from_transformer_lens(model: Any, name: str | None = None) -> ModelSpec:
    """The ModelSpec of a TransformerLens 3.x HookedTransformer (refusing what it cannot hold).

    The spec is float64 when the model is, float32 otherwise (16-bit weights widen exactly).
    Vocabulary and output labels are the token ids as strings; no BOS/EOS; categorical readout.
    """
    if type(model).__name__ == "TransformerBridge":
        raise SatsimError("TransformerLens 4's TransformerBridge is not supported (it loads "
                          "models from the hub by name); pass a TransformerLens 3.x "
                          "HookedTransformer")
    cfg = model.cfg
    check_config(cfg)
    state = _StateDict(model.state_dict())
    divisors = _divisors(model, cfg.n_layers)
    blocks = tuple(_block(state, cfg, layer, divisors[layer]) for layer in range(cfg.n_layers))
    W_E = state.take("embed.W_E")
    positional = PositionalSpec(kind="learned", W_pos=state.take("pos_embed.W_pos"))
    ln_final = state.take_norm("ln_final", final_norm_type(cfg), cfg.eps)
    W_U = state.take("unembed.W_U")
    output = OutputSpec(W_U=W_U, b_U=state.take("unembed.b_U"),
                        labels=tuple(str(i) for i in range(W_U.shape[1])),
                        task="categorical", readout="per-position")
    state.check_used()
    spec = ModelSpec(
        vocab=tuple(str(i) for i in range(W_E.shape[0])), W_E=W_E, blocks=blocks,
        output=output, positional=positional,
        norm="none" if cfg.normalization_type is None else "pre", ln_final=ln_final,
        parallel=bool(cfg.parallel_attn_mlp),
        name=name or str(getattr(cfg, "model_name", "transformer_lens")),
        description="imported from a TransformerLens HookedTransformer")
    return spec if state.float64 else spec.astype(np.float32)
