"""Saturated transformers for Dyck-1 and the true shuffle of k Dyck-1 languages, at every length.

A string is in the shuffle of k Dyck-1 languages (bracket pairs ``()``, ``[]``, ``{}``, ...; Dyck-1
is k = 1) iff for every type t its depth d_t (opens minus closes of that type in the prefix)
never drops below 0 and ends at 0; brackets of different types may cross, as in ``([)]``. The
input is BOS·w; position i holds the i-th symbol (BOS is position 0).

Layer 1, one head (global, counting): zero queries make every score 0, so every position of the
causal prefix ties and the head averages the prefix. Its values are each type's sign (+1 open,
-1 close, 0 otherwise) and a BOS indicator, so at position i it writes ``depth_t`` = d_t/(i+1)
and ``inv_len`` = 1/(i+1). Counting with a uniform causal head is the idea of the counter
constructions of Bhattamishra, Ahuja and Goyal (2020).

Layer 2, one head per type (local, argmin): a constant query against keys -K·depth_t makes the
tie set the prefix positions of smallest normalised depth; the head copies that minimum to
``min_t``. It is below 0 iff some prefix dipped below 0, and then by at least 1/(i+1). The
feed-forward writes ``negative`` = Σ_t relu(-min_t) and ``imbalance`` = Σ_t |depth_t|.

Recognition reads the last position: logit = inv_len/2 - negative - imbalance. For a member both
sums are exactly 0 and the logit is 1/(2(n+1)) > 0; otherwise one of them is at least about
1/(n+1) and the logit is negative.

Next-symbol prediction reads every position (prefix s[:i] at position i): an open bracket may
follow iff the prefix never dipped (``inv_len/2 - negative > 0``); a close of type t iff moreover
d_t ≥ 1, i.e. depth_t - inv_len/2 > 0 — a third, feed-forward-only layer takes the minimum of
the two conditions as x - relu(x - y); EOS iff the prefix is itself a member.

The scale K keeps every position of non-negative depth out of layer 2's tie set when some prefix
is negative: with float32 tolerances (1e-5) the construction is exact up to lengths of about
10^8, far beyond what is tested (10^5).

Homogeneous form (:mod:`satsim.circuits.lifting`; float64), so that the soft twin at
uniform scale cθ converges to this very network: no residual stream. Layer 2 gets a last "self"
head (query ``one``, keys ``pos`` = i, so each position attends to itself) that carries
``depth_t`` and ``inv_len`` past the argmin heads; layer 1 gets one that carries ``pos`` to it;
the feed-forwards end with neurons relu(x) - relu(-x) that copy what the next layer and the
readout read. The Dyck-1 recogniser is the exception: it is the benchmark model, kept as written
above (float32, residual stream, two heads). Its leading-order network drops the embedding, yet
its soft twin at c = 1000 still decides as the simulator (docs/saturation.md);
``build("dyck1", homogeneous=True)`` gives its lifted form.
"""

from __future__ import annotations

import numpy as np

from satsim.circuits.builder import BOS, Builder, Head, Neuron
from satsim.model.spec import ModelSpec

ARGMIN_SCALE = 1e4
PAIRS = ("()", "[]", "{}", "<>")


def build_shuffle_dyck(
    k: int, name: str, task: str = "recognition", dtype: type | None = None,
    homogeneous: bool | None = None,
) -> ModelSpec:
    """Return the recogniser or next-symbol predictor for the shuffle of ``k`` Dyck-1 languages.

    ``homogeneous`` defaults to True except for the Dyck-1 recogniser (the benchmark model), and
    ``dtype`` to float64 for a homogeneous model, float32 otherwise.
    """
    if homogeneous is None:
        homogeneous = not (k == 1 and task == "recognition")
    dtype = dtype or (np.float64 if homogeneous else np.float32)
    pairs = PAIRS[:k]
    types = range(k)
    dims = ("one", "bos", "inv_len", "negative", "imbalance",
            *(f"{kind}{t}" for t in types for kind in ("sign", "depth", "min")),
            *(f"close_ok{t}" for t in types))
    b = Builder(name, tuple("".join(pairs)), dims, dtype=dtype, homogeneous=homogeneous,
                description=f"{name}: a counting head, one argmin head per bracket type")
    rows = {BOS: {"one": 1, "bos": 1}}
    for t, (opening, closing) in enumerate(pairs):
        rows[opening] = {"one": 1, f"sign{t}": 1}
        rows[closing] = {"one": 1, f"sign{t}": -1}
    b.embed(rows)
    counting = Head(query={}, key={},
                    value={"bos": "inv_len", **{f"sign{t}": f"depth{t}" for t in types}})
    b.layer(heads=[counting])
    argmins = [Head(query={"one": 1}, key={f"depth{t}": -ARGMIN_SCALE},
                    value={f"depth{t}": f"min{t}"}) for t in types]
    checks = [Neuron({f"min{t}": -1}, {"negative": 1}) for t in types]
    checks += [Neuron({f"depth{t}": sign}, {"imbalance": 1}) for t in types for sign in (1, -1)]
    b.layer(heads=argmins, neurons=checks)
    member = {"inv_len": 0.5, "negative": -1, "imbalance": -1}
    if task == "recognition":
        return b.build(readout={"accept": member})
    valid = {"inv_len": 0.5, "negative": -1}  # y > 0 iff the prefix never dipped
    minimums = []
    for t in types:  # close_ok_t = x - relu(x - y) = min(x, y) with x = depth_t - inv_len/2
        x_minus_y = {f"depth{t}": 1, "inv_len": -1, "negative": 1}
        minimums.append(Neuron(x_minus_y, {f"close_ok{t}": -1}))
    b.layer(neurons=minimums)
    readout = {}
    for t, (opening, closing) in enumerate(pairs):
        readout[opening] = valid
        readout[closing] = {f"depth{t}": 1, "inv_len": -0.5, f"close_ok{t}": 1}
    readout["<eos>"] = member
    return b.build(readout=readout, task="next-symbol")
