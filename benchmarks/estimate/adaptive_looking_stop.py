"""Issue 44: does ``active-cs``'s interval hold when the user stops by looking at it? Real data.

For every held-out case of ``bench estimate`` (splits ``all`` and ``extrapolation``,
:func:`evalsift.bench.estimate.held_out_cases`) and ``--seeds`` seeds, one ``active-cs`` test runs up
to ``--budget`` items (the 2PL fitted to the known systems, as ``bench estimate`` fits it); the user
stops at the **first step whose 90% interval is at most W points wide** (W from ``--widths``), or at
the budget. Reported per data set, split and W: the coverage of the interval at that stop (the
target: >= 0.88 at nominal 0.90), how many tests reached W before the budget, and the mean number of
items at the stop. A fixed-sample interval read this way would undercover: the stop favours the
draws whose interval happened to be narrow.

    EVALSIFT_DATA=/work/shared/data PYTHONPATH=src python benchmarks/estimate/adaptive_looking_stop.py --out /tmp/looking
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np

from evalsift.bench.estimate import held_out_cases
from evalsift.estimate import KnownSystems
from evalsift.estimate.adaptive import item_parameters, simulate

from _estimate_data import datasets


def run(R, widths, budget: int, seeds: int) -> list[dict]:
    """Rows (split, W): coverage at the looking stop, share stopped early, mean items."""
    lo, hi = R.bounds
    scale = 100.0 / (hi - lo)
    out = {}
    for split in ("all", "extrapolation"):
        for s, known_rows in held_out_cases(R, split):
            if len(known_rows) < 3:
                continue
            known = KnownSystems(R.Y[known_rows], bounds=R.bounds)
            irt = item_parameters(known)
            truth = float(R.Y[s].mean())
            for seed in range(seeds):
                _, t = simulate(None, R.Y[s], "active-cs", min(budget, R.Y.shape[1]), seed=seed + 1000 * int(s),
                                irt=irt, bounds=(lo, hi), item_ids=[str(i) for i in range(R.Y.shape[1])])
                steps, probs = list(t.steps), list(t._probs)
                for W in widths:  # the first step whose width is <= W (simulate's bisection: widths never grow)
                    n = t.steps_to_width(W / scale)
                    t.steps, t._probs = steps[:n], probs[:n]
                    e = t.estimate()
                    t.steps, t._probs = steps, probs
                    out.setdefault((split, W), []).append((e.low <= truth <= e.high, n < len(steps), n))
    return [{"split": sp, "width": W, "tests": len(v), "coverage": float(np.mean([c for c, _, _ in v])),
             "stopped_early": float(np.mean([x for _, x, _ in v])), "mean_items": float(np.mean([n for *_, n in v]))}
            for (sp, W), v in sorted(out.items())]


def main(argv=None):
    """Run and write ``looking.json`` / ``looking.md`` to ``--out``."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--data", default="alpaca-eval,opencompass-irt")
    ap.add_argument("--widths", default="30,20,15", help="target widths in points (comma-separated)")
    ap.add_argument("--budget", type=int, default=200)
    ap.add_argument("--seeds", type=int, default=5)
    args = ap.parse_args(argv)
    widths = [float(w) for w in args.widths.split(",")]
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    lines = ["| data | split | stop at width <= W | tests | coverage | stopped before the budget | mean items |",
             "|---|---|---|---|---|---|---|"]
    res = {}
    t0 = time.perf_counter()
    for name, R in datasets(args.data.split(",")):
        rows = run(R, widths, args.budget, args.seeds)
        res[name] = rows
        for r in rows:
            lines.append(f"| {name} | {r['split']} | {r['width']:g} | {r['tests']} | {r['coverage']:.3f} | "
                         f"{r['stopped_early']:.2f} | {r['mean_items']:.1f} |")
        print("\n".join(lines[-len(rows):]), flush=True)
    allcov = [r["coverage"] for rows in res.values() for r in rows]
    lines.append(f"\nsmallest coverage {min(allcov):.3f} over {len(allcov)} cells (target >= 0.88); "
                 f"{time.perf_counter() - t0:.0f} s")
    (out / "looking.json").write_text(json.dumps(res, indent=2))
    (out / "looking.md").write_text("\n".join(lines) + "\n")
    print(lines[-1])


if __name__ == "__main__":
    main()
