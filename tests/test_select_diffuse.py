import numpy as np
import pytest
from scipy.cluster.hierarchy import fcluster, linkage

from evalsift.errors import DataError, NotFittedError, ParameterError, UnknownNameError
from evalsift.select import DiffUse, MaxNorm, make_selector
from evalsift.select.diffuse import ClusterTree, difference_vectors, pick_representative

from _fakes import DictEncoder, pair_pool, random_pair_pool


def partition(labels):
    return {frozenset(np.flatnonzero(labels == l)) for l in np.unique(labels)}


def test_difference_vectors_shape_and_sign():
    va = np.array([[1.0, 0, 0], [0, 2.0, 0]])
    vb = np.array([[0.0, 0, 1], [0, 0.5, 0]])
    d = difference_vectors(pair_pool(va, vb), DictEncoder())
    # row i = emb(A_i) - emb(B_i): [1,0,-1] and [0,1.5,0]
    assert d.shape == (2, 3)
    np.testing.assert_allclose(d, [[1, 0, -1], [0, 1.5, 0]])
    # swapping the systems flips the sign
    swapped = difference_vectors(pair_pool(va, vb).pair("B", "A"), DictEncoder())
    np.testing.assert_allclose(swapped, -d)


def test_difference_vectors_need_two_systems_and_outputs():
    pool = random_pair_pool(n=4)
    with pytest.raises(DataError, match="two-system"):
        difference_vectors(pool.with_systems(["A"]), DictEncoder())


def test_n_to_n_plus_one_splits_exactly_one_cluster():
    X = np.random.default_rng(1).normal(size=(40, 5))
    tree = ClusterTree(linkage(X, "ward"), 40)
    for k in range(1, 40):
        before, after = partition(tree.labels(k)), partition(tree.labels(k + 1))
        assert len(before) == k and len(after) == k + 1
        gone, new = before - after, after - before
        assert len(gone) == 1 and len(new) == 2
        (parent,) = gone
        assert frozenset().union(*new) == parent
        node, kids = tree.split_at(k)
        assert frozenset(tree.members(node)) == parent
        assert {frozenset(tree.members(c)) for c in kids} == new


def test_tree_cut_matches_scipy_maxclust():
    X = np.random.default_rng(2).normal(size=(30, 3))  # continuous data: no tied merge heights
    Z = linkage(X, "ward")
    tree = ClusterTree(Z, 30)
    for k in (1, 2, 5, 13, 30):
        assert partition(tree.labels(k)) == partition(fcluster(Z, k, "maxclust"))


def test_representative_rules_by_hand():
    X = np.array([[1.0, 0.0], [0.0, 1.0], [3.0, 2.5]])
    members = np.array([0, 1, 2])
    # centre = (4/3, 3.5/3) = (1.333, 1.167), direction 41.2 degrees
    # cosine: angles 0, 90, 39.8 degrees -> item 2 is closest in direction
    assert pick_representative(X, members, "cosine") == 2
    # euclidean distances to the centre: 1.21, 1.34, 2.13 -> item 0
    # (item 0: sqrt(0.333^2 + 1.167^2) = 1.213; item 1: sqrt(1.333^2 + 0.167^2) = 1.344)
    assert pick_representative(X, members, "euclidean") == 0
    # norms 1, 1, 3.9 -> item 2
    assert pick_representative(X, members, "norm") == 2
    assert pick_representative(X, members, "random", np.random.default_rng(0)) in (0, 1, 2)


def test_cosine_representative_with_zero_centre_falls_back_to_distance():
    X = np.array([[1.0, 0.0], [-1.0, 0.0], [0.1, 0.0]])  # centre (0.033, 0): tiny but not zero
    assert pick_representative(X, np.array([0, 1, 2]), "cosine") in (0, 2)
    Y = np.array([[1.0, 0.0], [-1.0, 0.0]])  # centre exactly 0: nearest by distance, first on ties
    assert pick_representative(Y, np.array([0, 1]), "cosine") == 0


def test_diffuse_selects_one_representative_per_cluster():
    pool = random_pair_pool(n=50, seed=3)
    sel = DiffUse(encoder=DictEncoder(4)).fit(pool)
    for budget in (1, 7, 20, 50):
        s = sel.select(budget)
        labels = sel.clusters(budget)
        assert len(s.items) == budget == len(set(s.items.tolist()))
        assert len(set(labels[s.items].tolist())) == budget  # one item from each cluster
        # each pick carries the size of the cluster it stands for, largest first; no utilities
        assert s.cluster_sizes.tolist() == np.bincount(labels)[labels[s.items]].tolist()
        assert s.cluster_sizes.tolist() == sorted(s.cluster_sizes.tolist(), reverse=True) and s.utilities is None


