"""k-means on item embeddings: one item per cluster, nearest to its centre (representativeness).

The clustering is bisecting k-means (:func:`evalsift.select.clustering.bisecting_kmeans_tree`):
fitted once, cut into any number of clusters, so ``select`` is cheap for every budget.
subset2evaluate runs flat k-means once per budget; the clusters differ, the idea is the same.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import DataError
from ..pool import Pool
from .base import Selector, input_texts, selector
from .clustering import bisecting_kmeans_tree, pick_representative

SPACES = ("input", "output")


def output_embeddings(pool: Pool, encoder: Any) -> np.ndarray:
    """Per item, the mean embedding of the systems' outputs (missing outputs left out).

    Each distinct text is embedded once, through the encoder cache.
    """
    from ..embed import embed_texts

    texts, owner = [], []
    for s in pool.systems:
        for i, o in enumerate(pool.outputs[s]):
            if o is not None:
                texts.append(o)
                owner.append(i)
    if not texts:
        raise DataError(f"pool {pool.name!r} has no outputs to embed; use space='input'")
    E = np.asarray(embed_texts(texts, encoder), dtype=np.float64)
    owner_ = np.asarray(owner)
    sums = np.zeros((pool.n_items, E.shape[1]))
    np.add.at(sums, owner_, E)
    counts = np.bincount(owner_, minlength=pool.n_items)[:, None]
    return np.divide(sums, counts, out=np.zeros_like(sums), where=counts > 0)


@selector("kmeans", help="k-means on input (or mean output) embeddings; nearest item to each centre")
class KMeansSelector(Selector):
    """k-means clusters (bisecting, fitted once), one item per cluster: the one nearest its centre.

    ``space``: 'input' (embed the items' inputs) or 'output' (mean of the systems' output
    embeddings). ``select(k)`` returns one item per cluster of the k-cluster cut, largest cluster
    first, with the cluster sizes in ``Selection.cluster_sizes``.
    """

    randomised = True  # the bisecting splits are seeded

    def __init__(self, *, space: str = "input", encoder: Any = "minilm", seed: int = 0) -> None:
        self.space = self._choice("space", space, SPACES)
        self.encoder = encoder
        self.seed = seed

    def _fit(self, pool: Pool) -> None:
        if self.space == "input":
            from ..embed import embed_texts

            texts = input_texts(pool, self._label(), fix="use space='output'")
            self.vectors_ = np.asarray(embed_texts(texts, self.encoder), dtype=np.float64)
        else:
            self.vectors_ = output_embeddings(pool, self.encoder)
        self.tree_ = bisecting_kmeans_tree(self.vectors_, self.seed)
        self.reps_: dict[int, int] = {}

    def _select(self, budget: int):
        nodes = self.tree_.clusters_by_size(budget)
        for v in nodes.tolist():
            if v not in self.reps_:
                self.reps_[v] = pick_representative(self.vectors_, self.tree_.members(v), "euclidean")
        return np.array([self.reps_[v] for v in nodes], dtype=int), None, self.tree_.size[nodes]
