"""Ctrl-C for every command: the SIGINT handler counts each press, and the long loops check the count.

A ``KeyboardInterrupt`` raised at the wrong moment can be lost: raised inside a ``__del__``, a weakref
or garbage-collector callback, Python prints "Exception ignored" and goes on; a library that catches
``BaseException`` swallows it. So the handler evalsift's command installs (:func:`install`) does two
things: it counts the press, and (``raising``, the usual mode) raises ``KeyboardInterrupt`` as Python's
own handler does. Loops that spend money or minutes -- the LLM judge before each batch of requests and
while it waits for answers (:mod:`evalsift.oracle.llm_client`), ``evalsift judge`` before each batch --
call :func:`check`, which raises ``KeyboardInterrupt`` again when a press was counted, so a swallowed
one still stops the run at the next check.

The handler is installed by the ``evalsift`` command only (:func:`evalsift.cli.main`; the console
script's entry, :func:`evalsift._entry.main`, installs it in the counting-only mode before the command's
modules are imported, so a press during start-up is not a traceback: ``main`` then stops at once with
one line). Importing evalsift installs nothing.
Outside the command -- evalsift used as a library -- no press is ever counted and :func:`check` does
nothing. This module imports only the interpreter's built-in ``_signal`` (``signal`` imports ``enum``,
which the entry point must not wait for).

>>> presses(), requested()
(0, False)
>>> check()   # nothing pressed: returns
"""

import _signal  # not `signal`, and no `from __future__ import ...` (an import of a file): nothing to wait for

_presses = 0
_raising = True


def _on_sigint(signum: int, frame: object) -> None:
    global _presses
    _presses += 1
    if _raising:
        raise KeyboardInterrupt


def install(*, raising: bool = True) -> object:
    """Make SIGINT count its presses (and raise ``KeyboardInterrupt`` when ``raising``), also when it was
    inherited as ignored (a shell starts a script's background jobs, ``cmd &``, with SIGINT ignored). What
    was there before, for :func:`restore`; ``None`` outside the main thread (only it may set a handler)."""
    global _raising
    try:
        previous = _signal.signal(_signal.SIGINT, _on_sigint)
    except ValueError:  # not the main thread (of the main interpreter)
        return None
    before, _raising = (previous, _raising), raising
    return before


def restore(before: object) -> None:
    """Put back what :func:`install` found (nothing for None), with no press counted."""
    global _raising, _presses
    _presses = 0
    if before is None:
        return
    previous, _raising = before  # type: ignore[misc]
    try:
        _signal.signal(_signal.SIGINT, previous)
    except (ValueError, TypeError):
        pass


def quiet() -> None:
    """Count further presses without raising (while the one line that says so is printed and the command
    exits: a second Ctrl-C then must not interrupt that)."""
    global _raising
    _raising = False


def presses() -> int:
    """How many times SIGINT came since the handler was installed."""
    return _presses


def requested() -> bool:
    """Whether Ctrl-C was pressed (and the run should stop)."""
    return _presses > 0


def check() -> None:
    """Raise ``KeyboardInterrupt`` when Ctrl-C was pressed -- also when the one its handler raised was
    swallowed on the way; return otherwise."""
    if _presses:
        raise KeyboardInterrupt


class deferred:
    """A block a press does not break into: inside it the handler counts the press but raises nothing, and
    :func:`check` (the next check point, after the block) raises it. For steps that must finish whole once
    begun, e.g. handing a received answer on until its judgment is written: a ``KeyboardInterrupt`` raised
    between the answer's storing and its judgment's writing lost the judgment from the output.

    >>> with deferred():
    ...     presses()
    0
    """

    def __enter__(self) -> "deferred":
        global _raising
        self._was = _raising
        _raising = False
        return self

    def __exit__(self, *exc: object) -> bool:
        global _raising
        _raising = self._was
        return False


__all__ = ["check", "deferred", "install", "presses", "quiet", "requested", "restore"]
