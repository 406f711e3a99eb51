"""The signed-rank test in evalsift.stats.wilcoxon: the exact conditional test (ties and zeros
included), the normal approximation and the 'auto' switch between them, and the cluster functions
that use it. Hand-computed values carry their arithmetic in comments; scipy's exact mode pins the
untied case, and two independent references (enumeration of all sign flips; a pure-Python count
in exact integers) pin the tied case."""

from __future__ import annotations

import itertools
import math
import warnings
from fractions import Fraction

import numpy as np
import pytest
import scipy.stats

from evalsift.errors import DataError, ParameterError
from evalsift.stats import (
    WILCOXON_TEST,
    cluster_count,
    prefix_cluster_counts,
    signed_rank_p_values,
    system_clusters,
)
from evalsift.stats.wilcoxon import EXACT_MAX_N, WILCOXON_TESTS, _lower_cdf

ALTERNATIVES = ("less", "greater", "two-sided")


def _ranks_and_t(d):
    """Non-zero differences, their mid-ranks of |d| (scipy's rankdata) and R+."""
    d = np.asarray(d, dtype=float)
    d = d[d != 0]
    r = scipy.stats.rankdata(np.abs(d))
    return d, r, float(r[d > 0].sum())


def brute_force_p(d, alternative):
    """Enumerate all 2^n sign flips of the non-zero differences (zeros are dropped)."""
    d, r, t = _ranks_and_t(d)
    if d.size == 0:
        return 1.0
    signs = np.array(list(itertools.product([0.0, 1.0], repeat=d.size)))  # 1 = positive
    null = signs @ r
    lo = np.mean(null <= t + 1e-9)
    hi = np.mean(null >= t - 1e-9)
    if alternative == "less":
        return float(lo)
    if alternative == "greater":
        return float(hi)
    return float(min(1.0, 2 * min(lo, hi)))


def count_reference_p(d, alternative):
    """Exact p-value by counting sign patterns in Python integers (no floats, no symmetry, no
    truncation): counts[s] = number of patterns with 2 R+ = s, one item at a time."""
    d, r, t = _ranks_and_t(d)
    if d.size == 0:
        return 1.0
    doubled = [round(2 * float(x)) for x in r]
    counts = np.zeros(sum(doubled) + 1, dtype=object)  # Python ints: exact beyond 2^63
    counts[:] = 0
    counts[0] = 1
    for v in doubled:
        new = counts.copy()
        new[v:] += counts[: counts.size - v]
        counts = new
    t2 = round(2 * t)
    total = 2**d.size
    lo = Fraction(int(counts[: t2 + 1].sum()), total)
    hi = Fraction(int(counts[t2:].sum()), total)
    if alternative == "less":
        return float(lo)
    if alternative == "greater":
        return float(hi)
    return float(min(Fraction(1), 2 * min(lo, hi)))


def phi(z: float) -> float:
    """Standard normal CDF, for hand arithmetic."""
    return 0.5 * math.erfc(-z / math.sqrt(2))


def scipy_p(d, alternative, method):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return float(scipy.stats.wilcoxon(d, alternative=alternative, method=method).pvalue)


# ---------------------------------------------------------------------------------------------
# Hand-computed values
# ---------------------------------------------------------------------------------------------


def test_exact_by_hand():
    # d = -1 -2 -3: ranks 1 2 3, R+ = 0. Under H0 the 2^3 = 8 sign patterns are equally likely and
    # only "all negative" has R+ <= 0 -> p(less) = 1/8 (the normal approximation gave 0.054)
    for method in ("auto", "exact"):
        assert signed_rank_p_values([-1, -2, -3], method=method) == 1 / 8
    # greater: every pattern has R+ >= 0 -> 1; two-sided: min(1, 2 * 1/8) = 1/4
    assert signed_rank_p_values([-1, -2, -3], "greater") == 1.0
    assert signed_rank_p_values([-1, -2, -3], "two-sided") == 1 / 4
    # d = -1 .. -5: 1 of 32 patterns -> 1/32 (approximation: 0.0216)
    assert signed_rank_p_values([-1, -2, -3, -4, -5]) == 1 / 32
    # the mirror image: all positive, R+ = 15 = the maximum -> greater 1/32, less 1
    assert signed_rank_p_values([1, 2, 3, 4, 5], "greater") == 1 / 32
    assert signed_rank_p_values([1, 2, 3, 4, 5], "less") == 1.0


