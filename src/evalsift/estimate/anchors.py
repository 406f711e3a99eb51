"""Which items a new system is judged on: the anchor designs of ``evalsift select anchors``.

Every design picks ``n`` of the ``M`` items of a response matrix of known systems (``Yk``, systems x
items) and gives each picked item a **weight** (the estimators' ``sum_i w_i y_i`` is the design's
estimate of the full-benchmark mean; the weights sum to 1) and, for a probability design, its
**inclusion probability** ``pi_i`` (``w_i = 1 / (M pi_i)``):

- ``random``: a uniform draw without replacement; ``pi = n / M``.
- ``stratified``: the items are cut into ``H = min(10, n // 5)`` strata (at least 1) of equal size by
  their mean score over the known systems (easy to hard), ``n`` is shared out in proportion to the
  strata's sizes (at least 2 each, so each stratum's variance can be estimated), and each stratum is
  drawn uniformly; ``pi = n_h / M_h``. Stratifying on difficulty lowers the variance of both the
  plain mean and the prediction-corrected one, and the design stays a probability sample, so
  design-based intervals hold.
- ``anchor-points``: tinyBenchmarks' anchor points (Maia Polo et al., ICML 2024, Sec. 3.1): k-means
  with ``k = n`` (scikit-learn's, from a greedy k-means++ start, one run, seeded) on the items' response vectors over the known
  systems; each cluster's anchor is the item nearest its centroid, weighted by the cluster's share of
  the items. Deterministic given the seed: no inclusion probabilities (two centroids whose nearest
  item is the same give one anchor with both weights, and a matrix with fewer distinct response
  vectors than ``n`` -- binary scores of a few systems -- gives fewer anchors than ``n``).
- ``anchor-irt``: the anchor points of tinyBenchmarks' code (``anchor_points.ipynb`` with
  ``clustering="irt"``, its default): scikit-learn's ``KMeans(n, n_init="auto", random_state=seed)``
  on the items' embeddings ``(gamma_j, b_j)`` of the multidimensional 2PL of
  :class:`evalsift.estimate.tinybench.TinyBenchmarks` fitted to the known systems (the authors use
  ``random_state=42``); each anchor is the item nearest its centre, weighted by its cluster's share.
  Two centres with the same nearest item give one anchor with both weights. Deterministic given the
  seed: no inclusion probabilities. ``anchor-points`` above is the code's other option
  (``clustering="correct."``, on the score vectors).
- ``irt``: IRT-information picks: a 2PL fitted to the known systems (:func:`evalsift.irt.fit_irt`),
  ``n`` target abilities spread evenly over the known systems' abilities, and for each the unpicked
  item of most Fisher information there; equal weights. Deterministic: no inclusion probabilities.

Only a probability design (``random``, ``stratified``) supports the design-based intervals of the
``mean`` and ``aipw`` estimators (:mod:`evalsift.estimate.estimators`).

>>> import numpy as np
>>> Yk = np.random.default_rng(0).random((5, 40))
>>> a = select_anchors(Yk, 8, "stratified", seed=1)
>>> len(a.items), round(float(a.weights.sum()), 6), a.probability_design
(8, 1.0, True)
"""

from __future__ import annotations

import json
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from ..errors import DataError, ParameterError, check_choice

DESIGNS = ("random", "stratified", "anchor-points", "irt", "anchor-irt")
PROBABILITY_DESIGNS = ("random", "stratified")
MAX_STRATA = 10


@dataclass(frozen=True, eq=False)
class Anchors:
    """Picked items (positions in the matrix, in pick order), their weights, inclusion probabilities
    (None for a deterministic design), strata (None when unstratified) and the design's settings."""

    items: np.ndarray
    weights: np.ndarray
    inclusion: np.ndarray | None
    strata: np.ndarray | None
    design: str
    seed: int
    pool_size: int
    stratum_sizes: dict[int, int] | None = None

    @property
    def probability_design(self) -> bool:
        """True when every picked item has an inclusion probability (a random draw)."""
        return self.inclusion is not None

    @property
    def n(self) -> int:
        """Items picked."""
        return len(self.items)

    def records(self, item_ids: Sequence[str]) -> list[dict[str, Any]]:
        """One JSON-ready row per picked item (what ``anchors.jsonl`` holds)."""
        out = []
        for k, pos in enumerate(self.items):
            h = None if self.strata is None else int(self.strata[k])
            out.append({"item_id": str(item_ids[pos]), "weight": float(self.weights[k]),
                        "inclusion_probability": None if self.inclusion is None else float(self.inclusion[k]),
                        "stratum": h, "stratum_size": None if h is None else int(self.stratum_sizes[h]),
                        "design": self.design, "seed": self.seed, "pool_size": self.pool_size})
        return out


