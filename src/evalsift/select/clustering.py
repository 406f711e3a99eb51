"""Clusterings shared by the selectors: a hierarchy cut at any number of clusters, representatives,
and k-means picks.

- :class:`ClusterTree`: a binary hierarchy (from a scipy linkage) cut at any k without re-clustering;
  going from k to k + 1 clusters splits one cluster.
- :func:`pick_representative`: the member that stands for a cluster (nearest to the centre by
  cosine or Euclidean distance, largest norm, or random); :func:`pick_in_tree` the same for a tree's
  node, reading its members in place.
- :func:`bisecting_kmeans_tree`: k-means applied divisively, as a :class:`ClusterTree` (one fit for
  every number of clusters).
- :func:`flat_kmeans_labels`: flat k-means for one number of clusters (scikit-learn, greedy k-means++
  seeding), refitted for every k -- not a hierarchy.
- :func:`ward_tree`: Ward's hierarchy at any size -- exact (scipy) up to ``exact_max`` rows, above it
  two-level: mini-batch k-means micro-clusters, Ward on their size-weighted centroids
  (:func:`weighted_ward_linkage`), each micro-cluster's own Ward tree below, one merge order for all.
"""

from __future__ import annotations

import heapq
import math
import threading

import numpy as np
from scipy.cluster.hierarchy import linkage

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
        """The nodes forming the ``k``-cluster cut (undo the last k - 1 merges), ascending."""
        return self._cut(k).tolist()

    def clusters_by_size(self, k: int) -> np.ndarray:
        """The ``k``-cluster cut's nodes, largest cluster first (equal sizes: the higher node first)."""
        nodes = self._cut(k)
        return nodes[np.lexsort((-nodes, -self.size[nodes]))]

    def _cut(self, k: int) -> np.ndarray:
        """The nodes of the ``k``-cluster cut, ascending: the children of the last k - 1 merges (j >=
        n - k) that are not themselves among those merges, O(k) whatever the tree's size."""
        n = self.n
        k = max(1, min(int(k), n))
        if k == 1:
            return np.array([2 * n - 2], dtype=int)
        nodes = self.children[n - k:].reshape(-1)
        return np.sort(nodes[nodes < 2 * n - k])  # node n + j was undone iff j >= n - k

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


def pick_representative(X: np.ndarray, members: np.ndarray, rule: str, rng: np.random.Generator | None = None,
                        unit: np.ndarray | None = None) -> int:
    """The member of a cluster that stands for it, by ``rule`` (see :data:`REPRESENTATIVES`).

    ``cosine`` and ``euclidean`` take the member nearest to the cluster mean; ``norm`` the member
    with the largest norm; ``random`` a uniform draw. Ties go to the lowest position in ``members``.
    ``unit``: ``unit_rows(X)``, when the caller picks for many clusters of the same ``X`` (the same
    values, computed once).
    """
    if len(members) == 1:
        return int(members[0])
    if rule == "random":
        return int(members[(rng or np.random.default_rng(0)).integers(len(members))])
    if len(members) > _CHUNK:
        return _pick_in_chunks(X, members, rule)
    return int(members[_pick_in_block(X[members], rule, None if unit is None else unit, members)])


def pick_in_tree(tree: "ClusterTree", ordered: np.ndarray, node: int, rule: str,
                 ordered_unit: np.ndarray | None = None) -> int:
    """:func:`pick_representative` for a node of ``tree``, given the rows in the tree's leaf order
    (``ordered = X[tree.order]``, ``ordered_unit = unit_rows(ordered)`` for ``cosine``): a node's
    members are then one slice, read in place. Same pick; not for ``random``.

    >>> X = np.array([[0.0, 1.0], [5.0, 5.0], [0.1, 1.0], [5.0, 5.2]])
    >>> t = ClusterTree(linkage(X, "ward"), 4)
    >>> Xo = X[t.order]
    >>> [pick_in_tree(t, Xo, v, "euclidean") == pick_representative(X, t.members(v), "euclidean")
    ...  for v in t.clusters_at(2)]
    [True, True]
    """
    s, z = int(tree.start[node]), int(tree.size[node])
    if z == 1:
        return int(tree.order[s])
    block = slice(s, s + z)
    return int(tree.order[s + _pick_in_block(ordered[block], rule,
                                             None if ordered_unit is None else ordered_unit[block])])


