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
- Issue 42's cells: every dataset x split x design-based method x budget >= 50 items, on AlpacaEval,
  WMT23 en-de MQM and DA+SQM and the whole opencompass-irt matrix (``--cell-seeds`` seeds there):
  coverage (target >= 0.88 in every cell), width beside it, the binomial standard error of each
  cell's coverage, and the intervals that are not there (``none``, e.g. regression's with fewer than
  9 known systems), counted apart from the coverage.

    python benchmarks/estimate/estimate_targets.py [--seeds 10] [--jobs 2] [--oc-seeds 3] [--skip-opencompass]
                                          [--cell-seeds 10] [--cells-only] [--out bench-out/estimate_targets.json]

Data: ``evalsift.io.datasets.data_root()`` (``$EVALSIFT_DATA``, default ``../shared/data``).
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[2]
if importlib.util.find_spec("evalsift") is None:
    sys.path.insert(0, str(REPO / "src"))

from evalsift.bench.estimate import run_estimate_bench  # noqa: E402
from evalsift.estimate import DESIGN_BASED, response_matrix  # noqa: E402
from evalsift.io._common import plain_json  # noqa: E402
from evalsift.io.datasets import data_root  # noqa: E402
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: the shared _runner
from _runner import write_json  # noqa: E402


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


CELL_METHODS = ("mean", "mean@stratified", "aipw", "aipw@stratified", "regression")
CELL_MIN_BUDGET = 50
CELL_TARGET = 0.88


def coverage_cells(results: dict[str, dict], min_budget: int = CELL_MIN_BUDGET) -> dict:
    """Issue 42's check over ``{dataset: bench result}``: one row per dataset x split x design-based
    method x budget >= ``min_budget`` (coverage, its binomial standard error, width, estimates), the
    smallest coverage, the cells below the target, and every ``none`` count (any method)."""
    cells, nones = [], []
    for name, res in results.items():
        for r in res["table"]:
            if r.get("none"):
                nones.append({"data": name, "split": r["split"], "method": r["method"], "budget": r["budget"],
                              "none": r["none"], "estimates": r["estimates"]})
            if r["budget"] < min_budget or r["method"].split("@")[0] not in DESIGN_BASED or r["coverage"] is None:
                continue
            k = r["estimates"] - (r.get("none") or 0)
            se = (r["coverage"] * (1 - r["coverage"]) / k) ** 0.5 if k else None
            cells.append({"data": name, "split": r["split"], "method": r["method"], "budget": r["budget"],
                          "coverage": r["coverage"], "se": se, "width": r["width"], "estimates": k})
    worst = min(cells, key=lambda c: c["coverage"]) if cells else None
    below = [c for c in cells if c["coverage"] < CELL_TARGET]
    # how many cells would fall below the target by chance alone if every interval covered exactly 0.90
    # (each cell's count of covering intervals a binomial draw), and each cell's one-sided p-value of
    # "the coverage is at least 0.90"
    from scipy.stats import binom

    for c in cells:
        covered = round(c["coverage"] * c["estimates"])
        c["p_below_nominal"] = float(binom.cdf(covered, c["estimates"], 0.9))
    chance = sum(float(binom.cdf(int(np.ceil(CELL_TARGET * c["estimates"])) - 1, c["estimates"], 0.9)) for c in cells)
    return {"cells": cells, "min_coverage": worst["coverage"] if worst else None, "worst": worst, "below": below,
            "met": bool(cells) and not below, "none": nones, "below_by_chance": chance,
            "significant": [c for c in cells if c["p_below_nominal"] < 0.01]}


