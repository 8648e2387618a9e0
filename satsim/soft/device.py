"""Choosing where and in what precision the soft twin runs: auto|cpu|cuda, float32|float64."""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from satsim.errors import SatsimError

DEVICES = ("auto", "cpu", "cuda")
DTYPES = {"float32": torch.float32, "float64": torch.float64}


def resolve_device(device: str | torch.device = "auto") -> torch.device:
    """Return the torch device for ``auto`` (CUDA when available), ``cpu`` or ``cuda[:i]``."""
    name = str(device)
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    unknown = f"unknown device {name!r}; use one of {', '.join(DEVICES)} (or cuda:N)"
    try:
        parsed = torch.device(name)
    except (RuntimeError, ValueError):
        raise SatsimError(unknown) from None
    if parsed.type not in ("cpu", "cuda"):
        raise SatsimError(unknown)
    if parsed.type == "cuda" and not torch.cuda.is_available():
        raise SatsimError(f"device {name!r} was asked for, but torch sees no CUDA GPU here")
    return parsed


def resolve_dtype(dtype: Any) -> torch.dtype:
    """Return torch.float32 or torch.float64 for a name, a NumPy dtype or a torch dtype."""
    if isinstance(dtype, torch.dtype) and dtype in DTYPES.values():
        return dtype
    try:
        name = str(np.dtype(dtype))
    except TypeError:
        name = str(dtype)
    if name not in DTYPES:
        raise SatsimError(f"the soft twin runs in float32 or float64, not {dtype!r}")
    return DTYPES[name]
