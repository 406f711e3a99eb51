"""``bench estimate --by COLUMN --shared-ability``: does one ability shared across benchmarks estimate
each benchmark, and the total, better than each benchmark on its own?

The held-out cases are ``bench estimate``'s (:func:`evalsift.bench.estimate.held_out_cases`: split
``all`` holds out each system in turn; ``extrapolation`` each of the best quarter against only worse
known systems), on the whole matrix. For every case, budget and seed, ``budget`` items are drawn at
random **from each value of the column** (each benchmark; all of a benchmark's items when it has no
more: its error is then 0), the same draw for every estimator of
:mod:`evalsift.estimate.across` (``separate``, ``shared``, ``shared-offset``), and each estimator's
error is recorded (and that of ``mean``, each benchmark's judged mean: the reference without a model)
on every benchmark, on the mean over benchmarks and on the mean over all items.
Reported per split, target, estimator and budget: the mean absolute error, the mean signed error
(bias) and the root mean square error, in points for [0, 1] scores; and for each shared estimator
against ``separate``, the mean difference of absolute errors with its standard error **across the
held-out systems** (each system's mean over its seeds is one observation: the seeds of one system
share its known systems, so they are not independent cases). ``helps``: the difference is below 0 by
more than 2 standard errors; ``hurts``: above 0 by more than 2; otherwise ``unclear``.
"""

from __future__ import annotations

import time
from typing import Any, Sequence

import numpy as np

from ..errors import DataError, ParameterError, check_choice
from ..estimate import ResponseMatrix
from ..estimate.across import ACROSS_METHODS, KnownAcross, draw_per_group, estimate_across
from ..progress import progress_bar
from .estimate import SPLITS, held_out_cases

DEFAULT_BUDGETS = (5, 10, 25, 50)
MACRO = "mean over benchmarks"
MICRO = "mean over items"


def run_across_bench(R: ResponseMatrix, column: str, *, budgets: Sequence[int] = DEFAULT_BUDGETS,
                     methods: Sequence[str] = ACROSS_METHODS, seeds: int = 10, splits: Sequence[str] = SPLITS,
                     quiet: bool | None = None, jobs: int | str | None = 1, backend: str = "local",
                     ray_address: str | None = None) -> dict[str, Any]:
    """Run the protocol (module doc) on ``R`` grouped by its per-item ``column``; budgets are items
    per group. Returns a JSON-ready dict: ``records`` (one per case, budget, seed, estimator and
    target), ``table`` (:func:`summarise_across`), ``comparison`` (:func:`compare_to_separate`),
    the groups' sizes and the time taken. ``jobs`` workers give the serial run's numbers."""
    from .parallel import run_tasks

    t0 = time.perf_counter()
    methods = list(dict.fromkeys(check_choice("method", m, ACROSS_METHODS, where="--shared-ability")
                                 for m in methods))
    groups = R.groups(column)  # a DataError naming the columns when there is no such one
    labels = R.columns[column]
    if len(groups) < 2:
        raise ParameterError(f"--shared-ability shares one ability across the values of --by {column}; {R.source} "
                             f"has one value ({groups[0]!r}). Give a column with several values (e.g. benchmark).",
                             field="shared_ability")
    budgets = [int(b) for b in budgets]
    if not budgets or any(b < 1 for b in budgets):
        raise ParameterError(f"--budgets {budgets}: with --shared-ability each is items per {column} value and must "
                             "be at least 1.", field="budgets")
    if int(seeds) < 1:
        raise ParameterError(f"--seeds {seeds}: must be at least 1.", field="seeds")
    for sp in splits:
        check_choice("split", sp, SPLITS)
    if len(R.systems) < 4:
        raise DataError(f"bench estimate needs at least 4 systems (each held out in turn, with at least 3 known "
                        f"ones); {R.source} has {len(R.systems)}.", field="data")
    cases = [(sp, s, known) for sp in splits for s, known in held_out_cases(R, sp)]
    shared = {"Y": R.Y, "labels": [str(v) for v in labels], "systems": R.systems, "bounds": R.bounds,
              "scale": R.scale, "budgets": budgets, "seeds": int(seeds), "methods": methods}
    tasks = [(case_no, sp, int(s), [int(k) for k in known]) for case_no, (sp, s, known) in enumerate(cases)]
    with progress_bar(len(tasks), "across-benchmark bench", quiet) as advance:
        outs = run_tasks(_run_case, tasks, shared=shared, jobs=jobs, backend=backend, ray_address=ray_address,
                         advance=advance)
    records = [r for out in outs for r in out["records"]]
    skipped = [out["skipped"] for out in outs if out["skipped"]]
    targets = list(groups) + [MACRO, MICRO]
    sizes = {g: int(np.sum([str(v) == g for v in labels])) for g in groups}
    timing = {k: round(sum(out["timing"][k] for out in outs), 3) for k in ("fit", "estimate")}
    timing["total"] = round(time.perf_counter() - t0, 3)
    return {"data": R.source, "metric": R.metric, "unit": R.unit, "column": column, "systems": len(R.systems),
            "items": R.n_items, "groups": sizes, "budgets": budgets, "budget_meaning": f"items judged per {column}",
            "methods": methods, "seeds": int(seeds),
            "splits": {sp: [R.systems[s] for s2, s, _ in cases if s2 == sp] for sp in splits},
            "skipped": skipped, "table": summarise_across(records, methods, budgets, targets, splits),
            "comparison": compare_to_separate(records, methods, budgets, targets, splits),
            "records": records, "timing_s": timing}


