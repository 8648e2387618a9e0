"""The compiled limit attention against its NumPy statement (limit_weights, weighted_sum).

Queries, keys and values are random power series in c with coefficients on a coarse grid
(exact ties at every degree, exact zeros, whole zero coefficients), some unknown (NaN), known
at every degree or down to a floor. Wherever the NumPy statement is determined the kernel must
give the same tie sets and outputs; the kernel may be determined where NumPy is not (it skips a
zero weight beside an unknown value per key, NumPy per layer; it knows that one key left has
weight 1 at every order), never the other way round.
"""

import math

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from satsim.model.masks import MASKS
from satsim.saturation.exact import limit_attention, limit_weights
from satsim.saturation.series import Series, product, weighted_sum

GRID = st.sampled_from([-1.0, -0.5, 0.0, 0.0, 0.5, 1.0])


@st.composite
def series(draw, heads, length, width):
    """A series of (heads, length, width) coefficients: a few degrees, a floor, some NaN."""
    top = draw(st.integers(-1, 3))
    count = draw(st.integers(1, 4))
    terms = {}
    for degree in range(top, top - count, -1):
        if draw(st.integers(0, 4)) == 0:
            terms[degree] = np.zeros((heads, length, width))
            continue
        value = draw(hnp.arrays(np.float64, (heads, length, width), elements=GRID))
        if draw(st.integers(0, 6)) == 0:
            value[draw(st.integers(0, heads - 1)), draw(st.integers(0, length - 1))] = np.nan
        terms[degree] = value
    floor = -math.inf if draw(st.booleans()) else top - count + 1
    return Series(terms, floor)


@st.composite
def attention_inputs(draw):
    heads, length = draw(st.integers(1, 2)), draw(st.integers(1, 6))
    e, f = draw(st.integers(1, 3)), draw(st.integers(1, 3))
    return (draw(series(heads, length, e)), draw(series(heads, length, e)),
            draw(series(heads, length, f)), draw(st.sampled_from([1.0, 0.5, 0.0])),
            draw(st.lists(st.sampled_from(MASKS), min_size=heads, max_size=heads)),
            draw(st.sampled_from([1, 3, 16])))


def stacked(x: Series) -> np.ndarray:
    return x.stack()[1]


@settings(max_examples=300, deadline=None, derandomize=True)
@given(attention_inputs())
def test_the_kernel_gives_the_numpy_limit_wherever_numpy_determines_it(case):
    q, k, v, scale, masks, orders = case
    heads, length = q.terms[q.top].shape[:2]
    raw = product(q, k, "hte,hse->hts")
    scores = Series({d: t * scale for d, t in raw.terms.items()}, raw.floor)
    ties = limit_weights(scores, masks, heads, length, orders=orders)
    want = weighted_sum(ties.weights, v, ties.support)
    head, _, got = limit_attention(q, k, v, scale, masks, orders)

    assert not (head.unresolved & ~ties.head.unresolved).any()
    resolved = ~ties.head.unresolved
    for name in ("lead_size", "size", "split_at"):
        np.testing.assert_array_equal(getattr(head, name)[resolved],
                                      getattr(ties.head, name)[resolved], err_msg=name)
    assert got.top == want.top and got.floor <= want.floor
    for degree, expected in want.terms.items():
        value = got.terms[degree]
        assert not (np.isnan(value) & ~np.isnan(expected)).any(), degree
        known = ~np.isnan(expected)
        np.testing.assert_allclose(value[known], expected[known], rtol=1e-9, atol=1e-12)
