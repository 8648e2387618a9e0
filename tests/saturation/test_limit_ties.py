"""The tie check of limit_signs: which tie sets hold keys whose values differ.

The kernel is checked against the reference tie sets (doubled tolerances) on inputs with exact
ties; limit_signs is checked to send exactly the strings with such tie sets to the exact path.
"""


import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from satsim.model.masks import MASKS, mask_codes
from satsim.reference.attention import tie_sets, tie_size
from satsim.saturation.kernels.tie_values import tie_value_spread
from satsim.saturation.signs import limit_signs
from tests.support.helpers import random_spec, zero_query

ATOL = RTOL = 1e-9


def reference_spread(q, k, v, lengths, live, masks, scale):
    """Per (string, head): the largest |v_j - v_f| over widened tie sets, and max |v|."""
    batch, heads = q.shape[:2]
    spread, magnitude = np.zeros((batch, heads)), np.zeros((batch, heads))
    for b in range(batch):
        n = lengths[b]
        for h in np.flatnonzero(live):
            values = v[b, h, :n]
            magnitude[b, h] = np.abs(values).max(initial=0.0)
            members = tie_sets(q[b, h, :n], k[b, h, :n], attn_mask=masks[h], atol=2 * ATOL,
                               rtol=2 * RTOL, scale=scale)
            sizes = tie_size(q[b, h, :n], k[b, h, :n], attn_mask=masks[h], atol=ATOL, rtol=RTOL,
                             scale=scale)
            for i in np.flatnonzero(sizes > 1):
                tied = values[members[i]]
                spread[b, h] = max(spread[b, h], np.abs(tied - tied[0]).max())
    return spread, magnitude


@st.composite
def tied_batches(draw):
    """Queries, keys and values on a coarse grid (exact score ties), with padding."""
    batch, heads = draw(st.integers(1, 3)), draw(st.integers(1, 2))
    length, d, e = draw(st.integers(1, 7)), draw(st.integers(1, 3)), draw(st.integers(1, 3))
    grid = st.integers(-2, 2).map(float)
    q = draw(hnp.arrays(np.float64, (batch, heads, length, d), elements=grid))
    k = draw(hnp.arrays(np.float64, (batch, heads, length, d), elements=grid))
    v = draw(hnp.arrays(np.float64, (batch, heads, length, e), elements=grid))
    lengths = np.array(draw(st.lists(st.integers(1, length), min_size=batch, max_size=batch)))
    live = np.array(draw(st.lists(st.booleans(), min_size=heads, max_size=heads)))
    masks = draw(st.lists(st.sampled_from(MASKS), min_size=heads, max_size=heads))
    return q, k, v, lengths, live, masks, draw(st.sampled_from([0.5, 1.0, 0.0]))


@st.composite
def runs_of_equal_queries(draw):
    """Queries from two rows per head (runs of equal queries, whose tie sets the kernel carries
    from one query to the next), up to 30 keys on the grid: a best that rises drops members."""
    batch, heads = draw(st.integers(1, 2)), draw(st.integers(1, 2))
    length, d, e = draw(st.integers(1, 30)), draw(st.integers(1, 2)), draw(st.integers(1, 3))
    grid = st.integers(-2, 2).map(float)
    rows = draw(hnp.arrays(np.float64, (batch, heads, 2, d), elements=grid))
    which = draw(hnp.arrays(np.int64, (batch, heads, length), elements=st.integers(0, 1)))
    which = which if draw(st.booleans()) else np.zeros_like(which)  # or one constant query
    q = np.take_along_axis(rows, which[..., None], axis=2)
    k = draw(hnp.arrays(np.float64, (batch, heads, length, d), elements=grid))
    v = draw(hnp.arrays(np.float64, (batch, heads, length, e), elements=grid))
    lengths = np.array(draw(st.lists(st.integers(1, length), min_size=batch, max_size=batch)))
    live = np.ones(heads, dtype=bool)
    masks = draw(st.lists(st.sampled_from(MASKS), min_size=heads, max_size=heads))
    return q, k, v, lengths, live, masks, draw(st.sampled_from([0.5, 1.0, 0.0]))


@settings(max_examples=200, deadline=None, derandomize=True)
@given(st.one_of(tied_batches(), runs_of_equal_queries()))
def test_the_spread_kernel_matches_the_reference_tie_sets(case):
    q, k, v, lengths, live, masks, scale = case
    sizes = np.zeros(q.shape[:3], dtype=np.int64)
    for b, n in enumerate(lengths):
        for h, mask in enumerate(masks):
            sizes[b, h, :n] = tie_size(q[b, h, :n], k[b, h, :n], attn_mask=mask, atol=ATOL,
                                       rtol=RTOL, scale=scale)
    got = tie_value_spread(q, k, v, lengths, sizes, live, mask_codes(masks), scale, ATOL, RTOL,
                           np.inf)
    want = reference_spread(q, k, v, lengths, live, masks, scale)
    np.testing.assert_array_equal(got[0], want[0])
    np.testing.assert_array_equal(got[1], want[1])