def test_exact_by_hand_with_ties_and_zeros():
    # d = -1 -1 +2: |d| = 1 1 2, mid-ranks 1.5 1.5 3; observed R+ = 3 (the +2).
    # The 8 sign patterns (which items are positive) and their R+:
    #   none 0 | first 1.5 | second 1.5 | third 3 | first+second 3 | first+third 4.5 |
    #   second+third 4.5 | all 6
    # P(R+ <= 3) = #{0, 1.5, 1.5, 3, 3} / 8 = 5/8 (ties at the observed value count: two patterns
    # give exactly 3); P(R+ >= 3) = #{3, 3, 4.5, 4.5, 6} / 8 = 5/8; two-sided min(1, 2 * 5/8) = 1
    assert signed_rank_p_values([-1, -1, 2], "less") == 5 / 8
    assert signed_rank_p_values([-1, -1, 2], "greater") == 5 / 8
    assert signed_rank_p_values([-1, -1, 2], "two-sided") == 1.0
    # zeros dropped: -1 -1 -1 -1 +1 and five zeros -> n = 5, all |d| tied at rank 3, R+ = 3:
    # R+ = 3 x (number of positives) ~ 3 x Binomial(5, 1/2); P(at most 1 positive) = (1 + 5) / 32
    assert signed_rank_p_values([-1, -1, -1, -1, 1, 0, 0, 0, 0, 0]) == 6 / 32
    # -2 -2 -4: mid-ranks 1.5 1.5 3, R+ = 0 -> only "all negative": 1/8
    assert signed_rank_p_values([-2, -2, -4]) == 1 / 8


def test_one_item_and_all_zero_rows():
    # n = 1: R+ is 0 or 1 with probability 1/2 each
    assert signed_rank_p_values([0, -3, 0]) == 0.5
    assert signed_rank_p_values([0, -3, 0], "greater") == 1.0
    assert signed_rank_p_values([0, -3, 0], "two-sided") == 1.0
    # no non-zero difference: p = 1 under every method and alternative
    for method in ("auto", "exact", "approx"):
        for alternative in ALTERNATIVES:
            assert signed_rank_p_values(np.zeros((2, 4)), alternative, method).tolist() == [1.0, 1.0]


# ---------------------------------------------------------------------------------------------
# Against scipy and independent references
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("alternative", ALTERNATIVES)
def test_exact_equals_scipy_exact_untied(alternative):
    # untied, no zeros: scipy's method='exact' is the exact distribution; n = 1 .. 25
    rng = np.random.default_rng(10)
    rows = [rng.normal(size=n) for n in range(1, 26) for _ in range(4)]
    ref = np.array([scipy_p(d, alternative, "exact") for d in rows])
    one_by_one = np.array([signed_rank_p_values(d, alternative, method="exact") for d in rows])
    np.testing.assert_allclose(one_by_one, ref, rtol=0, atol=1e-12)
    # all rows in one call, each padded with zeros to length 25
    padded = np.zeros((len(rows), 25))
    for i, d in enumerate(rows):
        padded[i, : d.size] = d
    np.testing.assert_allclose(signed_rank_p_values(padded, alternative), ref, rtol=0, atol=1e-12)


def _tied_rows(rng, count, n_max):
    rows = []
    for trial in range(count):
        n = int(rng.integers(1, n_max + 1))
        if trial % 3 == 0:
            d = rng.integers(-3, 4, n).astype(float)  # many ties and zeros
        elif trial % 3 == 1:
            d = np.round(rng.normal(size=n), 0)  # ties, zeros
        else:
            d = rng.choice([-2.5, -1.0, 0.0, 1.0, 2.5, 4.0], n)
        rows.append(d)
    rows.append(np.array([-1.0, -1.0, 2.0]))
    rows.append(np.array([0.0, 0.0, 0.0, 5.0]))
    return rows


@pytest.mark.parametrize("alternative", ALTERNATIVES)
def test_exact_equals_brute_force_with_ties_and_zeros(alternative):
    rng = np.random.default_rng(11)
    rows = _tied_rows(rng, 120, 12)
    ref = np.array([brute_force_p(d, alternative) for d in rows])
    padded = np.zeros((len(rows), 12))
    for i, d in enumerate(rows):
        padded[i, : d.size] = d
    np.testing.assert_allclose(signed_rank_p_values(padded, alternative), ref, rtol=0, atol=1e-12)
    for d, p in zip(rows[:30], ref[:30]):
        assert signed_rank_p_values(d, alternative, method="exact") == pytest.approx(p, rel=0, abs=1e-12)


