"""How much of the verdicts do DiffUse's clusters explain? The ceiling of any stratified design.

A valid "randomised DiffUse" (issue 8) would keep DiffUse's clusters as strata and draw at random
inside them. With proportional allocation, the variance of the stratified estimate of the pool's
win rate is the random-sampling variance times the *within-cluster share*

    W = sum_h (N_h / M) var_h(y) / var(y)          (y = 1, 0, 1/2 for a, b, tie)

so it needs about W times the labels of random sampling for the same precision (Neyman allocation
gains little more when the verdicts' spread is similar in every cluster). W < 1 also happens by
chance with many small clusters; the script compares W with the same clusters' sizes filled at
random (``chance``: the mean of 50 permutations of the cluster labels) -- the clusters carry
information about the verdicts only to the extent W is below chance.

Per dataset, a seeded sample of pairs (all items of a pair the oracle scores), DiffUse's Ward tree
on MiniLM difference vectors, cut at K = 2, 5, 10, 20, 40. Prints W, chance and W / chance
(the label ratio a stratified valid rule could reach at best, against random sampling).

    python benchmarks/select/strata_information.py            # WMT23 en-de (MQM) and SummEval (4 dimensions)
"""

from __future__ import annotations

import itertools
import json
import os
import sys
from pathlib import Path

import numpy as np

from evalsift.io import load
from evalsift.oracle import MetricOracle
from evalsift.restrict import restrict_pair
from evalsift.select import make_selector
from evalsift.stats.sequential import VALUES

KS = (2, 5, 10, 20, 40)
CASES = [("wmt23/en-de", "mqm"), ("summeval", "coherence"), ("summeval", "consistency"),
         ("summeval", "fluency"), ("summeval", "relevance")]


def within_share(y: np.ndarray, labels: np.ndarray) -> float:
    """sum_h w_h var_h(y) / var(y) for the partition ``labels``."""
    total = y.var()
    if total == 0:
        return float("nan")
    counts = np.bincount(labels)
    sums = np.bincount(labels, weights=y)
    sq = np.bincount(labels, weights=y * y)
    keep = counts > 0
    within = (sq[keep] - sums[keep] ** 2 / counts[keep]).sum() / len(y)
    return float(within / total)


def measure(data: str, metric: str, max_pairs: int = 15, perms: int = 50) -> dict:
    """W and chance per K over a seeded sample of pairs."""
    pool = load(data)
    oracle = MetricOracle(metric)
    pairs = list(itertools.combinations(pool.systems, 2))
    keep = np.sort(np.random.default_rng(0).choice(len(pairs), size=min(max_pairs, len(pairs)), replace=False))
    rng = np.random.default_rng(1)
    rows = {k: {"W": [], "chance": []} for k in KS}
    n_items = []
    for i in keep:
        a, b = pairs[i]
        pp = restrict_pair(pool, a, b, oracle=oracle).pool
        y = np.array([VALUES[str(v)] for v in oracle.verdicts(pp, np.arange(pp.n_items), a, b)])
        if y.var() == 0:
            continue
        n_items.append(pp.n_items)
        tree = make_selector("diffuse").fit(pp).tree_
        for k in KS:
            labels = tree.labels(k)
            rows[k]["W"].append(within_share(y, labels))
            rows[k]["chance"].append(np.mean([within_share(y, rng.permutation(labels)) for _ in range(perms)]))
    out = {"data": data, "oracle": f"metric:{metric}", "pairs": len(n_items),
           "items_per_pair": int(np.median(n_items)) if n_items else 0, "by_k": {}}
    for k in KS:
        w, c = np.array(rows[k]["W"]), np.array(rows[k]["chance"])
        out["by_k"][str(k)] = {"W": float(w.mean()), "W_min": float(w.min()), "W_max": float(w.max()),
                               "chance": float(c.mean()), "W_over_chance": float((w / c).mean())}
    return out


def main() -> int:
    os.environ.setdefault("EVALSIFT_DATA", str(Path(__file__).resolve().parents[3] / "shared" / "data"))
    results = []
    for data, metric in CASES:
        try:
            r = measure(data, metric)
        except Exception as e:  # noqa: BLE001 - a dataset that is absent is reported, not fatal
            print(f"{data} ({metric}): skipped: {e}", file=sys.stderr)
            continue
        results.append(r)
        print(f"{data}, oracle {r['oracle']}: {r['pairs']} pairs, ~{r['items_per_pair']} items each")
        print("   K   W (within-cluster share)   chance (same sizes, random)   W / chance")
        for k, v in r["by_k"].items():
            print(f"  {k:>3}   {v['W']:.3f} [{v['W_min']:.3f}, {v['W_max']:.3f}]"
                  f"          {v['chance']:.3f}                      {v['W_over_chance']:.3f}")
    out = Path("bench-out")
    out.mkdir(exist_ok=True)
    (out / "strata_information.json").write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
