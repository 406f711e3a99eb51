"""Samplers of a model's input space by output value (registry ``samplers``, decorator ``@sampler``).

Every sampler runs a batch of walkers (replicas x independent chains) as one (W, D) array, so one
model call serves every walker at each step; proposals, acceptances and swaps are vectorised.

- ``uniform``: independent uniform draws (the baseline: how a test set drawn at random sees the space).
- ``metropolis``: one inverse temperature ``beta`` (target ``exp(beta z)``; beta 0 is a random walk over
  the uniform distribution), single-histogram reweighting to ln rho near its typical outputs.
- ``pt`` (parallel tempering): replicas at a ladder of betas from 0 to ``beta_max`` (negative betas
  for the low side of z), neighbours exchanging states (replica exchange); the ladder is tuned during
  burn-in so that neighbour swaps are accepted equally often, ``beta_max='auto'`` is found by a pilot
  that doubles beta until the mean output stops moving; every recorded output enters the
  multiple-histogram (MBAR) estimate of ln rho, normalised by the replica at beta 0.
- ``wang_landau``: flat-histogram sampling with a running ln g(z) per chain, the modification
  factor halved when the histogram is flat, then the 1/t schedule (Belardinelli & Pereyra 2007) so it
  does not saturate; the range of z comes from a pilot.
- ``exact``: enumeration of a small space (the ground truth of the toy validation).

Proposals (``proposal=``): ``mixed`` (the default: each walker makes a ``single`` or a ``block`` move,
by a fair coin; a mixture of symmetric moves is symmetric), ``single`` (one position to another allowed
value), ``block`` (``block`` consecutive positions, or a ``block`` x ``block`` patch of an image,
redrawn: on the toy it reaches the rare lowest-NLL sequences that single moves cannot, because changing
two digits at once can keep their sum), ``gradient`` (for
torch models with ``forward_onehot``: a single-position move drawn from the first-order change of
the target, with the Metropolis-Hastings correction for the reverse move, as Gibbs-with-gradients;
Grathwohl et al. 2021).

Every sampler is seeded (``seed``), shows a progress bar, and with ``run(..., checkpoint=DIR)`` saves
its whole state (walkers, ladder, histograms, recorded outputs, candidates, the random generator)
every ``checkpoint_every`` seconds and on Ctrl-C; running it again with the same settings resumes
where it stopped and gives the same result as an uninterrupted run (a larger ``steps`` extends a
finished run). Diagnostics: replica round trips and swap rates, histogram flatness, and the
agreement of the independent chains' estimates.
"""

from __future__ import annotations

import contextlib
import heapq
import inspect
import json
import math
import os
import signal
import threading
import time
from pathlib import Path
from typing import Any, Callable

import numpy as np
from scipy.special import logsumexp

from ...errors import DataError, NotFittedError, ParameterError, check_choice
from ...progress import progress_bar
from ...registry import Registry
from ..models import OmniModel, as_model
from ..reweight import binned_log_density, mbar_log_weights
from ..samples import Candidates, OmniSamples
from ..space import InputSpace

samplers: Registry[type] = Registry("sampler")
PROPOSALS = ("mixed", "single", "block", "gradient")
DIRECTIONS = ("auto", "high", "low", "both")
CHECKPOINT = "checkpoint"


def sampler(name: str, help: str = "") -> Callable:
    """Register a :class:`Sampler` subclass under ``name``."""

    def deco(cls: type) -> type:
        cls.name = name
        return samplers.register(name, help)(cls)

    return deco


def make_sampler(name: str, **params: Any) -> "Sampler":
    """The registered sampler ``name`` with ``params`` (``pt``, ``wang_landau``, ``metropolis``, ``uniform``,
    ``exact``); an unknown name suggests the closest one.

    >>> make_sampler("pt", steps=100).get_params()["steps"]
    100
    >>> make_sampler("wang_landu")
    Traceback (most recent call last):
    ...
    evalsift.errors.UnknownNameError: Unknown sampler 'wang_landu'. Did you mean 'wang_landau'? Available: exact, metropolis, pt, uniform, wang_landau
    """
    return samplers.get(name)(**params)


