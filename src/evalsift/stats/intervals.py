"""Summaries of repeated measurements: standard errors, and bootstrap intervals for system means
and ranks (paired over items, through :func:`scipy.stats.bootstrap`)."""

from __future__ import annotations

import functools
import warnings
from dataclasses import dataclass

import numpy as np

from ..errors import DataError, ParameterError


def standard_error(values) -> float:
    """Standard error of the mean (sample std with ddof=1 over sqrt(n)); 0 for fewer than 2 values.

    >>> round(standard_error([0.0, 1.0, 1.0, 0.0]), 4)   # std 0.5774 / 2
    0.2887
    """
    v = np.asarray(values, dtype=float)
    v = v[~np.isnan(v)]
    if v.size < 2:
        return 0.0
    return float(v.std(ddof=1) / np.sqrt(v.size))



BOOTSTRAP_METHODS = ("studentized", "BCa", "percentile")


def studentized_t(deviation, boot_var, var, n: int) -> np.ndarray:
    """The bootstrap-t statistics ``(m* - m) / se*`` of resamples whose means deviate from the
    sample's by ``deviation`` and whose unbiased variances are ``boot_var`` (resamples x systems),
    for a sample of ``n`` items with variances ``var`` (per system).

    Each resample's variance is floored at ``var / n``, the sample's variance over its size:
    ``se* = sqrt(max(var*, var / n) / n)``. A resample that repeats one score (``var* = 0``, e.g. a
    system scored 0 on most items, drawn 6 times out of 6) used to get an infinite ``t``, whose
    quantiles gave -inf or NaN bounds, and one whose variance is zero up to rounding (``1e-18``) a
    ``t`` of ``1e9`` and a bound far outside the scores; with the floor its ``t`` is at most
    ``|m* - m| n / sd``. Resamples with more spread than that (all but near-degenerate ones) are
    unchanged, and so is the coverage measured at 20 items and more (``docs/ranking-stats.md``).
    A system whose sample has no spread (``var = 0``) gets ``t = 0``: its interval is the point.

    >>> studentized_t(np.array([[1.0, 0.5]]), np.array([[0.0, 2.0]]), np.array([4.0, 2.0]), 4).round(3).tolist()
    [[2.0, 0.707]]
    """
    dev = np.asarray(deviation, dtype=float)
    se_boot = np.sqrt(np.maximum(np.asarray(boot_var, dtype=float), np.asarray(var, dtype=float) / n) / n)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(se_boot > 0, dev / np.where(se_boot > 0, se_boot, 1.0), 0.0)


@dataclass(frozen=True)
class MeanIntervals:
    """Bootstrap intervals for every system's mean score and rank (1 = best), at ``level``."""

    means: np.ndarray  # (S,) the means over the items
    low: np.ndarray  # (S,) interval of each mean
    high: np.ndarray
    rank_low: np.ndarray  # (S,) best rank within the interval (1 = first)
    rank_high: np.ndarray  # (S,) worst rank within the interval
    level: float
    method: str
    resamples: int
    n_items: int

    def to_dict(self) -> dict:
        """JSON-ready description of how the intervals were made."""
        return {"level": self.level, "method": f"{self.method} bootstrap over items, paired across systems",
                "resamples": self.resamples, "n_items": self.n_items}


def _draw_weights(n: int, resamples: int, seed: int, chunk: int):
    """Multinomial resample weights of ``n`` rows, ``chunk`` resamples at a time (the draws of ``seed``)."""
    rng = np.random.default_rng(seed)
    for start in range(0, resamples, chunk):
        yield rng.multinomial(n, np.full(n, 1.0 / n), size=min(chunk, resamples - start)).astype(float)


@functools.lru_cache(maxsize=4)
def _kept_weights(n: int, resamples: int, seed: int, chunk: int) -> tuple[np.ndarray, ...]:
    out = tuple(_draw_weights(n, resamples, seed, chunk))
    for W in out:
        W.setflags(write=False)
    return out


def _resample_weights(n: int, resamples: int, seed: int, chunk: int):
    """The weights of :func:`_draw_weights`; those of at most 2^21 numbers are drawn once and kept (the
    last few), since the same draws serve several calls: ``bench subset`` asks for the weights of one
    (prefix size, seed) for every method and for both of its intervals (drawing them was most of its time)."""
    if isinstance(seed, (int, np.integer)) and n * resamples <= 1 << 21:
        return _kept_weights(n, resamples, int(seed), chunk)
    return _draw_weights(n, resamples, seed, chunk)


def _resampled_moments(X: np.ndarray, resamples: int, seed: int, chunk: int = 256,
                       variances: bool = True) -> tuple[np.ndarray, np.ndarray | None]:
    """Means and unbiased variances (None with ``variances=False``) of every column over ``resamples``
    paired resamples of the rows (multinomial weights, a chunk of resamples at a time so memory stays at
    chunk x items)."""
    n = X.shape[0]
    means, var = [], []
    X2 = X * X if variances else None
    for W in _resample_weights(n, resamples, seed, chunk):
        m = W @ X / n
        means.append(m)
        if variances:
            var.append(np.maximum(W @ X2 / n - m * m, 0.0) * n / (n - 1))
    return np.concatenate(means), (np.concatenate(var) if variances else None)


