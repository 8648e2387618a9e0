"""The one policy for drawing test strings: balanced test sets, every short string, samples.

Every analysis that needs strings of a language takes them from here: ``satsim eval``, the
construction checks, training's evaluation, head roles and the saturation command.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Sequence

import numpy as np

from satsim.engine.resources import check_memory, strings_bytes
from satsim.errors import SatsimError
from satsim.model.encoding import symbols_text
from satsim.model.spec import ModelSpec


def check_test_set_memory(bins: Sequence[tuple[int, int]], n: int,
                          advice: str = "lower -n or the lengths") -> None:
    """Raise a one-line SatsimError when one bin's ``n`` strings would not fit in memory."""
    largest = max((strings_bytes(n, (low + high) / 2) for low, high in bins), default=0)
    check_memory(largest, f"-n {n} (strings per length bin)", advice)


def test_set(
    language, n: int, min_len: int, max_len: int, seed: int, negatives: bool = True
) -> tuple[list[str], np.ndarray]:
    """Half positives, half hard negatives (as far as the bin has them), with oracle labels.

    Without ``negatives``: n positives (the distribution a next-symbol model is trained on).
    """
    n_pos = n // 2 if negatives else n
    has_positives = any(language.has_positive(length) for length in range(min_len, max_len + 1))
    positives = (language.sample_positive(n_pos, min_len, max_len, seed=seed)
                 if has_positives else [])
    wrong = (language.sample_negative(n - len(positives), min_len, max_len, seed=seed + 1)
             if negatives or not positives else [])
    strings = positives + wrong
    labels = np.array([True] * len(positives) + [False] * len(wrong))
    return strings, labels


def bin_seed(seed: int, index: int) -> int:
    """The sampling seed of the ``index``-th bin (the same strings for every model)."""
    return seed + 1000 * index


def all_strings(alphabet: Sequence[str], max_len: int) -> Iterator[str]:
    """Every string over ``alphabet`` of length 0 … max_len, shortest first."""
    for length in range(max_len + 1):
        for symbols in itertools.product(alphabet, repeat=length):
            yield "".join(symbols)


def short_strings(alphabet: Sequence[str], budget: int) -> list[str]:
    """Every string of the lengths 0, 1, … whose strings together fit within ``budget``."""
    strings: list[str] = []
    for length in itertools.count():
        batch = ["".join(t) for t in itertools.product(alphabet, repeat=length)]
        if len(strings) + len(batch) > budget:
            return strings
        strings += batch
    raise AssertionError("unreachable")


def sample_strings(spec: ModelSpec, language, n: int, max_len: int, seed: int,
                   min_len: int = 0) -> list[str]:
    """``n`` strings of min_len … max_len: a balanced test set of ``language``, else random ones.

    Without a language (None), inputs are uniform over the model's alphabet with lengths uniform
    in max(min_len, 1) … max_len, written as the encoder reads them (tokens separated by spaces
    where a symbol is longer than one character).
    """
    if n < 1:
        raise SatsimError(f"need at least one string, got -n {n}")
    if min_len > max_len:
        raise SatsimError(f"--min-len {min_len} is above --max-len {max_len}")
    check_memory(strings_bytes(n, (min_len + max_len) / 2),
                 f"-n {n} strings up to --max-len {max_len}", "lower -n or --max-len")
    if language is not None:
        return test_set(language, n, min_len, max_len, seed)[0]
    if max_len < 1:
        raise SatsimError("random inputs need --max-len of at least 1")
    rng = np.random.default_rng(seed)
    alphabet = list(spec.alphabet)
    shortest = max(min_len, 1)
    return [symbols_text(spec, rng.choice(alphabet, int(rng.integers(shortest, max_len + 1))))
            for _ in range(n)]