def _run_case(shared: dict[str, Any], task: tuple) -> dict[str, Any]:
    """Every budget, seed and estimator for one held-out case (a worker's task)."""
    case_no, sp, s, known_rows = task
    Y, systems, scale = shared["Y"], shared["systems"], shared["scale"]
    timing = {"fit": 0.0, "estimate": 0.0}
    if len(known_rows) < 3:
        return {"records": [], "timing": timing,
                "skipped": {"split": sp, "system": systems[s], "why": f"only {len(known_rows)} known systems"}}
    t0 = time.perf_counter()
    known = KnownAcross(Y[known_rows], shared["labels"], bounds=shared["bounds"])
    if any(m in ("shared", "shared-offset") for m in shared["methods"]):
        known.joint
    if "shared-offset" in shared["methods"]:
        known.tau
    if "separate" in shared["methods"]:
        for k in range(len(known.groups)):
            known.group_fit(k)
    timing["fit"] += time.perf_counter() - t0
    per, macro, micro = known.truth(Y[s])
    targets = list(known.groups) + [MACRO, MICRO]
    truths = np.concatenate([per, [macro, micro]])
    records = []
    t0 = time.perf_counter()
    for b in shared["budgets"]:
        for seed in range(shared["seeds"]):
            draw = seed + 1000 * case_no  # a fresh draw per held-out case: independent errors across systems
            items = draw_per_group(known, b, seed=draw)
            for m in shared["methods"]:
                e = estimate_across(known, items, Y[s, items], m)
                est = np.concatenate([e.values, [e.macro, e.micro]])
                ns = list(e.judged) + [int(sum(e.judged))] * 2
                for t, v, truth, n in zip(targets, est, truths, ns):
                    records.append({"split": sp, "system": systems[s], "budget": b, "seed": seed, "method": m,
                                    "target": t, "error": float((v - truth) * scale), "n": n})
    timing["estimate"] += time.perf_counter() - t0
    return {"records": records, "timing": timing, "skipped": None}


def summarise_across(records: list[dict[str, Any]], methods: Sequence[str], budgets: Sequence[int],
                     targets: Sequence[str], splits: Sequence[str] = SPLITS) -> list[dict[str, Any]]:
    """One row per split, target, estimator and budget: ``mae``, ``bias`` (mean signed error),
    ``rmse``, ``estimates`` and ``judged`` (items judged for that target per estimate)."""
    by: dict[tuple, list] = {}
    for r in records:
        by.setdefault((r["split"], r["target"], r["method"], r["budget"]), []).append(r)
    rows = []
    for sp in splits:
        for t in targets:
            for m in methods:
                for b in budgets:
                    rs = by.get((sp, t, m, b))
                    if not rs:
                        continue
                    err = np.array([r["error"] for r in rs])
                    rows.append({"split": sp, "target": t, "method": m, "budget": b,
                                 "mae": float(np.abs(err).mean()), "bias": float(err.mean()),
                                 "rmse": float(np.sqrt(np.mean(err ** 2))), "estimates": len(rs),
                                 "judged": int(rs[0]["n"])})
    return rows