def test_diffuse_representative_is_cosine_nearest_in_cluster():
    pool = random_pair_pool(n=30, seed=4)
    sel = DiffUse(encoder=DictEncoder(4)).fit(pool)
    X, labels = sel.vectors_, sel.clusters(6)
    for item in sel.select(6).items:
        members = np.flatnonzero(labels == labels[item])
        c = X[members].mean(axis=0)
        cos = X[members] @ c / (np.linalg.norm(X[members], axis=1) * np.linalg.norm(c))
        assert members[np.argmax(cos)] == item


def test_one_linkage_serves_every_budget(monkeypatch):
    import evalsift.select.clustering as mod  # Ward (exact or two-level) lives here

    calls = []
    real = mod.linkage
    monkeypatch.setattr(mod, "linkage", lambda *a, **k: calls.append(1) or real(*a, **k))
    sel = DiffUse(encoder=DictEncoder(4)).fit(random_pair_pool(n=40))
    for b in range(1, 41):
        sel.select(b)
    assert len(calls) == 1


def test_budget_above_pool_takes_all():
    sel = DiffUse(encoder=DictEncoder(4)).fit(random_pair_pool(n=8))
    assert sorted(sel.select(100).items.tolist()) == list(range(8))


def test_bisect_never_short_with_duplicates():
    v = np.zeros((10, 3))
    v[:5] = 1.0  # only two distinct difference vectors
    pool = pair_pool(v, np.zeros((10, 3)))
    sel = DiffUse(encoder=DictEncoder(), clustering="bisect").fit(pool)
    s = sel.select(6)
    assert len(set(s.items.tolist())) == 6
    # the first split separates the two distinct vectors; the rest peel identical rows off one by one
    assert sorted(map(sorted, (np.flatnonzero(sel.clusters(2) == c).tolist() for c in (0, 1)))) == \
        [[0, 1, 2, 3, 4], [5, 6, 7, 8, 9]]


def test_bisecting_kmeans_splits_the_largest_error_first():
    from evalsift.select import bisecting_kmeans_tree

    # three groups on a line: {0, 1} tight around 0, {2, 3} tight around 10, {4, 5} spread (20 and 26)
    X = np.array([[0.0], [0.2], [10.0], [10.2], [20.0], [26.0]])
    t = bisecting_kmeans_tree(X, seed=0)
    cut = lambda k: sorted(sorted(t.members(c).tolist()) for c in t.clusters_at(k))  # noqa: E731
    # 2-means on all six: the split of least SSE is {0,1,2,3} | {4,5}
    assert cut(2) == [[0, 1, 2, 3], [4, 5]]
    # SSE of {0,1,2,3} = 4 * 5.1^2 - ... = 100.04 (mean 5.1); of {4,5} = 2 * 3^2 = 18: split the first
    assert cut(3) == [[0, 1], [2, 3], [4, 5]]
    # next: {4, 5} (SSE 18) before {0, 1} and {2, 3} (SSE 0.02 each)
    assert cut(4) == [[0, 1], [2, 3], [4], [5]]
    for k in range(1, 6):  # going from k to k + 1 clusters splits exactly one cluster
        before, after = cut(k), cut(k + 1)
        assert len([c for c in after if c not in before]) == 2 and len([c for c in before if c not in after]) == 1


def test_bisect_fits_once(monkeypatch):
    import evalsift.select.clustering as clustering

    sel = make_selector("diffuse_bisect", encoder=DictEncoder(4)).fit(random_pair_pool(n=40))
    monkeypatch.setattr(clustering, "_two_means", lambda *a, **k: 1 / 0)  # no clustering work after fit
    assert [len(sel.select(b).items) for b in (1, 10, 40)] == [1, 10, 40]


