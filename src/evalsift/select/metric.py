"""Selectors from automatic metric scores (Zouhar et al., TACL 2025, Sec. 3.1-3.2, Eqs. 3-5).

All take ``metric`` (an automatic metric of the pool; if the pool has exactly one, it is used) and
``higher_is_better`` (default True; mt-metrics-eval stores error metrics such as MetricX negated).

- ``metric_avg``: the negated mean score across systems: the hardest items first.
- ``metric_var``: the variance of the scores across systems: items that separate systems first.
- ``metric_cons``: Spearman correlation between the item's per-system scores and the systems' mean
  scores over the pool: items whose system ordering agrees with the overall one first (Eq. 5 names
  a rank correlation without saying which; Spearman is our choice).

Systems without a score on an item are ignored for that item (NaN-aware); an item with fewer than
two scored systems gets NaN (no information; picked last).
"""

from __future__ import annotations

import warnings

import numpy as np

from ..pool import Pool
from ..stats import spearman_rows
from .base import selector
from .utility import UtilitySelector, auto_metric


class _MetricSelector(UtilitySelector):
    def __init__(self, *, metric: str | None = None, higher_is_better: bool = True, seed: int = 0) -> None:
        self.metric = metric
        self.higher_is_better = higher_is_better
        self.seed = seed

    def scores(self, pool: Pool) -> np.ndarray:
        """The metric matrix, oriented so that higher is better."""
        s = pool.score(auto_metric(pool, self.metric, self._label()))
        return s if self.higher_is_better else -s


def _few(s: np.ndarray) -> np.ndarray:
    return (~np.isnan(s)).sum(axis=1) < 2


@selector("metric_avg", help="hardest items first: lowest mean metric score across systems")
class MetricAvg(_MetricSelector):
    """Utility = -(mean score across systems).

    >>> from evalsift.io import make_demo_pool
    >>> MetricAvg(metric="token_f1").fit(make_demo_pool(n_items=20)).select(3).utilities.shape
    (3,)
    """

    def _utilities(self, pool: Pool) -> np.ndarray:
        s = self.scores(pool)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            u = -np.nanmean(s, axis=1)
        return np.where(_few(s), np.nan, u)


@selector("metric_var", help="items whose metric scores vary most across systems first")
class MetricVar(_MetricSelector):
    """Utility = variance of the scores across systems (population variance, ddof 0)."""

    def _utilities(self, pool: Pool) -> np.ndarray:
        s = self.scores(pool)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            u = np.nanvar(s, axis=1)
        return np.where(_few(s), np.nan, u)


@selector("metric_cons", help="items whose system ordering agrees with the overall one first")
class MetricCons(_MetricSelector):
    """Utility = Spearman correlation between the item's scores and the systems' pool means.

    An item whose scores are all equal has an undefined correlation and gets 0 (it orders nothing).
    """

    def _utilities(self, pool: Pool) -> np.ndarray:
        s = self.scores(pool)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            means = np.nanmean(s, axis=0)
        u = np.nan_to_num(spearman_rows(s, means), nan=0.0)  # NaN: a constant side orders nothing
        return np.where(_few(s), np.nan, u)
