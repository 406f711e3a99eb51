"""Bisecting k-means fitted once (``diffuse_bisect``) vs flat k-means fitted per budget (``diffuse_kmeans``,
the DiffUse paper's k-means variant).

``diffuse_bisect`` builds one bisecting k-means tree in ``fit`` and cuts it at any budget, so ``select``
does no clustering work. The paper's variant runs flat k-means (greedy k-means++ seeding, one init) once
per budget (:func:`evalsift.select.flat_kmeans_labels`, what ``diffuse_kmeans`` runs). On WMT23 en-de (MQM), for a seeded sample of system pairs and 80% subsamples,
this measures in one run:

- time to serve every budget 5..200 (step 5): one bisecting fit + 40 cuts vs 40 flat k-means fits
  (both single-threaded, on the same cached MiniLM difference vectors), and their ratio;
- whether the picks are as good: success rate (the majority on the picks equals the test set's winner)
  per budget for both, over the same pairs and seeds.

Usage: EVALSIFT_DATA=../shared/data python benchmarks/select/kmeans_fit_once.py [--pairs 12] [--seeds 3]
Writes bench-out/kmeans_fit_once.json.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "src"))
os.environ.setdefault("EVALSIFT_DATA", str(Path(__file__).resolve().parents[3] / "shared" / "data"))

from evalsift.bench.pairwise import choose_pairs  # noqa: E402
from evalsift.io import load  # noqa: E402
from evalsift.oracle import MetricOracle  # noqa: E402
from evalsift.select import (  # noqa: E402
    bisecting_kmeans_tree,
    difference_vectors,
    flat_kmeans_labels,
)
from evalsift.select.clustering import pick_representative  # noqa: E402
from evalsift.stats import count_verdicts, majority, standard_error  # noqa: E402

BUDGETS = list(range(5, 201, 5))


def flat_kmeans_picks(X: np.ndarray, k: int, seed: int) -> np.ndarray:
    """The paper's variant: k-means (greedy k-means++, one init) for this k, the cosine-nearest member of each cluster."""
    labels = flat_kmeans_labels(X, k, seed)
    return np.array([pick_representative(X, np.flatnonzero(labels == c), "cosine")
                     for c in np.unique(labels)], dtype=int)


def tree_picks(tree, X: np.ndarray, k: int, reps: dict) -> np.ndarray:
    out = []
    for node in tree.clusters_at(k):
        if node not in reps:
            reps[node] = pick_representative(X, tree.members(node), "cosine")
        out.append(reps[node])
    return np.array(out, dtype=int)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pairs", type=int, default=12)
    ap.add_argument("--seeds", type=int, default=3)
    args = ap.parse_args()
    pool = load("wmt23/en-de").complete("mqm")
    oracle = MetricOracle("mqm")
    hits = {"bisecting": {b: [] for b in BUDGETS}, "flat": {b: [] for b in BUDGETS}}
    t = {"bisecting": 0.0, "flat": 0.0}
    runs = 0
    for a, b in choose_pairs(pool.systems, args.pairs):
        pp = pool.pair(a, b)
        X_all = difference_vectors(pp, "minilm")
        truth_all = oracle.verdicts(pp, np.arange(pp.n_items), a, b)
        m = int(round(0.8 * pp.n_items))
        for seed in range(args.seeds):
            idx = np.sort(np.random.default_rng(seed).choice(pp.n_items, size=m, replace=False))
            truth, X = truth_all[idx], X_all[idx]
            wa, wb, _ = count_verdicts(truth)
            winner = majority(wa, wb)
            if winner == "tie":
                continue
            runs += 1
            t0 = time.perf_counter()
            tree, reps = bisecting_kmeans_tree(X, seed), {}
            picks_b = {k: tree_picks(tree, X, k, reps) for k in BUDGETS}
            t["bisecting"] += time.perf_counter() - t0
            t0 = time.perf_counter()
            picks_f = {k: flat_kmeans_picks(X, k, seed) for k in BUDGETS}
            t["flat"] += time.perf_counter() - t0
            for name, picks in (("bisecting", picks_b), ("flat", picks_f)):
                for k in BUDGETS:
                    sa, sb, _ = count_verdicts(truth[picks[k]])
                    hits[name][k].append(float(majority(sa, sb) == winner))
    curves = {name: {k: {"success": float(np.mean(v)), "se": standard_error(v)} for k, v in h.items()}
              for name, h in hits.items()}
    res = {"data": "wmt23/en-de (mqm complete)", "pairs": args.pairs, "seeds": args.seeds, "runs": runs,
           "budgets": BUDGETS, "seconds": {k: round(v, 3) for k, v in t.items()},
           "ratio_flat_over_bisecting": round(t["flat"] / t["bisecting"], 1), "curves": curves,
           "mean_success_difference_bisecting_minus_flat": float(np.mean(
               [curves["bisecting"][k]["success"] - curves["flat"][k]["success"] for k in BUDGETS]))}
    print(f"{runs} runs (pairs x seeds), budgets 5..200 (40 budgets):")
    print(f"  bisecting k-means, one fit + 40 cuts: {t['bisecting']:.2f} s; flat k-means, 40 fits: {t['flat']:.2f} s; "
          f"ratio {res['ratio_flat_over_bisecting']}x")
    print("  success rate by budget (bisecting / flat):")
    for k in (5, 10, 20, 50, 100, 200):
        print(f"    {k:>4}: {curves['bisecting'][k]['success']:.3f} / {curves['flat'][k]['success']:.3f}")
    print(f"  mean difference over all budgets (bisecting - flat): {res['mean_success_difference_bisecting_minus_flat']:+.4f}")
    out = Path("bench-out")
    out.mkdir(exist_ok=True)
    (out / "kmeans_fit_once.json").write_text(json.dumps(res, indent=2))


if __name__ == "__main__":
    main()
