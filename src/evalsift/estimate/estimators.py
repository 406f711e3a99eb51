"""A new system's full-benchmark score from its scores on a few anchor items (``evalsift estimate``).

Setting: ``M`` items, ``K`` known systems with every score (``Yk``, K x M), a new system judged on
the ``n`` anchor items of a design (:mod:`evalsift.estimate.anchors`); the target is the new
system's mean over all ``M`` items. Seven estimators; two are **design-based** (their interval holds
because the items were drawn at random, whatever the data), five **model-based** (their error
depends on a model being right, and the assumption is printed with them):

- ``mean`` -- the design's weighted mean ``sum_i w_i y_i``. With a probability design it is the
  Horvitz-Thompson / stratified mean, and its interval is the stratified-sampling one with the
  finite-pool correction, ``Var = sum_h W_h^2 (1 - n_h / M_h) s_h^2 / n_h``, Student-t with
  ``n - H`` degrees of freedom where a stricter Cochran rule allows it, else a betting or a
  bootstrap-t interval (:func:`_design_interval`). With a deterministic design (``anchor-points``,
  ``irt``) it is tinyBenchmarks' anchor estimate (Maia Polo et al. 2024, Sec. 3.1) and has no interval.
- ``aipw`` -- prediction-powered (the difference estimator of survey sampling; in the spirit of the
  augmented inverse-propensity-weighted estimator Zhang, Dorner & Hardt 2025 recommend for
  extrapolation): a predictor ``f`` of the new system's score on every item is fitted on the judged
  items from the known systems' scores on them (ridge regression, penalty chosen by leave-one-out),
  cross-fitted over two halves of the judged items (Zrnic & Candes, PNAS 2024) so that no item is
  predicted by a fit that saw it, and the estimate is ``lam * mean_all f + sum_i w_i (y_i - lam f_i)``
  with ``lam`` tuned in [0, 1] (PPI++). Unbiased for any predictor (the judged residuals correct
  it), so the interval -- the same stratified formula on the residuals, ``n - H - 1`` degrees of
  freedom -- is design-based; a good predictor only makes it narrower.
- ``regression`` -- Zhang, Dorner & Hardt's baseline: a ridge regression across the known systems
  from their scores on the judged items to their full-benchmark scores, applied to the new system.
  Interval: the leave-one-system-out residuals' ``(1 - alpha)(K + 1)``-th smallest (a jackknife
  conformal interval). Model-based: it assumes the new system is exchangeable with the known ones.
- ``pirt`` -- tinyBenchmarks' p-IRT as the paper and the authors' code define it (Maia Polo et al.,
  ICML 2024, Sec. 3.2; :mod:`evalsift.estimate.tinybench`): the multidimensional 2PL of the authors'
  py-irt fork fitted to the known systems' binarised scores, its dimension (5 or 10) chosen on a
  validation split of the known systems, the new system's ability by maximum likelihood without a
  prior on its raw judged scores, and ``(sum_judged y_i + sum_unjudged P_j(theta)) / M``. No interval
  (the paper gives none). Its own design is ``anchor-irt``, the paper's anchor points (k-means on the
  fitted items' ``(gamma_j, b_j)``, Sec. 3.1). The fit (three of them: two for the dimension, one
  final) takes about 5 s on 57 x 805 scores and is made once per set of known systems.
- ``gpirt`` -- tinyBenchmarks' gp-IRT (Sec. 3.3): ``lam * anchor + (1 - lam) * p-IRT`` with the
  paper's analytic ``lam = b^2 / (b^2 + v / (4 n))`` (``b`` p-IRT's validation error of the
  dimension choice, ``v`` the known systems' mean variance over items, ``n`` the anchors). No interval.
- ``pirt-1d`` -- evalsift's simplification of p-IRT (our name): a one-dimensional 2PL fitted by
  MAP to the known systems' scores on [0, 1] as soft targets (mapped by the known systems' range when
  they are not there already), the ability by MAP under the prior N(0, 1), the same sum. Interval
  (ours): normal, from the ability's posterior spread through the unjudged items' predicted mean plus
  their Bernoulli spread. Model-based: it assumes the 2PL describes the new system too. Its own design
  is ``anchor-points`` (k-means on the items' score vectors, the paper's "correct." clustering).
- ``gpirt-1d`` -- evalsift's simplification of gp-IRT (our name): ``lam`` chosen on a seeded
  validation fifth of the known systems (the 1-D 2PL refitted without them) as the value on a 0.05
  grid with the smallest mean absolute error there. No interval.

Measured side by side (docs/estimate.md): the paper's pipeline is the more accurate of the two on
the real data we hold (AlpacaEval at 100 anchors, MAE 1.27 vs 2.08 points), the 1-D one fits in a
fraction of the time.

Every estimate and interval is kept inside the score's stated range (:attr:`KnownSystems.bounds`,
from :attr:`evalsift.estimate.ResponseMatrix.bounds`; never the known systems' span): the true
score lies in it, so the cut costs no coverage (:func:`_in_range`).

>>> import numpy as np
>>> from evalsift.estimate.anchors import select_anchors
>>> rng = np.random.default_rng(0)
>>> Y = (rng.random((21, 300)) < np.linspace(0.2, 0.8, 21)[:, None]).astype(float)
>>> a = select_anchors(Y[1:], 60, "random", seed=0)
>>> est = estimate_score(Y[1:], Y[0, a.items], a, "mean", alpha=0.1)
>>> est.kind, est.low <= est.value <= est.high
('design-based', True)
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
from scipy.stats import norm, t as student_t

from ..errors import DataError, ParameterError, check_choice
from .anchors import Anchors, fit_item_model, unit_scale

METHODS = ("mean", "aipw", "regression", "pirt", "gpirt", "pirt-1d", "gpirt-1d")
DESIGN_BASED = ("mean", "aipw")
# the design each estimator is run with when none is named (the peers' own pairings)
DEFAULT_DESIGN = {"mean": "random", "aipw": "random", "regression": "random", "pirt": "anchor-irt",
                  "gpirt": "anchor-irt", "pirt-1d": "anchor-points", "gpirt-1d": "anchor-points"}
ASSUMPTIONS = {
    "mean": "the judged items were drawn at random by the design (its inclusion probabilities); nothing about "
            "the systems",
    "aipw": "the judged items were drawn at random by the design; the predictor from the known systems may be "
            "anything (a bad one only widens the interval)",
    "regression": "the new system is exchangeable with the known systems (drawn from the same population): it "
                  "fails when the new system is better than all of them",
    "pirt": "tinyBenchmarks' multidimensional 2PL, fitted to the known systems' binarised scores, describes the new "
            "system too (its abilities explain its scores); no interval",
    "gpirt": "as pirt, and the paper's analytic mixing weight (from the known systems' validation error) suits the "
             "new one; no interval",
    "pirt-1d": "a one-dimensional 2PL fitted to the known systems describes the new system too (its ability alone "
               "explains its scores)",
    "gpirt-1d": "as pirt-1d, and the mixing weight chosen on known systems suits the new one; no interval",
    "anchor": "each anchor stands for its cluster of items (tinyBenchmarks' anchor estimate); a deterministic "
              "design has no sampling distribution, so no interval",
}
ALPHAS = np.logspace(-3, 4, 15)
LAMBDA_GRID = np.round(np.linspace(0, 1, 21), 2)


@dataclass(frozen=True)
class Estimate:
    """One estimate of a system's full-benchmark mean (in the data's own unit), its interval at level
    ``1 - alpha`` (None when the method gives none), and what it rests on."""

    method: str
    design: str
    value: float
    low: float | None
    high: float | None
    alpha: float
    kind: str  # "design-based" or "model-based"
    assumption: str
    n: int
    pool_size: int
    details: dict[str, Any] = field(default_factory=dict)

    @property
    def width(self) -> float | None:
        """high - low (None without an interval)."""
        return None if self.low is None else self.high - self.low

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {"method": self.method, "design": self.design, "estimate": self.value,
                "interval": None if self.low is None or not np.isfinite([self.low, self.high]).all()
                else [self.low, self.high], "level": 1 - self.alpha,
                "kind": self.kind, "assumption": self.assumption, "n": self.n, "pool_size": self.pool_size,
                **self.details}


class KnownSystems:
    """The known systems' side of estimation, computed once and shared by every design and method:
    the matrix ``Yk`` (K x M), their full-benchmark means, and (lazily) the 2PL fitted to them and
    the validation split gp-IRT chooses its weight on. ``bounds``: the score's stated range
    ``(low, high)``, None for an open end (e.g. ``(None, 0.0)`` for MQM), or None when none is stated
    (:attr:`evalsift.estimate.ResponseMatrix.bounds`); estimates are kept inside it, and the betting
    interval needs both ends."""

    def __init__(self, Yk, seed: int = 0, bounds: tuple[float | None, float | None] | None = None) -> None:
        Yk = np.asarray(Yk, dtype=float)
        if Yk.ndim != 2 or Yk.shape[0] < 2 or not np.isfinite(Yk).all():
            raise DataError("estimation needs at least 2 known systems with a score on every item "
                            f"(got a {Yk.shape} matrix{' with missing scores' if Yk.ndim == 2 else ''})",
                            field="systems")
        self.Yk = Yk
        self.full = Yk.mean(axis=1)
        self.bounds = _check_bounds(bounds, Yk)
        self.lo, self.hi = unit_scale(Yk)
        self.seed = int(seed)
        self._irt = None
        self._tb = None
        self._val: tuple[np.ndarray, Any] | None = None
        self._betting: dict[tuple, tuple[float, float]] = {}
        self._abilities: dict[tuple, np.ndarray] = {}
        self._skew: float | None = None

    @property
    def tinybench(self):
        """tinyBenchmarks' pipeline (:class:`evalsift.estimate.tinybench.TinyBenchmarks`) fitted to every
        known system's scores on the [0, 1] scale: what ``pirt``, ``gpirt`` and the ``anchor-irt`` design use."""
        if self._tb is None:
            from .tinybench import TinyBenchmarks

            self._tb = TinyBenchmarks.fit(self.unit(self.Yk))
        return self._tb

    @property
    def irt(self):
        """The 2PL fitted to every known system (on the [0, 1] scale)."""
        if self._irt is None:
            self._irt = fit_item_model(self.Yk, self.seed)
        return self._irt

    def validation(self) -> tuple[np.ndarray, Any]:
        """(the validation systems' rows, the 2PL fitted without them): a seeded fifth of the known
        systems, at least 1, leaving at least 2 to fit."""
        if self._val is None:
            K = self.Yk.shape[0]
            v = max(1, min(K - 2, round(K / 5)))
            rng = np.random.default_rng([self.seed, K, 7])
            val = np.sort(rng.choice(K, v, replace=False)) if K >= 3 else np.array([0])
            rest = np.setdiff1d(np.arange(K), val)
            fit = fit_item_model(self.Yk[rest], self.seed) if len(rest) >= 2 else self.irt
            self._val = (val, fit)
        return self._val

    @property
    def skewness(self) -> float:
        """The median size of the known systems' skewness over all items (their full rows): what a
        design sample of a new system's scores would show with many items."""
        if self._skew is None:
            self._skew = float(np.median([abs(skewness(row)) for row in self.Yk]))
        return self._skew

    @property
    def bounded(self) -> bool:
        """True when the score's range is stated at both ends (what a betting interval needs)."""
        return self.bounds is not None and None not in self.bounds

    def betting_interval(self, y: np.ndarray, pool: int, alpha: float) -> tuple[float, float]:
        """:func:`evalsift.stats.sequential.win_rate_interval` of ``y`` mapped to [0, 1] by the stated
        range :attr:`bounds` (both ends needed), mapped back (remembered: ``mean`` and ``aipw`` on the
        same judged items ask for the same one)."""
        from ..stats.sequential import win_rate_interval

        lo, hi = self.bounds
        u = np.clip((np.asarray(y, dtype=float) - lo) / (hi - lo), 0.0, 1.0)
        key = (u.tobytes(), int(pool), float(alpha))
        if key not in self._betting:
            if len(self._betting) > 64:
                self._betting.clear()
            a, b = win_rate_interval(u, pool, alpha)
            self._betting[key] = (lo + (hi - lo) * a, lo + (hi - lo) * b)
        return self._betting[key]

    def tinybench_ability(self, u: np.ndarray, items: np.ndarray) -> np.ndarray:
        """:func:`evalsift.estimate.tinybench.fit_ability` of the [0, 1] scores ``u`` on ``items`` under
        :attr:`tinybench`'s 2PL (remembered: ``pirt`` and ``gpirt`` on the same judged items ask for the
        same one; a copy is returned)."""
        from .tinybench import fit_ability

        cache = self.__dict__.setdefault("_abilities", {})  # (an object unpickled from before it existed)
        key = (np.asarray(items).tobytes(), np.asarray(u, dtype=float).tobytes())
        if key not in cache:
            if len(cache) > 64:
                cache.clear()
            cache[key] = fit_ability(u, self.tinybench.irt, items)
        return cache[key].copy()

    def unit(self, y) -> np.ndarray:
        """Scores mapped to the 2PL's [0, 1] scale (clipped)."""
        return np.clip((np.asarray(y, dtype=float) - self.lo) / (self.hi - self.lo), 0.0, 1.0)


