"""tinyBenchmarks' pipeline as the paper defines it (``evalsift.estimate.tinybench``: its own IRT
anchor points, p-IRT, gp-IRT) on real data, beside evalsift's one-dimensional simplification ``pirt-1d``/``gpirt-1d`` (``es``; called ``pirt``/``gpirt`` before issue 44)
(``evalsift.estimate.estimators``, called through ``estimate_score``) on the same held-out systems:

- on the same anchors (tinyBenchmarks' IRT anchor points; an anchor two clusters share is judged once,
  with both weights, as evalsift's ``Anchors`` hold it), and
- on evalsift's own ``anchor-points`` design (``select_anchors``, as ``bench estimate`` runs them).

Held-out systems (``benchmarks/estimate/estimate_targets.py``'s splits, ``evalsift.bench.estimate.held_out_cases``):
``all`` (leave one out; on AlpacaEval every ``--every``-th system, to keep the run short) and
``extrapolation`` (each of the best quarter, every system at least as good removed from the known ones).
For each case the tinyBenchmarks pipeline is fitted once on the known systems (its SVI seed is the
authors' 42); a seed ``s`` is the anchor draw: ``KMeans(random_state=42 + s)`` for tinyBenchmarks'
anchors and ``select_anchors(..., seed=s)`` for evalsift's.

Also counted (issue 44's suspected bug): how often the ability ``fit_abilities`` returns for a
held-out system lies on its [-8, 8] bound, and how often it is not the MAP (more than 1e-3 from the
root of the log-posterior's derivative found by bisection).

    EVALSIFT_DATA=/work/shared/data PYTHONPATH=src python benchmarks/estimate/tinybench_real.py [--seeds 5] [--n 100]
        [--every 6] [--oc ARC-C,GPQA Diamond,...] [--out bench-out/tinybench_real.json]
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import sys
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[2]
if importlib.util.find_spec("evalsift") is None:
    sys.path.insert(0, str(REPO / "src"))

from evalsift.bench.estimate import held_out_cases  # noqa: E402
from evalsift.estimate import KnownSystems, estimate_score, response_matrix, select_anchors  # noqa: E402
from evalsift.estimate.anchors import Anchors  # noqa: E402
from evalsift.estimate.estimators import fit_abilities  # noqa: E402
from evalsift.estimate.tinybench import TinyBenchmarks  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from fit_abilities_overshoot import map_by_bisection  # noqa: E402
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: the shared _runner
from _runner import write_json  # noqa: E402

OC_DEFAULT = ("ARC-C", "GPQA Diamond", "HumanEval", "MBPP", "TheoremQA", "GSM8K")
METHODS = ("tb anchor", "tb pirt", "tb gpirt", "es mean @tb", "es pirt @tb", "es gpirt @tb",
           "es mean @ap", "es pirt @ap", "es gpirt @ap")


def as_anchors(items, weights, M: int, seed: int) -> Anchors:
    """tinyBenchmarks' (items, weights), a shared anchor merged into one item with both weights."""
    merged: dict[int, float] = {}
    for i, w in zip(items, weights):
        merged[int(i)] = merged.get(int(i), 0.0) + float(w)
    it = np.array(list(merged), dtype=int)
    return Anchors(it, np.array([merged[i] for i in it]), None, None, "anchor-points", seed, M)


def ability_check(known: KnownSystems, a: Anchors, y) -> tuple[float, bool, bool]:
    """(fit_abilities' ability, on its bound?, not the MAP?) for the held-out scores ``y`` on ``a``."""
    irt = known.irt
    Yu = known.unit(y[a.items])[None, :]
    th, _ = fit_abilities(irt, a.items, Yu)
    disc, diff = np.asarray(irt.discrimination)[a.items], np.asarray(irt.difficulty)[a.items]
    ref, _ = map_by_bisection(disc, diff, Yu)
    return float(th[0]), bool(abs(th[0]) >= 8 - 1e-9), bool(abs(th[0] - ref[0]) > 1e-3)


