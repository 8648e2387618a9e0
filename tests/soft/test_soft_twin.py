"""The soft twin: same weights bit for bit, the reference semantics at β, scaling, devices."""

import itertools

import numpy as np
import pytest
import torch

from satsim import constructions
from satsim.errors import SatsimError
from satsim.model.io import spec_config
from satsim.model.settings import AttentionSettings
from satsim.reference.forward import forward
from satsim.soft import SoftTransformer, resolve_device, resolve_dtype
from tests.support.helpers import random_spec

STRINGS = ["abba", "a", "", "bbbabab", "ab"]
ARCHITECTURES = list(itertools.product(["none", "pre", "post"], [True, False], [True, False],
                                       [True, False]))


@pytest.mark.parametrize("norm,residual,biases,affine", ARCHITECTURES)
@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["float32", "float64"])
def test_spec_to_torch_to_spec_round_trips_bit_exactly(norm, residual, biases, affine, dtype):
    spec = random_spec(4, norm=norm, residual=residual, biases=biases, affine=affine,
                       positional="features", dtype=dtype)
    back = SoftTransformer.from_spec(spec, device="cpu").to_spec()
    assert spec_config(back) == spec_config(spec)
    for (name, a), (name_back, b) in zip(spec.tensors().items(), back.tensors().items()):
        assert name == name_back and a.dtype == b.dtype
        np.testing.assert_array_equal(a, b)


def test_state_dict_keys_are_the_spec_tensor_names():
    spec = random_spec(0, norm="pre")
    soft = SoftTransformer.from_spec(spec, device="cpu")
    assert list(soft.state_dict()) == list(spec.tensors())
    assert soft.state_dict()["blocks.1.attn.W_Q"].shape == (2, 8, 4)


def test_a_float64_twin_of_a_float32_spec_returns_the_same_float32_bits():
    spec = random_spec(2, dtype=np.float32)
    back = SoftTransformer.from_spec(spec, device="cpu", dtype="float64").to_spec()
    assert back.dtype == np.float64
    for a, b in zip(spec.tensors().values(), back.astype(np.float32).tensors().values()):
        np.testing.assert_array_equal(a, b)


def reference_error(spec, strings, beta, device="cpu"):
    """Largest difference between the soft twin and the NumPy reference, relative to max(1, |x|).

    Every residual stream and the logits count; so do the twin's two attention paths: the
    fused kernel (no hooks) and the written-out softmax (hooks cached).
    """
    twin = SoftTransformer.from_spec(spec, device=device)
    worst = 0.0
    for cache in (False, True):
        run = twin.run(strings, beta=beta, cache=cache)
        for row, string in enumerate(strings):
            ref = forward(spec, string, AttentionSettings("softmax", beta))
            n = len(ref.ids)
            logits = run.logits_of(row)
            logits = logits[-1] if spec.output.readout == "last" else logits
            pairs = [*zip(ref.residuals, (r[row, :n] for r in run.residual_arrays())),
                     (ref.logits, logits)]
            for expected, got in pairs:
                scale = np.maximum(1.0, np.abs(expected))
                worst = max(worst, (np.abs(expected - got) / scale).max())
    return worst


@pytest.mark.parametrize("norm", ["none", "pre", "post"])
@pytest.mark.parametrize("positional", ["none", "learned", "sinusoidal", "features"])
@pytest.mark.parametrize("task", ["recognition", "next-symbol"])
@pytest.mark.parametrize("mask", ["causal", "bidirectional", "strict-past", "future",
                                  "strict-future", "per-head"])
def test_soft_twin_at_beta_one_matches_the_reference_forward_pass(norm, positional, task, mask):
    for seed, (residual, biases, affine) in enumerate(itertools.product([True, False], repeat=3)):
        spec = random_spec(seed, norm=norm, positional=positional, task=task, mask=mask,
                           residual=residual, biases=biases, affine=affine, n_heads=3)
        assert reference_error(spec, STRINGS, beta=1.0) < 1e-10


