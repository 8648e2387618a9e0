"""Score a model against a language's oracle on balanced test sets in length bins."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass

from satsim.analysis.scoring import count_correct, predict
from satsim.analysis.strings import bin_seed, check_test_set_memory, test_set
from satsim.engine.simulator import Simulator
from satsim.errors import SatsimError
from satsim.model.spec import ModelSpec

DEFAULT_BINS: tuple[tuple[int, int], ...] = (
    (0, 16),
    (17, 64),
    (65, 256),
    (257, 1024),
    (1025, 4096),
    (4097, 16384),
)


@dataclass(frozen=True)
class BinResult:
    """Accuracy and speed on one length bin."""

    min_len: int
    max_len: int
    n: int
    positives: int
    negatives: int
    correct: int
    accuracy: float
    tokens: int
    seconds: float
    tokens_per_second: float


@dataclass(frozen=True)
class EvalReport:
    """The result of :func:`evaluate`: one entry per bin and the overall accuracy."""

    language: str
    model: str
    attention: str
    task: str
    seed: int
    bins: list[BinResult]

    @property
    def n(self) -> int:
        """Strings tested in all bins together."""
        return sum(b.n for b in self.bins)

    @property
    def accuracy(self) -> float:
        """Fraction of all tested strings the model got right."""
        return sum(b.correct for b in self.bins) / max(self.n, 1)

    def to_dict(self) -> dict:
        """A JSON-ready dict (the ``--json`` output of ``satsim eval``)."""
        return {
            "language": self.language,
            "model": self.model,
            "attention": self.attention,
            "task": self.task,
            "seed": self.seed,
            "n": self.n,
            "accuracy": self.accuracy,
            "bins": [asdict(b) for b in self.bins],
        }


def parse_bins(text: str) -> tuple[tuple[int, int], ...]:
    """Parse ``"0-16,17-64"`` into ((0, 16), (17, 64))."""
    bins = []
    for part in text.split(","):
        try:
            low, high = (int(x) for x in part.strip().split("-"))
        except ValueError:
            raise SatsimError(f"bad length bin {part!r}; write bins like 0-16,17-64") from None
        if low < 0 or low > high:
            raise SatsimError(f"bad length bin {part!r}: need 0 <= min <= max")
        bins.append((low, high))
    return tuple(bins)


def evaluate(
    simulator: Simulator,
    language,
    bins: Sequence[tuple[int, int]] = DEFAULT_BINS,
    n: int = 200,
    seed: int = 0,
    on_bin: Callable[[BinResult], None] | None = None,
    on_progress: Callable[[int, int], None] | None = None,
) -> EvalReport:
    """Test ``simulator`` on ``n`` strings per length bin, checked against the language's oracle.

    ``on_bin`` hears each bin's result; ``on_progress`` (strings done, in the bin) hears how a
    large bin goes.
    """
    simulator.spec.require_language_task("evaluation against a language")
    check_alphabet(simulator.spec, language)
    return evaluate_predictor(lambda strings: predict(simulator, strings), simulator.spec,
                              language, simulator.settings.kind, bins, n, seed, on_bin,
                              on_progress=on_progress)


def check_alphabet(spec: ModelSpec, language) -> None:
    """Raise a one-line error if the model's alphabet lacks a symbol of the language."""
    missing = set(language.alphabet) - set(spec.alphabet)
    if missing:
        raise SatsimError(
            f"model {spec.name!r} has alphabet {spec.alphabet}, which lacks "
            f"{sorted(missing)} of language {language.name}"
        )


CHUNK_SYMBOLS = 1 << 22
"""A bin with more symbols than this runs in chunks of about this many, each reported."""


def _predict_in_chunks(predictor: Callable[[list[str]], list], strings: list[str],
                       on_progress: Callable[[int, int], None] | None,
                       parts: int = 1) -> tuple[list, float]:
    """The predictor's answers and its seconds, in chunks that report (done, total) strings.

    A chunk holds about CHUNK_SYMBOLS symbols, and at most 1/``parts`` of the strings.
    """
    most = max(1, -(-len(strings) // max(1, parts)))
    chunks, chunk, size = [], [], 0
    for string in strings:
        chunk.append(string)
        size += len(string) + 1
        if size >= CHUNK_SYMBOLS or len(chunk) >= most:
            chunks.append(chunk)
            chunk, size = [], 0
    if chunk or not chunks:
        chunks.append(chunk)
    predicted: list = []
    seconds = 0.0
    for part in chunks:
        start = time.perf_counter()
        predicted.extend(predictor(part) if part else [])
        seconds += time.perf_counter() - start
        if on_progress is not None and len(chunks) > 1:
            on_progress(len(predicted), len(strings))
    return predicted, seconds


def evaluate_predictor(
    predictor: Callable[[list[str]], list],
    spec: ModelSpec,
    language,
    attention: str,
    bins: Sequence[tuple[int, int]] = DEFAULT_BINS,
    n: int = 200,
    seed: int = 0,
    on_bin: Callable[[BinResult], None] | None = None,
    indices: Sequence[int] | None = None,
    negatives: bool = True,
    on_progress: Callable[[int, int], None] | None = None,
    warm_up: bool = True,
    progress_parts: int = 1,
) -> EvalReport:
    """Score any ``predictor`` (strings → answers as :func:`predict` gives them) per length bin.

    ``indices`` gives each bin's position in a longer list of bins, so that a subset of bins is
    tested on the same strings as the full list (default: 0, 1, ...). Without ``negatives``
    the bins hold positives only (see :func:`test_set`). ``warm_up`` first answers one string
    untimed, so that compiling the kernels is not timed. ``on_progress`` hears (strings done,
    strings in the bin) after each chunk of a bin that runs in several: chunks of about
    CHUNK_SYMBOLS symbols, and at least ``progress_parts`` of them.
    """
    spec.require_language_task("evaluation against a language")
    if n < 1:
        raise SatsimError(f"need at least one string per bin, got n={n}")
    check_test_set_memory(bins, n)
    if warm_up:
        predictor([language.alphabet[0]])  # compile or load the kernels before timing
    results = []
    for index, (low, high) in zip(indices or range(len(bins)), bins):
        strings, labels = test_set(language, n, low, high, bin_seed(seed, index), negatives)
        predicted, seconds = _predict_in_chunks(predictor, strings, on_progress, progress_parts)
        correct = count_correct(language, strings, labels, predicted)
        tokens = sum(len(s) for s in strings)
        result = BinResult(
            min_len=low, max_len=high, n=len(strings), positives=int(labels.sum()),
            negatives=int((~labels).sum()), correct=correct,
            accuracy=correct / max(len(strings), 1), tokens=tokens, seconds=seconds,
            tokens_per_second=tokens / seconds if seconds > 0 else float("inf"),
        )
        results.append(result)
        if on_bin is not None:
            on_bin(result)
    return EvalReport(language.name, spec.name, attention, spec.output.task, seed, results)
