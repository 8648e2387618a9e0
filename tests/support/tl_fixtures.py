"""TransformerLens fixtures (tests/data/tl, written by scripts/tl_configs.py) as model objects.

A fixture holds a HookedTransformer's config fields, state dict, tokens, logits and every hook
of ``run_with_cache``. :func:`load` rebuilds an object with what the importer reads from a
HookedTransformer (``cfg``, ``state_dict()``, ``blocks[l].attn.attn_scale``), so the importer
is checked against TransformerLens's own numbers without transformer-lens installed.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from types import SimpleNamespace

import numpy as np
import torch

from tests.support import paths

DATA = paths.DATA / "tl"
NAMES = sorted(path.stem for path in DATA.glob("*.npz"))


class FixtureModel:
    """The parts of a HookedTransformer the importer reads: cfg, state_dict(), blocks."""

    def __init__(self, cfg: SimpleNamespace, state: dict[str, torch.Tensor]) -> None:
        self.cfg = cfg
        self._state = state
        # TransformerLens's rule (AbstractAttention): divide by attn_scale, or by 1 when off.
        divisor = cfg.attn_scale if cfg.use_attn_scale else 1.0
        self.blocks = [SimpleNamespace(attn=SimpleNamespace(attn_scale=divisor))
                       for _ in range(cfg.n_layers)]

    def state_dict(self) -> dict[str, torch.Tensor]:
        """The stored state dict (tensors, buffers included)."""
        return dict(self._state)


@dataclass
class Fixture:
    """One fixture: the model object, its tokens, TransformerLens's logits and hooks."""

    name: str
    model: FixtureModel
    tokens: np.ndarray  # (batch, pos) int64
    logits: np.ndarray  # (batch, pos, d_vocab_out)
    cache: dict[str, np.ndarray]  # hook name → activation, in hook order


def load(name: str) -> Fixture:
    """Read fixture ``name`` from tests/data/tl."""
    with np.load(DATA / f"{name}.npz") as data:
        cfg = SimpleNamespace(**json.loads(str(data["config_json"])))
        state = {key[len("param/"):]: torch.from_numpy(data[key].copy())
                 for key in data.files if key.startswith("param/")}
        cache = {hook: data[f"cache/{hook}"] for hook in data["hook_order"]}
        return Fixture(name, FixtureModel(cfg, state), data["tokens"], data["logits"], cache)


def with_settings(fixture: Fixture, **settings) -> FixtureModel:
    """The fixture's model with config settings changed and the state dict made to fit them.

    A normalization_type without learned weights drops the norms' ``w`` and ``b``; RMS drops
    ``b``; the weights of the model otherwise stay as they are.
    """
    cfg = SimpleNamespace(**{**vars(fixture.model.cfg), **settings})
    state = fixture.model.state_dict()
    drop = {"RMS": (".b",), "LNPre": (".w", ".b"), "RMSPre": (".w", ".b"),
            None: (".w", ".b")}.get(cfg.normalization_type, ())
    norms = (".ln1", ".ln2", "ln_final")
    state = {key: value for key, value in state.items()
             if not (any(part in key for part in norms) and key.endswith(drop))}
    return FixtureModel(cfg, state)
