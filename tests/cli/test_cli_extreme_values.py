"""Every option of every command at 0, -1, huge and NaN, and every text option empty.

The cases come from click's own declarations (`satsim.cli.main.cli`, walked recursively), so a
new option is covered as soon as it is declared. Each option is given on top of a small valid
command line (BASE), and the command runs for real, in a child process per command under an
address-space cap and a timer per case (tests/support/cli_case_runner.py). Every case must end in
one of two ways:

- refused: exit code 2 and one ``error:`` line, no traceback, nothing left running;
- valid: exit code 0, and only where VALID says the value means something, checked by VALID's
  function on what the command printed (a value that passes silently, without an entry saying
  what it means, fails: no silent default).

No case may reach the memory cap (MemoryError), use more than PEAK_LIMIT of memory, or run past
its timer without showing its progress (work asked for, and shown as it goes, is not a hang).
"""

from __future__ import annotations

import json
import os
import re
import select
import subprocess
import sys
import time
from pathlib import Path

import click
import pytest

from satsim.cli.options import MAX_COUNT
from tests.support.helpers import leaf_commands
from tests.support.paths import DATA, EXAMPLES, REPO

pytestmark = pytest.mark.slow  # every option of every command in child processes under a memory cap

CAP = 4 * 2**30
"""The address-space cap of a child (resource.RLIMIT_AS): past it, an allocation fails."""

PEAK_LIMIT = 2 * 2**30
"""The most resident memory one case may reach: a value beyond it must be refused up front."""

CASE_SECONDS = 30
"""A case's timer; compiled kernels are warmed (and a run made) before the first case."""

SETUP_SECONDS = 600
"""The timer of the set-up and the first (warming) run of a command: kernels may compile."""

HUGE = 10**15

PROGRAM = 'alphabet = "ab"\naccept = count(Q("a")) > count(Q("b"))\n'

TINY_TRAIN = ["--steps", "2", "--train-size", "4", "--batch-size", "2", "--layers", "1",
              "--d-model", "4", "--heads", "1", "--d-head", "2", "--d-mlp", "4", "--split",
              "satsim", "--checkpoint-every", "1", "--log-every", "1"]

BASE: dict[tuple[str, ...], list[str]] = {
    ("eval",): ["--lang", "dyck1", "-n", "2", "--max-len", "4", "--json"],
    ("run",): ["--lang", "dyck1", "--json"],
    ("trace",): ["--lang", "dyck1", "--json"],
    ("roles",): ["--lang", "dyck1", "-n", "2", "--max-len", "4", "--json"],
    ("show",): ["--lang", "dyck1", "--json"],
    ("decide",): ["--lang", "first", "--json"],
    ("compile",): ["--lang", "first", "--long-len", "40", "--json"],
    ("verify",): ["--long-len", "40", "--json"],
    ("warmup",): [],
    ("sample",): ["--lang", "dyck1", "-n", "2", "--max-len", "4", "--json"],
    ("saturation",): ["--lang", "dyck1", "-n", "2", "--max-len", "4", "--scales", "1",
                      "--no-exact", "--device", "cpu", "--json"],
    ("homogeneity",): ["--seeds", "1", "--layers", "1", "--d-model", "4", "--heads", "1",
                       "--d-ff", "4", "--device", "cpu", "--json"],
    ("projection",): ["--variants", "ffn", "--scales", "1", "--accuracies", "1", "--seeds", "1",
                      "-n", "4", "--hidden", "2", "--classes", "2", "--json"],
    ("scan-snap",): ["--setting", "fig4", "--seeds", "1", "--iters", "1", "--batch", "1",
                     "--device", "cpu", "--json"],
    ("report",): ["--bins", "0-4", "-n", "2", "--roles-n", "2", "--device", "cpu",
                  "--json"],
    ("train",): [*TINY_TRAIN, "--out", "{out}", "--device", "cpu", "--json"],
    ("sweep",): ["--out", "{out}", "--seed", "1", "--set", "steps=2", "--set", "train_size=4",
                 "--set", "batch_size=2", "--set", "d_model=4", "--set", "heads=1", "--set",
                 "d_head=2", "--set", "d_mlp=4", "--set", "layers=1", "--set", "split=satsim",
                 "--json"],
    ("extract",): ["-o", "{out}.brasp", "--max-len", "3", "--json"],
    ("harden",): ["-o", "{out}.safetensors", "--lang", "aa-star", "-n", "2", "--bins", "0-4",
                  "--json"],
    ("benchmark", "flare"): ["--out", "{out}", "--lang", "parity", "--trials", "1", "-n", "1",
                             "--set", "steps=2", "--set", "d_model=4", "--set", "heads=1",
                             "--set", "d_head=2", "--set", "d_mlp=4", "--json"],
}
"""A small valid command line of each command (its options); an option under test replaces its
own value."""

