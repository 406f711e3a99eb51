"""The Wilcoxon signed-rank test, vectorised over many rows of paired differences."""

from __future__ import annotations

import numpy as np
from scipy.special import ndtr

from ..errors import DataError, ParameterError
from .ranks import _rank_rows

WILCOXON_TEST = (
    "one-sided Wilcoxon signed-rank, normal approximation "
    "(zero_method='wilcox', tie-corrected variance, no continuity correction)"
)

def signed_rank_p_values(diffs, alternative: str = "less"):
    """Wilcoxon signed-rank p-values for every row of ``diffs`` (m x n paired differences), at once.

    A 1-D ``diffs`` is one row and gives one float.

    The normal approximation with scipy's defaults: zero differences are dropped
    (``zero_method='wilcox'``), the variance is tie-corrected, no continuity correction. Equal to
    ``scipy.stats.wilcoxon(d, alternative=..., method='asymptotic')`` (``'approx'`` in older scipy)
    on every row that has a non-zero difference. A row of only zeros has no evidence either way and
    gets p = 1.0 (scipy gives NaN). ``alternative='less'``: the differences tend to be negative.
    Padding a row with zeros does not change its p-value, so rows of unequal length can share an array.

    >>> signed_rank_p_values([[-1, -2, -3, -4, -5], [0, 0, 0, 0, 0]]).round(4).tolist()
    [0.0216, 1.0]
    >>> round(signed_rank_p_values([-1, -2, -3, -4, -5], "greater"), 4)
    0.9784
    """
    if alternative not in ("less", "greater", "two-sided"):
        raise ParameterError(
            f"signed_rank_p_values: alternative must be 'less', 'greater' or 'two-sided', got {alternative!r}"
        )
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
    tie_term = np.where(nonzero, ties.astype(float) ** 2 - 1.0, 0.0).sum(axis=1)  # = sum over groups t^3 - t
    mean = count * (count + 1) / 4.0
    var = (count * (count + 1) * (2 * count + 1) - tie_term / 2.0) / 24.0
    with np.errstate(invalid="ignore", divide="ignore"):
        z = (r_plus - mean) / np.sqrt(var)
    if alternative == "less":
        p = ndtr(z)
    elif alternative == "greater":
        p = ndtr(-z)
    else:
        p = np.minimum(1.0, 2.0 * ndtr(-np.abs(z)))
    p = np.where(count > 0, p, 1.0)
    return float(p[0]) if squeeze else p

