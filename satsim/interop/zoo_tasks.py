"""The algorithmic tasks of the decompiling-transformers zoo: inputs, exact answers, scored tokens.

Facts from the authors' data generators (lacoco-lab/decompiling_transformers,
``crasp/scripts/patching/patching_data.py``), written anew here. An example is the token
sequence ``<bos> input <sep> answer`` (``<eos>`` after the answer for the tasks that end with
one); the model reads it with teacher forcing and is right when, at every position from
``<sep>`` on, its largest logit is the next token. A task's *length* is the authors' length
parameter: the input's length (copy, reverse, sort, majority, addition with its ``+``), the
answer's (count: the run start..end), or the interleaved bits' (three streams of equal length).

Strings start at position 0 (the authors train at random position offsets and score at random
ones too; offset 0 is one of them).
"""

from __future__ import annotations

import string as _string
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from satsim.errors import SatsimError
from satsim.model.spec import BOS

SEP, EOS = "<sep>", "<eos>"
PAD = "<pad>"
SPECIALS = (BOS, SEP, EOS, PAD)
"""The special tokens the zoo's tokenizer puts after the ordinary ones, in id order (its
``<bos>`` is satsim's BOS)."""
NUMBERS = 150
"""The zoo's longest test length: the numeric tasks' symbols are 0 … 149."""
BIGRAM_SYMBOLS = 16
"""unique_bigram_copy's symbols: ⌈1.25·√150⌉."""
PERIOD = 3
"""bin_majority_interleave's number of interleaved streams."""


@dataclass(frozen=True)
class ZooTask:
    """One algorithmic task: its ordinary tokens (id order), lengths, sampler and oracle."""

    name: str
    symbols: tuple[str, ...]
    min_length: int
    length_step: int  # the lengths a task can have are multiples of this
    draw: Callable[[int, np.random.Generator], list[str]]  # an input of the given length
    answer: Callable[[Sequence[str]], list[str]]  # the tokens after <sep>, <eos> included

    @property
    def vocab(self) -> tuple[str, ...]:
        """The checkpoint's vocabulary in id order."""
        return (*self.symbols, *SPECIALS)


def _numbers(count: int) -> tuple[str, ...]:
    return tuple(str(i) for i in range(count))


def _distinct(symbols: int) -> Callable[[int, np.random.Generator], list[str]]:
    """Inputs of distinct numbers below ``symbols``."""
    return lambda length, rng: [str(i) for i in rng.choice(symbols, length, replace=False)]


def _without_tie(symbols: Sequence[str]) -> Callable[[int, np.random.Generator], list[str]]:
    """Inputs whose most frequent symbol is unique."""
    def draw(length: int, rng: np.random.Generator) -> list[str]:
        while True:
            tokens = [symbols[i] for i in rng.integers(len(symbols), size=length)]
            top = Counter(tokens).most_common(2)
            if len(top) == 1 or top[0][1] > top[1][1]:
                return tokens
    return draw


def _majority(tokens: Sequence[str]) -> list[str]:
    """The unique most frequent token (the task's inputs never tie)."""
    counts = Counter(tokens)
    best = max(counts.values())
    winners = [t for t, c in counts.items() if c == best]
    if len(winners) != 1:
        raise SatsimError(f"the input ties between {winners}: no majority answer")
    return winners


def _draw_bits(length: int, rng: np.random.Generator) -> list[str]:
    """Bits whose number of zeros is uniform over 0 … length, never half."""
    zeros = length / 2
    while zeros == length / 2:
        zeros = int(rng.integers(length + 1))
    return list(rng.permutation(["0"] * zeros + ["1"] * (length - zeros)))


