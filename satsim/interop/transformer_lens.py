"""Import a TransformerLens 3.x HookedTransformer as a ModelSpec, and prove it before returning.

``from_transformer_lens(model)`` reads ``model.cfg`` (a HookedTransformerConfig), the modules that
run (:mod:`satsim.interop.tl_structure`: each norm's class and ε, the MLP's activation, each
attention's divisor and mask; a config that contradicts them is refused by the field's name) and
``model.state_dict()``. Every config setting that changes the forward pass and that satsim does
not represent is a one-line SatsimError naming it, "on" by TransformerLens's own test of the
field; every state-dict entry must be used, so a feature this module does not know cannot slip
through as unused weights. Then the model and the spec's soft twin run a probe batch
(:mod:`satsim.interop.tl_probe`) and any difference beyond rounding is refused. The facts behind
each verdict (TransformerLens 3.9.0) are in docs/notes_tl.md; the table is in docs/interop.md.

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
from satsim.interop.tl_probe import check_against_transformer_lens
from satsim.interop.tl_structure import (
    Layer,
    Norm,
    Structure,
    check_agreement,
    structure_from_config,
    structure_from_modules,
)
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
OLMO_ARCHITECTURES = ("Olmo2ForCausalLM", "Olmo3ForCausalLM", "OlmoeForCausalLM")
"""original_architecture values the blocks or the attention read (GptOssForCausalLM only picks the
kind of mixture of experts, which num_experts refuses)."""


def _truthy(value: Any) -> bool:
    return bool(value)


def _set(value: Any) -> bool:
    return value is not None


def _positive(value: Any) -> bool:
    return value is not None and value > 0


REFUSED: dict[str, tuple[Callable[[Any], bool], str]] = {
    # TransformerBlock: `if not cfg.use_local_attn`, else local windows from attn_types
    "use_local_attn": (_truthy, "local attention windows"),
    # softcap_enabled: `cap is not None and cap > 0`
    "attn_scores_soft_cap": (_positive, "a tanh soft cap on attention scores"),
    "output_logits_soft_cap": (_positive, "a tanh soft cap on the logits"),
    # TransformerBlock: `Attention if n_key_value_heads is None else GroupedQueryAttention`
    "n_key_value_heads": (_set, "grouped-query attention"),
    # MLPFactory: `if cfg.num_experts: MoE ... elif cfg.gated_mlp: GatedMLP`
    "num_experts": (_truthy, "a mixture of experts"),
    "gated_mlp": (_truthy, "a gated MLP"),
    # AbstractAttention: `if cfg.scale_attn_by_inverse_layer_idx: attn_scale *= layer + 1`
    "scale_attn_by_inverse_layer_idx": (_truthy, "a score divisor that grows with the layer"),
    # AbstractAttention: `if cfg.use_qk_norm`, `if cfg.clip_qkv is not None`,
    # `if cfg.use_logn_attn and not self.training` (refused in either mode),
    # `if cfg.use_attention_sinks`
    "use_qk_norm": (_truthy, "RMSNorm on queries and keys"),
    "clip_qkv": (_set, "clamped queries, keys and values"),
    "use_logn_attn": (_truthy, "log-length query scaling"),
    "use_attention_sinks": (_truthy, "learned attention sinks"),
    # Embed: `if cfg.post_embedding_ln`; TransformerBlock: `if use_normalization_before_and_after`
    "post_embedding_ln": (_truthy, "a LayerNorm after the embedding"),
    "use_normalization_before_and_after": (_truthy, "extra norms on the sublayer outputs"),
    # TransformerBlock: `in POST_NORM_ARCHITECTURES`; AbstractAttention: q/k norms for these
    "original_architecture": (lambda v: v in OLMO_ARCHITECTURES,
                              "post-norm blocks or norms on queries and keys"),
    # AbstractAttention and the MLPs: `if cfg.load_in_4bit`
    "load_in_4bit": (_truthy, "4-bit quantised weights"),
}
"""Settings that change the forward pass in a way satsim does not represent, each "on" by
TransformerLens's own test of it (quoted above each entry)."""

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
    # declared by a checkpoint and read by the loader only (which dequantises or refuses)
    "quantization_method",
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
    if cfg.attn_only and cfg.parallel_attn_mlp:
        raise _refuse("parallel_attn_mlp", cfg.parallel_attn_mlp, "with attn_only=True, "
                      "TransformerLens's parallel block runs an MLP the model does not have")
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
    """The model's state dict, handed out once per entry as arrays; what is left is an error.

    The arrays are float64 when any weight is, float32 otherwise (16-bit weights widen exactly).
    """

    def __init__(self, state: Any) -> None:
        self.tensors = {name: value for name, value in state.items()
                        if not name.endswith(BUFFERS)}
        wide = any(str(value.dtype).endswith("float64") for value in self.tensors.values())
        self.dtype = np.dtype(np.float64 if wide else np.float32)

    def take(self, name: str) -> np.ndarray:
        """The array ``name`` (a view where possible: the spec copies it); absent, an error."""
        if name not in self.tensors:
            raise SatsimError(f"the TransformerLens state dict has no {name!r}, which its config "
                              "implies")
        value = self.tensors.pop(name)
        if hasattr(value, "detach"):
            value = value.detach().cpu()
            value = (value.double() if self.dtype == np.float64 else value.float()).numpy()
        return np.asarray(value, dtype=self.dtype)

    def take_norm(self, name: str, norm: Norm | None) -> LayerNormSpec | None:
        """The norm ``name`` as TransformerLens builds it (None: no norm)."""
        if norm is None:
            return None
        kind, learned = NORMS[norm.type]
        w = self.take(f"{name}.w") if learned else None
        b = self.take(f"{name}.b") if learned and kind == "layer" else None
        return LayerNormSpec(w=w, b=b, eps=norm.eps, kind=kind)

    def check_used(self) -> None:
        """Raise if some weight was not taken: the config does not describe the model."""
        if self.tensors:
            name = sorted(self.tensors)[0]
            raise SatsimError(f"the TransformerLens state dict has {name!r}, which satsim's "
                              "reading of the config does not use (a feature it does not know)")