def _pick_in_block(Xm: np.ndarray, rule: str, unit: np.ndarray | None, members: np.ndarray | None = None) -> int:
    """Position, in the rows ``Xm``, of the representative by ``rule`` ('cosine', 'euclidean',
    'norm'; ties to the first). ``unit``: the rows' unit vectors -- of ``Xm`` itself, or of the
    whole matrix when ``members`` says which of its rows ``Xm`` holds."""
    if rule == "norm":
        return int(np.einsum("ij,ij->i", Xm, Xm).argmax())
    centre = np.add.reduce(Xm, axis=0) / Xm.shape[0]  # Xm.mean(axis=0), the same values, less overhead
    if rule == "cosine":
        norm = math.sqrt(centre.dot(centre))  # np.linalg.norm's own formula for a vector
        if norm > 0:
            U = unit_rows(Xm) if unit is None else unit if members is None else unit[members]
            return int((U @ (centre / norm)).argmax())
    # euclidean, or cosine with a zero centre (every direction equally far): nearest by distance
    d = Xm - centre
    return int(np.einsum("ij,ij->i", d, d).argmin())


_CHUNK = 65_536  # members per block when a cluster is too large to copy at once


def _pick_in_chunks(X: np.ndarray, members: np.ndarray, rule: str) -> int:
    """:func:`pick_representative` for a huge cluster, one block of members at a time (no full copy)."""
    blocks = [members[i:i + _CHUNK] for i in range(0, len(members), _CHUNK)]
    centre = sum(np.asarray(X[b], dtype=np.float64).sum(axis=0) for b in blocks) / len(members)
    norm = np.linalg.norm(centre)
    best, best_score = -1, -np.inf
    for b in blocks:
        Xb = np.asarray(X[b], dtype=np.float64)
        if rule == "norm":
            score = np.einsum("ij,ij->i", Xb, Xb)
        elif rule == "cosine" and norm > 0:
            score = unit_rows(Xb) @ (centre / norm)
        else:
            score = -np.einsum("ij,ij->i", Xb - centre, Xb - centre)
        j = int(np.argmax(score))
        if score[j] > best_score:  # strict: ties stay with the earlier member
            best, best_score = int(b[j]), float(score[j])
    return best


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


def flat_kmeans_labels(X: np.ndarray, k: int, seed: int = 0) -> np.ndarray:
    """Flat k-means of the rows of ``X`` into ``k`` clusters: a label (0..k-1) per row.

    scikit-learn's :class:`~sklearn.cluster.KMeans` with ``init="k-means++"`` -- scikit-learn's
    k-means++ is the *greedy* variant: each new centre is the best, by inertia, of ``2 + ln k``
    candidates drawn with probability proportional to the squared distance to the nearest chosen
    centre -- then Lloyd iterations (scikit-learn's defaults: at most 300, tolerance 1e-4), one
    initialisation, ``random_state=seed``. Unlike :func:`bisecting_kmeans_tree` it is fitted anew for
    every ``k``, and the clusters at ``k`` and ``k + 1`` need not be nested.

    When k-means leaves fewer than ``k`` non-empty clusters (only possible when ``X`` has fewer than
    ``k`` distinct rows), the largest cluster is split by peeling off its last member, until there
    are ``k``: a budget is never short (identical rows are interchangeable). Labels are numbered by
    the first row of each cluster. ``k`` is capped at the number of rows.

    >>> X = np.array([[0.0], [0.1], [5.0], [5.2], [9.0]])
    >>> flat_kmeans_labels(X, 3).tolist()
    [0, 0, 1, 1, 2]
    """
    import contextlib
    import warnings

    from sklearn.cluster import KMeans
    from sklearn.exceptions import ConvergenceWarning
    from threadpoolctl import threadpool_limits

    X = np.asarray(X, dtype=np.float64)
    n = X.shape[0]
    k = max(1, min(int(k), n))
    if k == 1:
        return np.zeros(n, dtype=int)
    threads = threadpool_limits(1) if n <= 4096 else contextlib.nullcontext()  # small fits: thread start-up dominates
    with warnings.catch_warnings(), threads:
        warnings.simplefilter("ignore", ConvergenceWarning)  # "Number of distinct clusters found smaller than ..."
        raw = KMeans(n_clusters=k, init="k-means++", n_init=1, random_state=seed).fit(X).labels_
    _, first, labels = np.unique(raw, return_index=True, return_inverse=True)
    labels = np.argsort(np.argsort(first))[labels]  # number clusters by their first row
    m = int(labels.max()) + 1
    while m < k:
        counts = np.bincount(labels, minlength=m)
        big = int(np.argmax(counts))  # the largest (lowest label on ties) has >= 2 members since m < k <= n
        labels[np.flatnonzero(labels == big)[-1]] = m
        m += 1
    return labels


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


