"""Ranking agreement: how well does a subset of judged items reproduce the ranking of many systems?

(Zouhar et al., TACL 2025, the ``subset2evaluate`` package.) A selector orders the items; for a
prefix of that order we take each system's mean score and compare the prefix ranking with the
full-pool ranking by rank correlation, by the number of statistically separable clusters of
systems, and by soft pairwise accuracy. These numbers are computed for methods x seeds x
proportions, so the prefix functions gather the order once and use cumulative sums.
Formulas, the cluster chaining rule, the Wilcoxon mode and the needed-to-match rules are in
``docs/ranking-stats.md``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.special import stdtr

from ..errors import DataError, ParameterError, check_choice
from .ranks import _CHUNK, _rank_rows, _row_chunks
from .wilcoxon import (
    WILCOXON_METHODS,
    WILCOXON_TEST,
    WILCOXON_TESTS,
    _prefix_p_values,
)

CORRELATION_KINDS = ("kendall", "spearman")
CLUSTER_CHAINS = ("top", "previous")
CLUSTER_RULES = ("ours", "text", "package")
# what each cluster rule sets (docs/ranking-stats.md, "Cluster rules"); chain and test can be overridden
CLUSTER_RULE_SETTINGS: dict[str, dict[str, object]] = {
    # evalsift's: compare with the cluster's best system, exact test up to 50 non-zero differences
    "ours": {"chain": "top", "test": "auto", "split_identical": False, "min_items": 0},
    # the paper's App. Alg. 1 as written: compare with the system just above; the exact test as ours
    "text": {"chain": "previous", "test": "auto", "split_identical": False, "min_items": 0},
    # subset2evaluate's evaluate.compute_clusters (the code behind Tables 2 and 10): the system just
    # above, scipy.stats.wilcoxon's default call, a new cluster when all differences are zero, and one
    # cluster for fewer than 3 items
    "package": {"chain": "previous", "test": "scipy", "split_identical": True, "min_items": 3},
}
MATCH_RULES = ("first", "stays")


def _rows_and_target(X, y, fn: str) -> tuple[np.ndarray, np.ndarray]:
    X = np.asarray(X, dtype=float)
    y = np.asarray(y, dtype=float)
    if X.ndim != 2:
        raise DataError(f"{fn}: X must be 2-D (candidates x systems), got shape {X.shape}")
    if y.ndim not in (1, 2) or y.shape[-1] != X.shape[1] or (y.ndim == 2 and y.shape[0] not in (1, X.shape[0])):
        raise DataError(
            f"{fn}: y must have shape ({X.shape[1]},) or ({X.shape[0]}, {X.shape[1]}) to match X {X.shape}, "
            f"got {y.shape}"
        )
    return X, np.broadcast_to(y, X.shape)


def _pair_vectors(x, y, fn: str) -> tuple[np.ndarray, np.ndarray]:
    x = np.asarray(x, dtype=float)
    y = np.asarray(y, dtype=float)
    if x.ndim != 1 or y.ndim != 1 or x.size != y.size:
        raise DataError(f"{fn}: x and y must be 1-D arrays of equal length, got shapes {x.shape} and {y.shape}")
    return x[None, :], y


def kendall_tau_b_rows(X, y) -> np.ndarray:
    """Kendall's tau-b between every row of ``X`` (k x n) and ``y`` (n,) or (k x n), at once.

    ``tau_b = (C - D) / sqrt((P - T_x) (P - T_y))`` over the P = n(n-1)/2 pairs, with C / D the
    concordant / discordant pairs and T_x / T_y the pairs tied in x / y: scipy's
    ``kendalltau(variant='b')``. NaN policy: a position where the row or ``y`` is NaN is left out
    of that row (scipy's ``nan_policy='omit'``). A row with fewer than 2 positions left, or constant
    in x or y, gives NaN. Work is O(k n^2), in blocks of bounded memory.

    >>> kendall_tau_b_rows([[1, 2, 3], [3, 2, 1], [1, 3, 2]], [1, 2, 3]).round(4).tolist()
    [1.0, -1.0, 0.3333]
    """
    X, Y = _rows_and_target(X, y, "kendall_tau_b_rows")
    k, n = X.shape
    i, j = np.triu_indices(n, 1)
    out = np.full(k, np.nan)
    one_y = Y.strides[0] == 0  # one y for every row (broadcast): its pair signs are taken once
    if one_y and not np.isnan(X).any() and not np.isnan(Y[0]).any():
        sy = np.sign(Y[0, i] - Y[0, j])
        tied_y = float((sy * sy).sum())
        for rows in _row_chunks(k, i.size):
            sx = np.sign(X[rows][:, i] - X[rows][:, j])
            num = sx @ sy  # integers: the same sums in any order
            den = np.sqrt((sx * sx).sum(axis=1) * tied_y)
            with np.errstate(invalid="ignore", divide="ignore"):
                out[rows] = np.where(den > 0, num / den, np.nan)
        return out
    for rows in _row_chunks(k, i.size):
        sx = np.sign(X[rows][:, i] - X[rows][:, j])  # NaN where either end is NaN
        sy = np.sign(Y[rows][:, i] - Y[rows][:, j])
        keep = ~(np.isnan(sx) | np.isnan(sy))
        sx = np.where(keep, sx, 0.0)
        sy = np.where(keep, sy, 0.0)
        num = (sx * sy).sum(axis=1)
        den = np.sqrt((sx * sx).sum(axis=1) * (sy * sy).sum(axis=1))
        with np.errstate(invalid="ignore", divide="ignore"):
            out[rows] = np.where(den > 0, num / den, np.nan)
    return out


def spearman_rows(X, y) -> np.ndarray:
    """Spearman's rho between every row of ``X`` (k x n) and ``y`` (n,) or (k x n), at once.

    The Pearson correlation of average ranks (ties share the mean of their ranks), as
    ``scipy.stats.spearmanr``. NaN policy: positions where the row or ``y`` is NaN are left out and
    the rest re-ranked (scipy's ``nan_policy='omit'``). A row with fewer than 2 positions left or a
    constant side gives NaN.

    >>> spearman_rows([[1, 2, 3, 4], [4, 3, 2, 1], [1, 2, 4, 3]], [1, 2, 3, 4]).tolist()
    [1.0, -1.0, 0.8]
    """
    X, Y = _rows_and_target(X, y, "spearman_rows")
    k, n = X.shape
    out = np.full(k, np.nan)
    for rows in _row_chunks(k, 4 * n):
        x, yy = X[rows], Y[rows]
        keep = ~(np.isnan(x) | np.isnan(yy))
        rx, _ = _rank_rows(np.where(keep, x, np.nan))
        ry, _ = _rank_rows(np.where(keep, yy, np.nan))
        centre = (keep.sum(axis=1, keepdims=True) + 1) / 2.0  # mean of ranks 1..n_kept
        dx = np.where(keep, rx - centre, 0.0)
        dy = np.where(keep, ry - centre, 0.0)
        num = (dx * dy).sum(axis=1)
        den = np.sqrt((dx * dx).sum(axis=1) * (dy * dy).sum(axis=1))
        with np.errstate(invalid="ignore", divide="ignore"):
            out[rows] = np.where(den > 0, num / den, np.nan)
    return out


def kendall_tau_b(x, y) -> float:
    """Kendall's tau-b of two 1-D arrays; equals ``scipy.stats.kendalltau(x, y).statistic``.

    Positions where x or y is NaN are dropped (scipy's ``nan_policy='omit'``); NaN when fewer than
    two remain or a side is constant.

    >>> kendall_tau_b([1, 2, 3, 4], [1, 3, 2, 4])   # 5 concordant, 1 discordant pair: 4/6
    0.6666666666666666
    """
    x, y = _pair_vectors(x, y, "kendall_tau_b")
    return float(kendall_tau_b_rows(x, y)[0])


def spearman(x, y) -> float:
    """Spearman's rho of two 1-D arrays; equals ``scipy.stats.spearmanr(x, y).statistic``.

    Positions where x or y is NaN are dropped (scipy's ``nan_policy='omit'``); NaN when fewer than
    two remain or a side is constant.

    >>> spearman([1, 2, 3, 4], [1, 3, 2, 4])   # 1 - 6 * (0 + 1 + 1 + 0) / (4 * 15)
    0.8
    """
    x, y = _pair_vectors(x, y, "spearman")
    return float(spearman_rows(x, y)[0])


def _scores_matrix(scores, fn: str) -> np.ndarray:
    s = np.asarray(scores, dtype=float)
    if s.ndim != 2:
        raise DataError(f"{fn}: scores must be 2-D (items x systems), got shape {s.shape}")
    if s.shape[1] == 0:
        raise DataError(f"{fn}: scores has no systems (shape {s.shape})")
    return s


def _complete_items(scores, fn: str) -> np.ndarray:
    """Drop items (rows) with NaN for any system; error when none is left."""
    s = _scores_matrix(scores, fn)
    s = s[~np.isnan(s).any(axis=1)]
    if s.shape[0] == 0:
        raise DataError(f"{fn}: no item is scored for every system; pass items x systems with complete rows")
    return s


def _check_alpha(alpha: float, fn: str) -> float:
    alpha = float(alpha)
    if not 0.0 < alpha < 1.0:
        raise ParameterError(f"{fn}: alpha must be in (0, 1), got {alpha}")
    return alpha


def _check_chain(chain: str, fn: str) -> str:
    return check_choice("chain", chain, CLUSTER_CHAINS, where=fn)


def _check_test(test: str, fn: str) -> str:
    return check_choice("test", test, WILCOXON_METHODS, where=fn)


def cluster_rule_settings(rule: str = "ours", chain: str | None = None, test: str | None = None,
                          where: str = "cluster_rule_settings") -> dict[str, object]:
    """The settings of a cluster rule (``CLUSTER_RULE_SETTINGS``), with ``chain`` / ``test`` overriding
    the rule's own when given: ``{"rule", "chain", "test", "split_identical", "min_items"}``.

    >>> s = cluster_rule_settings("package")
    >>> s["chain"], s["test"], s["split_identical"], s["min_items"]
    ('previous', 'scipy', True, 3)
    >>> cluster_rule_settings("package", test="auto")["test"]   # the package's rule with our exact test
    'auto'
    """
    rule = check_choice("rule", rule, CLUSTER_RULES, where=where)
    out: dict[str, object] = {"rule": rule, **CLUSTER_RULE_SETTINGS[rule]}
    if chain is not None:
        out["chain"] = _check_chain(chain, where)
    if test is not None:
        out["test"] = _check_test(test, where)
    return out


def _walk_clusters(G: np.ndarray, order: np.ndarray, alpha: float, chain: str, test: str = "auto",
                   source: np.ndarray | None = None, lengths: np.ndarray | None = None,
                   split_identical: bool = False, min_items: int = 0):
    """Cluster walk for c cases at once. G: (g, m, n_sys) scores, higher better; order: (c, n_sys).

    Case i walks ``G[source[i]]`` (default: ``G[i]``) over its first ``lengths[i]`` items (default:
    all m). Returns labels in sorted position (c, n_sys), p-values (c, n_sys - 1) and the reference
    system of each comparison (c, n_sys - 1). Each step is one vectorised signed-rank test over the
    cases (``test``: the method of :func:`signed_rank_p_values`); only the n_sys - 1 steps are a
    Python loop. At a step, the cases that compare the same two systems on the same source share
    one row of differences, of which each case is a prefix (:func:`wilcoxon._prefix_p_values`: one
    sort per row, the same p-values as a test of each prefix on its own).
    ``split_identical``: differences that are all zero start a new cluster (subset2evaluate's rule;
    their p-value stays 1). ``min_items``: a case of fewer items is one cluster.
    """
    c, n_sys = order.shape
    m = G.shape[1]
    source = np.arange(c) if source is None else np.asarray(source)
    width = np.full(c, m) if lengths is None else np.asarray(lengths)
    labels = np.zeros((c, n_sys), dtype=np.int64)
    p = np.ones((c, max(n_sys - 1, 0)))
    refs = np.zeros((c, max(n_sys - 1, 0)), dtype=np.int64)
    identical = np.zeros(c, dtype=bool)
    ref = order[:, 0].copy()
    reach = int(width.max(initial=0))
    per = max(1, _CHUNK // max(1, reach))  # rows of differences per block (bounded memory)
    for step in range(1, n_sys):
        nxt = order[:, step]
        base = ref if chain == "top" else order[:, step - 1]
        pair, row = np.unique((source.astype(np.int64) * n_sys + base) * n_sys + nxt, return_inverse=True)
        row = row.reshape(-1)
        src, rest = np.divmod(pair, n_sys * n_sys)
        b, nx = np.divmod(rest, n_sys)
        by_row = np.argsort(row, kind="stable")
        bounds = np.searchsorted(row[by_row], np.arange(0, pair.size + per, per))
        items = np.arange(reach)
        for k in range(bounds.size - 1):
            cases = by_row[bounds[k]:bounds[k + 1]]
            if cases.size == 0:
                continue
            r0 = k * per
            rs = slice(r0, min(pair.size, r0 + per))
            # H1: next is worse than base
            d = G[src[rs, None], items, nx[rs, None]] - G[src[rs, None], items, b[rs, None]]
            p[cases, step - 1], n = _prefix_p_values(d, row[cases] - r0, width[cases], "less", method=test)
            identical[cases] = n == 0
        refs[:, step - 1] = base
        new = p[:, step - 1] < alpha
        if split_identical:
            new |= identical
        if min_items:
            new &= width >= min_items
        labels[:, step] = labels[:, step - 1] + new
        ref = np.where(new, nxt, ref)
    return labels, p, refs


@dataclass(frozen=True, eq=False)
class SystemClusters:
    """Statistically separable groups of systems, best first (see :func:`system_clusters`)."""

    n_clusters: int
    labels: np.ndarray  # per system, in the input's column order; 0 = best cluster
    order: np.ndarray  # system indices sorted by mean, best first
    p_values: np.ndarray  # p_values[i]: test of order[i + 1] against compared_with[i]
    compared_with: np.ndarray  # reference system of each comparison
    means: np.ndarray  # per system, over the complete items
    n_items: int  # complete items used
    alpha: float
    chain: str
    test: str = WILCOXON_TEST  # description of the signed-rank test used (WILCOXON_TESTS[method])
    rule: str = "ours"  # the cluster rule (CLUSTER_RULES) whose settings were used


def system_clusters(
    scores, alpha: float = 0.05, higher_is_better: bool = True, chain: str | None = None, test: str | None = None,
    rule: str = "ours",
) -> SystemClusters:
    """Statistical cluster count of systems (Zouhar et al. 2025, Sec. 2.1), with labels and p-values.

    ``scores`` is items x systems; items with NaN for any system are dropped (the test is paired).
    Systems are sorted by mean, best first (ties keep column order). Walking down the list, the
    next system is compared with a reference by a one-sided Wilcoxon signed-rank test (H1: the next
    system is worse); p < ``alpha`` starts a new cluster. Systems whose paired differences are all
    zero get p = 1 and stay together (except under ``rule='package'``). ``test`` is the test's
    method (see :func:`signed_rank_p_values`): ``'auto'`` is exact for at most 50 non-zero
    differences and the normal approximation above; ``'exact'``, ``'approx'`` force one;
    ``'scipy'`` decides as ``scipy.stats.wilcoxon``'s defaults do.

    ``chain='top'``: the reference is the first (best) system of the current cluster, so every
    member is not significantly worse than its cluster's leader and small steps cannot chain far
    apart systems into one cluster (ours). ``chain='previous'``: the reference is the system just
    above (the paper's App. Alg. 1 and subset2evaluate's released code).

    ``rule`` sets ``chain`` and ``test`` when they are not given, and the two special cases
    (``CLUSTER_RULE_SETTINGS``): ``'ours'`` (default: ``top``, ``auto``), ``'text'`` (App. Alg. 1 as
    written: ``previous``, ``auto``), ``'package'`` (subset2evaluate's ``evaluate.compute_clusters``,
    which made the paper's tables: ``previous``, ``scipy``, all-zero differences start a new
    cluster, fewer than 3 items are one cluster). See ``docs/ranking-stats.md``.

    >>> s = np.array([[3, 1, 1], [4, 2, 2], [5, 1, 1], [6, 2, 2], [5, 3, 3], [4, 0, 0]])
    >>> r = system_clusters(s)           # A beats B, C on all 6 items (exact p = 1/64); B == C
    >>> r.n_clusters, r.labels.tolist(), r.order.tolist()
    (2, [0, 1, 1], [0, 1, 2])
    """
    fn = "system_clusters"
    alpha = _check_alpha(alpha, fn)
    cfg = cluster_rule_settings(rule, chain, test, where=fn)
    chain, test = cfg["chain"], cfg["test"]
    s = _complete_items(scores, fn)
    signed = s if higher_is_better else -s
    means = s.mean(axis=0)
    order = np.argsort(-signed.mean(axis=0), kind="stable")
    lab_sorted, p, refs = _walk_clusters(signed[None], order[None], alpha, chain, test,
                                         split_identical=cfg["split_identical"], min_items=cfg["min_items"])
    labels = np.empty(s.shape[1], dtype=np.int64)
    labels[order] = lab_sorted[0]
    return SystemClusters(
        n_clusters=int(lab_sorted[0, -1] + 1),
        labels=labels,
        order=order,
        p_values=p[0],
        compared_with=refs[0],
        means=means,
        n_items=int(s.shape[0]),
        alpha=alpha,
        chain=chain,
        test=WILCOXON_TESTS[test],
        rule=cfg["rule"],
    )


def cluster_count(
    scores, alpha: float = 0.05, higher_is_better: bool = True, chain: str | None = None, test: str | None = None,
    rule: str = "ours",
) -> int:
    """Number of clusters from :func:`system_clusters`.

    >>> s = [[3, 1, 1], [4, 2, 2], [5, 1, 1], [6, 2, 2], [5, 3, 3], [4, 0, 0]]   # B == C on every item
    >>> cluster_count(s), cluster_count(s, rule="package")   # the package splits identical systems
    (2, 3)
    """
    return system_clusters(scores, alpha, higher_is_better, chain, test, rule).n_clusters


def paired_t_p_values(scores) -> np.ndarray:
    """P[i, j]: one-sided paired t-test p-value for "system i beats system j" (systems x systems).

    Items with NaN for any system are dropped. With n items and d = s_i - s_j:
    ``t = mean(d) / (sd(d) / sqrt(n))`` and ``P[i, j] = P(T_{n-1} >= t)``, so P[j, i] = 1 - P[i, j].
    Degenerate cases: sd(d) = 0 gives 0, 0.5 or 1 for mean(d) > 0, = 0, < 0 (the limit of the
    test); fewer than 2 items give 0.5 (no evidence). The diagonal is 0.5.

    >>> paired_t_p_values([[2, 1], [4, 1]]).round(4).tolist()   # d = [1, 3]: t = 2, df = 1 (Cauchy)
    [[0.5, 0.1476], [0.8524, 0.5]]
    """
    s = _complete_items(scores, "paired_t_p_values")
    n, n_sys = s.shape
    i, j = np.triu_indices(n_sys, 1)
    d = s[:, i] - s[:, j]
    p = np.full(i.size, 0.5)
    if n >= 2 and i.size:
        mean = d.mean(axis=0)
        sd = d.std(axis=0, ddof=1)
        with np.errstate(invalid="ignore", divide="ignore"):
            t = mean / (sd / np.sqrt(n))
        limit = np.where(mean > 0, 0.0, np.where(mean < 0, 1.0, 0.5))  # sd = 0: the test's limit
        p = np.where(sd > 0, stdtr(n - 1, -np.where(sd > 0, t, 0.0)), limit)
    out = np.full((n_sys, n_sys), 0.5)
    out[i, j] = p
    out[j, i] = 1.0 - p
    return out


def soft_pairwise_accuracy(full_scores, subset_scores) -> float:
    """Soft pairwise accuracy of a subset against the full pool (after Thompson et al. 2024).

    ``SPA = mean over system pairs i < j of 1 - |p_full(i > j) - p_subset(i > j)|``, with the
    p-values from :func:`paired_t_p_values` (a one-sided paired t-test, our fast stand-in for the
    paper's paired permutation test). 1 means the subset is exactly as confident about every pair
    as the full pool. Both arguments are items x systems with the same systems (columns).

    >>> full = [[1, 0], [2, 1], [3, 2]]                 # A beats B by exactly 1 everywhere: p = 0
    >>> soft_pairwise_accuracy(full, [[1, 1], [2, 2]])  # the subset sees a tie: p = 0.5; 1 - 0.5
    0.5
    """
    full = _scores_matrix(full_scores, "soft_pairwise_accuracy")
    sub = _scores_matrix(subset_scores, "soft_pairwise_accuracy")
    if full.shape[1] != sub.shape[1]:
        raise DataError(
            f"soft_pairwise_accuracy: full_scores has {full.shape[1]} systems but subset_scores has {sub.shape[1]}; "
            "pass the same system columns"
        )
    if full.shape[1] < 2:
        raise DataError("soft_pairwise_accuracy: needs at least 2 systems")
    i, j = np.triu_indices(full.shape[1], 1)
    diff = np.abs(paired_t_p_values(full)[i, j] - paired_t_p_values(sub)[i, j])
    return float(np.mean(1.0 - diff))


def prefix_sizes(props, n_items: int) -> np.ndarray:
    """Prefix lengths ``floor(p * n_items)`` for proportions ``props`` (at least 1 item each).

    A 1e-9 slack keeps float products such as 0.35 * 460 = 160.99999999999997 at 161
    (a literal ``int(460 * 0.35)`` gives 160; subset2evaluate's proportions come from a linspace,
    0.35000000000000003, and give 161 like ours).

    >>> prefix_sizes([0.05, 0.35, 0.5], 460).tolist()
    [23, 161, 230]
    """
    p = np.atleast_1d(np.asarray(props, dtype=float))
    if np.isnan(p).any() or (p <= 0).any() or (p > 1).any():
        raise ParameterError(f"prefix_sizes: proportions must be in (0, 1], got {p.tolist()}")
    return np.maximum(1, np.floor(p * int(n_items) + 1e-9).astype(np.int64))


def _prefix_inputs(scores, orders, sizes, fn: str):
    s = _scores_matrix(scores, fn)
    if np.isnan(s).any():
        bad = np.flatnonzero(np.isnan(s).any(axis=1))
        raise DataError(
            f"{fn}: scores has NaN in {bad.size} item(s) (first: row {bad[0]}); prefix statistics need "
            "complete items: pass scores[~np.isnan(scores).any(axis=1)] and orders over those rows"
        )
    o = np.asarray(orders)
    single = o.ndim == 1
    o = np.atleast_2d(o)
    if o.ndim != 2 or o.shape[1] == 0:
        raise ParameterError(f"{fn}: orders must be 1-D or 2-D (orders x positions), got shape {np.shape(orders)}")
    if not np.issubdtype(o.dtype, np.integer):
        raise ParameterError(f"{fn}: orders must hold integer item indices, got dtype {o.dtype}")
    if o.min() < 0 or o.max() >= s.shape[0]:
        raise ParameterError(f"{fn}: orders must index items 0..{s.shape[0] - 1}, got values {o.min()}..{o.max()}")
    srt = np.sort(o, axis=1)
    if (srt[:, 1:] == srt[:, :-1]).any():
        raise ParameterError(f"{fn}: an order repeats an item; each row must list distinct items")
    sz = np.atleast_1d(np.asarray(sizes))
    if sz.ndim != 1 or sz.size == 0 or not np.issubdtype(sz.dtype, np.integer):
        raise ParameterError(f"{fn}: sizes must be a non-empty list of integers, got {sizes!r}")
    if sz.min() < 1 or sz.max() > o.shape[1]:
        raise ParameterError(f"{fn}: sizes must be in 1..{o.shape[1]} (the order's length), got {sz.tolist()}")
    return s, o, sz.astype(np.int64), single


def _prefix_means(s: np.ndarray, o: np.ndarray, sz: np.ndarray) -> np.ndarray:
    gathered = np.take(s, o[:, : sz.max()], axis=0)  # (k, m, n_sys)
    csum = np.cumsum(gathered, axis=1)
    return csum[:, sz - 1, :] / sz[None, :, None]


def prefix_means(scores, orders, sizes) -> np.ndarray:
    """Each system's mean over the first ``size`` items of each order: (k, len(sizes), n_systems).

    ``scores``: items x systems, complete (no NaN: drop incomplete items and re-index the orders
    first). ``orders``: (k, L) item indices, each row an ordering (most useful first) of distinct
    items, L <= n_items; a 1-D order gives a (len(sizes), n_systems) result. ``sizes``: prefix
    lengths in 1..L. One gather and one cumulative sum, no loop over orders or sizes.

    >>> s = np.array([[1.0, 0.0], [3.0, 2.0], [5.0, 10.0]])
    >>> prefix_means(s, [2, 0, 1], [1, 2, 3]).tolist()   # item 2; (5 + 1) / 2, (10 + 0) / 2; all
    [[5.0, 10.0], [3.0, 5.0], [3.0, 4.0]]
    """
    s, o, sz, single = _prefix_inputs(scores, orders, sizes, "prefix_means")
    out = _prefix_means(s, o, sz)
    return out[0] if single else out


def prefix_correlation(
    scores, orders, sizes, kind: str = "kendall", reference=None, undefined: float = 0.0
) -> np.ndarray:
    """Rank correlation of the prefix ranking with the full-pool ranking: (k, len(sizes)).

    The systems' prefix means (:func:`prefix_means`) against ``reference`` (default: the systems'
    means over all rows of ``scores``; pass the full pool's means when ``scores`` is a subsample),
    by Kendall's tau-b or Spearman's rho through the row-wise functions. A prefix whose means are
    all equal has no ranking; it gets ``undefined`` (0.0, as subset2evaluate; NaN to keep it
    visible). A 1-D order gives shape (len(sizes),).

    >>> s = np.array([[1.0, 0.0, 2.0], [1.0, 3.0, 2.0], [1.0, 2.0, 2.0]])  # full means 1, 5/3, 2
    >>> prefix_correlation(s, [0, 1, 2], [1, 2, 3]).round(4).tolist()   # [1, 0, 2]: 1 of 3 pairs discordant
    [0.3333, 1.0, 1.0]
    """
    if kind not in CORRELATION_KINDS:
        check_choice("kind", kind, CORRELATION_KINDS, where="prefix_correlation")
    s, o, sz, single = _prefix_inputs(scores, orders, sizes, "prefix_correlation")
    ref = s.mean(axis=0) if reference is None else np.asarray(reference, dtype=float)
    if ref.shape != (s.shape[1],):
        raise DataError(
            f"prefix_correlation: reference must have one value per system ({s.shape[1]},), got {ref.shape}"
        )
    means = _prefix_means(s, o, sz)
    k, n_sizes, n_sys = means.shape
    rows = kendall_tau_b_rows if kind == "kendall" else spearman_rows
    corr = rows(means.reshape(k * n_sizes, n_sys), ref).reshape(k, n_sizes)
    corr = np.where(np.isnan(corr), undefined, corr)
    return corr[0] if single else corr


def prefix_cluster_counts(
    scores, orders, sizes, alpha: float = 0.05, higher_is_better: bool = True, chain: str | None = None,
    test: str | None = None, rule: str = "ours",
) -> np.ndarray:
    """:func:`cluster_count` of every prefix: (k, len(sizes)) integers (1-D order: (len(sizes),)).

    Same inputs as :func:`prefix_means` (complete items). The cluster walk runs for every (order,
    size) at once (one vectorised signed-rank test per step; a shorter prefix's missing items count
    as zero differences, which the test drops), so the Python loop is n_systems - 1 steps.
    ``test`` and ``rule``: as in :func:`system_clusters`.

    >>> s = np.array([[3, 1, 1], [4, 2, 2], [5, 1, 1], [6, 2, 2], [5, 3, 3], [4, 0, 0]], dtype=float)
    >>> prefix_cluster_counts(s, [0, 1, 2, 3, 4, 5], [3, 6]).tolist()   # 3 items cannot reach p < 0.05
    [1, 2]
    """
    fn = "prefix_cluster_counts"
    alpha = _check_alpha(alpha, fn)
    cfg = cluster_rule_settings(rule, chain, test, where=fn)
    chain, test = cfg["chain"], cfg["test"]
    s, o, sz, single = _prefix_inputs(scores, orders, sizes, fn)
    signed = s if higher_is_better else -s
    gathered = np.take(signed, o[:, : sz.max()], axis=0)  # (k, m, n_sys)
    means = np.cumsum(gathered, axis=1)[:, sz - 1, :] / sz[None, :, None]
    order = np.argsort(-means, axis=2, kind="stable")  # (k, n_sizes, n_sys)
    k, n_sizes, n_sys = order.shape
    # every (order, size) case walks at once: case (i, col) is order i's first sz[col] items
    labels, _, _ = _walk_clusters(gathered, order.reshape(k * n_sizes, n_sys), alpha, chain, test,
                                  source=np.repeat(np.arange(k), n_sizes), lengths=np.tile(sz, k),
                                  split_identical=cfg["split_identical"], min_items=cfg["min_items"])
    counts = (labels[:, -1] + 1).reshape(k, n_sizes)
    return counts[0] if single else counts


@dataclass(frozen=True, eq=False)
class NeededToMatch:
    """How much of a target proportion a method needs to match a target value (see :func:`needed_to_match`)."""

    value: float  # mean of per_target
    per_target: np.ndarray  # needed proportion / B, per target proportion B
    censored: np.ndarray  # True where the rule was never met within the grid (grid max used)
    rule: str
    needed_props: np.ndarray  # the proportion on the grid where the rule is met

    @property
    def n_censored(self) -> int:
        return int(np.count_nonzero(self.censored))


def needed_to_match(
    grid_props, method_values, target_props, target_values, rule: str = "first", higher_is_better: bool = True
) -> NeededToMatch:
    """Proportion of data a method needs to reach each target, relative to the target's proportion.

    The paper's Eq. 11: for each target proportion B (``target_props``) with target value
    ``target_values`` (usually random selection's mean curve at B, from seeds other than those that
    evaluate random as a method), find the smallest grid proportion p at which the method's curve
    (``method_values``, aligned with the increasing ``grid_props``) meets the target, and score p / B;
    ``value`` is the mean over targets.

    - ``rule='first'``: the first grid point at or above the target (the paper's rule).
    - ``rule='stays'``: the first grid point from which the curve stays at or above the target
      until the grid's end.

    A target never met within the grid is censored: p = max(grid_props), flagged in ``censored``.
    NaN curve values never meet a target. ``higher_is_better=False`` flips "at or above".

    >>> grid = [0.1, 0.2, 0.3, 0.4]
    >>> curve = [0.5, 0.8, 0.6, 0.9]           # crosses 0.7 at 0.2, falls back at 0.3
    >>> needed_to_match(grid, curve, [0.2], [0.7]).value            # 0.2 / 0.2
    1.0
    >>> needed_to_match(grid, curve, [0.2], [0.7], "stays").value   # 0.4 / 0.2
    2.0
    """
    if rule not in MATCH_RULES:
        check_choice("rule", rule, MATCH_RULES, where="needed_to_match")
    grid = np.asarray(grid_props, dtype=float)
    curve = np.asarray(method_values, dtype=float)
    bs = np.atleast_1d(np.asarray(target_props, dtype=float))
    tv = np.atleast_1d(np.asarray(target_values, dtype=float))
    if grid.ndim != 1 or grid.size == 0 or curve.shape != grid.shape:
        raise DataError(
            "needed_to_match: grid_props and method_values must be 1-D of equal length, "
            f"got {grid.shape} and {curve.shape}"
        )
    if np.isnan(grid).any() or (grid <= 0).any() or (np.diff(grid) <= 0).any():
        raise ParameterError("needed_to_match: grid_props must be positive and strictly increasing")
    if bs.ndim != 1 or bs.shape != tv.shape or bs.size == 0:
        raise DataError(
            "needed_to_match: target_props and target_values must be 1-D of equal length, "
            f"got {bs.shape} and {tv.shape}"
        )
    if np.isnan(bs).any() or (bs <= 0).any() or np.isnan(tv).any():
        raise ParameterError("needed_to_match: target_props must be positive and target_values not NaN")
    with np.errstate(invalid="ignore"):
        # a 1e-12 relative tolerance: rank correlations over a dozen systems take few distinct values
        # (rho = k / 286 for 12 systems), and two ways of computing the same one can differ in the
        # last bits, which would decide "reached" at random
        tol = 1e-12 * np.maximum(1.0, np.abs(tv))[:, None]
        reached = curve[None, :] >= tv[:, None] - tol if higher_is_better else curve[None, :] <= tv[:, None] + tol
    if rule == "stays":
        reached = np.logical_and.accumulate(reached[:, ::-1], axis=1)[:, ::-1]
    censored = ~reached.any(axis=1)
    idx = np.where(censored, grid.size - 1, np.argmax(reached, axis=1))
    needed = grid[idx]
    per_target = needed / bs
    return NeededToMatch(float(per_target.mean()), per_target, censored, rule, needed)
