"""What a sampler returns: the output distribution rho(z) on bins, and candidate representative inputs per bin.

:class:`OmniSamples` holds ``ln rho`` per bin of width ``bin_width`` (bin b covers ``[b*dz, (b+1)*dz)``),
the same estimate from each independent chain (their spread is the run's own error bar), the
candidate inputs kept per bin with their importance weights, the diagnostics, and what made it (the
model, the space, the sampler, its parameters and seed). It is saved as a folder: ``omni.json`` plus
``candidates.npz`` (:meth:`OmniSamples.save`, :meth:`OmniSamples.load`).

**Representatives.** Within a bin every input should be equally likely to be shown to a judge (the
bin's r(z) is the share of positives among *all* its inputs). Candidates were drawn from tempered
distributions, so each carries a weight that undoes its replica's tilt;
:meth:`OmniSamples.representatives` draws ``per_bin`` distinct candidates per bin with probability
proportional to the weight (weighted sampling without replacement, Efraimidis & Spirakis 2006),
seeded, so the same call always shows the same inputs.
"""

from __future__ import annotations

import hashlib
import json
import os
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

import numpy as np
from scipy.special import logsumexp

from ..errors import DataError, ParameterError
from .space import InputSpace

FORMAT = "evalsift-omni/1"
META_FILE = "omni.json"
CANDIDATES_FILE = "candidates.npz"


@dataclass(frozen=True)
class Candidates:
    """Inputs kept per bin during sampling: ``x`` (M, D), their ``z``, ``bin``, the replica ``slot`` they
    came from and ``log_weight`` (ln of the importance weight that makes draws within a bin uniform)."""

    x: np.ndarray
    z: np.ndarray
    bin: np.ndarray
    slot: np.ndarray
    log_weight: np.ndarray

    def __len__(self) -> int:
        return int(self.z.size)


@dataclass(frozen=True)
class Representatives:
    """Inputs chosen to be judged: ``ids`` (stable: bin and a hash of the input), ``x``, ``z``, ``bin``."""

    ids: list[str]
    x: np.ndarray
    z: np.ndarray
    bin: np.ndarray

    def __len__(self) -> int:
        return len(self.ids)


def sample_id(b: int, x: np.ndarray) -> str:
    """The id of input ``x`` in bin ``b``: ``b<bin>-<10 hex digits of its hash>``, the same in every run.

    >>> sample_id(-3, np.array([1, 2, 3], dtype=np.int16))
    'b-3-e2d1839ed1'
    """
    return f"b{int(b)}-{hashlib.sha1(np.ascontiguousarray(x, dtype=np.int64).tobytes()).hexdigest()[:10]}"


