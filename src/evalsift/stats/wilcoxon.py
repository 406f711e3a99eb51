"""The Wilcoxon signed-rank test, vectorised over many rows of paired differences."""

from __future__ import annotations

import numpy as np
from scipy.special import ndtr

from ..errors import DataError, check_choice
from .ranks import _rank_rows

WILCOXON_METHODS = ("auto", "exact", "approx", "scipy")
WILCOXON_ALTERNATIVES = ("less", "greater", "two-sided")

EXACT_MAX_N = 50  # method='auto': exact null distribution up to this many non-zero differences
SCIPY_PERMUTATION_MAX_N = 13  # method='scipy': scipy's default enumerates all sign flips up to this input length
_EXACT_BLOCK = 1 << 19  # elements of the exact test's working arrays per block of rows

# one-line descriptions of the test, per method (stored in results, e.g. SystemClusters.test)
WILCOXON_TESTS = {
    "auto": (
        f"one-sided Wilcoxon signed-rank (zero_method='wilcox'): exact conditional null distribution with "
        f"mid-ranks for n <= {EXACT_MAX_N} non-zero differences, normal approximation (tie-corrected "
        "variance, no continuity correction) above"
    ),
    "exact": (
        "one-sided Wilcoxon signed-rank (zero_method='wilcox'): exact conditional null distribution with "
        "mid-ranks at every n"
    ),
    "approx": (
        "one-sided Wilcoxon signed-rank, normal approximation "
        "(zero_method='wilcox', tie-corrected variance, no continuity correction)"
    ),
    "scipy": (
        "one-sided Wilcoxon signed-rank as scipy.stats.wilcoxon's defaults decide (scipy >= 1.15, "
        "subset2evaluate's call): inputs of more than 50 items, or of 14-50 items with a zero or a tied |d|, "
        "the normal approximation (no continuity correction); otherwise exact"
    ),
}
WILCOXON_TEST = WILCOXON_TESTS["auto"]


def signed_rank_p_values(diffs, alternative: str = "less", method: str = "auto", lengths=None):
    """Wilcoxon signed-rank p-values for every row of ``diffs`` (m x n paired differences), at once.

    A 1-D ``diffs`` is one row and gives one float. ``alternative='less'``: the differences tend to
    be negative. Zero differences are dropped (``zero_method='wilcox'``); n is the number of
    non-zero differences of the row and the statistic is ``R+``, the sum of the mid-ranks of
    ``|d|`` over the positive differences. A row of only zeros has no evidence either way and gets
    p = 1.0 (scipy gives NaN). Padding a row with zeros does not change its p-value under any
    method, so rows of unequal length can share an array.

    ``method``:

    - ``'exact'``: the exact permutation (conditional) null distribution of ``R+`` given the
      row's observed mid-ranks: under H0 each non-zero difference is positive or negative with
      probability 1/2 independently. Ties are handled exactly: mid-ranks are multiples of 0.5, so
      ``2 R+`` is an integer and its distribution is built by dynamic programming over the items
      (each adds its doubled rank or 0 with probability 1/2), for all rows at once. p = P(T <= t)
      for 'less', P(T >= t) for 'greater' (both counting the observed value), min(1, 2 min) for
      'two-sided'. Without ties this equals ``scipy.stats.wilcoxon(d, method='exact')``; with ties
      or zeros it equals the enumeration of all sign flips (scipy's permutation test for small n).
    - ``'approx'``: the normal approximation with scipy's defaults: tie-corrected variance, no
      continuity correction; equal to ``scipy.stats.wilcoxon(d, method='asymptotic')``
      (``'approx'`` in older scipy) on every row that has a non-zero difference.
    - ``'auto'`` (default): exact for rows with n <= ``EXACT_MAX_N`` (50), approx above. At small n
      the normal approximation is anti-conservative where it matters: three differences all
      negative give 0.054 against the exact 1/8, five give 0.022 against 1/32 = 0.031. 50 is
      scipy's threshold for its exact test (untied data); there the approximation's error is a few
      thousandths at most. The exact part costs O(n^3) per row (n steps over a distribution of up
      to n(n + 1) + 1 = 2551 values at n = 50, fewer because only the smaller tail is built);
      rows with the same ranks share one distribution. Measured: 10,000 rows of n = 50 with
      distinct tied rank sets in about 0.7 s (2 cores); ``prefix_cluster_counts`` on WMT23 en-de
      (20 orders, sizes 5..460) 1.35x the time of 'approx'. See ``docs/ranking-stats.md``.

    - ``'scipy'``: what ``scipy.stats.wilcoxon(d, alternative=...)`` with its defaults computes
      (scipy >= 1.15; subset2evaluate's cluster test calls it so, in ``evaluate.compute_clusters``),
      decided per row from the row's *input length* L (zeros included) as scipy decides: L > 50:
      the normal approximation; L <= 50 without a zero and without a tied ``|d|``: exact; with a
      zero or a tie, L <= 13: exact (scipy enumerates all 2^L sign flips, which is the exact
      conditional distribution); 14 <= L <= 50: the normal approximation. ``lengths`` gives each
      row's L when rows are zero-padded (a prefix of L items padded to a common width); default:
      the row width. Only this method reads ``lengths``.

    >>> signed_rank_p_values([-1, -2, -3])   # 1 of the 8 sign patterns has R+ <= 0
    0.125
    >>> signed_rank_p_values([[-1, -2, -3, -4, -5], [0, 0, 0, 0, 0]]).tolist()   # 1/32; no evidence
    [0.03125, 1.0]
    >>> round(signed_rank_p_values([-1, -2, -3, -4, -5], method="approx"), 4)   # Phi(-7.5 / sqrt(13.75))
    0.0216
    >>> round(signed_rank_p_values([-1, -2, -3, -4, -5], "greater", method="approx"), 4)
    0.9784
    >>> d = [-1] * 14 + [1]   # 15 tied |d| (mid-rank 8): scipy's default approximates, Phi((8 - 60) / sqrt(240))
    >>> # 'auto' is exact: P(at most 1 of 15 positive) = 16 / 2^15
    >>> round(signed_rank_p_values(d, method="scipy"), 6), signed_rank_p_values(d)
    (0.000395, 0.00048828125)
    """
    fn = "signed_rank_p_values"
    check_choice("alternative", alternative, WILCOXON_ALTERNATIVES, where=fn)
    check_choice("method", method, WILCOXON_METHODS, where=fn)
    d = np.asarray(diffs, dtype=float)
    squeeze = d.ndim == 1
    d = np.atleast_2d(d)
    if d.ndim != 2:
        raise DataError(f"signed_rank_p_values: diffs must be 1-D or 2-D, got shape {d.shape}")
    if np.isnan(d).any():
        raise DataError("signed_rank_p_values: diffs contain NaN; drop incomplete items first")
    nonzero = d != 0
    count = nonzero.sum(axis=1).astype(float)
    ranks, ties = _rank_rows(np.abs(d))
    ranks = ranks - (d.shape[1] - count)[:, None]  # zeros rank first; shift them out
    r_plus = np.where(d > 0, ranks, 0.0).sum(axis=1)
    if method == "exact":
        exact = count > 0
    elif method == "auto":
        exact = (count > 0) & (count <= EXACT_MAX_N)
    elif method == "scipy":
        exact = (count > 0) & _scipy_exact_rows(d, nonzero, count, ties, lengths)
    else:
        exact = np.zeros(d.shape[0], dtype=bool)
    p = np.ones(d.shape[0])
    approx = (count > 0) & ~exact
    if approx.any():
        p[approx] = _approx_p(d[approx], nonzero[approx], count[approx], ties[approx], r_plus[approx], alternative)
    if exact.any():
        p[exact] = _exact_p(nonzero[exact], ranks[exact], r_plus[exact], alternative)
    return float(p[0]) if squeeze else p


