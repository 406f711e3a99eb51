"""``evalsift rank``: systems ranked by a human metric, with significance clusters."""

from __future__ import annotations

import argparse
import sys

import numpy as np

from ..errors import DataError, ParameterError
from ..verdicts import add_repeats, add_verdicts_from, describe_source, verdicts_line
from ._common import (add_aggregate, add_by, add_data, add_quiet, load_data, note, open_unit, picked_positions,
                      positive_int, print_json, system_list)


def register(sub: argparse._SubParsersAction) -> None:
    """Add ``rank``."""
    p = sub.add_parser("rank", help="rank systems by a human metric (or a judge's grades), with significance clusters")
    add_data(p)
    p.add_argument("--human-metric", metavar="NAME",
                   help="the metric holding the judgments to rank by (naming it makes it the labels). Default: the "
                        "data's only human metric, else its only metric (an MT-Bench grade file's score)")
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
    add_by(p, "an item column: category, turn, domain")
    add_verdicts_from(p)
    add_aggregate(p)
    add_repeats(p, "an MT-Bench grade of the same question, turn and model")
    p.add_argument("--out", metavar="DIR", help="also write results.json, ranking.csv and ranking.html there")
    p.add_argument("--json", action="store_true", help="print JSON instead of text")
    add_quiet(p)
    p.set_defaults(handler=cmd_rank)


def rank_metric(pool, wanted: str | None) -> str:
    """The metric ``rank`` ranks by: ``wanted``, else the pool's only human metric, else its only metric."""
    if wanted:
        return wanted
    human = [m for m in pool.metrics if pool.is_human(m)]
    if len(human) == 1:
        return human[0]
    if not human and len(pool.metrics) == 1:
        return pool.metrics[0]
    raise ParameterError(f"rank: say which metric holds the judgments with --human-metric NAME; the data has "
                         f"{', '.join(pool.metrics) or 'no metric'}" + (f" ({', '.join(human)} human)" if human else ""),
                         field="human_metric", hint="add --human-metric NAME")


def rank_source(pool, metric: str, stated: str | None, data: str | None = None) -> dict:
    """Whose verdicts the ranking counts (:mod:`evalsift.verdicts`): ``--verdicts-from`` when given; else, for
    recorded judgments (``data`` a review or judge file), their kinds; else a judge when the data names one (an
    MT-Bench grade file's ``judge`` column), the data is a harness's results (its scorer's metric is the judge) or
    the metric is named after a known LLM family; else people. A
    ``--verdicts-from`` that contradicts what the file says (its judge column; its judgments' own fields), and a
    label only a file's name gave, are said in a note."""
    from ..io import HARNESSES, resolve
    from ..io.judge_files import judge_kind
    from ..io.mtbench import pool_judge
    from ..io.pairwise import read_pairwise
    from ..verdicts import describe_judgments, source_notes

    judge = pool_judge(pool)
    names = [judge or metric]
    found = None
    if data is not None and judge is None:
        fmt, path = resolve(data)
        if fmt == "pairwise" and path is not None:
            recorded = read_pairwise(path)
            desc = describe_judgments(recorded.judgments)
            found = desc["source"] if desc["source"] != "mixed" else None
            names = [a for a, v in desc["annotators"].items() if v["source"] == "judge"] or names
            for text in source_notes(recorded, stated):
                note(text)
        elif fmt in HARNESSES:  # a harness's scorer (lm-eval's acc, inspect's match, ...), automatic, not people
            found = "judge"
    source = stated or found or ("judge" if judge or judge_kind(metric) == "llm" else "human")
    if stated and judge and stated != "judge":
        note(f"--verdicts-from {stated} overrides {data or 'the data'}: its judge column names {judge}, so the file "
             "holds a judge's grades; they are counted as people's")
    return describe_source(source, names if source == "judge" else [], None,
                           "grade" if source == "judge" else "verdict")


def _board(pool, metric: str, args, population: int | None = None, proxy: bool = False) -> dict:
    """One ranking of ``pool`` by ``metric``: clusters, mean and rank intervals, expected agreement."""
    from ..restrict import restrict_ranking
    from ..stats import bootstrap_agreement, bootstrap_means, system_clusters

    r = restrict_ranking(pool, metric)
    scores = r.pool.score(metric)
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
    return {"n_items": r.pool.n_items, "n_clusters": cl.n_clusters, "chain": cl.chain, "test": cl.test,
            "interval": iv.to_dict(), "agreement": agree.to_dict() if agree else None, "left_out": r.to_dict(),
            "ranking": rows, "_restriction": r, "_agree": agree}


