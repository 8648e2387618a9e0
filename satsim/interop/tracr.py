"""tracr's compiled RASP programs as satsim specs, to run with saturated attention.

tracr (tracr-pypi) compiles a RASP program to a transformer whose attention approximates hard
attention by softmax at a fixed coldness; the same weights under the simulator's saturated
attention (attention-only β → ∞) give ``rasp.evaluate``'s outputs wherever tracr's MLPs are exact,
at every length up to the compiled max_seq_len (docs/interop.md, section tracr). The layout read
here is written down in docs/notes_tracr.md: haiku parameters ``token_embed/embeddings`` [V, d],
``pos_embed/embeddings`` [N + 1, d] (row 0, the BOS position, is zero), per layer
``transformer/layer_L/attn/{query,key,value,linear}`` and ``transformer/layer_L/mlp/{linear_1,
linear_2}`` (heads side by side in the columns), no norm, ReLU MLPs, residual everywhere, and a
readout that projects the residual stream onto the output SOp's directions.

:func:`spec_from_tracr_arrays` needs only NumPy (and refuses a dtype whose rounding would move
tie sets, :mod:`satsim.interop.tracr_checks`); :func:`from_tracr` reads an
``AssembledTransformerModel`` (tracr installed), checks that ``program`` is its compiled output,
calls :func:`spec_from_tracr_arrays` and checks the spec against ``assembled.apply``;
:func:`load_tracr_fixture` reads the fixtures ``scripts/tracr_fixtures.py`` writes.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from satsim.errors import SatsimError
from satsim.interop.tracr_checks import check_against_tracr, check_ties, probe_inputs
from satsim.model.masks import mask_of
from satsim.model.spec import (
    AttentionSpec,
    BlockSpec,
    FeedForwardSpec,
    ModelSpec,
    OutputSpec,
    PositionalSpec,
)

Params = Mapping[str, Any]


def _flat(params: Params) -> dict[str, np.ndarray]:
    """``module/param`` → float64 array, from haiku's nested dict or an already flat one."""
    flat: dict[str, np.ndarray] = {}
    for key, value in params.items():
        if isinstance(value, Mapping):
            flat.update({f"{key}/{name}": np.asarray(array) for name, array in value.items()})
        else:
            flat[key] = np.asarray(value)
    return flat


def _get(params: dict[str, np.ndarray], name: str) -> np.ndarray:
    if name not in params:
        raise SatsimError(f"tracr parameters lack {name!r}; is this a tracr-compiled model?")
    return params[name].astype(np.float64)


def _heads(matrix: np.ndarray, bias: np.ndarray, num_heads: int, key_size: int,
           rows: bool) -> tuple[np.ndarray, np.ndarray]:
    """Split haiku's side-by-side heads: [d, H·K] → [H, d, K], or rows [H·K, d] → [H, K, d]."""
    width = matrix.shape[0 if rows else 1]
    if matrix.ndim != 2 or width != num_heads * key_size:
        raise SatsimError(f"an attention weight of shape {matrix.shape} does not hold "
                          f"{num_heads} heads of size {key_size}")
    if rows:
        return matrix.reshape(num_heads, key_size, -1), bias
    d_model = matrix.shape[0]
    split = matrix.reshape(d_model, num_heads, key_size).transpose(1, 0, 2)
    return split, bias.reshape(num_heads, key_size)


def _attention(params: dict[str, np.ndarray], layer: int, num_heads: int, key_size: int,
               causal: bool) -> AttentionSpec:
    """One layer's attention; the score scale is haiku's 1/√key_size (the spec's default)."""
    prefix = f"transformer/layer_{layer}/attn"
    parts = {}
    for name, weight, bias in (("query", "W_Q", "b_Q"), ("key", "W_K", "b_K"),
                               ("value", "W_V", "b_V")):
        parts[weight], parts[bias] = _heads(_get(params, f"{prefix}/{name}/w"),
                                            _get(params, f"{prefix}/{name}/b"),
                                            num_heads, key_size, rows=False)
    parts["W_O"], parts["b_O"] = _heads(_get(params, f"{prefix}/linear/w"),
                                        _get(params, f"{prefix}/linear/b"),
                                        num_heads, key_size, rows=True)
    return AttentionSpec(**parts, mask=mask_of(causal))


