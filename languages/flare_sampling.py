"""FLaRe's positive sampler of binary-multiplication, beside satsim's uniform one.

satsim's sampler (:class:`languages.binary.BinaryMultiplication`) draws a positive uniformly
among the members of its length. Most members of a length have a zero operand (x = 0 or y = 0:
any other operand and any zero padding fit), so most uniform positives do: 93% of the
benchmark's, where FLaRe's data has 39% (issue #36), and a rule that only checks for a zero
operand and a zero answer scores about as well as a trained model on uniform test sets.

FLaRe (rycolab/neural-network-recognizers, ``hand_picked_languages/binary_util.py``) draws a
positive of length L ≥ 5 differently, and this module draws from that distribution:

1. the L − 5 symbols beyond the minimum are split among the widths of x, y and z by a
   Dirichlet(1, 1, 2) draw (cut at the floors of its cumulative shares); each width gets one
   more bit, and x takes the smaller of the first two;
2. x is uniform below 2^width(x); y is uniform from 0 to the largest value whose product with x
   still fits the width of z (any y of its width when x = 0);
3. with probability ½ the two operands are written in the other order; the product is written
   least significant bit first and padded with zeros to the width of z.

The lengths are drawn as FLaRe draws them: uniform over max(5, min_len) … max_len.
"""

from __future__ import annotations

import numpy as np

from languages.base import LanguageError, SeedLike, generator
from languages.binary import little_endian
from languages.exact import below

SHORTEST = 5
"""FLaRe's shortest product: one bit for each number, the operator and "="."""
WIDTH_WEIGHTS = (1.0, 1.0, 2.0)
"""FLaRe's Dirichlet weights of the widths of x, y and z."""


def flare_widths(length: int, rng: np.random.Generator) -> tuple[int, int, int]:
    """The widths of x, y and z of a product of ``length`` symbols, as FLaRe splits them."""
    spare = length - SHORTEST
    shares = rng.dirichlet(WIDTH_WEIGHTS)
    first, second = (int(np.floor(c * spare)) for c in np.cumsum(shares[:2]))
    x, y, z = first + 1, second - first + 1, spare - second + 1
    return min(x, y), max(x, y), z


def flare_product(length: int, rng: np.random.Generator, operator: str = "*") -> str:
    """One positive of binary-multiplication of ``length`` symbols, drawn as FLaRe draws it."""
    if length < SHORTEST:
        raise LanguageError(f"binary-multiplication has no string of {length} symbols (FLaRe's "
                            f"sampler needs at least {SHORTEST})")
    width_x, width_y, width_z = flare_widths(length, rng)
    x = below(2**width_x, rng)
    largest_y = 2**width_y - 1 if x == 0 else min(2**width_y - 1, (2**width_z - 1) // x)
    y = below(largest_y + 1, rng)
    first, second = little_endian(x, width_x), little_endian(y, width_y)
    if rng.integers(2):
        first, second = second, first
    return f"{first}{operator}{second}={little_endian(x * y, width_z)}"


def sample_flare_products(n: int, min_len: int, max_len: int, seed: SeedLike = 0) -> list[str]:
    """``n`` positives of binary-multiplication from FLaRe's distribution on min_len … max_len."""
    low = max(SHORTEST, min_len)
    if max_len < low:
        raise LanguageError(f"binary-multiplication has no string of length {min_len}–{max_len} "
                            f"(the shortest has {SHORTEST} symbols)")
    rng = generator(seed)
    return [flare_product(int(rng.integers(low, max_len, endpoint=True)), rng)
            for _ in range(n)]