def test_diffuse_kmeans_is_sklearn_flat_kmeans_per_budget():
    """The paper's k-means variant: for each budget, scikit-learn's KMeans (greedy k-means++, one
    init, the seed) into that many clusters, and the cosine-nearest member of each cluster."""
    from sklearn.cluster import KMeans

    pool = random_pair_pool(n=40, seed=5)
    sel = make_selector("diffuse_kmeans", encoder=DictEncoder(4), seed=3).fit(pool)
    assert sel.clustering == "kmeans" and sel.tree_ is None
    X = sel.vectors_
    for k in (2, 7, 15):
        ref = KMeans(n_clusters=k, init="k-means++", n_init=1, random_state=3).fit(X).labels_
        assert partition(sel.clusters(k)) == partition(ref)  # the same partition (labels renumbered)
        s = sel.select(k)
        labels = sel.clusters(k)
        assert len(set(labels[s.items].tolist())) == k  # one pick per cluster
        for item in s.items:
            assert item == pick_representative(X, np.flatnonzero(labels == labels[item]), "cosine")
        assert s.cluster_sizes.tolist() == sorted(np.bincount(labels).tolist(), reverse=True)


def test_flat_kmeans_is_not_nested_but_bisect_is():
    """Flat k-means refits per k, so on structureless data some k -> k + 1 step is not the split of one
    cluster (bisecting k-means always is: test_bisecting_kmeans_splits_the_largest_error_first)."""
    from evalsift.select import flat_kmeans_labels

    X = np.random.default_rng(0).normal(size=(60, 3))
    nested = []
    for k in range(2, 12):
        before, after = partition(flat_kmeans_labels(X, k)), partition(flat_kmeans_labels(X, k + 1))
        nested.append(len(after - before) == 2 and len(before - after) == 1)
    assert not all(nested)  # refitted: not a hierarchy


def test_flat_kmeans_never_short_with_duplicates():
    from evalsift.select import flat_kmeans_labels

    X = np.zeros((10, 2))
    X[:4] = 1.0  # two distinct rows: k-means can only find two non-empty clusters
    labels = flat_kmeans_labels(X, 5)
    assert len(np.unique(labels)) == 5  # three more clusters peeled off the identical rows
    # every cluster holds identical rows only
    assert all(len(np.unique(X[labels == c], axis=0)) == 1 for c in range(5))
    sel = DiffUse(encoder=DictEncoder(), clustering="kmeans").fit(pair_pool(X, np.zeros((10, 2))))
    assert len(set(sel.select(6).items.tolist())) == 6


def test_concatenation_and_addition_aggregations():
    from evalsift.select import pair_vectors

    va = np.array([[1.0, 0, 0], [0, 2.0, 0]])
    vb = np.array([[0.0, 0, 1], [0, 0.5, 0]])
    pool = pair_pool(va, vb)
    # concatenation [e_a, e_b]: [1,0,0,0,0,1] and [0,2,0,0,0.5,0]; addition: [1,0,1] and [0,2.5,0]
    np.testing.assert_allclose(pair_vectors(pool, DictEncoder(), "concatenation"),
                               [[1, 0, 0, 0, 0, 1], [0, 2, 0, 0, 0.5, 0]])
    np.testing.assert_allclose(pair_vectors(pool, DictEncoder(), "addition"), [[1, 0, 1], [0, 2.5, 0]])
    with pytest.raises(ParameterError, match="aggregation must be one of"):
        pair_vectors(pool, DictEncoder(), "product")
    for name, space, width in (("diffuse_concat", "concatenation", 8), ("diffuse_add", "addition", 4)):
        sel = make_selector(name, encoder=DictEncoder(4)).fit(random_pair_pool(n=20))
        assert sel.space == space and sel.vectors_.shape == (20, width)
        assert len(set(sel.select(5).items.tolist())) == 5


def test_cluster_tree_refuses_flat_kmeans():
    from evalsift.select.diffuse import cluster_tree

    with pytest.raises(ParameterError, match="not a hierarchy"):
        cluster_tree(np.zeros((4, 2)), "kmeans")


def test_max_norm_orders_by_difference_norm():
    va = np.array([[1.0, 0, 0], [5.0, 0, 0], [2.0, 0, 0]])
    s = MaxNorm(encoder=DictEncoder()).fit(pair_pool(va, np.zeros((3, 3)))).select(2)
    assert s.items.tolist() == [1, 2]
    np.testing.assert_allclose(s.utilities, [5.0, 2.0])  # max_norm is a utility selector: the norms


def test_input_clusters_uses_inputs():
    pool = random_pair_pool(n=12)
    sel = make_selector("input_clusters", encoder=DictEncoder(4)).fit(pool)
    assert sel.space == "input" and sel.vectors_.shape == (12, 4)


