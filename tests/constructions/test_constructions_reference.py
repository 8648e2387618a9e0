"""Every construction, in both tasks, in the NumPy reference forward pass: the meaning itself.

The kernels (test_constructions.py) and the soft twin (test_saturation_constructions.py) are
checked elsewhere; here the plain NumPy walk of the model must give the simulator's logits and
the language oracle's answers on every short string and a balanced sample.
"""

import numpy as np
import pytest

import languages
from satsim import Simulator, constructions
from satsim.analysis.measures import decide
from satsim.analysis.scoring import is_correct
from satsim.model.readout import next_symbol_sets
from satsim.reference.forward import forward
from tests.support.twin_check import construction_strings

CASES = [(name, task) for name in constructions.names() for task in ("recognition", "next-symbol")]


@pytest.mark.parametrize(("name", "task"), CASES)
def test_the_reference_forward_pass_runs_every_construction(name, task):
    spec = constructions.build(name, task=task)
    strings = construction_strings(name, exhaustive=200, n=40, max_len=24, seed=3)
    compiled = Simulator(spec).logits(strings)
    language = languages.get(name) if name in languages.names() else None
    tolerance = 1e-5 if spec.dtype == np.float32 else 1e-9  # the orders of sums differ
    for string, engine_logits in zip(strings, compiled):
        reference = forward(spec, string).logits
        np.testing.assert_allclose(reference, engine_logits, rtol=tolerance, atol=tolerance,
                                   err_msg=f"{name} {task} {string!r}")
        decisions = decide(spec, reference if reference.ndim > 1 else reference[None])
        assert np.array_equal(decisions, decide(spec, np.atleast_2d(engine_logits)))
        if language is None:
            continue
        if task == "recognition":
            answer = bool(decisions)
        else:
            labels = np.array(spec.output.labels, dtype=object)
            answer = next_symbol_sets(labels, reference, string)
        assert is_correct(language, string, language.contains(string), answer), (name, string)
