"""Fluid Benchmarking's own code as a peer of ``bench estimate``'s fisher design (``pirt@fisher``; ``pirt-1d@fisher`` since the rename) (issue 44).

On exactly the held-out cases of ``bench estimate`` (:func:`evalsift.bench.estimate.held_out_cases`,
splits ``all`` and ``extrapolation``; a case with fewer than 3 known systems is skipped, as there),
each case's 2PL is fitted to the known systems as ``bench estimate`` fits it (``KnownSystems.irt``,
on the ``KnownSystems.lo``/``hi`` unit scale); the item parameters and the held-out system's scores on
that scale go to ``benchmarks/estimate/_fluid_driver.py``, run in the peer's OWN venv (``--fluid-python``,
default ``/tmp/fluid-venv/bin/python``), which runs ``allenai/fluid-benchmarking``'s adaptive loop
(their selection, their MAP estimator, their defaults) to the largest budget. Reported per data set x
split x budget, error = estimate - the held-out system's mean over all items (points for [0, 1]
scores, MQM in its own unit):

- ``fluid-own``: their ability (start 0, the README's), reported as the expected score over every
  item at it (their code reports the ability only);
- ``fluid-own@start-mean``: the same with the start ability their ``scripts/run_experiments.py``
  uses (the mean ability of a reference population: here the known systems');
- ``fluid-sel+pirt``: their items and ability (start 0) with p-IRT's score (judged + predicted rest),
  the score formula of our ``pirt@fisher``;
- ``pirt@fisher``: ours, by :func:`evalsift.estimate.adaptive.simulate_budgets` (``bench estimate``'s
  call);
- ``fluid-full``: their ``full_ability`` on every item, as an expected score (the ceiling of their
  score: the budget is the whole pool).

Also per data set x split: the fraction of cases whose first 50 items (fewer where the pool or the
largest budget is smaller) are the same in their run and ours, with our test fed the scores ours sees
and fed the 0/1 responses theirs sees (their engine takes 0/1 only; non-binary scores are binarised
at 0.5, as their loader does); at the first difference, the two abilities and why. Usage::

    python -m venv /tmp/fluid-venv  # python3.11
    /tmp/fluid-venv/bin/pip install numpy pandas scipy tabulate tqdm
    git --git-dir=/work/.mirror/allenai+fluid-benchmarking/repo archive HEAD -- fluid_benchmarking \\
        pyproject.toml README.md LICENSE.md | tar -x -C /tmp/fluid-src
    /tmp/fluid-venv/bin/pip install --no-deps /tmp/fluid-src
    EVALSIFT_DATA=/work/shared/data python benchmarks/estimate/fluid_peer.py --data alpaca-eval --out bench-out/fluid
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from evalsift.bench.estimate import ADAPTIVE, SPLITS, held_out_cases
from evalsift.errors import DataError, ParameterError
from evalsift.estimate import KnownSystems, ResponseMatrix, response_matrix
from evalsift.estimate.adaptive import map_ability, simulate, simulate_budgets

DATA = {"alpaca-eval": ("alpaca-eval", {}), "opencompass-irt": ("opencompass-irt", {}),
        "wmt23": ("wmt23/en-de", {"metric": "mqm"})}
DEFAULT_PYTHON = "/tmp/fluid-venv/bin/python"
DRIVER = Path(__file__).resolve().with_name("_fluid_driver.py")
BUDGETS = (25, 50, 100, 200)
MATCH_N = 50
OURS = f"{ADAPTIVE['fisher']}@fisher"  # bench estimate's label of our fisher design (pirt@fisher, later pirt-1d@fisher)
METHODS = ("fluid-own", "fluid-own@start-mean", "fluid-sel+pirt", OURS)


def peer_cases(R: ResponseMatrix, split: str) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(cases, skipped) of ``split``: per held-out case of :func:`held_out_cases` with at least 3 known
    systems, the 2PL fitted to the known rows as ``bench estimate`` fits it and the held-out scores on
    its [0, 1] scale (``y_unit``); the skipped ones with the reason."""
    cases, skipped = [], []
    for s, known in held_out_cases(R, split):
        if len(known) < 3:
            skipped.append({"split": split, "system": R.systems[s], "why": f"only {len(known)} known systems"})
            continue
        ks = KnownSystems(R.Y[known], bounds=R.bounds)
        fit = ks.irt
        lo, hi = float(ks.lo), float(ks.hi)
        cases.append({"split": split, "row": int(s), "system": R.systems[s], "known": [int(k) for k in known],
                      "a": np.asarray(fit.discrimination, dtype=float), "b": np.asarray(fit.difficulty, dtype=float),
                      "lo": lo, "hi": hi, "y": np.asarray(R.Y[s], dtype=float),
                      "y_unit": (np.asarray(R.Y[s], dtype=float) - lo) / (hi - lo),
                      "truth": float(np.mean(R.Y[s])), "start_mean": float(np.mean(fit.ability))})
    return cases, skipped


