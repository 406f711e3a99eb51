"""Progress that a ``quiet`` flag or ``EVALSIFT_QUIET=1`` turns off: a rich bar on a terminal, and when
stderr is not a terminal (a log file, CI, a pipe), one plain line at least every
:data:`LINE_EVERY` seconds (``EVALSIFT_PROGRESS_EVERY`` overrides it) and one at the end, so a long run
is never silent."""

from __future__ import annotations

import os
import sys
import threading
import time
from contextlib import contextmanager
from typing import Callable, Iterator

LINE_EVERY = 30.0
"""Seconds between the plain progress lines written when stderr is not a terminal."""


def is_quiet(quiet: bool | None = None) -> bool:
    """True when progress output is off: ``quiet`` if given, else the ``EVALSIFT_QUIET`` variable."""
    if quiet is not None:
        return bool(quiet)
    return os.environ.get("EVALSIFT_QUIET", "") not in ("", "0")


@contextmanager
def progress_bar(total: int, description: str, quiet: bool | None = None) -> Iterator[Callable[[int], None]]:
    """Yield ``advance(n=1)``; shows a rich bar on stderr unless quiet (plain lines when stderr is not a
    terminal: see the module doc).

    >>> with progress_bar(3, "demo", quiet=True) as advance:
    ...     advance(); advance(2)
    """
    if is_quiet(quiet) or total <= 0:
        yield lambda n=1: None
        return
    if not _is_terminal(sys.stderr):
        with _progress_lines(total, description) as advance:
            yield advance
        return
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

    cols = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(), TimeRemainingColumn())
    with Progress(*cols, console=Console(stderr=True), transient=True) as prog:
        task = prog.add_task(description, total=total)
        yield lambda n=1: prog.advance(task, n)


def _is_terminal(stream) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False


@contextmanager
def _progress_lines(total: int, description: str) -> Iterator[Callable[[int], None]]:
    """``advance(n=1)``, with a timer thread writing ``description: done/total (elapsed, left)`` to stderr
    every ``EVALSIFT_PROGRESS_EVERY`` (default :data:`LINE_EVERY`) seconds, however long one step takes."""
    try:
        every = float(os.environ.get("EVALSIFT_PROGRESS_EVERY", "") or LINE_EVERY)
    except ValueError:
        every = LINE_EVERY
    state = {"done": 0}
    start = time.monotonic()
    stop = threading.Event()

    def line() -> None:
        done, elapsed = state["done"], time.monotonic() - start
        left = f", about {_duration(elapsed / done * (total - done))} left" if 0 < done < total else ""
        print(f"{description}: {done}/{total} ({_duration(elapsed)} elapsed{left})", file=sys.stderr, flush=True)

    def beat() -> None:
        while not stop.wait(every):
            line()

    thread = threading.Thread(target=beat, name="evalsift-progress", daemon=True)
    thread.start()

    def advance(n: int = 1) -> None:
        state["done"] += n

    try:
        yield advance
    finally:
        stop.set()
        thread.join()
        if time.monotonic() - start >= every:  # a long run ends with its last count; a short one stays silent
            line()


def _duration(seconds: float) -> str:
    seconds = int(round(seconds))
    return f"{seconds // 60} min {seconds % 60:02d} s" if seconds >= 60 else f"{seconds} s"