def test_attention_only_beta_matches_the_reference_softmax_beta():
    spec = random_spec(7, norm="post")
    assert reference_error(spec, STRINGS, beta=37.5) < 1e-10


def test_hooks_are_cached_under_transformer_lens_names_and_shapes():
    spec = random_spec(1, norm="pre", n_heads=2, d_head=4, d_model=8, d_mlp=6)
    run = SoftTransformer.from_spec(spec, device="cpu").run(["abab", "ab"], cache=True)
    batch, n = 2, 5
    shapes = {
        "hook_embed": (batch, n, 8), "hook_pos_embed": (batch, n, 8),
        "blocks.0.hook_resid_pre": (batch, n, 8), "blocks.0.ln1.hook_normalized": (batch, n, 8),
        "blocks.0.attn.hook_q": (batch, n, 2, 4), "blocks.0.attn.hook_k": (batch, n, 2, 4),
        "blocks.0.attn.hook_v": (batch, n, 2, 4), "blocks.0.attn.hook_z": (batch, n, 2, 4),
        "blocks.0.attn.hook_attn_scores": (batch, 2, n, n),
        "blocks.0.attn.hook_pattern": (batch, 2, n, n), "blocks.0.hook_attn_out": (batch, n, 8),
        "blocks.0.hook_resid_mid": (batch, n, 8), "blocks.0.mlp.hook_pre": (batch, n, 6),
        "blocks.0.mlp.hook_post": (batch, n, 6), "blocks.0.hook_mlp_out": (batch, n, 8),
        "blocks.1.hook_resid_post": (batch, n, 8), "ln_final.hook_normalized": (batch, n, 8),
    }
    for name, shape in shapes.items():
        assert tuple(run.cache[name].shape) == shape, name
    pattern = run.cache["blocks.1.attn.hook_pattern"]
    torch.testing.assert_close(pattern.sum(-1), torch.ones(batch, 2, n, dtype=pattern.dtype))
    assert pattern[1, :, :, 3:].abs().max() == 0  # padding of the shorter string is masked
    assert torch.equal(run.residuals[-1], run.cache["blocks.1.hook_resid_post"])
    ln = spec.ln_final
    torch.testing.assert_close(run.final, run.cache["ln_final.hook_normalized"] * torch.tensor(ln.w)
                               + torch.tensor(ln.b))


def test_logits_at_some_positions_are_the_full_runs_logits_there():
    spec = random_spec(4, norm="pre", d_model=8, d_mlp=6)
    twin = SoftTransformer.from_spec(spec, device="cpu", dtype="float64")
    tokens, lengths = twin.encode(["abba", "ab"])
    full = twin(tokens, lengths)
    some = twin(tokens, lengths, logits_at=[0, 2, 1])
    torch.testing.assert_close(some.logits, full.logits[:, [0, 2, 1]], rtol=1e-14, atol=1e-14)
    assert torch.equal(some.final, full.final)
    with pytest.raises(ValueError, match="logits_at"):
        some.logits_of(0)


def test_scaled_multiplies_every_parameter_by_c_and_its_group_rate():
    spec = random_spec(3)
    soft = SoftTransformer.from_spec(spec, device="cpu")
    scaled = soft.scaled(10.0, rates={"blocks.*.attn.*": 2.0, "unembed.b_U": 0.5})
    for name, array in scaled.to_spec().tensors().items():
        rate = 2.0 if ".attn." in name else 0.5 if name == "unembed.b_U" else 1.0
        np.testing.assert_allclose(array, spec.tensors()[name] * 10 * rate, rtol=1e-15)
    assert scaled.scale == 10.0 and soft.scale == 1.0


@pytest.mark.parametrize("rates,message", [
    ({"blocks.*.nothing": 2.0}, "matches no tensor"),
    ({"embed.W_E": -1.0}, "positive and finite"),
])
def test_bad_rates_are_one_line_errors(rates, message):
    soft = SoftTransformer.from_spec(random_spec(0), device="cpu")
    with pytest.raises(SatsimError, match=message):
        soft.scaled(2.0, rates)


