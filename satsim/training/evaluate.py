"""A trained model per length bin: the soft model (torch) beside its saturated limit (simulator).

Both see the same strings: :func:`satsim.analysis.strings.test_set` with the seed of the bin's
index, scored by :func:`satsim.analysis.scoring.count_correct`. A recogniser gets half positives and
half hard negatives and must give the label; a next-symbol model gets positives only (the strings
its task is trained on) and must predict every prefix's set of next symbols. The soft model decides
like the simulator: a logit > 0 at the readout. Its attention can cost O(T²) memory (torch's
math kernel, which SDPA falls back to where no fused kernel applies), so strings are run in
batches of bounded B·T², and bins longer than ``soft_max_len`` are left to the limit alone. A
learned positional table of n_ctx positions limits both models: a bin that starts beyond it is
skipped, one that straddles it is cut at the longest string that fits.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass

import numpy as np

from satsim.analysis.evaluation import BinResult, check_alphabet, evaluate_predictor
from satsim.analysis.scoring import predict
from satsim.engine.simulator import Simulator
from satsim.model.readout import next_symbol_sets
from satsim.model.spec import ModelSpec

LONG_BINS_UNTIL = 1000
"""Default bins double in length past the preset's splits until they reach this length."""

SOFT_BATCH_SCORES = 1 << 24
"""Attention scores (B·H·T²) per soft batch: about 128 MB in float64."""
PARTS = 10
"""A bin's strings go to each model in about this many parts, each reported: the limit of a
long bin can take many minutes."""


@dataclass(frozen=True)
class BinPair:
    """One length bin: the soft model's and the limit's result (None where not run) and why."""

    min_len: int
    max_len: int
    soft: BinResult | None
    limit: BinResult | None
    note: str = ""

    def to_dict(self) -> dict:
        """A JSON-ready dict."""
        return {"min_len": self.min_len, "max_len": self.max_len,
                "soft": None if self.soft is None else asdict(self.soft),
                "limit": None if self.limit is None else asdict(self.limit), "note": self.note}


def default_bins(split: str | None) -> tuple[tuple[int, int], ...]:
    """The training split's lengths, then later splits beyond them, then doubling bins to 1000."""
    from languages.datasets import PRESETS

    splits = PRESETS.get(split or "", PRESETS["bhattamishra"])
    train = next((s for s in splits if s.name == "train"), splits[0])
    bins = [(train.min_len, train.max_len)]
    for s in splits:
        if s.min_len > bins[-1][1]:
            bins.append((s.min_len, s.max_len))
    while bins[-1][1] < LONG_BINS_UNTIL:
        low = bins[-1][1] + 1
        high = max(2 * bins[-1][1], low)
        bins.append((low, high if 2 * high <= LONG_BINS_UNTIL else LONG_BINS_UNTIL))
    return tuple(bins)


def max_string_length(spec: ModelSpec) -> int | None:
    """The longest string the model can read (a learned table's n_ctx less BOS/EOS), or None."""
    if spec.positional.kind != "learned":
        return None
    return spec.positional.W_pos.shape[0] - (spec.bos is not None) - (spec.eos is not None)