ARGUMENTS: dict[tuple[str, ...], dict[str, str]] = {
    ("run",): {"strings": "()"}, ("trace",): {"string": "()"},
    ("verify",): {"path": "{tmp}/program.crasp"}, ("report",): {"run_dir": "{tmp}/run"},
    ("extract",): {"path": "{tmp}/model.safetensors"},
    ("harden",): {"model": str(DATA / "zoo" / "bce_aastar")},
}
"""The arguments of each BASE line, by name (they follow the options)."""

SETUP: dict[tuple[str, ...], list[list[str]]] = {
    ("extract",): [["compile", str(EXAMPLES / "first.brasp"), "-o",
                    "{tmp}/model.safetensors"]],
    ("report",): [["train", *TINY_TRAIN, "--steps", "4", "--out", "{tmp}/run", "--device",
                   "cpu"]],
}
"""Command lines run before a command's cases (not checked): what its BASE reads."""


def _is_integer(kind: click.ParamType) -> bool:
    return isinstance(kind, click.types.IntParamType) or (
        isinstance(kind, click.types._NumberRangeBase) and kind._number_class is int)


def extreme_values(param: click.Parameter) -> list[str]:
    """0, -1 and huge for an integer (huge: 10^15, and the largest the type takes); 0, -1,
    huge, NaN and infinity for a number; "" for anything else."""
    if isinstance(param, click.Option) and (param.is_flag or param.count):
        return []
    if _is_integer(param.type):
        return ["0", "-1", str(HUGE), str(MAX_COUNT)]
    if isinstance(param.type, click.types.FloatParamType):
        return ["0", "-1", str(float(HUGE)), "nan", "inf"]
    return [""]


def _flag(param: click.Parameter) -> str:
    return next((opt for opt in param.opts if opt.startswith("--")), param.opts[0])


def _with_value(name: tuple[str, ...], param: click.Parameter, value: str) -> list[str]:
    """The base line of command ``name`` with ``param`` set to ``value`` (in place of its own)."""
    arguments = {**ARGUMENTS.get(name, {})}
    options, skip = [], False
    for word in BASE[name]:
        if skip:
            skip = False
        elif isinstance(param, click.Option) and word in param.opts and not param.multiple:
            skip = True
        else:
            options.append(word)
    if isinstance(param, click.Option):
        options += [_flag(param), value]
    else:
        arguments[param.name] = value
    command = dict(leaf_commands())[name]
    return [*options, *(arguments[p.name] for p in command.params if p.name in arguments)]


def cases() -> list[tuple[tuple[str, ...], str, str]]:
    """(command words, option or argument name, value) for every case."""
    out = []
    for name, command in leaf_commands():
        for param in command.params:
            label = _flag(param) if isinstance(param, click.Option) else param.human_readable_name
            out.extend((name, label, value) for value in extreme_values(param))
    return out


def case_id(case) -> str:
    name, label, value = case
    return f"{' '.join(name)} {label}={value!r}"


