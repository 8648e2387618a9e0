"""Every hand-built construction in its soft twin: the β → ∞ limit and the c → ∞ limit.

A construction is written for saturated attention on its own weights, which is the limit of
attention-only β → ∞: at large β its soft twin must decide as the simulator does. Uniform scaling
cθ converges instead to the exact limit network, which equals the simulator's decisions only when
the construction adds terms of equal degree; Dyck-1 does. (At c = 100 rather than 1000: where a
decision rests on an exact cancellation, c^k times float64 rounding must stay below the signal.)
"""

import pytest

from satsim import constructions
from satsim.saturation import exact_limit
from satsim.saturation.measures import decide
from satsim.soft import SoftTransformer, check_construction, construction_strings

TASKS = ["recognition", "next-symbol"]


@pytest.mark.parametrize("name", constructions.names())
@pytest.mark.parametrize("task", TASKS)
def test_every_construction_decides_as_the_simulator_at_large_beta(name, task):
    strings = construction_strings(name, exhaustive=300, n=40, max_len=32)
    check = check_construction(name, task=task, scale=1.0, beta=1000.0, strings=strings,
                               device="cpu")
    assert check.n_strings == len(strings) > 100
    assert check.ok, check.disagreements[:5]


def test_dyck1_decides_as_the_simulator_at_large_c():
    check = check_construction("dyck1", scale=1000.0, device="cpu")
    assert check.ok and check.n_strings > 1000 and check.scale == 1000.0


@pytest.mark.parametrize("name", constructions.names())
@pytest.mark.parametrize("task", TASKS)
def test_every_construction_at_large_c_decides_as_its_exact_limit(name, task):
    spec = constructions.build(name, task=task)
    strings = construction_strings(name, exhaustive=60, n=20, max_len=24)
    run = SoftTransformer.from_spec(spec, device="cpu", dtype="float64").scaled(100.0).run(strings)
    for row, string in enumerate(strings):
        expected = decide(spec, exact_limit(spec, string).logit_signs())
        assert (decide(spec, run.logits_of(row)) == expected).all(), string
