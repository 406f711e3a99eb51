"""From recorded outputs to ln rho: histogram estimates, normalisation to the size of the space, the
agreement of independent chains, and the default bin width."""

from __future__ import annotations

import math
from typing import Any, Callable

import numpy as np
from scipy.special import logsumexp

from ...errors import NotFittedError
from ..reweight import binned_log_density


def stack_records(records: list[np.ndarray], shape: tuple) -> np.ndarray:
    """The recorded outputs (one array per recorded step) as one (steps, ...) array; empty of ``shape`` when none."""
    return np.stack(records) if records else np.zeros((0, *shape))


def nice_width(w: float) -> float:
    """``w`` rounded up to 1, 2, 2.5 or 5 times a power of ten.

    >>> nice_width(0.37), nice_width(3.1), nice_width(12)
    (0.5, 5.0, 20.0)
    """
    if not np.isfinite(w) or w <= 0:
        return 1.0
    e = math.floor(math.log10(w))
    for m in (1.0, 2.0, 2.5, 5.0, 10.0):
        if m * 10**e >= w * (1 - 1e-12):
            return float(m * 10**e)
    return float(10 ** (e + 1))


def chain_agreement(ln_rho: np.ndarray, chains: np.ndarray, min_mass: float = 1e-6) -> dict[str, Any]:
    """How far the independent chains' ln rho estimates are apart, over the bins holding at least
    ``min_mass`` of the space: the largest and median standard deviation of ln rho across chains (after
    each chain is normalised to the same total), and how many such bins some chain never reached."""
    if chains.ndim != 2 or chains.shape[0] < 2:
        return {"chain_sd_max": None, "chain_sd_median": None, "bins_missed_by_a_chain": None}
    mass = np.exp(ln_rho - logsumexp(ln_rho))
    heavy = mass >= min_mass
    seen = ~np.isnan(chains)
    sub = np.where(seen, chains, np.nan)
    both = heavy & seen.all(axis=0)
    sd = np.nanstd(sub[:, both], axis=0, ddof=1) if both.any() else np.array([])
    return {"chain_sd_max": float(sd.max()) if sd.size else None,
            "chain_sd_median": float(np.median(sd)) if sd.size else None,
            "bins_missed_by_a_chain": int((heavy & ~seen.all(axis=0)).sum()), "min_mass": min_mass}


def normalised(ln_rho: np.ndarray, log_size: float) -> np.ndarray:
    """ln rho scaled so that the bins sum to the size of the space."""
    return ln_rho - logsumexp(ln_rho) + log_size


def histogram_estimate(per_chain: np.ndarray, dz: float, log_size: float,
                        log_w: Callable[[np.ndarray], np.ndarray] | None):
    """Bins, ln rho, per-chain ln rho and counts from recorded outputs (C, n), each weighted by
    ``exp(log_w(z))`` (None: 1), normalised to the size of the space over the bins seen."""
    allz = per_chain.reshape(-1)
    if allz.size == 0:
        raise NotFittedError("no outputs were recorded: raise steps above burn_in")
    lw = np.zeros(allz.size) if log_w is None else log_w(allz)
    bins, ln = binned_log_density(allz, lw, dz)
    ln = normalised(ln, log_size)
    chains = np.full((per_chain.shape[0], bins.size), np.nan)
    for c, zc in enumerate(per_chain):
        b, l = binned_log_density(zc, np.zeros(zc.size) if log_w is None else log_w(zc), dz)
        chains[c, np.searchsorted(bins, b)] = normalised(l, log_size)
    counts = np.bincount(np.searchsorted(bins, np.floor(allz / dz).astype(np.int64)), minlength=bins.size)
    return bins, ln, chains, counts, {}


__all__ = ["chain_agreement", "histogram_estimate", "nice_width", "normalised", "stack_records"]
