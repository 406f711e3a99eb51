"""Issue 33's targets in one run: a held-out system's full-benchmark score from a few items
(``bench estimate``), evalsift's estimators beside the peers (tinyBenchmarks' anchor points + p-IRT and
gp-IRT; Zhang, Dorner & Hardt's random + regression; reimplemented once, in ``evalsift.estimate``, and
run here on the same held-out splits and seeds).

- AlpacaEval 2.0 (57 models x 797 instructions, ``weighted_alpaca_eval_gpt4_turbo``), 5 budgets x
  ``--seeds`` seeds x every method, ``--jobs`` workers: the wall time (target <= 60 s); at 100 items the
  best valid (design-based) method's MAE against gp-IRT's (target: <= gp-IRT and <= 2.0 points) and the
  coverage of ``mean`` and ``aipw`` (target >= 0.88 at 0.90), overall and on the extrapolation split;
- WMT23 en-de with MQM and with DA+SQM, and opencompass-irt per benchmark (``--oc-seeds`` seeds): the
  100-item rows.

    python benchmarks/estimate_targets.py [--seeds 10] [--jobs 2] [--oc-seeds 3] [--skip-opencompass]
                                          [--out bench-out/estimate_targets.json]

Data: ``evalsift.io.datasets.data_root()`` (``$EVALSIFT_DATA``, default ``../shared/data``).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
if importlib.util.find_spec("evalsift") is None:
    sys.path.insert(0, str(REPO / "src"))

from evalsift.bench.estimate import run_estimate_bench  # noqa: E402
from evalsift.estimate import DESIGN_BASED, response_matrix  # noqa: E402
from evalsift.io._common import plain_json  # noqa: E402
from evalsift.io.datasets import data_root  # noqa: E402


def rows_at(res: dict, budget: int = 100) -> dict:
    """(split, method) -> the table row at ``budget``."""
    return {(r["split"], r["method"]): r for r in res["table"] if r["budget"] == budget}


def print_rows(title: str, res: dict, budget: int = 100) -> None:
    print(f"\n{title}: {res['systems']} systems x {res['items']} items, {res['seeds']} seeds, {budget} items, "
          f"error in {res['unit']}")
    print(f"  {'split':<14}{'method':<24}{'MAE':>7}{'coverage':>10}{'width':>8}")
    for (sp, m), r in rows_at(res, budget).items():
        cov = "-" if r["coverage"] is None else f"{r['coverage']:.3f}"
        wid = "-" if r["width"] is None else f"{r['width']:.2f}"
        print(f"  {sp:<14}{m + (' (peer)' if r['peer'] else ''):<24}{r['mae']:>7.2f}{cov:>10}{wid:>8}")


def alpaca_targets(res: dict, wall: float) -> dict:
    """The AlpacaEval checks of the issue, from one run."""
    rows = rows_at(res)
    valid = {m: r for (sp, m), r in rows.items() if sp == "all" and m.split("@")[0] in DESIGN_BASED}
    best = min(valid, key=lambda m: valid[m]["mae"])
    gp = rows[("all", "gpirt@anchor-points")]["mae"]
    cov = {f"{sp}/{m}": rows[(sp, m)]["coverage"] for (sp, m) in rows if m.split("@")[0] in DESIGN_BASED}
    return {"wall_s": wall, "speed_met": wall <= 60, "best_valid": best, "best_valid_mae": valid[best]["mae"],
            "gpirt_mae": gp, "mae_met": valid[best]["mae"] <= gp and valid[best]["mae"] <= 2.0,
            "coverage": cov, "coverage_met": all(c >= 0.88 for c in cov.values())}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=10)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--oc-seeds", type=int, default=3)
    ap.add_argument("--skip-opencompass", action="store_true")
    ap.add_argument("--out", default="bench-out/estimate_targets.json")
    args = ap.parse_args()
    root = data_root()
    if root is None or not (root / "alpaca-eval" / "preferences_all_annotators.csv.gz").is_file():
        print(f"real data not found under {root}; set EVALSIFT_DATA to the shared data folder")
        return 1
    out: dict = {}
    t0 = time.perf_counter()
    R = response_matrix("alpaca-eval")
    res = run_estimate_bench(R, seeds=args.seeds, jobs=args.jobs, quiet=True)
    wall = time.perf_counter() - t0
    res.pop("records")
    out["alpaca"] = {"result": res, "targets": alpaca_targets(res, wall)}
    print_rows("AlpacaEval 2.0", res)
    t = out["alpaca"]["targets"]
    print(f"\n  wall {wall:.1f} s for 57 models x 5 budgets x {args.seeds} seeds x {len(res['methods'])} methods "
          f"(--jobs {args.jobs}; target 60 s): {'met' if t['speed_met'] else 'MISSED'}")
    print(f"  best valid method at 100 items: {t['best_valid']} {t['best_valid_mae']:.3f} vs gp-IRT "
          f"{t['gpirt_mae']:.3f} (target <= gp-IRT and <= 2.0): {'met' if t['mae_met'] else 'MISSED'}")
    print(f"  coverage of mean and aipw at 100 items >= 0.88: {'met' if t['coverage_met'] else 'MISSED'} "
          + ", ".join(f"{k} {v:.3f}" for k, v in t["coverage"].items()))
    for metric in ("mqm", "da-sqm"):
        res = run_estimate_bench(response_matrix("wmt23/en-de", metric=metric), seeds=args.seeds, jobs=args.jobs,
                                 quiet=True)
        res.pop("records")
        out[f"wmt23-{metric}"] = res
        print_rows(f"WMT23 en-de {metric}", res)
    if not args.skip_opencompass:
        R = response_matrix("opencompass-irt")
        out["opencompass"] = {}
        for bench in R.groups("benchmark"):
            res = run_estimate_bench(R.group("benchmark", bench), seeds=args.oc_seeds, jobs=args.jobs, quiet=True)
            res.pop("records")
            out["opencompass"][bench] = res
            print_rows(f"opencompass-irt {bench}", res)
    path = Path(args.out)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(plain_json(out), indent=2, allow_nan=False))
    print(f"\nwrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
