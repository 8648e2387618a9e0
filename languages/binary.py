"""Arithmetic on little-endian binary numbers: x+y=z, x*y=z and x=z with z = ⌊√x⌋.

Numbers are written least significant bit first, each at least one bit, with any number of
padding zeros at the end (FLaRe's convention): "011" is 6, and so is "0110". A string is the
numbers with their operator and "=", so its length fixes a + b + c (or a + c), the widths.

Counts and uniform positives, for a length L:
- square roots: for widths (a, c), the members are the x < min(2^a, 4^c) (then ⌊√x⌋ < 2^c fits),
  so count = Σ_a 2^min(a, 2c); a is drawn with those weights, then x uniformly.
- addition: a triple (a, b, c) has f = #{x < 2^a, y < 2^b : x + y < 2^c} members, a closed form.
  A uniform positive is drawn by rejection: x < 2^min(a, c) and y < 2^min(b, c) uniformly, the
  widths weighted by that rectangle (c first, then a: geometric sums), kept iff x + y < 2^c (at
  least half are kept).
- multiplication: #{xy < 2^c} counts lattice points under a hyperbola, which has no closed form,
  so positives are drawn by rejection from the pairs with x = 0, y = 0, or bit lengths i, j with
  i + j ≤ c + 1 (which holds for every member): writing c = i + j − 1 + e and the paddings of x
  and y as pa, pb, the widths are fixed by k = i + j and a split of m + 1 − 2k into (pa, pb, e),
  so each k has (k − 1)·2^(k−2)·C(m + 3 − 2k, 2) candidates (m = L − 2). At least 38% are kept.
  Exact counts sum the hyperbola block by block and stop at length MAX_COUNTED_PRODUCT.
Every rejection redraws from the start, so the kept strings are exactly uniform.
"""

from __future__ import annotations

import re
from abc import abstractmethod
from collections.abc import Callable
from functools import cache, lru_cache
from math import comb, isqrt

import numpy as np

from languages.answered import Answered, forced_suffix
from languages.base import GENERIC, LanguageError, check_count
from languages.exact import WeightedChoice, below
from languages.references import BUTOI_FLARE, DELETANG

BITS = ("0", "1")
MAX_COUNTED_PRODUCT = 64  # binary-multiplication counts strings up to this length


def _bits(width: int, rng: np.random.Generator) -> int:
    """A uniform number below 2^width."""
    return below(2**width, rng)


def little_endian(value: int, width: int | None = None) -> str:
    """``value`` in binary, least significant bit first, padded with zeros to ``width``."""
    bits = format(value, "b")[::-1]
    return bits + "0" * ((width or len(bits)) - len(bits))


def read_little_endian(bits: str) -> int:
    """The number written (least significant bit first) by ``bits``."""
    return int(bits[::-1], 2)


