"""The serial and parallel kernels, promised counting heads and the batched input path agree
exactly with each other and with the reference (tie sets bit for bit)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from satsim import Simulator, constructions
from satsim.engine.attend import attention
from satsim.engine.batch import forward_batch
from satsim.engine.kernels import layers
from satsim.engine.kernels import queries as kernels
from satsim.errors import SatsimError
from satsim.model.architecture import counting_heads
from satsim.model.encoding import embed, embed_batch, encode
from satsim.model.settings import AttentionSettings, default_tolerance
from satsim.model.spec import default_scale
from tests.engine.test_attention import CODES, Case, assert_matches_reference, cases, reference
from tests.support.helpers import random_spec

MODEST = settings(max_examples=40, deadline=None)


def _kernel_args(case: Case):
    atol, rtol = default_tolerance(case.q.dtype)
    scale = default_scale(case.q.shape[-1]) if case.scale is None else case.scale
    known = np.full(case.q.shape[0], kernels.UNKNOWN, dtype=np.int64)
    return (case.q, case.k, case.v, case.key_mask, case.query_mask, case.causal, CODES[case.kind],
            case.beta, atol, rtol, scale, known)


def _assert_same(a, b):
    for x, y in zip(a, b):
        np.testing.assert_array_equal(x, y)


@pytest.mark.slow  # runs long
@MODEST
@given(st.one_of(cases(), cases(content="levels"), cases(content="integer", queries="same"),
                 cases(content="integer", queries="zero"), cases(keys="same")))
def test_serial_and_parallel_attend_agree_bit_for_bit(case):
    serial = kernels.attend(*_kernel_args(case))
    parallel = kernels.attend_parallel(*_kernel_args(case))
    _assert_same(serial, parallel)
    size = reference(case)[1]
    np.testing.assert_array_equal(serial[1], size)


@MODEST
@given(st.one_of(cases(content="levels"), cases(content="integer")))
def test_large_work_takes_the_parallel_kernel_and_matches_reference(case):
    before = layers.PARALLEL_WORK
    layers.PARALLEL_WORK = 0  # every call runs attend_parallel
    try:
        assert_matches_reference(case)
    finally:
        layers.PARALLEL_WORK = before


def _promise(case: Case, which: str) -> Case:
    """Make item 0 a counting item: zero queries or constant keys."""
    q, k = case.q.copy(), case.k.copy()
    if which == "zero-queries":
        q[0] = 0
    else:
        k[0] = k[0, :1]
    return dataclasses.replace(case, q=q, k=k)


@MODEST
@given(st.one_of(cases(), cases(content="levels")), st.sampled_from(("zero-queries", "keys")))
def test_promised_counting_items_give_the_detected_results(case, which):
    case = _promise(case, which)
    promised = np.zeros(case.q.shape[0], dtype=bool)
    promised[0] = True
    common = dict(kind=case.kind, beta=case.beta, causal=case.causal, mask=case.key_mask,
                  query_mask=case.query_mask, scale=case.scale)
    fast = attention(case.q, case.k, case.v, same_scores=promised, **common)
    detected = attention(case.q, case.k, case.v, **common)
    _assert_same((fast.output, fast.tie_size, fast.tie_gap),
                 (detected.output, detected.tie_size, detected.tie_gap))
    assert_matches_reference(case)


def test_counting_heads_are_read_from_the_weights():
    spec = constructions.build("dyck1")
    flags = [counting_heads(b.attn).tolist() for b in spec.blocks if b.attn is not None]
    assert flags[0] == [True]  # the counting layer: zero query and key maps
    general = random_spec(1, n_heads=3)
    attn = general.blocks[0].attn
    assert not counting_heads(attn).any()
    W_K = attn.W_K.copy()
    W_K[1] = 0  # constant keys b_K
    W_Q = attn.W_Q.copy()
    W_Q[2] = 0  # queries b_Q: not zero while b_Q is not
    changed = dataclasses.replace(attn, W_K=W_K, W_Q=W_Q)
    assert counting_heads(changed).tolist() == [False, True, False]
    b_Q = attn.b_Q.copy()
    b_Q[2] = 0
    assert counting_heads(dataclasses.replace(changed, b_Q=b_Q)).tolist() == [False, True, True]


@pytest.mark.parametrize("seed", range(4))
def test_forward_with_weight_detected_counting_heads_matches_runtime_detection(seed, monkeypatch):
    spec = random_spec(seed, n_heads=2, dtype=np.float32)
    blocks = []
    for block in spec.blocks:
        W_K, W_Q, b_Q = block.attn.W_K.copy(), block.attn.W_Q.copy(), block.attn.b_Q.copy()
        W_K[0] = 0
        W_Q[1], b_Q[1] = 0, 0
        blocks.append(dataclasses.replace(block, attn=dataclasses.replace(
            block.attn, W_K=W_K, W_Q=W_Q, b_Q=b_Q)))
    spec = dataclasses.replace(spec, blocks=tuple(blocks))
    rng = np.random.default_rng(seed)
    ids = [encode(spec, "".join(rng.choice(list("ab"), n))) for n in (0, 5, 17, 40)]
    promised = forward_batch(spec, ids, AttentionSettings(), trace=True)
    monkeypatch.setattr("satsim.engine.batch.counting_heads",
                        lambda attn: np.zeros(attn.W_Q.shape[0], dtype=bool))
    detected = forward_batch(spec, ids, AttentionSettings(), trace=True)
    np.testing.assert_array_equal(promised.logits, detected.logits)
    for a, b in zip(promised.layers, detected.layers):
        np.testing.assert_array_equal(a.tie_size, b.tie_size)
        np.testing.assert_array_equal(a.tie_gap, b.tie_gap)


@pytest.mark.slow  # runs long
@settings(max_examples=30, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(1, 700), st.integers(1, 12), st.integers(1, 12),
       st.sampled_from((np.float32, np.float64)), st.booleans())
def test_affine_serial_parallel_and_float64_reference(seed, rows, d_in, d_out, dtype, relu):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(rows, d_in)).astype(dtype)
    x[rng.random(x.shape) < 0.3] = 0
    weight = rng.normal(size=(d_in, d_out)).astype(dtype)
    weight[rng.random(weight.shape) < 0.3] = 0
    bias = rng.normal(size=d_out).astype(dtype)
    code = layers.RELU if relu else layers.IDENTITY
    serial = layers.affine(x, weight, bias, code)
    np.testing.assert_array_equal(serial, layers.affine_parallel(x, weight, bias, code))
    want = x.astype(np.float64) @ weight.astype(np.float64) + bias
    want = np.maximum(want, 0) if relu else want
    np.testing.assert_allclose(serial, want.astype(dtype), rtol=1e-6 if dtype == np.float32
                               else 1e-12, atol=1e-6 if dtype == np.float32 else 1e-12)
    x64 = rng.normal(size=(rows, d_in)).astype(dtype)
    w, b = rng.normal(size=d_in).astype(dtype), rng.normal(size=d_in).astype(dtype)
    for use_affine in (True, False):
        for centre in (True, False):  # LayerNorm, RMSNorm
            np.testing.assert_array_equal(
                layers.layer_norm(x64, w, b, 1e-5, use_affine, centre),
                layers.layer_norm_parallel(x64, w, b, 1e-5, use_affine, centre))


@settings(max_examples=40, deadline=None)
@given(st.text(alphabet="ab", max_size=30))
def test_encode_matches_symbol_by_symbol(string):
    spec = random_spec(0)
    want = [spec.vocab.index("<bos>")] + [spec.vocab.index(c) for c in string]
    np.testing.assert_array_equal(encode(spec, string), want)


@pytest.mark.parametrize("string", ["abc", "c", "a\u00e9", "ab\U0001f600"])
def test_encode_names_the_first_foreign_symbol(string):
    spec = random_spec(0)
    with pytest.raises(SatsimError, match=f"at position {len(string) - 1}"):
        encode(spec, string)


@pytest.mark.parametrize("positional", ["none", "learned", "sinusoidal", "features"])
def test_embed_batch_equals_per_string_embedding(positional):
    spec = random_spec(2, positional=positional, dtype=np.float32)
    ids = [encode(spec, s) for s in ("ab", "", "abba", "b" * 30)]
    x, mask = embed_batch(spec, ids)
    for row, seq in enumerate(ids):
        np.testing.assert_array_equal(x[row, : len(seq)], embed(spec, seq))
        assert not x[row, len(seq):].any()
        assert mask[row].sum() == len(seq) and mask[row, : len(seq)].all()


def test_threaded_batches_give_the_single_thread_results():
    import numba

    spec = random_spec(3, dtype=np.float32)
    rng = np.random.default_rng(0)
    strings = ["".join(rng.choice(list("ab"), n)) for n in rng.integers(0, 60, 200)]
    threaded = Simulator(spec, max_batch_tokens=512)
    before = numba.get_num_threads()
    numba.set_num_threads(1)
    try:
        single = Simulator(spec, max_batch_tokens=512).logits(strings)
    finally:
        numba.set_num_threads(before)
    for a, b in zip(threaded.logits(strings), single):
        np.testing.assert_array_equal(a, b)


@st.composite
def near_tie_cases(draw):
    """Keys clustered around one direction, perturbed at the scale of the tie tolerance and of
    float32 rounding, so that approximate scores cannot tell ties, near-ties and the runner-up."""
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    dtype = draw(st.sampled_from((np.float32, np.float64)))
    n, t = draw(st.integers(1, 3)), draw(st.integers(1, 90))
    d = draw(st.sampled_from((1, 3, 16, 64)))
    causal = draw(st.booleans())
    s = t if causal else draw(st.integers(1, 90))
    spread = draw(st.sampled_from((0.0, 1e-9, 1e-7, 1e-6, 1e-5, 3e-5, 1e-3)))
    base = rng.normal(size=(n, 1, d))
    k = (base + spread * rng.normal(size=(n, s, d))).astype(dtype)
    k[rng.random((n, s)) < 0.2] = base[0, 0].astype(dtype)  # exact duplicates of one key
    q = (np.broadcast_to(base, (n, t, d)) * rng.choice([1.0, -1.0, 10.0], size=(n, t, 1))
         + rng.normal(size=(n, t, d)) * draw(st.sampled_from((0.0, 0.1)))).astype(dtype)
    v = rng.normal(size=(n, s, 2)).astype(dtype)
    key_mask = rng.random((n, s)) < draw(st.sampled_from((1.0, 0.7)))
    query_mask = rng.random((n, t)) < 0.9
    kind = draw(st.sampled_from(("saturated", "unique-left", "unique-right")))
    return Case(q, k, v, key_mask, query_mask, causal, kind, 1.0, None)


@settings(max_examples=150, deadline=None)
@given(near_tie_cases())
def test_filtered_general_path_keeps_tie_sets_of_the_reference(case):
    assert_matches_reference(case)
    _assert_same(kernels.attend(*_kernel_args(case)), kernels.attend_parallel(*_kernel_args(case)))
