"""Extract a C-RASP program from a hard-attention model with counting (uniform-average) heads.

The model reads BOS·w with causal heads and no positions (what `satsim compile` makes of a
C-RASP program). Position i (BOS is 0) stands for the prefix w₁…wᵢ. Its residual is tracked
symbolically, in exact rational arithmetic of the weights, as **cases**: a Boolean guard (a
C-RASP formula) and an affine form in the *scaled counts* z = C/(i + 1), where each C is a
C-RASP ``count(P)`` and u = 1/(i + 1) stands for BOS. A head whose keys tie everywhere writes
the average of its values over positions 0..i, a new scaled count per value; a head whose
scores depend on the counts splits the query's case by the sign of each score difference (a
C-RASP comparison) and takes the value of the best key group present. A ReLU whose input
changes sign over the counts splits the case the same way. Nothing is rounded or guessed: what
falls outside (a key or value reading a count, an average over part of the keys, a difference
within the tie tolerance) is refused, naming the head.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from satsim.model.settings import tie_tolerance
from satsim.model.spec import ModelSpec
from satsim.rasp.extract import SYMBOL_WORDS, NotExtractable, _all, _any, _live_text, _not

MAX_CASES = 4000
"""The most cases one layer boundary may have."""
U = "u"
"""The form variable 1/(i + 1): BOS's share of an average."""
_OPS = (">", "==", "<")


def _exact(array) -> np.ndarray:
    """A float array as exact rationals (object dtype)."""
    a = np.asarray(array, dtype=np.float64)
    return np.vectorize(lambda v: Fraction(float(v)), otypes=[object])(a) if a.size else \
        a.astype(object)


class Form:
    """An affine function const + Σ z_var·coef[var] of the scaled counts (vector or scalar)."""

    def __init__(self, const, coef: dict | None = None) -> None:
        self.const = const
        self.coef = {v: c for v, c in (coef or {}).items() if np.any(c != 0)}

    def __add__(self, other: Form) -> Form:
        coef = dict(self.coef)
        for v, c in other.coef.items():
            coef[v] = coef[v] + c if v in coef else c
        return Form(self.const + other.const, coef)

    def __matmul__(self, matrix) -> Form:
        return Form(self.const @ matrix, {v: c @ matrix for v, c in self.coef.items()})

    def scaled(self, factor) -> Form:
        """The form times a number."""
        return Form(self.const * factor, {v: c * factor for v, c in self.coef.items()})

    def item(self, k: int) -> Form:
        """Component k of a vector form."""
        return Form(self.const[k], {v: c[k] for v, c in self.coef.items()})

    def key(self) -> tuple:
        """A hashable identity."""
        flat = lambda a: tuple(np.ravel(a).tolist())  # noqa: E731
        return flat(self.const), tuple(sorted((v, flat(c)) for v, c in self.coef.items()))

    def bounds(self) -> tuple[Fraction, Fraction]:
        """Lowest and highest value of a scalar form over z in [0, 1] (every count, u)."""
        lo = self.const + sum((min(c, 0) for c in self.coef.values()), Fraction(0))
        hi = self.const + sum((max(c, 0) for c in self.coef.values()), Fraction(0))
        return lo, hi


@dataclass
class Case:
    """Positions whose residual is ``x`` wherever ``guard`` holds (BOS: position 0)."""

    guard: str
    x: Form
    bos: bool


@dataclass
class CountExtraction:
    """The program and what was certified."""

    text: str
    cases_per_layer: list[int]
    counts: int
    comparisons: int
    exact_up_to_tokens: int

    def summary(self) -> dict:
        """As JSON."""
        return {"language": "crasp", "cases_per_layer": self.cases_per_layer,
                "counts": self.counts, "comparisons": self.comparisons, "certified": False,
                "exact_in_rational_arithmetic_up_to_tokens": self.exact_up_to_tokens,
                "float_rounding": "checked on strings, not bounded"}