def _known(known) -> KnownSystems:
    return known if isinstance(known, KnownSystems) else KnownSystems(known)


def _check_bounds(bounds, Yk: np.ndarray) -> tuple[float | None, float | None] | None:
    """``bounds`` as floats (None ends kept), checked: low < high and every known score inside."""
    if bounds is None:
        return None
    lo, hi = (None if b is None else float(b) for b in bounds)
    if lo is not None and hi is not None and not lo < hi:
        raise ParameterError(f"bounds {bounds}: the low end must be below the high end", field="bounds")
    if (lo is not None and Yk.min() < lo) or (hi is not None and Yk.max() > hi):
        raise DataError(f"the known systems' scores run from {Yk.min():g} to {Yk.max():g}, outside the stated range "
                        f"{bounds}; state the metric's true range, or none", field="bounds")
    return (lo, hi)


def _in_range(est: Estimate, bounds) -> Estimate:
    """``est`` with its value and interval kept inside the score's stated range. The full-benchmark mean
    lies in the range, so cutting an interval there never drops it: the coverage is unchanged and the
    width can only shrink; moving the value onto the nearest end can only bring it closer. Marks
    ``clipped`` in the details when anything moved."""
    if bounds is None:
        return est
    lo, hi = (-np.inf if bounds[0] is None else bounds[0]), (np.inf if bounds[1] is None else bounds[1])
    v = float(np.clip(est.value, lo, hi))
    low = None if est.low is None else float(np.clip(est.low, lo, hi))
    high = None if est.high is None else float(np.clip(est.high, lo, hi))
    if (v, low, high) == (est.value, est.low, est.high):
        return est
    return replace(est, value=v, low=low, high=high, details={**est.details, "clipped": True})


