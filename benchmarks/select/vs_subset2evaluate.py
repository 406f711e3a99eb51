"""evalsift against subset2evaluate (Zouhar et al., TACL 2025) on WMT23 en-de: speed, agreement, protocol.

subset2evaluate is the reference implementation of the informative-subset selectors that
``evalsift.select`` re-implements (metric average / variance / consistency, output diversity, IRT)
and of the paper's evaluation ("needed to match" random selection, by rank correlation and by
statistical cluster count). It is never a dependency of evalsift: this script imports it only if it
is installed (``pip install subset2evaluate``) and otherwise times ours alone and exits 0. Its data
loaders download data, so it is fed our data converted to its item format (:func:`to_s2e`).

One run measures:

1. **Selection time**, 1000 items x 12 systems (WMT23 en-de's 460 MQM-complete segments resampled
   with replacement to 1000, new ids, text and MetricX-23-refA / MQM kept): per method, evalsift's
   ``make_selector(name, ...).fit(pool)`` plus the full ordering against subset2evaluate's
   ``select_subset.basic(data, method=...)`` on the same items; best of up to 3 runs (fewer when a
   run is slow); ratio = theirs / ours. IRT is timed for ours only: their ``pyirt_*`` methods need
   py-irt from git and a CUDA device, so there is nothing comparable here.
2. **Agreement** of the utilities on the 460 items (Spearman and Kendall of the two utility
   vectors, identical orderings, identical top 10%), with the diagnostics that explain each gap.
3. **Needed to match** (the paper's Eq. 11) on the 460 items, human = MQM, metric = MetricX-23-refA:
   - their code as shipped: ``precompute_clucor_randnorm`` + ``eval_clucor_par_randnorm`` (whole pool,
     random targets from seeds 0..R-1, normaliser from seeds R..2R-1, first-crossing k-loop from
     5 items, their cluster chaining, scipy's default Wilcoxon); each step runs in a child process
     and is stopped past ``--s2e-cap`` seconds (the random normalisation gets R times that);
     Kendall (its default) with clusters, and Spearman via its ``correlation=`` parameter;
   - a ladder that re-implements their protocol with evalsift's statistics and then changes one
     protocol choice at a time (Wilcoxon mode, identical-systems rule, chaining rule, crossing
     rule, whose orderings), so the size of each effect can be read off;
   - ours: ``evalsift.bench.subset.subset_bench`` with Spearman and Kendall, on the whole pool and
     with its default 80% subsample x 10 seeds.

   The ladder's first step (L0) reproduces their clusters and Kendall numbers exactly. Their Spearman
   numbers only up to float ties: rho over 12 systems takes values k/286, so prefix curves often
   equal a target in exact arithmetic, and scipy's spearmanr and evalsift's spearman_rows round
   such values 1-2 ulp apart, which decides the ``>=`` of the first-crossing test.

Run (about 45 minutes with their evaluation, which spends most of it in scipy's permutation
Wilcoxon test for prefixes of at most 13 items; about 3 minutes with ``--skip-s2e-eval``)::

    pip install subset2evaluate          # optional; check first that it keeps your torch
    python benchmarks/select/vs_subset2evaluate.py [--out bench-out/vs_subset2evaluate.json]
        [--s2e-cap 300] [--s2e-random-seeds 10] [--skip-s2e-eval]

Data: ``$EVALSIFT_DATA/wmt23/mt-metrics-eval-v2/wmt23/en-de`` (default ``../shared/data``). Progress bars
are off (``EVALSIFT_QUIET=1``) so that they are not timed.
"""

from __future__ import annotations

import argparse
import functools
import importlib.util
import json
import multiprocessing as mp
import os
import sys
import time
from pathlib import Path
from typing import Any, Callable

import numpy as np

REPO = Path(__file__).resolve().parents[2]
if importlib.util.find_spec("evalsift") is None:
    sys.path.insert(0, str(REPO / "src"))

from evalsift.io import load  # noqa: E402
from evalsift.pool import Pool  # noqa: E402
from evalsift.select import make_selector  # noqa: E402
from evalsift.select.utility import utilities_of  # noqa: E402
from evalsift.bench.subset import subset_bench  # noqa: E402
from evalsift.stats import (kendall_tau_b, kendall_tau_b_rows, needed_to_match, prefix_cluster_counts,  # noqa: E402
                            signed_rank_p_values, spearman, spearman_rows, standard_error)

HUMAN, METRIC = "mqm", "MetricX-23-refA"
WMT = "wmt23/mt-metrics-eval-v2/wmt23/en-de"
INSTALL_HINT = "pip install subset2evaluate   (check with --dry-run that it keeps your torch)"

