"""subset2evaluate's Table 10 (and Tables 2 and 8) on WMT23 en-de under ``bench subset --protocol paper``.

Zouhar, Cui, Sachan (TACL 2025), App. Table 10, row WMT23 En-De (12 models, 549 items): rank
correlation / cluster count averaged over the proportions 5%..50%. One run prints:

1. **Table 10 row**: every method under the paper's protocol (Spearman, clusters against the system
   just above as in App. Alg. 1, 10 geometric proportions, the whole pool, seed-independent methods
   once, random 10 times; human scores chosen as the package does: DA+SQM here), with MetricX-23
   (``MetricX-23-refA``) for the metric-based methods, and again with the automatic metric that
   correlates best with the human scores (Pearson over all item x system cells, Table 10's caption:
   its MetricAvg / MetricVar / MetricCons / DiffDisc cells take the best metric; the package's loader
   reads only reference-based metrics, ``*-refA``, so "best" is taken among those, and among all
   metrics as well), beside the paper's cells. The target: random within 0.2 clusters and 1 correlation point of the paper's 93.1% / 2.25.
2. **The chaining rule**: random and MetricVar with clusters compared with the cluster's best system
   (``--cluster-chain top``, evalsift's default) instead of the system above.
3. **Table 2 setting**: needed to match random (first crossing, normalised by random), en-de only
   (the paper averages 9 WMT23 language pairs).
4. **Table 8**: products of 0-1-normalised utilities from MetricX-23 (M) and XCOMET-XL (X)
   (``combinator`` parts with their own metric), en-de only (the paper averages WMT23's pairs).

    python benchmarks/select/s2e_table10.py [--data wmt23/en-de] [--out bench-out/s2e_table10.json]

About 3-5 minutes on the shared 2-core machine.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import sys
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[2]
if importlib.util.find_spec("evalsift") is None:
    sys.path.insert(0, str(REPO / "src"))
os.environ.setdefault("EVALSIFT_DATA", str(REPO.parent / "shared" / "data"))
os.environ.setdefault("EVALSIFT_QUIET", "1")

from evalsift.bench.subset import paper_human_metric, subset_bench  # noqa: E402
from evalsift.io import load  # noqa: E402
from evalsift.restrict import restrict_ranking  # noqa: E402
from evalsift.select import selector  # noqa: E402
from evalsift.select.combinator import Combinator  # noqa: E402
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: the shared _runner
from _runner import write_json  # noqa: E402

MX, XC = "MetricX-23-refA", "XCOMET-XL-refA"
# Table 10, WMT23 En-De: correlation (%) / clusters
PAPER_T10 = {"random": (93.1, 2.25), "metric_avg": (91.4, 2.60), "metric_var": (96.6, 2.80),
             "metric_cons": (85.2, 3.30), "diversity_embedding": (88.9, 2.80), "irt": (94.5, 2.50)}
# Table 2 (WMT23, 9 language pairs): needed to match correlation / clusters (%)
PAPER_T2 = {"random": (100.0, 100.0), "metric_avg": (97.8, 61.0), "metric_var": (86.8, 32.0),
            "metric_cons": (87.4, 42.7), "diversity_embedding": (71.7, 56.4), "irt": (62.0, 44.7)}
# Table 8 (WMT23, averaged over languages): correlation (%) / clusters
PAPER_T8 = {"t8_var_m": (93.8, 3.22), "t8_var_x": (94.3, 3.17), "t8_var_mx": (94.3, 3.32),
            "t8_cons_m": (94.2, 3.24), "t8_cons_x": (92.2, 3.01), "t8_cons_mx": (93.1, 3.10),
            "t8_var_cons_mx": (94.1, 3.38)}
T8_PARTS = {"t8_var_m": [("metric_var", MX)], "t8_var_x": [("metric_var", XC)],
            "t8_var_mx": [("metric_var", MX), ("metric_var", XC)],
            "t8_cons_m": [("metric_cons", MX)], "t8_cons_x": [("metric_cons", XC)],
            "t8_cons_mx": [("metric_cons", MX), ("metric_cons", XC)],
            "t8_var_cons_mx": [("metric_var", MX), ("metric_var", XC), ("metric_cons", MX), ("metric_cons", XC)]}
METHODS = ["random", "metric_avg", "metric_var", "metric_cons", "diversity_embedding", "diversity", "irt", "irt_2pl"]


def _register_table8() -> None:
    for name, parts in T8_PARTS.items():
        def factory(parts=parts, **params):
            return Combinator(**{"methods": [(m, {"metric": metric}) for m, metric in parts], "normalize": "minmax",
                                 "aggregate": "product", **params})
        selector(name, help="App. Table 8 product of 0-1-normalised utilities")(factory)


def best_metric(pool, human: str, suffix: str = "") -> tuple[str, dict[str, float]]:
    """The automatic metric (whose name ends with ``suffix``) with the highest Pearson correlation with
    ``human`` over all item x system cells."""
    pool = restrict_ranking(pool, human).pool
    h = pool.score(human).ravel()
    corr = {}
    for m in pool.metrics:
        if pool.is_human(m) or not m.endswith(suffix):
            continue
        s = pool.score(m).ravel()
        ok = ~np.isnan(s)
        corr[m] = float(np.corrcoef(s[ok], h[ok])[0, 1])
    return max(corr, key=corr.get), corr


def run(pool, methods, **kw) -> tuple[dict, float]:
    t0 = time.perf_counter()
    res = subset_bench(pool, None, methods, protocol="paper", interval_resamples=0, quiet=True, **kw)
    return res, time.perf_counter() - t0


def row(res, m) -> str:
    r = res["mean_over_props"][m]
    return f"{100 * r['correlation']:5.1f}% / {r['clusters']:.2f}"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", default="wmt23/en-de")
    ap.add_argument("--out", default="bench-out/s2e_table10.json")
    args = ap.parse_args()
    _register_table8()
    pool = load(args.data)
    human = paper_human_metric(pool)
    best, corr = best_metric(pool, human)
    best_ref, _ = best_metric(pool, human, "-refA")
    out: dict = {"data": args.data, "human_metric": human, "best_metric": best, "best_reference_metric": best_ref,
                 "pearson_with_human": corr}
    print(f"{args.data}: human scores {human} (the package's choice); Pearson with them: best {best} "
          f"({corr[best]:.3f}), best reference-based {best_ref} ({corr[best_ref]:.3f}), {MX} {corr[MX]:.3f}")

    res, t = run(pool, METHODS, metric=MX)
    metric_methods = [m for m in METHODS if m.startswith(("metric", "irt"))]
    res_ref, t_ref = run(pool, metric_methods, metric=best_ref)
    res_best, t_best = run(pool, metric_methods, metric=best)
    out["table10"] = {"metricx": res, "best_reference": res_ref, "best": res_best, "seconds": [t, t_ref, t_best]}
    print(f"\nTable 10, WMT23 En-De ({res['n_systems']} systems, {res['n_items']} items; paper: 12, 549), "
          "correlation / clusters averaged over the proportions:")
    print(f"  {'method':<20} {'paper':>16} {'ours, ' + MX:>24} {'ours, ' + best_ref:>20} {'ours, ' + best:>22}")
    for m in METHODS:
        paper = PAPER_T10.get(m)
        ptxt = f"{paper[0]:5.1f}% / {paper[1]:.2f}" if paper else "-"
        rtxt = row(res_ref, m) if m in res_ref["methods"] else "(no metric)"
        btxt = row(res_best, m) if m in res_best["methods"] else "(no metric)"
        print(f"  {m:<20} {ptxt:>16} {row(res, m):>24} {rtxt:>20} {btxt:>22}")
    r = res["mean_over_props"]["random"]
    ok = abs(100 * r["correlation"] - 93.1) <= 1.0 and abs(r["clusters"] - 2.25) <= 0.2
    print(f"  random over {res['repetitions']['random']} orderings: correlation se {100 * r['correlation_se']:.1f} "
          f"points, clusters se {r['clusters_se']:.2f}; target (within 1 point and 0.2 clusters of 93.1% / 2.25): "
          f"{'MET' if ok else 'MISSED'}")
    print(f"  ({t:.0f} s, {t_ref:.0f} s and {t_best:.0f} s)")

    top, t_top = run(pool, ["random", "metric_var"], metric=MX, cluster_chain="top")
    out["chain_top"] = top
    print("\nThe chaining rule (same protocol, clusters against the cluster's best system, evalsift's default):")
    for m in ("random", "metric_var"):
        print(f"  {m:<20} previous {row(res, m):>16}   top {row(top, m):>16}")
    print(f"  ({t_top:.0f} s)")

    print("\nTable 2 setting (needed to match random, first crossing, normalised; paper: 9 WMT23 pairs, ours: en-de):")
    for m in METHODS:
        n = res["needed_to_match"][m]
        p = PAPER_T2.get(m)
        ptxt = f"{p[0]:5.1f}% / {p[1]:5.1f}%" if p else "-"
        print(f"  {m:<20} paper {ptxt:>16}   ours {100 * n['correlation']:5.1f}% / {100 * n['clusters']:5.1f}%"
              f"   (stays rule {100 * res['needed_to_match_stays'][m]['correlation']:5.1f}% / "
              f"{100 * res['needed_to_match_stays'][m]['clusters']:5.1f}%)")

    t8, t_t8 = run(pool, ["random", *T8_PARTS])
    out["table8"] = t8
    print("\nTable 8 (products of 0-1-normalised utilities; paper: WMT23 average, ours: en-de):")
    for m in T8_PARTS:
        p = PAPER_T8[m]
        print(f"  {m:<20} paper {p[0]:5.1f}% / {p[1]:.2f}   ours {row(t8, m)}")
    print(f"  ({t_t8:.0f} s)")
    print(file=sys.stderr)
    write_json(args.out, out, indent=1, default=float, file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
