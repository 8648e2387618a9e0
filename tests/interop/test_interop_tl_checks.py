"""The TransformerLens import checks itself: accepted imports are exact, the rest are refused.

Real HookedTransformers (marked ``transformer_lens``; they fail, not skip, without the extra):
the cases issue 25 found accepted and wrong (a folded model with final_rms, clip_qkv=0.0,
permanent hooks, a config edited after the model was built, a negative attn_scale), the probe
on its own, and a hypothesis search that edits configs and adds hooks on small random models and
asserts that every import is refused in one line or matches TransformerLens's logits on fresh
inputs, through the soft twin and through the simulator's softmax.
"""

import warnings

import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from satsim.engine.batch import forward_batch
from satsim.errors import SatsimError
from satsim.interop import from_transformer_lens, tl_probe
from satsim.interop import transformer_lens as importer
from satsim.interop.tl_probe import check_against_transformer_lens
from satsim.model.settings import AttentionSettings
from satsim.soft import SoftTransformer

pytestmark = [pytest.mark.transformer_lens, pytest.mark.usefixtures("one_torch_thread")]

EXACT = 1e-9
"""Largest |Δlogit| of an accepted float64 import, relative to the largest |logit| (or 1)."""


def build(**overrides):
    """A seeded float64 HookedTransformer (2 layers, d_model 8, random biases and norm weights)."""
    from transformer_lens import HookedTransformer, HookedTransformerConfig

    config = dict(d_model=8, d_head=4, n_heads=2, n_layers=2, n_ctx=8, d_vocab=6, d_mlp=12,
                  act_fn="relu", dtype=torch.float64, seed=3, init_mode="gpt2",
                  initializer_range=0.7)
    config.update(overrides)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = HookedTransformer(HookedTransformerConfig(**config))
    generator = torch.Generator().manual_seed(7)
    with torch.no_grad():
        for name, parameter in model.named_parameters():
            if not name.endswith(("W_Q", "W_K", "W_V", "W_O", "W_in", "W_out", "W_E", "W_U")):
                parameter.add_(0.3 * torch.randn(parameter.shape, generator=generator,
                                                 dtype=parameter.dtype))
    return model.eval()


def refusal(model, **options) -> str:
    """The one-line message of the import's refusal (the test fails if it imports)."""
    with pytest.raises(SatsimError) as error:
        from_transformer_lens(model, **options)
    message = str(error.value)
    assert "\n" not in message
    return message


def max_logit_error(model, spec, tokens: torch.Tensor) -> float:
    """max |Δlogit| / max(1, max |logit|) of the twin and of the simulator against TL's."""
    with torch.no_grad():
        theirs = model(tokens).double().numpy()
        twin = SoftTransformer.from_spec(spec, device="cpu")(tokens).logits.double().numpy()
    simulated = forward_batch(spec, list(tokens.numpy()), AttentionSettings("softmax")).logits
    scale = max(1.0, float(np.abs(theirs).max()))
    return max(float(np.abs(ours - theirs).max()) for ours in (twin, simulated)) / scale


def fresh_tokens(model, seed: int = 0) -> torch.Tensor:
    """Three random sequences of the model's full length (not the probe's)."""
    generator = torch.Generator().manual_seed(1000 + seed)
    return torch.randint(0, model.cfg.d_vocab, (3, model.cfg.n_ctx), generator=generator)


# The cases issue 25 found accepted and wrong: each refused in one line, naming what differs.
def test_a_folded_model_whose_final_norm_was_replaced_is_refused_by_final_rms():
    model = build(final_rms=True)
    model.process_weights_()  # ln_final becomes LayerNormPre; cfg.final_rms stays True
    assert "setting final_rms=True disagrees" in refusal(model)
    assert "ln_final is LayerNormPre" in refusal(model)


def test_clip_qkv_zero_is_on_and_refused():
    assert "setting clip_qkv=0.0 is not supported" in refusal(build(clip_qkv=0.0))