def _draw_interleaved(length: int, rng: np.random.Generator) -> list[str]:
    """Three bit streams of length/3, none tied, interleaved position by position."""
    streams = [_draw_bits(length // PERIOD, rng) for _ in range(PERIOD)]
    return [bit for column in zip(*streams) for bit in column]


def _interleaved_answer(tokens: Sequence[str]) -> list[str]:
    return [*(_majority(tokens[i::PERIOD])[0] for i in range(PERIOD)), EOS]


def _draw_bigram_unique(length: int, rng: np.random.Generator) -> list[str]:
    """A walk over the 16 symbols that never repeats a bigram, preferring the freest successor."""
    while True:
        walk = [int(rng.integers(BIGRAM_SYMBOLS))]
        used = np.zeros((BIGRAM_SYMBOLS, BIGRAM_SYMBOLS), dtype=bool)
        while len(walk) < length:
            free = np.flatnonzero(~used[walk[-1]])
            if not len(free):
                break
            room = (~used[free]).sum(axis=1)
            best = free[room == room.max()]
            step = int(rng.choice(best))
            used[walk[-1], step] = True
            walk.append(step)
        if len(walk) == length:
            return [str(i) for i in walk]


def _draw_count(length: int, rng: np.random.Generator) -> list[str]:
    start = int(rng.integers(NUMBERS - length + 1))
    return [str(start), str(start + length - 1)]


def _count_answer(tokens: Sequence[str]) -> list[str]:
    start, end = (int(t) for t in tokens)
    return [*(str(i) for i in range(start, end + 1)), EOS]


def _draw_addition(length: int, rng: np.random.Generator) -> list[str]:
    """Two binary numbers without leading zeros and a ``+``, ``length`` tokens in all."""
    first = int(rng.integers(1, length - 1))
    operands = []
    for size in (first, length - 1 - first):
        bits = [str(b) for b in rng.integers(2, size=size)]
        if size > 1:
            bits[0] = "1"
        operands.append(bits)
    return [*operands[0], "+", *operands[1]]


def _addition_answer(tokens: Sequence[str]) -> list[str]:
    text = "".join(tokens)
    left, right = text.split("+")
    return [*format(int(left, 2) + int(right, 2), "b"), EOS]


TASKS = {task.name: task for task in (
    ZooTask("unique_copy", _numbers(NUMBERS), 1, 1, _distinct(NUMBERS),
            lambda tokens: [*tokens, EOS]),
    ZooTask("unique_reverse", _numbers(NUMBERS), 1, 1, _distinct(NUMBERS),
            lambda tokens: [*reversed(tokens), EOS]),
    ZooTask("sort", _numbers(NUMBERS), 1, 1, _distinct(NUMBERS),
            lambda tokens: [*sorted(tokens, key=int), EOS]),
    ZooTask("unique_bigram_copy", _numbers(BIGRAM_SYMBOLS), 1, 1, _draw_bigram_unique,
            lambda tokens: [*tokens, EOS]),
    ZooTask("count", _numbers(NUMBERS), 2, 1, _draw_count, _count_answer),
    ZooTask("majority", tuple(_string.ascii_lowercase), 1, 1,
            _without_tie(_string.ascii_lowercase), _majority),
    ZooTask("bin_majority", ("0", "1"), 1, 1, _draw_bits, _majority),
    ZooTask("bin_majority_interleave", ("0", "1"), PERIOD, PERIOD, _draw_interleaved,
            _interleaved_answer),
    ZooTask("addition", ("0", "1", "+"), 4, 1, _draw_addition, _addition_answer),
)}
"""The zoo's algorithmic tasks by name (the part of a checkpoint folder's name before ``-``)."""


def task_of(folder_name: str) -> ZooTask | None:
    """The algorithmic task of a zoo checkpoint folder, or None (a formal language, or unknown)."""
    return TASKS.get(folder_name.split("-")[0])


def example(task: ZooTask, tokens: Sequence[str]) -> list[str]:
    """The whole example: input, ``<sep>``, the oracle's answer."""
    return [*tokens, SEP, *task.answer(tokens)]


def model_input(whole: Sequence[str]) -> list[str]:
    """What the model reads (after ``<bos>``): the example without its last token."""
    return list(whole[:-1])


def scored(whole: Sequence[str]) -> tuple[int, list[str]]:
    """The first scored position of the model's input (``<sep>``) and the tokens due from it."""
    start = list(whole).index(SEP)
    return start, list(whole[start + 1:])


def draw_examples(task: ZooTask, n: int, low: int, high: int, seed: int) -> list[list[str]]:
    """``n`` examples with lengths uniform over the task's lengths in [low, high]."""
    rng = np.random.default_rng(seed)
    lengths = [length for length in range(max(low, task.min_length), high + 1)
               if length % task.length_step == 0]
    if not lengths:
        raise SatsimError(f"task {task.name} has no length in [{low}, {high}]")
    return [example(task, task.draw(int(length), rng)) for length in rng.choice(lengths, n)]


def is_right(whole: Sequence[str], answers: Sequence[object]) -> bool:
    """Whether a model's per-position answers on ``model_input(whole)`` are right where scored."""
    start, due = scored(whole)
    return list(answers[start:]) == due