class Interrupted(Exception):
    """Raised by :meth:`Sampler.run` with ``stop_at`` once the checkpoint is written (tests, the CLI)."""


# ---------------------------------------------------------------------------------------------- reservoirs
class Reservoirs:
    """Up to ``keep`` distinct inputs per (replica slot, bin), a uniform subsample of what was seen there
    (random priority keys), with the number of samples seen per (slot, bin)."""

    def __init__(self, keep: int) -> None:
        self.keep = keep
        self.heaps: dict[tuple[int, int], list] = {}
        self.members: dict[tuple[int, int], set] = {}
        self.seen: dict[tuple[int, int], int] = {}

    def add(self, slots: np.ndarray, bins: np.ndarray, x: np.ndarray, z: np.ndarray, keys: np.ndarray) -> None:
        """Offer each row (its slot, bin, input, output and random key)."""
        for s, b, row, zz, k in zip(slots.tolist(), bins.tolist(), x, z.tolist(), keys.tolist()):
            kb = (s, b)
            self.seen[kb] = self.seen.get(kb, 0) + 1
            heap = self.heaps.setdefault(kb, [])
            if len(heap) >= self.keep and k <= heap[0][0]:
                continue
            raw = row.tobytes()
            members = self.members.setdefault(kb, set())
            if raw in members:
                continue
            if len(heap) < self.keep:
                heapq.heappush(heap, (k, raw, zz))
            else:
                _, old, _ = heapq.heappushpop(heap, (k, raw, zz))
                members.discard(old)
            members.add(raw)

    def arrays(self, D: int, dtype: Any) -> dict[str, np.ndarray]:
        """Flat arrays (for checkpoints and the result)."""
        slots, bins, keys, zs, xs = [], [], [], [], []
        for (s, b), heap in sorted(self.heaps.items()):
            for k, raw, zz in sorted(heap):
                slots.append(s), bins.append(b), keys.append(k), zs.append(zz), xs.append(raw)
        x = np.frombuffer(b"".join(xs), dtype=dtype).reshape(-1, D) if xs else np.zeros((0, D), dtype=dtype)
        seen = sorted(self.seen.items())
        return {"r_slot": np.array(slots, dtype=np.int64), "r_bin": np.array(bins, dtype=np.int64),
                "r_key": np.array(keys, dtype=np.float64), "r_z": np.array(zs, dtype=np.float64), "r_x": x.copy(),
                "r_seen_slot": np.array([k[0] for k, _ in seen], dtype=np.int64),
                "r_seen_bin": np.array([k[1] for k, _ in seen], dtype=np.int64),
                "r_seen_n": np.array([n for _, n in seen], dtype=np.int64)}

    @classmethod
    def from_arrays(cls, keep: int, a: dict[str, np.ndarray]) -> "Reservoirs":
        """The reservoirs :meth:`arrays` flattened."""
        r = cls(keep)
        for s, b, k, zz, row in zip(a["r_slot"].tolist(), a["r_bin"].tolist(), a["r_key"].tolist(), a["r_z"].tolist(),
                                    a["r_x"]):
            raw = row.tobytes()
            r.heaps.setdefault((s, b), []).append((k, raw, zz))
            r.members.setdefault((s, b), set()).add(raw)
        for heap in r.heaps.values():
            heapq.heapify(heap)
        r.seen = {(int(s), int(b)): int(n) for s, b, n in zip(a["r_seen_slot"], a["r_seen_bin"], a["r_seen_n"])}
        return r


