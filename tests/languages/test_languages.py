import itertools
import math
from collections import Counter

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import languages
from languages import EOS, LanguageError

DYCK = languages.get("dyck1")
EVEN_LABELS = {"flip", "dip-once", "wrong-order", "random"}
ODD_LABELS = {"insert", "delete", "random"}


def ref_contains(s: str) -> bool:
    """Independent definition: depth never negative, ends at 0."""
    h = 0
    for c in s:
        h += 1 if c == "(" else -1
        if h < 0:
            return False
    return h == 0


def all_strings(max_len: int):
    for n in range(max_len + 1):
        for t in itertools.product("()", repeat=n):
            yield "".join(t)


def chi_square(counts: Counter, support: list[str], total: int) -> float:
    expected = total / len(support)
    return sum((counts[w] - expected) ** 2 / expected for w in support)


dyck_strings = st.text(alphabet="()", max_size=40)


# ---- registry and metadata -------------------------------------------------------------


def test_registry_and_metadata():
    assert "dyck1" in languages.names()
    assert languages.names() == sorted(languages.names())
    assert DYCK.name == "dyck1"
    assert DYCK.alphabet == ("(", ")")
    assert EOS == "<eos>" and EOS not in DYCK.alphabet
    assert isinstance(DYCK.description, str) and "\n" not in DYCK.description
    assert DYCK.references and all(isinstance(r, str) for r in DYCK.references)
    assert set(DYCK.negative_labels) == EVEN_LABELS | ODD_LABELS


def test_unknown_language_lists_known_names():
    with pytest.raises(LanguageError, match=r"unknown language 'dyk1'; known: .*dyck1") as err:
        languages.get("dyk1")
    assert "\n" not in str(err.value)


def test_register_plugs_in_a_new_language_and_rejects_bad_ones():
    class Empty(languages.Language):
        name = "test-empty"
        alphabet = ("a",)
        description = "the empty language"

        def contains(self, s):
            self.encode(s)
            return False

        def count(self, length):
            return 0

        def next_symbols(self, s):
            return [frozenset()] * (len(s) + 1)

        def generators_for(self, length):
            return ("all",)

        def _positive(self, length, rng):
            raise AssertionError

        def _negative(self, label, length, rng):
            return "a" * length

    lang = Empty()
    lang.negative_labels = ("all",)
    languages.register(lang)
    try:
        assert languages.get("test-empty") is lang
        assert lang.sample_negative(3, 0, 2, seed=1) == lang.sample_negative(3, 0, 2, seed=1)
        with pytest.raises(LanguageError, match="no positive strings"):
            lang.sample_positive(1, 0, 5)
    finally:
        languages.registry._LANGUAGES.pop("test-empty")

    bad = Empty()
    bad.alphabet = ("ab",)
    with pytest.raises(LanguageError, match="one-character"):
        languages.register(bad)


# ---- exhaustive checks -----------------------------------------------------------------


def test_contains_and_count_exhaustive():
    counts = Counter()
    for s in all_strings(14):
        assert DYCK.contains(s) == ref_contains(s), s
        counts[len(s)] += ref_contains(s)
    for n in range(15):
        assert DYCK.count(n) == counts[n]
    assert [DYCK.count(2 * m) for m in range(8)] == [1, 1, 2, 5, 14, 42, 132, 429]
    assert DYCK.count(200) == math.comb(200, 100) // 101


def grammar_words(max_m: int) -> list[str]:
    """All Dyck words of length <= 2 * max_m from the grammar S -> "" | "(" S ")" S."""
    by_m = [[""]]
    for m in range(1, max_m + 1):
        by_m.append(["(" + a + ")" + b for i in range(m) for a in by_m[i] for b in by_m[m - 1 - i]])
    return [w for ws in by_m for w in ws]


def test_grammar_agrees_with_reference():
    assert set(grammar_words(7)) == {s for s in all_strings(14) if ref_contains(s)}


def test_next_symbols_exhaustive():
    # x may follow p iff p + x is a prefix of some word; for |p + x| <= 11 a completion needs at
    # most 11 more symbols, so words up to length 22 decide every case exactly (a bound of 16
    # would wrongly reject deep prefixes such as "(((((((((").
    viable = {w[:i] for w in grammar_words(11) for i in range(min(len(w), 11) + 1)}
    for s in all_strings(10):
        sets = DYCK.next_symbols(s)
        assert len(sets) == len(s) + 1
        for i, got in enumerate(sets):
            p = s[:i]
            want = {x for x in "()" if p + x in viable} | ({EOS} if ref_contains(p) else set())
            assert got == frozenset(want), (p, got, want)


