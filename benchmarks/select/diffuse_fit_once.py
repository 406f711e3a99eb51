"""Fit-once DiffUse against re-clustering per budget, on one pair, for all 40 budgets 5..200.

Ours: one Ward linkage in ``fit``, then ``select(N)`` reads the N-cluster cut off the merge list and
computes each tree node's representative once. Baseline: what a direct implementation of the
paper does for every budget: ``AgglomerativeClustering(n_clusters=N, linkage="ward")`` followed by
the cosine-nearest representative per cluster. Both get the same difference vectors, so the
ratio measures only clustering and representative selection. The two must pick the same items
(same Ward hierarchy); the script checks that and says so.

Data: a real pair when the data is present (WMT23 en-de, all 557 segments, MiniLM embeddings from
the cache), and 1000 items: the real pair's vectors plus resampled, jittered copies to reach 1000
(there is no 1000-item pair with text in the shared data); otherwise synthetic vectors.

    python benchmarks/select/diffuse_fit_once.py [--items 1000] [--out bench-out/diffuse_fit_once.json]
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import sys
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[2]
if importlib.util.find_spec("evalsift") is None:
    sys.path.insert(0, str(REPO / "src"))

from evalsift.pool import Pool  # noqa: E402
from evalsift.select import DiffUse  # noqa: E402
from evalsift.select.diffuse import pick_representative  # noqa: E402
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: the shared _runner
from _runner import write_json  # noqa: E402

BUDGETS = list(range(5, 201, 5))


class Fixed:
    """An encoder that returns precomputed vectors for texts 'v<i>' (no model in the timing)."""

    name = cache_key = "fixed"
    cacheable = False

    def __init__(self, vectors):
        self.vectors = vectors

    def encode(self, texts):
        return np.stack([self.vectors[int(t[1:])] for t in texts]).astype(np.float32)


def real_differences(n_items: int, seed: int = 0) -> tuple[np.ndarray, str]:
    root = Path(os.environ.get("EVALSIFT_DATA") or REPO.parent / "shared" / "data")
    path = root / "wmt23/mt-metrics-eval-v2/wmt23/en-de"
    rng = np.random.default_rng(seed)
    if not path.with_name("system-outputs").exists():
        return rng.normal(size=(n_items, 384)), f"synthetic Gaussian ({n_items} x 384)"
    from evalsift.io import load
    from evalsift.select import difference_vectors

    pool = load(str(path)).pair("GPT4-5shot", "ONLINE-B")
    d = difference_vectors(pool)
    if n_items > len(d):
        extra = d[rng.integers(len(d), size=n_items - len(d))]
        d = np.vstack([d, extra + rng.normal(scale=0.01, size=extra.shape)])
    return d[:n_items], f"WMT23 en-de GPT4-5shot - ONLINE-B ({len(pool.item_ids)} real items, resampled to {n_items})"


def ours(X: np.ndarray) -> tuple[float, dict[int, list[int]]]:
    n = len(X)
    pool = Pool(item_ids=range(n), systems=["A", "B"], outputs={"A": [f"v{i}" for i in range(n)], "B": [f"v{n + i}" for i in range(n)]})
    enc = Fixed(np.vstack([X, np.zeros_like(X)]))
    t = time.perf_counter()
    sel = DiffUse(encoder=enc).fit(pool)
    picks = {b: sorted(sel.select(b).items.tolist()) for b in BUDGETS}
    return time.perf_counter() - t, picks


def per_budget(X: np.ndarray) -> tuple[float, dict[int, list[int]]]:
    from sklearn.cluster import AgglomerativeClustering

    t = time.perf_counter()
    picks = {}
    for b in BUDGETS:
        labels = AgglomerativeClustering(n_clusters=b, linkage="ward").fit_predict(X)
        picks[b] = sorted(pick_representative(X, np.flatnonzero(labels == c), "cosine") for c in range(b))
    return time.perf_counter() - t, picks


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--items", type=int, default=1000)
    ap.add_argument("--out", default="bench-out/diffuse_fit_once.json")
    args = ap.parse_args()
    X, source = real_differences(args.items)
    X = X.astype(np.float64)
    t_ours, p_ours = ours(X)
    t_base, p_base = per_budget(X)
    same = sum(p_ours[b] == p_base[b] for b in BUDGETS)
    res = {"data": source, "items": len(X), "budgets": len(BUDGETS), "ours_s": round(t_ours, 3),
           "recluster_per_budget_s": round(t_base, 3), "speedup": round(t_base / t_ours, 1),
           "identical_picks": f"{same}/{len(BUDGETS)} budgets"}
    print(json.dumps(res, indent=2))
    write_json(args.out, res)


if __name__ == "__main__":
    main()
