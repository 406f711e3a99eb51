"""DiffUse (Ashury-Tahan, Gera et al., ACL 2024): cluster the differences between two systems' outputs.

For each item the difference vector is ``emb(output_a) - emb(output_b)``. The vectors are clustered
with agglomerative clustering (Ward linkage, Euclidean distance) into N clusters for a budget of N,
and each cluster contributes the item whose difference vector is closest, in cosine distance, to
the cluster centre. One linkage serves every budget: the hierarchy is cut at any N without
re-clustering, and going from N to N + 1 clusters splits exactly one cluster (the iterative
algorithm of :mod:`evalsift.session` relies on this).

The paper's analysis variants are parameters of :class:`DiffUse` and registered presets:

=====================  =====================================================================
``diffuse``            Ward on difference vectors, representative nearest by cosine (the paper)
``diffuse_cosine``     average-linkage clustering under cosine distance (Ward needs Euclidean)
``diffuse_kmeans``     k-means with greedy k-means++ initialisation, one fit per budget
``diffuse_rep_random``  representative drawn at random from each cluster (seeded)
``diffuse_rep_euclidean``  representative nearest to the centre by Euclidean distance
``diffuse_rep_norm``   representative with the largest difference norm in its cluster
``max_norm``           baseline: the N items with the largest difference norm
``input_clusters``     baseline: Ward clustering of the *input* embeddings instead of differences
=====================  =====================================================================
"""

from __future__ import annotations

from typing import Any

import numpy as np
from scipy.cluster.hierarchy import linkage

from ..vectors import cosine_distances
from ..errors import DataError
from ..pool import Pool
from .base import Selector, selector
from .clustering import ClusterTree, kmeans_picks, pick_representative

CLUSTERINGS = ("ward", "cosine", "kmeans")
REPRESENTATIVES = ("cosine", "euclidean", "random", "norm")
SPACES = ("difference", "input")


def _embed(texts: list[str], encoder: Any) -> np.ndarray:
    from ..embed import embed_texts

    return np.asarray(embed_texts(texts, encoder), dtype=np.float64)


def difference_vectors(pool: Pool, encoder: Any = "minilm") -> np.ndarray:
    """Per item ``emb(output of pool.systems[0]) - emb(output of pool.systems[1])``.

    Shape ``(n_items, dim)``; row ``i`` belongs to item ``i``. Each distinct text is embedded once
    (and cached). Missing outputs are an error naming the item and system.
    """
    if pool.n_systems != 2:
        raise DataError(f"difference_vectors needs a two-system pool, got {pool.n_systems} systems; use pool.pair(a, b)")
    a, b = pool.systems
    for s in (a, b):
        missing = [pool.item_ids[i] for i, o in enumerate(pool.outputs[s]) if o is None]
        if missing:
            raise DataError(
                f"System {s!r} has no output for {len(missing)} item(s) (first: {missing[:3]}) in pool {pool.name!r}; "
                "DiffUse needs both outputs per item. Drop those items with pool.subset(...)."
            )
    emb = _embed(list(pool.outputs[a]) + list(pool.outputs[b]), encoder)
    n = pool.n_items
    return emb[:n] - emb[n:]


