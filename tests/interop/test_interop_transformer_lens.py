"""Importing TransformerLens HookedTransformers: exact against TransformerLens, refusals, limit.

The oracle is TransformerLens 3.9.0 itself: its float64 logits and every hook, stored in
tests/data/tl by scripts/tl_configs.py (always run), and real models built from the same configs
(marked ``transformer_lens``; they fail, not skip, without the extra). A fixture's model object
cannot run, so it is imported without the check against the model (``check=False``); the real
models are imported with it. tests/interop/test_interop_tl_checks.py holds the checks themselves.
"""

import dataclasses
import warnings

import numpy as np
import pytest
import torch

from satsim.engine.batch import forward_batch
from satsim.errors import SatsimError
from satsim.interop import from_transformer_lens
from satsim.model.settings import AttentionSettings
from satsim.saturation import limit_signs
from satsim.soft import SoftTransformer
from tests.support.tl_fixtures import NAMES, load, with_settings
from tests.support.tl_variants import SUPPORTED, UNSUPPORTED, Variant, build_model, make_tokens

pytestmark = pytest.mark.usefixtures("one_torch_thread")

ROUNDING = 1e-12
"""Largest error relative to the largest magnitude of a compared activation."""

NOT_IN_THE_TWIN = ("hook_scale", "hook_result", "hook_q_input", "hook_k_input", "hook_v_input",
                   "hook_attn_in", "hook_mlp_in", "hook_tokens")
"""TransformerLens hooks the soft twin does not record (the rest must match)."""


def imported(model, **settings):
    """The spec of a fixture's model object, which cannot run: without the self-check."""
    return from_transformer_lens(model, check=False, **settings)


def test_a_model_that_cannot_run_is_not_imported_unchecked():
    with pytest.raises(SatsimError, match="cannot be run to check the import against"):
        from_transformer_lens(load("relu_ln_2l").model)


def relative_error(ours: np.ndarray, theirs: np.ndarray) -> float:
    """max |ours − theirs| / max |theirs| over finite entries; masked (−inf) entries must agree."""
    assert ours.shape == theirs.shape
    masked = np.isneginf(theirs)
    assert np.array_equal(np.isneginf(ours), masked)
    if masked.all():
        return 0.0
    scale = max(np.abs(theirs[~masked]).max(), 1e-300)
    return float(np.abs(ours[~masked] - theirs[~masked]).max() / scale)


def twin_hooks(spec, tokens):
    """The float64 soft twin's logits and hooks on token ids (the final stream as unembed.*)."""
    twin = SoftTransformer.from_spec(spec, device="cpu")
    with torch.no_grad():
        run = twin(torch.from_numpy(tokens), cache=True)
    hooks = {name: value.detach().numpy() for name, value in run.cache.items()}
    hooks["unembed.hook_in"] = run.final.detach().numpy()
    hooks["unembed.hook_out"] = run.logits.detach().numpy()
    return hooks["unembed.hook_out"], hooks


def simulator_logits(spec, tokens):
    """The simulator's logits with softmax attention at β = 1."""
    ids = [np.asarray(row) for row in tokens]
    return forward_batch(spec, ids, AttentionSettings("softmax", beta=1.0)).logits


def compare(spec, tokens, logits, cache):
    """Errors of the twin's and the simulator's logits, and the twin's hooks, against TL's."""
    twin_logits, hooks = twin_hooks(spec, tokens)
    errors = {"twin logits": relative_error(twin_logits, logits),
              "simulator logits": relative_error(simulator_logits(spec, tokens), logits)}
    for name, theirs in cache.items():
        if name.endswith(NOT_IN_THE_TWIN):
            continue
        if name.endswith("ln1.hook_normalized") and theirs.ndim == 4:
            theirs = theirs[:, :, 0]  # use_split_qkv_input: one copy per head, all equal
        errors[name] = relative_error(hooks[name], theirs)
    return errors


