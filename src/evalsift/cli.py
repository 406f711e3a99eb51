"""The ``evalsift`` command. Run ``evalsift --help`` or ``evalsift COMMAND --help``.

Commands:
  data info SPEC                      systems, items, metrics (human flagged), coverage
  select METHOD --data SPEC ...       items to judge, in order, with both outputs
  compare --data SPEC --a --b --oracle metric:NAME
                                      the iterative loop: decision, labels used, risk, trace
  bench pairwise --data SPEC ...      success-rate curves and the iterative table over all pairs
  methods                             registered selectors, oracles and encoders
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from .errors import EvalsiftError, ParameterError


def _ints(text: str) -> list[int]:
    try:
        out: list[int] = []
        for part in text.split(","):
            part = part.strip()
            if ".." in part:  # 5..200 means 5, 10, ..., 200 (step 5) as in the paper
                lo, _, hi = part.partition("..")
                out.extend(range(int(lo), int(hi) + 1, 5))
            elif part:
                out.append(int(part))
        return out
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated integers or LO..HI, got {text!r}") from None


def _floats(text: str) -> list[float]:
    try:
        return [float(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated numbers, got {text!r}") from None


def _add_data(p: argparse.ArgumentParser) -> None:
    p.add_argument("--data", required=True, help="dataset: a path, 'demo', or a name under $EVALSIFT_DATA (e.g. wmt23/en-de, summeval)")
    p.add_argument("--include-refs", action="store_true", help="keep human references (ref*, synthetic_ref) as systems")


def _add_oracle_opts(p: argparse.ArgumentParser) -> None:
    p.add_argument("--lower-is-better", action="store_true", help="the oracle metric is better when lower")
    p.add_argument("--tie-tolerance", type=float, default=0.0, help="score difference at or below which items tie (default 0)")


def _add_loop_opts(p: argparse.ArgumentParser) -> None:
    p.add_argument("--risk", type=float, default=0.2, help="stop when the risk is at or below this (default 0.2)")
    p.add_argument("--min-labels", type=int, default=5, help="first decision set size (default 5)")
    p.add_argument("--max-labels", type=int, default=200, help="never judge more items than this (default 200)")
    p.add_argument("--risk-rule", default="paper", choices=["paper", "tie_aware"], help="how ties count in the risk")


def build_parser() -> argparse.ArgumentParser:
    """The argparse parser for every sub-command."""
    ap = argparse.ArgumentParser(prog="evalsift", description="Label-efficient, data-aware model evaluation.")
    ap.add_argument("--quiet", action="store_true", help="no progress bars")
    sub = ap.add_subparsers(dest="command", required=True)

    data = sub.add_parser("data", help="inspect a dataset").add_subparsers(dest="data_cmd", required=True)
    info = data.add_parser("info", help="systems, items, metrics (human flagged), coverage")
    info.add_argument("spec")
    info.add_argument("--include-refs", action="store_true")
    info.add_argument("--json", action="store_true", help="print JSON")

    sel = sub.add_parser("select", help="items to judge, in pick order")
    sel.add_argument("method", help="a selector name, e.g. diffuse, random, max_norm")
    _add_data(sel)
    sel.add_argument("--a", help="first system (pairwise methods)")
    sel.add_argument("--b", help="second system (pairwise methods)")
    size = sel.add_mutually_exclusive_group(required=True)
    size.add_argument("--budget", type=int, help="number of items")
    size.add_argument("--proportion", type=float, help="share of the pool, e.g. 0.2")
    size.add_argument("--cost-budget", type=float, help="total cost (0-1 knapsack over utility; see --cost-field)")
    sel.add_argument("--cost-field", default="cost", help="per-item cost field (default 'cost'; absent: 0.15 x source words + 33.7 s)")
    sel.add_argument("--metric", help="automatic metric for metric-based selectors")
    sel.add_argument("--balance", metavar="FIELD", help="equal shares per value of FIELD, e.g. domain")
    sel.add_argument("--documents", metavar="FIELD", nargs="?", const="doc", help="select whole documents (FIELD, default doc)")
    sel.add_argument("--seed", type=int, default=0)
    sel.add_argument("--encoder", default="minilm", help="minilm (default), tfidf, or st:<sentence-transformers model>")
    sel.add_argument("--out", required=True, help="output JSONL in pick order (subset2evaluate input keeps its format)")

    cmp_ = sub.add_parser("compare", help="which of two systems wins, with as few judgments as possible")
    _add_data(cmp_)
    cmp_.add_argument("--a", required=True)
    cmp_.add_argument("--b", required=True)
    cmp_.add_argument("--oracle", required=True, help="e.g. metric:mqm (simulate the judge from a score column)")
    cmp_.add_argument("--method", default="diffuse", help="selector (default diffuse)")
    cmp_.add_argument("--seed", type=int, default=0)
    cmp_.add_argument("--encoder", default="minilm")
    _add_loop_opts(cmp_)
    _add_oracle_opts(cmp_)
    cmp_.add_argument("--json", action="store_true", help="print the Decision as JSON")

    bench = sub.add_parser("bench", help="benchmarks on real data").add_subparsers(dest="bench_cmd", required=True)
    bp = bench.add_parser("pairwise", help="DiffUse's protocol: success rate vs budget over system pairs")
    _add_data(bp)
    bp.add_argument("--oracle-metric", required=True)
    bp.add_argument("--methods", default="diffuse,random", help="comma-separated selectors")
    bp.add_argument("--budgets", type=_ints, default=_ints("10,20,50,100"), help="e.g. 10,20,50 or 5..200")
    bp.add_argument("--seeds", type=int, default=10)
    bp.add_argument("--subsample", type=float, default=0.8)
    bp.add_argument("--max-pairs", type=int, default=None)
    bp.add_argument("--encoder", default="minilm")
    bp.add_argument("--iterative", action="store_true", help="also run the iterative algorithm")
    _add_loop_opts(bp)
    _add_oracle_opts(bp)
    bp.add_argument("--out", required=True, help="output directory (results.json, success.png)")

    bs = bench.add_parser("subset", help="subset2evaluate's protocol: ranking systems from the first part of an ordering")
    _add_data(bs)
    bs.add_argument("--human-metric", required=True, help="the human metric the ranking is judged by")
    bs.add_argument("--metric", help="automatic metric for metric-based selectors")
    bs.add_argument("--methods", default="random,metric_avg,metric_var,metric_cons,diversity,irt")
    bs.add_argument("--seeds", type=int, default=10)
    bs.add_argument("--props", type=_floats, default=None, help="proportions, default 0.05,0.1,...,0.5")
    bs.add_argument("--subsample", type=float, default=0.8)
    bs.add_argument("--correlation", default="kendall", choices=["kendall", "spearman"])
    bs.add_argument("--alpha", type=float, default=0.05, help="significance level of the cluster count")
    bs.add_argument("--encoder", default="minilm")
    bs.add_argument("--out", required=True, help="output directory (results.json, subset.png)")

    rank = sub.add_parser("rank", help="rank systems by a human metric, with significance clusters")
    _add_data(rank)
    rank.add_argument("--human-metric", required=True)
    rank.add_argument("--items", help="JSONL of items to use (e.g. picks.jsonl from evalsift select); default all")
    rank.add_argument("--alpha", type=float, default=0.05)
    rank.add_argument("--json", action="store_true")

    sub.add_parser("methods", help="registered selectors, oracles, encoders and dataset formats")
    return ap


def _load(args: argparse.Namespace):
    """The dataset of ``--data``; with ``--metric NAME-ref`` (chrF-ref, BLEU-ref, ROUGE-L-ref) that
    the data lacks, the metric is computed against the data's references first."""
    from .io import load

    pool = load(args.data, include_refs=args.include_refs)
    if getattr(args, "metric", None):
        from .metrics import ensure_metric

        pool, args.metric = ensure_metric(pool, args.metric)
    return pool