def _groups(pool, column: str) -> list[tuple[str, list[int]]]:
    """(value, item positions) for every value of item column ``column``, in sorted order."""
    from ..errors import DataError
    from ..errors import suggest

    if column not in pool.metadata:
        cols = sorted(pool.metadata)
        hint = " (MT-Bench categories come from question.jsonl: --questions FILE)" if column == "category" else ""
        raise DataError(f"--by {column!r}: the data has no item column {column!r}{hint}.{suggest(column, cols)} Item "
                        f"columns: {', '.join(cols) or 'none'}", field="by", hint="name one of the item columns")
    values = list(pool.metadata[column])
    found = sorted({v for v in values if v is not None}, key=lambda v: (str(type(v)), v))
    from ..io.pairwise_data import warn_one_value

    warn_one_value(column, [v for v in values if v is not None], "items")  # one value: the board repeats, said
    return [(str(v), [i for i, x in enumerate(values) if x == v]) for v in found]


def cmd_rank(args: argparse.Namespace) -> int:
    """``evalsift rank``: rank with what is there (see :func:`evalsift.restrict.restrict_ranking`)."""
    from ..io.mtbench import attach_questions, keep_later_grades, mtbench_table, repeated_grades
    from ..restrict import restrict_ranking

    if args.aggregate:
        _refuse_aggregate(args)
    pool = load_data(args)
    if getattr(args, "repeats", "all") == "last" and repeated_grades(pool):
        note(f"--repeats last: {repeated_grades(pool)} repeated grade row(s) give way to the later row of their "
             "question, turn and model (FastChat's show_result.py averages every row: --repeats all)")
        pool = keep_later_grades(pool)
    metric = rank_metric(pool, args.human_metric)
    if not args.human_metric:
        pool.check_metric(metric)
        pool = pool.with_scores(metric, pool.scores[metric], human=True)
    if args.questions:
        pool = attach_questions(pool, args.questions)
    if args.systems:
        pool = pool.with_systems(args.systems)
    source = rank_source(pool, metric, args.verdicts_from, args.data)
    population = None  # the items the picks were drawn from, when known
    proxy_rows = None
    if args.proxy and not args.items:
        raise ParameterError("rank --proxy needs --items: with every item judged there is nothing to predict",
                             field="proxy")
    groups = _groups(pool, args.by) if args.by else None
    if args.items:
        full = restrict_ranking(pool, metric).pool
        population = full.n_items
        positions = picked_positions(args.items, pool, args.data)
        if args.proxy:
            args.human_metric = metric
            proxy_rows = _proxy_means(full, pool, positions, args)
        pool = pool.subset(positions)
        if groups is not None:
            groups = _groups(pool, args.by)
    scored = np.isfinite(pool.score(metric))
    source["verdicts"] = int(scored.sum())
    board = _board(pool, metric, args, population)
    r = board.pop("_restriction")
    agree = board.pop("_agree")
    if r.items_left_out or r.systems_left_out:
        note(r.note())
    table = mtbench_table(pool, metric, args.by) if ("turn" in pool.metadata or args.by) else None
    boards = []
    for value, positions in groups or ():
        try:
            b = _board(pool.subset(positions), metric, args)
        except DataError as e:  # too few items or systems in this group: said, not fatal
            note(f"--by {args.by}: no board for {value!r}: {e}")
            continue
        b.pop("_restriction"), b.pop("_agree")
        boards.append({"value": value, **b})
    result = {"human_metric": metric, "verdicts": source, "alpha": args.alpha, **board,
              "means": table, "by": None if groups is None else {"column": args.by, "boards": boards},
              "proxy": None if proxy_rows is None else {"spec": args.proxy, "ranking": proxy_rows}}
    if args.out:
        _write(result, args)
    if args.json:
        print_json(result)
        return 0
    print(verdicts_line(source) + f" in column {metric!r}")
    if table is not None:
        _print_means(table, pool, metric)
    print(f"{metric} on {r.pool.n_items} items: {board['n_clusters']} clusters ({board['test']}, alpha {args.alpha}, "
          f"compared with the {'cluster best' if board['chain'] == 'top' else 'system above'}); "
          f"{args.level:.0%} intervals: {board['interval']['method']}, {args.resamples} resamples")
    _print_rows(board["ranking"])
    if agree is not None:
        among = f"the {population} rankable items of the data" if population else "all the items these were drawn from"
        print(f"agreement to expect with the ranking on {among}: Kendall tau {agree.expected:.2f} "
              f"[{agree.low:.2f}, {agree.high:.2f}] (bootstrap over items)")
    for b in boards:
        print(f"\n{args.by} = {b['value']}: {b['n_items']} items, {b['n_clusters']} clusters")
        _print_rows(b["ranking"])
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
    if args.out:
        print(f"wrote {args.out}/results.json, ranking.csv and ranking.html", file=sys.stderr)
    return 0


