"""Figure 5 of the norm-growth paper: the authors' model against a NumPy transcription of their
equations, their mask's leak into the future, and the ``satsim homogeneity`` contract."""

import json
from dataclasses import replace

import numpy as np
import pytest

from satsim.errors import SatsimError
from satsim.papers.homogeneity import PROTOCOLS, SCALES, EncoderSizes, random_encoder
from satsim.papers.homogeneity.authors import AuthorsTwin
from satsim.papers.homogeneity.curves import Variant, random_sequences, seed_curve
from satsim.soft import SoftTransformer
from tests.support.helpers import invoke_satsim

TINY = EncoderSizes(layers=2, d_model=12, heads=3, d_ff=8, length=6, sequences=3)


def authors_forward(spec, string: str, c: float, arrangement: str) -> np.ndarray:
    """Their encoder output for one sequence, every parameter times c, written out in NumPy."""
    ids = np.array([int(token) for token in string])
    n = len(ids)

    def ln(y, norm):
        mean = y.mean(-1, keepdims=True)
        var = ((y - mean) ** 2).mean(-1, keepdims=True)
        return (y - mean) / np.sqrt(var + norm.eps) * (c * norm.w) + c * norm.b

    def residual(x, branch, norm):
        return ln(branch + x, norm) if arrangement == "post" else ln(branch, norm) + x

    x = c * spec.W_E[ids] + c * spec.positional.W_pos[:n]
    for block in spec.blocks:
        a, heads = block.attn, []
        for h in range(a.n_heads):
            q, k, v = (x @ (c * W[h]) + c * b[h] for W, b in
                       ((a.W_Q, a.b_Q), (a.W_K, a.b_K), (a.W_V, a.b_V)))
            scores = q @ k.T / np.sqrt(q.shape[1]) * np.tril(np.ones((n, n)))  # future × 0
            weights = np.exp(scores - scores.max(-1, keepdims=True))
            heads.append(weights / weights.sum(-1, keepdims=True) @ v)
        pooled = np.concatenate(heads, -1) @ (c * a.W_O.reshape(-1, a.W_O.shape[-1])) + c * a.b_O
        x = residual(x, pooled, block.ln1)
        m = block.mlp
        hidden = np.maximum(x @ (c * m.W_in) + c * m.b_in, 0)
        x = residual(x, hidden @ (c * m.W_out) + c * m.b_out, block.ln2)
    return x


@pytest.mark.parametrize("arrangement", ["post", "ln-of-branch"])
def test_the_authors_model_matches_a_numpy_transcription_of_their_equations(arrangement):
    spec = random_encoder(TINY, 3, norm="post", causal=True)
    strings = random_sequences(TINY, 3)
    twin = AuthorsTwin(spec, arrangement=arrangement, device="cpu", dtype="float64")
    for c in (1.0, 4.5):
        got = twin.scaled(c).run(strings).final.numpy()
        expected = np.stack([authors_forward(spec, s, c, arrangement) for s in strings])
        np.testing.assert_allclose(got, expected, rtol=1e-10, atol=1e-10)


def test_the_multiplicative_mask_gives_future_keys_weight_and_the_causal_one_none():
    spec = random_encoder(TINY, 0, norm="post", causal=True)
    strings = random_sequences(TINY, 0)
    future = np.triu(np.ones((TINY.length, TINY.length), dtype=bool), 1)
    authors = AuthorsTwin(spec, arrangement="post", device="cpu", dtype="float64")
    causal = SoftTransformer(spec, device="cpu", dtype="float64")
    leaked = authors.run(strings, cache=True).cache["blocks.0.attn.hook_pattern"].numpy()
    kept = causal.run(strings, cache=True).cache["blocks.0.attn.hook_pattern"].numpy()
    assert (leaked[..., future] > 0).all() and (kept[..., future] == 0).all()
    # without the 0/1 mask the authors' post-norm model is the soft twin itself
    plain = AuthorsTwin(spec, arrangement="post", multiplicative_mask=False, device="cpu",
                        dtype="float64")
    assert np.array_equal(plain.run(strings).final.numpy(), causal.run(strings).final.numpy())


def test_the_authors_model_has_no_spec_and_refuses_padding():
    spec = random_encoder(TINY, 0, norm="post", causal=True)
    twin = AuthorsTwin(spec, arrangement="ln-of-branch", device="cpu", dtype="float64")
    with pytest.raises(SatsimError, match="no limit theory"):
        twin.to_spec()
    with pytest.raises(SatsimError, match="one length"):
        twin.run(["012", "0123"])
    with pytest.raises(SatsimError, match="final LayerNorm"):
        AuthorsTwin(random_encoder(TINY, 0, norm="pre", causal=True), arrangement="post")
    without_skips = replace(random_encoder(TINY, 0, norm="post", causal=True), residual=False)
    for arrangement in ("post", "ln-of-branch"):
        with pytest.raises(SatsimError, match="residual true"):
            AuthorsTwin(without_skips, arrangement=arrangement)


def test_every_curve_reaches_one_at_the_reference_and_rises_from_c_one():
    ablation = Variant("ln-of-branch", "causal")  # the authors' arrangement, correctly masked
    for model in (*PROTOCOLS["authors"], *PROTOCOLS["standard"], ablation):
        at_one, at_ten, at_ref = seed_curve(model, TINY, 1, scales=[1.0, 10.0, 1000.0],
                                            device="cpu")
        assert abs(at_ref - 1.0) < 1e-12 and at_one < at_ten < 1.0, model


def test_the_command_prints_the_json_contract_and_rejects_bad_sizes():
    result = invoke_satsim("homogeneity", "--protocol", "standard", "--seeds", "2", "--layers",
                           "1", "--d-model", "8", "--heads", "2", "--d-ff", "4", "--threads", "1",
                           "--json")
    assert result.returncode == 0, result.stderr
    curves = json.loads(result.stdout)["curves"]
    assert [(c["arrangement"], c["mask"]) for c in curves] == [
        ("post", "causal"), ("post", "bidirectional"), ("pre", "causal"), ("pre", "bidirectional")]
    for curve in curves:
        assert curve["c"] == list(SCALES) and len(curve["per_seed"]) == 2
        low, mean, high = (np.array(curve[k]) for k in ("cosine_min", "cosine_mean", "cosine_max"))
        assert (low <= mean).all() and (mean <= high).all() and (low < high).any()
    bad = invoke_satsim("homogeneity", "--d-model", "10", "--heads", "3")
    assert bad.returncode == 2 and bad.stderr.strip().startswith("error: d_model 10")