@pytest.mark.parametrize("name", NAMES)
def test_the_soft_twin_and_the_simulator_match_transformer_lens_to_rounding(name):
    fixture = load(name)
    spec = imported(fixture.model)
    assert spec.dtype == np.float64
    errors = compare(spec, fixture.tokens, fixture.logits, fixture.cache)
    worst = max(errors, key=errors.get)
    assert errors[worst] <= ROUNDING, (worst, errors[worst])
    assert len(errors) >= 2 + sum(not n.endswith(NOT_IN_THE_TWIN) for n in fixture.cache)


def test_the_fixtures_cover_the_acceptance_configs():
    cfgs = [load(name).model.cfg for name in NAMES]
    assert len(cfgs) >= 12
    assert {c.normalization_type for c in cfgs} >= {"LN", "LNPre", "RMS", "RMSPre", None}
    assert {c.act_fn for c in cfgs if not c.attn_only} >= {"relu", "gelu", "gelu_new", "silu"}
    assert {c.n_layers for c in cfgs} == {1, 2, 3}
    assert {c.attention_dir for c in cfgs} == {"causal", "bidirectional"}
    assert {c.attn_only for c in cfgs} == {True, False}
    assert any(c.parallel_attn_mlp for c in cfgs) and any(c.final_rms for c in cfgs)
    divisors = {c.attn_scale if c.use_attn_scale else 1.0 for c in cfgs}
    assert {1.0, 1.7, 2.0} <= divisors  # off, custom, √d_head


def test_the_spec_reads_like_the_model():
    fixture = load("silu_rms_2l_attn_scale_1.7")
    spec = imported(fixture.model, name="tiny")
    assert spec.name == "tiny" and spec.vocab == tuple("012345")
    assert spec.output.labels == tuple("012345") and spec.bos is None and spec.eos is None
    assert spec.output.task == "categorical" and spec.output.readout == "per-position"
    assert spec.norm == "pre" and spec.ln_final.kind == "rms" and spec.ln_final.b is None
    assert spec.blocks[0].attn.score_scale == pytest.approx(1 / 1.7)
    assert spec.blocks[0].mlp.activation == "silu" and spec.blocks[0].ln1.eps == 1e-5
    assert spec.positional.W_pos.shape == (8, 8)
    zero_bias = imported(load("silu_rmspre_1l_zero_bias").model)
    assert zero_bias.blocks[0].attn.b_Q is not None and not zero_bias.blocks[0].attn.b_Q.any()


def test_an_output_vocabulary_of_its_own_gives_its_own_labels():
    fixture = load("silu_ln_1l_vocab_out_4")
    spec = imported(fixture.model)
    assert spec.vocab == tuple("012345") and spec.output.labels == tuple("0123")
    assert fixture.logits.shape[-1] == 4


def test_a_setting_the_importer_does_not_know_is_refused_unless_at_its_default():
    cfg = vars(load("relu_ln_2l").model.cfg)
    fields = [(name, object, dataclasses.field(default=value)) for name, value in cfg.items()]
    newer = dataclasses.make_dataclass("NewerConfig", [*fields, ("use_new_trick", bool, False)])
    model = with_settings(load("relu_ln_2l"))
    model.cfg = newer(use_new_trick=False)
    imported(model)
    model.cfg = newer(use_new_trick=True)
    with pytest.raises(SatsimError, match="use_new_trick=True .* does not know"):
        imported(model)


def test_a_transformer_bridge_is_refused_by_name():
    bridge = type("TransformerBridge", (), {"cfg": load("relu_ln_2l").model.cfg})()
    with pytest.raises(SatsimError, match="TransformerBridge is not supported"):
        imported(bridge)


def test_a_float32_model_gives_a_float32_spec():
    fixture = load("relu_ln_2l")
    state = {k: v.float() if v.is_floating_point() else v
             for k, v in fixture.model.state_dict().items()}
    model = with_settings(fixture)
    model._state = state
    spec = imported(model)
    assert spec.dtype == np.float32
    np.testing.assert_array_equal(spec.W_E, state["embed.W_E"].numpy())


def test_weights_the_config_does_not_explain_are_refused():
    fixture = load("relu_ln_2l")
    model = with_settings(fixture)
    model._state["blocks.0.mlp.W_gate"] = torch.zeros(8, 12, dtype=torch.float64)
    with pytest.raises(SatsimError, match=r"has 'blocks.0.mlp.W_gate', which .* does not use"):
        imported(model)
    model = with_settings(fixture)
    del model._state["blocks.1.ln2.b"]
    with pytest.raises(SatsimError, match="no 'blocks.1.ln2.b'"):
        imported(model)