def cmd_data_info(args: argparse.Namespace) -> int:
    """``evalsift data info``."""
    from .io import load

    info = load(args.spec, include_refs=args.include_refs).info()
    if args.json:
        print(json.dumps(info, indent=2))
        return 0
    print(f"{info['name']}: {info['n_items']} items x {info['n_systems']} systems")
    print("systems: " + ", ".join(f"{s} ({100 * c:.0f}% outputs)" for s, c in info["output_coverage"].items()))
    print("metrics:")
    for m, d in info["metrics"].items():
        flag = "human" if d["human"] else "auto "
        print(f"  {flag}  {m:<28} {100 * d['cells']:5.1f}% of cells scored, {d['complete_items']} items scored for every system")
    if info["references"]:
        print("references: " + ", ".join(info["references"]))
    if info["metadata"]:
        print("metadata: " + ", ".join(f for f in info["metadata"] if not f.startswith("_")))
    return 0


def _pair_pool(pool, a: str | None, b: str | None, pairwise: bool):
    if pairwise:
        if not a or not b:
            raise ParameterError("this method compares two systems: give --a SYS --b SYS "
                                 f"(systems: {', '.join(pool.systems[:12])})")
        return pool.pair(a, b)
    return pool if not (a and b) else pool.pair(a, b)


