"""A saturated transformer for Reset-Dyck-1: a counter that "1" resets, never below 0, ends at 0.

The string is BOS·w over ``(``, ``)``, ``1``. BOS counts as a reset. A segment starts at a reset
and runs to the next one. The string is a member iff within every segment the depth (opens minus
closes since the segment's reset) stays ≥ 0, and the last segment ends at depth 0. This needs
positional information: features of the 1-based position i and the length n.

Layer 0, a feed-forward only: ``reset_key`` = relu(i/n + is_reset - 1), which is i/n at resets
and 0 elsewhere.

Layer 1 has two heads.
- A counting head (zero query) writes ``inv_len`` = 1/(i+1).
- A "last reset" head: a constant query against keys ``reset_key`` picks the latest reset at or
  before the query (distinct resets differ by at least 1/n). It copies that reset's raw position
  i into ``last_reset``.

Layer 2, a "segment" head. Keys ``last_reset`` are non-decreasing along the string. Their
maximum over a causal prefix is reached exactly at the positions of the current segment, where
the copied values are bitwise equal. So the tie set is the current segment, and averaging over it
gives ``seg_depth`` = D/len and ``seg_inv`` = 1/len. Here D is the depth since the last reset and
len the segment's length so far: the reset itself carries sign 0 and reset indicator 1.

Layer 3, an argmin head over keys -``seg_depth``. It copies the smallest segment depth seen so far
into ``min_depth``; that value is negative iff some segment dipped below 0, and then at most
-1/(i+1). The feed-forward writes ``negative`` = relu(-min_depth) and ``open_depth`` =
|seg_depth|.

Recognition: logit = inv_len/2 - negative - open_depth.

Next symbols of a prefix that never dipped: "(" and "1" always; ")" iff D ≥ 1, read from
seg_depth - seg_inv/2, taking the minimum with validity in a last feed-forward layer; EOS iff the
prefix is a member.

Raw positions make the keys of layers 1 and 2 differ by 1/n and by 1 respectively, which the
float32 relative tolerance (1e-5) cannot separate at n ≈ 10^5. The construction is therefore
built in float64 (tolerance 1e-9), which keeps it exact up to lengths of about 10^8.

Homogeneous form (:mod:`satsim.circuits.lifting`), so that the soft twin at uniform scale
cθ converges to this very network: the threshold of ``reset_key`` is a weight -1 on ``one``, and
there is no residual stream. Layer 0's feed-forward copies ``one``, ``bos``, ``sign``,
``is_reset`` and ``pos`` with relu neurons (relu(x) - relu(-x) for ``sign``); layers 1–3 each get
a last "self" head (query ``one``, keys ``pos`` = i, so each position attends to itself) that
carries what later layers read at the query's own position (``sign``, ``is_reset`` and ``pos``
for the segment head's values and the next self head; ``inv_len``; ``seg_depth`` and
``seg_inv``); the later feed-forwards copy what the next layer and the readout read.
"""

from __future__ import annotations

import numpy as np

from satsim.circuits.builder import BOS, Builder, Head, Neuron
from satsim.model.spec import ModelSpec

DIMS = ("one", "bos", "is_reset", "sign", "pos", "pos_frac", "reset_key", "inv_len",
        "last_reset", "seg_depth", "seg_inv", "min_depth", "negative", "open_depth", "close_ok")


def build_reset_dyck1(task: str = "recognition", dtype: type = np.float64) -> ModelSpec:
    """Return the Reset-Dyck-1 recogniser or next-symbol predictor."""
    b = Builder("reset-dyck1", ("(", ")", "1"), DIMS, dtype=dtype,
                description="reset-dyck1: last-reset, segment-count and argmin heads")
    b.embed({BOS: {"one": 1, "bos": 1, "is_reset": 1},
             "(": {"one": 1, "sign": 1}, ")": {"one": 1, "sign": -1},
             "1": {"one": 1, "is_reset": 1}})
    b.position_features({"i": {"pos": 1}, "i/n": {"pos_frac": 1}})
    b.layer(neurons=[Neuron({"pos_frac": 1, "is_reset": 1, "one": -1}, {"reset_key": 1})])
    counting = Head(query={}, key={}, value={"bos": "inv_len"})
    last_reset = Head(query={"one": 1}, key={"reset_key": 1}, value={"pos": "last_reset"})
    b.layer(heads=[counting, last_reset])
    segment = Head(query={"one": 1}, key={"last_reset": 1},
                   value={"sign": "seg_depth", "is_reset": "seg_inv"})
    b.layer(heads=[segment])
    argmin = Head(query={"one": 1}, key={"seg_depth": -1}, value={"seg_depth": "min_depth"})
    checks = [Neuron({"min_depth": -1}, {"negative": 1}),
              Neuron({"seg_depth": 1}, {"open_depth": 1}),
              Neuron({"seg_depth": -1}, {"open_depth": 1})]
    b.layer(heads=[argmin], neurons=checks)
    member = {"inv_len": 0.5, "negative": -1, "open_depth": -1}
    if task == "recognition":
        return b.build(readout={"accept": member})
    valid = {"inv_len": 0.5, "negative": -1}
    x = {"seg_depth": 1, "seg_inv": -0.5}  # D ≥ 1
    x_minus_valid = {"seg_depth": 1, "seg_inv": -0.5, "inv_len": -0.5, "negative": 1}
    b.layer(neurons=[Neuron(x_minus_valid, {"close_ok": -1})])  # min(x, valid)
    readout = {"(": valid, ")": {**x, "close_ok": 1}, "1": valid, "<eos>": member}
    return b.build(readout=readout, task="next-symbol")