def test_a_permanent_hook_is_refused_naming_its_hook_point():
    model = build()
    model.add_hook("blocks.1.attn.hook_pattern", lambda pattern, hook: 0.5 * pattern,
                   is_permanent=True)
    assert refusal(model).startswith("blocks.1.attn.hook_pattern has a forward hook")
    model.reset_hooks(including_permanent=True)
    model.blocks[0].mlp.register_forward_hook(lambda module, inputs, output: output + 1)
    assert refusal(model).startswith("blocks.0.mlp has a forward hook")


@pytest.mark.parametrize("field, value, named", [
    ("eps", 1e-3, "blocks.0.ln1.eps is 1e-05"),
    ("act_fn", "gelu", "blocks.0.mlp.act_fn is relu"),
    ("final_rms", True, "ln_final is LayerNorm"),
    ("normalization_type", "RMS", "blocks.0.ln1 is LayerNorm"),
    ("attn_scale", 3.0, "divides the scores by 2"),
])
def test_a_config_edited_after_the_model_was_built_is_refused_by_the_field(field, value, named):
    model = build()
    setattr(model.cfg, field, value)
    message = refusal(model)
    assert message.startswith(f"TransformerLens setting {field}={value!r} disagrees")
    assert named in message


def test_a_module_replaced_after_the_model_was_built_is_refused():
    model = build()
    model.blocks[0].mlp.act_fn = torch.nn.functional.gelu
    assert "blocks.0.mlp.act_fn is gelu" in refusal(model)
    model = build()
    model.blocks[1].ln2 = torch.nn.LayerNorm(8, dtype=torch.float64)
    assert "blocks.1.ln2 is a LayerNorm, not a module TransformerLens builds" in refusal(model)
    model = build()
    model.blocks[0].attn.IGNORE.fill_(-1e4)
    assert "blocks.0.attn.IGNORE is -10000.0, not -inf" in refusal(model)


def test_a_negative_attn_scale_is_refused_naming_the_field():
    message = refusal(build(attn_scale=-2.0))
    assert message.startswith("TransformerLens setting attn_scale=-2.0 is not supported")


# The probe on its own: it catches what the structural checks are bypassed for.
def test_the_probe_catches_a_hook_and_names_where_the_runs_part():
    model = build()
    spec = from_transformer_lens(model)
    model.add_hook("blocks.1.hook_resid_mid", lambda x, hook: x.roll(1, -1), is_permanent=True)
    with pytest.raises(SatsimError) as error:
        check_against_transformer_lens(model, spec)
    message = str(error.value)
    assert "\n" not in message and "first at blocks.1.hook_resid_mid" in message
    model.reset_hooks(including_permanent=True)
    model.add_hook("unembed.hook_out", lambda logits, hook: logits + 1e-6, is_permanent=True)
    with pytest.raises(SatsimError, match="differ by up to 1e-06 .* first at unembed.hook_out"):
        check_against_transformer_lens(model, spec)
    model.reset_hooks(including_permanent=True)
    check_against_transformer_lens(model, spec)


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32, torch.bfloat16, torch.float16])
def test_the_probe_catches_a_mask_value_the_state_dict_does_not_hold(dtype):
    # in bfloat16 and float16 the model's own rounding (up to half the logits' scale) hid it:
    # those are checked as a float32 copy of the model
    model = build(dtype=dtype, n_ctx=16, d_model=32, d_head=8, n_heads=4)
    spec = from_transformer_lens(model)
    model.blocks[0].attn.IGNORE.fill_(-1.0)  # a buffer: not in what the importer reads
    with pytest.raises(SatsimError, match="first at blocks.0.attn.hook_attn_scores"):
        check_against_transformer_lens(model, spec)
    assert next(model.parameters()).dtype == model.cfg.dtype == dtype  # the copy was checked


def _one_position(x, hook):
    """A hook's edit of one entry at one position (5, or the last there is) by 0.01."""
    x = x.clone()
    x[:, min(5, x.shape[1] - 1), ..., 0] += 0.01
    return x


