"""``evalsift rank``: systems ranked by a human metric, with significance clusters."""

from __future__ import annotations

import argparse

from ..errors import ParameterError
from ._common import (add_data, add_quiet, load_data, note, open_unit, picked_positions, positive_int, print_json,
                      system_list)


def register(sub: argparse._SubParsersAction) -> None:
    """Add ``rank``."""
    p = sub.add_parser("rank", help="rank systems by a human metric, with significance clusters")
    add_data(p)
    p.add_argument("--human-metric", required=True, metavar="NAME",
                   help="the metric holding the human judgments to rank by (naming it makes it human)")
    p.add_argument("--items", metavar="FILE", help="JSONL of items to use (e.g. picks.jsonl from evalsift select); "
                                                   "all items when absent")
    p.add_argument("--systems", type=system_list, metavar="A,B,...", help="rank only these systems")
    p.add_argument("--alpha", type=open_unit, default=0.05, help="significance level of the cluster tests")
    p.add_argument("--cluster-chain", default="top", choices=["top", "previous"],
                   help="reference of each cluster test: top = the current cluster's best system (default); "
                        "previous = the system just above (subset2evaluate's App. Alg. 1)")
    p.add_argument("--level", type=open_unit, default=0.95,
                   help="confidence level of the intervals on means and ranks (studentized bootstrap over items)")
    p.add_argument("--resamples", type=positive_int, default=2000, help="bootstrap resamples")
    p.add_argument("--proxy", metavar="metric:NAME",
                   help="with --items: an automatic metric scored for every item of the data; each system's mean "
                        "over all the data's rankable items is then estimated from the picks' human scores plus the "
                        "metric on every item (the regression estimator, prediction-powered inference with a fitted "
                        "slope); the picks must be a random sample")
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
    proxy_rows = None
    if args.proxy and not args.items:
        raise ParameterError("rank --proxy needs --items: with every item judged there is nothing to predict",
                             field="proxy")
    if args.items:
        full = restrict_ranking(pool, args.human_metric).pool
        population = full.n_items
        positions = picked_positions(args.items, pool, args.data)
        if args.proxy:
            proxy_rows = _proxy_means(full, pool, positions, args)
        pool = pool.subset(positions)
    r = restrict_ranking(pool, args.human_metric)
    if r.items_left_out or r.systems_left_out:
        note(r.note())
    scores = r.pool.score(args.human_metric)
    cl = system_clusters(scores, alpha=args.alpha, chain=args.cluster_chain)
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
                    "agreement": agree.to_dict() if agree else None, "left_out": r.to_dict(), "ranking": rows,
                    "proxy": None if proxy_rows is None else {"spec": args.proxy, "ranking": proxy_rows}})
        return 0
    print(f"{args.human_metric} on {r.pool.n_items} items: {cl.n_clusters} clusters ({cl.test}, alpha {args.alpha}, "
          f"compared with the {'cluster best' if cl.chain == 'top' else 'system above'}); "
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
    if proxy_rows is not None:
        print(f"with the proxy {args.proxy} on all {population} rankable items (regression estimator, "
              f"{args.level:.0%} studentized bootstrap with the slope refitted per resample; the picks must be a "
              "random sample):")
        for k, row in enumerate(proxy_rows, 1):
            lo, hi = row["interval"]
            plo, phi = row["labels_only_interval"]
            print(f"  {k:>3}. {row['system']:<24} {row['mean']:10.4f}   [{lo:9.4f}, {hi:9.4f}]  width {hi - lo:.3f} "
                  f"(labels only {phi - plo:.3f}; slope {row['lam']:.3g})")
    print("intervals assume the items are a random sample of what the means are about (not so for picks by a "
          "utility selector)")
    return 0


def _proxy_means(full, pool, positions, args) -> list[dict]:
    """Per system: the prediction-powered mean of the human metric over ``full`` (the rankable
    items) from the picks' human scores and the proxy metric on every item; best first."""
    import numpy as np

    from ..errors import DataError
    from ..metrics import ensure_metric
    from ..stats import bootstrap_means, regression_means

    kind, _, name = args.proxy.partition(":")
    if kind != "metric" or not name:
        raise ParameterError(f"rank --proxy takes metric:NAME (an automatic metric scored for every item), got "
                             f"{args.proxy!r}", field="proxy")
    full, name = ensure_metric(full, name)
    if full.is_human(name):
        raise ParameterError(f"rank --proxy: {name!r} is a human metric; a proxy must not be the labels", field="proxy")
    index = {iid: i for i, iid in enumerate(full.item_ids)}
    picked = [index[pool.item_ids[p]] for p in positions if pool.item_ids[p] in index]
    H, F = full.score(args.human_metric), full.score(name)
    missing = ~np.isfinite(F).all(axis=1)
    if missing.any():
        first = full.item_ids[int(np.flatnonzero(missing)[0])]
        raise DataError(f"rank --proxy: {name!r} has no score for {int(missing.sum())} rankable item(s) (first {first!r}); "
                        "a proxy must cover every item", field="proxy", item_id=first)
    cols = [j for j, s in enumerate(full.systems) if s in pool.systems]
    est, low, high, lam = regression_means(H[np.ix_(picked, cols)], picked, F[:, cols], level=args.level,
                                           resamples=args.resamples)
    plain = bootstrap_means(H[np.ix_(picked, cols)], level=args.level, resamples=args.resamples)
    rows = [{"system": full.systems[j], "mean": float(est[k]), "interval": [float(low[k]), float(high[k])],
             "lam": float(lam[k]), "labels_only": float(plain.means[k]),
             "labels_only_interval": [float(plain.low[k]), float(plain.high[k])]} for k, j in enumerate(cols)]
    rows.sort(key=lambda r: -r["mean"])
    return rows
