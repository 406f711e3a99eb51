"""The DiffUse paper's pairwise protocol: does a small judged sample pick the pool's winner?

For every system pair and seed, ``subsample`` (80%) of the items scored for both systems is the
test set; its winner under the oracle metric (more items won) is the truth. Each method is fitted
once per (pair, seed) and asked for every budget; a run succeeds when the majority on the selected
items equals the test-set winner (a tie on the sample is a failure). Test sets whose own result is
a tie are skipped and counted. The success rate per budget is the mean over all (pair, seed) runs;
its standard error is taken across seeds (the per-seed mean over pairs), since runs of one seed
share nothing but runs of one pair are correlated.

The iterative table runs :class:`evalsift.session.Session` with the same fitted selectors:
mean annotations, success / error / inconclusive shares, and the mean test winning distance
(``|wins_a - wins_b| / test size`` on the test set) per outcome.
"""

from __future__ import annotations

import itertools
import time
import warnings
from collections import defaultdict
from dataclasses import dataclass
from typing import Any, Iterator, Sequence

import numpy as np

from ..embed import embed_texts, get_encoder
from ..errors import DataError, DataWarning, ParameterError
from ..metrics import ensure_oracle_metric
from ..oracle.metric import MetricOracle
from ..pool import Pool
from ..restrict import restrict_pair
from ..select import build_selector, make_selector
from ..session import Session
from ..stats import count_verdicts, majority, standard_error
from ..progress import progress_bar
from .analyses import DiffUseAnalyses, tsne_projection, winning_distances
from .parallel import TaskJournal, import_ray, is_parallel, run_tasks, workers_timing

OUTCOMES = ("success", "error", "inconclusive")


def choose_pairs(systems: Sequence[str], max_pairs: int | None, seed: int = 0) -> list[tuple[str, str]]:
    """All unordered system pairs, or a seeded sample of ``max_pairs`` of them (same for every method)."""
    pairs = list(itertools.combinations(systems, 2))
    if max_pairs is not None and max_pairs < len(pairs):
        keep = np.sort(np.random.default_rng(seed).choice(len(pairs), size=max_pairs, replace=False))
        pairs = [pairs[i] for i in keep]
    return pairs


def restricted_pairs(pool: Pool, oracle: Any, max_pairs: int | None, where: str
                     ) -> tuple[dict[tuple[str, str], Any], dict[str, str]]:
    """Every chosen system pair restricted to the items the oracle can judge for both
    (:func:`choose_pairs`, :func:`~evalsift.restrict.restrict_pair`), and the pairs left out
    with the reason (fewer than 2 such items). Raises DataError when no pair is left."""
    restricted, left_out = {}, {}
    for a, b in choose_pairs(pool.systems, max_pairs):
        try:
            restricted[(a, b)] = restrict_pair(pool, a, b, oracle=oracle, min_items=2)
        except DataError as e:  # too few comparable items: the pair is left out, and said so
            left_out[f"{a} vs {b}"] = str(e)
    if not restricted:
        raise DataError(f"{where}: no system pair of pool {pool.name!r} has 2 or more items with both outputs "
                        f"that {oracle.name} can judge", field="oracle")
    return restricted, left_out


@dataclass(frozen=True)
class PairCase:
    """One (pair, seed) test set of the protocol: the subsampled pool, its verdicts and winner."""

    a: str
    b: str
    seed: int
    pool: Pool  # the test set: a seeded ``subsample`` share of the pair's comparable items
    truth: np.ndarray  # the oracle's verdict for each of its items ('a', 'b', 'tie')
    true_winner: str  # 'a', 'b' or 'tie' (more items won on the test set)
    distance: float  # |wins_a - wins_b| / test-set size


def pair_cases(restricted: dict[tuple[str, str], Any], oracle: Any, seeds: int, subsample: float
               ) -> Iterator[PairCase]:
    """The test sets of the protocol, pair by pair and seed by seed (tied ones included: the caller
    skips and counts them). Seed ``s`` draws the same items for every method and every benchmark."""
    for (a, b), r in restricted.items():
        truth_all = oracle.verdicts(r.pool, np.arange(r.pool.n_items), a, b)
        for seed in range(seeds):
            yield pair_case(r.pool, a, b, seed, truth_all, subsample)


