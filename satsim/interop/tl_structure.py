"""What a HookedTransformer runs: read from its modules, stated by its config, and the two compared.

TransformerLens copies some settings into the modules when it builds them (each norm's class and
ε, the MLP's activation function, the attention's divisor and local window) and reads others from
the shared config on every call (attn_only, attention_dir, whether ln_final runs). Editing the
config afterwards, or ``process_weights_`` replacing the norms, makes the two disagree: the
modules are what runs, and a disagreement is refused by the config field's name, since satsim
cannot tell which one the user means. A model whose modules cannot be read (not a torch module)
is described by its config alone.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from satsim.errors import SatsimError

NORM_CLASSES = {"LayerNorm": "LN", "LayerNormPre": "LNPre", "RMSNorm": "RMS",
                "RMSNormPre": "RMSPre"}
"""TransformerLens norm class → the normalization_type that builds it."""


@dataclass(frozen=True)
class Norm:
    """A norm as TransformerLens builds it: its normalization type and ε."""

    type: str  # LN, LNPre, RMS or RMSPre
    eps: float


@dataclass(frozen=True)
class Layer:
    """What one block runs: its norms, its MLP's activation (None: no MLP), divisor and mask."""

    ln1: Norm | None
    ln2: Norm | None
    act_fn: str | None
    divisor: float
    causal: bool


@dataclass(frozen=True)
class Structure:
    """What a HookedTransformer runs, layer by layer, and its final norm (None: none)."""

    layers: tuple[Layer, ...]
    ln_final: Norm | None


def final_norm_type(cfg: Any) -> str | None:
    """The normalization type of ln_final: the blocks', or RMS(Pre) under LN(Pre) with final_rms."""
    norm_type = cfg.normalization_type
    if getattr(cfg, "final_rms", False) and norm_type in ("LN", "LNPre"):
        return "RMS" if norm_type == "LN" else "RMSPre"
    return norm_type


def config_divisor(cfg: Any) -> float:
    """The score divisor the config asks for: attn_scale, or 1 when use_attn_scale is off."""
    return float(cfg.attn_scale) if cfg.use_attn_scale else 1.0


def structure_from_config(cfg: Any) -> Structure:
    """The structure a HookedTransformer built from ``cfg`` runs."""
    norm = None if cfg.normalization_type is None else Norm(cfg.normalization_type, float(cfg.eps))
    final_type = final_norm_type(cfg)
    layer = Layer(ln1=norm, ln2=None if cfg.attn_only else norm,
                  act_fn=None if cfg.attn_only else cfg.act_fn, divisor=config_divisor(cfg),
                  causal=cfg.attention_dir == "causal")
    return Structure(layers=(layer,) * cfg.n_layers,
                     ln_final=None if final_type is None else Norm(final_type, float(cfg.eps)))


def _disagree(field: str, value: Any, detail: str) -> SatsimError:
    return SatsimError(f"TransformerLens setting {field}={value!r} disagrees with the modules "
                       f"that run ({detail}): the config was edited, or fold_ln replaced the "
                       "norms, after the model was built; build the model from a config that "
                       "describes it")


def check_agreement(cfg: Any, stated: Structure, running: Structure) -> None:
    """Raise a one-line SatsimError naming the first config field the modules contradict."""
    for layer, (want, have) in enumerate(zip(stated.layers, running.layers)):
        p = f"blocks.{layer}"
        for name in ("ln1", "ln2"):
            _check_norm(cfg, getattr(want, name), getattr(have, name), f"{p}.{name}",
                        "normalization_type")
        if want.act_fn != have.act_fn:
            raise _disagree("act_fn", cfg.act_fn, f"{p}.mlp.act_fn is {have.act_fn}")
        if want.divisor != have.divisor:
            field = "attn_scale" if cfg.use_attn_scale else "use_attn_scale"
            raise _disagree(field, getattr(cfg, field),
                            f"{p}.attn divides the scores by {have.divisor:g}")
        if want.causal != have.causal:
            direction = "causal" if have.causal else "bidirectional"
            raise _disagree("attention_dir", cfg.attention_dir, f"{p}.attn is {direction}")
    field = "final_rms" if getattr(cfg, "final_rms", False) else "normalization_type"
    _check_norm(cfg, stated.ln_final, running.ln_final, "ln_final", field)


def _check_norm(cfg: Any, want: Norm | None, have: Norm | None, where: str, field: str) -> None:
    if (want and want.type) != (have and have.type):
        detail = f"{where} is {'absent' if have is None else _class_name(have.type)}"
        raise _disagree(field, getattr(cfg, field), detail)
    if want is not None and have is not None and want.eps != have.eps:
        raise _disagree("eps", cfg.eps, f"{where}.eps is {have.eps:g}")


def _class_name(norm_type: str) -> str:
    return next(name for name, built in NORM_CLASSES.items() if built == norm_type)