def compare_to_separate(records: list[dict[str, Any]], methods: Sequence[str], budgets: Sequence[int],
                        targets: Sequence[str], splits: Sequence[str] = SPLITS) -> list[dict[str, Any]]:
    """For each shared estimator, split, target and budget: the mean over held-out systems of (its
    absolute error - ``separate``'s), each system's errors first averaged over its seeds, with the
    standard error across systems, and the verdict ``helps`` / ``hurts`` / ``unclear`` (module doc;
    ``unclear`` too with fewer than 2 systems)."""
    if "separate" not in methods:
        return []
    err: dict[tuple, dict[str, list]] = {}
    for r in records:
        err.setdefault((r["split"], r["target"], r["budget"], r["system"]), {}).setdefault(r["method"], []).append(
            abs(r["error"]))
    rows = []
    for m in methods:
        if m == "separate":
            continue
        for sp in splits:
            for t in targets:
                for b in budgets:
                    diffs = [np.mean(v[m]) - np.mean(v["separate"]) for (sp2, t2, b2, _), v in err.items()
                             if (sp2, t2, b2) == (sp, t, b) and m in v and "separate" in v]
                    if not diffs:
                        continue
                    d = float(np.mean(diffs))
                    se = float(np.std(diffs, ddof=1) / np.sqrt(len(diffs))) if len(diffs) > 1 else None
                    verdict = ("unclear" if se is None else "helps" if d + 2 * se < 0 else
                               "hurts" if d - 2 * se > 0 else "unclear")
                    rows.append({"split": sp, "target": t, "method": m, "budget": b, "mae_difference": d,
                                 "se": se, "systems": len(diffs), "verdict": verdict})
    return rows


MARK = {"helps": "<", "hurts": ">", "unclear": " "}


def across_table_text(res: dict[str, Any]) -> str:
    """The results as aligned text, one block per split: per target (each benchmark, then the two
    totals) and estimator, the MAE and the bias (in brackets) at every budget; a shared estimator's
    cell is marked ``<`` where it beats ``separate`` by more than 2 standard errors across systems,
    ``>`` where it loses by as much. Then the totals' RMSE."""
    cmp = {(c["split"], c["target"], c["method"], c["budget"]): c["verdict"] for c in res["comparison"]}
    rows = {(r["split"], r["target"], r["method"], r["budget"]): r for r in res["table"]}
    budgets, methods = res["budgets"], res["methods"]
    targets = list(res["groups"]) + [MACRO, MICRO]
    lines = []
    for sp in SPLITS:
        if not any(r["split"] == sp for r in res["table"]):
            continue
        n_sys = len(res["splits"].get(sp, []))
        lines.append(f"{sp} ({n_sys} held-out system{'s' if n_sys != 1 else ''} x {res['seeds']} seeds); budget = "
                     f"{res['budget_meaning']}; MAE (bias) in {res['unit']}; < / >: better / worse than separate "
                     "by > 2 se across systems")
        lines.append(f"  {res['column'] + ' (items)':<32}{'method':<15}" + "".join(f"{b:>15}" for b in budgets))
        for t in targets:
            name = f"{t} ({res['groups'][t]})" if t in res["groups"] else f"{t} ({res['items']})"
            for k, m in enumerate(methods):
                cells = ""
                for b in budgets:
                    r = rows.get((sp, t, m, b))
                    cells += (f"{r['mae']:>7.2f} ({r['bias']:+5.1f}){MARK[cmp.get((sp, t, m, b), 'unclear')]}"
                              if r else f"{'-':>15}")
                lines.append(f"  {(name if k == 0 else ''):<32}{m:<15}{cells}")
        lines.append(f"  RMSE of the totals ({res['unit']}):")
        for t in (MACRO, MICRO):
            for m in methods:
                cells = "".join(f"{rows[(sp, t, m, b)]['rmse']:>15.2f}" if (sp, t, m, b) in rows else f"{'-':>15}"
                                for b in budgets)
                lines.append(f"  {t:<32}{m:<15}{cells}")
        judged = [sum(min(b, n) for n in res["groups"].values()) for b in budgets]
        lines.append("  items judged in all: " + ", ".join(f"{j} ({100 * j / res['items']:.2f}%)" for j in judged))
        lines.append("")
    return "\n".join(lines)
