"""The ``evalsift`` console script's entry point (``evalsift = "evalsift._entry:main"``).

:func:`main` installs the Ctrl-C handler (:mod:`evalsift.interrupt`, counting only) as its first step,
before the command's modules are imported: a Ctrl-C during start-up is then never a traceback, and
with SIGINT inherited as ignored it is not lost either; :func:`evalsift.cli.main` stops at once with
one line ``interrupted`` and exit status 130. Once the command has returned, Ctrl-C is ignored while
the interpreter shuts down (Python's own shutdown would put the default back, and a press then would
kill the process with SIGINT instead of its exit status), so :func:`main` is for a process that ends
with it: the console script, ``python -m evalsift`` and ``python -m evalsift.cli``. Callers that run
the command in their own process use ``evalsift.cli.main``. Importing this module changes nothing.
"""

import _signal

from .interrupt import install as _install


def main() -> int:
    """Run the ``evalsift`` command (:func:`evalsift.cli.main`) on ``sys.argv``; its exit status."""
    _install(raising=False)  # the first thing: a press is counted from here, and cli.main() stops on it
    try:
        from .cli import main as cli_main

        code = cli_main()
        if code == 130:  # interrupted, and said so in one line: the exit status is 130, not a death by SIGINT
            _forget_the_handled_ctrl_c()
        return code
    finally:
        _signal.signal(_signal.SIGINT, _signal.SIG_IGN)  # the process ends: nothing is left to interrupt


def _forget_the_handled_ctrl_c() -> None:
    """CPython marks a KeyboardInterrupt raised inside code that C ran through ``PyRun_String`` as unhandled, even
    when evalsift caught it later (PyO3 extensions run code that way while they import: ``pydantic_core``, under
    ``openai``), and then ends the process by SIGINT (exit status -2, no traceback) instead of with the status
    :func:`main` returns; measured: 2 of 30 Ctrl-Cs during ``judge``'s start-up. Clear that mark (CPython 3.8-3.11's
    ``_Py_UnhandledKeyboardInterrupt``); where it is not found (later versions keep it inside a structure),
    nothing is done."""
    try:
        import ctypes

        ctypes.c_int.in_dll(ctypes.pythonapi, "_Py_UnhandledKeyboardInterrupt").value = 0
    except (ImportError, AttributeError, ValueError, OSError):
        pass