@pytest.mark.parametrize("alternative", ALTERNATIVES)
def test_exact_equals_scipy_permutation_small_n(alternative):
    # scipy's default for n <= 13 with ties or zeros is a permutation test over all 2^n sign flips:
    # the same conditional distribution
    rng = np.random.default_rng(12)
    rows = [d for d in _tied_rows(rng, 30, 10) if np.any(d != 0)]
    for d in rows:
        ref = scipy_p(d, alternative, "auto")
        assert signed_rank_p_values(d, alternative) == pytest.approx(ref, rel=0, abs=1e-12)


@pytest.mark.parametrize("alternative", ALTERNATIVES)
def test_exact_equals_integer_count_up_to_large_n(alternative):
    # n up to 80 (beyond enumeration), with ties and zeros, mixed lengths in one call; the
    # reference counts sign patterns in Python integers
    rng = np.random.default_rng(13)
    rows = []
    for trial in range(40):
        n = int(rng.integers(13, 81))
        shift = rng.normal(0, 0.6)  # from clearly negative to clearly positive: both tails
        rows.append(np.round(shift + rng.normal(size=n), 0 if trial % 2 else 1))
    width = max(d.size for d in rows)
    padded = np.zeros((len(rows), width))
    for i, d in enumerate(rows):
        padded[i, : d.size] = d
    ref = np.array([count_reference_p(d, alternative) for d in rows])
    np.testing.assert_allclose(signed_rank_p_values(padded, alternative, method="exact"), ref, rtol=0, atol=1e-12)


def test_rows_sharing_ranks_and_unequal_lengths():
    # same |d| (so the same ranks and one shared null distribution) with different signs, next
    # to rows of other lengths: each row keeps its own p-value
    base = np.array([1.0, 2.0, 2.0, 3.0, 5.0, 5.0, 5.0, 8.0])
    rng = np.random.default_rng(14)
    rows = [base * rng.choice([-1.0, 1.0], base.size) for _ in range(20)]
    rows += [np.array([-1.0, 2.0]), np.array([3.0, -1.0, -1.0, 0.0, 2.0]), np.zeros(3)]
    padded = np.zeros((len(rows), 11))
    for i, d in enumerate(rows):
        padded[i, 3: 3 + d.size] = d  # zeros before and after: positions do not matter
    for alternative in ALTERNATIVES:
        got = signed_rank_p_values(padded, alternative)
        for i, d in enumerate(rows):
            assert got[i] == signed_rank_p_values(d, alternative)  # bit-identical to the row alone
            assert got[i] == pytest.approx(brute_force_p(d, alternative), rel=0, abs=1e-12)


def test_zero_shift_leaves_the_distribution_unchanged():
    # the dynamic programme's step is P <- (P + P shifted by a) / 2; a padding position has a = 0:
    # (P + P) / 2 = P exactly, so trailing zeros change nothing, bit for bit
    a = np.array([[2, 5, 5, 9, 9, 12]])  # |d| = 1, 2, 2, 4, 4, 5: mid-ranks 1, 2.5, 2.5, 4.5, 4.5, 6, doubled
    total = int(a.sum())
    full = _lower_cdf(a, total)
    padded = _lower_cdf(np.hstack([a, np.zeros((1, 7), dtype=np.int64)]), total)
    assert np.array_equal(full, padded)
    assert full[0, -1] == 1.0  # the whole distribution sums to 1
    # against the distribution by enumeration: every subset of the doubled ranks, equally likely
    sums = [sum(c) for k in range(7) for c in itertools.combinations(a[0].tolist(), k)]
    expect = np.cumsum(np.bincount(sums, minlength=total + 1)) / 2**6
    np.testing.assert_array_equal(full[0], expect)
    # rows of different lengths in one block: each equals its own
    two = np.array([[2, 4, 6, 0, 0], [3, 3, 7, 7, 10]])  # n = 3 untied; n = 5 with two pairs tied
    both = _lower_cdf(two, 12)
    np.testing.assert_array_equal(both[0], _lower_cdf(two[:1, :3], 12)[0])
    np.testing.assert_array_equal(both[1], _lower_cdf(two[1:], 12)[0])