def _feed_forward(params: dict[str, np.ndarray], layer: int) -> FeedForwardSpec:
    """One layer's ReLU MLP."""
    prefix = f"transformer/layer_{layer}/mlp"
    return FeedForwardSpec(W_in=_get(params, f"{prefix}/linear_1/w"),
                           b_in=_get(params, f"{prefix}/linear_1/b"),
                           W_out=_get(params, f"{prefix}/linear_2/w"),
                           b_out=_get(params, f"{prefix}/linear_2/b"), activation="relu")


def spec_from_tracr_arrays(
    params: Params,
    *,
    num_heads: int,
    key_size: int,
    causal: bool,
    input_vocab: Sequence[str],
    bos_token: str,
    residual_labels: Sequence[str],
    output_labels: Sequence[str],
    output_values: Sequence[Any] | None,
    pad_token: str | None = None,
    layer_norm: bool = False,
    activation: str = "relu",
    name: str = "tracr",
    dtype: Any = np.float64,
) -> ModelSpec:
    """A ModelSpec from a tracr model's arrays and layout (no tracr needed).

    ``params``: haiku's parameters (nested ``{module: {param: array}}`` or flat
    ``{"module/param": array}``); ``input_vocab``: the input tokens in id order (BOS and pad
    included); ``output_labels``: the residual labels read out, in the output encoder's order;
    ``output_values``: the program's output values in that order (categorical), or None
    (numerical). The pad token's row is dropped (no input uses it). Weights are kept as tracr
    made them (cast to ``dtype``, which is refused where its rounding would move tie sets); the
    attention scale is 1/√key_size.
    """
    if layer_norm or activation != "relu":
        raise SatsimError(f"tracr models have no layer norm and ReLU MLPs; this one has "
                          f"layer_norm={layer_norm}, activation {activation!r}")
    flat = _flat(params)
    residual_labels = [str(label) for label in residual_labels]
    missing = [label for label in output_labels if label not in residual_labels]
    if missing:
        raise SatsimError(f"output direction {missing[0]!r} is not in the residual stream")
    if output_values is not None and len(output_values) != len(output_labels):
        raise SatsimError(f"{len(output_values)} output values for {len(output_labels)} "
                          "output directions")
    vocab = [str(token) for token in input_vocab]
    kept = [i for i, token in enumerate(vocab) if token != pad_token]
    embeddings = _get(flat, "token_embed/embeddings")
    layers = sorted({int(key.split("/")[1].removeprefix("layer_")) for key in flat
                     if key.startswith("transformer/layer_")})
    blocks = tuple(BlockSpec(attn=_attention(flat, layer, num_heads, key_size, causal),
                             mlp=_feed_forward(flat, layer)) for layer in layers)
    unembed = np.zeros((len(residual_labels), len(output_labels)))
    for column, label in enumerate(output_labels):
        unembed[residual_labels.index(label), column] = 1.0
    categorical = output_values is not None
    output = OutputSpec(
        W_U=unembed,
        labels=tuple(str(v) for v in output_values) if categorical else tuple(output_labels),
        task="categorical" if categorical else "numerical", readout="per-position")
    spec = ModelSpec(
        vocab=tuple(vocab[i] for i in kept),
        W_E=embeddings[kept],
        blocks=blocks,
        output=output,
        positional=PositionalSpec(kind="learned", W_pos=_get(flat, "pos_embed/embeddings")),
        norm="none",
        residual=True,
        bos=str(bos_token),
        name=name,
        description=f"tracr-compiled RASP program {name}",
        dim_names=tuple(residual_labels),
    )
    check_ties(spec, dtype, probe_inputs(spec), name)
    return spec.astype(dtype)


