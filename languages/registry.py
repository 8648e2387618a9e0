"""Registry of languages by name: ``register`` plugs one in, ``get`` and ``names`` look up."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import TypeVar

from languages.base import EOS, Language, LanguageError

_LANGUAGES: dict[str, Language] = {}
_FAMILIES: list[tuple[re.Pattern, Callable[..., Language], str]] = []
_BUILT: dict[str, Language] = {}

T = TypeVar("T", bound="Language | type[Language]")


def _check_definition(lang: Language) -> None:
    """Raise LanguageError if a language's name or alphabet is malformed."""
    if not isinstance(lang, Language):
        raise LanguageError(f"can only register Language instances, got {lang!r}")
    name, alphabet = getattr(lang, "name", None), getattr(lang, "alphabet", None)
    if not isinstance(name, str) or not name or any(c.isspace() for c in name):
        raise LanguageError(f"language name must be a non-empty word, got {name!r}")
    if (
        not isinstance(alphabet, tuple)
        or not alphabet
        or len(set(alphabet)) != len(alphabet)
        or not all(isinstance(a, str) and len(a) == 1 for a in alphabet)
        or EOS in alphabet
    ):
        raise LanguageError(
            f"alphabet of {name} must be a tuple of distinct one-character strings, "
            f"got {alphabet!r}"
        )


def register(lang: T) -> T:
    """Register a language instance, or (as a class decorator) an instance of the class."""
    instance = lang() if isinstance(lang, type) else lang
    _check_definition(instance)
    existing = _LANGUAGES.get(instance.name)
    if existing is not None and type(existing) is not type(instance):
        raise LanguageError(f"language name {instance.name!r} is already registered")
    _LANGUAGES[instance.name] = instance
    return lang


def register_family(pattern: str, factory: Callable[..., Language], shape: str) -> None:
    """Let ``get`` build languages whose name fully matches ``pattern`` (int groups to factory).

    ``shape`` describes the names for error messages, e.g. "dyck-K-M".
    """
    _FAMILIES.append((re.compile(pattern), factory, shape))


def names() -> list[str]:
    """Return the sorted names of the registered languages."""
    return sorted(_LANGUAGES)


def get(name: str) -> Language:
    """Return the language called ``name``; LanguageError lists the known names otherwise."""
    if isinstance(name, str) and name in _LANGUAGES:
        return _LANGUAGES[name]
    if isinstance(name, str) and name in _BUILT:
        return _BUILT[name]
    for pattern, factory, _ in _FAMILIES:
        match = pattern.fullmatch(name) if isinstance(name, str) else None
        if match:
            lang = factory(*(int(g) for g in match.groups()))
            if lang.name != name:  # e.g. a leading zero: "dyck-2-03"
                break
            _BUILT[name] = lang
            return lang
    families = "".join(f"; or {shape}" for _, _, shape in _FAMILIES)
    raise LanguageError(f"unknown language {name!r}; known: {', '.join(names())}{families}")