def bootstrap_means(scores, *, level: float = 0.95, resamples: int = 2000, method: str = "studentized",
                    higher_is_better: bool = True, seed: int = 0) -> MeanIntervals:
    """Intervals for the mean score of every system (columns of ``scores``, items x systems) and for
    its rank, resampling items with replacement -- the same items for every system, so the
    systems' scores stay paired.

    Mean intervals, by ``method``:

    - ``studentized`` (default): the bootstrap-t interval ``[m - t_hi se, m - t_lo se]`` with ``t``
      the quantiles of ``(m* - m) / se*`` over the resamples. Written here (vectorised, multinomial
      weights) because ``scipy.stats.bootstrap`` has no studentized method; it is the one that held
      its level on heavy-tailed human scores (WMT23 MQM: 0.94-0.95 at 20-50 items, where BCa gave
      0.91 at 30; ``benchmarks/decide/interval_coverage.py``).
    - ``BCa``, ``percentile``: through ``scipy.stats.bootstrap``.

    A resample whose scores barely vary has its variance floored at the sample's over ``n``
    (:func:`studentized_t`), so no bound is infinite or NaN. A column whose sample scores are all
    equal gets the point. Rank intervals: the
    ``(1 - level) / 2`` and ``(1 + level) / 2`` quantiles of each system's rank over the same
    resamples (a system's rank is 1 + the number of systems with a strictly better mean).

    The assumption: the items are a random sample from the population the means are about (judged
    items picked by a utility selector are not, so their intervals describe those items only).

    >>> s = np.array([[0.9, 0.1], [0.8, 0.2], [0.7, 0.3], [0.95, 0.0], [0.85, 0.15]] * 4)
    >>> iv = bootstrap_means(s, resamples=500)
    >>> bool(iv.low[0] < iv.means[0] < iv.high[0]), iv.rank_low.tolist(), iv.rank_high.tolist()
    (True, [1, 2], [1, 2])
    """
    X = np.asarray(scores, dtype=float)
    if X.ndim != 2 or X.shape[0] < 2 or X.shape[1] < 1:
        raise DataError(f"bootstrap_means: need scores of at least 2 items x 1 system, got shape {X.shape}",
                        field="scores")
    if np.isnan(X).any():
        raise DataError("bootstrap_means: scores contain NaN; keep the items scored for every system "
                        "(Pool.complete or restrict_ranking)", field="scores")
    if not 0 < level < 1:
        raise ParameterError(f"bootstrap_means: level must be in (0, 1), got {level}", field="level")
    if method not in BOOTSTRAP_METHODS:
        raise ParameterError(f"bootstrap_means: method must be one of {', '.join(BOOTSTRAP_METHODS)}, got {method!r}",
                             field="method")
    n = X.shape[0]
    means = X.mean(axis=0)
    q = (1 - level) / 2
    boot_means, boot_vars = _resampled_moments(X, int(resamples), seed)
    flat = X.std(axis=0) == 0
    if method == "studentized":
        var = X.var(axis=0, ddof=1)
        se = np.sqrt(var / n)
        t = studentized_t(boot_means - means, boot_vars, var, n)
        t_lo, t_hi = np.quantile(t, [q, 1 - q], axis=0)  # both from one partition
        low = means - t_hi * se
        high = means - t_lo * se
    else:
        from scipy.stats import bootstrap

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # degenerate columns: handled below
            res = bootstrap((X,), lambda a, axis: a.mean(axis=axis), axis=0, n_resamples=int(resamples),
                            method=method, confidence_level=level, vectorized=True,
                            random_state=np.random.default_rng(seed))
        low = np.asarray(res.confidence_interval.low, dtype=float).reshape(-1)
        high = np.asarray(res.confidence_interval.high, dtype=float).reshape(-1)
    low = np.where(flat, means, low)
    high = np.where(flat, means, high)
    signed = boot_means if higher_is_better else -boot_means
    ranks = 1 + (signed[:, None, :] > signed[:, :, None]).sum(axis=2)  # (resamples, S)
    r_lo, r_hi = np.quantile(ranks, [q, 1 - q], axis=0)
    rank_low = np.floor(r_lo).astype(int)
    rank_high = np.ceil(r_hi).astype(int)
    return MeanIntervals(means=means, low=low, high=high, rank_low=rank_low, rank_high=rank_high, level=level,
                         method=method, resamples=int(resamples), n_items=n)