def run_peer(cases: list[dict[str, Any]], budgets: Sequence[int], python: str) -> list[dict[str, Any]]:
    """The driver's output per case (``_fluid_driver.py`` under the peer's venv ``python``)."""
    spec = {"budgets": list(budgets),
            "cases": [{"id": k, "a": c["a"].tolist(), "b": c["b"].tolist(), "y": c["y_unit"].tolist(),
                       "starts": [0.0, c["start_mean"]]} for k, c in enumerate(cases)]}
    with tempfile.TemporaryDirectory(prefix="fluid-peer-") as tmp:
        src, dst = Path(tmp) / "in.json", Path(tmp) / "out.json"
        src.write_text(json.dumps(spec))
        proc = subprocess.run([python, str(DRIVER), str(src), str(dst)], capture_output=True, text=True, check=False)
        if proc.returncode != 0:
            raise DataError(f"the Fluid Benchmarking driver failed ({python} {DRIVER.name}, exit "
                            f"{proc.returncode}):\n{proc.stderr[-3000:]}", field="fluid_python")
        return json.loads(dst.read_text())["cases"]


def ours(case: dict[str, Any], budgets: Sequence[int], bounds) -> dict[str, Any]:
    """Our ``pirt@fisher`` on the case, as ``bench estimate`` runs it, and our item sequences on the
    scores ours sees and on the peer's 0/1 responses (mapped back to the data's unit)."""
    irt = {"discrimination": case["a"], "difficulty": case["b"], "scale": (case["lo"], case["hi"])}
    bnd = None if bounds is None else tuple(bounds)
    ests = simulate_budgets(None, case["y"], "fisher", budgets, irt=irt, bounds=bnd)
    n = min(max(budgets), len(case["a"]))
    _, t = simulate(None, case["y"], "fisher", n, irt=irt, bounds=bnd)
    binary = np.isin(case["y_unit"], (0.0, 1.0)).all()
    r = case["y_unit"] if binary else (case["y_unit"] >= 0.5).astype(float)
    _, tb = simulate(None, case["lo"] + (case["hi"] - case["lo"]) * r, "fisher", min(MATCH_N, n), irt=irt)
    return {"values": [e.value for e in ests], "items": [s.item for s in t.steps],
            "items_binarised": [s.item for s in tb.steps], "binary": bool(binary), "r": r}


def first_difference(case: dict[str, Any], mine: dict[str, Any], peer_run: dict[str, Any], *,
                     binarised: bool) -> dict[str, Any] | None:
    """Where our first items and the peer's part (None where they agree), the abilities the two
    selections used there and why: the responses told so far differ (binarisation), the abilities
    differ, or the two items' information ties."""
    ours_items = mine["items_binarised" if binarised else "items"]
    theirs = peer_run["items"]
    n = min(MATCH_N, len(ours_items), len(theirs))
    k = next((i for i in range(n) if ours_items[i] != theirs[i]), None)
    if k is None:
        return None
    a, b = case["a"], case["b"]
    vals = mine["r"] if binarised else np.clip(case["y_unit"], 0.0, 1.0)
    th_ours = map_ability(a, b, ours_items[:k], vals[ours_items[:k]])[0] if k else 0.0
    th_theirs = peer_run["abilities"][k - 1] if k else peer_run["start"]

    def info(j: int, th: float) -> float:
        p = 1.0 / (1.0 + np.exp(-a[j] * (th - b[j])))
        return float(a[j] ** 2 * p * (1 - p))

    fi_t, fi_o = info(theirs[k], th_theirs), info(ours_items[k], th_theirs)
    told = np.asarray(theirs[:k], dtype=int)
    if not binarised and not np.array_equal(np.clip(case["y_unit"], 0.0, 1.0)[told], mine["r"][told]):
        why = "responses differ: theirs sees the scores binarised at 0.5, ours the scores themselves"
    elif abs(fi_t - fi_o) <= 1e-12 * max(fi_t, 1e-300):
        why = "tie in Fisher information: both take the first maximum, at slightly different abilities"
    elif abs(th_ours - th_theirs) > 1e-9:
        why = "abilities differ (their Newton stops at |score| < 1e-6; ours brentq to 1e-10)"
    else:
        why = "same ability, different argmax"
    return {"step": k, "theirs": int(theirs[k]), "ours": int(ours_items[k]), "ability_theirs": float(th_theirs),
            "ability_ours": float(th_ours), "info_theirs_item": fi_t, "info_ours_item": fi_o, "why": why}