@pytest.mark.slow  # runs long
def test_a_rising_best_score_leaves_the_old_tie_set_behind():
    # A constant query over keys scoring 1, 1, 3, 3 (causal): queries 1 and 3 tie two keys of
    # equal values, so no tie set holds different values, though keys 0 and 1 differ from 2, 3.
    q = np.ones((1, 1, 4, 1))
    k = np.array([1.0, 1.0, 3.0, 3.0]).reshape(1, 1, 4, 1)
    v = np.array([0.0, 0.0, 1.0, 1.0]).reshape(1, 1, 4, 1)
    sizes = np.array([1, 2, 1, 2]).reshape(1, 1, 4)
    for mask, order in (("causal", slice(None)), ("future", slice(None, None, -1))):
        spread, magnitude = tie_value_spread(
            q, k[..., order, :], v[..., order, :], np.array([4]), sizes[..., order],
            np.array([True]), mask_codes([mask]), 1.0, ATOL, RTOL, np.inf)
        assert spread[0, 0] == 0.0 and magnitude[0, 0] == 1.0, mask


def test_a_near_tie_that_a_rising_best_drops_leaves_the_tie_set():
    # Scores 1 - 3e-9, 1, 1, 1 + 1.5e-9 under one query: at query 2 the widened tie set (twice
    # the tolerance) holds key 0 beside keys 1 and 2; key 3 raises the best, and key 0 leaves
    # it while keys 1-3 still tie. Measured from the first member, the set {1, 2, 3} spreads by
    # 1 and {0, 1, 2, 3} would by 2.
    q = np.ones((1, 1, 4, 1))
    k = (1.0 + np.array([-3e-9, 0.0, 0.0, 1.5e-9])).reshape(1, 1, 4, 1)
    v = np.array([0.0, 1.0, 1.0, 2.0]).reshape(1, 1, 4, 1)
    for mask, order in (("causal", slice(None)), ("future", slice(None, None, -1))):
        keys, values = k[..., order, :], v[..., order, :]
        sizes = tie_size(q[0, 0], keys[0, 0], attn_mask=mask, atol=ATOL, rtol=RTOL,
                         scale=1.0).reshape(1, 1, 4)
        got = tie_value_spread(q, keys, values, np.array([4]), sizes, np.array([True]),
                               mask_codes([mask]), 1.0, ATOL, RTOL, np.inf)
        want = reference_spread(q, keys, values, np.array([4]), np.array([True]), [mask], 1.0)
        assert got[0][0, 0] == want[0][0, 0] == 1.0, mask


def test_ties_of_different_values_take_the_exact_path_and_equal_ones_do_not():
    spec = random_spec(3, norm="post", positional="none", d_mlp=8)
    strings = ["ab", "abba", "babab"]
    plain = limit_signs(spec, strings)
    assert not plain.exact.any()  # positionless: layer-0 ties are keys of one token, one row
    split = limit_signs(zero_query(spec, 1), strings)
    assert split.exact.all()
    assert all("values differ" in reason for reason in split.reasons)


def test_limit_tie_sizes_are_the_exact_expansions_wherever_a_tie_could_split():
    from satsim.saturation import exact_limit
    from satsim.saturation.signs import limit_tie_sizes

    spec = zero_query(random_spec(5, norm="pre", positional="none", d_mlp=8), 1)
    strings = ["a", "ab", "abba", "bbaab", "aaaaaa"]
    got = limit_tie_sizes(spec, strings)
    for string, layers in zip(strings, got):
        want = [h.size for h in exact_limit(spec, string).heads]
        assert [set(masks) for _, masks in layers] == [{"causal"}, {"causal"}]
        for (size, _), expected in zip(layers, want):
            np.testing.assert_array_equal(size, expected)


def test_satsim_roles_limit_gives_the_roles_of_the_limits_tie_sets(tmp_path):
    import json

    from click.testing import CliRunner

    from satsim import save_spec
    from satsim.analysis.head_roles import roles_from_tie_sizes
    from satsim.analysis.strings import sample_strings
    from satsim.cli.main import cli
    from satsim.saturation.signs import limit_tie_sizes

    spec = zero_query(random_spec(5, norm="pre", positional="none", d_mlp=8), 1)
    path = tmp_path / "model.safetensors"
    save_spec(spec, path)
    result = CliRunner().invoke(cli, ["roles", "--model", str(path), "-n", "6", "--max-len", "6",
                                      "--limit", "--json"])
    assert result.exit_code == 0, result.output
    strings = sample_strings(spec, None, 6, 6, 0, min_len=6)
    want = [r.to_dict() for r in roles_from_tie_sizes(limit_tie_sizes(spec, strings))]
    assert json.loads(result.output) == want