def _scipy_exact_rows(d, nonzero, count, ties, lengths) -> np.ndarray:
    """Rows where scipy.stats.wilcoxon's default (``method='auto'``, scipy >= 1.15) is exact.

    scipy (``scipy/stats/_wilcoxon.py``) decides from the input length L, zeros included: L > 50
    approximates; otherwise a row without zeros and ties uses the exact untied distribution, one
    with zeros or ties enumerates the 2^L sign flips when L <= 13 (``PermutationMethod``, whose
    9,999 resamples exceed 2^13: the exact conditional distribution) and approximates above. Both
    exact branches are what :func:`_exact_p` computes.
    """
    L = np.full(d.shape[0], d.shape[1]) if lengths is None else np.asarray(lengths, dtype=np.int64).reshape(-1)
    if L.shape != (d.shape[0],):
        raise DataError(f"signed_rank_p_values: lengths must give one length per row ({d.shape[0]}), got {L.shape}")
    if (L < count).any() or (L > d.shape[1]).any():
        raise DataError("signed_rank_p_values: each length must be at least the row's non-zero differences and at "
                        f"most its width {d.shape[1]}")
    zeros = L > count
    tied = (np.where(nonzero, ties, 1) > 1).any(axis=1)
    return (L <= EXACT_MAX_N) & (~(zeros | tied) | (L <= SCIPY_PERMUTATION_MAX_N))


def _approx_p(d, nonzero, count, ties, r_plus, alternative: str) -> np.ndarray:
    """The normal approximation (rows with at least one non-zero difference)."""
    tie_term = np.where(nonzero, ties.astype(float) ** 2 - 1.0, 0.0).sum(axis=1)  # = sum over groups t^3 - t
    mean = count * (count + 1) / 4.0
    var = (count * (count + 1) * (2 * count + 1) - tie_term / 2.0) / 24.0
    with np.errstate(invalid="ignore", divide="ignore"):
        z = (r_plus - mean) / np.sqrt(var)
    if alternative == "less":
        return ndtr(z)
    if alternative == "greater":
        return ndtr(-z)
    return np.minimum(1.0, 2.0 * ndtr(-np.abs(z)))


