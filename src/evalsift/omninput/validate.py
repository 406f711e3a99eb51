"""Checking a sampler against the truth on an enumerable space (the toy validation).

:func:`exact_table` enumerates every input once and counts, per output bin, the inputs and the
positives of a rule: the exact rho(z) and r(z). :func:`compare_to_exact` measures how far a sampled
estimate is from it: L1 distance and KL divergence of the normalised rho over bins holding at least
``min_mass`` of the space (and the mass of such bins the sampler never reached), and the largest and
mean absolute error of r(z) over those bins -- from every candidate input the sampler kept (the
sampler's own error) and from ``per_bin`` judged representatives (what an annotation budget gives) --
and the AUPR of both against the exact one.

:func:`uniform_equivalent` turns a sampler's relative error in a rare bin into the number of uniform
random samples that would estimate that bin as well: a uniform estimate of a bin holding a share p of
the space from N draws has relative standard error sqrt((1 - p) / (N p)), so N = (1 - p) / (p e^2).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from .curves import aupr_full, pr_curve
from .samplers import enumerate_outputs
from .samples import OmniSamples
from .space import InputSpace


@dataclass(frozen=True)
class ExactTable:
    """Per bin of width ``bin_width``: ``bins``, ``count`` (inputs), ``positives`` (inputs the rule accepts)."""

    bin_width: float
    bins: np.ndarray
    count: np.ndarray
    positives: np.ndarray

    @property
    def mass(self) -> np.ndarray:
        """Share of the space per bin."""
        return self.count / self.count.sum()

    @property
    def r(self) -> np.ndarray:
        """Share of positives per bin."""
        return self.positives / self.count

    def aupr(self, positive: str) -> float:
        """The exact AUPR (recall 0..1, see :func:`~.curves.aupr_full`)."""
        c = pr_curve(np.log(self.count.astype(np.float64)), self.r, positive)
        return aupr_full(c["recall"], c["precision"])


def exact_table(model: Any, space: InputSpace, bin_width: float, rule: Callable[[np.ndarray], np.ndarray],
                batch: int = 262144) -> ExactTable:
    """Enumerate ``space`` (at most 1e8 inputs; the model's ``completions`` make it V times cheaper)."""
    counts: dict[int, int] = {}
    pos: dict[int, int] = {}
    for x, z in enumerate_outputs(model, space, batch):
        b = np.floor(z / bin_width).astype(np.int64)
        y = np.asarray(rule(x), dtype=np.int64)
        ub, inv = np.unique(b, return_inverse=True)
        n = np.bincount(inv)
        k = np.bincount(inv, weights=y)
        for bb, nn, kk in zip(ub.tolist(), n.tolist(), k.tolist()):
            counts[bb] = counts.get(bb, 0) + nn
            pos[bb] = pos.get(bb, 0) + int(kk)
    bins = np.array(sorted(counts), dtype=np.int64)
    return ExactTable(bin_width, bins, np.array([counts[b] for b in bins], dtype=np.int64),
                      np.array([pos[b] for b in bins], dtype=np.int64))


def _weighted_r(samples: OmniSamples, rule: Callable[[np.ndarray], np.ndarray]) -> dict[int, float]:
    c = samples.candidates
    y = np.asarray(rule(c.x), dtype=np.float64)
    out = {}
    for b in np.unique(c.bin):
        k = c.bin == b
        w = np.exp(c.log_weight[k] - c.log_weight[k].max())
        out[int(b)] = float((w * y[k]).sum() / w.sum())
    return out


def compare_to_exact(samples: OmniSamples, exact: ExactTable, rule: Callable[[np.ndarray], np.ndarray], *,
                     min_mass: float = 1e-6, per_bin: int | None = 10, seed: int = 0) -> dict[str, Any]:
    """How close ``samples`` (on the same bin width) is to ``exact`` (see the module doc)."""
    if not np.isclose(samples.bin_width, exact.bin_width):
        raise ValueError("samples and the exact table need the same bin width")
    m_true = dict(zip(exact.bins.tolist(), exact.mass.tolist()))
    m_est = dict(zip(samples.bins.tolist(), samples.mass().tolist()))
    r_true = dict(zip(exact.bins.tolist(), exact.r.tolist()))
    every = sorted(set(m_true) | set(m_est))
    l1 = float(sum(abs(m_true.get(b, 0.0) - m_est.get(b, 0.0)) for b in every))
    heavy = [b for b in exact.bins.tolist() if m_true[b] >= min_mass]
    reached = [b for b in heavy if m_est.get(b, 0.0) > 0]
    kl = float(sum(m_true[b] * np.log(m_true[b] / m_est[b]) for b in reached))
    missed = float(sum(m_true[b] for b in heavy if b not in reached))
    r_all = _weighted_r(samples, rule)
    err_all = [abs(r_all[b] - r_true[b]) for b in heavy if b in r_all]
    out: dict[str, Any] = {
        "l1": l1, "kl": kl, "heavy_bins": len(heavy), "heavy_bins_reached": len(reached), "missed_mass": missed,
        "r_error_max": float(max(err_all)) if err_all else None,
        "r_error_mean": float(np.mean(err_all)) if err_all else None, "r_bins": len(err_all),
        "aupr_exact": exact.aupr(samples.positive), "evaluations": samples.evaluations, "seconds": samples.seconds,
    }
    # the curve with the exact r on the sampled rho: the sampler's own effect on AUPR
    r_on_est = np.array([r_true.get(b, 0.0) for b in samples.bins.tolist()])
    c = pr_curve(samples.ln_rho, r_on_est, samples.positive)
    out["aupr_sampled_rho"] = aupr_full(c["recall"], c["precision"])
    if per_bin:
        from .curves import omni_curve

        reps = samples.representatives(per_bin, seed=seed)
        y = np.asarray(rule(reps.x), dtype=np.float64)
        judged: dict[int, list[float]] = {}
        for b, v in zip(reps.bin.tolist(), y.tolist()):
            judged.setdefault(b, []).append(v)
        err = [abs(np.mean(judged[b]) - r_true[b]) for b in heavy if b in judged]
        cur = omni_curve(samples, reps.z, y, n_boot=400, seed=seed)
        lo, hi = cur["intervals"]["aupr"]
        out.update(judged_per_bin=per_bin, r_judged_error_max=float(max(err)) if err else None,
                   r_judged_error_mean=float(np.mean(err)) if err else None, aupr=cur["aupr"],
                   aupr_interval=[lo, hi], aupr_covered=bool(lo <= out["aupr_exact"] <= hi))
    return out


def additive_exact(contrib: np.ndarray, bias: float, bin_width: float, grid: float = 1e-3,
                   mask: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Exact ``(bins, ln rho)`` of an additive model ``z = bias + sum_d contrib[d, x_d]`` over every input
    (e.g. a logistic regression on pixels), by direct convolution of the per-position distributions on a
    grid of step ``grid`` (each term rounded to it: z is off by at most D * grid / 2). Direct, not FFT:
    the terms are nonnegative, so the far tails keep their relative accuracy (down to e^-700).

    >>> b, ln = additive_exact(np.array([[0.0, 1.0], [0.0, 1.0]]), 0.0, 1.0)   # z = x0 + x1: 1, 2, 1 inputs
    >>> b.tolist(), np.exp(ln).round(6).tolist()
    ([0, 1, 2], [1.0, 2.0, 1.0])
    """
    contrib = np.asarray(contrib, dtype=np.float64)
    D, V = contrib.shape
    allowed = np.ones((D, V), dtype=bool) if mask is None else np.asarray(mask, dtype=bool)
    steps = np.round(contrib / grid).astype(np.int64)
    lo = int(sum(steps[d, allowed[d]].min() for d in range(D)))
    hi = int(sum(steps[d, allowed[d]].max() for d in range(D)))
    dist = np.zeros(hi - lo + 1)
    dist[0] = 1.0
    width = 1  # dist[:width] counts inputs (scaled) with grid index lo + i over the positions so far
    scale = 0.0  # dist is kept near 1 at its peak; ln of the factor taken out
    for d in range(D):
        s = steps[d, allowed[d]] - steps[d, allowed[d]].min()
        new = np.zeros(width + int(s.max()))
        for k in s:
            new[k:k + width] += dist[:width]
        width = new.size
        m = new.max()
        dist[:width] = new / m
        scale += np.log(m)
    z = (lo + np.arange(width)) * grid + bias
    with np.errstate(divide="ignore"):
        lw = np.log(dist[:width]) + scale
    keep = np.isfinite(lw)
    bins = np.floor(z[keep] / bin_width + 1e-9).astype(np.int64)
    ub, inv = np.unique(bins, return_inverse=True)
    out = np.full(ub.size, -np.inf)
    np.logaddexp.at(out, inv, lw[keep])
    return ub, out


def uniform_equivalent(mass: float, rel_error: float) -> float:
    """Uniform draws needed to estimate a bin holding ``mass`` of the space with relative standard error
    ``rel_error``: (1 - p) / (p e^2).

    >>> round(uniform_equivalent(1e-4, 0.1))     # (1 - 1e-4) / (1e-4 * 0.01)
    999900
    """
    return float((1.0 - mass) / (mass * rel_error**2))


__all__ = ["ExactTable", "additive_exact", "compare_to_exact", "exact_table", "uniform_equivalent"]
