"""RASP-family programs (C-RASP, B-RASP): their meaning, and compilers into saturated transformers.

The compiled models are exact at every length up to a stated float64 bound
(:attr:`satsim.model.spec.ModelSpec.max_tokens`), beyond which they refuse inputs.

- :func:`read_program`, :func:`parse_program`: programs (``.crasp``, ``.brasp``), type-checked;
- :func:`interpreter`: a program's meaning, string → accept;
- :func:`compile_program`: a program → :class:`~satsim.model.spec.ModelSpec` that carries it
  (the compiler's stages: :mod:`satsim.rasp.stages`);
- :func:`verify`: a compiled model against a meaning, on every short and some long strings;
- :func:`decide_language`, :func:`star_free_program`, :func:`holonomy_program`: the suite's
  regular languages.
"""

from __future__ import annotations

from satsim.errors import SatsimError
from satsim.model.spec import ModelSpec
from satsim.rasp import brasp, crasp
from satsim.rasp.parse import ProgramError, parse_program, read_program
from satsim.rasp.regular import (
    decide_language,
    holonomy_program,
    regular_names,
    star_free_program,
)
from satsim.rasp.stages import compile_brasp, compile_crasp, compile_program
from satsim.rasp.syntax import Program
from satsim.rasp.verify import Verification, verify

__all__ = ["Program", "ProgramError", "Verification", "compile_brasp", "compile_crasp",
           "compile_program", "decide_language",
           "holonomy_program", "interpreter", "model_summary", "parse_program", "program_of",
           "read_program", "regular_names", "star_free_program", "verify"]


class Meaning:
    """A program's meaning: called on a string, whether the program accepts it.

    ``many`` answers a list of strings at once (for B-RASP, the strings of one length as one
    batch).
    """

    def __init__(self, program: Program) -> None:
        self.program = program

    def __call__(self, string: str) -> bool:
        """Whether the program accepts ``string``."""
        module = crasp if self.program.language == "crasp" else brasp
        return module.accepts(self.program, string)

    def many(self, strings: list[str]) -> list[bool]:
        """Whether the program accepts each string."""
        if self.program.language == "brasp":
            return brasp.accepts_all(self.program, strings)
        return [self(string) for string in strings]


def interpreter(program: Program) -> Meaning:
    """The program's meaning: a function string → whether the program accepts it."""
    return Meaning(program)


def model_summary(spec: ModelSpec) -> dict:
    """Layers, heads, width and the exactness bound of a compiled model."""
    heads = [b.attn.n_heads if b.attn is not None else 0 for b in spec.blocks]
    masks = sorted({m for b in spec.blocks if b.attn is not None for m in b.attn.head_masks})
    return {"name": spec.name, "layers": spec.n_layers, "heads": sum(heads),
            "heads_per_layer": heads, "masks": masks, "d_model": spec.d_model,
            "max_tokens": spec.max_tokens}


def program_of(spec: ModelSpec) -> Program:
    """The program a compiled model carries (an error for a model that was not compiled)."""
    if not spec.source:
        raise SatsimError(f"model {spec.name!r} carries no program (it was not compiled by "
                          "satsim compile)")
    return parse_program(spec.source, spec.source_language, f"<program of {spec.name}>")