def estimate_score(known, y, anchors: Anchors, method: str, *, alpha: float = 0.1) -> Estimate:
    """Estimate a new system's mean over all items from ``y``, its scores on ``anchors.items`` (in
    the same order), with the known systems ``known`` (a K x M matrix or :class:`KnownSystems`), by
    ``method`` (module doc); interval at level ``1 - alpha``."""
    method = check_choice("method", method, METHODS)
    if not 0 < alpha < 1:
        raise ParameterError(f"--alpha {alpha}: must be in (0, 1), e.g. 0.1 for 90% intervals.", field="alpha")
    known = _known(known)
    y = np.asarray(y, dtype=float)
    if y.shape != (anchors.n,) or not np.isfinite(y).all():
        raise DataError(f"the new system needs a score on each of the {anchors.n} anchor items (got {y.shape[0]} "
                        f"values{', some missing' if y.shape == (anchors.n,) else ''})", field="items")
    if anchors.pool_size != known.Yk.shape[1]:
        raise DataError(f"the anchors were picked from {anchors.pool_size} items but the known systems have "
                        f"{known.Yk.shape[1]}; select them on the same data", field="pool_size")
    common = dict(alpha=alpha, n=anchors.n, pool_size=anchors.pool_size, design=anchors.design)
    return _in_range(_estimate(known, y, anchors, method, common), known.bounds)