class BinaryLanguage(Answered):
    """Numbers then "=" then a function of them, little-endian; its oracle and next symbols."""

    marker = "="
    answer_symbols = BITS
    references = (DELETANG, BUTOI_FLARE)
    kind = "context-sensitive (not context-free)"

    def __init__(self, name: str, operator: str | None, description: str) -> None:
        self.name, self.operator, self.description = name, operator, description
        self.alphabet = (*BITS, *((operator,) if operator else ()), self.marker)
        arguments = r"([01]+)" + (re.escape(operator) + r"([01]+)" if operator else "")
        self._input = re.compile(arguments)
        self._shape = re.compile(arguments + "=([01]+)")
        self.shortest_answered = 5 if operator else 3
        self.length_note = f"its strings have at least {self.shortest_answered} symbols"

    @abstractmethod
    def value(self, *arguments: int) -> int:
        """Return the number the answer must be."""

    def answer(self, text: str) -> str:
        """Return the answer for input ``text``, without padding."""
        self.encode(text)
        match = self._input.fullmatch(text)
        if match is None:
            raise LanguageError(f"{text!r} is not an input of {self.name}")
        return little_endian(self.value(*map(read_little_endian, match.groups())))

    def contains(self, s: str) -> bool:
        """Return True iff s is the numbers, "=" and (a padding of) their answer."""
        self.encode(s)
        match = self._shape.fullmatch(s)
        if match is None:
            return False
        *arguments, result = map(read_little_endian, match.groups())
        return self.value(*arguments) == result

    def next_symbols(self, s: str) -> list[frozenset[str]]:
        """Bits, the operator and "=" once each number has a bit; then the answer is forced."""
        self.encode(s)
        stops = [self.operator, self.marker] if self.operator else [self.marker]
        out: list[frozenset[str]] = []
        digits, number = 0, 0  # bits of the current number; which number
        for i in range(len(s) + 1):
            if i:
                a = s[i - 1]
                if a in BITS:
                    digits += 1
                elif digits and a == stops[number]:
                    if a == self.marker:
                        return out + forced_suffix(s[i:], self.answer(s[: i - 1]), "0")
                    digits, number = 0, number + 1
                else:
                    return out + [frozenset()] * (len(s) + 1 - i)
            out.append(frozenset({*BITS, stops[number]}) if digits else frozenset(BITS))
        return out

    def has_positive(self, length: int) -> bool:
        """Return True iff ``length`` holds every number's bit, the operator and "="."""
        return length >= self.shortest_answered

    def is_full(self, length: int) -> bool:
        """Return False: a string of bits alone is never a member."""
        return False

    def _positive(self, length: int, rng: np.random.Generator) -> str:
        while True:
            drawn = self._candidate(length, rng)
            if drawn is not None:
                return drawn

    @abstractmethod
    def _candidate(self, length: int, rng: np.random.Generator) -> str | None:
        """One draw of the uniform proposal: the positive, or None when it is rejected."""

    def _write(self, arguments: tuple[tuple[int, int], ...], result: int, width: int) -> str:
        """The string of (value, width) arguments and the result padded to ``width``."""
        given = (self.operator or "").join(little_endian(v, w) for v, w in arguments)
        return given + self.marker + little_endian(result, width)

    def _confusion_from(self, length: int, rng: np.random.Generator,
                        confuse: Callable[[int, int], int]) -> str | None:
        """A positive with its answer replaced by confuse(x, y), if that fits its width."""
        match = self._shape.fullmatch(self._positive(length, rng))
        x_bits, y_bits, z_bits = match.groups()
        wrong = confuse(read_little_endian(x_bits), read_little_endian(y_bits))
        if wrong >= 2 ** len(z_bits):
            return None
        return f"{x_bits}{self.operator}{y_bits}={little_endian(wrong, len(z_bits))}"


class BinaryAddition(BinaryLanguage):
    """x+y=z with z = x + y."""

    negative_labels = (*GENERIC, "wrong-answer", "carry-less")

    def __init__(self) -> None:
        super().__init__("binary-addition", "+",
                         "x+y=z for binary numbers written least significant bit first (zero "
                         "padding allowed at the end), z = x + y")

    def value(self, x: int, y: int) -> int:
        """Return x + y."""
        return x + y

    def count(self, length: int) -> int:
        """Return Σ over widths a + b + c = L − 2 of #{x + y < 2^c}."""
        m = check_count(length, "length") - 2
        return sum(_sums_below(a, b, m - a - b) for a in range(1, m - 1)
                   for b in range(1, m - a))

    def _candidate(self, length: int, rng: np.random.Generator) -> str | None:
        m = length - 2
        c = 1 + _addition_result_width(m).pick(rng)
        a = _rectangle_widths(m - c, c).pick(rng)
        b = m - c - a
        x, y = _bits(min(a, c), rng), _bits(min(b, c), rng)
        if x + y >= 2**c:
            return None
        return self._write(((x, a), (y, b)), x + y, c)

    def _can_carry_less(self, length: int) -> bool:
        return length >= 6

    def _neg_carry_less(self, length: int, rng: np.random.Generator) -> str | None:
        """The answer without carries, x XOR y (a negative when x and y share a 1 bit)."""
        return self._confusion_from(length, rng, lambda x, y: x ^ y)


