"""The seven Tomita languages over {0, 1} (Tomita 1982), each as a small DFA."""

from __future__ import annotations

from languages.references import BHATTAMISHRA, TOMITA
from languages.registry import register
from languages.regular import RegularLanguage, dfa_graph

BINARY = ("0", "1")


def _tomita3(state: str, a: str) -> str | None:
    """Track the last maximal run: neutral, odd run of 1s, then odd/even run of 0s after it."""
    table = {
        ("neutral", "0"): "neutral",
        ("neutral", "1"): "odd-ones",
        ("odd-ones", "1"): "neutral",  # an even run of 1s constrains nothing
        ("odd-ones", "0"): "odd-zeros",
        ("odd-zeros", "0"): "even-zeros",
        ("odd-zeros", "1"): None,  # an odd run of 0s right after an odd run of 1s
        ("even-zeros", "0"): "odd-zeros",
        ("even-zeros", "1"): "odd-ones",
    }
    return table[state, a]


def _tomita7(phase: int, a: str) -> int | None:
    """Phase p of 0*1*0*1* reads "0" when p is even and "1" when odd; it can only move on."""
    while phase < 4 and a != "01"[phase % 2]:
        phase += 1
    return phase if phase < 4 else None


SPECS = {
    1: ("1*: only 1s", 0, lambda q, a: 0 if a == "1" else None, lambda q: True, "star-free"),
    2: ("(10)*", 0, lambda q, a: 1 - q if a == "10"[q] else None, lambda q: q == 0, "star-free"),
    3: (
        "no odd-length run of 0s immediately after an odd-length run of 1s",
        "neutral",
        _tomita3,
        lambda q: q != "odd-zeros",
        "regular",
    ),
    4: (
        "no 000 substring",
        0,
        lambda q, a: 0 if a == "1" else (q + 1 if q < 2 else None),
        lambda q: True,
        "star-free",
    ),
    5: (
        "an even number of 0s and an even number of 1s",
        (0, 0),
        lambda q, a: (q[0] ^ (a == "0"), q[1] ^ (a == "1")),
        lambda q: q == (0, 0),
        "regular",
    ),
    6: (
        "(number of 0s - number of 1s) divisible by 3",
        0,
        lambda q, a: (q + (1 if a == "0" else -1)) % 3,
        lambda q: q == 0,
        "regular",
    ),
    7: ("0*1*0*1*", 0, _tomita7, lambda q: True, "star-free"),
}

for number, (text, start, step, accepting, kind) in SPECS.items():
    register(
        RegularLanguage(
            f"tomita{number}",
            dfa_graph(BINARY, start, step, accepting),
            f"Tomita {number}: {text}",
            (TOMITA, BHATTAMISHRA),
            f"{kind} regular",
        )
    )
