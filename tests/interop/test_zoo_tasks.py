"""The zoo's algorithmic tasks (satsim.interop.zoo_tasks) against brute-force definitions.

Each oracle is checked against a definition written another way (counting by hand, a
ripple-carry adder, ranks), each sampler against the constraints of the authors' generators
(distinct tokens, no majority tie, no repeated bigram), on hypothesis-chosen lengths and seeds.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from satsim.interop import zoo_tasks
from satsim.interop.hf_gpt2 import zoo_vocab
from satsim.interop.zoo_tasks import EOS, SEP, TASKS

CHECKPOINT_VOCAB = {"unique_copy": 154, "unique_reverse": 154, "sort": 154, "count": 154,
                    "unique_bigram_copy": 20, "majority": 30, "bin_majority": 6,
                    "bin_majority_interleave": 6, "addition": 7}
"""vocab_size in config.json of each task's checkpoints (lacoco-lab/decompiling_transformers)."""


def _ripple_add(left: list[int], right: list[int]) -> list[int]:
    """Binary sum, most significant bit first, by a ripple-carry adder."""
    a, b = left[::-1], right[::-1]
    out, carry = [], 0
    for i in range(max(len(a), len(b))):
        total = (a[i] if i < len(a) else 0) + (b[i] if i < len(b) else 0) + carry
        out.append(total % 2)
        carry = total // 2
    if carry:
        out.append(1)
    while len(out) > 1 and out[-1] == 0:
        out.pop()
    return out[::-1]


def _strict_winner(tokens, alphabet) -> str:
    """The symbol that occurs more often than every other one, found by counting each."""
    counts = {a: sum(t == a for t in tokens) for a in alphabet}
    [winner] = [a for a in alphabet if all(counts[a] > counts[b] for b in alphabet if b != a)]
    return winner


def _brute_answer(name: str, given: list[str]) -> list[str]:
    """Each task's answer from its definition."""
    if name == "unique_copy" or name == "unique_bigram_copy":
        return [*given, EOS]
    if name == "unique_reverse":
        return [given[len(given) - 1 - i] for i in range(len(given))] + [EOS]
    if name == "sort":
        ranked = [""] * len(given)
        for token in given:
            ranked[sum(int(other) < int(token) for other in given)] = token
        return [*ranked, EOS]
    if name == "count":
        start, end = int(given[0]), int(given[1])
        run, value = [], start
        while value <= end:
            run.append(str(value))
            value += 1
        return [*run, EOS]
    if name == "majority":
        return [_strict_winner(given, TASKS[name].symbols)]
    if name == "bin_majority":
        return [_strict_winner(given, "01")]
    if name == "bin_majority_interleave":
        return [_strict_winner([t for j, t in enumerate(given) if j % 3 == i], "01")
                for i in range(3)] + [EOS]
    plus = given.index("+")
    bits = _ripple_add([int(t) for t in given[:plus]], [int(t) for t in given[plus + 1:]])
    return [*map(str, bits), EOS]


def _input_length(name: str, given: list[str]) -> int:
    """The authors' length of an input (count: its run's length)."""
    return int(given[1]) - int(given[0]) + 1 if name == "count" else len(given)


@pytest.mark.parametrize("name", sorted(TASKS))
@settings(max_examples=25, deadline=None)
@given(low=st.integers(0, 150), span=st.integers(0, 60), seed=st.integers(0, 2**32 - 1))
def test_examples_are_drawn_in_range_and_answered_by_the_definition(name, low, span, seed):
    task = TASKS[name]
    high = min(150, low + span)
    if not any(k % task.length_step == 0 for k in range(max(low, task.min_length), high + 1)):
        return
    for whole in zoo_tasks.draw_examples(task, 4, low, high, seed):
        cut = whole.index(SEP)
        given, answer = whole[:cut], whole[cut + 1:]
        assert set(given) <= set(task.symbols)
        assert max(low, task.min_length) <= _input_length(name, given) <= high
        assert answer == _brute_answer(name, given)
        if name in ("unique_copy", "unique_reverse", "sort"):
            assert len(set(given)) == len(given)
        if name == "unique_bigram_copy":
            pairs = list(zip(given, given[1:]))
            assert len(set(pairs)) == len(pairs)
        if name == "addition":
            left, right = "".join(given).split("+")
            assert all(len(x) == 1 or x[0] == "1" for x in (left, right))


@pytest.mark.parametrize("name", sorted(TASKS))
def test_every_position_from_the_separator_is_scored(name):
    task = TASKS[name]
    [whole] = zoo_tasks.draw_examples(task, 1, 10, 20, 3)
    read = zoo_tasks.model_input(whole)
    answers = list(whole[1:])  # the right next token after every input token
    assert zoo_tasks.is_right(whole, answers)
    start, due = zoo_tasks.scored(whole)
    assert read[start] == SEP and due == whole[start + 1:]
    wrong_early = ["?"] * start + answers[start:]
    assert zoo_tasks.is_right(whole, wrong_early)  # positions before <sep> do not count
    for position in range(start, len(answers)):
        changed = answers[:position] + ["?"] + answers[position + 1:]
        assert not zoo_tasks.is_right(whole, changed)


@pytest.mark.parametrize("name", sorted(TASKS))
def test_the_vocabulary_is_the_checkpoints(name):
    task = TASKS[name]
    size = CHECKPOINT_VOCAB[name]
    assert len(task.vocab) == size and task.vocab[-4:] == ("<bos>", SEP, EOS, "<pad>")
    assert zoo_vocab(f"{name}-@1l1h16d3lr01drop", size) == list(task.vocab)
    assert zoo_vocab(f"{name}-@1l1h16d3lr01drop", size + 1) is None


def test_a_tied_majority_is_refused():
    from satsim.errors import SatsimError

    with pytest.raises(SatsimError, match="ties"):
        TASKS["majority"].answer(["a", "b"])
    with pytest.raises(SatsimError, match="no length"):
        zoo_tasks.draw_examples(TASKS["bin_majority_interleave"], 1, 4, 5, 0)
