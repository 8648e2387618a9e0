"""One-layer saturated transformers: ``majority`` (counting) and ``first`` (positional).

majority: strings over {a, b} with strictly more a than b. A counting head (zero query, so
every prefix position ties) writes count_a - count_b = (k_a - k_b)/(i+1) and inv_len = 1/(i+1).
A member has k_a - k_b ≥ 1, so the logit (count_a - count_b) - inv_len/2 is positive exactly
for members. Every prefix can still become a member (append a's), so a and b may always follow,
and EOS iff the prefix is a member. Majority is the counting language of Hahn (2020) and Merrill
et al.'s saturated-attention analyses.

first: strings over {0, 1} whose first symbol is 1 (Chiang and Cholak, 2022). Positional
information is needed. Keys K·(1/i) - 2K·[BOS], with i the 1-based position, make the first
symbol's position the unique maximum for every query after it. The head copies [symbol = 1] and
[symbol = 0] of that position. A query at BOS (the empty prefix) can only see BOS and gets 0 for
both. Accept iff first_is_one = 1. Next symbols: 1 always, unless the first symbol was 0; 0 and
EOS iff the first symbol was 1.

Both are homogeneous (:mod:`satsim.circuits.lifting`): no residual stream and no biases, so
the soft twin at uniform scale cθ converges to the network itself. The readouts that need the
constant ``one`` get it from the single head, which also averages ``one`` (a mean of ones is 1).
"""

from __future__ import annotations

import numpy as np

from satsim.circuits.builder import BOS, Builder, Head
from satsim.model.spec import ModelSpec

POSITION_SCALE = 100.0


def build_majority(task: str = "recognition", dtype: type = np.float32) -> ModelSpec:
    """Return the majority recogniser or next-symbol predictor."""
    b = Builder("majority", ("a", "b"), ("one", "bos", "sign", "margin", "inv_len"), dtype=dtype,
                description="majority: one counting head, accept iff #a > #b")
    b.embed({BOS: {"one": 1, "bos": 1}, "a": {"one": 1, "sign": 1}, "b": {"one": 1, "sign": -1}})
    b.layer(heads=[Head(query={}, key={}, value={"sign": "margin", "bos": "inv_len"})])
    member = {"margin": 1, "inv_len": -0.5}
    if task == "recognition":
        return b.build(readout={"accept": member})
    return b.build(readout={"a": {"one": 1}, "b": {"one": 1}, "<eos>": member}, task=task)


def build_first(task: str = "recognition", dtype: type = np.float32) -> ModelSpec:
    """Return the recogniser or next-symbol predictor of strings starting with 1."""
    dims = ("one", "bos", "is_one", "is_zero", "inv_pos", "first_is_one", "first_is_zero")
    b = Builder("first", ("0", "1"), dims, dtype=dtype,
                description="first: a positional head that reads the first symbol")
    b.embed({BOS: {"one": 1, "bos": 1}, "0": {"one": 1, "is_zero": 1},
             "1": {"one": 1, "is_one": 1}})
    b.position_features({"1/i": {"inv_pos": 1}})
    first = Head(query={"one": 1}, key={"inv_pos": POSITION_SCALE, "bos": -2 * POSITION_SCALE},
                 value={"is_one": "first_is_one", "is_zero": "first_is_zero"})
    b.layer(heads=[first])
    member = {"first_is_one": 1, "one": -0.5}
    if task == "recognition":
        return b.build(readout={"accept": member})
    readout = {"0": member, "1": {"one": 0.5, "first_is_zero": -1}, "<eos>": member}
    return b.build(readout=readout, task=task)