class _Program:
    """The definitions being written: counts, comparisons and case guards, deduplicated."""

    def __init__(self, symbols: list[str]) -> None:
        self.lines: dict[str, str] = {}
        self.names: dict[str, str] = {}
        self.counts: dict[str, str] = {}
        self.comparisons = 0
        self.symbols = symbols

    def define(self, stem: str, formula: str) -> str:
        """A named definition of ``formula`` (constants and names stay as they are)."""
        if formula in ("True", "False") or formula.isidentifier() or formula.startswith("Q("):
            return formula
        if formula not in self.names:
            name = stem if stem not in self.lines else f"{stem}{len(self.lines)}"
            self.lines[name] = formula
            self.names[formula] = name
        return self.names[formula]

    def count(self, predicate: str) -> str:
        """The name of the definition counting ``predicate``."""
        if predicate not in self.counts:
            symbol = predicate[3] if len(predicate) == 6 and predicate.startswith('Q("') else ""
            word = symbol if symbol.isalnum() else SYMBOL_WORDS.get(symbol)
            stem = f"count_{word}" if word else f"count{len(self.counts)}"
            self.counts[predicate] = self.define(stem, f"count({predicate})")
        return self.counts[predicate]

    def compare(self, form: Form, op: str) -> Literal | bool:
        """The literal that the scalar form is ``op`` 0, as an integer bound (or a constant)."""
        lo, hi = form.bounds()
        if not form.coef:
            return {">": lo > 0, "==": lo == 0, "<": lo < 0}[op]
        if op == ">" and (lo > 0 or hi <= 0):
            return bool(lo > 0)
        if op == "<" and (hi < 0 or lo >= 0):
            return bool(hi < 0)
        if op == "==" and (lo > 0 or hi < 0):
            return False
        # numerator of form·(i + 1): const·count(True) + const + coef_u + Σ coef·count
        terms = {"length": form.const}
        terms.update({v: c for v, c in form.coef.items() if v != U})
        const = form.const + form.coef.get(U, 0)
        scale = math.lcm(*(Fraction(c).denominator for c in [const, *terms.values()]))
        ints = {v: int(c * scale) for v, c in sorted(terms.items()) if c != 0}
        k0 = int(const * scale)
        if not ints:
            return {">": k0 > 0, "==": k0 == 0, "<": k0 < 0}[op]
        g = math.gcd(*ints.values())
        sign = 1 if next(iter(ints.values())) > 0 else -1
        key = tuple((v, c * sign // g) for v, c in ints.items())
        # numerator = sign·g·L + k0 with L the key's integer form
        if op == "==":
            return Literal(key, -sign * k0 // g, -sign * k0 // g) if k0 % g == 0 else False
        if (op == ">") == (sign > 0):  # L > -k0/(sign·g)
            return Literal(key, math.floor(Fraction(-k0 * sign, g)) + 1, None)
        return Literal(key, None, math.ceil(Fraction(-k0 * sign, g)) - 1)

    def guard(self, base: str, literals: list) -> str:
        """The conjunction of a guard and literals, each bounded form written once.

        "False" if no integers satisfy them.
        """
        bounds = _conjoined(literals)
        if bounds is None:
            return "False"
        atoms = []
        for key, (lo, hi, ne) in bounds.items():
            floor = 0 if all(c > 0 for _, c in key) else None  # counts are never negative
            if lo is not None and lo == hi:
                atoms.append(self._relation(key, "==", lo))
                continue
            if lo is not None and (floor is None or lo > floor):
                atoms.append(self._relation(key, ">=", lo))
            if hi is not None:
                atoms.append(self._relation(key, "==" if hi == floor else "<=", hi))
            atoms += [self._relation(key, "!=", c) for c in sorted(ne)]
        return _all([base, *atoms])

    def _relation(self, key: tuple, op: str, c: int) -> str:
        """A named comparison ``L op c`` of the key's integer form, written readably."""
        if "length" in dict(key):
            self.define("length", "count(True)")
        if op == "<=":  # L <= c is -L >= -c
            key, op, c = tuple((v, -k) for v, k in key), ">=", -c
        if op == ">=" and c >= 1:  # L >= c is L > c - 1
            op, c = ">", c - 1
        sides = [" + ".join(v if abs(k) == 1 else f"{abs(k)} * {v}" for v, k in key
                            if (k > 0) == positive) or "0" for positive in (True, False)]
        if c > 0:
            sides[1] = f"{sides[1]} + {c}" if sides[1] != "0" else str(c)
        elif c < 0:
            sides[0] = f"{sides[0]} + {-c}" if sides[0] != "0" else str(-c)
        self.comparisons += 1
        return self.define(f"cmp{self.comparisons}", f"{sides[0]} {op} {sides[1]}")


@dataclass(frozen=True)
class Literal:
    """lo <= L <= hi and L not in ``ne``, L the integer form sum(coef·count) of ``key``."""

    key: tuple
    lo: int | None
    hi: int | None
    ne: frozenset = frozenset()

    def negated(self) -> Literal:
        """The complement (of a one-sided bound or an equality)."""
        if self.lo is not None and self.hi is not None:
            return Literal(self.key, None, None, frozenset({self.lo}))
        if self.lo is not None:
            return Literal(self.key, None, self.lo - 1)
        return Literal(self.key, self.hi + 1, None)


def _conjoined(literals: list) -> dict | None:
    """Per key: (lo, hi, ne) of the conjunction, or None when no integer satisfies it."""
    if any(lit is False for lit in literals):
        return None
    bounds: dict[tuple, tuple] = {}
    for lit in literals:
        if lit is True:
            continue
        floor = 0 if all(c > 0 for _, c in lit.key) else None
        lo, hi, ne = bounds.get(lit.key, (floor, None, frozenset()))
        lo = lit.lo if lo is None else lo if lit.lo is None else max(lo, lit.lo)
        hi = lit.hi if hi is None else hi if lit.hi is None else min(hi, lit.hi)
        bounds[lit.key] = (lo, hi, ne | lit.ne)
    for key, (lo, hi, ne) in bounds.items():
        ne = frozenset(c for c in ne if (lo is None or c >= lo) and (hi is None or c <= hi))
        while lo is not None and lo in ne:
            lo += 1
        while hi is not None and hi in ne:
            hi -= 1
        if lo is not None and hi is not None and lo > hi:
            return None
        bounds[key] = (lo, hi, frozenset(c for c in ne if c != lo and c != hi))
    return bounds


def extract_counts(spec: ModelSpec) -> CountExtraction:
    """The C-RASP program of a causal, position-free hard model with counting heads."""
    _check(spec)
    symbols = [t for t in spec.vocab if t != spec.bos]
    prog = _Program(symbols)
    tokens = _any(f'Q("{t}")' for t in symbols)
    start = prog.define("at_start", _not(tokens))  # position 0: the empty prefix, BOS
    cases = [Case(start if t == spec.bos else f'Q("{t}")', Form(_exact(row)), t == spec.bos)
             for t, row in zip(spec.vocab, spec.W_E)]
    sizes = [len(cases)]
    N = spec.max_tokens or 10**9
    for layer, block in enumerate(spec.blocks):
        if block.attn is not None:
            cases, N = _attend(prog, spec, layer, cases, N)
            cases = _merged(prog, cases, layer, "a")
        if block.mlp is not None:
            cases = _merged(prog, [c for case in cases for c in _mlp(prog, block.mlp, case)],
                            layer, "m")
        sizes.append(len(cases))
    W_U = _exact(spec.output.W_U[:, 0])
    b_U = Fraction(float(spec.output.b_U[0])) if spec.output.b_U is not None else Fraction(0)
    accepting = [prog.guard(case.guard, [prog.compare(case.x @ W_U + Form(b_U), ">")])
                 for case in cases]
    prog.lines["accept"] = _any(accepting)
    text = _live_text(prog.lines, "".join(symbols)).replace(
        "# extracted by satsim extract", "# extracted by satsim extract (C-RASP: counts)")
    return CountExtraction(text, sizes, len(prog.counts), prog.comparisons, N)


def _check(spec: ModelSpec) -> None:
    """Refuse what the count analysis does not cover."""
    found = [what for what, present in (
        (f"a {spec.positional.kind} positional encoding", spec.positional.kind != "none"),
        (f"{spec.norm} norms", spec.norm != "none" or spec.ln_final is not None),
        ("parallel blocks", spec.parallel), ("a skipped residual", spec.residual is not True),
        ("EOS", spec.eos is not None), ("no BOS", spec.bos is None)) if present]
    if found:
        raise NotExtractable(f"counting extraction handles models with BOS, no EOS, no norms, "
                             f"no positional encoding and every skip connection; this model "
                             f"has {', '.join(found)}")
    if spec.output.task != "recognition" or spec.output.readout != "last":
        raise NotExtractable("counting extraction handles recognition at the last position")
    for layer, block in enumerate(spec.blocks):
        if block.attn is not None:
            for h, (kind, mask) in enumerate(zip(block.attn.head_kinds, block.attn.head_masks)):
                if kind not in ("run", "saturated", "tolerant-hard") or mask != "causal":
                    raise NotExtractable(f"block {layer} head {h} is {kind} with a {mask} mask: "
                                         "counting extraction handles causal saturated and "
                                         "tolerant-hard heads")
        if block.mlp is not None and block.mlp.activation != "relu":
            raise NotExtractable(f"block {layer}: the feed-forward is {block.mlp.activation}, "
                                 "not piecewise linear (ReLU)")


def _merged(prog: _Program, cases: list[Case], layer: int, tag: str) -> list[Case]:
    """Cases with equal residual forms made one (their guards joined)."""
    groups: dict[tuple, list[Case]] = {}
    for case in cases:
        if case.guard != "False":
            groups.setdefault((case.bos, case.x.key()), []).append(case)
    if len(groups) > MAX_CASES:
        raise NotExtractable(f"block {layer}: more than {MAX_CASES} cases (each a guard and a "
                             "form in the counts)")
    merged = []
    for k, same in enumerate(groups.values()):
        guard = _any(c.guard for c in same)
        merged.append(Case(prog.define(f"case{layer}{tag}_{k}", guard), same[0].x, same[0].bos))
    return merged


def _attend(prog, spec, layer, cases, N):
    """Every head of a block on every case: the cases after the block's attention."""
    a = spec.blocks[layer].attn
    W_O = [_exact(a.W_O[h]) for h in range(a.n_heads)]
    heads = [_HeadForms(spec, layer, h, cases) for h in range(a.n_heads)]
    b_O = Form(_exact(a.b_O)) if a.b_O is not None else None
    out = []
    for case in cases:
        branches: list[tuple[list, Form]] = [([], Form(case.x.const * 0))]
        for h, head in enumerate(heads):
            branches = [(lits + more, acc + (o @ W_O[h]))
                        for lits, acc in branches for more, o in head.outcomes(prog, case)
                        if _conjoined(lits + more) is not None]
            N = min(N, head.N)
        for lits, acc in branches:
            x = case.x + acc + (b_O if b_O is not None else Form(case.x.const * 0))
            out.append(Case(prog.guard(case.guard, lits), x, case.bos))
    return out, N


class _HeadForms:
    """One head's keys and values per case (constant), and its outcome per query case."""

    def __init__(self, spec: ModelSpec, layer: int, h: int, cases: list[Case]) -> None:
        a = spec.blocks[layer].attn
        self.where = f"block {layer} head {h}"
        self.W_Q, self.s = _exact(a.W_Q[h]), Fraction(float(a.score_scale))
        self.b_Q = _exact(a.b_Q[h]) if a.b_Q is not None else None
        W_K, W_V = _exact(a.W_K[h]), _exact(a.W_V[h])
        b_K = _exact(a.b_K[h]) if a.b_K is not None else 0
        b_V = _exact(a.b_V[h]) if a.b_V is not None else 0
        self.cases = cases
        self.keys, self.values = [], []
        for case in cases:
            k, v = case.x @ W_K, case.x @ W_V
            if k.coef or v.coef:
                raise NotExtractable(f"{self.where}: a key or value reads a count (an average "
                                     "of averages: not recovered)")
            self.keys.append(k.const + b_K)
            self.values.append(v.const + b_V)
        atol, rtol = tie_tolerance(a.W_Q.dtype)
        delta = a.head_deltas[h]
        self.tol = (delta, 4 * np.finfo(float).eps) if a.head_kinds[h] == "tolerant-hard" \
            and delta is not None else (atol, rtol)
        self.N = spec.max_tokens or 10**9

    def outcomes(self, prog: _Program, query: Case) -> list[tuple[list, Form]]:
        """(literals, head output) pairs covering every position of the query's case."""
        q = query.x @ self.W_Q + (Form(self.b_Q) if self.b_Q is not None else
                                  Form(query.x.const @ self.W_Q * 0))
        keys = [k for k, c in enumerate(self.cases) if c.bos or not query.bos]
        groups: dict[tuple, list[int]] = {}
        scores = {}
        for k in keys:
            score = Form(q.const @ self.keys[k] * self.s,
                         {v: c @ self.keys[k] * self.s for v, c in q.coef.items()})
            groups.setdefault(score.key(), []).append(k)
            scores[score.key()] = score
        order = list(groups)
        self._certify([scores[g] for g in order])
        pairs = list(itertools.combinations(range(len(order)), 2))
        result = []
        for signs in itertools.product(_OPS, repeat=len(pairs)):
            lits = [prog.compare(scores[order[a]] + scores[order[b]].scaled(-1), op)
                    for (a, b), op in zip(pairs, signs)]
            if _conjoined(lits) is None:
                continue
            levels = _levels(len(order), dict(zip(pairs, signs)))
            if levels is None:
                continue  # no real scores are ordered so
            for more, out in self._best(prog, query, [[k for i in lv for k in groups[order[i]]]
                                                      for lv in levels]):
                result.append((lits + more, out))
        return result

    def _certify(self, scores: list[Form]) -> None:
        """Differences are beyond the tie tolerance; lower N where a count's makes it so."""
        atol, rtol = self.tol
        bound = max(float(max(abs(lo), abs(hi))) for lo, hi in (s.bounds() for s in scores))
        tol = atol + rtol * bound
        for a, b in itertools.combinations(scores, 2):
            diff = a + b.scaled(-1)
            if not diff.coef:
                if abs(diff.const) <= tol:
                    gap = float(diff.const)
                    raise NotExtractable(f"{self.where}: two scores differ by {gap:.3g}, "
                                         "within the tie tolerance")
                continue
            terms = [diff.const, diff.const + diff.coef.get(U, 0)] + \
                [c for v, c in diff.coef.items() if v != U]
            scale = math.lcm(*(Fraction(c).denominator for c in terms))
            # a nonzero difference is at least 1/(scale·(i + 1)) >= 1/(scale·N)
            self.N = min(self.N, max(0, math.ceil(1 / (scale * tol)) - 1) if tol else self.N)

    def _best(self, prog: _Program, query: Case, levels: list[list[int]]):
        """(literals, output) for each way the best present level can fall."""
        absent: list = []
        for level in levels:
            cases = [self.cases[k] for k in level]
            if any(c.bos for c in cases) or query in cases:
                yield absent, self._value(prog, level)
                return
            present = prog.compare(Form(Fraction(0), {
                prog.count(_any(c.guard for c in cases)): Fraction(1)}), ">")
            yield absent + [present], self._value(prog, level)
            absent = absent + [present.negated()]
        raise AssertionError("BOS is always present")

    def _value(self, prog: _Program, level: list[int]) -> Form:
        """The head's output when the keys of ``level`` tie for the top score."""
        values = {tuple(self.values[k].tolist()) for k in level}
        if len(values) == 1:
            return Form(self.values[level[0]])
        if len(level) != len(self.cases):
            raise NotExtractable(f"{self.where}: keys of different values tie among part of "
                                 "the keys (a ratio of counts: not recovered)")
        by_value: dict[tuple, list[Case]] = {}
        for k in level:
            by_value.setdefault(tuple(self.values[k].tolist()), []).append(self.cases[k])
        out = Form(self.values[0] * 0)
        for value, cases in by_value.items():
            v = np.array(value, dtype=object)
            if any(c.bos for c in cases):
                out = out + Form(v * 0, {U: v})
            inputs = [c.guard for c in cases if not c.bos]
            if inputs and any(x != 0 for x in value):
                out = out + Form(v * 0, {prog.count(_any(inputs)): v})
        return out


def _levels(n: int, signs: dict[tuple[int, int], str]) -> list[list[int]] | None:
    """Groups 0..n-1 in levels, best first, from pairwise signs; None if inconsistent."""
    rank = {i: sum(1 for (a, b), op in signs.items() if (a == i and op == ">")
                   or (b == i and op == "<")) for i in range(n)}
    levels: dict[int, list[int]] = {}
    for i in range(n):
        levels.setdefault(rank[i], []).append(i)
    for (a, b), op in signs.items():
        want = {">": rank[a] > rank[b], "<": rank[a] < rank[b], "==": rank[a] == rank[b]}[op]
        if not want:
            return None
    return [levels[r] for r in sorted(levels, reverse=True)]


def _mlp(prog: _Program, mlp, case: Case) -> list[Case]:
    """The case after a ReLU feed-forward, split where a neuron's sign depends on the counts."""
    W_in, W_out = _exact(mlp.W_in), _exact(mlp.W_out)
    hidden = case.x @ W_in + (Form(_exact(mlp.b_in)) if mlp.b_in is not None
                              else Form(case.x.const @ W_in * 0))
    branches: list[tuple[list, list]] = [([], [])]
    for k in range(W_in.shape[1]):
        unit = hidden.item(k)
        on = prog.compare(unit, ">")
        zero = Form(unit.const * 0)
        ways = [(on, unit)] if on is True else [(True, zero)] if on is False else \
            [(on, unit), (on.negated(), zero)]
        branches = [(lits + [when], acts + [value]) for lits, acts in branches
                    for when, value in ways if _conjoined(lits + [when]) is not None]
    out = []
    for lits, acts in branches:
        act = Form(np.array([a.const for a in acts], dtype=object),
                   {v: np.array([a.coef.get(v, 0) for a in acts], dtype=object)
                    for v in set().union(*(a.coef for a in acts))})
        y = case.x + act @ W_out
        if mlp.b_out is not None:
            y = y + Form(_exact(mlp.b_out))
        out.append(Case(prog.guard(case.guard, lits), y, case.bos))
    return out