def command_line(case, tmp: Path, number: int) -> list[str]:
    """The argv of a case: its command's BASE with the option (or argument) set."""
    name, label, value = case
    command = dict(leaf_commands())[name]
    param = next(p for p in command.params
                 if (_flag(p) if isinstance(p, click.Option) else p.human_readable_name) == label)
    line = _with_value(name, param, value)
    return [*name, *(word.format(tmp=tmp, out=tmp / f"out{number}") for word in line)]


# --- what the valid values mean ----------------------------------------------------------------


def _json(stdout: str):
    return json.loads(stdout.strip().splitlines()[-1])


def _lines(stdout: str) -> list:
    return [json.loads(line) for line in stdout.splitlines() if line.strip()]


def _evaluated(seed=None, min_len=None):
    """eval's report: every bin scored (from ``min_len``), with ``seed`` if given."""
    def check(stdout: str) -> None:
        report = _json(stdout)
        assert report["bins"] and all(b["n"] == 2 for b in report["bins"]), report
        assert seed is None or report["seed"] == seed, report["seed"]
        assert min_len is None or report["bins"][0]["min_len"] == min_len, report["bins"]
    return check


def _answered(string="()"):
    """run's line for ``string``, with the oracle's verdict and the model's answer agreeing."""
    def check(stdout: str) -> None:
        (row,) = _lines(stdout)
        assert row["string"] == string and row["length"] == len(string) and row["correct"], row
    return check


def _traced(string="()"):
    """trace of ``string``: one query per token of every head of every layer."""
    def check(stdout: str) -> None:
        trace = _json(stdout)
        assert trace["string"] == string and len(trace["tokens"]) == len(string) + 1, trace
        for layer in trace["layers"]:
            for head in layer["heads"]:
                assert [q["position"] for q in head["queries"]] == list(range(len(string) + 1))
    return check


def _roles(everything_ties=False):
    """roles: every head classified; with a tolerance that makes every score tie, all global."""
    def check(stdout: str) -> None:
        roles = _json(stdout)
        assert roles and all(r["role"] in {"local", "global"} for r in roles), roles
        if everything_ties:
            assert all(r["role"] == "global" and r["median_fraction"] == 1 for r in roles), roles
    return check


def _verified(max_len=10, long_strings=20, key="interpreter"):
    """verify/compile: every string up to ``max_len`` (or 100,000 strings), ``long_strings``."""
    def check(stdout: str) -> None:
        result = _json(stdout)
        checked = result[key] if key in result else result["verification"]
        assert checked["ok"] and checked["long_strings"] == long_strings, checked
        if max_len is None:  # as many lengths as 100,000 strings allow
            assert checked["exhaustive_strings"] <= 100_000 < 2 * checked["exhaustive_strings"]
        else:
            assert checked["exhaustive_max_len"] == max_len, checked
    return check


def _sampled(count=2, longest=4):
    """sample: ``count`` records of at most ``longest`` symbols."""
    def check(stdout: str) -> None:
        rows = _lines(stdout)
        assert len(rows) == count and all(len(r["string"]) <= longest for r in rows), rows
    return check


def _field(path: tuple, value):
    """A JSON report whose field at ``path`` is ``value``."""
    def check(stdout: str) -> None:
        found = _json(stdout)
        for key in path:
            found = found[key]
        assert found == value, (path, found)
    return check


def _trained(option: str, value: str):
    """train: its 2 steps run, with the setting recorded in the run's config.json."""
    def check(stdout: str) -> None:
        result = _json(stdout)
        config = json.loads((Path(result["run"]) / "config.json").read_text())
        assert result["steps"] == 2 and config[option[2:].replace("-", "_")] == float(value)
    return check


def _soft_scored(scored: bool):
    """report: the soft model scored on every bin, or on none (the limit only)."""
    def check(stdout: str) -> None:
        bins = _json(stdout)["bins"]
        assert bins and all((b["soft"] is not None) == scored for b in bins), bins
    return check


def _check_rows(rows: list, count: int) -> None:
    """A sweep's (or a benchmark's) rows: ``count`` runs, none failed."""
    assert len(rows) == count and not any("error" in row for row in rows), rows


