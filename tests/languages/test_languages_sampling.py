"""Samplers: every sample checked by the independent definitions, exact uniformity, negatives."""

import math
from collections import Counter

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import languages
from languages import LanguageError, paths
from languages.base import EDITS
from languages.binary import PiecewiseGeometric, _geometric_total
from languages.exact import WeightedChoice, refine_choice, uniform_below
from tests.support.lang_refs import REFERENCE, all_strings, members

NAMES = languages.names()


def chi_square_bound(df: int) -> float:
    """A bound a correct sampler exceeds with probability below about 1e-6 (Wilson-Hilferty)."""
    z = 4.9
    return df * (1 - 2 / (9 * df) + z * math.sqrt(2 / (9 * df))) ** 3


def uniformity_length(lang) -> int:
    """The longest small length (at most 14, at most 300k strings) with 2 to 400 members."""
    small = [n for n in range(15) if len(lang.alphabet) ** n <= 300_000]
    best = [n for n in small if 2 <= lang.count(n) <= 400]
    return best[-1] if best else max(n for n in small if lang.count(n))


@pytest.mark.slow  # runs long
@pytest.mark.parametrize("name", NAMES)
def test_ten_thousand_positives_and_negatives_each_pass_the_reference(name):
    lang, ref = languages.get(name), REFERENCE[name]
    positives = lang.sample_positive(10_000, 0, 40, seed=1)
    assert all(ref(s) and 0 <= len(s) <= 40 for s in positives)
    pairs = lang.sample_negative_labelled(10_000, 0, 40, seed=2)
    assert all(not ref(s) and label in lang.generators_for(len(s)) for s, label in pairs)
    possible = {g for length in range(41) for g in lang.generators_for(length)}
    assert set(label for _, label in pairs) == possible


@pytest.mark.parametrize("name", NAMES)
def test_positives_are_exactly_uniform_at_a_small_length(name):
    lang, ref = languages.get(name), REFERENCE[name]
    n_len = uniformity_length(lang)
    support = [s for s in all_strings(lang.alphabet, n_len, n_len) if ref(s)]
    total = min(40_000, 60 * len(support))
    counts = Counter(lang.sample_positive(total, n_len, n_len, seed=12345))
    assert set(counts) == set(support)
    if len(support) > 1:
        expected = total / len(support)
        chi2 = sum((counts[w] - expected) ** 2 / expected for w in support)
        assert chi2 < chi_square_bound(len(support) - 1), (n_len, chi2)


@pytest.mark.parametrize("name", ["tomita4", "dyck-2-3", "reset-dyck1", "modular-arithmetic"])
def test_the_exact_integer_path_of_the_dfa_walk_is_uniform(name, monkeypatch):
    monkeypatch.setattr(paths, "MARGIN", 2.0)  # every decision through exact.refine_choice
    lang = languages.get(name)
    counter = getattr(lang, "paths", None) or lang.shapes._paths
    fresh = paths.PathCounter(counter.delta, counter.accept, counter.start)
    n_len = next(n for n in range(12, 0, -1) if 2 <= fresh.count(n) <= 300)
    rows = fresh.sample(np.full(20 * fresh.count(n_len), n_len), np.random.default_rng(3))
    counts = Counter(tuple(r.tolist()) for r in rows)
    assert len(counts) == fresh.count(n_len)
    expected = 20
    chi2 = sum((c - expected) ** 2 / expected for c in counts.values())
    assert chi2 < chi_square_bound(len(counts) - 1)


def test_lengths_are_uniform_over_lengths_that_have_strings():
    lang = languages.get("anbncn")
    lengths = Counter(len(s) for s in lang.sample_positive(9000, 0, 17, seed=4))
    assert set(lengths) == {0, 3, 6, 9, 12, 15}
    assert all(abs(c - 1500) < 200 for c in lengths.values())
    with pytest.raises(LanguageError, match=r"no positive strings.*divisible by 3"):
        lang.sample_positive(1, 4, 5)


def test_every_generator_works_at_every_length_it_claims():
    for name in NAMES:
        lang = languages.get(name)
        for length in range(0, 11):
            for label in lang.generators_for(length):
                for s in lang.sample_negative(2, length, length, seed=length, labels=[label]):
                    assert len(s) == length and not REFERENCE[name](s), (name, label, s)


