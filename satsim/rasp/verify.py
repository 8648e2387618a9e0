"""Check a compiled model against a meaning: every short string, then random long ones.

The meaning is a program's interpreter (:mod:`satsim.rasp.crasp`, :mod:`satsim.rasp.brasp`)
or a language's oracle. The model runs in the saturated simulator with its default tolerances.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass

import numpy as np

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
           seed: int = 0, extra: Sequence[str] = (),
           budget: int = EXHAUSTIVE_BUDGET) -> Verification:
    """Compare the model's decisions with ``meaning`` on every short and some long strings.

    ``extra`` strings (a language's samples, say) count with the long ones; the exhaustive part
    stops at the longest length whose strings fit in ``budget``.
    """
    return verify_all(spec, {"meaning": meaning}, alphabet, max_len, long_count, long_len, seed,
                      extra, budget)["meaning"]


def verify_all(spec: ModelSpec, meanings: Mapping[str, Callable[[str], bool]],
               alphabet: tuple[str, ...], max_len: int = 10, long_count: int = 20,
               long_len: int = 10_000, seed: int = 0, extra: Sequence[str] = (),
               budget: int = EXHAUSTIVE_BUDGET) -> dict[str, Verification]:
    """:func:`verify` against each of several meanings: the same strings, the model run once."""
    short, reached = all_strings_up_to(alphabet, max_len, budget)
    long = random_strings(alphabet, long_count, long_len, seed) if long_count else []
    long += list(extra)
    strings = short + long
    got = np.asarray(Simulator(spec).accepts(strings), dtype=bool)
    found = {}
    for name, meaning in meanings.items():
        want = np.array([meaning(s) for s in strings], dtype=bool)
        wrong = np.flatnonzero(got != want)
        found[name] = Verification(reached, len(short), len(long),
                                   max(map(len, long), default=0), int(want[len(short):].sum()),
                                   int(len(wrong)), strings[wrong[0]] if len(wrong) else None)
    return found


def _shown(string: str | None) -> str:
    """A string for a message, shortened when long."""
    if string is None:
        return "-"
    return repr(string) if len(string) <= 40 else f"{string[:30]!r}… ({len(string):,} symbols)"
