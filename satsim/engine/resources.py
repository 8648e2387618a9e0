"""Memory a request needs, estimated before it is allocated, against what the machine has free."""

from __future__ import annotations

import os

from satsim.errors import SatsimError

STRING_BYTES = 200
"""Bytes a sampled string costs beside its symbols: the str object, label, list slots, answer."""
SYMBOL_BYTES = 16
"""Bytes a sampled string costs per symbol: its text, copies while sampled and encoded, ids."""


def strings_bytes(count: int, mean_length: float) -> float:
    """Rough bytes held by ``count`` sampled strings of ``mean_length`` symbols."""
    return count * (STRING_BYTES + SYMBOL_BYTES * mean_length)


def available_memory() -> int:
    """Bytes of memory free for a new allocation (MemAvailable, else free physical pages)."""
    try:
        with open("/proc/meminfo") as handle:
            for line in handle:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")


def check_memory(needed: float, what: str, advice: str) -> None:
    """Raise a one-line SatsimError when ``needed`` bytes exceed the memory free now."""
    free = available_memory()
    if needed > free:
        raise SatsimError(f"{what} needs about {_gigabytes(needed)} GB of memory and "
                          f"{_gigabytes(free)} GB is free; {advice}")


def _gigabytes(count: float) -> str:
    return f"{count / 1e9:,.1f}" if count >= 1e8 else f"{count / 1e9:.2g}"
