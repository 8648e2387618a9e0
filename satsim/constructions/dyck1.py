"""A two-layer saturated transformer that recognises Dyck-1 at every length.

A string w over ``(`` and ``)`` is in Dyck-1 iff its depth d_i (opens minus closes in the first i
symbols) never drops below 0 and ends at 0. The input is BOS·w; position i holds the i-th
symbol (position 0 is BOS). The idea, counting with a uniform causal head and then looking for
the worst prefix with a second head, goes back to the counter constructions of Bhattamishra,
Ahuja and Goyal (2020) and Merrill et al.'s saturated-attention analyses; here it is written
so that no step depends on the length.

Layer 1, head 0 (global, counting): zero queries make every score 0, so every position in
the causal prefix ties and the head averages the prefix. Its values are the symbol's sign
(+1 for ``(``, -1 for ``)``, 0 for BOS) and a BOS indicator, so at position i it writes
``depth`` = d_i/(i+1) and ``inv_len`` = 1/(i+1).

Layer 2, head 0 (local, argmin): a constant query against keys -K·depth_j makes the tie set
the prefix positions of smallest normalised depth; the head returns that minimum in
``min_depth``. It is below 0 iff some prefix dipped below 0, and then by at least 1/(n+1).
Its feed-forward writes ``violation`` = relu(depth) + relu(-depth) + relu(-min_depth).

Readout at the last position: logit = inv_len/2 - violation. In a Dyck word both terms of
``violation`` are exactly 0, so the logit is 1/(2(n+1)) > 0; otherwise ``violation`` is at least
about 1/(n+1) and the logit is negative. The scale K keeps every non-negative-depth position
out of layer 2's tie set when some prefix is negative: with float32 tolerances (1e-5) the
construction is exact up to lengths of about 10^8, far beyond what is tested (10^5).
"""

from __future__ import annotations

import numpy as np

from satsim.constructions.residual import Residual
from satsim.spec import AttentionSpec, BlockSpec, FeedForwardSpec, ModelSpec, OutputSpec

BOS = "<bos>"
VOCAB = (BOS, "(", ")")
ARGMIN_SCALE = 1e4


def build(dtype: type = np.float32) -> ModelSpec:
    """Return the Dyck-1 recogniser (accept iff the last position's logit is > 0)."""
    r = Residual("one", "sign", "bos", "depth", "inv_len", "min_depth", "violation", dtype=dtype)
    embedding = r.embedding(VOCAB, {
        BOS: {"one": 1, "bos": 1},
        "(": {"one": 1, "sign": 1},
        ")": {"one": 1, "sign": -1},
    })
    count = AttentionSpec(
        W_Q=np.zeros((1, r.width, 1), dtype=dtype),
        W_K=np.zeros((1, r.width, 1), dtype=dtype),
        W_V=r.read({("sign", 0): 1, ("bos", 1): 1}, width=2)[None],
        W_O=r.write({(0, "depth"): 1, (1, "inv_len"): 1}, height=2)[None],
        causal=True,
    )
    argmin = AttentionSpec(
        W_Q=r.read({"one": 1})[None],
        W_K=r.read({"depth": -ARGMIN_SCALE})[None],
        W_V=r.read({"depth": 1})[None],
        W_O=r.write({"min_depth": 1})[None],
        causal=True,
    )
    violation = FeedForwardSpec(
        W_in=r.read({("depth", 0): 1, ("depth", 1): -1, ("min_depth", 2): -1}, width=3),
        W_out=r.write({(0, "violation"): 1, (1, "violation"): 1, (2, "violation"): 1}, height=3),
    )
    output = OutputSpec(W_U=r.read({"inv_len": 0.5, "violation": -1}), labels=("accept",))
    return ModelSpec(
        vocab=VOCAB,
        W_E=embedding,
        blocks=(BlockSpec(attn=count), BlockSpec(attn=argmin, mlp=violation)),
        output=output,
        bos=BOS,
        name="dyck1",
        description="Dyck-1 recogniser: a counting head, an argmin head, and a violation check.",
    )
