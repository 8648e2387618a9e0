"""From an aperiodic (counter-free) DFA to a B-RASP program, by a holonomy cascade of resets.

The construction is the holonomy decomposition (Eilenberg; Maler 2010 for counter-free
automata), stated here for what B-RASP needs:

- The *images* are Q, every Q·w (w a nonempty word) and every singleton. A ≤ B (A is
  *subducted* by B) when A ⊆ B·w for some word w, ε included; A ≡ B when both hold. The height
  of a singleton is 0, and of any other image 1 + the largest height strictly below it.
- The *tiles* of an image A are the largest images strictly inside it. The state q is encoded
  by a chain Q = T₀ ⊋ T₁ ⊋ … ⊋ {q}, each a tile of the one before (a fixed choice of tile).
- Each ≡-class has a representative; in a counter-free automaton the bijection of an image onto
  its representative by any word is the same map (a word mapping A onto A is the identity on
  A). Level h of the cascade holds, for the chain's image T of height h, the tile after it,
  carried to T's representative: a *coordinate*, or nothing when no image of the chain has
  height h.
- Reading a letter a maps the chain to a chain for q·a, built from the top: where an image T of
  the old chain maps bijectively onto an ≡-equivalent image of the new one, the coordinate
  below it is kept (the bijections commute); everywhere else the new tile is a fixed choice
  containing the image of the old chain, which the levels above already determine.

So each level either keeps its value or is reset to a value that depends only on the letter and
the levels above: a cascade of reset automata. In B-RASP, level k at i is the value written at
the last reset at or before i: ``rightmost(j < i, reset_k[j], target_k[j], default=initial)``
gives its value at i - 1, and ``reset_k``, ``target_k`` are Boolean functions of the letter and
the upper levels' values at i - 1. The program's tables come from running the cascade on every
reachable chain, which also checks that each level is a function of its context (else the DFA
is not counter-free and nothing is emitted).
"""

from __future__ import annotations

import json
from collections import deque
from dataclasses import dataclass

from satsim.errors import SatsimError
from satsim.rasp.automata import DFA, Decision, decide

Image = frozenset
Chain = tuple  # of images, from Q down to a singleton


@dataclass(frozen=True)
class Cascade:
    """The holonomy cascade of a counter-free DFA, on its reachable chains."""

    dfa: DFA
    levels: tuple[int, ...]  # heights with a coordinate, top first
    initial: tuple  # the start state's coordinates, one per level (None: no coordinate)
    # per level: {(symbol, coordinates of the levels above before the letter): new value},
    # the contexts where the level is reset (everywhere else it keeps its value)
    resets: tuple[dict[tuple, object], ...]
    configurations: frozenset[tuple]  # reachable coordinate tuples
    accepting: frozenset[tuple]  # those whose chain ends in an accepting state


