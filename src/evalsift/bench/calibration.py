"""Is a stated risk true? The calibration benchmark of the stop rules.

A stop rule promises: the chance that the loop names the wrong winner is at most the stated risk.
This runs evalsift's own :class:`~evalsift.session.Session` many times and counts how often it does:

- **synthetic pools** with a known gap: ``M`` items where system a wins a share ``1/2 + gap/2`` of the
  decisive items, with a share ``ties`` of tied items (gaps 0, 0.02, 0.05, 0.1; ties 0 and 0.3 by
  default). A dead heat (gap 0) has no winner: any winner named is wrong. The outputs embed (through
  an encoder of this module) so that an item's difference vector points along its verdict plus
  noise, the premise DiffUse relies on, so DiffUse's clusters carry information here.
- **real data**: the test sets of the pairwise protocol (:func:`~evalsift.bench.pairwise.pair_cases`:
  every system pair x seeded 80% subsamples) judged by a replayed oracle (``metric:NAME`` or
  ``judgments:FILE``); the truth is the test set's winner by item count (tied ones are skipped
  and counted). Pairs whose gap is
  below ``close`` (0.05) are reported apart: they are where rules fail.

Each (case, method, rule) runs once to the label cap with an unreachable threshold; the trace gives
the risk after every step, so every stated risk is evaluated on the same runs: the loop stops at the
first step (from ``min_labels`` on) whose risk is at or below it, naming that step's leader.
A cell *exceeds* its stated risk when the exact 95% interval of its wrong-winner share lies wholly
above it; a rule keeps its promise when no cell exceeds (with many cells, a few chance exceedances
at the 2.5% level are expected even for a valid rule: the summary gives the count and the worst cell).
"""

from __future__ import annotations

import math
import time
from collections import defaultdict
from typing import Any, Sequence

import numpy as np
from scipy.stats import binomtest

from ..embed.encoders import Encoder
from ..errors import DataError, ParameterError, check_choice
from ..metrics import ensure_oracle_metric
from ..oracle.metric import MetricOracle
from ..pool import Pool
from ..progress import progress_bar
from ..proxy import make_proxy
from ..select import build_selector
from ..session import Session
from ..stats import GUARANTEES, STOP_RULES, win_rate_sequence
from ..stats.sequential import VALUES
from .pairwise import _warm_embeddings, bench_oracle, case_tasks, restricted_pairs, task_case
from .parallel import TaskJournal, import_ray, is_parallel, run_tasks, shippable_encoder, workers_timing

GAPS = (0.0, 0.02, 0.05, 0.1)
TIES = (0.0, 0.3)
RISKS = (0.05, 0.1, 0.2)
UNREACHABLE = 1e-300
SYNTHETIC_PROXY_NOISE = 0.5  # the synthetic pools' automatic metric: each system's true score plus N(0, 0.5)
PROXY_TAG = "+proxy"
ACTIVE_TAG = "+active"  # with the proxy and active sampling (inverse-probability weighted draws)
SAMPLING_TAGS = {"active": ACTIVE_TAG, "neyman": "+neyman"}  # <method>+proxy<tag>: drawn with that design


def _sampling_of(method: str) -> tuple[str, str]:
    """``(method without its design tag, sampling)``: ``random+proxy+neyman`` -> ``(random+proxy, neyman)``."""
    for name, tag in SAMPLING_TAGS.items():
        if method.endswith(tag):
            return method.removesuffix(tag), name
    return method, "uniform"