def pair_case(pp: Pool, a: str, b: str, seed: int, truth_all: np.ndarray, subsample: float) -> PairCase:
    """One test set: the seeded ``subsample`` share of the pair's pool ``pp`` (whose items have the
    verdicts ``truth_all``), drawn from seed ``seed`` alone."""
    m_size = max(1, int(round(subsample * pp.n_items)))
    idx = np.sort(np.random.default_rng(seed).choice(pp.n_items, size=m_size, replace=False))
    truth = truth_all[idx]
    wa, wb, _ = count_verdicts(truth)
    return PairCase(a, b, seed, pp.subset(idx), truth, majority(wa, wb), abs(wa - wb) / m_size)


def case_tasks(restricted: dict[tuple[str, str], Any], oracle: Any, seeds: int, subsample: float
               ) -> tuple[dict[str, Any], list[tuple[tuple[str, str], int]]]:
    """The inputs shared by every (pair, seed) task -- each pair's pool and verdicts, ``subsample`` --
    and the tasks, in the order of :func:`pair_cases`; :func:`task_case` rebuilds a task's test set."""
    shared = {"pools": {k: r.pool for k, r in restricted.items()},
              "truth": {(a, b): oracle.verdicts(r.pool, np.arange(r.pool.n_items), a, b)
                        for (a, b), r in restricted.items()},
              "subsample": subsample}
    return shared, [(k, seed) for k in restricted for seed in range(seeds)]


def task_case(shared: dict[str, Any], task: tuple[tuple[str, str], int]) -> PairCase:
    """The test set of one (pair, seed) task of :func:`case_tasks` (the one :func:`pair_cases` yields)."""
    (a, b), seed = task
    return pair_case(shared["pools"][(a, b)], a, b, seed, shared["truth"][(a, b)], shared["subsample"])


def _warm_embeddings(pool: Pool, systems: set[str], methods: Sequence[str], encoder: Any, quiet: bool,
                     ship: bool = False) -> Any:
    """Embed the texts the selectors will ask for (once, cached); with ``ship``, return the encoder to
    hand to worker processes, carrying these vectors (:func:`~evalsift.bench.parallel.shippable_encoder`)."""
    from .parallel import shippable_encoder

    if not getattr(get_encoder(encoder), "cacheable", True):  # fitted on each call's texts (tfidf): nothing to keep
        return shippable_encoder(encoder) if ship else encoder
    texts = [o for s in pool.systems if s in systems for o in pool.outputs[s] if o is not None]
    if "input_clusters" in methods and pool.inputs_are_text:
        texts += [t for t in pool.inputs if t]
    vectors = embed_texts(texts, encoder, progress=not quiet)
    if not ship:
        return encoder

    unique = list(dict.fromkeys(texts))
    first = {t: i for i, t in reversed(list(enumerate(texts)))}
    return shippable_encoder(encoder, unique, vectors[[first[t] for t in unique]])


def bench_oracle(oracle: Any, pool: Pool, higher_is_better: bool = True, tie_tolerance: float = 0.0):
    """The oracle a benchmark replays: a metric name (``mqm``), a spec (``metric:mqm``,
    ``judgments:FILE``) or an Oracle object. It must give every item's verdict at once
    (``verdicts(pool, items, a, b)``) and say which items it can judge (``covers``)."""
    from ..oracle import make_oracle

    if isinstance(oracle, str) and ":" not in oracle:
        pool.check_metric(oracle)
        return MetricOracle(oracle, higher_is_better=higher_is_better, tie_tolerance=tie_tolerance)
    kind = oracle.partition(":")[0] if isinstance(oracle, str) else None
    params = {"higher_is_better": higher_is_better, "tie_tolerance": tie_tolerance} if kind == "metric" else {}
    built = make_oracle(oracle, **params)
    if getattr(built, "metric", None) is not None:
        pool.check_metric(built.metric)
    if not (hasattr(built, "verdicts") and hasattr(built, "covers")):
        raise ParameterError(f"a benchmark replays every item's verdict to know each pair's true winner; oracle "
                             f"{getattr(built, 'name', built)!r} cannot (use metric:NAME or judgments:FILE)",
                             field="oracle")
    return built


