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
    return _approx_from_stats(count, tie_term, r_plus, alternative)


def _approx_from_stats(count, tie_term, r_plus, alternative: str) -> np.ndarray:
    """The normal approximation from each row's non-zero count, tie term (sum over tie groups of
    t^3 - t) and ``R+`` (floats; rows with at least one non-zero difference)."""
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
    a = np.where(nonzero, np.rint(2.0 * ranks), 0.0).astype(np.int64)  # doubled mid-ranks, exact integers
    # left-align: each row's doubled ranks ascending, its zeros (dropped or padding) at the end.
    # A zero adds a shift of 0: P <- (P + P) / 2 = P exactly, so padding leaves every row unchanged.
    big = np.iinfo(np.int64).max
    a = np.sort(np.where(a > 0, a, big), axis=1)
    a[a == big] = 0
    return _exact_from_doubled(a, np.rint(2.0 * r_plus).astype(np.int64), alternative)


def _exact_from_doubled(a: np.ndarray, t: np.ndarray, alternative: str) -> np.ndarray:
    """:func:`_exact_p` from each row's doubled mid-ranks ``a`` (int64, ascending, zeros at the end)
    and ``t = 2 R+``. Rows with the same ranks share one null distribution, built once for the
    largest ``u`` they need. Up to ``_EXACT_COUNTS_MAX_N`` non-zero differences every probability is a
    multiple of 2^-n held exactly, so the p-values do not depend on how rows are padded, grouped or
    built; there the distributions come from :func:`_lower_cdfs_counts` (sign-pattern counts), above it by the blocks of :func:`_lower_cdf` (the same operations for a row whatever
    rows share its block)."""
    m, L = a.shape
    total = a.sum(axis=1)
    u = np.minimum(t, total - t)
    uniq, inv = np.unique(a, axis=0, return_inverse=True)
    inv = inv.reshape(-1)
    need = np.zeros(uniq.shape[0], dtype=np.int64)
    np.maximum.at(need, inv, u)
    f_u = np.empty(m)
    f_u1 = np.empty(m)
    if int((uniq > 0).sum(axis=1).max(initial=0)) <= _EXACT_COUNTS_MAX_N:
        flat, offset = _lower_cdfs_counts(uniq, need)
        at = offset[inv] + u
        f_u[:] = flat[at]
        f_u1[:] = np.where(u > 0, flat[np.maximum(at - 1, 0)], 0.0)
    else:
        # blocks of unique rows of similar width (sorted by the u they need), and the rows that use each
        by_need = np.argsort(need, kind="stable")
        pos = np.empty_like(by_need)
        pos[by_need] = np.arange(by_need.size)
        row_pos = pos[inv]
        row_order = np.argsort(row_pos, kind="stable")
        row_pos_sorted = row_pos[row_order]
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


_EXACT_COUNTS_MAX_N = 52  # below 2^53 sign patterns every count, and every partial sum of them, is exact in float64


