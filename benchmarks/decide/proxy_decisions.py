"""Proxy-aided decisions against the no-proxy rule, on the same random orders (issue 21).

For every pair of a dataset, the human verdicts are the labels and one or more proxies (recorded LLM
judges, automatic metrics, their stack, plus covariates) are built through the library's own path
(:func:`evalsift.proxy.restrict_to_proxy`, the calibration :class:`evalsift.proxy.MetricProxy`).
Then, on seeded uniformly random orders of the pair's pool:

- **sequential** (the anytime rule, :class:`evalsift.stats.AnytimeTest`): labels until it names a
  winner at each stated risk (the pool's size when it never does), without and with each proxy on
  the same order; wrong winners against the pool's own winner (any winner of a dead heat is wrong);
- **fixed budget** (:func:`evalsift.stats.budget_assessment`, what ``compare --budget N`` reads):
  the width of the finite-sample interval at n labels and how often it holds the pool's win rate;
  the normal interval of (cross-)prediction-powered inference beside it for reference
  (:func:`evalsift.stats.cross_ppi_mean`; not finite-sample valid).

``--designs uniform,neyman``: the sequential rule with a proxy also draws its items by each named design
(``active``, ``neyman``: :mod:`evalsift.stats.active`, the draw loop of :class:`evalsift.session.Session`);
the table gets one row per proxy and design, its ratio taken against the no-proxy rule drawing with
the same random numbers through the same mechanism (equal probabilities), so that the comparison is
paired as the uniform rows' is (a design's draws from another random stream than the baseline's
made its ratio look 0.02-0.05 better with every judge, GPT-3.5's useless one included: the streams'
luck, not the design).

**The limit** (column ``limit``, proxies with at most 8 distinct values, such as one judge's verdicts):
the labels the best valid betting rule would need if it knew each pair's true joint distribution of
(judge's verdict, label), with no learning: the largest expected log-growth ``E log(1 + lam (z - 1/2))``
over a constant bet ``lam``, the control's shift for every stratum (the judge's verdicts), and (``any
design``) the share of draws per stratum, with ``z`` the inverse-probability-weighted value, its
mean the pair's win rate. Every valid one-step bet with uniform draws is dominated by such a shifted
bet (a Lagrange-duality argument: docs/proxy.md), so ``log(2 / risk) / growth`` (capped at the pool) is
the labels no rule can beat for long, up to the asymptotics (pairs drawn with replacement; the
labels' ratio is what is compared). The ratio printed is the limit's labels over the same limit
without a proxy.

The reference printed beside each proxy is ``1 - rho^2``, rho^2 being the share of the verdicts'
variance within the pair that a linear fit on the proxy's columns explains, fitted on the whole pair
(the most a control variate with that proxy can remove); averaged over pairs.

    EVALSIFT_DATA=../shared/data python benchmarks/decide/proxy_decisions.py arena [--seeds 20]
    EVALSIFT_DATA=../shared/data python benchmarks/decide/proxy_decisions.py arena --fixed-only --seeds 400  # per-pair coverage
    python benchmarks/decide/proxy_decisions.py summeval [--seeds 20]
    python benchmarks/decide/proxy_decisions.py wmt23 [--seeds 10]
    python benchmarks/decide/proxy_decisions.py synthetic [--seeds 200]    # rho 0.5 / 0.7 / 0.9 and dead heats
    EVALSIFT_DATA=../shared/data python benchmarks/decide/proxy_decisions.py alpaca [--seeds 20]  # AlpacaEval, two judges

``synthetic``: pools with a known correlation between proxy and verdict (the proxy is the verdict plus
Gaussian noise), for the labels ratio at rho = 0.5, 0.7, 0.9 (4,000 items, win rate 0.55, 30% ties),
and dead heats (win rate exactly 1/2) with a good, a useless, a heavy-tailed (Cauchy), a one-sided
(always "a") and an anti-correlated proxy, alone and stacked, for the wrong-winner rate at each risk.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time
from collections import defaultdict
from pathlib import Path

import numpy as np
from scipy.stats import binom

from scipy.optimize import minimize, minimize_scalar

from evalsift.proxy import MetricProxy, restrict_to_proxy
from evalsift.stats import AnytimeTest, active_probabilities, budget_assessment, cross_ppi_mean
from evalsift.stats.active import DEFAULT_EXPLORE, proxy_strata, residual_spread, stratum_spread
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: the shared _runner
from _runner import finish_text  # noqa: E402

RISKS = (0.05, 0.1, 0.2)
BUDGETS = (50, 100)
LEVEL = 0.05  # the fixed budget's interval: 95%
VALUE = {"a": 1.0, "b": 0.0, "tie": 0.5}


# ---------------------------------------------------------------------------------------------- cases
class Case:
    """One pair: its verdict values ``y`` and, per proxy variant, the factory of a fresh predictor
    and its columns (for the rho reference)."""

    def __init__(self, name: str, y: np.ndarray, proxies: dict) -> None:
        self.name, self.y, self.proxies = name, np.asarray(y, dtype=float), proxies

    def rho2(self, variant: str) -> float:
        cols = self.proxies[variant][1]
        X = np.column_stack([np.ones(len(self.y)), cols])
        coef, *_ = np.linalg.lstsq(X, self.y, rcond=None)
        resid = self.y - X @ coef
        v = float(self.y.var())
        return 0.0 if v == 0 else max(0.0, 1.0 - float(resid.var()) / v)


def _variant(predictor: MetricProxy) -> tuple:
    """(factory, columns) of a predictor built by the library: a fresh copy per run (its fits are
    cached per order); the columns are the predictor's standardised ones (standardising again is a no-op)."""
    cols = predictor.z
    return (lambda: MetricProxy(cols if cols.shape[1] > 1 else cols[:, 0], name=predictor.name, names=predictor.names),
            cols)


