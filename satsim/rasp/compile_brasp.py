"""Compile a B-RASP program into a saturated transformer, exact at every length up to a bound.

The model reads BOS·w; input position i is token position i (BOS is 0, and features count
tokens from 1, so ``i`` is i + 1 and ``n`` is the token count T = n + 1). Boolean vectors are
exact bits (:mod:`satsim.rasp.bits`). An attention ``leftmost(MASK, SCORE, VALUE, default=D)``:

- SCORE reads vectors at i and at j. For each assignment α of its reads at i, SCORE becomes a
  key-side formula S_α(j), and one head handles the queries whose reads at i are α. Its key bit
  c = S_α(j) ∧ ¬BOS marks the qualifying keys. Its mask is the model mask ``strict-past``
  (``j < i``), ``strict-future`` (``j > i``) or ``bidirectional`` (``True``); BOS, where it is
  allowed, never qualifies.
- Its score is T·c − pos (leftmost) or T·c + pos (rightmost), with ``pos`` the key's position
  feature: an integer, so qualifying keys (score ≥ 0, resp. > T) beat the others (< 0, resp.
  ≤ T), and among them the leftmost (rightmost) is the unique top score. The query is the
  constant (T, 1): every query is the same row, a fast path of the engine.
- The head copies the chosen key's c (``found``: 0 when nothing qualifies, or when no key is
  allowed and the head writes the zero vector) and VALUE's key-side bits, one per assignment
  β of VALUE's reads at i. A feed-forward then picks, by the query's own reads: VALUE where
  found, the default D(i) where not.

Heads with the same mask, direction and key bit are one head. The readout is 2·accept − 1 at
the last position, with the empty string's answer at BOS added as ±2·BOS.

Exactness: scores are integers below 2T, exact in float64, and a gap of 1 stays outside the
tie tolerance while atol + rtol·2T < 1: the model's ``max_tokens`` is the largest such T
(about 5·10⁸ at the default float64 tolerances); longer inputs are refused.
"""

from __future__ import annotations

import itertools
import math

from satsim.circuits.parts import ONE, Head
from satsim.model.settings import default_tolerance
from satsim.rasp import brasp
from satsim.rasp.bits import BOS_ATOM, ProgramCompiler
from satsim.rasp.ir import (
    FALSE,
    TRUE,
    Formula,
    Read,
    conjoin,
    constant,
    disjoin,
    negate,
    restrict,
    sort_key,
    substitute,
    var,
    variables,
)
from satsim.rasp.syntax import And, At, Attend, Constant, Node, Not

MODEL_MASKS = {"past": "strict-past", "future": "strict-future", "all": "bidirectional"}
"""The model mask (:mod:`satsim.model.masks`) of each B-RASP mask."""


class BraspCompiler(ProgramCompiler):
    """The formulas stage of a B-RASP program: attention read as formulas over its heads."""

    description = "compiled from a B-RASP program"

    def language_boolean(self, node: Node) -> Formula:
        """An attention's result, written into a dimension of its own."""
        if isinstance(node, Attend):
            return self.bits.compact(self.attend(node), "attend")
        raise TypeError(f"not a B-RASP node: {node!r}")

    def pair(self, node: Node) -> Formula:
        """A SCORE/VALUE/default formula over reads (:class:`~satsim.rasp.ir.Read`) at i and j."""
        if isinstance(node, At):
            return var(Read(node.index, self.boolean(node.vector)))
        if isinstance(node, Constant):
            return constant(node.value)
        if isinstance(node, Not):
            return negate(self.pair(node.arg))
        parts = [self.pair(arg) for arg in node.args]
        return conjoin(*parts) if isinstance(node, And) else disjoin(*parts)

    def attend(self, node: Attend) -> Formula:
        """The attention's vector: a formula over the heads' outputs and the query's bits."""
        score, value = self.pair(node.score), self.pair(node.value)
        default = _at_side(self.pair(node.default), "i")
        score_reads, value_reads = _query_reads(score), _query_reads(value)
        cases = []
        for alpha in itertools.product((True, False), repeat=len(score_reads)):
            keys = score
            for read, bit in zip(score_reads, alpha):
                keys = restrict(keys, read, bit)
            query_is = _holds(score_reads, alpha)
            qualifying = conjoin(_at_side(keys, "j"), negate(BOS_ATOM))
            if qualifying == FALSE:
                cases.append(conjoin(query_is, default))
                continue
            found, values = self.head(node, qualifying, value, value_reads)
            picked = disjoin(*(conjoin(query_is_value, chosen)
                               for query_is_value, chosen in values))
            cases.append(conjoin(query_is, disjoin(conjoin(found, picked),
                                                   conjoin(negate(found), default))))
        return disjoin(*cases)

    def head(self, node: Attend, qualifying: Formula, value: Formula,
             value_reads: list[Read]) -> tuple[Formula, list[tuple[Formula, Formula]]]:
        """One head: its ``found`` bit and, per assignment of VALUE's reads at i, the value."""
        key_bit = self.bits.bit(qualifying, "qualifies")
        sign = -1.0 if node.side == "leftmost" else 1.0
        query = {(self.circuit.feature_dim("n"), 0): 1.0, (ONE, 1): 1.0}
        key = {(key_bit, 0): 1.0, (self.circuit.feature_dim("i"), 1): sign}
        copies: dict[str, str] = {key_bit: "found"}
        values = []
        for beta in itertools.product((True, False), repeat=len(value_reads)):
            chosen = value
            for read, bit in zip(value_reads, beta):
                chosen = restrict(chosen, read, bit)
            chosen = _at_side(chosen, "j")
            query_is = _holds(value_reads, beta)
            if chosen not in (TRUE, FALSE):
                source = self.bits.bit(chosen, "value")
                copies.setdefault(source, "copied")
                chosen = var(source)  # the copy of the source, once the head is placed
            values.append((query_is, chosen))
        fresh = {source: self.circuit.fresh(hint) for source, hint in copies.items()}
        placed = self.circuit.attention(Head(query, key, fresh, mask=MODEL_MASKS[node.mask]))
        copied = [(query_is, substitute(chosen, lambda s: var(placed[s])))
                  for query_is, chosen in values]
        return var(placed[key_bit]), copied

    def accepts_empty(self) -> bool:
        """Whether the program accepts the empty string (its interpreter's answer)."""
        return brasp.accepts(self.program, "")

    def max_tokens(self) -> int:
        """The most tokens T for which an integer score gap of 1 beats the tie tolerance at 2T."""
        atol, rtol = default_tolerance(float)
        return math.ceil((1 - atol) / (2 * rtol)) - 1


def _at_side(formula: Formula, side: str) -> Formula:
    """The formula with the reads at ``side`` ("i" or "j") replaced by their vectors."""
    return substitute(formula, lambda read: read.vector if isinstance(read, Read)
                      and read.index == side else var(read))


def _query_reads(formula: Formula) -> list[Read]:
    """The formula's reads at the query position i, in a fixed order."""
    return sorted((read for read in variables(formula)
                   if isinstance(read, Read) and read.index == "i"),
                  key=lambda read: sort_key(read.vector))


def _holds(reads: list[Read], values: tuple[bool, ...]) -> Formula:
    """The formula true where each read's vector has its value in ``values``."""
    return conjoin(*(read.vector if bit else negate(read.vector)
                     for read, bit in zip(reads, values)))
