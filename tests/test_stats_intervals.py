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


def _population(rng, spread, N=1000, S=8):
    mu = np.sort(rng.normal(0, spread, S))
    return mu + rng.normal(0, 1, size=(N, 1)) + rng.standard_t(3, size=(N, S))  # item effect + heavy noise


@pytest.mark.parametrize("spread, k", [(0.3, 60), (1.0, 20)])
def test_agreement_interval_covers_the_correlation_with_the_population(spread, k):
    """Draw k items from a population of 1000; the interval computed from the k items alone should hold
    the rank correlation between their ranking and the population's at about its level (0.95)."""
    from evalsift.stats import bootstrap_agreement, kendall_tau_b_rows

    rng = np.random.default_rng(int(spread * 10) + k)
    covered, trials = 0, 150
    for t in range(trials):
        P = _population(rng, spread)
        items = rng.choice(len(P), k, replace=False)
        a = bootstrap_agreement(P[items], resamples=400, seed=t)
        observed = kendall_tau_b_rows(P[items].mean(axis=0)[None, :], P.mean(axis=0))[0]
        covered += a.low <= observed <= a.high
    assert covered / trials >= 0.90, covered / trials


def test_agreement_shrinkage_removes_the_plug_in_optimism():
    from evalsift.stats import bootstrap_agreement, kendall_tau_b_rows

    rng = np.random.default_rng(4)
    shrunk, plug_in, observed = [], [], []
    for t in range(80):
        P = _population(rng, 0.3)
        X = P[rng.choice(len(P), 20, replace=False)]
        shrunk.append(bootstrap_agreement(X, resamples=300, seed=t).expected)
        plug_in.append(bootstrap_agreement(X, resamples=300, seed=t, shrink=False).expected)
        observed.append(kendall_tau_b_rows(X.mean(axis=0)[None, :], P.mean(axis=0))[0])
    assert abs(np.mean(shrunk) - np.mean(observed)) < abs(np.mean(plug_in) - np.mean(observed))
    assert np.mean(plug_in) > np.mean(observed) + 0.05  # the optimism it removes is real


def test_agreement_bad_input():
    from evalsift.errors import DataError, ParameterError
    from evalsift.stats import bootstrap_agreement

    with pytest.raises(DataError, match="at least 2 items x 2 systems"):
        bootstrap_agreement(np.ones((5, 1)))
    with pytest.raises(DataError, match="NaN"):
        bootstrap_agreement(np.array([[1.0, np.nan], [0.0, 1.0]]))
    with pytest.raises(ParameterError, match="kind"):
        bootstrap_agreement(np.eye(3), kind="pearson")
