"""A B-RASP program for the depth-bounded Dyck languages, level by level of nesting.

Pair every bracket with its partner as a stack would, ignoring types. A pair's height is 1 plus
the largest height of the pairs directly inside it, and a string's greatest depth is its
greatest height. Level ℓ of the program marks the positions covered by pairs of height at most
ℓ whose types agree: an uncovered opening bracket is covered when the first uncovered position
after it closes its type (everything between was covered at level ℓ − 1, so the two are
partners), and an uncovered closing bracket when the last uncovered one before it opens its
type. A string is in Dyck-K of depth at most M iff level M covers every position: the covered
pairs are well-nested blocks of agreeing types, so covering everything makes the string a
concatenation of such blocks, and a block of a valid string is covered at its height.

Each level is two attentions (leftmost over the strict future, rightmost over the strict past,
both skipping covered positions), so the program has 2·M heads whatever the size of the
language's minimal DFA, whose holonomy cascade grows with K^M (:mod:`satsim.rasp.holonomy`).
"""

from __future__ import annotations


def nesting_program(pairs: tuple[str, ...], depth: int, title: str) -> str:
    """The B-RASP program of Dyck over ``pairs`` (each "()"-like) of nesting depth ≤ ``depth``."""
    lines = [f"# {title}",
             "# Level l covers the brackets of pairs of height <= l whose types agree "
             "(satsim/rasp/nesting.py).",
             'alphabet = "' + "".join(pairs) + '"']
    for kind, (opening, closing) in enumerate(pairs):
        lines += [f'open{kind} = Q("{opening}")', f'close{kind} = Q("{closing}")']
    partner_ahead = " or ".join(f"(open{k}[i] and close{k}[j])" for k in range(len(pairs)))
    partner_behind = " or ".join(f"(close{k}[i] and open{k}[j])" for k in range(len(pairs)))
    for level in range(1, depth + 1):
        free = "True" if level == 1 else f"not covered{level - 1}[j]"
        below = "" if level == 1 else f"covered{level - 1} or "
        lines += [
            f"ahead{level} = leftmost(j > i, {free}, {partner_ahead}, default=False)",
            f"behind{level} = rightmost(j < i, {free}, {partner_behind}, default=False)",
            f"covered{level} = {below}ahead{level} or behind{level}",
        ]
    lines.append(f"accept = not leftmost(True, not covered{depth}[j], True, default=False)")
    return "\n".join(lines) + "\n"
