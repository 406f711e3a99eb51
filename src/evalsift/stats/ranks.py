"""Row-wise ranking helpers shared by the correlation and signed-rank code."""

from __future__ import annotations

import numpy as np

_CHUNK = 1 << 22  # elements per temporary block in the row-wise functions (~32 MB of float64)


def _row_chunks(n_rows: int, row_cost: int):
    step = max(1, _CHUNK // max(1, row_cost))
    for start in range(0, n_rows, step):
        yield slice(start, min(n_rows, start + step))


def _rank_rows(a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Average ranks (1-based) and tie-group sizes of each row of ``a``; NaN ranks last, as NaN.

    One stable argsort per row; group boundaries come from comparing sorted neighbours.
    """
    m, n = a.shape
    ranks = np.full((m, n), np.nan)
    ties = np.zeros((m, n), dtype=np.int64)
    if n == 0:
        return ranks, ties
    idx = np.argsort(a, axis=1, kind="stable")
    s = np.take_along_axis(a, idx, axis=1)
    pos = np.broadcast_to(np.arange(n), (m, n))
    starts = np.ones((m, n), dtype=bool)
    starts[:, 1:] = s[:, 1:] != s[:, :-1]  # NaN != NaN: every NaN is its own group
    ends = np.ones((m, n), dtype=bool)
    ends[:, :-1] = starts[:, 1:]
    first = np.maximum.accumulate(np.where(starts, pos, 0), axis=1)
    last = np.minimum.accumulate(np.where(ends, pos, n - 1)[:, ::-1], axis=1)[:, ::-1]
    np.put_along_axis(ranks, idx, (first + last) / 2.0 + 1.0, axis=1)
    np.put_along_axis(ties, idx, last - first + 1, axis=1)
    nan = np.isnan(a)
    ranks[nan] = np.nan
    ties[nan] = 0
    return ranks, ties