def test_depth_helpers():
    assert languages.depth_profile("(()))(").tolist() == [0, 1, 2, 1, 0, -1, 0]
    assert languages.depth("((") == 2 and languages.max_depth("(()(()))") == 3
    assert DYCK.stats("(()") == {"length": 3, "depth": 1, "min_depth": 0, "max_depth": 2}
    assert languages.max_depth("") == 0


# ---- positives -------------------------------------------------------------------------


@pytest.mark.parametrize(("length", "n", "bound"), [(6, 20_000, 30.0), (8, 42_000, 45.0)])
def test_positives_exactly_uniform(length, n, bound):
    # fixed seed, so never flaky; a correct sampler exceeds these bounds with probability
    # P(chi2_4 > 30) = 5e-6 and P(chi2_13 > 45) < P(chi2_14 > 45) = 4e-5
    support = [s for s in all_strings(length) if len(s) == length and ref_contains(s)]
    samples = DYCK.sample_positive(n, length, length, seed=12345)
    counts = Counter(samples)
    assert set(counts) == set(support)
    assert chi_square(counts, support, n) < bound
    p = 1 / len(support)
    sigma = math.sqrt(n * p * (1 - p))
    assert all(abs(counts[w] - n * p) < 5 * sigma for w in support)


def test_positive_lengths_uniform_over_even_lengths():
    n = 30_000
    samples = DYCK.sample_positive(n, 3, 12, seed=7)
    lengths = Counter(len(s) for s in samples)
    assert set(lengths) == {4, 6, 8, 10, 12}
    assert chi_square(lengths, [4, 6, 8, 10, 12], n) < 30.0
    assert all(DYCK.contains(s) for s in samples)
    assert DYCK.sample_positive(5, 0, 0) == [""] * 5
    assert DYCK.sample_positive(0, 3, 12) == []


def test_positives_reproducible_and_seed_dependent():
    a = DYCK.sample_positive(200, 0, 40, seed=3)
    assert a == DYCK.sample_positive(200, 0, 40, seed=3)
    assert a != DYCK.sample_positive(200, 0, 40, seed=4)
    assert DYCK.sample_positive(50, 0, 40) == DYCK.sample_positive(50, 0, 40, seed=0)


@settings(max_examples=50, deadline=None)
@given(st.integers(0, 2**32), st.integers(0, 60), st.integers(0, 60))
def test_positives_property(seed, a, b):
    lo, hi = min(a, b), max(a, b)
    if lo == hi and lo % 2:
        with pytest.raises(LanguageError, match="even length"):
            DYCK.sample_positive(3, lo, hi, seed=seed)
        return
    for s in DYCK.sample_positive(20, lo, hi, seed=seed):
        assert lo <= len(s) <= hi and len(s) % 2 == 0 and ref_contains(s)


# ---- negatives -------------------------------------------------------------------------


def test_negatives_labelled():
    pairs = DYCK.sample_negative_labelled(6000, 1, 12, seed=11)
    assert len(pairs) == 6000
    labels = Counter(label for _, label in pairs)
    assert set(labels) == set(DYCK.negative_labels)
    assert min(labels.values()) > 500  # roughly even: each label has 6000/8 .. 6000*7/24 expected
    assert {len(s) for s, _ in pairs} == set(range(1, 13))
    for s, label in pairs:
        assert not ref_contains(s) and 1 <= len(s) <= 12
        st_ = DYCK.stats(s)
        assert label in (ODD_LABELS if len(s) % 2 else EVEN_LABELS)
        if label == "flip":
            assert abs(st_["depth"]) == 2
        if label == "dip-once":
            assert st_["depth"] == 0 and st_["min_depth"] == -1
            assert list(languages.depth_profile(s)).count(-1) == 1
        if label == "wrong-order":
            assert st_["depth"] == 0
    assert [s for s, _ in pairs] == DYCK.sample_negative(6000, 1, 12, seed=11)


