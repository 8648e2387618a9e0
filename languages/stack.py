"""Stack manipulation: a stack, operations on it, then its final contents from the top down.

A string is w p # v: w over {0, 1} is the initial stack (bottom first), p a sequence of
operations "+b" (push bit b) and "-" (pop; popping an empty stack is an error), and v the final
stack read from the top. FLaRe writes the operations as the tokens PUSH and POP.

Counting. The contents never change which strings are possible, only which answer is forced, so
with ops(k, r) the number of ways to finish with r symbols from stack height k in the operations
phase: ops(k, r) = [r = k + 1] (the marker, then k forced symbols) + 2·ops(k + 1, r − 2) (push
either bit) + [k > 0]·ops(k − 1, r − 1) (pop), and count(L) = Σ_a 2^a·ops(a, L − a) over initial
stacks of a bits. A uniform positive draws a with those weights (exact integers), the a bits
uniformly, then each operation with probability proportional to the ways it leaves.
"""

from __future__ import annotations

import numpy as np

from languages.answered import Answered, forced_suffix
from languages.base import GENERIC, LanguageError, check_count
from languages.exact import WeightedChoice, refine_choice
from languages.paths import MARGIN
from languages.references import BUTOI_FLARE, DELETANG

PUSH, POP, MARK = "+", "-", "#"
BITS = ("0", "1")