# label: (evalsift selector, its parameters, subset2evaluate select_subset.basic kwargs or None).
# subset2evaluate 1.0.x names: "metric_cons" (older releases: metric_align / pointwise alignment) and
# "diversity" with metric = unigram | bleu | chrf (older releases: diversity_unigram, diversity_bleu, ...).
METHODS: dict[str, tuple[str, dict, dict | None]] = {
    "random": ("random", {}, {"method": "random", "seed": 0}),
    "metric_avg": ("metric_avg", {"metric": METRIC}, {"method": "metric_avg", "metric": METRIC}),
    "metric_var": ("metric_var", {"metric": METRIC}, {"method": "metric_var", "metric": METRIC}),
    "metric_cons": ("metric_cons", {"metric": METRIC}, {"method": "metric_cons", "metric": METRIC}),
    "diversity_unigram": ("diversity", {"kind": "unigram"}, {"method": "diversity", "metric": "unigram"}),
    "diversity_bleu": ("diversity_bleu", {}, {"method": "diversity", "metric": "bleu"}),
    "diversity_chrf": ("diversity_chrf", {}, {"method": "diversity", "metric": "chrf"}),
    "irt_diffdisc": ("irt_diffdisc", {"metric": METRIC}, None),
}
NTM_METHODS = ("metric_var", "metric_avg", "metric_cons", "diversity_bleu", "diversity_unigram")
NOT_COMPARABLE = {"irt_diffdisc": "s2e pyirt_diffdisc needs py-irt from git and CUDA (trainer.train(device='cuda')): ours only"}
FIRST_K = 5  # both packages start prefix curves at 5 items
ALPHA = 0.05


def say(*args: Any) -> None:
    print(*args, flush=True)


# ------------------------------------------------------------------------------------------------
# Data: evalsift Pools and their subset2evaluate form
# ------------------------------------------------------------------------------------------------

def load_wmt() -> Pool:
    """WMT23 en-de, the 460 items scored by MQM for all 12 systems, with MQM and MetricX-23-refA only."""
    root = Path(os.environ.get("EVALSIFT_DATA") or REPO.parent / "shared" / "data")
    path = root / WMT
    if not (path.parent / "system-outputs" / path.name).is_dir():
        sys.exit(f"WMT23 en-de not found at {path}; set EVALSIFT_DATA to the folder that holds wmt23/")
    return rebuild(load(str(path)).complete(HUMAN), None, "WMT23 en-de (MQM-complete)")


def rebuild(pool: Pool, idx: np.ndarray | None, name: str) -> Pool:
    """The pool's rows ``idx`` (repeats allowed) under new ids 0..n-1, keeping text, MQM and the metric."""
    idx = np.arange(pool.n_items) if idx is None else np.asarray(idx)
    return Pool(item_ids=range(len(idx)), inputs=[pool.inputs[i] for i in idx], systems=pool.systems,
                outputs={s: [pool.outputs[s][i] for i in idx] for s in pool.systems},
                scores={m: pool.score(m)[idx] for m in (HUMAN, METRIC)}, human_metrics=[HUMAN], name=name)


def resample(pool: Pool, n: int, seed: int = 0) -> Pool:
    idx = np.random.default_rng(seed).integers(pool.n_items, size=n)
    return rebuild(pool, idx, f"{pool.name}, resampled with replacement to {n}")


def to_s2e(pool: Pool, metrics=(HUMAN, METRIC)) -> list[dict]:
    """A complete Pool as subset2evaluate items ``{"i", "src", "tgt": {system: text}, "scores":
    {system: {metric: value}}}``; ``i`` is the pool position, so their orderings map back to ours."""
    mats = {m: pool.score(m) for m in metrics}
    if any(np.isnan(a).any() for a in mats.values()):
        raise ValueError("to_s2e needs complete scores (subset2evaluate has no NaN handling): use pool.complete(metric)")
    return [{"i": i, "src": pool.inputs[i], "tgt": {s: pool.outputs[s][i] for s in pool.systems},
             "scores": {s: {m: float(mats[m][i, j]) for m in metrics} for j, s in enumerate(pool.systems)}}
            for i in range(pool.n_items)]


def s2e_select(data: list[dict], kwargs: dict) -> tuple[np.ndarray, np.ndarray]:
    """Their ordering (pool positions, best first) and utilities (pool order)."""
    from subset2evaluate import select_subset

    out = select_subset.basic([dict(x) for x in data], **kwargs)  # basic() writes its utility into each item
    order = np.array([x["i"] for x in out])
    util = np.empty(len(out))
    util[order] = [x["subset2evaluate_utility"] for x in out]
    return order, util


def ours_select(pool: Pool, label: str):
    name, params, _ = METHODS[label]
    return make_selector(name, **params).fit(pool)


# ------------------------------------------------------------------------------------------------
# 1. Selection time
# ------------------------------------------------------------------------------------------------

def best_of(fn: Callable[[], Any], repeats: int = 3, budget_s: float = 20.0) -> tuple[float, int]:
    """Fastest of up to ``repeats`` runs; stops repeating once the runs took ``budget_s`` together."""
    times: list[float] = []
    while len(times) < repeats and sum(times) < budget_s:
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return min(times), len(times)