def arena_cases(root: Path, min_battles: int = 150) -> list[Case]:
    from evalsift.io.pairwise import read_judgments
    from evalsift.oracle.judgments import JudgmentsOracle

    folder = root / "arena-ppr"
    human = read_judgments(folder / "human.jsonl")
    pool = human.pool
    oracle = JudgmentsOracle(human)
    judges = {"gpt-4": "gpt-4-0125-preview.jsonl", "claude-3-opus": "claude-3-opus-20240229.jsonl",
              "gpt-3.5": "gpt-3.5-turbo.jsonl"}
    built = {k: JudgmentsOracle(read_judgments(folder / f)) for k, f in judges.items()}
    counts: dict = defaultdict(int)
    for j in human.judgments:
        counts[tuple(sorted((j.a, j.b)))] += 1
    variants = {"gpt-4": (["gpt-4"], ()), "claude-3-opus": (["claude-3-opus"], ()), "gpt-3.5": (["gpt-3.5"], ()),
                "stack of 3": (["gpt-4", "claude-3-opus", "gpt-3.5"], ()),
                "stack of 3 + position": (["gpt-4", "claude-3-opus", "gpt-3.5"], ("position",))}
    cases = []
    for (a, b), n in sorted(counts.items(), key=lambda kv: -kv[1]):
        if n < min_battles:
            continue
        proxies, y = {}, None
        for name, (which, cov) in variants.items():
            specs = [f"judge:judgments:{judges[w]}" for w in which]
            r, pred = restrict_to_proxy(pool, a, b, specs, oracle=[built[w] for w in which], covariates=cov,
                                        recorded=[oracle])
            yy = np.array([VALUE[v] for v in oracle.verdicts(r.pool, range(r.pool.n_items), a, b)])
            if y is None:
                y = yy
            elif len(yy) != len(y) or not np.array_equal(yy, y):
                raise SystemExit(f"{a} vs {b}: the proxies cover different battles")
            proxies[name] = _variant(pred)
        cases.append(Case(f"{a} vs {b}", y, proxies))
    return cases