# ------------------------------------------------------------------------------------------------
# Ward at any size
# ------------------------------------------------------------------------------------------------

EXACT_WARD_MAX = 10_000
"""Largest number of rows :func:`ward_tree` clusters with exact Ward (scipy).

scipy's Ward keeps the condensed distance matrix, n(n-1)/2 doubles, and its time grows as n^2:
measured here (``benchmarks/select/diffuse_scale.py``), 10,000 rows take about 6 s and 1.3 GB, 20,000
rows 23 s and 3.2 GB, 40,000 rows 187 s and 12.4 GB. Above 10,000 the two-level tree is many times
faster and smaller, and its picks agree with exact Ward's about as often as two exact fits on
overlapping samples do (``docs/scale.md``)."""

MICRO_SIZE = 20
"""Items per micro-cluster the two-level tree aims at (the micro-clusters number n / MICRO_SIZE)."""

INNER_EXACT_MAX = 2_000
"""Largest micro-cluster given exact Ward (about 0.2 s); k-means leaves some micro-clusters far larger
than ``MICRO_SIZE``, and those are split again (Ward's cost grows as the square of their sizes: at
1,000,000 items, micro-clusters up to ``exact_max`` took most of a 15-minute fit)."""

MAX_MICRO = 1024
"""Micro-clusters at most per level: the top Ward keeps an m x m matrix (8 MB at 1,024) and the
k-means assignment costs n x m distances; larger groups get their own two-level tree."""


def ward_tree(X: np.ndarray, seed: int = 0, *, exact_max: int = EXACT_WARD_MAX,
              micro_size: int = MICRO_SIZE) -> ClusterTree:
    """Ward's hierarchy of the rows of ``X`` at any size, as a :class:`ClusterTree`.

    Up to ``exact_max`` rows it is scipy's exact Ward linkage. Above, it is two-level, with memory
    linear in the number of rows:

    1. mini-batch k-means (scikit-learn, seeded) cuts the rows into ``min(MAX_MICRO, ceil(n /
       micro_size))`` groups;
    2. Ward's criterion joins the micro-clusters, each standing for its members at its centroid with
       its size as weight (:func:`weighted_ward_linkage`): the merge cost of two groups is exactly
       Ward's, only the groups' insides are taken as given;
    3. each micro-cluster gets its own Ward tree: exact, or two-level again when k-means left it larger
       than ``min(exact_max, INNER_EXACT_MAX)`` (2,000) items.

    All merges -- inside the micro-clusters and between them -- go into one sequence ordered by
    height (each merge at least as high as its children), so cutting the tree at k clusters undoes
    the k - 1 highest merges as exact Ward does, and going from k to k + 1 clusters still splits one
    cluster. Heights are Ward distances in scipy's convention (sqrt of twice the increase in the
    within-cluster sum of squares), comparable across levels.

    >>> rng = np.random.default_rng(0)
    >>> X = np.concatenate([rng.normal(0, 0.1, (300, 2)), rng.normal(5, 0.1, (300, 2))])
    >>> t = ward_tree(X, exact_max=100)
    >>> sorted(len(t.members(c)) for c in t.clusters_at(2))
    [300, 300]
    """
    n = X.shape[0]
    if n <= 1:
        return ClusterTree(np.zeros((0, 4)), max(n, 1))
    if n <= exact_max:
        return ClusterTree(exact_ward_linkage(X), n)
    log = _MergeLog(n)
    log.two_level(X, np.arange(n), seed, int(exact_max), int(micro_size))
    return ClusterTree(log.linkage(), n)


