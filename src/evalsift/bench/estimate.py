"""``bench estimate``: how well does each estimator give a held-out system's full-benchmark score?

Protocol (the same splits and seeds for every method):

- **all** (leave one system out): each system in turn is the new one; the others are the known
  systems.
- **extrapolation**: each of the best quarter of systems (at least one) is the new one, and every
  system at least as good is removed from the known ones too, so the new system is better than every
  remaining one -- the case Zhang, Dorner & Hardt (2025) find every prediction method fails.

For every held-out system, budget and seed, each method's design (drawn afresh for every held-out
system, so that the errors of different systems are independent) (``ESTIMATOR@DESIGN``; the default
designs are :data:`~evalsift.estimate.DEFAULT_DESIGN`) picks the anchors from the known systems
(the same anchors for every estimator sharing a design), the estimator gives the held-out system's
score from its anchor scores, and the error against its true mean over all items is recorded with
whether the interval held it. Reported per split, method and budget: the mean absolute error (in
points for [0, 1] scores), the mean signed error, the coverage of the ``1 - alpha`` intervals, their
mean width, and how many estimates there were. An estimate whose method gives intervals but that got
none (a conformal interval with too few known systems, a judged sample without spread and no stated
range) counts as ``none``: outside the coverage and the width, counted on its own.
"""

from __future__ import annotations

import time
from typing import Any, Sequence

import numpy as np

from ..errors import DataError, ParameterError, check_choice
from ..estimate import (DEFAULT_DESIGN, DESIGNS, METHODS, PROBABILITY_DESIGNS, KnownSystems, ResponseMatrix,
                        estimate_score, select_anchors)
from ..progress import progress_bar

DEFAULT_METHODS = ("mean", "mean@stratified", "aipw", "aipw@stratified", "regression", "pirt", "gpirt")
PEERS = {"regression@random": "Zhang et al. 2025 baseline (random + regression)",
         "pirt@anchor-irt": "tinyBenchmarks p-IRT (the paper's pipeline, IRT anchor points)",
         "gpirt@anchor-irt": "tinyBenchmarks gp-IRT (the paper's pipeline, IRT anchor points)",
         "mean@anchor-irt": "tinyBenchmarks IRT anchor estimate",
         "mean@anchor-points": "tinyBenchmarks anchor estimate (correctness clusters)"}
SPLITS = ("all", "extrapolation")
# adaptive design -> the estimator it is scored with (evalsift.estimate.adaptive: RULES)
ADAPTIVE = {"fisher": "pirt-1d", "active-cs": "aipw"}


def parse_method(spec: str) -> tuple[str, str]:
    """``ESTIMATOR[@DESIGN]`` -> (estimator, design); the design defaults to the estimator's own.
    ``aipw`` with a deterministic design is refused (it has no design-based interval)."""
    est, _, design = spec.partition("@")
    est, design = est.strip(), design.strip()
    if not design and est in ADAPTIVE:  # the bare rule names: fisher, active-cs
        est, design = ADAPTIVE[est], est
    if design in ADAPTIVE:
        est = check_choice("method", est, METHODS)
        if est != ADAPTIVE[design]:
            raise ParameterError(f"method {spec!r}: the adaptive design {design} is scored with {ADAPTIVE[design]} "
                                 f"only (use {ADAPTIVE[design]}@{design})", field="methods")
        return est, design
    est = check_choice("method", est, METHODS)
    design = check_choice("design", design or DEFAULT_DESIGN[est], tuple(DESIGNS) + tuple(ADAPTIVE))
    if est == "aipw" and design not in PROBABILITY_DESIGNS:
        raise ParameterError(f"method {spec!r}: aipw needs a random design ({', '.join(PROBABILITY_DESIGNS)}); "
                             f"{design} picks items deterministically.", field="methods")
    return est, design


def is_adaptive(label: str) -> bool:
    """True for a method whose design is adaptive (``pirt-1d@fisher``, ``aipw@active-cs``)."""
    return label.partition("@")[2] in ADAPTIVE


def method_label(spec: str) -> str:
    """``ESTIMATOR@DESIGN`` with the design made explicit."""
    est, design = parse_method(spec)
    return f"{est}@{design}"


