import dataclasses
import json

import numpy as np
import pytest
from safetensors.numpy import save_file

from satsim import AttentionSpec, SpecError, WeightsFileError, constructions
from satsim.model.io import load_spec, save_spec, spec_config
from tests.support.helpers import invoke_satsim, random_spec


def test_shape_mismatch_names_the_tensor():
    with pytest.raises(SpecError, match=r"attn.W_K has shape \(2, 8, 3\)"):
        AttentionSpec(W_Q=np.zeros((2, 8, 4)), W_K=np.zeros((2, 8, 3)), W_V=np.zeros((2, 8, 4)),
                      W_O=np.zeros((2, 4, 8)))


def test_nan_weights_are_refused_with_the_tensor_name():
    with pytest.raises(SpecError, match="attn.W_V contains NaN"):
        AttentionSpec(W_Q=np.zeros((1, 4, 2)), W_K=np.zeros((1, 4, 2)),
                      W_V=np.full((1, 4, 2), np.nan), W_O=np.zeros((1, 2, 4)))


def test_integer_and_mixed_dtypes_are_refused():
    spec = random_spec(0)
    with pytest.raises(SpecError, match="dtype int64"):
        dataclasses.replace(spec, W_E=np.zeros((3, 8), dtype=np.int64))
    with pytest.raises(SpecError, match="share one dtype"):
        dataclasses.replace(spec, W_E=spec.W_E.astype(np.float32))


def test_model_dimension_mismatch_between_parts():
    spec = random_spec(0, positional="none")
    with pytest.raises(SpecError, match=r"blocks.0.attn.W_Q has d_model 8 != 5"):
        dataclasses.replace(spec, W_E=np.zeros((3, 5)))


def test_layer_norm_must_match_the_placement():
    spec = random_spec(0, norm="post")
    with pytest.raises(SpecError, match="must not have ln1"):
        dataclasses.replace(spec, norm="none")


def test_spec_is_frozen_and_its_arrays_read_only():
    spec = random_spec(0)
    with pytest.raises(dataclasses.FrozenInstanceError):
        spec.norm = "pre"
    with pytest.raises(ValueError):
        spec.W_E[0, 0] = 1.0


def test_spec_copies_its_inputs():
    embedding = np.zeros((3, 8))
    spec = dataclasses.replace(random_spec(0), W_E=embedding)
    embedding[0, 0] = 5.0
    assert spec.W_E[0, 0] == 0.0


@pytest.mark.parametrize("norm", ["none", "pre", "post"])
@pytest.mark.parametrize("positional", ["none", "learned", "sinusoidal", "features"])
def test_save_load_round_trip(tmp_path, norm, positional):
    spec = random_spec(3, norm=norm, positional=positional, biases=norm != "pre")
    path = tmp_path / "model.safetensors"
    save_spec(spec, path)
    loaded = load_spec(path)
    assert spec_config(loaded) == spec_config(spec)
    for name, array in spec.tensors().items():
        np.testing.assert_array_equal(loaded.tensors()[name], array)


def test_round_trip_of_the_construction(tmp_path):
    spec = constructions.build("dyck1")
    save_spec(spec, tmp_path / "d.safetensors")
    assert spec_config(load_spec(tmp_path / "d.safetensors")) == spec_config(spec)


def test_truncated_file_gives_one_line_error(tmp_path):
    path = tmp_path / "m.safetensors"
    save_spec(random_spec(1), path)
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(WeightsFileError, match="not a readable safetensors file") as info:
        load_spec(path)
    assert "\n" not in str(info.value)


def test_garbage_and_missing_files(tmp_path):
    path = tmp_path / "junk.safetensors"
    path.write_bytes(b"\x00\x01not a safetensors file at all" * 10)
    with pytest.raises(WeightsFileError):
        load_spec(path)
    with pytest.raises(WeightsFileError, match="no such weights file"):
        load_spec(tmp_path / "absent.safetensors")


def _rewrite(path, tensors=None, config=None):
    spec = load_spec(path)
    tensors = dict(spec.tensors()) if tensors is None else tensors
    config = spec_config(spec) if config is None else config
    save_file({k: np.ascontiguousarray(v) for k, v in tensors.items()}, str(path),
              metadata={"satsim": json.dumps(config)})


def test_mismatched_shapes_and_missing_tensors(tmp_path):
    path = tmp_path / "m.safetensors"
    spec = random_spec(2)
    save_spec(spec, path)
    tensors = dict(spec.tensors())
    tensors["blocks.0.attn.W_Q"] = np.zeros((2, 8, 5))
    _rewrite(path, tensors=tensors)
    with pytest.raises(WeightsFileError, match="blocks.0.attn.W_Q has shape"):
        load_spec(path)
    save_spec(spec, path)
    tensors = dict(spec.tensors())
    del tensors["blocks.1.mlp.W_in"]
    _rewrite(path, tensors=tensors, config=spec_config(spec))
    with pytest.raises(WeightsFileError, match="missing tensor blocks.1.mlp.W_in"):
        load_spec(path)