def test_a_plain_model_is_checked_without_unembedding_every_position(monkeypatch):
    def full_run(*args):
        raise AssertionError("the full logits were compared")

    model = build(n_ctx=40)
    assert tl_probe._per_position_tail(model)
    assert 5 not in tl_probe.sampled_positions(40)
    monkeypatch.setattr(tl_probe._Twins, "logits", full_run)
    from_transformer_lens(model)


@pytest.mark.parametrize("hook", ["blocks.1.hook_resid_post", "ln_final.hook_normalized",
                                  "unembed.hook_in", "unembed.hook_out"])
def test_an_edit_at_a_position_the_comparison_does_not_unembed_is_refused(hook):
    model = build(n_ctx=40)
    spec = from_transformer_lens(model)
    model.add_hook(hook, _one_position, is_permanent=True)
    assert tl_probe._per_position_tail(model) == (hook != "unembed.hook_out")
    with pytest.raises(SatsimError, match=f"first at {hook}"):
        check_against_transformer_lens(model, spec)


def test_a_replaced_unembedding_forward_sends_the_check_to_the_full_logits():
    from transformer_lens.components import Unembed

    model = build(n_ctx=40)
    spec = from_transformer_lens(model)
    model.unembed.forward = lambda residual: _one_position(Unembed.forward(model.unembed,
                                                                          residual), 0)
    assert not tl_probe._per_position_tail(model)
    with pytest.raises(SatsimError, match="differ by up to 0.01"):
        check_against_transformer_lens(model, spec)


def test_a_forward_hook_on_the_model_itself_sends_the_check_to_the_full_logits():
    model = build(n_ctx=40)
    spec = from_transformer_lens(model)
    handle = model.register_forward_hook(lambda module, inputs, logits: _one_position(logits, 0))
    assert not tl_probe._per_position_tail(model)
    with pytest.raises(SatsimError, match="differ by up to 0.01"):
        check_against_transformer_lens(model, spec)
    handle.remove()
    handle = model.register_forward_hook(lambda module, inputs, logits: None)
    check_against_transformer_lens(model, spec)
    handle.remove()


def test_check_false_skips_the_probe(monkeypatch):
    def probe(model, spec):
        raise AssertionError("the probe ran")

    monkeypatch.setattr(importer, "check_against_transformer_lens", probe)
    model = build()
    from_transformer_lens(model, check=False)
    with pytest.raises(AssertionError, match="the probe ran"):
        from_transformer_lens(model)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_narrower_models_pass_their_own_probe(dtype):
    spec = from_transformer_lens(build(dtype=dtype, n_ctx=16, d_model=32, d_head=8, n_heads=4))
    assert spec.dtype == np.float32


def test_a_folded_model_without_final_rms_imports_exactly():
    model = build(normalization_type="RMS")
    model.process_weights_()
    spec = from_transformer_lens(model)
    assert spec.blocks[0].ln1.w is None and spec.ln_final.kind == "rms"
    assert max_logit_error(model, spec, fresh_tokens(model)) <= EXACT


