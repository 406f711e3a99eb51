"""``evalsift estimate``: a new system's full-benchmark score from its scores on a few anchor items."""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import replace
from typing import Any

import numpy as np

from ..errors import DataError
from ._common import add_quiet, name_list, open_unit, out_dir


def register(sub: argparse._SubParsersAction) -> None:
    """Add ``estimate``."""
    p = sub.add_parser("estimate", help="a new system's full-benchmark score from a few judged items, with an "
                                        "interval")
    p.add_argument("--data", required=True, metavar="SPEC",
                   help="the known systems' scores on every item plus the new system's on (at least) the anchors: "
                        "a path, a dataset name (alpaca-eval, opencompass-irt, wmt23/en-de) or FORMAT:path")
    p.add_argument("--system", required=True, metavar="NEW", help="the new system (its scores on the anchors are "
                                                                  "read from --data, or from --run; every other "
                                                                  "system is known)")
    p.add_argument("--items", required=True, metavar="FILE", help="anchors.jsonl from `evalsift select anchors`")
    p.add_argument("--run", metavar="SPEC", help="the new system's own harness log covering (at least) the anchors, "
                                                 "e.g. lm-eval's --log_samples output of a run with the --samples "
                                                 "file that `select anchors --export lm-eval` wrote: NEW's scores on "
                                                 "the anchors are read from it (a path or FORMAT:path)")
    p.add_argument("--method", type=name_list, default=["aipw"], metavar="M[,M...]",
                   help="mean | aipw (design-based intervals; default aipw) | regression | pirt | gpirt "
                        "(model-based); several comma-separated")
    p.add_argument("--alpha", type=open_unit, default=0.1, help="1 - the interval's level (default 0.1: 90%%)")
    p.add_argument("--metric", help="the score to estimate (default: the data's human metric, or its only one)")
    p.add_argument("--where", metavar="COLUMN=VALUE", help="only the items with this per-item value, e.g. "
                                                         "benchmark=MMLU (as when the anchors were selected)")
    p.add_argument("--include-refs", action="store_true", help="keep human references as systems (mt-metrics-eval)")
    p.add_argument("--out", required=True, metavar="DIR", help="output folder (estimate.json)")
    add_quiet(p)
    p.set_defaults(handler=cmd_estimate)


def restrict(R, where: str | None):
    """``R`` limited to ``COLUMN=VALUE`` (None: unchanged)."""
    if not where:
        return R
    col, sep, value = where.partition("=")
    if not sep:
        raise DataError(f"--where {where!r}: write COLUMN=VALUE, e.g. benchmark=MMLU.", field="where")
    return R.group(col.strip(), value.strip())


def run_row(spec: str, system: str, R) -> tuple[np.ndarray, str | None]:
    """``system``'s scores on ``R``'s items (NaN where it has none) from its own run ``spec`` (read with
    :func:`evalsift.io.load`; a harness log that records no model name is named ``system``), and a note when the
    run's one system has another name. DataError when the run lacks ``R``'s metric, or holds several systems
    and none is ``system``."""
    from ..errors import suggest
    from ..io import HARNESSES, load, resolve

    kw = {"system": system} if resolve(spec)[0] in HARNESSES else {}
    run = load(spec, **kw)
    note_ = None
    if system in run.systems:
        name = system
    elif len(run.systems) == 1:
        name = run.systems[0]
        note_ = f"--run {spec} holds one system, {name}; its scores are {system}'s"
    else:
        raise DataError(f"--run {spec} holds systems {', '.join(run.systems)} but not {system!r}.{suggest(system, run.systems)} "
                        "Name the new system as its run does with --system.", field="run", system=system)
    if R.metric not in run.scores:
        raise DataError(f"--run {spec} has no {R.metric!r} score (it has {', '.join(run.metrics)}); run the same task "
                        "and metric as the known systems, or name another with --metric.", field="metric")
    col = np.asarray(run.scores[R.metric], dtype=float)[:, run.systems.index(name)]
    pos = {str(i): k for k, i in enumerate(run.item_ids)}
    row = np.array([col[pos[i]] if i in pos else np.nan for i in map(str, R.item_ids)])
    return row, note_


def _fmt(v: float, scale: float) -> str:
    return f"{v * scale:.2f}"


