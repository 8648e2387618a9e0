"""Every registered language against an independent brute-force definition (support/lang_refs.py).

Exhaustive lengths: all strings up to length 10 for alphabets of at most 3 symbols, 8 for 4
symbols, 7 for 5, 6 for 6 symbols and 5 for the 8- and 9-symbol alphabets (cycle-navigation,
modular-arithmetic): longer would cost minutes in pure Python. The sampling tests add longer
strings, each checked against the same definitions.
"""

from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import languages
from languages import EOS, LanguageError
from tests.support.lang_refs import REFERENCE, all_strings, completion_bound, members

NAMES = languages.names()
REQUIRED = {
    "dyck1", "dyck2", "dyck3", "dyck-2-3", "shuffle-dyck2", "shuffle-dyck3", "anbn", "anbncn",
    "anbncndn", "majority", "reset-dyck1", *(f"tomita{i}" for i in range(1, 8)), "parity-even",
    "parity-odd", "aa-star", "abab-star", "d2", "d3", "d4", "first", "even-pairs",
    "cycle-navigation", "modular-arithmetic",
    # FLaRe's eighteen (parity is parity-odd there), see languages/flare.py
    "repeat-01", "modular-arithmetic-simple", "stack-manipulation", "marked-reversal",
    "unmarked-reversal", "marked-copy", "missing-duplicate-string", "odds-first",
    "binary-addition", "binary-multiplication", "compute-sqrt", "bucket-sort",
}  # fmt: skip
EXHAUSTIVE = {1: 12, 2: 10, 3: 10, 4: 8, 5: 7, 6: 6}  # alphabet size -> length; else 5
VIABLE = {1: 16, 2: 16, 3: 11, 4: 8, 5: 7, 6: 6}  # alphabet size -> longest string enumerated
LISTED = {"an": 48, "dyck2": 14, "dyck-2": 14, "dyck3": 12, "dyck-3": 12, "cycle": 8, "modular": 9,
          "marked": 15, "odds": 15, "bucket": 11, "unmarked": 20, "missing": 14, "stack": 13,
          "binary": 13, "compute": 15}


def exhaustive_length(language):
    return EXHAUSTIVE.get(len(language.alphabet), 5)


def test_every_required_name_is_registered_with_metadata():
    assert REQUIRED <= set(NAMES) and set(NAMES) == set(REFERENCE)
    for name in NAMES:
        lang = languages.get(name)
        assert lang.name == name and lang.alphabet and EOS not in lang.alphabet
        assert lang.description and "\n" not in lang.description
        assert lang.references and lang.kind and lang.negative_labels


def test_parametrised_names_resolve_and_bad_ones_explain():
    assert languages.get("dyck-2-7").count(16) == languages.get("dyck2").with_max_depth(7).count(16)
    assert languages.get("dyck-1-4").count(12) == languages.get("d4").count(12)
    assert languages.get("shuffle-dyck2-3").name == "shuffle-dyck2-3"
    assert "dyck-2-7" not in languages.names()
    for bad, why in [("dyck-9-3", "unknown language"), ("dyck-2-0", "depth bound"),
                     ("dyck-2-03", "unknown language")]:
        with pytest.raises(LanguageError, match=why) as err:
            languages.get(bad)
        assert "\n" not in str(err.value)


@pytest.mark.parametrize("name", NAMES)
def test_contains_and_count_agree_with_brute_force(name):
    lang, ref = languages.get(name), REFERENCE[name]
    counts = Counter()
    for s in all_strings(lang.alphabet, exhaustive_length(lang)):
        member = ref(s)
        assert lang.contains(s) == member, s
        counts[len(s)] += member
    assert [lang.count(n) for n in range(exhaustive_length(lang) + 1)] == [
        counts[n] for n in range(exhaustive_length(lang) + 1)
    ]


@pytest.mark.parametrize("name", NAMES)
def test_next_symbols_agree_with_bounded_brute_force(name):
    # x may follow p iff p + x is a prefix of some member. Members up to length N are found by
    # brute force; that decides every p + x of length m + 1 whose completions need at most
    # N - m - 1 symbols, which completion_bound (see its docstring) guarantees.
    # Members are listed from the definition where that is cheap (blocks, Dyck grammar,
    # input-then-answer), else found among all strings.
    lang, ref = languages.get(name), REFERENCE[name]
    longest = next((n for p, n in LISTED.items() if name.startswith(p)), None)
    listed = members(name, longest) if longest else None
    if listed is None:
        longest = VIABLE.get(len(lang.alphabet), 5)
        listed = [s for s in all_strings(lang.alphabet, longest) if ref(s)]
    viable = {s[:i] for s in listed for i in range(len(s) + 1)}
    m = max(
        m
        for m in range(longest)
        if m + 1 + completion_bound(name, lang, m + 1) <= longest
        and len(lang.alphabet) ** m <= 5000
    )
    checked = 0
    for s in all_strings(lang.alphabet, m, m):
        sets = lang.next_symbols(s)
        assert len(sets) == len(s) + 1
        for i, got in enumerate(sets):
            p = s[:i]
            want = {x for x in lang.alphabet if p + x in viable} | ({EOS} if ref(p) else set())
            assert got == frozenset(want), (p, got, want)
            checked += 1
    assert checked > 0


@pytest.mark.parametrize("name", NAMES)
def test_bad_symbols_are_one_line_language_errors(name):
    lang = languages.get(name)
    for call in (lang.contains, lang.next_symbols, lang.stats):
        with pytest.raises(LanguageError, match="not in the alphabet") as err:
            call(lang.alphabet[0] + "\u00e9")
        assert "\n" not in str(err.value)


@settings(max_examples=40, deadline=None)
@given(st.data())
def test_next_symbols_are_consistent_with_contains_on_longer_strings(data):
    name = data.draw(st.sampled_from(NAMES))
    lang, ref = languages.get(name), REFERENCE[name]
    seed = data.draw(st.integers(0, 2**32))
    strings = lang.sample_positive(3, 0, 60, seed=seed) + lang.sample_negative(3, 0, 60, seed=seed)
    for s in strings:
        sets = lang.next_symbols(s)
        assert (all(s[i] in sets[i] for i in range(len(s))) and EOS in sets[-1]) == ref(s)
        for i in range(0, len(s) + 1, 7):
            assert (EOS in sets[i]) == ref(s[:i])
