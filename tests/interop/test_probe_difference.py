"""largest_difference, the import probe's measure, against its definition on adversarial arrays."""

import math

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from satsim.interop.probe import largest_difference

ENTRIES = st.sampled_from([0.0, -0.0, 1.0, -2.5, 1e308, -1e308, math.inf, -math.inf, math.nan])


def by_definition(ours, theirs):
    """Entry by entry: ∞ where only one side is finite or theirs is NaN, else the largest gap."""
    largest = 0.0
    for a, b in zip(ours.ravel().tolist(), theirs.ravel().tolist()):
        if math.isnan(b) or math.isfinite(a) != math.isfinite(b):
            return math.inf
        if math.isfinite(b):
            largest = max(largest, abs(a - b))
    return largest


@settings(max_examples=300, deadline=None, derandomize=True)
@given(st.data())
def test_largest_difference_is_its_definition(data):
    shape = data.draw(hnp.array_shapes(min_dims=1, max_dims=2, max_side=4))
    ours = data.draw(hnp.arrays(np.float64, shape, elements=ENTRIES))
    theirs = data.draw(hnp.arrays(np.float64, shape, elements=ENTRIES))
    assert largest_difference(ours, theirs) == by_definition(ours, theirs)
    assert largest_difference(ours, theirs[..., :0] if shape[-1] else theirs[..., None]) == math.inf