@pytest.mark.parametrize("name", [n for n in NAMES if hasattr(languages.get(n), "states")])
def test_dfa_edit_lengths_are_exact(name):
    lang, ref = languages.get(name), REFERENCE[name]
    top = min(8, max(n for n in range(9) if len(lang.alphabet) ** n <= 20_000))
    strings = {n: list(all_strings(lang.alphabet, n, n)) for n in range(top + 1)}
    for length in range(top):
        for kind in EDITS:
            source = length + {"replace": 0, "insert": -1, "delete": 1}[kind]
            if source < 0:
                assert not lang._can(kind, length)
                continue
            possible = any(
                not ref(bad)
                for w in strings[source]
                if ref(w)
                for bad in edits(w, kind, lang.alphabet)
            )
            assert lang._can(kind, length) == possible, (kind, length)


def edits(w, kind, alphabet):
    if kind == "delete":
        return [w[:i] + w[i + 1 :] for i in range(len(w))]
    if kind == "insert":
        return [w[:i] + x + w[i:] for i in range(len(w) + 1) for x in alphabet]
    return [w[:i] + x + w[i + 1 :] for i in range(len(w)) for x in alphabet if x != w[i]]


@pytest.mark.parametrize("name", NAMES)
def test_boundary_pairs_are_one_edit_apart(name):
    lang, ref = languages.get(name), REFERENCE[name]
    for good, bad, kind in lang.sample_boundary_pairs(300, 0, 30, seed=5):
        assert ref(good) and not ref(bad) and 0 <= len(bad) <= 30 and 0 <= len(good) <= 30
        assert bad in edits(good, kind, lang.alphabet)


def test_near_misses_look_like_the_language():
    anbncn = languages.get("anbncn")
    for s in anbncn.sample_negative(200, 1, 30, seed=1, labels=["unequal"]):
        assert "".join(sorted(s)) == s  # blocks in order, counts unequal
    for s in anbncn.sample_negative(200, 3, 30, seed=1, labels=["wrong-order"]):
        assert s.count("a") == s.count("b") == s.count("c")
    dyck2 = languages.get("dyck2")
    shuffle2 = languages.get("shuffle-dyck2")
    for s in dyck2.sample_negative(200, 4, 30, seed=1, labels=["crossing"]):
        assert shuffle2.contains(s)
    for s in dyck2.sample_negative(200, 1, 30, seed=1, labels=["extra-close"]):
        assert sum(c in ")]" for c in s) == sum(c in "([" for c in s) + 1
    for s in languages.get("dyck-2-3").sample_negative(100, 8, 30, seed=1, labels=["too-deep"]):
        assert dyck2.contains(s) and dyck2.stats(s)["max_depth"] == 4
    for s in languages.get("majority").sample_negative(100, 0, 30, seed=1, labels=["near-tie"]):
        assert s.count("b") - s.count("a") in (0, 1)
    reset = languages.get("reset-dyck1")
    for s in reset.sample_negative(100, 3, 30, seed=1, labels=["reset-blind"]):
        assert languages.get("dyck1").contains(s.replace("1", ""))
    arithmetic = languages.get("modular-arithmetic")
    for s in arithmetic.sample_negative(100, 3, 30, seed=1, labels=["wrong-answer"]):
        expression, answer = s.split("=")
        assert arithmetic.answer(expression) != answer


def test_long_strings():
    for name in ("dyck3", "dyck-2-5", "shuffle-dyck3", "reset-dyck1", "tomita3", "majority"):
        lang = languages.get(name)
        (s,) = lang.sample_positive(1, 1200, 1200, seed=1)
        assert len(s) == 1200 and REFERENCE[name](s)
        for t in lang.sample_negative(5, 1199, 1201, seed=2):
            assert not REFERENCE[name](t)


def test_depth_is_controllable_and_reported():
    dyck2 = languages.get("dyck2")
    bounded = dyck2.with_max_depth(3)
    assert bounded.name == "dyck-2-3" and bounded.count(20) == languages.get("dyck-2-3").count(20)
    assert all(bounded.stats(s)["max_depth"] <= 3 for s in bounded.sample_positive(500, 0, 60))
    shuffle = languages.get("shuffle-dyck3").with_max_depth(2)
    for s in shuffle.sample_positive(300, 0, 40, seed=1):
        assert REFERENCE["shuffle-dyck3"](s) and shuffle.stats(s)["max_depth"] <= 2
    reset = languages.get("reset-dyck1").with_max_depth(2)
    assert all(reset.stats(s)["max_depth"] <= 2 for s in reset.sample_positive(300, 0, 40))
    assert all(REFERENCE["reset-dyck1"](s) for s in reset.sample_positive(300, 0, 40))
    with pytest.raises(LanguageError, match="no nesting depth"):
        languages.get("tomita1").with_max_depth(3)


