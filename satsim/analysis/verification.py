"""Check a construction against its language's oracle: exhaustively, on samples, at long lengths."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from satsim.analysis.scoring import oracle_labels, predict, wrong_strings
from satsim.analysis.strings import all_strings, test_set
from satsim.engine.simulator import Simulator


@dataclass(frozen=True)
class Check:
    """How many strings one check covered and which ones the model got wrong (first few)."""

    name: str
    strings: int
    wrong: int
    examples: tuple[str, ...]


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
    for batch in _chunks(strings):
        labels = oracle_labels(language, batch)
        bad = wrong_strings(language, batch, labels, predict(simulator, batch))
        total += len(batch)
        wrong += len(bad)
        examples += bad[: max(0, 3 - len(examples))]
    return Check(name, total, wrong, tuple(examples))


def exhaustive(simulator: Simulator, language, max_len: int) -> Check:
    """Check every string over the language's alphabet up to ``max_len``."""
    return check_strings(simulator, language, all_strings(language.alphabet, max_len),
                         f"exhaustive ≤ {max_len}")


def sampled(simulator: Simulator, language, n: int, max_len: int, seed: int = 0) -> Check:
    """Check a balanced test set of n strings with lengths up to max_len."""
    strings, _ = test_set(language, n, 0, max_len, seed)
    return check_strings(simulator, language, strings, f"{n} sampled ≤ {max_len}")


def long_strings(simulator: Simulator, language, length: int, n: int = 2, seed: int = 0) -> Check:
    """Check a balanced test set of 2n strings of (about) ``length`` symbols."""
    strings, _ = test_set(language, 2 * n, length - 3, length, seed)
    return check_strings(simulator, language, strings, f"{2 * n} of length ~{length}")