@dataclass(frozen=True)
class AgreementInterval:
    """How well the ranking on a set of items can be expected to agree with the ranking on the
    population they were drawn from (see :func:`bootstrap_agreement`)."""

    observed_on_items: int
    expected: float  # mean rank correlation over the resamples
    low: float
    high: float
    kind: str
    level: float
    resamples: int
    population: int | None = None

    def to_dict(self) -> dict:
        """JSON-ready form."""
        return {"expected": self.expected, "interval": [self.low, self.high], "kind": self.kind, "level": self.level,
                "resamples": self.resamples, "n_items": self.observed_on_items, "population": self.population,
                "method": "percentile bootstrap over items: rank correlation of resampled means (around the items' "
                          "means shrunk by their sampling noise) with the items' ranking"}


def bootstrap_agreement(scores, *, kind: str = "kendall", level: float = 0.95, resamples: int = 1000,
                        seed: int = 0, shrink: bool = True, population: int | None = None) -> AgreementInterval:
    """The rank correlation to expect between the systems' ranking on these items (``scores``,
    items x systems) and their ranking on the whole population the items were drawn from -- which
    the user does not have. A parametric-free bootstrap stands the items in for the population:
    resample them with replacement (paired across systems), rank the systems by the resampled
    means, and correlate (Kendall's tau-b or Spearman) with the ranking of the population means.
    Returns the mean correlation and its ``level`` percentile interval. Vectorised: one matrix
    product per chunk of resamples and row-wise correlations.

    ``shrink`` (default): the population means are the items' means pulled toward their average by
    ``c = sqrt(max(0, 1 - noise / spread))``, ``spread`` the variance of the systems' means and
    ``noise`` its expected share from sampling (the mean over items of the across-system variance
    of the residuals, over the number of items; item effects common to all systems cancel). Without
    it the plug-in treats the observed gaps between systems as true and is optimistic: on synthetic
    populations (8 systems, t3 noise, 20 items) it expected tau 0.61 where 0.44 was observed and
    its interval covered 86% at level 0.95; with it, 0.39 vs 0.48 and 92%. Measured coverage at
    level 0.95 (200 populations each; ``tests/test_stats_intervals.py``): 0.91-0.99 when the systems
    differ, 0.85-0.88 when all are equal (the population ranking is then arbitrary).

    The assumption: the items are a random sample of the population (for items picked by a
    selector, the interval describes a random sample of that size, not the selector). Give the
    ``population`` size when it is known (a sample without replacement from a finite pool): the
    resampled deviations and the noise are scaled by the finite-population correction
    ``sqrt((N - n) / (N - 1))``; without it a sample that is a large share of the pool gets a
    pessimistic interval.

    >>> s = np.array([[0.9, 0.5, 0.1], [0.8, 0.6, 0.2], [0.7, 0.4, 0.3], [0.95, 0.5, 0.0]] * 5)
    >>> a = bootstrap_agreement(s, resamples=300)
    >>> a.expected == a.low == a.high == 1.0     # the three systems never swap
    True
    """
    from .ranking import CORRELATION_KINDS, kendall_tau_b_rows, spearman_rows

    X = np.asarray(scores, dtype=float)
    if X.ndim != 2 or X.shape[0] < 2 or X.shape[1] < 2:
        raise DataError(f"bootstrap_agreement: need scores of at least 2 items x 2 systems, got shape {X.shape}",
                        field="scores")
    if np.isnan(X).any():
        raise DataError("bootstrap_agreement: scores contain NaN; keep the items scored for every system",
                        field="scores")
    if kind not in CORRELATION_KINDS:
        raise ParameterError(f"bootstrap_agreement: kind must be one of {', '.join(CORRELATION_KINDS)}, got {kind!r}",
                             field="kind")
    if not 0 < level < 1:
        raise ParameterError(f"bootstrap_agreement: level must be in (0, 1), got {level}", field="level")
    k = X.shape[0]
    if population is not None and population < k:
        raise ParameterError(f"bootstrap_agreement: population ({population}) is smaller than the {k} items",
                             field="population")
    fpc = 1.0 if population is None or population <= 1 else (population - k) / (population - 1)
    means = X.mean(axis=0)
    resid = X - means
    c = 1.0
    if shrink:
        spread = float(means.var(ddof=1))
        noise = fpc * float(np.mean(resid.var(axis=1, ddof=1))) / k
        c = float(np.sqrt(max(0.0, 1.0 - noise / spread))) if spread > 0 else 0.0
    centre = means.mean() + c * (means - means.mean())  # the population means the resamples stand around
    boot_resid, _ = _resampled_moments(resid, int(resamples), seed, variances=False)
    boot_resid *= np.sqrt(fpc)
    corr = (kendall_tau_b_rows if kind == "kendall" else spearman_rows)(centre + boot_resid, means)
    corr = np.where(np.isnan(corr), 0.0, corr)  # all means equal: no ranking (0, as prefix_correlation)
    q = (1 - level) / 2
    lo, hi = np.quantile(corr, [q, 1 - q])
    return AgreementInterval(observed_on_items=k, expected=float(corr.mean()), low=float(lo), high=float(hi), kind=kind,
                             level=level, resamples=int(resamples), population=population)
