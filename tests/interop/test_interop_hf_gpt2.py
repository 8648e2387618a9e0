"""Hugging Face GPT-2 checkpoints imported from their tensors, checked against transformers.

The oracle is transformers' own GPT2LMHeadModel loaded from the same folder (no hub), in
float64; the models are three of the decompiling-transformers zoo (tests/data/zoo/PROVENANCE.md),
and the D_2 model's next-symbol sets are checked against the language's definition.
"""

from __future__ import annotations

import json
import shutil
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from satsim import Simulator, load_spec, save_spec
from satsim.errors import SatsimError
from satsim.interop.hf_gpt2 import from_hf_gpt2
from tests.support.helpers import invoke_satsim, run_satsim
from tests.support.paths import DATA

ZOO = DATA / "zoo"
MODELS = ["bce_D2", "bce_aastar", "bce_tomita4"]


def _hf_logits(folder: Path, ids: list[int]) -> np.ndarray:
    """transformers' logits of one token id sequence, float64."""
    import torch
    from transformers import GPT2LMHeadModel

    model = GPT2LMHeadModel.from_pretrained(str(folder)).double().eval()
    with torch.no_grad():
        return model(torch.tensor([ids])).logits[0].numpy()


@pytest.mark.slow  # runs long
@pytest.mark.parametrize("name", MODELS)
def test_imported_zoo_models_give_transformers_logits(name):
    spec = from_hf_gpt2(ZOO / name)
    assert spec.output.task == "next-symbol" and spec.bos == "<bos>"
    assert spec.vocab[-1] == "<bos>" and spec.output.labels[-4:] == (
        "<bos>", "<sep>", "<eos>", "<pad>")
    wide = spec.astype(np.float64)
    rng = np.random.default_rng(1)
    for length in (0, 1, 7, 60, 150):  # the symbols come first, as in the zoo's tokenizer
        ids = [spec.vocab.index("<bos>"), *rng.integers(0, len(spec.alphabet), length).tolist()]
        expected = _hf_logits(ZOO / name, ids)
        body = [np.array(ids[1:], dtype=np.int64)]  # the simulator adds BOS itself
        got = Simulator(wide, "softmax").logits(body)[0]
        np.testing.assert_allclose(got, expected, rtol=1e-9, atol=1e-9)
        got32 = Simulator(spec, "softmax").logits(body)[0]
        np.testing.assert_allclose(got32, expected, rtol=1e-4, atol=1e-4)


def _d2_next(prefix: str) -> frozenset[str]:
    """What may follow ``prefix`` in D_2 (depth 0 to 2, ending at 0), by the definition."""
    depth = prefix.count("a") - prefix.count("b")
    allowed = set()
    if depth < 2:
        allowed.add("a")
    if depth > 0:
        allowed.add("b")
    if depth == 0:
        allowed.add("<eos>")
    return frozenset(allowed)


def test_the_dyck_model_predicts_the_next_symbol_sets_of_d2():
    spec = from_hf_gpt2(ZOO / "bce_D2")
    rng = np.random.default_rng(0)
    strings = []
    for _ in range(30):
        text, depth = "", 0
        for _ in range(int(rng.integers(0, 60))):
            step = "a" if depth == 0 or (depth < 2 and rng.random() < 0.5) else "b"
            depth += 1 if step == "a" else -1
            text += step
        strings.append(text + "b" * depth)
    for string, sets in zip(strings, Simulator(spec, "softmax").next_symbols(strings)):
        assert sets == [_d2_next(string[:i]) for i in range(len(string) + 1)]


@pytest.mark.slow  # a fresh process
def test_a_hardened_zoo_model_runs_saves_and_shows_its_kinds(tmp_path):
    spec = from_hf_gpt2(ZOO / "bce_tomita4")
    blocks = tuple(replace(b, attn=replace(b.attn, kind=("score-class", "tolerant-hard"),
                                           delta=(0.02, 0.05))) for b in spec.blocks)
    hybrid = replace(spec, blocks=blocks)
    save_spec(hybrid, tmp_path / "h.safetensors")
    loaded = load_spec(tmp_path / "h.safetensors")
    ids = np.array([0, 1, 1, 0, 1])
    assert np.array_equal(Simulator(loaded).logits([ids])[0], Simulator(hybrid).logits([ids])[0])
    shown = json.loads(run_satsim("show", "--model", str(tmp_path / "h.safetensors"),
                                  "--json").stdout)
    assert [(h["kind"], h["delta"]) for h in shown["heads"]] == [
        ("score-class", 0.02), ("tolerant-hard", 0.05)] * 2


@pytest.mark.slow  # a fresh process
def test_the_command_line_reads_a_checkpoint_folder():
    shown = json.loads(run_satsim("show", "--model", str(ZOO / "bce_D2"), "--json").stdout)
    assert shown["vocab"] == ["a", "b", "<bos>"]
    assert shown["labels"] == ["a", "b", "<bos>", "<sep>", "<eos>", "<pad>"]
    assert [h["kind"] for h in shown["heads"]] == ["run"]


def test_checkpoints_it_cannot_read_are_refused_by_name(tmp_path):
    folder = tmp_path / "relu-model"
    shutil.copytree(ZOO / "bce_D2", folder)
    config = json.loads((folder / "config.json").read_text())
    (folder / "config.json").write_text(json.dumps({**config, "activation_function": "relu"}))
    with pytest.raises(SatsimError, match="activation_function is 'relu'"):
        from_hf_gpt2(folder)
    (folder / "config.json").write_text(json.dumps(config))
    with pytest.raises(SatsimError, match="3 tokens for the checkpoint's 6 embeddings"):
        from_hf_gpt2(folder, vocab=["x", "y", "z"])
    (folder / "model.safetensors").unlink()
    with pytest.raises(SatsimError, match="no model.safetensors"):
        from_hf_gpt2(folder)
    result = invoke_satsim("show", "--model", str(folder))
    assert result.returncode == 2 and "no model.safetensors" in result.stderr
