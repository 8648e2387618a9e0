"""The saturated limit of trained models against the float64 soft twin scaled toward it.

The models are bench/limit_trained.py's fixtures, made by `satsim train` (bench/README.md):
Dyck-1, next-symbol and recognition, positionless and with learned positions, pre-, post- and
no LayerNorm. Wherever the twin's sign is the same at c = 10³, 10⁴ and 10⁵ (the logit has
converged), `limit_signs` and the exact expansion must give it; the same with W_Q = 0 beside
b_Q in the last block, where every string takes the exact expansion.
"""


import numpy as np
import pytest

import languages
from satsim.analysis.strings import test_set as labelled_strings
from satsim.model.io import load_spec
from satsim.saturation import exact_limit, limit_signs
from satsim.soft import SoftTransformer
from tests.support.helpers import zero_query
from tests.support.paths import BENCH

MODELS = BENCH / "models"
FIXTURES = ("limit-dyck1-ns-pre-none", "limit-dyck1-ns-post-learned", "limit-dyck1-ns-none-none",
            "limit-dyck1-rec-pre-learned", "limit-dyck1-rec-post-none")
SCALES = (1e3, 1e4, 1e5)


def converged_signs(spec, strings):
    """Per string: the soft twin's readout signs at c = 10³ and where they agree up to 10⁵."""
    twin = SoftTransformer.from_spec(spec, device="cpu", dtype="float64")
    runs = [twin.scaled(c).run(strings) for c in SCALES]
    out = []
    for row in range(len(strings)):
        signs = [np.sign(run.logits_of(row)) for run in runs]
        if spec.output.readout == "last":
            signs = [s[-1] for s in signs]
        out.append((signs[0], np.all([s == signs[0] for s in signs[1:]], axis=0)))
    return out


@pytest.mark.parametrize("edited", [False, True], ids=["trained", "W_Q=0"])
@pytest.mark.parametrize("stem", FIXTURES)
def test_the_limit_of_a_trained_model_is_the_converged_soft_twin(stem, edited):
    spec = load_spec(str(MODELS / f"{stem}.safetensors")).astype(np.float64)
    spec = zero_query(spec) if edited else spec
    strings = [s for s in labelled_strings(languages.get("dyck1"), 10, 1, 120, seed=5)[0] if s]
    fast = limit_signs(spec, strings)
    assert not fast.undetermined.any()
    assert fast.exact.all() if edited else not fast.exact.any()
    settled_logits = 0
    for row, (soft, settled) in enumerate(converged_signs(spec, strings)):
        settled_logits += int(settled.sum())
        np.testing.assert_array_equal(fast.signs[row][settled], soft[settled])
        if row < 3:  # the exact expansion itself, on a few strings
            exact = exact_limit(spec, strings[row]).logit_signs()
            exact = exact[-1] if spec.output.readout == "last" else exact
            decided = settled & ~np.isnan(exact)
            np.testing.assert_array_equal(exact[decided], soft[decided])
    assert settled_logits > 0