def test_a_scale_that_would_overflow_float32_is_refused_before_running():
    soft = SoftTransformer.from_spec(constructions.build("dyck1"), device="cpu", dtype="float32")
    with pytest.raises(SatsimError, match=r"c = 1e\+06 overflows float32 .* grow like c\^8"):
        soft.scaled(1e6)
    soft.scaled(1e3).run(["(())"])


def test_an_overflow_during_a_run_is_a_clear_error():
    soft = SoftTransformer.from_spec(random_spec(0, norm="post"), device="cpu", dtype="float32")
    with torch.no_grad():
        soft.embed.W_E.mul_(1e30)
    with pytest.raises(SatsimError, match="overflowed torch.float32"):
        soft.run(["abab"])


def test_device_and_dtype_selection():
    assert resolve_device("cpu") == torch.device("cpu")
    assert resolve_device("auto").type == ("cuda" if torch.cuda.is_available() else "cpu")
    with pytest.raises(SatsimError, match="unknown device"):
        resolve_device("tpu")
    with pytest.raises(SatsimError, match="unknown device"):
        resolve_device("cuda:abc")  # torch itself cannot parse it
    assert resolve_dtype("float32") is torch.float32 and resolve_dtype(np.float64) is torch.float64
    with pytest.raises(SatsimError, match="float32 or float64"):
        resolve_dtype("float16")


@pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has a GPU")
def test_asking_for_cuda_without_a_gpu_is_a_clear_error():
    with pytest.raises(SatsimError, match="no CUDA GPU"):
        SoftTransformer.from_spec(random_spec(0), device="cuda")


@pytest.mark.parametrize("device", ["cpu", pytest.param("cuda", marks=pytest.mark.cuda)])
@pytest.mark.parametrize("norm", ["none", "pre", "post"])
@pytest.mark.parametrize("positional", ["learned", "features"])
@pytest.mark.parametrize("task,causal", [("recognition", True), ("next-symbol", False)])
@pytest.mark.parametrize("dtype,tolerance", [(np.float32, 3e-4), (np.float64, 1e-10)],
                         ids=["float32", "float64"])
def test_twin_in_float32_and_float64_matches_the_reference_forward_pass(
        device, norm, positional, task, causal, dtype, tolerance):
    # float32 on the CPU differs by up to 2e-5 (relative to max(1, |x|)) from the reference
    for seed, (residual, biases) in enumerate(itertools.product([True, False], repeat=2)):
        spec = random_spec(seed, norm=norm, positional=positional, task=task, causal=causal,
                           residual=residual, biases=biases, dtype=dtype)
        assert reference_error(spec, STRINGS, beta=1.0, device=device) < tolerance


@pytest.mark.cuda
def test_cuda_twin_matches_the_cpu_twin():
    spec = random_spec(5, norm="pre")
    cpu = SoftTransformer.from_spec(spec, device="cpu").scaled(10.0).run(STRINGS)
    gpu_twin = SoftTransformer.from_spec(spec, device="cuda").scaled(10.0)
    assert gpu_twin.device.type == "cuda"
    gpu = gpu_twin.run(STRINGS, cache=True)
    assert gpu.cache["blocks.0.attn.hook_pattern"].device.type == "cuda"
    for row in range(len(STRINGS)):  # real positions: padded rows are never read
        np.testing.assert_allclose(gpu.logits_of(row), cpu.logits_of(row), atol=1e-9)
    np.testing.assert_array_equal(gpu_twin.to_spec().tensors()["embed.W_E"],
                                  spec.tensors()["embed.W_E"] * 10.0)


def test_bad_strings_are_one_line_errors():
    soft = SoftTransformer.from_spec(random_spec(0), device="cpu")
    with pytest.raises(SatsimError, match="not in the alphabet"):
        soft.run(["abc"])
    with pytest.raises(SatsimError, match="list of strings"):
        soft.run("ab")
    with pytest.raises(SatsimError, match="longer than the learned positional table"):
        soft.run(["a" * 80])
