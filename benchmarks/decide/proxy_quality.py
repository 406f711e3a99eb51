"""How the anytime rule's gain grows with the proxy's quality (synthetic pools, one run).

Pools of ``--items`` items where system a wins ``1/2 + gap/2`` of the decisive items (``--ties``
tied); the proxy is an automatic metric = each system's true score (1 / 0, ties 1/2 each) plus
N(0, sigma) noise, for a range of sigma (the last one: pure noise, no signal). Each pool is judged
in a seeded random order until the anytime rule decides at ``--risk`` (or the pool is used up),
with and without the proxy, on the same order, and with the proxy and active sampling (draws
weighted toward the items the calibrated proxy is unsure about, inverse-probability weighted:
:mod:`evalsift.stats.active`; ``--explore`` of the draws uniform). Printed per sigma: the per-item
correlation of the proxy's difference with the verdict, mean labels without / with / with active
sampling (and the ratios to without), and the share of runs whose named winner was wrong (must stay
within the risk).

    python benchmarks/decide/proxy_quality.py [--items 600] [--gap 0.2] [--ties 0.3] [--runs 60] [--risk 0.1]
        [--explore 0.5]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

from evalsift.bench.calibration import synthetic_pool
from evalsift.oracle import MetricOracle
from evalsift.session import Session
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: the shared _runner
from _runner import write_json  # noqa: E402

SIGMAS = (0.1, 0.25, 0.5, 1.0, 2.0, None)  # None: the proxy is pure noise


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--items", type=int, default=600)
    ap.add_argument("--gap", type=float, default=0.2)
    ap.add_argument("--ties", type=float, default=0.3)
    ap.add_argument("--runs", type=int, default=60)
    ap.add_argument("--risk", type=float, default=0.1)
    ap.add_argument("--explore", type=float, default=0.5)
    ap.add_argument("--out", default="bench-out/proxy_quality.json")
    args = ap.parse_args()
    t0 = time.perf_counter()
    oracle = MetricOracle("truth")
    rows = []
    print(f"{args.items} items, gap {args.gap}, ties {args.ties}, {args.runs} pools per row, risk {args.risk}")
    print(f"  {'proxy noise':<12} {'corr':>6} {'labels without':>15} {'with':>8} {'ratio':>7} {'active':>8} "
          f"{'ratio':>7} {'wrong without':>14} {'with':>6} {'active':>7}")
    for sigma in SIGMAS:
        corr, plain, proxied, active = [], [], [], []
        wrong = {"without": 0, "with": 0, "active": 0}
        for run in range(args.runs):
            pool = synthetic_pool(args.items, args.gap, args.ties, seed=run)
            truth = pool.score("truth")
            rng = np.random.default_rng([run, 17])
            noisy = (truth + rng.normal(0, sigma, truth.shape)) if sigma is not None else rng.normal(size=truth.shape)
            pool = pool.with_scores("auto", noisy, human=False)
            y = truth[:, 0] - truth[:, 1]
            d = noisy[:, 0] - noisy[:, 1]
            corr.append(float(np.corrcoef(d, y)[0, 1]))
            for key, proxy, sampling, labels in (("without", None, "uniform", plain),
                                                 ("with", "metric:auto", "uniform", proxied),
                                                 ("active", "metric:auto", "active", active)):
                d_ = Session(pool, "random", a="A", b="B", risk=args.risk, max_labels=args.items, seed=run,
                             proxy=proxy, sampling=sampling, explore=args.explore).run(oracle)
                labels.append(d_.labels_used)
                if d_.outcome == "winner" and d_.winner != "A":
                    wrong[key] += 1
        row = {"sigma": sigma, "correlation": float(np.mean(corr)), "labels_without": float(np.mean(plain)),
               "labels_with": float(np.mean(proxied)), "ratio": float(np.mean(proxied) / np.mean(plain)),
               "labels_active": float(np.mean(active)), "ratio_active": float(np.mean(active) / np.mean(plain)),
               **{f"wrong_{k}": v / args.runs for k, v in wrong.items()}}
        rows.append(row)
        label = "noise only" if sigma is None else f"sigma {sigma:g}"
        print(f"  {label:<12} {row['correlation']:6.2f} {row['labels_without']:15.1f} {row['labels_with']:8.1f} "
              f"{row['ratio']:7.2f} {row['labels_active']:8.1f} {row['ratio_active']:7.2f} "
              f"{row['wrong_without']:14.3f} {row['wrong_with']:6.3f} {row['wrong_active']:7.3f}")
    out = {"items": args.items, "gap": args.gap, "ties": args.ties, "runs": args.runs, "risk": args.risk,
           "explore": args.explore,
           "rows": rows, "timing_s": round(time.perf_counter() - t0, 1)}
    write_json(args.out, out, seconds=out["timing_s"])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
