"""What a model is, read off its spec: architecture, sizes, head kinds and degrees."""

from __future__ import annotations

import numpy as np

from satsim.model.spec import AttentionSpec, ModelSpec


def head_kind(attn: AttentionSpec, head: int) -> str:
    """What a head can do, read off its weights: prefix mean, fixed query, or content."""
    def zero(array):
        return array is None or not np.any(array[head])

    if zero(attn.W_K):
        return "prefix mean (keys constant: every allowed key ties)"
    if zero(attn.W_Q) and zero(attn.b_Q):
        return "prefix mean (zero queries: every allowed key ties)"
    if zero(attn.W_Q):
        return "fixed query (scores depend on the key only)"
    return "content (query-key)"


def describe(spec: ModelSpec) -> dict:
    """Architecture, sizes and head kinds of ``spec`` as a JSON-ready dict.

    ``heads`` lists every head with the attention kind it fixes (HEAD_KINDS; "run": the run's)
    and its width δ; a layer's ``kinds`` say what each head can do, read off its weights.
    """
    layers = []
    for block in spec.blocks:
        row = {}
        if block.attn is not None:
            a = block.attn
            row["attn"] = {"heads": a.n_heads, "d_head": a.d_head, "d_v": a.d_v,
                           "mask": a.mask_text, "scale": a.score_scale,
                           "biases": [b for b in ("b_Q", "b_K", "b_V", "b_O")
                                      if getattr(a, b) is not None],
                           "kinds": [head_kind(a, h) for h in range(a.n_heads)],
                           "writes": [_written(spec, a.W_O[h]) for h in range(a.n_heads)]}
        if block.mlp is not None:
            m = block.mlp
            row["mlp"] = {"d_mlp": m.W_in.shape[1], "activation": m.activation,
                          "biases": [b for b in ("b_in", "b_out") if getattr(m, b) is not None],
                          "writes": _written(spec, m.W_out)}
        layers.append(row)
    return {
        "name": spec.name, "description": spec.description, "vocab": list(spec.vocab),
        "bos": spec.bos, "eos": spec.eos, "dtype": str(spec.dtype), "d_model": spec.d_model,
        "n_layers": spec.n_layers, "norm": spec.norm, "residual": spec.residual,
        "norm_kinds": sorted({ln.kind for b in spec.blocks for ln in (b.ln1, b.ln2) if ln}),
        "parallel": spec.parallel,
        "layer_norm_affine": any(ln.affine for b in spec.blocks for ln in (b.ln1, b.ln2) if ln),
        "positional": spec.positional.kind, "task": spec.output.task,
        "readout": spec.output.readout, "labels": list(spec.output.labels),
        "parameters": int(sum(a.size for a in spec.tensors().values())), "layers": layers,
        "source_language": spec.source_language, "source": spec.source,
        "max_tokens": spec.max_tokens,
        "heads": [{"layer": layer, "head": head, "kind": kind, "delta": delta}
                  for layer, block in enumerate(spec.blocks) if block.attn is not None
                  for head, (kind, delta) in enumerate(zip(block.attn.head_kinds,
                                                           block.attn.head_deltas))],
    }


def kind_text(kind: str, delta: float | None) -> str:
    """A head's attention kind for a reader: ``score-class(δ=0.02)``, ``soft``, ``run``."""
    return kind if delta is None else f"{kind}(δ={delta:.3g})"


def _written(spec: ModelSpec, weight: np.ndarray) -> list[str]:
    """The named residual dimensions a [·, d_model] output map writes (none without names)."""
    if not spec.dim_names:
        return []
    return [spec.dim_name(d) for d in np.flatnonzero(np.any(weight != 0, axis=0))]


def degree_table(spec: ModelSpec) -> dict:
    """Every graph node's op and degree, and what the leading-order network drops."""
    import networkx as nx

    from satsim.saturation import leading_order

    network = leading_order(spec)
    graph = network.graph
    nodes = [{"name": name, "op": graph.nodes[name]["op"], "degree": graph.nodes[name]["degree"],
              "dropped": graph.nodes[name].get("dropped", []),
              "saturates": graph.nodes[name].get("saturates")}
             for name in nx.topological_sort(graph) if graph.nodes[name]["op"] != "param"]
    return {"nodes": nodes, "dropped": network.describe(), "residual_kept": list(network.residual)}
