"""The ``evalsift`` command. Run ``evalsift --help`` or ``evalsift COMMAND --help``.

Commands (one module each):
  data info SPEC                      systems, items, metrics (human flagged), coverage   (cli/data.py)
  data example NAME --out DIR         a tiny shipped example in FastChat's or Chatbot Arena's layout (cli/data.py)
  methods                             registered selectors, oracles and encoders           (cli/data.py)
  select METHOD --data SPEC ...       items to judge, in order                             (cli/select.py)
  select anchors --data SPEC --budget N [--method random|stratified|anchor-points|anchor-irt|irt] --out FILE
                                      the items a new system is judged on                 (cli/select.py)
  estimate --data SPEC --system NEW --items FILE [--method mean|aipw|regression|pirt|gpirt|pirt-1d|gpirt-1d] --out DIR
                                      its full-benchmark score from them, with an interval (cli/estimate.py)
  compare --data SPEC --a --b --oracle metric:NAME
                                      the iterative loop: decision, labels used, risk      (cli/compare.py)
  best --data SPEC --oracle metric:NAME [--systems A,B,...] --risk R
                                      the best of many systems, valid, adaptive pairs       (cli/best.py)
  arena --data BATTLES [--judge FILE ...] [--human-budget N] [--allocation uniform|active] --out DIR
                                      many systems from pairwise battles: Bradley-Terry
                                      scores, intervals, simultaneous rank-sets            (cli/arena.py)
  winrate --data SPEC --baseline MODEL [--annotator NAME] [--length-controlled] [--by COLUMN] --out DIR
                                      win rates against a baseline (AlpacaEval), length-
                                      controlled (AlpacaEval 2.0's GLM), per group         (cli/winrate.py)
  judge --data SPEC --items FILE --oracle llm:MODEL ...
                                      a judge judges a selection, resumably                (cli/judge.py)
  judge-report --data SPEC --judge SPEC --human SPEC [--a SYS --b SYS]
                                      a judge against the human verdicts that exist:
                                      agreement, biases, labels saved as a proxy           (cli/judge_report.py)
  rank --data SPEC --human-metric M   systems ranked, with significance clusters           (cli/rank.py)
  profile --data SPEC --metric M --out DIR [--topics FIELD]
                                      data dimensions, strata, split similarity, OOD;
                                      results.json + report.html                           (cli/profile.py)
  omni sample | annotate | curve      OmniInput: rho(z) over a model's input space, judged
                                      representatives per bin, PR curves and AUPR           (cli/omni.py)
  bench pairwise | subset | calibration | estimate
                                      the two protocols on real data; stop-rule calibration (cli/bench.py)
  embed import FILE --encoder NAME [--data SPEC] | export --data SPEC --encoder NAME --out FILE
                                      precomputed vectors into the encoder cache; a
                                      dataset's output vectors to .npz/.parquet            (cli/embed.py)
  serve --db PATH                     the local annotation app                              (cli/annotate.py)
  annotate new | add-annotator | status | export
                                      annotation projects for people                       (cli/annotate.py)

Every error a user can cause prints one line, ``error: ...``, and exits with status 2; warnings about
the data print as ``note: ...`` lines. ``--quiet`` (before or after the sub-command) hides progress bars;
every other option goes after the sub-command (given before it, the one error line shows the command with
them moved: :func:`options_before_command`). A command that fails leaves no new ``--out`` folder or file
behind (:func:`evalsift.cli._common.outputs_undone_on_failure`, around every command in :func:`_main`).
Ctrl-C stops every command with one line, ``interrupted...``, and exit status 130 -- also during start-up
(the console script's entry, :mod:`evalsift._entry`, installs the handler before this module is imported;
the command modules are imported inside :func:`main`) and when the command was started with SIGINT
ignored (a background job of a script, ``evalsift judge ... &``): the handler of :mod:`evalsift.interrupt`
replaces the inherited one, and counts each press, so a ``KeyboardInterrupt`` swallowed somewhere still
stops the loops that check the count (the LLM judge before each batch of requests).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
from typing import Iterator, Sequence

# only what main() needs before it can catch a Ctrl-C is imported here; the rest is imported inside it
__all__ = ["build_parser", "main"]


def build_parser() -> "Parser":
    """The argument parser for every sub-command."""
    from .. import __version__
    from . import (annotate, arena, bench, best, compare, data, embed, estimate, judge, judge_report, omni, profile, rank,
                   select, winrate)
    from ._common import Parser

    ap = Parser(prog="evalsift", description="Label-efficient, data-aware model evaluation: pick the few test items "
                                             "worth judging, collect the judgments, decide with stated confidence.")
    ap.add_argument("--quiet", action="store_true", help="no progress bars (also EVALSIFT_QUIET=1)")
    ap.add_argument("--version", action="version", version=f"evalsift {__version__}")
    sub = ap.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for module in (data, select, estimate, compare, best, arena, winrate, judge, judge_report, rank, profile, omni, bench,
                   embed, annotate):
        module.register(sub)
    return ap


def _one_line(text: str) -> str:
    return " ".join(str(text).split())


def _show_warning(message, category, filename, lineno, file=None, line=None) -> None:
    print(f"note: {_one_line(message)}", file=sys.stderr)


def _interrupted(e: KeyboardInterrupt) -> int:
    """One line for Ctrl-C (what a command says it left, when it says), exit status 130; a further Ctrl-C
    while it is said is only counted."""
    from .. import interrupt

    interrupt.quiet()
    said = _one_line(e)
    print("interrupted" + (f"; {said}" if said else ""), file=sys.stderr)
    return 130


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``evalsift`` command; returns the exit code.

    0: done; 2: bad input (one ``error:`` line says what and how to fix it); 1: a bug in evalsift
    (set ``EVALSIFT_DEBUG=1`` for the traceback); 130: interrupted (one line, from start-up on, also
    when SIGINT was inherited as ignored). Ctrl-C is counted by :mod:`evalsift.interrupt`'s handler
    while the command runs (the caller's handler is back afterwards), so a ``KeyboardInterrupt`` that
    something swallowed still stops the loops that check it.
    """
    from .. import interrupt

    before = interrupt.install(raising=True)  # a press before this one (the console script's entry) is kept
    try:
        interrupt.check()  # Ctrl-C during start-up, counted by evalsift._entry: stop before any work
        return _main(argv)
    except KeyboardInterrupt as e:  # while importing or parsing, or a second Ctrl-C while saying so
        return _interrupted(e)
    except Exception:
        if interrupt.requested():  # Ctrl-C turned into another error on its way (numpy's import: ImportError)
            return _interrupted(KeyboardInterrupt())
        raise
    finally:
        interrupt.restore(before)