def selection_times(pool: Pool, have_s2e: bool) -> dict[str, dict]:
    data = to_s2e(pool) if have_s2e else None
    rows = {}
    for label, (name, params, s2e_kw) in METHODS.items():
        ours_s, ours_runs = best_of(lambda: make_selector(name, **params).fit(pool).select(pool.n_items))
        row = {"ours_s": ours_s, "ours_runs": ours_runs}
        if have_s2e and s2e_kw is not None:
            from subset2evaluate import select_subset

            copies = [[dict(x) for x in data] for _ in range(3)]  # fresh item dicts per run, made outside the timing
            theirs_s, theirs_runs = best_of(lambda: select_subset.basic(copies.pop(), **s2e_kw))
            row.update(theirs_s=theirs_s, theirs_runs=theirs_runs, ratio=theirs_s / ours_s)
        elif label in NOT_COMPARABLE:
            row["note"] = NOT_COMPARABLE[label]
        rows[label] = row
        say(f"  {label:<18} ours {ours_s:9.4f} s" + (f"   theirs {row['theirs_s']:9.4f} s   x{row['ratio']:.0f}"
                                                      if "ratio" in row else f"   {row.get('note', '')}"))
    return rows


# ------------------------------------------------------------------------------------------------
# 2. Agreement of the utilities
# ------------------------------------------------------------------------------------------------

def agreement(pool: Pool, data: list[dict]) -> dict[str, dict]:
    n, top = pool.n_items, pool.n_items // 10
    rows = {}
    for label, (_, _, s2e_kw) in METHODS.items():
        if s2e_kw is None:
            continue
        sel = ours_select(pool, label)
        u_ours, o_ours = utilities_of(sel), sel.select(n).items
        o_theirs, u_theirs = s2e_select(data, s2e_kw)
        diff = np.flatnonzero(o_ours != o_theirs)
        row = {
            "spearman": spearman(u_ours, u_theirs), "kendall": kendall_tau_b(u_ours, u_theirs),
            "same_order": bool(diff.size == 0), "first_difference_at": int(diff[0]) if diff.size else None,
            f"top{top}_overlap": len(set(o_ours[:top]) & set(o_theirs[:top])),
            f"top{top}_same_set": set(o_ours[:top]) == set(o_theirs[:top]),
            "distinct_utilities_ours": int(np.unique(u_ours).size), "distinct_utilities_theirs": int(np.unique(u_theirs).size),
        }
        row.update(_explain(label, pool, u_ours, u_theirs))
        rows[label] = row
    return rows


def _explain(label: str, pool: Pool, u_ours: np.ndarray, u_theirs: np.ndarray) -> dict[str, Any]:
    """The measured reason for a gap between the two utility vectors."""
    k = pool.n_systems
    if label in ("metric_avg", "metric_var"):
        return {"max_abs_utility_difference": float(np.max(np.abs(u_ours - u_theirs))),
                "why": "same formula (-mean, population variance) on the same numbers; MetricX is stored negated "
                       "(higher = better) in both, so metric_avg puts the hardest items first in both"}
    if label in ("diversity_bleu", "diversity_chrf"):
        # theirs: mean over all k^2 ordered pairs incl. k self-pairs scoring 100; ours: the k(k-1) distinct ones
        predicted = -(k * 100.0 + k * (k - 1) * (-u_ours)) / k**2
        return {"max_abs_difference_after_self_pair_correction": float(np.max(np.abs(predicted - u_theirs))),
                "why": f"theirs averages all {k * k} ordered pairs including {k} self-pairs (100 each); ours the "
                       f"{k * (k - 1)} distinct ones: theirs = -(100 k + k(k-1) sim_ours) / k^2, an increasing affine map "
                       "with the same k on every item here, so the orderings agree up to float ties"}
    if label == "diversity_unigram":
        return {"items_with_different_similarity": int(np.sum(~np.isclose(u_ours, u_theirs, rtol=0, atol=1e-12))),
                "why": "tokenisation: theirs splits on whitespace, case-sensitive, punctuation glued to words; ours "
                       "lower-cases and keeps letter/digit runs (rouge-score style); same Dice over token multisets"}
    if label == "metric_cons":
        return {"why": "theirs: Kendall tau-c between the item's system scores and the systems' pool means; ours: "
                       "Spearman. Both coarse (12 systems), so many ties, broken by item position in both"}
    return {"why": "different generators (Python random.Random(seed).random() vs numpy permutation): not comparable"}


# ------------------------------------------------------------------------------------------------
# 3a. subset2evaluate's own evaluation, each step in a child process with a time cap
# ------------------------------------------------------------------------------------------------

def run_capped(fn: Callable[[], Any], cap_s: float) -> tuple[str, Any, float]:
    """``fn()`` in a forked child: ('ok', result, s), ('timeout', None, s) or ('error', message, s)."""
    ctx = mp.get_context("fork")
    recv, send = ctx.Pipe(duplex=False)

    def child() -> None:
        try:
            send.send(("ok", fn()))
        except BaseException as e:  # noqa: BLE001 - reported to the parent
            send.send(("error", repr(e)))

    proc = ctx.Process(target=child, daemon=True)
    t = time.perf_counter()
    proc.start()
    send.close()
    try:
        status, out = recv.recv() if recv.poll(cap_s) else ("timeout", None)
    except EOFError:
        status, out = "error", f"child exited with code {proc.exitcode}"
    if status == "timeout":
        proc.terminate()
    proc.join()
    return status, out, time.perf_counter() - t


