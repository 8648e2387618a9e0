"""a^n b^n, a^n b^n c^n, a^n b^n c^n d^n: k blocks of equal length in a fixed order."""

from __future__ import annotations

import numpy as np

from languages.base import EOS, GENERIC, Language, check_count
from languages.references import BHATTAMISHRA, GERS
from languages.shuffle import swap_two

KINDS = {2: "deterministic context-free", 3: "context-sensitive", 4: "context-sensitive"}


class Blocks(Language):
    """The language a_1^n a_2^n ... a_k^n for n >= 0."""

    negative_labels = (*GENERIC, "unequal", "wrong-order")

    def __init__(self, letters: str) -> None:
        self.letters = letters
        self.k = len(letters)
        self.alphabet = tuple(letters)
        self.name = "".join(f"{a}n" for a in letters)
        self.description = (
            " ".join(f"{a}^n" for a in letters)
            + ": "
            + (f"{self.k} blocks of equal length in order, n >= 0")
        )
        self.references = (GERS, BHATTAMISHRA)
        self.kind = KINDS[self.k]
        self.length_note = f"{self.name} strings have a length divisible by {self.k}"

    def _word(self, counts: list[int]) -> str:
        """Return the blocks a_1^counts[0] ... a_k^counts[k-1]."""
        return "".join(a * c for a, c in zip(self.letters, counts))

    def contains(self, s: str) -> bool:
        """Return True iff ``s`` is a_1^n ... a_k^n."""
        self.encode(s)
        n, rest = divmod(len(s), self.k)
        return rest == 0 and s == self._word([n] * self.k)

    def next_symbols(self, s: str) -> list[frozenset[str]]:
        """Return per prefix what keeps it a prefix of some a_1^n ... a_k^n, and EOS if complete."""
        ids = self.encode(s).tolist()
        counts = [0] * self.k
        block, dead = 0, False  # block: index of the current (last started) block
        out = []
        for i in range(len(ids) + 1):
            if i and not dead:
                a = ids[i - 1]
                if a == block and (block == 0 or counts[block] < counts[0]):
                    counts[block] += 1
                elif a == block + 1 and counts[0] > 0 and counts[block] == counts[0]:
                    block += 1
                    counts[block] = 1
                else:
                    dead = True
            if dead:
                out.append(frozenset())
                continue
            n = counts[0]
            allowed = []
            if block == 0:
                allowed.append(self.letters[0])
                if n > 0:
                    allowed.append(self.letters[1])
                else:
                    allowed.append(EOS)
            else:
                if counts[block] < n:
                    allowed.append(self.letters[block])
                elif block + 1 < self.k:
                    allowed.append(self.letters[block + 1])
                else:
                    allowed.append(EOS)
            out.append(frozenset(allowed))
        return out

    def count(self, length: int) -> int:
        """Return 1 if ``length`` is a multiple of k, else 0."""
        return int(check_count(length, "length") % self.k == 0)

    def is_full(self, length: int) -> bool:
        """Return True only for the empty string."""
        return length == 0

    def _positive(self, length: int, rng: np.random.Generator) -> str:
        return self._word([length // self.k] * self.k)

    def _positives(self, length: int, k: int, rng: np.random.Generator) -> list[str]:
        return [self._positive(length, rng)] * k

    def _can_unequal(self, length: int) -> bool:
        return length >= 1

    def _neg_unequal(self, length: int, rng: np.random.Generator) -> str:
        """Blocks in the right order with counts as equal as possible but not all equal."""
        n, rest = divmod(length, self.k)
        counts = [n] * self.k
        if rest:  # e.g. a^n b^n c^(n+1): rest blocks one longer
            for i in rng.choice(self.k, size=rest, replace=False).tolist():
                counts[i] += 1
        else:  # e.g. a^(n+1) b^n c^(n-1)
            i, j = rng.choice(self.k, size=2, replace=False).tolist()
            counts[i], counts[j] = counts[i] + 1, counts[j] - 1
        return self._word(counts)

    def _can_wrong_order(self, length: int) -> bool:
        return length >= self.k and length % self.k == 0

    def _neg_wrong_order(self, length: int, rng: np.random.Generator) -> str:
        """Two different symbols of the positive swapped: equal counts, wrong order."""
        return swap_two(self._positive(length, rng), rng)