def exact_ward_linkage(X: np.ndarray) -> np.ndarray:
    """scipy's exact Ward linkage of the rows of ``X`` (``linkage(X, "ward")``, the same matrix).

    Up to :data:`DISTANCE_BANK_ROWS` rows, the Euclidean distances come from a per-process bank of
    the rows seen by the last fits (:class:`_DistanceBank`): fits on overlapping row sets -- a
    benchmark's seeded subsamples of one pair -- compute each distance once. The distances are
    scipy's own (``pdist``, and ``cdist`` for new rows against known ones, which give the same bits
    for the same two rows; ``tests/test_select_diffuse.py`` checks the linkage is identical).

    >>> X = np.random.default_rng(0).normal(size=(30, 4))
    >>> bool(np.array_equal(exact_ward_linkage(X[:20]), linkage(X[:20], "ward")))
    True
    >>> bool(np.array_equal(exact_ward_linkage(X[10:]), linkage(X[10:], "ward")))
    True
    """
    X = np.ascontiguousarray(X, dtype=np.float64)
    y = _BANK.condensed(X) if 2 <= X.shape[0] <= DISTANCE_BANK_ROWS and X.ndim == 2 else None
    return linkage(X, "ward") if y is None else linkage(y, "ward")


DISTANCE_BANK_ROWS = 2_048
"""Most rows the per-process distance bank of :func:`exact_ward_linkage` keeps (a square matrix of
them: 32 MiB at most; it grows only as far as the fits need)."""


class _DistanceBank:
    """Euclidean distances among the distinct rows of recent exact Ward fits, keyed by each row's bytes.

    A fit whose rows are mostly known takes its distances from the bank and computes only those of
    its new rows (``cdist`` against the known rows, ``pdist`` among themselves); a fit that shares
    less than half its rows with the bank, or would overflow it, starts it afresh. Finite rows only
    (``linkage`` refuses the others with its own message).
    """

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self._clear(0)

    def _clear(self, dim: int) -> None:
        self.dim, self.slot, self.count = dim, {}, 0
        self.rows = np.empty((0, dim))
        self.D = np.empty((0, 0))

    def condensed(self, X: np.ndarray) -> np.ndarray | None:
        """The condensed distance vector of the rows of ``X`` (``pdist(X)``'s values), or None when
        ``X`` has a value that is not finite."""
        from scipy.spatial.distance import cdist, pdist, squareform

        if not np.isfinite(X).all():
            return None
        keys = [r.tobytes() for r in X]
        with self.lock:
            known = self.slot if self.dim == X.shape[1] else {}
            fresh = list(dict.fromkeys(k for k in keys if k not in known))
            if self.dim != X.shape[1] or fresh and (len(fresh) * 2 > len(keys)
                                                    or self.count + len(fresh) > DISTANCE_BANK_ROWS):
                self._clear(X.shape[1])
                fresh = list(dict.fromkeys(keys))
            if fresh:
                first = {k: i for i, k in reversed(list(enumerate(keys)))}
                new = X[[first[k] for k in fresh]]
                self._grow(self.count + len(fresh))
                old, m = self.count, len(fresh)
                self.D[old:old + m, old:old + m] = squareform(pdist(new)) if m > 1 else 0.0
                if old:
                    cross = cdist(new, self.rows[:old])
                    self.D[old:old + m, :old] = cross
                    self.D[:old, old:old + m] = cross.T
                self.rows[old:old + m] = new
                self.slot.update((k, old + j) for j, k in enumerate(fresh))
                self.count = old + m
            pos = np.fromiter((self.slot[k] for k in keys), dtype=np.intp, count=len(keys))
            return squareform(self.D[np.ix_(pos, pos)], checks=False)

    def _grow(self, need: int) -> None:
        """Room for ``need`` rows (doubling, up to DISTANCE_BANK_ROWS), the known part copied over."""
        cap = self.D.shape[0]
        if need <= cap:
            return
        cap = min(DISTANCE_BANK_ROWS, max(need, 2 * cap, 64))
        D, rows = np.zeros((cap, cap)), np.empty((cap, self.dim))
        c = self.count
        D[:c, :c], rows[:c] = self.D[:c, :c], self.rows[:c]
        self.D, self.rows = D, rows