ALPACA_PAIRS = (  # (labels' annotator config, proxy's annotator config): both judged these models vs gpt4_1106_preview
    ("weighted_alpaca_eval_gpt4_turbo", "alpaca_eval_cot_gpt4_turbo_fn"),
    ("alpaca_eval_cot_gpt4_turbo_fn", "alpaca_eval_gpt4_turbo_fn"))


def alpaca_cases(root: Path) -> list[Case]:
    """AlpacaEval's models against its baseline where two of its recorded judge configurations judged the
    same 805 instructions: one judge's verdicts are the labels (the expensive judge), the other's the proxy."""
    from evalsift.io.pairwise import read_judgments
    from evalsift.oracle.judgments import JudgmentsOracle
    from evalsift.restrict import restrict_pair

    cases = []
    for label_cfg, proxy_cfg in ALPACA_PAIRS:
        labels = read_judgments(f"alpaca-eval/preferences/{label_cfg}")
        other = read_judgments(f"alpaca-eval/preferences/{proxy_cfg}")
        oracle, judge = JudgmentsOracle(labels), JudgmentsOracle(other)
        theirs = {(j.a, j.b) for j in other.judgments}
        for a, b in sorted({(j.a, j.b) for j in labels.judgments} & theirs):
            if a == b:
                continue
            labelled = restrict_pair(labels.pool, a, b, oracle=oracle)  # the items both judges judged
            r, pred = restrict_to_proxy(labelled.pool, a, b, [f"judge:judgments:alpaca-eval/preferences/{proxy_cfg}"],
                                        oracle=[judge])
            y = np.array([VALUE[v] for v in oracle.verdicts(r.pool, range(r.pool.n_items), a, b)])
            cases.append(Case(f"{b} vs {a} ({label_cfg} labels, {proxy_cfg} proxy)", y,
                              {f"{proxy_cfg} (labels {label_cfg})": _variant(pred)}))
    return cases


def pool_cases(data: str, human: str, specs: dict[str, list[str]], max_pairs: int | None = None) -> list[Case]:
    """Every system pair of a pool with a human metric as the labels (verdicts by the metric oracle)."""
    from evalsift.io import load
    from evalsift.oracle import MetricOracle, make_oracle
    from evalsift.restrict import restrict_pair

    pool = load(data)
    oracle = MetricOracle(human)
    judges = {s: make_oracle(s.partition(":")[2]) for v in specs.values() for s in v if s.startswith("judge:")}
    cases = []
    systems = pool.systems
    for i, a in enumerate(systems):
        for b in systems[i + 1:]:
            base = restrict_pair(pool, a, b, metric=human, min_items=2)
            proxies, y, ok = {}, None, True
            for name, ss in specs.items():
                try:
                    r, pred = restrict_to_proxy(base.pool, a, b, ss, oracle=[judges.get(s) for s in ss])
                except Exception:  # noqa: BLE001 - a proxy that does not cover the pair (SummEval's judge: 11 pairs)
                    ok = False
                    break
                yy = np.array([VALUE[v] for v in oracle.verdicts(r.pool, range(r.pool.n_items), a, b)])
                if y is None:
                    y = yy
                elif len(yy) != len(y) or not np.array_equal(yy, y):
                    ok = False
                    break
                proxies[name] = _variant(pred)
            if ok and y is not None and len(y) >= 20:
                cases.append(Case(f"{a} vs {b}", y, proxies))
            if max_pairs and len(cases) >= max_pairs:
                return cases
    return cases


def synthetic_pool(M: int, mean: float, ties: float, rho: float, rng) -> tuple[np.ndarray, np.ndarray]:
    """Verdict values with the given mean and tie share; a proxy = verdict + Gaussian noise with
    correlation ``rho`` to it (exactly 1/2 of the pool's mean when ``mean`` is 1/2: a dead heat)."""
    p_a = mean - ties / 2
    n_a, n_t = int(round(p_a * M)), int(round(ties * M))
    y = np.r_[np.ones(n_a), np.full(n_t, 0.5), np.zeros(M - n_a - n_t)]
    rng.shuffle(y)
    sd = float(y.std())
    x = y + rng.normal(0.0, sd * math.sqrt(1.0 / rho ** 2 - 1.0), M)
    return y, x