class SyntheticEncoder(Encoder):
    """Vectors for the synthetic pools: text ``syn:<i>:<a|b>:<verdict>`` -> a base vector per item, plus
    (for system a) the verdict's direction times ``strength`` and noise. Deterministic per text."""

    name = "synthetic"
    cacheable = False
    dim = 8

    def __init__(self, strength: float = 1.0, noise: float = 1.0, max_items: int = 100_000) -> None:
        self.strength, self.noise = strength, noise
        self._base = np.random.default_rng(0).normal(size=(max_items, self.dim))
        self._jitter = np.random.default_rng(1).normal(size=(max_items, self.dim))

    @property
    def cache_key(self) -> str:
        return f"synthetic|{self.strength}|{self.noise}"

    def encode(self, texts: list[str]) -> np.ndarray:
        parts = [t.split(":") for t in texts]
        item = np.array([int(p[1]) for p in parts])
        is_a = np.array([p[2] == "a" for p in parts])
        sign = np.array([{"a": 1.0, "b": -1.0, "tie": 0.0}[p[3]] for p in parts])
        out = self._base[item].copy()
        out[:, 0] += np.where(is_a, self.strength * sign, 0.0)
        out += np.where(is_a[:, None], self.noise * self._jitter[item], 0.0)
        return out.astype(np.float32)


def synthetic_pool(n_items: int, gap: float, ties: float, seed: int = 0) -> Pool:
    """A two-system pool with a known gap: a wins ``1/2 + gap/2`` of the decisive items, ``ties`` tie.
    It also has an automatic metric ``proxy`` (each system's true score plus N(0, 0.5) noise), for
    ``--proxy``."""
    n_tie = int(round(ties * n_items))
    decisive = n_items - n_tie
    n_a = int(round(decisive * (0.5 + gap / 2)))
    verdicts = np.array(["a"] * n_a + ["b"] * (decisive - n_a) + ["tie"] * n_tie)
    verdicts = np.random.default_rng(seed).permutation(verdicts)
    score = {"a": (1.0, 0.0), "b": (0.0, 1.0), "tie": (0.5, 0.5)}
    truth = np.array([score[v] for v in verdicts])
    noise = np.random.default_rng([seed, 5]).normal(0, SYNTHETIC_PROXY_NOISE, size=(n_items, 2))
    return Pool(item_ids=[f"s{i}" for i in range(n_items)], systems=["A", "B"],
                outputs={"A": [f"syn:{i}:a:{v}" for i, v in enumerate(verdicts)],
                         "B": [f"syn:{i}:b:{v}" for i, v in enumerate(verdicts)]},
                scores={"truth": truth, "proxy": truth + noise}, human_metrics=["truth"],
                name=f"synthetic(gap={gap:g}, ties={ties:g})")


def _outcomes(trace: list[dict], risks: Sequence[float], min_labels: int) -> dict[float, tuple[str | None, int]]:
    """For every stated risk: (leader named or None, labels used) -- the first step at or below it."""
    out = {}
    for r in risks:
        hit = next((s for s in trace if s["risk"] <= r and s["leader"] is not None and s["decision_set"] >= min_labels),
                   None)
        out[r] = (hit["leader"], hit["labels_used"]) if hit else (None, trace[-1]["labels_used"] if trace else 0)
    return out


def _true_mean(verdicts: np.ndarray) -> float:
    """The pool's win rate of a (ties half): what the anytime rule's interval estimates."""
    return float(np.mean([VALUES[str(v)] for v in verdicts]))


def _combos(methods: Sequence[str], rules: Sequence[str], seed: int, encoder: Any,
            proxy: bool = False, sampling: str = "uniform") -> list[tuple[str, str]]:
    """(method, rule) pairs to run; with ``proxy``, also (method+proxy, anytime) for the random orders,
    and with a ``sampling`` design other than uniform (method+proxy+active or +neyman, anytime)."""
    combos = []
    for m in methods:
        sel = build_selector(m, seed, {"encoder": encoder})
        for rule in rules:
            if rule == "anytime" and not sel.random_order:
                continue  # the anytime rule's guarantee needs a random order: not offered with this method
            combos.append((m, rule))
        if proxy and sel.random_order and "anytime" in rules:
            combos.append((m + PROXY_TAG, "anytime"))
            if sampling != "uniform":
                combos.append((m + PROXY_TAG + SAMPLING_TAGS[sampling], "anytime"))
    return combos