# The refusals without transformer-lens: a fixture's config with one setting changed.
@pytest.mark.parametrize("setting, value, named", [
    ("positional_embedding_type", "rotary", "rotary positions"),
    ("positional_embedding_type", "alibi", "ALiBi"),
    ("positional_embedding_type", "shortformer", "query and key inputs only"),
    ("use_local_attn", True, "local attention windows"),
    ("use_local_attn", "yes", "local attention windows"),
    ("attn_scores_soft_cap", 2.0, "soft cap on attention scores"),
    ("output_logits_soft_cap", 2.0, "soft cap on the logits"),
    ("n_key_value_heads", 1, "grouped-query attention"),
    ("n_key_value_heads", 0, "grouped-query attention"),
    ("gated_mlp", True, "gated MLP"),
    ("act_fn", "solu_ln", "SoLU followed by a LayerNorm"),
    ("act_fn", "gelu_fast", "10-digit constant"),
    ("scale_attn_by_inverse_layer_idx", True, "grows with the layer"),
    ("original_architecture", "Olmo2ForCausalLM", "post-norm"),
    ("positional_embedding_type", "relative_positional_bias", "T5"),
    ("act_fn", "solu", "SoLU"),
    ("act_fn", "xielu", "xIELU"),
    ("act_fn", "relu2", "squared ReLU"),
    ("use_qk_norm", True, "RMSNorm on queries and keys"),
    ("clip_qkv", 0.5, "clamped"),
    ("clip_qkv", 0.0, "clamped"),
    ("attn_scale", -2.0, "not a positive number"),
    ("attn_scale", 0.0, "not a positive number"),
    ("parallel_attn_mlp", True, "an MLP the model does not have"),
    ("use_logn_attn", True, "log-length"),
    ("use_attention_sinks", True, "sinks"),
    ("post_embedding_ln", True, "after the embedding"),
    ("use_normalization_before_and_after", True, "sublayer outputs"),
    ("num_experts", 2, "mixture of experts"),
    ("load_in_4bit", True, "4-bit"),
    ("normalization_type", "LNPost", "unknown norm"),
])
def test_each_unsupported_setting_is_a_one_line_error_naming_it(setting, value, named):
    base = "attn_only_ln_1l" if setting == "parallel_attn_mlp" else "relu_ln_2l"
    model = with_settings(load(base), **{setting: value})
    with pytest.raises(SatsimError) as error:
        imported(model)
    message = str(error.value)
    assert "\n" not in message and f"{setting}={value!r}" in message and named in message


# Each field "on" by TransformerLens's own test of it: these values leave the forward unchanged.
@pytest.mark.parametrize("setting, value", [
    ("use_local_attn", 0),  # `if not cfg.use_local_attn`
    ("attn_scores_soft_cap", 0.0),  # `cap is not None and cap > 0`
    ("output_logits_soft_cap", -1.0),
    ("num_experts", 0),  # `if cfg.num_experts`
    ("original_architecture", "GptOssForCausalLM"),  # picks a kind of experts only
    ("original_architecture", "GPT2LMHeadModel"),
    ("quantization_method", "mxfp4"),  # read by the loader, never by the forward pass
])
def test_a_setting_off_by_transformer_lens_rule_imports(setting, value):
    fixture = load("relu_ln_2l")
    spec = imported(with_settings(fixture, **{setting: value}))
    assert relative_error(simulator_logits(spec, fixture.tokens), fixture.logits) <= ROUNDING


# (c) Scaling an imported model by c converges to satsim's limit, every activation and norm.
ACTIVATIONS = ("relu", "gelu", "gelu_new", "silu")
NORMS = ("LN", "LNPre", "RMS", "RMSPre", None)
SCALES = (10.0, 100.0, 1000.0)