def s2e_evaluation(data: list[dict], orderings: dict[str, np.ndarray], seeds: int, cap_s: float) -> dict[str, Any]:
    """Their ``eval_clucor_par_randnorm`` per method (Kendall, clusters), then Spearman (correlation only)."""
    from subset2evaluate import evaluate as ev

    by_i = {x["i"]: x for x in data}
    ordered = {m: [by_i[int(i)] for i in o] for m, o in orderings.items()}
    out: dict[str, Any] = {"random_seeds": seeds, "cap_s": cap_s, "methods": {}}
    status, pre, secs = run_capped(lambda: ev.precompute_clucor_randnorm(data, random_seeds=seeds, metric=HUMAN),
                                   cap_s * seeds)
    out["precompute"] = {"status": status, "seconds": secs}
    say(f"  their random normalisation ({seeds} + {seeds} random orderings): {status}, {secs:.0f} s")
    if status != "ok":
        out["precompute"]["error"] = pre
        return out
    (clu_t, cor_t), (clu_norm, cor_norm) = pre
    out["precompute"].update(targets_clusters=list(map(float, clu_t)), targets_kendall=list(map(float, cor_t)),
                             norm_clusters=float(clu_norm), norm_kendall=float(cor_norm))
    for m, items in ordered.items():
        status, res, secs = run_capped(
            lambda: ev.eval_clucor_par_randnorm(items, data, metric=HUMAN, clucor_precomputed=pre), cap_s)
        row = {"status": status, "seconds": secs}
        if status == "ok":
            row.update(clusters=float(res[0]), kendall=float(res[1]))
        else:
            row["error"] = res
        out["methods"][m] = row
        say(f"  their eval {m:<18} {status}, {secs:6.1f} s" +
            (f"   clusters {row['clusters']:.3f}  kendall {row['kendall']:.3f}" if status == "ok" else ""))
        if status == "timeout":
            say(f"  stopped: one method took more than {cap_s:.0f} s; the rest of their evaluation is skipped")
            out["stopped"] = f"{m} exceeded {cap_s:.0f} s"
            return out
    status, res, secs = run_capped(lambda: _s2e_spearman_only(data, ordered, seeds), cap_s * seeds)
    out["spearman"] = {"status": status, "seconds": secs}
    if status == "ok":
        out["spearman"].update(res)
    say(f"  their eval, Spearman (correlation only): {status}, {secs:.0f} s")
    return out


def _s2e_spearman_only(data, ordered, seeds) -> dict[str, Any]:
    """In the child only: their correlation with correlation='spearman'; clusters stubbed out (not reported)."""
    from subset2evaluate import evaluate as ev

    ev.eval_subset_correlation = functools.partial(ev.eval_subset_correlation, correlation="spearman")
    ev.eval_subset_clusters = lambda data, metric="human": 0
    pre = ev.precompute_clucor_randnorm(data, random_seeds=seeds, metric=HUMAN)
    return {"targets": list(map(float, pre[0][1])), "norm": float(pre[1][1]),
            "methods": {m: float(ev.eval_clucor_par_randnorm(items, data, metric=HUMAN, clucor_precomputed=pre)[1])
                        for m, items in ordered.items()}}


# ------------------------------------------------------------------------------------------------
# 3b. Their protocol re-implemented with evalsift.stats, one choice changed at a time
# ------------------------------------------------------------------------------------------------

def s2e_prefix_means(G: np.ndarray, k: int) -> np.ndarray:
    """(c, n_sys) means of the first k rows, summed like their np.average over one system's list
    (contiguous, pairwise summation), so exactly tied means stay tied the same way."""
    return np.ascontiguousarray(G[:, :k, :].transpose(0, 2, 1)).mean(axis=2)


def _permutation_p_less(d: np.ndarray) -> float:
    """scipy's wilcoxon(d, alternative='less') for n <= 13 with ties or zeros: an exact sign-flip
    permutation test of R+ (zeros dropped from the statistic), p = share of flips with R+ <= observed."""
    from scipy.stats import rankdata

    nz = d != 0
    ranks = rankdata(np.abs(d[nz]))
    obs = ranks[d[nz] > 0].sum()
    n = d.size
    flips = ((np.arange(2**n)[:, None] >> np.arange(n)) & 1).astype(bool)[:, nz]
    null = ((d[nz] > 0) ^ flips) @ ranks
    return float(np.mean(null <= obs + abs(obs) * np.finfo(float).eps * 100))