class _Skeleton:
    """Images, subduction, heights, tiles, representatives and their bijections."""

    def __init__(self, dfa: DFA) -> None:
        self.dfa = dfa
        everything = Image(range(dfa.states))
        self.images = self.orbit(everything) | {Image({q}) for q in range(dfa.states)}
        self.orbits = {image: self.orbit(image) for image in self.images}
        self.height: dict[Image, int] = {}
        for image in self.images:
            self.height_of(image)
        self.tiles = {image: self.maximal_inside(image) for image in self.images
                      if len(image) > 1}
        self.representative: dict[Image, Image] = {}
        self.to_representative: dict[Image, dict[int, int]] = {}
        for image in sorted(self.images, key=lambda a: (len(a), sorted(a))):
            if len(image) > 1:
                self.represent(image)

    def step(self, image: Image, symbol: int) -> Image:
        return Image(self.dfa.delta[q][symbol] for q in image)

    def orbit(self, image: Image) -> set[Image]:
        """Every image ``image``·w, w ∈ Σ* (ε included)."""
        found, queue = {image}, deque([image])
        while queue:
            current = queue.popleft()
            for symbol in range(len(self.dfa.alphabet)):
                nxt = self.step(current, symbol)
                if nxt not in found:
                    found.add(nxt)
                    queue.append(nxt)
        return found

    def height_of(self, image: Image) -> int:
        """0 for a singleton, else 1 + the largest height of an image strictly below."""
        if image not in self.height:
            strictly_below = [other for other in self.images if self.below(other, image)
                              and not self.below(image, other)]
            self.height[image] = 0 if len(image) == 1 else \
                1 + max(map(self.height_of, strictly_below), default=0)
        return self.height[image]

    def below(self, a: Image, b: Image) -> bool:
        """A ≤ B: A ⊆ B·w for some word w."""
        return any(a <= image for image in self.orbits[b])

    def maximal_inside(self, image: Image) -> list[Image]:
        inside = [other for other in self.images if other < image]
        return sorted((t for t in inside if not any(t < other for other in inside)),
                      key=lambda t: (-len(t), sorted(t)))

    def represent(self, image: Image) -> None:
        """Give ``image`` its class's representative and the bijection onto it (by a word)."""
        for representative in self.representative.values():
            if len(representative) == len(image) and self.below(image, representative) and \
                    self.below(representative, image):
                break
        else:
            representative = image
        # a word w with image·w = representative, as the map q -> q·w
        mapping = {q: q for q in image}
        queue, seen = deque([(image, mapping)]), {image}
        while queue:
            current, mapping = queue.popleft()
            if current == representative:
                break
            for symbol in range(len(self.dfa.alphabet)):
                nxt = self.step(current, symbol)
                if len(nxt) == len(image) and nxt not in seen:
                    seen.add(nxt)
                    queue.append((nxt, {q: self.dfa.delta[p][symbol] for q, p in
                                        mapping.items()}))
        if current != representative:
            raise SatsimError("internal: an image does not map onto its class representative")
        self.representative[image] = representative
        self.to_representative[image] = mapping

    def tile_containing(self, image: Image, part: Image) -> Image:
        """The chosen tile of ``image`` that contains ``part`` (the first in a fixed order)."""
        return next(t for t in self.tiles[image] if part <= t)

    def chain(self, state: int) -> Chain:
        """The chosen chain from Q down to {state}."""
        links = [Image(range(self.dfa.states))]
        while len(links[-1]) > 1:
            links.append(self.tile_containing(links[-1], Image({state})))
        return tuple(links)

    def coordinates(self, chain: Chain, levels: tuple[int, ...]) -> tuple:
        """The chain as one coordinate per level: a tile of a representative, or None."""
        found = {}
        for image, tile in zip(chain, chain[1:]):
            to_rep = self.to_representative[image]
            found[self.height[image]] = Image(to_rep[q] for q in tile)
        return tuple(found.get(level) for level in levels)

    def next_chain(self, chain: Chain, symbol: int) -> Chain:
        """The chain after one letter (see the module's docstring)."""
        images = [self.step(t, symbol) for t in chain]
        new = [chain[0]]
        j = 0
        while len(new[-1]) > 1:
            current = new[-1]
            if images[j] == current:
                last = max(k for k in range(j, len(chain)) if images[k] == current)
                if len(chain[last]) == len(current) and self.below(chain[last], current) and \
                        self.below(current, chain[last]):
                    new.append(images[last + 1])  # the bijection carries the tile: kept
                    if new[-1] not in self.tiles[current]:
                        raise SatsimError("internal: a carried tile is not a tile; the DFA "
                                          "is not counter-free")
                else:
                    new.append(self.tile_containing(current, images[last + 1]))
                j = last + 1
            else:
                new.append(self.tile_containing(current, images[j]))
        return tuple(new)


MAX_CASCADE_STATES = 400
"""Minimal DFAs of more states are refused: dyck-3-5's 365 already give 1,438 B-RASP
definitions and a model of 120 million parameters (docs/rasp.md)."""


def check_cascade_size(dfa: DFA) -> None:
    """Refuse, in one line, a DFA too large for :func:`cascade`."""
    if dfa.states > MAX_CASCADE_STATES:
        raise SatsimError(f"the minimal DFA has {dfa.states:,} states; its holonomy cascade is "
                          f"built for at most {MAX_CASCADE_STATES} (365 states already give a "
                          "model of 120 million parameters); `satsim decide --lang` still says "
                          "whether it is star-free")