def _estimate(known: KnownSystems, y: np.ndarray, anchors: Anchors, method: str, common: dict) -> Estimate:
    if method == "mean":
        if not anchors.probability_design:
            v = float(anchors.weights @ y)
            return Estimate("mean", value=v, low=None, high=None, kind="model-based", assumption=ASSUMPTIONS["anchor"],
                            **common)
        v, se, df = design_mean(y, anchors)
        return _design_interval("mean", v, se, df, y, y, anchors, known, common)
    if method == "aipw":
        if not anchors.probability_design:
            raise ParameterError(f"--method aipw needs a random design (random or stratified anchors); "
                                 f"{anchors.design!r} picks items deterministically, so no design-based interval "
                                 "exists. Select with --method random or stratified, or estimate with pirt/gpirt (or pirt-1d/gpirt-1d).",
                                 field="method")
        v, se, df, lam, resid = aipw(known, y, anchors)
        est = _design_interval("aipw", v, se, df, resid, y, anchors, known, common)
        return replace(est, details={**est.details, "lam": lam})
    if method == "regression":
        return _regression(known, y, anchors, common)
    if method == "pirt-1d":
        return _pirt(known, y, anchors, common)
    if method == "gpirt-1d":
        return _gpirt(known, y, anchors, common)
    return _tinybenchmarks(known, y, anchors, method, common)


def _interval(method: str, v: float, se: float, df: int, kind: str, common: dict) -> Estimate:
    a = common["alpha"]
    q = float(student_t.ppf(1 - a / 2, max(df, 1)))
    return Estimate(method, value=v, low=v - q * se, high=v + q * se, kind=kind, assumption=ASSUMPTIONS[method],
                    details={"se": se, "df": df}, **common)


# ------------------------------------------------------------------------------ design-based
def skewness(values) -> float:
    """The sample skewness ``g1 = m3 / m2^(3/2)`` (0 for a sample without spread)."""
    v = np.asarray(values, dtype=float)
    sd = float(np.std(v))
    if len(v) < 2 or sd <= 1e-12 * max(1.0, float(np.abs(v).max())):
        return 0.0
    return float(np.mean((v - v.mean()) ** 3) / sd ** 3)


COCHRAN = 25.0  # Cochran's constant: n > 25 g1^2