def _scipy_auto_p(d: np.ndarray, p_asymptotic: float) -> float:
    """scipy 1.17's wilcoxon(method='auto') for one row of n <= 50 differences (not all zero)."""
    from scipy.stats import wilcoxon

    nz = d != 0
    if nz.all() and np.unique(np.abs(d)).size == d.size:
        return float(wilcoxon(d, alternative="less", method="exact").pvalue)
    if d.size <= 13:
        return _permutation_p_less(d)
    return p_asymptotic


def s2e_rule_cluster_counts(H: np.ndarray, orders: np.ndarray, sizes: np.ndarray, *, wilcoxon: str = "auto",
                            identical: str = "new", chain: str = "previous") -> np.ndarray:
    """Cluster counts of every prefix (c orders x sizes) under subset2evaluate's rules, or a variant.

    wilcoxon: 'auto' (scipy's default: exact without ties/zeros, permutation for n <= 13, else
    normal approximation) or 'asymptotic'; identical: 'new' (all-zero differences open a new
    cluster, as theirs) or 'together'; chain: 'previous' (theirs) or 'top' (evalsift's default).
    """
    G = np.take(H, orders[:, : sizes.max()], axis=0)  # (c, m, n_sys)
    c, _, n_sys = G.shape
    rows = np.arange(c)
    counts = np.empty((c, sizes.size), dtype=np.int64)
    for col, k in enumerate(sizes):
        X = G[:, :k, :]
        order = np.argsort(-s2e_prefix_means(G, k), axis=1, kind="stable")
        ref, count = order[:, 0], np.ones(c, dtype=np.int64)
        for step in range(1, n_sys):
            nxt = order[:, step]
            d = X[rows, :, nxt] - X[rows, :, ref]  # (c, k): next minus reference
            p = signed_rank_p_values(d, "less", method="approx")  # their ladder: scipy asymptotic
            zero = ~d.any(axis=1)
            if wilcoxon == "auto" and k <= 50:
                p = np.array([pi if z else _scipy_auto_p(di, pi) for di, pi, z in zip(d, p, zero)])
            new = np.where(zero, identical == "new", p < ALPHA)
            count += new
            ref = np.where(new | (chain == "previous"), nxt, ref)
        counts[:, col] = count
    return counts


def s2e_rule_correlation(H: np.ndarray, orders: np.ndarray, sizes: np.ndarray, kind: str) -> np.ndarray:
    """Rank correlation of prefix means with the whole pool's means (constant prefix -> 0, as theirs)."""
    G = np.take(H, orders[:, : sizes.max()], axis=0)
    ref = np.ascontiguousarray(H.T).mean(axis=1)
    rows_fn = kendall_tau_b_rows if kind == "kendall" else spearman_rows
    out = np.stack([rows_fn(s2e_prefix_means(G, k), ref) for k in sizes], axis=1)
    return np.where(np.isnan(out), 0.0, out)


def s2e_protocol(curves: dict[str, np.ndarray], random_curves: np.ndarray, seeds: int, n: int,
                 props: np.ndarray, rule: str = "first") -> dict[str, dict]:
    """Their randnorm protocol on precomputed curves (grid k = 5..n).

    Targets: mean of random orderings 0..R-1 at k = int(n p); normaliser: mean needed-to-match of
    orderings R..2R-1; ``random`` (a method): orderings 2R..3R-1 (mean and standard error)."""
    grid = np.arange(FIRST_K, n + 1) / n
    at = np.array([int(n * p) for p in props]) - FIRST_K
    targets = random_curves[:seeds, at].mean(axis=0)

    def ntm(curve: np.ndarray) -> float:
        return needed_to_match(grid, curve, props, targets, rule=rule).value

    norm = np.mean([ntm(c) for c in random_curves[seeds: 2 * seeds]])
    out = {m: {"value": ntm(c) / norm, "raw": ntm(c)} for m, c in curves.items()}
    rnd = [ntm(c) / norm for c in random_curves[2 * seeds: 3 * seeds]]
    out["random"] = {"value": float(np.mean(rnd)), "se": standard_error(rnd)}
    out["_norm"], out["_targets"] = float(norm), targets.tolist()
    return out