def soft_predictor(spec: ModelSpec, device: str = "auto", dtype: str | None = None,
                   scale: float = 1.0):
    """A function strings → answers (as :func:`satsim.analysis.scoring.predict`), soft twin.

    ``scale`` c answers as the twin at cθ (:meth:`satsim.soft.SoftTransformer.scaled`).
    """
    from satsim.analysis.measures import decide
    from satsim.soft import SoftTransformer

    soft = SoftTransformer.from_spec(spec, device=device, dtype=dtype)
    if scale != 1.0:
        soft = soft.scaled(scale)
    heads = max([b.attn.n_heads for b in spec.blocks if b.attn is not None], default=1)
    labels = np.array(spec.output.labels, dtype=object)
    recognition = spec.output.task == "recognition"

    def answer(logits: np.ndarray, string: str):
        if recognition:
            return bool(decide(spec, logits)[0])
        return next_symbol_sets(labels, logits, string)

    def run(strings: list[str]) -> list:
        answers: list = [None] * len(strings)
        order = sorted(range(len(strings)), key=lambda i: len(strings[i]))
        start = 0
        while start < len(order):
            tokens = len(strings[order[start]]) + 2
            size = max(1, SOFT_BATCH_SCORES // (heads * tokens * tokens))
            batch = order[start:start + size]
            result = soft.run([strings[i] for i in batch])
            for row, index in enumerate(batch):
                answers[index] = answer(result.logits_of(row), strings[index])
            start += size
        return answers

    return run


def _plan(bins: Sequence[tuple[int, int]], cap: int | None,
          shortest: int) -> list[tuple[int, int, int, str]]:
    """Per bin: its index, the lengths to test (cut to [shortest, cap]) and a note; -1: skipped."""
    plan = []
    for index, (low, high) in enumerate(bins):
        if low < shortest <= high:
            low = shortest  # without BOS/EOS the empty string gives the model no token
        if cap is not None and low > cap:
            plan.append((-1, low, high, f"skipped: longer than the learned table ({cap})"))
        elif cap is not None and high > cap:
            plan.append((index, low, cap, f"cut at {cap} (learned positional table)"))
        else:
            plan.append((index, low, high, ""))
    return plan


def _bin_progress(model: str, bins: Sequence[tuple[int, int]],
                  on_strings: Callable[[str, tuple[int, int], int, int], None]):
    """evaluate_predictor's (done, total) as ``on_strings`` (model, bin, done, total).

    Returns (on_progress, bin_done): call bin_done after each bin, so that progress names it.
    """
    current = [0]

    def on_progress(done: int, total: int) -> None:
        if current[0] < len(bins):
            on_strings(model, bins[current[0]], done, total)

    def bin_done() -> None:
        current[0] += 1

    return on_progress, bin_done


def evaluate_bins(spec: ModelSpec, limit: Simulator | Callable[[list[str]], list], language,
                  bins: Sequence[tuple[int, int]], n: int = 100, seed: int = 0, *,
                  device: str = "auto", soft_max_len: int = 2048,
                  on_bin: Callable[[str, BinResult], None] | None = None,
                  on_strings: Callable[[str, tuple[int, int], int, int], None] | None = None
                  ) -> list[BinPair]:
    """Accuracy per bin of the soft model ``spec`` and of its limit.

    ``limit`` is a simulator of a limit spec, or a predictor with a ``spec`` attribute (such as
    :class:`satsim.saturation.signs.LimitPredictor`), answering as :func:`predict` does.
    ``on_bin`` hears ("saturated limit" or "soft model", result) as each bin is done, and
    ``on_strings`` (model, bin, strings done, strings in the bin) as each part of a bin is.
    """
    heard = on_bin or (lambda model, result: None)
    limit_spec = limit.spec
    answer = ((lambda strings: predict(limit, strings)) if isinstance(limit, Simulator)
              else limit)
    check_alphabet(spec, language)
    caps = [c for c in (max_string_length(spec), max_string_length(limit_spec)) if c is not None]
    shortest = int(spec.bos is None and spec.eos is None)
    plan = _plan(bins, min(caps) if caps else None, shortest)
    run = [(index, (low, high)) for index, low, high, _ in plan if index >= 0]
    negatives = spec.output.task == "recognition"
    told = on_strings or (lambda model, bin_, done, total: None)
    if run and isinstance(limit, Simulator):  # compiled before the timing (and the parts)
        answer([language.alphabet[0]])
    limit_progress, limit_bin_done = _bin_progress("saturated limit", [b for _, b in run], told)
    limit_results = iter(evaluate_predictor(
        answer, limit_spec, language, "saturated",
        [b for _, b in run], n, seed, indices=[i for i, _ in run],
        negatives=negatives, warm_up=False, on_progress=limit_progress, progress_parts=PARTS,
        on_bin=lambda r: (limit_bin_done(), heard("saturated limit", r))).bins) if run else iter(())
    soft_run = [(i, b) for i, b in run if b[1] <= soft_max_len]
    soft_results: Iterator[BinResult] = iter(())
    if soft_run:
        soft = soft_predictor(spec, device)
        soft([language.alphabet[0]])  # set up before the timing (and the parts)
        soft_progress, soft_bin_done = _bin_progress("soft model", [b for _, b in soft_run], told)
        soft_results = iter(evaluate_predictor(
            soft, spec, language, "softmax", [b for _, b in soft_run], n,
            seed, indices=[i for i, _ in soft_run], negatives=negatives, warm_up=False,
            on_progress=soft_progress, progress_parts=PARTS,
            on_bin=lambda r: (soft_bin_done(), heard("soft model", r))).bins)
    pairs = []
    for index, low, high, note in plan:
        if index < 0:
            pairs.append(BinPair(low, high, None, None, note))
            continue
        soft = next(soft_results) if high <= soft_max_len else None
        if soft is None:
            note = "; ".join(filter(None, [note, f"soft skipped: longer than {soft_max_len}"]))
        pairs.append(BinPair(low, high, soft, next(limit_results), note))
    return pairs
