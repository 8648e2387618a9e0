"""The transformer's structure, stated once: a walk over steps that backends execute.

A model is its embedding (token rows plus a positional term, ``Backend.embed``), then a list
of residual steps, then an optional final norm and the unembedding: :func:`run` starts at token
ids. Each step reads the stream ``x`` and writes

    y = Σ branch(norm_in(x))        its sublayers (one, or attention and feed-forward side by
                                    side in a parallel block), each with its norm when "pre"
    y = x + y                       when the step keeps the residual
    y = norm_out(y)                 when the placement is "post"

:func:`steps` derives that list from a spec (the norm placement, the residual rule and the
parallel arrangement live there and nowhere else) and :func:`run` walks it over a
:class:`Backend`, which supplies the operations on its own kind of value: NumPy arrays (the
reference), padded batches through the compiled kernels (the engine), torch tensors (the soft
twin), power series in c (the exact limit) or graph nodes (the degree graph). The fused
per-string program is an encoding of the same :func:`steps`. :func:`position_term` is the one
dispatch over positional kinds.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

import numpy as np

from satsim.errors import SatsimError
from satsim.model.positions import position_features, sinusoidal_table
from satsim.model.spec import (
    AttentionSpec,
    FeedForwardSpec,
    LayerNormSpec,
    ModelSpec,
    OutputSpec,
    PositionalSpec,
)

X = TypeVar("X")

EMBEDDING_STREAM = "hook_resid_embed"
"""The name of the stream after the embedding when the model has no blocks."""


@dataclass(frozen=True)
class Branch:
    """A sublayer on a step: attention or feed-forward, with the norm of its input (pre-norm)."""

    layer: int
    kind: str  # "attn" or "mlp"
    module: AttentionSpec | FeedForwardSpec
    norm: LayerNormSpec | None  # applied to the branch's input ("pre" placement)
    norm_name: str  # blocks.{layer}.ln1 / ln2: where its norm's hooks and weights live

    @property
    def name(self) -> str:
        """The module's tensor prefix, ``blocks.{layer}.attn`` or ``blocks.{layer}.mlp``."""
        return f"blocks.{self.layer}.{self.kind}"

    @property
    def out_name(self) -> str:
        """The hook of the branch's output, ``blocks.{layer}.hook_attn_out`` / ``hook_mlp_out``."""
        return f"blocks.{self.layer}.hook_{self.kind}_out"


@dataclass(frozen=True)
class Step:
    """One residual update of the stream: its branches, residual, and norm after the sum."""

    branches: tuple[Branch, ...]  # one sublayer, or attention and feed-forward in parallel
    keep: bool  # the stream is added back (the skip connection)
    norm_out: LayerNormSpec | None  # applied after the sum ("post" placement)
    in_name: str  # the stream this step reads, blocks.{layer}.hook_resid_pre / _mid
    out_name: str  # the stream it writes, blocks.{layer}.hook_resid_mid / _post

    @property
    def layer(self) -> int:
        """The block this step belongs to."""
        return self.branches[0].layer

    @property
    def norm_name(self) -> str:
        """Where the norm after the sum keeps its weights and hooks (its branch's norm)."""
        return self.branches[0].norm_name

    @property
    def starts_block(self) -> bool:
        """Whether this is the first step of its block (it reads ``hook_resid_pre``)."""
        return self.in_name.endswith("hook_resid_pre")


def _branches(spec: ModelSpec, layer: int) -> list[Branch]:
    """The sublayers of block ``layer``, each with its input norm when the placement is "pre"."""
    block = spec.blocks[layer]
    return [Branch(layer, kind, getattr(block, kind),
                   getattr(block, norm_name) if spec.norm == "pre" else None,
                   f"blocks.{layer}.{norm_name}")
            for kind, norm_name in (("attn", "ln1"), ("mlp", "ln2"))
            if getattr(block, kind) is not None]


def steps(spec: ModelSpec) -> tuple[Step, ...]:
    """The residual steps of ``spec`` in order: the norm placement and residual rule, once."""
    found = []
    for layer, block in enumerate(spec.blocks):
        branches = _branches(spec, layer)
        groups = [branches] if spec.parallel and branches else [[b] for b in branches]
        for index, group in enumerate(groups):
            first, last = index == 0, index == len(groups) - 1
            ln = getattr(block, "ln1" if group[0].kind == "attn" else "ln2")
            found.append(Step(
                tuple(group), spec.keeps_residual(layer, group[0].kind),
                ln if spec.norm == "post" else None,
                f"blocks.{layer}.hook_resid_{'pre' if first else 'mid'}",
                f"blocks.{layer}.hook_resid_{'post' if last else 'mid'}"))
    return tuple(found)


def embedding_stream(spec: ModelSpec) -> str:
    """The name of the stream the embedding writes."""
    return "blocks.0.hook_resid_pre" if spec.blocks else EMBEDDING_STREAM


def stream_names(spec: ModelSpec) -> list[str]:
    """The stream after the embedding and after every step, by hook name."""
    return [embedding_stream(spec), *(step.out_name for step in steps(spec))]


