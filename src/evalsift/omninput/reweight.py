"""Multiple-histogram reweighting: ln rho(z) from samples drawn at several inverse temperatures.

Parallel tempering draws replica k from ``pi_k(x) = exp(beta_k z(x)) / Z_k``. Ferrenberg & Swendsen's
multiple-histogram method (WHAM, Kumar et al. 1992) combines all replicas into one estimate of the
density of states ``rho(z)``, the number of inputs with output z. We solve it without bins, as MBAR
(Shirts & Chodera 2008) does: every sample i gets the weight

    w_i = 1 / sum_k N_k exp(beta_k z_i - c_k),     c_k = ln Z_k = ln sum_i w_i exp(beta_k z_i),

(N_k samples at beta_k), and ``rho(bin) ~ sum of w_i over the samples in the bin``. The c_k minimise the
convex function ``A(c) = sum_i ln sum_k N_k exp(beta_k z_i - c_k) + sum_k N_k c_k`` (one c is fixed:
A does not change when every c moves together), which scipy's L-BFGS solves with the exact gradient;
free-energy perturbation along the ladder gives the starting point. Identical z values are grouped,
so an enumerable toy costs no more than its distinct outputs.

With a replica at beta = 0 (the uniform distribution over the input space) the estimate is normalised
exactly: ``Z_0`` is the size of the space, so ``sum_bins rho = |X|``.

>>> rng = np.random.default_rng(0)
>>> z = rng.normal(size=20000)                      # uniform draws of a model whose z is N(0, 1)
>>> lw, c = mbar_log_weights([z], np.array([0.0]))
>>> bool(np.allclose(lw, -np.log(20000)))           # one replica at beta=0: every sample weighs 1/N
True
"""

from __future__ import annotations

from typing import Sequence

import numpy as np
from scipy.optimize import minimize
from scipy.special import logsumexp


def mbar_log_weights(samples: Sequence[np.ndarray], betas: np.ndarray, *, ref: int | None = None,
                     tol: float = 1e-10) -> tuple[np.ndarray, np.ndarray]:
    """MBAR for reduced potentials ``-beta_k z``: ``(ln w per sample, c)``.

    ``samples[k]``: the z values drawn at ``betas[k]`` (any lengths; an empty replica is allowed);
    ``ref``: the replica whose c is fixed at 0 (default: the one whose beta is closest to 0). The
    weights are returned in the order of ``np.concatenate(samples)``; with c_ref = 0, ``sum exp(ln w
    + beta_ref z) = 1``: the weights are the density of states in units of ``Z_ref``.
    """
    betas = np.asarray(betas, dtype=np.float64)
    N = np.array([len(s) for s in samples], dtype=np.float64)
    if betas.shape != N.shape:
        raise ValueError("one beta per replica")
    z_all = np.concatenate([np.asarray(s, dtype=np.float64) for s in samples])
    u, inverse, counts = np.unique(z_all, return_inverse=True, return_counts=True)
    ref = int(np.argmin(np.abs(betas))) if ref is None else int(ref)
    have = N > 0
    logN = np.where(have, np.log(np.where(have, N, 1.0)), -np.inf)
    bz = np.outer(u, betas)  # (U, K)

    start = _perturbation_start(samples, betas, ref)
    c = _newton(_mbar_objective(logN, bz, counts, N, ref, hessian=True), start, ref, tol)
    if c is None:  # Newton stalled (replicas that barely overlap, e.g. digits-mlp): scipy's L-BFGS from the start
        res = minimize(_mbar_objective(logN, bz, counts, N, ref, hessian=False), np.delete(start, ref), jac=True,
                       method="L-BFGS-B", options={"maxiter": 20000, "ftol": 1e-15, "gtol": tol})
        c = np.insert(res.x, ref, 0.0)
    log_counts = np.log(counts.astype(np.float64))
    for _ in range(20):  # polish with the MBAR fixed point: c_k = ln sum_i w_i exp(beta_k z_i)
        lw_u = -_lse_rows(logN + bz - c, shares=False)[0]
        new = _lse_rows(((lw_u + log_counts)[:, None] + bz).T, shares=False)[0]  # (K,): over the values
        new = np.where(have, new - new[ref], c)
        done = np.max(np.abs(new - c)) < 1e-12
        c = new
        if done:
            break
    lw_u = -_lse_rows(logN + bz - c, shares=False)[0]
    return lw_u[inverse], c


