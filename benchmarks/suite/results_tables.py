"""Print the table sections of docs/results.md from the benchmark outputs (each table names its command
and commit, from the provenance the benchmark commands store in results.json).

    python benchmarks/suite/results_tables.py bench-out > tables.md

Reads ``bench-out/diffuse/*`` (benchmarks/select/diffuse_tables.sh), ``bench-out/subset/*``
(benchmarks/select/subset_tables.sh), ``bench-out/judgments/*`` (bench pairwise with recorded judgments)
and ``bench-out/calibration/*`` (benchmarks/decide/calibration_tables.sh).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from tables import calibration_table, pairwise_table, produced_by, subset_table  # noqa: E402

WMT_BUDGETS = "5,10,20,50,100,200".split(",")
SUMMEVAL_BUDGETS = "5,10,20,40,60,80".split(",")


def load(path: Path) -> dict | None:
    f = path / "results.json"
    return json.loads(f.read_text()) if f.is_file() else None


def iterative_only(res: dict) -> str:
    """Only the iterative table of a pairwise result (the curves are the same at every risk)."""
    text = pairwise_table(res, [])
    return text[text.index("iterative, p ="):] if "iterative, p =" in text else ""


def curves_row(res: dict, label: str, budgets: list[str]) -> str:
    """One table row per method of ``res`` (the k-means runs hold one or two methods)."""
    return "\n".join(f"| {method} ({label}) | " + " | ".join(
        f"{curve[b]['success']:.3f} ({curve[b]['se']:.3f})" if b in curve else "" for b in budgets) + " |"
        for method, curve in res["curves"].items())


def main() -> None:
    root = Path(sys.argv[1] if len(sys.argv) > 1 else "bench-out")
    d = root / "diffuse"
    print("## DiffUse: picking the better of two systems\n")
    for name, budgets in (("wmt23-mqm", WMT_BUDGETS), *((f"summeval-{dim}", SUMMEVAL_BUDGETS)
                                                        for dim in ("coherence", "consistency", "fluency", "relevance"))):
        first = load(d / f"{name}-p0.2")
        if first is None:
            continue
        print(pairwise_table(first, budgets))
        second = load(d / f"{name}-p0.1")
        if second is not None:
            print("\n" + produced_by(second) + "\n")
            print(iterative_only(second))
        km = load(d / f"{name}-kmeans")
        if km is not None:
            print("\nk-means variants (diffuse_kmeans: flat k-means refitted per budget, the paper's; diffuse_bisect: "
                  "bisecting k-means fitted once, ours; curves only). " + produced_by(km) + "\n")
            print("| method | " + " | ".join(budgets) + " |\n|---|" + "---|" * len(budgets))
            print(curves_row(km, name.split("-", 1)[1], budgets))
        print()
    s = root / "subset"
    if s.is_dir():
        print("## Ranking many systems: needed to match random\n")
        for f in sorted(s.iterdir()):
            res = load(f)
            if res is not None:
                print(subset_table(res) + "\n")
    j = root / "judgments"
    if j.is_dir():
        print("## Recorded judgments: SummEval's GPT-3.5 pairwise answers as the oracle\n")
        for f in sorted(j.iterdir()):
            res = load(f)
            if res is not None:
                print(pairwise_table(res, SUMMEVAL_BUDGETS) + "\n")
    c = root / "calibration"
    if c.is_dir():
        print("## Stop rules: is the stated risk true?\n")
        for f in sorted(c.iterdir()):
            res = load(f)
            if res is not None:
                print(calibration_table(res) + "\n")


if __name__ == "__main__":
    main()
