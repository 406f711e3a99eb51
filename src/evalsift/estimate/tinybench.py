"""tinyBenchmarks' p-IRT and gp-IRT as the paper and the authors' code define them.

Maia Polo, Weber, Choshen, Sun, Xu & Yurochkin, *tinyBenchmarks: evaluating LLMs with fewer
examples*, ICML 2024 (Sec. 3.1 anchor points, Sec. 3.2 p-IRT, Sec. 3.3 gp-IRT), as implemented in
github.com/felipemaiapolo/tinyBenchmarks (``tutorials/training_irt.ipynb``, ``anchor_points.ipynb``,
``estimating_performance.ipynb``, ``tutorials/irt.py``, ``tutorials/utils.py``) with the item model
of the authors' py-irt fork (github.com/felipemaiapolo/py-irt, ``py_irt/models/multidim_2pl.py``,
``py_irt/training.py``, ``py_irt/config.py``). This module is our own port of those equations (no
code of theirs); each step names the file it follows:

1. **Binarised targets** (``training_irt.ipynb``): the item model is fitted to ``Y > c`` with the
   threshold ``c`` from ``linspace(0.01, 0.99, 100)`` that makes the known systems' mean binarised
   scores closest to their mean raw scores (:func:`binarize`).
2. **Multidimensional 2PL** (the fork's ``multidim_2pl`` with ``--priors hierarchical``):
   ``P(y_kj = 1) = sigmoid(sum_d (gamma_jd theta_kd - b_j))`` (note: ``b_j`` is subtracted once per
   dimension, as the fork's model does), abilities ``theta_kd ~ N(mu_theta_d, 1/u_theta_d)``,
   difficulties ``b_j ~ N(mu_b, 1/u_b)``, discriminations ``gamma_jd ~ N(mu_gamma_d, 1/u_gamma_d)``,
   ``mu ~ N(0, 10)``, ``u ~ Gamma(1, 1)``; fitted by stochastic variational inference (a mean-field
   normal guide, gamma guides for the ``u``, one-sample ``Trace_ELBO``, Adam with ``lr = 0.1``
   decayed by ``0.9999`` per epoch, 2000 epochs, the guide's means exported after the step of the
   lowest loss) -- :func:`fit_multidim_2pl`, on the dense matrix in numpy with the gradient written
   out (:func:`negative_elbo`; torch is needed only by the reference :func:`negative_elbo_terms`).
3. **Dimension chosen on validation** (``training_irt.ipynb``): every fifth known system is held
   out, the model is fitted on the rest for each ``D`` in ``(5, 10)``, the held-out systems' abilities
   are fitted on the even-numbered items and the error is the mean absolute difference between the
   predicted and the true mean score on the odd-numbered items (:func:`choose_dimension`).
4. **Abilities without a prior** (``irt.py: estimate_ability_parameters``): maximum likelihood of
   the new system's raw scores on the anchors (not binarised), BFGS from 0, ``log(P + 1e-10)``, each
   dimension's term clipped to ``[-30, 30]`` (``utils.py: item_curve``) -- :func:`fit_ability`.
5. **p-IRT** (Sec. 3.2; ``estimating_performance.ipynb``): ``lam_p * mean(seen y) + (1 - lam_p) *
   mean(unseen P(theta))`` with ``lam_p = n / M`` -- :func:`pirt_estimate`.
6. **gp-IRT** (Sec. 3.3; ``training_irt.ipynb: get_lambda``): ``lam * anchor + (1 - lam) * p-IRT``
   with the analytic ``lam = b^2 / (b^2 + v / (4 n))``, ``b`` the validation error of step 3 at the
   chosen ``D`` and ``v`` the known systems' mean within-system variance over items
   (:func:`gp_lambda`).
7. **Anchor points** (Sec. 3.1; ``anchor_points.ipynb``): scikit-learn's ``KMeans`` (``n_init="auto"``,
   ``random_state=42``) with the items' weights ``1 / M`` on the IRT embeddings ``(gamma_j, b_j)`` (or,
   ``clustering="correct."``, on the items' raw score vectors), the anchor of each cluster the item
   nearest its centre, weighted by the cluster's share of the items (:func:`anchor_points`).

Scores are on [0, 1] (tinyBenchmarks' correctness scale). The authors compute everything per
scenario; this module handles one scenario (one benchmark) at a time.

>>> import numpy as np
>>> rng = np.random.default_rng(0)
>>> Y = (rng.random((12, 40)) < np.linspace(0.2, 0.8, 12)[:, None]).astype(float)
>>> Yb, c = binarize(Y)
>>> bool((Yb == Y).all()), c
(True, 0.01)
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np
from scipy.optimize import minimize
from scipy.special import digamma, gammainc, gammaincc, gammaln

THRESHOLDS = np.linspace(0.01, 0.99, 100)
DIMENSIONS = (5, 10)
EPOCHS = 2000
LR = 0.1
LR_DECAY = 0.9999
SEED = 42
EPS = 1e-10
CLIP = 30.0


# ------------------------------------------------------------------------------ step 1
def binarize(Y, thresholds: Sequence[float] = THRESHOLDS, apply_to=None) -> tuple[np.ndarray, float]:
    """``(Y > c, c)`` with ``c`` the first of ``thresholds`` minimising the known systems' mean
    ``|mean_j 1[Y_kj > c] - mean_j Y_kj|`` (tinyBenchmarks ``training_irt.ipynb``). ``apply_to``:
    another matrix to threshold at the same ``c`` (returned instead of ``Y > c``)."""
    Y = np.asarray(Y, dtype=float)
    cs = np.asarray(thresholds, dtype=float)
    mean = Y.mean(axis=1)
    err = [float(np.mean(np.abs((Y > c).mean(axis=1) - mean))) for c in cs]
    c = float(cs[int(np.argmin(err))])
    target = Y if apply_to is None else np.asarray(apply_to, dtype=float)
    return (target > c).astype(float), round(c, 12)


# ------------------------------------------------------------------------------ step 2
@dataclass(frozen=True)
class MultiIRT:
    """A fitted multidimensional 2PL: ``disc`` (items x D), ``diff`` (items), ``ability`` (systems x D),
    as the fork exports them (the guide's means); ``loss`` the best negative ELBO; ``seconds`` the fit time."""

    disc: np.ndarray
    diff: np.ndarray
    ability: np.ndarray
    loss: float = float("nan")
    seconds: float = float("nan")
    history: dict[str, Any] = field(default_factory=dict, compare=False)

    @property
    def dims(self) -> int:
        """The number of dimensions D."""
        return int(self.disc.shape[1])

    @property
    def n_items(self) -> int:
        """Items."""
        return int(self.disc.shape[0])

    def logits(self, theta, items=None) -> np.ndarray:
        """``sum_d clip(gamma_jd theta_d - b_j, -30, 30)`` (``utils.py: item_curve``) for each row of
        ``theta`` (systems x D, or one D-vector) and item (all, or ``items``)."""
        th = np.atleast_2d(np.asarray(theta, dtype=float))
        a = self.disc if items is None else self.disc[items]
        b = self.diff if items is None else self.diff[items]
        return np.clip(th[:, None, :] * a[None, :, :] - b[None, :, None], -CLIP, CLIP).sum(axis=2)

    def probability(self, theta, items=None) -> np.ndarray:
        """``P(y = 1)`` (systems x items) at ``theta``."""
        return 1.0 / (1.0 + np.exp(-self.logits(theta, items)))

    def embeddings(self) -> np.ndarray:
        """Items x (D + 1): ``(gamma_j, b_j)``, the features tinyBenchmarks clusters on."""
        return np.hstack([self.disc, self.diff[:, None]])


_SITES = ("mu_b", "u_b", "mu_theta", "u_theta", "mu_gamma", "u_gamma", "theta", "b", "gamma")


def _guide_shapes(K: int, M: int, D: int) -> dict[str, tuple[int, ...]]:
    return {"mu_b": (1,), "u_b": (1,), "mu_theta": (D,), "u_theta": (D,), "mu_gamma": (D,), "u_gamma": (D,),
            "theta": (K, D), "b": (M, 1), "gamma": (M, D)}


def _normal_lp(x, loc, scale):
    import math

    return -0.5 * ((x - loc) / scale) ** 2 - scale.log() - 0.5 * math.log(2 * math.pi) \
        if hasattr(scale, "log") else -0.5 * ((x - loc) / scale) ** 2 - math.log(scale) - 0.5 * math.log(2 * math.pi)


def _gamma_lp(x, alpha, beta):
    import torch

    return alpha * beta.log() + (alpha - 1) * x.log() - beta * x - torch.lgamma(alpha)


def negative_elbo_terms(params: dict, z: dict, Y, D: int):
    """One-sample ``-(log p(Y, z) - log q(z))`` of the fork's hierarchical ``multidim_2pl`` (the
    quantity ``Trace_ELBO`` returns), at the guide draw ``z`` (site -> tensor) under the guide's
    ``params`` (for each site ``loc``/``scale`` for a normal guide, ``alpha``/``beta`` for a gamma
    guide). Torch tensors in, a scalar tensor out (differentiable in ``params`` and ``z``); the
    densities are written out (no ``torch.distributions``: their argument checks cost more than the
    arithmetic here)."""
    import torch
    import torch.nn.functional as F

    one = torch.ones((), dtype=z["theta"].dtype)
    logp = (_normal_lp(z["mu_b"], 0.0, 10.0).sum() + _gamma_lp(z["u_b"], one, one).sum()
            + _normal_lp(z["mu_theta"], 0.0, 10.0).sum() + _gamma_lp(z["u_theta"], one, one).sum()
            + _normal_lp(z["mu_gamma"], 0.0, 10.0).sum() + _gamma_lp(z["u_gamma"], one, one).sum()
            + _normal_lp(z["theta"], z["mu_theta"], 1.0 / z["u_theta"]).sum()
            + _normal_lp(z["b"], z["mu_b"], 1.0 / z["u_b"]).sum()
            + _normal_lp(z["gamma"], z["mu_gamma"], 1.0 / z["u_gamma"]).sum())
    logits = z["theta"] @ z["gamma"].T - D * z["b"][:, 0][None, :]
    logp = logp + (Y * logits - F.softplus(logits)).sum()
    logq = 0.0
    for s in _SITES:
        p = params[s]
        logq = logq + (_gamma_lp(z[s], p["alpha"], p["beta"]) if s.startswith("u_")
                       else _normal_lp(z[s], p["loc"], p["scale"])).sum()
    return -(logp - logq)


_NORMAL_SITES = ("mu_b", "mu_theta", "mu_gamma", "theta", "b", "gamma")
_GAMMA_SITES = ("u_b", "u_theta", "u_gamma")
_HALF_LOG_2PI = 0.5 * float(np.log(2 * np.pi))


class _Layout:
    """Where each guide parameter lives in the flat vector the optimiser steps: ``[loc | log scale]``
    of the normal sites (``_NORMAL_SITES`` in order, each flattened), then ``[log alpha | log beta]``
    of the gamma sites (``_GAMMA_SITES``)."""

    def __init__(self, K: int, M: int, D: int) -> None:
        self.K, self.M, self.D = K, M, D
        self.shapes = _guide_shapes(K, M, D)
        self.normal, self.n_normal = self._slices(_NORMAL_SITES)
        self.gamma, self.n_gamma = self._slices(_GAMMA_SITES)
        self.size = 2 * self.n_normal + 2 * self.n_gamma

    def _slices(self, sites) -> tuple[dict[str, slice], int]:
        """Each site's slice of one flat block, the sites one after another; and the block's length."""
        out, off = {}, 0
        for s in sites:
            n = int(np.prod(self.shapes[s]))
            out[s] = slice(off, off + n)
            off += n
        return out, off

    def parts(self, x):
        """(loc, log scale, log alpha, log beta) views of the flat vector ``x``."""
        Nn, Ng = self.n_normal, self.n_gamma
        return x[:Nn], x[Nn:2 * Nn], x[2 * Nn:2 * Nn + Ng], x[2 * Nn + Ng:]

    def sites(self, zn, zu) -> dict[str, np.ndarray]:
        """Site -> view of the draws ``zn`` (normal sites) and ``zu`` (gamma sites), in the site's shape."""
        out = {s: zn[sl].reshape(self.shapes[s]) for s, sl in self.normal.items()}
        out.update({s: zu[sl].reshape(self.shapes[s]) for s, sl in self.gamma.items()})
        return out


def gamma_draw_grad(g, alpha) -> np.ndarray:
    """``d g / d alpha`` of standard gamma draws ``g`` (shape ``alpha``, rate 1) at a fixed value of
    their distribution function (the implicit reparameterisation gradient, Figurnov et al. 2018):
    ``-(dF(g; alpha) / d alpha) / f(g; alpha)``, the derivative of the regularised incomplete gamma
    function in its shape taken by a central difference (on the lower function below the median, the
    upper one above, so that the difference is never of two numbers near 1). Exact to about 1e-8
    relative; pyro's ``Gamma.rsample`` uses torch's approximation of the same derivative
    (``_standard_gamma_grad``)."""
    g = np.asarray(g, dtype=float)
    alpha = np.asarray(alpha, dtype=float)
    h = 1e-5 * alpha
    lower = gammainc(alpha, g) < 0.5
    lo_d = (gammainc(alpha + h, g) - gammainc(alpha - h, g)) / (2 * h)
    up_d = -(gammaincc(alpha + h, g) - gammaincc(alpha - h, g)) / (2 * h)
    dF = np.where(lower, lo_d, up_d)
    log_f = (alpha - 1) * np.log(g) - g - gammaln(alpha)
    return -dF * np.exp(-log_f)


def _workspace(Y, x, layout: _Layout) -> dict[str, Any]:
    """Buffers for :func:`negative_elbo` and their per-site views, made once per fit (fresh systems x
    items arrays every epoch cost more in page faults than the arithmetic)."""
    Y = np.asarray(Y, dtype=float)
    zn, zu = np.empty(layout.n_normal), np.empty(layout.n_gamma)
    dzn, dzu = np.empty(layout.n_normal), np.empty(layout.n_gamma)
    Yhalf = Y - 0.5
    return {"L": np.empty_like(Y), "E": np.empty_like(Y), "G": np.empty_like(Y), "Yhalf_flat": Yhalf.ravel(),
            "Yhalf": Yhalf, "grad": np.empty_like(x, dtype=float), "zn": zn, "zu": zu, "dzn": dzn, "dzu": dzu,
            "z": layout.sites(zn, zu), "dz": layout.sites(dzn, dzu)}


LOG_CHUNK = 64  # factors in [1, 2] per product: at most 2^64, far below the largest double (about 2^1024)


def sum_log(v) -> float:
    """``sum(log(v))`` for a flat array of values in [1, 2] (``1 + exp(-|L|)``), as the logs of products
    of :data:`LOG_CHUNK` of them at a time: a multiply per value and a log per chunk instead of a log
    per value (a scalar libm call on CPUs without AVX-512). The rounding differs from the logs' sum by
    about 1e-16 per value (the error of rounding ``1 + exp(-|L|)`` that ``log1p`` would avoid) and
    1e-16 per multiply, so about 1e-12 on a fit's loss of 1e4, and the loss only (the gradient does not use it)."""
    n = len(v)
    m = n - n % LOG_CHUNK
    out = float(np.log(v[:m].reshape(LOG_CHUNK, -1).prod(axis=0)).sum()) if m else 0.0
    return out + (float(np.log(v[m:].prod())) if m < n else 0.0)


def negative_elbo(x, eps, g, dg, Y, layout: _Layout, work: dict | None = None) -> tuple[float, np.ndarray]:
    """The one-sample negative ELBO of :func:`negative_elbo_terms` (the fork's hierarchical
    ``multidim_2pl`` model and mean-field guide) and its exact pathwise gradient in the guide's
    unconstrained parameters ``x`` (the flat vector of :class:`_Layout`: locations, log scales, log
    shapes, log rates), written out by hand in numpy. The draw: normal sites ``loc + exp(log scale) *
    eps``; gamma sites ``g / beta`` with ``g`` standard gamma draws at ``alpha`` and ``dg`` their
    derivative in ``alpha`` (:func:`gamma_draw_grad`). ``work``: reusable buffers (:func:`_workspace`;
    the returned gradient is one of them, overwritten by the next call)."""
    D, K, M = layout.D, layout.K, layout.M
    loc, r, la, lb = layout.parts(x)
    scale = np.exp(r)
    if work is None:
        work = _workspace(Y, x, layout)
    zn, zu, z = work["zn"], work["zu"], work["z"]
    np.multiply(scale, eps, out=zn)
    zn += loc
    alpha, beta = np.exp(la), np.exp(lb)
    np.divide(g, beta, out=zu)
    th, ga, b = z["theta"], z["gamma"], z["b"][:, 0]
    mu_th, mu_ga, mu_b = z["mu_theta"], z["mu_gamma"], z["mu_b"][0]
    u_th, u_ga, u_b = z["u_theta"], z["u_gamma"], z["u_b"][0]
    # likelihood
    L, E, G = work["L"], work["E"], work["G"]
    np.matmul(th, ga.T, out=L)
    L -= D * b[None, :]
    np.copysign(L, -1.0, out=E)  # -|L|
    abs_sum = -float(E.sum())
    np.exp(E, out=E)  # exp(-|L|)
    np.add(E, 1.0, out=G)
    # sum(Y L - softplus(L)), softplus(L) = max(L, 0) + log(1 + exp(-|L|)) and max(L, 0) = (L + |L|) / 2; the logs'
    # sum as the log of chunked products of the 1 + exp(-|L|) in [1, 2] (one scalar log per chunk, not one per cell)
    lik = float(work["Yhalf_flat"] @ L.ravel()) - 0.5 * abs_sum - sum_log(G.ravel())
    np.divide(E, G, out=E)  # q = sigmoid(-|L|)
    np.subtract(0.5, E, out=E)
    np.copysign(E, L, out=E)  # sigmoid(L) - 1/2 = sign(L) (1/2 - q)
    np.subtract(work["Yhalf"], E, out=G)  # Y - sigmoid(L)
    # priors
    mus = zn[:1 + 2 * D]
    d_th, d_ga, d_b = th - mu_th, ga - mu_ga, b - mu_b
    rt, rg, rb = d_th * u_th, d_ga * u_ga, d_b * u_b
    rt_f, rg_f = rt.ravel(), rg.ravel()
    logp = (-0.005 * float(mus @ mus) - mus.size * (np.log(10.0) + _HALF_LOG_2PI) - float(zu.sum())
            - 0.5 * float(rt_f @ rt_f) + K * float(np.log(u_th).sum())
            - 0.5 * float(rg_f @ rg_f) + M * float(np.log(u_ga).sum())
            - 0.5 * float(rb @ rb) + M * float(np.log(u_b))
            - (K * D + M * D + M) * _HALF_LOG_2PI + lik)
    # log q at the draw: the standardised normal draws (zn - loc) / scale are eps
    logq = (-0.5 * float(eps @ eps) - float(r.sum()) - layout.n_normal * _HALF_LOG_2PI
            + float(np.sum(alpha * lb + (alpha - 1) * np.log(zu) - beta * zu - gammaln(alpha))))
    # d log p / d z, site by site
    dzn, dzu, dz = work["dzn"], work["dzu"], work["dz"]
    rt_u, rg_u, rb_u = rt * u_th, rg * u_ga, rb * u_b
    dz["theta"][...] = G @ ga - rt_u
    dz["gamma"][...] = G.T @ th - rg_u
    dz["b"][:, 0] = -D * G.sum(axis=0) - rb_u
    dz["mu_theta"][...] = rt_u.sum(axis=0) - 0.01 * mu_th
    dz["mu_gamma"][...] = rg_u.sum(axis=0) - 0.01 * mu_ga
    dz["mu_b"][0] = rb_u.sum() - 0.01 * mu_b
    dz["u_theta"][...] = -(rt * d_th).sum(axis=0) + K / u_th - 1.0
    dz["u_gamma"][...] = -(rg * d_ga).sum(axis=0) + M / u_ga - 1.0
    dz["u_b"][0] = -float(np.sum(rb * d_b)) + M / u_b - 1.0
    # the chain rule through the draw, and log q's own terms (the ELBO's gradient, negated)
    grad = work["grad"]
    gl, gr, gla, glb = layout.parts(grad)
    gl[...] = -dzn
    gr[...] = -(dzn * eps * scale + 1.0)
    gla[...] = -alpha * (dzu * dg / beta - (np.log(g) - digamma(alpha) + ((alpha - 1) / g - 1.0) * dg))
    glb[...] = zu * dzu + 1.0
    return -(logp - logq), grad


ADAM_BETAS = (0.9, 0.999)
ADAM_EPS = 1e-8


def adam_state(x) -> dict[str, np.ndarray]:
    """Adam's moment buffers for the parameter vector ``x`` (zeros) and a scratch buffer."""
    return {"m1": np.zeros_like(x), "m2": np.zeros_like(x), "tmp": np.empty_like(x)}


def adam_step(x, grad, state: dict, t: int, lr: float) -> None:
    """One step of ``torch.optim.Adam`` (betas 0.9, 0.999, eps 1e-8, no weight decay) on ``x`` in
    place, ``t`` the step's number from 1 and ``lr`` its learning rate (the fork's ``ExponentialLR``
    multiplies it by the decay after every epoch)."""
    b1, b2 = ADAM_BETAS
    m1, m2, tmp = state["m1"], state["m2"], state["tmp"]
    m1 *= b1
    np.multiply(grad, 1 - b1, out=tmp)
    m1 += tmp
    m2 *= b2
    np.multiply(grad, grad, out=tmp)
    tmp *= 1 - b2
    m2 += tmp
    np.sqrt(m2, out=tmp)
    tmp /= np.sqrt(1 - b2 ** t)
    tmp += ADAM_EPS
    np.divide(m1, tmp, out=tmp)
    tmp *= lr / (1 - b1 ** t)
    x -= tmp


def fit_multidim_2pl(Ybin, dims: int, *, epochs: int = EPOCHS, lr: float = LR, lr_decay: float = LR_DECAY,
                     seed: int = SEED) -> MultiIRT:
    """The fork's ``py-irt train multidim_2pl --priors hierarchical --dims D --lr 0.1 --epochs 2000
    --seed 42`` (module doc, step 2) on the binary matrix ``Ybin`` (systems x items), in numpy: the
    guide's unconstrained parameters (means 0, positive ones through exp from 1), one reparameterised
    draw per epoch (``numpy.random.default_rng(seed)``), the gradient of :func:`negative_elbo`, torch's
    Adam update (betas 0.9, 0.999, eps 1e-8) with the learning rate decayed per epoch, and the means
    exported after the step whose loss was the lowest so far (as ``training.py`` does). About 0.75 ms
    (D = 5) to 1.1 ms (D = 10) an epoch on a 57 x 805 matrix on one core. The loop runs with BLAS on
    one thread: its products are small, and two BLAS threads on a busy 2-core machine made 300 epochs
    take 3.6 s instead of 0.57 s."""
    from threadpoolctl import threadpool_limits

    with threadpool_limits(1):
        return _fit_multidim_2pl(Ybin, dims, epochs, lr, lr_decay, seed)


def _fit_multidim_2pl(Ybin, dims, epochs, lr, lr_decay, seed) -> MultiIRT:
    t0 = time.perf_counter()
    Y = np.asarray(Ybin, dtype=float)
    if not np.isin(Y, (0.0, 1.0)).all():
        raise ValueError("fit_multidim_2pl: the targets must be binary (binarize them first)")
    K, M = Y.shape
    D = int(dims)
    lay = _Layout(K, M, D)
    rng = np.random.default_rng(int(seed))
    x = np.zeros(lay.size)
    state = adam_state(x)
    work = _workspace(Y, x, lay)
    loc, _, la, _ = lay.parts(x)
    tiny = np.finfo(float).tiny
    best, export, losses = float("inf"), None, np.empty(int(epochs))
    step_lr = float(lr)
    for t in range(1, int(epochs) + 1):
        eps = rng.standard_normal(lay.n_normal)
        alpha = np.exp(la)
        g = np.maximum(rng.standard_gamma(alpha), tiny)
        loss, grad = negative_elbo(x, eps, g, gamma_draw_grad(g, alpha), Y, lay, work)
        adam_step(x, grad, state, t, step_lr)
        losses[t - 1] = loss
        if loss < best:
            best = loss
            export = (loc[lay.normal["gamma"]].copy(), loc[lay.normal["b"]].copy(), loc[lay.normal["theta"]].copy())
        step_lr *= lr_decay
    disc, diff, ability = export[0].reshape(M, D), export[1], export[2].reshape(K, D)
    return MultiIRT(disc, diff, ability, best, time.perf_counter() - t0, {"losses": losses})


# ------------------------------------------------------------------------------ step 4
def ability_objective(theta, y, irt: MultiIRT, items, eps: float = EPS) -> tuple[float, np.ndarray]:
    """``estimate_ability_parameters``' negative log-likelihood of the scores ``y`` on ``items`` at the
    ability ``theta`` (a D-vector), with its exact gradient: ``-sum y log(P + eps) + (1 - y) log(1 - P + eps)``."""
    y = np.asarray(y, dtype=float)
    return _ability_nll(theta, y, 1 - y, irt.disc[items], irt.diff[items][:, None], eps)


def _ability_nll(theta, y, y1, a, b, eps: float = EPS) -> tuple[float, np.ndarray]:
    """:func:`ability_objective` on the judged items' parameters ``a`` (items x D) and ``b`` (items x
    1), with ``y1 = 1 - y``: what the optimiser calls, its inputs indexed once per fit."""
    u = a * np.asarray(theta, dtype=float)[None, :] - b  # items x D
    inside = np.abs(u) < CLIP
    z = np.minimum(np.maximum(u, -CLIP), CLIP).sum(axis=1)  # np.clip, without its wrapper's cost
    P = 1.0 / (1.0 + np.exp(-z))
    Q = 1 - P
    f = -float(np.sum(y * np.log(P + eps) + y1 * np.log(Q + eps)))
    dP = P * Q
    dz = -(y * dP / (P + eps) - y1 * dP / (Q + eps))
    return f, (dz[:, None] * a * inside).sum(axis=0)


def fit_ability(y, irt: MultiIRT, items, theta0=None) -> np.ndarray:
    """The new system's ability by maximum likelihood (no prior) on its scores ``y`` (raw, in [0, 1])
    on ``items``: BFGS from 0 (``irt.py: estimate_ability_parameters``), with the exact gradient."""
    y = np.asarray(y, dtype=float)
    items = np.asarray(items)
    x0 = np.zeros(irt.dims) if theta0 is None else np.asarray(theta0, dtype=float).reshape(-1)
    return minimize(_ability_nll, x0, args=(y, 1 - y, irt.disc[items], irt.diff[items][:, None]), jac=True,
                    method="BFGS").x


# ------------------------------------------------------------------------------ steps 5, 6
def pirt_estimate(y, irt: MultiIRT, items, theta=None) -> float:
    """p-IRT (Sec. 3.2; ``estimating_performance.ipynb``): ``lam_p mean(y) + (1 - lam_p) mean_unseen
    P_j(theta)`` with ``lam_p = n / M``, ``n`` the distinct judged ``items`` and ``theta`` fitted by
    :func:`fit_ability` when not given."""
    items = np.asarray(items)
    y = np.asarray(y, dtype=float)
    uniq, first = np.unique(items, return_index=True)
    M = irt.n_items
    theta = fit_ability(y, irt, items) if theta is None else theta
    unseen = np.setdiff1d(np.arange(M), uniq)
    lam = len(uniq) / M
    irt_part = float(irt.probability(theta, unseen).mean()) if len(unseen) else 0.0
    return lam * float(y[first].mean()) + (1 - lam) * irt_part


def gp_lambda(b: float, v: float, n: int) -> float:
    """gp-IRT's weight on the anchor estimate (Sec. 3.3; ``training_irt.ipynb: get_lambda``):
    ``b^2 / (b^2 + v / (4 n))``, ``b`` p-IRT's validation error, ``v`` the known systems' mean
    variance over items, ``n`` the anchors."""
    s = v / (4 * int(n))
    return float(b * b / (s + b * b)) if b * b + s > 0 else 0.0


# ------------------------------------------------------------------------------ step 3
def validation_split(K: int) -> tuple[np.ndarray, np.ndarray]:
    """(validation rows, training rows): every fifth known system, from the first."""
    val = np.arange(0, K, 5)
    return val, np.setdiff1d(np.arange(K), val)


def choose_dimension(Y, dims: Sequence[int] = DIMENSIONS, *, Ybin=None, **fit) -> dict[str, Any]:
    """tinyBenchmarks' validation heuristic (module doc, step 3) on the known systems' raw scores
    ``Y`` (their binarised ``Ybin`` computed when not given): returns ``{"dims": D, "errors": {D:
    error}, "b": error at D, "fits": {D: MultiIRT}}``."""
    Y = np.asarray(Y, dtype=float)
    Yb = binarize(Y)[0] if Ybin is None else np.asarray(Ybin, dtype=float)
    K, M = Y.shape
    val, rest = validation_split(K)
    seen, unseen = np.arange(0, M, 2), np.arange(1, M, 2)
    errors, fits = {}, {}
    for D in dims:
        irt = fit_multidim_2pl(Yb[rest], D, **fit)
        errs = []
        for k in val:
            th = fit_ability(Yb[k, seen], irt, seen)
            errs.append(abs(float(irt.probability(th, unseen).mean()) - float(Y[k, unseen].mean())))
        errors[int(D)] = float(np.mean(errs))
        fits[int(D)] = irt
    D = min(errors, key=lambda d: (errors[d], list(errors).index(d)))
    return {"dims": D, "errors": errors, "b": errors[D], "fits": fits}


# ------------------------------------------------------------------------------ step 7
def anchor_points(n: int, *, irt: MultiIRT | None = None, Y=None, clustering: str = "irt",
                  seed: int = SEED, weights=None) -> tuple[np.ndarray, np.ndarray]:
    """tinyBenchmarks' anchor points (Sec. 3.1; ``anchor_points.ipynb``): ``(items, weights)``, one
    per cluster of scikit-learn's ``KMeans(n, n_init="auto", random_state=seed)`` fitted with the
    items' normalised ``weights`` (uniform when None) on ``irt.embeddings()`` (``clustering="irt"``)
    or on the known systems' raw score vectors ``Y.T`` (``"correct."``); each anchor is the item
    nearest its centre and weighs its cluster's share. Two centres may share an anchor (kept twice,
    as theirs are)."""
    from sklearn.cluster import KMeans
    from sklearn.metrics import pairwise_distances

    if clustering == "irt":
        X = irt.embeddings()
    elif clustering == "correct.":
        X = np.asarray(Y, dtype=float).T
    else:
        raise ValueError(f"clustering {clustering!r}: 'irt' or 'correct.'")
    w = np.full(len(X), 1.0 / len(X)) if weights is None else np.asarray(weights, dtype=float)
    w = w / w.sum()
    km = KMeans(n_clusters=int(n), n_init="auto", random_state=seed).fit(X, sample_weight=w)
    items = pairwise_distances(km.cluster_centers_, X, metric="euclidean").argmin(axis=1)
    share = np.array([w[km.labels_ == c].sum() for c in range(int(n))])
    return items, share


# ------------------------------------------------------------------------------ all together
@dataclass
class TinyBenchmarks:
    """The tinyBenchmarks pipeline fitted to the known systems' raw scores ``Y`` (systems x items, in
    [0, 1]): binarisation, the dimension on validation, the final multidimensional 2PL. Then
    :meth:`anchors` picks anchor points and :meth:`estimate` gives a new system's ``anchor``,
    ``pirt`` and ``gpirt`` estimates from its scores on them.

    >>> import numpy as np  # doctest: +SKIP
    >>> tb = TinyBenchmarks.fit(Y)  # doctest: +SKIP
    >>> items, w = tb.anchors(100)  # doctest: +SKIP
    >>> tb.estimate(y_new[items], items, w)["gpirt"]  # doctest: +SKIP
    """

    Y: np.ndarray
    threshold: float
    selection: dict[str, Any]
    irt: MultiIRT
    seconds: float

    @classmethod
    def fit(cls, Y, dims: Sequence[int] = DIMENSIONS, **fit) -> TinyBenchmarks:
        """Steps 1-3 and the final fit on every known system (module doc)."""
        t0 = time.perf_counter()
        Y = np.asarray(Y, dtype=float)
        if Y.ndim != 2 or not np.isfinite(Y).all() or Y.min() < 0 or Y.max() > 1:
            raise ValueError("TinyBenchmarks.fit: a complete systems x items matrix of scores in [0, 1]")
        Yb, c = binarize(Y)
        sel = choose_dimension(Y, dims, Ybin=Yb, **fit) if len(dims) > 1 or Y.shape[0] >= 5 else None
        D = sel["dims"] if sel else int(dims[0])
        irt = fit_multidim_2pl(Yb, D, **fit)
        return cls(Y, c, sel or {"dims": D, "errors": {}, "b": float("nan"), "fits": {}}, irt,
                   time.perf_counter() - t0)

    @property
    def within_variance(self) -> float:
        """``v``: the known systems' variance over items (``np.var`` of each row), averaged."""
        return float(np.var(self.Y, axis=1).mean())

    def anchors(self, n: int, clustering: str = "irt", seed: int = SEED) -> tuple[np.ndarray, np.ndarray]:
        """:func:`anchor_points` on this fit (or on ``Y`` for ``"correct."``)."""
        return anchor_points(n, irt=self.irt, Y=self.Y, clustering=clustering, seed=seed)

    def lam(self, n: int) -> float:
        """gp-IRT's analytic weight for ``n`` anchors (:func:`gp_lambda`)."""
        return gp_lambda(self.selection["b"], self.within_variance, n)

    def estimate(self, y, items, weights) -> dict[str, float]:
        """``{"anchor", "pirt", "gpirt", "lam", "theta"}`` for a new system's raw scores ``y`` on
        ``items`` (anchor weights ``weights``; ``n`` for the weight is the number of anchors)."""
        y = np.asarray(y, dtype=float)
        items = np.asarray(items)
        theta = fit_ability(y, self.irt, items)
        anchor = float(np.asarray(weights, dtype=float) @ y)
        p = pirt_estimate(y, self.irt, items, theta)
        lam = self.lam(len(items))
        return {"anchor": anchor, "pirt": p, "gpirt": lam * anchor + (1 - lam) * p, "lam": lam,
                "theta": theta}
