"""Independent brute-force definitions of every registered language (for the tests only)."""

import itertools
import math
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


def left_to_right(expression):
    """The value mod 5 of digits and operators taken in order, with no precedence."""
    value = int(expression[0])
    for op, digit in zip(expression[1::2], expression[2::2]):
        value = eval(f"{value}{op}{digit}") % 5  # noqa: S307 (two digits and an operator)
    return value


def modular_left_to_right(s):
    if not re.fullmatch(r"[0-4]([-+*][0-4])*=[0-4]", s):
        return False
    expression, answer = s.split("=")
    return left_to_right(expression) == int(answer)


def stack_program(s):
    """Run the stack machine on its operations; the answer must be the stack from the top."""
    match = re.fullmatch(r"([01]*)((?:\+[01]|-)*)#([01]*)", s)
    if not match:
        return False
    stack = list(match.group(1))
    for op in re.findall(r"\+[01]|-", match.group(2)):
        if op == "-":
            if not stack:
                return False
            stack.pop()
        else:
            stack.append(op[1])
    return match.group(3) == "".join(reversed(stack))


TRANSFORMS = {
    "marked-reversal": lambda w: w[::-1],
    "marked-copy": lambda w: w,
    "odds-first": lambda w: "".join(w[i] for i in range(0, len(w), 2))
    + "".join(w[i] for i in range(1, len(w), 2)),
    "bucket-sort": lambda w: "".join(sorted(w)),
}
WORD_SYMBOLS = {"marked-reversal": "01", "marked-copy": "01", "odds-first": "01",
                "bucket-sort": "12345"}


def marked(s, transform):
    parts = s.split("#")
    return len(parts) == 2 and parts[1] == transform(parts[0])


def little_endian(bits):
    return sum(2**i for i, b in enumerate(bits) if b == "1")


def arithmetic(s, pattern, value):
    match = re.fullmatch(pattern, s)
    if not match:
        return False
    *arguments, answer = (little_endian(g) for g in match.groups())
    return value(*arguments) == answer


def missing_duplicate(s):
    if s.count("_") != 1 or len(s) % 2:
        return False
    filled = s.replace("_", "1")
    return filled[: len(s) // 2] == filled[len(s) // 2 :]


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
    "aaaa-star": lambda s: re.fullmatch("(aaaa)*", s) is not None,
    "abcde": lambda s: re.fullmatch("a+b+c+d+e+", s) is not None,
    "ab-d-bc": lambda s: re.fullmatch("[ab]*d[bc]*", s) is not None,
    "012-0-2": lambda s: re.fullmatch("[012]*02*", s) is not None,
    "d2": lambda s: dyck(s.replace("a", "(").replace("b", ")"), 1, 2),
    "d3": lambda s: dyck(s.replace("a", "(").replace("b", ")"), 1, 3),
    "d4": lambda s: dyck(s.replace("a", "(").replace("b", ")"), 1, 4),
    "first": lambda s: s.startswith("1"),
    "even-pairs": lambda s: sum(a != b for a, b in zip(s, s[1:])) % 2 == 0,
    "cycle-navigation": cycle,
    "modular-arithmetic": modular,
    "modular-arithmetic-simple": modular_left_to_right,
    "repeat-01": lambda s: re.fullmatch("(01)*", s) is not None,
    "stack-manipulation": stack_program,
    **{name: (lambda s, f=f: marked(s, f)) for name, f in TRANSFORMS.items()},
    "unmarked-reversal": lambda s: len(s) % 2 == 0 and s == s[::-1],
    "missing-duplicate-string": missing_duplicate,
    "binary-addition": lambda s: arithmetic(s, r"([01]+)\+([01]+)=([01]+)", lambda x, y: x + y),
    "binary-multiplication": lambda s: arithmetic(s, r"([01]+)\*([01]+)=([01]+)",
                                                  lambda x, y: x * y),
    "compute-sqrt": lambda s: arithmetic(s, r"([01]+)=([01]+)", math.isqrt),
}