def pairwise_bench(pool: Pool, oracle: Any, methods: Sequence[str], budgets: Sequence[int], *,
                   seeds: int = 10, subsample: float = 0.8, max_pairs: int | None = None,
                   iterative: dict[str, Any] | None = None, higher_is_better: bool = True,
                   tie_tolerance: float = 0.0, encoder: Any = "minilm", quiet: bool = False,
                   analyses: dict[str, Any] | None = None, jobs: int | str | None = 1, backend: str = "local",
                   ray_address: str | None = None, journal: TaskJournal | None = None) -> dict[str, Any]:
    """Run the protocol; returns the ``results.json`` dictionary (see module doc and docs/cli.md).

    ``oracle``: a metric name (the old form, e.g. ``"mqm"``), an oracle spec (``"metric:mqm"``,
    ``"judgments:FILE"``) or an Oracle object with ``verdicts`` and ``covers`` (see
    :func:`bench_oracle`). ``iterative`` (e.g. ``{"risk": 0.2, "min_labels": 5, "max_labels": 200}``)
    adds the iterative table. ``analyses`` (e.g. ``{"clusters": 50, "bins": 5, "budget": 10}``, or
    ``{}`` for those defaults) adds DiffUse's own analyses (:mod:`evalsift.bench.analyses`).
    ``jobs`` / ``backend`` / ``ray_address``: the (pair, seed) test sets run on that many worker
    processes or on Ray (:func:`evalsift.bench.parallel.run_tasks`); the result is the serial one.
    ``journal``: test sets finished by an earlier run are taken from it, and each is added as it
    finishes.
    """
    if not 0 < subsample <= 1:
        raise ParameterError(f"bench pairwise: subsample must be in (0, 1], got {subsample}", field="subsample")
    if isinstance(seeds, bool) or not isinstance(seeds, int) or seeds < 1:
        raise ParameterError(f"bench pairwise: seeds must be a positive integer, got {seeds!r}", field="seeds")
    if max_pairs is not None and max_pairs < 1:
        raise ParameterError(f"bench pairwise: max_pairs must be >= 1, got {max_pairs}", field="max_pairs")
    if not budgets or any(isinstance(b, bool) or int(b) != b or b < 1 for b in budgets):
        raise ParameterError(f"bench pairwise: budgets must be positive integers, got {list(budgets)}", field="budgets")
    if pool.n_systems < 2:
        raise DataError(f"bench pairwise: pool {pool.name!r} has {pool.n_systems} system(s); it compares pairs")
    if iterative is not None:  # the paper's protocol: its rule unless another is asked for
        iterative = {"risk_rule": "paper", **iterative}
    for m in methods:
        make_selector(m)  # fail fast on an unknown name
    pool, oracle = ensure_oracle_metric(pool, oracle)  # metric:chrF-ref and the like, computed as compare does
    oracle = bench_oracle(oracle, pool, higher_is_better, tie_tolerance)
    oracle_metric = getattr(oracle, "metric", None)
    restricted, left_out_pairs = restricted_pairs(pool, oracle, max_pairs, "bench pairwise")
    pairs = list(restricted)
    largest = max(max(1, int(round(subsample * r.pool.n_items))) for r in restricted.values())
    budgets = sorted({int(b) for b in budgets})
    too_big = [b for b in budgets if b > largest]
    if len(too_big) == len(budgets):
        raise ParameterError(f"bench pairwise: every budget ({', '.join(map(str, budgets))}) is larger than the largest "
                             f"test set ({largest} items: {subsample:g} of a pair's comparable items); choose budgets "
                             f"up to {largest}", field="budgets")
    if too_big:
        warnings.warn(f"budgets {too_big} are larger than every pair's test set ({largest} items) and are left out",
                      DataWarning, stacklevel=2)
        budgets = [b for b in budgets if b <= largest]
    t_start = time.perf_counter()
    parallel = is_parallel(jobs, backend)
    if backend == "ray":
        import_ray()  # fail before the embeddings, with the install line
    worker_encoder = _warm_embeddings(pool, {s for p in pairs for s in p}, methods, encoder, quiet, ship=parallel)
    t_embed = time.perf_counter() - t_start

    hits: dict[str, dict[int, list[list[float]]]] = {m: defaultdict(lambda: [[] for _ in range(seeds)]) for m in methods}
    iters: dict[str, list[dict[str, Any]]] = {m: [] for m in methods}
    select_time: dict[str, float] = defaultdict(float)
    iter_time = 0.0
    ana = DiffUseAnalyses(**analyses, encoder=encoder) if analyses is not None else None
    skipped_ties, n_items = 0, [r.pool.n_items for r in restricted.values()]
    cases, tasks = case_tasks(restricted, oracle, seeds, subsample)
    shared = {"cases": cases, "methods": list(methods), "budgets": budgets, "encoder": worker_encoder,
              "iterative": iterative, "oracle": oracle, "analyses": analyses}
    with progress_bar(len(tasks), "pairs x seeds", quiet) as advance:
        done = run_tasks(_pairwise_task, tasks, shared=shared, jobs=jobs, backend=backend, ray_address=ray_address,
                         advance=advance, journal=journal)
    for ((_, seed), res) in zip(tasks, done):  # folded in task order: the serial run's order
        if res is None:
            skipped_ties += 1
            continue
        for method, rows in res["hits"].items():
            for budget, hit in rows:
                hits[method][budget][seed].append(hit)
            select_time[method] += res["select_time"][method]
        for method, row in res["iterative"].items():
            iters[method].append(row)
        iter_time += res["iterative_time"]
        if ana is not None:
            ana.merge(res["analyses"])
    curves = {m: {str(bud): _curve_point(per_seed) for bud, per_seed in sorted(hits[m].items())} for m in methods}
    result: dict[str, Any] = {
        "data": pool.name,
        "oracle_metric": oracle_metric if oracle_metric is not None else oracle.name,
        "oracle_spec": oracle.name,
        "oracle": ({"higher_is_better": oracle.higher_is_better, "tie_tolerance": oracle.tie_tolerance}
                   if oracle_metric is not None else {}),
        "n_items": int(np.median(n_items)) if n_items else 0,
        "n_items_per_pair": {"min": int(min(n_items, default=0)), "max": int(max(n_items, default=0))},
        "subsample": subsample,
        "n_pairs": len(pairs),
        "pairs": [list(p) for p in pairs],
        "seeds": seeds,
        "budgets": [int(b) for b in budgets],
        "methods": list(methods),
        "encoder": encoder if isinstance(encoder, str) else getattr(encoder, "name", str(encoder)),
        "skipped_tied_runs": skipped_ties,
        "left_out_pairs": left_out_pairs,
        "restricted_pairs": {f"{a} vs {b}": r.to_dict() for (a, b), r in restricted.items() if r.dropped},
        "se": "standard error across seeds of the per-seed mean over pairs",
        "curves": curves,
    }
    if iterative:
        result["iterative_params"] = dict(iterative)
        result["iterative"] = {m: _iterative_row(iters[m]) for m in methods if iters[m]}
        skipped = [m for m in methods if not iters[m]]
        if skipped:  # the anytime rule's guarantee needs a random order: it is not run on the others
            result["iterative_not_run"] = {m: "the anytime rule needs a uniformly random order (method random or "
                                              "diffuse_strata)"
                                           for m in skipped}
    if ana is not None:
        result["analyses"] = {"params": {"clusters": ana.clusters, "bins": ana.bins, "budget": ana.budget},
                              **ana.result(), **_pair_analyses(restricted, cases, encoder)}
    total = time.perf_counter() - t_start
    result["timing_s"] = {"embed": round(t_embed, 3), "select": {m: round(t, 3) for m, t in select_time.items()},
                          "iterative": round(iter_time, 3), "total": round(total, 3),
                          **workers_timing(jobs, backend, journal)}
    return result


