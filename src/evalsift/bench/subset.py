"""The subset2evaluate protocol: how well does the first part of a selector's ordering rank systems?

For each seed, ``subsample`` (80%) of the items scored by the human metric for every system is the
pool. Each method is fitted on it (deterministic methods too: the subsample varies), and its
ordering is scored at every prefix size from 5 items to the whole subsample:

- **correlation**: rank correlation (Kendall tau-b by default, or Spearman) between the systems'
  human means on the prefix and on the whole subsample;
- **clusters**: the statistical cluster count of the prefix (:func:`evalsift.stats.system_clusters`).

Curves are reported at the proportions ``props`` (mean and standard error over seeds). At each
proportion the **correlation interval** is what a user holding only the prefix would be told:
:func:`evalsift.stats.bootstrap_agreement` on the prefix (percentile bootstrap over its items; the
expected correlation with the unseen full ranking and its ``level`` interval), averaged over seeds,
and its **coverage**: the share of seeds whose interval held the correlation actually observed;
likewise the systems' **mean intervals** on the prefix (:func:`evalsift.stats.bootstrap_means`): the
share that held each system's mean on the whole subsample, and their width.

**Needed to match** (the paper's Eq. 11): random selection's mean curve over ``random_targets``
orderings, with seeds different from the ones that evaluate random as a method, gives a target at
each proportion B; the method's curve gives the smallest proportion p reaching it; p / B is
averaged over B. Two rules: ``first`` (the paper's: first crossing) and ``stays`` (from there on the
curve never falls below the target). Values are normalised by random-as-a-method's own value on
the same seeds (and, for an artificial crowd, judged on the same systems), so random is 1.0 (as
subset2evaluate's ``eval_clucor_randnorm``); the raw values are reported too. A target never reached within the subsample is censored at 1.0 / B and counted.

Selectors whose picks for different budgets are not nested (k-means) are fitted per size on a
coarser grid (every 1% of the subsample) and cost more.

Two protocols (``protocol=``; each setting can still be overridden one by one):

- ``"evalsift"`` (default): the above, with Kendall tau-b, evalsift's cluster rule
  (``cluster_rule="ours"``: compared with the cluster's best system, the exact signed-rank test up
  to 50 non-zero differences), proportions 0.05, 0.10, ..., 0.50, 80% subsamples, evalsift's
  unigram tokens for ``diversity`` and its knapsack values (``u - min``) under ``cost_aware``.
- ``"paper"``: the evaluation behind Zouhar et al.'s Table 10 and Table 2 (Sec. 2.1, App. Alg. 1,
  Eq. 11; where the paper is silent, the package's code and Table 10 script): Spearman's rho,
  subset2evaluate's cluster rule (``cluster_rule="package"``: compared with the system just above,
  ``scipy.stats.wilcoxon``'s default call, a new cluster when all differences are zero; ``"text"``
  is App. Alg. 1 as written with our exact test), the package's whitespace unigram tokens for
  ``diversity`` (``diversity_tokenizer="package"``) and its knapsack values
  (``knapsack_utility="package"``, under ``cost_aware``), ten geometrically
  spaced proportions from 0.05 to 0.5 (the package's ``PROPS``), the whole pool (no subsample);
  methods whose picks do not depend on the seed are fitted and scored once (on every seed when
  ``subsample`` is set below 1),
  seeded ones (random) on every seed; random's targets are the mean of ``random_targets`` orderings
  shared by every seed and method; curve values are taken at the prefix ``floor(p * n)`` itself.
  Without ``human_metric`` the human scores are chosen as subset2evaluate's WMT loader does
  (:func:`paper_human_metric`).

``cost_aware=True`` (the paper's Table 1 setting, Eq. 2): at a proportion p each method's picks are
the knapsack's (:func:`evalsift.select.knapsack_select` over its utilities) under a cost budget of
``floor(p n)`` items of mean cost, costs from the item field ``cost`` or the paper's time model;
curves are taken on the non-nested grid (every 1% of the pool, and the proportions' prefix sizes).
"""

