"""Saturated transformers for block languages: aⁿbⁿ, aⁿbⁿcⁿ, aⁿbⁿcⁿdⁿ (n ≥ 0), at every length.

Symbols s_0 < s_1 < … < s_{m-1}; a member is s_0^n s_1^n … s_{m-1}^n. Position i holds the i-th
symbol (BOS is position 0); k_r is the number of s_r in the prefix.

Layer 1 has a counting head and m-1 "seen" heads. The counting head (zero query, so the whole
causal prefix ties) writes ``count_r`` = k_r/(i+1) and ``inv_len`` = 1/(i+1). Seen head r
(r ≥ 1) has a constant query against keys [rank ≥ r], so its tie set is the positions of rank ≥ r
when there are any, and the whole prefix otherwise. Its value [rank ≥ r] makes ``seen_r``
exactly 1 or 0. The feed-forward marks ``bad`` = 1 where a symbol comes after one of higher rank:
Σ_r relu(is_r + seen_{r+1} - 1).

Layer 2 has a "seen" head on ``bad``, which writes ``any_bad`` ∈ {0, 1}. Its feed-forward sums the
differences of neighbouring counts, ``imbalance`` = Σ_r |count_r - count_{r+1}|, and the count
errors of a prefix, ``error`` = Σ_{r≥1} relu(count_r - count_0) + Σ_{1≤r<q} |count_r - count_0|,
where q is the highest rank seen.

Recognition: logit = inv_len/2 - imbalance - any_bad. Counts that differ differ by at least
1/(n+1), so the logit is positive exactly for members.

Next-symbol (layers 3–5 only have feed-forwards, which take minima and maxima as
x - relu(x - y) and x + relu(y - x)):
- s_0 may follow iff nothing of higher rank has been seen;
- s_r (r ≥ 1) may follow a valid prefix iff either the current block is s_r and k_r < k_0, or the
  current block is s_{r-1}, complete (k_{r-1} = k_0), and non-empty;
- EOS may follow iff the prefix is a member.
Counting heads for aⁿbⁿ-style languages go back to Bhattamishra, Ahuja and Goyal (2020); the exact
0/1 "seen" heads use the fact that saturated attention averages only over the maximal keys.

Homogeneous form (:mod:`satsim.circuits.lifting`), so that the soft twin at uniform scale
cθ converges to this very network: no biases (the thresholds of ``bad`` and of the gated |x| are
weights -1 on ``one``) and no residual stream. Layers 1 and 2 each get a last "self" head (query
``one``, keys ``pos`` = i, so each position attends to itself) that copies what later layers read
at the query's own position: layer 1 the symbol indicators ``is_r``, ``one`` and ``pos``; layer 2
``inv_len``, the counts and the seen flags. Each feed-forward ends with neurons that copy the
dims still needed, relu(x) (x ≥ 0) or relu(x) - relu(-x). Built in float64: self-head keys i and
i-1 must stay apart under the relative tie tolerance.
"""

from __future__ import annotations

import numpy as np

from satsim.circuits.builder import BOS, Builder, Head, Neuron
from satsim.model.spec import ModelSpec


def _abs(x: dict, target: str, gate: str | None = None) -> list[Neuron]:
    """Neurons adding |x| (or gate·|x| for a 0/1 gate and |x| ≤ 1) into ``target``."""
    if gate is None:
        return [Neuron(x, {target: 1}), Neuron({k: -v for k, v in x.items()}, {target: 1})]
    plus = {**x, gate: 1, "one": -1}
    minus = {**{k: -v for k, v in x.items()}, gate: 1, "one": -1}
    return [Neuron(plus, {target: 1}), Neuron(minus, {target: 1})]


def _diff(a: str, b: str) -> dict:
    return {a: 1, b: -1} if a != b else {}


