"""Independent brute-force definitions of every registered language (for the tests only)."""

import itertools
import re

PAIRS = {"(": ")", "[": "]", "{": "}", "<": ">"}


def dyck(s, types, bound=None):
    opens = "([{<"[:types]
    closes = {PAIRS[o]: o for o in opens}
    stack = []
    for c in s:
        if c in opens:
            stack.append(c)
            if bound is not None and len(stack) > bound:
                return False
        elif not stack or stack.pop() != closes[c]:
            return False
    return not stack


def shuffle(s, types):
    for o in "([{<"[:types]:
        depth = 0
        for c in s:
            depth += (c == o) - (c == PAIRS[o])
            if depth < 0:
                return False
        if depth:
            return False
    return True


def blocks(s, letters):
    n, rest = divmod(len(s), len(letters))
    return rest == 0 and s == "".join(a * n for a in letters)


def reset_dyck(s):
    *head, last = s.split("1")
    for part in head:
        depth = 0
        for c in part:
            depth += 1 if c == "(" else -1
            if depth < 0:
                return False
    return dyck(last, 1)


def tomita3(s):
    runs = [(k, len(list(g))) for k, g in itertools.groupby(s)]
    return not any(
        a == ("1", runs[i][1]) and runs[i][1] % 2 and b[0] == "0" and b[1] % 2
        for i, (a, b) in enumerate(zip(runs, runs[1:]))
    )


def modular(s):
    if not re.fullmatch(r"[0-4]([-+*][0-4])*=[0-4]", s):
        return False
    expression, answer = s.split("=")
    return eval(expression) % 5 == int(answer)  # noqa: S307 (digits and + - * only)


def cycle(s):
    if not re.fullmatch(r"[LRS]*[0-4]", s):
        return False
    return (s.count("R") - s.count("L")) % 5 == int(s[-1])


REFERENCE = {
    "dyck1": lambda s: dyck(s, 1),
    "dyck2": lambda s: dyck(s, 2),
    "dyck3": lambda s: dyck(s, 3),
    "dyck-2-3": lambda s: dyck(s, 2, 3),
    "dyck-2-5": lambda s: dyck(s, 2, 5),
    "dyck-2-10": lambda s: dyck(s, 2, 10),
    "dyck-3-3": lambda s: dyck(s, 3, 3),
    "dyck-3-5": lambda s: dyck(s, 3, 5),
    "shuffle-dyck2": lambda s: shuffle(s, 2),
    "shuffle-dyck3": lambda s: shuffle(s, 3),
    "anbn": lambda s: blocks(s, "ab"),
    "anbncn": lambda s: blocks(s, "abc"),
    "anbncndn": lambda s: blocks(s, "abcd"),
    "majority": lambda s: s.count("a") > s.count("b"),
    "reset-dyck1": reset_dyck,
    "tomita1": lambda s: re.fullmatch("1*", s) is not None,
    "tomita2": lambda s: re.fullmatch("(10)*", s) is not None,
    "tomita3": tomita3,
    "tomita4": lambda s: "000" not in s,
    "tomita5": lambda s: s.count("0") % 2 == 0 and s.count("1") % 2 == 0,
    "tomita6": lambda s: (s.count("0") - s.count("1")) % 3 == 0,
    "tomita7": lambda s: re.fullmatch("0*1*0*1*", s) is not None,
    "parity-even": lambda s: s.count("1") % 2 == 0,
    "parity-odd": lambda s: s.count("1") % 2 == 1,
    "aa-star": lambda s: re.fullmatch("(aa)*", s) is not None,
    "abab-star": lambda s: re.fullmatch("(abab)*", s) is not None,
    "d2": lambda s: dyck(s.replace("a", "(").replace("b", ")"), 1, 2),
    "d3": lambda s: dyck(s.replace("a", "(").replace("b", ")"), 1, 3),
    "d4": lambda s: dyck(s.replace("a", "(").replace("b", ")"), 1, 4),
    "first": lambda s: s.startswith("1"),
    "even-pairs": lambda s: sum(a != b for a, b in zip(s, s[1:])) % 2 == 0,
    "cycle-navigation": cycle,
    "modular-arithmetic": modular,
}


def completion_bound(name, language, m):
    """Return a length within which every viable prefix of length m can be completed.

    Brackets: close what is open (at most m symbols). Blocks a^i..: the other k-1 blocks, at
    most (k-1) m. Majority: m + 1 more a. Reset-Dyck: one "1". Cycle navigation: the answer
    digit. Modular arithmetic: at most a digit, "=" and the answer. Other regular languages: a
    shortest path to an accepting state visits no state twice, so fewer than the states.
    """
    if name == "cycle-navigation":
        return 1
    if name == "modular-arithmetic":
        return 3
    if name.startswith(("dyck", "shuffle")):
        return m
    if name.startswith("an"):
        return (len(language.alphabet) - 1) * m
    if name == "majority":
        return m + 1
    if name == "reset-dyck1":
        return 1
    return language.states - 1


def all_strings(alphabet, max_len, min_len=0):
    for n in range(min_len, max_len + 1):
        for t in itertools.product(alphabet, repeat=n):
            yield "".join(t)


def dyck_words(types, max_len):
    """All Dyck words over the first ``types`` bracket pairs, from S -> "" | o S c S."""
    pairs = [(o, PAIRS[o]) for o in "([{<"[:types]]
    by_m = [[""]]
    for m in range(1, max_len // 2 + 1):
        by_m.append([
            o + a + c + b
            for i in range(m)
            for a in by_m[i]
            for b in by_m[m - 1 - i]
            for o, c in pairs
        ])
    return [w for words in by_m for w in words]


def members(name, max_len):
    """Members up to ``max_len`` listed straight from the definition, where that is cheap.

    Returns None where the only way is to test every string (then the caller does that).
    """
    ref = REFERENCE[name]
    if name.startswith("an"):
        letters = "abcd"[: len(name) // 2]
        return [
            "".join(a * n for a in letters) for n in range(max_len // len(letters) + 1)
        ]
    if name.startswith("dyck") and name != "dyck1":
        types = int(name[4]) if name[4].isdigit() else int(name.split("-")[1])
        return [w for w in dyck_words(types, max_len) if ref(w)]
    if name == "cycle-navigation":
        return [
            s + str((s.count("R") - s.count("L")) % 5)
            for s in all_strings("LRS", max_len - 1)
        ]
    if name == "modular-arithmetic":
        out = []
        for n in range(0, (max_len - 3) // 2 + 1):
            for digits in itertools.product("01234", repeat=n + 1):
                for ops in itertools.product("+-*", repeat=n):
                    e = digits[0] + "".join(o + d for o, d in zip(ops, digits[1:]))
                    out.append(f"{e}={eval(e) % 5}")  # noqa: S307 (digits and + - * only)
        return out
    return None
