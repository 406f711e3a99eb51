"""Prediction-powered estimates of a pool's mean: a few true labels plus a cheap prediction for
every item (Angelopoulos et al., "Prediction-powered inference", Science 2023; the power-tuned PPI++
of Angelopoulos, Duchi & Zrnic, 2023).

The setting is a *finite pool* of ``M`` items, all with a prediction ``f_i`` (a metric turned into a
verdict probability, a cheap judge), ``n`` of them drawn uniformly without replacement and labelled
``y_i``. The target is the pool's mean of ``y`` (a win rate, a system's mean score). The estimate

    theta = lam * mean_{all M} f  +  mean_{labelled} (y - lam f)

is unbiased for every fixed ``lam`` and every prediction, good or bad (the survey sampler's
*difference estimator*; PPI in a finite population): the prediction only moves the variance,

    Var = (1 - n / M) * S^2(y - lam f) / n,

smallest at ``lam = Cov(y, f) / Var(f)`` over the pool (PPI++'s power tuning; in a finite pool with
``f`` known everywhere the ``(1 + n / N)`` factor of the infinite-population formula is absent).
``lam = 0`` is plain random sampling, ``lam = 1`` classic PPI. Estimated ``lam`` (from the labels)
makes the estimate slightly biased in small samples; ``cross_fit`` estimates it on the other half of
the labels for each half, which removes most of that bias. When the predictions themselves are
fitted on the labels (a metric calibrated into verdict probabilities), :func:`cross_ppi_mean` fits
them out of fold (Zrnic & Candes, "Cross-prediction-powered inference", PNAS 2024).

The interval is the normal (CLT) one: fixed-sample, for a budget decided in advance. For a stop rule
that may look after every label, the sequential version is the anytime rule with the predictions
as a control variate (:mod:`evalsift.stats.sequential`, ``control=``).

>>> rng = np.random.default_rng(0)
>>> y = (rng.random(2000) < 0.6).astype(float)              # the pool's truth: mean 0.6
>>> f = np.clip(y * 0.7 + rng.normal(0.15, 0.1, 2000), 0, 1)  # a good prediction for every item
>>> picked = rng.choice(2000, 40, replace=False)
>>> est = ppi_mean(y[picked], picked, f)
>>> abs(est.estimate - y.mean()) < 0.05 and est.width < 0.15 < ppi_mean(y[picked], picked, f, lam=0.0).width
True
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import DataError, ParameterError
from .intervals import studentized_t


@dataclass(frozen=True)
class PPIEstimate:
    """A prediction-powered estimate of a pool's mean, with its normal interval at ``level``."""

    estimate: float
    low: float
    high: float
    lam: float  # the weight on the predictions (0: labels only)
    n: int  # labelled items
    pool: int  # M
    level: float
    se: float

    @property
    def width(self) -> float:
        """high - low."""
        return self.high - self.low

    def to_dict(self) -> dict:
        """JSON-ready form."""
        return {"estimate": self.estimate, "interval": [self.low, self.high], "lam": self.lam, "n": self.n,
                "pool": self.pool, "level": self.level, "se": self.se}


def _tuned_lam(y: np.ndarray, fl: np.ndarray, clip: bool = True) -> float:
    """Cov(y, f) / Var(f) on the labelled items, clipped to [0, 1] unless ``clip`` is False (0 when
    f does not vary)."""
    if len(y) < 2:
        return 0.0
    vf = float(np.var(fl, ddof=1))
    if vf <= 1e-12:
        return 0.0
    lam = float(np.cov(y, fl, ddof=1)[0, 1] / vf)
    return float(np.clip(lam, 0.0, 1.0)) if clip else lam


