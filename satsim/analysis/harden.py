"""Harden a soft model head by head: which heads already act as hard attention or as counters.

For every head, each kind of docs/semantics.md §1 is tried alone (the other heads soft): first
tolerant-hard, from the default tolerance (i.e. saturated) up through :data:`TOLERANT_WIDTHS`,
stopping at the first width that keeps the decisions; then score-class from the narrowest width
whose classes per query stay bounded (at most :data:`MAX_CLASSES`, and no more on the last bin
than on the first: read off the soft model's own queries and keys, no model run, on a fine log
grid) up through the next bounded widths and then :data:`ONE_CLASS` (one class: the plain
counter), stopping at the first that keeps them. A head *keeps the decisions* when, with it
alone changed, at least :data:`AGREEMENT` of the strings of every length bin get the soft
model's answer exactly at every scored position (the bins are run in order and a head's trial
stops at the first bin that fails). Then a greedy search adds heads, most faithful first (with
``prefer="counter"``, the heads that can be counters first), each with its preferred kind
(selector: the tolerant-hard width found; else counter: the score-class width found), keeping a
head only if the model with every head kept so far still agrees on every bin. The result is the
hybrid spec, every head's kind fixed (soft where none kept).

With ``held_out`` = k, the last k bins are not searched: agreement is required on the others
only, and the hybrid's agreement on the held-out bins is measured after the search (lengths it
never saw). The held-out bins still count for the score classes' bound.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, replace

import numpy as np

from satsim.engine.simulator import Simulator
from satsim.errors import SatsimError
from satsim.model.scaling import scale_spec
from satsim.model.spec import ModelSpec
from satsim.reference.attention import class_count

WIDTHS = (1e-3, 3e-3, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0)
"""The range (its ends) and the grid of score-class widths δ, in score units."""
SCAN = 31
"""How many log-spaced widths between the grid's ends are scanned for bounded classes (whether
the classes are bounded is not monotone in the width, so no bisection)."""
CLASS_TRIES = 3
"""How many score-class widths are tried on a head, from the narrowest bounded one up."""
TOLERANT_WIDTHS = (None, 0.01, 0.1, 1.0, 3.0)
"""The widths δ tried for tolerant-hard, in order (None: the default tolerance, saturated)."""
AGREEMENT = 0.99
"""The per-string agreement with the soft model a hardened head must keep on every bin."""
MAX_CLASSES = 8
"""The most score classes per query a score-class head may use to count as discrete."""
ONE_CLASS = 1e6
"""The score-class width tried last, after the grid: wider than the score range of any query of
the zoo's models, so that every allowed key falls in one class and the head is the plain
counter (the uniform mean of its allowed keys' values). The classes are still counted on the
soft run, as for every width: a query whose scores spread further gets more than one."""

PREFERENCES = ("selector", "counter")
"""Which kind a head that keeps the decisions both ways tries first: tolerant-hard (a selector)
or score-class (a counter)."""

Head = tuple[int, int]
Option = tuple[str, float | None]


@dataclass(frozen=True)
class HeadReport:
    """One head: the widths at which each kind alone keeps the decisions, and what it became."""

    layer: int
    head: int
    kind: str  # in the hybrid: soft, saturated, tolerant-hard or score-class
    delta: float | None
    role: str  # selector, counter or soft
    agreement: tuple[float, ...]  # per searched bin, of the head's option alone (soft: 1.0)
    classes: tuple[int, ...]  # per bin, the most score classes per query (score-class only)
    tolerant_widths: tuple[float | None, ...]  # the tolerant-hard width that keeps the decisions
    class_widths: tuple[float, ...]  # the score-class width that keeps them, bounded


@dataclass(frozen=True)
class Hardening:
    """The hybrid model, its heads, and its agreement with the soft model per bin."""

    spec: ModelSpec
    heads: tuple[HeadReport, ...]
    bins: tuple[tuple[int, int], ...]
    agreement: tuple[float, ...]  # per bin, held-out bins included
    searched: int  # how many leading bins the search required to agree (the rest: held out)

    @property
    def hardened(self) -> int:
        """How many heads are not soft."""
        return sum(report.kind != "soft" for report in self.heads)


def heads_of(spec: ModelSpec) -> list[Head]:
    """Every (layer, head) of the model."""
    return [(layer, h) for layer, block in enumerate(spec.blocks) if block.attn is not None
            for h in range(block.attn.n_heads)]


def with_kinds(spec: ModelSpec, options: dict[Head, Option]) -> ModelSpec:
    """``spec`` with the given heads' kinds and widths, every other head soft."""
    blocks = []
    for layer, block in enumerate(spec.blocks):
        if block.attn is not None:
            chosen = [options.get((layer, h), ("soft", None)) for h in range(block.attn.n_heads)]
            block = replace(block, attn=replace(block.attn, kind=tuple(k for k, _ in chosen),
                                                delta=tuple(d for _, d in chosen)))
        blocks.append(block)
    return replace(spec, blocks=tuple(blocks))


class _Judge:
    """The soft model's answers on the strings of each bin, and how often a variant agrees."""

    def __init__(self, spec: ModelSpec, strings: Sequence[Sequence[str]],
                 scored_from: Callable[[object], int] | None = None, held_out: int = 0) -> None:
        self.spec = spec
        self.strings = [list(group) for group in strings]
        self.searched = len(self.strings) - held_out
        self.starts = [[scored_from(s) if scored_from else 0 for s in group]
                       for group in self.strings]
        soft = Simulator(spec, "softmax")
        self.soft = [soft.outputs(group) if group else [] for group in self.strings]
        self.soft_traces: list[list] | None = None

    def agreement(self, options: dict[Head, Option], stop_below: float | None = None,
                  searched_only: bool = True) -> tuple[float, ...]:
        """Per searched bin (every bin if not ``searched_only``), the share answered as soft.

        A string counts when its answers equal the soft model's at every scored position. With
        ``stop_below``, the bins after the first whose share is below it are not run (their
        shares are NaN): the options already fail.
        """
        simulator = Simulator(with_kinds(self.spec, options), "softmax")
        shares: list[float] = []
        for index in range(self.searched if searched_only else len(self.strings)):
            if shares and stop_below is not None and shares[-1] < stop_below:
                shares.append(float("nan"))
                continue
            shares.append(self.share(simulator, index))
        return tuple(shares)

    def share(self, simulator: Simulator, index: int) -> float:
        """The share of bin ``index``'s strings that ``simulator`` answers as the soft model."""
        group = self.strings[index]
        if not group:
            return 1.0
        same = [a[start:] == b[start:] if start else a == b for a, b, start in
                zip(simulator.outputs(group), self.soft[index], self.starts[index])]
        return float(np.mean(same))

    def keeps(self, options: dict[Head, Option]) -> tuple[float, ...] | None:
        """The shares per bin when every bin keeps :data:`AGREEMENT` of the answers, else None."""
        shares = self.agreement(options, stop_below=AGREEMENT)
        return shares if min(shares) >= AGREEMENT else None

    def classes(self, head: Head, width: float,
                stop_above: int | None = None) -> tuple[int, ...] | None:
        """Per bin, the most score classes of width ``width`` any query of ``head`` sees.

        The head's queries and keys are the soft model's: the head is tried with every other
        head soft, and its own kind does not change its inputs. With ``stop_above``, None as
        soon as one query sees more classes than that.
        """
        layer, h = head
        if self.soft_traces is None:  # the soft model's queries and keys, traced once
            self.soft_traces = [Simulator(self.spec, "softmax").traces(group) if group else []
                                for group in self.strings]
        most = []
        for traces in self.soft_traces:
            top = 0
            for trace in traces:
                layer_trace = trace.layers[layer]
                counts = class_count(layer_trace.queries[h], layer_trace.keys[h], width=width,
                                     scale=layer_trace.scale, attn_mask=layer_trace.masks[h])
                top = max(top, int(counts.max(initial=0)))
                if stop_above is not None and top > stop_above:
                    return None
            most.append(top)
        return tuple(most)


def _bounded(classes: tuple[int, ...] | None) -> bool:
    """Whether score classes per query stay discrete: few, and no more on the last bin."""
    return classes is not None and max(classes) <= MAX_CLASSES and classes[-1] <= classes[0]


def _class_widths(judge: _Judge, head: Head, widths: Sequence[float]) -> list[float]:
    """The score-class widths to try on ``head``, most faithful first, all with bounded classes.

    The narrowest :data:`CLASS_TRIES` widths with bounded classes among the grid ``widths`` and
    :data:`SCAN` log-spaced widths (three significant digits) between its ends; the classes are
    read off the soft run, no model run.
    """
    scan = {float(f"{w:.3g}") for w in np.geomspace(widths[0], widths[-1], SCAN)}
    bounded = (w for w in sorted(scan | set(widths))
               if _bounded(judge.classes(head, w, stop_above=MAX_CLASSES)))
    return list(itertools.islice(bounded, CLASS_TRIES))


def _counter_widths(judge: _Judge, head: Head, widths: Sequence[float]) -> Iterator[float]:
    """The score-class widths to try on ``head``, in order: the grid's, then :data:`ONE_CLASS`.

    :data:`ONE_CLASS` where its classes are bounded, counted only when the grid's widths failed.
    """
    yield from _class_widths(judge, head, widths)
    if _bounded(judge.classes(head, ONE_CLASS, MAX_CLASSES)):
        yield ONE_CLASS


def _head_options(judge: _Judge, head: Head, widths: Sequence[float], prefer: str = "selector"
                  ) -> tuple[HeadReport, list[Option]]:
    """Try the kinds and widths on ``head`` alone; its report and its options, preferred first.

    ``prefer``: "selector" puts the tolerant-hard option first, "counter" the score-class one.
    """
    tolerant = next(((width, shares) for width in TOLERANT_WIDTHS
                     if (shares := judge.keeps({head: ("tolerant-hard", width)})) is not None),
                    None)
    counting = None
    for width in _counter_widths(judge, head, widths):
        shares = judge.keeps({head: ("score-class", width)})
        if shares is not None:
            counting = (width, shares, judge.classes(head, width))
            break
    tolerant_widths = () if tolerant is None else (tolerant[0],)
    class_widths = () if counting is None else (counting[0],)
    layer, h = head
    found: list[tuple[Option, HeadReport]] = []
    if tolerant is not None:
        option = ("saturated", None) if tolerant[0] is None else ("tolerant-hard", tolerant[0])
        found.append((option, HeadReport(layer, h, *option, "selector", tolerant[1], (),
                                         tolerant_widths, class_widths)))
    if counting is not None:
        option = ("score-class", counting[0])
        found.append((option, HeadReport(layer, h, *option, "counter", counting[1], counting[2],
                                         tolerant_widths, class_widths)))
    if prefer == "counter":
        found.reverse()
    if not found:
        return HeadReport(layer, h, "soft", None, "soft", (1.0,) * judge.searched, (), (),
                          ()), []
    return found[0][1], [option for option, _ in found]


def agreement_with_soft(spec: ModelSpec, strings: Sequence[Sequence[str]],
                        simulator: Simulator,
                        scored_from: Callable[[object], int] | None = None) -> tuple[float, ...]:
    """Per bin, the share of strings ``simulator`` answers as ``spec``'s soft model does."""
    judge = _Judge(spec, strings, scored_from)
    return tuple(judge.share(simulator, index) for index in range(len(judge.strings)))


def first_changes(spec: ModelSpec, strings: Sequence[Sequence[str]], grid: Sequence[float],
                  simulator_at: Callable[[float], Simulator],
                  scored_from: Callable[[object], int] | None = None
                  ) -> tuple[float | None, ...]:
    """Per bin, the first value of ``grid`` at which the decisions change.

    That is where ``simulator_at(value)`` answers fewer than :data:`AGREEMENT` of the bin's
    strings as the soft model does (at the scored positions); None where no value of the grid
    changes them. The grid is run in order and each bin stops at its first change.
    """
    return _first_changes(_Judge(spec, strings, scored_from), grid, simulator_at)


def _first_changes(judge: _Judge, grid: Sequence[float],
                   simulator_at: Callable[[float], Simulator]) -> tuple[float | None, ...]:
    """:func:`first_changes` against answers already judged (the soft run made once)."""
    first: list[float | None] = [None] * len(judge.strings)
    for value in grid:
        open_bins = [i for i, found in enumerate(first) if found is None]
        if not open_bins:
            break
        simulator = simulator_at(value)
        for index in open_bins:
            if judge.share(simulator, index) < AGREEMENT:
                first[index] = value
    return tuple(first)


def sublayers(spec: ModelSpec) -> list[str]:
    """The model's parameter groups in order: each tensor name without its last part."""
    return list(dict.fromkeys(name.rsplit(".", 1)[0] for name in spec.tensors()))


def growth_first_changes(spec: ModelSpec, strings: Sequence[str], grid: Sequence[float],
                         scored_from: Callable[[object], int] | None = None
                         ) -> dict[str, float | None]:
    """Per sublayer, the first c of ``grid`` at which its growth alone changes the decisions.

    The sublayer's parameters go to c·θ_g, the rest stay at θ (float64), and the decisions
    change where fewer than :data:`AGREEMENT` of ``strings`` get the model's answers; None where
    no c of the grid changes them. The sublayers that change them at the smallest c are the
    ones whose growth causes the whole model's change.
    """
    wide = spec.astype(np.float64)
    judge = _Judge(wide, [strings], scored_from)  # the model's own answers, run once

    def grown(group: str) -> Callable[[float], Simulator]:
        return lambda c: Simulator(scale_spec(wide, c, {"*": 1 / c, f"{group}.*": 1.0}),
                                   "softmax")
    return {group: _first_changes(judge, grid, grown(group))[0] for group in sublayers(wide)}


def harden(spec: ModelSpec, strings: Sequence[Sequence[str]],
           bins: Sequence[tuple[int, int]],
           scored_from: Callable[[object], int] | None = None,
           widths: Sequence[float] = WIDTHS, held_out: int = 0,
           prefer: str = "selector") -> Hardening:
    """Harden ``spec`` against its own soft answers on ``strings`` (one list per length bin).

    ``scored_from`` gives, per string, the first position whose answer counts (default: all);
    ``widths`` is the grid of score-class widths (ascending; its ends bound the scan);
    the last ``held_out`` bins are not searched, only measured on the hybrid; ``prefer``
    ("selector" or "counter") says which kind a head that keeps the decisions either way tries
    first (tolerant-hard or score-class).
    """
    if prefer not in PREFERENCES:
        raise SatsimError(f"prefer must be one of {PREFERENCES}, got {prefer!r}")
    if not 0 <= held_out < len(strings):
        raise SatsimError(f"held_out must leave at least one of the {len(strings)} bins to "
                          f"search, got {held_out}")
    judge = _Judge(spec, strings, scored_from, held_out)
    reports, options = {}, {}
    for head in heads_of(spec):
        reports[head], options[head] = _head_options(judge, head, widths, prefer)
    kept: dict[Head, Option] = {}
    # most faithful first; preferring counters, the heads that can be one come first
    order = sorted(options, key=lambda head: (
        prefer == "counter" and not reports[head].class_widths, -min(reports[head].agreement)))
    for head in order:
        for option in options[head]:
            if judge.keeps({**kept, head: option}) is not None:
                kept[head] = option
                break
    final = []
    for head in heads_of(spec):
        report = reports[head]
        kind, delta = kept.get(head, ("soft", None))
        if (kind, delta) != (report.kind, report.delta):  # the joint search chose otherwise
            role = {"soft": "soft", "score-class": "counter"}.get(kind, "selector")
            classes = judge.classes(head, delta) if kind == "score-class" else ()
            shares = judge.agreement({head: (kind, delta)}) if kind != "soft" else (
                (1.0,) * judge.searched)
            report = replace(report, kind=kind, delta=delta, role=role, agreement=shares,
                             classes=classes)
        final.append(report)
    hybrid = with_kinds(spec, kept)
    hybrid = replace(hybrid, name=f"{spec.name}-hardened",
                     description=f"{spec.name} with heads hardened by satsim harden")
    return Hardening(hybrid, tuple(final), tuple(bins),
                     judge.agreement(kept, searched_only=False), judge.searched)
