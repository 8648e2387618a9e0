"""Library calls with arguments of the wrong kind end in a one-line user error, not a bug.

The command line turns these errors into one `error:` line; a Python caller gets a
SatsimError (or the languages package's LanguageError) that says what to pass instead.
"""

import dataclasses
import json

import numpy as np
import pytest
from safetensors.numpy import save_file

import languages
from languages.base import LanguageError
from satsim import Simulator, constructions, load_spec, saturated_attention, save_spec
from satsim.errors import SatsimError
from satsim.model.io import spec_config
from satsim.model.safety import check_scale
from satsim.model.scaling import scale_spec
from satsim.model.spec import map_tensors
from tests.support.helpers import random_spec

DYCK1 = constructions.build("dyck1")


def _tie_set(layer: int, head: int, query: int):
    return Simulator(DYCK1).trace("(())").tie_set(layer, head, query=query)


CALLS = {
    "accepts(None)": (lambda: Simulator(DYCK1).accepts(None),
                      r"pass a list of inputs \(strings, token sequences or token ids\), got "
                      "NoneType"),
    "logits(3)": (lambda: Simulator(DYCK1).logits(3), "got int"),
    "load_spec(None)": (lambda: load_spec(None), "load_spec needs a file path, got NoneType"),
    "save_spec(None, path)": (lambda: save_spec(None, "m.safetensors"),
                              "save_spec needs a ModelSpec, got NoneType"),
    "save_spec(spec, None)": (lambda: save_spec(DYCK1, None),
                              "save_spec needs a file path, got NoneType"),
    "tie_set query": (lambda: _tie_set(1, 0, 99),
                      r"query 99 is out of range: the input has 5 positions \(0–4\)"),
    "tie_set negative query": (lambda: _tie_set(1, 0, -1), "query -1 is out of range"),
    "tie_set layer": (lambda: _tie_set(7, 0, 1),
                      r"layer 7 is out of range: the model has 2 blocks \(0–1\)"),
    "tie_set head": (lambda: _tie_set(1, 3, 1), "head 3 is out of range: block 1 has 1 heads"),
    "ragged q": (lambda: saturated_attention([[1.0, 2.0], [1.0]], np.ones((2, 2)),
                                             np.ones((2, 2))),
                 r"q is a ragged list; give an array of shape \(..., length, dim\)"),
    "sample_positive(seed=-1)": (lambda: languages.get("dyck1").sample_positive(3, 2, 10,
                                                                                seed=-1),
                                 "seed must be a non-negative integer, got -1"),
    "sample_negative_labelled(seed=1.5)": (
        lambda: languages.get("dyck1").sample_negative_labelled(3, 2, 10, seed=1.5),
        "seed must be a non-negative integer, got 1.5"),
}


@pytest.mark.parametrize("call", list(CALLS))
def test_a_call_with_a_wrong_argument_is_a_one_line_user_error(call, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    function, message = CALLS[call]
    with pytest.raises((SatsimError, LanguageError), match=message) as info:
        function()
    assert "\n" not in str(info.value) and list(tmp_path.iterdir()) == []


@pytest.mark.transformer_lens
def test_from_transformer_lens_given_none_is_a_one_line_user_error():
    from satsim.interop import from_transformer_lens

    with pytest.raises(SatsimError, match="needs a HookedTransformer, got NoneType"):
        from_transformer_lens(None)


@pytest.mark.parametrize(("dtype", "remedy"), [(np.float32, "use float64 or smaller weights"),
                                               (np.float64, "use smaller weights")])
def test_huge_finite_weights_are_an_overflow_not_a_nan_in_the_input(dtype, remedy):
    # They used to read "q contains NaN or inf", and suggested float64 to a float64 model.
    spec = random_spec(0, dtype=dtype, norm="none", positional="none")
    huge = map_tensors(spec, lambda a: a * dtype(1e30 if dtype == np.float32 else 1e200))
    for fused in (True, False):
        with pytest.raises(SatsimError) as info:
            Simulator(huge, fused=fused).logits(["abab"])
        assert str(info.value) == (f"an attention layer's queries, keys or values overflowed "
                                   f"{np.dtype(dtype)} (the model's weights are too large for "
                                   f"it); {remedy}")


def test_scaling_a_float64_model_past_its_range_does_not_suggest_float64():
    spec = random_spec(0)
    with pytest.raises(SatsimError, match="use a smaller c$"):
        check_scale(spec, 1e300, np.float64)
    with pytest.raises(SatsimError, match="use a smaller c$"), np.errstate(over="ignore"):
        scale_spec(spec, 1e308)
    with pytest.raises(SatsimError, match="use float64 or a smaller c$"):
        check_scale(spec, 1e300, np.float32)


def test_a_model_without_a_name_is_known_by_its_file(tmp_path):
    # A null name showed as "model None".
    path = tmp_path / "unnamed.safetensors"
    save_spec(DYCK1, path)
    config = spec_config(DYCK1)
    config["name"] = None
    save_file({k: np.ascontiguousarray(v) for k, v in DYCK1.tensors().items()}, str(path),
              metadata={"satsim": json.dumps(config)})
    assert load_spec(path).name == "unnamed"
    with pytest.raises(SatsimError, match="name must be a non-empty string, got None"):
        dataclasses.replace(DYCK1, name=None)