def test_parameter_validation_and_fitted_state():
    with pytest.raises(ParameterError, match="clustering='single' is not one of"):
        DiffUse(clustering="single")
    with pytest.raises(NotFittedError):
        DiffUse().select(3)
    with pytest.raises(UnknownNameError, match="Did you mean 'diffuse'"):
        make_selector("difuse")
    with pytest.raises(ParameterError, match="has no parameter 'bogus'"):
        DiffUse().set_params(bogus=1)


def test_selection_is_json_ready_with_an_encoder_object():
    import json

    s = DiffUse(encoder=DictEncoder(4)).fit(random_pair_pool(n=10)).select(3)
    data = json.loads(json.dumps(s.to_dict()))
    assert data["params"]["encoder"] == "dict" and data["method"] == "diffuse" and len(data["items"]) == 3


# ---------------------------------------------------------------------------------- Ward at any size
from evalsift.select.clustering import ward_tree, weighted_ward_linkage  # noqa: E402


def _check_valid_tree(tree, n):
    """Every item once, children made before parents, sizes add up, heights never decrease."""
    assert sorted(tree.order.tolist()) == list(range(n))
    Z = tree.Z
    assert (np.diff(Z[:, 2]) >= 0).all()
    kids = Z[:, :2].astype(int)
    assert (kids < n + np.arange(len(Z))[:, None]).all()
    assert (tree.size[n:] == tree.size[kids[:, 0]] + tree.size[kids[:, 1]]).all()


@pytest.mark.parametrize("m", [2, 7, 60, 300])
def test_weighted_ward_with_unit_weights_is_scipys_ward(m):
    C = np.random.default_rng(m).normal(size=(m, 5))
    np.testing.assert_allclose(weighted_ward_linkage(C, np.ones(m)), linkage(C, "ward"), atol=1e-12)


def test_weighted_ward_equals_exact_ward_of_the_repeated_points():
    rng = np.random.default_rng(3)
    C, w = rng.normal(size=(25, 3)), rng.integers(1, 6, 25)
    exact = linkage(np.repeat(C, w, axis=0), "ward")  # equal points merge at height 0 first
    weighted = weighted_ward_linkage(C, w)
    np.testing.assert_allclose(exact[-24:, 2], weighted[:, 2], atol=1e-9)
    np.testing.assert_array_equal(exact[-24:, 3], weighted[:, 3])


def test_ward_tree_is_exact_below_the_threshold():
    X = np.random.default_rng(0).normal(size=(120, 4))
    np.testing.assert_array_equal(ward_tree(X, exact_max=120).Z, linkage(X, "ward"))


