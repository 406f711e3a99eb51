"""How many labels does a proxy save? Labels to match random's success, interval width and coverage.

DiffUse's protocol (every system pair x seeded 80% test sets, truth = the test set's winner by item
count under the human metric), with the items judged in a seeded random order. At each number of
labels n the decision is the sign of an estimate of the test set's win rate of a (ties half) minus
one half:

- ``random``: the labels alone (the majority of the first n verdicts);
- ``ppi:<metric>``: cross-prediction-powered inference (:func:`evalsift.stats.cross_ppi_mean`) with
  the metric's difference calibrated into verdict predictions (:class:`evalsift.proxy.MetricProxy`)
  on the labels, out of fold, for every item of the test set;
- ``ppi:noise``: the same with a proxy of pure noise (it must cost nothing);
- ``diffuse``: DiffUse's first n picks (majority), for reference.

Labels to match random at budget B: the smallest n whose success reaches random's success at B
(first crossing on the grid), over B; below 1 is a saving. Also the width of the 95% interval after
20, 50, 100 labels and how often it held the test set's win rate (``random``: the same normal
interval with lam = 0), and the same for the anytime rule's confidence sequence read at n (valid at
any n, with the proxy as its control variate; ``seq:`` rows), which is wider but holds its level
where the normal interval does not (small, lopsided pools), and for the same betting interval with
bets tuned for reading it at n (:func:`evalsift.stats.win_rate_interval`; ``fix:`` rows): a
fixed-sample interval that keeps its level there.

    EVALSIFT_DATA=../shared/data python benchmarks/decide/proxy_gain.py [--data wmt23/en-de] [--human mqm]
        [--proxies MetricX-23-refA,COMET-refA,chrF-refA] [--seeds 10] [--max-pairs N] [--no-diffuse]
    python benchmarks/decide/proxy_gain.py --data summeval --human coherence --proxies chrF-ref,ROUGE-L-ref
    python benchmarks/decide/proxy_gain.py --data summeval --human coherence \
        --proxies judge:judgments:summeval/llm-pairwise/coherence,chrF-ref   # only the pairs the judge covers

A ``judge:SPEC`` proxy (a cheap judge's verdict on every item) limits the run to the pairs where it
covers every item of the test set; items a metric proxy does not score get a neutral difference.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections import defaultdict
from pathlib import Path

import numpy as np

from evalsift.bench.pairwise import pair_cases, restricted_pairs
from evalsift.io import load
from evalsift.metrics import ensure_metric
from evalsift.oracle import MetricOracle
from evalsift.oracle import make_oracle
from evalsift.proxy import MetricProxy, judge_values
from evalsift.select import build_selector
from evalsift.stats import count_verdicts, cross_ppi_mean, majority, ppi_mean, win_rate_interval, win_rate_sequence
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: the shared _runner
from _runner import write_json  # noqa: E402

GRID = [5, 10, 15, 20, 25, 30, 40, 50, 60, 70, 80, 100, 120, 150, 200]
BUDGETS = [10, 20, 50, 100]
VALUE = {"a": 1.0, "b": 0.0, "tie": 0.5}


def labels_to_match(grid, success, target):
    """Smallest n on the grid whose success reaches target (None: never)."""
    for n, s in zip(grid, success):
        if s >= target - 1e-12:
            return n
    return None


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", default="wmt23/en-de")
    ap.add_argument("--human", default="mqm")
    ap.add_argument("--proxies", default="MetricX-23-refA,COMET-refA,chrF-refA")
    ap.add_argument("--seeds", type=int, default=10)
    ap.add_argument("--max-pairs", type=int)
    ap.add_argument("--no-diffuse", action="store_true")
    ap.add_argument("--out", default="bench-out/proxy_gain.json")
    args = ap.parse_args()
    os.environ.setdefault("EVALSIFT_DATA", str(Path(__file__).resolve().parents[3] / "shared" / "data"))
    t0 = time.perf_counter()
    pool = load(args.data)
    proxies, judges = [], {}
    for p in (p for p in args.proxies.split(",") if p):
        if p.startswith("judge:"):
            judges[p] = make_oracle(p.partition(":")[2])
            proxies.append(p)
            continue
        pool, name = ensure_metric(pool, p)  # reference-based metrics (chrF-ref) are computed on demand
        proxies.append(name)
    oracle = MetricOracle(args.human)
    restricted, _ = restricted_pairs(pool, oracle, args.max_pairs, "proxy_gain")
    methods = ["random", *[f"ppi:{p}" for p in proxies], "ppi:noise"] + ([] if args.no_diffuse else ["diffuse"])
    hits = {m: defaultdict(list) for m in methods}
    interval_rows = [m for m in methods if m != "diffuse"]
    interval_rows += ["seq:" + m for m in interval_rows] + ["fix:" + m for m in interval_rows]
    width = {m: defaultdict(list) for m in interval_rows}
    cover = {m: defaultdict(list) for m in interval_rows}
    corr = defaultdict(list)
    cases = 0
    if judges:  # only the pairs every judge proxy covers completely
        restricted = {k: r for k, r in restricted.items()
                      if all(np.all(j.covers(r.pool, *k)) for j in judges.values())}
        print(f"{len(restricted)} pairs covered by {', '.join(judges)}")
    for case in pair_cases(restricted, oracle, args.seeds, 0.8):
        if case.true_winner == "tie":
            continue
        cases += 1
        sub, a, b = case.pool, case.a, case.b
        y_all = np.array([VALUE[v] for v in case.truth])
        truth = float(y_all.mean())
        M = sub.n_items
        order = np.random.default_rng([case.seed, 11]).permutation(M)
        cal = {}
        for p in proxies:
            d = judge_values(judges[p], sub, a, b) - 0.5 if p in judges else sub.score(p, a) - sub.score(p, b)
            ok = np.isfinite(d)
            d = np.where(ok, d, 0.0)  # an item without a proxy score gets a neutral difference
            cal[f"ppi:{p}"] = MetricProxy(d)
            corr[p].append(float(np.corrcoef(d, y_all)[0, 1]) if d.std() > 0 else 0.0)
        cal["ppi:noise"] = MetricProxy(np.random.default_rng([case.seed, 99]).normal(size=M))
        diffuse = None if args.no_diffuse else build_selector("diffuse", case.seed).fit(sub)
        for n in GRID:
            if n > M:
                continue
            idx = order[:n]
            y = y_all[idx]
            wa, wb, _ = count_verdicts(case.truth[idx])
            hits["random"][n].append(float(majority(wa, wb) == case.true_winner))
            plain = ppi_mean(y, idx, np.zeros(M), lam=0.0)
            width["random"][n].append(plain.width)
            cover["random"][n].append(float(plain.low <= truth <= plain.high))
            if n in (20, 50, 100):  # the anytime rule's confidence sequence, read at n
                for m, control in (("random", None), *cal.items()):
                    for tag, fn in (("seq:", win_rate_sequence), ("fix:", win_rate_interval)):
                        lo, hi = fn(y, M, 0.05, items=idx if control else None, control=control)
                        width[tag + m][n].append(hi - lo)
                        cover[tag + m][n].append(float(lo <= truth <= hi))
            for m, proxy in cal.items():
                est = cross_ppi_mean(y, idx, proxy.fit_predict, M)
                side = "a" if est.estimate > 0.5 else "b" if est.estimate < 0.5 else "tie"
                hits[m][n].append(float(side == case.true_winner))
                width[m][n].append(est.width)
                cover[m][n].append(float(est.low <= truth <= est.high))
            if diffuse is not None:
                picks = case.truth[diffuse.select(n).items]
                da, db, _ = count_verdicts(picks)
                hits["diffuse"][n].append(float(majority(da, db) == case.true_winner))
    grid = [n for n in GRID if hits["random"][n]]
    success = {m: [float(np.mean(hits[m][n])) for n in grid] for m in methods}
    out = {"data": args.data, "human": args.human, "cases": cases, "seeds": args.seeds, "grid": grid,
           "success": success,
           "proxy_correlation": {p: float(np.mean(v)) for p, v in corr.items()},
           "labels_to_match": {}, "width": {}, "coverage": {}, "timing_s": None}
    print(f"{args.data}, human {args.human}: {cases} test sets; mean per-item correlation of the proxy's "
          f"difference with the verdict: " + ", ".join(f"{p} {v:.2f}" for p, v in out["proxy_correlation"].items()))
    print("labels to match random's success at budget B, as a share of B (lower is better; None: never):")
    print("  " + "method".ljust(24) + "".join(f"B={b}".rjust(10) for b in BUDGETS))
    for m in methods:
        row = {}
        for b in BUDGETS:
            if b not in grid:
                continue
            n = labels_to_match(grid, success[m], success["random"][grid.index(b)])
            row[str(b)] = None if n is None else n / b
        out["labels_to_match"][m] = row
        print("  " + m.ljust(24) + "".join(("never" if v is None else f"{v:.2f}").rjust(10) for v in row.values()))
    print("interval width (95%) and coverage of the test set's win rate after n labels:")
    for m in width:
        out["width"][m] = {str(n): float(np.mean(width[m][n])) for n in (20, 50, 100) if width[m][n]}
        out["coverage"][m] = {str(n): float(np.mean(cover[m][n])) for n in (20, 50, 100) if cover[m][n]}
        print("  " + m.ljust(24) + "  ".join(f"n={n}: width {out['width'][m][str(n)]:.3f} coverage "
                                             f"{out['coverage'][m][str(n)]:.3f}" for n in (20, 50, 100)
                                             if str(n) in out["width"][m]))
    out["timing_s"] = round(time.perf_counter() - t0, 1)
    write_json(args.out, out, seconds=out["timing_s"])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
