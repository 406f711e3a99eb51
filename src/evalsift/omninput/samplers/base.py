"""The sampler registry (``samplers``, decorator ``@sampler``, :func:`make_sampler`) and the base class
:class:`Sampler`: parameters, the run loop with checkpoints and progress, Metropolis-Hastings moves of
a batch of walkers, the pilot that finds the range of outputs, and the result."""


from __future__ import annotations

import inspect
import os
import time
from pathlib import Path
from typing import Any, Callable

import numpy as np
from scipy.special import logsumexp

from ...errors import ParameterError, check_choice
from ...progress import progress_bar
from ...registry import Registry
from ..models import OmniModel, as_model
from ..samples import Candidates, OmniSamples
from ..space import InputSpace
from .checkpoints import deferred_interrupt, load_checkpoint, save_checkpoint
from .estimates import chain_agreement, nice_width, stack_records
from .proposals import (
    GRADIENT_PROPOSALS,
    PROPOSALS,
    gradient_logits,
    langevin_logits,
    propose_block,
    propose_single,
)
from .reservoirs import Reservoirs

samplers: Registry[type] = Registry("sampler")


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



# Bins over the pilot's range of z when no bin_width is given. The width is rounded *up* to a nice number
# (1, 2, 2.5 or 5 x 10^k), which can halve the count, so aiming at 300 gives 150-300 bins: always inside the
# 150-600 of the paper (Sec. 2.2), at its low end, where each bin keeps the most sampled inputs and the
# annotation per bin costs least.
DEFAULT_BINS = 300.0

class Interrupted(Exception):
    """Raised by :meth:`Sampler.run` with ``stop_at`` once the checkpoint is written (tests, the CLI)."""