def _run(pool: Pool, method: str, rule: str, seed: int, oracle: Any, encoder: Any, min_labels: int,
         max_labels: int, risks: Sequence[float], true_mean: float,
         proxy: Any = None, judges: Any = None) -> dict[float, tuple[str | None, int, bool | None]]:
    """One Session to the cap; per stated risk (leader named or None, labels used, whether the
    win-rate interval at that stop covers the pool's true win rate -- None for the paper rules,
    which give no interval). ``method`` ending in ``+proxy`` runs with ``proxy`` (spec or specs;
    ``judges``: their judges, already built, as :func:`~evalsift.proxy.make_proxy` takes them),
    ``+proxy+active`` / ``+proxy+neyman`` also with that sampling design."""
    base, sampling = _sampling_of(method)
    with_proxy = base.endswith(PROXY_TAG)
    sel = build_selector(base.removesuffix(PROXY_TAG), seed, {"encoder": encoder})
    s = Session(pool, sel, a=pool.systems[0], b=pool.systems[1], risk=UNREACHABLE if rule != "anytime" else 1e-9,
                min_labels=min_labels, max_labels=max_labels, risk_rule=rule,
                proxy=make_proxy(proxy, pool, *pool.systems[:2], oracle=judges) if with_proxy else None,
                sampling=sampling)
    s.run(oracle)
    items, values = s.verdict_pairs() if rule == "anytime" else ([], [])
    probs = [s._draw_probs(i) for i in items] if sampling != "uniform" else None
    out = {}
    for r, (leader, labels) in _outcomes(s.trace, risks, min_labels).items():
        covered = None
        if rule == "anytime":
            lo, hi = win_rate_sequence(values[:labels], pool.n_items, r, items=items[:labels], control=s.control,
                                       probs=None if probs is None else probs[:labels])
            covered = bool(lo <= true_mean <= hi)
        out[r] = (leader, labels, covered)
    return out


def _cell(rows: list[tuple[str | None, int, bool | None]], truth: list[str | None], risk: float) -> dict[str, Any]:
    """One (case, method, rule, risk) cell: shares declared / wrong / inconclusive, the wrong share's
    95% Clopper-Pearson interval, ``exceeds`` (that interval lies wholly above the stated risk), and
    for the anytime rule the share of runs whose win-rate interval (level 1 - risk) covered the
    pool's true win rate at the stop."""
    n = len(rows)
    if not n:
        return {"runs": 0}
    declared = sum(r[0] is not None for r in rows)
    wrong = sum(r[0] is not None and r[0] != t for r, t in zip(rows, truth))
    ci = binomtest(wrong, n).proportion_ci(0.95, method="exact")
    return {"runs": n, "declared": declared / n, "wrong": wrong / n, "wrong_ci": [float(ci.low), float(ci.high)],
            "exceeds": bool(ci.low > risk), "inconclusive": (n - declared) / n,
            "mean_labels": float(np.mean([r[1] for r in rows])),
            "interval_coverage": (float(np.mean([r[2] for r in rows])) if rows[0][2] is not None else None)}


def _summary(cells: dict[str, Any]) -> dict[str, Any]:
    """Per rule: cells checked, cells whose wrong share is significantly above the stated risk, the
    largest (wrong - risk), and (anytime rule) the smallest interval coverage minus its nominal 1 - risk."""
    out: dict[str, dict[str, Any]] = {}
    for case in cells.values():
        for m, by_rule in case.items():
            for rule, by_risk in by_rule.items():
                o = out.setdefault(rule, {"cells": 0, "exceeds": 0, "max_excess": -1.0, "worst": None})
                for r, c in by_risk.items():
                    if not c.get("runs"):
                        continue
                    o["cells"] += 1
                    o["exceeds"] += c["exceeds"]
                    if c.get("interval_coverage") is not None:
                        gap = c["interval_coverage"] - (1 - float(r))
                        if gap < o.get("coverage_minus_nominal", math.inf):
                            o["coverage_minus_nominal"] = gap
                    if c["wrong"] - float(r) > o["max_excess"]:
                        o["max_excess"], o["worst"] = c["wrong"] - float(r), {"method": m, "risk": float(r),
                                                                              "wrong": c["wrong"]}
    return out