def test_critical_pcfg_is_available_but_nested_only():
    shuffle = languages.get("shuffle-dyck2")
    strings = languages.sample_critical_pcfg(shuffle, 300, 10, 40, seed=1)
    assert all(10 <= len(s) <= 40 and shuffle.contains(s) for s in strings)
    assert all(languages.get("dyck2").contains(s) for s in strings)  # never a crossing
    uniform = shuffle.sample_positive(300, 10, 40, seed=1)
    assert not all(languages.get("dyck2").contains(s) for s in uniform)
    bounded = languages.sample_critical_pcfg(languages.get("dyck-2-3"), 100, 2, 30, seed=2)
    assert all(languages.get("dyck-2-3").contains(s) for s in bounded)
    with pytest.raises(LanguageError, match="bracket language"):
        languages.sample_critical_pcfg(languages.get("tomita1"), 1, 0, 4)


def test_closed_form_counts():
    assert [languages.get("shuffle-dyck2").count(2 * n) for n in range(8)] == [
        math.comb(2 * n, n) // (n + 1) * math.comb(2 * n + 2, n + 1) // (n + 2) for n in range(8)
    ]
    assert languages.get("dyck3").count(40) == math.comb(40, 20) // 21 * 3**20
    assert languages.get("majority").count(501) == 2**500
    slow = languages.ShuffleDyck(3, max_depth=10**3)  # the general O(L^2) table
    assert [slow.count(n) for n in range(0, 31, 2)] == [
        languages.get("shuffle-dyck3").count(n) for n in range(0, 31, 2)
    ]


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(0, 5), min_size=1, max_size=6), st.integers(0, 2**32))
def test_exact_choices(weights, seed):
    if sum(weights) == 0:
        return
    rng = np.random.default_rng(seed)
    choice = WeightedChoice(weights)
    assert weights[choice.draw(rng)] > 0
    assert 0 <= uniform_below(sum(weights), rng) < sum(weights)
    cumulative = list(choice.cumulative)
    u = float(rng.random())
    j = refine_choice(cumulative, u, rng)
    assert weights[j] > 0
    below = cumulative[j - 1] if j else 0
    assert below <= (u + 2**-53) * cumulative[-1] and u * cumulative[-1] < cumulative[j]


@pytest.mark.parametrize(("name", "longest"), [
    ("stack-manipulation", 13), ("binary-addition", 13), ("binary-multiplication", 13),
    ("compute-sqrt", 16), ("missing-duplicate-string", 16), ("bucket-sort", 11),
])
def test_counts_agree_with_the_members_listed_from_the_definition(name, longest):
    listed = Counter(len(s) for s in members(name, longest))
    lang = languages.get(name)
    assert [lang.count(n) for n in range(longest + 1)] == [listed[n] for n in range(longest + 1)]


@settings(max_examples=60, deadline=None)
@given(st.integers(2, 40), st.integers(1, 40), st.integers(0, 2**32))
def test_the_addition_widths_are_drawn_with_their_geometric_weights(n, c, seed):
    widths = PiecewiseGeometric(n, c)
    weights = [2 ** (min(a, c) + min(n - a, c)) for a in range(1, n)]
    assert widths.choice.total == sum(weights)
    assert [_geometric_total(*run) for run in widths.runs] == [
        sum(weights[lo - 1 : hi]) for lo, hi, _, _ in widths.runs]
    assert 1 <= widths.pick(np.random.default_rng(seed)) <= n - 1


def test_the_width_draw_is_exactly_weighted():
    widths, rng = PiecewiseGeometric(9, 3), np.random.default_rng(5)
    weights = {a: 2 ** (min(a, 3) + min(9 - a, 3)) for a in range(1, 9)}
    total = 40_000
    counts = Counter(widths.pick(rng) for _ in range(total))
    expected = {a: total * w / sum(weights.values()) for a, w in weights.items()}
    chi2 = sum((counts[a] - e) ** 2 / e for a, e in expected.items())
    assert chi2 < chi_square_bound(len(weights) - 1)
