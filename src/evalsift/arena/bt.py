"""Bradley-Terry from battles: the fit, its intervals, simultaneous rank-sets, judges as PPI++.

**The model.** Model ``i`` has strength ``beta_i``; in a battle of ``i`` against ``j`` the first side
wins with probability ``sigma(beta_i - beta_j)``. A tie counts as half a win (the loss is the
logistic loss with target 1/2, as Chatbot Arena and FastChat's ``compute_elo_mle_with_tie`` count it
by duplicating the battle with each side winning once). The strengths are identified up to a shift:
they are reported centred (mean 0) and on the Elo scale, ``1000 + 400 * beta / ln 10``.

**The fit** (:func:`fit_bt`) is Newton's method on the battles aggregated into rows -- one per
(first side, second side, verdict[, judges' verdicts]) with its count -- so a fit costs the same on a
million battles as on a thousand once they are counted, and a bootstrap replicate is a multinomial
redraw of the counts (the same distribution as resampling the battles with replacement). A weak
ridge (``RIDGE`` = 0.01 on the summed loss, a Gaussian prior with variance 100 on each log-strength)
keeps a model that won or lost every battle finite; it moves nothing else measurably (it is scaled
by the mean weight of a battle, so weighted battles get the same prior).

**Covariates** (style control, :mod:`evalsift.arena.style`): a :class:`Covariates` block ``z`` (one
row per battle) joins the design beside the model indicators, ``eta = beta_a - beta_b + z . gamma``, in
the same fit: every function here takes it (``covariates=``) and carries ``theta = (beta, gamma)``
through the Newton fit, the sandwich, the bootstrap, PPI++ and its variance, the bias correction and
the few-battle floor; the fit's ``coef``/``cov`` are the strengths' part, ``gamma``/``gamma_cov`` the
covariates'. Continuous covariates make every battle its own row (no counting), and the win matrix is
then the one at equal style (``z = 0``).

**Small samples** (:func:`shrinkage_prior`, ``--estimator shrunk``; the default below 400 human battles per
model): the strengths as draws from a normal about their mean whose spread the battles choose (empirical
Bayes: the Laplace marginal likelihood, with the verdicts' dispersion -- a tie counts half, so a verdict
varies less than a win-or-loss -- in a quasi-likelihood); the scores are the posterior means
(:func:`_posterior_mean`), the fit's intervals and rank-sets are kept. At a few hundred battles the
maximum-likelihood scores of the models that come out on top sit far above their strengths (the winner's
curse); a posterior mean does not, whatever model is picked, when the prior fits. Collinear covariates are
merged or dropped by :func:`independent_covariates`; the fits refuse them.

**Intervals.** ``sandwich``: ``H^+ M H^+``, ``H`` the Hessian of the summed loss, ``M`` the sum of the
battles' outer score products (robust to a misspecified model; the Moore-Penrose inverse gives the
covariance of the centred strengths); ``bootstrap``: percentile intervals of ``B`` replicates.

**Simultaneous rank-sets** (:func:`rank_sets`): "``i`` is surely above ``j``" when ``d_ij - c * se_ij
> 0``, with one ``c`` for all pairs, the ``1 - alpha`` quantile of the largest standardised deviation
over all pairs (max-|t|: simulated from the normal with the fit's covariance, or read from the
bootstrap replicates), then lowered step by step over the pairs not yet separated (step-down, Mogstad,
Romano, Shaikh & Wilhelm 2024). With probability ``1 - alpha`` no claim is false, and then model
``i``'s rank lies in ``[1 + #{j surely above i}, K - #{j surely below i}]`` for every ``i`` at once,
so the rank-sets cover the true ranks jointly.

**Judges: prediction-powered Bradley-Terry** (:func:`fit_bt_ppi`; PPI++, Angelopoulos, Duchi & Zrnic
2023, for an M-estimator; AutoEval Done Right, Boyeau et al. 2024, for Bradley-Terry). ``n`` battles
have a human verdict ``y``, all ``N`` have each judge's verdict ``f_k``. The estimate minimises

    sum_{labelled} w [l(y) - sum_k lam_k l(f_k)] + sum_k lam_k sum_{all} l(f_k)

whose gradient has the mean of the human-only one for every fixed ``lam``, whatever the judges say:
the judges can cost width, never validity. The logistic loss is linear in its target, so several
judges with weights ``lam_k`` are one judge ``sum_k lam_k f_k`` scaled: stacking is the choice of
``lam``, made to minimise the trace of the asymptotic covariance (a quadratic in ``lam``, solved with
``lam_k >= 0``, ``sum lam_k <= 1``) at a pilot fit on the human verdicts alone. ``w`` is the inverse
of a human battle's draw probability (``N / n`` for a uniform draw of ``n``), so the labelled sum
estimates the sum over all battles. The covariance is ``H^+ V H^+``, ``H`` the Hessian summed over all
battles and ``V = sum_lab w^2 (r - rbar)(r - rbar)^T + sum_all (s - sbar)(s - sbar)^T`` with
``r = (g_y - sum lam_k g_k)`` and ``s = sum lam_k g_k`` (``g``: a battle's score vector). A judge's missing verdicts count as 1/2 (any fixed prediction keeps
the estimate valid). Assumption: the human battles are a uniform random draw from the battles (or
drawn with known probabilities, weighted by their inverse), independent of the verdicts; the
intervals and rank-sets are asymptotic (normal, or bootstrap).

>>> from evalsift.arena.battles import Battles
>>> b = Battles.from_arrays(["X", "Y"], [0, 0, 0, 1], [1, 1, 1, 0], [1.0, 1.0, 0.0, 0.0])
>>> fit = fit_bt(b)          # X first: won, won, lost; then Y first and Y lost: X won 3 of 4
>>> round(float(fit.coef[0] - fit.coef[1]), 3)   # log(3 / 1) = 1.0986, pulled in by the ridge on 4 battles
1.091
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Sequence

import numpy as np

from ..errors import DataError, ParameterError, check_choice
from .battles import Battles

ELO = 400.0 / math.log(10.0)  # log-odds -> Elo points
BASE = 1000.0
RIDGE = 0.01
FEW = 20  # below this many human battles a model's variance is floored (few_battle_floor)
FEW_SIDE = 5  # ... and below this many wins or losses (ties half)
TIES = ("half", "davidson")


@dataclass
class BTFit:
    """A Bradley-Terry fit: centred log-strengths ``coef`` (K), their covariance ``cov`` (K x K, of the
    centred strengths), how it was made (``method``: ``mle`` or ``ppi``; ``lam``: the judges' weights
    for PPI) and the battles it used (``n_human``, ``n_all``)."""

    models: tuple[str, ...]
    coef: np.ndarray
    cov: np.ndarray
    method: str = "mle"
    lam: dict = field(default_factory=dict)
    n_human: int = 0
    n_all: int = 0
    covariates: tuple[str, ...] = ()  # with covariates (style control): their names ...
    gamma: np.ndarray | None = None  # ... coefficients (log-odds per unit of each covariate) ...
    gamma_cov: np.ndarray | None = None  # ... and their covariance (p x p)
    full_cov: np.ndarray | None = None  # with covariates: the covariance of (strengths, coefficients)
    prior: dict | None = None  # a posterior mode: the strengths' prior ({precision, tau, dispersion}: shrinkage_prior)

    def gamma_intervals(self, alpha: float) -> np.ndarray:
        """Normal ``1 - alpha`` intervals of the covariates' coefficients (p x 2)."""
        from scipy.special import ndtri  # the normal quantile (scipy.stats.norm.ppf), without scipy.stats' import

        if self.gamma is None:
            return np.zeros((0, 2))
        z = float(ndtri(1 - alpha / 2))
        se = np.sqrt(np.maximum(np.diag(self.gamma_cov), 0.0))
        return np.column_stack([self.gamma - z * se, self.gamma + z * se])

    @property
    def scores(self) -> np.ndarray:
        """Strengths on the Elo scale (mean 1000)."""
        return BASE + ELO * self.coef

    @property
    def se(self) -> np.ndarray:
        """Standard errors of the centred log-strengths."""
        return np.sqrt(np.maximum(np.diag(self.cov), 0.0))

    def win_matrix(self) -> np.ndarray:
        """``P[i, j]``: the predicted probability that ``i`` beats ``j`` (ties half)."""
        return 1.0 / (1.0 + np.exp(-(self.coef[:, None] - self.coef[None, :])))

    def intervals(self, alpha: float) -> np.ndarray:
        """Per-model ``1 - alpha`` normal intervals of the centred log-strengths (K x 2)."""
        from scipy.special import ndtri  # the normal quantile (scipy.stats.norm.ppf), without scipy.stats' import

        z = float(ndtri(1 - alpha / 2))
        return np.column_stack([self.coef - z * self.se, self.coef + z * self.se])


# ---------------------------------------------------------------------------------------------- rows
@dataclass
class _Rows:
    """Battles counted: unique (a, b, targets...) rows with their counts and weights."""

    a: np.ndarray
    b: np.ndarray
    t: np.ndarray  # rows x columns of targets (column 0: the verdict; then judges)
    count: np.ndarray
    weight: np.ndarray  # per battle of the row (1 / draw probability)
    s: np.ndarray  # the stratum of the row's battles (all 0 for a draw without strata)
    z: np.ndarray | None = None  # rows x p covariates (style control), None without

    def with_counts(self, count: np.ndarray) -> "_Rows":
        return _Rows(self.a, self.b, self.t, count.astype(float), self.weight, self.s, self.z)


