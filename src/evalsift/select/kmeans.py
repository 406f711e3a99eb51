"""k-means on item embeddings: one item per cluster, nearest to its centre (representativeness)."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import DataError
from ..pool import Pool
from .base import Selector, selector
from .clustering import kmeans_picks

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
    """k-means into ``budget`` clusters (one fit per budget), the item nearest each centre.

    ``space``: 'input' (embed the items' inputs) or 'output' (mean of the systems' output
    embeddings). Never fewer items than the budget (empty clusters are filled at random).
    """

    def __init__(self, *, space: str = "input", encoder: Any = "minilm", seed: int = 0) -> None:
        self.space = self._choice("space", space, SPACES)
        self.encoder = encoder
        self.seed = seed

    def _fit(self, pool: Pool) -> None:
        if self.space == "input":
            if not any(pool.inputs):
                raise DataError(f"space='input' needs item inputs, and pool {pool.name!r} has none; use space='output'")
            from ..embed import embed_texts

            self.vectors_ = np.asarray(embed_texts(list(pool.inputs), self.encoder), dtype=np.float64)
        else:
            self.vectors_ = output_embeddings(pool, self.encoder)

    def _select(self, budget: int):
        return kmeans_picks(self.vectors_, budget, self.seed, "euclidean")
