"""Extract a B-RASP program from a hard-attention model whose residual stream is finite-valued.

The residual stream of a supported model is a *content* part (the embedding and what every
sublayer writes) plus a *position* part (the features "1", "i", "n"), in disjoint dimensions,
the position part read only by queries and keys. Each layer's content vectors are its
**classes**. Starting from the token rows, every layer's classes are closed symbolically: for
each query class and each value a head can return (over-approximated: the value of any class
a key can have, or no key at all), the next class is computed by the model's own arithmetic.
The closure is sound, so the program built from it equals the model at every length up to the
model's bound, provided each head's argmax is a fixed order of key classes with a
leftmost/rightmost rule inside an order level; that order is certified here from the weights
for every length 1..N (a concave margin checked at the vertices of {1 <= i <= n <= N}).
Whatever falls outside this (norms, learned positions, counting heads, orders that change
with the length, ties of different values) is refused, naming the head and classes.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from satsim.errors import SatsimError
from satsim.model.settings import tie_tolerance
from satsim.model.spec import ModelSpec
from satsim.reference.forward import feed_forward

SUPPORTED_FEATURES = ("1", "i", "n")
MAX_COMBINATIONS = 200_000
"""The most (query class, head outcomes) combinations one layer may close over."""
MAX_CLASSES = 2_000
"""The most classes one layer boundary may have (the closure over-approximates what occurs)."""
NONE = -1
"""A head outcome: no key allowed (the head writes the zero vector)."""
SIDES = ("pos", "bos")
"""Query sides: a position of the input (program positions 1..n) and the BOS position."""
_GROUPS = {  # mask -> the key groups, left to right, of a query at an input position / at BOS
    "causal": (("bos", "past", "self"), ("self",)),
    "strict-past": (("bos", "past"), ()),
    "bidirectional": (("bos", "all"), ("self", "all")),
    "future": (("self", "future"), ("self", "all")),
    "strict-future": (("future",), ("all",)),
}
_PROGRAM_MASK = {"past": "j < i", "future": "j > i", "all": "True"}


class NotExtractable(SatsimError):
    """The model is outside what extraction handles; the message says where."""


@dataclass
class Head:
    """One head's certified selector: per query class, key classes in levels, best first."""

    levels: dict[int, list[list[int]]]
    rule: dict[int, str]  # per query class: "leftmost", "rightmost" or "tie" (γ = 0)
    value: list[int]  # per key class: the index of its value vector
    values: list[np.ndarray]
    out: list[np.ndarray]  # per value index: what the head adds to the stream


@dataclass
class Layer:
    """One block as lookups: heads, and the next class per (side, query class, outcomes)."""

    heads: list[Head]
    table: dict[tuple[str, int, tuple[int, ...]], int] = field(default_factory=dict)


@dataclass
class Extraction:
    """Classes per layer, each layer's selectors and lookups, and the final decisions."""

    spec: ModelSpec
    classes: list[list[np.ndarray]]  # per layer boundary: class vectors (content part)
    bos_classes: list[set[int]]  # per boundary: the classes BOS can have
    pos_classes: list[set[int]]  # per boundary: the classes an input position can have
    layers: list[Layer]
    accepting: set[int]
    max_tokens: int

    def summary(self) -> dict:
        """Classes per layer and the certificate, as JSON."""
        return {"classes_per_layer": [len(c) for c in self.classes],
                "certified": True,
                "certified_up_to_tokens": self.max_tokens,
                "heads": sum(len(layer.heads) for layer in self.layers)}


def _positional_dims(spec: ModelSpec) -> np.ndarray:
    """The residual dimensions the position features write (a boolean mask)."""
    pos = spec.positional
    if pos.kind == "none":
        return np.zeros(spec.W_E.shape[1], dtype=bool)
    if pos.kind != "features":
        raise NotExtractable(f"extract needs positions as features of (i, n); this model has "
                             f"a {pos.kind} positional encoding (not finite-valued)")
    unknown = [f for f in pos.features if f not in SUPPORTED_FEATURES]
    if unknown:
        raise NotExtractable(f"extract handles the position features {SUPPORTED_FEATURES}; "
                             f"this model has {unknown}")
    return np.any(pos.W_feat != 0, axis=0)


