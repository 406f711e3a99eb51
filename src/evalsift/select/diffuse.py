"""DiffUse (Ashury-Tahan, Gera et al., ACL 2024): cluster the differences between two systems' outputs.

For each item the difference vector is ``emb(output_a) - emb(output_b)``. The vectors are clustered
with agglomerative clustering (Ward linkage, Euclidean distance) into N clusters for a budget of N,
and each cluster contributes the item whose difference vector is closest, in cosine distance, to
the cluster centre. One linkage serves every budget: the hierarchy is cut at any N without
re-clustering, and going from N to N + 1 clusters splits exactly one cluster (the iterative
algorithm of :mod:`evalsift.session` relies on this).

Pools larger than ``exact_max`` items (default 10,000) are clustered by the two-level Ward tree of
:func:`evalsift.select.clustering.ward_tree` (mini-batch k-means micro-clusters joined by Ward on
their size-weighted centroids), with memory linear in the pool; representatives are still chosen
among each cluster's member items. ``docs/scale.md`` measures its agreement with exact Ward.

The paper's analysis variants, and some of ours (marked), are parameters of :class:`DiffUse` and
registered presets:

=========================  =================================================================
``diffuse``                Ward on difference vectors, representative nearest by cosine (the paper)
``diffuse_cosine``         hierarchical clustering under cosine distance, average linkage (the
                           paper does not name the linkage; average is our choice: Ward needs
                           Euclidean distances)
``diffuse_kmeans``         flat k-means with greedy k-means++ seeding, fitted for each budget
                           (the paper's k-means variant, App. A.3 of v1 / A.4 of v2)
``diffuse_bisect``         ours: bisecting k-means (k-means applied divisively), one fit for every
                           budget (what ``diffuse_kmeans`` was before)
``diffuse_concat``         Ward on the concatenation ``[emb(a), emb(b)]`` instead of the difference
                           (v1 Sec. 7.1 compares it)
``diffuse_add``            Ward on the sum ``emb(a) + emb(b)`` (v1 Sec. 7.1)
``diffuse_two_level``      ours: the two-level Ward tree even on small pools (``exact_max=50,
                           micro_size=5``, so a small budget meets many micro-clusters, as at
                           scale): how far the large-pool scheme is from exact Ward
                           (``docs/scale.md``)
``diffuse_rep_random``     representative drawn at random from each cluster (seeded)
``diffuse_rep_euclidean``  representative nearest to the centre by Euclidean distance
``diffuse_rep_norm``       representative with the largest difference norm in its cluster
``diffuse_strata``         ours, valid DiffUse: a uniformly random order, DiffUse's clusters as strata
                           that sharpen the anytime rule (``diffuse_random_rep`` is the same)
``max_norm``               baseline: the N items with the largest difference norm
``input_clusters``         baseline: Ward clustering of the *input* embeddings instead of
                           differences
=========================  =================================================================
"""

from __future__ import annotations

from typing import Any

import numpy as np
from scipy.cluster.hierarchy import linkage

from ..vectors import cosine_distances, unit_rows
from ..errors import DataError, ParameterError
from ..pool import Pool
from ..stats.sequential import StrataPredictor
from .base import Selector, input_texts, selector
from .clustering import (EXACT_WARD_MAX, MICRO_SIZE, ClusterTree, bisecting_kmeans_tree, flat_kmeans_labels,
                         pick_in_tree, pick_representative, ward_tree)
from .random import RandomSelector
from .utility import UtilitySelector

CLUSTERINGS = ("ward", "cosine", "kmeans", "bisect")
HIERARCHIES = ("ward", "cosine", "bisect")  # fitted once as a tree; "kmeans" is refitted per number of clusters
REPRESENTATIVES = ("cosine", "euclidean", "random", "norm")
SPACES = ("difference", "concatenation", "addition", "input")
AGGREGATIONS = {"difference": "emb(a) - emb(b)", "concatenation": "[emb(a), emb(b)]", "addition": "emb(a) + emb(b)"}


def _embed(texts: list[str], encoder: Any, dtype: Any = np.float64) -> np.ndarray:
    from ..embed import embed_texts

    return np.asarray(embed_texts(texts, encoder), dtype=dtype)


