"""Samplers without a Markov chain: independent uniform draws (``uniform``, the baseline) and every
input of a small space once (``exact``, the ground truth), with :func:`enumerate_outputs`."""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from ..models import as_model
from ..space import InputSpace
from .base import Sampler, sampler
from .estimates import histogram_estimate, stack_records
from .reservoirs import Reservoirs


@sampler("uniform", help="independent uniform draws from the input space (the baseline)")
class UniformSampler(Sampler):
    """Independent uniform draws: ``walkers`` per chain per step. rho per bin = |X| x (share of draws in
    the bin). Burn-in and proposals do not apply."""

    def __init__(self, *, walkers: int = 256, steps: int = 250, **kw: Any) -> None:
        kw.setdefault("burn_in", 0)
        super().__init__(steps=steps, **kw)
        self.walkers = walkers

    def _validate(self) -> None:
        super()._validate()
        self._int("walkers", 1)

    def _setup(self, quiet: bool | None) -> None:
        W = self.walkers * self.chains
        x = self._space.uniform(W, self._rng)
        self._x, self._z, self._g = x, self._eval(x), None
        self._dz = self._auto_bin_width(float(self._z.min()), float(self._z.max()))
        self._res = Reservoirs(self.keep)

    def _step(self) -> None:
        self._x = self._space.uniform(len(self._x), self._rng)
        self._z = self._eval(self._x)

    def _record(self) -> None:
        self._records.append(self._z.copy())
        self._res.add(np.zeros(len(self._z), dtype=np.int64), self._bins_of(self._z), self._x, self._z,
                      self._rng.random(len(self._z)))

    def _estimate(self):
        rec = stack_records(self._records, self._z.shape).reshape(-1, self.chains, self.walkers) if self._records else \
            np.zeros((0, self.chains, self.walkers))
        return histogram_estimate(rec.transpose(1, 0, 2).reshape(self.chains, -1), self._dz, self._space.log_size,
                                   None)


@sampler("exact", help="enumerate a small space (ground truth; at most 1e8 inputs)")
class ExactEnumeration(Sampler):
    """Every input of the space, once: the exact rho(z) (counts per bin). Uses the model's
    ``completions`` (all values of the last position at once) when it has one. ``keep`` inputs per bin
    are kept as candidates (a uniform subsample, seeded). ``bin_width`` is required."""

    uses_steps = False
    defer_interrupt = False

    def __init__(self, *, batch: int = 65536, **kw: Any) -> None:
        kw.setdefault("steps", 1)
        kw.setdefault("chains", 1)
        kw.setdefault("burn_in", 0)
        super().__init__(**kw)
        self.batch = batch

    def _validate(self) -> None:
        super()._validate()
        self._int("batch", 1)
        if self.bin_width is None:
            self._fail("bin_width", "a positive number (enumeration has no pilot to choose one)")

    def _setup(self, quiet: bool | None) -> None:
        self._dz = float(self.bin_width)
        self._res = Reservoirs(self.keep)
        self._counts: dict[int, int] = {}
        self._x = np.zeros((1, self._space.n_positions), dtype=self._space.dtype)
        self._z = np.zeros(1)
        self._g = None

    def _step(self) -> None:
        for x, z in enumerate_outputs(self._model, self._space, self.batch, self._count_eval):
            b = self._bins_of(z)
            ub, n = np.unique(b, return_counts=True)
            for bb, nn in zip(ub.tolist(), n.tolist()):
                self._counts[bb] = self._counts.get(bb, 0) + nn
            self._res.add(np.zeros(len(z), dtype=np.int64), b, x, z, self._rng.random(len(z)))

    def _count_eval(self, n: int) -> None:
        self._evals += n

    def _record(self) -> None:
        pass

    def _estimate(self):
        bins = np.array(sorted(self._counts), dtype=np.int64)
        counts = np.array([self._counts[b] for b in bins], dtype=np.int64)
        ln = np.log(counts.astype(np.float64))
        return bins, ln, ln[None, :].copy(), counts, {"exact": True, "inputs": int(counts.sum())}

    def _extra_state(self) -> dict[str, Any]:
        return {"count_bins": np.array(sorted(self._counts), dtype=np.int64),
                "count_n": np.array([self._counts[b] for b in sorted(self._counts)], dtype=np.int64)}

    def _load_extra(self, a: dict[str, Any]) -> None:
        self._counts = {int(b): int(n) for b, n in zip(a["count_bins"], a["count_n"])}


def enumerate_outputs(model: Any, space: InputSpace, batch: int = 65536,
                      count: Callable[[int], None] | None = None):
    """Yield ``(x, z)`` batches covering every input of ``space`` once (lexicographic order). A model with
    ``subtree`` is asked once per stem (the first k positions) for every sequence under it, k chosen so
    that a stem's sequences fit in ``batch`` (the positions after the stem must be unconstrained); else
    a model with ``completions`` is asked once per prefix for all values of the last position.
    ``count(n)`` is told the model calls' size: stems, prefixes or inputs."""
    model = as_model(model)
    free = _free_tail(space, batch) if getattr(model, "has_subtree", False) else 0
    if free:
        yield from _enumerate_subtrees(model, space, batch, count, free)
        return
    last = space.n_positions - 1
    if getattr(model, "has_completions", False) and space.mask[last].all():
        V = space.n_values
        for pre in space.enumerate(max(1, batch // V), last=False):
            zz = model.completions(pre)
            if count is not None:
                count(len(pre))
            x = np.concatenate([np.repeat(pre, V, axis=0), np.tile(np.arange(V, dtype=space.dtype), len(pre))[:, None]],
                               axis=1)
            yield x, zz.reshape(-1)
        return
    for x in space.enumerate(batch):
        if count is not None:
            count(len(x))
        yield x, model(x)


def _free_tail(space: InputSpace, batch: int) -> int:
    """Positions after the stem: as many unconstrained trailing positions as fit in a batch (at least one)."""
    D, V = space.n_positions, space.n_values
    free = 0
    while free < D and V ** (free + 1) <= max(batch, V) and space.mask[D - 1 - free].all():
        free += 1
    return free


def _enumerate_subtrees(model: Any, space: InputSpace, batch: int, count: Callable[[int], None] | None, free: int):
    D, V = space.n_positions, space.n_values
    k = D - free
    if k == 0:  # the whole space under one empty stem
        stems_iter = iter([np.zeros((1, 0), dtype=space.dtype)])
    else:
        stem_space = InputSpace(k, V, allowed=space.mask[:k])
        stems_iter = stem_space.enumerate(max(1, batch // V ** free))
    tails = np.indices((V,) * free, dtype=space.dtype).reshape(free, -1).T  # lexicographic, last varies fastest
    for stems in stems_iter:
        zz = model.subtree(stems)
        if count is not None:
            count(len(stems))
        x = np.concatenate([np.repeat(stems, tails.shape[0], axis=0), np.tile(tails, (len(stems), 1))], axis=1)
        yield x.astype(space.dtype), zz.reshape(-1)


__all__ = ["ExactEnumeration", "UniformSampler", "enumerate_outputs"]
