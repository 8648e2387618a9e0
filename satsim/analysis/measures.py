"""How close a soft model is to its saturated limit, by layer (Merrill et al. 2021, Figures 4, 5).

- representation similarity: cos(f(x; θ), f(x; cθ)) per token along the hidden dimension,
  averaged over tokens, for every residual stream (Figure 4 uses c = 1000);
- homogeneity curve: cosine of the flattened final output at c against c = 1000 (Figure 5);
- convergence: per-layer cosine and decision agreement between the soft twin at cθ and the
  saturated leading-order network, beside the naive substitution (the same weights θ with
  softmax swapped for saturated attention), which is the limit of β → ∞ alone, and the
  decisions of :func:`satsim.saturation.limit_signs` (the checked limit).

The soft twin comes from :mod:`satsim.soft` (torch); the functions here import it on call.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING

import numpy as np

from satsim.model.scaling import Rates
from satsim.model.spec import ModelSpec
from satsim.reference.attention import allowed_keys, attention_scores, tie_sets
from satsim.saturation.exact import exact_limit
from satsim.saturation.limit import LeadingOrder, leading_order
from satsim.saturation.run import LimitRun, run_limit
from satsim.saturation.signs import limit_signs

if TYPE_CHECKING:
    from satsim.soft import SoftRun


def row_cosines(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Cosine of matching rows (last axis); 1 where both rows are zero, 0 where one is.

    Unlike a parameter vector's cosine (:func:`satsim.training.report.vector_cosine`, None
    without a direction), a row here is compared for agreement: two zero rows are the same row.
    """
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    scale = np.maximum(np.abs(a).max(axis=-1, keepdims=True), 1e-300)
    a = a / scale
    b = b / np.maximum(np.abs(b).max(axis=-1, keepdims=True), 1e-300)
    na, nb = np.linalg.norm(a, axis=-1), np.linalg.norm(b, axis=-1)
    dot = (a * b).sum(axis=-1)
    both_zero = (na == 0) & (nb == 0)
    with np.errstate(invalid="ignore", divide="ignore"):
        cos = np.where(both_zero, 1.0, dot / (na * nb))
    return np.nan_to_num(np.clip(cos, -1.0, 1.0), nan=0.0)


def token_cosine(a: np.ndarray, b: np.ndarray, lengths: Sequence[int]) -> float:
    """Mean over real tokens of the per-token cosine of two padded (B, T, d) batches."""
    cos = row_cosines(a, b)
    return float(np.mean(np.concatenate([cos[row, :n] for row, n in enumerate(lengths)])))


def flat_cosine(a: np.ndarray, b: np.ndarray) -> float:
    """Cosine of two arrays flattened."""
    return float(row_cosines(np.ravel(a)[None], np.ravel(b)[None])[0])


def decide(spec: ModelSpec, logits: np.ndarray) -> np.ndarray:
    """Decisions from one string's per-position logits (n, n_outputs): logit > 0 at the readout."""
    spec.require_language_task("deciding accept/reject or next symbols")
    logits = np.asarray(logits)
    return (logits[-1] if spec.output.readout == "last" else logits) > 0


def _soft(spec: ModelSpec, device: str, dtype: str):
    from satsim.soft import SoftTransformer

    return SoftTransformer.from_spec(spec, device=device, dtype=dtype)


def final_output(run: SoftRun) -> np.ndarray:
    """The final representation (B, T, d) of a soft run: the last stream after ln_final."""
    return run.final.double().cpu().numpy()


def representation_similarity(spec: ModelSpec, strings: Sequence[str], c: float = 1000.0, *,
                              device: str = "auto", dtype: str = "float64") -> list[float]:
    """Per residual stream: mean token cosine of f(x; θ) and f(x; cθ) (Figure 4)."""
    soft = _soft(spec, device, dtype)
    base, far = soft.run(strings), soft.scaled(c).run(strings)
    lengths = base.lengths.tolist()
    return [token_cosine(a, b, lengths)
            for a, b in zip(base.residual_arrays(), far.residual_arrays())]


def homogeneity_curve(spec: ModelSpec, strings: Sequence[str], scales: Sequence[float],
                      reference: float = 1000.0, *, device: str = "auto",
                      dtype: str = "float64") -> list[float]:
    """Per c: mean over strings of the flattened final-output cosine at c vs ``reference``."""
    soft = _soft(spec, device, dtype)
    far = soft.scaled(reference).run(strings)
    target, lengths = final_output(far), far.lengths.tolist()
    curve = []
    for c in scales:
        out = final_output(soft.scaled(c).run(strings))
        curve.append(float(np.mean([flat_cosine(out[row, :n], target[row, :n])
                                    for row, n in enumerate(lengths)])))
    return curve


def tie_margin(network: LeadingOrder, run: LimitRun) -> float:
    """Smallest gap, over every head and query, between the tie set and the best other key."""
    attention = [b.attn for b in network.spec.blocks if b.attn is not None]
    mask = np.arange(run.residuals[0].shape[1])[None, :] < run.lengths[:, None]
    margin = np.inf
    for layer, attn in zip(run.layers, attention):
        for head, attn_mask in enumerate(attn.head_masks):
            q, k = layer.queries[:, head], layer.keys[:, head]
            scores = attention_scores(q, k, attn.score_scale)
            ties = tie_sets(q, k, attn_mask=attn_mask, key_mask=mask, scale=attn.score_scale)
            allowed = allowed_keys(*scores.shape[-2:], attn_mask=attn_mask, key_mask=mask)
            best = np.where(ties, scores, -np.inf).max(axis=-1)
            other = np.where(allowed & ~ties, scores, -np.inf).max(axis=-1)
            gaps = (best - other)[mask & allowed.any(axis=-1)]
            margin = min(margin, float(gaps.min()) if gaps.size else np.inf)
    return margin