def ladder(pool: Pool, data: list[dict], seeds: int) -> dict[str, Any]:
    """Their protocol with evalsift.stats (L0), then one change at a time (L1..L5)."""
    from subset2evaluate import select_subset

    H, n = pool.score(HUMAN), pool.n_items
    from subset2evaluate.utils import PROPS
    props = np.asarray(PROPS, dtype=float)
    sizes = np.arange(FIRST_K, n + 1)
    rand = np.stack([np.array([x["i"] for x in select_subset.basic([dict(x) for x in data], method="random", seed=s)])
                     for s in range(3 * seeds)])
    theirs = {m: s2e_select(data, METHODS[m][2])[0] for m in NTM_METHODS}
    ours = {m: ours_select(pool, m).select(n).items for m in NTM_METHODS}
    t0 = time.perf_counter()
    all_orders = np.vstack([rand, np.stack(list(theirs.values())), np.stack(list(ours.values()))])
    r, m = len(rand), len(NTM_METHODS)

    def split(curves: np.ndarray) -> tuple[np.ndarray, dict, dict]:
        return curves[:r], dict(zip(theirs, curves[r: r + m])), dict(zip(ours, curves[r + m:]))

    clusters = {
        "L0": s2e_rule_cluster_counts(H, all_orders, sizes, wilcoxon="auto", identical="new", chain="previous"),
        "L1": s2e_rule_cluster_counts(H, all_orders, sizes, wilcoxon="asymptotic", identical="new", chain="previous"),
        "L2": s2e_rule_cluster_counts(H, all_orders, sizes, wilcoxon="asymptotic", identical="together", chain="previous"),
        "L3": s2e_rule_cluster_counts(H, all_orders, sizes, wilcoxon="asymptotic", identical="together", chain="top"),
    }
    corr = {kind: s2e_rule_correlation(H, all_orders, sizes, kind) for kind in ("kendall", "spearman")}
    seconds = time.perf_counter() - t0
    cells = clusters["L0"].size
    changed = {f"{a}->{b}": int(np.sum(clusters[a] != clusters[b])) for a, b in (("L0", "L1"), ("L1", "L2"), ("L2", "L3"))}
    # our vectorised prefix_cluster_counts must give L2 (chain previous) and L3 (chain top)
    check = {f"{lv}_vs_prefix_cluster_counts_cells_differing": int(np.sum(
        prefix_cluster_counts(H, all_orders, sizes, chain=ch, test="approx") != clusters[lv])) for lv, ch in (("L2", "previous"), ("L3", "top"))}

    steps = {
        "L0": ("their rules (scipy auto Wilcoxon, identical -> new cluster, chain previous, first crossing), "
               "their orderings", "L0", "theirs", "first"),
        "L1": ("L0 with the normal-approximation Wilcoxon throughout", "L1", "theirs", "first"),
        "L2": ("L1 with identical systems kept together", "L2", "theirs", "first"),
        "L3": ("L2 with chain top (evalsift's default)", "L3", "theirs", "first"),
        "L4": ("L3 with the 'stays' rule", "L3", "theirs", "stays"),
        "L5": ("L3 with evalsift's orderings", "L3", "ours", "first"),
    }
    out: dict[str, Any] = {"seconds": seconds, "orderings": int(len(all_orders)), "prefix_cells": cells,
                           "cells_changed_by_step": changed, **check, "steps": {}}
    for name, (desc, lv, whose, rule) in steps.items():
        row: dict[str, Any] = {"description": desc}
        for stat, curves in (("clusters", clusters[lv]), ("kendall", corr["kendall"]), ("spearman", corr["spearman"])):
            rc, th, ou = split(curves)
            row[stat] = s2e_protocol(th if whose == "theirs" else ou, rc, seeds, n, props, rule)
        out["steps"][name] = row
    return out


# ------------------------------------------------------------------------------------------------
# 3c. Ours: subset_bench
# ------------------------------------------------------------------------------------------------

def ours_bench(pool: Pool) -> dict[str, Any]:
    names = {m: METHODS[m][0] for m in NTM_METHODS}
    runs = {}
    for subsample in (1.0, 0.8):
        for kind in ("spearman", "kendall"):
            t = time.perf_counter()
            # metric_var etc. take metric=; diversity takes kind= (unigram is its default)
            res = subset_bench(pool, HUMAN, ["random", *names.values()], metric=METRIC, correlation=kind,
                               subsample=subsample, quiet=True)
            secs = time.perf_counter() - t
            key = f"{kind}_{'whole' if subsample == 1.0 else '80pct'}"
            runs[key] = {"seconds": secs, "timing_s": res["timing_s"], "subsample": subsample, "seeds": res["seeds"],
                         "needed_to_match": {m: res["needed_to_match"][names[m]] for m in NTM_METHODS},
                         "needed_to_match_stays": {m: res["needed_to_match_stays"][names[m]] for m in NTM_METHODS},
                         "random": res["needed_to_match"]["random"], "censored_targets": res["censored_targets"]}
            say(f"  ours subset_bench {key:<17} {secs:5.1f} s")
    return runs


# ------------------------------------------------------------------------------------------------
# Tables
# ------------------------------------------------------------------------------------------------

def table(title: str, header: list[str], rows: list[list[Any]]) -> str:
    cells = [[f"{c:.3f}" if isinstance(c, float) else ("-" if c is None else str(c)) for c in r] for r in rows]
    widths = [max(len(h), *(len(r[i]) for r in cells)) for i, h in enumerate(header)]
    line = lambda r: "  ".join(c.rjust(w) if i else c.ljust(w) for i, (c, w) in enumerate(zip(r, widths)))  # noqa: E731
    return "\n".join([title, line(header), line(["-" * w for w in widths]), *map(line, cells)])


