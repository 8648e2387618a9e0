"""Extra ``satsim`` subcommands, one module each, found by name at start-up.

Each module defines ``command`` (a click command). Modules must stay cheap to import:
torch and matplotlib are imported inside the command function, never at module level.
"""

from __future__ import annotations

import importlib
import pkgutil

import click


def discover() -> list[click.Command]:
    """Import every module of this package and return its ``command``."""
    found = []
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
        module = importlib.import_module(f"{__name__}.{info.name}")
        if isinstance(getattr(module, "command", None), click.Command):
            found.append(module.command)
    return found
