"""Datasets: a language's samples turned into task records, in the splits of well-known suites.

Tasks: "recognition" (string, label), "next-symbol" (string, per-prefix multi-hot over the
alphabet then EOS) and "transduction" (input, answer; input-then-answer languages only).
A preset is a list of splits, each a length range and a size relative to n. Later splits leave
out every string of earlier ones (so held-out short strings really are unseen), and a seed fixes
every record: the same arguments give byte-identical output.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import numpy as np

from languages.base import EOS, Language, LanguageError, check_count
from languages.pcfg import sample_critical_pcfg

TASKS = ("recognition", "next-symbol", "transduction")
SAMPLERS = ("uniform", "pcfg")
MIXES = ("mixed", "none", "boundary")  # besides the name of one negative generator
CHUNK = 4096  # records drawn per call (and per progress step)
ROUNDS = 16  # redraws of a chunk when de-duplication leaves it short


@dataclass(frozen=True)
class Split:
    """One split: its name, length range and size as a share of n."""

    name: str
    min_len: int
    max_len: int
    share: float = 1.0

    def size(self, n: int) -> int:
        """Return the number of records of this split for a training size n."""
        return n if self.share == 1.0 else max(1, round(n * self.share)) if n else 0


PRESETS: dict[str, tuple[Split, ...]] = {
    # Bhattamishra et al. 2020: train on [2, 50], test on two longer bins.
    "bhattamishra": (
        Split("train", 2, 50),
        Split("test-52-100", 52, 100, 0.2),
        Split("test-102-150", 102, 150, 0.2),
    ),
    # Deletang et al. 2023: train lengths U(1, 40), test 41-500.
    "deletang": (Split("train", 1, 40), Split("test", 41, 500, 0.2)),
    # FLaRe (Butoi et al. 2025): its five splits and their sizes for 10,000 training strings
    # (github.com/rycolab/flare). FLaRe keeps only test-short-held-out apart from the others;
    # here, as in every preset, no string is in two splits.
    "flare": (
        Split("train", 0, 40),
        Split("validation-short", 0, 40, 0.1),
        Split("validation-long", 0, 80, 0.1),
        Split("test", 0, 500, 0.501),
        Split("test-short-held-out", 0, 40, 0.1),
    ),
    # satsim: train short; held-out short strings; then bins up to thousands of symbols.
    "satsim": (
        Split("train", 0, 40),
        Split("validation", 0, 40, 0.1),
        Split("test-0-40", 0, 40, 0.1),
        Split("test-41-128", 41, 128, 0.1),
        Split("test-129-512", 129, 512, 0.1),
        Split("test-513-2048", 513, 2048, 0.1),
    ),
}
DEFAULT_PRESET = "satsim"


def splits_for(preset: str | None, min_len: int, max_len: int) -> tuple[Split, ...]:
    """Return the splits of ``preset``, or one split "sample" over [min_len, max_len]."""
    if preset is None:
        return (Split("sample", check_count(min_len, "min_len"), check_count(max_len, "max_len")),)
    if preset not in PRESETS:
        raise LanguageError(f"unknown split preset {preset!r}; known: {', '.join(PRESETS)}")
    return PRESETS[preset]


def _seed(*parts: int) -> int:
    """Return a 63-bit seed derived from the parts (stable across runs and platforms)."""
    return int(np.random.SeedSequence(list(parts)).generate_state(2, np.uint64)[0] >> np.uint64(1))


def negatives_for(task: str, negatives: str | None) -> str:
    """Return the negative kind to use: the given one, else "mixed" for recognition, else "none"."""
    return negatives or ("mixed" if task == "recognition" else "none")


def check_options(language: Language, task: str, negatives: str, sampler: str) -> None:
    """Raise LanguageError (one line) for a task, negative kind or sampler that cannot be used."""
    if task not in TASKS:
        raise LanguageError(f"unknown task {task!r}; known: {', '.join(TASKS)}")
    if sampler not in SAMPLERS:
        raise LanguageError(f"unknown sampler {sampler!r}; known: {', '.join(SAMPLERS)}")
    if negatives not in MIXES and negatives not in language.negative_labels:
        raise LanguageError(
            f"unknown negatives {negatives!r} for {language.name}; known: "
            f"{', '.join(MIXES + language.negative_labels)}"
        )
    if task == "transduction":
        if not hasattr(language, "answer"):
            raise LanguageError(f"{language.name} is not an input-then-answer language")
        if negatives != "none":
            raise LanguageError("transduction records come from positives only (negatives none)")


def record(
    language: Language, task: str, split: str, s: str, label: bool, source: str, pair: int = -1
) -> dict:
    """Return one JSON-ready record of ``s`` for ``task`` (``pair`` links boundary pairs)."""
    out: dict = {"split": split}
    if task == "transduction":
        given, answer = language.split(s)
        return {**out, "input": given, "output": answer, "length": len(s)}
    out.update(language.stats(s))
    out["string"] = s
    out["label"] = label
    out["source"] = source
    if pair >= 0:
        out["pair"] = pair
    if task == "next-symbol":
        symbols = (*language.alphabet, EOS)
        out["next"] = [[int(x in allowed) for x in symbols] for allowed in language.next_symbols(s)]
    return out


def symbols_header(language: Language) -> list[str]:
    """Return the order of the multi-hot entries of next-symbol records."""
    return [*language.alphabet, EOS]


def build(
    language: Language,
    n: int,
    *,
    preset: str | None = None,
    min_len: int = 0,
    max_len: int = 40,
    task: str = "recognition",
    negatives: str | None = None,
    sampler: str = "uniform",
    seed: int = 0,
    progress: Callable[[int], None] | None = None,
) -> Iterator[dict]:
    """Yield the records of every split, in order; ``progress`` hears how many were made.

    ``negatives``: "mixed" (half the records are negatives from all generators; the default for
    recognition), "none" (positives only; the default otherwise), "boundary" (pairs of a
    positive and a negative one edit apart) or one generator's label.
    """
    n = check_count(n, "n")
    seed = check_count(seed, "seed")
    negatives = negatives_for(task, negatives)
    check_options(language, task, negatives, sampler)
    seen: set[str] = set()
    for index, split in enumerate(splits_for(preset, min_len, max_len)):
        rows = _split_rows(
            language, split, split.size(n), negatives, sampler, (seed, index), seen, progress
        )
        order = np.random.default_rng(_seed(seed, index, 9)).permutation(len(rows))
        for i in order.tolist():  # a boundary pair stays together, positive first
            for row in rows[i]:
                yield record(language, task, split.name, *row)
        if preset is not None:
            seen.update(row[0] for group in rows for row in group)


def _split_rows(
    language: Language,
    split: Split,
    size: int,
    negatives: str,
    sampler: str,
    where: tuple[int, int],
    seen: set[str],
    progress: Callable[[int], None] | None,
) -> list[list[tuple]]:
    """Return the split's groups of (string, label, source[, pair]) rows (a pair is a group)."""
    lo, hi = split.min_len, split.max_len
    report = progress or (lambda k: None)
    if negatives == "boundary":
        pairs = _fresh(
            lambda m, s: language.sample_boundary_pairs(m, lo, hi, seed=s),
            size // 2,
            lambda t: t[0] in seen or t[1] in seen,
            (*where, 2),
            lambda k: report(2 * k),
        )
        return [
            [(good, True, f"boundary-{kind}", i), (bad, False, f"boundary-{kind}", i)]
            for i, (good, bad, kind) in enumerate(pairs)
        ]
    n_neg = 0 if negatives == "none" else size // 2

    def positives(m: int, s: int) -> list[str]:
        if sampler == "pcfg":
            return sample_critical_pcfg(language, m, lo, hi, seed=s)
        return language.sample_positive(m, lo, hi, seed=s)

    rows = [
        [(w, True, "positive" if sampler == "uniform" else "positive-pcfg")]
        for w in _fresh(positives, size - n_neg, lambda w: w in seen, (*where, 0), report)
    ]
    labels = None if negatives == "mixed" else [negatives]
    found = _fresh(
        lambda m, s: language.sample_negative_labelled(m, lo, hi, seed=s, labels=labels),
        n_neg,
        lambda t: t[0] in seen,
        (*where, 1),
        report,
    )
    return rows + [[(w, False, label)] for w, label in found]


def _fresh(
    draw: Callable[[int, int], list],
    total: int,
    stale: Callable,
    base: tuple,
    report: Callable[[int], None],
) -> list:
    """Return ``total`` items from draw(m, seed) in chunks, leaving out stale ones.

    Each chunk is redrawn (with new seeds) up to ROUNDS times while stale items leave it short;
    if a range is exhausted (everything in it already used) the split ends up smaller.
    """
    out: list = []
    chunk = 0
    while len(out) < total:
        need = min(CHUNK, total - len(out))
        got: list = []
        for attempt in range(ROUNDS):
            got += [x for x in draw(need - len(got), _seed(*base, chunk, attempt)) if not stale(x)]
            if len(got) >= need:
                break
        out += got
        report(len(got))
        chunk += 1
        if len(got) < need:
            break
    return out


def dumps(row: dict) -> str:
    """Return one JSON line (compact, keys in record order) for a record."""
    return json.dumps(row, separators=(",", ":"), ensure_ascii=False)