def test_approx_is_unchanged_normal_approximation():
    rng = np.random.default_rng(15)
    rows = [np.round(rng.normal(size=int(rng.integers(1, 40))), 1) for _ in range(40)]
    rows = [d if np.any(d != 0) else np.array([1.0]) for d in rows]
    for alternative in ALTERNATIVES:
        for d in rows:
            assert signed_rank_p_values(d, alternative, method="approx") == pytest.approx(
                scipy_p(d, alternative, "asymptotic"), rel=1e-10, abs=1e-14
            )


# ---------------------------------------------------------------------------------------------
# The 'auto' switch
# ---------------------------------------------------------------------------------------------


def test_auto_switches_at_exact_max_n():
    assert EXACT_MAX_N == 50
    rng = np.random.default_rng(16)
    d50 = -np.abs(rng.normal(size=50)) + 0.25  # mostly negative: a small p, where the two methods differ
    d51 = -np.abs(rng.normal(size=51)) + 0.25
    exact50 = signed_rank_p_values(d50, method="exact")
    approx50 = signed_rank_p_values(d50, method="approx")
    assert exact50 != approx50
    assert signed_rank_p_values(d50) == exact50  # n = 50: exact
    assert exact50 == pytest.approx(scipy_p(d50, "less", "exact"), rel=0, abs=1e-12)
    exact51 = signed_rank_p_values(d51, method="exact")
    approx51 = signed_rank_p_values(d51, method="approx")
    assert exact51 != approx51
    assert signed_rank_p_values(d51) == approx51  # n = 51: normal approximation
    # n counts non-zero differences only: 50 of them among 60 positions is exact
    d60 = np.concatenate([d50, np.zeros(10)])
    assert signed_rank_p_values(d60) == exact50
    # mixed in one call
    both = np.zeros((2, 60))
    both[0] = d60
    both[1, :51] = d51
    assert signed_rank_p_values(both).tolist() == [exact50, approx51]


def test_method_is_validated():
    with pytest.raises(ParameterError, match="method"):
        signed_rank_p_values([1.0, -2.0], method="permutation")
    with pytest.raises(ParameterError, match="alternative"):
        signed_rank_p_values([1.0, -2.0], "lesser")
    for fn in (system_clusters, cluster_count):
        with pytest.raises(ParameterError, match="test"):
            fn(np.eye(3), test="exactly")
    with pytest.raises(ParameterError, match="test"):
        prefix_cluster_counts(np.eye(3), [0, 1, 2], [3], test="normal")


# ---------------------------------------------------------------------------------------------
# Cluster functions
# ---------------------------------------------------------------------------------------------


def test_three_items_cannot_separate_two_systems():
    # A beats B by 1 on each of 3 items: d = B - A = -1 -1 -1.
    # exact: 1 of 8 sign patterns has R+ <= 0 -> p = 1/8 >= 0.05, the smallest p 3 items can give:
    # one cluster. The normal approximation gave Phi(-3 / sqrt(3)) = 0.0416 < 0.05: two clusters.
    s = np.array([[1.0, 0.0], [1.0, 0.0], [1.0, 0.0]])
    assert cluster_count(s) == 1
    assert cluster_count(s, test="exact") == 1
    assert cluster_count(s, test="approx") == 2
    r = system_clusters(s)
    assert r.p_values.tolist() == [1 / 8] and r.test == WILCOXON_TEST == WILCOXON_TESTS["auto"]
    assert system_clusters(s, test="approx").test == WILCOXON_TESTS["approx"]
    assert system_clusters(s, test="exact").test == WILCOXON_TESTS["exact"]
    # unequal differences (2, 3, 5 better): still 1/8 exact (0.054 approximate)
    s2 = np.array([[2.0, 0.0], [3.0, 0.0], [5.0, 0.0]])
    assert cluster_count(s2) == 1 and system_clusters(s2).p_values.tolist() == [1 / 8]
    # 5 items all better: 1/32 = 0.031 < 0.05 -> two clusters
    assert cluster_count(np.array([[1.0, 0.0]] * 5)) == 2
    # prefixes of the same 5 items: 3 items 1/8 and 4 items 1/16 = 0.0625 -> one; 5 items 1/32 -> two
    assert prefix_cluster_counts(np.array([[1.0, 0.0]] * 5), [0, 1, 2, 3, 4], [3, 4, 5]).tolist() == [1, 1, 2]