def _pairwise_task(shared: dict[str, Any], task: tuple[tuple[str, str], int]) -> dict[str, Any] | None:
    """One (pair, seed) test set: every method fitted once and asked for every budget, the iterative
    loop, the analyses' share; None for a tied test set. Its randomness is the task's seed alone."""
    case = task_case(shared["cases"], task)
    if case.true_winner == "tie":
        return None
    encoder, iterative, oracle = shared["encoder"], shared["iterative"], shared["oracle"]
    a, seed, sub, truth, true_winner = case.a, case.seed, case.pool, case.truth, case.true_winner
    ana = DiffUseAnalyses(**shared["analyses"], encoder=encoder) if shared["analyses"] is not None else None
    out: dict[str, Any] = {"hits": {}, "select_time": {}, "iterative": {}, "iterative_time": 0.0}
    fitted = {}
    won_a, won_b = truth == "a", truth == "b"
    for method in shared["methods"]:
        t0 = time.perf_counter()
        sel = fitted[method] = build_selector(method, seed, {"encoder": encoder}).fit(sub)
        rows = out["hits"][method] = []
        for budget in shared["budgets"]:
            if budget <= sub.n_items:
                picked = sel.select(budget) if ana is not None else None
                items = picked.items if picked is not None else sel.picks(budget)
                sa, sb = int(np.count_nonzero(won_a[items])), int(np.count_nonzero(won_b[items]))
                rows.append((budget, float(majority(sa, sb) == true_winner)))
                if picked is not None:
                    ana.add_selection(method, picked, case)
        out["select_time"][method] = time.perf_counter() - t0
        if iterative and (iterative.get("risk_rule", "paper") != "anytime" or sel.random_order):
            t0 = time.perf_counter()
            d = Session(None, sel, **iterative).run(oracle)
            outcome = "inconclusive" if d.outcome != "winner" else (
                "success" if (d.winner == a) == (true_winner == "a") else "error")
            out["iterative"][method] = {"outcome": outcome, "labels": d.labels_used, "distance": case.distance}
            out["iterative_time"] += time.perf_counter() - t0
    if ana is not None:
        ana.add_case(case, fitted)
        out["analyses"] = ana.state()
    return out