@dataclass
class OmniSamples:
    """The output distribution of a model over an input space, with representatives (see the module doc).

    ``bins``: sorted bin indices holding mass; ``ln_rho``: ln of the number of inputs per bin (the
    space's size fixes the scale); ``ln_rho_chains``: (C, bins) the same from each independent chain
    (NaN where a chain never reached the bin); ``counts``: samples recorded per bin.
    """

    model: dict[str, Any]
    space: InputSpace
    sampler: dict[str, Any]
    bin_width: float
    bins: np.ndarray
    ln_rho: np.ndarray
    ln_rho_chains: np.ndarray
    counts: np.ndarray
    candidates: Candidates
    diagnostics: dict[str, Any] = field(default_factory=dict)
    evaluations: int = 0
    seconds: float = 0.0
    complete: bool = True

    # ------------------------------------------------------------------ the distribution
    @property
    def positive(self) -> str:
        """Which side of z the model calls positive: 'high' (a logit) or 'low' (an NLL)."""
        return str(self.model.get("positive", "high"))

    @property
    def edges(self) -> np.ndarray:
        """Bin edges, (bins + 1): ``[b*dz, (b+1)*dz)`` per bin (gaps between non-adjacent bins hold no mass)."""
        return np.append(self.bins, self.bins[-1] + 1) * self.bin_width

    @property
    def centers(self) -> np.ndarray:
        """Bin centres."""
        return (self.bins + 0.5) * self.bin_width

    def mass(self) -> np.ndarray:
        """The share of the input space in each bin (sums to 1): the entire-distribution normalisation."""
        return np.exp(self.ln_rho - logsumexp(self.ln_rho))

    def coarsen(self, factor: int) -> "OmniSamples":
        """The same distribution on bins ``factor`` times wider (candidates re-binned; their weights keep
        their meaning because the new bins are unions of old ones)."""
        if isinstance(factor, bool) or int(factor) != factor or factor < 1:
            raise ParameterError(f"coarsen: factor must be a positive integer, got {factor!r}", field="bin_width")
        factor = int(factor)
        if factor == 1:
            return self
        new = np.floor_divide(self.bins, factor)
        bins, inv = np.unique(new, return_inverse=True)

        def merge(v: np.ndarray) -> np.ndarray:
            out = np.full(bins.size, -np.inf)
            np.logaddexp.at(out, inv, v)
            return out

        chains = np.vstack([merge(np.where(np.isnan(r), -np.inf, r)) for r in self.ln_rho_chains]) \
            if self.ln_rho_chains.size else self.ln_rho_chains
        chains = np.where(np.isneginf(chains), np.nan, chains)
        counts = np.bincount(inv, weights=self.counts, minlength=bins.size).astype(np.int64)
        c = self.candidates
        cand = Candidates(c.x, c.z, np.floor_divide(c.bin, factor), c.slot, c.log_weight)
        return OmniSamples(self.model, self.space, self.sampler, self.bin_width * factor, bins, merge(self.ln_rho),
                           chains, counts, cand, self.diagnostics, self.evaluations, self.seconds, self.complete)

    def with_bin_width(self, width: float | None) -> "OmniSamples":
        """:meth:`coarsen` to ``width`` (a whole multiple of the sampling bin width), or self for None."""
        if width is None or np.isclose(width, self.bin_width):
            return self
        factor = width / self.bin_width
        if factor < 1 or not np.isclose(factor, round(factor)):
            raise ParameterError(f"--bin-width {width:g} must be a whole multiple of the sampling bin width "
                                 f"{self.bin_width:g} (e.g. {self.bin_width * 2:g})", field="bin_width")
        return self.coarsen(int(round(factor)))

    # ------------------------------------------------------------------ representatives
    def representatives(self, per_bin: int, *, seed: int = 0, bins: Sequence[int] | None = None) -> Representatives:
        """Up to ``per_bin`` distinct inputs per bin, drawn with probability proportional to their weight
        (so uniform within the bin), seeded; ``bins``: only these bins (default: every bin)."""
        if isinstance(per_bin, bool) or not isinstance(per_bin, (int, np.integer)) or per_bin < 1:
            raise ParameterError(f"per_bin must be a positive integer, got {per_bin!r}", field="per_bin")
        c = self.candidates
        wanted = set(self.bins.tolist() if bins is None else [int(b) for b in bins])
        rng = np.random.default_rng(seed)
        keys = np.full(len(c), -np.inf)
        if len(c):
            u = rng.random(len(c))
            # Efraimidis-Spirakis: key = u^(1/w), compared as ln(u)/w with w scaled within each bin
            ub, inv = np.unique(c.bin, return_inverse=True)
            mx = np.full(ub.size, -np.inf)
            np.maximum.at(mx, inv, c.log_weight)
            top = mx[inv]
            w = np.exp(c.log_weight - top)
            keys = np.where(w > 0, np.log(np.maximum(u, 1e-300)) / np.maximum(w, 1e-300), -np.inf)
        chosen: list[int] = []
        for b in sorted(wanted):
            idx = np.flatnonzero(c.bin == b)
            seen: set[bytes] = set()
            for i in idx[np.argsort(-keys[idx], kind="stable")]:
                raw = np.ascontiguousarray(c.x[i], dtype=np.int64).tobytes()
                if raw in seen:  # the same input kept by several replicas: show it once
                    continue
                seen.add(raw)
                chosen.append(int(i))
                if len(seen) == per_bin:
                    break
        sel = np.array(chosen, dtype=np.int64)
        x = c.x[sel] if sel.size else np.zeros((0, self.space.n_positions), dtype=self.space.dtype)
        return Representatives([sample_id(b, xi) for b, xi in zip(c.bin[sel], x)], x, c.z[sel], c.bin[sel])

    # ------------------------------------------------------------------ files
    def to_dict(self) -> dict[str, Any]:
        """Everything but the candidates' inputs, JSON-ready."""
        return {"format": FORMAT, "complete": self.complete, "model": self.model, "space": self.space.to_dict(),
                "sampler": self.sampler, "bin_width": self.bin_width, "bins": self.bins.tolist(),
                "ln_rho": self.ln_rho.tolist(), "ln_rho_chains": np.where(np.isnan(self.ln_rho_chains), None,
                                                                            self.ln_rho_chains).tolist(),
                "counts": self.counts.tolist(), "n_candidates": len(self.candidates),
                "diagnostics": self.diagnostics, "evaluations": self.evaluations, "seconds": self.seconds}

    def save(self, folder: str | os.PathLike[str]) -> Path:
        """Write ``omni.json`` and ``candidates.npz`` into ``folder`` (each replaced atomically)."""
        from ..io._common import json_default, plain_json

        out = Path(folder)
        out.mkdir(parents=True, exist_ok=True)
        c = self.candidates
        tmp = out / (CANDIDATES_FILE + ".tmp.npz")
        np.savez_compressed(tmp, x=c.x, z=c.z, bin=c.bin, slot=c.slot, log_weight=c.log_weight)
        os.replace(tmp, out / CANDIDATES_FILE)
        tmp = out / (META_FILE + ".tmp")
        tmp.write_text(json.dumps(plain_json(self.to_dict()), indent=1, default=json_default, allow_nan=False),
                       encoding="utf-8")
        os.replace(tmp, out / META_FILE)
        return out / META_FILE

    @classmethod
    def load(cls, folder: str | os.PathLike[str]) -> "OmniSamples":
        """The samples saved in ``folder`` (by ``evalsift omni sample`` or :meth:`save`)."""
        folder = Path(folder)
        meta_path = folder / META_FILE
        if not meta_path.is_file():
            from .samplers.checkpoints import checkpoint_exists

            hint = (" (a sampling run was interrupted there: run 'evalsift omni sample' again with the same options to "
                    "finish it)" if checkpoint_exists(folder) else "")
            raise DataError(f"--samples {folder}: no {META_FILE} in it; give the --out folder of 'evalsift omni sample'"
                            + hint, field="samples")
        try:
            d = json.loads(meta_path.read_text(encoding="utf-8"))
            if d.get("format") != FORMAT:
                raise DataError(f"{meta_path}: format {d.get('format')!r} is not {FORMAT!r}", field="samples")
            with np.load(folder / CANDIDATES_FILE, allow_pickle=False) as z:  # arrays only, never a pickle
                cand = Candidates(z["x"], z["z"], z["bin"], z["slot"], z["log_weight"])
        except (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile) as e:
            raise DataError(f"--samples {folder}: cannot read the samples ({type(e).__name__}: {e}); run "
                            "'evalsift omni sample' again into a new folder", field="samples") from None
        chains = np.array([[np.nan if v is None else v for v in row] for row in d["ln_rho_chains"]], dtype=np.float64)
        return cls(model=d["model"], space=InputSpace.from_dict(d["space"]), sampler=d["sampler"],
                   bin_width=float(d["bin_width"]), bins=np.asarray(d["bins"], dtype=np.int64),
                   ln_rho=np.asarray(d["ln_rho"], dtype=np.float64),
                   ln_rho_chains=chains.reshape(-1, len(d["bins"])), counts=np.asarray(d["counts"], dtype=np.int64),
                   candidates=cand, diagnostics=d.get("diagnostics", {}), evaluations=int(d.get("evaluations", 0)),
                   seconds=float(d.get("seconds", 0.0)), complete=bool(d.get("complete", True)))

    def fingerprint(self) -> str:
        """A short hash identifying this estimate (model, space, sampler and its result)."""
        h = hashlib.sha256(json.dumps({"model": self.model.get("fingerprint"), "space": self.space.fingerprint(),
                                       "sampler": self.sampler}, sort_keys=True, default=str).encode())
        h.update(self.ln_rho.tobytes())
        return h.hexdigest()[:16]

    def summary(self) -> str:
        """One line: the model, the sampler, the bins, the evaluations."""
        return (f"{self.model.get('name')}: {self.sampler.get('name')} over {self.space.n_positions} positions x "
                f"{self.space.n_values} values (ln|X| = {self.space.log_size:.4g}); {self.bins.size} bins of width "
                f"{self.bin_width:g} on z in [{self.edges[0]:.4g}, {self.edges[-1]:.4g}); {self.evaluations:,} model "
                f"evaluations in {self.seconds:.1f} s; {len(self.candidates)} candidate inputs")


__all__ = ["Candidates", "OmniSamples", "Representatives", "sample_id"]