def test_nan_weights_in_a_file(tmp_path):
    path = tmp_path / "m.safetensors"
    spec = random_spec(4)
    save_spec(spec, path)
    tensors = {k: np.array(v) for k, v in spec.tensors().items()}
    tensors["blocks.1.attn.W_V"][0, 0, 0] = np.nan
    _rewrite(path, tensors=tensors)
    with pytest.raises(WeightsFileError, match="blocks.1.attn.W_V contains NaN"):
        load_spec(path)


def test_file_without_satsim_metadata(tmp_path):
    path = tmp_path / "plain.safetensors"
    save_file({"x": np.zeros(3)}, str(path))
    with pytest.raises(WeightsFileError, match="no satsim configuration"):
        load_spec(path)


def test_per_sublayer_residual_flags_round_trip_and_are_checked(tmp_path):
    spec = dataclasses.replace(random_spec(5, norm="pre"), residual=(False, True, True, False))
    assert spec.keeps_residual(0, "attn") is False and spec.keeps_residual(1, "mlp") is False
    save_spec(spec, tmp_path / "m.safetensors")
    assert load_spec(tmp_path / "m.safetensors").residual == (False, True, True, False)
    with pytest.raises(SpecError, match="residual has 3 flags for 4 sublayers"):
        dataclasses.replace(spec, residual=(True, True, False))


def test_astype_converts_every_tensor():
    spec = random_spec(0).astype(np.float32)
    assert {a.dtype for a in spec.tensors().values()} == {np.dtype(np.float32)}


def test_repr_shows_the_architecture_in_a_few_lines_not_the_arrays():
    spec = random_spec(0, n_layers=2, n_heads=2, d_head=4, d_mlp=6, norm="pre")
    text = repr(spec)
    assert len(text.splitlines()) == 5 and "array" not in text
    assert "2 layers, d_model 8, float64, norm pre" in text
    assert "layer 1: attention 2 heads × d_head 4 (causal), mlp 6" in text


def test_a_file_with_blocks_its_configuration_does_not_place_is_refused(tmp_path):
    # The configuration lists one block fewer than the file holds: loading it would drop a layer.
    path = tmp_path / "m.safetensors"
    spec = random_spec(2, n_layers=3)
    save_spec(spec, path)
    config = spec_config(spec)
    config["blocks"] = config["blocks"][:2]
    _rewrite(path, config=config)
    with pytest.raises(WeightsFileError, match=r"does not place \(blocks\.2\.attn\.W_K, "
                                               r"blocks\.2\.attn\.W_O, .*in all\)") as info:
        load_spec(path)
    assert str(path) in str(info.value) and "\n" not in str(info.value)


def test_a_configuration_needing_tensors_the_file_lacks_is_refused(tmp_path):
    # An affine LayerNorm whose γ and β are gone (from the file and its list) must not load as a
    # norm without them.
    path = tmp_path / "m.safetensors"
    spec = random_spec(3, norm="pre")
    save_spec(spec, path)
    tensors = {k: v for k, v in spec.tensors().items() if not k.startswith("blocks.1.ln1.")}
    config = spec_config(spec)
    config["tensors"] = {k: list(v.shape) for k, v in tensors.items()}
    _rewrite(path, tensors=tensors, config=config)
    with pytest.raises(WeightsFileError,
                       match="needs tensors the file lacks: blocks.1.ln1.b, blocks.1.ln1.w$"):
        load_spec(path)


@pytest.mark.parametrize("scale", ["0.5", [1.0], True])
def test_an_attention_scale_that_is_not_a_number_is_one_line(tmp_path, scale):
    path = tmp_path / "m.safetensors"
    spec = random_spec(4)
    save_spec(spec, path)
    config = spec_config(spec)
    config["blocks"][0]["attn"]["scale"] = scale
    _rewrite(path, config=config)
    with pytest.raises(WeightsFileError, match="attention scale must be a number"):
        load_spec(path)


def test_a_model_whose_program_language_is_unknown_is_refused_in_one_line(tmp_path):
    from satsim.rasp import compile_program, parse_program

    path = tmp_path / "m.safetensors"
    save_spec(compile_program(parse_program('alphabet = "ab"\naccept = Q("a")\n', "crasp")),
              path)
    config = spec_config(load_spec(path))
    _rewrite(path, config={**config, "source_language": "python"})
    with pytest.raises(WeightsFileError, match="program is in an unknown language 'python'"):
        load_spec(path)
    result = invoke_satsim("show", "--model", str(path))
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert result.stderr.strip().count("\n") == 0
