"""Clusterings shared by the selectors: a hierarchy cut at any number of clusters, representatives,
and k-means picks.

- :class:`ClusterTree`: a binary hierarchy (from a scipy linkage) cut at any k without re-clustering;
  going from k to k + 1 clusters splits one cluster.
- :func:`pick_representative`: the member that stands for a cluster (nearest to the centre by
  cosine or Euclidean distance, largest norm, or random).
- :func:`kmeans_picks`: k-means into k clusters, one representative each.
"""

from __future__ import annotations

import warnings

import numpy as np

from ..vectors import unit_rows


class ClusterTree:
    """A binary hierarchy from a scipy linkage matrix, cut at any number of clusters.

    Nodes are numbered as in scipy: leaves ``0..n-1``, merge ``j`` creates node ``n + j``. Every
    node's leaves are contiguous in :attr:`order`, so members of a node are a slice.
    """

    def __init__(self, Z: np.ndarray, n: int) -> None:
        self.Z = np.asarray(Z)
        self.n = n
        left = self.Z[:, 0].astype(int) if n > 1 else np.zeros(0, int)
        right = self.Z[:, 1].astype(int) if n > 1 else np.zeros(0, int)
        self.children = np.stack([left, right], axis=1)
        size = np.ones(2 * n - 1, dtype=int)
        if n > 1:
            size[n:] = self.Z[:, 3].astype(int)
        self.size = size
        self.order, self.start = self._layout()

    def _layout(self) -> tuple[np.ndarray, np.ndarray]:
        n = self.n
        start = np.zeros(2 * n - 1, dtype=int)
        order = np.empty(n, dtype=int)
        stack, pos = [2 * n - 2], 0
        while stack:  # depth-first, left child first; each subtree occupies one slice
            node = stack.pop()
            start[node] = pos
            if node < n:
                order[pos] = node
                pos += 1
            else:
                l, r = self.children[node - n]
                stack.extend((r, l))
        return order, start

    def members(self, node: int) -> np.ndarray:
        """Item positions under ``node``."""
        s = self.start[node]
        return self.order[s : s + self.size[node]]

    def clusters_at(self, k: int) -> list[int]:
        """The nodes forming the ``k``-cluster cut (undo the last k - 1 merges)."""
        k = max(1, min(int(k), self.n))
        active = {2 * self.n - 2}
        for j in range(self.n - 2, self.n - 1 - k, -1):
            active.discard(self.n + j)
            active.update(int(c) for c in self.children[j])
        return sorted(active)

    def split_at(self, k: int) -> tuple[int, tuple[int, int]]:
        """Going from ``k`` to ``k + 1`` clusters splits this node into these two children."""
        j = self.n - 1 - k
        return self.n + j, (int(self.children[j][0]), int(self.children[j][1]))

    def labels(self, k: int) -> np.ndarray:
        """Cluster label (0..k-1) per item for the ``k``-cluster cut."""
        out = np.empty(self.n, dtype=int)
        for lab, node in enumerate(self.clusters_at(k)):
            out[self.members(node)] = lab
        return out


def pick_representative(X: np.ndarray, members: np.ndarray, rule: str, rng: np.random.Generator | None = None) -> int:
    """The member of a cluster that stands for it, by ``rule`` (see :data:`REPRESENTATIVES`).

    ``cosine`` and ``euclidean`` take the member nearest to the cluster mean; ``norm`` the member
    with the largest norm; ``random`` a uniform draw. Ties go to the lowest position in ``members``.
    """
    if len(members) == 1:
        return int(members[0])
    Xm = X[members]
    if rule == "random":
        return int(members[(rng or np.random.default_rng(0)).integers(len(members))])
    if rule == "norm":
        return int(members[np.argmax(np.einsum("ij,ij->i", Xm, Xm))])
    centre = Xm.mean(axis=0)
    if rule == "cosine" and np.linalg.norm(centre) > 0:
        return int(members[np.argmax(unit_rows(Xm) @ (centre / np.linalg.norm(centre)))])
    # euclidean, or cosine with a zero centre (every direction equally far): nearest by distance
    return int(members[np.argmin(np.einsum("ij,ij->i", Xm - centre, Xm - centre))])


def kmeans_picks(X: np.ndarray, budget: int, seed: int, representative: str = "euclidean") -> tuple[np.ndarray, np.ndarray]:
    """k-means (greedy k-means++, one init) into ``budget`` clusters; one representative each.

    Returns (items, cluster sizes), largest cluster first. When duplicate vectors leave clusters
    empty, the remaining picks are drawn at random from the other items: never fewer than ``budget``.
    """
    from sklearn.cluster import KMeans
    from sklearn.exceptions import ConvergenceWarning

    from threadpoolctl import threadpool_limits

    # one thread (OpenMP and BLAS): these fits are small, and on a busy machine spinning threads made
    # a single fit 10 to 40 times slower (measured: 17 s vs 0.45 s for k = 300 on 368 x 384)
    with warnings.catch_warnings(), threadpool_limits(limits=1):
        warnings.simplefilter("ignore", ConvergenceWarning)  # duplicate vectors: filled below
        km = KMeans(n_clusters=budget, init="k-means++", n_init=1, random_state=seed).fit(X)
    rng = np.random.default_rng(seed)
    picks, sizes = [], []
    for lab in range(budget):
        members = np.flatnonzero(km.labels_ == lab)
        if members.size:
            picks.append(pick_representative(X, members, representative, rng))
            sizes.append(members.size)
    order = np.argsort(-np.asarray(sizes), kind="stable")
    items = list(np.asarray(picks, dtype=int)[order])
    util = list(np.asarray(sizes, dtype=float)[order])
    if len(items) < budget:
        rest = rng.permutation(np.setdiff1d(np.arange(X.shape[0]), items))[: budget - len(items)]
        items += list(rest)
        util += [0.0] * len(rest)
    return np.asarray(items, dtype=int), np.asarray(util)