class Sampler:
    """Base of every sampler: scikit-learn style parameters (constructor stores keyword-only parameters,
    :meth:`get_params` / :meth:`set_params` / :func:`clone_sampler`), :meth:`run` does the work.

    Shared parameters: ``steps`` (moves per walker), ``chains`` (independent chains; their spread is the
    error bar), ``burn_in`` (steps not recorded: an integer, or a fraction of ``steps`` below 1),
    ``thin`` (record every thin-th step), ``bin_width`` (of z; None: chosen from the pilot's range, 150 to
    300 bins -- the paper used 150-600 -- see :data:`DEFAULT_BINS`), ``proposal`` and ``block``,
    ``step_size`` (of ``proposal="langevin"``: the discrete Langevin proposal's alpha; each position
    changes with odds about (values - 1) x exp(-1/step_size) where the gradient is flat), ``keep``
    (candidate inputs kept per replica and bin),
    ``seed``, ``checkpoint_every`` (seconds).
    """

    name = ""
    uses_steps = True
    defer_interrupt = True  # Ctrl-C stops between steps (False: at once, for samplers with one long step)

    def __init__(self, *, steps: int = 4000, chains: int = 4, burn_in: float = 0.2, thin: int = 1,
                 bin_width: float | None = None, proposal: str = "mixed", block: int = 2, step_size: float = 0.25,
                 keep: int = 32, seed: int = 0, checkpoint_every: float = 60.0) -> None:
        self.steps = steps
        self.chains = chains
        self.burn_in = burn_in
        self.thin = thin
        self.bin_width = bin_width
        self.proposal = proposal
        self.block = block
        self.step_size = step_size
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
        st = self.step_size
        if isinstance(st, bool) or not isinstance(st, (int, float, np.integer, np.floating)) or not np.isfinite(st) \
                or st <= 0:
            self._fail("step_size", "a positive number (the discrete Langevin proposal's alpha)")
        burn = self._burn()
        if self.uses_steps and self.steps - burn < self.thin:  # steps burn+1..steps, every thin-th recorded
            raise ParameterError(f"sampler '{self.name}': steps={self.steps} with burn_in={self.burn_in!r} ({burn} "
                                 f"steps not recorded) and thin={self.thin} records no step; raise steps to at least "
                                 f"{burn + self.thin}, or lower burn_in or thin",
                                 field="burn_in" if burn >= self.steps else "thin")

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
        state = load_checkpoint(ck, settings, getattr(model, "info", None)) if ck is not None else None
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
        with deferred_interrupt(self.defer_interrupt) as interrupted:
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
        save_checkpoint(ck, settings, self._state())
        self._ck_time = time.monotonic()

    def check_model(self, model: Any) -> OmniModel:
        """``model`` through :func:`as_model`, refused when the proposal needs what it lacks (gradients)."""
        model = as_model(model)
        if self.proposal in GRADIENT_PROPOSALS and not getattr(model, "has_grad", False):
            raise ParameterError(f"sampler '{self.name}': proposal={self.proposal!r} needs a torch model with "
                                 f"forward_onehot; "
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
        if self.proposal != "langevin":  # step_size changes nothing then (and checkpoints from before it still match)
            params.pop("step_size", None)
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
        ln pi near the walker, for gradient proposals. ``gradient`` (Gibbs-with-gradients) changes one
        position, drawn with its value from one softmax over every (position, value); ``langevin`` (the
        discrete Langevin proposal) redraws every position at once, each from its own softmax. Either way
        the acceptance is min(1, pi(x') q(x | x') / (pi(x) q(x' | x))), q(x | x') from the gradient at x'.
        """
        W = x.shape[0]
        idx = np.arange(W)
        if self.proposal == "gradient":
            c = coef(z)
            logits = gradient_logits(self._space, x, grad, c).reshape(W, -1)
            lse = logsumexp(logits, axis=1)
            gumbel = -np.log(-np.log(self._rng.random(logits.shape)))
            pick = np.argmax(logits + gumbel, axis=1)
            d, v = np.divmod(pick, self._space.n_values)
            log_fwd = logits[idx, pick] - lse
            x_new = x.copy()
            old = x[idx, d].astype(np.int64)
            x_new[idx, d] = v
            z_new, g_new = self._eval_grad(x_new)
            rev = gradient_logits(self._space, x_new, g_new, coef(z_new)).reshape(W, -1)
            log_rev = rev[idx, d * self._space.n_values + old] - logsumexp(rev, axis=1)
            log_a = log_target(z_new, idx) - log_target(z, idx) + log_rev - log_fwd
        elif self.proposal == "langevin":
            x_new, z_new, g_new, log_a = self._langevin_move(x, z, log_target, grad, coef)
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

    def _langevin_move(self, x: np.ndarray, z: np.ndarray, log_target: Callable[[np.ndarray, np.ndarray], np.ndarray],
                       grad: np.ndarray, coef: Callable[[np.ndarray], np.ndarray]
                       ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """The discrete Langevin proposal for every walker: ``(x', z', grad', ln acceptance ratio)``.

        Each position's new value is drawn independently (Gumbel-max over its logits), so ln q(x' | x)
        is the sum over positions of the log-softmax at the value drawn; the reverse move's ln q(x | x')
        uses the gradient and coefficient at x'."""
        W, D = x.shape
        idx = np.arange(W)
        pos = np.arange(D)[None, :]
        logits = langevin_logits(self._space, x, grad, coef(z), float(self.step_size))
        logq = logits - logsumexp(logits, axis=2, keepdims=True)
        gumbel = -np.log(-np.log(self._rng.random(logits.shape)))
        v = np.argmax(logits + gumbel, axis=2)
        log_fwd = logq[idx[:, None], pos, v].sum(axis=1)
        x_new = v.astype(x.dtype)
        z_new, g_new = self._eval_grad(x_new)
        rev = langevin_logits(self._space, x_new, g_new, coef(z_new), float(self.step_size))
        rev = rev - logsumexp(rev, axis=2, keepdims=True)
        log_rev = rev[idx[:, None], pos, x.astype(np.int64)].sum(axis=1)
        return x_new, z_new, g_new, log_target(z_new, idx) - log_target(z, idx) + log_rev - log_fwd

    def _init_walkers(self, x: np.ndarray) -> None:
        self._x = x
        if self.proposal in GRADIENT_PROPOSALS:
            self._z, self._g = self._eval_grad(x)
        else:
            self._z, self._g = self._eval(x), None

    def _auto_bin_width(self, lo: float, hi: float) -> float:
        if self.bin_width is not None:
            return float(self.bin_width)
        return nice_width((hi - lo) / DEFAULT_BINS)

    def _state(self) -> dict[str, Any]:
        arrays = {"x": self._x, "z": self._z, "records": stack_records(self._records, self._z.shape)}
        if self._g is not None:
            arrays["g"] = self._g
        arrays.update(self._res.arrays(self._space.n_positions, self._space.dtype))
        scalars = {"step": self._step_no, "evals": self._evals, "elapsed": self._elapsed, "bin_width": self._dz,
                   "burn_steps": self._burn_steps, "rng": self._rng.bit_generator.state,
                   "model_info": getattr(self._model, "info", None)}  # what the refusal to resume compares
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
        diag["device"] = getattr(model, "device", "cpu")  # where the model ran (numpy models: the CPU)
        info = {"name": model.name, "output": model.output, "positive": model.positive,
                "fingerprint": model.fingerprint() if hasattr(model, "fingerprint") else None,
                "info": getattr(model, "info", {}), "spec": model_spec,
                "files": getattr(model, "files_fingerprint", None)}  # checked before omni curve loads it again
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


def clone_sampler(s: Sampler) -> Sampler:
    """A new unfitted sampler with the same parameters."""
    return type(s)(**s.get_params())


__all__ = ["Interrupted", "Sampler", "clone_sampler", "make_sampler", "sampler", "samplers"]