def cascade(dfa: DFA, verdict: Decision | None = None) -> Cascade:
    """The holonomy cascade of a counter-free DFA on its reachable chains.

    ``verdict`` is :func:`decide`'s, where the caller has it already.
    """
    check_cascade_size(dfa)
    verdict = verdict or decide(dfa)
    if not verdict.star_free:
        raise SatsimError(f"the language is not star-free: the word {verdict.witness!r} acts as "
                          f"x with x^k ≠ x^(k+1) for every k (its powers cycle with period "
                          f"{verdict.period})")
    skeleton = _Skeleton(dfa)
    levels = tuple(sorted({skeleton.height[i] for i in skeleton.images if len(i) > 1},
                          reverse=True))
    start = skeleton.chain(dfa.start)
    chains, queue = {start}, deque([start])
    transitions = []
    while queue:
        chain = queue.popleft()
        for symbol in range(len(dfa.alphabet)):
            after = skeleton.next_chain(chain, symbol)
            expected = dfa.delta[next(iter(chain[-1]))][symbol]
            if after[-1] != Image({expected}):
                raise SatsimError("internal: the cascade lost the DFA's state")
            transitions.append((chain, symbol, after))
            if after not in chains:
                chains.add(after)
                queue.append(after)
    coordinates = {chain: skeleton.coordinates(chain, levels) for chain in chains}
    resets: list[dict[tuple, object]] = [{} for _ in levels]
    values: list[dict[tuple, set]] = [{} for _ in levels]
    for chain, symbol, after in transitions:
        old, new = coordinates[chain], coordinates[after]
        for k in range(len(levels)):
            values[k].setdefault((dfa.alphabet[symbol], old[:k]), set()).add((old[k], new[k]))
    for k, table in enumerate(values):
        for context, pairs in table.items():
            targets = {new for _, new in pairs}
            if len(targets) == 1 and any(old != new for old, new in pairs):
                resets[k][context] = next(iter(targets))
            elif any(old != new for old, new in pairs):
                raise SatsimError(f"internal: level {levels[k]} of the cascade is neither kept "
                                  "nor reset in one context; the DFA is not counter-free")
    accepting = {coordinates[c] for c in chains if next(iter(c[-1])) in dfa.accepting}
    return Cascade(dfa, levels, coordinates[start], tuple(resets),
                   frozenset(coordinates.values()), frozenset(accepting))


def brasp_text(machine: Cascade, title: str) -> str:
    """The cascade as a B-RASP program: one rightmost attention per level and value."""
    dfa, levels = machine.dfa, machine.levels
    values = [sorted({c[k] for c in machine.configurations}, key=_order)
              for k in range(len(levels))]
    index = [{value: m for m, value in enumerate(vs)} for vs in values]
    lines = [f"# {title}", "# B-RASP from the holonomy cascade of the minimal DFA "
             f"({dfa.states} states): level k is reset or kept, by the letter and the levels "
             "above;", "# L<k>_was<m>: level k had value m at i - 1; L<k>_is<m>: it has it at i.",
             f'alphabet = {_quoted("".join(dfa.alphabet))}']
    prefixes: dict[tuple, str | None] = {(): None}  # the levels above, before the letter

    def before(prefix: tuple) -> str | None:
        return _conjunction(prefix, prefixes, "W", "was", index, lines)

    for k in range(len(levels)):
        resets = machine.resets[k]
        start = index[k][machine.initial[k]]
        if not resets:
            for m in range(len(values[k])):
                lines.append(f"L{k}_was{m} = {m == start}")
                lines.append(f"L{k}_is{m} = {m == start}")
            continue
        contexts = {context: _both(f"Q({_quoted(context[0])})", before(context[1]))
                    for context in sorted(resets, key=repr)}
        lines.append(f"L{k}_reset = " + " or ".join(contexts.values()))
        for m, value in enumerate(values[k]):
            to = [contexts[c] for c in contexts if resets[c] == value]
            lines.append(f"L{k}_to{m} = " + (" or ".join(to) if to else "False"))
            lines.append(f"L{k}_was{m} = rightmost(j < i, L{k}_reset[j], L{k}_to{m}[j], "
                         f"default={m == start})")
            lines.append(f"L{k}_is{m} = (L{k}_reset and L{k}_to{m}) or "
                         f"(not L{k}_reset and L{k}_was{m})")
    now: dict[tuple, str | None] = {(): None}  # the levels after the letter

    def current(prefix: tuple) -> str:
        return _conjunction(prefix, now, "N", "is", index, lines) or "True"

    accepting = [current(c) for c in sorted(machine.accepting, key=repr)]
    lines.append("accept = " + (" or ".join(accepting) if accepting else "False"))
    return "\n".join(lines) + "\n"


def _conjunction(prefix: tuple, names: dict, stem: str, tense: str, index: list,
                 lines: list[str]) -> str | None:
    """A vector for "levels 0..len(prefix)-1 have these values" (None: no condition)."""
    if prefix not in names:
        k = len(prefix) - 1
        level = f"L{k}_{tense}{index[k][prefix[-1]]}"
        above = _conjunction(prefix[:-1], names, stem, tense, index, lines)
        if above is None:
            names[prefix] = level
        else:
            names[prefix] = f"{stem}{k + 1}_" + "_".join(str(index[m][v])
                                                        for m, v in enumerate(prefix))
            lines.append(f"{names[prefix]} = {above} and {level}")
    return names[prefix]


def _quoted(text: str) -> str:
    """A string literal of the program (quotes and backslashes escaped)."""
    return json.dumps(text, ensure_ascii=False)


def _both(first: str, second: str | None) -> str:
    """``first and second`` (just ``first`` without a second)."""
    return first if second is None else f"({first} and {second})"


def _order(value) -> tuple:
    """A fixed order of coordinate values (None first, then tiles by their states)."""
    return (0, ()) if value is None else (1, tuple(sorted(value)))
