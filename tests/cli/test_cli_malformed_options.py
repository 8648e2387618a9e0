"""Malformed options for every command, generated from click's own declarations: no traceback.

For every option (and argument) of every `satsim` command, the cases come from what its
declaration says a value must be: an integer or a number, within a range, one of some choices,
a path that is not empty, an output path whose folder exists, a figure format matplotlib can
write; and any option given without its value. Each case runs through the entry point
(`satsim.cli.main.main`), in this process, and must end in exit code 2 with exactly one
`error:` line that names the option. The command's own code never runs: every case is refused
while the options are parsed, so no case starts any work (a case that got through would say so).
"""

from __future__ import annotations

import sys

import click
import pytest

from satsim.cli.main import main
from satsim.cli.options import NonEmptyPath, OutputPath, PlotPath
from tests.support.helpers import leaf_commands


class Reached(Exception):
    """The command's code ran: the malformed value was accepted."""


def _number_cases(kind: click.ParamType) -> list[str]:
    """Values the number type refuses: not a number, and beyond each end of its range."""
    integer = isinstance(kind, click.types.IntParamType) or (
        isinstance(kind, click.types._NumberRangeBase) and kind._number_class is int)
    cases = ["not-a-number", "1.5"] if integer else ["not-a-number"]
    low, high = getattr(kind, "min", None), getattr(kind, "max", None)
    if low is not None:
        cases.append(str(low if getattr(kind, "min_open", False) else low - 1))
    if high is not None:
        cases.append(str(high if getattr(kind, "max_open", False) else high + 1))
    return cases


def malformed_values(param: click.Parameter, tmp: str) -> list[str]:
    """What the declaration of ``param`` refuses, as command-line text."""
    kind = param.type
    if isinstance(kind, (click.types.IntParamType, click.types.FloatParamType)):
        return _number_cases(kind)
    if isinstance(kind, click.Choice):
        return ["not-one-of-the-choices"]
    cases = []
    if isinstance(kind, NonEmptyPath):
        cases.append("")
    if isinstance(kind, OutputPath):
        cases.append(f"{tmp}/a-file/x" if kind.folder else f"{tmp}/missing/x.png")
    if isinstance(kind, PlotPath):
        cases.append(f"{tmp}/figure.txt")
    return cases


def _base_arguments(command: click.Command, tmp: str) -> list[str]:
    """Valid values of the command's required arguments (options come first on the line)."""
    values = {"string": "()", "run_dir": tmp, "strings": "()", "path": f"{tmp}/model.safetensors",
              "model": f"{tmp}/model"}
    return [values[p.name] for p in command.params
            if isinstance(p, click.Argument) and p.required]


def cases(tmp: str) -> list[tuple[tuple[str, ...], list[str], str]]:
    """(command words, arguments, the name the error must give) for every malformed case."""
    out = []
    for name, command in leaf_commands():
        base = _base_arguments(command, tmp)
        for param in command.params:
            if isinstance(param, click.Option) and (param.is_flag or param.name == "help"):
                continue
            if isinstance(param, click.Option):
                flag = param.opts[-1] if param.opts[-1].startswith("--") else param.opts[0]
                out.append((name, [*base, flag], flag))  # the option without its value
                out.extend((name, [flag, value, *base], flag)
                           for value in malformed_values(param, tmp))
            else:
                shown = param.human_readable_name
                out.extend((name, [value], shown) for value in malformed_values(param, tmp))
    return out


def test_every_command_and_option_has_cases():
    found = cases("/tmp")
    assert {name for name, _, _ in found} == {name for name, _ in leaf_commands()} - {
        ("languages",)}
    assert len(found) > 250


@pytest.fixture
def commands_that_must_not_run(monkeypatch):
    def reached(*args, **kwargs):
        raise Reached

    for _, command in leaf_commands():
        monkeypatch.setattr(command, "callback", reached)


def test_malformed_options_of_every_command_are_one_line_without_traceback(
        tmp_path, monkeypatch, capsys, commands_that_must_not_run):
    (tmp_path / "a-file").write_text("")
    failures = []
    for name, arguments, shown in cases(str(tmp_path)):
        monkeypatch.setattr(sys, "argv", ["satsim", *name, *arguments])
        try:
            main()
            code = 0
        except SystemExit as exit_:
            code = exit_.code
        except Reached:
            code = "accepted"
        captured = capsys.readouterr()
        errors = [line for line in captured.err.splitlines() if line.startswith("error:")]
        if code != 2 or len(errors) != 1 or shown not in errors[0] or "Traceback" in captured.err:
            line = " ".join([*name, *map(repr, arguments)])
            failures.append(f"satsim {line}: exit {code}, stderr {captured.err.strip()[:200]!r}")
    assert not failures, "\n".join(failures)
    assert list(tmp_path.iterdir()) == [tmp_path / "a-file"]  # nothing was written
