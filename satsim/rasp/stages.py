"""The compiler's stages, each one function; :func:`compile_program` calls stages 2 to 5 in order.

parse → formulas → circuit → schedule → spec (docs/architecture.md, "The compiler's stages"):

1. parse (:func:`satsim.rasp.parse.parse_program`, ``read_program`` for a file): program text →
   :class:`~satsim.rasp.syntax.Program`, a typed syntax tree.
2. :func:`formulas`: each definition ``accept`` needs → its IR (:mod:`satsim.rasp.ir`): a
   :data:`~satsim.rasp.ir.Formula` for a Boolean vector, a :class:`~satsim.rasp.ir.Scaled`
   count (:mod:`satsim.rasp.compile_brasp`, :mod:`satsim.rasp.compile_crasp`). The variables of
   an attention's or a comparison's formula are the bits its heads write, so those heads are
   placed in the circuit as the formula is built, and so are the bits of formulas too large to
   inline (:mod:`satsim.rasp.bits`).
3. :func:`circuit`: the formula of ``accept`` written as an exact bit (an embedding column, or
   feed-forward cubes from :mod:`satsim.rasp.logic`); the readout's linear form.
4. :func:`schedule`: the circuit's sublayers, each at the earliest slot its reads allow
   (fixed as it was placed), grouped into blocks (:mod:`satsim.circuits.schedule`).
5. :func:`spec`: the blocks as a :class:`~satsim.model.spec.ModelSpec` that carries its program
   and its length bound (:class:`~satsim.circuits.builder.Builder`).
"""

from __future__ import annotations

from dataclasses import replace

from satsim.circuits.parts import Layer
from satsim.circuits.schedule import Circuit
from satsim.errors import SatsimError
from satsim.model.spec import ModelSpec
from satsim.rasp.bits import ProgramCompiler
from satsim.rasp.compile_brasp import BraspCompiler
from satsim.rasp.compile_crasp import CraspCompiler
from satsim.rasp.ir import Formula
from satsim.rasp.syntax import LANGUAGE_NAMES, Program

COMPILERS: dict[str, type[ProgramCompiler]] = {"brasp": BraspCompiler, "crasp": CraspCompiler}
"""The formulas stage of each program language."""


def formulas(compiler: ProgramCompiler) -> Formula:
    """Stage 2: each definition ``accept`` needs → its IR, with the heads it reads; accept's."""
    for definition in compiler.program.needed():
        compiler.define(definition)
    return compiler.booleans["accept"]


def circuit(compiler: ProgramCompiler, accept: Formula) -> dict[str, float]:
    """Stage 3: ``accept`` written as an exact bit; the readout logit as a linear form."""
    return compiler.readout(accept)


def schedule(built: Circuit) -> list[Layer]:
    """Stage 4: the circuit's sublayers grouped into blocks by their slots."""
    return built.blocks()


def spec(compiler: ProgramCompiler, blocks: list[Layer], readout: dict[str, float],
         name: str) -> ModelSpec:
    """Stage 5: the model of the blocks, carrying its program and its length bound."""
    model = compiler.circuit.build(name, blocks, readout, description=compiler.description)
    program = compiler.program
    return replace(model, source=program.text, source_language=program.language,
                   max_tokens=compiler.max_tokens())


def compile_program(program: Program, name: str | None = None) -> ModelSpec:
    """The saturated transformer of a parsed program: stages 2 to 5 in order."""
    compiler = COMPILERS[program.language](program)
    accept = formulas(compiler)
    readout = circuit(compiler, accept)
    blocks = schedule(compiler.circuit)
    return spec(compiler, blocks, readout, name or program.language)


def compile_brasp(program: Program, name: str = "brasp") -> ModelSpec:
    """The saturated transformer of a B-RASP program (:mod:`satsim.rasp.compile_brasp`)."""
    return _compile_as("brasp", program, name)


def compile_crasp(program: Program, name: str = "crasp") -> ModelSpec:
    """The saturated transformer of a C-RASP program (:mod:`satsim.rasp.compile_crasp`)."""
    return _compile_as("crasp", program, name)


def _compile_as(language: str, program: Program, name: str) -> ModelSpec:
    if program.language != language:
        raise SatsimError(f"compile_{language} needs a {LANGUAGE_NAMES[language]} program, "
                          f"got {program.language}")
    return compile_program(program, name)