def _refuse_aggregate(args) -> None:
    """``rank --aggregate``: rank reads one score per item and system (a metric column); several annotators'
    categorical verdicts are combined where they are read as verdicts -- arena (pairwise battles), compare
    --oracle judgments:FILE, judge-report --human judgments:FILE."""
    from ..io import resolve

    fmt, _ = resolve(args.data) if args.data else (None, None)
    what = ("a pairwise file of verdicts: rank many systems from it with evalsift arena --data FILE --aggregate "
            f"{args.aggregate}" if fmt == "pairwise" else "scores, one per item and system, already combined")
    raise ParameterError(f"rank --aggregate {args.aggregate}: rank ranks by a metric column (one score per item and "
                         f"system), not by categorical verdicts; {args.data or 'the data'} holds {what}",
                         field="aggregate", hint="use evalsift arena --aggregate for several annotators' verdicts")


def _print_rows(rows: list[dict]) -> None:
    print(f"  {'':>4} {'system':<24} {'mean':>10}   {'interval':<21} {'ranks':<7} cluster")
    for row in rows:
        lo, hi = row["mean_interval"]
        rlo, rhi = row["rank_interval"]
        ranks = f"{rlo}" if rlo == rhi else f"{rlo}-{rhi}"
        print(f"  {row['rank']:>3}. {row['system']:<24} {row['mean']:10.4f}   [{lo:9.4f}, {hi:9.4f}] {ranks:<7} "
              f"{row['cluster']}")


def _print_means(table: list[dict], pool, metric: str) -> None:
    """The mean of every scored (item, system), per turn and per --by value: MT-Bench's score as FastChat's
    show_result computes it."""
    mt = "turn" in pool.metadata and "judge" in pool.metadata
    head = ("MT-Bench score (FastChat show_result: the mean grade over every graded question and turn; -1 grades left "
            "out)" if mt else f"mean {metric} over every scored item")
    print(head + ":")
    groups = list(table[0]["groups"]) if table else []
    width = max([10] + [len(g) for g in groups])
    print(f"  {'system':<24} {'score':>8} {'n':>5} " + " ".join(f"{g:>{width}}" for g in groups))
    for row in table:
        cells = " ".join(f"{'-' if v is None else format(v, '.3f'):>{width}}" for v in row["groups"].values())
        score = "-" if row["score"] is None else f"{row['score']:.3f}"
        print(f"  {row['system']:<24} {score:>8} {row['n']:>5} {cells}")


def _write(result: dict, args) -> None:
    """results.json, ranking.csv (one row per system and board: ``group`` empty for the overall one) and
    ranking.html, each saying whose verdicts it counts."""
    import csv
    import html as _html

    from ..io._common import atomic_file, write_atomic
    from ..report.html import page, table, write_json
    from ._common import out_dir

    out = out_dir(args.out)
    write_json(result, out / "results.json")
    line = verdicts_line(result["verdicts"]) + f" in column {result['human_metric']!r}"
    boards = [("", result)] + [(b["value"], b) for b in (result["by"] or {}).get("boards", [])]
    with atomic_file(out / "ranking.csv", newline="") as f:  # each file whole or not at all
        w = csv.writer(f)
        w.writerow(["group", "rank", "system", "mean", "low", "high", "rank_low", "rank_high", "cluster", "n_items",
                    "verdicts"])
        for value, b in boards:
            for row in b["ranking"]:
                w.writerow([value, row["rank"], row["system"], row["mean"], *row["mean_interval"],
                            *row["rank_interval"], row["cluster"], b["n_items"], line])
    header = ["rank", "system", "mean", "interval", "ranks", "cluster"]
    body = [f"<h1>Ranking by {_html.escape(result['human_metric'])}</h1><p class='foot'>{_html.escape(line)}</p>"]
    if result.get("means"):
        groups = list(result["means"][0]["groups"])
        body.append("<h2>Means over every scored item</h2>" + table(
            ["system", "score", "n", *groups],
            [[r["system"], r["score"], r["n"], *r["groups"].values()] for r in result["means"]]))
    for value, b in boards:
        title = "Overall" if not value else f"{_html.escape(result['by']['column'])} = {_html.escape(value)}"
        rows = [[r["rank"], r["system"], r["mean"], f"[{r['mean_interval'][0]:.4f}, {r['mean_interval'][1]:.4f}]",
                 "-".join(map(str, sorted(set(r["rank_interval"])))), r["cluster"]] for r in b["ranking"]]
        body.append(f"<h2>{title}</h2><p class='foot'>{b['n_items']} items, {b['n_clusters']} clusters</p>"
                    + table(header, rows))
    write_atomic(out / "ranking.html", page(f"evalsift rank: {result['human_metric']}", "".join(body)))


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
