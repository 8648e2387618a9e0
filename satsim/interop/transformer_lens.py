"""Import a TransformerLens-style state dict into a spec of the same architecture.

TransformerLens names and shapes are satsim's own (``blocks.0.attn.W_Q`` [n_heads, d_model,
d_head], ``unembed.W_U`` [d_model, d_vocab], ...), so importing is a check and a copy: every
tensor of the target spec must be present with its shape. Buffers (``attn.IGNORE``,
``attn.mask``) are skipped. TransformerLens always stores biases; a bias the spec lacks is accepted
when it is all zeros and refused otherwise (the architectures would differ).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import torch

from satsim.errors import SatsimError, WeightsFileError
from satsim.model.spec import ModelSpec
from satsim.saturation.respec import with_tensors

BUFFERS = (".IGNORE", ".mask")
BIAS_NAMES = ("b_Q", "b_K", "b_V", "b_O", "b_in", "b_out", "b_U")


def load_state_dict(path: str | Path) -> dict[str, torch.Tensor]:
    """Read a state dict without pickle: safetensors, or torch.load with weights_only=True."""
    path = Path(path)
    if not path.is_file():
        raise WeightsFileError(f"no such weights file: {path}")
    try:
        if path.suffix == ".safetensors":
            from safetensors.torch import load_file

            return load_file(str(path))
        state = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as error:  # any reader failure is the file's fault
        raise WeightsFileError(f"cannot read {path}: {str(error).splitlines()[0]}") from None
    if not isinstance(state, Mapping) or not all(map(torch.is_tensor, state.values())):
        raise WeightsFileError(f"{path} does not hold a state dict of tensors")
    return dict(state)


def _array(value: Any) -> np.ndarray:
    """A float64 NumPy copy of a tensor or array."""
    if isinstance(value, torch.Tensor):
        value = value.detach().cpu().double().numpy()
    return np.array(value, dtype=np.float64)


def from_transformer_lens(state_dict: Mapping[str, Any], like: ModelSpec) -> ModelSpec:
    """Return ``like`` with its weights taken from a TransformerLens-style state dict."""
    arrays = {name: _array(v) for name, v in state_dict.items() if not name.endswith(BUFFERS)}
    expected = like.tensors()
    missing = [name for name in expected if name not in arrays]
    if missing:
        raise SatsimError(f"the state dict has no {missing[0]!r}, which model {like.name!r} needs")
    for name, array in arrays.items():
        if name in expected:
            if array.shape != expected[name].shape:
                raise SatsimError(f"{name} has shape {array.shape} in the state dict; model "
                                  f"{like.name!r} needs {expected[name].shape}")
        elif name.rsplit(".", 1)[-1] in BIAS_NAMES and not np.any(array):
            continue
        else:
            raise SatsimError(f"the state dict has {name!r}, which model {like.name!r} does not "
                              "have (the architectures differ)")
    return with_tensors(like, {name: arrays[name].astype(like.dtype) for name in expected})