# ---------------------------------------------------------------------------------------------- runs
def _stopped(test: AnytimeTest, t: int, out: dict) -> bool:
    """Record in ``out`` the labels ``t`` and the leader at every risk the rule has just reached; True once
    it has reached them all."""
    r = test.assess(0.5)
    for risk in RISKS:
        if risk not in out and r.leader is not None and r.risk <= risk:
            out[risk] = (t, r.leader)
    return len(out) == len(RISKS)


def sequential(y: np.ndarray, order: np.ndarray, control=None) -> dict[float, tuple[int, str | None]]:
    """Labels and leader at which the anytime rule first reaches each risk (pool size, None: never)."""
    M = len(y)
    test = AnytimeTest(M, control)
    out: dict[float, tuple[int, str | None]] = {}
    for t, i in enumerate(order, 1):
        test.update(float(y[i]), int(i))
        if _stopped(test, t, out):
            break
    return {risk: out.get(risk, (M, None)) for risk in RISKS}


def drawn(y: np.ndarray, control, sampling: str, rng, explore: float = DEFAULT_EXPLORE) -> dict[float, tuple[int, str | None]]:
    """:func:`sequential` with the items drawn one at a time by a design (``active`` or ``neyman``), as
    :class:`evalsift.session.Session` draws them: probabilities from the predictions and spreads of the
    verdicts seen, each verdict inverse-probability weighted by the rule. ``uniform``: the same draw
    mechanism (``rng.choice`` with equal probabilities), with or without a ``control``: the baseline that
    shares the design's random numbers, so the two are compared on (nearly) the same draws."""
    M = len(y)
    test = AnytimeTest(M, control)
    strata = proxy_strata(getattr(control, "columns", None)) if sampling == "neyman" else None
    cand = np.ones(M, dtype=bool)
    out: dict[float, tuple[int, str | None]] = {}
    for t in range(1, M + 1):
        if sampling == "uniform":  # the same draw mechanism with equal probabilities: the paired baseline
            i = int(rng.choice(M, p=cand / cand.sum()))
            test.update(float(y[i]), i if control is not None else None)
        else:
            items, values = np.array(test.items, dtype=int), np.array(test.values, dtype=float)
            f = control.predict(items, values)
            e = (stratum_spread(f, items, values, strata) if sampling == "neyman"
                 else residual_spread(f, items, values))
            p = active_probabilities(f, cand, explore=explore, spread=e)
            i = int(rng.choice(M, p=p))
            test.update(float(y[i]), i, p)
        cand[i] = False
        if _stopped(test, t, out):
            break
    return {risk: out.get(risk, (M, None)) for risk in RISKS}


def _growth(values: np.ndarray, probs: np.ndarray) -> float:
    """max over lam >= 0 of sum(probs * log(1 + lam * values)) (values: z - 1/2 on the leader's side);
    concave in lam, so a bounded scalar search; 0 when no bet gains."""
    if float(probs @ values) <= 0:
        return 0.0
    low = float(values.min())
    top = 1e6 if low >= 0 else (1.0 - 1e-9) / -low
    res = minimize_scalar(lambda lam: -float(probs @ np.log1p(lam * values)), bounds=(0.0, top), method="bounded",
                          options={"xatol": 1e-7})
    return max(0.0, -float(res.fun))


