"""Seeded TransformerLens HookedTransformer configs, shared by scripts/tl_configs.py (which
writes the fixtures in tests/data/tl) and the live tests of the importer.

Pure data at import: torch and transformer_lens are imported only by the builders.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field

BASE = dict(
    d_model=8, d_head=4, n_heads=2, n_layers=1, n_ctx=8, d_vocab=6, d_mlp=12,
    dtype="float64", device="cpu", init_mode="gpt2", initializer_range=0.7,
)
BIAS_SCALE = 0.3
NORM_WEIGHT_SCALE = 0.3
BATCH = 4


@dataclass(frozen=True)
class Variant:
    """A named config: keyword overrides of BASE, a seed, and whether biases are random."""

    name: str
    overrides: dict = field(default_factory=dict)
    random_biases: bool = True
    seed: int = 0
    seq_len: int = 8


SUPPORTED = (
    Variant("attn_only_ln_1l", dict(attn_only=True), seed=1),
    Variant("attn_only_none_2l_zero_bias", dict(attn_only=True, normalization_type=None,
                                                n_layers=2), random_biases=False, seed=2),
    Variant("relu_ln_2l", dict(act_fn="relu", n_layers=2), seed=3),
    Variant("gelu_lnpre_2l", dict(act_fn="gelu", normalization_type="LNPre", n_layers=2), seed=4),
    Variant("gelu_new_rms_2l_eps1e-3", dict(act_fn="gelu_new", normalization_type="RMS",
                                            n_layers=2, eps=1e-3), seed=5),
    Variant("silu_rmspre_1l_zero_bias", dict(act_fn="silu", normalization_type="RMSPre"),
            random_biases=False, seed=6),
    Variant("relu_none_3l", dict(act_fn="relu", normalization_type=None, n_layers=3), seed=7),
    Variant("gelu_ln_2l_bidirectional", dict(act_fn="gelu", attention_dir="bidirectional",
                                             n_layers=2), seed=8, seq_len=6),
    Variant("attn_only_rms_1l_bidirectional", dict(attn_only=True, normalization_type="RMS",
                                                   attention_dir="bidirectional"), seed=9),
    Variant("relu_ln_1l_no_attn_scale", dict(act_fn="relu", use_attn_scale=False), seed=10),
    Variant("silu_rms_2l_attn_scale_1.7", dict(act_fn="silu", normalization_type="RMS",
                                               n_layers=2, attn_scale=1.7), seed=11),
    Variant("gelu_new_ln_2l_parallel", dict(act_fn="gelu_new", parallel_attn_mlp=True,
                                            n_layers=2), seed=12),
    Variant("relu_rmspre_3l_parallel_zero_bias", dict(act_fn="relu", normalization_type="RMSPre",
                                                      parallel_attn_mlp=True, n_layers=3),
            random_biases=False, seed=13),
    Variant("gelu_lnpre_1l_heads3_dhead3", dict(act_fn="gelu", normalization_type="LNPre",
                                                n_heads=3, d_head=3, eps=1e-2), seed=14,
            seq_len=5),
    Variant("relu_ln_1l_hook_only_flags", dict(act_fn="relu", use_attn_result=True,
                                               use_split_qkv_input=True, use_hook_mlp_in=True,
                                               use_hook_tokens=True), seed=15),
    Variant("relu_ln_2l_final_rms", dict(act_fn="relu", n_layers=2, final_rms=True), seed=16),
    Variant("gelu_pytorch_tanh_lnpre_1l_final_rms", dict(act_fn="gelu_pytorch_tanh",
                                                         normalization_type="LNPre",
                                                         final_rms=True), seed=17),
    Variant("silu_ln_1l_vocab_out_4", dict(act_fn="silu", d_vocab_out=4), seed=18),
)

UNSUPPORTED = (
    Variant("rotary", dict(positional_embedding_type="rotary")),
    Variant("alibi", dict(positional_embedding_type="alibi")),
    Variant("shortformer", dict(positional_embedding_type="shortformer")),
    Variant("local_window", dict(use_local_attn=True, window_size=3, attn_types=["local"])),
    Variant("attn_scores_soft_cap", dict(attn_scores_soft_cap=2.0)),
    Variant("output_logits_soft_cap", dict(output_logits_soft_cap=2.0)),
    Variant("grouped_query_attention", dict(n_key_value_heads=1)),
    Variant("gated_mlp", dict(gated_mlp=True)),
    Variant("act_solu_ln", dict(act_fn="solu_ln")),
    Variant("act_solu", dict(act_fn="solu")),
    Variant("act_gelu_fast", dict(act_fn="gelu_fast")),
    Variant("act_xielu", dict(act_fn="xielu")),
    Variant("act_relu2", dict(act_fn="relu2")),
    Variant("scale_attn_by_inverse_layer_idx", dict(scale_attn_by_inverse_layer_idx=True,
                                                    n_layers=2)),
    Variant("qk_norm", dict(use_qk_norm=True)),
    Variant("clip_qkv", dict(clip_qkv=0.5)),
    Variant("logn_attn", dict(use_logn_attn=True, train_seq_length=4)),
    Variant("attention_sinks", dict(use_attention_sinks=True)),
    Variant("post_embedding_ln", dict(post_embedding_ln=True)),
    Variant("norm_before_and_after_rms", dict(normalization_type="RMS",
                                              use_normalization_before_and_after=True)),
    Variant("mixture_of_experts", dict(num_experts=2, experts_per_token=1)),
    Variant("post_norm_olmo2", dict(original_architecture="Olmo2ForCausalLM",
                                    normalization_type="RMS")),
)

# The same model without the feature (defaults for its overrides, except these kept ones and
# FEATURE_FREE), for measuring that the feature changes the logits.
KEPT_WITHOUT_FEATURE = ("n_layers", "normalization_type")
FEATURE_FREE = {
    "local_window": dict(use_local_attn=False, window_size=None, attn_types=None),
    "logn_attn": dict(use_logn_attn=False),
    "norm_before_and_after_rms": dict(use_normalization_before_and_after=False),
    "post_norm_olmo2": dict(original_architecture=None),
}


def make_config(variant: Variant):
    """The variant's HookedTransformerConfig (BASE with its overrides)."""
    import torch
    from transformer_lens import HookedTransformerConfig

    settings = {**BASE, **variant.overrides, "seed": variant.seed}
    settings["dtype"] = getattr(torch, settings["dtype"])
    return HookedTransformerConfig(**settings)


