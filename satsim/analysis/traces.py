"""Render a trace: what every head attended to and what every layer wrote, as text, JSON or plot."""

from __future__ import annotations

from typing import Any

import numpy as np

from satsim.engine.simulator import Trace
from satsim.errors import SatsimError
from satsim.model.encoding import symbols_text
from satsim.model.readout import answer_json, answer_text, decode
from satsim.model.settings import tie_tolerance
from satsim.model.spec import PER_POSITION_TASKS, ModelSpec
from satsim.output import save_figure
from satsim.reference import attention as ref

MAX_PLOT_TOKENS = 512
MAX_LISTED = 12


def compress_positions(positions: np.ndarray) -> str:
    """Write sorted positions as ranges: [0,1,2,5] → '0-2,5'."""
    if len(positions) == 0:
        return "∅"
    parts, start, previous = [], positions[0], positions[0]
    for p in list(positions[1:]) + [None]:
        if p is not None and p == previous + 1:
            previous = p
            continue
        parts.append(str(start) if start == previous else f"{start}-{previous}")
        if p is not None:
            start = previous = p
    return ",".join(parts)


def named_values(spec: ModelSpec, vector: np.ndarray, eps: float = 1e-12) -> str:
    """The non-zero entries of a residual vector, by dimension name."""
    entries = [f"{spec.dim_name(i)}={value:.4g}" for i, value in enumerate(vector)
               if abs(value) > eps]
    return " ".join(entries) if entries else "0"


def head_contributions(spec: ModelSpec, trace: Trace, layer: int) -> np.ndarray:
    """What each head wrote into the residual stream, (H, n, d_model): its output times W_O."""
    attn = spec.blocks[layer].attn
    return np.einsum("hte,hed->htd", trace.layers[layer].outputs.astype(np.float64), attn.W_O)


def attention_matrix(trace: Trace, layer: int, head: int) -> np.ndarray:
    """The (n, n) attention weights of one head, recomputed from its queries and keys."""
    heads = trace.layers[layer]
    q, k = heads.queries[head], heads.keys[head]
    settings = trace.settings
    allowed = ref.allowed_keys(len(q), len(k), attn_mask=heads.masks[head])
    if settings.kind == "softmax":
        scores = np.where(allowed, settings.beta * ref.attention_scores(q, k, heads.scale),
                          -np.inf)
        best = scores.max(axis=-1, keepdims=True)
        weights = np.exp(scores - np.where(np.isfinite(best), best, 0.0))
        return weights / np.maximum(weights.sum(axis=-1, keepdims=True), np.finfo(float).tiny)
    ties = ref.tie_sets(q, k, attn_mask=heads.masks[head], atol=settings.atol,
                        rtol=settings.rtol, scale=heads.scale)
    if settings.kind == "saturated":
        return ties / np.maximum(ties.sum(axis=-1, keepdims=True), 1)
    pick = np.zeros_like(ties, dtype=np.float64)
    rows = np.arange(len(q))
    columns = ties.argmax(axis=-1) if settings.kind == "unique-left" else (
        ties.shape[-1] - 1 - ties[:, ::-1].argmax(axis=-1))
    pick[rows, columns] = 1.0
    return pick * ties.any(axis=-1, keepdims=True)  # a query with no allowed key: none


def trace_outputs(spec: ModelSpec, trace: Trace) -> object:
    """The trace's decoded answer, as :meth:`Simulator.outputs` gives it."""
    settings = trace.settings
    atol, rtol = tie_tolerance(spec.dtype, settings.atol, settings.rtol)
    return decode(spec, trace.logits, atol, rtol)


def token_mark(spec: ModelSpec, token: str) -> str:
    """A token as traces show it: special tokens as ^ (input tokens of any length as they are)."""
    special = len(token) != 1 if spec.character_symbols else token in (spec.bos, spec.eos)
    return "^" if special else token


def decision_text(spec: ModelSpec, trace: Trace) -> str:
    """The model's answer: accept/reject with its logit, the next-symbol sets, or the outputs."""
    if spec.output.task in PER_POSITION_TASKS:
        return f"{spec.output.task} outputs per token: " + answer_text(trace_outputs(spec, trace))
    if spec.output.task == "recognition":
        logit = float(trace.logits[-1][0])
        return f"{'accept' if logit > 0 else 'reject'} (logit {logit:.4g})"
    labels = spec.output.labels
    sets = ["{" + ",".join(lab for lab, z in zip(labels, row) if z > 0) + "}"
            for row in trace.logits]
    return "next symbols per prefix: " + " ".join(sets)