def difference_vectors(pool: Pool, encoder: Any = "minilm", dtype: Any = np.float64) -> np.ndarray:
    """Per item ``emb(output of pool.systems[0]) - emb(output of pool.systems[1])``.

    Shape ``(n_items, dim)``; row ``i`` belongs to item ``i``. Each distinct text is embedded once
    (and cached). Missing outputs are an error naming the item and system: restrict the pair to the
    items where both systems have an output first (:func:`evalsift.restrict.restrict_pair`).
    ``dtype=np.float32`` halves the memory of large pools (the subtraction is then done in float32).
    """
    return pair_vectors(pool, encoder, "difference", dtype)


def pair_vectors(pool: Pool, encoder: Any = "minilm", aggregation: str = "difference",
                 dtype: Any = np.float64) -> np.ndarray:
    """One vector per item from the embeddings of its two outputs, ``a = pool.systems[0]`` and ``b``.

    ``aggregation``: ``difference`` ``emb(a) - emb(b)`` (DiffUse's representation, shape ``(n, dim)``),
    ``concatenation`` ``[emb(a), emb(b)]`` (``(n, 2 dim)``) or ``addition`` ``emb(a) + emb(b)``
    (``(n, dim)``) -- the alternatives the first version of the paper compares in its Sec. 7.1. The
    errors of :func:`difference_vectors` apply.

    >>> from evalsift.io import make_demo_pool
    >>> p = make_demo_pool(n_items=6).pair("A", "B")
    >>> pair_vectors(p, "tfidf", "concatenation").shape[1] == 2 * pair_vectors(p, "tfidf", "addition").shape[1]
    True
    """
    if aggregation not in AGGREGATIONS:
        raise ParameterError(f"aggregation must be one of {', '.join(AGGREGATIONS)}, got {aggregation!r}",
                             field="aggregation")
    if pool.n_systems != 2:
        raise DataError(f"difference_vectors needs a two-system pool, got {pool.n_systems} systems; use pool.pair(a, b)")
    a, b = pool.systems
    for s in (a, b):
        missing = [pool.item_ids[i] for i, o in enumerate(pool.outputs[s]) if o is None]
        if missing:
            raise DataError(
                f"System {s!r} has no output for {len(missing)} item(s) (first: {missing[:3]}) in pool {pool.name!r}; "
                "DiffUse needs both outputs per item. Keep the items where both systems have an output with "
                "evalsift.restrict_pair(pool, a, b) (the command line does this and reports how many it drops).",
                system=s, item_id=missing[0], field="output")
    from ..embed import get_encoder

    enc = get_encoder(encoder)
    A, B, n = pool.outputs[a], pool.outputs[b], pool.n_items
    # A vector per text, so large pools go in blocks: never all 2n vectors at once. A corpus-dependent
    # encoder (TF-IDF) must see every text in one call.
    step = n if not getattr(enc, "cacheable", True) else _DIFF_BLOCK
    out: np.ndarray | None = None
    for start in range(0, n, step):
        stop = min(n, start + step)
        emb = _embed(list(A[start:stop]) + list(B[start:stop]), enc, dtype)
        k = stop - start
        ea, eb = emb[:k], emb[k:]
        if out is None:
            if stop == n:  # one block: the whole pool
                return _aggregate(ea, eb, aggregation)
            width = 2 * emb.shape[1] if aggregation == "concatenation" else emb.shape[1]
            out = np.empty((n, width), dtype=dtype)
        out[start:stop] = _aggregate(ea, eb, aggregation)
    assert out is not None
    return out


def _aggregate(ea: np.ndarray, eb: np.ndarray, aggregation: str) -> np.ndarray:
    """The per-item vectors of :func:`pair_vectors` from the two outputs' embeddings."""
    if aggregation == "difference":
        return ea - eb
    if aggregation == "addition":
        return ea + eb
    return np.concatenate([ea, eb], axis=1)


_DIFF_BLOCK = 131_072  # items per block of difference vectors
TWO_LEVEL_FROM = 50  # diffuse_two_level: exact Ward only inside micro-clusters of at most 50 items


