"""Save and load model specs as safetensors, with the configuration as JSON metadata (no pickle)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

from satsim.errors import SatsimError, WeightsFileError, first_line
from satsim.model.masks import mask_of
from satsim.model.spec import (
    AttentionSpec,
    BlockSpec,
    FeedForwardSpec,
    LayerNormSpec,
    ModelSpec,
    OutputSpec,
    PositionalSpec,
    tensor_name,
)
from satsim.output import write_bytes_atomically

FORMAT = "satsim-spec"
VERSION = 5
READABLE_VERSIONS = (1, 2, 3, 4, 5)
"""Version 2 added norm kinds, attention scales, activations and parallel blocks; version 3,
tokens of any length in the vocab and the categorical and numerical output tasks (no new keys:
a version 1 or 2 file reads as before); version 4, attention masks (``mask`` for ``causal``),
the source program of a compiled model and its ``max_tokens``; version 5, each head's attention
kind and width (``kind``, ``delta``; absent: "run")."""
METADATA_KEY = "satsim"


def _norm_config(ln: LayerNormSpec | None) -> dict[str, Any] | None:
    return None if ln is None else {"eps": ln.eps, "affine": ln.affine, "kind": ln.kind}


def spec_config(spec: ModelSpec) -> dict[str, Any]:
    """Everything about ``spec`` that is not a tensor, as a JSON-ready dict."""
    blocks = [
        {
            "attn": None if b.attn is None else {"mask": _mask_config(b.attn.mask),
                                                 "scale": b.attn.scale,
                                                 "kind": _mask_config(b.attn.kind),
                                                 "delta": _mask_config(b.attn.delta)},
            "mlp": None if b.mlp is None else {"activation": b.mlp.activation},
            "ln1": _norm_config(b.ln1),
            "ln2": _norm_config(b.ln2),
        }
        for b in spec.blocks
    ]
    return {
        "format": FORMAT,
        "version": VERSION,
        "name": spec.name,
        "description": spec.description,
        "dim_names": list(spec.dim_names),
        "vocab": list(spec.vocab),
        "bos": spec.bos,
        "eos": spec.eos,
        "norm": spec.norm,
        "parallel": spec.parallel,
        "residual": spec.residual if isinstance(spec.residual, bool) else list(spec.residual),
        "positional": {"kind": spec.positional.kind, "features": list(spec.positional.features)},
        "blocks": blocks,
        "ln_final": _norm_config(spec.ln_final),
        "output": {
            "labels": list(spec.output.labels),
            "task": spec.output.task,
            "readout": spec.output.readout,
        },
        "dtype": str(spec.dtype),
        "tensors": {name: list(a.shape) for name, a in spec.tensors().items()},
        "source": spec.source,
        "source_language": spec.source_language,
        "max_tokens": spec.max_tokens,
    }


def _mask_config(value: Any) -> Any:
    """One value for every head as it is, or the per-head tuple as a JSON list."""
    return list(value) if isinstance(value, tuple) else value


def _per_head(value: Any) -> Any:
    """A per-head list of a configuration back as a tuple; one value for all heads as it is."""
    return tuple(value) if isinstance(value, list) else value


def _mask_from_config(cfg: dict[str, Any]) -> str | tuple[str, ...]:
    """The attention mask of a block's configuration (versions 1-3: the causal flag)."""
    if "mask" not in cfg:
        return mask_of(bool(cfg["causal"]))
    return cfg["mask"] if isinstance(cfg["mask"], str) else tuple(cfg["mask"])


def save_spec(spec: ModelSpec, path: str | Path) -> None:
    """Write ``spec`` to ``path`` as safetensors with its configuration in the metadata.

    The bytes are written by Python, so the file's mode follows the umask (safetensors' own
    ``save_file`` creates every file with mode 0600), and through a rename: a failed or killed
    write leaves the old file as it was.
    """
    from safetensors.numpy import save

    if not isinstance(spec, ModelSpec):
        raise SatsimError(f"save_spec needs a ModelSpec, got {type(spec).__name__}")
    _check_path(path, "save_spec")
    tensors = {name: np.ascontiguousarray(a) for name, a in spec.tensors().items()}
    metadata = {METADATA_KEY: json.dumps(spec_config(spec))}
    write_bytes_atomically(path, save(tensors, metadata=metadata))


def _check_path(path: Any, what: str) -> None:
    """Refuse a path that is not a string or path-like object, or is empty, in one line."""
    if not isinstance(path, (str, Path)) and not hasattr(path, "__fspath__"):
        raise SatsimError(f"{what} needs a file path, got {type(path).__name__}")
    if str(path) == "":
        raise SatsimError(f"{what} needs a file path, got an empty one")