@contextlib.contextmanager
def _ctrl_c_first() -> Iterator[None]:
    """An error raised after Ctrl-C was pressed is the Ctrl-C: a library may turn the KeyboardInterrupt into
    another error (an import that fails, a read cut short), which would otherwise print as that error."""
    from .. import interrupt

    try:
        yield
    except Exception:
        if interrupt.requested():
            raise KeyboardInterrupt from None
        raise


def options_before_command(parser, argv: Sequence[str]) -> str | None:
    """The error for a sub-command's options given before it (``evalsift --data demo compare ...``,
    which argparse reads as the command ``demo``): which options to move, and the command line with
    them after the command's own words (``annotate new``, ``select METHOD``). None when ``argv`` has
    no such option (then argparse's own message stands).

    >>> options_before_command(build_parser(), ["--quiet", "--data", "demo", "compare", "--a", "A"])
    'put --data after the command: evalsift --quiet compare --data demo --a A'
    """
    import argparse
    import shlex

    top = {s for a in parser._actions for s in a.option_strings}  # evalsift's own: --quiet, --version, --help
    commands = {c for a in parser._actions if isinstance(a, argparse._SubParsersAction) for c in a.choices}
    at = next((i for i, t in enumerate(argv) if t in commands), None)
    if at is None or "--" in argv[:at]:
        return None
    head = list(argv[:at])
    moved = [t for t in head if t.split("=", 1)[0] not in top]
    options = [t.split("=", 1)[0] for t in moved if t.startswith("-")]
    if not options:
        return None
    end = at + 1
    while end < len(argv) and not argv[end].startswith("-"):  # the command's own words
        end += 1
    fixed = ["evalsift", *(t for t in head if t not in moved), *argv[at:end], *moved, *argv[end:]]
    return f"put {' '.join(dict.fromkeys(options))} after the command: {shlex.join(fixed)}"


@contextlib.contextmanager
def _device_of(args: argparse.Namespace) -> Iterator[None]:
    """The command's ``--device`` as the process default while it runs (``--device cuda`` without a GPU: one
    error line before any work); the caller's default is back afterwards."""
    spec = getattr(args, "device", None)
    if spec is None:
        yield
        return
    from ..device import ENV, reset_uses, set_default_device

    saved = os.environ.get(ENV)
    reset_uses()
    try:
        set_default_device(spec)
        yield
    finally:
        os.environ.pop(ENV, None) if saved is None else os.environ.__setitem__(ENV, saved)


def _main(argv: Sequence[str] | None) -> int:
    import warnings

    from ..errors import EvalsiftError
    from ._common import fail_outputs, outputs_undone_on_failure

    try:
        parser = build_parser()
        misplaced = options_before_command(parser, list(sys.argv[1:] if argv is None else argv))
        if misplaced:
            print(f"error: {misplaced}", file=sys.stderr)
            return 2
        args = parser.parse_args(argv)
    except SystemExit as e:  # --help / --version (0) and one-line usage errors (2)
        return int(e.code or 0)
    args.argv = list(sys.argv[1:] if argv is None else argv)
    if args.quiet:
        os.environ["EVALSIFT_QUIET"] = "1"
    debug = os.environ.get("EVALSIFT_DEBUG", "") not in ("", "0")
    with warnings.catch_warnings():
        warnings.simplefilter("always")
        # an unclosed file is a developer's diagnostic, off by default in Python; "always" turned it on, and a
        # Ctrl-C that lands while an import reads a .pyc printed "note: unclosed file <...base64.cpython-311.pyc>"
        warnings.simplefilter("ignore", ResourceWarning)
        warnings.showwarning = _show_warning
        try:
            with _device_of(args), outputs_undone_on_failure(), _ctrl_c_first():  # a failure leaves no new --out
                code = args.handler(args)
                if code:
                    fail_outputs()
                return code
        except EvalsiftError as e:
            print(f"error: {_one_line(e)}", file=sys.stderr)
            return 2
        except OSError as e:  # the file system said no (a path that cannot be written, a full disk)
            where = f" {e.filename}" if getattr(e, "filename", None) else ""
            print(f"error: cannot use{where}: {_one_line(e.strerror or e)}", file=sys.stderr)
            return 2
        except KeyboardInterrupt as e:
            return _interrupted(e)
        except Exception as e:  # noqa: BLE001 - a bug: say so in one line, keep the traceback for debugging
            if debug:
                raise
            print(f"error: internal error ({type(e).__name__}: {_one_line(e)}); this is a bug in evalsift, please "
                  "report it with the command line. Set EVALSIFT_DEBUG=1 to see the traceback.", file=sys.stderr)
            return 1


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