def ppi_mean(y, labelled, predictions, *, lam: float | str = "tuned", level: float = 0.95,
             cross_fit: bool = True, clip: bool = True) -> PPIEstimate:
    """The pool's mean of ``y`` from labels on some items and predictions on all (module doc).

    ``y``: the labels of the items at positions ``labelled`` (drawn uniformly without replacement);
    ``predictions``: one per pool item (length M). ``lam``: a number in [0, 1], or ``"tuned"``
    (PPI++: estimated from the labels, cross-fitted over two halves when ``cross_fit``). ``clip``:
    keep a tuned ``lam`` in [0, 1] (predictions on the labels' scale); ``clip=False`` lets it be any
    slope, for a raw metric on another scale (then it is the survey sampler's regression estimator).
    """
    y = np.asarray(y, dtype=float)
    idx = np.asarray(labelled, dtype=int)
    f = np.asarray(predictions, dtype=float)
    M, n = len(f), len(y)
    if len(idx) != n:
        raise DataError(f"ppi_mean: {n} labels but {len(idx)} labelled positions", field="labelled")
    if n < 2:
        raise DataError(f"ppi_mean: need at least 2 labels, got {n}", field="y")
    if len(np.unique(idx)) != n or idx.min() < 0 or idx.max() >= M:
        raise DataError("ppi_mean: labelled positions must be distinct positions of the pool", field="labelled")
    if not np.all(np.isfinite(f)) or not np.all(np.isfinite(y)):
        raise DataError("ppi_mean: labels and predictions must be finite numbers (no NaN)", field="predictions")
    if not 0 < level < 1:
        raise ParameterError(f"ppi_mean: level must be in (0, 1), got {level}", field="level")
    fl = f[idx]
    F = float(f.mean())
    if lam == "tuned" and cross_fit and n >= 4:
        half = np.arange(n) % 2 == 0  # the labels' own (random) order splits them in two halves
        parts = []
        for k in (half, ~half):
            lk = _tuned_lam(y[~k], fl[~k], clip)  # weight from the other half
            parts.append((lk, y[k] - lk * fl[k]))
        resid = np.concatenate([r for _, r in parts])
        lam_used = float(np.mean([lk for lk, _ in parts]))
        centre = float(sum(lk * F * k_len for (lk, _), k_len in zip(parts, (half.sum(), (~half).sum()))) / n)
        est = centre + float(resid.mean())
    else:
        lam_used = _tuned_lam(y, fl, clip) if lam == "tuned" else float(lam)
        if lam != "tuned" and not 0 <= lam_used <= 1:
            raise ParameterError(f"ppi_mean: lam must be in [0, 1] or 'tuned', got {lam!r}", field="lam")
        resid = y - lam_used * fl
        est = lam_used * F + float(resid.mean())
    se = float(np.sqrt(max(0.0, 1.0 - n / M) * np.var(resid, ddof=1) / n))
    from scipy.stats import norm  # here: importing scipy.stats takes a second, and the CLI's start-up imports this module

    z = float(norm.ppf(0.5 + level / 2))
    return PPIEstimate(estimate=est, low=est - z * se, high=est + z * se, lam=lam_used, n=n, pool=M, level=level,
                       se=se)


def cross_ppi_mean(y, labelled, fit_predict, pool: int, *, folds: int = 2, level: float = 0.95) -> PPIEstimate:
    """Prediction-powered estimate when the predictions are themselves fitted on the labels (a
    calibration of a metric, say): cross-prediction-powered inference (Zrnic & Candes, PNAS 2024).
    The labels are split into ``folds`` parts in their (random) order; ``fit_predict(items, values)``
    fitted on all parts but ``k`` predicts every pool item, ``f_k``; the estimate averages
    ``lam * mean(f_k) + mean_{part k}(y - lam f_k)`` over the parts, so no label is predicted by a
    fit that saw it. ``lam`` is tuned on the pooled out-of-part pairs (PPI++), the interval is the
    normal one from the out-of-part residuals.
    """
    y = np.asarray(y, dtype=float)
    idx = np.asarray(labelled, dtype=int)
    n = len(y)
    if n < 2 * folds:
        raise DataError(f"cross_ppi_mean: need at least {2 * folds} labels for {folds} folds, got {n}", field="y")
    part = np.arange(n) % folds
    preds = [np.asarray(fit_predict(idx[part != k], y[part != k]), dtype=float) for k in range(folds)]
    f_oof = np.empty(n)
    for k in range(folds):
        f_oof[part == k] = preds[k][idx[part == k]]
    lam = _tuned_lam(y, f_oof)
    centre = float(np.mean([preds[k].mean() * (part == k).sum() for k in range(folds)]) * folds / n)
    resid = y - lam * f_oof
    est = lam * centre + float(resid.mean())
    se = float(np.sqrt(max(0.0, 1.0 - n / pool) * np.var(resid, ddof=1) / n))
    from scipy.stats import norm  # here: importing scipy.stats takes a second, and the CLI's start-up imports this module

    z = float(norm.ppf(0.5 + level / 2))
    return PPIEstimate(estimate=est, low=est - z * se, high=est + z * se, lam=lam, n=n, pool=pool, level=level, se=se)