def _benchmark_seeded(seed: int):
    """benchmark flare: its one model (parity, trial 1) trained on the seed drawn from it."""
    from satsim.benchmarks.flare import trial_seed

    def check(stdout: str) -> None:
        models = [row for row in _lines(stdout) if row["kind"] == "model"]
        _check_rows(models, 1)
        assert models[0]["seed"] == trial_seed(seed, "parity", 1), models
    return check


def _extracted():
    """extract: the program checked on every string as long as the check's budget allows."""
    def check(stdout: str) -> None:
        summary = _json(stdout)
        assert summary["checked_max_len"] >= 3 and summary["disagreements"] == 0, summary
    return check


def _hardened(heads: int = 2):
    """harden: a table of every head of the zoo model (aa-star: 2 heads) and the hybrid written."""
    def check(stdout: str) -> None:
        table = _json(stdout)
        assert len(table["heads"]) == heads and Path(table["output"]).exists(), table
    return check


def _check_all_cached(stdout: str) -> None:
    """warmup after the warm run: nothing left to compile, at any number of processes."""
    assert "every kernel is compiled and cached already" in stdout, stdout


M = str(MAX_COUNT)
VALID = {
    **{f"{name} {option}={value!r}": check for name, check in [
        ("eval", _evaluated()), ("run", _answered()), ("trace", _traced()), ("roles", _roles())]
       for option, value in [("--atol", "0"), ("--rtol", "0"), ("--atol", str(float(HUGE)))]},
    "roles --atol='1000000000000000.0'": _roles(everything_ties=True),
    "eval --seed='0'": _evaluated(seed=0), f"eval --seed={M!r}": _evaluated(seed=MAX_COUNT),
    "eval --min-len='0'": _evaluated(min_len=0),
    "run STRINGS=''": _answered(""), "trace STRING=''": _traced(""),
    "roles --seed='0'": _roles(), f"roles --seed={M!r}": _roles(), "roles --min-len='0'": _roles(),
    # compile --lang: --long 10 random strings and as many of the language's samples
    "compile --max-len='0'": _verified(0, 20, "verification"),
    f"compile --max-len={M!r}": _verified(None, 20, "verification"),
    "compile --long='0'": _verified(10, 0, "verification"),
    "verify --max-len='0'": _verified(0), f"verify --max-len={M!r}": _verified(None),
    "verify --long='0'": _verified(10, 0),
    "verify --seed='0'": _verified(), f"verify --seed={M!r}": _verified(),
    f"warmup --processes={M!r}": lambda stdout: _check_all_cached(stdout),
    "sample -n='0'": _sampled(0), "sample --min-len='0'": _sampled(),
    "sample --seed='0'": _sampled(), f"sample --seed={M!r}": _sampled(),
    "saturation --seed='0'": _field(("n_strings",), 2),
    f"saturation --seed={M!r}": _field(("n_strings",), 2),
    "homogeneity --first-seed='0'": _field(("setup", "first_seed"), 0),
    f"homogeneity --first-seed={M!r}": _field(("setup", "first_seed"), MAX_COUNT),
    "projection --first-seed='0'": _field(("settings", "seeds"), [0]),
    f"projection --first-seed={M!r}": _field(("settings", "seeds"), [MAX_COUNT]),
    **{f"train {option}={value!r}": _trained(option, value) for option, value in [
        ("--weight-decay", "0"), ("--weight-decay", str(float(HUGE))), ("--momentum", "0"),
        ("--clip-norm", "0"), ("--clip-norm", str(float(HUGE))),
        ("--attention-beta", str(float(HUGE))),
        ("--seed", "0"), ("--seed", M), ("--checkpoint-every", M), ("--log-every", M)]},
    "report --seed='0'": _field(("seed",), 0), f"report --seed={M!r}": _field(("seed",), MAX_COUNT),
    "report --soft-max-len='0'": _soft_scored(False),
    f"report --soft-max-len={M!r}": _soft_scored(True),
    # --group-size beyond the runs: one stack of every run (the memory estimate caps it)
    f"sweep --group-size={M!r}": lambda stdout: _check_rows(_lines(stdout), 1),
    f"benchmark flare --group-size={M!r}": lambda stdout: _check_rows(
        [row for row in _lines(stdout) if row["kind"] == "model"], 1),
    **{f"benchmark flare --seed={value!r}": _benchmark_seeded(int(value)) for value in ("0", M)},
    "extract --max-len='0'": _field(("checked_max_len",), 0),
    "extract --random='0'": _field(("checked_random",), 0),
    f"extract --max-len={M!r}": _extracted(),
    "harden --seed='0'": _hardened(), f"harden --seed={M!r}": _hardened(),
    "harden --held-out='0'": _hardened(),
    "scan-snap --epsilon='1000000000000000.0'": _field(("epsilon",), float(HUGE)),
    "scan-snap --common='0'": _field(("common",), 0),
    "scan-snap --common-per-query='0'": _field(("common_per_query",), 0),
}
"""case_id -> a check of what a valid value did (exit 0 is allowed only for these)."""


