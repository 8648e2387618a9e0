"""`satsim warmup`: its groups are real command lines and real kernel paths; a warm cache is a
no-op. (Compiling for real is the generated CLI tests' warm run; no timing here.)"""

import importlib.util
import json
import os
import subprocess
import sys

import pytest
from click.testing import CliRunner

from satsim.cli import warmup
from satsim.cli.main import cli
from satsim.engine.kernels import COMPILE_SECONDS, cold_kernels


def test_every_group_line_parses_as_a_satsim_command(tmp_path):
    for group in warmup.GROUPS:
        for line in group.lines:
            args = [word.format(tmp=tmp_path) for word in line]
            parent = cli.make_context("satsim", list(args), resilient_parsing=False)
            name, command, rest = cli.resolve_command(parent, args)
            with command.make_context(name, rest, parent=parent):  # raises on a stale option
                pass


def test_every_group_names_known_kernel_paths_and_dtypes():
    for group in warmup.GROUPS:
        assert group.paths
        for path, dtype in group.paths:
            assert path in COMPILE_SECONDS and dtype in ("float32", "float64")
            cold_kernels(path, dtype)  # a known path: no KeyError
        assert warmup.estimate(group) > 0


@pytest.mark.slow  # a fresh process
def test_an_empty_cache_leaves_every_group_cold(tmp_path):
    done = subprocess.run(
        [sys.executable, "-c", "from satsim.cli.warmup import GROUPS, cold_groups; "
         "print(cold_groups() == list(GROUPS))"],
        env=dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path)), check=True, capture_output=True,
        text=True)
    assert done.stdout.strip() == "True"
    assert not list(tmp_path.rglob("*.nb*"))  # the check compiled nothing


def test_a_warm_cache_runs_nothing(monkeypatch):
    def must_not_run(group):
        raise AssertionError(f"compiled {group.name}")

    monkeypatch.setattr(warmup, "cold_groups", lambda: [])
    monkeypatch.setattr(warmup, "compile_group", must_not_run)
    result = CliRunner().invoke(cli, ["warmup"])
    assert result.exit_code == 0, result.output
    assert "every kernel is compiled and cached already" in result.output


def test_cold_groups_compile_and_report_each(monkeypatch):
    done = []
    monkeypatch.setattr(warmup, "cold_groups", lambda: list(warmup.GROUPS[:2]))
    monkeypatch.setattr(warmup, "compile_group", lambda group: done.append(group) or 1.0)
    result = CliRunner().invoke(cli, ["warmup"])
    assert result.exit_code == 0, result.output
    assert sorted(group.name for group in done) == sorted(g.name for g in warmup.GROUPS[:2])
    assert "[2/2]" in result.output and "done in" in result.output


def test_without_torch_the_report_group_is_skipped_and_said(monkeypatch):
    done = []
    monkeypatch.setattr(warmup, "cold_groups", lambda: list(warmup.GROUPS))
    monkeypatch.setattr(warmup, "compile_group", lambda group: done.append(group) or 1.0)
    real = importlib.util.find_spec
    monkeypatch.setattr(warmup.importlib.util, "find_spec",
                        lambda name, *args: None if name == "torch" else real(name, *args))
    result = CliRunner().invoke(cli, ["warmup", "--processes", "1"])
    assert result.exit_code == 0, result.output
    assert "skipping the report kernels: they need torch" in result.output
    assert done == [group for group in warmup.GROUPS if not group.needs_torch]


def test_a_missing_limit_kernel_makes_the_report_group_cold(monkeypatch):
    import satsim.engine.kernels as kernels

    monkeypatch.setattr(kernels, "_is_cached",
                        lambda kernel, dtype=None: kernel.py_func.__name__ != "expanded_attention")
    assert [group.name for group in warmup.cold_groups()] == ["report"]


def test_every_further_kernel_is_a_cached_numba_dispatcher():
    for group in warmup.GROUPS:
        for name, kernel in warmup.dispatchers(group).items():
            assert kernel.py_func.__name__ == name and kernel._cache is not None


PROBE = """
import json, sys
from numba.core import event

depth, top = [0], set()

class Outermost(event.Listener):
    def on_start(self, ev):
        depth[0] += 1

    def on_end(self, ev):
        depth[0] -= 1
        if depth[0] == 0:
            function = ev.data["dispatcher"].py_func
            top.add((function.__module__, function.__name__))

event.register("numba:compile", Outermost())
from satsim.cli.main import main
sys.argv = ["satsim", *sys.argv[1:]]
try:
    main()
finally:
    print("TOP " + json.dumps(sorted(top)))
"""


@pytest.mark.slow  # compiles every group's kernels from an empty cache: minutes
@pytest.mark.parametrize("group", warmup.GROUPS, ids=lambda group: group.name.split()[0])
def test_the_cold_check_covers_every_kernel_a_group_compiles(group, tmp_path):
    if group.needs_torch and importlib.util.find_spec("torch") is None:
        pytest.skip("needs torch")
    from satsim.engine.kernels import _kernels
    from satsim.engine.kernels.parallel_compile import PARTS

    kernels = [kernel for path, _ in group.paths for kernel in _kernels(path).values()]
    kernels += warmup.dispatchers(group).values()
    checked = {(kernel.py_func.__module__, kernel.py_func.__name__) for kernel in kernels}
    compiled = set()
    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path / "cache"))
    for line in group.lines:
        done = subprocess.run([sys.executable, "-c", PROBE,
                               *(word.format(tmp=tmp_path) for word in line)],
                              env=env, cwd=tmp_path, capture_output=True, text=True, check=True)
        found = [row for row in done.stdout.splitlines() if row.startswith("TOP ")]
        compiled |= {tuple(kernel) for kernel in json.loads(found[-1][4:])}
    callees = {(kernel.py_func.__module__, kernel.py_func.__name__)  # compiled ahead of a kernel
               for own, _ in PARTS.values() for kernel, _ in own("float64")}
    assert compiled and compiled - callees <= checked
