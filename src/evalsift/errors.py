"""Every exception and warning evalsift raises on purpose, in one place, and the helpers that build them.

All exceptions derive from :class:`EvalsiftError`, so ``except EvalsiftError`` catches anything the
library reports about your input. Each also derives from the matching built-in (``ValueError``,
``KeyError``, ``ImportError``, ``RuntimeError``) so generic handlers keep working.

- :class:`DataError` -- a file, field, item or system in your data is wrong or missing. The message
  names the file (and line), the field, the item or the system, and says how to fix it.
- :class:`UnknownNameError` -- a registry lookup (selector, oracle, encoder, dataset, ...) failed; the
  message suggests the closest name and lists what is available.
- :class:`ParameterError` -- an argument to a selector, oracle, session or function is out of range.
- :class:`OracleError` -- an oracle could not give a verdict (missing score, judge failure).
- :class:`WorkerError` -- worker processes of a parallel run kept dying (killed, out of memory).
- :class:`MissingDependencyError` -- an optional extra is not installed; the message gives the
  ``pip install`` line.
- :class:`NotFittedError` -- a fitted-state method (``select``) was called before a successful ``fit``.
- :class:`StoreBusyError` (a :class:`DataError`) -- the store stayed locked by another writer longer
  than its ``busy_timeout``; nothing was written, trying again later is safe (the app answers 503
  with ``Retry-After``).
- :class:`ConflictError` (a :class:`DataError`) -- a write contradicts what is stored: an
  idempotency key reused with a different answer, a second answer to an assignment, an undo of an
  item that went to someone else (the app answers 409 and names the conflict).
- :class:`StoreMovedError` (a :class:`StoreBusyError`) -- the store's path no longer names the file
  this process opened (deleted, or replaced by ``mv``); nothing was written, and nothing is until
  the file is back or the process restarts (the app answers 503 and logs the cause).
- :class:`StoreFullError` (a :class:`DataError`) -- the disk (or SQLite's page limit) is full, or the
  disk failed, during a write; nothing was written (the app answers 507).

Every error carries **structured context** besides its message, for programs (the web app) that
want to point at the cause: ``field``, ``item_id``, ``system`` and ``hint`` attributes (None when not
applicable) and :meth:`EvalsiftError.to_dict`.

>>> e = DataError("item 'x7' has no output for system 'B'", item_id="x7", system="B", field="output")
>>> e.to_dict()["system"], isinstance(e, ValueError)
('B', True)

Warnings: :class:`DataWarning` -- the data was read, but something in it was handled in a way you
should know about (a column kept as metadata because one cell is not a number, items dropped from a
pair). The command line prints these as ``note: ...`` lines.

Two helpers give every message of their kind the same shape across the package:
:func:`suggest` (the "Did you mean ...?" part) and :func:`check_choice` (a value that must be one of
a fixed set).
"""

from __future__ import annotations

import difflib
from typing import Any, Iterable


class EvalsiftError(Exception):
    """Base class of every error evalsift raises about its input or state.

    ``field``, ``item_id``, ``system``: what the error is about, when it is about one thing;
    ``hint``: the fix, when it is short enough to show apart from the message.
    """

    def __init__(self, message: str = "", *, field: str | None = None, item_id: Any = None,
                 system: str | None = None, hint: str | None = None) -> None:
        super().__init__(message)
        self.field = field
        self.item_id = None if item_id is None else str(item_id)
        self.system = system
        self.hint = hint

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""

    def to_dict(self) -> dict[str, Any]:
        """``{"error": class name, "message", "field", "item_id", "system", "hint"}`` (JSON-ready)."""
        return {"error": type(self).__name__, "message": str(self), "field": self.field,
                "item_id": self.item_id, "system": self.system, "hint": self.hint}


class DataError(EvalsiftError, ValueError):
    """Bad or missing data: names the file, line, field, item or system, and the fix."""


class UnknownNameError(EvalsiftError, KeyError):
    """An unknown registry name. ``str()`` gives the full message (not KeyError's quoted repr)."""


class ParameterError(EvalsiftError, ValueError):
    """An argument is out of its allowed range or of the wrong kind."""


class OracleError(EvalsiftError, RuntimeError):
    """An oracle could not give a verdict for an item."""


