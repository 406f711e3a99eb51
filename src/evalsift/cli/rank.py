"""``evalsift rank``: systems ranked by a human metric, with significance clusters."""

from __future__ import annotations

import argparse

from ._common import (add_data, add_quiet, load_data, name_list, note, open_unit, picked_positions, positive_int,
                      print_json)


def register(sub: argparse._SubParsersAction) -> None:
    """Add ``rank``."""
    p = sub.add_parser("rank", help="rank systems by a human metric, with significance clusters")
    add_data(p)
    p.add_argument("--human-metric", required=True, metavar="NAME",
                   help="the metric holding the human judgments to rank by (naming it makes it human)")
    p.add_argument("--items", metavar="FILE", help="JSONL of items to use (e.g. picks.jsonl from evalsift select); "
                                                   "all items when absent")
    p.add_argument("--systems", type=name_list, metavar="A,B,...", help="rank only these systems")
    p.add_argument("--alpha", type=open_unit, default=0.05, help="significance level of the cluster tests")
    p.add_argument("--level", type=open_unit, default=0.95,
                   help="confidence level of the intervals on means and ranks (studentized bootstrap over items)")
    p.add_argument("--resamples", type=positive_int, default=2000, help="bootstrap resamples")
    p.add_argument("--json", action="store_true", help="print JSON instead of text")
    add_quiet(p)
    p.set_defaults(handler=cmd_rank)


def cmd_rank(args: argparse.Namespace) -> int:
    """``evalsift rank``: rank with what is there (see :func:`evalsift.restrict.restrict_ranking`)."""
    from ..restrict import restrict_ranking
    from ..stats import bootstrap_agreement, bootstrap_means, system_clusters

    pool = load_data(args)
    if args.systems:
        pool = pool.with_systems(args.systems)
    population = None  # the items the picks were drawn from, when known
    if args.items:
        population = restrict_ranking(pool, args.human_metric).pool.n_items
        pool = pool.subset(picked_positions(args.items, pool, args.data))
    r = restrict_ranking(pool, args.human_metric)
    if r.items_left_out or r.systems_left_out:
        note(r.note())
    scores = r.pool.score(args.human_metric)
    cl = system_clusters(scores, alpha=args.alpha)
    iv = bootstrap_means(scores, level=args.level, resamples=args.resamples)
    rows = [{"rank": k + 1, "system": r.pool.systems[j], "mean": float(cl.means[j]),
             "mean_interval": [float(iv.low[j]), float(iv.high[j])],
             "rank_interval": [int(iv.rank_low[j]), int(iv.rank_high[j])], "cluster": int(cl.labels[j]) + 1}
            for k, j in enumerate(cl.order)]
    agree = None
    if scores.shape[1] > 1:
        agree = bootstrap_agreement(scores, level=args.level, resamples=args.resamples,
                                    population=max(population, r.pool.n_items) if population else None)
    if args.json:
        print_json({"human_metric": args.human_metric, "n_items": r.pool.n_items, "alpha": args.alpha,
                    "n_clusters": cl.n_clusters, "chain": cl.chain, "test": cl.test, "interval": iv.to_dict(),
                    "agreement": agree.to_dict() if agree else None, "left_out": r.to_dict(), "ranking": rows})
        return 0
    print(f"{args.human_metric} on {r.pool.n_items} items: {cl.n_clusters} clusters ({cl.test}, alpha {args.alpha}); "
          f"{args.level:.0%} intervals: {iv.to_dict()['method']}, {args.resamples} resamples")
    print(f"  {'':>4} {'system':<24} {'mean':>10}   {'interval':<21} {'ranks':<7} cluster")
    for row in rows:
        lo, hi = row["mean_interval"]
        rlo, rhi = row["rank_interval"]
        ranks = f"{rlo}" if rlo == rhi else f"{rlo}-{rhi}"
        print(f"  {row['rank']:>3}. {row['system']:<24} {row['mean']:10.4f}   [{lo:9.4f}, {hi:9.4f}] {ranks:<7} "
              f"{row['cluster']}")
    if agree is not None:
        among = f"the {population} rankable items of the data" if population else "all the items these were drawn from"
        print(f"agreement to expect with the ranking on {among}: Kendall tau {agree.expected:.2f} "
              f"[{agree.low:.2f}, {agree.high:.2f}] (bootstrap over items)")
    print("intervals assume the items are a random sample of what the means are about (not so for picks by a "
          "utility selector)")
    return 0