@dataclass(frozen=True)
class Convergence:
    """Soft twin at cθ against the saturated limit, per scale and per residual stream."""

    model: str
    streams: list[str]
    scales: list[float]
    cosine: list[list[float]]  # [scale][stream]: soft at cθ vs the leading-order network
    agreement: list[float]  # [scale]: fraction of strings with the same decisions
    exact_cosine: list[list[float]] | None  # [scale][stream]: soft at cθ vs the exact limit
    exact_agreement: list[float] | None
    naive_cosine: list[list[float]]  # [scale][stream]: soft at cθ vs naive substitution
    naive_agreement: list[float]
    tie_margin: float  # smallest score gap between a tie set and the next key (limit network)
    findings: dict[str, int]  # exact-limit findings by kind, over all strings
    n_strings: int
    signs_agreement: list[float]  # [scale]: soft decisions vs limit_signs (undetermined: no)
    signs_exact: int  # strings limit_signs answered by the exact expansion
    signs_undetermined: int  # strings with an undetermined readout sign

    def to_dict(self) -> dict:
        """A JSON-ready dict."""
        return asdict(self)


@dataclass(frozen=True)
class _Target:
    """A limit to compare the soft twin with: padded streams (B, T, d) and decisions per string."""

    streams: list[np.ndarray]
    decisions: list[np.ndarray | None]  # None: the limit's decision is undetermined


def _leading_target(network: LeadingOrder, run: LimitRun) -> _Target:
    lengths = run.lengths.tolist()
    decisions = [decide(network.spec, run.logits[row, :k]) for row, k in enumerate(lengths)]
    return _Target([np.asarray(r, dtype=np.float64) for r in run.residuals], decisions)


def _naive_target(spec: ModelSpec, strings: Sequence[str], n: int) -> _Target:
    from satsim.engine.simulator import Simulator

    traces = Simulator(spec).traces(list(strings))
    streams = [np.stack([_pad(r, n) for r in rows]) for rows in zip(*(t.residuals for t in traces))]
    return _Target(streams, [decide(spec, t.logits) for t in traces])


def _exact_target(spec: ModelSpec, strings: Sequence[str], n: int) -> tuple[_Target, dict]:
    directions, decisions, findings = [], [], Counter()
    for string in strings:
        limit = exact_limit(spec, string)
        directions.append([_pad(limit.direction(i), n) for i in range(len(limit.streams))])
        decisions.append(decide(spec, limit.logit_signs()) if limit.determined else None)
        for finding in limit.findings:
            findings[finding.kind + (" (harmless)" if finding.harmless else "")] += 1
    return _Target([np.stack(rows) for rows in zip(*directions)], decisions), dict(findings)


def convergence(spec: ModelSpec, strings: Sequence[str], scales: Sequence[float], *,
                rates: Rates | None = None, device: str = "auto", dtype: str = "float64",
                exact: bool = True) -> Convergence:
    """Per-layer cosine and decision agreement of the soft twin at cθ and the saturated limit."""
    spec.require_language_task("the convergence of decisions")
    network = leading_order(spec, rates)
    limit_run = run_limit(network, strings)
    n, lengths = limit_run.residuals[0].shape[1], limit_run.lengths.tolist()
    targets = {"leading": _leading_target(network, limit_run),
               "naive": _naive_target(network.source, strings, n)}
    findings: dict[str, int] = {}
    if exact:
        targets["exact"], findings = _exact_target(network.source, strings, n)
    signs = limit_signs(spec, strings, rates)
    signed = [None if np.isnan(s).any() else s > 0 for s in signs.signs]
    cosine: dict[str, list] = {key: [] for key in targets}
    agreement: dict[str, list] = {key: [] for key in [*targets, "signs"]}
    soft = _soft(spec, device, dtype)
    for c in scales:
        run = soft.scaled(c, rates).run(strings)
        streams = run.residual_arrays()
        decisions = [decide(spec, run.logits_of(row)) for row in range(len(strings))]
        for key, target in targets.items():
            cosine[key].append([token_cosine(s, t, lengths)
                                for s, t in zip(streams, target.streams)])
            agreement[key].append(_agree(decisions, target.decisions))
        agreement["signs"].append(_agree(decisions, signed))
    return Convergence(
        model=spec.name, streams=list(network.graph.graph["streams"]),
        scales=[float(c) for c in scales], cosine=cosine["leading"],
        agreement=agreement["leading"], exact_cosine=cosine.get("exact"),
        exact_agreement=agreement.get("exact"), naive_cosine=cosine["naive"],
        naive_agreement=agreement["naive"], tie_margin=tie_margin(network, limit_run),
        findings=findings, n_strings=len(strings), signs_agreement=agreement["signs"],
        signs_exact=int(signs.exact.sum()), signs_undetermined=int(signs.undetermined.sum()))


def _pad(array: np.ndarray, n: int) -> np.ndarray:
    """Rows of ``array`` padded with zeros to n rows, as float64."""
    array = np.asarray(array, dtype=np.float64)
    return np.concatenate([array, np.zeros((n - len(array), array.shape[-1]))])


def _agree(a: list[np.ndarray], b: list[np.ndarray | None]) -> float:
    """Fraction of strings whose decisions are identical (None, undetermined, never is)."""
    return float(np.mean([y is not None and np.array_equal(x, y) for x, y in zip(a, b)]))