def completion_bound(name, language, m):
    """Return a length within which every viable prefix of length m can be completed.

    Brackets: close what is open (at most m symbols). Blocks a^i..: the other k-1 blocks, at
    most (k-1) m. Majority: m + 1 more a. Reset-Dyck: one "1". Cycle navigation: the answer
    digit. Modular arithmetic: at most a digit, "=" and the answer. FLaRe's string and
    arithmetic languages: as commented. Other regular languages: a shortest path to an accepting
    state visits no state twice, so fewer than the states.
    """
    if name == "cycle-navigation":
        return 1
    if name.startswith("modular-arithmetic"):
        return 3
    if name in TRANSFORMS:
        return m + 1  # the marker and the transform of what came before it
    if name == "unmarked-reversal":
        return m  # the reversal of the prefix
    if name == "missing-duplicate-string":
        return m + 2  # w = prefix + "1", then w again with that 1 blanked
    if name == "stack-manipulation":
        return m + 3  # a pending bit, the marker, then at most m + 1 stack symbols
    if name.startswith(("binary", "compute")):
        return m + 3  # at most "*1=" or "+0=" and a result no longer than the prefix
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
    if name.startswith("modular-arithmetic"):
        value = left_to_right if name.endswith("simple") else lambda e: eval(e) % 5  # noqa: S307
        out = []
        for n in range(0, (max_len - 3) // 2 + 1):
            for digits in itertools.product("01234", repeat=n + 1):
                for ops in itertools.product("+-*", repeat=n):
                    e = digits[0] + "".join(o + d for o, d in zip(ops, digits[1:]))
                    out.append(f"{e}={value(e)}")
        return out
    if name in TRANSFORMS:
        return [w + "#" + TRANSFORMS[name](w)
                for w in all_strings(WORD_SYMBOLS[name], (max_len - 1) // 2)]
    if name == "unmarked-reversal":
        return [w + w[::-1] for w in all_strings("01", max_len // 2)]
    if name == "missing-duplicate-string":
        return [(w + w)[:i] + "_" + (w + w)[i + 1 :]
                for w in all_strings("01", max_len // 2, 1)
                for i in range(2 * len(w)) if (w + w)[i] == "1"]
    if name == "stack-manipulation":
        return stack_members(max_len)
    if name.startswith(("binary", "compute")):
        return arithmetic_members(name, max_len)
    return None


def stack_members(max_len):
    """Every initial stack and sequence of pushes and pops that fits, with its answer."""
    out = []

    def grow(program, stack):
        if len(program) + 1 + len(stack) > max_len:  # a pop keeps the length, a push adds 3
            return
        out.append(program + "#" + "".join(reversed(stack)))
        for bit in "01":
            grow(program + "+" + bit, stack + [bit])
        if stack:
            grow(program + "-", stack[:-1])

    for initial in all_strings("01", (max_len - 1) // 2):
        grow(initial, list(initial))
    return out


def arithmetic_members(name, max_len):
    """Every choice of widths and numbers whose result fits its width (little-endian)."""
    def bits(value, width):
        return "".join(str(value >> i & 1) for i in range(width))

    if name == "compute-sqrt":
        return [bits(x, a) + "=" + bits(math.isqrt(x), c)
                for a in range(1, max_len) for c in range(1, max_len - a)
                for x in range(2**a) if math.isqrt(x) < 2**c]
    addition = name == "binary-addition"
    op, value = ("+", lambda x, y: x + y) if addition else ("*", lambda x, y: x * y)
    return [bits(x, a) + op + bits(y, b) + "=" + bits(value(x, y), c)
            for a in range(1, max_len) for b in range(1, max_len - a)
            for c in range(1, max_len - 1 - a - b)
            for x in range(2**a) for y in range(2**b) if value(x, y) < 2**c]
