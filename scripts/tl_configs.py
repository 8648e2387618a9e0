"""Seeded TransformerLens HookedTransformer configs and float64 fixtures for the TL importer.

Run: `python scripts/tl_configs.py [--out tests/data/tl] [--check-unsupported]` in an
environment with transformer-lens 3.x and torch. satsim is never imported here: the fixtures
are TransformerLens's own numbers, the oracle the importer is checked against.

Each fixture `<name>.npz` holds:
  `config_json`  the config's shape, forward and hook-only fields (FIXTURE_FIELDS) as JSON;
  `tokens`       int64 [batch, pos] token ids (fed as a tensor: no BOS is prepended);
  `logits`       float64 [batch, pos, d_vocab_out] from `run_with_cache`;
  `param/<key>`  every entry of `model.state_dict()` (buffers `attn.mask`, `attn.IGNORE` too);
  `cache/<hook>` every activation `run_with_cache` recorded, in hook order (see `hook_order`).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import warnings
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch
from transformer_lens import HookedTransformer, HookedTransformerConfig

SHAPE_FIELDS = (
    "d_model", "d_head", "n_heads", "n_layers", "n_ctx", "d_mlp", "d_vocab", "d_vocab_out",
    "n_key_value_heads",
)
FORWARD_FIELDS = (
    "act_fn", "normalization_type", "eps", "attn_only", "parallel_attn_mlp", "use_attn_scale",
    "attn_scale", "attention_dir", "positional_embedding_type", "final_rms", "post_embedding_ln",
    "gated_mlp", "num_experts", "experts_per_token", "use_local_attn", "window_size",
    "attn_types", "attn_scores_soft_cap", "output_logits_soft_cap",
    "scale_attn_by_inverse_layer_idx", "use_qk_norm", "clip_qkv", "use_logn_attn",
    "train_seq_length", "use_attention_sinks", "use_normalization_before_and_after",
    "original_architecture", "ungroup_grouped_query_attention", "load_in_4bit", "rotary_dim",
    "rotary_base", "rotary_base_local", "rotary_scaling_factor", "rotary_adjacent_pairs",
    "use_NTK_by_parts_rope", "use_yarn_rope", "use_dynamic_ntk_rope", "dtype",
)
HOOK_ONLY_FIELDS = (
    "use_attn_result", "use_split_qkv_input", "use_attn_in", "use_hook_mlp_in", "use_hook_tokens",
)
FIXTURE_FIELDS = SHAPE_FIELDS + FORWARD_FIELDS + HOOK_ONLY_FIELDS

BASE = dict(
    d_model=8, d_head=4, n_heads=2, n_layers=1, n_ctx=8, d_vocab=6, d_mlp=12,
    dtype=torch.float64, device="cpu", init_mode="gpt2", initializer_range=0.7,
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
    Variant("act_gelu_pytorch_tanh", dict(act_fn="gelu_pytorch_tanh")),
    Variant("act_xielu", dict(act_fn="xielu")),
    Variant("act_relu2", dict(act_fn="relu2")),
    Variant("scale_attn_by_inverse_layer_idx", dict(scale_attn_by_inverse_layer_idx=True,
                                                    n_layers=2)),
    Variant("qk_norm", dict(use_qk_norm=True)),
    Variant("clip_qkv", dict(clip_qkv=0.5)),
    Variant("logn_attn", dict(use_logn_attn=True, train_seq_length=4)),
    Variant("attention_sinks", dict(use_attention_sinks=True)),
    Variant("post_embedding_ln", dict(post_embedding_ln=True)),
    Variant("final_rms_with_ln", dict(final_rms=True)),
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


def make_config(variant: Variant) -> HookedTransformerConfig:
    """The variant's HookedTransformerConfig (BASE with its overrides)."""
    return HookedTransformerConfig(**{**BASE, **variant.overrides, "seed": variant.seed})


def perturb(model: HookedTransformer, variant: Variant) -> None:
    """Give norm weights seeded noise around 1 and, for random-bias variants, every bias noise."""
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