def position_term(pos: PositionalSpec, n: int, d_model: int,
                  rows: Callable[[str, int], X],
                  product: Callable[[np.ndarray, str], X],
                  constant: Callable[[np.ndarray], X], model: str = "") -> X | None:
    """The positional term of ``n`` positions in a backend's values, or None without positions.

    ``rows(name, n)`` takes the first n rows of a parameter (learned positions),
    ``product(features, name)`` multiplies constant features by a parameter, and
    ``constant(table)`` lifts a parameter-free table (sinusoids). A learned table shorter than
    n is a SatsimError naming ``model``.
    """
    if pos.kind == "none":
        return None
    if pos.kind == "learned":
        if n > pos.W_pos.shape[0]:
            raise SatsimError(f"a sequence of {n} tokens is longer than the learned positional "
                              f"table ({pos.W_pos.shape[0]} positions) of model {model!r}")
        return rows("pos_embed.W_pos", n)
    if pos.kind == "features":
        return product(position_features(pos.features, n), "pos_embed.W_feat")
    return constant(sinusoidal_table(n, d_model))


class Backend(Generic[X]):
    """The operations a walk of the model needs, on one kind of value.

    Subclasses supply ``embed``, ``norm``, ``attention``, ``feed_forward`` and ``unembed``;
    ``add`` and the stream hooks have defaults.
    """

    def embed(self, ids: Any) -> X:
        """The stream the walk starts from: the token rows of ``ids`` plus their positional term.

        ``ids`` are token ids in the backend's layout (one string's, or a batch's); the
        positional term is :func:`position_term`'s.
        """
        raise NotImplementedError

    def norm(self, x: X, ln: LayerNormSpec, name: str) -> X:
        """Normalise ``x`` with ``ln``; ``name`` is the norm's prefix (``blocks.0.ln1``)."""
        raise NotImplementedError

    def attention(self, x: X, branch: Branch) -> X:
        """The attention sublayer's output for input ``x``."""
        raise NotImplementedError

    def feed_forward(self, x: X, branch: Branch) -> X:
        """The feed-forward sublayer's output for input ``x``."""
        raise NotImplementedError

    def add(self, terms: list[X], step: Step) -> X:
        """The sum of a step's terms (its input when kept, then its branches' outputs), in order."""
        total = terms[0]
        for term in terms[1:]:
            total = total + term
        return total

    def enter(self, x: X, step: Step) -> X:
        """Called with the stream a step reads, before it runs."""
        return x

    def leave(self, x: X, step: Step) -> X:
        """Called with the stream a step wrote."""
        return x

    def unembed(self, x: X, output: OutputSpec) -> X:
        """The logits read from the final stream."""
        raise NotImplementedError


def run_branch(backend: Backend[X], branch: Branch, x: X) -> X:
    """One sublayer on the stream ``x``, through its input norm when it has one."""
    h = x if branch.norm is None else backend.norm(x, branch.norm, branch.norm_name)
    if branch.kind == "attn":
        return backend.attention(h, branch)
    return backend.feed_forward(h, branch)


def run_step(backend: Backend[X], step: Step, x: X) -> X:
    """One residual step through ``backend``."""
    terms = [x] if step.keep else []
    terms += [run_branch(backend, branch, x) for branch in step.branches]
    y = terms[0] if len(terms) == 1 else backend.add(terms, step)
    return y if step.norm_out is None else backend.norm(y, step.norm_out, step.norm_name)


def run_blocks(spec: ModelSpec, backend: Backend[X], x: X,
               walk: Sequence[Step] | None = None) -> X:
    """Every step of ``spec`` (or the given ``walk`` of steps) on ``x``, then the final norm."""
    for step in steps(spec) if walk is None else walk:
        x = backend.leave(run_step(backend, step, backend.enter(x, step)), step)
    if spec.ln_final is not None:
        x = backend.norm(x, spec.ln_final, "ln_final")
    return x


def run(spec: ModelSpec, backend: Backend[X], ids: Any) -> X:
    """The logits of token ids: the embedding, every step, the final norm, the unembedding."""
    return backend.unembed(run_blocks(spec, backend, backend.embed(ids)), spec.output)


def counting_heads(attn: AttentionSpec) -> np.ndarray:
    """Heads whose scores are constant for every query by construction, from the weights, (H,).

    A zero key map makes every key the row b_K; a zero query map and bias make every query zero;
    a zero score scale makes every score zero. Either way every allowed key ties, and the head is
    a (prefix) mean of its values.
    """
    constant_keys = ~attn.W_K.reshape(attn.W_K.shape[0], -1).any(axis=1)
    zero_queries = ~attn.W_Q.reshape(attn.W_Q.shape[0], -1).any(axis=1)
    if attn.b_Q is not None:
        zero_queries &= ~attn.b_Q.reshape(attn.b_Q.shape[0], -1).any(axis=1)
    return constant_keys | zero_queries | (attn.score_scale == 0)
