"""Options shared by the commands that run a model on a language."""

from __future__ import annotations

import math

import click
from click.core import ParameterSource

from satsim.errors import SatsimError
from satsim.model.io import load_spec
from satsim.model.settings import ATTENTION_KINDS
from satsim.model.spec import LANGUAGE_TASKS


def load_model(lang_name: str | None, model_path: str | None, task: str = "recognition"):
    """The saved model at ``model_path``, or the language's hand-built construction."""
    from satsim import constructions

    if model_path is not None:
        from satsim.interop.hf_gpt2 import from_hf_gpt2, is_checkpoint

        return from_hf_gpt2(model_path) if is_checkpoint(model_path) else load_spec(model_path)
    if lang_name is None:
        raise SatsimError("give --lang L (its construction) or --model PATH")
    if lang_name not in constructions.names():
        raise SatsimError(
            f"language {lang_name!r} has no built-in construction "
            f"(built in: {', '.join(constructions.names())}); pass --model PATH"
        )
    return constructions.build(lang_name, task=task)


def simulator_from_options(lang_name: str, model_path: str | None, task: str, attention: str,
                           beta: float, atol: float | None, rtol: float | None):
    """A Simulator for the chosen model and attention settings (--beta only with softmax)."""
    from satsim.engine.simulator import Simulator

    context = click.get_current_context(silent=True)
    if (attention != "softmax" and context is not None
            and context.get_parameter_source("beta") == ParameterSource.COMMANDLINE):
        raise SatsimError(f"--beta is softmax's inverse temperature; {attention} attention has "
                          "none (add --attention softmax, or leave --beta out)")
    spec = load_model(lang_name, model_path, task)
    return Simulator(spec, attention, beta=beta, atol=atol, rtol=rtol)


def given_options(*names: str) -> list[str]:
    """Which of the current command's parameters ``names`` the user gave (as --option names)."""
    context = click.get_current_context()
    return [max(param.opts, key=len) for param in context.command.params if param.name in names
            and context.get_parameter_source(param.name) not in (ParameterSource.DEFAULT,
                                                                 ParameterSource.DEFAULT_MAP,
                                                                 None)]


def get_language(name: str):
    """The registered language ``name`` (a one-line error lists the known ones)."""
    import languages

    return languages.get(name)


MAX_COUNT = 2**31 - 1
"""The largest integer any option takes: more than any run can hold, within every integer type
the samplers and kernels use (so a huge number is refused by name instead of overflowing)."""


class Count(click.IntRange):
    """An integer from a minimum to MAX_COUNT; help shows the minimum only."""

    def _describe_range(self) -> str:
        return f"x>={self.min}"

    def convert(self, value, param, ctx):
        """The integer, with a plain message when it is beyond what satsim takes."""
        number = click.INT.convert(value, param, ctx)
        if number > MAX_COUNT:
            self.fail(f"{number} is more than {MAX_COUNT:,}, the largest number satsim takes",
                      param, ctx)
        return super().convert(number, param, ctx)


def count(minimum: int = 0) -> click.IntRange:
    """The type of an integer option: from ``minimum`` to MAX_COUNT."""
    return Count(min=minimum, max=MAX_COUNT)


def machine_cpus() -> int:
    """The CPUs this process may run on."""
    import os

    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()


class CpuCount(Count):
    """Threads or processes at once: from 1 to this machine's CPUs (torch crashed at 100,000)."""

    def convert(self, value, param, ctx):
        """The number, refused beyond the CPUs this process may run on."""
        number = super().convert(value, param, ctx)
        cpus = machine_cpus()
        if number > cpus:
            self.fail(f"{number} is more than this machine's {cpus} CPUs; give 1 to {cpus}",
                      param, ctx)
        return number


def cpu_count() -> CpuCount:
    """The type of a --threads or --jobs option: from 1 to this machine's CPUs."""
    return CpuCount(min=1, max=MAX_COUNT)


class Real(click.FloatRange):
    """A finite number within a range: NaN and infinity are refused by name."""

    def convert(self, value, param, ctx):
        """The number, after the range check; NaN or infinite is a usage error."""
        number = click.FLOAT.convert(value, param, ctx)
        if not math.isfinite(number):
            self.fail(f"{value!r} is not a finite number; give one", param, ctx)
        return super().convert(number, param, ctx)


def real(minimum: float | None = None, maximum: float | None = None, min_open: bool = False,
         max_open: bool = False) -> click.FloatRange:
    """The type of a number option: finite, from ``minimum`` to ``maximum``."""
    return Real(min=minimum, max=maximum, min_open=min_open, max_open=max_open)


class InputString(click.ParamType):
    """A string of symbols given to a model: "" is the empty string, an input like any other."""

    name = "text"


INPUT_STRING = InputString()
"""The type of the one kind of value that may be empty (see :func:`refuse_empty_values`)."""


def refuse_empty_values(command: click.Command) -> None:
    """Make every option and argument of ``command`` and its subcommands refuse an empty value.

    An empty value given (``--lang ""``, ``--bins ''``) is a usage error by name, never read as
    "everything" or "the default"; flags and INPUT_STRING arguments are left alone.
    """
    for subcommand in getattr(command, "commands", {}).values():
        refuse_empty_values(subcommand)
    for param in command.params:
        if not getattr(param, "is_flag", False) and not isinstance(param.type, InputString):
            param.callback = _refusing_empty(param.callback)


