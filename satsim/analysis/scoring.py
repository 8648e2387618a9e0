"""The one policy for scoring a model's answers against a language's oracle.

An answer is a recognition verdict (a bool) or one next-symbol set per prefix (a list of
frozensets); None means the model's answer is undetermined, which is never correct.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from satsim.engine.simulator import Simulator


def predict(simulator: Simulator, strings: Sequence[str]) -> list:
    """The model's answer per string: accept/reject, or the list of next-symbol sets."""
    simulator.spec.require_language_task("scoring against a language")
    if simulator.spec.output.task == "recognition":
        return simulator.accepts(strings).tolist()
    return simulator.next_symbols(strings)


def is_correct(language, string: str, label: bool, answer) -> bool:
    """Whether ``answer`` matches the oracle: the label, or every next-symbol set."""
    if answer is None:
        return False
    if isinstance(answer, list):
        return answer == language.next_symbols(string)
    return bool(answer) == bool(label)


def count_correct(language, strings: Sequence[str], labels: np.ndarray, predicted: list) -> int:
    """How many answers match the oracle: the label, or every next-symbol set.

    An answer of None (the model's answer is undetermined) matches nothing.
    """
    return sum(is_correct(language, s, y, p) for s, y, p in zip(strings, labels, predicted))


def wrong_strings(language, strings: Sequence[str], labels: Sequence[bool],
                  predicted: list) -> list[str]:
    """The strings whose answers do not match the oracle."""
    return [s for s, y, p in zip(strings, labels, predicted) if not is_correct(language, s, y, p)]


def oracle_labels(language, strings: Sequence[str]) -> np.ndarray:
    """The oracle's membership of every string (bad symbols raise the language's error)."""
    return np.array([language.contains(s) for s in strings], dtype=bool)


@dataclass(frozen=True)
class Verdict:
    """One string's answer beside the oracle, as ``satsim run`` shows it."""

    string: str
    answer: object  # bool, or the list of next-symbol sets
    in_language: bool
    correct: bool

    @property
    def word(self) -> str:
        """Accept / reject for a recogniser; sets (or sets! when wrong) for next symbols."""
        if isinstance(self.answer, list):
            return "sets" if self.correct else "sets!"
        return "accept" if self.answer else "reject"


def verdicts(simulator: Simulator, language, strings: Sequence[str]) -> list[Verdict]:
    """Run ``strings`` and judge each answer against the oracle."""
    labels = oracle_labels(language, strings)  # bad symbols stop here, with a message
    answers = predict(simulator, list(strings))
    return [Verdict(s, a, bool(y), is_correct(language, s, y, a))
            for s, y, a in zip(strings, labels, answers)]
