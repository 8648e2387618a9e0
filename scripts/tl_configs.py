"""Seeded TransformerLens HookedTransformer configs and float64 fixtures for the TL importer.

The configs are in tests/support/tl_variants.py (the live tests build them too).

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
import sys
from pathlib import Path

import numpy as np
import torch
from transformer_lens import HookedTransformer, HookedTransformerConfig

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests" / "support"))
from tl_variants import (  # noqa: E402  (the configs live beside the tests that use them)
    FEATURE_FREE,
    KEPT_WITHOUT_FEATURE,
    SUPPORTED,
    UNSUPPORTED,
    Variant,
    build_model,
    make_tokens,
)

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