def build_blocks(
    symbols: str, name: str, task: str = "recognition", dtype: type = np.float64
) -> ModelSpec:
    """Return the recogniser or next-symbol predictor for s_0ⁿ s_1ⁿ … (n ≥ 0)."""
    m = len(symbols)
    ranks = range(m)
    dims = ["one", "bos", "inv_len", "bad", "any_bad", "imbalance", "error"]
    dims += [f"{kind}{r}" for r in ranks for kind in ("is", "ge", "count", "seen")]
    dims += [f"{kind}{r}" for r in ranks for kind in ("absdiff", "c1", "c2", "t", "m")]
    b = Builder(name, tuple(symbols), tuple(dims), dtype=dtype,
                description=f"{name}: counting head, exact 'seen' heads, order and count checks")
    rows = {BOS: {"one": 1, "bos": 1}}
    for r, symbol in enumerate(symbols):
        rows[symbol] = {"one": 1, f"is{r}": 1, **{f"ge{s}": 1 for s in range(1, r + 1)}}
    b.embed(rows)

    counting = Head(query={}, key={},
                    value={"bos": "inv_len", **{f"is{r}": f"count{r}" for r in ranks}})
    seen = [Head(query={"one": 1}, key={f"ge{r}": 1}, value={f"ge{r}": f"seen{r}"})
            for r in range(1, m)]
    order = [Neuron({f"is{r}": 1, f"seen{r + 1}": 1, "one": -1}, {"bad": 1}) for r in range(m - 1)]
    b.layer(heads=[counting, *seen], neurons=order)

    any_bad = Head(query={"one": 1}, key={"bad": 1}, value={"bad": "any_bad"})
    checks = [n for r in range(m - 1) for n in _abs(_diff(f"count{r}", f"count{r + 1}"),
                                                    "imbalance")]
    for r in range(1, m):
        checks.append(Neuron(_diff(f"count{r}", "count0"), {"error": 1}))
        checks += _abs(_diff(f"count{r}", "count0"), f"absdiff{r}")
        if r + 1 < m:  # block r is complete once rank r+1 was seen: its count must equal k_0
            checks += _abs(_diff(f"count{r}", "count0"), "error", gate=f"seen{r + 1}")
    b.layer(heads=[any_bad], neurons=checks)

    member = {"inv_len": 0.5, "imbalance": -1, "any_bad": -1}
    if task == "recognition":
        return b.build(readout={"accept": member})
    return _next_symbol_layers(b, symbols, member)


def _top(r: int, m: int) -> dict:
    """Linear form of [highest rank seen == r] - 1/2 (seen_0 is 1 by convention)."""
    form = {"one": -0.5}
    if r >= 1:
        form[f"seen{r}"] = 1
    else:
        form["one"] = 0.5
    if r + 1 < m:
        form[f"seen{r + 1}"] = form.get(f"seen{r + 1}", 0) - 1
    return form


def _combine(*forms: dict, scale: tuple[float, ...] = ()) -> dict:
    """Sum linear forms over residual dims, each times its scale (default 1)."""
    out: dict = {}
    for index, form in enumerate(forms):
        factor = scale[index] if index < len(scale) else 1.0
        for dim, weight in form.items():
            out[dim] = out.get(dim, 0) + factor * weight
    return out


def _minus(x: dict, y: dict) -> dict:
    return _combine(x, y, scale=(1, -1))


def _next_symbol_layers(b: Builder, symbols: str, member: dict) -> ModelSpec:
    """Add three feed-forward layers that turn counts and flags into next-symbol logits.

    Each logit is a linear form plus dims written by ReLUs: c1 = x1 - relu(x1 - y1) = min(x1, y1),
    t = c1 + relu(c2 - c1) = max(c1, c2), and finally t - relu(t - valid) = min(t, valid).
    """
    m = len(symbols)
    valid = {"inv_len": 0.5, "error": -1, "any_bad": -1}  # > 0 iff the prefix is completable
    step_b, step_c, step_d, readout = [], [], [], {}
    readout[symbols[0]] = {"one": 0.5, **({"seen1": -1} if m > 1 else {})}
    for r in range(1, m):
        x1 = {"count0": 1, f"count{r}": -1, "inv_len": -0.5}  # current block r and k_r < k_0
        if r == 1:
            x2 = {"count0": 1, "inv_len": -0.5}  # block 0 complete and non-empty: k_0 ≥ 1
        else:
            x2 = {"inv_len": 0.5, f"absdiff{r - 1}": -1}  # block r-1 complete: k_{r-1} = k_0
        step_b.append(Neuron(_minus(x1, _top(r, m)), {f"c1{r}": -1}))
        step_b.append(Neuron(_minus(x2, _top(r - 1, m)), {f"c2{r}": -1}))
        c1 = _combine(x1, {f"c1{r}": 1})
        c2 = _combine(x2, {f"c2{r}": 1})
        step_c.append(Neuron(_minus(c2, c1), {f"t{r}": 1}))
        t = _combine(c1, {f"t{r}": 1})
        step_d.append(Neuron(_minus(t, valid), {f"m{r}": -1}))
        readout[symbols[r]] = _combine(t, {f"m{r}": 1})
    b.layer(neurons=step_b)
    b.layer(neurons=step_c)
    b.layer(neurons=step_d)
    readout["<eos>"] = member
    return b.build(readout=readout, task="next-symbol")
