"""The exact signed-rank test (``test='auto'``) against the normal approximation: cost and effect.

One run measures:

1. ``prefix_cluster_counts`` on WMT23 en-de MQM (460 complete items x 12 systems), 20 random
   orders (seed 0), every prefix size 5..460: time with ``test='auto'`` (exact where a comparison
   has at most 50 non-zero differences) against ``test='approx'`` (the normal approximation
   everywhere); ratio auto / approx (best of 3 runs each). Then how many of the 20 x 456 prefix
   cluster counts differ between the two, their share, the sizes at which they differ and in
   which direction.
2. ``signed_rank_p_values(method='exact')`` on 10,000 untied rows of n = 50 against a loop of
   ``scipy.stats.wilcoxon(d, method='exact')`` (scipy's exact mode supports untied data only), with
   the largest difference of the p-values; ratio scipy / ours. Untied rows of equal n share their
   ranks, so ours builds one null distribution for all of them; the script also times ours on
   10,000 tied rows (integer differences in -20..20), whose rank sets are distinct (it counts
   them), which is the dynamic programme's real cost (scipy has no exact mode to compare with there).

    python benchmarks/decide/wilcoxon_exact.py [--out bench-out/wilcoxon_exact.json]

Data: ``$EVALSIFT_DATA`` (default ``../shared/data``), dataset ``wmt23/en-de``.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import sys
import time
import warnings
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[2]
if importlib.util.find_spec("evalsift") is None:
    sys.path.insert(0, str(REPO / "src"))

from evalsift.stats import prefix_cluster_counts, signed_rank_p_values  # noqa: E402
from evalsift.stats.wilcoxon import EXACT_MAX_N  # noqa: E402
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: the shared _runner
from _runner import write_json  # noqa: E402


def best_of(fn, repeat: int = 3):
    """(smallest wall time over ``repeat`` runs, the last result)."""
    best, out = float("inf"), None
    for _ in range(repeat):
        t = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t)
    return best, out


def cluster_counts_part(n_orders: int = 20, seed: int = 0) -> dict:
    from evalsift.io import load

    pool = load("wmt23/en-de").complete("mqm")
    H = pool.score("mqm")
    rng = np.random.default_rng(seed)
    orders = np.array([rng.permutation(H.shape[0]) for _ in range(n_orders)])
    sizes = np.arange(5, H.shape[0] + 1)
    t_auto, auto = best_of(lambda: prefix_cluster_counts(H, orders, sizes, test="auto"))
    t_approx, approx = best_of(lambda: prefix_cluster_counts(H, orders, sizes, test="approx"))
    diff = auto != approx
    changed_sizes = sizes[diff.any(axis=0)]
    per_size = {int(s): int(c) for s, c in zip(sizes, diff.sum(axis=0)) if c}
    # the largest prefix in which some comparison has at most EXACT_MAX_N non-zero differences (MQM
    # has many items where both systems score 0, so prefixes larger than 50 items can still be exact)
    return {
        "data": f"wmt23/en-de MQM, {H.shape[0]} complete items x {H.shape[1]} systems",
        "orders": n_orders,
        "sizes": f"{sizes[0]}..{sizes[-1]} ({sizes.size})",
        "cells": int(auto.size),
        "auto_s": round(t_auto, 3),
        "approx_s": round(t_approx, 3),
        "ratio_auto_over_approx": round(t_auto / t_approx, 2),
        "cells_changed": int(diff.sum()),
        "share_changed": round(float(diff.mean()), 4),
        "cells_auto_fewer_clusters": int((auto < approx).sum()),
        "cells_auto_more_clusters": int((auto > approx).sum()),
        "sizes_with_changes": f"{changed_sizes.min()}..{changed_sizes.max()} ({changed_sizes.size} sizes)"
        if changed_sizes.size else "none",
        "changed_orders_per_size": per_size,
        "mean_clusters_auto_vs_approx_at_size_5_10_20_50": {
            int(s): [round(float(auto[:, s - 5].mean()), 2), round(float(approx[:, s - 5].mean()), 2)]
            for s in (5, 10, 20, 50)
        },
    }


def p_values_part(rows: int = 10_000, n: int = 50, seed: int = 1) -> dict:
    from scipy.stats import rankdata, wilcoxon

    rng = np.random.default_rng(seed)
    untied = rng.normal(size=(rows, n))
    t_ours, ours = best_of(lambda: signed_rank_p_values(untied, "less", method="exact"))

    def scipy_loop():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return np.array([wilcoxon(d, alternative="less", method="exact").pvalue for d in untied])

    t_scipy, ref = best_of(scipy_loop, repeat=1)
    tied = rng.integers(-20, 21, size=(rows, n)).astype(float)
    t_tied, _ = best_of(lambda: signed_rank_p_values(tied, "less", method="exact"))
    nz = (tied != 0).sum(axis=1)
    rank_sets = {tuple(np.sort(rankdata(np.abs(d[d != 0])))) for d in tied}
    return {
        "rows": rows,
        "n": n,
        "ours_exact_untied_s": round(t_ours, 4),
        "scipy_exact_loop_s": round(t_scipy, 3),
        "ratio_scipy_over_ours": round(t_scipy / t_ours, 1),
        "max_abs_p_difference": float(np.max(np.abs(ours - ref))),
        "ours_exact_tied_s": round(t_tied, 3),
        "tied_rows_nonzero_n": f"{nz.min()}..{nz.max()}",
        "tied_rows_distinct_rank_sets": len(rank_sets),
        "ratio_scipy_untied_over_ours_tied": round(t_scipy / t_tied, 2),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default="bench-out/wilcoxon_exact.json")
    args = ap.parse_args()
    res = {"exact_max_n": EXACT_MAX_N, "prefix_cluster_counts": cluster_counts_part(),
           "signed_rank_p_values": p_values_part()}
    print(json.dumps(res, indent=2))
    write_json(args.out, res)


if __name__ == "__main__":
    main()