@dataclass(frozen=True)
class Covariates:
    """Battle-level covariates beside the model indicators (style control, :mod:`evalsift.arena.style`):
    ``z`` (n x p, one row per battle, in the battles' order; a battle recorded the other way round has
    the row negated), named ``names``. The linear predictor of a battle is ``beta_a - beta_b + z . gamma``."""

    names: tuple[str, ...]
    z: np.ndarray
    note: str = ""

    @property
    def p(self) -> int:
        return len(self.names)

    def take(self, idx) -> np.ndarray:
        """The rows of the battles at positions ``idx``."""
        return self.z[np.asarray(idx, dtype=int)]


def _rows(a: np.ndarray, b: np.ndarray, targets: np.ndarray, weight: np.ndarray | None = None,
          strata: np.ndarray | None = None, z: np.ndarray | None = None) -> _Rows:
    """Aggregate battles into unique rows (vectorised); ``strata``: each battle's stratum (a stratified draw);
    ``z``: each battle's covariates (continuous: every battle is then its own row)."""
    n = len(a)
    w = np.ones(n) if weight is None else np.asarray(weight, float)
    h = np.zeros(n) if strata is None else np.asarray(strata, float)
    if z is not None and np.shape(z)[1] > 0:
        z = np.asarray(z, float)
        if len(z) != n:
            raise ParameterError(f"{len(z)} covariate rows for {n} battles", field="covariates")
        return _Rows(np.asarray(a, int), np.asarray(b, int), np.asarray(targets, float).reshape(n, -1), np.ones(n), w,
                     h.astype(int), z)
    cols = np.column_stack([a.astype(float), b.astype(float), targets, h, w])
    # each column's values coded 0..k-1 (1-D uniques are fast), then one mixed-radix integer key per battle
    key = np.zeros(n, dtype=np.int64)
    radix = 1
    for c in range(cols.shape[1]):
        _, code = np.unique(cols[:, c], return_inverse=True)
        k = int(code.max()) + 1 if n else 1
        if radix * k >= 2 ** 62:  # too many distinct combinations for one integer: the slow general path
            uniq, counts = np.unique(cols, axis=0, return_counts=True)
            break
        key += code.astype(np.int64) * radix
        radix *= k
    else:
        _, first, counts = np.unique(key, return_index=True, return_counts=True)
        uniq = cols[first]
    return _Rows(uniq[:, 0].astype(int), uniq[:, 1].astype(int), uniq[:, 2:-2], counts.astype(float), uniq[:, -1],
                 uniq[:, -2].astype(int))


def _xx(a: np.ndarray, b: np.ndarray, w: np.ndarray, K: int) -> np.ndarray:
    """``sum_r w_r x_r x_r^T`` with ``x = e_a - e_b``."""
    m = np.bincount(a * K + a, w, K * K) + np.bincount(b * K + b, w, K * K)
    m -= np.bincount(a * K + b, w, K * K) + np.bincount(b * K + a, w, K * K)
    return m.reshape(K, K)


def _xv(a: np.ndarray, b: np.ndarray, w: np.ndarray, K: int) -> np.ndarray:
    """``sum_r w_r x_r``."""
    return np.bincount(a, w, K) - np.bincount(b, w, K)


def _gxx(a: np.ndarray, b: np.ndarray, w: np.ndarray, K: int, z: np.ndarray | None = None) -> np.ndarray:
    """``sum_r w_r x_r x_r^T`` with ``x = (e_a - e_b, z_r)`` (``K + p`` square; :func:`_xx` without ``z``)."""
    if z is None:
        return _xx(a, b, w, K)
    p = z.shape[1]
    out = np.empty((K + p, K + p))
    out[:K, :K] = _xx(a, b, w, K)
    C = np.column_stack([_xv(a, b, w * z[:, j], K) for j in range(p)]) if p else np.zeros((K, 0))
    out[:K, K:] = C
    out[K:, :K] = C.T
    out[K:, K:] = z.T @ (z * w[:, None])
    return out


def _gxv(a: np.ndarray, b: np.ndarray, w: np.ndarray, K: int, z: np.ndarray | None = None) -> np.ndarray:
    """``sum_r w_r x_r`` with ``x = (e_a - e_b, z_r)`` (:func:`_xv` without ``z``)."""
    if z is None:
        return _xv(a, b, w, K)
    return np.concatenate([_xv(a, b, w, K), z.T @ w])


def _eta(theta: np.ndarray, a: np.ndarray, b: np.ndarray, z: np.ndarray | None, K: int) -> np.ndarray:
    """The linear predictor ``beta_a - beta_b (+ z . gamma)`` of each row; ``theta = (beta, gamma)``."""
    e = theta[a] - theta[b]
    return e if z is None else e + z @ theta[K:]


def _newton(a, b, W, T, K: int, beta0: np.ndarray | None = None, *, unit: float = 1.0, tol: float = 1e-10,
            max_iter: int = 200, z: np.ndarray | None = None, prior: float | None = None) -> np.ndarray:
    """Minimise ``sum_r [W_r * softplus(eta_r) - T_r * eta_r] + unit * RIDGE/2 |theta|^2`` with
    ``eta_r = beta_a - beta_b`` (plus ``z_r . gamma`` with covariates ``z``; ``theta = (beta, gamma)``):
    the logistic loss of rows with total weight ``W_r`` and weighted target sum ``T_r`` (``unit``: the
    weight of one battle, so the ridge is worth the same whatever the weights' scale). ``prior``: the
    strengths' ridge instead of ``RIDGE`` (a Gaussian prior toward their mean, precision ``prior`` in
    battles: :func:`shrinkage_prior`); the covariates keep ``RIDGE``. Newton steps, each at most 2 in any
    coordinate (a separated start cannot overshoot). Returns ``theta``, ``beta`` centred."""
    from scipy.special import expit

    D = K + (0 if z is None else z.shape[1])
    ridge = np.full(D, RIDGE * unit)
    if prior is not None:
        ridge[:K] = float(prior) * unit
    beta = np.zeros(D) if beta0 is None else beta0.copy()
    for _ in range(max_iter):
        p = expit(_eta(beta, a, b, z, K))
        g = _gxv(a, b, W * p - T, K, z) + ridge * beta
        H = _gxx(a, b, W * p * (1 - p), K, z) + np.diag(ridge)
        step = np.linalg.solve(H, g)
        big = np.max(np.abs(step))
        if big > 2.0:
            step *= 2.0 / big
        beta -= step
        if big < tol:
            break
    beta[:K] -= beta[:K].mean()
    return beta


def _pinv(H: np.ndarray, K: int | None = None) -> np.ndarray:
    """Moore-Penrose inverse of a Hessian whose null space is the constant vector on its first ``K``
    coordinates (the model strengths; the covariates' after them, default none)."""
    D = len(H)
    K = D if K is None else K
    J = np.zeros((D, D))
    J[:K, :K] = 1.0 / K
    try:
        return np.linalg.inv(H + J) - J  # (H + vv^T)^-1 - vv^T, v = (1_K, 0) / sqrt K: exact when H v = 0
    except np.linalg.LinAlgError:  # singular beyond the shift (never for checked designs): the general inverse
        return np.linalg.pinv(H, hermitian=True)