# ---------------------------------------------------------------------------------------------- proposals
def propose_single(space: InputSpace, x: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Each row with one free position moved to another allowed value (uniformly; symmetric)."""
    W = x.shape[0]
    d = space.free[rng.integers(0, space.free.size, size=W)]
    cur = space.index_of[d, x[np.arange(W), d].astype(np.int64)]
    j = (rng.random(W) * (space.n_allowed[d] - 1)).astype(np.int64)
    j = j + (j >= cur)
    out = x.copy()
    out[np.arange(W), d] = space.values[d, j]
    return out


def propose_block(space: InputSpace, x: np.ndarray, rng: np.random.Generator, block: int) -> np.ndarray:
    """Each row with a block of positions redrawn uniformly: ``block`` consecutive positions, or a
    ``block`` x ``block`` patch of an image space (symmetric)."""
    W, D = x.shape
    if space.shape is not None and len(space.shape) == 2:
        h, w = space.shape
        bh, bw = min(block, h), min(block, w)
        r0 = rng.integers(0, h - bh + 1, size=W)
        c0 = rng.integers(0, w - bw + 1, size=W)
        rr, cc = np.meshgrid(np.arange(bh), np.arange(bw), indexing="ij")
        pos = ((r0[:, None] + rr.reshape(1, -1)) * w + c0[:, None] + cc.reshape(1, -1))
    else:
        b = min(block, D)
        start = rng.integers(0, D - b + 1, size=W)
        pos = start[:, None] + np.arange(b)[None, :]
    k = (rng.random(pos.shape) * space.n_allowed[pos]).astype(np.int64)
    out = x.copy()
    out[np.arange(W)[:, None], pos] = space.values[pos, k]
    return out


def _gradient_logits(space: InputSpace, x: np.ndarray, g: np.ndarray, coef: np.ndarray) -> np.ndarray:
    """Proposal logits (W, D, V) of single-position moves: coef/2 * (first-order change of z); -inf where
    the value is not allowed or is the current one."""
    W = x.shape[0]
    cur = np.take_along_axis(g, x.astype(np.int64)[:, :, None], axis=2)
    logits = 0.5 * coef[:, None, None] * (g - cur)
    mask = np.broadcast_to(space.mask, logits.shape).copy()
    mask[np.arange(W)[:, None], np.arange(space.n_positions)[None, :], x.astype(np.int64)] = False
    return np.where(mask, logits, -np.inf)


# ---------------------------------------------------------------------------------------------- base class
class Sampler:
    """Base of every sampler: scikit-learn style parameters (constructor stores keyword-only parameters,
    :meth:`get_params` / :meth:`set_params` / :func:`clone_sampler`), :meth:`run` does the work.

    Shared parameters: ``steps`` (moves per walker), ``chains`` (independent chains; their spread is the
    error bar), ``burn_in`` (steps not recorded: an integer, or a fraction of ``steps`` below 1),
    ``thin`` (record every thin-th step), ``bin_width`` (of z; None: chosen from the pilot's range, about
    80 bins), ``proposal`` and ``block``, ``keep`` (candidate inputs kept per replica and bin),
    ``seed``, ``checkpoint_every`` (seconds).
    """

    name = ""
    uses_steps = True
    defer_interrupt = True  # Ctrl-C stops between steps (False: at once, for samplers with one long step)

    def __init__(self, *, steps: int = 4000, chains: int = 4, burn_in: float = 0.2, thin: int = 1,
                 bin_width: float | None = None, proposal: str = "mixed", block: int = 2, keep: int = 32,
                 seed: int = 0, checkpoint_every: float = 60.0) -> None:
        self.steps = steps
        self.chains = chains
        self.burn_in = burn_in
        self.thin = thin
        self.bin_width = bin_width
        self.proposal = proposal
        self.block = block
        self.keep = keep
        self.seed = seed
        self.checkpoint_every = checkpoint_every

    # ------------------------------------------------------------------ parameters
    @classmethod
    def _param_names(cls) -> list[str]:
        names: list[str] = []
        for klass in cls.__mro__:
            if klass is object:
                continue
            for p in inspect.signature(klass.__init__).parameters.values():
                if p.kind == p.KEYWORD_ONLY and p.name not in names:
                    names.append(p.name)
        return sorted(names)

    def get_params(self, deep: bool = True) -> dict[str, Any]:
        """The constructor's parameters and their values."""
        return {n: getattr(self, n) for n in self._param_names()}

    def set_params(self, **params: Any) -> "Sampler":
        """Set parameters (checked as the constructor checks them); returns self."""
        names = self._param_names()
        for k in params:
            if k not in names:
                raise ParameterError(f"sampler '{self.name}': unknown parameter {k!r}; parameters: {', '.join(names)}",
                                     field=k)
        for k, v in params.items():
            setattr(self, k, v)
        self._validate()
        return self

    def _fail(self, param: str, expected: str) -> None:
        raise ParameterError(f"sampler '{self.name}': {param}={getattr(self, param)!r} is invalid; expected {expected}",
                             field=param)

    def _int(self, param: str, lo: int) -> None:
        v = getattr(self, param)
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < lo:
            self._fail(param, f"an integer >= {lo}")

    def _validate(self) -> None:
        """The one place parameters are checked (called by :meth:`run` and :meth:`set_params`)."""
        self._int("steps", 1)
        self._int("chains", 1)
        self._int("thin", 1)
        self._int("keep", 1)
        self._int("block", 1)
        self._int("seed", 0)
        b = self.burn_in
        if isinstance(b, bool) or not isinstance(b, (int, float, np.integer, np.floating)) or b < 0 or (
                isinstance(b, (float, np.floating)) and b != int(b) and b >= 1):
            self._fail("burn_in", "a fraction in [0, 1) of steps, or a whole number of steps")
        if self.bin_width is not None and (isinstance(self.bin_width, bool) or not np.isfinite(self.bin_width)
                                           or self.bin_width <= 0):
            self._fail("bin_width", "a positive number, or None (chosen from the pilot)")
        if not (isinstance(self.checkpoint_every, (int, float)) and self.checkpoint_every > 0):
            self._fail("checkpoint_every", "a positive number of seconds")
        check_choice("proposal", self.proposal, PROPOSALS, where=f"sampler '{self.name}'")

    def _burn(self) -> int:
        b = self.burn_in
        return int(b) if b >= 1 or (isinstance(b, (int, np.integer))) else int(round(b * self.steps))

    # ------------------------------------------------------------------ the run
    def run(self, model: Any, space: InputSpace, *, checkpoint: str | os.PathLike[str] | None = None,
            quiet: bool | None = None, stop_at: int | None = None, model_spec: str | None = None) -> OmniSamples:
        """Sample ``model`` over ``space``; returns :class:`OmniSamples`.

        ``checkpoint``: a folder for the resumable state (resumed when it holds a checkpoint of the same
        settings); ``stop_at``: stop after this many steps, write the checkpoint and raise
        :class:`Interrupted` (to test resuming); ``model_spec``: how the model was named (for reports).
        """
        self._validate()
        if not isinstance(space, InputSpace):
            raise ParameterError(f"run needs an InputSpace, got {type(space).__name__}", field="space")
        model = self.check_model(model)
        self._model, self._space = model, space
        settings = self._settings(model, space)
        ck = Path(checkpoint) if checkpoint is not None else None
        state = _load_checkpoint(ck, settings) if ck is not None else None
        self._mark = self._ck_time = time.monotonic()
        if state is None:
            self._rng = np.random.default_rng(self.seed)
            self._evals = 0
            self._elapsed = 0.0
            self._step_no = 0
            self._burn_steps = self._burn()
            self._records: list[np.ndarray] = []
            self._setup(quiet)
        else:
            self._restore(state)
        with _deferred_interrupt(self.defer_interrupt) as interrupted:
            self._loop(ck, settings, quiet, stop_at, interrupted)
        self._tick()
        if ck is not None:
            self._save(ck, settings)
        return self._result(model, space, model_spec)

    def _tick(self) -> None:
        """Add the time since the last mark to the elapsed time (resumed runs add up)."""
        now = time.monotonic()
        self._elapsed += now - self._mark
        self._mark = now

    def _save(self, ck: Path, settings: dict) -> None:
        self._tick()
        _save_checkpoint(ck, settings, self._state())
        self._ck_time = time.monotonic()

    def check_model(self, model: Any) -> OmniModel:
        """``model`` through :func:`as_model`, refused when the proposal needs what it lacks (gradients)."""
        model = as_model(model)
        if self.proposal == "gradient" and not getattr(model, "has_grad", False):
            raise ParameterError(f"sampler '{self.name}': proposal='gradient' needs a torch model with forward_onehot; "
                                 f"model {model.name!r} has none. Use proposal='mixed', 'single' or 'block'.",
                                 field="proposal")
        return model

    def _loop(self, ck: Path | None, settings: dict, quiet: bool | None, stop_at: int | None,
              interrupted: Callable[[], bool] = lambda: False) -> None:
        burn = self._burn_steps
        total = self.steps
        with progress_bar(total - self._step_no, f"{self.name}: sampling", quiet) as advance:
            while self._step_no < total:
                if interrupted():  # Ctrl-C: stop between steps, so the saved state resumes exactly
                    if ck is not None:
                        self._save(ck, settings)
                    raise KeyboardInterrupt
                self._step()
                self._step_no += 1
                if self._step_no > burn and (self._step_no - burn) % self.thin == 0:
                    self._record()
                if self._step_no % 25 == 0:
                    advance(25)
                if ck is not None and time.monotonic() - self._ck_time > self.checkpoint_every:
                    self._save(ck, settings)
                if stop_at is not None and self._step_no >= stop_at and self._step_no < total:
                    if ck is not None:
                        self._save(ck, settings)
                    raise Interrupted(f"stopped at step {self._step_no} of {total}")

    # ------------------------------------------------------------------ what subclasses provide
    def _setup(self, quiet: bool | None) -> None:
        raise NotImplementedError

    def _step(self) -> None:
        raise NotImplementedError

    def _record(self) -> None:
        raise NotImplementedError

    def _estimate(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, dict]:
        """``(bins, ln_rho, ln_rho_chains (C, bins), counts, diagnostics)``."""
        raise NotImplementedError

    def _candidate_log_weights(self, z: np.ndarray, slot: np.ndarray) -> np.ndarray:
        """ln of the within-bin importance weight of a candidate with output z from ``slot``."""
        return np.zeros(z.size)

    def _extra_state(self) -> dict[str, Any]:
        return {}

    def _load_extra(self, a: dict[str, Any]) -> None:
        pass

    # ------------------------------------------------------------------ shared machinery
    def _settings(self, model: OmniModel, space: InputSpace) -> dict[str, Any]:
        params = {k: v for k, v in self.get_params().items() if k not in ("steps", "checkpoint_every")}
        fp = model.fingerprint() if hasattr(model, "fingerprint") else model.name
        return {"sampler": self.name, "params": params, "model": fp, "space": space.fingerprint()}

    def _eval(self, x: np.ndarray) -> np.ndarray:
        self._evals += len(x)
        return self._model(x)

    def _eval_grad(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        self._evals += len(x)
        return self._model.grad(x, self._space.n_values)

    def _propose(self, x: np.ndarray) -> np.ndarray:
        if self.proposal == "block":
            return propose_block(self._space, x, self._rng, self.block)
        if self.proposal == "mixed":
            single = propose_single(self._space, x, self._rng)
            block = propose_block(self._space, x, self._rng, self.block)
            return np.where((self._rng.random(len(x)) < 0.5)[:, None], single, block)
        return propose_single(self._space, x, self._rng)

    def _mh(self, x: np.ndarray, z: np.ndarray, log_target: Callable[[np.ndarray, np.ndarray], np.ndarray],
            grad: np.ndarray | None, coef: Callable[[np.ndarray], np.ndarray] | None
            ) -> tuple[np.ndarray, np.ndarray, np.ndarray | None, np.ndarray]:
        """One Metropolis-Hastings move of every walker: ``(x, z, grad, accepted)``.

        ``log_target(z, walker index) -> ln pi`` (up to a constant); ``coef(z)``: the coefficient of z in
        ln pi near the walker, for gradient proposals.
        """
        W = x.shape[0]
        idx = np.arange(W)
        if self.proposal == "gradient":
            c = coef(z)
            logits = _gradient_logits(self._space, x, grad, c).reshape(W, -1)
            lse = logsumexp(logits, axis=1)
            gumbel = -np.log(-np.log(self._rng.random(logits.shape)))
            pick = np.argmax(logits + gumbel, axis=1)
            d, v = np.divmod(pick, self._space.n_values)
            log_fwd = logits[idx, pick] - lse
            x_new = x.copy()
            old = x[idx, d].astype(np.int64)
            x_new[idx, d] = v
            z_new, g_new = self._eval_grad(x_new)
            rev = _gradient_logits(self._space, x_new, g_new, coef(z_new)).reshape(W, -1)
            log_rev = rev[idx, d * self._space.n_values + old] - logsumexp(rev, axis=1)
            log_a = log_target(z_new, idx) - log_target(z, idx) + log_rev - log_fwd
        else:
            x_new = self._propose(x)
            z_new = self._eval(x_new)
            g_new = None
            log_a = log_target(z_new, idx) - log_target(z, idx)
        acc = np.log(self._rng.random(W)) < log_a
        x = np.where(acc[:, None], x_new, x)
        z = np.where(acc, z_new, z)
        if grad is not None:
            grad = np.where(acc[:, None, None], g_new, grad)
        return x, z, grad, acc

    def _init_walkers(self, x: np.ndarray) -> None:
        self._x = x
        if self.proposal == "gradient":
            self._z, self._g = self._eval_grad(x)
        else:
            self._z, self._g = self._eval(x), None

    def _auto_bin_width(self, lo: float, hi: float) -> float:
        if self.bin_width is not None:
            return float(self.bin_width)
        return nice_width((hi - lo) / 80.0)

    def _state(self) -> dict[str, Any]:
        arrays = {"x": self._x, "z": self._z, "records": _stack(self._records, self._z.shape)}
        if self._g is not None:
            arrays["g"] = self._g
        arrays.update(self._res.arrays(self._space.n_positions, self._space.dtype))
        scalars = {"step": self._step_no, "evals": self._evals, "elapsed": self._elapsed, "bin_width": self._dz,
                   "burn_steps": self._burn_steps, "rng": self._rng.bit_generator.state}
        extra = self._extra_state()
        for k, v in extra.items():
            (arrays if isinstance(v, np.ndarray) else scalars)[k] = v
        return {"arrays": arrays, "scalars": scalars}

    def _restore(self, state: dict[str, Any]) -> None:
        a, s = state["arrays"], state["scalars"]
        self._rng = np.random.default_rng()
        self._rng.bit_generator.state = s["rng"]
        self._x, self._z, self._g = a["x"], a["z"], a.get("g")
        self._records = [r for r in a["records"]]
        self._res = Reservoirs.from_arrays(self.keep, a)
        self._step_no, self._evals, self._elapsed, self._dz = int(s["step"]), int(s["evals"]), float(s["elapsed"]), \
            float(s["bin_width"])
        self._burn_steps = int(s["burn_steps"])
        self._load_extra({**s, **a})

    def _candidates(self) -> Candidates:
        a = self._res.arrays(self._space.n_positions, self._space.dtype)
        slot, b, z = a["r_slot"], a["r_bin"], a["r_z"]
        lw = self._candidate_log_weights(z, slot)
        # each candidate stands for (samples seen in its slot and bin) / (candidates kept there)
        seen = {(int(s_), int(b_)): n for s_, b_, n in zip(a["r_seen_slot"], a["r_seen_bin"], a["r_seen_n"])}
        kept: dict[tuple[int, int], int] = {}
        for s_, b_ in zip(slot.tolist(), b.tolist()):
            kept[(s_, b_)] = kept.get((s_, b_), 0) + 1
        share = np.array([np.log(seen[(s_, b_)] / kept[(s_, b_)]) for s_, b_ in zip(slot.tolist(), b.tolist())])
        return Candidates(a["r_x"], z, b, slot, lw + (share if share.size else 0.0))

    def _result(self, model: OmniModel, space: InputSpace, model_spec: str | None) -> OmniSamples:
        bins, ln_rho, chains, counts, diag = self._estimate()
        diag = {**diag, **chain_agreement(ln_rho, chains)}
        diag["evaluations_per_second"] = self._evals / self._elapsed if self._elapsed > 0 else None
        info = {"name": model.name, "output": model.output, "positive": model.positive,
                "fingerprint": model.fingerprint() if hasattr(model, "fingerprint") else None,
                "info": getattr(model, "info", {}), "spec": model_spec}
        params = self.get_params()
        params["bin_width"] = self._dz
        return OmniSamples(model=info, space=space, sampler={"name": self.name, "params": params, "seed": self.seed},
                           bin_width=self._dz, bins=bins, ln_rho=ln_rho, ln_rho_chains=chains, counts=counts,
                           candidates=self._candidates(), diagnostics=diag, evaluations=self._evals,
                           seconds=self._elapsed, complete=self._step_no >= self.steps)

    def _bins_of(self, z: np.ndarray) -> np.ndarray:
        return np.floor(z / self._dz).astype(np.int64)

    def _pilot(self, directions: tuple[int, ...], walkers: int, quiet: bool | None) -> dict[str, Any]:
        """Uniform draws, then Metropolis at doubling |beta| toward each direction until the mean output
        stops moving (by less than 5% of the uniform spread): the beta that reaches the edge of the
        output range, the states found along the way, and the range of z seen."""
        sp = self._space
        walkers = max(32, walkers)
        x = sp.uniform(walkers, self._rng)
        z = self._eval(x)
        z0 = [z]
        # enough moves per stage to propose most (position, value) changes about once
        steps = int(np.clip(0.5 * (sp.n_allowed[sp.free] - 1).sum(), 50, 1000))
        for _ in range(2):  # a short random walk: a better spread estimate than one draw
            x = propose_single(sp, x, self._rng)
            z0.append(self._eval(x))
        sigma = float(np.std(np.concatenate(z0))) or 1.0
        out: dict[str, Any] = {"sigma0": sigma, "states": {0.0: (x.copy(), z.copy())}, "lo": float(np.min(z0)),
                               "hi": float(np.max(z0)), "beta": {}}
        # the resolution that matters: the bin width (given, or about a 40th of the uniform draws' range)
        tau = float(self.bin_width) if self.bin_width is not None else max(out["hi"] - out["lo"], sigma) / 40.0
        with progress_bar(len(directions) * 16, f"{self.name}: pilot", quiet) as advance:
            for sign in directions:
                xs, zs = x.copy(), z.copy()
                beta, prev = 1.0 / sigma, None
                for _ in range(16):
                    b = sign * beta
                    xs, zs, t = self._anneal(xs, zs, b, steps)
                    out["lo"], out["hi"] = min(out["lo"], float(t.min())), max(out["hi"], float(t.max()))
                    mean = float(t[steps // 2:].mean())
                    edge = out["hi"] if sign > 0 else out["lo"]
                    out["states"][b] = (xs.copy(), zs.copy())
                    advance()
                    # cold enough: the walkers sit within a bin of the most extreme output seen, or doubling beta no
                    # longer moves their mean by a quarter of a bin (a glassy landscape: colder would only freeze
                    # them). A rare tail below a dense one needs beta large enough to reach it, so the tests are in
                    # bins, not in the spread of the whole distribution.
                    if sign * (edge - mean) < tau or (prev is not None and sign * (mean - prev) < 0.25 * tau):
                        break
                    prev = mean
                    beta *= 2.0
                out["beta"][sign] = beta
        return out

    def _anneal(self, x: np.ndarray, z: np.ndarray, beta: float, steps: int
                ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``steps`` single-site Metropolis moves at ``beta``: the final states and the (steps, W) outputs."""
        trace = []
        for _ in range(steps):
            prop = propose_single(self._space, x, self._rng)
            zp = self._eval(prop)
            acc = np.log(self._rng.random(len(z))) < beta * (zp - z)
            x = np.where(acc[:, None], prop, x)
            z = np.where(acc, zp, z)
            trace.append(z.copy())
        return x, z, np.array(trace)


@contextlib.contextmanager
def _deferred_interrupt(defer: bool = True):
    """Turn Ctrl-C (SIGINT) into a flag the sampling loop checks between steps (main thread only; elsewhere
    a KeyboardInterrupt stays immediate); a second Ctrl-C interrupts at once. Yields ``interrupted() -> bool``."""
    if not defer or threading.current_thread() is not threading.main_thread():
        yield lambda: False
        return
    hit: list[int] = []

    def handler(signum: int, frame: Any) -> None:
        if hit:
            raise KeyboardInterrupt
        hit.append(signum)

    old = signal.signal(signal.SIGINT, handler)
    try:
        yield lambda: bool(hit)
    finally:
        signal.signal(signal.SIGINT, old)


def _stack(records: list[np.ndarray], shape: tuple) -> np.ndarray:
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


# ---------------------------------------------------------------------------------------------- checkpoints
def _load_checkpoint(folder: Path, settings: dict) -> dict | None:
    meta = folder / (CHECKPOINT + ".json")
    if not meta.is_file():
        return None
    try:
        saved = json.loads(meta.read_text(encoding="utf-8"))
        with np.load(folder / (CHECKPOINT + ".npz"), allow_pickle=False) as z:
            arrays = {k: z[k] for k in z.files}
    except (OSError, ValueError) as e:
        raise DataError(f"{folder}: the checkpoint cannot be read ({type(e).__name__}: {e}); delete "
                        f"{meta.name} and {CHECKPOINT}.npz to start over, or use another --out", field="out") from None
    if saved["settings"] != settings:
        diff = [k for k in ("sampler", "model", "space") if saved["settings"].get(k) != settings.get(k)]
        diff += [f"{k}={saved['settings']['params'].get(k)!r} (now {v!r})" for k, v in settings["params"].items()
                 if saved["settings"]["params"].get(k) != v]
        raise DataError(f"{folder} holds a sampling run with other settings ({', '.join(diff) or 'different'}); use "
                        "another --out folder, or the same settings to resume it", field="out")
    scalars = saved["scalars"]
    return {"arrays": arrays, "scalars": scalars}


def _save_checkpoint(folder: Path, settings: dict, state: dict) -> None:
    """Write the state atomically: arrays first, then the JSON that points at them."""
    from ...io._common import json_default

    folder.mkdir(parents=True, exist_ok=True)
    tmp = folder / (CHECKPOINT + ".tmp.npz")
    np.savez(tmp, **state["arrays"])
    os.replace(tmp, folder / (CHECKPOINT + ".npz"))
    tmpj = folder / (CHECKPOINT + ".json.tmp")
    tmpj.write_text(json.dumps({"settings": settings, "scalars": state["scalars"]}, default=json_default),
                    encoding="utf-8")
    os.replace(tmpj, folder / (CHECKPOINT + ".json"))


# ---------------------------------------------------------------------------------------------- uniform
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
        rec = _stack(self._records, self._z.shape).reshape(-1, self.chains, self.walkers) if self._records else \
            np.zeros((0, self.chains, self.walkers))
        return _histogram_estimate(rec.transpose(1, 0, 2).reshape(self.chains, -1), self._dz, self._space.log_size,
                                   None)


def _histogram_estimate(per_chain: np.ndarray, dz: float, log_size: float,
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


# ---------------------------------------------------------------------------------------------- metropolis
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
        rec = _stack(self._records, self._z.shape).reshape(-1, self.chains, self.walkers)
        out = _histogram_estimate(rec.transpose(1, 0, 2).reshape(self.chains, -1), self._dz, self._space.log_size,
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
        rec = _stack(self._records, self._z.shape)
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


# ---------------------------------------------------------------------------------------------- wang-landau
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
        rec = _stack(self._records, self._z.shape).reshape(-1)
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


# ---------------------------------------------------------------------------------------------- exact
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
    ``completions`` is asked once per prefix for all values of the last position."""
    model = as_model(model)
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


def clone_sampler(s: Sampler) -> Sampler:
    """A new unfitted sampler with the same parameters."""
    return type(s)(**s.get_params())


__all__ = ["ExactEnumeration", "Interrupted", "MetropolisSampler", "ParallelTempering", "Reservoirs", "Sampler",
           "UniformSampler", "WangLandau", "chain_agreement", "clone_sampler", "enumerate_outputs", "make_sampler",
           "nice_width", "propose_block", "propose_single", "sampler", "samplers"]