def _check_supported(spec: ModelSpec, P: np.ndarray) -> None:
    """Refuse what the class analysis does not cover, naming it."""
    if spec.norm != "none" or spec.ln_final is not None or spec.parallel:
        raise NotExtractable("extract handles models without norms and without parallel "
                             "blocks (a norm mixes the position part into every class)")
    if spec.residual is not True or spec.eos is not None or spec.bos is None:
        raise NotExtractable("extract handles models with BOS, no EOS and every skip "
                             "connection")
    if spec.output.task != "recognition":
        raise NotExtractable("extract handles recognition models (one accept logit)")
    written = [("embed.W_E", spec.W_E[:, P]), ("unembed.W_U", spec.output.W_U[P])]
    for layer, block in enumerate(spec.blocks):
        if block.attn is not None:
            a = block.attn
            for h, kind in enumerate(a.head_kinds):
                if kind not in ("run", "saturated", "tolerant-hard"):
                    raise NotExtractable(f"block {layer} head {h} is {kind}: extract handles "
                                         "saturated and tolerant-hard heads (counting heads "
                                         "are not finite-valued)")
            written += [(f"blocks.{layer}.attn.W_V", a.W_V[:, P]),
                        (f"blocks.{layer}.attn.W_O", a.W_O[:, :, P])]
            if a.b_O is not None:
                written.append((f"blocks.{layer}.attn.b_O", a.b_O[P]))
        if block.mlp is not None:
            m = block.mlp
            written += [(f"blocks.{layer}.mlp.W_in", m.W_in[P]),
                        (f"blocks.{layer}.mlp.W_out", m.W_out[:, P])]
            if m.b_out is not None:
                written.append((f"blocks.{layer}.mlp.b_out", m.b_out[P]))
    for name, part in written:
        if np.any(part != 0):
            raise NotExtractable(f"{name} reads or writes the position dimensions: extract "
                                 "needs them read by queries and keys alone")


