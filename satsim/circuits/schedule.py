"""A compiled program's circuit: named residual dimensions, each written once by one sublayer.

Each dimension is written at the earliest sublayer its inputs allow; :meth:`Circuit.build`
turns the circuit into a :class:`ModelSpec`.

The model is BOS·w with BOS at position 1 (feature ``i``) and a residual stream without norms.
Sublayers are numbered in order: the embedding is slot 0, block b's attention slot 2b + 1 and
its feed-forward slot 2b + 2. A head or a group of neurons goes to the first slot of its kind
after every dimension it reads is written, and its outputs are ready from there on; heads that
meet in one block with the same query, key and mask become one head with more value columns.
Every dimension starts at 0 and is written by exactly one sublayer, so the residual sum only
ever adds a value to a zero: the stream holds each value exactly as it was computed.
:meth:`Circuit.blocks` is the compiler's schedule stage, :meth:`Circuit.build` its spec stage
(:mod:`satsim.rasp.stages`).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from satsim.circuits.builder import BOS, Builder, columns_read
from satsim.circuits.parts import ONE, Head, Layer, Neuron, dim
from satsim.engine.resources import check_memory
from satsim.model.spec import ModelSpec

MODEL_COPIES = 3
"""Copies of a compiled model's float64 weights held at once: the arrays as built, the model,
and the simulator's working copy (what :meth:`Circuit.build` checks against free memory)."""
BOS_DIM = "bos"
"""The residual dimension that is 1 at BOS and 0 elsewhere."""


class Circuit:
    """Residual dimensions and the sublayers that write them, scheduled into blocks."""

    def __init__(self, symbols: tuple[str, ...]) -> None:
        self.symbols = symbols
        self.ready: dict[str, int] = {ONE: 0, BOS_DIM: 0}  # dim -> the slot that writes it
        self.rows: dict[str, dict[str, float]] = {BOS: {ONE: 1.0, BOS_DIM: 1.0}}
        for symbol in symbols:
            self.rows[symbol] = {ONE: 1.0}
        self.features: dict[str, dict[str, float]] = {}
        self.heads: dict[int, list[Head]] = {}
        self.neurons: dict[int, list[Neuron]] = {}
        self.taken: set[str] = set(self.ready)
        self.context = ""  # the program's definition being compiled, which names new dims
        self.columns = 0  # weight columns per dimension placed so far (see :meth:`grown`)
        self.next_check = 1 << 20

    def fresh(self, hint: str) -> str:
        """A new dimension name ``definition:hint``, never given out before."""
        hint = f"{self.context}:{hint}" if self.context else hint
        name, suffix = hint, 1
        while name in self.taken:
            suffix += 1
            name = f"{hint}_{suffix}"
        self.taken.add(name)
        return name

    def token_dim(self, hint: str, value: Callable[[str | None], float]) -> str:
        """An embedding dimension: ``value(symbol)`` at each symbol, ``value(None)`` at BOS."""
        name = self.fresh(hint)
        self.ready[name] = 0
        for token in self.rows:
            entry = value(None if token == BOS else token)
            if entry:
                self.rows[token][name] = float(entry)
        return name

    def feature_dim(self, feature: str) -> str:
        """A dimension holding a position feature (:mod:`satsim.model.positions`)."""
        if feature not in self.features:
            name = self.fresh(f"position_{feature}")
            self.ready[name] = 0
            self.features[feature] = {name: 1.0}
        return next(iter(self.features[feature]))

    def attention(self, head: Head) -> dict[str, str]:
        """Place ``head``; return where each of its values is copied (source → dimension).

        The head's value targets are new names; where a head of the same block with the same
        query, key and mask already copies a source, that source's dimension is returned.
        """
        reads = {dim(k) for k in (*head.query, *head.key)} | set(head.value)
        slot = _first_slot(max((self.ready[d] for d in reads), default=0), odd=True)
        heads = self.heads.setdefault(slot, [])
        for index, other in enumerate(heads):
            if (other.query, other.key, other.mask) == (head.query, head.key, head.mask):
                value = {**head.value, **other.value}  # a source copied already keeps its dim
                heads[index] = Head(other.query, other.key, value, mask=other.mask)
                self.grown(2 * (len(value) - len(other.value)))
                break
        else:
            heads.append(head)
            value = head.value
            self.grown(2 * (max(columns_read(head.query), columns_read(head.key)) + len(value)))
        copies = {source: value[source] for source in head.value}
        for name in copies.values():
            self.ready.setdefault(name, slot)
        return copies

    def feed_forward(self, neurons: list[Neuron], outputs: list[str]) -> int:
        """Place a group of ``neurons`` writing the new dimensions ``outputs``; return its slot."""
        reads = {dim(k) for neuron in neurons for k in neuron.reads}
        slot = _first_slot(max((self.ready[d] for d in reads), default=0), odd=False)
        self.neurons.setdefault(slot, []).extend(neurons)
        for name in outputs:
            self.ready[name] = slot
        self.grown(2 * len(neurons))
        return slot

    def grown(self, columns: int) -> None:
        """Count ``columns`` more weights per dimension; refuse once the model cannot fit.

        The model at its width so far is a lower bound on its final size.
        """
        self.columns += columns
        weights = len(self.ready) * self.columns
        if weights >= self.next_check:
            self.next_check = 2 * weights
            _check_size(weights, len(self.ready), "so far")

    def blocks(self) -> list[Layer]:
        """The sublayers grouped into blocks: block b is slots 2b + 1 (heads) and 2b + 2."""
        return [Layer(tuple(self.heads.get(2 * block + 1, [])),
                      tuple(self.neurons.get(2 * block + 2, [])))
                for block in sorted({(slot - 1) // 2 for slot in (*self.heads, *self.neurons)})]

    def build(self, name: str, blocks: list[Layer], readout: dict[str, float],
              description: str = "") -> ModelSpec:
        """The model: embedding, features, the blocks, the readout's linear form."""
        dims = tuple(self.ready)
        builder = Builder(name, self.symbols, dims, dtype=np.float64, description=description,
                          homogeneous=False, score_scale=1.0)
        builder.embed(self.rows)
        builder.position_features(self.features)
        for block in blocks:
            builder.layer(heads=block.heads, neurons=block.neurons)
        _check_size(builder.weight_count(), len(dims), f"in {len(builder.layers):,} layers")
        return builder.build(readout={"accept": readout})


def _check_size(weights: int, width: int, where: str) -> None:
    """Refuse, in one line, a compiled model whose weights would not fit in free memory."""
    check_memory(MODEL_COPIES * 8 * weights, f"the compiled model ({width:,} dimensions, "
                 f"{weights:,} weights {where})", "compile a smaller program (fewer "
                 "definitions; for a dyck-K-M language, a smaller depth M or fewer bracket types "
                 "K)")



def _first_slot(after: int, odd: bool) -> int:
    """The first slot of a kind (attention: odd, feed-forward: even ≥ 2) after slot ``after``."""
    slot = after + 1
    if (slot % 2 == 1) != odd:
        slot += 1
    return max(slot, 1 if odd else 2)
