"""The critical-PCFG sampler of the older suites, kept for comparisons (never the default).

Bhattamishra et al. (2020) draw Dyck strings from S -> (S) with probability p, S -> SS with q,
S -> empty otherwise (p = 0.5, q = 0.25: a critical branching process), keeping those whose
length falls in the bin. Lengths are then far from uniform, depth grows with length, and for
shuffle-Dyck the same nested grammar never produces crossings such as "([)]".
"""

from __future__ import annotations

from languages.base import Language, LanguageError, SeedLike, check_count, generator

BRANCH, CONCAT = 0.5, 0.25


def _grow(pairs: tuple[str, ...], max_len: int, p: float, q: float, rng) -> str | None:
    """Return one derivation's string, or None once it is longer than max_len."""
    out: list[str] = []
    stack: list[str | None] = [None]  # None is the nonterminal S; strings are pending closers
    pending = 0
    uniform = iter(())
    while stack:
        item = stack.pop()
        if item is not None:
            out.append(item)
            pending -= 1
            continue
        u = next(uniform, None)
        if u is None:
            block = rng.random(256)
            uniform = iter(block.tolist())
            u = next(uniform)
        if u < p:
            o, c = pairs[int((u / p) * len(pairs)) % len(pairs)]
            out.append(o)
            stack += [c, None]
            pending += 1
            if len(out) + pending > max_len:
                return None
        elif u < p + q:
            stack += [None, None]
    return "".join(out)


def sample_critical_pcfg(
    language: Language,
    n: int,
    min_len: int,
    max_len: int,
    seed: SeedLike = 0,
    branch: float = BRANCH,
    concat: float = CONCAT,
) -> list[str]:
    """Return n strings of the nested-bracket PCFG with lengths in range that ``language`` holds.

    Works for languages with bracket ``pairs`` (dyck1, dyck-k, dyck-k-m, shuffle-dyck-k); strings
    outside the language (too deep for a depth bound) are dropped like those outside the range.
    """
    pairs = getattr(language, "pairs", None)
    if not pairs:
        raise LanguageError(
            f"the critical PCFG sampler needs a bracket language, not {language.name}"
        )
    n = check_count(n, "n")
    lo, hi = check_count(min_len, "min_len"), check_count(max_len, "max_len")
    if lo > hi or not any(L % 2 == 0 for L in range(lo, hi + 1)):
        raise LanguageError(f"the PCFG has no strings with length in [{lo}, {hi}]")
    if not (0 < branch and 0 <= concat and branch + concat < 1):
        raise LanguageError(
            f"PCFG probabilities need 0 < p, 0 <= q, p + q < 1; got {branch}, {concat}"
        )
    rng = generator(seed)
    out: list[str] = []
    tries = 0
    while len(out) < n:
        tries += 1
        if tries > 1000 * (n + 100) * max(1, hi // 10):
            raise RuntimeError(f"the PCFG rarely yields lengths in [{lo}, {hi}]; gave up")
        s = _grow(tuple(pairs), hi, branch, concat, rng)
        if s is not None and len(s) >= lo and language.contains(s):
            out.append(s)
    return out