def cochran_ok(values, n: int, skew: float = 0.0) -> bool:
    """Cochran's rule for the normal approximation to a sample mean from a skewed population:
    ``n > 25 g1^2`` with ``g1`` the sample skewness (Cochran, *Sampling Techniques*, 3rd ed., Sec. 2.15),
    or ``skew`` when that is larger in size (the stricter rule of :func:`_design_interval`: the known
    systems' skewness, which a small sample of a heavy-tailed score understates). A sample of one
    value (or fewer than 3) fails it: it shows nothing of the unjudged items' spread."""
    v = np.asarray(values, dtype=float)
    sd = float(np.std(v))
    if len(v) < 3 or sd <= 1e-12:
        return False  # one value seen: the sample says nothing about the spread of the unjudged items
    g1 = max(abs(skewness(v)), abs(float(skew)))
    return n > COCHRAN * g1 * g1


BOOTSTRAP_RESAMPLES = 1000


@functools.lru_cache(maxsize=512)
def _resample_counts(n: int, stratum: int, resamples: int) -> np.ndarray:
    """How often each of ``n`` values is drawn in each of ``resamples`` resamples with replacement
    (resamples x n, a multinomial draw seeded by ``n`` and the stratum's number): the same for every
    sample of that size in that stratum, so it is drawn once and reused (the resamples stay
    independent across strata; a fixed set of resamples is as good a Monte Carlo approximation of the
    bootstrap distribution as a fresh one). Read-only."""
    counts = np.random.default_rng([17, n, stratum]).multinomial(n, np.full(n, 1.0 / n), size=resamples)
    counts = counts.astype(float)
    counts.setflags(write=False)
    return counts


def bootstrap_t_interval(values, anchors: Anchors, v: float, se: float, alpha: float,
                         resamples: int = BOOTSTRAP_RESAMPLES) -> tuple[float, float]:
    """The bootstrap-t interval of a design mean (Efron & Tibshirani, *An Introduction to the
    Bootstrap*, Ch. 12): the judged ``values`` resampled with replacement within each stratum
    (``resamples`` times; :func:`_resample_counts`), the studentised deviations
    ``T* = (mean* - mean) / se*`` of the stratified mean, and ``[v - q_hi se, v - q_lo se]`` with
    ``q_lo, q_hi`` their ``alpha / 2`` and ``1 - alpha / 2`` quantiles and ``se`` the design's standard
    error (with the finite-pool correction; the resamples' ``se*`` without it, so the pivot's shape
    comes from the sample and its scale from the design). A skewed sample gets an interval longer
    on the side of its tail, which the t interval lacks. ``T*`` is
    :func:`evalsift.stats.intervals.studentized_t`'s, on the stratified mean's variances (each times
    ``n``, the per-item scale that function floors at): ``se*`` is floored at ``se0 / sqrt(n)`` with
    ``se0`` the sample's own, so a resample that repeats one value gives a large finite ``T*``, not an
    infinite one."""
    from ..stats.intervals import studentized_t

    values = np.asarray(values, dtype=float)
    strata, sizes = _strata(anchors)
    M = anchors.pool_size
    dev = np.zeros(resamples)
    var = np.zeros(resamples)
    var0 = 0.0
    for k, (h, Mh) in enumerate(sorted(sizes.items())):
        x = values[strata == h]
        nh = len(x)
        if nh == 0 or nh >= Mh:  # a stratum judged whole adds no sampling error
            continue
        W = Mh / M
        xc = x - x.mean()
        counts = _resample_counts(nh, k, resamples)
        m = counts @ xc / nh  # each resample's mean, as a deviation from the sample's
        dev += W * m
        if nh >= 2:
            var += W * W * np.maximum(counts @ (xc * xc) / nh - m * m, 0.0) / (nh - 1)  # s*^2 / n_h
            var0 += W * W * float(np.var(x, ddof=1)) / nh
    n = anchors.n
    T = studentized_t(dev, var * n, var0 * n, n)
    q_lo, q_hi = np.quantile(T, [alpha / 2, 1 - alpha / 2])
    return v - float(q_hi) * se, v - float(q_lo) * se


