"""Every hand-built construction agrees with its language's oracle, in both tasks.

The acceptance-size run (exhaustive to length 14/12, 10^4 samples up to 10^4, strings of 10^5)
is bench/verify_constructions.py; these tests use sizes that keep the suite quick.
"""

import numpy as np
import pytest

import languages
from satsim import Simulator, constructions
from satsim.analysis.head_roles import head_roles
from satsim.analysis.verification import check_strings, exhaustive, long_strings, sampled

EXHAUSTIVE = {2: (14, 12), 3: (10, 8), 4: (8, 7), 6: (6, 5)}  # alphabet size → (recognition, next)
CASES = [(name, task) for name in constructions.names() for task in ("recognition", "next-symbol")]


@pytest.fixture(scope="module")
def simulators():
    cache = {}

    def get(name, task):
        if (name, task) not in cache:
            cache[name, task] = Simulator(constructions.build(name, task=task))
        return cache[name, task]

    return get


def assert_exact(check):
    message = f"{check.name}: {check.wrong}/{check.strings} wrong, e.g. {check.examples}"
    assert check.wrong == 0, message


@pytest.mark.slow  # runs long
@pytest.mark.parametrize(("name", "task"), CASES)
def test_exhaustive_on_short_strings(simulators, name, task):
    language = languages.get(name)
    rec_len, next_len = EXHAUSTIVE[len(language.alphabet)]
    assert_exact(exhaustive(simulators(name, task), language,
                            rec_len if task == "recognition" else next_len))


@pytest.mark.slow  # runs long
@pytest.mark.parametrize(("name", "task"), CASES)
def test_sampled_positives_and_hard_negatives(simulators, name, task):
    n, max_len = (1000, 2000) if task == "recognition" else (200, 500)
    assert_exact(sampled(simulators(name, task), languages.get(name), n, max_len, seed=7))


BUILT_LONG = ("reset-dyck1", "shuffle-dyck2", "shuffle-dyck3")  # exact samplers are slow at 10^5
LONG_SAMPLED = [name for name in constructions.names() if name not in BUILT_LONG]


@pytest.mark.slow  # runs long
@pytest.mark.parametrize("name", LONG_SAMPLED)
def test_strings_of_length_100_000(simulators, name):
    assert_exact(long_strings(simulators(name, "recognition"), languages.get(name), 100_000, n=1))


def test_reset_dyck1_strings_of_length_100_000(simulators):
    # the exact sampler's tables grow as length squared, so build long strings from sampled
    # segments: Dyck words joined by resets are members; each edit below breaks one rule
    dyck, reset = languages.get("dyck1"), languages.get("reset-dyck1")
    pieces = dyck.sample_positive(200, 400, 600, seed=3)
    member = "1".join(pieces)
    middle = len(pieces) // 2
    strings = {
        "segments": member,
        "open prefix segments": "1".join(p + "((" for p in pieces[:-1]) + "1" + pieces[-1],
        "dip in the middle segment": "1".join(pieces[:middle] + [")" + pieces[middle]]
                                              + pieces[middle + 1:]),
        "last segment open": member + "(",
        "close after the last reset": member + "1)",
    }
    for label, string in strings.items():
        assert len(string) > 90_000, label
    check = check_strings(simulators("reset-dyck1", "recognition"), reset, list(strings.values()),
                          "long reset-dyck1")
    assert_exact(check)
    assert [reset.contains(s) for s in strings.values()] == [True, True, False, False, False]


@pytest.mark.parametrize("name", constructions.names())
def test_constructions_declare_their_language_alphabet(name):
    spec = constructions.build(name)
    assert set(spec.alphabet) == set(languages.get(name).alphabet)
    assert spec.dim_names and spec.description


COUNTING = {"dyck1": [(0, 0)], "shuffle-dyck2": [(0, 0)], "shuffle-dyck3": [(0, 0)],
            "anbn": [(0, 0)], "anbncn": [(0, 0)], "anbncndn": [(0, 0)], "majority": [(0, 0)],
            "reset-dyck1": [(1, 0)]}  # block 0 of reset-dyck1 is feed-forward only


@pytest.mark.parametrize("name", sorted(COUNTING))
def test_counting_heads_are_classified_global(simulators, name):
    language = languages.get(name)
    strings = language.sample_positive(20, 8, 64, seed=1) + language.sample_negative(20, 8, 64)
    roles = {(r.layer, r.head): r.role for r in head_roles(simulators(name, "recognition"),
                                                           strings)}
    for key in COUNTING[name]:
        assert roles[key] == "global", (name, key, roles)


def test_argmin_and_first_symbol_heads_are_local(simulators):
    dyck = languages.get("dyck1")
    strings = dyck.sample_positive(30, 20, 60, seed=2) + dyck.sample_negative(30, 20, 60)
    roles = {(r.layer, r.head): r.role for r in head_roles(simulators("dyck1", "recognition"),
                                                           strings)}
    assert roles[(1, 0)] == "local"
    first = languages.get("first")
    strings = first.sample_positive(20, 8, 40) + first.sample_negative(20, 8, 40)
    roles = {(r.layer, r.head): r.role for r in head_roles(simulators("first", "recognition"),
                                                           strings)}
    assert roles[(0, 0)] == "local"


@pytest.mark.slow  # runs long
@pytest.mark.parametrize("k", [2, 3])
def test_shuffle_dyck_strings_of_length_100_000(simulators, k):
    # k uniform Dyck-1 words, one per bracket type, merged at uniformly random positions
    rng = np.random.default_rng(k)
    language = languages.get(f"shuffle-dyck{k}")
    words = languages.get("dyck1").sample_positive(k, 100_000 // k - 2, 100_000 // k, seed=k)
    pairs = ["()", "[]", "{}"][:k]
    streams = [w.translate(str.maketrans("()", pair)) for w, pair in zip(words, pairs)]
    owner = rng.permutation(np.repeat(np.arange(k), [len(w) for w in streams]))
    cursors = [iter(w) for w in streams]
    member = "".join(next(cursors[t]) for t in owner)
    first_close = member.index(")")
    strings = {
        "merged words": member,
        "one bracket of the wrong type": member[:first_close] + "]" + member[first_close + 1:],
        "one symbol deleted": member[:-1],
        "dip once in type 0": member.replace("()", ")(", 1) if member.startswith("()") else
        ")" + member + "(",
    }
    check = check_strings(simulators(f"shuffle-dyck{k}", "recognition"), language,
                          list(strings.values()), f"long shuffle-dyck{k}")
    assert_exact(check)
    assert [language.contains(s) for s in strings.values()] == [True, False, False, False]
