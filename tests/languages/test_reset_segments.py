"""The segment sampler of Reset-Dyck-1 is uniform and fast at long lengths."""

import collections
import itertools

import numpy as np
import pytest

import languages
from languages.reset_segments import uniform_prefix_steps


def non_negative(steps):
    return bool(np.all(np.cumsum(steps) >= 0))


@pytest.mark.parametrize("m", range(0, 13))
def test_flipping_new_minima_is_a_bijection_onto_dyck_prefixes(m):
    # every arrangement of ⌈m/2⌉ opens and ⌊m/2⌋ closes maps to a distinct non-negative path
    images = set()
    for closes in itertools.combinations(range(m), m // 2):
        steps = np.ones(m, dtype=np.int8)
        steps[list(closes)] = -1
        heights = np.cumsum(steps)
        low = np.minimum.accumulate(np.concatenate([[0], heights]))[:-1]
        steps[heights < low] = 1
        images.add(tuple(steps))
    every = {p for p in itertools.product((1, -1), repeat=m) if non_negative(p)}
    assert images == every


def test_uniform_prefix_steps_never_dip():
    rng = np.random.default_rng(0)
    for m in (0, 1, 2, 7, 100, 10_001):
        steps = uniform_prefix_steps(m, rng)
        assert len(steps) == m and non_negative(steps)


@pytest.mark.parametrize("length", [5, 6, 7])
def test_positives_are_uniform_over_all_members(length):
    language = languages.get("reset-dyck1")
    members = [s for s in ("".join(t) for t in itertools.product("()1", repeat=length))
               if language.contains(s)]
    assert len(members) == language.count(length)
    samples = language.sample_positive(50 * len(members), length, length, seed=length)
    counts = collections.Counter(samples)
    assert set(counts) <= set(members)
    expected = len(samples) / len(members)
    chi2 = sum((counts[m] - expected) ** 2 / expected for m in members)
    dof = len(members) - 1
    assert chi2 < dof + 5 * np.sqrt(2 * dof)


def test_long_positives_are_members():
    language = languages.get("reset-dyck1")
    strings = language.sample_positive(3, 20_000, 20_000, seed=1)
    assert all(len(s) == 20_000 and language.contains(s) for s in strings)