class DiffUse(Selector):
    """Cluster difference (or other pair, or input) vectors; judge one representative per cluster.

    Parameters: ``encoder`` (name or Encoder; default all-MiniLM-L6-v2), ``clustering`` ('ward';
    'cosine' -- average linkage on cosine distances --; 'kmeans' -- flat k-means with greedy
    k-means++ seeding, refitted for each budget --; 'bisect' -- bisecting k-means, one fit),
    ``representative`` ('cosine', 'euclidean', 'random', 'norm'), ``space`` ('difference',
    'concatenation' or 'addition' of the two outputs' embeddings (:func:`pair_vectors`), or
    'input'), ``exact_max`` (pools up to this size get exact Ward, larger ones the two-level tree of
    :func:`~evalsift.select.clustering.ward_tree`), ``micro_size`` (items per micro-cluster the
    two-level tree aims at; at most 1,024 micro-clusters per level), ``seed``.

    The hierarchies ('ward', 'cosine', 'bisect') are fitted once: ``select(k)`` cuts the tree into k
    clusters. 'kmeans' clusters anew for each k (the clusters at k and k + 1 need not be nested;
    each budget's clustering is kept once computed). Either way ``select(k)`` returns one
    representative per cluster, largest cluster first, with the clusters' sizes as
    ``Selection.cluster_sizes`` (the number of pool items each pick stands for).

    >>> from evalsift.io import make_demo_pool
    >>> pool = make_demo_pool(n_items=60).pair("A", "B")
    >>> sel = DiffUse(encoder="tfidf").fit(pool)
    >>> len(sel.select(10).items), len(set(sel.select(10).items))
    (10, 10)
    """

    pairwise = True

    def __init__(self, *, encoder: Any = "minilm", clustering: str = "ward", representative: str = "cosine",
                 space: str = "difference", exact_max: int = EXACT_WARD_MAX, micro_size: int = MICRO_SIZE,
                 seed: int = 0) -> None:
        self.encoder = encoder
        self.clustering = self._choice("clustering", clustering, CLUSTERINGS)
        self.representative = self._choice("representative", representative, REPRESENTATIVES)
        self.space = self._choice("space", space, SPACES)
        self.exact_max = _count(self, "exact_max", exact_max, minimum=1)
        self.micro_size = _count(self, "micro_size", micro_size, minimum=1)
        self.seed = seed

    def _fit(self, pool: Pool) -> None:
        dtype = np.float64 if pool.n_items <= self.exact_max else np.float32  # large pools: half the memory
        if self.space == "input":
            X = _embed(input_texts(pool, self._label()), self.encoder, dtype)
        else:
            X = pair_vectors(pool, self.encoder, self.space, dtype)
        self.vectors_ = X
        self.reps_: dict[int, int] = {}
        self.flat_: dict[int, tuple[np.ndarray, np.ndarray, np.ndarray]] = {}  # 'kmeans': budget -> labels, picks, sizes
        self.tree_ = None if self.clustering == "kmeans" else cluster_tree(
            X, self.clustering, self.seed, exact_max=self.exact_max, micro_size=self.micro_size)

    def representative_of(self, node: int) -> int:
        """Representative item of a tree node (cached: each node is resolved once per fit)."""
        if node not in self.reps_:
            rule = self.representative
            if rule != "random" and self.vectors_.shape[0] <= self.exact_max:
                if "ordered_" not in self.__dict__:  # once per fit: the rows in leaf order, each node a slice
                    Xo = self.vectors_[self.tree_.order]
                    self.ordered_ = (Xo, unit_rows(Xo) if rule == "cosine" else None)
                self.reps_[node] = pick_in_tree(self.tree_, self.ordered_[0], node, rule, self.ordered_[1])
            else:  # random, or a large pool (no second copy of its vectors)
                rng = np.random.default_rng([self.seed, node]) if rule == "random" else None
                self.reps_[node] = pick_representative(self.vectors_, self.tree_.members(node), rule, rng)
        return self.reps_[node]

    def _flat(self, k: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """'kmeans': the labels, picks (largest cluster first) and sizes of the k-cluster fit."""
        if k not in self.flat_:
            labels = flat_kmeans_labels(self.vectors_, k, self.seed)
            sizes = np.bincount(labels)
            order = sorted(range(len(sizes)), key=lambda c: (-sizes[c], c))
            picks = np.array([pick_representative(self.vectors_, np.flatnonzero(labels == c), self.representative,
                                                  np.random.default_rng([self.seed, k, c])) for c in order], dtype=int)
            self.flat_[k] = (labels, picks, sizes[order])
        return self.flat_[k]

    def _select(self, budget: int):
        if self.tree_ is None:
            _, picks, sizes = self._flat(budget)
            return picks, None, sizes
        nodes = self.tree_.clusters_by_size(budget)
        reps = self.reps_
        items = np.array([reps[v] if v in reps else self.representative_of(v) for v in nodes.tolist()], dtype=int)
        return items, None, self.tree_.size[nodes]

    def clusters(self, budget: int) -> np.ndarray:
        """Cluster label (0..budget-1) per item for ``budget`` clusters."""
        self._check_fitted()
        if self.tree_ is None:
            return self._flat(max(1, min(int(budget), self.pool_.n_items)))[0].copy()
        return self.tree_.labels(budget)


class DiffUseStrata(RandomSelector):
    """DiffUse made valid: judge the items in a uniformly random order (the ``random`` selector's
    order for the same seed) and use DiffUse's clusters as *strata* that sharpen the anytime rule.

    The clusters are DiffUse's tree of the difference vectors, cut at 2, 4, 8, ... clusters (up to
    half the pool). ``control_`` predicts every unjudged item's verdict as its cluster's mean verdict
    so far, shrunk toward the coarser cluster above it (``shrink`` pseudo-verdicts;
    :class:`~evalsift.stats.StrataPredictor`); the anytime rule uses those predictions as a control
    variate (:mod:`evalsift.stats.sequential`). Its guarantee is the random order's: the
    predictions can only change how fast it decides, never how often it is wrong. What the
    clusters buy is the share of the verdicts' variance they explain
    (``benchmarks/select/strata_information.py``; measured in ``docs/confidence.md``).

    Why not one random representative per cluster, as the paper's structure suggests: a stratified
    draw makes the null hypothesis composite (one mean per stratum), and a sequential test must
    then beat every split of the pool's mean among the strata; drawing uniformly and
    post-stratifying keeps one null and, asymptotically, the same variance as proportional
    allocation.

    >>> from evalsift.io import make_demo_pool
    >>> pool = make_demo_pool(n_items=60).pair("A", "B")
    >>> sel = DiffUseStrata(encoder="tfidf", seed=2).fit(pool)
    >>> list(sel.select(5).items) == list(RandomSelector(seed=2).fit(pool).select(5).items)
    True
    """

    pairwise = True

    def __init__(self, *, encoder: Any = "minilm", clustering: str = "ward", shrink: float = 4.0,
                 exact_max: int = EXACT_WARD_MAX, seed: int = 0) -> None:
        self.encoder = encoder
        self.clustering = self._choice("clustering", clustering, CLUSTERINGS)
        self.exact_max = _count(self, "exact_max", exact_max, minimum=1)
        if isinstance(shrink, bool) or not isinstance(shrink, (int, float)) or not shrink > 0:
            raise ParameterError(f"selector 'diffuse_strata': shrink must be a number > 0 (pseudo-verdicts pulling a "
                                 f"cluster's mean toward its parent's), got {shrink!r}", field="shrink")
        self.shrink = shrink
        self.seed = seed

    def _fit(self, pool: Pool) -> None:
        super()._fit(pool)
        n = pool.n_items
        dtype = np.float64 if n <= self.exact_max else np.float32
        X = difference_vectors(pool, self.encoder, dtype)
        ks = [2 ** j for j in range(1, max(1, n // 2).bit_length()) if 2 ** j <= n // 2]
        if self.clustering == "kmeans":  # flat k-means: one fit per number of strata
            levels = [flat_kmeans_labels(X, k, self.seed) for k in ks]
        else:
            tree = cluster_tree(X, self.clustering, self.seed, exact_max=self.exact_max)
            levels = [tree.labels(k) for k in ks]
        self.control_ = StrataPredictor(levels, float(self.shrink))


def cluster_tree(X: np.ndarray, clustering: str, seed: int = 0, *, exact_max: int = EXACT_WARD_MAX,
                 micro_size: int = MICRO_SIZE) -> ClusterTree:
    """The fitted hierarchy of the rows of ``X``: Ward ('ward'), average-linkage cosine ('cosine'), or
    bisecting k-means ('bisect'). Flat k-means ('kmeans') is no hierarchy and is refused here.

    Ward is exact up to ``exact_max`` rows and two-level above (:func:`~.clustering.ward_tree`).
    Average linkage keeps all n^2 cosine distances, so above ``exact_max`` rows it is refused.
    """
    n = X.shape[0]
    if clustering not in HIERARCHIES:
        raise ParameterError(f"clustering={clustering!r} is not a hierarchy (one of: {', '.join(HIERARCHIES)}); flat "
                             "k-means is refitted per number of clusters (flat_kmeans_labels)", field="clustering")
    if clustering == "bisect":
        return bisecting_kmeans_tree(X, seed)
    if clustering == "ward":
        return ward_tree(X, seed, exact_max=exact_max, micro_size=micro_size)
    if n > exact_max:
        raise ParameterError(
            f"clustering='cosine' (average linkage) keeps all {n:,} x {n:,} cosine distances "
            f"({4 * n * (n - 1) / 1e9:.1f} GB); above exact_max={exact_max:,} items use clustering='ward' (two-level "
            "at this size), 'kmeans' or 'bisect', or raise exact_max if the memory is there.", field="clustering")
    if n <= 1:
        return ClusterTree(np.zeros((0, 4)), max(n, 1))
    return ClusterTree(linkage(cosine_distances(X), "average"), n)


def _count(sel: Any, name: str, value: Any, minimum: int) -> int:
    """A whole-number parameter >= ``minimum``, or a ParameterError naming it."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < minimum:
        raise ParameterError(f"{sel._label()}: {name} must be a whole number >= {minimum}, got {value!r}", field=name)
    return int(value)


class MaxNorm(UtilitySelector):
    """Baseline: the items whose two outputs differ most; utility = difference-vector norm."""

    pairwise = True

    def __init__(self, *, encoder: Any = "minilm", seed: int = 0) -> None:
        self.encoder = encoder
        self.seed = seed

    def _utilities(self, pool: Pool) -> np.ndarray:
        return np.linalg.norm(difference_vectors(pool, self.encoder), axis=1)


def _preset(**fixed: Any):
    def factory(**params: Any) -> DiffUse:
        return DiffUse(**{**fixed, **params})

    return factory


selector("diffuse", help="DiffUse: Ward clusters of output differences, cosine-nearest representative")(DiffUse)
selector("diffuse_cosine", help="DiffUse with average-linkage cosine clustering (the linkage is our choice)")(
    _preset(clustering="cosine"))
selector("diffuse_kmeans", help="DiffUse with flat k-means, greedy k-means++, fitted per budget (the paper's variant)")(
    _preset(clustering="kmeans"))
selector("diffuse_bisect", help="DiffUse with bisecting k-means (ours: one fit for every budget)")(
    _preset(clustering="bisect"))
selector("diffuse_concat", help="DiffUse on concatenated output embeddings [emb(a), emb(b)] (paper v1 Sec. 7.1)")(
    _preset(space="concatenation"))
selector("diffuse_add", help="DiffUse on summed output embeddings emb(a) + emb(b) (paper v1 Sec. 7.1)")(
    _preset(space="addition"))
selector("diffuse_two_level", help="DiffUse with the two-level Ward tree even on small pools (the default above "
                                   f"{EXACT_WARD_MAX:,} items; here to measure it against exact Ward)")(
    _preset(exact_max=TWO_LEVEL_FROM, micro_size=5))
selector("diffuse_rep_random", help="DiffUse, random representative per cluster")(_preset(representative="random"))
selector("diffuse_rep_euclidean", help="DiffUse, Euclidean-nearest representative")(_preset(representative="euclidean"))
selector("diffuse_rep_norm", help="DiffUse, largest-norm representative per cluster")(_preset(representative="norm"))
selector("input_clusters", help="baseline: Ward clusters of input embeddings")(_preset(space="input"))
selector("diffuse_strata", help="valid DiffUse: random order, DiffUse's clusters as strata for the anytime rule")(
    DiffUseStrata)
selector("diffuse_random_rep", help="another name for diffuse_strata (the same selector), kept so older "
                                    "command lines and scripts still work")(
    lambda **params: DiffUseStrata(**params))
selector("max_norm", help="baseline: largest difference norm first")(MaxNorm)