class WorkerError(EvalsiftError, RuntimeError):
    """Worker processes of a parallel run died (killed, out of memory) more often than it retries."""


class MissingDependencyError(EvalsiftError, ImportError):
    """An optional dependency is missing; the message says which extra to install."""


class NotFittedError(EvalsiftError, RuntimeError):
    """A fitted-state method was called before a successful ``fit``."""


class StoreBusyError(DataError):
    """The store was locked by another writer for longer than the wait allowed; nothing was written."""


class ConflictError(DataError):
    """A write that contradicts what the store holds (and is refused, so nothing stored changes)."""


class StoreMovedError(StoreBusyError):
    """The store's path names another file (or none) than the one this process opened; nothing was written."""


class StoreFullError(DataError):
    """The disk was full (or failed) during a write; the transaction was rolled back, nothing was written."""


class DataWarning(UserWarning):
    """The data was read, but part of it was handled in a way the user should know about."""


def missing_dependency(module: str, extra: str | None, purpose: str, *, instead: str = "") -> MissingDependencyError:
    """Build the uniform error for a missing optional dependency.

    ``extra`` names the evalsift extra that installs it (``embed``, ``parquet``), or None for a
    dependency evalsift always installs (then the message says to reinstall evalsift). ``instead``, where
    given, is the way to do without it (``"or run with --encoder tfidf, which needs no extra"``), appended.

    >>> str(missing_dependency("sentence_transformers", "embed", "the MiniLM encoder"))[:40]
    'the MiniLM encoder needs the Python modu'
    >>> str(missing_dependency("m", "embed", "x", instead="or use y")).endswith("pip install 'evalsift[embed]', or use y")
    True
    """
    fix = (f"Install it with: pip install 'evalsift[{extra}]'" if extra else
           f"evalsift depends on it, so the installation is incomplete: pip install --force-reinstall {module}")
    if instead:
        fix = f"{fix}, {instead}"
    return MissingDependencyError(f"{purpose} needs the Python module '{module}', which is not installed. {fix}",
                                  hint=fix)


def suggest(name: Any, options: Iterable[Any], cutoff: float = 0.6) -> str:
    """`` Did you mean 'x'?`` for the closest of ``options`` to ``name``, or ``""``.

    The one place that builds this phrase, so every unknown-name message reads the same.

    >>> suggest("metrc_var", ["metric_var", "random"])
    " Did you mean 'metric_var'?"
    >>> suggest("zzz", ["metric_var"])
    ''
    """
    close = difflib.get_close_matches(str(name), [str(o) for o in options], n=1, cutoff=cutoff)
    return f" Did you mean '{close[0]}'?" if close else ""


def unknown_name_message(kind: str, name: Any, options: Iterable[Any]) -> str:
    """``Unknown <kind> 'name'. Did you mean 'x'? Available: a, b, c`` -- the one shape of these messages.

    >>> unknown_name_message("selector", "metrc_var", ["random", "metric_var"])
    "Unknown selector 'metrc_var'. Did you mean 'metric_var'? Available: metric_var, random"
    """
    names = sorted(str(o) for o in options)
    return f"Unknown {kind} '{name}'.{suggest(name, names)} Available: {', '.join(names) or '(none)'}"


def check_choice(param: str, value: Any, options: Iterable[Any], where: str = "") -> Any:
    """Return ``value`` if it is one of ``options``, else raise :class:`ParameterError`.

    The message names where (``where``), the parameter and the value, suggests the closest option
    and lists all of them: ``"selector 'diffuse': clustering='wrd' is not one of: ward, cosine,
    kmeans, bisect. Did you mean 'ward'?"``.

    >>> check_choice("rule", "paper", ("paper", "tie_aware"))
    'paper'
    >>> check_choice("rule", "papr", ("paper", "tie_aware"), where="Session")
    Traceback (most recent call last):
    ...
    evalsift.errors.ParameterError: Session: rule='papr' is not one of: paper, tie_aware. Did you mean 'paper'?
    """
    opts = tuple(options)
    if value in opts:
        return value
    prefix = f"{where}: " if where else ""
    raise ParameterError(f"{prefix}{param}={value!r} is not one of: {', '.join(map(str, opts))}.{suggest(value, opts)}",
                         field=param)
