"""Decoding logits into a model's answers: accept, next-symbol sets, labels or values.

The one statement of how each task reads its logits. Per-position answers cover the input
tokens only: BOS's position and EOS's position are dropped.

A categorical answer is the label of the largest logit. Labels whose logits lie within the tie
tolerance of the largest (atol + rtol·|max|, the attention settings' tolerance for the model's
dtype) tie, and the answer is then a :class:`Tie` of those labels in label order: never one of
them picked silently, and never equal to a label.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from satsim.model.spec import ModelSpec


@dataclass(frozen=True)
class Tie:
    """A categorical answer where several labels share the largest logit."""

    labels: tuple[str, ...]

    def __str__(self) -> str:
        """Tied labels as ``tie(a|b)``."""
        return "tie(" + "|".join(self.labels) + ")"


def symbol_sets(labels: np.ndarray, rows: np.ndarray) -> list[frozenset[str]]:
    """The labels whose logit is > 0, for each row."""
    return [frozenset(labels[row > 0]) for row in rows]


def next_symbol_sets(labels: np.ndarray, logits: np.ndarray, string: str) -> list[frozenset[str]]:
    """The predicted set after each prefix of ``string``: the labels whose logit is > 0."""
    return symbol_sets(labels, logits[: len(string) + 1])


def input_rows(spec: ModelSpec, logits: np.ndarray) -> np.ndarray:
    """The per-position logits (n_tokens, n_outputs) at the input tokens (BOS/EOS rows dropped)."""
    start = int(spec.bos is not None)
    stop = len(logits) - int(spec.eos is not None)
    return logits[start:stop]


def categorical(labels: tuple[str, ...], rows: np.ndarray, atol: float,
                rtol: float) -> list[str | Tie]:
    """The label of the largest logit of each row, or the :class:`Tie` of the labels at it."""
    rows = np.asarray(rows, dtype=np.float64)
    top = rows.max(axis=-1, keepdims=True)
    tied = rows >= top - (atol + rtol * np.abs(top))
    return [labels[int(np.argmax(row))] if row.sum() == 1
            else Tie(tuple(label for label, t in zip(labels, row) if t)) for row in tied]


def decode(spec: ModelSpec, logits: np.ndarray, atol: float, rtol: float) -> object:
    """One input's answer from its logits (as the simulator returns them).

    recognition: a bool; next-symbol: the set of labels with logit > 0 after each prefix
    (BOS's row is the empty prefix); categorical: a label or :class:`Tie` per input token;
    numerical: a float per input token.
    """
    output = spec.output
    logits = np.asarray(logits)
    if output.task == "recognition":
        return bool((logits[-1] if logits.ndim == 2 else logits)[0] > 0)
    if output.task == "next-symbol":
        rows = logits[: len(logits) - int(spec.eos is not None)]
        return symbol_sets(np.array(output.labels, dtype=object), rows)
    rows = input_rows(spec, logits)
    if output.task == "numerical":
        return [float(value) for value in rows[:, 0]]
    return categorical(output.labels, rows, atol, rtol)


def _item_text(value: object) -> str:
    """One per-position answer as text: a label, a tie, a value to 6 significant digits or a set."""
    if isinstance(value, frozenset):
        return "{" + ",".join(sorted(value)) + "}"
    return f"{value:.6g}" if isinstance(value, float) else str(value)


def answer_text(answer: object) -> str:
    """An answer as :func:`decode` gives it, as one line of text."""
    if isinstance(answer, bool):
        return "accept" if answer else "reject"
    return " ".join(_item_text(value) for value in answer)


def answer_json(answer: object) -> object:
    """An answer as JSON: a bool, lists of sorted sets, labels, values, {"tie": [labels]}."""
    if isinstance(answer, bool):
        return answer
    return [sorted(v) if isinstance(v, frozenset) else {"tie": list(v.labels)}
            if isinstance(v, Tie) else v for v in answer]
