"""The hand-built Dyck-1 transformer is exact: exhaustively, on long random strings and at 10^5."""

import itertools

import numpy as np
import pytest

import languages
from satsim import Simulator, constructions
from satsim.errors import SatsimError
from satsim.reference.forward import forward

DYCK1 = languages.get("dyck1")


def all_strings(max_len):
    return ["".join(t) for n in range(max_len + 1) for t in itertools.product("()", repeat=n)]


@pytest.fixture(scope="module", params=[np.float32, np.float64], ids=["float32", "float64"])
def simulator(request):
    return Simulator(constructions.build("dyck1", dtype=request.param))


@pytest.mark.slow  # runs long
def test_exhaustive_up_to_length_16(simulator):
    strings = all_strings(16)
    truth = np.array([DYCK1.contains(s) for s in strings])
    assert len(strings) == 2**17 - 1
    np.testing.assert_array_equal(simulator.accepts(strings), truth)


def test_reference_semantics_agree_exhaustively_up_to_length_10():
    spec = constructions.build("dyck1")
    for s in all_strings(10):
        assert (forward(spec, s).logits[0] > 0) == DYCK1.contains(s), s


@pytest.mark.slow  # runs long
def test_random_positives_and_hard_negatives_up_to_10_000(simulator):
    positives = DYCK1.sample_positive(5000, 0, 10_000, seed=1)
    negatives = DYCK1.sample_negative(5000, 1, 10_000, seed=2)
    assert simulator.accepts(positives).all()
    assert not simulator.accepts(negatives).any()


@pytest.mark.parametrize("label", ["flip", "dip-once", "wrong-order", "insert", "delete", "random"])
def test_each_kind_of_hard_negative_is_rejected(simulator, label):
    negatives = DYCK1.sample_negative(300, 1, 3000, seed=5, labels=[label])
    assert not simulator.accepts(negatives).any()


def adversarial(n):
    half = n // 2
    return {
        "deepest": ("(" * half + ")" * half, True),
        "flat": ("()" * half, True),
        "dip at the very end": ("()" * (half - 1) + ")(", False),
        "dip at the start": (")(" + "()" * (half - 1), False),
        "one open too many": ("(" * half + ")" * (half - 1), False),
        "one close too many at the end": ("(" * half + ")" * half + ")", False),
        "late dip in the middle": (
            "(" * (half // 2) + ")" * (half // 2 + 1) + "(" + "()" * (half // 2 - 1), False),
        "balanced but reversed": (")" * half + "(" * half, False),
    }


@pytest.mark.parametrize("name", list(adversarial(10)))
def test_adversarial_strings_of_length_100_000(simulator, name):
    string, member = adversarial(100_000)[name]
    assert DYCK1.contains(string) == member
    assert simulator.accepts([string])[0] == member


def test_uniform_random_strings_of_length_100_000(simulator):
    strings = DYCK1.sample_positive(2, 100_000, 100_000, seed=3) + DYCK1.sample_negative(
        2, 100_000, 100_000, seed=4)
    np.testing.assert_array_equal(simulator.accepts(strings), [True, True, False, False])


def test_layer_two_tie_sets_hold_only_the_worst_prefixes():
    trace = Simulator(constructions.build("dyck1")).trace("(()))(")
    # depth after each prefix (BOS first): 0 1 2 1 0 -1 0; layer 2 attends to the minimum
    last = len(trace.tokens) - 1
    np.testing.assert_array_equal(trace.tie_set(1, 0, last), [5])
    assert trace.layers[0].tie_size[0].tolist() == [1, 2, 3, 4, 5, 6, 7]  # counting head


def test_unknown_construction_is_a_clear_error():
    with pytest.raises(SatsimError, match="no construction for 'dyck7'; known: anbn"):
        constructions.build("dyck7")


def test_the_lifted_recogniser_computes_the_same_logits():
    # satsim.circuits.lifting removes the residual stream and re-carries every live dimension
    # (a self head, relu copies): the function at every string must not change
    written = constructions.build("dyck1")
    lifted = constructions.build("dyck1", homogeneous=True)
    assert written.residual is True and lifted.residual is False
    assert len(lifted.blocks[1].attn.W_Q) == 2  # the argmin head and a self head
    strings = all_strings(10) + DYCK1.sample_positive(200, 0, 2000, seed=8) + DYCK1.sample_negative(
        200, 1, 2000, seed=9) + ["()" * 50_000, "()" * 49_999 + ")("]
    want = np.array(Simulator(written).logits(strings))
    got = np.array(Simulator(lifted).logits(strings))
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-7)
    np.testing.assert_array_equal(got[:, 0] > 0, [DYCK1.contains(s) for s in strings])