def cmd_estimate(args: argparse.Namespace) -> int:
    """``evalsift estimate``."""
    from ..estimate import KnownSystems, estimate_score, read_anchors, response_matrix

    out = out_dir(args.out)
    R = restrict(response_matrix(args.data, metric=args.metric, keep_partial=[] if args.run else [args.system],
                                 partial_if_present=[args.system] if args.run else [],
                                 include_refs=args.include_refs), args.where)
    known_R, row = R.without(args.system) if args.system in R.systems else (R, None)
    anchors = read_anchors(args.items, R.item_ids)
    truth_from = "the data"
    if args.run:  # NEW's own run: its scores, on the data's items, replace the data's row (or stand for a missing one)
        data_row, (row, run_note) = row, run_row(args.run, args.system, R)
        if run_note:
            R = replace(R, notes=(*R.notes, run_note))
        if data_row is not None and np.isfinite(data_row).all():
            truth_row = data_row
        else:
            truth_row, truth_from = row, f"--run {args.run}"
    else:
        truth_row = row
    y = row[anchors.items]
    missing = [R.item_ids[i] for i, v in zip(anchors.items, y) if not np.isfinite(v)]
    if missing:
        where = f"--run {args.run}" if args.run else "--data"
        fix = ("run the new model on every anchor (`select anchors ... --export lm-eval` writes lm-eval's --samples "
               "file for them)" if args.run else "judge every item of --items first")
        raise DataError(f"{args.system} has no {R.metric} score in {where} on {len(missing)} of the {anchors.n} anchor "
                        f"item(s): {', '.join(repr(m) for m in missing[:5])}{' ...' if len(missing) > 5 else ''}; "
                        f"{fix}.", field="items", system=args.system, item_id=missing[0])
    known = KnownSystems(known_R.Y, bounds=R.bounds)
    scale = R.scale
    truth = float(truth_row.mean()) if np.isfinite(truth_row).all() else None
    results: list[dict[str, Any]] = []
    print(f"{args.system}: {R.metric} over {R.n_items} items, from {anchors.n} judged ({anchors.design} design"
          f"{', seed ' + str(anchors.seed) if anchors.design != 'given' else ''}); {len(known_R.systems)} known systems"
          + (f"; scores in {R.unit}" if scale == 100 else ""))
    for note_ in R.notes:
        print(f"note: {note_}", file=sys.stderr)
    for m in args.method:
        e = estimate_score(known, y, anchors, m, alpha=args.alpha)
        ival = "no interval" if e.low is None else \
            f"{1 - e.alpha:.0%} interval [{_fmt(e.low, scale)}, {_fmt(e.high, scale)}]"
        rule = e.details.get("interval_rule")
        extra = f", {rule} interval" if rule else ""
        if e.details.get("no_interval"):
            extra += f"; {e.details['no_interval']}"
        if rule == "bootstrap-t" and not known.bounded:
            extra += ("; approximate for a score without a stated range at both ends: measured on WMT23 MQM, 0.86-0.89 "
                      "coverage at 50-100 items (docs/estimate.md)")
        if e.details.get("clipped"):
            lo, hi = R.bounds
            extra += (f"; kept inside the score's range [{'-inf' if lo is None else _fmt(lo, scale)}, "
                      f"{'inf' if hi is None else _fmt(hi, scale)}] (the true score lies in it, so the coverage is "
                      "unchanged)")
        print(f"  {m:<11} {_fmt(e.value, scale):>8}  {ival}  ({e.kind}{extra})")
        print(f"  {'':<11} assumes: {e.assumption}")
        results.append({**e.to_dict(), "scale": scale})
    if truth is not None:
        print(f"{truth_from} holds {args.system}'s score on every item: {_fmt(truth, scale)} (not used by the "
              "estimates)")
    res = {"system": args.system, "data": R.source, "metric": R.metric, "unit": R.unit, "items": R.n_items,
           "known_systems": list(known_R.systems), "anchors": str(args.items), "estimates": results,
           "full_score_in_data": truth, "notes": list(R.notes)}
    if args.run:
        res["run"] = str(args.run)
        res["full_score_from"] = truth_from if truth is not None else None
    from ..io._common import write_atomic

    write_atomic(out / "estimate.json", json.dumps(res, indent=2, allow_nan=False))  # whole or not at all
    print(f"wrote {out / 'estimate.json'}", file=sys.stderr)
    return 0