def calibration_bench(pool: Pool | None = None, oracle: Any = None, *,
                      rules: Sequence[str] = STOP_RULES, risks: Sequence[float] = RISKS,
                      methods: Sequence[str] = ("random", "diffuse_strata", "diffuse", "diffuse_rep_random"), seeds: int = 10,
                      runs: int = 200, gaps: Sequence[float] = GAPS, ties: Sequence[float] = TIES,
                      synthetic_items: int = 800, synthetic: bool = True, subsample: float = 0.8,
                      min_labels: int = 5, max_labels: int = 200, max_pairs: int | None = None, close: float = 0.05,
                      higher_is_better: bool = True, tie_tolerance: float = 0.0, encoder: Any = "minilm",
                      quiet: bool = False, proxy: Any = None, active: bool = False, sampling: str | None = None,
                      jobs: int | str | None = 1, backend: str = "local", ray_address: str | None = None,
                      journal: TaskJournal | None = None) -> dict[str, Any]:
    """Run the calibration benchmark (see the module doc); returns the ``results.json`` dictionary.

    ``proxy`` (``metric:NAME`` or ``judge:judgments:FILE``, or a list of them, stacked): also run the
    anytime rule with that proxy on the random orders, as methods ``<method>+proxy``, each real pair
    restricted to the items every proxy covers (the synthetic pools use their own metric ``proxy``
    instead);
    ``sampling`` (``active`` or ``neyman``): and with that design, as ``<method>+proxy+active`` /
    ``+neyman``; ``active=True`` is ``sampling="active"``. ``jobs`` / ``backend`` /
    ``ray_address``: the synthetic runs and the real (pair, seed) test sets run on that many worker
    processes or on Ray (:func:`evalsift.bench.parallel.run_tasks`); the result is the serial one.
    ``journal``: runs finished by an earlier run are taken from it, and each is added as it finishes."""
    for r in rules:
        check_choice("rule", r, STOP_RULES, where="bench calibration")
    if not risks or any(not 0 < r < 1 for r in risks):
        raise ParameterError(f"bench calibration: risks must be in (0, 1), got {list(risks)}", field="risks")
    if pool is None and not synthetic:
        raise ParameterError("bench calibration: give real data (--data) or keep the synthetic pools", field="data")
    t_start = time.perf_counter()
    proxy = _bench_proxy(proxy)
    sampling = sampling or ("active" if active else "uniform")
    check_choice("sampling", sampling, ("uniform", *SAMPLING_TAGS), where="bench calibration")
    if sampling != "uniform" and proxy is None:
        raise ParameterError(f"bench calibration: --sampling {sampling} needs --proxy", field="sampling")
    out: dict[str, Any] = {"rules": list(rules), "risks": list(risks), "methods": list(methods),
                           "proxy": None if proxy is None else proxy[0] if len(proxy) == 1 else list(proxy),
                           "active": sampling == "active", "sampling": sampling,
                           "min_labels": min_labels, "max_labels": max_labels,
                           "guarantee": {r: GUARANTEES[r] for r in rules},
                           "check": "a cell exceeds its stated risk when the 95% Clopper-Pearson interval of its "
                                    "wrong-winner share lies wholly above it"}
    parallel = is_parallel(jobs, backend)
    if backend == "ray":
        import_ray()  # fail before any work, with the install line
    spread = {"jobs": jobs, "backend": backend, "ray_address": ray_address, "journal": journal}
    if pool is not None:  # the real data's oracle and proxy checked before any synthetic run
        if oracle is None:
            raise ParameterError("bench calibration: real data (--data) needs an oracle (--oracle metric:NAME or "
                                 "judgments:FILE)", field="oracle")
        pool, oracle = ensure_oracle_metric(pool, oracle)  # metric:chrF-ref and the like, computed on demand
        judge = bench_oracle(oracle, pool, higher_is_better, tie_tolerance)
        judges = None
        if proxy is not None:  # resolved once: a reference metric computed, a judge file read
            from ..proxy import resolve_proxy

            source = resolve_proxy(pool, list(proxy))
            pool, judges = source.pool, [p[2] for p in source.parts]
        restricted, left_out = restricted_pairs(pool, judge, max_pairs, "bench calibration")
        if proxy is not None:  # a proxy must cover every item: keep the items every proxy covers
            covered = {}
            for k, r in restricted.items():
                try:
                    covered[k] = source.for_pair(*k, pool=r.pool)[0]
                except DataError as e:  # a judge that covers some pairs only (SummEval's: 11 of 120): said so
                    left_out[f"{k[0]} vs {k[1]}"] = f"the proxy: {e}"
            if not covered:
                raise DataError(f"bench calibration: the proxy {', '.join(map(str, proxy))} covers 2 or more items of no "
                                f"pair of pool {pool.name!r}", field="proxy")
            restricted = covered
            proxy = [p[0] for p in source.parts]
    if synthetic:
        syn_enc = SyntheticEncoder()
        cells: dict[str, Any] = {}
        combos = _combos(methods, rules, 0, syn_enc, proxy is not None, sampling)
        syn_methods = list(dict.fromkeys(m for m, _ in combos))
        shared = {"combos": combos, "encoder": syn_enc, "items": synthetic_items, "min_labels": min_labels,
                  "max_labels": max_labels, "risks": list(risks)}
        tasks = [(gap, tie, run) for gap in gaps for tie in ties for run in range(runs)]
        with progress_bar(len(tasks), "synthetic runs", quiet) as advance:
            done = iter(run_tasks(_synthetic_task, tasks, shared=shared, advance=advance, **spread))
        for gap in gaps:  # folded in task order: the serial run's order
            for tie in ties:
                key = f"gap={gap:g},ties={tie:g}"
                res: dict[tuple, list] = defaultdict(list)
                truth = []
                for run in range(runs):
                    truth.append("a" if gap > 0 else None)
                    for method, rule, r, o in next(done):
                        res[(method, rule, r)].append(o)
                cells[key] = {m: {rule: {f"{r:g}": _cell(res[(m, rule, r)], truth, r) for r in risks}
                                  for rule in rules if (m, rule) in combos} for m in syn_methods}
        out["synthetic"] = {"items": synthetic_items, "runs_per_cell": runs, "gaps": list(gaps), "ties": list(ties),
                            "cells": cells, "summary": _summary(cells),
                            "encoder": "SyntheticEncoder: difference vector = verdict direction + noise"}
    if pool is not None:
        combos = _combos(methods, rules, 0, encoder, proxy is not None, sampling)
        real_methods = list(dict.fromkeys(m for m, _ in combos))
        worker_encoder = shippable_encoder(encoder) if parallel else encoder
        if any(_sampling_of(m)[0].removesuffix(PROXY_TAG) != "random" for m, _ in combos):
            worker_encoder = _warm_embeddings(pool, {s for p in restricted for s in p}, methods, encoder, quiet,
                                              ship=parallel)
        res = defaultdict(list)
        truth, gaps_seen, skipped = [], [], 0
        cases, tasks = case_tasks(restricted, judge, seeds, subsample)
        shared = {"cases": cases, "combos": combos, "oracle": judge, "encoder": worker_encoder, "proxy": proxy,
                  "proxy_judges": judges,
                  "min_labels": min_labels, "max_labels": max_labels, "risks": list(risks)}
        with progress_bar(len(tasks), "pairs x seeds", quiet) as advance:
            done = run_tasks(_real_task, tasks, shared=shared, advance=advance, **spread)
        for case in done:  # folded in task order: the serial run's order
            if case is None:
                skipped += 1
                continue
            truth.append(case["true_winner"])
            gaps_seen.append(case["distance"])
            for method, rule, r, o in case["runs"]:
                res[(method, rule, r)].append(o)
        near = [k for k, g in enumerate(gaps_seen) if g < close]
        close_key = f"close (gap < {close:g})"
        real: dict[str, Any] = {"all": {}, close_key: {}}
        for m in real_methods:
            for label, keep in (("all", range(len(truth))), (close_key, near)):
                real[label][m] = {rule: {f"{r:g}": _cell([res[(m, rule, r)][k] for k in keep], [truth[k] for k in keep], r)
                                         for r in risks} for rule in rules if (m, rule) in combos}
        out["real"] = {"data": pool.name, "oracle": judge.name, "pairs": len(restricted), "left_out_pairs": left_out,
                       "seeds": seeds, "subsample": subsample, "cases": len(truth), "close_cases": len(near),
                       "skipped_tied": skipped, "summary": _summary(real), "gap_quartiles": [float(q) for q in np.quantile(gaps_seen, [.25, .5, .75])]
                       if gaps_seen else [], "cells": real}
    out["timing_s"] = {"total": round(time.perf_counter() - t_start, 3), **workers_timing(jobs, backend, journal)}
    return out