def _read_file(path: Path) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    """Read the configuration and tensors, turning every low-level failure into one message."""
    from safetensors import safe_open

    if not path.exists():
        raise WeightsFileError(f"no such weights file: {path}")
    if not path.is_file():
        what = "a folder" if path.is_dir() else "not a regular file"
        raise WeightsFileError(f"{path} is {what}; give a weights file (.safetensors)")
    try:
        with safe_open(str(path), framework="numpy") as handle:
            metadata = handle.metadata() or {}
            tensors = {name: handle.get_tensor(name) for name in handle.keys()}  # noqa: SIM118
    except Exception as error:  # safetensors raises several unrelated types on corrupt input
        reason = first_line(error)
        raise WeightsFileError(f"{path} is not a readable safetensors file ({reason})") from None
    if METADATA_KEY not in metadata:
        raise WeightsFileError(f"{path} has no satsim configuration in its metadata")
    try:
        config = json.loads(metadata[METADATA_KEY])
    except json.JSONDecodeError as error:
        raise WeightsFileError(f"{path} has a corrupt satsim configuration ({error})") from None
    if not isinstance(config, dict) or config.get("format") != FORMAT:
        raise WeightsFileError(f"{path} does not hold a {FORMAT} configuration")
    if config.get("version") not in READABLE_VERSIONS:
        raise WeightsFileError(f"{path} has format version {config.get('version')}; "
                               f"this satsim reads versions {READABLE_VERSIONS}")
    return config, tensors


def _names(names: list[str]) -> str:
    """Tensor names for a one-line message: the first few, then how many in all."""
    shown = ", ".join(names[:4])
    return shown if len(names) <= 4 else f"{shown}, … ({len(names)} in all)"


def _check_tensor_list(config: dict[str, Any], tensors: dict[str, np.ndarray]) -> None:
    """Raise unless the file holds exactly the tensors, with the shapes, its configuration lists."""
    expected = {name: tuple(shape) for name, shape in config["tensors"].items()}
    missing = sorted(set(expected) - set(tensors))
    extra = sorted(set(tensors) - set(expected))
    if missing:
        raise WeightsFileError(f"weights file is missing tensor {_names(missing)}")
    if extra:
        raise WeightsFileError(f"weights file has unexpected tensor {_names(extra)}")
    for name, shape in expected.items():
        if tensors[name].shape != shape:
            raise WeightsFileError(
                f"tensor {name} has shape {tensors[name].shape} but the configuration says {shape}"
            )
        if tensors[name].dtype not in (np.float32, np.float64):
            raise WeightsFileError(f"tensor {name} has dtype {tensors[name].dtype}; "
                                   "expected float32 or float64")
        if not np.all(np.isfinite(tensors[name])):
            raise WeightsFileError(f"tensor {name} contains NaN or infinite values")


def _layer_norm(cfg: dict[str, Any] | None, tensors: dict[str, np.ndarray], prefix: str):
    if cfg is None:
        return None
    kind = cfg.get("kind", "layer")
    if cfg["affine"]:
        return LayerNormSpec(w=tensors[tensor_name(prefix, "w")],
                             b=tensors.get(tensor_name(prefix, "b")), eps=cfg["eps"], kind=kind)
    return LayerNormSpec(eps=cfg["eps"], kind=kind)


def _norm_tensors(cfg: dict[str, Any] | None, prefix: str) -> set[str]:
    """The tensors a norm's configuration implies: γ when affine, and β for a LayerNorm."""
    if cfg is None or not cfg["affine"]:
        return set()
    fields = ("w", "b") if cfg.get("kind", "layer") == "layer" else ("w",)
    return {tensor_name(prefix, name) for name in fields}


def implied_tensors(config: dict[str, Any]) -> set[str]:
    """The tensors a configuration cannot do without (the optional biases aside)."""
    names = {"embed.W_E", "unembed.W_U"} | _norm_tensors(config["ln_final"], "ln_final")
    names |= {"learned": {"pos_embed.W_pos"}, "features": {"pos_embed.W_feat"}}.get(
        config["positional"]["kind"], set())
    for layer, cfg in enumerate(config["blocks"]):
        prefix = f"blocks.{layer}"
        if cfg["attn"] is not None:
            names |= {tensor_name(f"{prefix}.attn", n) for n in ("W_Q", "W_K", "W_V", "W_O")}
        if cfg["mlp"]:
            names |= {tensor_name(f"{prefix}.mlp", n) for n in ("W_in", "W_out")}
        names |= _norm_tensors(cfg["ln1"], f"{prefix}.ln1") | _norm_tensors(cfg["ln2"],
                                                                            f"{prefix}.ln2")
    return names