def _selector_for(args: argparse.Namespace, pool):
    """The selector a ``select`` command line asks for (wrapped for --balance / --documents), and
    the pool it applies to (the pair, for pairwise methods)."""
    from .select import DocumentLevel, DomainBalanced, build_selector

    sel = build_selector(args.method, args.seed, {"encoder": args.encoder, "metric": args.metric})
    if args.balance and args.documents:
        raise ParameterError("--balance and --documents do not combine; choose one")
    if args.balance:
        sel = DomainBalanced(sel, field=args.balance)
    elif args.documents:
        sel = DocumentLevel(sel, field=args.documents)
    return sel, _pair_pool(pool, args.a, args.b, sel.pairwise)


def _picks(args: argparse.Namespace, sel, pool) -> tuple[list[int], list[float | None], str]:
    """Item positions in pick order, their utilities, and a one-line account of the selection."""
    from .select import utilities_of

    sel.fit(pool)
    if args.cost_budget is not None:
        from .select.costaware import item_costs, knapsack_select

        costs = item_costs(pool, args.cost_field)
        util = utilities_of(sel)
        res = knapsack_select(np.nan_to_num(util, nan=np.nanmin(util) if np.isfinite(util).any() else 0.0),
                              costs, args.cost_budget)
        items = [int(i) for i in res.items]
        note = (f"cost {res.total_cost:.1f} of {args.cost_budget:g} ({res.solver}"
                + (f": {res.message}" if res.message else "") + ")")
        return items, [float(util[i]) for i in items], note
    budget = args.budget if args.budget is not None else _proportion(args.proportion, pool.n_items)
    selection = sel.select(budget)
    util = [None] * len(selection.items) if selection.utilities is None else [float(u) for u in selection.utilities]
    return [int(i) for i in selection.items], util, f"{len(selection.items)} of {pool.n_items} items"


def _proportion(p: float, n: int) -> int:
    if not 0 < p <= 1:
        raise ParameterError(f"--proportion must be in (0, 1], got {p}")
    return max(1, int(round(p * n)))


def cmd_select(args: argparse.Namespace) -> int:
    """``evalsift select METHOD``."""
    pool = _load(args)
    sel, pool = _selector_for(args, pool)
    items, util, note = _picks(args, sel, pool)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    if "_record" in pool.metadata:  # subset2evaluate input: same format back, plus the utility
        from .io import write_s2e_jsonl

        write_s2e_jsonl(pool.subset(items), out, extra={"subset2evaluate_utility": util})
    else:
        _write_picks(out, pool, sel, items, util, args.seed)
    print(f"wrote {len(items)} items to {out} ({args.method}, seed {args.seed}; {note})", file=sys.stderr)
    return 0


def _write_picks(out: Path, pool, sel, items: list[int], util: list[float | None], seed: int) -> None:
    meta = [f for f in ("domain", "doc", "cost") if f in pool.metadata]
    with out.open("w", encoding="utf-8") as fh:
        for rank, (i, u) in enumerate(zip(items, util), 1):
            row: dict[str, Any] = {"rank": rank, "item_id": pool.item_ids[i], "position": i, "input": pool.inputs[i]}
            row.update({f: pool.metadata[f][i] for f in meta})
            if sel.pairwise:
                row.update(a=pool.systems[0], b=pool.systems[1], output_a=pool.outputs[pool.systems[0]][i],
                           output_b=pool.outputs[pool.systems[1]][i])
            if u is not None:
                row["utility"] = u
            row.update(method=getattr(sel, "name", "") or type(sel).__name__, seed=seed)
            fh.write(json.dumps(row, ensure_ascii=False, default=str) + "\n")