def sample_strings(count=24, seed=0):
    """Random token strings of length 1 to 8 over the fixtures' vocabulary 0..5."""
    rng = np.random.default_rng(seed)
    return ["".join(rng.choice(list("012345"), rng.integers(1, 9))) for _ in range(count)]


def agreement_with_the_limit(spec, strings):
    """Per c: the fraction of determined limit signs that the twin at cθ has, and how many."""
    limit = limit_signs(spec, strings)
    determined = [~np.isnan(signs) for signs in limit.signs]
    twin = SoftTransformer.from_spec(spec, device="cpu")
    fractions = []
    for c in SCALES:
        run = twin.scaled(c).run(strings)
        agree = [np.sign(run.logits_of(row))[mask] == limit.signs[row][mask]
                 for row, mask in enumerate(determined)]
        fractions.append(float(np.concatenate(agree).mean()))
    return fractions, int(sum(mask.sum() for mask in determined))


def assert_converges(spec):
    """The twin at cθ agrees ever more, and at c = 1000 fully, with every determined limit sign."""
    strings = sample_strings()
    fractions, determined = agreement_with_the_limit(spec, strings)
    assert determined >= 0.9 * sum(map(len, strings)) * len(spec.output.labels)
    assert list(fractions) == sorted(fractions) and fractions[-1] == 1.0, fractions


@pytest.mark.parametrize("norm", NORMS)
@pytest.mark.parametrize("act_fn", ACTIVATIONS)
def test_a_scaled_imported_model_converges_to_the_limit_for_every_activation_and_norm(act_fn,
                                                                                      norm):
    assert_converges(imported(
        with_settings(load("relu_ln_2l"), act_fn=act_fn, normalization_type=norm)))


@pytest.mark.parametrize("name", NAMES)
def test_every_imported_fixture_scaled_converges_to_the_limit(name):
    assert_converges(imported(load(name).model))


# (b) Live: real HookedTransformers, built from the same configs.
@pytest.fixture(scope="module")
def transformer_lens():
    """The transformer_lens package; its absence fails the test (it is in the test extra)."""
    try:
        import transformer_lens
    except ModuleNotFoundError:
        pytest.fail("transformer-lens is not installed: pip install -e '.[test]' (or deselect: "
                    "-m 'not transformer_lens')")
    return transformer_lens


@pytest.mark.transformer_lens
@pytest.mark.parametrize("variant", SUPPORTED, ids=lambda v: v.name)
def test_a_real_hooked_transformer_imports_exactly(transformer_lens, variant):
    model = build_model(variant)
    tokens = make_tokens(variant, model.cfg.d_vocab)
    with torch.no_grad():
        logits, cache = model.run_with_cache(tokens)
    spec = from_transformer_lens(model)
    errors = compare(spec, tokens.numpy(), logits.numpy(),
                     {name: value.numpy() for name, value in cache.items()})
    worst = max(errors, key=errors.get)
    assert errors[worst] <= ROUNDING, (worst, errors[worst])


@pytest.mark.transformer_lens
def test_a_custom_divisor_that_transformer_lens_ignores_is_ignored(transformer_lens):
    variant = Variant("custom_scale_off", dict(use_attn_scale=False, attn_scale=3.0), seed=20)
    model = build_model(variant)
    assert model.cfg.attn_scale == 3.0 and model.blocks[0].attn.attn_scale == 1.0
    tokens = make_tokens(variant, model.cfg.d_vocab)
    spec = from_transformer_lens(model)
    assert spec.blocks[0].attn.score_scale == 1.0
    with torch.no_grad():
        theirs = model(tokens).numpy()
    assert relative_error(simulator_logits(spec, tokens.numpy()), theirs) <= ROUNDING


@pytest.mark.transformer_lens
@pytest.mark.parametrize("variant", UNSUPPORTED, ids=lambda v: v.name)
def test_every_unsupported_feature_of_a_real_model_is_a_one_line_error(transformer_lens,
                                                                       variant):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = build_model(variant)
    with pytest.raises(SatsimError) as error:
        from_transformer_lens(model)
    message = str(error.value)
    assert "\n" not in message and message.startswith("TransformerLens setting ")
    setting = message.split()[2].split("=")[0]
    assert setting in variant.overrides, (variant.name, message)