def _lower_cdfs_counts(uniq: np.ndarray, need: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """P(T <= x) for x = 0..need[i] of each row of ``uniq`` (distinct rows of doubled ranks, as
    ``np.unique(axis=0)`` gives them: ascending within a row, zeros last and no item, the rows in
    lexicographic order), as :func:`_lower_cdf` gives it, all rows end to end: row i's values start
    at ``offset[i]``. They are the numbers of sign patterns with each sum, summed and divided by 2^n.
    Every count is an integer below 2^n (n <= ``_EXACT_COUNTS_MAX_N``), so the values are exact
    whatever the order of the work.

    The counts of a row are the coefficients of prod_i (1 + x^a_i), held in one Python integer with a
    64-bit lane per coefficient: a rank ``s`` is one shift-and-add, ``P + (P << 64 s)`` (no carry
    crosses a lane, since a count stays below 2^52), cut above the largest ``need`` (mass only moves
    up). Consecutive rows share their leading ranks (lexicographic order), so the product of a shared
    run of ranks is kept and built once. The running sums of all rows are one cumulative sum in
    uint64, each row's start taken off (modulo 2^64, so exact: no row's own sum reaches 2^64).
    Measured on ``bench subset``'s WMT23 en-de rows about 2x faster than one numpy slice-add per rank
    and row."""
    u_max = int(need.max(initial=0))
    lanes = (1 << ((u_max + 1) * 64)) - 1
    parts: list[bytes] = []
    n_ranks = np.zeros(len(need))
    stack = [1]  # stack[d]: the counts of the row's first d ranks
    prev: list[int] = []
    for i, (row, x) in enumerate(zip(uniq.tolist(), need.tolist())):
        ranks = [r for r in row if r > 0]
        shared = 0
        for r, q in zip(ranks, prev):
            if r != q:
                break
            shared += 1
        del stack[shared + 1:]
        P = stack[shared]
        for s in ranks[shared:]:
            if s <= u_max:
                P = (P + (P << (64 * s))) & lanes
            stack.append(P)
        prev = ranks
        n_ranks[i] = len(ranks)
        parts.append((P & ((1 << ((x + 1) * 64)) - 1)).to_bytes((x + 1) * 8, "little"))
    sizes = need + 1
    offset = np.cumsum(sizes) - sizes
    counts = np.cumsum(np.frombuffer(b"".join(parts), dtype="<u8"))  # wraps modulo 2^64
    before = np.zeros(len(need), dtype=np.uint64)
    before[1:] = counts[offset[1:] - 1]
    counts -= np.repeat(before, sizes)
    flat = counts.astype(float)
    flat /= np.repeat(2.0 ** n_ranks, sizes)
    return flat, offset


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


_HIST_BLOCK = 1 << 21  # elements of the per-prefix count table of _prefix_p_values per block of prefixes


def _prefix_p_values(D: np.ndarray, row: np.ndarray, lengths: np.ndarray, alternative: str = "less",
                     method: str = "auto") -> tuple[np.ndarray, np.ndarray]:
    """Signed-rank p-values of many prefixes of a few rows of differences, and their non-zero counts.

    ``D``: (T, M) differences; prefix c is the first ``lengths[c]`` entries of ``D[row[c]]``. Its
    p-value equals ``signed_rank_p_values(D[row[c], :lengths[c]], alternative, method)`` (``method``
    ``'scipy'`` with ``lengths=[lengths[c]]``) bit for bit: each row is sorted once, and every
    prefix's statistics come from its counts of each distinct ``|d|`` (integers: the mid-ranks,
    ``R+`` and the tie term are exact) instead of a sort of its own. The exact test gets the same
    doubled mid-ranks and ``2 R+`` as :func:`signed_rank_p_values` would give it.
    """
    D = np.asarray(D, dtype=float)
    row = np.asarray(row, dtype=np.int64).reshape(-1)
    L = np.asarray(lengths, dtype=np.int64).reshape(-1)
    T, M = D.shape
    p = np.ones(row.size)
    count = np.zeros(row.size, dtype=np.int64)
    if row.size == 0:
        return p, count
    srt = np.lexsort((L, row))  # prefixes grouped by row, shortest first
    r_s, L_s = row[srt], L[srt]
    reach = np.zeros(T, dtype=np.int64)
    np.maximum.at(reach, r_s, L_s)  # the longest prefix of each row
    inside = np.arange(M)[None, :] < reach[:, None]
    if np.isnan(D[inside]).any():
        raise DataError("signed_rank_p_values: diffs contain NaN; drop incomplete items first")
    nz = inside & (D != 0)
    # codes of the distinct non-zero |d| of each row, ascending (zeros and unreached entries last, never counted)
    key = np.where(nz, np.abs(D), np.inf)
    idx = np.argsort(key, axis=1, kind="stable")
    sk = np.take_along_axis(key, idx, axis=1)
    starts = np.ones((T, M), dtype=np.int64)
    starts[:, 1:] = sk[:, 1:] != sk[:, :-1]
    code = np.empty((T, M), dtype=np.int64)
    np.put_along_axis(code, idx, np.cumsum(starts, axis=1) - 1, axis=1)
    V = int(code[nz].max(initial=-1)) + 1
    positive = D > 0
    t2 = np.zeros(row.size, dtype=np.int64)
    tie_term = np.zeros(row.size, dtype=np.int64)
    tied = np.zeros(row.size, dtype=bool)
    exact_rows: list[np.ndarray] = []  # per block: (sorted positions, doubled mid-ranks as padded rows)
    per = max(1, _HIST_BLOCK // max(1, V))
    for c0 in range(0, row.size, per):
        cs = slice(c0, min(row.size, c0 + per))
        rb, Lb = r_s[cs], L_s[cs]
        n_b = rb.size
        rows_b = np.unique(rb)
        reach_b = np.zeros(T, dtype=np.int64)
        np.maximum.at(reach_b, rb, Lb)
        sub = nz[rows_b] & (np.arange(M)[None, :] < reach_b[rows_b, None])
        ti, ii = np.nonzero(sub)
        ti = rows_b[ti]
        # an entry counts for every prefix of its row longer than its position: the first such is f
        f = np.searchsorted(rb * (M + 1) + Lb, ti * (M + 1) + ii, side="right")
        cell = f * V + code[ti, ii]
        cnt = np.cumsum(np.bincount(cell, minlength=n_b * V).reshape(n_b, V), axis=0)
        pos = np.cumsum(np.bincount(cell[positive[ti, ii]], minlength=n_b * V).reshape(n_b, V), axis=0)
        first = np.searchsorted(rb, rb, side="left")  # the row's first prefix in this block
        prev = first > 0
        cnt[prev] -= cnt[first[prev] - 1]
        pos[prev] -= pos[first[prev] - 1]  # the sums ran down the whole block: the rows before removed
        doubled = 2 * (np.cumsum(cnt, axis=1) - cnt) + cnt + 1  # doubled mid-rank of each |d| value
        n = cnt.sum(axis=1)
        count[cs] = n
        t2[cs] = (pos * doubled).sum(axis=1)
        tie_term[cs] = (cnt * (cnt * cnt - 1)).sum(axis=1)
        tied[cs] = (cnt > 1).any(axis=1)
        if method == "exact":
            ex = n > 0
        elif method == "auto":
            ex = (n > 0) & (n <= EXACT_MAX_N)
        elif method == "scipy":
            ex = (n > 0) & (Lb <= EXACT_MAX_N) & (~((Lb > n) | tied[cs]) | (Lb <= SCIPY_PERMUTATION_MAX_N))
        else:
            ex = np.zeros(n_b, dtype=bool)
        e = np.flatnonzero(ex)
        if e.size:
            ne = n[e]
            vals = np.repeat(doubled[e].reshape(-1), cnt[e].reshape(-1))  # each row's ranks, ascending
            starts_e = np.cumsum(ne) - ne
            a = np.zeros((e.size, int(ne.max())), dtype=np.int64)
            a[np.repeat(np.arange(e.size), ne), np.arange(vals.size) - np.repeat(starts_e, ne)] = vals
            exact_rows.append((c0 + e, a))
    p_s = np.ones(row.size)
    exact = np.zeros(row.size, dtype=bool)
    if exact_rows:
        w = max(a.shape[1] for _, a in exact_rows)
        at = np.concatenate([e for e, _ in exact_rows])
        a = np.concatenate([np.pad(a, ((0, 0), (0, w - a.shape[1]))) for _, a in exact_rows])
        p_s[at] = _exact_from_doubled(a, t2[at], alternative)
        exact[at] = True
    approx = (count > 0) & ~exact
    if approx.any():
        p_s[approx] = _approx_from_stats(count[approx].astype(float), tie_term[approx].astype(float),
                                         t2[approx] / 2.0, alternative)
    p[srt] = p_s
    out = np.empty_like(count)
    out[srt] = count
    return p, out