def test_chaining_rule_exact():
    # 12 items; A = 2 everywhere, B = A + x, C = B + y with
    #   x = -1 -1 -1 -1 -1 +1  0  0  0  0  0  0   (B - A)
    #   y =  0  0  0  0  0  0 -1 -1 -1 -1 -1 +1   (C - B)
    # All |d| are tied, so R+ = rank x (number of +1) and p = P(Binomial(n, 1/2) <= k):
    #   B vs A, C vs B: n = 6, k = 1 -> (1 + 6) / 64 = 0.109 >= 0.05: same cluster
    #   C vs A: n = 12, k = 2 -> (1 + 12 + 66) / 4096 = 79 / 4096 = 0.0193 < 0.05
    # so chain="top" (C against A) gives 2 clusters and chain="previous" (C against B) one.
    x = np.array([-1, -1, -1, -1, -1, 1, 0, 0, 0, 0, 0, 0], dtype=float)
    y = np.array([0, 0, 0, 0, 0, 0, -1, -1, -1, -1, -1, 1], dtype=float)
    chain = np.column_stack([np.full(12, 2.0), 2.0 + x, 2.0 + x + y])
    top = system_clusters(chain, chain="top")
    assert top.n_clusters == 2 and top.labels.tolist() == [0, 0, 1]
    assert top.p_values.tolist() == [7 / 64, 79 / 4096] and top.compared_with.tolist() == [0, 0]
    prev = system_clusters(chain, chain="previous")
    assert prev.n_clusters == 1 and prev.p_values.tolist() == [7 / 64, 7 / 64]
    # the normal approximation agrees here: n = 6, rank 3.5, R+ = 3.5, mean 10.5,
    # var = (6*7*13 - (6^3 - 6) / 2) / 24 = (546 - 105) / 24 = 18.375, z = -7 / sqrt(18.375) = -1.633
    # -> 0.0512; n = 12, rank 6.5, R+ = 13, mean 39, var = (12*13*25 - (12^3 - 12) / 2) / 24 = 126.75,
    # z = -26 / sqrt(126.75) = -2.309 -> 0.0105
    approx = system_clusters(chain, chain="top", test="approx")
    assert approx.n_clusters == 2
    np.testing.assert_allclose(approx.p_values, [phi(-7 / math.sqrt(18.375)), phi(-26 / math.sqrt(126.75))])


def naive_clusters_auto(scores, alpha, chain):
    """Plain loop; p from the integer-count reference for n <= 50, scipy's normal approximation above."""
    means = scores.mean(axis=0)
    order = sorted(range(scores.shape[1]), key=lambda s: -means[s])
    clusters = [[order[0]]]
    for s in order[1:]:
        ref = clusters[-1][0] if chain == "top" else clusters[-1][-1]
        d = scores[:, s] - scores[:, ref]
        n = int(np.count_nonzero(d))
        p = 1.0 if n == 0 else count_reference_p(d, "less") if n <= 50 else scipy_p(d, "less", "asymptotic")
        if p < alpha:
            clusters.append([s])
        else:
            clusters[-1].append(s)
    return len(clusters)


@pytest.mark.parametrize("chain", ["top", "previous"])
def test_clusters_equal_naive_loop_auto(chain):
    rng = np.random.default_rng(17)
    for trial in range(25):
        n_items, n_sys = int(rng.integers(3, 70)), int(rng.integers(2, 8))
        quality = rng.normal(0, 0.5, n_sys)
        scores = np.round(quality + rng.normal(0, 1, (n_items, n_sys)), 0)  # integer scores: ties, zeros
        assert cluster_count(scores, chain=chain) == naive_clusters_auto(scores, 0.05, chain)


def test_prefix_cluster_counts_equal_loop_for_each_test():
    rng = np.random.default_rng(18)
    scores = np.round(np.linspace(0, 1.5, 5) + rng.normal(0, 1, (70, 5)), 0)
    orders = np.array([rng.permutation(70) for _ in range(4)])
    sizes = [3, 5, 12, 30, 50, 51, 70]
    for test in ("auto", "exact", "approx"):
        got = prefix_cluster_counts(scores, orders, sizes, test=test)
        for k in range(4):
            for j, size in enumerate(sizes):
                assert got[k, j] == cluster_count(scores[orders[k, :size]], test=test)
    # no prefix of 3 items separates two systems: the smallest exact p with n <= 3 is 1/8
    assert np.all(prefix_cluster_counts(scores, orders, [3]) == 1)