def select_anchors(Yk, budget: int, design: str = "random", *, seed: int = 0, irt=None, tinybench=None) -> Anchors:
    """Pick ``budget`` items of the known systems' matrix ``Yk`` (systems x items) by ``design``
    (module doc). ``irt``: an :class:`~evalsift.irt.IRTResult` fitted to ``Yk`` (design ``irt``
    fits one when absent); ``tinybench``: a :class:`~evalsift.estimate.tinybench.TinyBenchmarks`
    fitted to ``Yk`` on the [0, 1] scale (design ``anchor-irt`` fits one when absent)."""
    design = check_choice("design", design, DESIGNS)
    Yk = np.asarray(Yk, dtype=float)
    if Yk.ndim != 2 or not np.isfinite(Yk).all():
        raise DataError("select_anchors: the known systems' scores must be a complete systems x items matrix "
                        "(no missing score)", field="responses")
    M = Yk.shape[1]
    n = int(budget)
    if not 1 <= n <= M:
        raise ParameterError(f"--budget {n}: must be between 1 and the {M} items of the data.", field="budget")
    rng = np.random.default_rng([int(seed), n, DESIGNS.index(design)])
    if design == "random":
        items = rng.choice(M, n, replace=False)
        return Anchors(items, np.full(n, 1.0 / n), np.full(n, n / M), None, design, int(seed), M)
    if design == "stratified":
        return _stratified(Yk, n, rng, int(seed))
    if design == "anchor-points":
        return _anchor_points(Yk, n, int(seed))
    if design == "anchor-irt":
        return _anchor_irt(Yk, n, int(seed), tinybench)
    return _irt_picks(Yk, n, int(seed), irt)


def _anchor_irt(Yk: np.ndarray, n: int, seed: int, tb) -> Anchors:
    from .tinybench import TinyBenchmarks, anchor_points

    if tb is None:
        lo, hi = unit_scale(Yk)
        tb = TinyBenchmarks.fit(np.clip((Yk - lo) / (hi - lo), 0.0, 1.0))
    M = Yk.shape[1]
    if tb.irt.n_items != M:
        raise DataError(f"anchor-irt: the tinyBenchmarks fit has {tb.irt.n_items} items, the known systems {M}",
                        field="responses")
    picked, share = anchor_points(n, irt=tb.irt, seed=seed)
    weights: dict[int, float] = {}
    for item, w in zip(picked, share):
        weights[int(item)] = weights.get(int(item), 0.0) + float(w)
    items = np.array(list(weights), dtype=int)
    return Anchors(items, np.array([weights[i] for i in items]), None, None, "anchor-irt", seed, M)