# --- running the cases, one child per command ---------------------------------------------------


def run_cases(name: tuple[str, ...], chosen: list, tmp: Path) -> dict[str, dict]:
    """Run the setup and ``chosen`` cases of command ``name`` in child processes; outcomes by id."""
    tmp.mkdir(parents=True, exist_ok=True)
    (tmp / "program.crasp").write_text(PROGRAM)
    setup = [(f"setup {index}", [w.format(tmp=tmp) for w in line], SETUP_SECONDS)
             for index, line in enumerate(SETUP.get(name, []))]
    whole = [*BASE[name], *ARGUMENTS.get(name, {}).values()]
    warm = [("warm", [*name, *(w.format(tmp=tmp, out=tmp / "warm") for w in whole)],
             SETUP_SECONDS)]
    pending = setup + warm + [(case_id(case), command_line(case, tmp, number), CASE_SECONDS)
                              for number, case in enumerate(chosen)]
    outcomes: dict[str, dict] = {}
    env = {**os.environ, "NUMBA_NUM_THREADS": "1", "OMP_NUM_THREADS": "1",
           "MKL_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1"}
    while pending:
        child = subprocess.Popen(
            [sys.executable, str(REPO / "tests" / "support" / "cli_case_runner.py")],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
            env=env, cwd=tmp)
        child.stdin.write(json.dumps({"cap": CAP, "cases": pending}))
        child.stdin.close()
        running, deadline = None, None
        while True:
            wait = None if deadline is None else max(deadline - time.monotonic(), 0)
            ready, _, _ = select.select([child.stdout], [], [], wait)
            if not ready:  # the timer could not stop it: kill the child, go on without it
                child.kill()
                child.wait()
                outcomes[running] = {"code": "hang", "stdout": "", "stderr": "", "peak": 0}
                break
            line = child.stdout.readline()
            if not line:  # the child died (a crash): the running case is its cause
                child.wait()
                if running is not None:
                    outcomes[running] = {"code": f"died {child.returncode}", "stdout": "",
                                         "stderr": "", "peak": 0}
                break
            report = json.loads(line)
            if report.get("start"):
                running, deadline = report["id"], time.monotonic() + report["seconds"] + 60
            else:
                outcomes[report.pop("id")] = report
                running, deadline = None, None
        pending = [case for case in pending if case[0] not in outcomes]
    return outcomes


PROGRESS = re.compile(r"\d[\d,]*/\d[\d,]*")
"""A progress line's count, e.g. ``training dyck1: 329/2,147,483,647 after 30 s``."""


