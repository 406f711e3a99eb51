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


def test_a_resample_without_spread_gives_a_finite_studentized_bound():
    """Issue 19: a system scored 0 on most items; a resample that draws only the zeros has no spread,
    and its t was infinite (-inf or NaN bounds). Column [0, 0, 0, 0, 0, -5]: mean m = -5/6, sample
    variance var = (5 (5/6)^2 + (25/6)^2) / 5 = 25/6, sd = 2.0412, se = sd / sqrt(6) = 5/6.
    All-zero resamples (probability (5/6)^6 = 0.33, far above 2.5%) have m* - m = 5/6 and, with the
    variance floored at var / n, se* = sd / 6, so t = (5/6) 6 / sd = 2.449 -- the largest t there is
    (every other resample has m* <= m), hence the 0.975 quantile. low = m - t se = -5/6 - (5/6) sqrt(6)."""
    X = np.column_stack([[0.0, 0, 0, 0, 0, -5], [-1.0, -2, 0, -3, -1, -2]])
    iv = bootstrap_means(X, resamples=2000, seed=0)
    assert np.isfinite(iv.low).all() and np.isfinite(iv.high).all()
    assert iv.low[0] == pytest.approx(-5 / 6 * (1 + np.sqrt(6)))
    # the lowest t: six draws of -5, m* - m = -25/6, t = -(25/6) 6 / sd = -5 sqrt(6); so high <= m + 5 sqrt(6) se
    assert iv.low[0] < iv.means[0] < iv.high[0] <= -5 / 6 + 5 * np.sqrt(6) * 5 / 6 + 1e-9


def test_wmt23_tiny_samples_get_no_nan_or_infinite_bounds(data_dir):
    """`rank` on 2% of WMT23 en-de (11 picks, 6-11 of them MQM-scored): before the variance floor
    4 of these 50 samples had a NaN or infinite mean bound (51 of 500 seeds) and 13 a bound more
    than 20 standard errors from its mean; now none."""
    from evalsift.io import load
    from evalsift.restrict import restrict_ranking
    from evalsift.select import make_selector

    from _data import need

    need("wmt23/mt-metrics-eval-v2/wmt23/sources/en-de.txt")
    pool = load(str(data_dir / "wmt23/mt-metrics-eval-v2/wmt23/en-de"))
    for seed in range(50):
        picks = make_selector("random", seed=seed).fit(pool).select(11)
        S = restrict_ranking(pool.subset(picks.items), "mqm").pool.score("mqm")
        iv = bootstrap_means(S, resamples=2000, seed=0)
        se = S.std(axis=0, ddof=1) / np.sqrt(S.shape[0])
        assert np.isfinite(iv.low).all() and np.isfinite(iv.high).all(), seed
        assert (iv.means - iv.low <= 20 * se + 1e-12).all() and (iv.high - iv.means <= 20 * se + 1e-12).all(), seed
