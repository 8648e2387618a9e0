"""Homogeneous lifting: a construction without residual stream or biases is its own c → ∞ limit.

Under uniform scaling θ → cθ each term of a network without LayerNorm has a degree of
homogeneity (Merrill et al. 2021, Table 1; :func:`satsim.saturation.degrees`): the embedding 1, a
sublayer's output its input's degree + 2, a bias 1. In a residual sum x + f(x) the stream x has
the lower degree, so it vanishes from lim f(x; cθ), and so does every bias. A construction written
for a residual stream therefore converges, as c grows, to its leading-order network, not to itself.

A homogeneous construction has no biases (a threshold is a weight on the constant dimension
``one``) and no residual connections: every sublayer re-writes each dimension that is read
later and already holds a value, so a whole stream shares one degree, nothing is dropped
(:func:`satsim.saturation.leading_order` reports no term) and the soft twin at cθ decides as the
saturated construction. The lifted sublayers compute x + f(x) on every dimension still needed:

- a feed-forward carries x with the neurons relu(x) - relu(-x), or relu(x) alone when x is
  never negative (a sign analysis of embedding, features and writes);
- an attention layer carries ``one`` through one of its own heads (a mean of ones is one), and
  any other dimension through a *self head*: constant query ``one`` against keys ``pos`` = i,
  the 1-based position, so the query's own position is the unique maximum of its causal prefix
  and the head copies that position's values. Its keys differ by 1, which the float32 relative
  tie tolerance (1e-5) separates only below i ≈ 10^5: constructions with self heads are built
  in float64 (tolerance 1e-9, exact to i ≈ 10^9).

What a sublayer carries comes from a backward liveness pass: exactly the dimensions that a later
sublayer or the readout reads and that hold a value at that point. Self heads come last in their
layer and carry neurons last in theirs, so the construction's own heads keep their indices.
"""

from __future__ import annotations

from dataclasses import replace

from satsim.circuits.parts import Head, Layer, Neuron, dim, head_reads, neuron_reads

ONE = "one"
POS = "pos"
SIGNED_FEATURES = ("(-1)^i",)


def _signed_writes(kind: str, part: tuple, signed: set[str]) -> tuple[set[str], set[str]]:
    """The dims a sublayer writes, and those of them it may make negative."""
    written, negative = set(), set()
    if kind == "attn":
        for head in part:
            for source, target in head.value.items():
                written.add(target)
                if source in signed or head.value_scale < 0:
                    negative.add(target)
    else:
        for neuron in part:
            for target, weight in neuron.writes.items():
                written.add(dim(target))
                if weight < 0:
                    negative.add(dim(target))
    return written, negative


def _carry_attention(heads: tuple[Head, ...], carried: list[str]) -> tuple[Head, ...]:
    """The heads plus what carries ``carried``: ``one`` through an own head, else a self head."""
    if carried == [ONE]:
        for index, head in enumerate(heads):
            if head.value_scale == 1 and ONE not in head.value and ONE not in head.value.values():
                lifted = replace(head, value={**head.value, ONE: ONE})
                return (*heads[:index], lifted, *heads[index + 1:])
    if not carried:
        return heads
    return (*heads, Head(query={ONE: 1}, key={POS: 1}, value={d: d for d in carried},
                         mask="causal"))


def _carry_neurons(carried: list[str], signed: frozenset[str]) -> tuple[Neuron, ...]:
    """Neurons that copy each carried dim: relu(x) - relu(-x), or relu(x) when x ≥ 0."""
    neurons = [Neuron({d: 1}, {d: 1}) for d in carried]
    neurons += [Neuron({d: -1}, {d: -1}) for d in carried if d in signed]
    return tuple(neurons)


def lift(layers: list[Layer], readout: dict[str, dict], order: tuple[str, ...],
         defined: set[str], signed: set[str]) -> tuple[list[Layer], bool]:
    """Return the lifted layers and whether they read ``pos`` (which the embedding must hold).

    ``order`` is the dims' order (for a deterministic spec); ``defined`` the dims the embedding
    writes and ``signed`` those of them that may be negative.
    """
    order = (*order, POS) if POS not in order else order
    subs = [(i, kind) for i, layer in enumerate(layers)
            for kind, part in (("attn", layer.heads), ("mlp", layer.neurons)) if part]
    defined, signed = {*defined, POS}, set(signed)
    before = []
    for i, kind in subs:  # forward: which dims hold a value (and which may be negative)
        before.append((frozenset(defined), frozenset(signed)))
        part = layers[i].heads if kind == "attn" else layers[i].neurons
        written, negative = _signed_writes(kind, part, signed)
        defined |= written
        signed |= negative
    heads = [layer.heads for layer in layers]
    neurons = [layer.neurons for layer in layers]
    live = {dim(k) for form in readout.values() for k in form}
    for (i, kind), (held, may_be_negative) in zip(reversed(subs), reversed(before)):
        carried = [d for d in order if d in live and d in held]
        if kind == "attn":
            heads[i] = _carry_attention(heads[i], carried)
            live = head_reads(heads[i])
        else:
            neurons[i] = neurons[i] + _carry_neurons(carried, may_be_negative)
            live = neuron_reads(neurons[i])
    return [Layer(h, n) for h, n in zip(heads, neurons)], POS in live