def print_tables(res: dict[str, Any]) -> None:
    t = res["selection_time"]
    ms = lambda s: None if s is None else f"{1000 * s:.4g}"  # noqa: E731
    say("\n" + table(f"1. Selection time, {res['timing_pool_items']} items x {res['n_systems']} systems "
                     "(milliseconds, best of runs; ratio = theirs / ours)",
                     ["method", "ours ms", "runs", "theirs ms", "runs", "theirs/ours"],
                     [[m, ms(r["ours_s"]), r["ours_runs"], ms(r.get("theirs_s")), r.get("theirs_runs"),
                       None if "ratio" not in r else f"{r['ratio']:.0f}x"] for m, r in t.items()]))
    if "agreement" not in res:
        return
    a = res["agreement"]
    top = next(k for k in next(iter(a.values())) if k.endswith("_overlap"))
    say("\n" + table(f"2. Agreement of utilities, 460 items (top = first {top[3:-8]} items)",
                     ["method", "spearman", "kendall", "same order", "1st diff at", "top overlap", "same top set"],
                     [[m, r["spearman"], r["kendall"], r["same_order"], r["first_difference_at"], r[top],
                       r[top.replace("overlap", "same_set")]] for m, r in a.items()]))
    if "needed_to_match" not in res:
        return
    ntm = res["needed_to_match"]
    lad, ours, s2e = ntm.get("ladder", {}).get("steps", {}), ntm.get("ours", {}), ntm.get("s2e_code", {})
    for stat, s2e_key in (("clusters", "clusters"), ("kendall", "kendall"), ("spearman", None)):
        header = ["method", "s2e code", *lad]
        ours_cols = [k for k in ours if k.startswith(stat)] if stat != "clusters" else ["kendall_whole", "kendall_80pct"]
        header += [f"ours {k.split('_')[1]}" for k in ours_cols] + [f"ours {k.split('_')[1]} stays" for k in ours_cols]
        rows = []
        for m in (*NTM_METHODS, "random"):
            if s2e_key:
                theirs = s2e.get("methods", {}).get(m, {}).get(s2e_key)
            else:
                theirs = s2e.get("spearman", {}).get("methods", {}).get(m)
            if m == "random":
                theirs = None  # their code never evaluates random as a method
            ostat = "clusters" if stat == "clusters" else "correlation"
            row = [m, theirs, *[lad[s][stat][m]["value"] for s in lad]]
            if m == "random":
                row += [1.0] * (2 * len(ours_cols))
            else:
                row += [ours[k]["needed_to_match"][m][ostat] for k in ours_cols]
                row += [ours[k]["needed_to_match_stays"][m][ostat] for k in ours_cols]
            rows.append(row)
        say("\n" + table(f"3. Needed to match ({stat}; normalised, random = 1; lower = better)", header, rows))
    if lad:
        say("\nLadder steps: " + "; ".join(f"{k}: {v['description']}" for k, v in lad.items()))
    summary = res.get("summary", {})
    if summary.get("effects"):
        say("\n" + table("Effect of each protocol change: mean over methods of (after - before), and mean |after - before|",
                         ["change", "stat", "mean delta", "mean |delta|", "max |delta|"],
                         [[e["change"], e["stat"], e["mean"], e["mean_abs"], e["max_abs"]] for e in summary["effects"]]))
    if lad:
        lr = res["needed_to_match"]["ladder"]
        say(f"\nPrefix cells (orderings x sizes) whose cluster count a step changes, of {lr['prefix_cells']}: "
            f"{lr['cells_changed_by_step']}; L2 / L3 against evalsift's prefix_cluster_counts (cells differing): "
            f"{lr['L2_vs_prefix_cluster_counts_cells_differing']} / {lr['L3_vs_prefix_cluster_counts_cells_differing']}")
    if summary.get("time"):
        say("\nEvaluation time: " + json.dumps(summary["time"]))


def _column(res: dict[str, Any], col: str, stat: str) -> dict[str, float] | None:
    """One column of the needed-to-match tables as {method: value}: 's2e', a ladder step or an ours run."""
    ntm = res.get("needed_to_match", {})
    if col == "s2e":
        s2e = ntm.get("s2e_code", {})
        vals = ({m: r.get(stat) for m, r in s2e.get("methods", {}).items()} if stat != "spearman"
                else s2e.get("spearman", {}).get("methods", {}))
    elif col.startswith("L"):
        vals = {m: ntm["ladder"]["steps"][col][stat][m]["value"] for m in NTM_METHODS}
    else:
        run = ntm.get("ours", {}).get(f"{'kendall' if stat == 'clusters' else stat}_{col}")
        vals = run and {m: run["needed_to_match"][m]["clusters" if stat == "clusters" else "correlation"] for m in NTM_METHODS}
    vals = {m: v for m, v in (vals or {}).items() if v is not None}
    return vals if len(vals) == len(NTM_METHODS) else None