def run(R, name: str, *, seeds: int, n: int, every: int) -> dict:
    cases = [("all", s, k) for s, k in held_out_cases(R, "all")][::every]
    cases += [("extrapolation", s, k) for s, k in held_out_cases(R, "extrapolation")]
    rows, fits, ab = [], [], []
    t_all = time.perf_counter()
    for split, s, known_rows in cases:
        if len(known_rows) < 5:
            print(f"  {name} {split} {R.systems[s]}: only {len(known_rows)} known systems, skipped", flush=True)
            continue
        Yk, y = R.Y[known_rows], R.Y[s]
        truth = float(y.mean())
        t0 = time.perf_counter()
        tbm = TinyBenchmarks.fit(Yk)
        fits.append(time.perf_counter() - t0)
        known = KnownSystems(Yk, bounds=R.bounds)
        M = Yk.shape[1]
        for seed in range(seeds):
            items, w = tbm.anchors(n, seed=42 + seed)
            out = tbm.estimate(y[items], items, w)
            a_tb = as_anchors(items, w, M, seed)
            a_es = select_anchors(Yk, n, "anchor-points", seed=seed)
            est = {"tb anchor": out["anchor"], "tb pirt": out["pirt"], "tb gpirt": out["gpirt"]}
            for tag, a in (("@tb", a_tb), ("@ap", a_es)):
                for m in ("mean", "pirt", "gpirt"):  # es: evalsift's one-dimensional simplification (pirt-1d, gpirt-1d)
                    est[f"es {m} {tag}"] = estimate_score(known, y[a.items], a, m if m == "mean" else f"{m}-1d").value
                th, on_bound, not_map = ability_check(known, a, y)
                ab.append({"data": name, "split": split, "system": R.systems[s], "seed": seed, "anchors": tag,
                           "theta": th, "on_bound": on_bound, "not_map": not_map})
            rows.append({"data": name, "split": split, "system": R.systems[s], "seed": seed, "truth": truth,
                         "dims": tbm.irt.dims, "lam": out["lam"], "anchors_tb": len(a_tb.items),
                         **{f"err {m}": 100 * (v - truth) for m, v in est.items()}})
        print(f"  {name} {split} {R.systems[s]}: fit {fits[-1]:.1f} s (D={tbm.irt.dims}), "
              f"tb gpirt err {np.mean([abs(r['err tb gpirt']) for r in rows[-seeds:]]):.2f}, "
              f"es gpirt@ap err {np.mean([abs(r['err es gpirt @ap']) for r in rows[-seeds:]]):.2f}", flush=True)
    return {"rows": rows, "abilities": ab, "fit_s": fits, "wall_s": time.perf_counter() - t_all}


def table(rows: list[dict], title: str) -> None:
    print(f"\n{title}")
    print(f"  {'split':<14}{'cases':>6}" + "".join(f"{m:>14}" for m in METHODS))
    for split in ("all", "extrapolation"):
        rs = [r for r in rows if r["split"] == split]
        if not rs:
            continue
        nsys = len({(r["data"], r["system"]) for r in rs})
        print(f"  {split:<14}{nsys:>6}" + "".join(f"{np.mean([abs(r['err ' + m]) for r in rs]):>14.2f}"
                                              for m in METHODS))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--n", type=int, default=100)
    ap.add_argument("--every", type=int, default=6, help="AlpacaEval: hold out every k-th system in the 'all' split")
    ap.add_argument("--oc", default=",".join(OC_DEFAULT), help="opencompass-irt benchmarks ('' for none)")
    ap.add_argument("--skip-alpaca", action="store_true")
    ap.add_argument("--out", default="bench-out/tinybench_real.json")
    ap.add_argument("--table", metavar="JSON", help="only print the tables of an earlier run's --out")
    args = ap.parse_args()
    if args.table:
        out = json.loads(Path(args.table).read_text())
        report(out)
        return 0
    out = {"seeds": args.seeds, "n": args.n, "methods": METHODS, "runs": {}}
    if not args.skip_alpaca:
        R = response_matrix("alpaca-eval")
        print(f"AlpacaEval: {R.Y.shape[0]} systems x {R.Y.shape[1]} items", flush=True)
        out["runs"]["AlpacaEval"] = run(R, "AlpacaEval", seeds=args.seeds, n=args.n, every=args.every)
    if args.oc:
        O = response_matrix("opencompass-irt")
        for bench in [b for b in args.oc.split(",") if b]:
            G = O.group("benchmark", bench)
            print(f"opencompass-irt {bench}: {G.Y.shape[0]} systems x {G.Y.shape[1]} items", flush=True)
            out["runs"][f"oc {bench}"] = run(G, f"oc {bench}", seeds=args.seeds, n=min(args.n, G.Y.shape[1] - 1),
                                             every=1)
    report(out)
    print()
    write_json(args.out, out, indent=1, default=float)
    return 0


def report(out: dict) -> None:
    print(f"\nMAE in points (100 x |estimate - true mean|), {out['n']} anchors, {out['seeds']} seeds; tb = the paper's "
          "pipeline (evalsift.estimate.tinybench), es = evalsift's current estimators; @tb on tinyBenchmarks' IRT "
          "anchors, @ap on evalsift's anchor-points design")
    for name, res in out["runs"].items():
        fs = res["fit_s"]
        table(res["rows"], f"{name}: pipeline fit {np.mean(fs):.1f} s per case (min {min(fs):.1f}, max {max(fs):.1f}), "
                           f"wall {res['wall_s']:.0f} s")
    oc_rows = [r for name, res in out["runs"].items() if name.startswith("oc ") for r in res["rows"]]
    if oc_rows:
        table(oc_rows, "opencompass-irt, the benchmarks above pooled")
    print("\nfit_abilities (evalsift's pirt) on the held-out systems: ability on the [-8, 8] bound / not the MAP "
          "(> 1e-3 from the bisection root)")
    for name, res in out["runs"].items():
        for tag in ("@tb", "@ap"):
            ab = [a for a in res["abilities"] if a["anchors"] == tag]
            print(f"  {name:<22}{tag}: {sum(a['on_bound'] for a in ab)} / {len(ab)} on the bound, "
                  f"{sum(a['not_map'] for a in ab)} / {len(ab)} not the MAP")


if __name__ == "__main__":
    sys.exit(main())
