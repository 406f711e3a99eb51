"""Clusterings shared by the selectors: a hierarchy cut at any number of clusters, representatives,
and k-means picks.

- :class:`ClusterTree`: a binary hierarchy (from a scipy linkage) cut at any k without re-clustering;
  going from k to k + 1 clusters splits one cluster.
- :func:`pick_representative`: the member that stands for a cluster (nearest to the centre by
  cosine or Euclidean distance, largest norm, or random).
- :func:`bisecting_kmeans_tree`: k-means applied divisively, as a :class:`ClusterTree` (one fit for
  every number of clusters).
"""

from __future__ import annotations

import heapq

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


def bisecting_kmeans_tree(X: np.ndarray, seed: int = 0, max_iter: int = 30) -> ClusterTree:
    """Bisecting k-means (Steinbach, Karypis and Kumar, 2000) as a :class:`ClusterTree`.

    Starting from one cluster of all rows, the cluster with the largest within-cluster sum of
    squares (SSE) is split in two by 2-means (k-means++ seeding, Lloyd iterations until the
    assignment stops changing or ``max_iter``), until every item is its own cluster. The k-cluster
    cut of the tree is therefore the k-means-style partition after k - 1 splits, and going from k to
    k + 1 clusters splits one cluster -- so one fit serves every budget (and the iterative loop), as
    Ward's tree does. This is what evalsift's "k-means" selectors use instead of re-running flat
    k-means for every budget. A cluster that 2-means cannot divide (all rows equal) is split by
    peeling off its first member. Ties in SSE go to the cluster created first. Deterministic for a
    ``seed``.

    >>> t = bisecting_kmeans_tree(np.array([[0.0], [0.1], [5.0], [5.2]]))
    >>> sorted(sorted(t.members(c).tolist()) for c in t.clusters_at(2))
    [[0, 1], [2, 3]]
    """
    X = np.asarray(X, dtype=float)
    n = X.shape[0]
    if n <= 1:
        return ClusterTree(np.zeros((0, 4)), max(n, 1))
    rng = np.random.default_rng(seed)
    members: dict[int, np.ndarray] = {0: np.arange(n)}
    heap = [(-_sse(X), 0)]
    splits: list[tuple[int, int, int]] = []
    while heap:
        neg_sse, key = heapq.heappop(heap)
        m = members[key]
        left = _two_means(X[m], rng, max_iter) if neg_sse < 0 else None
        if left is None:  # identical rows (or 2-means found one side empty): peel off the first member
            left = np.zeros(len(m), dtype=bool)
            left[0] = True
        lk, rk = 2 * len(splits) + 1, 2 * len(splits) + 2
        members[lk], members[rk] = m[left], m[~left]
        splits.append((key, lk, rk))
        for k in (lk, rk):
            if len(members[k]) > 1:
                heapq.heappush(heap, (-_sse(X[members[k]]), k))
    ids = {k: int(m[0]) for k, m in members.items() if len(m) == 1}
    Z = np.zeros((n - 1, 4))
    for j, (parent, lk, rk) in enumerate(reversed(splits)):  # merge j undoes split n - 2 - j
        Z[j] = (ids[lk], ids[rk], j + 1, len(members[parent]))
        ids[parent] = n + j
    return ClusterTree(Z, n)


def _sse(Xm: np.ndarray) -> float:
    """Within-cluster sum of squared distances to the mean."""
    d = Xm - Xm.mean(axis=0)
    return float(np.einsum("ij,ij->", d, d))


def _two_means(Xm: np.ndarray, rng: np.random.Generator, max_iter: int) -> np.ndarray | None:
    """Boolean mask of one side of a 2-means split (k-means++ seeding), or None if it cannot divide."""
    first = Xm[rng.integers(len(Xm))]
    d2 = np.einsum("ij,ij->i", Xm - first, Xm - first)
    if d2.sum() <= 0:
        return None
    second = Xm[rng.choice(len(Xm), p=d2 / d2.sum())]
    centres = np.stack([first, second])
    left = None
    for _ in range(max_iter):
        dist = ((Xm[:, None, :] - centres[None]) ** 2).sum(axis=2)
        new = dist[:, 0] <= dist[:, 1]
        if left is not None and np.array_equal(new, left):
            break
        left = new
        if left.all() or not left.any():
            return None
        centres = np.stack([Xm[left].mean(axis=0), Xm[~left].mean(axis=0)])
    return left
