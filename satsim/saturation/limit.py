"""The leading-order network: every term below its sum's degree dropped, attention saturated.

As c → ∞ the direction of f(x; cθ) is that of its highest-degree terms, so the limit network
keeps, in every sum of the network graph, only the terms of the sum's degree: a linear bias
after a weight matmul (degree 1 against k+1) goes, a residual stream of lower degree than its
sublayer's output goes, fixed sinusoids (degree 0) go beside a learned embedding (degree 1), and
LayerNorm's ε goes (its input grows). Softmax over scores of positive degree becomes saturated
attention over the leading-order scores. The weights that stay are those of θ itself: the
leading-order network is homogeneous, so evaluating it at θ gives the limit direction.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import networkx as nx
import numpy as np

from satsim.model.degrees import Sublayer, dropped_terms, network_graph
from satsim.model.respec import with_tensors
from satsim.model.scaling import Rates, rated
from satsim.model.spec import BlockSpec, LayerNormSpec, ModelSpec, PositionalSpec

LIMIT_EPS = 1e-30
"""LayerNorm ε of the limit network: its input grows like c^k, so ε/c^2k → 0."""


@dataclass(frozen=True)
class LeadingOrder:
    """The leading-order network of a spec, with what was dropped and why."""

    source: ModelSpec
    spec: ModelSpec
    residual: tuple[bool, ...]  # per sublayer, in order: does the stream input survive?
    dropped: tuple[tuple[str, str], ...]  # (sum node, dropped term)
    graph: nx.DiGraph

    def describe(self) -> list[str]:
        """One line per dropped term: what goes, in which sum, and the two degrees."""
        lines = []
        for total, term in self.dropped:
            degrees = self.graph.nodes[term]["degree"], self.graph.nodes[total]["degree"]
            lines.append(f"drop {term} (degree {degrees[0]}) from {total} (degree {degrees[1]})")
        return lines


def _limit_norm(ln: LayerNormSpec | None) -> LayerNormSpec | None:
    return None if ln is None else replace(ln, eps=LIMIT_EPS)


def _limit_block(block: BlockSpec, layer: int, graph: nx.DiGraph) -> BlockSpec:
    """A block of the limit network: norms without ε, and GELU/SiLU as ReLU where they grow.

    act(c^k z)/c^k → relu(z) for k > 0 for every activation (GELU, SiLU differ from ReLU by
    an exponentially small amount), so a feed-forward whose input grows has ReLU in the limit.
    """
    mlp = block.mlp
    if mlp is not None and graph.nodes[f"blocks.{layer}.mlp.hook_pre"]["degree"] > 0:
        mlp = replace(mlp, activation="relu")
    return replace(block, mlp=mlp, ln1=_limit_norm(block.ln1), ln2=_limit_norm(block.ln2))


def _silence(sub: Sublayer, spec: ModelSpec) -> dict[str, None | np.ndarray]:
    """Tensors that make a sublayer's branch exactly zero (its degree is below the stream's)."""
    p = f"blocks.{sub.layer}"
    if sub.kind == "attn":
        w_o = spec.blocks[sub.layer].attn.W_O
        return {f"{p}.attn.W_O": np.zeros_like(w_o), f"{p}.attn.b_O": None}
    w_out = spec.blocks[sub.layer].mlp.W_out
    return {f"{p}.mlp.W_out": np.zeros_like(w_out), f"{p}.mlp.b_out": None}


def leading_order(spec: ModelSpec, rates: Rates | None = None) -> LeadingOrder:
    """Return the leading-order network of ``spec`` (scaled at per-group ``rates``)."""
    spec = rated(spec, rates)
    graph = network_graph(spec)
    dropped = dropped_terms(graph)
    gone = {term for _, term in dropped}
    params = set(spec.tensors())
    new: dict[str, None | np.ndarray] = {term: None for term in gone if term in params}
    residual = []
    for sub in graph.graph["sublayers"]:
        residual.append(sub.total is not None and sub.stream_in not in gone)
        if sub.branch in gone:
            new.update(_silence(sub, spec))
    out = with_tensors(spec, new)
    blocks = tuple(_limit_block(b, layer, graph) for layer, b in enumerate(out.blocks))
    changes = {"blocks": blocks, "ln_final": _limit_norm(out.ln_final),
               "name": f"{spec.name}-limit",
               "description": f"leading-order (saturated limit) network of {spec.name}"}
    if "hook_pos_embed" in gone:
        changes["positional"] = PositionalSpec()
    if residual:
        changes["residual"] = residual[0] if len(set(residual)) == 1 else tuple(residual)
    out = replace(out, **changes)
    return LeadingOrder(spec, out, tuple(residual), tuple(dropped), graph)


def limit(spec: ModelSpec, rates: Rates | None = None) -> ModelSpec:
    """Return the leading-order ModelSpec whose saturated run is lim f(x; cθ) in direction."""
    return leading_order(spec, rates).spec
