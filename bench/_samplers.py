"""Fast samplers of language members for the construction benchmark (not exactly uniform).

The exact samplers of shuffle-dyck-k and reset-dyck1 are slow at lengths of thousands; these
build members from uniform Dyck-1 words, and near-miss negatives by one random edit.
"""

from __future__ import annotations

import numpy as np


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