def _exact_p(nonzero, ranks, r_plus, alternative: str) -> np.ndarray:
    """Exact conditional p-values (rows with at least one non-zero difference).

    Doubled mid-ranks ``a`` are integers, ``T = 2 R+`` is an integer in 0..total (total = n(n+1)),
    and its null distribution is symmetric: ``T`` and ``total - T`` have the same law. So only the
    smaller tail is built: with ``u = min(t, total - t)`` and ``F(x) = P(T <= x)``,
    P(T <= t) is F(t) if t <= total - t, else 1 - P(T >= t + 1) = 1 - F(total - t - 1) = 1 - F(u - 1);
    P(T >= t) = P(T <= total - t) is F(u) if t >= total - t, else 1 - F(u - 1); the two-sided
    p-value is min(1, 2 F(u)). Only F up to the largest u of a block is needed, so the dynamic
    programme is truncated there (mass only moves up).
    """
    m, L = ranks.shape
    a = np.where(nonzero, np.rint(2.0 * ranks), 0.0).astype(np.int64)  # doubled mid-ranks, exact integers
    # left-align: each row's doubled ranks ascending, its zeros (dropped or padding) at the end.
    # A zero adds a shift of 0: P <- (P + P) / 2 = P exactly, so padding leaves every row unchanged.
    big = np.iinfo(np.int64).max
    a = np.sort(np.where(a > 0, a, big), axis=1)
    a[a == big] = 0
    t = np.rint(2.0 * r_plus).astype(np.int64)
    total = a.sum(axis=1)
    u = np.minimum(t, total - t)
    # rows with the same ranks share one null distribution: build it once, for the largest u needed
    uniq, inv = np.unique(a, axis=0, return_inverse=True)
    inv = inv.reshape(-1)
    need = np.zeros(uniq.shape[0], dtype=np.int64)
    np.maximum.at(need, inv, u)
    # blocks of unique rows of similar width (sorted by the u they need), and the rows that use each
    by_need = np.argsort(need, kind="stable")
    pos = np.empty_like(by_need)
    pos[by_need] = np.arange(by_need.size)
    row_pos = pos[inv]
    row_order = np.argsort(row_pos, kind="stable")
    row_pos_sorted = row_pos[row_order]
    f_u = np.empty(m)
    f_u1 = np.empty(m)
    # blocks of _EXACT_BLOCK elements (4 MB for P, as much for its gathered shift and the index array):
    # they stay in cache, measured about twice as fast as blocks of ranks._row_chunks' 32 MB
    step = max(1, _EXACT_BLOCK // (2 * L + int(need.max()) + 1))
    for s0 in range(0, by_need.size, step):
        blk = slice(s0, min(by_need.size, s0 + step))
        ids = by_need[blk]
        cdf = _lower_cdf(uniq[ids], int(need[ids[-1]]))
        lo, hi = np.searchsorted(row_pos_sorted, [blk.start, blk.stop])
        rows = row_order[lo:hi]
        li = row_pos[rows] - blk.start
        ur = u[rows]
        f_u[rows] = cdf[li, ur]
        f_u1[rows] = np.where(ur > 0, cdf[li, np.maximum(ur - 1, 0)], 0.0)
    lower = 2 * t <= total
    upper = 2 * t >= total
    if alternative == "less":
        return np.where(lower, f_u, 1.0 - f_u1)
    if alternative == "greater":
        return np.where(upper, f_u, 1.0 - f_u1)
    return np.minimum(1.0, 2.0 * f_u)


def _lower_cdf(a: np.ndarray, u_max: int) -> np.ndarray:
    """P(T <= x) for x = 0..u_max, per row of ``a`` (c x L doubled ranks, ascending, zeros last).

    ``T`` is the sum of a random half of each row's doubled ranks (each item in with probability
    1/2). Step j: P <- (P + P shifted right by a[:, j]) / 2, all rows at once by one gather from a
    flat array whose rows carry max(a) zeros on the left (the shift source of t < a). Probabilities
    are halved at each step (no overflow; k / 2^j with k < 2^53 is exact in float64). Columns above
    ``u_max`` are never built: mass only moves up, so they cannot affect P(T <= u_max).
    """
    c = a.shape[0]
    cols = np.flatnonzero(a.any(axis=0))
    a = a[:, : cols[-1] + 1] if cols.size else a[:, :0]
    width = np.minimum(np.cumsum(a, axis=1).max(axis=0, initial=0), u_max) + 1  # support after step j
    pad = int(a.max(initial=0))
    W = u_max + 1
    P = np.zeros((c, pad + W))
    P[:, pad] = 1.0
    flat = P.reshape(-1)
    base = np.arange(c, dtype=np.int64) * (pad + W) + pad
    x = np.arange(W, dtype=np.int64)
    for j in range(a.shape[1]):
        w = int(width[j])
        shifted = np.take(flat, (base - a[:, j])[:, None] + x[:w])  # P[r, x - a[r, j]], zero where x < a
        blk = P[:, pad: pad + w]
        blk += shifted
        blk *= 0.5
    return np.cumsum(P[:, pad:], axis=1)
