"""Bootstrap intervals for system means and ranks: coverage where the truth is known, edge cases."""

import numpy as np
import pytest

from evalsift.errors import DataError, ParameterError
from evalsift.stats import bootstrap_means


def test_mean_intervals_cover_the_true_means_at_their_level():
    """300 samples of 60 items x 3 systems (paired: a shared item effect plus skewed noise); the
    95% BCa intervals cover each system's known mean in at least 93% of cases (nominal - 2 points)."""
    rng = np.random.default_rng(3)
    true = np.array([0.5, 0.3, 0.0])
    hits, rank_hits, n = 0, 0, 0
    for rep in range(300):
        item = rng.normal(size=(60, 1))
        X = true + item + rng.exponential(1.0, size=(60, 3)) - 1.0  # exponential noise has mean 1
        iv = bootstrap_means(X, level=0.95, resamples=1000, seed=rep)
        hits += int(((iv.low <= true) & (true <= iv.high)).sum())
        rank_hits += int(((iv.rank_low <= np.arange(1, 4)) & (np.arange(1, 4) <= iv.rank_high)).sum())
        n += 3
    assert hits / n >= 0.93, hits / n
    assert rank_hits / n >= 0.93, rank_hits / n


def test_rank_intervals_separate_clear_systems_and_join_close_ones():
    rng = np.random.default_rng(0)
    X = np.array([2.0, 1.0, 1.01, 0.0]) + rng.normal(0, 0.3, size=(200, 4))
    iv = bootstrap_means(X, resamples=1000)
    assert iv.rank_low.tolist()[0] == iv.rank_high.tolist()[0] == 1 and iv.rank_high[3] == iv.rank_low[3] == 4
    assert iv.rank_low[1] == iv.rank_low[2] == 2 and iv.rank_high[1] == iv.rank_high[2] == 3
    low = bootstrap_means(-X, resamples=1000, higher_is_better=False)
    assert low.rank_low.tolist() == iv.rank_low.tolist()


def test_constant_column_gets_the_point_and_bad_input_is_named():
    X = np.column_stack([np.ones(10), np.arange(10.0)])
    iv = bootstrap_means(X, resamples=200)
    assert iv.low[0] == iv.high[0] == 1.0 and iv.low[1] < 4.5 < iv.high[1]
    with pytest.raises(DataError, match="NaN"):
        bootstrap_means(np.array([[1.0, np.nan], [2.0, 3.0]]))
    with pytest.raises(DataError, match="at least 2 items"):
        bootstrap_means(np.ones((1, 3)))
    with pytest.raises(ParameterError, match="level"):
        bootstrap_means(np.ones((5, 2)), level=1.5)
    with pytest.raises(ParameterError, match="method"):
        bootstrap_means(np.ones((5, 2)), method="bca")  # the name is BCa
