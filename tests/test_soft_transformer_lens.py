"""Importing TransformerLens-style state dicts into a spec of the same architecture."""

import numpy as np
import pytest
import torch
from helpers import random_spec

from satsim.errors import SatsimError, WeightsFileError
from satsim.soft import SoftTransformer, from_transformer_lens, load_state_dict


def transformer_lens_state(spec, biases_for_all=False):
    """A state dict as TransformerLens writes it: spec tensors, masks, and always all biases."""
    state = {name: torch.tensor(array) for name, array in spec.tensors().items()}
    for layer, block in enumerate(spec.blocks):
        state[f"blocks.{layer}.attn.IGNORE"] = torch.tensor(-1e5)
        state[f"blocks.{layer}.attn.mask"] = torch.ones(4, 4, dtype=torch.bool).tril()
        if biases_for_all:
            a = block.attn
            state.setdefault(f"blocks.{layer}.attn.b_Q", torch.zeros(a.n_heads, a.d_head))
            state.setdefault(f"blocks.{layer}.attn.b_O", torch.zeros(spec.d_model))
    return state


def test_a_state_dict_of_the_same_architecture_imports_exactly():
    spec = random_spec(1, norm="pre")
    like = random_spec(2, norm="pre")
    imported = from_transformer_lens(transformer_lens_state(spec), like)
    for a, b in zip(spec.tensors().values(), imported.tensors().values()):
        np.testing.assert_array_equal(a, b)
    assert imported.name == like.name


def test_zero_biases_that_the_spec_lacks_are_accepted_and_nonzero_ones_refused():
    spec = random_spec(1, biases=False)
    state = transformer_lens_state(spec, biases_for_all=True)
    assert from_transformer_lens(state, spec).tensors().keys() == spec.tensors().keys()
    state["blocks.0.attn.b_Q"][0, 0] = 0.5
    with pytest.raises(SatsimError, match="'blocks.0.attn.b_Q', which model .* does not have"):
        from_transformer_lens(state, spec)


def test_missing_or_misshapen_tensors_are_one_line_errors():
    spec = random_spec(1)
    state = transformer_lens_state(spec)
    del state["blocks.1.mlp.W_in"]
    with pytest.raises(SatsimError, match="no 'blocks.1.mlp.W_in'"):
        from_transformer_lens(state, spec)
    state = transformer_lens_state(spec)
    state["unembed.W_U"] = torch.zeros(8, 5)
    with pytest.raises(SatsimError, match=r"unembed.W_U has shape \(8, 5\)"):
        from_transformer_lens(state, spec)


def test_state_dict_files_load_without_pickle(tmp_path):
    spec = random_spec(3)
    soft = SoftTransformer.from_spec(spec, device="cpu")
    from safetensors.torch import save_file

    save_file({k: v.contiguous() for k, v in soft.state_dict().items()}, tmp_path / "w.safetensors")
    torch.save(soft.state_dict(), tmp_path / "w.pt")
    for name in ("w.safetensors", "w.pt"):
        imported = from_transformer_lens(load_state_dict(tmp_path / name), spec)
        np.testing.assert_array_equal(imported.W_E, spec.W_E)
    (tmp_path / "bad.pt").write_bytes(b"not a checkpoint")
    with pytest.raises(WeightsFileError, match="cannot read"):
        load_state_dict(tmp_path / "bad.pt")
    with pytest.raises(WeightsFileError, match="no such weights file"):
        load_state_dict(tmp_path / "missing.pt")