def cmd_compare(args: argparse.Namespace) -> int:
    """``evalsift compare``."""
    from .oracle import make_oracle
    from .select import build_selector
    from .session import Session

    pool = _load(args).pair(args.a, args.b)
    is_metric = args.oracle.partition(":")[0] == "metric"
    params = {"higher_is_better": not args.lower_is_better, "tie_tolerance": args.tie_tolerance} if is_metric else {}
    oracle = make_oracle(args.oracle, **params)
    metric = getattr(oracle, "metric", None)
    if metric is not None:
        full = pool.n_items
        pool = pool.complete(metric)
        if pool.n_items < full and not args.json:
            print(f"note: {full - pool.n_items} of {full} items lack {metric!r} for a system; using {pool.n_items}", file=sys.stderr)
    sel = build_selector(args.method, args.seed, {"encoder": args.encoder})
    session = Session(pool, sel, risk=args.risk, min_labels=args.min_labels, max_labels=args.max_labels,
                      risk_rule=args.risk_rule)
    decision = session.run(oracle)
    if args.json:
        print(json.dumps(decision.to_dict(), indent=2))
        return 0
    print(decision.summary())
    print(f"pool: {decision.pool_size} items; win rate of {decision.a} on the decision set {decision.win_rate_a:.3f}"
          + (f" (cluster-weighted {decision.weighted_win_rate_a:.3f})" if decision.weighted_win_rate_a is not None else ""))
    print("trace (clusters, decision set, judged, a-b-ties, risk):")
    steps = decision.trace
    shown = steps if len(steps) <= 12 else steps[:5] + [None] + steps[-5:]
    for t in shown:
        if t is None:
            print(f"  ... {len(steps) - 10} more steps (--json prints them all)")
            continue
        print(f"  k={t['clusters']:>3}  set={t['decision_set']:>3}  judged={t['labels_used']:>3}  "
              f"{t['wins_a']}-{t['wins_b']}-{t['ties']}  risk={t['risk']:.4f}")
    return 0


def _run_bench(args: argparse.Namespace, run) -> tuple[dict[str, Any], Path]:
    """Load ``--data``, call ``run(pool, methods)``, add the load time, write ``--out``/results.json."""
    import time

    t0 = time.perf_counter()
    pool = _load(args)
    t_load = time.perf_counter() - t0
    res = run(pool, [m.strip() for m in args.methods.split(",") if m.strip()])
    res["timing_s"]["load"] = round(t_load, 3)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "results.json").write_text(json.dumps(res, indent=2))
    return res, out


def cmd_bench_pairwise(args: argparse.Namespace) -> int:
    """``evalsift bench pairwise``."""
    from .report import success_plot
    from .bench import pairwise_bench

    iterative = None
    if args.iterative:
        iterative = {"risk": args.risk, "min_labels": args.min_labels, "max_labels": args.max_labels,
                     "risk_rule": args.risk_rule}
    res, out = _run_bench(args, lambda pool, methods: pairwise_bench(
        pool, args.oracle_metric, methods, args.budgets, seeds=args.seeds, subsample=args.subsample,
        max_pairs=args.max_pairs, iterative=iterative, higher_is_better=not args.lower_is_better,
        tie_tolerance=args.tie_tolerance, encoder=args.encoder, quiet=args.quiet))
    success_plot(res, out / "success.png")
    _print_bench(res)
    print(f"wrote {out / 'results.json'} and {out / 'success.png'}", file=sys.stderr)
    return 0


def _print_bench(res: dict[str, Any]) -> None:
    budgets = [str(b) for b in res["budgets"] if any(str(b) in c for c in res["curves"].values())]
    print(f"{res['data']}: oracle {res['oracle_metric']}, {res['n_pairs']} pairs x {res['seeds']} seeds, "
          f"~{res['n_items']} items per pair, subsample {res['subsample']}")
    print("success rate by budget (mean, se across seeds):")
    print("method".ljust(24) + "".join(b.rjust(13) for b in budgets))
    for m, curve in res["curves"].items():
        cells = "".join(f"{curve[b]['success']:.3f}±{curve[b]['se']:.3f}".rjust(13) if b in curve else " " * 13 for b in budgets)
        print(m.ljust(24) + cells)
    if "iterative" in res:
        p = res["iterative_params"]
        print(f"iterative (risk {p['risk']}, n={p['min_labels']}, N={p['max_labels']}):")
        for m, row in res["iterative"].items():
            dist = ", ".join(f"{k} {v:.3f}" for k, v in row["distance"].items())
            print(f"  {m:<22} annotations {row['annotations']:.1f}  success {100 * row['success']:.1f}%  "
                  f"error {100 * row['error']:.1f}%  inconclusive {100 * row['inconclusive']:.1f}%  distance: {dist}")


