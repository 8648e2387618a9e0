"""A user's automaton: satsim's JSON format, automata-lib's DFA shape, or a networkx graph.

Each becomes a complete DFA (missing transitions go to a rejecting sink) that runs the
automaton as given, before any minimisation; docs/regular.md describes the formats.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from pathlib import Path

from satsim.errors import SatsimError
from satsim.rasp.automata import DFA

MAX_AUTOMATON_STATES = 100_000
"""Automata with more states are refused."""


def complete_dfa(alphabet: Iterable, start, accepting: Iterable,
                 transitions: Mapping, states: Iterable = (), where: str = "the automaton") -> DFA:
    """The DFA of ``transitions[state][symbol] = state``, completed by a rejecting sink.

    States are any JSON values (compared as strings); symbols single characters. The states are
    numbered in the order ``states``, then ``start``, then as the transitions name them.
    """
    symbols = tuple(str(s) for s in alphabet)
    for symbol in symbols:
        if len(symbol) != 1:
            raise SatsimError(f"{where}: symbol {symbol!r} is not one character (satsim's "
                              "symbols are single characters)")
    if len(set(symbols)) != len(symbols) or not symbols:
        raise SatsimError(f"{where}: the alphabet must list distinct symbols, at least one")
    if not isinstance(transitions, Mapping):
        raise SatsimError(f"{where}: transitions must map each state to {{symbol: state}}")
    number: dict[str, int] = {}
    for state in [*states, start, *transitions]:
        number.setdefault(str(state), len(number))
    rows: dict[int, dict[int, str]] = {}
    for state, moves in transitions.items():
        if not isinstance(moves, Mapping):
            raise SatsimError(f"{where}: the transitions of state {state!r} are not a "
                              "{symbol: state} object")
        for symbol, target in moves.items():
            if str(symbol) not in symbols:
                raise SatsimError(f"{where}: state {state!r} reads {symbol!r}, which is not in "
                                  f"the alphabet {''.join(symbols)!r}")
            if isinstance(target, list | dict | set):
                raise SatsimError(f"{where}: state {state!r} on {symbol!r} goes to {target!r}, "
                                  "not one state (a DFA is deterministic)")
            number.setdefault(str(target), len(number))
            rows.setdefault(number[str(state)], {})[symbols.index(str(symbol))] = str(target)
        if len(number) > MAX_AUTOMATON_STATES:
            raise SatsimError(f"{where}: more than {MAX_AUTOMATON_STATES:,} states")
    accept = set()
    for state in accepting:
        if str(state) not in number:
            raise SatsimError(f"{where}: accepting state {state!r} is not a state")
        accept.add(number[str(state)])
    sink = len(number)
    delta = [tuple(number[row[a]] if a in row else sink for a in range(len(symbols)))
             for row in (rows.get(q, {}) for q in range(len(number)))]
    return DFA(symbols, tuple(delta) + ((sink,) * len(symbols),), number[str(start)],
               frozenset(accept))


def dfa_from_json(data, where: str = "the automaton") -> DFA:
    """A DFA from satsim's JSON object or automata-lib's DFA shape (told apart by their keys).

    satsim: ``alphabet`` (a string or a list), ``start``, ``accepting``, ``transitions``
    (``{state: {symbol: state}}``), optionally ``states``. automata-lib: ``input_symbols``,
    ``initial_state``, ``final_states``, ``transitions``, optionally ``states``.
    """
    if not isinstance(data, Mapping):
        raise SatsimError(f"{where}: expected a JSON object with the automaton's fields")
    names = ("alphabet", "start", "accepting", "transitions")
    if "input_symbols" in data:
        names = ("input_symbols", "initial_state", "final_states", "transitions")
    missing = [name for name in names if name not in data]
    if missing:
        raise SatsimError(f"{where}: missing {', '.join(missing)} (see docs/regular.md for the "
                          "format)")
    alphabet, start, accepting, transitions = (data[name] for name in names)
    if isinstance(alphabet, str):
        alphabet = list(alphabet)
    if not isinstance(alphabet, list) or not isinstance(accepting, list):
        raise SatsimError(f"{where}: {names[0]} and {names[2]} must be lists")
    states = data.get("states", [])
    if not isinstance(states, list):
        raise SatsimError(f"{where}: states must be a list")
    return complete_dfa(alphabet, start, accepting, transitions, states, where)


def read_dfa(path: str | Path) -> DFA:
    """The automaton in the JSON file ``path`` (:func:`dfa_from_json`)."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise SatsimError(f"cannot read {path}: {error}") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as error:
        raise SatsimError(f"{path}: not JSON ({error})") from None
    return dfa_from_json(data, str(path))


def dfa_from_graph(graph, start=None, label: str = "label",
                   alphabet: Iterable | None = None) -> DFA:
    """A DFA from a networkx DiGraph or MultiDiGraph.

    Nodes are states; a node with a true ``accepting`` (or ``accept``) attribute accepts, and
    the start is ``start``, the graph's ``start`` attribute, or the one node with a true
    ``start`` attribute. Each edge's ``label`` attribute (another name with ``label=``) is one
    symbol or a list or string of symbols; an edge of a MultiDiGraph without one is labelled by
    its key (the suite's graphs, :func:`languages.regular.dfa_graph`). The alphabet is
    ``alphabet``, the graph's ``alphabet`` attribute, or else every symbol on an edge.
    """
    start = graph.graph.get("start") if start is None else start
    alphabet = graph.graph.get("alphabet") if alphabet is None else alphabet
    if start is None:
        starts = [node for node, flag in graph.nodes(data="start") if flag]
        if len(starts) != 1:
            raise SatsimError(f"the graph has {len(starts)} nodes with a true 'start' "
                              "attribute; mark one, or pass start=")
        start = starts[0]
    elif start not in graph:
        raise SatsimError(f"the start {start!r} is not a node of the graph")
    transitions: dict = {node: {} for node in graph.nodes}
    edges = graph.edges(keys=True, data=label) if graph.is_multigraph() else \
        ((u, v, None, symbols) for u, v, symbols in graph.edges(data=label))
    for source, target, key, symbols in edges:
        symbols = key if symbols is None and isinstance(key, str) else symbols
        if symbols is None:
            raise SatsimError(f"the edge {source!r} -> {target!r} has no {label!r} attribute")
        for symbol in [symbols] if isinstance(symbols, str) and len(symbols) <= 1 else symbols:
            if transitions[source].get(symbol, target) != target:
                raise SatsimError(f"state {source!r} has two edges on {symbol!r}: the graph "
                                  "is not deterministic")
            transitions[source][symbol] = target
    if alphabet is None:
        alphabet = sorted({s for moves in transitions.values() for s in moves}, key=str)
    accepting = [node for node, data in graph.nodes(data=True)
                 if data.get("accepting") or data.get("accept")]
    return complete_dfa(alphabet, start, accepting, transitions, list(graph.nodes), "the graph")