def _design_interval(method: str, v: float, se: float, df: int, checked, y, anchors: Anchors, known: KnownSystems,
                     common: dict) -> Estimate:
    """The design-based interval of ``v`` (standard error ``se``, ``df`` degrees of freedom), by the
    first rule that applies (``details["interval_rule"]``):

    1. ``t``: Student-t, where the stricter Cochran rule holds for ``checked`` (the values whose mean
       carries the error): ``n > 25 g1^2`` with ``g1`` the larger of their sample skewness and the
       known systems' (:attr:`KnownSystems.skewness`);
    2. ``betting``: where Cochran's rule fails on the sample itself, for a uniform draw of scores whose
       range is stated at both ends, the betting interval of
       :func:`evalsift.stats.sequential.win_rate_interval` on the judged scores (valid at every sample
       size, wider);
    3. ``bootstrap-t``: otherwise (stratified draws, a range open at one end such as MQM's, or a
       sample that passes Cochran's rule while the known systems' skewness fails it), the stratified
       bootstrap-t of :func:`bootstrap_t_interval`.

    A sample without spread in any stratum (``se`` 0) gets the betting interval where rule 2 allows
    it and no interval otherwise (``details["no_interval"]`` says why): nothing in it bounds the
    unjudged items."""
    est = _interval(method, v, se, df, "design-based", common)
    uniform = anchors.strata is None
    alpha = common["alpha"]
    if not se > 0:
        if uniform and known.bounded:
            lo, hi = known.betting_interval(y, anchors.pool_size, alpha)
            return replace(est, low=min(lo, v), high=max(hi, v), details={**est.details, "interval_rule": "betting"})
        why = ("every judged score is the same" + (" within each stratum" if not uniform else "")
               + (", and a stratified draw has no betting interval" if known.bounded else
                  ", and the data states no range for the score, so nothing bounds the unjudged items"))
        return replace(est, low=None, high=None, details={**est.details, "no_interval": why})
    sample_ok = cochran_ok(checked, anchors.n)
    if sample_ok and cochran_ok(checked, anchors.n, known.skewness):
        return replace(est, details={**est.details, "interval_rule": "t"})
    if not sample_ok and uniform and known.bounded:
        lo, hi = known.betting_interval(y, anchors.pool_size, alpha)
        return replace(est, low=min(lo, v), high=max(hi, v), details={**est.details, "interval_rule": "betting"})
    lo, hi = bootstrap_t_interval(checked, anchors, v, se, alpha)
    return replace(est, low=min(lo, v), high=max(hi, v), details={**est.details, "interval_rule": "bootstrap-t"})


def _strata(anchors: Anchors) -> tuple[np.ndarray, dict[int, int]]:
    if anchors.strata is None:
        return np.zeros(anchors.n, dtype=int), {0: anchors.pool_size}
    return anchors.strata, anchors.stratum_sizes


def design_mean(values, anchors: Anchors) -> tuple[float, float, int]:
    """(weighted mean, its standard error, degrees of freedom) of ``values`` on the anchors under
    stratified simple random sampling (one stratum when unstratified), with the finite-pool correction."""
    values = np.asarray(values, dtype=float)
    strata, sizes = _strata(anchors)
    M = anchors.pool_size
    var = 0.0
    for h, Mh in sizes.items():
        v = values[strata == h]
        nh = len(v)
        if nh >= 2 and Mh > nh:
            var += (Mh / M) ** 2 * (1 - nh / Mh) * float(np.var(v, ddof=1)) / nh
    return float(anchors.weights @ values), float(np.sqrt(var)), anchors.n - len(sizes)


AIPW_FOLDS = 2


def _folds(anchors: Anchors, k: int) -> np.ndarray:
    """``k`` cross-fitting folds, dealt in turn within each stratum in pick order (continuing across
    strata, so the folds' sizes differ by at most one)."""
    strata, _ = _strata(anchors)
    fold = np.zeros(anchors.n, dtype=int)
    start = 0
    for h in np.unique(strata):
        idx = np.flatnonzero(strata == h)
        fold[idx] = (start + np.arange(len(idx))) % k
        start += len(idx)
    return fold


