"""Metropolis walkers at fixed inverse temperatures: one beta (``metropolis``, single-histogram
reweighting) or a ladder of betas exchanging states (``pt``, parallel tempering with
multiple-histogram reweighting, the default)."""

from __future__ import annotations

from typing import Any

import numpy as np
from scipy.special import logsumexp

from ...errors import NotFittedError, check_choice
from ..reweight import binned_log_density, mbar_log_weights
from .base import Sampler, sampler
from .estimates import histogram_estimate, stack_records
from .reservoirs import Reservoirs

DIRECTIONS = ("auto", "high", "low", "both")


@sampler("metropolis", help="Metropolis at one inverse temperature beta (single-site or block moves)")
class MetropolisSampler(Sampler):
    """``walkers`` Metropolis walkers per chain at one inverse temperature ``beta`` (target
    ``exp(beta z)``). ln rho by single-histogram reweighting (weights ``exp(-beta z)``), normalised over
    the bins it visited: accurate only where its distribution has mass (beta 0: near the bulk)."""

    def __init__(self, *, beta: float = 0.0, walkers: int = 16, **kw: Any) -> None:
        super().__init__(**kw)
        self.beta = beta
        self.walkers = walkers

    def _validate(self) -> None:
        super()._validate()
        self._int("walkers", 1)
        if isinstance(self.beta, bool) or not isinstance(self.beta, (int, float)) or not np.isfinite(self.beta):
            self._fail("beta", "a finite number")

    def _setup(self, quiet: bool | None) -> None:
        W = self.walkers * self.chains
        self._init_walkers(self._space.uniform(W, self._rng))
        self._acc = np.zeros(2)
        self._res = Reservoirs(self.keep)
        if self.bin_width is None:  # a short look at the range it will wander over
            _, _, t = self._anneal(self._x, self._z, float(self.beta), max(20, 2 * self._space.free.size))
            self._dz = self._auto_bin_width(float(t.min()), float(t.max()))
        else:
            self._dz = float(self.bin_width)

    def _step(self) -> None:
        self._x, self._z, self._g, acc = self._mh(self._x, self._z, lambda z, i: self.beta * z, self._g,
                                                  lambda z: np.full(z.size, float(self.beta)))
        self._acc += (acc.sum(), acc.size)

    def _record(self) -> None:
        self._records.append(self._z.copy())
        self._res.add(np.zeros(len(self._z), dtype=np.int64), self._bins_of(self._z), self._x, self._z,
                      self._rng.random(len(self._z)))

    def _estimate(self):
        rec = stack_records(self._records, self._z.shape).reshape(-1, self.chains, self.walkers)
        out = histogram_estimate(rec.transpose(1, 0, 2).reshape(self.chains, -1), self._dz, self._space.log_size,
                                  lambda z: -self.beta * z)
        diag = {"acceptance": float(self._acc[0] / max(1.0, self._acc[1])), "beta": float(self.beta),
                "normalisation": "over the bins visited (single-histogram reweighting; mass outside them is missed)"}
        return (*out[:4], diag)

    def _candidate_log_weights(self, z: np.ndarray, slot: np.ndarray) -> np.ndarray:
        return -float(self.beta) * z

    def _extra_state(self) -> dict[str, Any]:
        return {"acc": self._acc.copy()}

    def _load_extra(self, a: dict[str, Any]) -> None:
        self._acc = np.asarray(a["acc"], dtype=np.float64)


