"""The network graph of a spec, each node carrying its degree of homogeneity.

Degrees follow Li and Arora's rules (Merrill et al. 2021, Table 1): a parameter has degree 1 and a
fixed input degree 0; a product (a matmul, an embedding lookup, attention weights times values, q·k)
adds its inputs' degrees; a sum keeps the highest degree and its lower-degree terms vanish
relative to it (they are recorded as ``dropped``); LayerNorm gives 0 (1 once its affine map is
applied); ReLU keeps the degree; softmax gives 0 and saturates when its scores have degree > 0.
At cθ a node of degree k is c^k times its value at θ plus lower-order terms.

Node names follow TransformerLens hooks (``blocks.0.attn.hook_q``) and parameters keep their
spec names (``blocks.0.attn.W_Q``); a biased map ``x W + b`` is a product node ``<hook>.linear``
summed with the bias into ``<hook>``.
"""

from __future__ import annotations

from dataclasses import dataclass

import networkx as nx
import numpy as np

from satsim.model.architecture import (
    Backend,
    Branch,
    Step,
    embedding_stream,
    position_term,
    run,
)
from satsim.model.spec import LayerNormSpec, ModelSpec, OutputSpec


def _degree(op: str, inputs: list[int]) -> int:
    """Degree of a node from its op and its inputs' degrees (Table 1 of Merrill et al. 2021)."""
    if op == "param":
        return 1
    if op in ("const", "layernorm", "rmsnorm", "softmax"):
        return 0
    if op == "product":
        return sum(inputs)
    # sum, identity, an activation (named by its op; gelu(cz)/c → relu(z): each has ReLU's degree)
    return max(inputs)


@dataclass(frozen=True)
class Sublayer:
    """Where a sublayer sits in the graph: its residual sum and the two terms it adds."""

    layer: int
    kind: str  # "attn" or "mlp"
    stream_in: str
    branch: str
    total: str | None  # the residual sum node (None without residual connections)
    stream_out: str