# ---------------------------------------------------------------------------------------------
# method='scipy': what subset2evaluate's call, scipy.stats.wilcoxon(d, alternative="less"), computes
# ---------------------------------------------------------------------------------------------

SCIPY_AUTO_PERMUTES = tuple(int(x) for x in scipy.__version__.split(".")[:2]) >= (1, 15)


def test_scipy_method_by_hand():
    # 15 items, 11 at -1 and 4 at +1: every |d| = 1 is tied, mid-rank 8, R+ = 4 * 8 = 32.
    # scipy's default approximates (14 <= 15 <= 50 with ties): mean 15*16/4 = 60,
    # var = (15*16*31 - (15^3 - 15)/2) / 24 = (7440 - 1680) / 24 = 240, z = (32 - 60) / sqrt(240).
    # Exact: R+ <= 32 means at most 4 of 15 positive: (1 + 15 + 105 + 455 + 1365) / 2^15 = 1941/32768.
    d = [-1.0] * 11 + [1.0] * 4
    assert signed_rank_p_values(d, method="scipy") == pytest.approx(phi(-28 / math.sqrt(240)), rel=1e-12)
    assert signed_rank_p_values(d) == 1941 / 32768  # 'auto' is exact here: 0.0592 > 0.05 > 0.0354
    # 13 items with ties: scipy enumerates the 2^13 sign flips, i.e. the exact conditional p-value
    d13 = [-1.0] * 10 + [1.0] * 3  # P(at most 3 of 13 positive) = (1 + 13 + 78 + 286) / 8192
    assert signed_rank_p_values(d13, method="scipy") == pytest.approx(378 / 8192, rel=1e-12)
    # more than 50 items: the approximation, even with only 5 non-zero differences (counted: the input's length)
    d55 = [-1.0, -2.0, -3.0, -4.0, -5.0] + [0.0] * 50
    assert signed_rank_p_values(d55, method="scipy") == pytest.approx(phi(-7.5 / math.sqrt(13.75)), rel=1e-12)
    assert signed_rank_p_values(d55) == 1 / 32  # ours counts non-zero differences: exact


def test_scipy_method_reads_padded_lengths():
    # zeros padded after a prefix are not part of scipy's input: lengths say where each row ends
    d = np.array([-1.0] * 11 + [1.0] * 4)
    padded = np.zeros((2, 60))
    padded[0, :15] = d
    padded[1, :13] = d[2:]
    got = signed_rank_p_values(padded, method="scipy", lengths=[15, 13])
    assert got.tolist() == [signed_rank_p_values(d, method="scipy"), signed_rank_p_values(d[2:], method="scipy")]
    # without lengths the width (60 > 50) is the length: the approximation for both
    assert signed_rank_p_values(padded, method="scipy")[1] != got[1]
    with pytest.raises(DataError, match="lengths"):
        signed_rank_p_values(padded, method="scipy", lengths=[15])
    with pytest.raises(DataError, match="at least"):
        signed_rank_p_values(padded, method="scipy", lengths=[3, 13])


@pytest.mark.skipif(not SCIPY_AUTO_PERMUTES, reason="scipy < 1.15 decides method='auto' differently")
def test_scipy_method_equals_scipys_default_call():
    rng = np.random.default_rng(29)
    rows = []
    for L in (3, 8, 13, 14, 20, 50, 51, 70):
        rows.append(rng.normal(size=L))  # no zero, no tie: scipy's exact (L <= 50)
        rows.append(rng.integers(-4, 5, size=L).astype(float))  # ties and zeros (MQM-like)
        rows.append(np.r_[rng.normal(size=L - 1), 0.0])  # one zero, no tie
    checked = 0
    for d in rows:
        if not (d != 0).any():
            continue
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            expected = float(scipy.stats.wilcoxon(d, alternative="less").pvalue)
        assert signed_rank_p_values(d, method="scipy") == pytest.approx(expected, rel=1e-9, abs=1e-15), d
        checked += 1
    assert checked == len(rows)
