"""Print Markdown tables from ``results.json`` files written by ``evalsift bench pairwise|subset``.

    python benchmarks/tables.py bench-out/diffuse/*/results.json [--budgets 10,20,50,100,200]
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path


def produced_by(res: dict) -> str:
    """'Produced by `<command>` at commit <sha> (<date>)' from a results.json's provenance."""
    p = res.get("provenance") or {}
    if not p.get("command"):
        return "(no provenance recorded)"
    return f"Produced by `{p['command']}` at commit `{p.get('commit') or 'unknown'}` ({p.get('date', '')})."


def pairwise_table(res: dict, budgets: list[str]) -> str:
    shown = [b for b in budgets if any(b in c for c in res["curves"].values())]
    lines = [f"**{res['data']}**, oracle `{res['oracle_metric']}`: {res['n_pairs']} pairs x {res['seeds']} seeds, "
             f"~{res['n_items']} items per pair, {res['subsample']:.0%} subsamples; success rate (se across seeds)", "",
             produced_by(res), "",
             "| method | " + " | ".join(shown) + " |", "|---|" + "---|" * len(shown)]
    for m, curve in res["curves"].items():
        lines.append(f"| {m} | " + " | ".join(f"{curve[b]['success']:.3f} ({curve[b]['se']:.3f})" if b in curve else ""
                                              for b in shown) + " |")
    if "iterative" in res:
        p = res["iterative_params"]
        lines += ["", f"iterative, p = {p['risk']}, n = {p['min_labels']}, N = {p['max_labels']} ({p.get('risk_rule', 'paper')} rule):", "",
                  "| method | annotations | success | error | inconclusive | distance success / error / inconclusive |",
                  "|---|---|---|---|---|---|"]
        for m, r in res["iterative"].items():
            d = r["distance"]
            dist = " / ".join(f"{d[k]:.3f}" if k in d else "-" for k in ("success", "error", "inconclusive"))
            lines.append(f"| {m} | {r['annotations']:.1f} | {100 * r['success']:.1f}% | {100 * r['error']:.1f}% | "
                         f"{100 * r['inconclusive']:.1f}% | {dist} |")
    return "\n".join(lines)


def subset_table(res: dict) -> str:
    lines = [f"**{res['data']}**, human `{res['human_metric']}`, metric `{res['metric']}`: {res['n_systems']} systems, "
             f"{res['n_items']} items, {res['seeds']} seeds x {res['subsample']:.0%}, {res['correlation']}", "",
             produced_by(res), "",
             "| method | needed (correlation) | needed (clusters) | stays rule (corr. / clus.) | raw first crossing (corr. / clus.) |",
             "|---|---|---|---|---|"]
    for m in res["methods"]:
        a, s, r = res["needed_to_match"][m], res["needed_to_match_stays"][m], res["needed_to_match_raw"][m]
        lines.append(f"| {m} | {a['correlation']:.2f} ({a['correlation_se']:.2f}) | {a['clusters']:.2f} ({a['clusters_se']:.2f}) | "
                     f"{s['correlation']:.2f} / {s['clusters']:.2f} | {r['correlation']:.2f} / {r['clusters']:.2f} |")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("files", nargs="+")
    ap.add_argument("--budgets", default="5,10,20,50,100,200")
    args = ap.parse_args()
    for f in args.files:
        res = json.loads(Path(f).read_text())
        print(pairwise_table(res, args.budgets.split(",")) if "oracle_metric" in res else subset_table(res))
        print()


if __name__ == "__main__":
    main()