_BANK = _DistanceBank()


def weighted_ward_linkage(C: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """Ward linkage of groups given by their centroids ``C`` and sizes ``weights``, in scipy's format.

    Row ``j`` merges nodes ``Z[j, 0]`` and ``Z[j, 1]`` (groups ``0..m-1``, merge ``j`` creates node
    ``m + j``) at Ward distance ``Z[j, 2]`` into a node of size ``Z[j, 3]`` (summed weights). With unit
    weights it is scipy's ``linkage(C, "ward")``. Nearest-neighbour chain with the Lance-Williams
    update of squared Ward distances, O(m^2) time and memory; written here because scipy's linkage
    starts every point at size 1.

    >>> C = np.array([[0.0], [1.0], [10.0]])
    >>> weighted_ward_linkage(C, np.array([1, 1, 1])).tolist() == linkage(C, "ward").tolist()
    True
    >>> weighted_ward_linkage(C, np.array([1, 100, 1]))[0, :2].tolist()   # the heavy group pulls the light one
    [0.0, 1.0]
    """
    C = np.asarray(C, dtype=np.float64)
    size = np.asarray(weights, dtype=np.float64).copy()
    m = len(C)
    if m <= 1:
        return np.zeros((0, 4))
    sq = np.einsum("ij,ij->i", C, C)
    D = np.maximum(sq[:, None] + sq[None, :] - 2.0 * (C @ C.T), 0.0)
    D *= 2.0 * size[:, None] * size[None, :] / (size[:, None] + size[None, :])
    np.fill_diagonal(D, np.inf)
    active = np.ones(m, dtype=bool)
    merges: list[tuple[int, int, float, float]] = []
    chain: list[int] = []
    first_active = 0
    for _ in range(m - 1):
        if not chain:
            while not active[first_active]:
                first_active += 1
            chain.append(first_active)
        while True:
            a = chain[-1]
            b = int(np.argmin(D[a]))
            if len(chain) > 1 and D[a, chain[-2]] <= D[a, b]:  # ties go back down the chain (no cycles)
                b = chain[-2]
                break
            chain.append(b)
        del chain[-2:]
        d2, na, nb = D[a, b], size[a], size[b]
        new = ((na + size) * D[a] + (nb + size) * D[b] - size * d2) / (na + nb + size)
        keep, drop = min(a, b), max(a, b)
        active[drop] = False
        new[~active] = np.inf
        new[keep] = np.inf
        D[keep, :] = new
        D[:, keep] = new
        D[drop, :] = np.inf
        D[:, drop] = np.inf
        size[keep] = na + nb
        merges.append((a, b, math.sqrt(max(d2, 0.0)), na + nb))
    return _relabel(merges, m)


def _relabel(merges: list[tuple[int, int, float, float]], m: int) -> np.ndarray:
    """NN-chain merges (slots holding any member) sorted by height and numbered as scipy does."""
    order = sorted(range(len(merges)), key=lambda j: merges[j][2])  # stable: a child before its parent
    parent = list(range(m))
    node = list(range(m))  # node id of the cluster whose union-find root is this slot

    def find(x: int) -> int:
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    Z = np.zeros((len(merges), 4))
    for j, k in enumerate(order):
        a, b, h, s = merges[k]
        ra, rb = find(a), find(b)
        Z[j] = (min(node[ra], node[rb]), max(node[ra], node[rb]), h, s)
        parent[rb] = ra
        node[ra] = m + j
    return Z


class _MergeLog:
    """The merges of a two-level tree as they are made, with leaves as item positions and merges as
    ``n + t`` (``t`` counts the merges logged so far); :meth:`linkage` orders them by height."""

    def __init__(self, n: int) -> None:
        self.n = n
        self.parts: list[np.ndarray] = []  # blocks of rows (left, right, height, size)
        self.count = 0

    def _add(self, rows: np.ndarray) -> int:
        start = self.count
        self.parts.append(rows)
        self.count += len(rows)
        return start

    def exact(self, X: np.ndarray, idx: np.ndarray) -> tuple[int, float]:
        """Exact Ward of the rows ``idx``; returns the root (item or ``n + t``) and its height."""
        s = len(idx)
        if s == 1:
            return int(idx[0]), 0.0
        Z = linkage(np.asarray(X[idx], dtype=np.float64), "ward")
        start = self.count
        kids = Z[:, :2].astype(np.int64)
        kids = np.where(kids < s, idx[np.minimum(kids, s - 1)], self.n + start + kids - s)
        self._add(np.column_stack([kids, Z[:, 2:]]))
        return self.n + start + s - 2, float(Z[-1, 2])

    def two_level(self, X: np.ndarray, idx: np.ndarray, seed: int, exact_max: int,
                  micro_size: int) -> tuple[int, float]:
        """Micro-clusters of the rows ``idx``, each with its own tree, joined by weighted Ward."""
        s = len(idx)
        if s <= exact_max:
            return self.exact(X, idx)
        m = min(MAX_MICRO, math.ceil(s / micro_size))
        groups = _micro_clusters(X if s == X.shape[0] else X[idx], max(2, min(m, s)), seed)
        roots, heights, sizes = [], [], []
        centroids = np.empty((len(groups), X.shape[1]))
        inner = min(exact_max, INNER_EXACT_MAX)
        for g, members in enumerate(groups):
            r, h = self.two_level(X, idx[members], seed, inner, micro_size)
            roots.append(r), heights.append(h), sizes.append(len(members))
            centroids[g] = np.asarray(X[idx[members]], dtype=np.float64).mean(axis=0)
        top = weighted_ward_linkage(centroids, np.asarray(sizes))
        g = len(groups)
        start = self.count
        rows = np.empty((g - 1, 4))
        node_h = list(heights)  # height of every top-level node: the groups' roots, then each merge
        ref = list(roots)
        for j, (l, r, h, size) in enumerate(top):
            l, r = int(l), int(r)
            hj = max(h, node_h[l], node_h[r])  # never below a child: the order stays a valid tree
            rows[j] = (ref[l], ref[r], hj, size)
            node_h.append(hj)
            ref.append(self.n + start + j)
        self._add(rows)
        return ref[-1], node_h[-1]

    def linkage(self) -> np.ndarray:
        """All merges as a scipy linkage matrix, ordered by height (ties: the order they were made)."""
        rows = np.concatenate(self.parts)
        order = np.lexsort((np.arange(len(rows)), rows[:, 2]))
        rank = np.empty(len(rows), dtype=np.int64)
        rank[order] = np.arange(len(rows))
        Z = rows[order]
        kids = Z[:, :2].astype(np.int64)
        merged = kids >= self.n
        kids[merged] = self.n + rank[kids[merged] - self.n]
        Z[:, :2] = kids
        return Z


def _micro_clusters(X: np.ndarray, m: int, seed: int) -> list[np.ndarray]:
    """Row positions of ``m`` (at most) non-empty mini-batch k-means clusters of ``X``.

    When k-means cannot divide the rows (all equal), they are cut into ``m`` consecutive chunks
    (any tree of equal rows is a Ward tree).
    """
    import contextlib
    import warnings

    from sklearn.cluster import MiniBatchKMeans
    from threadpoolctl import threadpool_limits

    n = X.shape[0]
    rng = np.random.default_rng(seed)
    # Seeds: m distinct rows at random. k-means++ seeding cost minutes at m ~ 1,000 here (m sequential
    # rounds of small BLAS calls) and agreed no better with exact Ward (docs/scale.md).
    centres = np.asarray(X[np.sort(rng.choice(n, size=m, replace=False))])
    # One mini-batch or less: nothing to share between threads, and on a busy machine the thread pools'
    # start-up made a 445-row fit 5 times slower.
    threads = threadpool_limits(1) if n <= 4096 else contextlib.nullcontext()
    with warnings.catch_warnings(), threads:
        warnings.simplefilter("ignore")  # e.g. "Number of distinct clusters found smaller than n_clusters"
        km = MiniBatchKMeans(n_clusters=m, init=centres, batch_size=4096, n_init=1, random_state=seed,
                             max_iter=3, max_no_improvement=10)
        labels = km.fit(X).labels_
    order = np.argsort(labels, kind="stable")
    bounds = np.flatnonzero(np.diff(labels[order])) + 1
    groups = np.split(order, bounds)
    if len(groups) < 2:
        groups = np.array_split(np.arange(n), m)
    return groups
