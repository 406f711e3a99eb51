"""Wang-Landau flat-histogram sampling (``wang_landau``), with the 1/t schedule at the end."""

from __future__ import annotations

from typing import Any

import numpy as np

from ...errors import ParameterError
from .base import Sampler, sampler
from .estimates import normalised, stack_records
from .reservoirs import Reservoirs


@sampler("wang_landau", help="Wang-Landau flat-histogram sampling (1/t schedule at the end)")
class WangLandau(Sampler):
    """Wang-Landau: ``walkers`` per chain share one running ln g(z) per chain over the bins of
    ``z_range`` (None: the pilot's range widened by 5%); each visit adds ln f to its bin, ln f is halved
    whenever the chain's histogram is ``flatness``-flat (every visited bin at least that share of the
    mean), and once ln f falls below (bins visited) / (moves per walker so far) it follows that 1/t
    curve. Moves that leave the range are refused. ln rho = ln g, normalised to the size of the space
    (the mass outside the range is the pilot's uniform draws' share outside it, reported)."""

    def __init__(self, *, walkers: int = 8, flatness: float = 0.8, ln_f0: float = 1.0, check_every: int = 100,
                 z_range: tuple[float, float] | None = None, steps: int = 20000, **kw: Any) -> None:
        kw.setdefault("burn_in", 0.5)
        super().__init__(steps=steps, **kw)
        self.walkers = walkers
        self.flatness = flatness
        self.ln_f0 = ln_f0
        self.check_every = check_every
        self.z_range = z_range

    def _validate(self) -> None:
        super()._validate()
        self._int("walkers", 1)
        self._int("check_every", 1)
        if not (isinstance(self.flatness, (int, float)) and 0 < self.flatness < 1):
            self._fail("flatness", "a number in (0, 1)")
        if not (isinstance(self.ln_f0, (int, float)) and self.ln_f0 > 0):
            self._fail("ln_f0", "a positive number")
        r = self.z_range
        if r is not None and not (len(r) == 2 and np.isfinite(r).all() and r[0] < r[1]):
            self._fail("z_range", "(low, high) with low < high, or None")

    def _setup(self, quiet: bool | None) -> None:
        C, Wc = self.chains, self.walkers
        if self.z_range is None:
            pilot = self._pilot((-1, 1), C * Wc, quiet)
            lo, hi = pilot["lo"], pilot["hi"]
            pad = 0.05 * (hi - lo)
            lo, hi = lo - pad, hi + pad
            states = [v[0] for v in pilot["states"].values()]
            pool_x = np.concatenate(states)
            pool_z = np.concatenate([v[1] for v in pilot["states"].values()])
        else:
            lo, hi = (float(v) for v in self.z_range)
            pool_x = self._space.uniform(C * Wc * 4, self._rng)
            pool_z = self._eval(pool_x)
        self._dz = self._auto_bin_width(lo, hi)
        self._b_lo = int(np.floor(lo / self._dz))
        self._nb = int(np.floor(hi / self._dz)) - self._b_lo + 1
        inside = (pool_z >= self._b_lo * self._dz) & (pool_z < (self._b_lo + self._nb) * self._dz)
        if not inside.any():
            raise ParameterError(f"sampler 'wang_landau': no input found with z in the range [{lo:g}, {hi:g}); widen "
                                 "z_range", field="z_range")
        cand = np.flatnonzero(inside)
        # spread the walkers over the range: pick starting states at evenly spaced quantiles of z
        order = cand[np.argsort(pool_z[cand])]
        pick = order[np.linspace(0, order.size - 1, C * Wc).round().astype(int)]
        self._init_walkers(pool_x[pick].copy())
        self._lng = np.zeros((C, self._nb))
        self._H = np.zeros((C, self._nb))
        self._visited = np.zeros((C, self._nb), dtype=bool)
        self._lnf = np.full(C, float(self.ln_f0))
        self._stages = np.zeros(C, dtype=np.int64)
        self._one_over_t = np.zeros(C, dtype=bool)
        self._chain = np.repeat(np.arange(C), Wc)
        self._res = Reservoirs(self.keep)
        self._range = [self._b_lo * self._dz, (self._b_lo + self._nb) * self._dz]
        self._visit(self._z)

    def _local(self, z: np.ndarray) -> np.ndarray:
        return np.floor(z / self._dz).astype(np.int64) - self._b_lo

    def _visit(self, z: np.ndarray) -> None:
        b = self._local(z)
        np.add.at(self._lng, (self._chain, b), self._lnf[self._chain])
        np.add.at(self._H, (self._chain, b), 1.0)
        self._visited[self._chain, b] = True

    def _log_target(self, z: np.ndarray, i: np.ndarray) -> np.ndarray:
        b = self._local(z)
        ok = (b >= 0) & (b < self._nb)
        return np.where(ok, -self._lng[self._chain[i], np.clip(b, 0, self._nb - 1)], -np.inf)

    def _slope(self, z: np.ndarray) -> np.ndarray:
        """-(d ln g / dz) at each walker's bin (the coefficient of z in ln pi), for gradient proposals."""
        b = np.clip(self._local(z), 1, self._nb - 2)
        ch = self._chain[: z.size]
        return -(self._lng[ch, b + 1] - self._lng[ch, b - 1]) / (2 * self._dz)

    def _step(self) -> None:
        self._x, self._z, self._g, _ = self._mh(self._x, self._z, self._log_target, self._g, self._slope)
        self._visit(self._z)
        t = (self._step_no + 1) * self.walkers
        if (self._step_no + 1) % self.check_every == 0:
            for c in range(self.chains):
                if self._one_over_t[c]:
                    continue
                v = self._visited[c]
                h = self._H[c, v]
                if h.size and h.min() >= self.flatness * h.mean():
                    self._lnf[c] /= 2.0
                    self._stages[c] += 1
                    self._H[c] = 0
                    if self._lnf[c] < v.sum() / t:
                        self._one_over_t[c] = True
        for c in np.flatnonzero(self._one_over_t):
            self._lnf[c] = self._visited[c].sum() / t

    def _record(self) -> None:
        self._records.append(self._z.copy())
        self._res.add(self._chain.copy(), self._bins_of(self._z), self._x, self._z, self._rng.random(len(self._z)))

    def _estimate(self):
        C = self.chains
        ln_c = np.where(self._visited, self._lng, np.nan)
        ln_c = ln_c - np.nanmax(ln_c, axis=1, keepdims=True)
        seen = self._visited.any(axis=0)
        bins = np.flatnonzero(seen) + self._b_lo
        chains = ln_c[:, seen]
        for c in range(C):
            ok = ~np.isnan(chains[c])
            chains[c, ok] = normalised(chains[c, ok], self._space.log_size)
        # the pooled estimate: the chains' average of ln g, each chain aligned to the others on shared bins
        both = ~np.isnan(chains).any(axis=0)
        aligned = chains.copy()
        if both.any():
            ref = np.nanmean(chains[:, both], axis=0)
            for c in range(C):
                aligned[c] = chains[c] - np.mean(chains[c, both] - ref)
        ln = normalised(np.nanmean(aligned, axis=0), self._space.log_size)
        rec = stack_records(self._records, self._z.shape).reshape(-1)
        rec_b = np.floor(rec / self._dz).astype(np.int64)
        counts = np.array([(rec_b == b).sum() for b in bins], dtype=np.int64)
        H = self._H.copy()
        flat = [float(H[c, self._visited[c]].min() / max(H[c, self._visited[c]].mean(), 1e-300))
                if self._visited[c].any() and H[c, self._visited[c]].sum() > 0 else None for c in range(C)]
        diag = {"ln_f": self._lnf.tolist(), "stages": self._stages.tolist(), "one_over_t": self._one_over_t.tolist(),
                "flatness": flat, "range": self._range,
                "note": "ln rho covers the range only; inputs with z outside it are not counted"}
        return bins, ln, chains, counts, diag

    def _extra_state(self) -> dict[str, Any]:
        return {"lng": self._lng.copy(), "H": self._H.copy(), "visited": self._visited.copy(), "lnf": self._lnf.copy(),
                "stages": self._stages.copy(), "one_over_t": self._one_over_t.copy(), "b_lo": self._b_lo,
                "nb": self._nb, "range": self._range}

    def _load_extra(self, a: dict[str, Any]) -> None:
        self._lng, self._H = np.array(a["lng"]), np.array(a["H"])
        self._visited, self._lnf = np.array(a["visited"], dtype=bool), np.array(a["lnf"])
        self._stages, self._one_over_t = np.array(a["stages"]), np.array(a["one_over_t"], dtype=bool)
        self._b_lo, self._nb, self._range = int(a["b_lo"]), int(a["nb"]), list(a["range"])
        self._chain = np.repeat(np.arange(self.chains), self.walkers)


__all__ = ["WangLandau"]