from __future__ import annotations

import time
from collections import defaultdict
from typing import Any, Sequence

import numpy as np

from ..device import one_blas_thread
from ..errors import ParameterError, check_choice
from ..restrict import RankingRestriction, restrict_ranking
from ..pool import Pool
from ..progress import progress_bar
from .parallel import TaskJournal, import_ray, is_parallel, run_tasks, shippable_encoder, workers_timing
from ..select import build_selector, make_selector
from ..select.costaware import KNAPSACK_RESCALES, item_costs, knapsack_select
from ..select.diversity import TOKENIZERS
from ..stats import (CLUSTER_CHAINS, CORRELATION_KINDS, cluster_count, needed_to_match, prefix_cluster_counts,
                     prefix_correlation, prefix_sizes, spearman, kendall_tau_b, standard_error)
from ..stats.ranking import CLUSTER_RULES, cluster_rule_settings
from ..stats.wilcoxon import WILCOXON_TESTS

PROPS = tuple(round(0.05 * k, 2) for k in range(1, 11))
PAPER_PROPS = tuple(float(p) for p in np.geomspace(0.05, 0.5, 10))  # subset2evaluate's utils.PROPS
PROTOCOLS = ("evalsift", "paper")
PROTOCOL_DEFAULTS: dict[str, dict[str, Any]] = {
    "evalsift": {"correlation": "kendall", "cluster_rule": "ours", "props": PROPS, "subsample": 0.8,
                 "diversity_tokenizer": "ours", "knapsack_utility": "ours"},
    # subset2evaluate's rules where its code, not the paper's text, made the tables (docs/reproductions.md)
    "paper": {"correlation": "spearman", "cluster_rule": "package", "props": PAPER_PROPS, "subsample": 1.0,
              "diversity_tokenizer": "package", "knapsack_utility": "package"},
}
# the human scores subset2evaluate's WMT loader takes, first found first (its load_data_wmt)
PAPER_HUMAN_ORDER = ("esa", "da-sqm", "mqm", "wmt", "appraise", "wmt-raw", "wmt-appraise")
MIN_PREFIX = 5
TARGET_SEED_BASE = 10_000
STATS = ("correlation", "clusters")


def _nested(sel: Any) -> bool:
    return bool(sel.nested)