def perturb(model, variant: Variant) -> None:
    """Give norm weights seeded noise around 1 and, for random-bias variants, every bias noise."""
    import torch

    generator = torch.Generator().manual_seed(1000 + variant.seed)
    with torch.no_grad():
        for name, parameter in model.named_parameters():
            leaf = name.rsplit(".", 1)[-1]
            is_norm_weight = leaf == "w"
            is_bias = leaf.startswith("b_") or leaf == "b" or leaf.startswith("_b_")
            noise = torch.randn(parameter.shape, generator=generator, dtype=parameter.dtype)
            if is_norm_weight:
                parameter.add_(NORM_WEIGHT_SCALE * noise)
            elif is_bias and variant.random_biases:
                parameter.add_(BIAS_SCALE * noise)


def build_model(variant: Variant):
    """The seeded float64 model of a variant, with its norm weights and biases perturbed."""
    from transformer_lens import HookedTransformer

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        model = HookedTransformer(make_config(variant))
    model.eval()
    perturb(model, variant)
    return model


def make_tokens(variant: Variant, d_vocab: int):
    """BATCH seeded token sequences of the variant's length."""
    import torch

    generator = torch.Generator().manual_seed(2000 + variant.seed)
    return torch.randint(0, d_vocab, (BATCH, variant.seq_len), generator=generator)
