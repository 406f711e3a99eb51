"""``evalsift estimate``: a new system's full-benchmark score from its scores on a few anchor items."""

from __future__ import annotations

import argparse
import json
import sys
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
                                                                  "read from --data; every other system is known)")
    p.add_argument("--items", required=True, metavar="FILE", help="anchors.jsonl from `evalsift select anchors`")
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


def _fmt(v: float, scale: float) -> str:
    return f"{v * scale:.2f}"


def cmd_estimate(args: argparse.Namespace) -> int:
    """``evalsift estimate``."""
    from ..estimate import KnownSystems, estimate_score, read_anchors, response_matrix

    out = out_dir(args.out)
    R = restrict(response_matrix(args.data, metric=args.metric, keep_partial=[args.system],
                                 include_refs=args.include_refs), args.where)
    known_R, row = R.without(args.system)
    anchors = read_anchors(args.items, R.item_ids)
    y = row[anchors.items]
    missing = [R.item_ids[i] for i, v in zip(anchors.items, y) if not np.isfinite(v)]
    if missing:
        raise DataError(f"{args.system} has no {R.metric} score on {len(missing)} anchor item(s), e.g. {missing[0]!r}; "
                        "judge every item of --items first.", field="items", system=args.system, item_id=missing[0])
    known = KnownSystems(known_R.Y, bounds=R.bounds)
    scale = R.scale
    truth = float(row.mean()) if np.isfinite(row).all() else None
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
        print(f"the data holds {args.system}'s score on every item: {_fmt(truth, scale)} (not used by the estimates)")
    res = {"system": args.system, "data": R.source, "metric": R.metric, "unit": R.unit, "items": R.n_items,
           "known_systems": list(known_R.systems), "anchors": str(args.items), "estimates": results,
           "full_score_in_data": truth, "notes": list(R.notes)}
    from ..io._common import write_atomic

    write_atomic(out / "estimate.json", json.dumps(res, indent=2, allow_nan=False))  # whole or not at all
    print(f"wrote {out / 'estimate.json'}", file=sys.stderr)
    return 0
