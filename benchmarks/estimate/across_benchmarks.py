"""Issue 44 part 3, across benchmarks (metabench's point): on opencompass-irt (12 systems x 41,871
items of 11 benchmarks), does one ability shared across the benchmarks estimate each benchmark and the
total better than each benchmark on its own? ``bench estimate --by benchmark --shared-ability``'s
protocol (:mod:`evalsift.bench.across`): splits all and extrapolation, ``--budgets`` items judged PER
benchmark (default 5, 10, 25, 50: 55 to 550 items in all, 0.13% to 1.3%), ``--seeds`` draws, the same
draws for ``separate``, ``shared`` and ``shared-offset``. Prints the table, where each shared estimator
helps and hurts (more than 2 standard errors across held-out systems), the totals' RMSE beside
metabench's reported 0.58 points (Kipnis et al., ICLR 2025: other data -- six Open LLM Leaderboard
benchmarks --, thousands of models, other item counts; not a like-for-like comparison), and the wall
time. One process.

    python benchmarks/estimate/across_benchmarks.py [--seeds 10] [--budgets 5,10,25,50] [--out bench-out/across.json]

Data: ``$EVALSIFT_DATA`` (default ``../shared/data``).
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
if importlib.util.find_spec("evalsift") is None:
    sys.path.insert(0, str(REPO / "src"))

from evalsift.bench.across import MACRO, MICRO, across_table_text, run_across_bench  # noqa: E402
from evalsift.estimate import response_matrix  # noqa: E402
from evalsift.io._common import plain_json  # noqa: E402
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: the shared _runner
from _runner import write_json  # noqa: E402

METABENCH_TOTAL_RMSE = 0.58  # points, their Table: the mean over six benchmarks, from < 3% of the items
METABENCH_PER_BENCHMARK_RMSE = 1.24


def verdicts(res: dict) -> list[str]:
    """Per shared estimator and split: the targets and budgets where it helps / hurts against separate."""
    lines = []
    for m in [m for m in res["methods"] if m != "separate"]:
        for sp in res["splits"]:
            rows = [c for c in res["comparison"] if c["method"] == m and c["split"] == sp]
            for v in ("helps", "hurts"):
                cells = [f"{c['target']}@{c['budget']} ({c['mae_difference']:+.1f})" for c in rows
                         if c["verdict"] == v]
                lines.append(f"  {m} {v} ({sp}, {len(cells)} of {len(rows)} cells): {', '.join(cells) or 'none'}")
    return lines


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seeds", type=int, default=10)
    ap.add_argument("--budgets", default="5,10,25,50")
    ap.add_argument("--out", default="bench-out/across.json")
    args = ap.parse_args()
    t0 = time.perf_counter()
    R = response_matrix("opencompass-irt")
    res = run_across_bench(R, "benchmark", budgets=[int(b) for b in args.budgets.split(",")], seeds=args.seeds,
                           quiet=True, jobs=1)
    wall = time.perf_counter() - t0
    print(across_table_text(res))
    print("where the shared estimators beat / lose to separate (MAE difference in points; > 2 se across systems):")
    print("\n".join(verdicts(res)))
    rows = {(r["split"], r["target"], r["method"], r["budget"]): r for r in res["table"]}
    print(f"\nthe total's RMSE (points) beside metabench's {METABENCH_TOTAL_RMSE} (their data, models and item counts "
          "differ: six Open LLM Leaderboard benchmarks, thousands of models, < 3% of the items):")
    for sp in res["splits"]:
        for t in (MACRO, MICRO):
            for m in res["methods"]:
                cells = "  ".join(f"{b}/bench: {rows[(sp, t, m, b)]['rmse']:.2f}" for b in res["budgets"])
                print(f"  {sp:<14}{t:<22}{m:<15}{cells}")
    print(f"\nwall time {wall:.1f} s (one process; fits {res['timing_s']['fit']:.1f} s, estimates "
          f"{res['timing_s']['estimate']:.1f} s)")
    out = Path(args.out)
    res.pop("records")
    res["wall_s"] = round(wall, 1)
    write_json(out, plain_json(res), file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