class _Builder(Backend[str]):
    """Adds nodes in topological order, computing each degree as it goes; values are node names."""

    def __init__(self, spec: ModelSpec) -> None:
        self.spec = spec
        self.g = nx.DiGraph(name=spec.name, streams=[], sublayers=[])
        for name in spec.tensors():
            self.node(name, "param")
        self.stream_in = ""
        self.branch_out: dict[str, str] = {}
        self.total: str | None = None

    def node(self, name: str, op: str, inputs: tuple[str, ...] = (), **attrs) -> str:
        degree = _degree(op, [self.g.nodes[i]["degree"] for i in inputs])
        self.g.add_node(name, op=op, degree=degree, **attrs)
        for position, source in enumerate(inputs):
            self.g.add_edge(source, name, position=position)
        if op == "sum":
            lower = [i for i in inputs if self.g.nodes[i]["degree"] < degree]
            self.g.nodes[name]["dropped"] = lower
        if op == "softmax":
            self.g.nodes[name]["saturates"] = self.g.nodes[inputs[0]]["degree"] > 0
        return name

    def linear(self, name: str, x: str, weight: str, bias: str | None) -> str:
        if bias is None:
            return self.node(name, "product", (x, weight))
        return self.node(name, "sum", (self.node(f"{name}.linear", "product", (x, weight)), bias))

    def norm(self, x: str, ln: LayerNormSpec, prefix: str) -> str:
        """The norm's nodes: normalisation, then scale and shift when affine."""
        op = "layernorm" if ln.centred else "rmsnorm"
        normalized = self.node(f"{prefix}.hook_normalized", op, (x,))
        if not ln.affine:
            return normalized
        scaled = self.node(f"{prefix}.hook_scaled", "product", (normalized, f"{prefix}.w"))
        if ln.b is None:
            return scaled
        return self.node(f"{prefix}.hook_out", "sum", (scaled, f"{prefix}.b"))

    def bias(self, name: str) -> str | None:
        return name if name in self.g and self.g.nodes[name]["op"] == "param" else None

    def embed(self, ids: np.ndarray) -> str:
        """The token embedding plus the positional term, as the first stream."""
        spec = self.spec

        def lookup(const: str, param: str) -> str:
            return self.node("hook_pos_embed", "product", (self.node(const, "const"), param))

        tokens = self.node("hook_tokens", "const")
        terms = [self.node("hook_embed", "product", (tokens, "embed.W_E"))]
        position = position_term(spec.positional, len(ids), spec.d_model,
                                 lambda name, n: lookup("hook_positions", name),
                                 lambda features, name: lookup("hook_position_features", name),
                                 lambda table: self.node("hook_pos_embed", "const"))
        if position is not None:
            terms.append(position)
        stream = self.node(embedding_stream(spec), "sum" if len(terms) > 1 else "identity",
                           tuple(terms))
        self.g.graph["streams"].append(stream)
        return stream

    def attention(self, x: str, branch: Branch) -> str:
        """Queries, keys, values, scores, pattern and output of an attention sublayer."""
        p = branch.name
        q = self.linear(f"{p}.hook_q", x, f"{p}.W_Q", self.bias(f"{p}.b_Q"))
        k = self.linear(f"{p}.hook_k", x, f"{p}.W_K", self.bias(f"{p}.b_K"))
        v = self.linear(f"{p}.hook_v", x, f"{p}.W_V", self.bias(f"{p}.b_V"))
        scores = self.node(f"{p}.hook_attn_scores", "product", (q, k))
        pattern = self.node(f"{p}.hook_pattern", "softmax", (scores,))
        z = self.node(f"{p}.hook_z", "product", (pattern, v))
        self.branch_out[branch.kind] = self.linear(branch.out_name, z, f"{p}.W_O",
                                                   self.bias(f"{p}.b_O"))
        return self.branch_out[branch.kind]

    def feed_forward(self, x: str, branch: Branch) -> str:
        """Pre-activation, ReLU and output of a feed-forward sublayer."""
        p = branch.name
        pre = self.linear(f"{p}.hook_pre", x, f"{p}.W_in", self.bias(f"{p}.b_in"))
        post = self.node(f"{p}.hook_post", branch.module.activation, (pre,))
        self.branch_out[branch.kind] = self.linear(branch.out_name, post, f"{p}.W_out",
                                                   self.bias(f"{p}.b_out"))
        return self.branch_out[branch.kind]

    def enter(self, x: str, step: Step) -> str:
        """Remember the stream the step reads."""
        self.stream_in, self.total = x, None
        return x

    def add(self, terms: list[str], step: Step) -> str:
        """The residual sum node (``<norm>.hook_in`` when a norm follows it)."""
        name = step.out_name if step.norm_out is None else f"{step.norm_name}.hook_in"
        total = self.node(name, "sum", tuple(terms))
        self.total = total if step.keep else None  # a sum of parallel branches only: no residual
        return total

    def leave(self, x: str, step: Step) -> str:
        """Name the step's output stream and record where the step sits."""
        if x != step.out_name:
            x = self.node(step.out_name, "identity", (x,))
        for branch in step.branches:
            self.g.graph["sublayers"].append(Sublayer(
                step.layer, branch.kind, self.stream_in, self.branch_out[branch.kind],
                self.total, step.out_name))
        self.g.graph["streams"].append(x)
        return x

    def unembed(self, x: str, output: OutputSpec) -> str:
        """The logits node."""
        return self.linear("hook_logits", x, "unembed.W_U", self.bias("unembed.b_U"))

    def build(self) -> nx.DiGraph:
        """The whole graph."""
        # One token: the graph's nodes depend on neither the tokens nor their number.
        run(self.spec, self, np.zeros(1, dtype=np.int64))
        return self.g


def network_graph(spec: ModelSpec) -> nx.DiGraph:
    """Return the network graph of ``spec``; every node has ``op`` and ``degree``."""
    return _Builder(spec).build()


def degrees(spec: ModelSpec) -> dict[str, int]:
    """Return the degree of homogeneity of every node of ``spec``'s network graph."""
    return dict(network_graph(spec).nodes(data="degree"))


def dropped_terms(graph: nx.DiGraph) -> list[tuple[str, str]]:
    """Return (sum node, term) for every term whose degree is below its sum's."""
    return [(node, term) for node, data in graph.nodes(data=True)
            for term in data.get("dropped", ())]


def growth_exponent(graph: nx.DiGraph) -> int:
    """Return the largest power of c in the soft model at cθ: activations, scores, variances."""
    exponent = max(degree for _, degree in graph.nodes(data="degree"))
    for node, op in graph.nodes(data="op"):
        if op in ("layernorm", "rmsnorm"):
            [source] = graph.predecessors(node)
            exponent = max(exponent, 2 * graph.nodes[source]["degree"])
    return exponent