def cmd_bench_subset(args: argparse.Namespace) -> int:
    """``evalsift bench subset``."""
    from .report import subset_plot
    from .bench.subset import PROPS, subset_bench

    res, out = _run_bench(args, lambda pool, methods: subset_bench(
        pool, args.human_metric, methods, metric=args.metric, seeds=args.seeds, props=args.props or PROPS,
        subsample=args.subsample, correlation=args.correlation, alpha=args.alpha, encoder=args.encoder,
        quiet=args.quiet))
    subset_plot(res, out / "subset.png")
    print(f"{res['data']}: human {res['human_metric']}, metric {res['metric']}, {res['n_systems']} systems, "
          f"{res['n_items']} items (subsample {res['subsample']}), {res['seeds']} seeds, {res['correlation']}")
    print("needed to match random (first crossing, random = 1.0; lower is better) | 'stays' rule:")
    for m in res["methods"]:
        a, b = res["needed_to_match"][m], res["needed_to_match_stays"][m]
        print(f"  {m:<18} correlation {a['correlation']:.3f}±{a['correlation_se']:.3f}  clusters "
              f"{a['clusters']:.3f}±{a['clusters_se']:.3f}  | stays: {b['correlation']:.3f}  {b['clusters']:.3f}")
    print(f"wrote {out / 'results.json'} and {out / 'subset.png'}", file=sys.stderr)
    return 0


def _read_item_ids(path: str) -> list[str]:
    from .errors import DataError

    ids = []
    for lineno, line in enumerate(Path(path).read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            rec = json.loads(line)
        except json.JSONDecodeError as e:
            raise DataError(f"{path}: line {lineno} is not JSON ({e.msg})") from None
        key = "item_id" if "item_id" in rec else "i" if "i" in rec else None
        if key is None:
            raise DataError(f"{path}: line {lineno} has no 'item_id' (or subset2evaluate 'i') field")
        ids.append(str(rec[key]))
    return ids


def cmd_rank(args: argparse.Namespace) -> int:
    """``evalsift rank``: systems by a human metric, with significance clusters."""
    from .errors import DataError
    from .stats import system_clusters

    pool = _load(args).complete(args.human_metric)
    if args.items:
        wanted = _read_item_ids(args.items)
        index = {iid: i for i, iid in enumerate(pool.item_ids)}
        missing = [i for i in wanted if i not in index]
        if missing:
            raise DataError(f"{args.items}: {len(missing)} item(s) are not scored by {args.human_metric!r} for every "
                            f"system in {args.data!r} (first: {missing[:3]})")
        pool = pool.subset([index[i] for i in wanted])
    cl = system_clusters(pool.score(args.human_metric), alpha=args.alpha)
    rows = [{"rank": r + 1, "system": pool.systems[j], "mean": float(cl.means[j]), "cluster": int(cl.labels[j]) + 1}
            for r, j in enumerate(cl.order)]
    if args.json:
        print(json.dumps({"human_metric": args.human_metric, "n_items": pool.n_items, "alpha": args.alpha,
                          "n_clusters": cl.n_clusters, "chain": cl.chain, "ranking": rows}, indent=2))
        return 0
    print(f"{args.human_metric} on {pool.n_items} items: {cl.n_clusters} clusters ({cl.test}, alpha {args.alpha})")
    for row in rows:
        print(f"  {row['rank']:>3}. {row['system']:<24} {row['mean']:10.4f}   cluster {row['cluster']}")
    return 0


def cmd_methods(args: argparse.Namespace) -> int:
    """``evalsift methods``: what is registered."""
    from .embed import encoders
    from .oracle import oracles
    from .select import selectors

    for title, reg in (("selectors", selectors), ("oracles", oracles), ("encoders", encoders)):
        print(f"{title}:")
        for name, desc in reg.describe().items():
            print(f"  {name:<24} {desc}")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``evalsift`` command; returns the exit code."""
    args = build_parser().parse_args(argv)
    if args.quiet:
        import os

        os.environ["EVALSIFT_QUIET"] = "1"
    handlers = {
        ("data", "info"): cmd_data_info,
        ("select", None): cmd_select,
        ("compare", None): cmd_compare,
        ("bench", "pairwise"): cmd_bench_pairwise,
        ("bench", "subset"): cmd_bench_subset,
        ("rank", None): cmd_rank,
        ("methods", None): cmd_methods,
    }
    key = (args.command, getattr(args, "data_cmd", None) or getattr(args, "bench_cmd", None))
    try:
        return handlers[key](args)
    except EvalsiftError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