def _scale(cfg: Any, layer: int, divisor: float, d_head: int) -> float | None:
    """The spec's score scale for a divisor: None (1/√d_head) when it is √d_head."""
    if not (math.isfinite(divisor) and divisor > 0):
        field = "attn_scale" if cfg.use_attn_scale else "use_attn_scale"
        raise _refuse(field, getattr(cfg, field), f"blocks.{layer}.attn divides the scores by "
                      f"{divisor!r}, which is not a positive number")
    return None if divisor == math.sqrt(d_head) else 1.0 / divisor


def _block(state: _StateDict, cfg: Any, index: int, layer: Layer) -> BlockSpec:
    p = f"blocks.{index}"
    weights = {name: state.take(f"{p}.attn.{name}") for name in (
        "W_Q", "W_K", "W_V", "W_O", "b_Q", "b_K", "b_V", "b_O")}
    d_head = weights["W_Q"].shape[-1]
    attn = AttentionSpec(**weights, mask=mask_of(layer.causal),
                         scale=_scale(cfg, index, layer.divisor, d_head))
    ln1 = state.take_norm(f"{p}.ln1", layer.ln1)
    if layer.act_fn is None:
        return BlockSpec(attn=attn, ln1=ln1)
    mlp = FeedForwardSpec(**{name: state.take(f"{p}.mlp.{name}") for name in (
        "W_in", "W_out", "b_in", "b_out")}, activation=ACTIVATIONS[layer.act_fn])
    return BlockSpec(attn=attn, mlp=mlp, ln1=ln1, ln2=state.take_norm(f"{p}.ln2", layer.ln2))


def read_structure(model: Any) -> Structure:
    """What the model runs: its modules checked against its config (or the config alone)."""
    cfg = model.cfg
    stated = structure_from_config(cfg)
    if not hasattr(model, "named_modules"):
        return stated
    running = structure_from_modules(model)
    check_agreement(cfg, stated, running)
    return running


def from_transformer_lens(model: Any, name: str | None = None, *, check: bool = True
                          ) -> ModelSpec:
    """The ModelSpec of a TransformerLens 3.x HookedTransformer (refusing what it cannot hold).

    The spec is float64 when the model is, float32 otherwise (16-bit weights widen exactly).
    Vocabulary and output labels are the token ids as strings; no BOS/EOS; categorical readout.
    With ``check`` (the default) the import runs the model and the spec's soft twin on a probe
    batch and refuses if their logits differ beyond rounding (docs/interop.md); ``check=False``
    skips that, for speed on a model already checked.
    """
    if type(model).__name__ == "TransformerBridge":
        raise SatsimError("TransformerLens 4's TransformerBridge is not supported (it loads "
                          "models from the hub by name); pass a TransformerLens 3.x "
                          "HookedTransformer")
    if not hasattr(model, "cfg") or not hasattr(model, "state_dict"):
        raise SatsimError(f"from_transformer_lens needs a HookedTransformer, got "
                          f"{type(model).__name__}")
    cfg = model.cfg
    check_config(cfg)
    structure = read_structure(model)
    if len(structure.layers) != cfg.n_layers:
        raise SatsimError(f"the model has {len(structure.layers)} blocks where its config says "
                          f"n_layers={cfg.n_layers}")
    state = _StateDict(model.state_dict())
    blocks = tuple(_block(state, cfg, index, layer)
                   for index, layer in enumerate(structure.layers))
    W_E = state.take("embed.W_E")
    positional = PositionalSpec(kind="learned", W_pos=state.take("pos_embed.W_pos"))
    ln_final = state.take_norm("ln_final", structure.ln_final)
    W_U = state.take("unembed.W_U")
    output = OutputSpec(W_U=W_U, b_U=state.take("unembed.b_U"),
                        labels=tuple(str(i) for i in range(W_U.shape[1])),
                        task="categorical", readout="per-position")
    state.check_used()
    spec = ModelSpec(
        vocab=tuple(str(i) for i in range(W_E.shape[0])), W_E=W_E, blocks=blocks,
        output=output, positional=positional,
        norm="pre" if any(layer.ln1 for layer in structure.layers) else "none",
        ln_final=ln_final, parallel=bool(cfg.parallel_attn_mlp),
        name=name or str(getattr(cfg, "model_name", None) or "transformer_lens"),
        description="imported from a TransformerLens HookedTransformer")
    if check:
        check_against_transformer_lens(model, spec)
    return spec
