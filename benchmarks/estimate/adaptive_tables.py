"""Issue 44: the adaptive designs of ``bench estimate`` on real data (AlpacaEval, opencompass-irt per
benchmark, WMT23 en-de MQM): budgets 25, 50, 100, 200 x 10 seeds, both splits.

Per data set and split it reports: at 50 items, the best adaptive MAE (``pirt-1d@fisher``,
``aipw@active-cs``) against ``mean@random``'s MAE at 200 items; ``aipw@active-cs``'s coverage
(target >= 0.88) and its width at 50 against the random design's width at 50 (``mean@random``;
target <= 0.8x; ``aipw@random``'s too). MQM states no upper end (scores <= 0): ``active-cs`` is
refused there, and the table says so; ``pirt-1d@fisher`` runs.

    EVALSIFT_DATA=/work/shared/data PYTHONPATH=src python benchmarks/estimate/adaptive_tables.py --out /tmp/adaptive_tables
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from evalsift.bench.estimate import run_estimate_bench, table_text
from evalsift.errors import ParameterError

from _estimate_data import datasets

BUDGETS = (25, 50, 100, 200)
METHODS = ("mean@random", "aipw@random", "pirt-1d@fisher", "aipw@active-cs")
ADAPTIVE = ("pirt-1d@fisher", "aipw@active-cs")


def summary(name, res):
    """The brief's numbers, one row per split."""
    rows = []
    cell = {(r["split"], r["method"], r["budget"]): r for r in res["table"]}
    for sp in ("all", "extrapolation"):
        if not any(k[0] == sp for k in cell):
            continue
        ad = {m: cell.get((sp, m, 50)) for m in ADAPTIVE if (sp, m, 50) in cell}
        best = min(ad, key=lambda m: ad[m]["mae"]) if ad else None
        cs, rnd, arnd = (cell.get((sp, m, 50)) for m in ("aipw@active-cs", "mean@random", "aipw@random"))
        rows.append({
            "data": name, "split": sp, "held_out": len(res["splits"][sp]), "items": res["items"],
            "unit": res["unit"],
            "best_adaptive_50": best, "best_adaptive_mae_50": ad[best]["mae"] if best else None,
            "fisher_mae_50": (ad.get("pirt-1d@fisher") or {}).get("mae"),
            "active_cs_mae_50": (cs or {}).get("mae"),
            "mean_random_mae_200": (cell.get((sp, "mean@random", 200)) or {}).get("mae"),
            "active_cs_coverage": {b: cell[(sp, "aipw@active-cs", b)]["coverage"] for b in res["budgets"]
                                   if (sp, "aipw@active-cs", b) in cell},
            "active_cs_width_50": (cs or {}).get("width"),
            "mean_random_width_50": (rnd or {}).get("width"),
            "aipw_random_width_50": (arnd or {}).get("width"),
            "ratio_vs_mean_random": cs["width"] / rnd["width"] if cs and rnd and rnd["width"] else None,
            "ratio_vs_aipw_random": cs["width"] / arnd["width"] if cs and arnd and arnd["width"] else None,
        })
    return rows


def fluid_peer(folder):
    """{(data, split): MAE at 50 items of Fluid Benchmarking's own code} from ``benchmarks/estimate/fluid_peer.py``'s
    JSON files in ``folder`` (its ``fluid-own`` rows: their selection and their ability estimator)."""
    out = {}
    for path in sorted(Path(folder).glob("fluid_peer_*.json")):
        for r in json.loads(path.read_text())["table"]:
            if r["method"] == "fluid-own" and r["budget"] == 50:
                name = "wmt23/en-de mqm" if r["data"].startswith("wmt23") else r["data"]
                out[(name, r["split"])] = r["mae"]
    return out


def markdown(rows, peer=None):
    f = lambda x, d=2: "-" if x is None else f"{x:.{d}f}"  # noqa: E731
    peer = peer or {}
    out = ["| data | split | held out | items | best adaptive @50 (MAE) | fisher @50 | active-cs @50 | "
           "mean@random @200 | Fluid's own code @50 (peer) | active-cs coverage (per budget) | active-cs width @50 | "
           "mean@random width @50 | ratio | aipw@random width @50 | ratio |", "|" + "---|" * 15]
    for r in rows:
        cov = "/".join(f(v, 3) for v in r["active_cs_coverage"].values()) or r.get("note", "-")
        out.append(f"| {r['data']} | {r['split']} | {r['held_out']} | {r['items']} | "
                   f"{r['best_adaptive_50'] or '-'} ({f(r['best_adaptive_mae_50'])}) | {f(r['fisher_mae_50'])} | "
                   f"{f(r['active_cs_mae_50'])} | {f(r['mean_random_mae_200'])} | "
                   f"{f(peer.get((r['data'], r['split'])))} | {cov} | "
                   f"{f(r['active_cs_width_50'])} | {f(r['mean_random_width_50'])} | {f(r['ratio_vs_mean_random'])} | "
                   f"{f(r['aipw_random_width_50'])} | {f(r['ratio_vs_aipw_random'])} |")
    return "\n".join(out)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--data", default="alpaca-eval,opencompass-irt,wmt23")
    ap.add_argument("--seeds", type=int, default=10)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--fluid", metavar="DIR", help="benchmarks/estimate/fluid_peer.py's --out folder: adds the peer's column")
    ap.add_argument("--summary-only", action="store_true", help="rewrite summary.md from --out's tables.json")
    args = ap.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    peer = fluid_peer(args.fluid) if args.fluid else None
    if args.summary_only:
        md = markdown(json.loads((out / "tables.json").read_text())["rows"], peer)
        (out / "summary.md").write_text(md + "\n")
        print(md)
        return
    rows, texts, times = [], [], {}
    for name, R in datasets(args.data.split(",")):
        t0 = time.perf_counter()
        methods = METHODS
        try:
            res = run_estimate_bench(R, budgets=BUDGETS, methods=methods, seeds=args.seeds, jobs=args.jobs, quiet=True)
            refused = None
        except ParameterError as e:  # active-cs without both ends of the range (MQM): say so, run the rest
            refused = str(e)
            methods = tuple(m for m in METHODS if m != "aipw@active-cs")
            res = run_estimate_bench(R, budgets=BUDGETS, methods=methods, seeds=args.seeds, jobs=args.jobs, quiet=True)
        times[name] = round(time.perf_counter() - t0, 1)
        res.pop("records")
        rs = summary(name, res)
        for r in rs:
            if refused:
                r["note"] = "active-cs refused"
                r["refused"] = refused
        rows += rs
        texts.append(f"== {name} ({R.Y.shape[0]} systems x {R.Y.shape[1]} items; {times[name]} s)"
                     + (f"\nactive-cs refused: {refused}" if refused else "") + "\n" + table_text(res))
        print(texts[-1], flush=True)
        (out / "tables.json").write_text(json.dumps({"rows": rows, "times_s": times}, indent=2))
    md = markdown(rows, peer)
    (out / "summary.md").write_text(md + "\n")
    (out / "tables.txt").write_text("\n".join(texts))
    print(md)
    print(json.dumps(times))


if __name__ == "__main__":
    main()