def _bench_proxy(proxy: Any) -> tuple[str, ...] | None:
    """``--proxy`` of the calibration benchmark as a tuple of specs (None without): ``metric:NAME`` and
    recorded judges ``judge:judgments:FILE``, one or several (stacked). A live LLM judge is refused:
    every test set would pay for its answers again."""
    if proxy is None:
        return None
    specs = (proxy,) if isinstance(proxy, str) else tuple(proxy)
    for s in specs:
        if not isinstance(s, str) or not (s.startswith("metric:") or s.startswith("judge:judgments:")):
            raise ParameterError(f"bench calibration: --proxy must be metric:NAME or judge:judgments:FILE (a live "
                                 f"judge: record its answers first with 'evalsift judge'), got {s!r}", field="proxy")
    if not specs:
        raise ParameterError("bench calibration: --proxy needs at least one spec", field="proxy")
    return specs


def _synthetic_task(shared: dict[str, Any], task: tuple[float, float, int]) -> list[tuple]:
    """One synthetic pool (gap, ties, run) and every (method, rule) on it: ``(method, rule, risk,
    outcome)`` rows in the serial order. Its randomness is the run number alone."""
    gap, tie, run = task
    pl = synthetic_pool(shared["items"], gap, tie, seed=run)
    oracle = MetricOracle("truth")
    mean = _true_mean(oracle.verdicts(pl, np.arange(pl.n_items), "A", "B"))
    rows = []
    for method, rule in shared["combos"]:
        for r, o in _run(pl, method, rule, run, oracle, shared["encoder"], shared["min_labels"], shared["max_labels"],
                         shared["risks"], mean, "metric:proxy").items():
            rows.append((method, rule, r, o))
    return rows


def _real_task(shared: dict[str, Any], task: tuple[tuple[str, str], int]) -> dict[str, Any] | None:
    """One real (pair, seed) test set and every (method, rule) on it; None for a tied test set."""
    case = task_case(shared["cases"], task)
    if case.true_winner == "tie":
        return None
    rows = []
    for method, rule in shared["combos"]:
        for r, o in _run(case.pool, method, rule, case.seed, shared["oracle"], shared["encoder"], shared["min_labels"],
                         shared["max_labels"], shared["risks"], _true_mean(case.truth), shared["proxy"],
                         shared["proxy_judges"]).items():
            rows.append((method, rule, r, o))
    return {"true_winner": case.true_winner, "distance": case.distance, "runs": rows}