def test_distance_bank_gives_scipys_linkage_on_overlapping_subsamples(monkeypatch):
    from evalsift.select import clustering

    rng = np.random.default_rng(7)
    monkeypatch.setattr(clustering, "_BANK", clustering._DistanceBank())
    monkeypatch.setattr(clustering, "DISTANCE_BANK_ROWS", 300)  # small, so some fits overflow and restart it
    for dim, n in ((384, 260), (5, 120), (384, 90), (7, 280)):
        F = rng.normal(size=(n, dim)) * rng.choice([1e-3, 1.0, 1e3])
        F[rng.integers(n, size=n // 5)] = 0.0  # identical rows (two equal outputs give a zero difference)
        F[3] = F[4]
        for _ in range(6):  # seeded 80 % subsamples of one pair, as the DiffUse benchmark draws them
            idx = np.sort(rng.choice(n, size=int(0.8 * n), replace=False))
            assert np.array_equal(clustering.exact_ward_linkage(F[idx]), linkage(F[idx], "ward"))
        assert clustering._BANK.count <= 300 and clustering._BANK.dim == dim
    bad = rng.normal(size=(10, 3))
    bad[2, 1] = np.nan
    with pytest.raises(ValueError, match="finite"):  # not kept in the bank; scipy's own error
        clustering.exact_ward_linkage(bad)


@pytest.mark.parametrize("rule", ["cosine", "euclidean", "norm"])
def test_pick_in_tree_is_pick_representative(rule):
    from evalsift.select.clustering import pick_in_tree, unit_rows

    X = np.random.default_rng(3).normal(size=(150, 6))
    X[10:20] = 0.0  # a cluster with a zero centre: the cosine rule falls back to distance
    X[40] = X[41]
    t = ward_tree(X)
    Xo = X[t.order]
    for v in range(2 * 150 - 1):
        assert pick_in_tree(t, Xo, v, rule, unit_rows(Xo)) == pick_representative(X, t.members(v), rule, unit=unit_rows(X))


def test_two_level_tree_is_a_valid_hierarchy_that_splits_one_cluster_at_a_time():
    rng = np.random.default_rng(1)
    X = rng.normal(size=(1500, 6)).astype(np.float32)
    tree = ward_tree(X, seed=2, exact_max=40)  # micro-clusters of ~20; larger ones are split again
    _check_valid_tree(tree, 1500)
    for k in (1, 2, 10, 75, 200, 1499):
        before, after = partition(tree.labels(k)), partition(tree.labels(k + 1))
        assert len(before) == k and len(after) == k + 1
        gone, new = before - after, after - before
        assert len(gone) == 1 and len(new) == 2 and set().union(*new) == set(next(iter(gone)))
    # seeded: the same tree again
    np.testing.assert_array_equal(ward_tree(X, seed=2, exact_max=40).Z, tree.Z)


def test_two_level_tree_finds_well_separated_groups_as_exact_ward_does():
    rng = np.random.default_rng(4)
    centres = rng.normal(scale=10, size=(12, 16))
    X = centres[rng.integers(0, 12, 3000)] + rng.normal(scale=0.5, size=(3000, 16))
    exact, two = ward_tree(X, exact_max=10**6), ward_tree(X, exact_max=100)
    for k in (2, 5, 12):
        assert partition(two.labels(k)) == partition(exact.labels(k))


def test_two_level_tree_of_identical_rows():
    tree = ward_tree(np.ones((400, 3)), exact_max=30)
    _check_valid_tree(tree, 400)
    assert (tree.Z[:, 2] == 0).all()


def test_diffuse_two_level_selects_and_iterates():
    from evalsift.oracle import MetricOracle
    from evalsift.session import Session

    pool = random_pair_pool(n=400, p_a=0.6, seed=5)
    for rep in ("cosine", "random"):
        sel = DiffUse(encoder=DictEncoder(4), exact_max=30, representative=rep).fit(pool)
        _check_valid_tree(sel.tree_, 400)
        for b in (1, 10, 37, 400):
            s = sel.select(b)
            assert len(set(s.items.tolist())) == b and s.cluster_sizes.sum() == 400
            labels = sel.clusters(b)
            assert len({labels[i] for i in s.items}) == b  # one representative per cluster, among its members
    d = Session(pool, DiffUse(encoder=DictEncoder(4), exact_max=30), risk=0.01, min_labels=5, max_labels=40,
                risk_rule="paper").run(MetricOracle("human"))
    for prev, cur in zip(d.trace, d.trace[1:]):
        assert cur["decision_set"] == prev["decision_set"] + 1  # the split-one-cluster iteration


def test_two_level_parameters_and_cosine_refused_above_exact_max():
    with pytest.raises(ParameterError, match="exact_max must be a whole number >= 1"):
        DiffUse(exact_max=0)
    with pytest.raises(ParameterError, match="micro_size"):
        DiffUse(micro_size=0)
    pool = random_pair_pool(n=80)
    with pytest.raises(ParameterError, match="clustering='cosine'.*use clustering='ward'"):
        DiffUse(encoder=DictEncoder(4), clustering="cosine", exact_max=50).fit(pool)
    sel = make_selector("diffuse_two_level", encoder=DictEncoder(4)).fit(pool)
    assert sel.get_params()["exact_max"] == 50 and len(sel.select(10)) == 10


def test_difference_vectors_in_blocks_equal_one_block(monkeypatch):
    import evalsift.select.diffuse as mod

    pool = random_pair_pool(n=50, dim=3)
    whole = difference_vectors(pool, DictEncoder(3), np.float32)
    monkeypatch.setattr(mod, "_DIFF_BLOCK", 7)
    blocks = difference_vectors(pool, DictEncoder(3), np.float32)
    assert blocks.dtype == np.float32
    np.testing.assert_array_equal(blocks, whole)


def test_iterative_loop_runs_with_flat_kmeans():
    """Flat k-means is no hierarchy: each step of the loop re-clusters; the loop still ends and never
    asks about an item twice."""
    from evalsift.oracle import MetricOracle
    from evalsift.session import Session

    pool = random_pair_pool(n=40, seed=6)
    d = Session(pool, make_selector("diffuse_kmeans", encoder=DictEncoder(4)), risk=0.2, min_labels=5,
                max_labels=30, risk_rule="paper").run(MetricOracle("human"))
    asked = [j["position"] for j in d.judged]
    assert d.outcome in ("winner", "inconclusive") and len(asked) == len(set(asked)) == d.labels_used <= 30