class StackManipulation(Answered):
    """w (initial stack) · pushes and pops · # · the final stack from the top."""

    name = "stack-manipulation"
    alphabet = (*BITS, PUSH, POP, MARK)
    description = (
        "a stack over {0, 1} (bottom first), pushes (+0, +1) and pops (-) that never pop an "
        "empty stack, #, then the final stack from the top"
    )
    kind = "deterministic context-free"
    references = (DELETANG, BUTOI_FLARE)
    marker = MARK
    answer_symbols = BITS
    shortest_answered = 3
    negative_labels = (*GENERIC, "wrong-answer", "unreversed")

    def __init__(self) -> None:
        self._ops: list[list[int]] = []  # _ops[r][k] = ops(k, r) for k < r
        self._initial: dict[int, WeightedChoice] = {}

    # ---- oracle, answer, next symbols ------------------------------------------------------

    def final_stack(self, program: str) -> list[str] | None:
        """Return the stack (bottom first) after ``program``, or None if it is not one."""
        self.encode(program)
        stack = list(program[: len(program) - len(program.lstrip("01"))])
        i = len(stack)
        while i < len(program):
            if program[i] == PUSH and i + 1 < len(program) and program[i + 1] in BITS:
                stack.append(program[i + 1])
                i += 2
            elif program[i] == POP and stack:
                stack.pop()
                i += 1
            else:
                return None
        return stack

    def answer(self, text: str) -> str:
        """Return the final stack of program ``text``, top first."""
        stack = self.final_stack(text)
        if stack is None:
            raise LanguageError(f"{text!r} is not a program of {self.name}")
        return "".join(reversed(stack))

    def contains(self, s: str) -> bool:
        """Return True iff s is a valid program, #, and its final stack from the top."""
        self.encode(s)
        if s.count(MARK) != 1:
            return False
        program, _, rest = s.partition(MARK)
        stack = self.final_stack(program)
        return stack is not None and rest == "".join(reversed(stack))

    def next_symbols(self, s: str) -> list[frozenset[str]]:
        """Walk the program: bits only first or after +, - only on a non-empty stack."""
        self.encode(s)
        out: list[frozenset[str]] = []
        stack: list[str] = []
        phase = "initial"  # initial bits, "push" (a bit must follow), "operations", "dead"
        for i in range(len(s) + 1):
            if i:
                a = s[i - 1]
                if a == MARK and phase in ("initial", "operations"):
                    return out + forced_suffix(s[i:], "".join(reversed(stack)))
                if a in BITS and phase in ("initial", "push"):
                    stack.append(a)
                    phase = "operations" if phase == "push" else "initial"
                elif a == PUSH and phase in ("initial", "operations"):
                    phase = "push"
                elif a == POP and phase in ("initial", "operations") and stack:
                    stack.pop()
                    phase = "operations"
                else:
                    phase = "dead"
            if phase == "dead":
                out.append(frozenset())
            elif phase == "push":
                out.append(frozenset(BITS))
            else:
                bits = BITS if phase == "initial" else ()
                pop = (POP,) if stack else ()
                out.append(frozenset({PUSH, MARK, *bits, *pop}))
        return out

    # ---- counts and uniform positives ------------------------------------------------------

    def _extend(self, length: int) -> None:
        """Fill ops(k, r) for every r <= length."""
        ops = self._ops
        while len(ops) <= length:
            r = len(ops)
            row = []
            for k in range(r):
                ways = int(r == k + 1)
                if k + 1 <= r - 3:
                    ways += 2 * ops[r - 2][k + 1]
                if k > 0:
                    ways += ops[r - 1][k - 1]
                row.append(ways)
            ops.append(row)

    def _ways(self, k: int, r: int) -> int:
        """ops(k, r): finishes of r symbols from height k in the operations phase."""
        return self._ops[r][k] if 0 <= k < r else 0

    def _initial_weights(self, length: int) -> list[int]:
        """2^a·ops(a, L − a) for initial stacks of a = 0, 1, ... bits."""
        self._extend(length)
        return [2**a * self._ways(a, length - a) for a in range(length)]

    def count(self, length: int) -> int:
        """Return Σ_a 2^a·ops(a, L − a)."""
        return sum(self._initial_weights(check_count(length, "length")))

    def has_positive(self, length: int) -> bool:
        """Return True iff some string has ``length`` (all but length 0 and 2)."""
        return length == 1 or length >= 3

    def is_full(self, length: int) -> bool:
        """Return False: a string of only bits is never a member."""
        return False

    def _positive(self, length: int, rng: np.random.Generator) -> str:
        if length not in self._initial:
            self._initial[length] = WeightedChoice(self._initial_weights(length))
        height = self._initial[length].pick(rng)
        stack = [BITS[b] for b in rng.integers(2, size=height).tolist()]
        out = stack.copy()
        left = length - height
        while True:
            end = int(left == height + 1)
            push = 2 * self._ways(height + 1, left - 2)
            step = _weighted_step((end, end + push, self._ways(height, left)), rng)
            if step == 0:
                return "".join(out) + MARK + "".join(reversed(stack))
            if step == 1:
                bit = BITS[int(rng.integers(2))]
                out += [PUSH, bit]
                stack.append(bit)
                height, left = height + 1, left - 2
            else:
                out.append(POP)
                stack.pop()
                height, left = height - 1, left - 1

    # ---- near misses -----------------------------------------------------------------------

    def _can_unreversed(self, length: int) -> bool:
        return length >= 5

    def _negs_unreversed(self, lengths: np.ndarray, rng: np.random.Generator) -> list[str]:
        """The final stack written bottom first (a negative unless it is a palindrome)."""
        out = []
        for w in self._positives_for_lengths(lengths, rng):
            program, _, answer = w.partition(MARK)
            out.append(program + MARK + answer[::-1])
        return out


def _weighted_step(cumulative: tuple[int, int, int], rng: np.random.Generator) -> int:
    """Index j with probability (cumulative[j] − cumulative[j − 1]) / cumulative[-1], exactly.

    A float u decides unless it lies within MARGIN of a correctly rounded threshold; then the
    choice is finished in integers (``refine_choice``), as the DFA walk does (languages/paths.py).
    """
    total = cumulative[-1]
    u = rng.random()
    thresholds = (cumulative[0] / total, cumulative[1] / total)
    if all(abs(u - t) > MARGIN for t in thresholds):
        return (u >= thresholds[0]) + (u >= thresholds[1])
    return refine_choice(cumulative, u, rng)


STACK_MANIPULATION = StackManipulation()
"""The registered instance."""
