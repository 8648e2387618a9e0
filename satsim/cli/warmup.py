"""``satsim warmup``: compile, once, every kernel that eval, verify, compile and report use.

Each group of kernels compiles in its own process, by running its command on a tiny input
(so it compiles exactly the specialisations the command takes), as many processes at a time as
there are CPUs. Groups already in Numba's on-disk cache are skipped, so a second run returns at
once. train compiles no kernel.
"""

from __future__ import annotations

import importlib
import importlib.util
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass

import click

from satsim.cli.options import count, machine_cpus
from satsim.cli.progress import elapsed


@dataclass(frozen=True)
class Group:
    """Kernels one command compiles: its (path, dtype) pairs and the tiny command lines."""

    name: str
    paths: tuple[tuple[str, str], ...]
    lines: tuple[tuple[str, ...], ...]
    needs_torch: bool = False
    kernels: tuple[str, ...] = ()
    """Further top-level kernels the lines compile, as "module:name", in the dtype of the first
    path; the cold check looks for them too."""
    kernel_seconds: int = 0
    """Their compile seconds here (low load, CPU), for the estimate."""


TINY_TRAIN = ("train", "--steps", "3", "--log-every", "1", "--train-size", "4", "--batch-size", "2",
              "--device", "cpu", "--out", "{tmp}/run")
GROUPS = (
    Group("eval of float32 constructions (dyck1, majority)", (("fused-fast", "float32"),),
          (("eval", "--lang", "dyck1", "-n", "2", "--max-len", "4"),)),
    Group("eval of float32 constructions with general heads (first)", (("fused", "float32"),),
          (("eval", "--lang", "first", "-n", "2", "--max-len", "4"),)),
    Group("verify, and eval of float64 constructions", (("fused-fast", "float64"),),
          (("eval", "--lang", "anbn", "-n", "2", "--max-len", "4"),)),
    Group("compile and verify", (("fused", "float64"),),
          (("compile", "--lang", "first", "--max-len", "2", "--long", "1", "--long-len", "8",
            "-o", "{tmp}/first.safetensors"),)),
    Group("report", (("layers", "float64"), ("tiles", "float64"), ("classes", "float64")),
          (TINY_TRAIN, ("report", "{tmp}/run", "--bins", "0-4,600-600", "-n", "2", "--roles-n",
                        "2", "--soft-max-len", "0", "--device", "cpu")), needs_torch=True,
          kernels=("satsim.engine.kernels.layers:layer_norm",
                   "satsim.saturation.kernels.expansion:expanded_attention",
                   "satsim.saturation.kernels.tie_values:tie_value_spread"),
          kernel_seconds=16),
)
"""What ``satsim warmup`` compiles, one process per group."""


def dispatchers(group: Group) -> dict:
    """The group's further kernels (``Group.kernels``), by name."""
    found = {}
    for where in group.kernels:
        module, name = where.split(":")
        found[name] = getattr(importlib.import_module(module), name)
    return found


def is_cold(group: Group) -> bool:
    """Whether a kernel the group compiles is missing from the on-disk cache (index only)."""
    from satsim.engine.kernels import cold_dispatchers, cold_kernels

    return (any(cold_kernels(path, dtype) for path, dtype in group.paths)
            or bool(cold_dispatchers(dispatchers(group), group.paths[0][1])))


def cold_groups() -> list[Group]:
    """The groups with a kernel missing from the on-disk cache (reads the cache index only)."""
    return [group for group in GROUPS if is_cold(group)]


def estimate(group: Group) -> int:
    """Seconds a group takes to compile on this project's machine (the notices' figures)."""
    from satsim.engine.kernels import COMPILE_SECONDS

    return sum(COMPILE_SECONDS[path] for path, _ in group.paths) + group.kernel_seconds


def compile_group(group: Group) -> float:
    """Run a group's command lines in fresh processes; return the seconds they took."""
    start = time.monotonic()
    with tempfile.TemporaryDirectory() as tmp:
        for line in group.lines:
            argv = [sys.executable, "-m", "satsim", *(word.format(tmp=tmp) for word in line)]
            done = subprocess.run(argv, capture_output=True, text=True, check=False, cwd=tmp)
            if done.returncode != 0:  # a tiny valid command failing is a bug: keep its story
                raise RuntimeError(f"{' '.join(argv[1:])} failed while warming up:\n"
                                   f"{done.stderr[-3000:]}")
    return time.monotonic() - start


@click.command("warmup")
@click.option("--processes", type=count(1), default=None,
              help="Compile in this many processes at once (default: one per CPU).")
def command(processes) -> None:
    """Compile every kernel the common commands use, now, so that later runs start warm.

    Numba compiles each kernel the first time a command needs it and caches it on disk; this
    pays that once, in parallel processes. Kernels already cached are skipped.
    """
    groups = cold_groups()
    skip_torch = importlib.util.find_spec("torch") is None
    if skip_torch and any(group.needs_torch for group in groups):
        click.echo("warmup: skipping the report kernels: they need torch (pip install "
                   "'satsim[soft]')", err=True)
        groups = [group for group in groups if not group.needs_torch]
    if not groups:
        click.echo("warmup: every kernel is compiled and cached already")
        return
    workers = min(processes or machine_cpus(), len(groups))
    seconds = sum(estimate(group) for group in groups)
    click.echo(f"warmup: compiling {len(groups)} groups of kernels in {workers} processes (about "
               f"{elapsed(seconds / workers)} here, {elapsed(seconds)} of CPU; once, cached "
               "afterwards)…", err=True)
    start = time.monotonic()
    with ThreadPoolExecutor(workers) as pool:
        futures = {pool.submit(compile_group, group): group for group in groups}
        for done, future in enumerate(as_completed(futures), 1):
            took = future.result()
            click.echo(f"warmup: [{done}/{len(groups)}] {futures[future].name}: compiled in "
                       f"{elapsed(took)}", err=True)
    click.echo(f"warmup: done in {elapsed(time.monotonic() - start)}; the kernels are cached")
