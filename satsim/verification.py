"""Check a construction against its language's oracle: exhaustively, on samples, at long lengths."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

from satsim.simulator import Simulator


@dataclass(frozen=True)
class Check:
    """How many strings one check covered and which ones the model got wrong (first few)."""

    name: str
    strings: int
    wrong: int
    examples: tuple[str, ...]


def all_strings(alphabet: tuple[str, ...], max_len: int) -> Iterator[str]:
    """Every string over ``alphabet`` of length 0 … max_len, shortest first."""
    for length in range(max_len + 1):
        for symbols in itertools.product(alphabet, repeat=length):
            yield "".join(symbols)


def _chunks(strings, size: int = 20_000) -> Iterator[list[str]]:
    batch = []
    for s in strings:
        batch.append(s)
        if len(batch) == size:
            yield batch
            batch = []
    if batch:
        yield batch


def check_strings(simulator: Simulator, language, strings, name: str) -> Check:
    """Compare the model's answers with the oracle on ``strings`` (an iterable)."""
    total, wrong, examples = 0, 0, []
    next_symbol = simulator.spec.output.task == "next-symbol"
    for batch in _chunks(strings):
        if next_symbol:
            predicted = simulator.next_symbols(batch)
            bad = [s for s, p in zip(batch, predicted) if p != language.next_symbols(s)]
        else:
            truth = np.array([language.contains(s) for s in batch], dtype=bool)
            verdict = simulator.accepts(batch)
            bad = [s for s, v, t in zip(batch, verdict, truth) if v != t]
        total += len(batch)
        wrong += len(bad)
        examples += bad[: max(0, 3 - len(examples))]
    return Check(name, total, wrong, tuple(examples))


def exhaustive(simulator: Simulator, language, max_len: int) -> Check:
    """Check every string over the language's alphabet up to ``max_len``."""
    return check_strings(simulator, language, all_strings(language.alphabet, max_len),
                         f"exhaustive ≤ {max_len}")


def sampled(simulator: Simulator, language, n: int, max_len: int, seed: int = 0) -> Check:
    """Check n/2 uniform positives and n/2 labelled hard negatives with lengths up to max_len."""
    positives = language.sample_positive(n // 2, 0, max_len, seed=seed)
    negatives = language.sample_negative(n - len(positives), 1, max_len, seed=seed + 1)
    return check_strings(simulator, language, positives + negatives,
                         f"{n} sampled ≤ {max_len}")


def long_strings(simulator: Simulator, language, length: int, n: int = 2, seed: int = 0) -> Check:
    """Check n positives and n negatives of (about) ``length`` symbols."""
    positives = language.sample_positive(n, length - 3, length, seed=seed)
    negatives = language.sample_negative(n, length - 3, length, seed=seed + 1)
    return check_strings(simulator, language, positives + negatives, f"{2 * n} of length ~{length}")