def print_cells(check: dict) -> None:
    print(f"\nissue 42: coverage of the design-based 90% intervals in every cell at >= {CELL_MIN_BUDGET} items "
          f"(target >= {CELL_TARGET}); s.e. = the binomial standard error of the cell's coverage")
    print(f"  {'data':<14}{'split':<15}{'method':<18}{'budget':>7}{'coverage':>10}{'s.e.':>7}{'width':>8}{'n':>6}"
          f"{'p':>8}")
    for c in check["cells"]:
        mark = "  <" if c["coverage"] < CELL_TARGET else ""
        print(f"  {c['data']:<14}{c['split']:<15}{c['method']:<18}{c['budget']:>7}{c['coverage']:>10.3f}"
              f"{c['se']:>7.3f}{c['width']:>8.2f}{c['estimates']:>6}{c['p_below_nominal']:>8.3f}{mark}")
    w = check["worst"]
    if w:
        print(f"  smallest coverage {w['coverage']:.3f} ({w['data']} {w['split']} {w['method']} at {w['budget']}); "
              f"{len(check['below'])} of {len(check['cells'])} cells below {CELL_TARGET}: "
              f"{'met' if check['met'] else 'MISSED'}")
        print(f"  if every interval covered exactly 0.90, {check['below_by_chance']:.1f} cells would fall below "
              f"{CELL_TARGET} by chance (binomial, each cell's size); cells whose coverage is below 0.90 at "
              f"p < 0.01 (column p: P(so few covering | 0.90)): {len(check['significant'])}"
              + "".join(f"\n    {c['data']} {c['split']} {c['method']} at {c['budget']}: {c['coverage']:.3f} "
                        f"(p {c['p_below_nominal']:.4f})" for c in check["significant"]))
    for nn in check["none"]:
        print(f"  none: {nn['data']} {nn['split']} {nn['method']} at {nn['budget']}: {nn['none']} of "
              f"{nn['estimates']} estimates have no interval (left out of the coverage)")


def alpaca_targets(res: dict, wall: float) -> dict:
    """The AlpacaEval checks of the issue, from one run."""
    rows = rows_at(res)
    valid = {m: r for (sp, m), r in rows.items() if sp == "all" and m.split("@")[0] in DESIGN_BASED}
    best = min(valid, key=lambda m: valid[m]["mae"])
    gp = rows[("all", "gpirt@anchor-irt")]["mae"]
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
    ap.add_argument("--cell-seeds", type=int, default=10, help="seeds of issue 42's opencompass-irt cells")
    ap.add_argument("--cells-only", action="store_true", help="only issue 42's coverage cells (design-based "
                                                                "methods and regression)")
    ap.add_argument("--out", default="bench-out/estimate_targets.json")
    args = ap.parse_args()
    root = data_root()
    if root is None or not (root / "alpaca-eval" / "preferences_all_annotators.csv.gz").is_file():
        print(f"real data not found under {root}; set EVALSIFT_DATA to the shared data folder")
        return 1
    out: dict = {}
    if args.cells_only:
        cell_res = {}
        for name, spec, metric, seeds in (("AlpacaEval", "alpaca-eval", None, args.seeds),
                                          ("WMT23 MQM", "wmt23/en-de", "mqm", args.seeds),
                                          ("WMT23 DA+SQM", "wmt23/en-de", "da-sqm", args.seeds),
                                          ("opencompass", "opencompass-irt", None, args.cell_seeds)):
            t0 = time.perf_counter()
            res = run_estimate_bench(response_matrix(spec, metric=metric), methods=CELL_METHODS, seeds=seeds,
                                     jobs=args.jobs, quiet=True)
            res.pop("records")
            res["wall_s"] = time.perf_counter() - t0
            cell_res[name] = res
            print(f"{name}: {res['systems']} systems x {res['items']} items, {seeds} seeds, "
                  f"{res['wall_s']:.0f} s", flush=True)
        out["cells"] = coverage_cells(cell_res)
        out["cell_runs"] = cell_res
        print_cells(out["cells"])
        return _write(out, args.out)
    t0 = time.perf_counter()
    R = response_matrix("alpaca-eval")
    res = run_estimate_bench(R, seeds=args.seeds, jobs=args.jobs, quiet=True)
    wall = time.perf_counter() - t0
    res.pop("records")
    cell_res = {"AlpacaEval": res}
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
        cell_res[f"WMT23 {'MQM' if metric == 'mqm' else 'DA+SQM'}"] = res
        print_rows(f"WMT23 en-de {metric}", res)
    if not args.skip_opencompass:
        R = response_matrix("opencompass-irt")
        out["opencompass"] = {}
        for bench in R.groups("benchmark"):
            res = run_estimate_bench(R.group("benchmark", bench), seeds=args.oc_seeds, jobs=args.jobs, quiet=True)
            res.pop("records")
            out["opencompass"][bench] = res
            print_rows(f"opencompass-irt {bench}", res)
        res = run_estimate_bench(R, methods=CELL_METHODS, seeds=args.cell_seeds, jobs=args.jobs, quiet=True)
        res.pop("records")
        cell_res["opencompass"] = res
    out["cells"] = coverage_cells(cell_res)
    print_cells(out["cells"])
    return _write(out, args.out)


def _write(out: dict, where: str) -> int:
    print()
    write_json(where, plain_json(out), allow_nan=False)
    return 0


if __name__ == "__main__":
    sys.exit(main())