class BinaryMultiplication(BinaryLanguage):
    """x*y=z with z = x · y (FLaRe writes the operator ×)."""

    negative_labels = (*GENERIC, "wrong-answer", "off-by-one")

    def __init__(self) -> None:
        super().__init__("binary-multiplication", "*",
                         "x*y=z for binary numbers written least significant bit first (zero "
                         "padding allowed at the end), z = x · y")

    def value(self, x: int, y: int) -> int:
        """Return x · y."""
        return x * y

    def count(self, length: int) -> int:
        """Return the exact count (up to MAX_COUNTED_PRODUCT symbols; positives need none)."""
        length = check_count(length, "length")
        if length > MAX_COUNTED_PRODUCT:
            raise LanguageError(
                f"{self.name} counts its strings exactly only up to length {MAX_COUNTED_PRODUCT} "
                "(the count sums lattice points under a hyperbola); sampling needs no count")
        m = length - 2
        total = sum(_product_branch_weights(m)[:2]) if m >= 3 else 0
        for k in range(2, (m + 1) // 2 + 1):
            rest = m + 1 - 2 * k  # split into the paddings and e = c − (k − 1)
            for i in range(1, k):
                full = comb(rest + 2, 2) - (rest + 1)  # e >= 1: the whole block is in
                total += full * 2 ** (k - 2) + (rest + 1) * _products_in_block(i, k - i)
        return total

    def _candidate(self, length: int, rng: np.random.Generator) -> str | None:
        m = length - 2
        branch = _product_proposal(m).pick(rng)
        if branch == 0:  # x = 0, any y
            b = 1 + _zero_width(m).pick(rng)
            a = 1 + int(rng.integers(m - b - 1))
            return self._write(((0, a), (_bits(b, rng), b)), 0, m - a - b)
        if branch == 1:  # y = 0, x > 0
            a = 1 + _nonzero_width(m).pick(rng)
            b = 1 + int(rng.integers(m - a - 1))
            return self._write(((1 + below(2**a - 1, rng), a), (0, b)), 0, m - a - b)
        k = branch  # bit lengths i + j = k; branch 2 is k = 2
        i = 1 + int(rng.integers(k - 1))
        rest = m + 1 - 2 * k
        p, q = sorted(rng.choice(rest + 2, size=2, replace=False).tolist())
        a, b, c = i + p, k - i + q - p - 1, k - 1 + rest + 1 - q
        x = 2 ** (i - 1) + _bits(i - 1, rng)
        y = 2 ** (k - i - 1) + _bits(k - i - 1, rng)
        if x * y >= 2**c:
            return None
        return self._write(((x, a), (y, b)), x * y, c)

    def _can_off_by_one(self, length: int) -> bool:
        return self.has_positive(length)

    def _neg_off_by_one(self, length: int, rng: np.random.Generator) -> str | None:
        """The product plus or minus one (plus for a zero product), when it fits its width."""
        down = bool(rng.integers(2))
        return self._confusion_from(length, rng, lambda x, y: x * y - 1 if down and x * y
                                    else x * y + 1)


class ComputeSqrt(BinaryLanguage):
    """x=z with z = ⌊√x⌋."""

    negative_labels = (*GENERIC, "wrong-answer", "rounded-up")

    def __init__(self) -> None:
        super().__init__("compute-sqrt", None,
                         "x=z for binary numbers written least significant bit first (zero "
                         "padding allowed at the end), z = floor(sqrt(x))")

    def value(self, x: int) -> int:
        """Return ⌊√x⌋, exactly (the integer square root)."""
        return isqrt(x)

    def count(self, length: int) -> int:
        """Return Σ_a 2^min(a, 2c) over widths a + c = L − 1."""
        return sum(_root_weights(check_count(length, "length") - 1))

    def _candidate(self, length: int, rng: np.random.Generator) -> str | None:
        a = 1 + _root_width(length - 1).pick(rng)
        c = length - 1 - a
        x = _bits(min(a, 2 * c), rng)
        return self._write(((x, a),), isqrt(x), c)

    def _can_rounded_up(self, length: int) -> bool:
        return self.has_positive(length)

    def _neg_rounded_up(self, length: int, rng: np.random.Generator) -> str | None:
        """⌊√x⌋ + 1 as the answer (⌈√x⌉ for a non-square), when it fits its width."""
        x_bits, z_bits = self._shape.fullmatch(self._positive(length, rng)).groups()
        wrong = isqrt(read_little_endian(x_bits)) + 1
        if wrong >= 2 ** len(z_bits):
            return None
        return f"{x_bits}={little_endian(wrong, len(z_bits))}"


# ---- counting and proposals (cached per length) ------------------------------------------


def _sums_below(a: int, b: int, c: int) -> int:
    """#{x < 2^a, y < 2^b : x + y < 2^c}: x ≤ 2^c − 2^b leaves every y, larger x fewer."""
    big_a, big_b, big_c = 2**a, 2**b, 2**c
    every = min(max(big_c - big_b + 1, 0), big_a)  # these x take all 2^b values of y
    last = min(big_a, big_c)  # x from ``every`` to last − 1 take 2^c − x values of y
    some = (last - every) * (2 * big_c - every - last + 1) // 2 if last > every else 0
    return every * big_b + some


class PiecewiseGeometric:
    """Exact draws of a in [1, n − 1] with weight 2^(min(a, c) + min(n − a, c)).

    In each of the (at most three) runs of a between the bends at c and n − c the exponent is
    constant or moves by ±1, so a run's total is a geometric sum and a draw within it is the bit
    length of a uniform integer.
    """

    def __init__(self, n: int, c: int) -> None:
        cuts = sorted({1, n} | {v for v in (c + 1, n - c) if 1 < v < n})
        self.runs = []  # (first a, last a, exponent at the first a, slope)
        for lo, end in zip(cuts, cuts[1:]):
            slope = (lo <= c) - (lo >= n - c)
            exponent = min(lo, c) + min(n - lo, c)
            self.runs.append((lo, end - 1, exponent, slope))
        self.choice = WeightedChoice([_geometric_total(*run) for run in self.runs])

    def pick(self, rng: np.random.Generator) -> int:
        """Return a, with probability proportional to its weight."""
        lo, hi, _, slope = self.runs[self.choice.pick(rng)]
        if slope == 0:
            return lo + int(rng.integers(hi - lo + 1))
        step = (1 + below(2 ** (hi - lo + 1) - 1, rng)).bit_length() - 1
        return lo + step if slope > 0 else hi - step


def _geometric_total(lo: int, hi: int, exponent: int, slope: int) -> int:
    """Σ over a = lo .. hi of 2^(exponent + slope·(a − lo))."""
    if slope == 0:
        return (hi - lo + 1) * 2**exponent
    low = exponent if slope > 0 else exponent - (hi - lo)
    return 2**low * (2 ** (hi - lo + 1) - 1)


@lru_cache(maxsize=1024)
def _addition_result_width(m: int) -> WeightedChoice:
    """The result width c = 1 .. m − 2, weighted by Σ_a 2^(min(a, c) + min(m − c − a, c))."""
    return WeightedChoice([_rectangle_widths(m - c, c).choice.total for c in range(1, m - 1)])


@lru_cache(maxsize=4096)
def _rectangle_widths(n: int, c: int) -> PiecewiseGeometric:
    """The widths a (b = n − a) of x and y given c, weighted by their candidates."""
    return PiecewiseGeometric(n, c)


def _product_branch_weights(m: int) -> list[int]:
    """Candidates with x = 0, with y = 0 < x, then with bit lengths summing to k = 2, 3, ..."""
    zero_x = sum(2**b * (m - b - 1) for b in range(1, m - 1))
    zero_y = sum((2**a - 1) * (m - a - 1) for a in range(1, m - 1))
    blocks = [(k - 1) * 2 ** (k - 2) * comb(m + 3 - 2 * k, 2) for k in range(2, (m + 1) // 2 + 1)]
    return [zero_x, zero_y, *blocks]


@lru_cache(maxsize=1024)
def _product_proposal(m: int) -> WeightedChoice:
    return WeightedChoice(_product_branch_weights(m))


@lru_cache(maxsize=1024)
def _zero_width(m: int) -> WeightedChoice:
    """Width b = 1, 2, ... weighted 2^b·(m − b − 1): y < 2^b and the splits of m − b."""
    return WeightedChoice([2**b * (m - b - 1) for b in range(1, m - 1)])


@lru_cache(maxsize=1024)
def _nonzero_width(m: int) -> WeightedChoice:
    """Width a = 1, 2, ... weighted (2^a − 1)·(m − a − 1): 0 < x < 2^a, splits of m − a."""
    return WeightedChoice([(2**a - 1) * (m - a - 1) for a in range(1, m - 1)])


@cache
def _products_in_block(i: int, j: int) -> int:
    """#{x of bit length i, y of bit length j : x·y < 2^(i+j−1)}, summed over the shorter one."""
    i, j = min(i, j), max(i, j)
    limit = 2 ** (i + j - 1) - 1
    low, high = 2 ** (j - 1), 2**j
    return sum(min(max(limit // x + 1 - low, 0), high - low) for x in range(2 ** (i - 1), 2**i))


def _root_weights(m: int) -> list[int]:
    """2^min(a, 2c) over a = 1 .. m − 1, c = m − a."""
    return [2 ** min(a, 2 * (m - a)) for a in range(1, m)]


@lru_cache(maxsize=1024)
def _root_width(m: int) -> WeightedChoice:
    return WeightedChoice(_root_weights(m))


BINARY_ADDITION = BinaryAddition()
BINARY_MULTIPLICATION = BinaryMultiplication()
COMPUTE_SQRT = ComputeSqrt()
