"""Two FLaRe benchmarks of the same models' seeds side by side: differences with intervals.

Two benchmark folders made with the same languages, trials, base seed and evaluation (say
standard training and training toward saturation, ``--set attention_beta=B``) train trial t
of a language from the same initialisation and batch order and score it on the same test
strings, so a model of one is paired with the model of the same (language, trial) in the other.
:func:`compare_rows` gives, per language and bin, each column's mean in both and the
difference (second − first) with a 95% interval of a two-level bootstrap: the trials are
resampled (pairs kept together), then each resampled model's test strings (its count of right
answers drawn from Binomial(n, right / n)). The interval covers both the choice of seeds and
the sampling of the test strings. Pooled rows average the languages (each language's trials
resampled within it).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from satsim.benchmarks.stats import BOOTSTRAP_SEED, LEVEL, REPLICATES

COMPARED = ("soft", "limit", "agreement")
"""What is compared per bin: the model's accuracy, its limit's, and their agreement."""


def paired_difference_interval(first: Sequence[Sequence[tuple[int, int]]],
                               second: Sequence[Sequence[tuple[int, int]]],
                               rng: np.random.Generator | None = None) -> list[float]:
    """The bootstrap interval of mean(second) − mean(first) over groups of paired trials.

    ``first[g][t]`` and ``second[g][t]`` are (right, strings) of trial t of group g (a language)
    in each benchmark. A replicate resamples each group's trials with replacement (the same
    indices in both), draws every picked trial's right answers from Binomial(strings,
    right / strings) in each benchmark, and averages the trials of a group, then the groups.
    """
    rng = rng or np.random.default_rng(BOOTSTRAP_SEED)
    total = np.zeros(REPLICATES)
    for one, two in zip(first, second):
        if len(one) != len(two) or not one:
            raise ValueError("every group needs the same positive number of trials in both")
        picks = rng.integers(0, len(one), size=(REPLICATES, len(one)))
        means = np.zeros(REPLICATES)
        for pairs, sign in ((one, -1.0), (two, 1.0)):
            hits = np.array([h for h, _ in pairs], dtype=np.int64)[picks]
            sizes = np.array([n for _, n in pairs], dtype=np.int64)[picks]
            means += sign * (rng.binomial(sizes, hits / sizes) / sizes).mean(axis=1)
        total += means
    total /= len(first)
    tail = (1 - LEVEL) / 2
    low, high = np.quantile(total, [tail, 1 - tail])
    return [float(low), float(high)]


def _counts(cell: dict, what: str) -> tuple[int, int]:
    """(right, strings) of a bin cell: a column's right answers, or the agreeing strings."""
    right = cell["agree"] if what == "agreement" else cell["hits"][what]
    return int(right), int(cell["n"])


def _paired(first: Sequence[dict], second: Sequence[dict], language: str) -> list[tuple]:
    """The (first, second) rows of a language, paired by trial; their seeds must match."""
    one = {row["trial"]: row for row in first if row.get("language") == language
           and "error" not in row}
    two = {row["trial"]: row for row in second if row.get("language") == language
           and "error" not in row}
    pairs = [(one[t], two[t]) for t in sorted(set(one) & set(two))]
    for a, b in pairs:
        if a["seed"] != b["seed"] or a["bins"] and [c["n"] for c in a["bins"]] != [
                c["n"] for c in b["bins"]]:
            raise ValueError(f"{a['name']}: the two benchmarks' models are not paired (seed "
                             f"{a['seed']} against {b['seed']}, or other test sets)")
    return pairs


def compare_rows(first: Sequence[dict], second: Sequence[dict],
                 languages: Sequence[str]) -> dict:
    """Per language and bin, and pooled over the languages: both means and their difference.

    ``first`` and ``second`` are the two benchmarks' model rows (models.jsonl). A language
    enters the pooled rows only with trials in both.
    """
    paired = {language: _paired(first, second, language) for language in languages}
    paired = {language: pairs for language, pairs in paired.items() if pairs}
    bins = len(next(iter(paired.values()))[0][0]["bins"]) if paired else 0
    out: dict = {"languages": [], "pooled": []}
    for language, pairs in paired.items():
        entry = {"language": language, "trials": len(pairs), "bins": []}
        for index in range(bins):
            entry["bins"].append(_bin_entry([pairs], index))
        out["languages"].append(entry)
    for index in range(bins):
        out["pooled"].append(_bin_entry(list(paired.values()), index))
    return out


def _bin_entry(groups: list[list[tuple]], index: int) -> dict:
    """One bin over groups of paired rows: means, difference and its interval per quantity."""
    first_cell = groups[0][0][0]["bins"][index]
    entry = {"min_len": first_cell["min_len"], "max_len": first_cell["max_len"]}
    for what in COMPARED:
        one = [[_counts(a["bins"][index], what) for a, _ in pairs] for pairs in groups]
        two = [[_counts(b["bins"][index], what) for _, b in pairs] for pairs in groups]
        mean_one = float(np.mean([np.mean([h / n for h, n in g]) for g in one]))
        mean_two = float(np.mean([np.mean([h / n for h, n in g]) for g in two]))
        entry[what] = {"first": mean_one, "second": mean_two, "difference": mean_two - mean_one,
                       "ci": paired_difference_interval(one, two)}
    return entry


def comparison_table(comparison: dict, first: str, second: str) -> str:
    """The comparison as markdown: a row per language and bin, then the pooled rows."""
    head = ["language", "bin", *(f"{what}: {first} / {second}, difference [95% CI]"
                                 for what in COMPARED)]
    lines = ["| " + " | ".join(head) + " |", "|" + "|".join(" --- " for _ in head) + "|"]
    rows = [(e["language"], b) for e in comparison["languages"] for b in e["bins"]]
    rows += [("all languages (mean)", b) for b in comparison["pooled"]]
    for language, cell in rows:
        values = [f"{cell[w]['first']:.2f} / {cell[w]['second']:.2f}, "
                  f"{cell[w]['difference']:+.2f} [{cell[w]['ci'][0]:+.2f}, "
                  f"{cell[w]['ci'][1]:+.2f}]" for w in COMPARED]
        lines.append("| " + " | ".join([language, f"{cell['min_len']}–{cell['max_len']}",
                                        *values]) + " |")
    return "\n".join(lines)