def aipw(known, y, anchors: Anchors) -> tuple[float, float, int, float, np.ndarray]:
    """The cross-fitted prediction-powered estimate (module doc): (estimate, se, df, lam, residuals)."""
    known = _known(known)
    y = np.asarray(y, dtype=float)
    X_all = known.Yk.T  # items x known systems: the features of every item
    K = max(2, min(AIPW_FOLDS, anchors.n // 3))
    fold = _folds(anchors, K)
    f_oof = np.empty(anchors.n)
    f_means = []
    for k in range(K):
        train, test = fold != k, fold == k
        if train.sum() >= 3:
            pred = ridge_fit(X_all[anchors.items[train]], y[train]).predict(X_all)
        else:  # too few to fit: the known systems' item mean, shifted to the judged level
            base = X_all.mean(axis=1)
            pred = base + (y[train].mean() - base[anchors.items[train]].mean() if train.any() else 0.0)
        f_oof[test] = pred[anchors.items[test]]
        f_means.append((float(anchors.weights[test].sum()), float(pred.mean())))
    vf = float(np.var(f_oof, ddof=1)) if anchors.n > 1 else 0.0
    lam = float(np.clip(np.cov(y, f_oof, ddof=1)[0, 1] / vf, 0, 1)) if vf > 1e-12 else 0.0
    resid = y - lam * f_oof
    centre = sum(c * m for c, m in f_means)
    v, se, df = design_mean(resid, anchors)
    return lam * centre + v, se, df - 1, lam, resid


# ------------------------------------------------------------------------------ model-based
@dataclass(frozen=True)
class RidgeFit:
    """A ridge regression with intercept; ``loo`` holds the leave-one-out residuals at the chosen penalty."""

    x_mean: np.ndarray
    y_mean: float
    coef: np.ndarray
    alpha: float
    loo: np.ndarray

    def predict(self, X) -> np.ndarray:
        """Predictions for the rows of ``X``."""
        return self.y_mean + (np.asarray(X, dtype=float) - self.x_mean) @ self.coef


def ridge_fit(X, y, alphas=ALPHAS) -> RidgeFit:
    """Ridge regression of ``y`` on ``X`` (rows: samples) with an intercept, the penalty chosen from
    ``alphas`` by exact leave-one-out error (the hat matrix's diagonal: closed form through one SVD)."""
    X = np.asarray(X, dtype=float)
    y = np.asarray(y, dtype=float)
    xm, ym = X.mean(axis=0), float(y.mean())
    Xc, yc = X - xm, y - ym
    U, s, Vt = np.linalg.svd(Xc, full_matrices=False)
    Uy = U.T @ yc
    n = len(y)
    best = None
    U2, s2 = U * U, s * s  # the same for every penalty
    for a in alphas:
        shrink = s2 / (s2 + a)
        fitted = U @ (shrink * Uy)
        h = U2 @ shrink + 1.0 / n
        loo = (yc - fitted) / np.maximum(1 - h, 1e-9)
        err = float(np.mean(loo ** 2))
        if best is None or err < best[0] - 1e-15:
            best = (err, a, loo)
    _, a, loo = best
    coef = Vt.T @ (s / (s * s + a) * Uy)
    return RidgeFit(xm, ym, coef, float(a), loo)


def _regression(known: KnownSystems, y, anchors: Anchors, common: dict) -> Estimate:
    K = known.Yk.shape[0]
    fit = ridge_fit(known.Yk[:, anchors.items], known.full)
    v = float(fit.predict(y[None, :])[0])
    r = np.sort(np.abs(fit.loo))
    k = int(np.ceil((1 - common["alpha"]) * (K + 1)))
    details = {"ridge_alpha": fit.alpha, "known": K}
    if k > K:  # the conformal quantile is beyond the largest residual: the interval is the whole line
        need = next(k2 for k2 in range(K + 1, 10 ** 6) if np.ceil((1 - common["alpha"]) * (k2 + 1)) <= k2)
        return Estimate("regression", value=v, low=None, high=None, kind="model-based",
                        assumption=ASSUMPTIONS["regression"], **common,
                        details={**details, "no_interval": f"a {1 - common['alpha']:.0%} conformal interval needs at "
                                                           f"least {need} known systems; there are {K}"})
    q = float(r[k - 1])
    return Estimate("regression", value=v, low=v - q, high=v + q, kind="model-based",
                    assumption=ASSUMPTIONS["regression"], details=details, **common)


def fit_abilities(irt, items: np.ndarray, Yu: np.ndarray, iters: int = 100) -> tuple[np.ndarray, np.ndarray]:
    """MAP abilities (prior N(0, 1)) of the rows of ``Yu`` (systems x judged items, [0, 1] scores) under
    the 2PL ``irt`` on ``items``; returns (abilities, posterior information). The log-posterior is concave, so its
    gradient falls from + to - once in [-8, 8]: each row keeps a bracket of that sign change and takes Newton's step
    when it lands inside the bracket, else the bracket's midpoint (a plain Newton step overshoots on steep items:
    44 of 50 correct at a = 5, b = 1 swung between the clip limits and ended at -8 instead of 1.388)."""
    a = np.asarray(irt.discrimination)[items]
    b = np.asarray(irt.difficulty)[items]
    n = Yu.shape[0]
    lo, hi = np.full(n, -8.0), np.full(n, 8.0)
    theta = np.zeros(n)
    for _ in range(iters):
        p = 1.0 / (1.0 + np.exp(-a * (theta[:, None] - b)))
        grad = (a * (Yu - p)).sum(axis=1) - theta
        info = (a * a * p * (1 - p)).sum(axis=1) + 1.0
        lo = np.where(grad > 0, theta, lo)
        hi = np.where(grad < 0, theta, hi)
        newton = theta + grad / info
        inside = (newton > lo) & (newton < hi)
        nxt = np.where(inside, newton, 0.5 * (lo + hi))
        done = (np.abs(nxt - theta) < 1e-10) | (grad == 0)
        theta = np.where(grad == 0, theta, nxt)
        if done.all():
            break
    p = 1.0 / (1.0 + np.exp(-a * (theta[:, None] - b)))
    info = (a * a * p * (1 - p)).sum(axis=1) + 1.0
    return theta, info


def pirt_values(irt, items: np.ndarray, Yu: np.ndarray, judged: np.ndarray | None = None
                ) -> tuple[np.ndarray, np.ndarray]:
    """p-IRT estimates (on the [0, 1] scale) for the rows of ``Yu`` and their model-based standard
    errors (module doc). ``judged``: the judged scores that enter the sum, when they differ from
    ``Yu`` (which the ability is fitted to, clipped to [0, 1]): a score beyond the known systems'
    range counts as it is."""
    M = irt.n_items
    theta, info = fit_abilities(irt, items, Yu)
    P = irt.probability(theta)  # systems x items
    unseen = np.ones(M, dtype=bool)
    unseen[items] = False
    est = ((Yu if judged is None else judged).sum(axis=1) + P[:, unseen].sum(axis=1)) / M
    a = np.asarray(irt.discrimination)[unseen]
    dP = (a * P[:, unseen] * (1 - P[:, unseen])).sum(axis=1) / M
    var = dP ** 2 / info + (P[:, unseen] * (1 - P[:, unseen])).sum(axis=1) / M ** 2
    return est, np.sqrt(var)


def _pirt(known: KnownSystems, y, anchors: Anchors, common: dict) -> Estimate:
    scale = known.hi - known.lo
    est, se = pirt_values(known.irt, anchors.items, known.unit(y)[None, :],
                          judged=((np.asarray(y, dtype=float) - known.lo) / scale)[None, :])
    v, s = known.lo + scale * float(est[0]), scale * float(se[0])
    z = float(norm.ppf(1 - common["alpha"] / 2))
    return Estimate("pirt-1d", value=v, low=v - z * s, high=v + z * s, kind="model-based",
                    assumption=ASSUMPTIONS["pirt-1d"], details={"se": s}, **common)


def gp_lambda(known: KnownSystems, anchors: Anchors) -> float:
    """gp-IRT's weight on the anchor estimate: the grid value with the smallest mean absolute error on
    the validation systems (the 2PL refitted without them)."""
    val, irt_v = known.validation()
    Yv = known.Yk[val][:, anchors.items]
    anchor = Yv @ anchors.weights
    p, _ = pirt_values(irt_v, anchors.items, known.unit(Yv))
    p = known.lo + (known.hi - known.lo) * p
    truth = known.full[val]
    err = np.abs(LAMBDA_GRID[:, None] * anchor + (1 - LAMBDA_GRID[:, None]) * p - truth).mean(axis=1)
    return float(LAMBDA_GRID[int(np.argmin(err))])


def _gpirt(known: KnownSystems, y, anchors: Anchors, common: dict) -> Estimate:
    lam = gp_lambda(known, anchors)
    p = _pirt(known, y, anchors, common).value
    v = lam * float(anchors.weights @ y) + (1 - lam) * p
    return Estimate("gpirt-1d", value=v, low=None, high=None, kind="model-based",
                    assumption=ASSUMPTIONS["gpirt-1d"], details={"lam": lam}, **common)


def _tinybenchmarks(known: KnownSystems, y, anchors: Anchors, method: str, common: dict) -> Estimate:
    """tinyBenchmarks' p-IRT or gp-IRT on the known systems' pipeline (:attr:`KnownSystems.tinybench`):
    the ability is fitted to the judged scores on [0, 1] (clipped), the sum takes them as they are."""
    tb = known.tinybench
    scale = known.hi - known.lo
    items = np.asarray(anchors.items, dtype=int)
    theta = known.tinybench_ability(known.unit(y), items)
    unseen = np.ones(anchors.pool_size, dtype=bool)
    unseen[items] = False
    judged = (np.asarray(y, dtype=float) - known.lo) / scale
    p = (float(judged.sum()) + float(tb.irt.probability(theta, np.flatnonzero(unseen)).sum())) / anchors.pool_size
    details = {"dims": tb.irt.dims, "ability": [float(t) for t in theta], "threshold": tb.threshold}
    if method == "pirt":
        v = known.lo + scale * p
    else:
        lam = tb.lam(anchors.n)
        anchor = float(anchors.weights @ judged)
        v = known.lo + scale * (lam * anchor + (1 - lam) * p)
        details.update(lam=lam, validation_error=tb.selection["b"])
    return Estimate(method, value=v, low=None, high=None, kind="model-based", assumption=ASSUMPTIONS[method],
                    details=details, **common)