def run_data(R: ResponseMatrix, label: str, budgets: Sequence[int], splits: Sequence[str],
             python: str) -> dict[str, Any]:
    """Every case of ``splits`` on ``R``: the records (one per case, budget and method), the per-case
    sequence checks and the times."""
    M = R.n_items
    budgets = [b for b in budgets if b < M]  # as bench estimate: a budget not below the pool is left out
    if not budgets:
        raise ParameterError(f"no budget below the {M} items of {label}", field="budgets")
    records, checks, skipped = [], [], []
    timing = {"fit": 0.0, "peer": 0.0, "ours": 0.0}
    for sp in splits:
        t0 = time.perf_counter()
        cases, skip = peer_cases(R, sp)
        skipped += skip
        timing["fit"] += time.perf_counter() - t0
        if not cases:
            continue
        t0 = time.perf_counter()
        peer = run_peer(cases, budgets, python)
        timing["peer"] += time.perf_counter() - t0
        for c, p in zip(cases, peer):
            t0 = time.perf_counter()
            mine = ours(c, budgets, R.bounds)
            timing["ours"] += time.perf_counter() - t0
            span = c["hi"] - c["lo"]

            def err(v_unit: float, c=c, span=span) -> float:
                return (c["lo"] + span * v_unit - c["truth"]) * R.scale

            base = {"data": label, "split": sp, "system": c["system"]}
            run0, run_mean = p["runs"]
            for k, b in enumerate(budgets):
                row = {**base, "budget": b}
                records += [{**row, "method": "fluid-own", "error": err(run0["budgets"][k]["expected"])},
                            {**row, "method": "fluid-own@start-mean", "error": err(run_mean["budgets"][k]["expected"])},
                            {**row, "method": "fluid-sel+pirt", "error": err(run0["budgets"][k]["pirt"])},
                            {**row, "method": OURS, "error": (mine["values"][k] - c["truth"]) * R.scale}]
            records.append({**base, "budget": "all", "method": "fluid-full", "error": err(p["full"]["expected"])})
            d = first_difference(c, mine, run0, binarised=False)
            db = first_difference(c, mine, run0, binarised=True)
            checks.append({**base, "binary": p["binary"], "match": d is None, "match_binarised": db is None,
                           "first_difference": d, "first_difference_binarised": db,
                           "peer_seconds": p["seconds"]})
    return {"data": label, "items": M, "systems": len(R.systems), "unit": R.unit, "scale": R.scale,
            "budgets": budgets, "records": records, "checks": checks, "skipped": skipped,
            "timing_s": {k: round(v, 2) for k, v in timing.items()}}


def summarise(records: list[dict[str, Any]], checks: list[dict[str, Any]], label: str) -> list[dict[str, Any]]:
    """One row per split x budget x method: MAE, mean signed error, cases; the sequence-match
    fractions ride on each split's rows."""
    rows = []
    splits = list(dict.fromkeys(r["split"] for r in records))
    for sp in splits:
        ch = [c for c in checks if c["split"] == sp]
        match = float(np.mean([c["match"] for c in ch])) if ch else None
        match_b = float(np.mean([c["match_binarised"] for c in ch])) if ch else None
        budgets = list(dict.fromkeys(r["budget"] for r in records if r["split"] == sp))
        for b in budgets:
            for m in METHODS + ("fluid-full",):
                e = np.array([r["error"] for r in records if r["split"] == sp and r["budget"] == b and r["method"] == m])
                if e.size:
                    rows.append({"data": label, "split": sp, "budget": b, "method": m, "mae": float(np.abs(e).mean()),
                                 "bias": float(e.mean()), "cases": int(e.size), "match50": match,
                                 "match50_binarised": match_b})
    return rows