def spec_from_parts(config: dict[str, Any], tensors: dict[str, np.ndarray]) -> ModelSpec:
    """Build a ModelSpec from a configuration dict and named tensors.

    Every tensor must be one the configuration places, and every tensor it needs must be there:
    a file whose blocks outnumber its configuration's would otherwise load as a smaller model.
    """
    _check_tensor_list(config, tensors)
    missing = sorted(implied_tensors(config) - set(tensors))
    if missing:
        raise WeightsFileError(f"the configuration needs tensors the file lacks: "
                               f"{_names(missing)}")
    spec = _build_spec(config, tensors)
    unexplained = sorted(set(tensors) - set(spec.tensors()))
    if unexplained:
        raise WeightsFileError(f"the file holds tensors its configuration does not place "
                               f"({_names(unexplained)}); it would load as a different model")
    return spec


def _build_spec(config: dict[str, Any], tensors: dict[str, np.ndarray]) -> ModelSpec:
    """The ModelSpec of a configuration, its tensors taken by name from ``tensors``."""
    blocks = []
    for layer, cfg in enumerate(config["blocks"]):
        prefix = f"blocks.{layer}"
        attn = None
        if cfg["attn"] is not None:
            names = ("W_Q", "W_K", "W_V", "W_O", "b_Q", "b_K", "b_V", "b_O")
            parts = {n: tensors.get(tensor_name(f"{prefix}.attn", n)) for n in names}
            attn = AttentionSpec(**parts, mask=_mask_from_config(cfg["attn"]),
                                 scale=cfg["attn"].get("scale"),
                                 kind=_per_head(cfg["attn"].get("kind", "run")),
                                 delta=_per_head(cfg["attn"].get("delta")))
        mlp = None
        if cfg["mlp"]:  # version 1: true; version 2: its settings
            names = ("W_in", "W_out", "b_in", "b_out")
            settings = cfg["mlp"] if isinstance(cfg["mlp"], dict) else {}
            mlp = FeedForwardSpec(
                **{n: tensors.get(tensor_name(f"{prefix}.mlp", n)) for n in names},
                activation=settings.get("activation", "relu"))
        blocks.append(BlockSpec(
            attn=attn,
            mlp=mlp,
            ln1=_layer_norm(cfg["ln1"], tensors, f"{prefix}.ln1"),
            ln2=_layer_norm(cfg["ln2"], tensors, f"{prefix}.ln2"),
        ))
    positional = PositionalSpec(
        kind=config["positional"]["kind"],
        W_pos=tensors.get("pos_embed.W_pos"),
        features=tuple(config["positional"]["features"]),
        W_feat=tensors.get("pos_embed.W_feat"),
    )
    output = OutputSpec(
        W_U=tensors["unembed.W_U"],
        b_U=tensors.get("unembed.b_U"),
        labels=tuple(config["output"]["labels"]),
        task=config["output"]["task"],
        readout=config["output"]["readout"],
    )
    return ModelSpec(
        vocab=tuple(config["vocab"]),
        W_E=tensors["embed.W_E"],
        blocks=tuple(blocks),
        output=output,
        positional=positional,
        norm=config["norm"],
        parallel=bool(config.get("parallel", False)),
        residual=(tuple(config["residual"]) if isinstance(config["residual"], list)
                  else bool(config["residual"])),
        ln_final=_layer_norm(config["ln_final"], tensors, "ln_final"),
        bos=config["bos"],
        eos=config["eos"],
        name=config["name"],
        description=config.get("description", ""),
        dim_names=tuple(config.get("dim_names", ())),
        source=config.get("source", ""),
        source_language=config.get("source_language", ""),
        max_tokens=config.get("max_tokens"),
    )


def load_spec(path: str | Path) -> ModelSpec:
    """Read a spec saved by :func:`save_spec`; any problem becomes a one-line WeightsFileError."""
    _check_path(path, "load_spec")
    path = Path(path)
    config, tensors = _read_file(path)
    if config.get("name") in (None, ""):  # unnamed: known by its file
        config = {**config, "name": path.stem}
    try:
        return spec_from_parts(config, tensors)
    except SatsimError as error:
        raise WeightsFileError(f"{path}: {error}") from None
    except (KeyError, TypeError, AttributeError) as error:
        raise WeightsFileError(f"{path} has a malformed satsim configuration ({error!r})") from None
