"""Formal languages with exact samplers, oracle-checked negatives and next-symbol sets."""

from languages.base import EOS, Language, LanguageError
from languages.dyck1 import DYCK1, Dyck1, depth, depth_profile, max_depth
from languages.registry import get, names, register

__all__ = [
    "DYCK1",
    "EOS",
    "Dyck1",
    "Language",
    "LanguageError",
    "depth",
    "depth_profile",
    "get",
    "max_depth",
    "names",
    "register",
]