def table_text(rows: list[dict[str, Any]], unit: str) -> str:
    """The rows as text: one line per data set x split x budget, the methods' MAE (bias) side by side."""
    head = (f"{'data':<36}{'split':<14}{'budget':>6}{'cases':>6}  " +
            "".join(f"{m:>22}" for m in METHODS + ("fluid-full",)) + f"{'same50':>8}{'same50(0/1)':>12}")
    out = [f"MAE (mean signed error), {unit}", head]
    keys = list(dict.fromkeys((r["data"], r["split"], r["budget"]) for r in rows))
    full = {(r["data"], r["split"]): r for r in rows if r["method"] == "fluid-full"}
    for d, sp, b in keys:
        if b == "all":
            continue
        cell = {r["method"]: r for r in rows if (r["data"], r["split"], r["budget"]) == (d, sp, b)}
        any_r = next(iter(cell.values()))
        line = f"{d:<36}{sp:<14}{b:>6}{any_r['cases']:>6}  "
        for m in METHODS:
            r = cell.get(m)
            line += f"{'-':>22}" if r is None else f"{r['mae']:>13.2f} ({r['bias']:+6.2f})"
        f = full.get((d, sp))
        line += f"{'-':>22}" if f is None else f"{f['mae']:>13.2f} ({f['bias']:+6.2f})"
        line += f"{any_r['match50']:>8.2f}{any_r['match50_binarised']:>12.2f}"
        out.append(line)
    return "\n".join(out)


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", required=True, choices=sorted(DATA))
    ap.add_argument("--benchmark", nargs="*", default=None, help="opencompass-irt: only these benchmarks")
    ap.add_argument("--splits", nargs="+", default=list(SPLITS), choices=list(SPLITS))
    ap.add_argument("--budgets", nargs="+", type=int, default=list(BUDGETS))
    ap.add_argument("--fluid-python", default=DEFAULT_PYTHON)
    ap.add_argument("--out", required=True, type=Path)
    args = ap.parse_args(argv)
    if not Path(args.fluid_python).exists():
        raise ParameterError(f"--fluid-python {args.fluid_python}: not found; set up the peer's venv (module doc)",
                             field="fluid_python")
    t_all = time.perf_counter()
    name, kw = DATA[args.data]
    R = response_matrix(name, **kw)
    if args.data == "opencompass-irt":
        groups = [g for g in R.groups("benchmark") if not args.benchmark or g in args.benchmark]
        parts = [(f"opencompass-irt/{g}", R.group("benchmark", g)) for g in groups]
    else:
        parts = [(args.data, R)]
    results, rows = [], []
    for label, Rg in parts:
        t0 = time.perf_counter()
        res = run_data(Rg, label, args.budgets, args.splits, args.fluid_python)
        res["seconds"] = round(time.perf_counter() - t0, 2)
        results.append(res)
        rows += summarise(res["records"], res["checks"], label)
        print(f"{label}: {res['seconds']} s {res['timing_s']}", file=sys.stderr)
    if len(parts) > 1:  # pooled over every benchmark's cases (budgets every benchmark has)
        common = set.intersection(*(set(r["budgets"]) for r in results))
        recs = [r for res in results for r in res["records"] if r["budget"] in common or r["budget"] == "all"]
        rows += summarise(recs, [c for res in results for c in res["checks"]], f"{args.data} (pooled)")
    seconds = round(time.perf_counter() - t_all, 2)
    text = table_text(rows, f"{'points' if results[0]['scale'] == 100 else results[0]['unit']}")
    text += f"\n\n{args.data}: {seconds} s in all (one process; the peer's driver one subprocess per data set x split)"
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / f"fluid_peer_{args.data}.txt").write_text(text + "\n")
    (args.out / f"fluid_peer_{args.data}.json").write_text(json.dumps(
        {"data": args.data, "seconds": seconds, "table": rows,
         "parts": [{k: v for k, v in res.items()} for res in results]}, indent=1, default=float))
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