CHANGES = [("s2e", "L0", "replica check (must be 0)", "their code -> its re-implementation with evalsift.stats"),
           ("L0", "L1", "Wilcoxon mode", "scipy auto (exact / permutation for small n) -> normal approximation"),
           ("L1", "L2", "identical-systems rule", "all-zero differences: new cluster -> kept together"),
           ("L2", "L3", "chain previous -> top", "reference: system just above -> best of the current cluster"),
           ("L3", "L4", "first crossing -> stays", "needed-to-match rule"),
           ("L3", "L5", "orderings s2e -> ours", "subset2evaluate's selectors -> evalsift's"),
           ("L5", "whole", "random normalisation", "their R + R random orderings -> ours (10 seeds x 10 target "
                                                   "orderings each, normalised by random-as-a-method over the seeds)"),
           ("whole", "80pct", "subsampling", "whole pool -> 80% subsample x 10 seeds")]


def summarise(res: dict[str, Any]) -> dict[str, Any]:
    effects = []
    for a, b, short, what in CHANGES:
        for stat in ("clusters", "kendall", "spearman"):
            x, y = _column(res, a, stat), _column(res, b, stat)
            if x is None or y is None:
                continue
            if a.startswith("L") and b.startswith("L") and stat != "clusters" and b in ("L1", "L2", "L3"):
                continue  # cluster-rule steps leave the correlation curves unchanged
            d = np.array([y[m] - x[m] for m in NTM_METHODS])
            effects.append({"change": f"{a} -> {b}: {short}", "description": what, "from": a, "to": b,
                            "stat": stat, "mean": float(d.mean()),
                            "mean_abs": float(np.abs(d).mean()), "max_abs": float(np.abs(d).max())})
    ntm = res.get("needed_to_match", {})
    time_s: dict[str, Any] = {}
    s2e = ntm.get("s2e_code", {})
    if s2e.get("methods"):
        per = [r["seconds"] for r in s2e["methods"].values() if r["status"] == "ok"]
        time_s["s2e_precompute_s"] = round(s2e["precompute"]["seconds"], 1)
        time_s["s2e_per_method_s"] = {m: round(r["seconds"], 1) for m, r in s2e["methods"].items()}
        time_s["s2e_total_s"] = round(s2e["precompute"]["seconds"] + sum(per) + s2e.get("spearman", {}).get("seconds", 0), 1)
        ours = ntm.get("ours", {})
        ours_total = sum(r["seconds"] for k, r in ours.items() if k.endswith("80pct"))
        time_s["ours_subset_bench_s"] = {k: round(r["seconds"], 1) for k, r in ours.items()}
        time_s["ratio_s2e_total_to_ours_80pct_kendall_plus_spearman"] = round(time_s["s2e_total_s"] / ours_total, 1)
        time_s["ladder_s"] = round(ntm["ladder"]["seconds"], 1)
        time_s["ratio_s2e_total_to_ladder"] = round(time_s["s2e_total_s"] / ntm["ladder"]["seconds"], 1)
    return {"effects": effects, "time": time_s}


# ------------------------------------------------------------------------------------------------

def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default="bench-out/vs_subset2evaluate.json")
    ap.add_argument("--items", type=int, default=1000, help="items of the timing pool (resampled)")
    ap.add_argument("--s2e-cap", type=float, default=300.0, help="seconds one method may take in their evaluation")
    ap.add_argument("--s2e-random-seeds", type=int, default=10, help="their random_seeds (targets and normaliser)")
    ap.add_argument("--skip-s2e-eval", action="store_true", help="skip their (slow) evaluation code; keep the rest")
    args = ap.parse_args(argv)
    os.environ["EVALSIFT_QUIET"] = "1"  # no progress bars: they would be timed too

    have_s2e = importlib.util.find_spec("subset2evaluate") is not None
    pool = load_wmt()
    big = resample(pool, args.items)
    res: dict[str, Any] = {"data": pool.name, "human": HUMAN, "metric": METRIC, "n_items": pool.n_items,
                           "n_systems": pool.n_systems, "timing_pool_items": big.n_items}
    if have_s2e:
        from importlib.metadata import version
        import scipy

        res["versions"] = {"subset2evaluate": version("subset2evaluate"), "scipy": scipy.__version__}
    else:
        say(f"subset2evaluate is not installed: timing ours only. To compare, install it:\n  {INSTALL_HINT}")
    say(f"1. selection time on {big.n_items} items x {big.n_systems} systems")
    res["selection_time"] = selection_times(big, have_s2e)
    if have_s2e:
        data = to_s2e(pool)
        say("2. agreement of utilities")
        res["agreement"] = agreement(pool, data)
        say("3. needed to match")
        ntm: dict[str, Any] = {}
        say("  ladder: their protocol with evalsift.stats")
        ntm["ladder"] = ladder(pool, data, args.s2e_random_seeds)
        ntm["ours"] = ours_bench(pool)
        if not args.skip_s2e_eval:
            orderings = {m: s2e_select(data, METHODS[m][2])[0] for m in NTM_METHODS}
            ntm["s2e_code"] = s2e_evaluation(data, orderings, args.s2e_random_seeds, args.s2e_cap)
        res["needed_to_match"] = ntm
        res["summary"] = summarise(res)
    print_tables(res)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(res, indent=1, default=lambda o: o.item() if hasattr(o, "item") else str(o)))
    say(f"\nwrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