class _Scores:
    """A head's score as a function of classes and positions, from the weights."""

    def __init__(self, spec: ModelSpec, layer: int, h: int, N: int) -> None:
        a = spec.blocks[layer].attn
        self.where = f"block {layer} head {h}"
        self.wq, self.wk, self.s = a.W_Q[h], a.W_K[h], a.score_scale
        self.bq = a.b_Q[h] if a.b_Q is not None else 0.0
        self.bk = a.b_K[h] if a.b_K is not None else 0.0
        pos = spec.positional
        d = spec.W_E.shape[1]
        feat = {name: (pos.W_feat[k] if pos.kind == "features" else np.zeros(d))
                for k, name in enumerate(pos.features)}
        self.f = {name: feat.get(name, np.zeros(d)) for name in SUPPORTED_FEATURES}
        self.N = N
        kind, delta = a.head_kinds[h], a.head_deltas[h]
        atol, rtol = tie_tolerance(a.W_Q.dtype)
        self.width = (delta, 4 * np.finfo(float).eps) if kind == "tolerant-hard" and \
            delta is not None else (atol, rtol)
        self._keys: list[np.ndarray] | None = None  # the key classes of _parts
        self._parts: list[np.ndarray] = []

    def query(self, qc: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The query as q0 + i·qi + n·qn."""
        return (qc @ self.wq + self.bq + self.f["1"] @ self.wq, self.f["i"] @ self.wq,
                self.f["n"] @ self.wq)

    def key(self, kc: np.ndarray) -> np.ndarray:
        """The key's class part kc·W_K + b_K."""
        return kc @ self.wk + self.bk

    def _key_parts(self, keys: list[np.ndarray]) -> list[np.ndarray]:
        """:meth:`key` of every class, computed once for the list every query class reads."""
        if self._keys is not keys:
            self._keys, self._parts = keys, [self.key(k) for k in keys]
        return self._parts

    def tolerances(self, lengths: tuple[float, ...], q, keys: list[np.ndarray]
                   ) -> dict[float, float]:
        """Per length n, a bound on the tie width at n tokens: |M| bounded term by term.

        With i, j <= n, each of q's three parts against each of the key's (its class part with
        the constant feature's, then the position features'), in that order; the dot products
        are the same at every n and computed once.
        """
        k_parts = (self.f["i"] @ self.wk, self.f["n"] @ self.wk)
        k0 = self.f["1"] @ self.wk
        fixed = [[abs(float(np.dot(qa, kb))) for kb in k_parts] for qa in q]
        dots = [[abs(float(np.dot(qa, k + k0))) for qa in q] for k in keys]
        absolute, relative = self.width
        found = {}
        for n in lengths:
            bound = max(sum(term for a in range(len(q)) for term in (
                row[a] * n ** (a > 0), *(c * n ** (a > 0) * n for c in fixed[a])))
                for row in dots)
            found[n] = absolute + relative * self.s * bound
        return found

    def order(self, qc: np.ndarray, keys: list[np.ndarray], qname: str
              ) -> tuple[list[list[int]], str]:
        """Key classes in levels (best first) and the rule inside a level, certified."""
        q = self.query(qc)
        kj = self.f["i"] @ self.wk
        if np.dot(q[1], kj) != 0 or np.dot(q[2], kj) != 0:
            raise NotExtractable(f"{self.where}: the key position's weight depends on the "
                                 "query's position (not a fixed leftmost/rightmost rule)")
        gamma = self.s * float(np.dot(q[0], kj))
        kparts = self._key_parts(keys)
        coef = [(self.s * float(np.dot(q[0], k)), self.s * float(np.dot(q[1], k)),
                 self.s * float(np.dot(q[2], k))) for k in kparts]  # A, C (·i), B (·n)
        N = self.N
        vertices = ((1, 1), (1, N), (N, N))
        tau = self.tolerances((1, N), q, kparts)

        def beats(a: int, b: int) -> bool:
            dA, dC, dB = (x - y for x, y in zip(coef[a], coef[b]))
            return all(dA + dC * i + dB * n - abs(gamma) * (n - 1)
                       - tau[n] > 0 for i, n in vertices)

        levels: list[list[int]] = []
        for k in sorted(range(len(keys)), key=lambda k: coef[k][::-1], reverse=True):
            if levels and coef[levels[-1][0]] == coef[k]:
                levels[-1].append(k)
            elif not levels or beats(levels[-1][0], k):
                levels.append([k])
            else:
                raise NotExtractable(f"{self.where}: for query class {qname}, key classes "
                                     f"{levels[-1][0]} and {k} are neither tied nor ordered "
                                     f"at every length up to {N} tokens")
        if gamma == 0:
            return levels, "tie"
        if not all(abs(gamma) - tau[n] > 0 for n in (1, N)):
            raise NotExtractable(f"{self.where}: the position step {abs(gamma):.3g} is within "
                                 "the tie tolerance, so ties are not leftmost/rightmost")
        return levels, "leftmost" if gamma < 0 else "rightmost"


def live_dims(spec: ModelSpec, boundary: int) -> np.ndarray:
    """The residual dimensions some sublayer after layer boundary ``boundary`` reads.

    The others are dead: no later query, key, value, feed-forward or the unembedding reads
    them (their rows are exactly zero), so two vectors that differ only there are one class.
    """
    reads = [spec.output.W_U]
    for block in spec.blocks[boundary:]:
        if block.attn is not None:
            a = block.attn
            reads += [m.transpose(1, 0, 2).reshape(m.shape[1], -1) for m in (a.W_Q, a.W_K, a.W_V)]
        if block.mlp is not None:
            reads.append(block.mlp.W_in)
    return np.any(np.concatenate([np.asarray(r) for r in reads], axis=1) != 0, axis=1)


def _key(vector: np.ndarray) -> bytes:
    return np.ascontiguousarray(vector, dtype=np.float64).tobytes()


class _ClassSet:
    """Distinct content vectors, numbered in order of appearance."""

    def __init__(self) -> None:
        self.vectors: list[np.ndarray] = []
        self.index: dict[bytes, int] = {}

    def add(self, vector: np.ndarray) -> int:
        key = _key(vector)
        if key not in self.index:
            self.index[key] = len(self.vectors)
            self.vectors.append(vector)
        return self.index[key]


def extract(spec: ModelSpec, max_tokens: int | None = None,
            progress: Callable[[int, int], None] | None = None) -> Extraction:
    """Close the model's classes layer by layer and certify each head's selector.

    ``progress(blocks closed, blocks)`` is called after each block.
    """
    P = _positional_dims(spec)
    _check_supported(spec, P)
    N = max_tokens or spec.max_tokens or 10**6
    tokens = _ClassSet()
    for row in spec.W_E:
        tokens.add(row.astype(np.float64))
    bos_id = spec.vocab.index(spec.bos)
    classes = [tokens.vectors]
    bos_classes = [{tokens.index[_key(spec.W_E[bos_id])]}]
    pos_classes = [{tokens.index[_key(spec.W_E[t])] for t in range(len(spec.vocab))
                    if t != bos_id}]
    layers = []
    for layer, block in enumerate(spec.blocks):
        built = _close_layer(spec, layer, block, classes[-1], bos_classes[-1],
                             pos_classes[-1], N)
        layers.append(built[0])
        classes.append(built[1])
        bos_classes.append(built[2])
        pos_classes.append(built[3])
        if progress is not None:
            progress(layer + 1, len(spec.blocks))
    W_U, b_U = spec.output.W_U[:, 0], (spec.output.b_U[0] if spec.output.b_U is not None
                                       else 0.0)
    accepting = {c for c, v in enumerate(classes[-1]) if float(v @ W_U + b_U) > 0}
    return Extraction(spec, classes, bos_classes, pos_classes, layers, accepting, N)


def _head(spec: ModelSpec, layer: int, h: int, vectors: list[np.ndarray],
          queries: set[int], N: int) -> Head:
    """A head's certified order for every query class, and its values."""
    a = spec.blocks[layer].attn
    scores = _Scores(spec, layer, h, N)
    levels, rules = {}, {}
    for qc in sorted(queries):
        levels[qc], rules[qc] = scores.order(vectors[qc], vectors, str(qc))
    values = _ClassSet()
    b_V = a.b_V[h] if a.b_V is not None else 0.0
    value = [values.add(v @ a.W_V[h] + b_V) for v in vectors]
    for qc in queries:
        for level in levels[qc]:
            if rules[qc] == "tie" and len({value[k] for k in level}) > 1:
                raise NotExtractable(f"block {layer} head {h}: query class {qc} ties key "
                                     f"classes {level} of different values (an average: not "
                                     "finite-valued; -o NAME.crasp extracts counts)")
    return Head(levels, rules, value, values.vectors, [v @ a.W_O[h] for v in values.vectors])


def _close_layer(spec, layer, block, vectors, bos_set, pos_set, N):
    """One block: its heads, the next classes, and the lookup from (query, outcomes)."""
    heads = []
    if block.attn is not None:
        heads = [_head(spec, layer, h, vectors, bos_set | pos_set, N)
                 for h in range(block.attn.n_heads)]
    built = Layer(heads)
    nxt = _ClassSet()
    dead = ~live_dims(spec, layer + 1)
    sides = {"pos": set(), "bos": set()}
    combos = 0
    for side, queries in (("pos", pos_set), ("bos", bos_set)):
        for qc in sorted(queries):
            options = [_outcomes(head, block.attn.head_masks[h], side, qc, bos_set, pos_set)
                       for h, head in enumerate(heads)]
            combos += int(np.prod([len(o) for o in options])) if options else 1
            if combos > MAX_COMBINATIONS:
                raise NotExtractable(f"block {layer}: more than {MAX_COMBINATIONS} (query "
                                     "class, head outcomes) combinations to close")
            for outs in itertools.product(*options):
                x = vectors[qc].copy()
                if heads:
                    for head, o in zip(heads, outs):
                        if o != NONE:
                            x = x + head.out[o]
                    if block.attn.b_O is not None:
                        x = x + block.attn.b_O
                if block.mlp is not None:
                    x = x + feed_forward(x[None, :], block.mlp)[0]
                x[dead] = 0  # never read again: classes differ only where it matters
                k = nxt.add(x)
                if len(nxt.vectors) > MAX_CLASSES:
                    raise NotExtractable(
                        f"block {layer}: the closure passes {MAX_CLASSES} classes (from "
                        f"{len(vectors)} before it): each head's outcomes are taken as "
                        "independent, which over-approximates what occurs; not certified")
                built.table[(side, qc, outs)] = k
                sides[side].add(k)
    return built, nxt.vectors, sides["bos"], sides["pos"]


def _outcomes(head: Head, mask: str, side: str, qc: int, bos_set, pos_set) -> list[int]:
    """The values a head can return to query class qc (a sound over-approximation)."""
    groups = _GROUPS[mask][SIDES.index(side)]
    keys: set[int] = set()
    for g in groups:
        if g == "bos":
            keys |= bos_set
        elif g == "self":
            keys.add(qc)
        else:
            keys |= pos_set
    outs = {head.value[k] for k in keys}
    may_be_empty = side == "pos" and mask == "strict-future" or side == "bos" and \
        mask in ("strict-past", "strict-future")
    if may_be_empty or not keys:
        outs.add(NONE)
    return sorted(outs)


def _joined(terms, word: str, unit: str, zero: str) -> str:
    """Formula strings joined by ``word``; ``unit`` drops out and ``zero`` absorbs the rest."""
    terms = [t for t in dict.fromkeys(terms) if t != unit]
    if zero in terms:
        return zero
    return unit if not terms else terms[0] if len(terms) == 1 else \
        "(" + f" {word} ".join(terms) + ")"


def _any(terms) -> str:
    """The disjunction of formula strings, "False" when there are none."""
    return _joined(terms, "or", "False", "True")


def _all(terms) -> str:
    """The conjunction of formula strings, "True" when there are none."""
    return _joined(terms, "and", "True", "False")


def _not(term: str) -> str:
    return {"True": "False", "False": "True"}.get(term, f"not {term}")


class _Writer:
    """Builds the program's definitions, names from what each computes."""

    def __init__(self, ex: Extraction) -> None:
        self.ex = ex
        self.lines: dict[str, str] = {}

    def define(self, name: str, formula: str) -> str:
        """A definition (constants and names are returned as they are)."""
        if formula in ("True", "False") or re.fullmatch(r"\w+", formula):
            return formula
        self.lines[name] = formula
        return name

    def cls(self, side: str, layer: int, k: int) -> str:
        return f"{'bos' if side == 'bos' else 'at'}{layer}_c{k}"

    def at(self, name: str, where: str) -> str:
        return name if name in ("True", "False") else f"{name}[{where}]"





def write_program(ex: Extraction) -> str:
    """The B-RASP text of an extraction (dead definitions removed)."""
    spec = ex.spec
    symbols = [t for t in spec.vocab if t != spec.bos]
    if any(len(t) != 1 for t in symbols):
        raise NotExtractable("a B-RASP program needs one-character symbols")
    w = _Writer(ex)
    names: dict[tuple[str, int, int], str] = {}
    bos_id = spec.vocab.index(spec.bos)
    rows = [_key(r.astype(np.float64)) for r in spec.W_E]
    first = {c: [t for t in range(len(spec.vocab)) if t != bos_id and
                 rows[t] == _key(v)] for c, v in enumerate(ex.classes[0])}
    for k in sorted(ex.pos_classes[0]):
        toks = [f'Q("{spec.vocab[t]}")' for t in first[k]]
        label = "_".join(symbol_word(spec.vocab[t]) for t in first[k])
        names[("pos", 0, k)] = w.define(f"is_{label}", _any(toks))
    for k in ex.bos_classes[0]:
        names[("bos", 0, k)] = "True"
    for layer, built in enumerate(ex.layers):
        outs = [_head_outputs(w, ex, names, layer, h) for h in range(len(built.heads))]
        for side in SIDES:
            cases: dict[int, list[tuple[frozenset, ...]]] = {}
            returned: dict[int, list[set]] = {}  # per query class, what each head returns
            for (s, qc, combo), k in built.table.items():
                if s == side:
                    cases.setdefault(k, []).append(
                        (frozenset([qc]),) + tuple(frozenset([o]) for o in combo))
                    for h, o in enumerate(combo):
                        returned.setdefault(qc, [set() for _ in combo])[h].add(o)
            queries = ex.pos_classes[layer] if side == "pos" else ex.bos_classes[layer]
            for k, each in cases.items():
                terms = []
                for qcs, *heads in _merged(each):
                    parts = [_one_of({qc: names[(side, layer, qc)] for qc in queries}, qcs)
                             if side == "pos"  # at an input position, one class holds
                             else _any(names[(side, layer, qc)] for qc in sorted(qcs))]
                    for h, values in enumerate(heads):
                        possible = set().union(*(returned[qc][h] for qc in qcs))
                        parts.append(_one_of({o: outs[h][side][o] for o in possible}, values))
                    terms.append(_all(parts))
                names[(side, layer + 1, k)] = w.define(w.cls(side, layer + 1, k), _any(terms))
    L = len(ex.layers)
    accept_pos = _any(names[("pos", L, k)] for k in sorted(ex.pos_classes[L] & ex.accepting))
    accept_bos = _any(names[("bos", L, k)] for k in sorted(ex.bos_classes[L] & ex.accepting))
    nonempty = _any(f'Q("{t}")' for t in symbols)
    accept = _any([_all([nonempty, accept_pos]), _all([_not(nonempty), accept_bos])])
    w.lines["accept"] = accept
    return _live_text(_renamed(w.lines), "".join(symbols))


def _merged(cases: list[tuple[frozenset, ...]]) -> list[tuple[frozenset, ...]]:
    """Cases (a set of values per variable) merged while two differ in one variable only.

    The union of the merged cases is the union of the given ones.
    """
    merged = set(cases)
    while True:
        before = len(merged)
        for v in range(len(cases[0])):
            rest: dict[tuple, set] = {}
            for case in merged:
                rest.setdefault(case[:v] + case[v + 1:], set()).update(case[v])
            merged = {key[:v] + (frozenset(values),) + key[v:] for key, values in rest.items()}
        if len(merged) == before:
            return sorted(merged, key=lambda case: [sorted(values) for values in case])


def _one_of(formulas: dict[int, str], values: frozenset) -> str:
    """That a variable takes one of ``values``, where exactly one of ``formulas`` holds.

    So all of them is True, and the ones left out, negated, may be shorter.
    """
    if values >= set(formulas):
        return "True"
    inside = _any(formulas[v] for v in sorted(values))
    outside = _not(_any(formulas[v] for v in sorted(set(formulas) - values)))
    return outside if len(outside) < len(inside) else inside


def _head_outputs(w: _Writer, ex: Extraction, names, layer: int, h: int) -> dict:
    """Per side, per outcome (a value index or NONE): the Boolean that the head returns it."""
    head = ex.layers[layer].heads[h]
    mask = ex.spec.blocks[layer].attn.head_masks[h]
    result = {}
    for side in SIDES:
        queries = sorted(ex.bos_classes[layer] if side == "bos" else ex.pos_classes[layer])
        out_v: dict[int, list[str]] = {}
        for rule in ("left", "right"):
            mine = [qc for qc in queries if (head.rule[qc] == "rightmost") == (rule == "right")]
            if not mine:
                continue
            groups = list(_GROUPS[mask][SIDES.index(side)])
            if rule == "right":
                groups.reverse()
            depth = max(len(head.levels[qc]) for qc in mine)
            earlier_levels: list[str] = []
            for lv in range(depth):
                tag = f"l{layer}h{h}_{side}_{rule}{lv}"
                has, val = _level_groups(w, ex, names, layer, head, side, mine, lv, groups,
                                         rule, tag)
                seen: list[str] = []
                for g, g_has in zip(groups, has):
                    for v, formula in val[g].items():
                        out_v.setdefault(v, []).append(
                            _all([formula] + [_not(x) for x in seen + earlier_levels]))
                    seen.append(g_has)
                earlier_levels.append(w.define(f"{tag}_any", _any(has)))
        result[side] = {v: w.define(f"l{layer}h{h}_{side}_val{v}", _any(terms))
                        for v, terms in out_v.items()}
        result[side][NONE] = _not(_any(result[side].values()))
    return result


def _classes(ex: Extraction, q: dict, side: str, layer: int, qcs: set[int] | None) -> str:
    """The disjunction of some query classes, True where they are all an input position has.

    The program reads the input side only at input positions, where one of them holds.
    """
    if not qcs:
        return "False"
    if side == "pos" and qcs == ex.pos_classes[layer]:
        return "True"
    return _any(q[qc] for qc in sorted(qcs))


def _level_groups(w, ex, names, layer, head, side, mine, lv, groups, rule, tag):
    """For one level: whether each key group holds a key of it, and the value it gives."""
    q = {qc: names[(side, layer, qc)] for qc in mine}
    level = {qc: set(head.levels[qc][lv]) if lv < len(head.levels[qc]) else set()
             for qc in mine}
    has, val = [], {}
    for g in groups:
        if g in ("bos", "self"):
            pool = ex.bos_classes[layer] if g == "bos" else None
            by_value: dict[int, list[str]] = {}
            present = []
            plain: dict[int | None, set[int]] = {}  # queries whose term is their own class
            for qc in mine:
                ks = ({qc} if g == "self" else pool) & level[qc]
                for k in ks:
                    key = q[qc] if g == "self" else names[("bos", layer, k)]
                    if key in ("True", q[qc]):
                        plain.setdefault(None, set()).add(qc)
                        plain.setdefault(head.value[k], set()).add(qc)
                        continue
                    term = _all([q[qc], key])
                    present.append(term)
                    by_value.setdefault(head.value[k], []).append(term)
            has.append(w.define(f"{tag}_{g}", _any(present + [_classes(ex, q, side, layer,
                                                                        plain.get(None))])))
            val[g] = {v: _any(by_value.get(v, []) + [_classes(ex, q, side, layer, plain.get(v))])
                      for v in set(by_value) | set(plain) - {None}}
            continue
        keys = ex.pos_classes[layer]
        by_keys: dict[tuple[int, ...], list[int]] = {}  # queries that want the same keys
        for qc in mine:
            by_keys.setdefault(tuple(sorted(level[qc] & keys)), []).append(qc)
        every = ex.bos_classes[layer] if side == "bos" else ex.pos_classes[layer]
        score = _any(_all([w.at("True" if set(qcs) == every else
                                w.define(f"{tag}_query{n}", _any(q[qc] for qc in qcs)), "i"),
                           "True" if set(wanted) == keys else
                           _any(w.at(names[("pos", layer, k)], "j") for k in wanted)])
                     for n, (wanted, qcs) in enumerate(by_keys.items()) if wanted)
        if score == "False":
            has.append("False")
            val[g] = {}
            continue
        pm = _PROGRAM_MASK[g]
        fn = "rightmost" if rule == "right" else "leftmost"
        has.append(w.define(f"{tag}_{g}", f"leftmost({pm}, {score}, True, default=False)"))
        val[g] = {}
        for v in sorted({head.value[k] for k in keys}):
            holders = {k for k in keys if head.value[k] == v}
            holds = "True" if holders == keys else _any(w.at(names[("pos", layer, k)], "j")
                                                        for k in sorted(holders))
            val[g][v] = w.define(f"{tag}_{g}_val{v}",
                                 f"{fn}({pm}, {score}, {holds}, default=False)")
    return has, val


_ATTEND = re.compile(r"(leftmost|rightmost)\((j < i|j > i|True), (True|\w+\[j\]), "
                     r"(True|\w+\[j\]), default=False\)")
_WHERE = {"j < i": "_before", "j > i": "_after", "True": ""}
MAX_NAME = 40
"""Names derived from what a definition does are kept only up to this length."""


SYMBOL_WORDS = {"(": "open", ")": "close", "[": "open2", "]": "close2", "{": "open3",
                "}": "close3", "<": "lt", ">": "gt", "+": "plus", "-": "minus"}
"""Words for symbols that cannot be part of a name."""
_LITERAL = re.compile(r"(not )?\w+")
_STRUCTURAL = re.compile(r"l\d+h\d+_|(at|bos)\d+_c\d|case\d|cmp\d|count\d")
"""Names that say where a definition comes from, not what it does (l0h1_pos_val2, at1_c3)."""
MAX_LITERALS = 3
"""A conjunction of at most this many literals is named after them (A_and_not_B)."""


def symbol_word(symbol: str) -> str:
    """A symbol as part of a name: itself, a word for a bracket or sign, or x and its code."""
    return symbol if symbol.isalnum() else SYMBOL_WORDS.get(symbol, f"x{ord(symbol)}")


def _derived_name(formula: str) -> str | None:
    """A name saying what a definition does: prev_X, some_X_before, A_and_not_B...

    Attentions as what they find; a short conjunction of named definitions after its literals
    (not of structurally named ones: is_b_and_l0h0_pos_val1 says no more than at1_c1).
    """
    literals = formula.removeprefix("(").removesuffix(")").split(" and ")
    if len(literals) <= MAX_LITERALS and all(_LITERAL.fullmatch(x) for x in literals) and \
            not {"True", "False"} & {x.removeprefix("not ") for x in literals} and \
            not any(_STRUCTURAL.match(x.removeprefix("not ")) for x in literals):
        return "_and_".join(x.replace("not ", "not_") for x in literals)
    m = _ATTEND.fullmatch(formula)
    if m is None:
        return None
    side, mask, score, value = m.groups()
    score = score.removesuffix("[j]")
    if value == "True":
        return f"some{_WHERE[mask]}" if score == "True" else f"some_{score}{_WHERE[mask]}"
    value = value[:-3]
    order = "last" if side == "rightmost" else "first"
    if score == "True":
        if mask != "True" and (side == "rightmost") == (mask == "j < i"):
            return f"{'prev' if mask == 'j < i' else 'next'}_{value}"
        return f"{value}_at_{order}{_WHERE[mask]}"
    return f"{value}_at_{order}_{score}{_WHERE[mask]}"


def _renamed(lines: dict[str, str]) -> dict[str, str]:
    """Definitions named after what they compute (where short and unambiguous).

    Equal definitions are made one.
    """
    out: dict[str, str] = {}
    rename: dict[str, str] = {}
    pattern = re.compile(r"\b\w+\b")
    same: dict[str, str] = {}  # formula -> the first name defining it
    for name, formula in lines.items():
        formula = pattern.sub(lambda m: rename.get(m.group(0), m.group(0)), formula)
        if formula in same and name != "accept":  # an equal definition: one name for both
            rename[name] = same[formula]
            continue
        better = _derived_name(formula) if name != "accept" else None
        if better and len(better) <= MAX_NAME and better not in lines and \
                better not in out and better not in rename.values():
            rename[name] = better
            name = better
        out[name] = formula
        same.setdefault(formula, name)
    return out


def _live_text(lines: dict[str, str], alphabet: str) -> str:
    """The definitions ``accept`` needs, in order, as program text."""
    live, todo = set(), ["accept"]
    while todo:
        name = todo.pop()
        if name in live or name not in lines:
            continue
        live.add(name)
        todo.extend(re.findall(r"\b\w+\b", lines[name]))
    body = [f"{name} = {formula}" for name, formula in lines.items() if name in live]
    return "\n".join(["# extracted by satsim extract", f'alphabet = "{alphabet}"'] + body) + "\n"


def check_program(spec: ModelSpec, text: str, strings: list[str],
                  language: str = "brasp") -> list[str]:
    """The strings on which the program's interpreter and the model (the engine) disagree."""
    from satsim.engine.simulator import Simulator
    from satsim.rasp import interpreter
    from satsim.rasp.parse import parse_program

    meaning = interpreter(parse_program(text, language, "<extracted program>")).many(strings)
    model = Simulator(spec).accepts(strings) if strings else []
    return [s for s, m, p in zip(strings, model, meaning) if p != bool(m)]


def seen_classes(ex: Extraction, strings: list[str]) -> list[int]:
    """Per layer boundary, how many closed classes the engine's rows take on ``strings``.

    Raises if a row is outside the closed classes (the closure would then be wrong).
    """
    from satsim.engine.simulator import Simulator

    spec = ex.spec
    P = _positional_dims(spec)
    ends, at = [0], 0
    for block in spec.blocks:
        at += (block.attn is not None) + (block.mlp is not None)
        ends.append(at)
    seen: list[set[int]] = [set() for _ in ends]
    known = [{_key(v): k for k, v in enumerate(c)} for c in ex.classes]
    for trace in Simulator(spec).traces(strings) if strings else []:
        for layer, end in enumerate(ends):
            rows = np.array(trace.residuals[end], dtype=np.float64)
            rows[:, P] = 0
            if layer:
                rows[:, ~live_dims(spec, layer)] = 0
            for row in rows:
                if _key(row) not in known[layer]:
                    raise AssertionError(f"the engine reached a class outside the closure at "
                                         f"layer boundary {layer} on {trace.string!r}")
                seen[layer].add(known[layer][_key(row)])
    return [len(s) for s in seen]
