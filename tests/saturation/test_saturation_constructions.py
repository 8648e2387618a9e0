"""Every hand-built construction in its soft twin: the β → ∞ limit and the c → ∞ limit.

A construction is written for saturated attention on its own weights θ, the limit of
attention-only β → ∞: at large β its soft twin must decide as the simulator does. Uniform scaling
cθ converges instead to the leading-order network, which keeps only the highest-degree term of
every sum. The constructions are built homogeneous (no residual stream, no biases:
satsim.circuits.lifting), so the leading-order network drops nothing and every head
saturates: the limit is the construction itself, and at large c the soft twin decides as the
simulator, with logits c^K times the simulator's (K the logits' degree). The Dyck-1 recogniser,
the benchmark model, keeps its residual stream: its leading-order network drops the embedding,
and it decides as the simulator through its exact limit (terms below leading order).
"""

import numpy as np
import pytest

from satsim import Simulator, constructions
from satsim.analysis.measures import decide
from satsim.saturation import degrees, exact_limit, leading_order
from satsim.soft import SoftTransformer
from tests.support.twin_check import check_construction, construction_strings

TASKS = ["recognition", "next-symbol"]
CASES = [(name, task) for name in constructions.names() for task in TASKS]
BENCHMARK = ("dyck1", "recognition")  # kept with its residual stream (bench/dyck1_throughput.py)
SCALE = 1000.0  # float64 holds every construction up to c ≈ 10^18 (satsim.model.safety)


def test_cases_cover_every_construction_and_task():
    assert len(CASES) == 2 * len(constructions.names()) >= 18 and BENCHMARK in CASES


@pytest.mark.parametrize(("name", "task"), CASES)
def test_every_construction_decides_as_the_simulator_at_large_beta(name, task):
    strings = construction_strings(name, exhaustive=300, n=40, max_len=32)
    check = check_construction(name, task=task, scale=1.0, beta=1000.0, strings=strings,
                               device="cpu")
    assert check.n_strings == len(strings) > 100
    assert check.ok, check.disagreements[:5]


@pytest.mark.parametrize(("name", "task"), CASES)
def test_every_construction_is_its_own_uniform_limit(name, task):
    spec = constructions.build(name, task=task)
    lead = leading_order(spec)
    if (name, task) == BENCHMARK:
        assert spec.residual is True
        assert ("blocks.0.hook_resid_post", "blocks.0.hook_resid_pre") in lead.dropped
        return
    assert spec.residual is False and lead.dropped == (), lead.describe()
    saturates = [s for _, s in lead.graph.nodes(data="saturates") if s is not None]
    assert saturates and all(saturates)
    assert not any(block.mlp is not None and block.mlp.b_in is not None for block in spec.blocks)
    assert spec.output.b_U is None


@pytest.mark.parametrize(("name", "task"), CASES)
def test_every_construction_decides_as_the_simulator_at_large_c(name, task):
    strings = construction_strings(name, exhaustive=300, n=40, max_len=32)
    check = check_construction(name, task=task, scale=SCALE, strings=strings, device="cpu")
    assert check.n_strings == len(strings) > 100 and check.scale == SCALE
    assert check.ok, check.disagreements[:5]


@pytest.mark.parametrize(("name", "task"), [case for case in CASES if case != BENCHMARK])
def test_homogeneous_logits_are_c_to_the_k_times_the_simulators(name, task):
    spec = constructions.build(name, task=task)
    strings = construction_strings(name, exhaustive=40, n=10, max_len=24)
    k = degrees(spec)["hook_logits"]
    run = SoftTransformer.from_spec(spec, device="cpu", dtype="float64").scaled(SCALE).run(strings)
    for row, want in enumerate(Simulator(spec).logits(strings)):
        got = run.logits_of(row) / SCALE**k
        np.testing.assert_allclose(got[-1] if want.ndim == 1 else got, want, rtol=1e-4, atol=1e-6,
                                   err_msg=strings[row])


@pytest.mark.parametrize(("name", "task"), CASES)
def test_every_construction_at_large_c_decides_as_its_exact_limit(name, task):
    spec = constructions.build(name, task=task)
    strings = construction_strings(name, exhaustive=60, n=20, max_len=24)
    run = SoftTransformer.from_spec(spec, device="cpu", dtype="float64").scaled(100.0).run(strings)
    for row, string in enumerate(strings):
        expected = decide(spec, exact_limit(spec, string).logit_signs())
        assert (decide(spec, run.logits_of(row)) == expected).all(), string