def limit_growth(y: np.ndarray, strata: np.ndarray | None = None, *, design: bool = False) -> float:
    """The best expected log-growth per label of a valid bet that knows the pair's joint distribution of
    (stratum, label) (module doc, "The limit"): no strata, the plain bet on the labels; with strata, the
    best shift per stratum (uniform draws) and, with ``design``, the best share of draws per stratum too."""
    y = np.asarray(y, dtype=float)
    side = 1.0 if y.mean() >= 0.5 else -1.0
    if strata is None:
        v, c = np.unique(side * (y - 0.5), return_counts=True)
        return _growth(v, c / c.sum())
    levels = np.unique(strata)
    W = np.array([np.mean(strata == h) for h in levels])
    groups = []
    for h in levels:
        v, c = np.unique(y[strata == h], return_counts=True)
        groups.append((v, c / c.sum(), float(y[strata == h].mean())))
    K = len(levels)
    f0 = np.array([g[2] for g in groups])

    def growth(theta: np.ndarray) -> float:
        f = f0 + theta[:K]
        p = W if not design else np.exp(theta[K:] - theta[K:].max())  # the shares per stratum (a softmax)
        p = np.maximum(p / p.sum(), 1e-6)
        p = p / p.sum()
        F = float(W @ f)
        z = np.concatenate([F + (v - fh) * wh / ph for (v, _, _), fh, wh, ph in zip(groups, f, W, p)])
        q = np.concatenate([pv * ph for (_, pv, _), ph in zip(groups, p)])
        return _growth(side * (z - 0.5), q)

    start = np.r_[np.zeros(K), np.log(W)] if design else np.zeros(K)
    res = minimize(lambda t: -growth(t), start, method="Nelder-Mead",
                   options={"xatol": 1e-4, "fatol": 1e-9, "maxiter": 300 * len(start)})
    return max(growth(start), -float(res.fun))


def truth_of(y: np.ndarray) -> str | None:
    s = float(y.sum()) - len(y) / 2.0
    return "a" if s > 0 else "b" if s < 0 else None


def run_cases(cases: list[Case], seeds: int, budgets=BUDGETS, fixed: bool = True, sequential_too: bool = True,
              designs: tuple[str, ...] = (), explore: float = DEFAULT_EXPLORE) -> dict:
    seq = defaultdict(list)  # (variant, risk) -> [(labels, labels without, wrong)]
    fix = defaultdict(list)  # (variant, n) -> [(width, covered, pair)]
    refs = defaultdict(list)
    limits = defaultdict(list)  # (variant, risk) -> [(limit labels without, uniform, any design)]
    paired: dict = {}  # (pair, seed) -> the no-proxy rule on the designs' draw mechanism
    for k, c in enumerate(cases):
        M, truth = len(c.y), truth_of(c.y)
        mean = float(c.y.mean())
        print(f"  pair {k + 1}/{len(cases)}: {c.name} ({M} items)", file=sys.stderr, flush=True)
        g0 = limit_growth(c.y)
        for v in c.proxies:
            refs[v].append(1.0 - c.rho2(v))
            strata = proxy_strata(c.proxies[v][1])
            if strata is not None and sequential_too:
                g1, g2 = limit_growth(c.y, strata), limit_growth(c.y, strata, design=True)
                for risk in RISKS:
                    lab = [min(M, math.log(2 / risk) / g) if g > 0 else M for g in (g0, g1, g2)]
                    limits[(v, risk)].append(lab)
        for s in range(seeds):
            order = np.random.default_rng([s, M, int(c.y.sum() * 2)]).permutation(M)
            if sequential_too:
                base = sequential(c.y, order)
                for risk, (n, lead) in base.items():
                    seq[("no proxy", risk)].append((n, n, lead is not None and lead != truth, c.name))
                for v, (make, _) in c.proxies.items():
                    for risk, (n, lead) in sequential(c.y, order, make()).items():
                        seq[(v, risk)].append((n, base[risk][0], lead is not None and lead != truth, c.name))
                    for d in designs:
                        if d == "uniform":
                            continue
                        key = [s, M, int(c.y.sum() * 2), 5]  # the design and its baseline share random numbers
                        if (c.name, s) not in paired:
                            paired[(c.name, s)] = drawn(c.y, None, "uniform", np.random.default_rng(key))
                        base_d = paired[(c.name, s)]
                        for risk, (n, lead) in drawn(c.y, make(), d, np.random.default_rng(key), explore).items():
                            seq[(f"{v}, {d}", risk)].append((n, base_d[risk][0], lead is not None and lead != truth,
                                                             c.name))
            if not fixed:
                continue
            for n in budgets:
                if n >= M:
                    continue
                idx = order[:n]
                r = budget_assessment(c.y[idx], M, LEVEL)
                fix[("no proxy", n)].append((r.interval[1] - r.interval[0], r.interval[0] <= mean <= r.interval[1], c.name))
                e = cross_ppi_mean(c.y[idx], idx, lambda it, va: np.full(M, float(np.mean(va))), M, level=1 - LEVEL)
                fix[("normal, no proxy", n)].append((e.width, e.low <= mean <= e.high, c.name))
                for v, (make, _) in c.proxies.items():
                    r = budget_assessment(c.y[idx], M, LEVEL, items=idx, control=make())
                    fix[(v, n)].append((r.interval[1] - r.interval[0], r.interval[0] <= mean <= r.interval[1], c.name))
                    e = cross_ppi_mean(c.y[idx], idx, make().fit_predict, M, level=1 - LEVEL)
                    fix[(f"normal PPI, {v}", n)].append((e.width, e.low <= mean <= e.high, c.name))
    return {"seq": seq, "fix": fix, "refs": refs, "budgets": tuple(budgets), "limits": limits}