class DiffUse(Selector):
    """Cluster difference (or input) vectors; judge one representative per cluster.

    Parameters: ``encoder`` (name or Encoder; default all-MiniLM-L6-v2), ``clustering`` ('ward',
    'cosine', 'kmeans'), ``representative`` ('cosine', 'euclidean', 'random', 'norm'), ``space``
    ('difference' or 'input'), ``seed``.

    >>> from evalsift.io import make_demo_pool
    >>> pool = make_demo_pool(n_items=60).pair("A", "B")
    >>> sel = DiffUse(encoder="tfidf").fit(pool)
    >>> len(sel.select(10).items), len(set(sel.select(10).items))
    (10, 10)
    """

    pairwise = True

    def __init__(self, *, encoder: Any = "minilm", clustering: str = "ward", representative: str = "cosine",
                 space: str = "difference", seed: int = 0) -> None:
        self.encoder = encoder
        self.clustering = self._choice("clustering", clustering, CLUSTERINGS)
        self.representative = self._choice("representative", representative, REPRESENTATIVES)
        self.space = self._choice("space", space, SPACES)
        self.seed = seed

    def _fit(self, pool: Pool) -> None:
        if self.space == "difference":
            X = difference_vectors(pool, self.encoder)
        else:
            if not any(pool.inputs):
                raise DataError(f"space='input' needs item inputs, and pool {pool.name!r} has none")
            X = _embed(list(pool.inputs), self.encoder)
        self.vectors_ = X
        self._reps: dict[int, int] = {}
        self.tree_ = None
        if self.clustering != "kmeans" and pool.n_items > 1:
            Z = linkage(X, "ward") if self.clustering == "ward" else linkage(cosine_distances(X), "average")
            self.tree_ = ClusterTree(Z, pool.n_items)

    def representative_of(self, node: int) -> int:
        """Representative item of a tree node (cached: each node is resolved once per fit)."""
        if node not in self._reps:
            rng = np.random.default_rng([self.seed, node])
            self._reps[node] = pick_representative(self.vectors_, self.tree_.members(node), self.representative, rng)
        return self._reps[node]

    def _select(self, budget: int):
        if self.tree_ is None:
            return self._select_kmeans(budget) if self.clustering == "kmeans" else (np.array([0]), np.array([1.0]))
        nodes = sorted(self.tree_.clusters_at(budget), key=lambda v: (-self.tree_.size[v], -v))
        items = np.array([self.representative_of(v) for v in nodes], dtype=int)
        return items, self.tree_.size[nodes].astype(float)

    def _select_kmeans(self, budget: int):
        return kmeans_picks(self.vectors_, budget, self.seed, self.representative)

    def clusters(self, budget: int) -> np.ndarray:
        """Cluster label per item for ``budget`` clusters (hierarchical clusterings only)."""
        if self.tree_ is None:
            raise DataError("clusters() is defined for the hierarchical clusterings ('ward', 'cosine')")
        return self.tree_.labels(budget)


class MaxNorm(Selector):
    """Baseline: the items whose two outputs differ most (largest difference-vector norm)."""

    pairwise = True

    def __init__(self, *, encoder: Any = "minilm", seed: int = 0) -> None:
        self.encoder = encoder
        self.seed = seed

    def _fit(self, pool: Pool) -> None:
        self.norms_ = np.linalg.norm(difference_vectors(pool, self.encoder), axis=1)
        self.order_ = np.argsort(-self.norms_, kind="stable")

    def _select(self, budget: int):
        items = self.order_[:budget]
        return items, self.norms_[items]


def _preset(**fixed: Any):
    def factory(**params: Any) -> DiffUse:
        return DiffUse(**{**fixed, **params})

    return factory


selector("diffuse", help="DiffUse: Ward clusters of output differences, cosine-nearest representative")(_preset())
selector("diffuse_cosine", help="DiffUse with average-linkage cosine clustering")(_preset(clustering="cosine"))
selector("diffuse_kmeans", help="DiffUse with k-means (greedy k-means++) per budget")(_preset(clustering="kmeans"))
selector("diffuse_rep_random", help="DiffUse, random representative per cluster")(_preset(representative="random"))
selector("diffuse_rep_euclidean", help="DiffUse, Euclidean-nearest representative")(_preset(representative="euclidean"))
selector("diffuse_rep_norm", help="DiffUse, largest-norm representative per cluster")(_preset(representative="norm"))
selector("input_clusters", help="baseline: Ward clusters of input embeddings")(_preset(space="input"))
selector("max_norm", help="baseline: largest difference norm first")(MaxNorm)
