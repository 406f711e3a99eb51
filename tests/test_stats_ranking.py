"""Ranking agreement in evalsift.stats: rank correlations, cluster count, SPA, prefix statistics,
needed-to-match. Hand-computed expectations carry their arithmetic in comments; the scipy
comparisons pin the definitions; naive loops pin the vectorised prefix functions."""

from __future__ import annotations

import doctest
import math
import warnings
from pathlib import Path

import numpy as np
import pytest
from _data import need
import scipy.stats

from evalsift import stats
from evalsift.errors import DataError, ParameterError
from evalsift.stats import (
    cluster_count,
    kendall_tau_b,
    kendall_tau_b_rows,
    needed_to_match,
    paired_t_p_values,
    prefix_cluster_counts,
    prefix_correlation,
    prefix_means,
    prefix_sizes,
    signed_rank_p_values,
    soft_pairwise_accuracy,
    spearman,
    spearman_rows,
    system_clusters,
)


def phi(z: float) -> float:
    """Standard normal CDF, for hand arithmetic."""
    return 0.5 * math.erfc(-z / math.sqrt(2))


def scipy_wilcoxon_p(d, alternative="less") -> float:
    """scipy's signed-rank test in its normal-approximation mode (named 'approx' before scipy 1.13)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            return float(scipy.stats.wilcoxon(d, alternative=alternative, method="asymptotic").pvalue)
        except ValueError:
            return float(scipy.stats.wilcoxon(d, alternative=alternative, method="approx").pvalue)


# ---------------------------------------------------------------------------------------------
# Rank correlations
# ---------------------------------------------------------------------------------------------


def test_kendall_by_hand():
    # x = 1 2 3 4, y = 1 3 2 4: pairs (2,3) discordant, the other 5 concordant -> (5 - 1) / 6
    assert kendall_tau_b([1, 2, 3, 4], [1, 3, 2, 4]) == pytest.approx(4 / 6)
    # with a tie in x: x = 1 1 2, y = 1 2 3; pairs: (0,1) tied in x, (0,2) C, (1,2) C
    # tau_b = (2 - 0) / sqrt((3 - 1) * (3 - 0)) = 2 / sqrt(6)
    assert kendall_tau_b([1, 1, 2], [1, 2, 3]) == pytest.approx(2 / math.sqrt(6))


def test_spearman_by_hand():
    # no ties: 1 - 6 * sum d^2 / (n (n^2 - 1)) with d = 0, -1, 1, 0 -> 1 - 12 / 60 = 0.8
    assert spearman([1, 2, 3, 4], [1, 3, 2, 4]) == pytest.approx(0.8)
    # tie: x ranks 1.5 1.5 3, y ranks 1 2 3; centred: x -0.5 -0.5 1, y -1 0 1
    # r = (0.5 + 0 + 1) / sqrt(1.5 * 2) = 1.5 / sqrt(3)
    assert spearman([5, 5, 9], [1, 2, 3]) == pytest.approx(1.5 / math.sqrt(3))


@pytest.mark.parametrize("n", [2, 3, 7, 12, 30])
def test_correlations_equal_scipy(n):
    rng = np.random.default_rng(n)
    for trial in range(20):
        # integers in a small range: many ties
        x = rng.integers(0, 4, n).astype(float) if trial % 2 else rng.normal(size=n)
        y = rng.integers(0, 4, n).astype(float) if trial % 3 else rng.normal(size=n)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            kt = scipy.stats.kendalltau(x, y).statistic
            sr = scipy.stats.spearmanr(x, y).statistic
        np.testing.assert_allclose(kendall_tau_b(x, y), kt, atol=1e-12, equal_nan=True)
        np.testing.assert_allclose(spearman(x, y), sr, atol=1e-12, equal_nan=True)


def test_correlations_nan_policy_is_omit():
    x = np.array([1.0, np.nan, 3.0, 4.0, 2.0, 7.0])
    y = np.array([2.0, 5.0, np.nan, 1.0, 3.0, 6.0])
    keep = ~(np.isnan(x) | np.isnan(y))  # positions 0, 3, 4, 5
    assert kendall_tau_b(x, y) == pytest.approx(scipy.stats.kendalltau(x[keep], y[keep]).statistic)
    assert spearman(x, y) == pytest.approx(scipy.stats.spearmanr(x[keep], y[keep]).statistic)
    # nothing left to compare, or a constant side: NaN (as scipy)
    assert math.isnan(kendall_tau_b([1.0, np.nan], [np.nan, 2.0]))
    assert math.isnan(spearman([1.0, 1.0, 1.0], [1.0, 2.0, 3.0]))
    assert math.isnan(kendall_tau_b([1.0, 1.0, 1.0], [1.0, 2.0, 3.0]))


def test_row_versions_equal_one_at_a_time():
    rng = np.random.default_rng(1)
    X = rng.integers(0, 5, (40, 9)).astype(float)
    X[3, 2] = np.nan  # per-row NaN: that row drops position 2 only
    y = rng.normal(size=9)
    kt = kendall_tau_b_rows(X, y)
    sr = spearman_rows(X, y)
    for r in range(X.shape[0]):
        np.testing.assert_allclose(kt[r], kendall_tau_b(X[r], y), atol=1e-12, equal_nan=True)
        np.testing.assert_allclose(sr[r], spearman(X[r], y), atol=1e-12, equal_nan=True)
    # y given per row
    Y = rng.normal(size=X.shape)
    kt2 = kendall_tau_b_rows(X, Y)
    assert kt2[5] == pytest.approx(kendall_tau_b(X[5], Y[5]))


def test_row_versions_reject_bad_shapes():
    with pytest.raises(DataError, match="must have shape"):
        kendall_tau_b_rows(np.zeros((3, 4)), np.zeros(5))
    with pytest.raises(DataError, match="2-D"):
        spearman_rows(np.zeros(4), np.zeros(4))
    with pytest.raises(DataError, match="equal length"):
        kendall_tau_b([1, 2], [1, 2, 3])


# ---------------------------------------------------------------------------------------------
# Signed-rank test
# ---------------------------------------------------------------------------------------------


def test_signed_rank_by_hand():
    # method="approx" pins the normal approximation's arithmetic (the default, "auto", is exact at
    # these n; the exact values are in tests/test_stats_wilcoxon.py: 1/32 and 6/32 for these rows)
    # d = -1 .. -5: n = 5, R+ = 0, mean = 5 * 6 / 4 = 7.5, var = 5 * 6 * 11 / 24 = 13.75
    # z = -7.5 / sqrt(13.75) = -2.0226 -> p(less) = Phi(z) = 0.0216
    assert signed_rank_p_values([-1, -2, -3, -4, -5], method="approx") == pytest.approx(phi(-7.5 / math.sqrt(13.75)))
    # zeros are dropped: d = -1 -1 -1 -1 +1 and five zeros -> n = 5, all |d| tied at rank 3
    # R+ = 3, mean 7.5, var = (5*6*11 - (5^3 - 5) / 2) / 24 = (330 - 60) / 24 = 11.25
    d = [-1, -1, -1, -1, 1, 0, 0, 0, 0, 0]
    assert signed_rank_p_values(d, method="approx") == pytest.approx(phi(-4.5 / math.sqrt(11.25)))


def test_signed_rank_equals_scipy_approx():
    rng = np.random.default_rng(2)
    rows = []
    for trial in range(60):
        n = int(rng.integers(1, 40))
        d = rng.integers(-3, 4, n).astype(float) if trial % 2 else np.round(rng.normal(size=n), 1)
        if not np.any(d != 0):
            d[0] = 1.0
        rows.append(d)
    # method="approx": the normal approximation (the default, "auto", is exact for n <= 50; it is
    # compared with scipy's exact mode and with enumeration in tests/test_stats_wilcoxon.py)
    for alternative in ("less", "greater", "two-sided"):
        for d in rows:
            assert signed_rank_p_values(d, alternative, method="approx") == pytest.approx(
                scipy_wilcoxon_p(d, alternative), rel=1e-10, abs=1e-14
            )


def test_signed_rank_rows_zero_padding_and_all_zero():
    d = np.array([-3.0, 1.0, -2.0, -2.0, -5.0, 4.0, -1.0])
    padded = np.zeros((2, 12))
    padded[0, :7] = d
    p = signed_rank_p_values(padded)
    assert p[0] == pytest.approx(signed_rank_p_values(d))  # padding with zeros changes nothing
    p_approx = signed_rank_p_values(padded, method="approx")  # nor in the normal approximation
    assert p_approx[0] == pytest.approx(signed_rank_p_values(d, method="approx")) and p_approx[1] == 1.0
    assert p[1] == 1.0  # no non-zero difference: nothing to reject
    with pytest.raises(DataError, match="NaN"):
        signed_rank_p_values([1.0, np.nan])
    with pytest.raises(ParameterError, match="alternative"):
        signed_rank_p_values([1.0], "lesser")


# ---------------------------------------------------------------------------------------------
# Cluster count
# ---------------------------------------------------------------------------------------------

# Three systems on 6 items; B and C are identical, A is better on every item.
THREE = np.array([[3, 1, 1], [4, 2, 2], [5, 1, 1], [6, 2, 2], [5, 3, 3], [4, 0, 0]], dtype=float)


def test_three_systems_by_hand():
    # means: A = 27/6 = 4.5, B = C = 9/6 = 1.5 -> order A, B, C (B before C: column order on ties)
    # B - A = -2 -2 -4 -4 -2 -4: n = 6, |d| = 2 (x3, average rank 2) and 4 (x3, average rank 5)
    # exact (the default at n = 6): R+ = 0; every rank is > 0, so only the all-negative sign pattern
    # of the 2^6 has R+ <= 0 -> p = 1/64 = 0.015625 < 0.05: B starts cluster 1
    # C - B = 0 everywhere: identical, p = 1 -> C stays with B. Two clusters.
    # (subset2evaluate's released code opens a new cluster for all-zero differences and counts 3.)
    r = system_clusters(THREE)
    assert r.n_clusters == 2
    assert r.labels.tolist() == [0, 1, 1]
    assert r.order.tolist() == [0, 1, 2]
    assert r.p_values[0] == 1 / 64
    assert r.p_values[1] == 1.0
    # the normal approximation (test="approx"): R+ = 0, mean = 6 * 7 / 4 = 10.5,
    # var = (6*7*13 - (2 * (3^3 - 3)) / 2) / 24 = (546 - 24) / 24 = 21.75
    # z = -10.5 / sqrt(21.75) = -2.2514 -> p = 0.0122 < 0.05: the same two clusters
    ra = system_clusters(THREE, test="approx")
    assert ra.p_values[0] == pytest.approx(phi(-10.5 / math.sqrt(21.75)))
    assert ra.n_clusters == 2 and ra.labels.tolist() == [0, 1, 1] and ra.p_values[1] == 1.0
    assert "normal approximation" in ra.test and "exact" in r.test
    assert r.compared_with.tolist() == [0, 1]  # B against A; C against B, the top of cluster 1
    assert r.means.tolist() == [4.5, 1.5, 1.5]
    assert r.n_items == 6 and r.alpha == 0.05 and "Wilcoxon" in r.test
    assert cluster_count(THREE) == 2


# A = 2 everywhere; B = A + x; C = B + y with
#   x = -1 -1 -1 -1 +1  0  0  0  0  0   (B - A)
#   y =  0  0  0  0  0 -1 -1 -1 -1 +1   (C - B)
# so C - A = x + y = -1 -1 -1 -1 +1 -1 -1 -1 -1 +1.
_X = np.array([-1, -1, -1, -1, 1, 0, 0, 0, 0, 0], dtype=float)
_Y = np.array([0, 0, 0, 0, 0, -1, -1, -1, -1, 1], dtype=float)
CHAIN = np.column_stack([np.full(10, 2.0), 2.0 + _X, 2.0 + _X + _Y])


def test_chaining_rule_top_versus_previous():
    # test="approx": this example separates the two rules under the normal approximation only; the
    # exact test (the default at these n) keeps all three together under both rules (below), and
    # test_chaining_rule_exact in tests/test_stats_wilcoxon.py has a 12-item example for it.
    # means: A = 2, B = 2 - 3/10 = 1.7, C = 1.7 - 3/10 = 1.4 -> order A, B, C
    # B vs A: n = 5 non-zero, all tied (rank 3), R+ = 3, mean 7.5, var = (330 - 60) / 24 = 11.25
    #   z = -4.5 / sqrt(11.25) = -1.342 -> p = 0.0899: same cluster
    # C vs B: the same numbers (y has four -1 and one +1) -> p = 0.0899
    # C vs A: n = 10, all tied (rank 5.5), R+ = 2 * 5.5 = 11, mean = 10 * 11 / 4 = 27.5
    #   var = (10*11*21 - (10^3 - 10) / 2) / 24 = (2310 - 495) / 24 = 75.625
    #   z = -16.5 / sqrt(75.625) = -1.897 -> p = 0.0289 < 0.05
    p_step = phi(-4.5 / math.sqrt(11.25))
    p_far = phi(-16.5 / math.sqrt(75.625))
    top = system_clusters(CHAIN, chain="top", test="approx")  # C is compared with A, the cluster's top: 2 clusters
    assert top.n_clusters == 2 and top.labels.tolist() == [0, 0, 1]
    np.testing.assert_allclose(top.p_values, [p_step, p_far])
    assert top.compared_with.tolist() == [0, 0]
    prev = system_clusters(CHAIN, chain="previous", test="approx")  # C is compared with B: one chained cluster
    assert prev.n_clusters == 1 and prev.labels.tolist() == [0, 0, 0]
    np.testing.assert_allclose(prev.p_values, [p_step, p_step])
    assert prev.compared_with.tolist() == [0, 1]
    # exact (default): all |d| tied, so R+ = rank x (number of +1) and p = P(Binomial(n, 1/2) <= k):
    # B vs A and C vs B: n = 5, k = 1 -> (1 + 5) / 32 = 0.1875; C vs A: n = 10, k = 2 ->
    # (1 + 10 + 45) / 1024 = 0.0547 >= 0.05 -> one cluster under both rules
    top_exact = system_clusters(CHAIN, chain="top")
    assert top_exact.n_clusters == 1 and top_exact.p_values.tolist() == [6 / 32, 56 / 1024]
    assert system_clusters(CHAIN, chain="previous").p_values.tolist() == [6 / 32, 6 / 32]


def test_clusters_lower_is_better_and_nan_items():
    # negating the scores and saying lower is better gives the same clusters
    r = system_clusters(-THREE, higher_is_better=False)
    assert r.n_clusters == 2 and r.labels.tolist() == [0, 1, 1]
    assert r.means.tolist() == [-4.5, -1.5, -1.5]
    # an item with NaN for any system is dropped
    with_nan = np.vstack([THREE, [np.nan, 100.0, -100.0]])
    r2 = system_clusters(with_nan)
    assert r2.n_items == 6 and r2.labels.tolist() == [0, 1, 1]
    with pytest.raises(DataError, match="no item is scored for every system"):
        system_clusters([[np.nan, 1.0], [1.0, np.nan]])
    with pytest.raises(ParameterError, match="alpha"):
        system_clusters(THREE, alpha=1.5)
    with pytest.raises(ParameterError, match="chain"):
        system_clusters(THREE, chain="last")
    assert cluster_count(THREE[:, :1]) == 1  # one system, one cluster


def naive_clusters(scores, alpha, chain):
    """Independent reference: a plain loop with scipy's signed-rank test (normal approximation;
    compare with test="approx"; tests/test_stats_wilcoxon.py has the reference for the default)."""
    means = scores.mean(axis=0)
    order = sorted(range(scores.shape[1]), key=lambda s: -means[s])
    clusters = [[order[0]]]
    for s in order[1:]:
        ref = clusters[-1][0] if chain == "top" else clusters[-1][-1]
        d = scores[:, s] - scores[:, ref]
        if np.any(d != 0) and scipy_wilcoxon_p(d, "less") < alpha:
            clusters.append([s])
        else:
            clusters[-1].append(s)
    return len(clusters)


@pytest.mark.parametrize("chain", ["top", "previous"])
def test_clusters_equal_naive_scipy_loop(chain):
    rng = np.random.default_rng(3)
    for trial in range(15):
        n_items, n_sys = int(rng.integers(5, 60)), int(rng.integers(2, 9))
        quality = rng.normal(0, 0.4, n_sys)
        scores = np.round(quality + rng.normal(0, 1, (n_items, n_sys)), 1)
        assert cluster_count(scores, chain=chain, test="approx") == naive_clusters(scores, 0.05, chain)


# ---------------------------------------------------------------------------------------------
# Soft pairwise accuracy
# ---------------------------------------------------------------------------------------------


def test_paired_t_by_hand_and_scipy():
    # d = A - B = 1, 3: mean 2, sd = sqrt(2), se = sqrt(2) / sqrt(2) = 1, t = 2 with 1 df (Cauchy)
    # P(T >= 2) = 1/2 - atan(2) / pi = 0.1476
    p = paired_t_p_values([[2, 1], [4, 1]])
    assert p[0, 1] == pytest.approx(0.5 - math.atan(2) / math.pi)
    assert p[1, 0] == pytest.approx(0.5 + math.atan(2) / math.pi)
    rng = np.random.default_rng(4)
    s = rng.normal(size=(25, 5))
    P = paired_t_p_values(s)
    for i in range(5):
        for j in range(5):
            if i != j:
                ref = scipy.stats.ttest_rel(s[:, i], s[:, j], alternative="greater").pvalue
                assert P[i, j] == pytest.approx(ref, rel=1e-10)


def test_soft_pairwise_accuracy_by_hand():
    # full pool (A, B, C): A - B = 1 on every item (sd 0, mean > 0 -> p(A > B) = 0);
    # A - C = 2 everywhere -> 0; B - C = 1 everywhere -> 0.
    full = np.array([[3, 2, 1], [5, 4, 3], [4, 3, 2]], dtype=float)
    # subset 1: A - B = 0 (p = 0.5), A - C = 2 (p = 0), B - C = 2 (p = 0)
    # SPA = mean(1 - |0 - 0.5|, 1 - |0 - 0|, 1 - |0 - 0|) = (0.5 + 1 + 1) / 3 = 5/6
    sub = np.array([[3, 3, 1], [4, 4, 2]], dtype=float)
    assert soft_pairwise_accuracy(full, sub) == pytest.approx(5 / 6)
    # subset 2: A - B = 0 (p = 0.5), A - C = -1 and B - C = -1 everywhere (p = 1): C now wins
    # SPA = mean(1 - 0.5, 1 - |0 - 1|, 1 - |0 - 1|) = 0.5 / 3
    sub2 = np.array([[3, 3, 4], [4, 4, 5]], dtype=float)
    assert soft_pairwise_accuracy(full, sub2) == pytest.approx(0.5 / 3)
    assert soft_pairwise_accuracy(full, full) == pytest.approx(1.0)
    # one judged item: no variance, every p is 0.5 -> SPA = mean(1 - |0 - 0.5|) = 0.5
    assert soft_pairwise_accuracy(full, full[:1]) == pytest.approx(0.5)
    with pytest.raises(DataError, match="systems"):
        soft_pairwise_accuracy(full, sub[:, :2])


# ---------------------------------------------------------------------------------------------
# Prefix statistics
# ---------------------------------------------------------------------------------------------


def test_prefix_means_equals_naive_loop():
    rng = np.random.default_rng(5)
    scores = rng.normal(size=(50, 7))
    orders = np.array([rng.permutation(50)[:40] for _ in range(6)])  # orders may cover part of the pool
    sizes = [1, 5, 17, 40, 5]
    got = prefix_means(scores, orders, sizes)
    assert got.shape == (6, 5, 7)
    for k in range(6):
        for j, size in enumerate(sizes):
            np.testing.assert_allclose(got[k, j], scores[orders[k, :size]].mean(axis=0), rtol=1e-12, atol=1e-12)
    single = prefix_means(scores, orders[2], sizes)  # a 1-D order drops the k axis
    np.testing.assert_array_equal(single, got[2])


def test_prefix_means_by_hand():
    s = np.array([[1.0, 0.0], [3.0, 2.0], [5.0, 10.0]])
    # order 2, 0, 1: first item (5, 10); first two ((5 + 1) / 2, (10 + 0) / 2) = (3, 5); all (3, 4)
    np.testing.assert_allclose(prefix_means(s, [2, 0, 1], [1, 2, 3]), [[5, 10], [3, 5], [3, 4]])


def test_prefix_inputs_are_validated():
    s = np.arange(12.0).reshape(4, 3)
    with pytest.raises(DataError, match="complete items"):
        prefix_means(np.where(s == 4, np.nan, s), [0, 1, 2, 3], [2])
    with pytest.raises(ParameterError, match="index items"):
        prefix_means(s, [0, 1, 4], [2])
    with pytest.raises(ParameterError, match="repeats an item"):
        prefix_means(s, [0, 1, 1], [2])
    with pytest.raises(ParameterError, match="integer"):
        prefix_means(s, [0.0, 1.0], [1])
    with pytest.raises(ParameterError, match="sizes must be in"):
        prefix_means(s, [0, 1, 2], [4])
    with pytest.raises(ParameterError, match="kind"):
        prefix_correlation(s, [0, 1], [1], kind="pearson")


def test_prefix_correlation_equals_naive_loop():
    rng = np.random.default_rng(6)
    scores = rng.integers(0, 5, (60, 8)).astype(float)  # integer scores: tied prefix means happen
    orders = np.array([rng.permutation(60) for _ in range(5)])
    sizes = [1, 2, 10, 30, 60]
    full = scores.mean(axis=0)
    for kind, fn in (("kendall", scipy.stats.kendalltau), ("spearman", scipy.stats.spearmanr)):
        got = prefix_correlation(scores, orders, sizes, kind=kind, undefined=np.nan)
        for k in range(5):
            for j, size in enumerate(sizes):
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    ref = fn(scores[orders[k, :size]].mean(axis=0), full).statistic
                np.testing.assert_allclose(got[k, j], ref, atol=1e-12, equal_nan=True)
        assert np.all(got[:, -1] == 1.0)  # the whole pool reproduces its own ranking


def test_prefix_correlation_by_hand_and_undefined():
    s = np.array([[1.0, 0.0, 2.0], [1.0, 3.0, 2.0], [1.0, 2.0, 2.0]])
    # full means 1, 5/3, 2. Prefix of item 0: means 1, 0, 2; pairs (A,B) discordant (1 > 0 but 1 < 5/3),
    # (A,C) and (B,C) concordant -> tau = (2 - 1) / 3
    np.testing.assert_allclose(prefix_correlation(s, [0, 1, 2], [1, 2, 3]), [1 / 3, 1.0, 1.0])
    # a constant prefix (all means 7) has no ranking -> `undefined`
    c = np.array([[7.0, 7.0, 7.0], [1.0, 2.0, 3.0]])
    assert prefix_correlation(c, [0, 1], [1]).tolist() == [0.0]
    assert math.isnan(prefix_correlation(c, [0, 1], [1], undefined=np.nan)[0])
    # a reference other than the rows' own means (e.g. the full pool when scores is a subsample)
    assert prefix_correlation(c, [0, 1], [2], reference=[3.0, 2.0, 1.0]).tolist() == [-1.0]


def test_prefix_cluster_counts_equal_loop_over_prefixes():
    rng = np.random.default_rng(7)
    quality = np.linspace(0, 1.2, 6)
    scores = np.round(quality + rng.normal(0, 1, (80, 6)), 1)
    orders = np.array([rng.permutation(80) for _ in range(4)])
    sizes = [3, 10, 25, 80]
    for chain in ("top", "previous"):
        got = prefix_cluster_counts(scores, orders, sizes, chain=chain)
        assert got.shape == (4, 4)
        for k in range(4):
            for j, size in enumerate(sizes):
                assert got[k, j] == cluster_count(scores[orders[k, :size]], chain=chain)
    lower = prefix_cluster_counts(-scores, orders, sizes, higher_is_better=False)
    np.testing.assert_array_equal(lower, prefix_cluster_counts(scores, orders, sizes))


def test_prefix_cluster_counts_by_hand():
    # THREE, first 3 items: B - A = -2 -2 -4, ranks 1.5 1.5 3, R+ = 0.
    # exact (default): only the all-negative pattern of 2^3 has R+ <= 0 -> p = 1/8 >= 0.05
    # normal approximation: mean = 3 * 4 / 4 = 3, var = (3*4*7 - (2^3 - 2) / 2) / 24 = (84 - 3) / 24
    # = 3.375, z = -3 / sqrt(3.375) = -1.633, p = 0.0512 >= 0.05
    # -> one cluster either way; all 6 items: 2 (see test_three_systems_by_hand)
    p3 = phi(-3 / math.sqrt(3.375))
    assert signed_rank_p_values([-2, -2, -4], method="approx") == pytest.approx(p3) and p3 > 0.05
    assert signed_rank_p_values([-2, -2, -4]) == 1 / 8
    for test in ("auto", "exact", "approx"):
        assert prefix_cluster_counts(THREE, [0, 1, 2, 3, 4, 5], [3, 6], test=test).tolist() == [1, 2]
    # three equal negative differences: the normal approximation calls them significant
    # (var = (84 - (27 - 3) / 2) / 24 = 3, z = -3 / sqrt(3) = -1.732, p = 0.0416 < 0.05) -- the
    # defect the exact test fixes: all 2^3 sign patterns are equally likely, R+ <= 0 in one -> 1/8
    assert signed_rank_p_values([-1, -1, -1], method="approx") == pytest.approx(phi(-math.sqrt(3)))
    assert signed_rank_p_values([-1, -1, -1]) == 1 / 8


def test_prefix_sizes():
    # 0.05 * 460 = 23; 0.35 * 460 = 161 (the float product is 160.99999999999997); 0.5 * 460 = 230
    assert prefix_sizes([0.05, 0.35, 0.5], 460).tolist() == [23, 161, 230]
    assert prefix_sizes([0.001], 100).tolist() == [1]  # at least one item
    with pytest.raises(ParameterError):
        prefix_sizes([0.0, 0.5], 100)


# ---------------------------------------------------------------------------------------------
# Needed to match
# ---------------------------------------------------------------------------------------------

GRID = [0.1, 0.2, 0.3, 0.4, 0.5, 0.6]
# non-monotone: crosses 0.7 at 0.2, falls back at 0.3, back above from 0.4 on
CURVE = [0.5, 0.8, 0.6, 0.9, 0.85, 0.95]


def test_needed_to_match_first_rule_by_hand():
    # B = 0.2, target 0.7: first point >= 0.7 is 0.2 -> 0.2 / 0.2 = 1.0
    # B = 0.3, target 0.55: first point >= 0.55 is 0.2 -> 0.2 / 0.3 = 0.6667
    # B = 0.4, target 0.88: first point >= 0.88 is 0.4 -> 0.4 / 0.4 = 1.0
    # B = 0.5, target 0.99: never -> censored, 0.6 / 0.5 = 1.2
    # mean = (1 + 2/3 + 1 + 1.2) / 4 = 0.96667
    r = needed_to_match(GRID, CURVE, [0.2, 0.3, 0.4, 0.5], [0.7, 0.55, 0.88, 0.99], rule="first")
    np.testing.assert_allclose(r.per_target, [1.0, 0.2 / 0.3, 1.0, 1.2])
    np.testing.assert_allclose(r.needed_props, [0.2, 0.2, 0.4, 0.6])
    assert r.censored.tolist() == [False, False, False, True] and r.n_censored == 1
    assert r.value == pytest.approx((1 + 2 / 3 + 1 + 1.2) / 4)
    assert r.rule == "first"


def test_needed_to_match_stays_rule_by_hand():
    # B = 0.2, target 0.7: the curve is >= 0.7 at 0.2 but 0.6 at 0.3; from 0.4 on it stays
    #   (0.9, 0.85, 0.95) -> 0.4 / 0.2 = 2.0
    # B = 0.3, target 0.55: >= 0.55 from 0.2 on (0.8, 0.6, 0.9, 0.85, 0.95) -> 0.2 / 0.3 = 0.6667
    # B = 0.4, target 0.88: 0.9 at 0.4 but 0.85 at 0.5; stays only from 0.6 -> 0.6 / 0.4 = 1.5
    # B = 0.5, target 0.99: never -> censored, 0.6 / 0.5 = 1.2
    # mean = (2 + 2/3 + 1.5 + 1.2) / 4 = 1.34167
    r = needed_to_match(GRID, CURVE, [0.2, 0.3, 0.4, 0.5], [0.7, 0.55, 0.88, 0.99], rule="stays")
    np.testing.assert_allclose(r.per_target, [2.0, 0.2 / 0.3, 1.5, 1.2])
    assert r.censored.tolist() == [False, False, False, True]
    assert r.value == pytest.approx((2 + 2 / 3 + 1.5 + 1.2) / 4)


def test_needed_to_match_lower_is_better_nan_and_errors():
    # a lower-is-better curve: the first point <= 0.3 is 0.3 -> 0.3 / 0.3 = 1; NaN never matches
    r = needed_to_match([0.1, 0.2, 0.3], [0.5, np.nan, 0.2], [0.3], [0.3], higher_is_better=False)
    assert r.per_target.tolist() == [1.0]
    r2 = needed_to_match([0.1, 0.2, 0.3], [0.5, np.nan, 0.2], [0.1], [0.4])  # 0.5 >= 0.4 at 0.1
    assert r2.value == pytest.approx(1.0)
    with pytest.raises(ParameterError, match="rule"):
        needed_to_match(GRID, CURVE, [0.2], [0.7], rule="last")
    with pytest.raises(ParameterError, match="increasing"):
        needed_to_match([0.2, 0.1], [1, 2], [0.2], [0.7])
    with pytest.raises(DataError, match="equal length"):
        needed_to_match(GRID, CURVE[:3], [0.2], [0.7])


# ---------------------------------------------------------------------------------------------
# Docstrings and real data
# ---------------------------------------------------------------------------------------------

PUBLIC = [
    kendall_tau_b, spearman, kendall_tau_b_rows, spearman_rows, signed_rank_p_values, system_clusters,
    cluster_count, paired_t_p_values, soft_pairwise_accuracy, prefix_sizes, prefix_means,
    prefix_correlation, prefix_cluster_counts, needed_to_match,
]


@pytest.mark.parametrize("fn", PUBLIC, ids=lambda f: f.__name__)
def test_docstring_examples(fn):
    finder = doctest.DocTestFinder()
    runner = doctest.DocTestRunner()
    tests = finder.find(fn, globs={"np": np, **vars(stats)})
    assert tests and tests[0].examples, f"{fn.__name__} has no example"
    for t in tests:
        runner.run(t)
    assert runner.failures == 0


def _wmt23_mqm(data_dir: Path) -> np.ndarray:
    f = data_dir / "wmt23" / "mt-metrics-eval-v2" / "wmt23" / "human-scores" / "en-de.mqm.seg.score"
    need(f.relative_to(data_dir))
    cols: dict[str, list[float]] = {}
    for line in f.read_text().splitlines():
        name, value = line.split("\t")
        if name != "refA":
            cols.setdefault(name, []).append(np.nan if value.strip() == "None" else float(value))
    scores = np.array(list(cols.values())).T
    return scores[~np.isnan(scores).any(axis=1)]


def test_wmt23_mqm(data_dir):
    scores = _wmt23_mqm(data_dir)
    assert scores.shape == (460, 12)
    # the full pool: our vectorised walk equals a plain scipy loop, for both chaining rules; with
    # 460 items scipy's default mode is also the normal approximation
    for chain in ("top", "previous"):
        assert cluster_count(scores, chain=chain) == naive_clusters(scores, 0.05, chain)
    rng = np.random.default_rng(0)
    orders = np.array([rng.permutation(460) for _ in range(3)])
    sizes = prefix_sizes([0.1, 0.5, 1.0], 460)
    corr = prefix_correlation(scores, orders, sizes)
    assert np.all(corr[:, -1] == 1.0) and np.all(corr > 0)
    counts = prefix_cluster_counts(scores, orders, sizes)
    assert np.all(counts[:, -1] == cluster_count(scores))


# ---------------------------------------------------------------------------------------------
# Cluster rules: ours, the paper's text (App. Alg. 1), subset2evaluate's package
# ---------------------------------------------------------------------------------------------

# A beats B and C on every item; B and C are identical on every item
IDENTICAL = np.array([[3, 1, 1], [4, 2, 2], [5, 1, 1], [6, 2, 2], [5, 3, 3], [4, 0, 0]], dtype=float)


def test_package_rule_splits_identical_systems_by_hand():
    # 6 items: C - B is all zero. ours / text: p = 1, C stays with B; the package opens a new cluster.
    # B - A = [-2, -2, -4, -4, -2, -4]: all negative, 6 items with ties, scipy enumerates: p = 1/64 < 0.05.
    assert cluster_count(IDENTICAL) == 2
    assert cluster_count(IDENTICAL, rule="text") == 2
    assert cluster_count(IDENTICAL, rule="package") == 3
    r = system_clusters(IDENTICAL, rule="package")
    assert r.labels.tolist() == [0, 1, 2] and r.rule == "package" and r.chain == "previous"
    assert r.p_values.tolist() == [1 / 64, 1.0]  # the split of C comes from the rule, not from its p-value
    # prefixes: 2 items are one cluster under the package (it needs 3: ``len(data) < 3``) though B == C there;
    # 3 items: B - A = [-2, -2, -4], mid-ranks 1.5, 1.5, 3, R+ = 0, p = 1/8: A and B together, C split: 2;
    # 6 items: 3. The text rule: 1, 1, 2.
    sizes = [2, 3, 6]
    assert prefix_cluster_counts(IDENTICAL, np.arange(6), sizes, rule="package").tolist() == [1, 2, 3]
    assert prefix_cluster_counts(IDENTICAL, np.arange(6), sizes, rule="text").tolist() == [1, 1, 2]


def test_package_rule_uses_scipys_test():
    # 15 items: A = 1 everywhere; B = 0 on 11 items, 2 on 4. B - A: 11 x -1, 4 x +1 (all |d| tied, R+ = 32).
    # scipy's default approximates there: Phi((32 - 60) / sqrt(240)) = 0.0354 < 0.05: two clusters.
    # The exact test of ours and the text rule: 1941/32768 = 0.0592: one cluster.
    s = np.c_[np.ones(15), np.r_[np.zeros(11), np.full(4, 2.0)]]
    assert cluster_count(s, rule="package") == 2
    assert cluster_count(s, rule="text") == cluster_count(s) == 1
    assert cluster_count(s, rule="package", test="auto") == 1  # the package's rule with our exact test
    assert system_clusters(s, rule="package").p_values[0] == pytest.approx(phi(-28 / math.sqrt(240)))


def test_cluster_rule_settings_and_overrides():
    assert system_clusters(IDENTICAL).chain == "top" and system_clusters(IDENTICAL, rule="text").chain == "previous"
    r = system_clusters(IDENTICAL, rule="package", chain="top")  # an explicit chain wins over the rule's
    assert (r.chain, r.rule, r.n_clusters) == ("top", "package", 3)
    assert "scipy" in system_clusters(IDENTICAL, rule="package").test
    with pytest.raises(ParameterError, match="rule"):
        cluster_count(IDENTICAL, rule="paper")
    with pytest.raises(ParameterError, match="chain"):
        prefix_cluster_counts(IDENTICAL, np.arange(6), [6], rule="package", chain="best")