def build_model(variant: Variant) -> HookedTransformer:
    """The seeded float64 model of a variant, with its norm weights and biases perturbed."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        model = HookedTransformer(make_config(variant))
    model.eval()
    perturb(model, variant)
    return model


def make_tokens(variant: Variant, d_vocab: int) -> torch.Tensor:
    """BATCH seeded token sequences of the variant's length."""
    generator = torch.Generator().manual_seed(2000 + variant.seed)
    return torch.randint(0, d_vocab, (BATCH, variant.seq_len), generator=generator)


def config_json(cfg: HookedTransformerConfig) -> str:
    """The fixture fields of a config as JSON (dtype as its torch name)."""
    values = {name: getattr(cfg, name) for name in FIXTURE_FIELDS}
    values["dtype"] = str(values["dtype"]).removeprefix("torch.")
    return json.dumps(values, sort_keys=True)


def fixture_arrays(variant: Variant) -> dict[str, np.ndarray]:
    """The arrays of a variant's fixture: config, tokens, logits, state dict and cache."""
    model = build_model(variant)
    tokens = make_tokens(variant, model.cfg.d_vocab)
    with torch.no_grad():
        logits, cache = model.run_with_cache(tokens)
    arrays = {
        "config_json": np.array(config_json(model.cfg)),
        "hook_order": np.array(list(cache.keys())),
        "tokens": tokens.numpy().astype(np.int64),
        "logits": logits.numpy(),
    }
    arrays.update({f"param/{k}": v.numpy() for k, v in model.state_dict().items()})
    arrays.update({f"cache/{k}": v.numpy() for k, v in cache.items()})
    return arrays


def write_fixtures(out: Path) -> int:
    """Write one .npz per supported variant into out; print and return the total bytes."""
    out.mkdir(parents=True, exist_ok=True)
    total = 0
    for variant in SUPPORTED:
        path = out / f"{variant.name}.npz"
        np.savez_compressed(path, **fixture_arrays(variant))
        size = path.stat().st_size
        total += size
        print(f"{path}  {size} bytes")
    print(f"total {total} bytes in {len(SUPPORTED)} fixtures")
    return total


def logits_of(model: HookedTransformer, tokens: torch.Tensor) -> torch.Tensor:
    """The model's logits on tokens, without gradients."""
    with torch.no_grad():
        return model(tokens)


def feature_effect(variant: Variant) -> str:
    """Build an unsupported variant, run it, and measure how far the feature moves the logits."""
    model = build_model(variant)
    tokens = make_tokens(variant, model.cfg.d_vocab)
    defaults = {f.name: f.default for f in dataclasses.fields(HookedTransformerConfig)}
    without = {k: defaults[k] for k in variant.overrides if k not in KEPT_WITHOUT_FEATURE}
    without.update({k: variant.overrides[k] for k in KEPT_WITHOUT_FEATURE
                    if k in variant.overrides})
    without.update(FEATURE_FREE.get(variant.name, {}))
    reference = build_model(Variant(variant.name + "_without", without, seed=variant.seed))
    own, theirs = model.state_dict(), reference.state_dict()
    shared = {k: v for k, v in own.items() if k in theirs and theirs[k].shape == v.shape}
    reference.load_state_dict(shared, strict=False)
    difference = (logits_of(model, tokens) - logits_of(reference, tokens)).abs().max().item()
    note = f"max|dlogits|={difference:.3g}"
    only_with, only_without = sorted(set(own) - set(shared)), sorted(set(theirs) - set(shared))
    if only_with or only_without:
        note += f"  params only with the feature={only_with}  only without={only_without}"
    return note


def check_unsupported() -> None:
    """Print, per unsupported variant, whether it builds and runs and what the feature changes."""
    for variant in UNSUPPORTED:
        try:
            print(f"{variant.name}: {feature_effect(variant)}")
        except Exception as error:  # report every failure and go on to the next
            print(f"{variant.name}: FAILS {type(error).__name__}: {error}".splitlines()[0])


def main() -> None:
    """Write the supported fixtures; optionally report on the unsupported variants."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("tests/data/tl"))
    parser.add_argument("--check-unsupported", action="store_true")
    args = parser.parse_args()
    write_fixtures(args.out)
    if args.check_unsupported:
        check_unsupported()


if __name__ == "__main__":
    main()