def difficulty_strata(Yk: np.ndarray, n: int) -> np.ndarray:
    """Stratum (0 = easiest) of every item: ``H = max(1, min(10, n // 5))`` equal-size strata by the
    item's mean score over the known systems (ties broken by position)."""
    M = Yk.shape[1]
    H = max(1, min(MAX_STRATA, n // 5, M // 2))
    order = np.lexsort((np.arange(M), -Yk.mean(axis=0)))
    strata = np.empty(M, dtype=int)
    strata[order] = np.arange(M) * H // M
    return strata


def _allocate(sizes: np.ndarray, n: int) -> np.ndarray:
    """Proportional allocation of ``n`` (largest remainder), at least 2 per stratum (1 when a stratum
    has a single item)."""
    floor = np.minimum(2, sizes)
    share = sizes / sizes.sum() * n - floor
    alloc = floor + np.floor(np.clip(share, 0, None)).astype(int)
    room = sizes - alloc
    while alloc.sum() < n:
        gap = np.where(room > 0, sizes / sizes.sum() * n - alloc, -np.inf)
        k = int(np.argmax(gap))
        alloc[k] += 1
        room[k] -= 1
    while alloc.sum() > n:  # only when the floors alone exceed n
        k = int(np.argmax(np.where(alloc > floor, alloc - sizes / sizes.sum() * n, -np.inf)))
        alloc[k] -= 1
    return alloc


def _stratified(Yk: np.ndarray, n: int, rng: np.random.Generator, seed: int) -> Anchors:
    M = Yk.shape[1]
    strata = difficulty_strata(Yk, n)
    H = int(strata.max()) + 1
    sizes = np.bincount(strata, minlength=H)
    alloc = _allocate(sizes, n)
    items, weights, incl, labels = [], [], [], []
    for h in range(H):
        members = np.flatnonzero(strata == h)
        pick = rng.choice(members, alloc[h], replace=False)
        items += pick.tolist()
        labels += [h] * len(pick)
        incl += [alloc[h] / sizes[h]] * len(pick)
        weights += [sizes[h] / (M * alloc[h])] * len(pick)
    order = rng.permutation(len(items))  # judge in a random order: a stopped run is still a spread
    pick = lambda v, dt=float: np.asarray(v, dtype=dt)[order]  # noqa: E731
    return Anchors(pick(items, int), pick(weights), pick(incl), pick(labels, int), "stratified", seed, M,
                   {h: int(sizes[h]) for h in range(H)})


def _anchor_points(Yk: np.ndarray, n: int, seed: int) -> Anchors:
    from sklearn.cluster import KMeans
    from sklearn.exceptions import ConvergenceWarning

    X = Yk.T  # items x known systems
    M = X.shape[0]
    with warnings.catch_warnings():  # fewer distinct response vectors than n (binary data, few systems): the
        warnings.simplefilter("ignore", ConvergenceWarning)  # clusters repeat, and so fewer anchors come back
        km = KMeans(n_clusters=n, n_init=1, init=greedy_kmeans_pp(X, n, np.random.default_rng(seed))).fit(X)
    d = ((km.cluster_centers_ ** 2).sum(1)[:, None] - 2 * km.cluster_centers_ @ X.T + (X ** 2).sum(1)[None, :])
    nearest = d.argmin(axis=1)
    share = np.bincount(km.labels_, minlength=n) / M
    weights: dict[int, float] = {}
    for c, item in enumerate(nearest):
        weights[int(item)] = weights.get(int(item), 0.0) + float(share[c])
    items = np.array(list(weights), dtype=int)
    return Anchors(items, np.array([weights[i] for i in items]), None, None, "anchor-points", seed, M)


def greedy_kmeans_pp(X: np.ndarray, k: int, rng: np.random.Generator) -> np.ndarray:
    """k-means++ starting centres with greedy local trials (Arthur & Vassilvitskii 2007; ``2 + log k``
    candidates per step, the one lowering the potential most is kept), the start scikit-learn's
    ``KMeans`` uses by default. Written here only for speed: one matrix product per step instead of
    scikit-learn's per-call overhead (1.5x faster on AlpacaEval's 797 x 56 matrix, the same inertia
    after Lloyd's iterations)."""
    M = len(X)
    sq = (X * X).sum(axis=1)
    trials = 2 + int(np.log(k))
    first = int(rng.integers(M))
    chosen = [first]
    d = np.maximum(sq - 2 * X @ X[first] + sq[first], 0.0)
    pot = float(d.sum())
    for _ in range(1, min(k, M)):
        if pot <= 0:  # every item sits on a centre already: the rest repeat (fewer distinct clusters)
            chosen.append(int(rng.integers(M)))
            continue
        cand = np.minimum(np.searchsorted(np.cumsum(d), rng.random(trials) * pot), M - 1)
        dc = np.minimum(np.maximum(sq[None, :] - 2 * X[cand] @ X.T + sq[cand, None], 0.0), d[None, :])
        pots = dc.sum(axis=1)
        best = int(np.argmin(pots))
        chosen.append(int(cand[best]))
        d, pot = dc[best], float(pots[best])
    return X[chosen]


def fit_item_model(Yk: np.ndarray, seed: int = 0):
    """The 2PL the ``irt`` design and the ``pirt``/``gpirt`` estimators use, fitted to ``Yk`` mapped
    to [0, 1] (:func:`unit_scale`; continuous scores enter as soft targets)."""
    from ..irt import fit_irt

    lo, hi = unit_scale(Yk)
    return fit_irt((Yk - lo) / (hi - lo), "2pl", seed=seed)


def unit_scale(Yk: np.ndarray) -> tuple[float, float]:
    """``(lo, hi)`` that map the scores to [0, 1]: ``(0, 1)`` when they already lie there, else the
    known systems' min and max."""
    lo, hi = float(np.min(Yk)), float(np.max(Yk))
    if lo >= 0 and hi <= 1:
        return 0.0, 1.0
    return lo, hi if hi > lo else lo + 1.0


def _irt_picks(Yk: np.ndarray, n: int, seed: int, irt) -> Anchors:
    irt = irt if irt is not None else fit_item_model(Yk, seed)
    M = Yk.shape[1]
    theta = np.sort(np.asarray(irt.ability))
    targets = np.quantile(theta, (np.arange(n) + 0.5) / n)
    a, b = np.asarray(irt.discrimination), np.asarray(irt.difficulty)
    taken = np.zeros(M, dtype=bool)
    items = []
    for t in targets:
        p = 1.0 / (1.0 + np.exp(-a * (t - b)))
        info = np.where(taken, -np.inf, a * a * p * (1 - p))
        j = int(np.argmax(info))
        taken[j] = True
        items.append(j)
    return Anchors(np.array(items), np.full(n, 1.0 / n), None, None, "irt", seed, M)


# ------------------------------------------------------------------------------------------ files
def write_anchors(path: str | Path, anchors: Anchors, item_ids: Sequence[str]) -> Path:
    """Write ``anchors.jsonl``: one row per picked item (:meth:`Anchors.records`), in pick order."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text("".join(json.dumps(r) + "\n" for r in anchors.records(item_ids)))
    tmp.replace(path)
    return path


def read_anchors(path: str | Path, item_ids: Sequence[str]) -> Anchors:
    """The design in ``path`` (``select anchors``' output, or any JSONL with an ``item_id`` per line:
    then a uniform random draw is assumed and said so by ``design = "given"``), matched to the
    positions of ``item_ids``. Errors name the line and the fix."""
    from ..io._common import iter_jsonl

    path = Path(path)
    pos = {str(i): k for k, i in enumerate(item_ids)}
    rows = []
    for line, rec in iter_jsonl(path, what="anchor items", expected="one {item_id, weight, ...} object per line"):
        if not isinstance(rec, dict) or "item_id" not in rec:
            raise DataError(f"{path}: line {line} has no item_id; every line must name one judged item.",
                            field="item_id")
        iid = str(rec["item_id"])
        if iid not in pos:
            raise DataError(f"{path}: line {line}: item {iid!r} is not among the {len(pos)} items of the data (or "
                            "lacks a score for some known system). Select the anchors on the same data.",
                            field="item_id", item_id=iid)
        rows.append((line, rec))
    if not rows:
        raise DataError(f"{path}: no anchor items.", field="item_id")
    ids = [str(r["item_id"]) for _, r in rows]
    if len(set(ids)) != len(ids):
        dup = next(i for i in ids if ids.count(i) > 1)
        raise DataError(f"{path}: item {dup!r} is listed twice.", field="item_id", item_id=dup)
    M = len(item_ids)
    sizes = {r.get("pool_size") for _, r in rows} - {None}
    if sizes and sizes != {M}:
        raise DataError(f"{path}: the anchors were picked from {sorted(sizes)[0]} items, the data has {M} complete "
                        "items; select them on the same data (and --metric).", field="pool_size")
    design = str(rows[0][1].get("design", "given"))
    seed = int(rows[0][1].get("seed") or 0)
    n = len(rows)
    items = np.array([pos[i] for i in ids])
    if "weight" in rows[0][1]:
        weights = np.array([float(r["weight"]) for _, r in rows])
    else:
        weights = np.full(n, 1.0 / n)
    incl_raw = [r.get("inclusion_probability", n / M if design == "given" else None) for _, r in rows]
    inclusion = None if any(v is None for v in incl_raw) else np.array(incl_raw, dtype=float)
    strata = stratum_sizes = None
    if all(r.get("stratum") is not None for _, r in rows):
        strata = np.array([int(r["stratum"]) for _, r in rows])
        stratum_sizes = {int(r["stratum"]): int(r["stratum_size"]) for _, r in rows}
    return Anchors(items, weights, inclusion, strata, design, seed, M, stratum_sizes)
