"""The best of many systems: `evalsift best` against its baselines on real data.

For each dataset (WMT23 en-de, 12 systems, MQM; SummEval, 16 systems, each human dimension) the
judge is simulated from the human scores, item by item. The truth is the system that beats every
other one in its pairwise pool comparison (the Condorcet winner under item verdicts; it may not
exist), computed from every verdict. Per seed (the pairs' random orders):

- ``leader``: `evalsift best` (successive elimination around a leader, anytime rule, risk R);
- ``all_pairs``: the same rule with every undecided pair judged each round (the non-adaptive
  baseline: "judge every pair with the valid rule");
- exhaustive: every pair judged on every item (the cost of knowing for sure);
- ``metric_var`` subset: the items whose automatic metric varies most across systems, every system
  scored by the human metric on them, the best mean named (subset2evaluate's way; no guarantee).
  Its cost is in *scores* (items x systems), not pairwise judgments; it is compared both with the
  Condorcet winner and with the best mean on all items (its own target).

Prints, per dataset: the truth, then per method the share of seeds that named the true best, named a
wrong one, named nobody (with the mean number of survivors), and the mean judgments used.

    python benchmarks/decide/best_of.py [--seeds 10] [--risk 0.1]
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
from pathlib import Path

import numpy as np

from evalsift.best import BestOf
from evalsift.io import load
from evalsift.metrics import ensure_metric
from evalsift.oracle import MetricOracle
from evalsift.restrict import restrict_pair, restrict_ranking
from evalsift.select import make_selector

CASES = [("wmt23/en-de", "mqm", "MetricX-23-refA"), ("summeval", "coherence", "chrF-ref"),
         ("summeval", "consistency", "chrF-ref"), ("summeval", "fluency", "chrF-ref"),
         ("summeval", "relevance", "chrF-ref")]
PROPS = (0.05, 0.1, 0.2, 0.5)


def condorcet(pool, metric: str) -> tuple[str | None, int]:
    """The system beating every other in its pairwise pool comparison (None if none), and the
    number of pairwise judgments an exhaustive comparison needs."""
    o = MetricOracle(metric)
    wins = {s: 0 for s in pool.systems}
    exhaustive = 0
    for x, y in itertools.combinations(pool.systems, 2):
        pp = restrict_pair(pool, x, y, oracle=o).pool
        v = o.verdicts(pp, np.arange(pp.n_items), x, y)
        exhaustive += pp.n_items
        score = (v == "a").sum() + 0.5 * (v == "tie").sum()
        if score > pp.n_items / 2:
            wins[x] += 1
        elif score < pp.n_items / 2:
            wins[y] += 1
    best = [s for s, w in wins.items() if w == len(pool.systems) - 1]
    return (best[0] if best else None), exhaustive


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=10)
    ap.add_argument("--risk", type=float, default=0.1)
    args = ap.parse_args()
    os.environ.setdefault("EVALSIFT_DATA", str(Path(__file__).resolve().parents[3] / "shared" / "data"))
    out = []
    for data, human, auto in CASES:
        pool = load(data)
        truth, exhaustive = condorcet(pool, human)
        ranked = restrict_ranking(pool, human).pool
        means = ranked.score(human).mean(axis=0)
        best_mean = ranked.systems[int(np.argmax(means))]
        print(f"{data}, judge {human}: {len(pool.systems)} systems; Condorcet winner {truth}; best mean {best_mean}; "
              f"exhaustive pairwise judgments {exhaustive}")
        row = {"data": data, "human": human, "truth": truth, "best_mean": best_mean, "exhaustive": exhaustive}
        for strategy in ("leader", "all_pairs"):
            runs = [BestOf(pool, risk=args.risk, strategy=strategy, seed=s).run(MetricOracle(human))
                    for s in range(args.seeds)]
            right = np.mean([r.outcome == "best" and r.best == truth for r in runs])
            wrong = np.mean([r.outcome == "best" and r.best != truth for r in runs])
            none = np.mean([r.outcome != "best" for r in runs])
            surv = np.mean([len(r.survivors) for r in runs if r.outcome != "best"]) if none else 0.0
            labels = np.mean([r.labels_used for r in runs])
            contains = np.mean([truth in r.survivors for r in runs]) if truth else float("nan")
            row[strategy] = {"right": right, "wrong": wrong, "inconclusive": none, "survivors": surv,
                             "labels": labels, "truth_among_survivors": contains}
            print(f"  {strategy:<10} named right {right:.2f}  wrong {wrong:.2f}  nobody {none:.2f} "
                  f"(survivors {surv:.1f}; truth among them {contains:.2f})  judgments {labels:.0f} "
                  f"({labels / exhaustive:.3f} of exhaustive)")
        if "leader" in row and "all_pairs" in row:
            print(f"  leader / all_pairs judgments: {row['leader']['labels'] / row['all_pairs']['labels']:.3f}")
        sub_pool, auto_name = ensure_metric(ranked, auto)
        order = make_selector("metric_var", metric=auto_name).fit(sub_pool).select(sub_pool.n_items).items
        row["metric_var"] = {}
        for p in PROPS:
            k = max(1, int(round(p * sub_pool.n_items)))
            top = sub_pool.systems[int(np.argmax(sub_pool.score(human)[order[:k]].mean(axis=0)))]
            row["metric_var"][str(p)] = {"items": k, "scores": k * len(sub_pool.systems), "named": top}
            print(f"  metric_var {p:.2f} of items ({k} items, {k * len(sub_pool.systems)} scores): names {top} "
                  f"({'=' if top == truth else '!='} Condorcet, {'=' if top == best_mean else '!='} best mean)")
        out.append(row)
    Path("bench-out").mkdir(exist_ok=True)
    Path("bench-out/best_of.json").write_text(json.dumps(out, indent=2, default=float))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