def regression_means(Y, labelled, F, *, level: float = 0.95, resamples: int = 2000, seed: int = 0
                     ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Every system's pool mean from labels on some items and a proxy on all: the regression
    estimator ``lam_j mean_all F_j + mean_lab (Y_j - lam_j F_j)`` with ``lam_j`` the labels' slope
    of ``Y_j`` on ``F_j`` (any sign and scale: a raw metric), and its studentized bootstrap
    interval, the slope re-estimated in every resample (so its own noise is in the interval).

    ``Y``: labels (n x S) of the items at positions ``labelled``; ``F``: the proxy for every pool
    item (M x S). Returns (estimates, low, high, slopes). Vectorised: weighted moments of one
    multinomial weight matrix per chunk of resamples. The assumption: the labelled items are a
    uniform random sample of the pool.
    """
    Y = np.asarray(Y, dtype=float)
    F = np.asarray(F, dtype=float)
    idx = np.asarray(labelled, dtype=int)
    n = Y.shape[0]
    if Y.ndim != 2 or F.ndim != 2 or Y.shape[1] != F.shape[1] or len(idx) != n or n < 3:
        raise DataError(f"regression_means: need labels n x S (n >= 3) and a proxy M x S for the same systems, got "
                        f"{Y.shape} and {F.shape}", field="labelled")
    if not (np.isfinite(Y).all() and np.isfinite(F).all()):
        raise DataError("regression_means: labels and proxy must be finite (no NaN)", field="predictions")
    Fl = F[idx]
    Fbar = F.mean(axis=0)

    def fit(w):  # weighted moments -> (estimate, residual variance, slope) per row of weights (k x n) and system
        sw = w.sum(axis=1, keepdims=True)
        my, mf = (w @ Y) / sw, (w @ Fl) / sw
        vyy = (w @ (Y * Y)) / sw - my ** 2
        vff = (w @ (Fl * Fl)) / sw - mf ** 2
        vyf = (w @ (Y * Fl)) / sw - my * mf
        lam = np.where(vff > 1e-12, vyf / np.where(vff > 1e-12, vff, 1.0), 0.0)
        est = my + lam * (Fbar - mf)
        resid_var = np.maximum(vyy - 2 * lam * vyf + lam ** 2 * vff, 0.0) * n / (n - 2)
        return est, resid_var, lam

    est, resid_var, lam = (a[0] for a in fit(np.ones((1, n))))
    se = np.sqrt(resid_var / n)
    rng = np.random.default_rng(seed)
    ts = []
    for start in range(0, resamples, 256):
        W = rng.multinomial(n, np.full(n, 1.0 / n), size=min(256, resamples - start)).astype(float)
        e_b, var_b, _ = fit(W)
        ts.append(studentized_t(e_b - est, var_b, resid_var, n))  # no infinite t from a degenerate resample
    t = np.concatenate(ts)
    q = (1 - level) / 2
    low = est - np.quantile(t, 1 - q, axis=0) * se
    high = est - np.quantile(t, q, axis=0) * se
    return est, low, high, lam