def _check(battles: Battles) -> None:
    if battles.n == 0:
        raise DataError("no battles to fit", field="battles")
    seen = np.zeros(battles.K, bool)
    seen[battles.a] = seen[battles.b] = True
    if not seen.all():
        missing = [m for m, s in zip(battles.models, seen) if not s]
        raise DataError(f"model {missing[0]!r} has no battle ({len(missing)} model(s) without any): a ranking needs "
                        "every model in at least one battle; drop it from the data", field="model")
    # connected comparison graph: otherwise the scores of the parts are not comparable
    parent = list(range(battles.K))

    def find(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    for e in np.unique(battles.a.astype(np.int64) * battles.K + battles.b).tolist():
        parent[find(e // battles.K)] = find(e % battles.K)
    roots = {find(i) for i in range(battles.K)}
    if len(roots) > 1:
        part = [m for i, m in enumerate(battles.models) if find(i) == find(0)]
        raise DataError(f"the battles fall into {len(roots)} groups that never meet (one: {', '.join(part[:5])}): "
                        "their scores cannot be compared; add battles between the groups", field="battles")


# ---------------------------------------------------------------------------------------------- MLE
def _unit(rows: _Rows) -> float:
    """The mean weight of one battle of ``rows``."""
    return float((rows.count * rows.weight).sum() / max(rows.count.sum(), 1.0))


def _fit_rows(rows: _Rows, K: int, beta0=None, prior: float | None = None) -> np.ndarray:
    W = rows.count * rows.weight
    return _newton(rows.a, rows.b, W, W * rows.t[:, 0], K, beta0, unit=_unit(rows), z=rows.z, prior=prior)


# ---------------------------------------------------------------------------------------------- small samples
#: the prior variances (log-odds squared) :func:`shrinkage_prior` weighs: strengths' spreads of 0.03 to 5 log-odds
PRIOR_GRID = np.exp(np.linspace(math.log(1e-3), math.log(25.0), 25))


def _evidence(rows: _Rows, W: np.ndarray, theta: np.ndarray, K: int, t2: float) -> float:
    """The Laplace approximation to the log marginal likelihood of the rows (weights ``W`` per row, already
    divided by the dispersion) under strengths ``N(0, t2)`` about their mean, at the posterior mode ``theta``:
    ``-loss - |beta|^2 / (2 t2) - (K - 1)/2 log t2 - 1/2 log det'(H + prior)``, ``det'`` without the
    strengths' common shift (an eigenvalue ``1 / t2`` of the penalised Hessian, removed exactly)."""
    from scipy.special import expit

    eta = _eta(theta, rows.a, rows.b, rows.z, K)
    pen = np.full(len(theta), RIDGE)
    pen[:K] = 1.0 / t2
    loss = float(np.sum(W * (np.logaddexp(0.0, eta) - rows.t[:, 0] * eta))) + 0.5 * float(np.sum(pen * theta ** 2))
    p = expit(eta)
    _, logdet = np.linalg.slogdet(_gxx(rows.a, rows.b, W * p * (1 - p), K, rows.z) + np.diag(pen))
    return -loss - 0.5 * (K - 1) * math.log(t2) - 0.5 * (logdet + math.log(t2))


def _posterior_mean(a, b, W, K: int, theta: np.ndarray, z, unit: float, prior: float, phi: float) -> np.ndarray:
    """The posterior mean from the posterior mode ``theta`` of the objective ``sum_r W_r [softplus(eta_r) - T_r
    eta_r] + unit prior / 2 |beta|^2`` (covariates: ``RIDGE``) read as ``phi`` times a negative log-posterior
    in battles of weight ``unit``: to second order (Laplace), ``mean = mode - 1/2 A^-1 sum_r w_r p_r (1 - p_r)
    (1 - 2 p_r) x_r (x_r^T A^-1 x_r)``, ``w = W / (unit phi)`` and ``A = sum_r w_r p_r (1 - p_r) x_r x_r^T +
    prior / phi`` the posterior precision. The logistic curve flattens away from 1/2, so the posterior of a
    strong model leans up: its mean sits above its mode. The mean, not the mode, is what a model picked
    for its high score is worth on average under the prior (the winner's curse cancels for posterior
    means, whatever the pick)."""
    from scipy.special import expit

    w = np.asarray(W, float) / (unit * phi)
    eta = _eta(theta, a, b, z, K)
    p = expit(eta)
    D = len(theta)
    pen = np.full(D, RIDGE / phi)
    pen[:K] = prior / phi
    A = _gxx(a, b, w * p * (1 - p), K, z) + np.diag(pen)
    Ai = np.linalg.inv(A)
    X = np.zeros((len(a), D))
    X[np.arange(len(a)), a] += 1.0
    X[np.arange(len(a)), b] -= 1.0
    if z is not None:
        X[:, K:] = z
    q = np.einsum("ij,jk,ik->i", X, Ai, X)
    shift = -0.5 * Ai @ (X.T @ (w * p * (1 - p) * (1 - 2 * p) * q))
    out = theta + shift
    out[:K] -= out[:K].mean()
    return out


def shrinkage_prior(rows: _Rows, K: int, *, rounds: int = 4) -> dict:
    """The empirical-Bayes prior of the small-sample estimator (``--estimator shrunk``): the strengths as
    draws from ``N(mean, tau^2)``, ``tau^2`` the one under which the human verdicts are likeliest (the
    Laplace approximation to the marginal likelihood, :func:`_evidence`, maximised over
    :data:`PRIOR_GRID` and refined by a parabola through the best three), with the verdicts'
    *dispersion* ``phi`` taken into account: a tie counts half, so a verdict varies less than the
    ``p (1 - p)`` of a win-or-loss (Chatbot Arena's ties, 30% of its battles, give ``phi`` about 0.65),
    and the quasi-likelihood divides the log-likelihood by ``phi``. A verdict ``y`` in [0, 1] with mean
    ``p`` has variance ``p (1 - p) - E[y (1 - y)]`` exactly (a tie: ``y (1 - y) = 1/4``), so ``phi = 1 -
    sum w y (1 - y) / sum w p (1 - p)``: the numerator is read off the verdicts (0 without ties, whatever
    the fit), only the denominator needs the fit; kept in ``[0.05, 1]``. ``phi`` and ``tau^2`` are found
    in turn until ``phi`` settles (``rounds`` at most). Each draw counts with its weight scaled to
    average one (draws with unequal probabilities).

    Returns ``{"precision", "tau", "dispersion"}``: ``precision = phi / tau^2`` is the ridge on the
    strengths (per battle) that makes the maximum-likelihood fit the posterior mode
    (:func:`_newton`'s ``prior``); :func:`_posterior_mean` moves the mode to the posterior mean.

    >>> from evalsift.arena.battles import Battles
    >>> rng = np.random.default_rng(0)
    >>> beta = np.linspace(-1, 1, 8)                        # a spread of 0.65 log-odds
    >>> a = rng.integers(8, size=4000); b = (a + rng.integers(1, 8, size=4000)) % 8
    >>> y = (rng.random(4000) < 1 / (1 + np.exp(beta[b] - beta[a]))).astype(float)
    >>> pr = shrinkage_prior(_rows(a, b, y[:, None]), 8)
    >>> 0.45 < pr["tau"] < 0.95, pr["dispersion"] > 0.9   # no ties: phi near 1
    (True, True)
    """
    from scipy.special import expit

    W0 = rows.count * rows.weight / _unit(rows)  # per battle, the weights averaging one
    y = rows.t[:, 0]
    phi, t2 = 1.0, 1.0
    G = len(PRIOR_GRID)
    window = range(G)  # the first round weighs the whole grid; later ones the neighbourhood of its best
    for r in range(rounds):
        W = W0 / phi
        vals, fits, theta = {}, {}, None
        for k in window:  # warm starts, from the strongest pull to the weakest
            theta = _newton(rows.a, rows.b, W, W * y, K, theta, z=rows.z, prior=1.0 / PRIOR_GRID[k], tol=1e-8)
            vals[k], fits[k] = _evidence(rows, W, theta, K, PRIOR_GRID[k]), theta
        k = max(vals, key=vals.get)
        lt = math.log(PRIOR_GRID[k])
        if k - 1 in vals and k + 1 in vals:  # the parabola through the best three (equal steps in log tau^2)
            lo, mid, hi = vals[k - 1], vals[k], vals[k + 1]
            curv = lo - 2 * mid + hi
            if curv < 0:
                lt += math.log(PRIOR_GRID[1] / PRIOR_GRID[0]) * min(max(0.5 * (lo - hi) / curv, -1.0), 1.0)
        t2 = math.exp(lt)
        window = range(max(k - 3, 0), min(k + 4, G))
        theta = _newton(rows.a, rows.b, W, W * y, K, fits[k], z=rows.z, prior=1.0 / t2)
        p = expit(_eta(theta, rows.a, rows.b, rows.z, K))
        new = min(max(1.0 - float(np.sum(W0 * y * (1 - y))) / max(float(np.sum(W0 * p * (1 - p))), 1e-300), 0.05), 1.0)
        if abs(new - phi) < 1e-3 or r == rounds - 1:  # settled (tau^2 is the one fitted at this phi)
            break
        phi = new
    return {"precision": phi / t2, "tau": math.sqrt(t2), "dispersion": phi}


def _sandwich(rows: _Rows, beta: np.ndarray, K: int) -> np.ndarray:
    from scipy.special import expit

    p = expit(_eta(beta, rows.a, rows.b, rows.z, K))
    W = rows.count * rows.weight
    H = _gxx(rows.a, rows.b, W * p * (1 - p), K, rows.z)
    M = _gxx(rows.a, rows.b, rows.count * rows.weight ** 2 * (rows.t[:, 0] - p) ** 2, K, rows.z)
    Hi = _pinv(H, K)
    return Hi @ M @ Hi


def _split(models, theta: np.ndarray, cov: np.ndarray, K: int, covariates, **kw) -> BTFit:
    """A BTFit from the full parameter ``theta = (beta, gamma)`` and its covariance."""
    if covariates is None:
        return BTFit(models, theta, cov, **kw)
    return BTFit(models, theta[:K], cov[:K, :K], covariates=tuple(covariates.names), gamma=theta[K:].copy(),
                 gamma_cov=cov[K:, K:].copy(), full_cov=cov, **kw)


def _check_covariates(covariates, n: int, ties: str = "half", a=None, b=None, K: int = 0, at=None) -> None:
    """Covariates that fit: ties half, one row per battle, and (given the fitted battles' ``a``, ``b`` and their
    positions ``at``) none that is a combination of the models and the others (:func:`independent_covariates`
    says which and merges or drops them)."""
    if covariates is None:
        return
    if ties != "half":
        raise ParameterError("style control (covariates) fits the Bradley-Terry model with a tie as half a win: use "
                             "--ties half with --style-control, or leave --style-control out for --ties davidson",
                             field="ties")
    if covariates.z.shape != (n, covariates.p):
        raise ParameterError(f"covariates: {covariates.z.shape} for {n} battles and {covariates.p} names",
                             field="covariates")
    if a is not None:
        plan = _dependence(covariates, a, b, K, at)
        bad = [covariates.names[j] for j, (how, _) in enumerate(plan) if how != "keep"]
        if bad:
            raise ParameterError(f"covariates {', '.join(bad)} cannot be told apart from the models' strengths and the "
                                 "other covariates in these battles (a combination of them in every battle): merge or "
                                 "drop them first, as evalsift.arena.bt.independent_covariates does (the leaderboard "
                                 "does it for you, with a note)", field="covariates")


#: a covariate whose variation left after the models and the covariates before it is below this share of its own
#: is collinear with them (its coefficient's variance would be over a million times an independent one's)
COLLINEAR = 1e-6


def _dependence(covariates: Covariates, a, b, K: int, at=None) -> list[tuple[str, int | None]]:
    """Per covariate, in order: ``("keep", None)``; ``("merge", k)``: the same as covariate ``k`` (kept) up to a
    factor in every battle; ``("models", None)``: fixed by which two models meet; ``("combination", None)``: a
    combination of the models and the covariates kept before it; ``("flat", None)``: zero in every battle. On
    the battles at positions ``at`` (default all) with model indices ``a``, ``b``."""
    z = covariates.z if at is None else covariates.take(at)
    a, b = np.asarray(a, int), np.asarray(b, int)
    G = _gxx(a, b, np.ones(len(a)), K, z)
    out: list[tuple[str, int | None]] = []
    kept: list[int] = []

    def left(j: int, among: list[int]) -> float:
        """The share of covariate ``j``'s sum of squares not explained by the models and covariates ``among``."""
        A = list(range(K)) + [K + k for k in among]
        g = G[A, K + j]
        return float((G[K + j, K + j] - g @ _pinv(G[np.ix_(A, A)], K) @ g) / G[K + j, K + j])

    for j in range(covariates.p):
        if G[K + j, K + j] <= 0:
            out.append(("flat", None))
            continue
        if left(j, kept) > COLLINEAR:
            kept.append(j)
            out.append(("keep", None))
            continue
        same = [k for k in kept if abs(G[K + j, K + k]) >= (1 - 1e-9) * math.sqrt(G[K + j, K + j] * G[K + k, K + k])]
        out.append(("merge", same[0]) if same else ("models", None) if left(j, []) <= COLLINEAR else
                   ("combination", None))
    return out


def independent_covariates(covariates: Covariates, a, b, K: int, at=None) -> tuple[Covariates, str | None]:
    """``covariates`` with those that cannot be told apart merged or dropped, and one sentence saying which
    and why (None when all are independent). On the battles at positions ``at`` (default all), whose model
    indices are ``a`` and ``b``: a covariate that is a multiple of one kept before it in every battle (one
    model writes headers, bold and lists together, as many of each) is *merged* into it -- one column named
    ``headers+bold+lists`` whose coefficient is their joint effect; one fixed by which two models meet (only
    one model writes it, always alike) or a combination of the models and the covariates kept before it is
    *dropped*: its effect is already in the models' strengths, and no fit can separate them. A DataError
    when none is left. The kept columns are unchanged, so the fit is the one on the covariates kept.

    >>> from evalsift.arena.battles import Battles
    >>> z = np.array([[1.0, 2.0], [-1.0, -2.0], [0.5, 1.0], [0.0, 0.0]])   # the second is twice the first
    >>> cov, why = independent_covariates(Covariates(("headers", "bold"), z), [0, 1, 0, 2], [1, 2, 2, 1], 3)
    >>> cov.names, cov.z.shape
    (('headers+bold',), (4, 1))
    """
    plan = _dependence(covariates, a, b, K, at)
    if all(how == "keep" for how, _ in plan):
        return covariates, None
    names = {j: [covariates.names[j]] for j, (how, _) in enumerate(plan) if how == "keep"}
    for j, (how, k) in enumerate(plan):
        if how == "merge":
            names[k].append(covariates.names[j])
    keep = [j for j, (how, _) in enumerate(plan) if how == "keep"]
    parts = []
    for j in keep:
        if len(names[j]) > 1:
            together = ", ".join(names[j][:-1]) + " and " + names[j][-1]
            parts.append(f"{together} differ in the same proportion in every battle, so their effects cannot be told "
                         f"apart: fitted as one feature, {'+'.join(names[j])}, whose coefficient is their joint effect")
    why = {"models": "fixed by which two models meet (the same for a model in every battle it has), so its effect "
                     "is already in the models' strengths", "flat": "the same for both answers in every battle",
           "combination": "in every battle a combination of the models and the features kept before it, so its "
                          "effect cannot be told apart from theirs"}
    for how in ("models", "combination", "flat"):
        gone = [covariates.names[j] for j, (h, _) in enumerate(plan) if h == how]
        if gone:
            parts.append(f"left out {', '.join(gone)}: {'each is ' if len(gone) > 1 else ''}{why[how]}")
    message = "style features: " + "; ".join(parts)
    if not keep:
        raise DataError(f"--style-control: nothing is left to control for in these battles ({'; '.join(parts)}); "
                        "ask for another feature (length, markdown) or leave --style-control out", field="style_control")
    return Covariates(tuple("+".join(names[j]) for j in keep), covariates.z[:, keep], note=covariates.note), message


def fit_bt(battles: Battles, *, weighted: bool = True, ties: str = "half", covariates: Covariates | None = None) -> BTFit:
    """Bradley-Terry by maximum likelihood on ``battles``, with the sandwich covariance. ``ties``:
    ``half`` (a tie is half a win) or ``davidson`` (the tie-aware model of :func:`fit_davidson`).
    ``weighted``: each battle weighted by ``1 / prob`` (battles drawn with unequal probabilities).

    >>> from evalsift.arena.battles import Battles
    >>> b = Battles.from_arrays(["X", "Y", "Z"], [0, 1, 0, 2], [1, 2, 2, 0], [1.0, 1.0, 0.5, 0.0])
    >>> f = fit_bt(b)
    >>> # X beat Y, Y beat Z, X tied Z and beat it: Z's record mirrors X's, so Y sits at 1000 between them
    >>> [round(s) for s in f.scores]
    [1173, 1000, 827]

    ``covariates`` (:class:`Covariates`, one row per battle): fitted beside the strengths in the same
    logistic model (style control); the fit then also carries their coefficients ``gamma`` and covariance.
    """
    check_choice("ties", ties, TIES, where="arena")
    _check_covariates(covariates, battles.n, ties)
    if ties == "davidson":
        return fit_davidson(battles, weighted=weighted)
    _check(battles)
    _check_covariates(covariates, battles.n, ties, battles.a, battles.b, battles.K)
    rows = _rows(battles.a, battles.b, battles.y[:, None], 1.0 / battles.prob if weighted else None,
                 z=None if covariates is None else covariates.z)
    beta = _fit_rows(rows, battles.K)
    return _split(battles.models, beta, _sandwich(rows, beta, battles.K), battles.K, covariates, method="mle",
                  n_human=battles.n, n_all=battles.n)


def _davidson_terms(rows: _Rows, beta: np.ndarray, theta: float):
    """Per row: ``u = (beta_a - beta_b) / 2``, the probabilities of a win, a loss and a tie, and the
    row's score in ``u`` and in ``theta = log nu``."""
    u = (beta[rows.a] - beta[rows.b]) / 2
    m = np.maximum(np.abs(u), theta)  # stabilised: every term divided by exp(m)
    e1, e0, et = np.exp(u - m), np.exp(-u - m), np.exp(theta - m)
    D = e1 + e0 + et
    p1, p0, pt = e1 / D, e0 / D, et / D
    y = rows.t[:, 0]
    s_u = (y == 1.0).astype(float) - (y == 0.0) - (p1 - p0)
    s_t = (y == 0.5).astype(float) - pt
    return p1, p0, pt, s_u, s_t


def fit_davidson(battles: Battles, *, weighted: bool = True, tol: float = 1e-10, max_iter: int = 200) -> BTFit:
    """The tie-aware Bradley-Terry of Davidson (1970): in a battle of ``i`` and ``j``, with
    ``u = (beta_i - beta_j) / 2``, ``P(i wins) = e^u / D``, ``P(j wins) = e^-u / D`` and
    ``P(tie) = nu / D``, ``D = e^u + e^-u + nu``; one tie propensity ``nu`` for all pairs. Among
    decisive battles ``i`` beats ``j`` with probability ``sigma(beta_i - beta_j)``, so the strengths
    read as Bradley-Terry's. Newton's method on ``(beta, log nu)``, the same ridge on ``beta``; the
    sandwich covariance of the centred strengths. The fit's ``lam`` holds ``{"tie_propensity": nu}``.

    >>> from evalsift.arena.battles import Battles
    >>> b = Battles.from_arrays(["X", "Y"], [0] * 6, [1] * 6, [1.0, 1.0, 1.0, 0.0, 0.5, 0.5])
    >>> f = fit_davidson(b)
    >>> # 3 wins, 1 loss, 2 ties of 6: P = 1/2, 1/6, 1/3, so e^(2u) = 3 and beta_X - beta_Y = log 3 = 1.099
    >>> # (less the ridge's pull); nu = P(tie) * D = (1/3) * e^u / (1/2) = (2/3) * sqrt(3) = 1.155
    >>> round(float(f.coef[0] - f.coef[1]), 2), round(f.lam["tie_propensity"], 2)
    (1.09, 1.15)
    """
    _check(battles)
    K = battles.K
    rows = _rows(battles.a, battles.b, battles.y[:, None], 1.0 / battles.prob if weighted else None)
    W = rows.count * rows.weight
    ridge = RIDGE * _unit(rows)
    ties = float(W[rows.t[:, 0] == 0.5].sum())
    theta = math.log(max(ties, 0.5) / max(W.sum() - ties, 0.5) * 2.0)  # at u = 0, nu / 2 = ties / decisive
    beta = np.zeros(K)
    X = np.zeros((len(W), K))
    X[np.arange(len(W)), rows.a] += 0.5
    X[np.arange(len(W)), rows.b] -= 0.5
    for _ in range(max_iter):
        p1, p0, pt, s_u, s_t = _davidson_terms(rows, beta, theta)
        g = np.concatenate([-(X.T @ (W * s_u)) + ridge * beta, [-(W * s_t).sum()]])
        # the negative log-likelihood's Hessian: Var of the sufficient statistics (1{win} - 1{loss}, 1{tie})
        v_uu = p1 + p0 - (p1 - p0) ** 2
        v_ut = -(p1 - p0) * pt
        v_tt = pt * (1 - pt)
        H = np.zeros((K + 1, K + 1))
        H[:K, :K] = X.T @ (X * (W * v_uu)[:, None]) + ridge * np.eye(K)
        H[:K, K] = H[K, :K] = X.T @ (W * v_ut)
        H[K, K] = (W * v_tt).sum()
        step = np.linalg.solve(H, g)
        big = np.max(np.abs(step))
        if big > 2.0:
            step *= 2.0 / big
        beta -= step[:K]
        theta -= step[K]
        if big < tol:
            break
    beta -= beta.mean()
    p1, p0, pt, s_u, s_t = _davidson_terms(rows, beta, theta)
    scores = np.column_stack([X * s_u[:, None], s_t])
    M = scores.T @ (scores * (rows.count * rows.weight ** 2)[:, None])
    H[:K, :K] -= ridge * np.eye(K)
    Hi = np.linalg.pinv(H, hermitian=True)
    cov = (Hi @ M @ Hi)[:K, :K]
    C = np.eye(K) - 1.0 / K
    return BTFit(battles.models, beta, C @ cov @ C, "davidson", {"tie_propensity": math.exp(theta)}, battles.n,
                 battles.n)


def bootstrap_bt(battles: Battles, B: int = 1000, *, seed: int = 0, weighted: bool = True,
                 covariates: Covariates | None = None) -> np.ndarray:
    """``B`` bootstrap replicates of the centred log-strengths (``B x K``): the battles resampled with
    replacement (a multinomial redraw of the counted rows), each refitted from the full fit. With
    ``covariates``: ``B x (K + p)``, the covariates' coefficients after the strengths."""
    _check(battles)
    _check_covariates(covariates, battles.n, "half", battles.a, battles.b, battles.K)
    rows = _rows(battles.a, battles.b, battles.y[:, None], 1.0 / battles.prob if weighted else None,
                 z=None if covariates is None else covariates.z)
    return _redraws(rows, battles.K, B, np.random.default_rng(seed))


def _resampler(rows: _Rows):
    """A function of ``rng`` giving new counts for ``rows``: the battles resampled with replacement, within
    each stratum of ``rows.s`` (as many as it had), in one multinomial call (strata padded to one length)."""
    order = np.argsort(rows.s, kind="stable")
    strata, start, size = np.unique(rows.s[order], return_index=True, return_counts=True)
    L, width = len(strata), int(size.max())
    slot = np.arange(len(order)) - np.repeat(start, size)  # each row's place within its stratum
    P = np.zeros((L, width))
    P[np.repeat(np.arange(L), size), slot] = rows.count[order]
    n = P.sum(axis=1)
    P /= n[:, None]
    stratum_of = np.repeat(np.arange(L), size)

    def redraw(rng) -> np.ndarray:
        counts = np.empty(len(order))
        counts[order] = rng.multinomial(n.astype(np.int64), P)[stratum_of, slot]
        return counts

    return redraw


def _redraws(rows: _Rows, K: int, B: int, rng) -> np.ndarray:
    """``B`` maximum-likelihood refits of ``rows`` resampled with replacement (within strata), each from
    the full fit."""
    beta = _fit_rows(rows, K)
    redraw = _resampler(rows)
    out = np.empty((B, len(beta)))
    for r in range(B):
        out[r] = _fit_rows(rows.with_counts(redraw(rng)), K, beta)
    return out


# ---------------------------------------------------------------------------------------------- PPI++
def _hessian(rows: _Rows, beta: np.ndarray, K: int) -> np.ndarray:
    """The summed Hessian of the rows' weighted logistic loss at ``beta``."""
    from scipy.special import expit

    p = expit(_eta(beta, rows.a, rows.b, rows.z, K))
    return _gxx(rows.a, rows.b, rows.count * rows.weight * p * (1 - p), K, rows.z)


def _moments(rows: _Rows, beta: np.ndarray, K: int):
    """Per target column u: the score vectors ``g_u = (p - u) x``; returns ``(H, S)`` with
    ``S[u][v] = sum_r c_r w_r^2 (p - u)(p - v) x x^T - (1/n) m_u m_v^T`` (the centred cross-products,
    summed) and ``H`` the summed Hessian."""
    from scipy.special import expit

    p = expit(_eta(beta, rows.a, rows.b, rows.z, K))
    c, w = rows.count, rows.weight
    n = c.sum()
    H = _hessian(rows, beta, K)
    cols = rows.t.shape[1]
    r = p[:, None] - rows.t  # rows x cols
    m = [_gxv(rows.a, rows.b, c * w * r[:, u], K, rows.z) for u in range(cols)]
    S = [[_gxx(rows.a, rows.b, c * w * w * r[:, u] * r[:, v], K, rows.z) - np.outer(m[u], m[v]) / n for v in range(cols)]
         for u in range(cols)]
    return H, S


def _strata_moments(rows: _Rows, beta: np.ndarray, K: int):
    """The moments of a stratified draw (``rows.s``; each battle of stratum ``h`` weighted ``N_h / n_h``).
    Per pair of target columns, with ``A_h`` the sample covariance of the score vectors within stratum
    ``h``: ``W[u][v] = sum_h N_h^2 / n_h (1 - n_h / N_h) A_h[u][v]``, the sampling variance of the weighted
    sums over the draws (with the finite-population correction), and ``P[u][v] = sum_h N_h A_h[u][v] +
    sum_h N_h (gbar_h - gbar)(gbar_h - gbar)^T``, the battles' own spread -- how a sum over all the battles
    varies with the process that made them, which a target beyond these battles (true strengths) adds.
    A stratum of one battle is taken whole. Returns ``(H, W, P)``, ``H`` the summed Hessian."""
    from scipy.special import expit

    p = expit(_eta(beta, rows.a, rows.b, rows.z, K))
    c, w = rows.count, rows.weight
    H = _hessian(rows, beta, K)
    cols = rows.t.shape[1]
    r = p[:, None] - rows.t
    h = rows.s
    nh = np.bincount(h, c)
    L = len(nh)
    Nh = np.maximum(np.bincount(h, c * w, L), 1e-300)  # each stratum's size, estimated (exact for N_h / n_h weights)
    f = np.where(nh > 1, nh / np.maximum(nh - 1, 1), 0.0)  # n_h / (n_h - 1); 0 for a stratum of one
    share = np.minimum(nh / Nh, 1.0)  # the sampling fraction n_h / N_h
    m = [(np.bincount(h * K + rows.a, c * w * r[:, u], L * K) - np.bincount(h * K + rows.b, c * w * r[:, u], L * K))
         .reshape(L, K) for u in range(cols)]
    if rows.z is not None:  # the covariates' score components, per stratum
        m = [np.column_stack([mu] + [np.bincount(h, c * w * r[:, u] * rows.z[:, j], L) for j in range(rows.z.shape[1])])
             for u, mu in enumerate(m)]
    total = [mu.sum(axis=0) for mu in m]

    def within(scale: np.ndarray, u: int, v: int) -> np.ndarray:
        """``sum_h scale_h n_h / (n_h - 1) [sum_i w^2 g_u g_v^T - m_u m_v^T / n_h]``."""
        k = scale * f
        return (_gxx(rows.a, rows.b, k[h] * c * w * w * r[:, u] * r[:, v], K, rows.z)
                - m[u].T @ (m[v] * (k / np.maximum(nh, 1))[:, None]))

    W = [[within(1.0 - share, u, v) for v in range(cols)] for u in range(cols)]
    P = [[within(share, u, v) + m[u].T @ (m[v] / Nh[:, None]) - np.outer(total[u], total[v]) / Nh.sum()
          for v in range(cols)] for u in range(cols)]
    return H, W, P


def _ppi_parts(lab: _Rows, all_rows: _Rows, beta: np.ndarray, K: int, stratified: bool):
    """The pieces of the PPI variance, ``V(lam) = base + L[0][0] - sum_i lam_i (L[0][i] + L[i][0]) +
    sum_ij lam_i lam_j (L[i][j] + J[i][j])`` (target columns: 0 the people, i >= 1 the judges), and ``H^+``
    of the Hessian over all battles. Without strata ``L`` is the human draws' moments and ``J`` the
    judges' part over all battles (``base`` 0). With strata (:func:`_strata_moments`) ``L`` is the
    sampling variance of the stratified sums and ``base`` the people's scores' own spread over the battles;
    the judges' verdicts are known on every battle, so there is no ``J`` (None). Returns ``(Hi, L, J, base)``."""
    if stratified:
        _, L, P = _strata_moments(lab, beta, K)
        return _pinv(_hessian(all_rows, beta, K), K), L, None, P[0][0]
    H_all, J = _moments(all_rows, beta, K)
    return _pinv(H_all, K), _moments(lab, beta, K)[1], J, np.zeros((len(beta), len(beta)))


def _ppi_lam(lab: _Rows, all_rows: _Rows, beta: np.ndarray, K: int, stratified: bool = False) -> np.ndarray:
    """The judges' weights minimising the trace of the PPI covariance (a quadratic in lam, :func:`_ppi_parts`),
    with ``lam >= 0`` and ``sum lam <= 1``."""
    from scipy.optimize import minimize

    Hi, S_lab, J, _ = _ppi_parts(lab, all_rows, beta, K, stratified)
    k = lab.t.shape[1] - 1
    tr = lambda A: float(np.trace((Hi @ A @ Hi)[:K, :K]))  # noqa: E731  (the strengths' variances)
    b = np.array([tr(S_lab[0][j + 1]) for j in range(k)])
    C = np.array([[tr(S_lab[i + 1][j + 1]) + (tr(J[i][j]) if J else 0.0) for j in range(k)] for i in range(k)])
    scale = max(float(np.abs(C).max()), 1e-300)
    b, C = b / scale, C / scale
    res = minimize(lambda x: -2 * x @ b + x @ C @ x, np.full(k, 0.5 / k), jac=lambda x: -2 * b + 2 * C @ x,
                   bounds=[(0.0, 1.0)] * k, constraints=[{"type": "ineq", "fun": lambda x: 1.0 - x.sum()}],
                   method="SLSQP")
    return np.clip(res.x, 0.0, 1.0)


def _ppi_fit(lab: _Rows, all_rows: _Rows, lam: np.ndarray, K: int, beta0=None, prior: float | None = None) -> np.ndarray:
    """Minimise the PPI objective (module doc) for fixed ``lam``: the human battles weighted by the
    inverse of their draw probability, so their part estimates the sum over all battles (``prior``: the
    strengths' ridge per human battle, :func:`_newton`)."""
    L = float(lam.sum())
    f_lab = lab.t[:, 1:] @ lam  # sum_k lam_k f_k per row
    f_all = all_rows.t @ lam
    W = np.concatenate([lab.count * lab.weight * (1.0 - L), all_rows.count * L])
    T = np.concatenate([lab.count * lab.weight * (lab.t[:, 0] - f_lab), all_rows.count * f_all])
    z = None if lab.z is None else np.concatenate([lab.z, all_rows.z])
    return _newton(np.concatenate([lab.a, all_rows.a]), np.concatenate([lab.b, all_rows.b]), W, T, K, beta0,
                   unit=_unit(lab), z=z, prior=prior)


def _ppi_cov(lab: _Rows, all_rows: _Rows, lam: np.ndarray, beta: np.ndarray, K: int,
             stratified: bool = False) -> np.ndarray:
    """The PPI covariance ``H^+ V(lam) H^+`` (:func:`_ppi_parts`)."""
    Hi, S_lab, J, base = _ppi_parts(lab, all_rows, beta, K, stratified)
    V = base + S_lab[0][0]
    for i in range(len(lam)):
        V = V - lam[i] * (S_lab[0][i + 1] + S_lab[i + 1][0])
        for j in range(len(lam)):
            V = V + lam[i] * lam[j] * (S_lab[i + 1][j + 1] + (J[i][j] if J else 0.0))
    return Hi @ V @ Hi


def curvature_bias(battles: Battles, coef: np.ndarray, cov: np.ndarray, *, covariates: Covariates | None = None,
                   gamma: np.ndarray | None = None, full_cov: np.ndarray | None = None) -> np.ndarray:
    """The first-order (``O(1/n)``) bias of a Bradley-Terry fit ``coef`` whose sampling covariance is
    ``cov``: the part the logistic curve's curvature adds, which spreads the scores out.

    Expanding the estimating equation ``sum_r c_r x_r (t_r - p_r) = 0`` to second order around the
    target gives ``E[beta_hat - beta] ~ -1/2 H^+ sum_r c_r p_r'' x_r (x_r^T V x_r)``, with
    ``p'' = p (1 - p) (1 - 2 p)``, ``H = sum_r c_r p_r (1 - p_r) x_r x_r^T`` and ``V`` the covariance
    (Cox & Snell 1968; for generalised linear models Cordeiro & McCullagh 1991, whose logistic case
    is the ``(p - 1/2) h`` term that Firth's penalty removes). A weighted draw's coefficients
    ``c_r`` (human weights, PPI's ``1 - lam`` and ``lam``) average to one per battle, so ``H`` and the
    sum are taken over every battle of ``battles`` (known whether or not a person judged it), which
    is the draw's expectation and has no sampling noise. Plugging in the fit and its own covariance
    leaves an ``O(1/n^2)`` error. Returns the bias vector (log-strength units, sums to 0).

    >>> from evalsift.arena.battles import Battles
    >>> b = Battles.from_arrays(["X", "Y"], [0] * 8, [1] * 8, [1.0] * 6 + [0.0] * 2)
    >>> f = fit_bt(b)       # X won 6 of 8: the fit's difference is pushed away from 0
    >>> bias = curvature_bias(b, f.coef, f.cov)
    >>> bool(bias[0] > 0 > bias[1])
    True
    """
    from scipy.special import expit

    K = battles.K
    if covariates is not None:  # every battle its own row, x = (e_a - e_b, z); the bias of the strengths
        z = covariates.z
        theta = np.concatenate([coef, gamma])
        a, b = battles.a, battles.b
        p = expit(_eta(theta, a, b, z, K))
        X = np.zeros((battles.n, K + z.shape[1]))
        X[np.arange(battles.n), a] += 1.0
        X[np.arange(battles.n), b] -= 1.0
        X[:, K:] = z
        q = np.einsum("ij,jk,ik->i", X, full_cov, X)
        H = _gxx(a, b, p * (1 - p), K, z)
        out = -0.5 * _pinv(H, K) @ _gxv(a, b, p * (1 - p) * (1 - 2 * p) * q, K, z)
        return out[:K] - out[:K].mean()
    key, count = np.unique(battles.a.astype(np.int64) * K + battles.b, return_counts=True)
    a, b = key // K, key % K
    p = expit(coef[a] - coef[b])
    q = cov[a, a] + cov[b, b] - 2.0 * cov[a, b]  # the variance of each pair's difference
    H = _xx(a, b, count * p * (1 - p), K)
    return -0.5 * _pinv(H) @ _xv(a, b, count * p * (1 - p) * (1 - 2 * p) * q, K)


def few_battle_floor(battles: Battles, labelled: np.ndarray, coef: np.ndarray, cov: np.ndarray, *,
                     prob: np.ndarray | None = None, few: int | None = None, verdicts: np.ndarray | None = None,
                     side: int | None = None, covariates: Covariates | None = None, gamma: np.ndarray | None = None):
    """Floor the variance of every model with fewer than ``few`` (default :data:`FEW`) human battles at
    its model-based variance, so that a model with few battles -- above all one that won or lost all of
    them -- gets the wide interval its record allows; and centre the scale on the other models.

    Why: the robust (sandwich) variance estimates each battle's variance by its squared residual
    ``(y - p)^2``. With a handful of battles that estimate is itself noisy, and when a model won every
    battle the fit pushes ``p`` towards 1 and the residuals vanish: the interval *narrows* the more
    battles it wins (3 wins: a 300-Elo interval; issue 30). The model-based variance uses Bradley-Terry's
    own ``p (1 - p)`` instead, which stays large exactly there. For each such model ``i`` the extra
    variance ``e_i = max(0, F_ii - cov_ii)`` is added as independent noise on its strength (``F = H^+ M
    H^+`` over the human draws, ``M`` with ``w^2 p (1 - p)`` for ``w^2 (y - p)^2``): the covariance stays
    positive semi-definite, and every comparison with ``i`` widens by ``e_i``.

    The scale: the strengths are then centred on the mean of the models with ``few`` or more battles
    (on all models when none has that many), so that a model nobody knows much about neither moves the
    others' scores nor widens their intervals -- centred on every model, each score would carry
    ``1/K`` of its uncertainty. Models with ``few`` or more battles keep their covariance otherwise.

    A model counts as having few battles when it has fewer than ``few`` human battles, or fewer than
    ``side`` (default :data:`FEW_SIDE`) wins or losses (ties half): a model that won 20 of 21 is as
    separated as one that won 3 of 3, and its sandwich variance rests on one loss.

    Returns ``(coef, cov, extra, low)``: the strengths and covariance on that scale, the extra
    variance per model, and which models have few battles.

    >>> from evalsift.arena.battles import Battles
    >>> b = Battles.from_arrays(["X", "Y", "Z"], [0] * 3 + [1] * 40, [1] * 3 + [2] * 40, [1.0] * 3 + [1.0, 0.0] * 20)
    >>> f = fit_bt(b)                   # X won its 3 battles: the sandwich gives it a small variance
    >>> coef, cov, extra, low = few_battle_floor(b, np.arange(b.n), f.coef, f.cov)
    >>> low.tolist(), bool(cov[0, 0] > 10 * f.cov[0, 0]), bool(extra[1] == extra[2] == 0)
    ([True, False, False], True, True)
    >>> round(float(coef[1] + coef[2]), 12)      # the scale's mean is Y's and Z's
    0.0
    """
    from scipy.special import expit

    few = FEW if few is None else int(few)
    side = (FEW_SIDE if few else 0) if side is None else int(side)
    K = battles.K
    labelled = np.asarray(labelled, dtype=int)
    a, b = battles.a[labelled], battles.b[labelled]
    y = battles.y[labelled] if verdicts is None else np.asarray(verdicts, float)
    w = np.ones(len(labelled)) if prob is None else 1.0 / np.asarray(prob, float)
    counts = (np.bincount(a, minlength=K) + np.bincount(b, minlength=K)).astype(int)
    wins = np.bincount(a, y, K) + np.bincount(b, 1.0 - y, K)
    extra = np.zeros(K)
    low = (counts < few) | (np.minimum(wins, counts - wins) < side)
    if not low.any():
        return coef, cov, extra, low
    if covariates is not None:  # the model-based variance of the strengths in the fit with the covariates
        z = covariates.take(labelled)
        p = expit(_eta(np.concatenate([coef, gamma]), a, b, z, K))
        Hi = _pinv(_gxx(a, b, w * p * (1 - p), K, z), K)
        F = (Hi @ _gxx(a, b, w * w * p * (1 - p), K, z) @ Hi)[:K, :K]
    else:
        p = expit(coef[a] - coef[b])
        Hi = _pinv(_xx(a, b, w * p * (1 - p), K))
        F = Hi @ _xx(a, b, w * w * p * (1 - p), K) @ Hi
    extra[low] = np.maximum(np.diag(F)[low] - np.diag(cov)[low], 0.0)
    anchor = _anchor(low)
    A = np.eye(K) - np.outer(np.ones(K), anchor) / anchor.sum()  # x -> x - mean(x over the well-measured models)
    return A @ coef, A @ (cov + np.diag(extra)) @ A.T, extra, low


def _anchor(low: np.ndarray) -> np.ndarray:
    """The models the scale is centred on: those not marked ``low``, or all of them when every one is."""
    return ~low if not low.all() else np.ones(len(low), bool)


def anchor_draws(draws: np.ndarray, extra: np.ndarray, low: np.ndarray, *, seed=0) -> np.ndarray:
    """Bootstrap replicates (B x K) on :func:`few_battle_floor`'s scale: each few-battle model's (``low``)
    extra variance added as independent normal noise, then every replicate centred on the others."""
    low = np.asarray(low, bool)
    if not low.any():
        return draws
    anchor = _anchor(low)
    out = draws + np.random.default_rng(seed).standard_normal(draws.shape) * np.sqrt(extra)
    return out - out[:, anchor].mean(axis=1, keepdims=True)


def _judge_matrix(battles: Battles, judges: Sequence[str]) -> np.ndarray:
    for j in judges:
        if j not in battles.judges:
            raise ParameterError(f"judge {j!r} is not among the battles' judges ({', '.join(battles.judges) or 'none'})",
                                 field="judge")
    cols = [np.where(np.isnan(battles.judges[j]), 0.5, battles.judges[j]) for j in judges]
    return np.column_stack(cols) if cols else np.zeros((battles.n, 0))


def _drawn(battles: Battles, labelled: np.ndarray, prob, verdicts) -> Battles:
    """The human draws: the battles at ``labelled`` with their draw probabilities and, when given, the
    verdicts people gave at each draw (several people may judge one battle)."""
    from dataclasses import replace

    lab_b = battles.subset(labelled, prob=prob)
    if verdicts is not None:
        verdicts = np.asarray(verdicts, dtype=float)
        if len(verdicts) != len(labelled):
            raise ParameterError(f"{len(verdicts)} verdicts for {len(labelled)} human draws", field="verdicts")
        lab_b = replace(lab_b, y=verdicts)
    return lab_b


def fit_bt_ppi(battles: Battles, labelled: np.ndarray, judges: Sequence[str], *, prob: np.ndarray | None = None,
               lam: Sequence[float] | None = None, weighted: bool = True, verdicts: np.ndarray | None = None,
               strata: np.ndarray | None = None, covariates: Covariates | None = None,
               prior: float | str | None = None) -> BTFit:
    """Prediction-powered Bradley-Terry (module doc): the human verdicts of the battles at positions
    ``labelled`` (drawn from all; a position may repeat when draws were with replacement), each draw
    weighted by ``1 / prob`` (``prob``: per draw, default the battles' own ``prob``; ``n / N`` for a
    uniform draw), every judge of ``judges`` on all battles. ``lam``: the judges' weights; default
    the variance-minimising ones. With no judge it is the human-only fit (weighted MLE).
    ``verdicts``: the human verdict value of each draw, when it is not the battle's own ``y`` (the
    annotation app: the battles are the (prompt, pair) units, judged by whoever drew them).
    ``strata``: each draw's stratum, for a stratified draw (``prob`` then ``n_h / N_h``): the variance
    is the stratified one, centred within each stratum (:mod:`evalsift.arena.design`).
    ``covariates`` (:class:`Covariates` on all ``N`` battles): fitted beside the strengths (style control);
    the judges' part uses the same covariates of every battle.
    ``prior``: the strengths' ridge instead of the weak default (precision per human battle), or
    ``"empirical"``: the one :func:`shrinkage_prior` finds in the human draws (``--estimator shrunk``;
    with judges its precision scaled by the PPI variance over the people-only one). The estimate is then
    the posterior mode under that prior -- for ``"empirical"`` the posterior mean
    (:func:`_posterior_mean`) -- the judges' weights still chosen at the unpenalised pilot fit; the
    fit's ``prior`` says which, and the covariance is the sandwich there."""
    labelled = np.asarray(labelled, dtype=int)
    lab_b = _drawn(battles, labelled, prob, verdicts)
    _check(lab_b)
    _check(battles)
    _check_covariates(covariates, battles.n, "half", lab_b.a, lab_b.b, battles.K, labelled)
    Fm = _judge_matrix(battles, judges)
    K, n, N = battles.K, len(labelled), battles.n
    w_lab = 1.0 / lab_b.prob if weighted else None
    if strata is not None and len(strata) != n:
        raise ParameterError(f"{len(strata)} strata for {n} human draws", field="strata")
    z_lab, z_all = (None, None) if covariates is None else (covariates.take(labelled), covariates.z)
    lab = _rows(lab_b.a, lab_b.b, np.column_stack([lab_b.y, Fm[labelled]]), w_lab, strata, z=z_lab)
    beta = _fit_rows(lab, K)
    out = dict(n_human=n, n_all=N)
    if isinstance(prior, str):
        check_choice("prior", prior, ("empirical",), where="fit_bt_ppi")
        out["prior"] = shrinkage_prior(lab, K)
        prior = out["prior"]["precision"]
    elif prior is not None:
        out["prior"] = {"precision": float(prior)}
    if prior is not None and not judges:
        beta = _fit_rows(lab, K, beta, prior=prior)
        if "tau" in out["prior"]:  # the empirical prior: the posterior mean
            beta = _posterior_mean(lab.a, lab.b, lab.count * lab.weight, K, beta, lab.z, _unit(lab), prior,
                                   out["prior"]["dispersion"])
    st = strata is not None
    if not judges:
        if not st:
            return _split(battles.models, beta, _sandwich(lab, beta, K), K, covariates, method="mle", **out)
        H, W, P = _strata_moments(lab, beta, K)
        Hi = _pinv(H, K)
        return _split(battles.models, beta, Hi @ (W[0][0] + P[0][0]) @ Hi, K, covariates, method="mle", **out)
    all_rows = _rows(battles.a, battles.b, Fm, z=z_all)
    lam_v = _ppi_lam(lab, all_rows, beta, K, st) if lam is None else np.asarray(lam, float)
    if len(lam_v) != len(judges) or (lam_v < 0).any() or lam_v.sum() > 1 + 1e-12:
        raise ParameterError(f"lam must give each of the {len(judges)} judge(s) a weight >= 0, summing to <= 1; "
                             f"got {list(lam_v)}", field="lam")
    if prior is not None and "tau" in out.get("prior", {}):
        # the judges make the estimate surer than the people alone, so the prior pulls less: its precision
        # scaled by the PPI variance over the people-only one (traces at the pilot fit, the same Hessian)
        tr = lambda lv: float(np.trace(_ppi_cov(lab, all_rows, lv, beta, K, st)[:K, :K]))  # noqa: E731
        ratio = min(max(tr(lam_v) / max(tr(np.zeros_like(lam_v)), 1e-300), 0.0), 1.0)
        out["prior"] = {**out["prior"], "precision": out["prior"]["precision"] * ratio, "judges_variance_ratio": ratio}
        prior = out["prior"]["precision"]
    beta = _ppi_fit(lab, all_rows, lam_v, K, beta, prior=prior)
    if prior is not None and "tau" in out["prior"]:  # the empirical prior: the posterior mean (of the PPI objective)
        L = float(lam_v.sum())
        W = np.concatenate([lab.count * lab.weight * (1.0 - L), all_rows.count * L])
        z = None if lab.z is None else np.concatenate([lab.z, all_rows.z])
        beta = _posterior_mean(np.concatenate([lab.a, all_rows.a]), np.concatenate([lab.b, all_rows.b]), W, K, beta, z,
                               _unit(lab), prior, out["prior"]["dispersion"])
    return _split(battles.models, beta, _ppi_cov(lab, all_rows, lam_v, beta, K, st), K, covariates, method="ppi",
                  lam={j: float(x) for j, x in zip(judges, lam_v)}, **out)


def bootstrap_bt_ppi(battles: Battles, labelled: np.ndarray, judges: Sequence[str], lam: Sequence[float], B: int = 1000,
                     *, prob: np.ndarray | None = None, seed: int = 0, weighted: bool = True,
                     verdicts: np.ndarray | None = None, strata: np.ndarray | None = None,
                     covariates: Covariates | None = None) -> np.ndarray:
    """``B`` bootstrap replicates of :func:`fit_bt_ppi` with the weights ``lam`` held: the human
    draws and all battles resampled separately (without judges: the human draws alone); ``strata``: the
    human draws resampled within each stratum, as a stratified draw was made. With ``covariates``:
    ``B x (K + p)``, the covariates' coefficients after the strengths."""
    labelled = np.asarray(labelled, dtype=int)
    lab_b = _drawn(battles, labelled, prob, verdicts)
    Fm = _judge_matrix(battles, judges)
    K, N = battles.K, battles.n
    z_lab, z_all = (None, None) if covariates is None else (covariates.take(labelled), covariates.z)
    lab = _rows(lab_b.a, lab_b.b, np.column_stack([lab_b.y, Fm[labelled]]), 1.0 / lab_b.prob if weighted else None,
                strata, z=z_lab)
    all_rows = _rows(battles.a, battles.b, Fm, z=z_all)
    lam_v = np.asarray(lam, float)
    rng = np.random.default_rng(seed)
    if not judges:
        return _redraws(lab, K, B, rng)
    redraw_lab, s_all = _resampler(lab), all_rows.count / N
    beta = _ppi_fit(lab, all_rows, lam_v, K, _fit_rows(lab, K))
    out = np.empty((B, len(beta)))
    for r in range(B):
        out[r] = _ppi_fit(lab.with_counts(redraw_lab(rng)), all_rows.with_counts(rng.multinomial(N, s_all)), lam_v, K,
                          beta)
    return out


# ---------------------------------------------------------------------------------------------- rank-sets
def _pairs(K: int):
    i, j = np.triu_indices(K, 1)
    return i, j


def rank_sets(coef: np.ndarray, *, alpha: float, cov: np.ndarray | None = None, draws: np.ndarray | None = None,
              seed: int = 0, sims: int = 20000, stepdown: bool = True) -> tuple[np.ndarray, float]:
    """Simultaneous ``1 - alpha`` rank-sets (K x 2: best and worst rank, 1 = best) from the strengths
    ``coef`` and either their covariance ``cov`` or bootstrap ``draws``: the ranks :func:`sure_pairs`'s
    claims leave open. Returns ``(rank_sets, c)``, ``c`` the critical value of the last step.

    >>> rs, c = rank_sets(np.array([2.0, 0.0, -2.0]), alpha=0.05, cov=np.eye(3) * 0.01)
    >>> rs.tolist()                    # far apart, tightly known: each rank is certain
    [[1, 1], [2, 2], [3, 3]]
    """
    above, c = sure_pairs(coef, alpha=alpha, cov=cov, draws=draws, seed=seed, sims=sims, stepdown=stepdown)
    return rank_sets_of(above), c


def rank_sets_of(above: np.ndarray) -> np.ndarray:
    """The rank-sets (K x 2) that the claims ``above[x, y]`` ("x is surely stronger than y") leave open."""
    K = len(above)
    best = 1 + above.sum(axis=0)  # models surely above each
    worst = K - above.sum(axis=1)  # models surely below each
    return np.column_stack([best, worst]).astype(int)


def sure_pairs(coef: np.ndarray, *, alpha: float, cov: np.ndarray | None = None, draws: np.ndarray | None = None,
               seed: int = 0, sims: int = 20000, stepdown: bool = True) -> tuple[np.ndarray, float]:
    """Simultaneous ``1 - alpha`` rank-sets (K x 2: best and worst rank, 1 = best) from the strengths
    ``coef`` and either their covariance ``cov`` (the null distribution simulated from the normal) or
    bootstrap ``draws`` (B x K; the replicates' deviations, standardised by their spread). Returns
    ``(rank_sets, c)``, ``c`` the critical value of the last step.

    The claims behind the rank-sets: ``(above, c)``, ``above[x, y]`` when ``x`` is surely stronger than ``y``.

    Every ordered pair ``(i, j)`` is a one-sided hypothesis "``i`` is not stronger than ``j``", rejected
    when ``d_ij - c * se_ij > 0``; ``c`` is the ``1 - alpha`` quantile of the largest standardised
    deviation ``(Z_i - Z_j) / se_ij`` over the hypotheses still standing. The first step's ``c``, over
    all ordered pairs, is the max-|t| over all pairs (the single-step sets, ``stepdown=False``).
    ``stepdown`` (default) then removes what was rejected and recomputes ``c`` over the rest until no
    new pair is rejected: the step-down procedure of Mogstad, Romano, Shaikh & Wilhelm (2024, Review of
    Economic Studies, Sec. 3.2), which keeps the familywise error at ``alpha``, so the rank-sets still
    hold for every model at once, and is never wider than the single step."""
    K = len(coef)
    i, j = _pairs(K)
    i, j = np.concatenate([i, j]), np.concatenate([j, i])  # every ordered pair: "i above j" is the claim
    d = coef[i] - coef[j]
    if draws is not None:
        Z = draws - coef  # deviations of the replicates from the estimate
        se = (Z[:, i] - Z[:, j]).std(axis=0, ddof=1)
    elif cov is not None:
        var = np.diag(cov)[i] + np.diag(cov)[j] - 2 * cov[i, j]
        se = np.sqrt(np.maximum(var, 0.0))
        vals, vecs = np.linalg.eigh((cov + cov.T) / 2)
        Z = np.random.default_rng(seed).standard_normal((sims, K)) @ (vecs * np.sqrt(np.maximum(vals, 0.0))).T
    else:
        raise ParameterError("rank_sets needs cov or draws", field="cov")
    safe = np.where(se > 0, se, np.inf)

    def largest(keep: np.ndarray) -> np.ndarray:
        """Per replicate, the largest standardised deviation over the ordered pairs ``keep`` (a matrix product
        in blocks of replicates, so memory stays small with many models)."""
        a, b, s = i[keep], j[keep], safe[keep]
        D = np.zeros((K, len(a)))  # (Z_a - Z_b) / s for every kept pair at once: one product per block
        cols = np.arange(len(a))
        D[a, cols] = 1.0 / s
        D[b, cols] -= 1.0 / s
        return np.concatenate([(Z[r:r + 4096] @ D).max(axis=1) for r in range(0, len(Z), 4096)])

    standing = np.ones(len(d), bool)
    while True:
        c = float(np.quantile(largest(standing), 1 - alpha))
        new = standing & (d - c * se > 0)
        if not new.any():
            break
        standing &= ~new
        if not stepdown or not standing.any():
            break
    above = np.zeros((K, K), bool)  # above[x, y]: x is surely stronger than y
    above[i[~standing], j[~standing]] = True
    return above, c


def claimed_order(score: np.ndarray, above: np.ndarray | None = None) -> np.ndarray:
    """Model indices strongest first by ``score`` (ties by index), never placing a model above one that the
    claims ``above`` (:func:`sure_pairs`) put surely above it: the model taken next is the highest-scoring
    of those with nothing surely above them left. With scores that agree with the claims (the fit's own)
    it is the order by score; a shrunk score (``--estimator shrunk``) may not, and its order then keeps
    every rank inside its rank-set.

    >>> above = np.zeros((3, 3), bool); above[1, 0] = True        # 1 is surely above 0
    >>> claimed_order(np.array([0.5, 0.4, 0.0]), above).tolist()  # 0 scores higher, but cannot lead
    [1, 0, 2]
    """
    score = np.asarray(score, float)
    order = np.argsort(-score, kind="stable")
    if above is None or not above.any():
        return order
    left = list(order)
    out = []
    while left:
        pick = next(m for m in left if not any(above[o, m] for o in left))
        out.append(pick)
        left.remove(pick)
    return np.array(out, dtype=int)


def ranks(coef: np.ndarray) -> np.ndarray:
    """Ranks of the strengths, 1 = strongest (ties broken by order)."""
    order = np.argsort(-coef, kind="stable")
    r = np.empty(len(coef), dtype=int)
    r[order] = np.arange(1, len(coef) + 1)
    return r


__all__ = ["BASE", "BTFit", "COLLINEAR", "Covariates", "ELO", "FEW", "FEW_SIDE", "PRIOR_GRID", "RIDGE", "TIES",
           "bootstrap_bt", "fit_davidson", "bootstrap_bt_ppi", "anchor_draws", "few_battle_floor", "fit_bt", "fit_bt_ppi",
           "claimed_order", "independent_covariates", "rank_sets", "rank_sets_of", "ranks", "shrinkage_prior", "sure_pairs"]