def _output_directions(assembled: Any, program: Any) -> tuple[list[str], list[Any] | None]:
    """The residual directions the output is read from, and its values (None: numerical).

    ``program`` must be the compiled output: of its kind (categorical or numerical), and with its
    label's values in the residual stream exactly the output encoder's.
    """
    from tracr.craft import bases
    from tracr.rasp import rasp

    label = program if isinstance(program, str) else program.label
    output_map = getattr(assembled.output_encoder, "encoding_map", None)
    kind = "numerical" if output_map is None else "categorical"
    if not isinstance(program, str) and rasp.is_categorical(program) != (output_map is not None):
        other = "numerical" if kind == "categorical" else "categorical"
        raise SatsimError(f"program {label!r} is {other}, but tracr compiled a {kind} output; "
                          "pass the program that was compiled")
    prefix = f"{label}:"
    held = sorted(name[len(prefix):] for name in assembled.residual_labels
                  if name.startswith(prefix))
    if output_map is None:
        if label not in assembled.residual_labels or held:
            raise SatsimError(f"program {label!r} is not the numerical output tracr compiled "
                              "(no single direction of that name in the residual stream); "
                              "pass the program that was compiled")
        return [str(bases.BasisDirection(label))], None
    values = [value for value, _ in sorted(output_map.items(), key=lambda item: item[1])]
    if sorted(str(value) for value in values) != held:
        raise SatsimError(f"program {label!r} is not the output tracr compiled: the residual "
                          f"stream holds it with the values {held[:6]}"
                          f"{' …' if len(held) > 6 else ''}, the output encoder has "
                          f"{sorted(map(str, values))[:6]}; pass the program that was compiled")
    return [str(bases.BasisDirection(label, value)) for value in values], values


def from_tracr(assembled: Any, program: Any, *, name: str | None = None,
               dtype: Any = np.float64, check: bool = True) -> ModelSpec:
    """A ModelSpec from tracr's ``AssembledTransformerModel``, compiled with ``compiler_bos``.

    ``program`` is the RASP SOp that was compiled (its label names the output directions; the
    assembled model does not keep it): a program of another kind, or whose values in the residual
    stream are not the output encoder's, is refused. ``dtype`` float64 (the default) or float32,
    which is refused where its rounding would move tie sets (docs/interop.md). With ``check``
    (the default) the import runs a probe batch through ``assembled.apply`` and satsim's softmax
    at β = 1 and refuses any difference beyond tracr's rounding; ``check=False`` skips that, for
    speed on a model already checked. Run the spec with saturated attention for
    ``rasp.evaluate``'s outputs: ``Simulator(spec).outputs([tokens])``, tokens without BOS.
    """
    encoder = assembled.input_encoder
    if encoder is None or not getattr(encoder, "bos_token", None):
        raise SatsimError("from_tracr needs a model compiled with compiler_bos "
                          "(and a categorical input encoder)")
    config = assembled.model_config
    token_ids = sorted(encoder.encoding_map.items(), key=lambda item: item[1])
    label = program if isinstance(program, str) else program.label
    directions, values = _output_directions(assembled, program)
    spec = spec_from_tracr_arrays(
        assembled.params, num_heads=config.num_heads, key_size=config.key_size,
        causal=bool(config.causal), input_vocab=[token for token, _ in token_ids],
        bos_token=encoder.bos_token, pad_token=encoder.pad_token,
        residual_labels=assembled.residual_labels, output_labels=directions,
        output_values=values, layer_norm=bool(config.layer_norm),
        activation=getattr(config.activation_function, "__name__", "unknown"),
        name=name or str(label), dtype=dtype)
    if check:
        check_against_tracr(assembled, spec, probe_inputs(spec), str(label))
    return spec


def load_tracr_fixture(json_path: str | Path, dtype: Any = np.float64
                       ) -> tuple[ModelSpec, dict[str, Any]]:
    """The spec of a fixture written by ``scripts/tracr_fixtures.py``, and its description.

    The description holds the sampled ``cases`` (``tokens``, ``rasp`` and ``tracr`` outputs).
    """
    json_path = Path(json_path)
    description = json.loads(json_path.read_text())
    with np.load(json_path.with_suffix(".npz")) as arrays:
        params = {key: arrays[key] for key in arrays.files}
    output = description["output"]
    spec = spec_from_tracr_arrays(
        params, num_heads=description["num_heads"], key_size=description["key_size"],
        causal=description["causal"], input_vocab=description["input_vocab"],
        bos_token=description["bos_token"], pad_token=description["pad_token"],
        residual_labels=description["residual_labels"],
        output_labels=description["output_labels"],
        output_values=output["values"] if output["kind"] == "categorical" else None,
        layer_norm=description["layer_norm"], activation=description["activation"],
        name=f"{description['program']}_n{description['max_seq_len']}", dtype=dtype)
    return spec, description