# ---------------------------------------------------------------------------------------------- tempering
@sampler("pt", help="parallel tempering + multiple-histogram reweighting (the default)")
class ParallelTempering(Sampler):
    """Parallel tempering with replica exchange and multiple-histogram (MBAR) reweighting.

    ``replicas``: inverse temperatures per chain, from 0 (uniform) to ``beta_max`` (``'auto'``: from the
    pilot); ``direction``: which tail of z the cold replicas push toward -- 'high', 'low', 'both', or
    'auto' (the model's positive side: 'high' for a logit, 'low' for an NLL); ``swap_every``: steps
    between exchange rounds (even and odd neighbour pairs alternate); ``tune``: reposition the betas
    during burn-in so that every neighbour pair swaps equally often (equal thermodynamic length:
    sqrt(-ln acceptance) per gap).
    """

    def __init__(self, *, replicas: int = 16, beta_max: float | str = "auto", direction: str = "auto",
                 swap_every: int = 1, tune: bool = True, steps: int = 10000, **kw: Any) -> None:
        # 10,000 steps: on the digits' logistic regression the cold replicas still drift at 3,000 (docs/omninput.md)
        super().__init__(steps=steps, **kw)
        self.replicas = replicas
        self.beta_max = beta_max
        self.direction = direction
        self.swap_every = swap_every
        self.tune = tune

    def _validate(self) -> None:
        super()._validate()
        self._int("replicas", 2)
        self._int("swap_every", 1)
        check_choice("direction", self.direction, DIRECTIONS, where=f"sampler '{self.name}'")
        bm = self.beta_max
        if not (bm == "auto" or (not isinstance(bm, bool) and isinstance(bm, (int, float)) and np.isfinite(bm)
                                 and bm > 0)):
            self._fail("beta_max", "'auto' or a positive number")
        if self.direction == "both" and self.replicas < 3:
            self._fail("replicas", "at least 3 with direction='both'")

    def _signs(self) -> tuple[int, ...]:
        d = self.direction if self.direction != "auto" else self._model.positive
        return {"high": (1,), "low": (-1,), "both": (-1, 1)}[d]

    def _setup(self, quiet: bool | None) -> None:
        signs = self._signs()
        C, R = self.chains, self.replicas
        pilot = self._pilot(signs, C, quiet)
        top = {s: (pilot["beta"][s] if self.beta_max == "auto" else float(self.beta_max)) for s in signs}
        if len(signs) == 1:
            s = signs[0]
            betas = s * _geometric(top[s], R)
        else:
            n_neg = (R - 1) // 2
            betas = np.concatenate([-_geometric(top[-1], n_neg + 1)[::-1], _geometric(top[1], R - n_neg)[1:]])
        self._betas = np.sort(betas)
        self._r0 = int(np.argmin(np.abs(self._betas)))
        self._dz = self._auto_bin_width(pilot["lo"], pilot["hi"])
        # start each replica from the pilot stage nearest its beta
        stages = sorted(pilot["states"])
        x = np.empty((R, C, self._space.n_positions), dtype=self._space.dtype)
        for k, b in enumerate(self._betas):
            near = min(stages, key=lambda s: abs(s - b))
            xs = pilot["states"][near][0]
            x[k] = xs[:C] if len(xs) >= C else xs[self._rng.integers(0, len(xs), C)]
        self._init_walkers(x.reshape(R * C, -1))
        self._labels = np.tile(np.arange(R)[:, None] * C + np.arange(C)[None, :], 1)  # walker id at (slot, chain)
        self._last_end = np.full(R * C, -1, dtype=np.int64)  # per walker id: last end of the ladder visited
        self._half_trips = np.zeros(R * C, dtype=np.int64)
        self._swap_tries = np.zeros(R - 1)
        self._swap_acc = np.zeros(R - 1)
        self._tune_tries = np.zeros(R - 1)
        self._tune_acc = np.zeros(R - 1)
        self._move_acc = np.zeros((R, 2))
        self._zsum, self._zn = np.zeros(R), np.zeros(R)
        self._pilot_info = {"sigma0": pilot["sigma0"], "beta_max": {str(k): v for k, v in top.items()},
                            "range": [pilot["lo"], pilot["hi"]]}
        self._res = Reservoirs(self.keep)
        self._update_ends()

    def _walker_betas(self) -> np.ndarray:
        return np.repeat(self._betas, self.chains)

    def _step(self) -> None:
        bw = self._walker_betas()
        self._x, self._z, self._g, acc = self._mh(self._x, self._z, lambda z, i: bw[i] * z, self._g, lambda z: bw)
        a = acc.reshape(self.replicas, self.chains)
        self._move_acc[:, 0] += a.sum(axis=1)
        self._move_acc[:, 1] += self.chains
        if self._step_no < self._burn_steps:
            self._zsum += self._z.reshape(self.replicas, self.chains).sum(axis=1)
            self._zn += self.chains
        if self._step_no % self.swap_every == 0:
            self._swap((self._step_no // self.swap_every) % 2)
        burn = self._burn_steps
        if self.tune and self._step_no < burn:
            every = max(20, burn // 10)
            if (self._step_no + 1) % every == 0 and self._step_no + 1 < burn:
                self._retune()

    def _swap(self, parity: int) -> None:
        R, C = self.replicas, self.chains
        x = self._x.reshape(R, C, -1)
        z = self._z.reshape(R, C)
        g = None if self._g is None else self._g.reshape(R, C, *self._g.shape[1:])
        ks = np.arange(parity, R - 1, 2)
        if ks.size == 0:
            return
        log_a = (self._betas[ks, None] - self._betas[ks + 1, None]) * (z[ks + 1] - z[ks])
        acc = np.log(self._rng.random(log_a.shape)) < log_a  # (pairs, C)
        kk, cc = np.nonzero(acc)
        lo, hi = ks[kk], ks[kk] + 1
        x[lo, cc], x[hi, cc] = x[hi, cc].copy(), x[lo, cc].copy()
        z[lo, cc], z[hi, cc] = z[hi, cc].copy(), z[lo, cc].copy()
        if g is not None:
            g[lo, cc], g[hi, cc] = g[hi, cc].copy(), g[lo, cc].copy()
        self._labels[lo, cc], self._labels[hi, cc] = self._labels[hi, cc].copy(), self._labels[lo, cc].copy()
        tries, hits = np.full(ks.size, C, dtype=float), acc.sum(axis=1).astype(float)
        if self._step_no < self._burn_steps:
            self._tune_tries[ks] += tries
            self._tune_acc[ks] += hits
        else:
            self._swap_tries[ks] += tries
            self._swap_acc[ks] += hits
        self._update_ends()

    def _update_ends(self) -> None:
        for end, slot in ((0, 0), (1, self.replicas - 1)):
            ids = self._labels[slot]
            moved = self._last_end[ids] == 1 - end
            self._half_trips[ids[moved]] += 1
            self._last_end[ids] = end

    def _retune(self) -> None:
        """Move the inner betas toward equal sqrt(-ln acceptance) per gap (damped by half), after cooling
        less where the coldest replicas are redundant (see :meth:`_shrink_ends`)."""
        rate = np.where(self._tune_tries > 0, self._tune_acc / np.maximum(self._tune_tries, 1), np.nan)
        if np.isnan(rate).any():
            return
        self._shrink_ends()
        cost = np.sqrt(-np.log(np.clip(rate, 0.005, 0.995)))
        new = self._betas.copy()
        for lo, hi in _segments(self._r0, self.replicas):
            if hi - lo < 2:
                continue
            seg = self._betas[lo:hi + 1]
            cum = np.concatenate([[0.0], np.cumsum(cost[lo:hi])])
            target = np.interp(np.linspace(0, cum[-1], hi - lo + 1), cum, seg)
            new[lo + 1:hi] = 0.5 * seg[1:-1] + 0.5 * target[1:-1]
        self._betas = new
        self._tune_tries[:] = 0
        self._tune_acc[:] = 0
        self._zsum[:] = 0
        self._zn[:] = 0

    def _shrink_ends(self) -> None:
        """When the three coldest replicas of a side had mean outputs within half a bin of each other over
        the last tuning window, they sit at the floor of the output range together and the coldest is
        redundant (beta_max overshoots: the pilot could not equilibrate that cold); scale that side's
        betas by 0.7. Two stay at the floor, so the rarest bins keep being sampled. Burn-in only."""
        mean = self._zsum / np.maximum(self._zn, 1)
        R = self.replicas
        for lo, hi in _segments(self._r0, R):
            ends = [hi, hi - 1, hi - 2] if hi != self._r0 else [lo, lo + 1, lo + 2]
            if hi - lo >= 3 and np.ptp(mean[ends]) < 0.5 * self._dz:
                self._betas[lo:hi + 1] *= 0.7
    def _record(self) -> None:
        self._records.append(self._z.copy())
        slots = np.repeat(np.arange(self.replicas), self.chains)
        self._res.add(slots, self._bins_of(self._z), self._x, self._z, self._rng.random(len(self._z)))

    def _mbar(self, rec: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """ln w per recorded output (rec: (T, R, Cs)) and the c's."""
        samples = [rec[:, k, :].reshape(-1) for k in range(self.replicas)]
        lw, c = mbar_log_weights(samples, self._betas, ref=self._r0)
        return lw, c

    def _estimate(self):
        R, C = self.replicas, self.chains
        rec = stack_records(self._records, self._z.shape)
        if rec.shape[0] == 0:
            raise NotFittedError("no outputs were recorded: raise steps above burn_in")
        rec = rec.reshape(-1, R, C)
        lw, c = self._mbar(rec)
        self._c = c
        z_all = np.concatenate([rec[:, k, :].reshape(-1) for k in range(R)])
        bins, ln = binned_log_density(z_all, lw, self._dz)
        ln = ln + self._space.log_size  # the beta=0 replica's Z is the whole space (c_ref = 0)
        chains = np.full((C, bins.size), np.nan)
        for ch in range(C):
            sub = rec[:, :, ch:ch + 1]
            lwc, _ = self._mbar(sub)
            zc = np.concatenate([sub[:, k, :].reshape(-1) for k in range(R)])
            b, l = binned_log_density(zc, lwc, self._dz)
            chains[ch, np.searchsorted(bins, b)] = l + self._space.log_size
        counts = np.bincount(np.searchsorted(bins, np.floor(z_all / self._dz).astype(np.int64)), minlength=bins.size)
        swap = np.where(self._swap_tries > 0, self._swap_acc / np.maximum(self._swap_tries, 1), np.nan)
        trips = self._half_trips // 2
        half = rec.shape[0] // 2
        drift = (np.abs(rec[half:].mean(axis=(0, 2)) - rec[:half].mean(axis=(0, 2))) / self._dz if half else
                 np.zeros(R))
        diag = {"ladder": self._betas.tolist(), "swap_acceptance": swap.tolist(),
                "drift_bins": drift.tolist(), "drift_bins_max": float(drift.max()),
                "swap_acceptance_min": float(np.nanmin(swap)) if np.isfinite(swap).any() else None,
                "move_acceptance": (self._move_acc[:, 0] / np.maximum(self._move_acc[:, 1], 1)).tolist(),
                "round_trips": int(trips.sum()), "round_trips_per_chain": [
                    int(trips[np.arange(R)[:, None] * C + ch].sum()) for ch in range(C)],
                "pilot": self._pilot_info, "mass_check": float(np.exp(logsumexp(ln) - self._space.log_size))}
        return bins, ln, chains, counts, diag

    def _candidate_log_weights(self, z: np.ndarray, slot: np.ndarray) -> np.ndarray:
        if not hasattr(self, "_c"):
            self._estimate()
        N = np.full(self.replicas, float(len(self._records) * self.chains))
        return -logsumexp(np.log(N)[None, :] + np.outer(z, self._betas) - self._c[None, :], axis=1)

    def _extra_state(self) -> dict[str, Any]:
        return {"betas": self._betas.copy(), "labels": self._labels.copy(), "last_end": self._last_end.copy(),
                "zsum": self._zsum.copy(), "zn": self._zn.copy(),
                "half_trips": self._half_trips.copy(), "swap_tries": self._swap_tries.copy(),
                "swap_acc": self._swap_acc.copy(), "tune_tries": self._tune_tries.copy(),
                "tune_acc": self._tune_acc.copy(), "move_acc": self._move_acc.copy(), "pilot": self._pilot_info}

    def _load_extra(self, a: dict[str, Any]) -> None:
        for k in ("betas", "labels", "last_end", "half_trips", "swap_tries", "swap_acc", "tune_tries", "tune_acc",
                  "move_acc", "zsum", "zn"):
            setattr(self, "_" + k, np.array(a[k]))
        self._r0 = int(np.argmin(np.abs(self._betas)))
        self._pilot_info = a["pilot"]


def _geometric(top: float, n: int) -> np.ndarray:
    """n betas from 0 to ``top``: 0, then geometric from top / 2^(n-2)... (at least a factor 2 apart)."""
    if n == 1:
        return np.array([0.0])
    inner = top * np.geomspace(1.0 / max(2.0, 2.0 ** (n - 2)) if n > 2 else 1.0, 1.0, n - 1)
    return np.concatenate([[0.0], inner])


def _segments(r0: int, R: int) -> list[tuple[int, int]]:
    """Ladder segments with fixed ends: [0, r0] and [r0, R-1] (beta 0 stays put)."""
    return [(lo, hi) for lo, hi in ((0, r0), (r0, R - 1)) if hi > lo]


__all__ = ["DIRECTIONS", "MetropolisSampler", "ParallelTempering"]
