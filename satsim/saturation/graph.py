"""The network graph of a spec, each node carrying its degree of homogeneity.

Degrees follow Li and Arora's rules (seed 001, Table 1): a parameter has degree 1 and a fixed
input degree 0; a product (a matmul, an embedding lookup, attention weights times values, q·k)
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

from satsim.spec import LayerNormSpec, ModelSpec

OPS = ("param", "const", "product", "sum", "layernorm", "relu", "softmax", "identity")


def _degree(op: str, inputs: list[int]) -> int:
    """Degree of a node from its op and its inputs' degrees (Table 1 of seed 001)."""
    if op == "param":
        return 1
    if op in ("const", "layernorm", "softmax"):
        return 0
    if op == "product":
        return sum(inputs)
    return max(inputs)  # sum, relu, identity


@dataclass(frozen=True)
class Sublayer:
    """Where a sublayer sits in the graph: its residual sum and the two terms it adds."""

    layer: int
    kind: str  # "attn" or "mlp"
    stream_in: str
    branch: str
    total: str | None  # the residual sum node (None without residual connections)
    stream_out: str


class _Builder:
    """Adds nodes in topological order, computing each degree as it goes."""

    def __init__(self, spec: ModelSpec) -> None:
        self.spec = spec
        self.g = nx.DiGraph(name=spec.name, streams=[], sublayers=[])
        for name in spec.tensors():
            self.add(name, "param")

    def add(self, name: str, op: str, inputs: tuple[str, ...] = (), **attrs) -> str:
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
            return self.add(name, "product", (x, weight))
        return self.add(name, "sum", (self.add(f"{name}.linear", "product", (x, weight)), bias))

    def norm(self, prefix: str, ln: LayerNormSpec, x: str) -> str:
        normalized = self.add(f"{prefix}.hook_normalized", "layernorm", (x,))
        if not ln.affine:
            return normalized
        scaled = self.add(f"{prefix}.hook_scaled", "product", (normalized, f"{prefix}.w"))
        return self.add(f"{prefix}.hook_out", "sum", (scaled, f"{prefix}.b"))

    def bias(self, name: str) -> str | None:
        return name if name in self.g and self.g.nodes[name]["op"] == "param" else None

    def embedding(self) -> str:
        pos = self.spec.positional
        terms = [self.add("hook_embed", "product", (self.add("hook_tokens", "const"), "embed.W_E"))]
        if pos.kind == "learned":
            positions = self.add("hook_positions", "const")
            terms.append(self.add("hook_pos_embed", "product", (positions, "pos_embed.W_pos")))
        elif pos.kind == "features":
            features = self.add("hook_position_features", "const")
            terms.append(self.add("hook_pos_embed", "product", (features, "pos_embed.W_feat")))
        elif pos.kind == "sinusoidal":
            terms.append(self.add("hook_pos_embed", "const"))
        name = "blocks.0.hook_resid_pre" if self.spec.blocks else "hook_resid_embed"
        return self.add(name, "sum" if len(terms) > 1 else "identity", tuple(terms))

    def attention(self, layer: int, x: str) -> str:
        p = f"blocks.{layer}.attn"
        q = self.linear(f"{p}.hook_q", x, f"{p}.W_Q", self.bias(f"{p}.b_Q"))
        k = self.linear(f"{p}.hook_k", x, f"{p}.W_K", self.bias(f"{p}.b_K"))
        v = self.linear(f"{p}.hook_v", x, f"{p}.W_V", self.bias(f"{p}.b_V"))
        scores = self.add(f"{p}.hook_attn_scores", "product", (q, k))
        pattern = self.add(f"{p}.hook_pattern", "softmax", (scores,))
        z = self.add(f"{p}.hook_z", "product", (pattern, v))
        return self.linear(f"blocks.{layer}.hook_attn_out", z, f"{p}.W_O", self.bias(f"{p}.b_O"))

    def feed_forward(self, layer: int, x: str) -> str:
        p = f"blocks.{layer}.mlp"
        pre = self.linear(f"{p}.hook_pre", x, f"{p}.W_in", self.bias(f"{p}.b_in"))
        post = self.add(f"{p}.hook_post", "relu", (pre,))
        return self.linear(f"blocks.{layer}.hook_mlp_out", post, f"{p}.W_out",
                           self.bias(f"{p}.b_out"))

    def sublayer(self, layer: int, kind: str, x: str, out: str) -> str:
        block = self.spec.blocks[layer]
        ln_name = "ln1" if kind == "attn" else "ln2"
        prefix, ln = f"blocks.{layer}.{ln_name}", getattr(block, ln_name)
        fn = self.attention if kind == "attn" else self.feed_forward
        residual, norm = self.spec.keeps_residual(layer, kind), self.spec.norm
        branch = fn(layer, self.norm(prefix, ln, x) if norm == "pre" else x)
        total = None
        if residual:
            name = f"{prefix}.hook_in" if norm == "post" else out
            total = self.add(name, "sum", (x, branch))
        value = total or branch
        if norm == "post":
            value = self.norm(prefix, ln, value)
        if value != out:
            value = self.add(out, "identity", (value,))
        self.g.graph["sublayers"].append(Sublayer(layer, kind, x, branch, total, out))
        return value

    def build(self) -> nx.DiGraph:
        stream = self.embedding()
        self.g.graph["streams"].append(stream)
        for layer, block in enumerate(self.spec.blocks):
            if block.attn is not None:
                out = f"blocks.{layer}.hook_resid_{'mid' if block.mlp else 'post'}"
                stream = self.sublayer(layer, "attn", stream, out)
                self.g.graph["streams"].append(stream)
            if block.mlp is not None:
                stream = self.sublayer(layer, "mlp", stream, f"blocks.{layer}.hook_resid_post")
                self.g.graph["streams"].append(stream)
        if self.spec.ln_final is not None:
            stream = self.norm("ln_final", self.spec.ln_final, stream)
        self.linear("hook_logits", stream, "unembed.W_U", self.bias("unembed.b_U"))
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
        if op == "layernorm":
            [source] = graph.predecessors(node)
            exponent = max(exponent, 2 * graph.nodes[source]["degree"])
    return exponent
