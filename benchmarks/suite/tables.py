"""Print Markdown tables from ``results.json`` files written by ``evalsift bench pairwise|subset|calibration``.

    python benchmarks/suite/tables.py bench-out/diffuse/*/results.json [--budgets 10,20,50,100,200]
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


def calibration_table(res: dict) -> str:
    """Per stated risk, one table: rows method/rule, columns the cases (synthetic gaps and ties, real
    data all and close); a cell is 'wrong% / named% / mean labels' and ** marks a cell whose wrong
    share lies significantly above the stated risk."""
    cases = [(f"syn {k}", v) for k, v in res.get("synthetic", {}).get("cells", {}).items()]
    if "real" in res:
        cases += [(f"{res['real']['data']} {k}", v) for k, v in res["real"]["cells"].items()]
    combos = []
    for _, cell in cases:
        for m, by_rule in cell.items():
            for rule in by_rule:
                if (m, rule) not in combos:
                    combos.append((m, rule))
    lines = [produced_by(res), ""]
    if "real" in res:
        r = res["real"]
        lines += [f"Real data: {r['data']}, oracle `{r['oracle']}`, {r['pairs']} pairs x {r['seeds']} seeds = "
                  f"{r['cases']} test sets ({r['close_cases']} close, gap < 0.05; {r['skipped_tied']} tied, skipped); "
                  f"gap quartiles {', '.join(f'{q:.3f}' for q in r.get('gap_quartiles', []))}.", ""]
    if "synthetic" in res:
        sy = res["synthetic"]
        lines += [f"Synthetic: {sy['items']} items, {sy['runs_per_cell']} pools per case.", ""]
    for risk in res["risks"]:
        key = f"{risk:g}"
        lines += [f"stated risk {key}: wrong % / named a winner % / mean labels (** = wrong share significantly "
                  f"above {key}):", "",
                  "| method / rule | " + " | ".join(c for c, _ in cases) + " |", "|---|" + "---|" * len(cases)]
        for m, rule in combos:
            cells = []
            for _, cell in cases:
                c = cell.get(m, {}).get(rule, {}).get(key)
                if not c or not c.get("runs"):
                    cells.append("")
                    continue
                mark = "**" if c["exceeds"] else ""
                cells.append(f"{mark}{100 * c['wrong']:.1f}{mark} / {100 * c['declared']:.0f} / {c['mean_labels']:.0f}")
            lines.append(f"| {m} / {rule} | " + " | ".join(cells) + " |")
        lines.append("")
    cov = []
    for label, part in (("synthetic", res.get("synthetic")), ("real", res.get("real"))):
        if part:
            s = part["summary"].get("anytime", {})
            if "coverage_minus_nominal" in s:
                cov.append(f"{label}: lowest coverage minus nominal {s['coverage_minus_nominal']:+.3f}")
    if cov:
        lines.append("Interval coverage (anytime rule, win-rate interval at the stop vs the pool's true win rate): "
                     + "; ".join(cov) + ".")
    summary = []
    for label, part in (("synthetic", res.get("synthetic")), ("real", res.get("real"))):
        if part:
            summary.append(label + ": " + ", ".join(f"{rule} {s['exceeds']}/{s['cells']}"
                                                    for rule, s in part["summary"].items()))
    lines.append("Cells exceeding their stated risk: " + "; ".join(summary) + ".")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("files", nargs="+")
    ap.add_argument("--budgets", default="5,10,20,50,100,200")
    args = ap.parse_args()
    for f in args.files:
        res = json.loads(Path(f).read_text())
        if "guarantee" in res:
            print(calibration_table(res))
        else:
            print(pairwise_table(res, args.budgets.split(",")) if "oracle_metric" in res else subset_table(res))
        print()


if __name__ == "__main__":
    main()
