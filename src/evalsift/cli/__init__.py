"""The ``evalsift`` command. Run ``evalsift --help`` or ``evalsift COMMAND --help``.

Commands (one module each):
  data info SPEC                      systems, items, metrics (human flagged), coverage   (cli/data.py)
  methods                             registered selectors, oracles and encoders           (cli/data.py)
  select METHOD --data SPEC ...       items to judge, in order                             (cli/select.py)
  compare --data SPEC --a --b --oracle metric:NAME
                                      the iterative loop: decision, labels used, risk      (cli/compare.py)
  best --data SPEC --oracle metric:NAME [--systems A,B,...] --risk R
                                      the best of many systems, valid, adaptive pairs       (cli/best.py)
  arena --data BATTLES [--judge FILE ...] [--human-budget N] [--allocation uniform|active] --out DIR
                                      many systems from pairwise battles: Bradley-Terry
                                      scores, intervals, simultaneous rank-sets            (cli/arena.py)
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
  bench pairwise | subset | calibration
                                      the two protocols on real data; stop-rule calibration (cli/bench.py)
  embed import FILE --encoder NAME [--data SPEC] | export --data SPEC --encoder NAME --out FILE
                                      precomputed vectors into the encoder cache; a
                                      dataset's output vectors to .npz/.parquet            (cli/embed.py)
  serve --db PATH                     the local annotation app                              (cli/annotate.py)
  annotate new | add-annotator | status | export
                                      annotation projects for people                       (cli/annotate.py)

Every error a user can cause prints one line, ``error: ...``, and exits with status 2; warnings about
the data print as ``note: ...`` lines. ``--quiet`` (before or after the sub-command) hides progress bars.
"""

from __future__ import annotations

import os
import sys
import warnings
from typing import Sequence

from ..errors import EvalsiftError
from . import annotate, arena, bench, best, compare, data, embed, judge, judge_report, omni, profile, rank, select
from ._common import Parser

__all__ = ["build_parser", "main"]


def build_parser() -> Parser:
    """The argument parser for every sub-command."""
    from .. import __version__

    ap = Parser(prog="evalsift", description="Label-efficient, data-aware model evaluation: pick the few test items "
                                             "worth judging, collect the judgments, decide with stated confidence.")
    ap.add_argument("--quiet", action="store_true", help="no progress bars (also EVALSIFT_QUIET=1)")
    ap.add_argument("--version", action="version", version=f"evalsift {__version__}")
    sub = ap.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for module in (data, select, compare, best, arena, judge, judge_report, rank, profile, omni, bench, embed, annotate):
        module.register(sub)
    return ap


def _one_line(text: str) -> str:
    return " ".join(str(text).split())


def _show_warning(message, category, filename, lineno, file=None, line=None) -> None:
    print(f"note: {_one_line(message)}", file=sys.stderr)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``evalsift`` command; returns the exit code.

    0: done; 2: bad input (one ``error:`` line says what and how to fix it); 1: a bug in evalsift
    (set ``EVALSIFT_DEBUG=1`` for the traceback); 130: interrupted.
    """
    try:
        args = build_parser().parse_args(argv)
    except SystemExit as e:  # --help / --version (0) and one-line usage errors (2)
        return int(e.code or 0)
    args.argv = list(sys.argv[1:] if argv is None else argv)
    if args.quiet:
        os.environ["EVALSIFT_QUIET"] = "1"
    debug = os.environ.get("EVALSIFT_DEBUG", "") not in ("", "0")
    with warnings.catch_warnings():
        warnings.simplefilter("always")
        warnings.showwarning = _show_warning
        try:
            return args.handler(args)
        except EvalsiftError as e:
            print(f"error: {_one_line(e)}", file=sys.stderr)
            return 2
        except OSError as e:  # the file system said no (a path that cannot be written, a full disk)
            where = f" {e.filename}" if getattr(e, "filename", None) else ""
            print(f"error: cannot use{where}: {_one_line(e.strerror or e)}", file=sys.stderr)
            return 2
        except KeyboardInterrupt:
            print("interrupted", file=sys.stderr)
            return 130
        except Exception as e:  # noqa: BLE001 - a bug: say so in one line, keep the traceback for debugging
            if debug:
                raise
            print(f"error: internal error ({type(e).__name__}: {_one_line(e)}); this is a bug in evalsift, please "
                  "report it with the command line. Set EVALSIFT_DEBUG=1 to see the traceback.", file=sys.stderr)
            return 1


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
