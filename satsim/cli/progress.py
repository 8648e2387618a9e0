"""Progress of long work on standard error: a bar on a terminal, timed lines in a log.

click's bar redraws itself on a terminal, but into a file or a pipe it writes its label once
and then nothing until the work ends, which can be many minutes. There a line is written at
most every ``LINE_EVERY`` seconds instead.
"""

from __future__ import annotations

import sys
import time

import click

LINE_EVERY = 30.0
"""Seconds between progress lines when standard error is not a terminal."""


def elapsed(seconds: float) -> str:
    """A duration for a progress line: '45 s', '12 min 5 s', '2 h 3 min'."""
    seconds = int(seconds)
    if seconds < 60:
        return f"{seconds} s"
    if seconds < 3600:
        return f"{seconds // 60} min {seconds % 60} s"
    return f"{seconds // 3600} h {seconds % 3600 // 60} min"


class Ticker:
    """Says when a progress line is due: first after LINE_EVERY seconds, then every as long."""

    def __init__(self) -> None:
        self.start = self.last = time.monotonic()

    def due(self) -> bool:
        """Whether LINE_EVERY seconds have passed since the last line (which this one is)."""
        now = time.monotonic()
        if now - self.last < LINE_EVERY:
            return False
        self.last = now
        return True

    def since_start(self) -> str:
        """The time since the ticker started, for the line."""
        return elapsed(time.monotonic() - self.start)


class _Lines:
    """click's progress bar interface, written as a line whenever the Ticker says so."""

    def __init__(self, length: int, label: str, item_show_func=None) -> None:
        self.length, self.label, self.show = length, label, item_show_func
        self.done = 0
        self.ticker = Ticker()

    def __enter__(self) -> _Lines:
        click.echo(self.label, err=True)
        return self

    def __exit__(self, *exc_info) -> None:
        return None

    def update(self, steps: int, current_item=None) -> None:
        """Count ``steps`` more done; write a line when one is due."""
        self.done += steps
        if self.ticker.due():
            item = self.show(current_item) if self.show and current_item is not None else None
            click.echo(f"{self.label}: {self.done:,}/{self.length:,} after "
                       f"{self.ticker.since_start()}" + (f" ({item})" if item else ""), err=True)


def progressbar(length: int, label: str, *, hidden: bool = False, item_show_func=None):
    """A progress bar on standard error: click's on a terminal, timed lines elsewhere."""
    if hidden or sys.stderr.isatty():
        return click.progressbar(length=length, label=label, file=sys.stderr, hidden=hidden,
                                 item_show_func=item_show_func)
    return _Lines(length, label, item_show_func)


def every_so_often(label: str):
    """A ``progress(done, total)`` callback writing '{label}: done of total (elapsed)'.

    The line goes to standard error whenever the Ticker says one is due.
    """
    ticker = Ticker()

    def report(done: int, total: int) -> None:
        if ticker.due():
            click.echo(f"{label}: {done:,} of {total:,} ({ticker.since_start()})", err=True)

    return report