# The search: config edits before and after construction, and hooks, on random small models.
BUILT_WITH = {
    "normalization_type": st.sampled_from(["LN", "LNPre", "RMS", "RMSPre", None]),
    "act_fn": st.sampled_from(["relu", "gelu", "gelu_new", "silu", "gelu_pytorch_tanh",
                               "gelu_fast", "solu"]),
    "eps": st.sampled_from([1e-5, 1e-3, 1e-12, 0.5]),
    "final_rms": st.booleans(),
    "attn_only": st.booleans(),
    "attention_dir": st.sampled_from(["causal", "bidirectional"]),
    "use_attn_scale": st.booleans(),
    "attn_scale": st.sampled_from([-1.0, 1.5, -2.0]),
    "clip_qkv": st.sampled_from([None, 0.0, 0.4, 100.0]),
    "output_logits_soft_cap": st.sampled_from([-1.0, 0.0, 3.0]),
    "use_attn_result": st.booleans(),
}
EDITED = {
    "eps": st.sampled_from([1e-5, 1e-4]),
    "act_fn": st.sampled_from(["relu", "gelu", "silu"]),
    "final_rms": st.booleans(),
    "normalization_type": st.sampled_from(["LN", "RMS", None]),
    "attention_dir": st.sampled_from(["causal", "bidirectional"]),
    "attn_scale": st.sampled_from([1.0, 2.0]),
    "clip_qkv": st.sampled_from([None, 0.0]),
    "attn_only": st.booleans(),
    "use_hook_tokens": st.booleans(),
}
HOOKS = ["hook_embed", "blocks.0.hook_resid_pre", "blocks.0.attn.hook_q",
         "blocks.0.attn.hook_pattern", "blocks.0.hook_attn_out", "blocks.1.hook_mlp_out",
         "blocks.1.hook_resid_post", "ln_final.hook_normalized", "unembed.hook_in",
         "unembed.hook_out"]
EFFECTS = {"observe": lambda x, hook: None, "scale": lambda x, hook: 1.01 * x,
           "shift": lambda x, hook: x + 1e-7, "one position": _one_position}


def draw_model(data, fields=tuple(BUILT_WITH), edits=True, lengths=(8, 40)):
    """A random small model, its config maybe edited after construction, maybe folded (or None).

    At n_ctx 40 the probe unembeds some positions only (the rest are bounded through the
    streams the unembedding reads).
    """
    built = {field: data.draw(BUILT_WITH[field], label=field) for field in fields
             if data.draw(st.booleans(), label=f"set {field}")}
    built["n_ctx"] = data.draw(st.sampled_from(lengths), label="n_ctx")
    try:
        model = build(seed=data.draw(st.integers(0, 99), label="seed"), **built)
    except Exception:  # TransformerLens rejects the combination itself
        return None
    for field, strategy in EDITED.items() if edits else ():
        if data.draw(st.integers(0, 5), label=f"edit {field}") == 0:
            setattr(model.cfg, field, data.draw(strategy, label=field))
    if data.draw(st.integers(0, 3), label="fold") == 0 and model.cfg.normalization_type:
        try:
            model.process_weights_()
        except Exception:  # TransformerLens cannot fold this model
            return None
    return model


def add_hooks(data, model, least: int = 0) -> None:
    """``least`` to two permanent hooks, each observing or editing its activation."""
    hooks = st.lists(st.sampled_from(HOOKS), min_size=least, max_size=2)
    for hook in data.draw(hooks, label="hooks"):
        if hook in model.hook_dict:
            effect = data.draw(st.sampled_from(sorted(EFFECTS)), label=hook)
            model.add_hook(hook, EFFECTS[effect], is_permanent=True)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_every_import_of_an_edited_or_hooked_model_is_refused_or_exact(data):
    model = draw_model(data)
    if model is None:
        return
    add_hooks(data, model)
    try:
        spec = from_transformer_lens(model)
    except SatsimError as error:
        assert "\n" not in str(error)
        return
    assert max_logit_error(model, spec, fresh_tokens(model, model.cfg.n_ctx)) <= EXACT


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_the_probe_alone_refuses_or_passes_exactly_a_model_hooked_after_import(data):
    model = draw_model(data, ("normalization_type", "act_fn", "eps", "attn_only",
                              "attention_dir", "use_attn_result"), edits=False, lengths=(40,))
    try:
        spec = from_transformer_lens(model) if model is not None else None
    except SatsimError:
        spec = None
    if spec is None:
        return
    add_hooks(data, model, least=1)
    try:
        check_against_transformer_lens(model, spec)
    except SatsimError as error:
        assert "\n" not in str(error)
        return
    assert max_logit_error(model, spec, fresh_tokens(model, model.cfg.n_ctx)) <= EXACT