def _pair_analyses(restricted: dict[tuple[str, str], Any], cases: dict[str, Any], encoder: Any) -> dict[str, Any]:
    """The analyses made once per benchmark rather than per test set: every pair's test winning
    distance on all its comparable items (Fig. 2) and the t-SNE of one seeded random pair's
    difference vectors (Fig. 7)."""
    from ..select.diffuse import difference_vectors

    out: dict[str, Any] = {"winning_distance": winning_distances(
        {f"{a} vs {b}": cases["truth"][(a, b)] for (a, b) in restricted})}
    pairs = [k for k, r in restricted.items() if r.pool.n_items >= 3]
    if pairs:
        a, b = pairs[int(np.random.default_rng(0).integers(len(pairs)))]
        out["tsne"] = {"pair": [a, b], **tsne_projection(difference_vectors(restricted[(a, b)].pool, encoder))}
    return out


def _curve_point(per_seed: list[list[float]]) -> dict[str, float]:
    flat = [x for s in per_seed for x in s]
    seed_means = [float(np.mean(s)) for s in per_seed if s]
    return {"success": float(np.mean(flat)) if flat else float("nan"), "se": standard_error(seed_means), "runs": len(flat)}


def _iterative_row(rows: list[dict[str, Any]]) -> dict[str, Any]:
    n = len(rows)
    if not n:
        return {"runs": 0, "annotations": float("nan"), **{o: float("nan") for o in OUTCOMES}, "distance": {}}
    out: dict[str, Any] = {"runs": n, "annotations": float(np.mean([r["labels"] for r in rows]))}
    for o in OUTCOMES:
        out[o] = sum(r["outcome"] == o for r in rows) / n
    out["distance"] = {o: float(np.mean([r["distance"] for r in rows if r["outcome"] == o]))
                       for o in OUTCOMES if any(r["outcome"] == o for r in rows)}
    return out
