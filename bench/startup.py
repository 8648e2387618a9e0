"""Start-up: cold and warm times of eval, train, report, verify and compile, beside a baseline.

Run: python bench/startup.py [--baseline f17dca6] [--commands eval,report] [--repeats 1]
[--kernels]. Both checkouts, every command cold then warm: about 200 s of CPU (12 min wall at
load 8-9, about 4 min on a quiet 2-core machine).

Each checkout (this one and ``--baseline``, a git revision unpacked into a temporary folder with
``git archive``) gets its own empty NUMBA_CACHE_DIR, so the project's own cache is untouched.
The commands run in the order a newcomer would type them, cold (the first run of each, in the
checkout's fresh cache: a kernel an earlier command compiled is not compiled again), then warm
(``--repeats`` runs each, the median). The two checkouts alternate command by command, so both
see about the same load. Every run is a fresh process; the table gives its wall seconds and its
CPU seconds (user + system, which a loaded machine does not stretch), with the 1-minute load
average at the start. ``--kernels`` adds the CPU seconds Numba spent compiling each top-level
kernel of each cold run (Numba's event stream; the kernel's callees count with it).

Prints a table and writes bench/results/startup.json.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _common import machine, write

ROOT = Path(__file__).resolve().parent.parent
COMMANDS = {
    "eval": ["eval", "--lang", "dyck1"],
    "train": ["train", "--lang", "dyck1", "--steps", "30", "--checkpoint-every", "15",
              "--out", "{run}"],
    "report": ["report", "{trained}"],
    "verify": ["verify", str(ROOT / "examples" / "dyck1.crasp")],
    "compile": ["compile", "--lang", "first", "-o", "{run}-first.safetensors"],
}
"""The commands, in the order they run; {run} is a fresh folder per run, {trained} the cold
train run's folder of the same checkout."""
PROBE = """
import json, os, sys, time
from numba.core import event

kernels, depth = [], [0]

class Outermost(event.Listener):
    def on_start(self, ev):
        depth[0] += 1
        if depth[0] == 1:
            self.cpu = time.process_time()

    def on_end(self, ev):
        depth[0] -= 1
        if depth[0] == 0:
            kernels.append((ev.data["dispatcher"].py_func.__qualname__.split(".")[-1],
                            time.process_time() - self.cpu))

event.register("numba:compile", Outermost())
from satsim.cli.main import main
sys.argv = ["satsim", *sys.argv[2:]]
try:
    main()
finally:
    with open(os.environ["PROBE_OUT"], "w") as out:
        json.dump(kernels, out)
"""


def baseline_tree(revision: str, folder: Path) -> Path:
    """The files of ``revision`` of this repository, unpacked into ``folder`` (made here)."""
    folder.mkdir()
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", revision], check=True,
                             capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(folder)], input=archive, check=True)
    return folder