def _mbar_objective(logN: np.ndarray, bz: np.ndarray, counts: np.ndarray, N: np.ndarray, ref: int, hessian: bool):
    """``f(c_free) -> (A, gradient)``, with ``hessian`` ``(A, gradient, Hessian)``, of MBAR's convex objective
    over the free c's. The Hessian is ``sum_u counts_u (diag p_u - p_u p_u^T)``, K x K; L-BFGS does not need it."""
    total = float(N.sum())
    keep = np.arange(len(N)) != ref

    def f(c_free: np.ndarray) -> tuple:
        c = np.insert(c_free, ref, 0.0)
        lse, p = _lse_rows(logN + bz - c)  # p: each replica's share of each value's mixture
        value = float(counts @ lse + N @ c) / total
        cp = counts @ p
        grad = ((N - cp) / total)[keep]
        if not hessian:
            return value, grad
        hess = (np.diag(cp) - (p * counts[:, None]).T @ p) / total
        return value, grad, hess[np.ix_(keep, keep)]

    return f


def _newton(f, c: np.ndarray, ref: int, tol: float, max_iter: int = 50) -> np.ndarray | None:
    """Damped Newton on MBAR's objective (the method of Shirts & Chodera 2008, Sec. III.B): a handful of
    U x K passes where L-BFGS needs about eighty. ``None`` when it does not reach ``|gradient| <= tol``, or
    stalls (a step cut below 1/1000: replicas that barely overlap make the Hessian nearly singular), so
    that the caller's L-BFGS takes over at little cost."""
    x = np.delete(c, ref).astype(np.float64)
    value, grad, hess = f(x)
    for _ in range(max_iter):
        if np.max(np.abs(grad), initial=0.0) <= tol:
            return np.insert(x, ref, 0.0)
        try:
            step = np.linalg.solve(hess + 1e-12 * np.eye(len(x)), grad)
        except np.linalg.LinAlgError:
            return None
        t = 1.0
        g_max = np.max(np.abs(grad))
        while True:  # backtracking (Armijo) line search: the objective is convex, a full step is usual. Near the
            new = x - t * step  # optimum the value moves by less than its rounding; a halved gradient counts too
            nv, ng, nh = f(new)
            if nv <= value - 1e-4 * t * float(grad @ step) or np.max(np.abs(ng)) <= 0.5 * g_max or t < 1e-3:
                break
            t *= 0.5
        if t < 1e-3:
            return None
        x, value, grad, hess = new, nv, ng, nh
    return None


def _lse_rows(a: np.ndarray, shares: bool = True) -> tuple[np.ndarray, np.ndarray | None]:
    """Row-wise ln sum exp of ``a`` (U, K) and, with ``shares``, each entry's share exp(a - lse), from one exp
    (the solver's inner loop: scipy's general logsumexp costs two exps and its checks on every call). Columns
    of -inf (empty replicas) get share 0."""
    m = a.max(axis=1, keepdims=True)
    e = np.exp(a - m)
    s = e.sum(axis=1, keepdims=True)
    return (m + np.log(s))[:, 0], (e / s if shares else None)


def _perturbation_start(samples: Sequence[np.ndarray], betas: np.ndarray, ref: int) -> np.ndarray:
    """c_k by free-energy perturbation between neighbouring replicas (exponential averaging), c_ref = 0."""
    K = len(betas)
    order = np.argsort(betas)
    c_sorted = np.zeros(K)
    for j in range(1, K):
        lo, hi = order[j - 1], order[j]
        s = np.asarray(samples[lo], dtype=np.float64)
        if s.size == 0:
            c_sorted[j] = c_sorted[j - 1]
            continue
        c_sorted[j] = c_sorted[j - 1] + float(logsumexp((betas[hi] - betas[lo]) * s) - np.log(s.size))
    c = np.empty(K)
    c[order] = c_sorted
    return c - c[ref]


def binned_log_density(z: np.ndarray, log_w: np.ndarray, bin_width: float) -> tuple[np.ndarray, np.ndarray]:
    """``(bins, ln sum of w per bin)`` over the bins ``floor(z / bin_width)`` that hold samples."""
    b = np.floor(np.asarray(z, dtype=np.float64) / bin_width).astype(np.int64)
    bins, inv = np.unique(b, return_inverse=True)
    order = np.argsort(inv, kind="stable")
    starts = np.searchsorted(inv[order], np.arange(bins.size))
    return bins, np.logaddexp.reduceat(np.asarray(log_w, dtype=np.float64)[order], starts)


__all__ = ["binned_log_density", "mbar_log_weights"]