def render_text(spec: ModelSpec, trace: Trace, roles: dict | None = None) -> str:
    """A terminal rendering: per layer, per head, each query's tie set, gap and contribution."""
    lines = [f"string {trace.string!r} · model {spec.name} · attention {trace.settings.kind}",
             f"decision: {decision_text(spec, trace)}"]
    residual_index = 1
    for layer, block in enumerate(spec.blocks):
        if block.attn is not None:
            heads = trace.layers[layer]
            wrote = head_contributions(spec, trace, layer)
            for head in range(block.attn.n_heads):
                role = (roles or {}).get((layer, head))
                lines.append(f"layer {layer} · head {head}" + (f" ({role})" if role else ""))
                for i, token in enumerate(trace.tokens):
                    ties = trace.tie_set(layer, head, i)
                    shown = compress_positions(ties)
                    if len(ties) <= 4:
                        shown += " " + symbols_text(spec, [token_mark(spec, trace.tokens[j])
                                                           for j in ties])
                    size, gap = heads.tie_size[head, i], heads.tie_gap[head, i]
                    lines.append(f"  {i:>5} {token:<5} ties {shown:<24} |S|={size:<5}"
                                 f" gap={gap:<9.3g} → {named_values(spec, wrote[head, i])}")
            residual_index += 1
        if block.mlp is not None:
            before, after = trace.residuals[residual_index - 1], trace.residuals[residual_index]
            lines.append(f"layer {layer} · feed-forward (change of the residual stream)")
            for i, token in enumerate(trace.tokens):
                delta = after[i].astype(np.float64) - before[i]
                lines.append(f"  {i:>5} {token:<5} {named_values(spec, delta)}")
            residual_index += 1
    return "\n".join(lines)


def _tie_set_json(positions: np.ndarray) -> Any:
    if len(positions) <= 2 * MAX_LISTED:
        return positions.tolist()
    return {"size": int(len(positions)), "first": positions[:MAX_LISTED].tolist(),
            "last": positions[-MAX_LISTED:].tolist()}


def render_json(spec: ModelSpec, trace: Trace, roles: dict | None = None) -> dict:
    """A JSON-ready dict of the whole trace."""
    layers = []
    for layer, heads in enumerate(trace.layers):
        if heads is None:
            continue
        wrote = head_contributions(spec, trace, layer)
        layers.append({"layer": layer, "heads": [{
            "head": head,
            "role": (roles or {}).get((layer, head)),
            "queries": [{
                "position": i,
                "tie_set": _tie_set_json(trace.tie_set(layer, head, i)),
                "tie_size": int(heads.tie_size[head, i]),
                "tie_gap": float(heads.tie_gap[head, i]),
                "wrote": {spec.dim_name(d): float(x) for d, x in enumerate(wrote[head, i])
                          if abs(x) > 1e-12},
            } for i in range(len(trace.tokens))],
        } for head in range(heads.tie_size.shape[0])]})
    return {"string": trace.string, "tokens": list(trace.tokens), "model": spec.name,
            "attention": trace.settings.kind, "decision": decision_text(spec, trace),
            "logits": trace.logits.tolist(), "outputs": _json_outputs(spec, trace),
            "layers": layers,
            "dim_names": [spec.dim_name(i) for i in range(spec.d_model)]}


def _json_outputs(spec: ModelSpec, trace: Trace) -> list | None:
    """Per-position outputs for JSON (a tie as {"tie": [labels]}), or None for other tasks."""
    if spec.output.task not in PER_POSITION_TASKS:
        return None
    return answer_json(trace_outputs(spec, trace))


def check_plottable(n_tokens: int) -> None:
    """Raise a one-line SatsimError when attention maps of ``n_tokens`` would be unreadable."""
    if n_tokens > MAX_PLOT_TOKENS:
        raise SatsimError(f"attention maps are drawn for strings of at most {MAX_PLOT_TOKENS} "
                          f"tokens (beyond that a cell is under two pixels); this one has "
                          f"{n_tokens}: trace a shorter string, or use --json")


def plot_attention(spec: ModelSpec, trace: Trace, path: str) -> None:
    """Draw every head's attention map (queries × keys) into one image file.

    Panels grow with the string (two pixels a token at least), share one colour bar, and a
    dotted line marks the BOS key, where heads with nothing better to attend park.
    """
    check_plottable(len(trace.tokens))
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    panels = [(layer, head) for layer, heads in enumerate(trace.layers) if heads is not None
              for head in range(heads.tie_size.shape[0])]
    columns = min(3, len(panels))
    rows = -(-len(panels) // columns)
    side = max(4.0, len(trace.tokens) / 50)
    figure, axes = plt.subplots(rows, columns, figsize=(side * columns + 1.2, side * rows),
                                squeeze=False, layout="constrained")
    labels = [token_mark(spec, t) for t in trace.tokens]
    bos = [i for i, t in enumerate(trace.tokens) if spec.bos is not None and t == spec.bos]
    image = None
    for ax, (layer, head) in zip(axes.flat, panels):
        image = ax.imshow(attention_matrix(trace, layer, head), cmap="viridis", vmin=0, vmax=1)
        ax.set_title(f"layer {layer} head {head}")
        if len(labels) <= 40:
            ax.set_xticks(range(len(labels)), labels)
            ax.set_yticks(range(len(labels)), labels)
        for index in bos:
            ax.axvline(index, color="white", lw=1, ls=":", label="BOS key (^)")
        ax.set_xlabel("key")
        ax.set_ylabel("query")
    for ax in list(axes.flat)[len(panels):]:
        ax.axis("off")
    if bos:
        axes.flat[0].legend(loc="lower left", fontsize=7, framealpha=0.8)
    if image is not None:
        figure.colorbar(image, ax=axes.ravel().tolist(), shrink=0.8,
                        label="attention weight (1 / tie-set size on a tie set)")
    figure.suptitle(f"{spec.name}: {trace.string[:60]!r} ({trace.settings.kind})")
    save_figure(figure, path, dpi=110)
    plt.close(figure)
