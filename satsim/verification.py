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


def edited_negatives(language, positives: list[str], seed: int = 0) -> list[str]:
    """One random replace, insert or delete per positive, kept when the oracle rejects it."""
    rng = np.random.default_rng(seed)
    alphabet = language.alphabet
    out = []
    for string in positives:
        for _ in range(20):
            position = int(rng.integers(0, len(string) + 1))
            symbol = alphabet[int(rng.integers(len(alphabet)))]
            edit = int(rng.integers(3)) if string else 1
            if edit == 0 and position < len(string):
                candidate = string[:position] + symbol + string[position + 1:]
            elif edit == 2 and position < len(string):
                candidate = string[:position] + string[position + 1:]
            else:
                candidate = string[:position] + symbol + string[position:]
            if not language.contains(candidate):
                out.append(candidate)
                break
    return out


def merged_shuffle_words(k: int, n: int, min_len: int, max_len: int, seed: int = 0) -> list[str]:
    """Members of shuffle-dyck-k: k random Dyck-1 words, one per bracket type, merged at random."""
    import languages

    rng = np.random.default_rng(seed)
    dyck1 = languages.get("dyck1")
    pairs = ["()", "[]", "{}", "<>"][:k]
    out = []
    for index in range(n):
        total = int(rng.integers((min_len + 1) // 2, max_len // 2 + 1)) * 2
        cuts = np.sort(rng.integers(0, total // 2 + 1, size=k - 1)) * 2
        lengths = np.diff(np.concatenate([[0], cuts, [total]]))
        words = [dyck1.sample_positive(1, int(L), int(L), seed=seed * 7919 + index * k + t)[0]
                 for t, L in enumerate(lengths)]
        streams = [w.translate(str.maketrans("()", pair)) for w, pair in zip(words, pairs)]
        owner = rng.permutation(np.repeat(np.arange(k), [len(w) for w in streams]))
        cursors = [iter(w) for w in streams]
        out.append("".join(next(cursors[t]) for t in owner))
    return out


def joined_reset_segments(n: int, min_len: int, max_len: int, seed: int = 0) -> list[str]:
    """Members of reset-dyck1: random Dyck-1 prefixes joined by resets, the last one a Dyck word."""
    import languages

    rng = np.random.default_rng(seed)
    dyck1 = languages.get("dyck1")
    out = []
    for _ in range(n):
        target = int(rng.integers(min_len, max_len + 1))
        last = dyck1.sample_positive(1, 0, min(target, 20), seed=int(rng.integers(1 << 31)))[0]
        parts, length = [], len(last)
        while target - length > 2:
            size = min(target - length - 1, int(rng.integers(0, 2001))) // 2 * 2
            word = dyck1.sample_positive(1, size, size, seed=int(rng.integers(1 << 31)))[0]
            cut = int(rng.integers(size // 2, size + 1))  # a prefix of a Dyck word
            parts.append(word[:cut])
            length += cut + 1
        out.append("1".join([*parts, last]))
    return out
