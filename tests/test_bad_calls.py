"""Library calls with arguments of the wrong kind end in a one-line user error, not a bug.

The command line turns these errors into one `error:` line; a Python caller gets a
SatsimError (or the languages package's LanguageError) that says what to pass instead.
"""

import numpy as np
import pytest

import languages
from languages.base import LanguageError
from satsim import Simulator, constructions, load_spec, saturated_attention, save_spec
from satsim.errors import SatsimError

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