def _grid(n: int, nested: bool) -> np.ndarray:
    lo = min(MIN_PREFIX, n)
    if nested:
        return np.arange(lo, n + 1)
    step = max(1, n // 100)
    return np.unique(np.r_[np.arange(lo, n + 1, step), n])


def paper_human_metric(pool: Pool) -> str:
    """The human metric subset2evaluate's WMT loader would rank by: the first of ``esa, da-sqm, mqm,
    wmt, appraise, wmt-raw, wmt-appraise`` the pool has (for WMT23 en-de: DA+SQM, which gives the
    paper's 549 items x 12 systems). Raises :class:`ParameterError` when it has none.

    >>> from evalsift.pool import Pool
    >>> import numpy as np
    >>> paper_human_metric(Pool(item_ids=["a"], systems=["S"], scores={"mqm": [[0.0]], "da-sqm": [[1.0]]}))
    'da-sqm'
    """
    for name in PAPER_HUMAN_ORDER:
        if name in pool.metrics:
            return name
    raise ParameterError(f"bench subset --protocol paper: pool {pool.name!r} has none of the human scores "
                         f"subset2evaluate looks for ({', '.join(PAPER_HUMAN_ORDER)}); name one with --human-metric "
                         f"(metrics: {', '.join(pool.metrics) or 'none'})", field="human_metric")


class _Evaluator:
    """Curves of orderings on one subsample's human scores (items x systems). ``chain``: the cluster
    chain, or a dict ``{"rule", "chain"}`` (the cluster rule and its chain)."""

    def __init__(self, H: np.ndarray, kind: str, alpha: float, chain: str | dict[str, str] = "top") -> None:
        self.H, self.kind, self.alpha = H, kind, alpha
        clusters = chain if isinstance(chain, dict) else {"rule": "ours", "chain": chain}
        self.rule, self.chain = clusters["rule"], clusters["chain"]
        self.ref = H.mean(axis=0)

    def nested(self, orders: np.ndarray, sizes: np.ndarray) -> dict[str, np.ndarray]:
        return {"correlation": prefix_correlation(self.H, orders, sizes, kind=self.kind, reference=self.ref),
                "clusters": prefix_cluster_counts(self.H, orders, sizes, alpha=self.alpha, chain=self.chain,
                                                  rule=self.rule).astype(float)}

    def per_size(self, picks: dict[int, np.ndarray]) -> dict[str, np.ndarray]:
        corr_fn = kendall_tau_b if self.kind == "kendall" else spearman
        corr, clus = [], []
        for size, items in picks.items():
            means = self.H[items].mean(axis=0)
            c = corr_fn(means, self.ref)
            corr.append(0.0 if np.isnan(c) else c)
            clus.append(cluster_count(self.H[items], alpha=self.alpha, chain=self.chain, rule=self.rule))
        return {"correlation": np.array(corr), "clusters": np.array(clus, dtype=float)}


def _check(pool: Pool, human_metric: str, props: Sequence[float], seeds: int, subsample: float,
           kind: str, chain: str | None) -> RankingRestriction:
    """The systems and items the protocol can use: the metric named as human is the ground truth
    (flagged human in the data or not), restricted by :func:`evalsift.restrict.restrict_ranking`."""
    pool.check_metric(human_metric)
    check_choice("correlation", kind, CORRELATION_KINDS, where="bench subset")
    if chain is not None:
        check_choice("cluster_chain", chain, CLUSTER_CHAINS, where="bench subset")
    if isinstance(seeds, bool) or not isinstance(seeds, int) or seeds < 1:
        raise ParameterError(f"bench subset: seeds must be a positive integer, got {seeds!r}", field="seeds")
    if not 0 < subsample <= 1:
        raise ParameterError(f"bench subset: subsample must be in (0, 1], got {subsample!r}", field="subsample")
    if not props or any(not 0 < p <= 1 for p in props):
        raise ParameterError(f"bench subset: proportions must be in (0, 1], got {list(props)}", field="props")
    return restrict_ranking(pool, human_metric, min_items=2 * MIN_PREFIX)


def subset_bench(pool: Pool, human_metric: str | None, methods: Sequence[str], *, metric: str | None = None,
                 seeds: int = 10, props: Sequence[float] | None = None, subsample: float | None = None,
                 random_targets: int = 10, correlation: str | None = None, alpha: float = 0.05,
                 cluster_chain: str | None = None, protocol: str = "evalsift", cluster_rule: str | None = None,
                 diversity_tokenizer: str | None = None, knapsack_utility: str | None = None,
                 cost_aware: bool = False,
                 encoder: Any = "minilm", quiet: bool = False, level: float = 0.95,
                 interval_resamples: int = 1000, jobs: int | str | None = 1, backend: str = "local",
                 ray_address: str | None = None, journal: TaskJournal | None = None) -> dict[str, Any]:
    """Run the protocol; returns the ``results.json`` dictionary (see the module doc and docs/cli.md).
    ``protocol`` (``"evalsift"`` or ``"paper"``) sets the defaults of ``correlation``,
    ``cluster_rule`` (:func:`evalsift.stats.system_clusters`' ``rule``: ``ours``, ``text`` or
    ``package``), ``props``, ``subsample``, ``diversity_tokenizer`` (``ours`` or ``package``: the
    ``tokenizer`` of every selector that has one, i.e. ``diversity``'s unigram) and
    ``knapsack_utility`` (``ours`` or ``package``: the knapsack's ``rescale`` under ``cost_aware``)
    (``PROTOCOL_DEFAULTS``); a value given explicitly wins. ``cluster_chain`` (``top`` or
    ``previous``), when given, replaces the cluster rule's own chain. ``human_metric=None`` is
    allowed with ``protocol="paper"`` (:func:`paper_human_metric`).
    ``interval_resamples=0`` leaves the correlation intervals out. ``jobs`` / ``backend`` /
    ``ray_address``: the seeds run on that many worker processes or on Ray
    (:func:`evalsift.bench.parallel.run_tasks`); the result is the serial one. ``journal``: seeds
    finished by an earlier run are taken from it, and each seed is added as it finishes."""
    check_choice("protocol", protocol, PROTOCOLS, where="bench subset")
    defaults = PROTOCOL_DEFAULTS[protocol]
    correlation = defaults["correlation"] if correlation is None else correlation
    cluster_rule = defaults["cluster_rule"] if cluster_rule is None else cluster_rule
    props = defaults["props"] if props is None else props
    subsample = defaults["subsample"] if subsample is None else subsample
    diversity_tokenizer = defaults["diversity_tokenizer"] if diversity_tokenizer is None else diversity_tokenizer
    knapsack_utility = defaults["knapsack_utility"] if knapsack_utility is None else knapsack_utility
    check_choice("cluster_rule", cluster_rule, CLUSTER_RULES, where="bench subset")
    check_choice("diversity_tokenizer", diversity_tokenizer, TOKENIZERS, where="bench subset")
    check_choice("knapsack_utility", knapsack_utility, KNAPSACK_RESCALES, where="bench subset")
    if human_metric is None:
        if protocol != "paper":
            raise ParameterError("bench subset: name the human metric (--human-metric NAME); only --protocol paper "
                                 "chooses one itself", field="human_metric")
        human_metric = paper_human_metric(pool)
    restriction = _check(pool, human_metric, props, seeds, subsample, correlation, cluster_chain)
    clusters = cluster_rule_settings(cluster_rule, cluster_chain, where="bench subset")
    cluster_chain = clusters["chain"]
    full = restriction.pool
    for m in methods:
        make_selector(m)  # fail fast on an unknown name
    props = tuple(float(p) for p in props)
    per_seed: dict[str, dict[str, list[np.ndarray]]] = defaultdict(lambda: defaultdict(list))
    ntm: dict[str, dict[str, dict[str, list[float]]]] = defaultdict(lambda: defaultdict(lambda: defaultdict(list)))
    censored: dict[str, int] = defaultdict(int)
    agree: dict[str, list[np.ndarray]] = defaultdict(list)  # method -> per seed (props x [low, high, expected, covered])
    baseline: dict[str, str] = {}  # method -> random judged on the same systems
    timing: dict[str, float] = defaultdict(float)
    t_start = time.perf_counter()
    evaluated = list(dict.fromkeys(["random", *methods]))
    if backend == "ray":
        import_ray()
    task_inputs = {"full": full, "human_metric": human_metric, "methods": list(methods), "evaluated": evaluated,
                   "settings": {"metric": metric, "encoder": shippable_encoder(encoder) if is_parallel(jobs, backend)
                                else encoder, "tokenizer": diversity_tokenizer},
                   "subsample": subsample, "props": props, "correlation": correlation, "alpha": alpha,
                   "chain": {"rule": cluster_rule, "chain": cluster_chain}, "protocol": protocol,
                   "cost_aware": {"rescale": knapsack_utility} if cost_aware else None,
                   "random_targets": random_targets, "interval_resamples": interval_resamples, "level": level}
    with progress_bar(seeds * len(evaluated), "seeds x methods", quiet) as advance:
        done = run_tasks(_seed_task, range(seeds), shared=task_inputs, jobs=jobs, backend=backend,
                         ray_address=ray_address, advance=lambda n=1: advance(n * len(evaluated)), journal=journal)
    for res in done:  # folded in seed order: the serial run's order
        for method, t in res["fit_time"].items():
            timing[method] += t
        for method, by_stat in res["curves"].items():
            baseline[method] = res["baseline"][method]
            for stat, values in by_stat.items():
                per_seed[method][stat].append(values)
                for rule in ("first", "stays"):
                    ntm[method][stat][rule].append(res["ntm"][method][stat][rule])
            censored[method] += res["censored"][method]
        for method, rows in res["agreement"].items():
            agree[method].append(rows)
        timing["evaluation"] += res["evaluation_time"]
    out = _results(pool, full, human_metric, metric, methods, seeds, subsample, props, correlation, alpha,
                   random_targets, per_seed, ntm, baseline, censored, timing, time.perf_counter() - t_start)
    out.update(protocol=protocol, cluster_chain=cluster_chain, cluster_rule=cluster_rule,
               cluster_test=WILCOXON_TESTS[str(clusters["test"])], diversity_tokenizer=diversity_tokenizer)
    if cost_aware:
        out["cost_aware"] = {"knapsack_utility": knapsack_utility,
                             "budget": "floor(p * n) items of mean cost; costs from the item field 'cost', else "
                                       "0.15 * source words + 33.7 s"}
    if protocol == "paper":
        out["random_targets"]["seeds"] = f"{TARGET_SEED_BASE} + r, shared by every seed and method"
        out["repetitions"] = {m: len(per_seed[m]["correlation"]) for m in methods}
    out["left_out"] = restriction.to_dict()
    out["timing_s"].update(workers_timing(jobs, backend, journal))
    if interval_resamples:
        out["correlation_intervals"] = {
            "level": level, "resamples": interval_resamples,
            "method": "percentile bootstrap over the prefix's items (evalsift.stats.bootstrap_agreement); coverage: "
                      "share of seeds whose interval held the observed correlation with the subsample's ranking",
            "means": "studentized bootstrap intervals of the systems' means on the prefix (evalsift.stats."
                     "bootstrap_means); mean_interval_coverage: share of (seed, system) whose interval held the "
                     "system's mean on the whole subsample; mean_interval_width: their mean width"}
        for m in methods:
            arr = np.array(agree[m])  # seeds (that evaluated m) x props x 6
            for i, p in enumerate(props):
                out["curves"][m][f"{p:g}"].update({
                    "correlation_interval": [float(arr[:, i, 0].mean()), float(arr[:, i, 1].mean())],
                    "correlation_expected": float(arr[:, i, 2].mean()),
                    "interval_coverage": float(arr[:, i, 3].mean()),
                    "mean_interval_coverage": float(arr[:, i, 4].mean()),
                    "mean_interval_width": float(arr[:, i, 5].mean())})
    return out


def _seed_task(shared: dict[str, Any], seed: int) -> dict[str, Any]:
    """One seed of the protocol: its subsample, every method fitted and scored on it, the targets of
    random selection. Its randomness is the seed alone (subsample, selectors, targets, bootstrap).
    BLAS runs single-threaded, as in a worker process: a seed's matrices are small (the bootstrap's
    resample means were 6x slower with two threads on a busy machine)."""
    with one_blas_thread():
        return _one_seed(shared, seed)


def _one_seed(shared: dict[str, Any], seed: int) -> dict[str, Any]:
    full, human_metric, kind, alpha, props, chain = (shared[k] for k in ("full", "human_metric", "correlation", "alpha",
                                                                         "props", "chain"))
    paper = shared.get("protocol") == "paper"
    n = max(2 * MIN_PREFIX, int(round(shared["subsample"] * full.n_items)))
    if n >= full.n_items:
        sub = full  # the whole pool: no draw
    else:
        sub = full.subset(np.sort(np.random.default_rng(seed).choice(full.n_items, size=n, replace=False)))
    targets = _Targets(sub.score(human_metric), kind, alpha, props, seed, shared["random_targets"], chain,
                       shared_seeds=paper)
    out: dict[str, Any] = {"fit_time": {}, "curves": {}, "ntm": {}, "censored": {}, "baseline": {}, "agreement": {}}
    fitted = {}
    for method in shared["evaluated"]:
        t0 = time.perf_counter()
        sel = build_selector(method, seed, shared["settings"])
        if paper and seed > 0 and not sel.randomised and sub is full:
            continue  # the paper's protocol scores a seed-independent method once (seed 0) on the whole pool
        if shared.get("cost_aware"):
            sel = _CostAware(sel, shared["cost_aware"]["rescale"])
        fitted[method] = _fit(sub, sel)
        out["fit_time"][method] = time.perf_counter() - t0
    t0 = time.perf_counter()
    sizes = prefix_sizes(props, sub.n_items)
    for method, (grid, curve, systems) in _curves(sub, fitted, human_metric, kind, alpha, chain,
                                                  extra_sizes=sizes).items():
        out["baseline"][method] = _random_key(systems)
        ev_props, tv = targets.values(systems)
        out["curves"][method], out["ntm"][method], out["censored"][method] = {}, {}, 0
        for stat in STATS:
            out["curves"][method][stat] = _at_props(props, sizes, grid, sub.n_items, curve[stat], exact=paper)
            out["ntm"][method][stat] = {}
            for rule in ("first", "stays"):
                r = needed_to_match(grid, curve[stat], ev_props, tv[stat], rule=rule)
                out["ntm"][method][stat][rule] = r.value
                out["censored"][method] += r.n_censored if rule == "first" else 0
    if shared["interval_resamples"]:
        out["agreement"] = _agreement(sub, {m: fitted[m] for m in shared["methods"] if m in fitted}, human_metric,
                                      props, kind, shared["level"], shared["interval_resamples"], seed)
    out["evaluation_time"] = time.perf_counter() - t0
    return out


def _agreement(sub: Pool, fitted: dict[str, tuple], human_metric: str, props: Sequence[float], kind: str,
               level: float, resamples: int, seed: int) -> dict[str, np.ndarray]:
    """Per method, per proportion: [low, high, expected, covered] of the bootstrap agreement interval of
    the method's prefix and whether it held the observed correlation with the subsample's ranking;
    then the share of systems whose mean interval (studentized bootstrap on the prefix) held the
    subsample's mean, and the intervals' mean width. Proportions outside, methods inside: every
    method's prefix of one size is resampled with the same weights (same size, same seed), which
    :mod:`evalsift.stats.intervals` then draws once."""
    from ..stats import bootstrap_agreement, bootstrap_means, kendall_tau_b_rows, spearman_rows

    n = sub.n_items
    corr = kendall_tau_b_rows if kind == "kendall" else spearman_rows
    judged = {}  # method -> (its systems' scores, their means on the subsample, its nested order or None)
    for method, (sel, systems) in fitted.items():
        H = sub.score(human_metric)
        if systems is not None:
            H = H[:, list(systems)]
        judged[method] = (H, H.mean(axis=0), sel.select(n).items if _nested(sel) else None)
    rows: dict[str, list[list[float]]] = {m: [] for m in fitted}
    for size in prefix_sizes(props, n):
        size = max(2, int(size))
        for method, (H, full, order) in judged.items():
            items = order[:size] if order is not None else fitted[method][0].select(size).items
            a = bootstrap_agreement(H[items], kind=kind, level=level, resamples=resamples, seed=seed, population=n)
            observed = float(np.nan_to_num(corr(H[items].mean(axis=0)[None, :], full)[0]))
            iv = bootstrap_means(H[items], level=level, resamples=resamples, seed=seed)
            held = float(np.mean((iv.low <= full) & (full <= iv.high)))
            rows[method].append([a.low, a.high, a.expected, float(a.low <= observed <= a.high), held,
                                 float(np.mean(iv.high - iv.low))])
    return {m: np.array(r) for m, r in rows.items()}


def _at_props(props: Sequence[float], sizes: np.ndarray, grid: np.ndarray, n: int, curve: np.ndarray,
              exact: bool) -> np.ndarray:
    """A curve over ``grid`` (proportions of ``n``) at ``props``: interpolated (evalsift protocol), or
    ``exact``: its value at the prefix of ``sizes`` (``floor(p * n)``) items itself where the grid has it."""
    if exact:
        at = {round(g * n): i for i, g in enumerate(grid)}
        if all(int(k) in at for k in sizes):
            return np.array([curve[at[int(k)]] for k in sizes])
    return np.interp(props, grid, curve)


class _Targets:
    """Random selection's mean curve at the target proportions, per evaluated system set.

    ``shared_seeds``: the orderings' seeds do not depend on the seed (the paper's protocol: one set
    of targets for every method and seed); the target proportions are then ``props`` themselves
    (subset2evaluate divides the needed prefix by ``n * p``), else the prefix sizes over n."""

    def __init__(self, H, kind, alpha, props, seed, n_orders, chain="top", shared_seeds=False) -> None:
        self.H, self.kind, self.alpha, self.props, self.chain = H, kind, alpha, props, chain
        n = H.shape[0]
        base = TARGET_SEED_BASE + (0 if shared_seeds else seed * n_orders)
        self.orders = np.stack([np.random.default_rng(base + r).permutation(n) for r in range(n_orders)])
        self.sizes = prefix_sizes(props, n)
        self.target_props = np.asarray(props, dtype=float) if shared_seeds else self.sizes / n
        self.cache: dict[tuple[int, ...] | None, dict[str, np.ndarray]] = {}

    def values(self, systems: tuple[int, ...] | None):
        if systems not in self.cache:
            H = self.H if systems is None else self.H[:, list(systems)]
            curves = _Evaluator(H, self.kind, self.alpha, self.chain).nested(self.orders, self.sizes)
            self.cache[systems] = {k: v.mean(axis=0) for k, v in curves.items()}
        return self.target_props, self.cache[systems]


class _CostAware:
    """A fitted selector's picks for a budget of k items, made cost-aware: the knapsack over its
    utilities (:func:`evalsift.select.utilities_of`) with a cost budget of k items of mean cost
    (subset2evaluate's Table 1 script gives ``int(p n)`` as budget over costs normalised to mean 1).
    Costs: :func:`evalsift.select.item_costs` (the field ``cost``, else the time model)."""

    nested = False

    def __init__(self, base: Any, rescale: str) -> None:
        self.base, self.rescale = base, rescale
        self.randomised = bool(base.randomised)

    def fit(self, pool: Pool) -> "_CostAware":
        from ..select import utilities_of

        self.base.fit(pool)
        u = utilities_of(self.base)
        self.utilities_ = np.nan_to_num(u, nan=np.nanmin(u) if np.isfinite(u).any() else 0.0)  # as select does
        self.costs_ = item_costs(pool)
        crowd_rest = getattr(self.base, "evaluated_systems_", None)
        if crowd_rest:
            self.evaluated_systems_ = crowd_rest
        return self

    def select(self, k: int):
        return knapsack_select(self.utilities_, self.costs_, float(k) * float(self.costs_.mean()),
                               rescale=self.rescale)


def _fit(sub: Pool, sel: Any):
    """The fitted selector and the systems to evaluate it on (None = all)."""
    sel = sel.fit(sub)
    crowd_rest = getattr(sel, "evaluated_systems_", None)  # artificial crowd: judge the systems outside it
    return sel, (tuple(sub.system_index(s) for s in crowd_rest) if crowd_rest else None)


def _curves(sub: Pool, fitted: dict, human_metric: str, kind: str, alpha: float, chain: str | dict[str, str],
            extra_sizes: np.ndarray | None = None) -> dict[str, tuple]:
    """Per method (grid proportions, {stat: curve}, systems). Nested orderings that share a system
    set are evaluated together, in one vectorised pass over the prefix sizes. Cost-aware picks are
    also taken at ``extra_sizes`` (the proportions' prefix sizes)."""
    H, n = sub.score(human_metric), sub.n_items
    out: dict[str, tuple] = {}
    groups: dict[tuple[int, ...] | None, list[str]] = defaultdict(list)
    for method, (sel, systems) in fitted.items():
        if _nested(sel):
            groups[systems].append(method)
            continue
        ev = _Evaluator(H if systems is None else H[:, list(systems)], kind, alpha, chain)
        sizes = _grid(n, nested=False)
        if isinstance(sel, _CostAware) and extra_sizes is not None:
            sizes = np.unique(np.r_[sizes, extra_sizes])
        out[method] = (sizes / n, ev.per_size({int(k): sel.select(int(k)).items for k in sizes}), systems)
    sizes = _grid(n, nested=True)
    for systems in {s for _, s in fitted.values()} - {None}:  # random judged on the same systems, to normalise
        groups[systems].append(_random_key(systems))
    for systems, names in groups.items():
        ev = _Evaluator(H if systems is None else H[:, list(systems)], kind, alpha, chain)
        orders = np.stack([fitted[m.partition("@")[0]][0].select(n).items for m in names])
        curves = ev.nested(orders, sizes)
        for row, m in enumerate(names):
            out[m] = (sizes / n, {k: v[row] for k, v in curves.items()}, systems)
    return out


def _random_key(systems: tuple[int, ...] | None) -> str:
    """Name under which random-as-a-method is kept for a set of evaluated systems."""
    return "random" if systems is None else "random@" + ",".join(map(str, systems))


def _results(pool, full, human_metric, metric, methods, seeds, subsample, props, kind, alpha, random_targets,
             per_seed, ntm, baseline, censored, timing, total) -> dict[str, Any]:
    curves = {}
    for m in methods:
        curves[m] = {}
        for i, p in enumerate(props):
            cell = {}
            for stat in STATS:
                vals = [c[i] for c in per_seed[m][stat]]
                cell[stat] = float(np.mean(vals))
                cell[f"{stat}_se"] = standard_error(vals)
            curves[m][f"{p:g}"] = cell
    out: dict[str, Any] = {"needed_to_match": {}, "needed_to_match_stays": {}, "needed_to_match_raw": {},
                           "mean_over_props": {}}
    for m in methods:  # the paper's Table 10 cell: the curve averaged over the proportions
        row = {}
        for stat in STATS:
            per = [float(np.mean(c)) for c in per_seed[m][stat]]
            row[stat], row[f"{stat}_se"] = float(np.mean(per)), standard_error(per)
        out["mean_over_props"][m] = row
    for m in methods:
        for key, rule, norm in (("needed_to_match", "first", True), ("needed_to_match_stays", "stays", True),
                                ("needed_to_match_raw", "first", False)):
            row = {}
            for stat in STATS:
                vals = np.asarray(ntm[m][stat][rule])
                if norm:
                    vals = vals / np.mean(ntm[baseline[m]][stat][rule])
                row[stat] = float(vals.mean())
                row[f"{stat}_se"] = standard_error(vals)
            out[key][m] = row
    return {
        "data": pool.name, "human_metric": human_metric, "metric": metric, "n_items": full.n_items,
        "n_items_subsample": max(2 * MIN_PREFIX, int(round(subsample * full.n_items))), "n_systems": full.n_systems,
        "seeds": seeds, "subsample": subsample, "props": list(props), "methods": list(methods),
        "correlation": kind, "alpha": alpha,
        "random_targets": {"orders_per_seed": random_targets,
                           "seeds": f"{TARGET_SEED_BASE} + seed * {random_targets} + r (disjoint from evaluation seeds)"},
        "rules": {"needed_to_match": "first crossing, normalised by random-as-a-method (random = 1.0)",
                  "needed_to_match_stays": "from the crossing on the curve stays at or above the target, normalised",
                  "needed_to_match_raw": "first crossing, not normalised"},
        "censored_targets": {m: censored[m] for m in methods},
        "curves": curves,
        **out,
        "timing_s": {"fit": {m: round(timing[m], 3) for m in methods}, "evaluation": round(timing["evaluation"], 3),
                     "total": round(total, 3)},
    }
