"""The categorical limit (limit_argmax) against exact rational arithmetic.

A model with no blocks has logits(c) = c²·W_E[token]·W_U + c·b_U exactly (every parameter is of
degree 1), so the limit's argmax is the label whose pair (W_E·W_U, b_U) is lexicographically
largest, undetermined where two labels share the largest pair. Integer weights in a small range
force ties at the top degree, where only the lower-degree bias decides, and ties at every degree.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from satsim.errors import SatsimError
from satsim.model.spec import ModelSpec, OutputSpec
from satsim.saturation.signs import limit_argmax

VOCAB = ("<s>", "u", "v", "w")
LABELS = ("p", "q", "r", "s")


def _model(w_u: np.ndarray, b_u: np.ndarray) -> ModelSpec:
    output = OutputSpec(W_U=w_u, b_U=b_u, labels=LABELS, task="categorical",
                        readout="per-position")
    return ModelSpec(vocab=VOCAB, W_E=np.eye(len(VOCAB)), output=output, bos="<s>",
                     name="no-blocks")


def _oracle(w_u: np.ndarray, b_u: np.ndarray, token: str) -> str | None:
    """The label of the lexicographically largest (c² coefficient, c coefficient), exactly."""
    row = VOCAB.index(token)
    pairs = [(Fraction(float(w_u[row, j])), Fraction(float(b_u[j]))) for j in range(len(LABELS))]
    best = max(pairs)
    return LABELS[pairs.index(best)] if pairs.count(best) == 1 else None


entries = st.integers(-2, 2).map(float)


@settings(max_examples=60, deadline=None)
@given(w_u=st.lists(entries, min_size=16, max_size=16), b_u=st.lists(entries, min_size=4,
                                                                      max_size=4),
       string=st.lists(st.sampled_from(VOCAB[1:]), min_size=1, max_size=6))
def test_the_limit_argmax_is_the_exact_lexicographic_winner(w_u, b_u, string):
    w_u, b_u = np.array(w_u).reshape(4, 4), np.array(b_u)
    [answers] = limit_argmax(_model(w_u, b_u), [string])
    assert answers == [_oracle(w_u, b_u, token) for token in string]


def test_a_bias_decides_a_tie_at_the_top_degree_and_a_full_tie_is_undetermined():
    w_u = np.zeros((4, 4))
    w_u[1] = [1.0, 1.0, 0.0, 0.0]  # u: p and q tie at c², the bias decides (q)
    w_u[2] = [2.0, 2.0, 0.0, 0.0]  # v: p and q tie at c² and at c: undetermined
    w_u[3] = [0.0, 0.0, 5.0, 0.0]  # w: r at c², though its bias is the smallest
    b_u = np.array([0.0, 1.0, -3.0, 0.0])
    b_u_v = b_u.copy()
    [answers] = limit_argmax(_model(w_u, b_u), [["u", "w"]])
    assert answers == ["q", "r"]
    b_u_v[1] = 0.0
    [answers] = limit_argmax(_model(w_u, b_u_v), [["v", "u"]])
    assert answers == [None, None]  # u now ties too: p and q equal at every degree


def test_a_model_that_is_not_categorical_is_refused_in_one_line():
    spec = _model(np.zeros((4, 4)), np.zeros(4))
    spec = ModelSpec(vocab=spec.vocab, W_E=spec.W_E, bos="<s>", name="recogniser",
                     output=OutputSpec(W_U=np.zeros((4, 1))))
    with pytest.raises(SatsimError, match="categorical per-position") as error:
        limit_argmax(spec, [["u"]])
    assert "\n" not in str(error.value)
