"""Check a compiled model against a meaning: every short string, then long ones.

The meaning is a program's interpreter (:mod:`satsim.rasp.crasp`, :mod:`satsim.rasp.brasp`)
or a language's oracle. The model runs in the saturated simulator with its default tolerances.
Half the long strings are random (:func:`random_strings`); the other half grow short strings
the meaning accepts (:func:`grown_strings`), so that accepted long strings come up even where
random ones are almost never accepted (balanced brackets, aⁿbⁿ).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass

import numpy as np

from satsim.engine.resources import check_memory, strings_bytes
from satsim.engine.simulator import Simulator
from satsim.model.spec import ModelSpec

EXHAUSTIVE_BUDGET = 100_000
"""Strings the exhaustive part runs at most: it stops at the longest length that fits."""


@dataclass(frozen=True)
class Verification:
    """How a model fared: the exhaustive part, the long random part, the first disagreement."""

    exhaustive_max_len: int
    exhaustive_strings: int
    long_strings: int
    long_max_len: int
    long_accepted: int
    wrong: int
    first_wrong: str | None

    @property
    def ok(self) -> bool:
        """Whether the model agreed on every string tried."""
        return self.wrong == 0

    def as_dict(self) -> dict:
        """JSON-ready fields."""
        return {**asdict(self), "ok": self.ok}

    def summary(self) -> str:
        """One line for a person."""
        verdict = "agrees" if self.ok else f"DISAGREES on {self.wrong} strings, e.g. " \
            f"{_shown(self.first_wrong)}"
        return (f"{verdict}: all {self.exhaustive_strings:,} strings of length 0–"
                f"{self.exhaustive_max_len}, and {self.long_strings} longer strings of up to "
                f"{self.long_max_len:,} symbols ({self.long_accepted} accepted)")


def all_strings_up_to(alphabet: tuple[str, ...], max_len: int,
                      budget: int = EXHAUSTIVE_BUDGET) -> tuple[list[str], int]:
    """Every string of length 0..L over ``alphabet`` with L ≤ ``max_len`` as large as fits."""
    strings: list[str] = []
    reached = -1
    for length in range(max_len + 1):
        if len(strings) + len(alphabet) ** length > budget:
            break
        strings += ["".join(t) for t in itertools.product(alphabet, repeat=length)]
        reached = length
    return strings, reached


def strings_of_length(alphabet: tuple[str, ...], count: int, length: int,
                      seed: int = 0) -> list[str]:
    """``count`` strings of exactly ``length`` symbols, each drawn uniformly from ``alphabet``."""
    rng = np.random.default_rng(seed)
    return ["".join(rng.choice(list(alphabet), size=length)) for _ in range(count)]


def random_strings(alphabet: tuple[str, ...], count: int, max_len: int,
                   seed: int = 0) -> list[str]:
    """``count`` random strings, the first of ``max_len`` symbols, the others log-uniform.

    They take turns among three kinds, so that both answers come up on long strings: uniform
    symbols, runs of one symbol (geometric lengths), and a short random word repeated with a
    few symbols changed.
    """
    rng = np.random.default_rng(seed)
    symbols = np.array(alphabet)
    lengths = [max_len] + [int(x) for x in np.exp(rng.uniform(0, np.log(max_len + 1),
                                                               max(count - 1, 0)))]
    out = []
    for index, n in enumerate(lengths[:count]):
        kind = index % 3
        if kind == 0:
            ids = rng.integers(len(alphabet), size=n)
        elif kind == 1:
            runs = rng.integers(len(alphabet), size=n)
            starts = rng.random(n) < 1 / max(2.0, float(rng.integers(2, 64)))
            ids = runs[np.maximum.accumulate(np.where(starts, np.arange(n), 0))]
        else:
            word = rng.integers(len(alphabet), size=int(rng.integers(1, 6)))
            ids = np.resize(word, n)
            flips = rng.integers(n, size=int(rng.integers(0, 3))) if n else []
            ids[flips] = rng.integers(len(alphabet), size=len(flips))
        out.append("".join(symbols[ids]))
    return out


def grown_strings(words: Sequence[str], count: int, max_len: int, seed: int = 0) -> list[str]:
    """``count`` long strings grown from ``words`` (each nonempty), as long as random_strings'.

    By turns, a word with each symbol repeated k times, or the word repeated k times, with k as
    large as the length allows.
    """
    rng = np.random.default_rng(seed)
    lengths = [max_len] + [int(x) for x in np.exp(rng.uniform(0, np.log(max_len + 1),
                                                               max(count - 1, 0)))]
    out = []
    for index, n in enumerate(lengths[:count]):
        word = words[int(rng.integers(len(words)))]
        k = max(1, n // len(word))
        out.append("".join(symbol * k for symbol in word) if index % 2 == 0 else word * k)
    return out


MEANING_BYTES = 16
"""Bytes per symbol and definition a program's interpreter holds for one string (its int64
vectors, and as much again of temporaries)."""


def check_long_strings(count: int, max_len: int, samples: bool = False,
                       definitions: int = 0) -> None:
    """Refuse, in one line, long strings that would not fit in memory.

    Counted: the strings, as many of a language's samples with ``samples``, and the vectors of
    a program of ``definitions`` definitions interpreting the longest.
    """
    mean = max_len / max(1.0, np.log(max_len + 1))  # log-uniform lengths up to max_len
    needed = strings_bytes(count, mean) + (strings_bytes(count, 0.75 * max_len) if samples
                                           else 0) + MEANING_BYTES * definitions * max_len
    check_memory(needed, f"--long {count:,} strings of up to --long-len {max_len:,} symbols",
                 "lower --long or --long-len")


def language_samples(language, count: int, max_len: int, seed: int = 0) -> list[str]:
    """``count`` strings of a language, of max_len/2 … max_len symbols: half of them positives.

    The odd one is a positive, the others hard negatives; a count of 0 gives none.
    """
    negatives = count // 2
    low = max(max_len // 2, 0)
    return (language.sample_positive(count - negatives, low, max_len, seed=seed)
            + language.sample_negative(negatives, low, max_len, seed=seed))


def verify(spec: ModelSpec, meaning: Callable[[str], bool], alphabet: tuple[str, ...],
           max_len: int = 10, long_count: int = 20, long_len: int = 10_000,
           seed: int = 0, extra: Sequence[str] = (), budget: int = EXHAUSTIVE_BUDGET,
           progress: Callable[[int, int], None] | None = None) -> Verification:
    """Compare the model's decisions with ``meaning`` on every short and some long strings.

    ``extra`` strings (a language's samples, say) count with the long ones; the exhaustive part
    stops at the longest length whose strings fit in ``budget``.
    """
    return verify_all(spec, {"meaning": meaning}, alphabet, max_len, long_count, long_len, seed,
                      extra, budget, progress)["meaning"]


def verify_all(spec: ModelSpec, meanings: Mapping[str, Callable[[str], bool]],
               alphabet: tuple[str, ...], max_len: int = 10, long_count: int = 20,
               long_len: int = 10_000, seed: int = 0, extra: Sequence[str] = (),
               budget: int = EXHAUSTIVE_BUDGET,
               progress: Callable[[int, int], None] | None = None) -> dict[str, Verification]:
    """:func:`verify` against each of several meanings: the same strings, the model run once.

    The long strings grow (:func:`grown_strings`) the short ones the first meaning accepts.
    ``progress(done, total)`` is called as the long strings are run, a few at a time.
    """
    check_long_strings(long_count, long_len)
    short, reached = all_strings_up_to(alphabet, max_len, budget)
    wants = {name: _answers(meaning, short) for name, meaning in meanings.items()}
    accepted = [s for s, yes in zip(short, next(iter(wants.values()))) if yes and s]
    grown = long_count // 2 if accepted else 0
    long = random_strings(alphabet, long_count - grown, long_len, seed) if long_count else []
    long += grown_strings(accepted, grown, long_len, seed) + list(extra)
    strings = short + long
    got = _decisions(spec, short, long, progress)
    found = {}
    for name, meaning in meanings.items():
        want = np.array(wants[name] + _answers(meaning, long), dtype=bool)
        wrong = np.flatnonzero(got != want)
        found[name] = Verification(reached, len(short), len(long),
                                   max(map(len, long), default=0), int(want[len(short):].sum()),
                                   int(len(wrong)), strings[wrong[0]] if len(wrong) else None)
    return found


def _answers(meaning: Callable[[str], bool], strings: list[str]) -> list[bool]:
    """A meaning's answers, all at once where it answers many (a program's interpreter)."""
    many = getattr(meaning, "many", None)
    return list(many(strings)) if many is not None else [meaning(s) for s in strings]


def _decisions(spec: ModelSpec, short: list[str], long: list[str],
               progress: Callable[[int, int], None] | None) -> np.ndarray:
    """The model's decisions on the short strings, then on the long ones a few at a time."""
    import numba

    simulator = Simulator(spec)
    parts = [np.asarray(simulator.accepts(short), dtype=bool)]
    step = max(1, numba.get_num_threads())
    for start in range(0, len(long), step):
        parts.append(np.asarray(simulator.accepts(long[start:start + step]), dtype=bool))
        if progress is not None:
            progress(min(start + step, len(long)), len(long))
    return np.concatenate(parts)


def _shown(string: str | None) -> str:
    """A string for a message, shortened when long."""
    if string is None:
        return "-"
    return repr(string) if len(string) <= 40 else f"{string[:30]!r}… ({len(string):,} symbols)"
