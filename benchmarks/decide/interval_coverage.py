"""Do the bootstrap intervals of `evalsift rank` hold their level on real data?

Treat a dataset's complete items as the population: its per-system means and ranks are the truth.
Draw ``reps`` random samples of ``n`` items (without replacement), compute the intervals of
:func:`evalsift.stats.bootstrap_means` on each sample (studentized, BCa and percentile), and count how often
each system's interval covers its population mean, and its rank interval its population rank.
Coverage should be at least the nominal level minus 2 points. (The bootstrap treats the sample as
drawn with replacement from an infinite population; sampling a large share of a finite pool without
replacement makes the true spread smaller, so coverage errs high there -- n / N is printed.)

It also checks :func:`evalsift.stats.bootstrap_agreement` (what `rank` and `bench subset` say about
the agreement of a sample's ranking with the population's): how often its interval holds the
Kendall tau between the sample's and the population's rankings, and its mean expected against the
mean observed tau.

With ``--proxy METRIC`` (WMT23 only; e.g. MetricX-23-refA) it checks instead the means of
`rank --items ... --proxy metric:METRIC` (:func:`evalsift.stats.regression_means`): coverage of each
system's population mean and the mean width, against the labels alone (studentized bootstrap).

    python benchmarks/decide/interval_coverage.py [--reps 300] [--level 0.95] [--agreement-only] [--proxy METRIC]
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path

import numpy as np

from evalsift.io import load
from evalsift.restrict import restrict_ranking
from evalsift.stats import bootstrap_agreement, bootstrap_means, kendall_tau_b_rows, regression_means

CASES = [("wmt23/en-de", "mqm", (30, 50, 100)), ("summeval", "coherence", (20, 30, 50)),
         ("summeval", "relevance", (20, 30, 50))]


def coverage(X: np.ndarray, n: int, reps: int, level: float, method: str) -> dict:
    """Share of (sample, system) cases whose mean / rank interval covers the population value."""
    truth = X.mean(axis=0)
    true_rank = 1 + (truth[None, :] > truth[:, None]).sum(axis=1)
    rng = np.random.default_rng(0)
    mean_hits = rank_hits = width = 0.0
    for rep in range(reps):
        idx = rng.choice(X.shape[0], size=n, replace=False)
        iv = bootstrap_means(X[idx], level=level, resamples=1000, method=method, seed=rep)
        mean_hits += float(((iv.low <= truth) & (truth <= iv.high)).mean())
        rank_hits += float(((iv.rank_low <= true_rank) & (true_rank <= iv.rank_high)).mean())
        width += float(np.mean(iv.rank_high - iv.rank_low))
    return {"mean_coverage": mean_hits / reps, "rank_coverage": rank_hits / reps, "mean_rank_width": width / reps}


def agreement(X: np.ndarray, n: int, reps: int, level: float) -> dict:
    """Coverage of the agreement interval, its mean expected tau and the mean observed tau."""
    truth = X.mean(axis=0)
    rng = np.random.default_rng(0)
    hits, expected, observed = 0, [], []
    for rep in range(reps):
        idx = rng.choice(X.shape[0], size=n, replace=False)
        a = bootstrap_agreement(X[idx], level=level, resamples=1000, seed=rep, population=X.shape[0])
        tau = float(kendall_tau_b_rows(X[idx].mean(axis=0)[None, :], truth)[0])
        hits += a.low <= tau <= a.high
        expected.append(a.expected)
        observed.append(tau)
    return {"agreement_coverage": hits / reps, "expected_tau": float(np.mean(expected)),
            "observed_tau": float(np.mean(observed))}


def proxy_coverage(X: np.ndarray, F: np.ndarray, n: int, reps: int, level: float) -> dict:
    """Coverage and width of `rank --proxy`'s means (:func:`evalsift.stats.regression_means`) against
    the labels alone (the studentized bootstrap of `rank`)."""
    truth = X.mean(axis=0)
    rng = np.random.default_rng(0)
    hits = {"proxy": 0.0, "labels": 0.0}
    width = {"proxy": 0.0, "labels": 0.0}
    for rep in range(reps):
        idx = rng.choice(X.shape[0], size=n, replace=False)
        _, lo, hi, _ = regression_means(X[idx], idx, F, level=level, resamples=1000, seed=rep)
        iv = bootstrap_means(X[idx], level=level, resamples=1000, seed=rep)
        for kind, (a, b) in (("proxy", (lo, hi)), ("labels", (iv.low, iv.high))):
            hits[kind] += float(((a <= truth) & (truth <= b)).sum())
            width[kind] += float((b - a).sum())
    cases = reps * X.shape[1]
    return {f"{k}_coverage": hits[k] / cases for k in hits} | {f"{k}_width": width[k] / cases for k in width}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=300)
    ap.add_argument("--level", type=float, default=0.95)
    ap.add_argument("--agreement-only", action="store_true", help="only the rank-agreement intervals")
    ap.add_argument("--proxy", help="an automatic metric of WMT23: check the prediction-powered means instead")
    args = ap.parse_args()
    os.environ.setdefault("EVALSIFT_DATA", str(Path(__file__).resolve().parents[3] / "shared" / "data"))
    out = []
    if args.proxy:
        full = restrict_ranking(load("wmt23/en-de"), "mqm").pool
        X, F = full.score("mqm"), full.score(args.proxy)
        keep = np.isfinite(F).all(axis=1)
        X, F = X[keep], F[keep]
        print(f"wmt23/en-de, mqm, proxy {args.proxy}: population {X.shape[0]} items; nominal {args.level:.2f}")
        for n in (30, 50, 100):
            r = proxy_coverage(X, F, n, args.reps, args.level)
            out.append({"n": n, "proxy": args.proxy, **r})
            print(f"  n={n:>4}: coverage {r['proxy_coverage']:.3f} with the proxy, {r['labels_coverage']:.3f} labels "
                  f"only; mean width {r['proxy_width']:.3f} vs {r['labels_width']:.3f} "
                  f"({r['proxy_width'] / r['labels_width']:.2f}x)")
        Path("bench-out").mkdir(exist_ok=True)
        Path("bench-out/interval_coverage_proxy.json").write_text(json.dumps(out, indent=2))
        return 0
    for data, metric, sizes in CASES:
        pool = restrict_ranking(load(data), metric).pool
        X = pool.score(metric)
        print(f"{data}, {metric}: {X.shape[1]} systems, population {X.shape[0]} items; nominal {args.level:.2f}")
        for n in sizes:
            r = agreement(X, n, args.reps, args.level)
            out.append({"data": data, "metric": metric, "n": n, "population": X.shape[0], "method": "agreement", **r})
            print(f"  n={n:>4} (n/N {n / X.shape[0]:.2f}) agreement  coverage {r['agreement_coverage']:.3f}  expected "
                  f"tau {r['expected_tau']:.3f}  observed tau {r['observed_tau']:.3f}")
            for method in (() if args.agreement_only else ("studentized", "BCa", "percentile")):
                r = coverage(X, n, args.reps, args.level, method)
                out.append({"data": data, "metric": metric, "n": n, "population": X.shape[0], "method": method, **r})
                print(f"  n={n:>4} (n/N {n / X.shape[0]:.2f}) {method:<10} mean coverage {r['mean_coverage']:.3f}  "
                      f"rank coverage {r['rank_coverage']:.3f}  mean rank-interval width {r['mean_rank_width']:.2f}")
    Path("bench-out").mkdir(exist_ok=True)
    Path("bench-out/interval_coverage.json").write_text(json.dumps(out, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