def held_out_cases(R: ResponseMatrix, split: str) -> list[tuple[int, np.ndarray]]:
    """(held-out row, known rows) for every case of ``split`` (module doc)."""
    full = R.full_scores()
    S = len(full)
    if split == "all":
        return [(s, np.array([k for k in range(S) if k != s])) for s in range(S)]
    top = np.argsort(-full, kind="stable")[:max(1, S // 4)]
    return [(int(s), np.flatnonzero(full < full[s])) for s in top]


def run_estimate_bench(R: ResponseMatrix, *, budgets: Sequence[int] = (10, 25, 50, 100, 200),
                       methods: Sequence[str] = DEFAULT_METHODS, seeds: int = 10, alpha: float = 0.1,
                       splits: Sequence[str] = SPLITS, quiet: bool | None = None, jobs: int | str | None = 1,
                       backend: str = "local", ray_address: str | None = None,
                       journal: Any = None) -> dict[str, Any]:
    """Run the protocol (module doc) on ``R``; returns a JSON-ready dict with per-cell ``records``
    and the ``table`` of split x method x budget summaries. Held-out cases are independent tasks:
    ``jobs`` workers (:func:`evalsift.bench.parallel.run_tasks`) give the serial run's numbers.
    ``journal`` (a :class:`~evalsift.bench.parallel.TaskJournal`): cases finished by an earlier run
    are taken from it, and each is added as it finishes."""
    from .parallel import run_tasks

    labels = list(dict.fromkeys(method_label(m) for m in methods))
    parsed = [parse_method(m) for m in labels]
    M = R.n_items
    if any(b < 2 for b in budgets):
        raise ParameterError(f"--budgets {list(budgets)}: each must be at least 2.", field="budgets")
    dropped = [b for b in budgets if b >= M]
    budgets = [b for b in budgets if b < M]
    if not budgets:
        raise ParameterError(f"--budgets {dropped}: each must be below the {M} items of the data.", field="budgets")
    for sp in splits:
        check_choice("split", sp, SPLITS)
    if any(d == "active-cs" for _, d in parsed) and (R.bounds is None or None in R.bounds):
        raise ParameterError(f"aipw@active-cs needs the score's stated range at both ends: its confidence sequence "
                             f"bets on values in a known range; {R.metric} of {R.source} states "
                             f"{'none' if R.bounds is None else tuple(R.bounds)}. Leave active-cs out of --methods "
                             f"(pirt-1d@fisher needs no range).", field="methods")
    if len(R.systems) < 4:  # a held-out case needs 3 known systems (_run_case); with fewer every case is skipped
        raise DataError(f"bench estimate needs at least 4 systems (each held out in turn, with at least 3 known "
                        f"ones); {R.source} has {len(R.systems)} ({', '.join(R.systems)}). Use data with more "
                        f"systems, or judge the new system's items and run 'evalsift estimate'.", field="data")
    cases = [(sp, s, known) for sp in splits for s, known in held_out_cases(R, sp)]
    shared = {"Y": R.Y, "systems": R.systems, "scale": R.scale, "bounds": R.bounds, "budgets": list(budgets),
              "labels": labels,
              "parsed": parsed, "seeds": int(seeds), "alpha": float(alpha)}
    tasks = [(case_no, sp, int(s), [int(k) for k in known]) for case_no, (sp, s, known) in enumerate(cases)]
    with progress_bar(len(tasks), "estimate bench", quiet) as advance:
        outs = run_tasks(_run_case, tasks, shared=shared, jobs=jobs, backend=backend, ray_address=ray_address,
                         advance=advance, journal=journal)
    records = [r for out in outs for r in out["records"]]
    skipped = [out["skipped"] for out in outs if out["skipped"]]
    timing = {k: round(sum(out["timing"][k] for out in outs), 3) for k in ("fit", "select", "estimate", "adaptive")}
    return {"data": R.source, "metric": R.metric, "unit": R.unit, "systems": len(R.systems), "items": M,
            "notes": list(R.notes) + ([f"budgets {dropped} are not below the {M} items and are left out"]
                                      if dropped else []), "budgets": list(budgets),
            "methods": labels, "seeds": seeds, "alpha": alpha,
            "peers": {m: PEERS[m] for m in labels if m in PEERS},
            "adaptive": [m for m in labels if is_adaptive(m)],
            "splits": {sp: [R.systems[s] for s2, s, _ in cases if s2 == sp] for sp in splits},
            "skipped": skipped, "table": summarise(records, labels, budgets, splits), "records": records,
            "timing_s": timing}


def _run_case(shared: dict[str, Any], task: tuple) -> dict[str, Any]:
    """Every budget, seed and method for one held-out case (a worker's task)."""
    case_no, sp, s, known_rows = task
    Y, systems, scale, parsed, labels = shared["Y"], shared["systems"], shared["scale"], shared["parsed"], shared["labels"]
    timing = {"fit": 0.0, "select": 0.0, "estimate": 0.0, "adaptive": 0.0}
    records: list[dict[str, Any]] = []
    if len(known_rows) < 3:
        return {"records": [], "timing": timing,
                "skipped": {"split": sp, "system": systems[s], "why": f"only {len(known_rows)} known systems"}}
    static = [(label, (e, d)) for label, (e, d) in zip(labels, parsed) if d not in ADAPTIVE]
    adaptive = [(label, d) for label, (e, d) in zip(labels, parsed) if d in ADAPTIVE]
    designs = sorted({d for _, (_, d) in static})
    t0 = time.perf_counter()
    known = KnownSystems(Y[known_rows], bounds=shared.get("bounds"))
    if any(e in ("pirt-1d", "gpirt-1d") for _, (e, _) in static) or "irt" in designs or adaptive:
        known.irt
    if any(e == "gpirt-1d" for _, (e, _) in static):
        known.validation()
    if any(e in ("pirt", "gpirt") for _, (e, _) in static) or "anchor-irt" in designs:
        known.tinybench
    timing["fit"] += time.perf_counter() - t0
    truth = float(Y[s].mean())
    for b in shared["budgets"]:
        for seed in range(shared["seeds"]):
            t0 = time.perf_counter()
            draw = seed + 1000 * case_no  # a fresh draw per held-out case: independent errors across systems
            anchors = {d: select_anchors(known.Yk, b, d, seed=draw, irt=known._irt, tinybench=known._tb)
                       for d in designs}
            t1 = time.perf_counter()
            timing["select"] += t1 - t0
            for label, (est, d) in static:
                a = anchors[d]
                e = estimate_score(known, Y[s, a.items], a, est, alpha=shared["alpha"])
                rec = {"split": sp, "system": systems[s], "budget": b, "seed": seed, "method": label,
                       "error": (e.value - truth) * scale, "n": a.n}
                if e.low is not None:
                    rec["covered"] = bool(e.low <= truth <= e.high)
                    rec["width"] = float((e.high - e.low) * scale)
                elif e.details.get("no_interval"):
                    rec["interval"] = "none"
                records.append(rec)
            timing["estimate"] += time.perf_counter() - t1
    if adaptive:
        t0 = time.perf_counter()
        records += _adaptive_records(shared, known, case_no, sp, s, adaptive, truth)
        timing["adaptive"] += time.perf_counter() - t0
    return {"records": records, "timing": timing, "skipped": None}


def _adaptive_records(shared: dict[str, Any], known: KnownSystems, case_no: int, sp: str, s: int,
                      adaptive: list[tuple[str, str]], truth: float) -> list[dict[str, Any]]:
    """The adaptive designs' records for one held-out case: one test per seed (``fisher``: one for
    all seeds, it draws nothing), run to the largest budget and read at every budget."""
    from ..estimate.adaptive import item_parameters, simulate_budgets

    Y, systems, scale, budgets = shared["Y"], shared["systems"], shared["scale"], shared["budgets"]
    irt = item_parameters(known)
    bounds = shared.get("bounds")
    records = []
    for label, rule in adaptive:
        runs = {}
        for seed in range(shared["seeds"]):
            draw = 0 if rule == "fisher" else seed + 1000 * case_no
            if draw not in runs:
                runs[draw] = simulate_budgets(None, Y[s], rule, budgets, seed=draw, irt=irt, alpha=shared["alpha"],
                                              bounds=None if bounds is None else tuple(bounds))
            for b, e in zip(budgets, runs[draw]):
                rec = {"split": sp, "system": systems[s], "budget": b, "seed": seed, "method": label,
                       "error": (e.value - truth) * scale, "n": e.n, "adaptive": True}
                if e.low is not None:
                    rec["covered"] = bool(e.low <= truth <= e.high)
                    rec["width"] = float((e.high - e.low) * scale)
                records.append(rec)  # fisher: no interval, as pirt (model-based): not a 'none' of the table
    return records


def summarise(records: list[dict[str, Any]], methods: Sequence[str], budgets: Sequence[int],
              splits: Sequence[str] = SPLITS) -> list[dict[str, Any]]:
    """One row per split, method and budget: mae, bias, coverage and width (over the estimates with an
    interval), ``none`` (estimates whose method gives intervals but that got none), estimates."""
    rows = []
    by: dict[tuple, list] = {}
    for r in records:
        by.setdefault((r["split"], r["method"], r["budget"]), []).append(r)
    for sp in splits:
        for m in methods:
            for b in budgets:
                rs = by.get((sp, m, b), [])
                if not rs:
                    continue
                err = np.array([r["error"] for r in rs])
                cov = [r["covered"] for r in rs if "covered" in r]
                wid = [r["width"] for r in rs if r.get("width") is not None]
                rows.append({"split": sp, "method": m, "budget": b, "mae": float(np.abs(err).mean()),
                             "bias": float(err.mean()), "coverage": float(np.mean(cov)) if cov else None,
                             "width": float(np.mean(wid)) if wid else None,
                             "none": sum(r.get("interval") == "none" for r in rs), "estimates": len(rs),
                             "peer": PEERS.get(m), "adaptive": is_adaptive(m)})
    return rows


def table_text(res: dict[str, Any]) -> str:
    """The summary table as aligned text, one block per split."""
    lines = []
    level = 1 - res["alpha"]
    for sp in SPLITS:
        rows = [r for r in res["table"] if r["split"] == sp]
        if not rows:
            continue
        n_sys = len(res["splits"].get(sp, []))
        lines.append(f"{sp} ({n_sys} held-out system{'s' if n_sys != 1 else ''} x {res['seeds']} seeds); error in "
                     f"{res['unit']}, coverage of {level:.0%} intervals")
        lines.append(f"  {'method':<26}{'budget':>7}{'MAE':>8}{'bias':>8}{'coverage':>10}{'width':>8}{'none':>6}")
        for r in rows:
            cov = "-" if r["coverage"] is None else f"{r['coverage']:.3f}"
            wid = "-" if r["width"] is None else f"{r['width']:.2f}"
            none = r.get("none") or 0
            peer = "  (peer)" if r["peer"] else "  (adaptive)" if r.get("adaptive") else ""
            lines.append(f"  {r['method']:<26}{r['budget']:>7}{r['mae']:>8.2f}{r['bias']:>+8.2f}{cov:>10}{wid:>8}"
                         f"{none if none else '-':>6}{peer}")
        lines.append("")
    if any(r.get("none") for r in res["table"]):
        lines.append("none: estimates that got no interval (a conformal interval needs enough known systems; a judged "
                     "sample without spread, with no stated range, bounds nothing); they are left out of the coverage "
                     "and width")
    if any(r.get("adaptive") for r in res["table"]):
        lines.append("(adaptive): the next item depends on the answers so far, simulated from the full matrix; "
                     "pirt-1d@fisher (Fluid Benchmarking's rule, scored as pirt-1d) is model-based and gives no interval; "
                     "aipw@active-cs's interval is a confidence sequence, valid at every step")
    return "\n".join(lines)


def estimate_plot(res: dict[str, Any], path) -> Any:
    """MAE and coverage vs budget, one line per method, one column per split; writes a PNG."""
    from ..report.plots import _pyplot, _save

    plt = _pyplot()
    splits = [sp for sp in SPLITS if any(r["split"] == sp for r in res["table"])]
    fig, axes = plt.subplots(2, len(splits), figsize=(5.2 * len(splits), 7), dpi=120, squeeze=False)
    for c, sp in enumerate(splits):
        for m in res["methods"]:
            rows = [r for r in res["table"] if r["split"] == sp and r["method"] == m]
            x = [r["budget"] for r in rows]
            style = "--" if m in PEERS else "-"
            axes[0, c].plot(x, [r["mae"] for r in rows], style, marker="o", ms=3, label=m)
            cov = [(r["budget"], r["coverage"]) for r in rows if r["coverage"] is not None]
            if cov:
                axes[1, c].plot(*zip(*cov), style, marker="o", ms=3, label=m)
        axes[0, c].set_title(f"{sp}", fontsize=9)
        axes[0, c].set_xscale("log")
        axes[0, c].set_ylabel(f"mean absolute error ({res['unit']})")
        axes[1, c].axhline(1 - res["alpha"], color="k", lw=0.8, ls=":")
        axes[1, c].set_xscale("log")
        axes[1, c].set_ylabel("interval coverage")
        axes[1, c].set_xlabel("items judged")
        for ax in axes[:, c]:
            ax.grid(alpha=0.3)
    axes[0, 0].legend(fontsize=7)
    fig.suptitle(f"{res['data']} ({res['metric']}): {res['systems']} systems x {res['items']} items; dashed: peers",
                 fontsize=9)
    return _save(fig, path)