# ---------------------------------------------------------------------------------------------- tables
def tables(res: dict, title: str) -> str:
    seq, fix, refs, budgets = res["seq"], res["fix"], res["refs"], res["budgets"]
    variants = list(dict.fromkeys(v for v, _ in seq))
    lines = [f"### {title}"] + ([] if seq else ["", "(sequential rule not run: --fixed-only)"])
    if seq:
        lines += ["", "Sequential (anytime rule): mean labels; ratio to the no-proxy rule on the same orders "
                  "(ratio of the means, with its standard error over the runs by the delta method, / mean of per-pair "
                  "ratios); wrong winners; reference mean(1 - rho^2) over pairs", "",
                  "| proxy | 1 - rho^2 | " + " | ".join(f"risk {r}: labels, ratio, wrong" for r in RISKS) + " |",
                  "|---|---|" + "---|" * len(RISKS)]
    for v in variants:
        head, _, design = v.rpartition(", ")
        base_v = head if design in ("active", "neyman") else v
        ref = f"{np.mean(refs[base_v]):.3f}" if base_v in refs else "1"
        cells = []
        for risk in RISKS:
            rows = seq[(v, risk)]
            n = np.array([r[0] for r in rows], dtype=float)
            n0 = np.array([r[1] for r in rows], dtype=float)
            per_pair = defaultdict(lambda: [0.0, 0.0])
            for r in rows:
                per_pair[r[3]][0] += r[0]
                per_pair[r[3]][1] += r[1]
            pr = np.mean([a / b for a, b in per_pair.values()])
            wrong = sum(r[2] for r in rows)
            ratio = n.mean() / n0.mean()
            se = float(np.std(n - ratio * n0, ddof=1) / (math.sqrt(len(n)) * n0.mean())) if len(n) > 1 else math.nan
            cells.append(f"{n.mean():.1f}, {ratio:.3f} (se {se:.3f}) / {pr:.3f}, {wrong}/{len(rows)}")
        lines.append(f"| {v} | {ref} | " + " | ".join(cells) + " |")
    limits = res.get("limits") or {}
    if limits:
        lines += ["", "The limit (module doc): labels the best valid bet would need knowing each pair's joint distribution "
                  "of (the proxy's value, the label), as a ratio to the same limit without the proxy (sum over pairs); "
                  "uniform draws / the best share of draws per proxy value; beside 1 - rho^2 and the target "
                  "1 - rho^2 + 0.06", "",
                  "| proxy | 1 - rho^2 | target | " + " | ".join(f"risk {r}: uniform, any design" for r in RISKS) + " |",
                  "|---|---|---|" + "---|" * len(RISKS)]
        for v in dict.fromkeys(v for v, _ in limits):
            ref = float(np.mean(refs[v]))
            cells = []
            for risk in RISKS:
                lab = np.array(limits[(v, risk)], dtype=float)
                cells.append(f"{lab[:, 1].sum() / lab[:, 0].sum():.3f}, {lab[:, 2].sum() / lab[:, 0].sum():.3f}")
            lines.append(f"| {v} | {ref:.3f} | {ref + 0.06:.3f} | " + " | ".join(cells) + " |")
    if fix:
        lines += ["", f"Fixed budget: interval width at {1 - LEVEL:.0%}, ratio to the no-proxy width, coverage of the "
                  "pool's win rate (all pairs / the lowest pair, with its draws and p, the one-sided binomial "
                  f"probability of so few covers were that pair's coverage {1 - LEVEL - 0.01:.2f}, nominal - 1 point: "
                  f"below 0.05 / {len({r[2] for rows in fix.values() for r in rows})} pairs says it is lower)", "",
                  "| interval | " + " | ".join(f"n = {n}: width, ratio, coverage, lowest pair" for n in budgets) + " |",
                  "|---|" + "---|" * len(budgets)]
        kinds = list(dict.fromkeys(v for v, _ in fix))
        for v in kinds:
            cells = []
            for n in budgets:
                rows = fix.get((v, n), [])
                if not rows:
                    cells.append("-")
                    continue
                base = fix[("normal, no proxy" if v.startswith("normal") else "no proxy", n)]
                w = np.mean([r[0] for r in rows])
                w0 = np.mean([r[0] for r in base])
                by = defaultdict(list)
                for r in rows:
                    by[r[2]].append(r[1])
                low = min(by.values(), key=np.mean)
                # how likely so few covers are if the lowest pair's coverage were nominal - 1 point (one-sided)
                p = binom.cdf(sum(low), len(low), 1 - LEVEL - 0.01)
                cells.append(f"{w:.3f}, {w / w0:.3f}, {np.mean([r[1] for r in rows]):.3f}, {np.mean(low):.3f} "
                             f"({sum(low)}/{len(low)}, p {p:.2g})")
            lines.append(f"| {v} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def synthetic(seeds: int) -> str:
    out = []
    cases = []
    for rho in (0.5, 0.7, 0.9):
        for s in range(seeds):
            rng = np.random.default_rng([7, s, int(rho * 10)])
            y, x = synthetic_pool(4000, 0.55, 0.3, rho, rng)
            cases.append((rho, Case(f"rho {rho} #{s}", y, {f"rho {rho}": (lambda x=x: MetricProxy(x), x[:, None])})))
    for rho in (0.5, 0.7, 0.9):
        res = run_cases([c for r, c in cases if r == rho], 1, fixed=False)
        out.append(tables(res, f"synthetic, 4,000 items, win rate 0.55, 30% ties, proxy correlation {rho} "
                          f"({seeds} pools, one order each)"))
    # dead heats: any winner is wrong
    heat = []
    for s in range(seeds):
        rng = np.random.default_rng([11, s])
        y, x = synthetic_pool(800, 0.5, 0.3, 0.7, rng)
        noise = rng.normal(size=len(y))
        cauchy = rng.standard_cauchy(size=len(y))
        one_sided = 0.5 + 0.01 * rng.normal(size=len(y))  # a judge that always says "a", with a little jitter
        proxies = {"good (rho 0.7)": x, "useless (noise)": noise, "heavy-tailed (Cauchy)": cauchy,
                   "always a": one_sided, "anti-correlated": -x,
                   "stack: good + noise + Cauchy": np.column_stack([x, noise, cauchy])}
        heat.append(Case(f"heat #{s}", y, {k: (lambda v=v: MetricProxy(v), v if v.ndim == 2 else v[:, None])
                                           for k, v in proxies.items()}))
    res = run_cases(heat, 1, fixed=False)
    out.append(tables(res, f"synthetic dead heats (800 items, 30% ties, win rate exactly 1/2; {seeds} pools): every "
                      "winner named is wrong, so 'wrong' must stay at or below the stated risk"))
    return "\n\n".join(out)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("data", choices=["arena", "summeval", "alpaca", "wmt23", "synthetic"])
    ap.add_argument("--designs", default="uniform",
                    help="comma-separated sampling designs for the sequential rule with a proxy: uniform (always run), "
                         "active, neyman")
    ap.add_argument("--explore", type=float, default=DEFAULT_EXPLORE, help="the designs' uniform share of each draw")
    ap.add_argument("--seeds", type=int, default=None)
    ap.add_argument("--max-pairs", type=int, default=None)
    ap.add_argument("--out", help="also write the tables (markdown) here")
    ap.add_argument("--fixed-only", action="store_true",
                    help="only the fixed-budget intervals (cheap: for many draws per pair, the per-pair coverage check)")
    args = ap.parse_args()
    designs = tuple(d for d in args.designs.split(",") if d)
    bad = [d for d in designs if d not in ("uniform", "active", "neyman")]
    if bad:
        ap.error(f"--designs: unknown design(s) {bad}; known: uniform, active, neyman")
    extra = {"designs": designs, "explore": args.explore}
    root = Path(os.environ.get("EVALSIFT_DATA") or Path(__file__).resolve().parents[3] / "shared" / "data")
    os.environ.setdefault("EVALSIFT_DATA", str(root))  # the dataset names below (alpaca-eval/preferences/...) are looked up there
    t0 = time.time()
    if args.data == "synthetic":
        text = synthetic(args.seeds or 200)
    elif args.data == "arena":
        cases = arena_cases(root)
        text = tables(run_cases(cases, args.seeds or 20, sequential_too=not args.fixed_only, **extra), f"Chatbot Arena (arena-ppr): {len(cases)} pairs with >= 150 "
                      f"battles, human votes as the labels, {args.seeds or 20} orders per pair")
    elif args.data == "alpaca":
        cases = alpaca_cases(root)
        text = tables(run_cases(cases, args.seeds or 20, **extra), f"AlpacaEval: {len(cases)} models vs "
                      f"gpt4_1106_preview judged by two recorded judge configurations, one the labels, the other the "
                      f"proxy, {args.seeds or 20} orders per pair")
    elif args.data == "summeval":
        cases = pool_cases("summeval", "coherence", {
            "GPT-3.5 pairwise (both orders)": ["judge:judgments:summeval/llm-pairwise/coherence"],
            "GPT-3.5 + chrF-ref": ["judge:judgments:summeval/llm-pairwise/coherence", "metric:chrF-ref"]},
            args.max_pairs)
        text = tables(run_cases(cases, args.seeds or 20, budgets=(20, 50), **extra), f"SummEval (expert coherence as the "
                      f"labels): {len(cases)} pairs the GPT-3.5 answers cover, {args.seeds or 20} orders per pair")
    else:
        cases = pool_cases("wmt23/en-de", "mqm", {"MetricX-23": ["metric:MetricX-23-refA"], "COMET": ["metric:COMET-refA"],
                                                  "MetricX-23 + COMET + CometKiwi": ["metric:MetricX-23-refA",
                                                                                     "metric:COMET-refA",
                                                                                     "metric:CometKiwi-src"]},
                           args.max_pairs)
        text = tables(run_cases(cases, args.seeds or 10, **extra), f"WMT23 en-de (MQM as the labels): {len(cases)} pairs, "
                      f"{args.seeds or 10} orders per pair")
    return finish_text(text, time.time() - t0, __file__, args.out)


if __name__ == "__main__":
    raise SystemExit(main())