def test_negatives_reproducible_and_restrictable():
    a = DYCK.sample_negative_labelled(300, 0, 30, seed=5)
    assert a == DYCK.sample_negative_labelled(300, 0, 30, seed=5)
    assert a != DYCK.sample_negative_labelled(300, 0, 30, seed=6)
    only = DYCK.sample_negative_labelled(200, 1, 20, seed=2, labels=["dip-once"])
    assert {label for _, label in only} == {"dip-once"} and all(len(s) % 2 == 0 for s, _ in only)
    with pytest.raises(LanguageError, match="unknown negative generator.*known: flip"):
        DYCK.sample_negative(1, 1, 4, labels=["swap"])
    with pytest.raises(LanguageError, match=r"no negative strings with length in \[0, 0\]"):
        DYCK.sample_negative(1, 0, 0)
    with pytest.raises(LanguageError, match="no negative strings"):
        DYCK.sample_negative(1, 3, 3, labels=["flip"])


@settings(max_examples=50, deadline=None)
@given(st.integers(0, 2**32), st.integers(1, 50), st.integers(0, 10))
def test_negatives_property(seed, lo, extra):
    for s, label in DYCK.sample_negative_labelled(20, lo, lo + extra, seed=seed):
        assert not ref_contains(s) and lo <= len(s) <= lo + extra
        assert label in DYCK.generators_for(len(s))


# ---- long strings ----------------------------------------------------------------------


def test_long_strings():
    (s,) = DYCK.sample_positive(1, 100_000, 100_000, seed=1)
    assert len(s) == 100_000 and DYCK.contains(s) and DYCK.max_depth(s) > 10
    assert DYCK.next_symbols(s)[-1] == frozenset({"(", EOS})
    for length in (100_000, 100_001):
        for label in DYCK.generators_for(length):
            (t,) = DYCK.sample_negative(1, length, length, seed=2, labels=[label])
            assert len(t) == length and not DYCK.contains(t), label


# ---- errors ----------------------------------------------------------------------------


def test_symbol_errors():
    msg = r"symbol 'x' at position 3 is not in the alphabet of dyck1 \('\(', '\)'\)"
    with pytest.raises(LanguageError, match=msg):
        DYCK.contains("(()x)")
    with pytest.raises(LanguageError, match="symbol 'é' at position 0"):
        DYCK.next_symbols("é")
    with pytest.raises(LanguageError, match="position 1"):
        DYCK.depth_profile("([")


def test_argument_errors():
    with pytest.raises(LanguageError, match=r"min_len \(5\) is greater than max_len \(2\)"):
        DYCK.sample_positive(1, 5, 2)
    with pytest.raises(LanguageError, match=r"no positive strings with length in \[3, 3\].*even"):
        DYCK.sample_positive(1, 3, 3)
    for bad in (-1, 1.5, True, "3"):
        with pytest.raises(LanguageError, match="n must be a non-negative integer"):
            DYCK.sample_positive(bad, 0, 4)
        with pytest.raises(LanguageError, match="n must be a non-negative integer"):
            DYCK.sample_negative(bad, 1, 4)
    with pytest.raises(LanguageError, match="min_len must be"):
        DYCK.sample_negative(1, -2, 4)
    with pytest.raises(LanguageError, match="length must be"):
        DYCK.count(-1)
    assert DYCK.count(7) == 0


# ---- next-symbol properties ------------------------------------------------------------


@settings(max_examples=300, deadline=None)
@given(dyck_strings)
def test_next_symbols_consistent_with_contains(s):
    sets = DYCK.next_symbols(s)
    assert DYCK.contains(s) == ref_contains(s)
    # a string is in the language iff every symbol is allowed and EOS is allowed at the end
    assert DYCK.contains(s) == (all(s[i] in sets[i] for i in range(len(s))) and EOS in sets[-1])
    for i, allowed in enumerate(sets):
        p = s[:i]
        assert (EOS in allowed) == DYCK.contains(p)
        for x in "()":
            q = p + x
            completable = DYCK.contains(q + ")" * max(DYCK.depth(q), 0))
            assert (x in allowed) == completable
            assert (x in allowed) == bool(DYCK.next_symbols(q)[-1])


@settings(max_examples=200, deadline=None)
@given(st.integers(0, 2**32), st.integers(1, 30))
def test_one_flip_of_a_positive_is_negative(seed, m):
    (w,) = DYCK.sample_positive(1, 2 * m, 2 * m, seed=seed)
    i = np.random.default_rng(seed).integers(2 * m)
    flipped = w[:i] + (")" if w[i] == "(" else "(") + w[i + 1 :]
    assert not DYCK.contains(flipped)