def problem(case, outcome: dict) -> str | None:
    """What is wrong with a case's outcome, or None."""
    code, stderr = outcome["code"], outcome["stderr"]
    if outcome["peak"] > PEAK_LIMIT:
        return f"peak memory {outcome['peak'] / 2**30:.1f} GiB (exit {code})"
    if "Traceback" in stderr:
        return f"traceback: {stderr[-600:]}"
    if "out of memory" in stderr:
        return "reached the address-space cap (MemoryError): no estimate refused it first"
    if code == "timeout" and PROGRESS.search(stderr):
        return None  # long work, asked for, with its progress shown: not a hang
    if code == 2:
        errors = [line for line in stderr.splitlines() if line.startswith("error:")]
        if len(errors) != 1:
            return f"exit 2 with {len(errors)} error lines: {stderr[-600:]!r}"
        if case_id(case) in VALID:
            return f"refused a valid value: {errors[0]}"
        return None
    if code == 0:
        check = VALID.get(case_id(case))
        if check is None:
            return f"exit 0: accepted without an entry in VALID saying what it means; " \
                   f"stdout {outcome['stdout'][-300:]!r}"
        try:
            check(outcome["stdout"])
        except (AssertionError, LookupError, ValueError) as error:  # ValueError: not JSON
            return f"exit 0 but did not do what the value means: {error!r}; " \
                   f"stdout {outcome['stdout'][-300:]!r}"
        return None
    return f"exit {code}: {stderr[-600:]!r}"


XFAIL: dict[str, str] = {}
"""case_id -> why it fails today, for the cases other work on issue 39 fixes (strict: each flips
to a failure, to be removed from here, once that work is merged)."""


@pytest.fixture(scope="module")
def outcomes(tmp_path_factory):
    """The outcomes of a command's cases by case id, run on first use (one child per command)."""
    found: dict[tuple[str, ...], dict[str, dict]] = {}

    def of(name: tuple[str, ...]) -> dict[str, dict]:
        if name not in found:
            mine = [case for case in cases() if case[0] == name]
            found[name] = run_cases(name, mine, tmp_path_factory.mktemp("-".join(name)))
        return found[name]

    return of


def test_every_command_has_a_base_line_and_every_value_entry_a_case():
    assert set(BASE) == {name for name, _ in leaf_commands()} - {("languages",)}
    ids = {case_id(case) for case in cases()}
    assert set(VALID) <= ids and set(XFAIL) <= ids
    assert len(ids) > 300


@pytest.mark.parametrize("name", sorted(BASE))
def test_the_base_line_of_every_command_is_valid(name, outcomes):
    found = outcomes(name)
    for key in sorted(k for k in found if k == "warm" or k.startswith("setup")):
        assert found[key]["code"] == 0, (key, found[key]["stderr"][-800:])


@pytest.mark.parametrize("case", [
    pytest.param(case, id=case_id(case),
                 marks=[pytest.mark.xfail(strict=True, reason=XFAIL[case_id(case)])]
                 if case_id(case) in XFAIL else [])
    for case in cases()])
def test_an_extreme_value_is_refused_in_one_line_or_does_what_it_means(case, outcomes):
    outcome = outcomes(case[0])[case_id(case)]
    assert problem(case, outcome) is None, f"satsim {case_id(case)}: {problem(case, outcome)}"


if __name__ == "__main__":  # explore: print every case's outcome
    chosen_names = [tuple(a.split()) for a in sys.argv[1:]] or list(BASE)
    for name in chosen_names:
        mine = [c for c in cases() if c[0] == name]
        found = run_cases(name, mine, Path(f"/tmp/h39c_explore/{'-'.join(name)}"))
        for key in ("warm", *(k for k in found if k.startswith("setup"))):
            if key in found and found[key]["code"] != 0:
                print("SETUP FAILED", key, found[key])
        for case in mine:
            o = found[case_id(case)]
            err = [line for line in o["stderr"].splitlines() if line.strip()]
            print(f"{case_id(case)} -> {o['code']} peak {o['peak'] / 2**20:.0f}M "
                  f"{(err[-1] if err else o['stdout'][-150:])[:220]!r} || {problem(case, o)}",
                  flush=True)
