"""Many regular expressions, one row each: decided, and compiled and checked where star-free.

Each expression runs in a worker process that the batch kills when it passes the time or the
memory bound (then the row says ``refused`` and why, and a fresh worker takes the next one);
the structural bounds of :mod:`satsim.rasp.determinise` and :mod:`satsim.rasp.regular` refuse
most pathological ones before that.
"""

from __future__ import annotations

import os
import time
from collections import deque
from collections.abc import Iterable, Iterator
from dataclasses import asdict, dataclass
from multiprocessing import get_context

from satsim.errors import SatsimError


@dataclass(frozen=True)
class BatchSettings:
    """What each expression gets: its alphabet, whether to compile, and the bounds."""

    alphabet: str | None = None
    compile: bool = False
    max_len: int = 8  # the check of a compiled model: every string up to this length
    max_states: int = 20_000
    max_monoid: int = 1_000_000
    timeout: float = 60.0  # CPU seconds per expression (and ten times as many of wall time)
    memory_mb: int = 2_048  # resident memory of the worker per expression


def expression_row(text: str, settings: BatchSettings) -> dict:
    """The row of one expression: sizes, star-freeness, witness, and the model and its check.

    Computed in this process, within the structural bounds only.
    """
    from satsim.rasp import compile_program, model_summary, parse_program, verify
    from satsim.rasp.regular import decide_user, dfa_program, regex_language

    row: dict = {"expression": text}
    try:
        language = regex_language(text, settings.alphabet, settings.max_states)
        verdict = decide_user(language, settings.max_monoid)
        row.update(verdict.as_dict())
        if settings.compile and verdict.star_free:
            program = parse_program(dfa_program(language.dfa, text, verdict=verdict), "brasp",
                                    "<expression>")
            spec = compile_program(program, "regex")
            summary = model_summary(spec)
            row["model"] = {key: summary[key] for key in ("layers", "heads", "d_model")}
            check = verify(spec, language.contains, language.alphabet, settings.max_len,
                           long_count=0)
            row["check"] = {"strings": check.exhaustive_strings,
                            "max_len": check.exhaustive_max_len, "wrong": check.wrong,
                            "first_wrong": check.first_wrong}
    except SatsimError as error:
        row["refused"] = str(error)
    return row


STARTUP_SECONDS = 600.0
"""A worker that is not ready within this long (imports, compiled kernels loaded) is an error."""


def _serve(connection, settings: dict) -> None:
    """A worker: ready once warm, then rows for the expressions it is sent, until None."""
    bound = BatchSettings(**settings)
    expression_row("a", bound)  # the imports and, to compile, the simulator's kernels
    connection.send("ready")
    while (text := connection.recv()) is not None:
        connection.send(expression_row(text, bound))


def _resident_mb(pid: int) -> float:
    """The resident memory of a process (Linux's /proc; 0 where it cannot be read)."""
    try:
        with open(f"/proc/{pid}/statm") as statm:
            return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20
    except (OSError, ValueError, IndexError):
        return 0.0


def _cpu_seconds(pid: int) -> float | None:
    """The CPU time a process has used (Linux's /proc; None where it cannot be read)."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            fields = stat.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return None


class _Worker:
    """One worker process and its pipe: started, then idle or busy with one expression."""

    def __init__(self, settings: BatchSettings) -> None:
        self.settings = settings
        self.process = self.connection = None
        self.ready = False
        self.task: tuple[int, str] | None = None  # the expression it works on, by index
        self.since = 0.0
        self.cpu_since: float | None = None

    def start(self) -> None:
        """Start the process (it says when it is ready)."""
        context = get_context("spawn")
        self.connection, theirs = context.Pipe()
        self.process = context.Process(target=_serve, args=(theirs, asdict(self.settings)),
                                       daemon=True)
        self.process.start()
        self.ready, self.since = False, time.monotonic()

    def idle(self) -> bool:
        """Whether it can take an expression now (starting it if it is not running)."""
        if self.process is None:
            self.start()
        if not self.ready and self.connection.poll():
            if self.connection.recv() != "ready":
                raise RuntimeError("the batch's worker did not start")
            self.ready = True
        if not self.ready and time.monotonic() - self.since > STARTUP_SECONDS:
            raise RuntimeError(f"the batch's worker was not ready in {STARTUP_SECONDS:g} s")
        return self.ready and self.task is None

    def submit(self, index: int, text: str) -> None:
        """Give it an expression."""
        self.connection.send(text)
        self.task, self.since = (index, text), time.monotonic()
        self.cpu_since = _cpu_seconds(self.process.pid)

    def result(self) -> tuple[int, dict] | None:
        """The finished expression's index and row, a refusal past a bound, or None (busy)."""
        index, text = self.task
        seconds = round(time.monotonic() - self.since, 3)
        if self.connection.poll():
            row = self.connection.recv()
        elif not self.process.is_alive():
            code = self.process.exitcode
            self.stop(kill=False)
            row = {"expression": text, "refused": f"the worker died (exit code {code})"}
        elif self._cpu(seconds) > self.settings.timeout or seconds > 10 * self.settings.timeout:
            self.stop()
            row = {"expression": text,
                   "refused": f"took more than {self.settings.timeout:g} s of CPU time"
                   if seconds <= 10 * self.settings.timeout else
                   f"took more than {10 * self.settings.timeout:g} s"}
        elif _resident_mb(self.process.pid) > self.settings.memory_mb:
            self.stop()
            row = {"expression": text,
                   "refused": f"needed more than {self.settings.memory_mb:,} MiB"}
        else:
            return None
        self.task = None
        return index, {**row, "seconds": seconds}

    def _cpu(self, wall: float) -> float:
        """The CPU seconds of the current expression (its wall seconds without /proc)."""
        now = _cpu_seconds(self.process.pid)
        return wall if now is None or self.cpu_since is None else now - self.cpu_since

    def stop(self, kill: bool = True) -> None:
        """End the worker: killed (past a bound), or asked to finish."""
        if self.process is None:
            return
        if kill:
            self.process.kill()
        else:
            try:
                self.connection.send(None)
            except OSError:
                pass
        self.process.join()
        self.connection.close()
        self.process = self.connection = None


def run_batch(expressions: Iterable[str], settings: BatchSettings, jobs: int = 1
              ) -> Iterator[dict]:
    """One row per expression, in order, each with its ``seconds``; ``jobs`` workers at once."""
    from multiprocessing.connection import wait

    waiting = deque(enumerate(expressions))
    total = len(waiting)
    workers = [_Worker(settings) for _ in range(max(1, min(jobs, total)))]
    done: dict[int, dict] = {}
    try:
        for index in range(total):
            while index not in done:
                for worker in workers:
                    if worker.task is None and waiting and worker.idle():
                        worker.submit(*waiting.popleft())
                    elif worker.task is not None and (finished := worker.result()):
                        done[finished[0]] = finished[1]
                # a worker's "ready" is read only while expressions wait for it
                wait([w.connection for w in workers if w.task is not None
                      or (waiting and w.connection is not None)], 0.05)
            yield done.pop(index)
    finally:
        for worker in workers:
            worker.stop(kill=worker.task is not None)


def read_expressions(lines: Iterable[str]) -> list[str]:
    """The expressions of a file: one a line, blank lines and ``#`` comment lines skipped."""
    return [line.rstrip("\r\n") for line in lines
            if line.strip() and not line.lstrip().startswith("#")]
