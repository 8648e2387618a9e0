"""A sweep's settings from text: KEY=VALUE pairs and comma-separated lists of values."""

from __future__ import annotations

from satsim.errors import SatsimError
from satsim.training.config import DEFAULTS


def parse_setting(key: str, text: str):
    """Parse one setting's value with the type of its default."""
    if key not in DEFAULTS:
        raise SatsimError(f"unknown training setting {key!r}; known: {', '.join(DEFAULTS)}")
    kind = type(DEFAULTS[key])
    try:
        return kind(float(text)) if kind is int and "e" in text.lower() else kind(text)
    except (ValueError, OverflowError):  # OverflowError: an integer setting of 1e400
        what = "an integer" if kind is int else "a number"
        raise SatsimError(f"{key} needs {what}, got {text!r}") from None


def parse_pairs(items: tuple[str, ...], option: str) -> list[tuple[str, str]]:
    """Split KEY=VALUE items (with - or _ in keys); an empty key or value is refused."""
    pairs = []
    for item in items:
        key, equals, value = (part.strip() for part in item.partition("="))
        if not (equals and key and value):
            raise SatsimError(f"{option} takes KEY=VALUE (neither empty), got {item!r}")
        pairs.append((key.replace("-", "_"), value))
    return pairs


def comma_items(text: str, option: str) -> list[str]:
    """The items of a comma-separated list; an empty item (``a,,b``, ``a,``) is refused."""
    items = [item.strip() for item in text.split(",")]
    if not all(items):
        raise SatsimError(f"{option} has an empty item in {text!r}; separate values by single "
                          "commas")
    return items


def grid_from_lists(lang: str, seed: str, lr: str, vary: tuple[str, ...]) -> dict[str, list]:
    """The sweep grid from comma-separated languages, seeds, learning rates and KEY=V1,V2 items."""
    grid: dict[str, list] = {}
    for key, text in [("lang", lang), ("seed", seed), ("lr", lr), *parse_pairs(vary, "--vary")]:
        if text:
            grid[key] = [parse_setting(key, v) for v in comma_items(text, f"--{key}")]
    if not grid:
        raise SatsimError("nothing to sweep: give --lang, --seed, --lr or --vary KEY=V1,V2")
    return grid


def base_settings(fixed: tuple[str, ...]) -> dict:
    """Every training default, with the KEY=VALUE ``fixed`` settings applied."""
    return {**DEFAULTS, **{k: parse_setting(k, v) for k, v in parse_pairs(fixed, "--set")}}