def _refusing_empty(callback):
    """A parameter callback: refuse an empty value given, then run ``callback`` (if any)."""

    def check(ctx: click.Context, param: click.Parameter, value):
        given = ctx.get_parameter_source(param.name) not in (ParameterSource.DEFAULT,
                                                              ParameterSource.DEFAULT_MAP, None)
        values = value if isinstance(value, tuple) else (value,)
        if given and any(isinstance(item, str) and not item.strip() for item in values):
            raise click.BadParameter("an empty value means nothing here; give one, or leave "
                                     "the option out for its default", ctx, param)
        return value if callback is None else callback(ctx, param, value)

    return check


def option_name(param: click.Parameter | None, default: str) -> str:
    """The name an error gives an option: its long form (``--out`` for ``-o/--out``)."""
    if param is None or not param.opts:
        return default
    return next((opt for opt in param.opts if opt.startswith("--")), param.opts[0])


class NonEmptyPath(click.Path):
    """click's Path, refusing an empty one by name (Path("") would be the current folder)."""

    def convert(self, value, param, ctx):
        """The path, after click's checks; "" is a usage error."""
        return super().convert(self.given(value, param, ctx), param, ctx)

    def given(self, value, param, ctx):
        """``value``, unless it is empty (a usage error)."""
        if isinstance(value, str) and not value.strip():
            self.fail("an empty path names nothing; give a path", param, ctx)
        return value


LANGUAGE_OPTION = click.option("--lang", "lang_name", required=True,
                               help="Language (see `satsim languages`).")
OPTIONAL_LANGUAGE_OPTION = click.option(
    "--lang", "lang_name", default=None,
    help="Language (see `satsim languages`): its construction, and its oracle beside the "
         "answers. Optional with --model.")
MODEL_OPTIONS = [
    click.option("--model", "model_path", type=NonEmptyPath(),
                 help="A saved model spec (.safetensors) or a Hugging Face GPT-2 checkpoint "
                      "folder; default: the language's construction."),
    click.option("--task", type=click.Choice(LANGUAGE_TASKS),
                 default="recognition", show_default=True,
                 help="Which construction to build (ignored with --model)."),
    click.option("--attention", type=click.Choice(ATTENTION_KINDS), default="saturated",
                 show_default=True, help="How every head attends."),
    click.option("--beta", type=real(0, min_open=True), default=1.0, show_default=True,
                 help="Inverse temperature for --attention softmax."),
    click.option("--atol", type=real(0), default=None, help="Absolute tie tolerance."),
    click.option("--rtol", type=real(0, 1, max_open=True), default=None,
                 help="Relative tie tolerance."),
]


class OutputPath(NonEmptyPath):
    """A file or folder a command writes, checked when the options are parsed, before any work."""

    def __init__(self, folder: bool = False) -> None:
        super().__init__(dir_okay=folder, file_okay=not folder)
        self.folder = folder
        self.name = "folder" if folder else "file"

    def convert(self, value, param, ctx):
        """Check the path now; a bad one is a one-line SatsimError."""
        from satsim.output import check_output_file, check_output_folder

        option = option_name(param, "output")
        check = check_output_folder if self.folder else check_output_file
        return str(check(self.given(value, param, ctx), option))


class PlotPath(OutputPath):
    """A figure file: an OutputPath whose extension matplotlib can write (none: PNG)."""

    def convert(self, value, param, ctx):
        """Check the path and its format now, before any work; a bad one is one line."""
        from matplotlib.backend_bases import FigureCanvasBase

        path = super().convert(value, param, ctx)
        formats = FigureCanvasBase.get_supported_filetypes()
        suffix = path.rpartition(".")[2].lower() if "." in path.rpartition("/")[2] else ""
        if suffix and suffix not in formats:
            option = option_name(param, "plot")
            raise SatsimError(f"{option}: matplotlib cannot write .{suffix} files; end the "
                              f"name with {', '.join('.' + f for f in sorted(formats))}")
        return path


def with_model_options(fn, language_required: bool = True):
    """Attach the options that choose a language, a model and an attention kind."""
    for option in reversed(MODEL_OPTIONS):
        fn = option(fn)
    return (LANGUAGE_OPTION if language_required else OPTIONAL_LANGUAGE_OPTION)(fn)


def with_model_options_language_optional(fn):
    """The model options, with --lang optional (a saved model runs without an oracle)."""
    return with_model_options(fn, language_required=False)


INPUT_HELP = ("An input is a string of symbols, or its tokens separated by spaces in one "
              "argument ('1 10 3'), which a model whose symbols are not all one character (a "
              "tracr import, say) needs.")
"""How ``run`` and ``trace`` read an input, for their help."""


def check_oracle(language, spec) -> None:
    """Refuse --lang for a model its oracle cannot judge (not recognition or next-symbol)."""
    if language is not None:
        spec.require_language_task(f"--lang {language.name} (the oracle)")