class _Components:
    """TransformerLens's own classes, imported when a real model is read (it is loaded then)."""

    def __init__(self) -> None:
        import torch
        from transformer_lens import HookedTransformer, components
        from transformer_lens.components.mlps.mlp import MLP
        from transformer_lens.hook_points import HookPoint
        from transformer_lens.utilities.activation_functions import SUPPORTED_ACTIVATIONS
        from transformer_lens.utilities.typed_module_list import TypedModuleList

        self.model = HookedTransformer
        self.norms = {getattr(components, name): norm for name, norm in NORM_CLASSES.items()}
        self.identity = torch.nn.Identity
        self.attention = components.Attention
        self.mlp = MLP
        self.known = {*self.norms, self.identity, self.attention, MLP, HookPoint,
                      TypedModuleList, components.Embed, components.PosEmbed,
                      components.Unembed, components.TransformerBlock}
        self.activations = SUPPORTED_ACTIVATIONS


def _check_modules(model: Any, parts: _Components) -> None:
    """Refuse hooks, replaced forward methods and modules TransformerLens does not build."""
    import torch

    module_hooks = torch.nn.modules.module
    if getattr(module_hooks, "_global_forward_hooks", None) or getattr(
            module_hooks, "_global_forward_pre_hooks", None):
        raise SatsimError("torch has a global forward hook registered, which changes what every "
                          "module computes; satsim imports weights, not hooks: remove it first")
    if not isinstance(model, parts.model) or any(
            getattr(type(model), method) is not getattr(parts.model, method)
            for method in ("forward", "input_to_embed")):
        raise SatsimError(f"a {type(model).__name__} is not a HookedTransformer that runs "
                          "TransformerLens's own forward pass; pass a HookedTransformer")
    for name, module in model.named_modules():
        where = name or "the model"
        if module._forward_hooks or module._forward_pre_hooks:
            raise SatsimError(f"{where} has a forward hook (model.add_hook, permanent or not): "
                              "satsim imports weights, not hooks; remove it with "
                              "model.reset_hooks(including_permanent=True), or put its effect "
                              "into the weights")
        if "forward" in vars(module):
            raise SatsimError(f"{where} has its forward method replaced; satsim imports "
                              "TransformerLens's own modules only")
        if name and type(module) not in parts.known:
            raise SatsimError(f"{where} is a {type(module).__name__}, not a module TransformerLens "
                              "builds for the settings satsim supports")


def _norm(module: Any, parts: _Components) -> Norm | None:
    if type(module) is parts.identity:
        return None
    return Norm(parts.norms[type(module)], float(module.eps))


def _activation(function: Any, cfg: Any, where: str, parts: _Components) -> str:
    names = [name for name, known in parts.activations.items() if known is function]
    if not names:
        raise SatsimError(f"{where}.act_fn is {function!r}, not an activation TransformerLens "
                          "builds; satsim cannot tell what it computes")
    return cfg.act_fn if cfg.act_fn in names else names[0]


def _part(owner: Any, name: str, where: str, cfg: Any, field: str) -> Any:
    """``owner.name``; its absence contradicts the config ``field`` (which made it run)."""
    if not hasattr(owner, name):
        raise _disagree(field, getattr(cfg, field), f"{where} has no {name}")
    return getattr(owner, name)


def structure_from_modules(model: Any) -> Structure:
    """The structure a HookedTransformer runs, read from its modules (and the config it reads).

    Refuses hooks, replaced forward methods, modules it does not know and local attention.
    """
    parts = _Components()
    _check_modules(model, parts)
    cfg = model.cfg
    layers = []
    for index, block in enumerate(model.blocks):
        p = f"blocks.{index}"
        attn = block.attn
        if type(attn) is not parts.attention:
            raise SatsimError(f"{p}.attn is a {type(attn).__name__}, not TransformerLens's "
                              "Attention")
        if attn.attn_type != "global":
            raise _disagree("use_local_attn", cfg.use_local_attn, f"{p}.attn is local")
        ignore = float(getattr(attn, "IGNORE", -math.inf))
        if ignore != -math.inf:
            raise SatsimError(f"{p}.attn.IGNORE is {ignore!r}, not -inf: TransformerLens gives "
                              "the causally masked scores that value, so masked keys would take "
                              "part in the softmax")
        direction = getattr(attn, "_attention_dir_override", None) or cfg.attention_dir
        # TransformerBlock.forward reads these on every call: the MLP runs unless attn_only, and
        # always in a parallel block
        mlp_runs = not cfg.attn_only or cfg.parallel_attn_mlp
        mlp = _part(block, "mlp", p, cfg, "attn_only") if mlp_runs else None
        if mlp is not None and type(mlp) is not parts.mlp:
            raise SatsimError(f"{p}.mlp is a {type(mlp).__name__}, not TransformerLens's MLP")
        layers.append(Layer(
            ln1=_norm(block.ln1, parts),
            ln2=_norm(_part(block, "ln2", p, cfg, "attn_only"), parts) if mlp_runs else None,
            act_fn=None if mlp is None else _activation(mlp.act_fn, cfg, f"{p}.mlp", parts),
            divisor=float(attn.attn_scale), causal=direction == "causal"))
    # HookedTransformer.forward applies ln_final only while normalization_type is not None.
    final = None
    if cfg.normalization_type is not None:
        final = _norm(_part(model, "ln_final", "the model", cfg, "normalization_type"), parts)
    return Structure(layers=tuple(layers), ln_final=final)