def run(tree: Path, cache: Path, argv: list[str], probe: bool) -> dict:
    """One fresh process of ``satsim argv`` importing ``tree``: wall, CPU, and kernels."""
    env = dict(os.environ, PYTHONPATH=str(tree), NUMBA_CACHE_DIR=str(cache),
               NUMBA_NUM_THREADS="1", OMP_NUM_THREADS="1", MKL_NUM_THREADS="1",
               OPENBLAS_NUM_THREADS="1")
    with tempfile.NamedTemporaryFile(suffix=".json") as kernels:
        env["PROBE_OUT"] = kernels.name
        command = ([sys.executable, "-c", PROBE, "probe"] if probe
                   else [sys.executable, "-m", "satsim"]) + argv
        load = os.getloadavg()[0]
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        done = subprocess.run(command, env=env, cwd=tree, capture_output=True, text=True)
        wall = time.perf_counter() - start
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        found = json.loads(Path(kernels.name).read_text() or "[]") if probe else []
    if done.returncode != 0:
        sys.exit(f"satsim {' '.join(argv)} failed in {tree}:\n{done.stderr[-2000:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return {"wall": wall, "cpu": cpu, "load": load, "kernels": found,
            "announced": "satsim: compiling" in done.stderr}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", default="f17dca6",
                        help="git revision to compare with (default: main before issue #42)")
    parser.add_argument("--commands", default=",".join(COMMANDS),
                        help="comma-separated subset of " + ",".join(COMMANDS))
    parser.add_argument("--repeats", type=int, default=1, help="warm runs per command")
    parser.add_argument("--kernels", action="store_true",
                        help="compile CPU seconds per top-level kernel of each cold run")
    args = parser.parse_args()
    names = args.commands.split(",")
    unknown = set(names) - set(COMMANDS)
    if unknown:
        parser.error(f"unknown commands {sorted(unknown)}; choose from {list(COMMANDS)}")
    if "report" in names and "train" not in names:
        names.insert(names.index("report"), "train")  # report reads a run that train writes
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as scratch:
        scratch = Path(scratch)
        trees = {"baseline": baseline_tree(args.baseline, scratch / "baseline"), "this": ROOT}
        results = {side: {} for side in trees}
        runs = iter(range(10**6))

        def argv_for(side: str, name: str) -> list[str]:
            folder = scratch / f"{side}-{name}-{next(runs)}"
            trained = results[side].get("train", {}).get("cold", {}).get("folder", "")
            return [part.replace("{run}", str(folder)).replace("{trained}", trained)
                    for part in COMMANDS[name]]

        for name in names:  # cold, alternating checkouts
            for side, tree in trees.items():
                argv = argv_for(side, name)
                cold = run(tree, scratch / f"cache-{side}", argv, args.kernels)
                if name == "train":
                    cold["folder"] = argv[argv.index("--out") + 1]
                results[side][name] = {"cold": cold}
                print(f"{side:<9}{name:<8} cold {cold['wall']:6.1f} s wall {cold['cpu']:6.1f} s "
                      f"CPU  load {cold['load']:.2f}", flush=True)
        for name in names:  # warm
            for side, tree in trees.items():
                warm = [run(tree, scratch / f"cache-{side}", argv_for(side, name), False)
                        for _ in range(args.repeats)]
                results[side][name]["warm"] = {
                    key: statistics.median(w[key] for w in warm) for key in ("wall", "cpu", "load")}
                results[side][name]["warm"]["announced"] = any(w["announced"] for w in warm)
    table(results, names, args.baseline, args.kernels)
    print(f"({time.perf_counter() - started:.0f} s in all)")
    write("startup", {"machine": machine(), "baseline": args.baseline, "commands": {
        name: " ".join(COMMANDS[name]) for name in names}, "results": results})


def table(results: dict, names: list[str], baseline: str, kernels: bool) -> None:
    """Print cold and warm wall / CPU seconds per command, both checkouts, and the totals."""
    print(f"\n{'command':<9}{'':>3}{'cold wall':>10}{'cold CPU':>9}{'warm wall':>10}{'warm CPU':>9}"
          f"{'load':>6}")
    totals = {side: [0.0, 0.0, 0.0, 0.0] for side in results}
    for name in names:
        for side in results:
            cold, warm = results[side][name]["cold"], results[side][name]["warm"]
            label = baseline if side == "baseline" else "this"
            print(f"{name if side == 'baseline' else '':<9}{label[:8]:>8}{cold['wall']:>8.1f}"
                  f"{cold['cpu']:>9.1f}{warm['wall']:>10.2f}{warm['cpu']:>9.2f}"
                  f"{cold['load']:>6.2f}")
            for i, value in enumerate((cold["wall"], cold["cpu"], warm["wall"], warm["cpu"])):
                totals[side][i] += value
            if kernels and cold["kernels"]:
                print("    " + ", ".join(f"{k} {s:.1f}" for k, s in cold["kernels"]))
    for side, (cold_wall, cold_cpu, warm_wall, warm_cpu) in totals.items():
        label = baseline if side == "baseline" else "this"
        print(f"{'total':<9}{label[:8]:>8}{cold_wall:>8.1f}{cold_cpu:>9.1f}{warm_wall:>10.2f}"
              f"{warm_cpu:>9.2f}")


if __name__ == "__main__":
    main()
