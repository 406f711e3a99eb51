"""Stratified re-evaluation against the expected random variance (Kovatchev & Lease 2024, App. A-B).

For each data dimension (see :mod:`.dimensions`):

1. **Scaling** (App. A): :func:`minmax_clip` -- values below the 2nd / above the 98th percentile are
   clipped, then min-max scaled to [0, 1].
2. **Strata** (App. B): :func:`strata` -- 10 equal-size percentile strata; a mass of items sharing one
   value (at least a stratum's worth, e.g. zero noise) is a stratum of its own and the rest is split
   in the remaining 9.
3. **Expected random variance** (Algorithm 1): :func:`random_band` -- 200 random samples of 10% of
   the items; per model the 2.5th / 97.5th percentiles of the performance. A stratum is
   *significant* for a model when the model's performance on it lies outside that band.
4. **Rankings** (Algorithm 2): Kendall's tau (tau-b) of each stratum's ranking of the models against
   their mean bootstrap rank; the stratum ranks *significantly differently* when its tau is outside
   the 2.5th-97.5th percentiles of the bootstrap samples' taus (two-sided, as the paper). With few
   systems the band can cover all of [-1, 1] and nothing can be flagged
   (``StratifiedResult.rank_change_possible``).
5. **Summary** (Tables 1-2): :func:`analyse` / :func:`analyse_all` -- per dimension the std of the
   performance over strata per model (sigma), the % of significant strata, and the number of
   strata with a significantly different ranking.
6. **Dataset similarity** (Sec. 5): :func:`smd` (the paper's standardised mean difference, the two
   variances averaged) and :func:`similarity_vector` -- SMD per dimension between two item sets --
   and :func:`smd_band`, the band of SMD of random 5/10/20% samples against their pool.
   :func:`cohens_d` (pooled, size-weighted SD) is the classical effect size, kept under its own name.

Performance is any :class:`Performance`: :func:`mean_score` (the mean of a score column: 0/1
correctness gives accuracy), :func:`accuracy` and :func:`macro_f1` (predictions and gold labels).
Every one evaluates many index sets at once, so the 200 bootstrap samples are one numpy operation.

>>> import numpy as np
>>> rng = np.random.default_rng(0)
>>> x = rng.random(500)                                          # a dimension
>>> correct = (rng.random((500, 3)) < 0.9 - 0.6 * x[:, None])      # 3 models, worse as x grows
>>> r = analyse(x, mean_score(correct), seed=0)
>>> r.strata_sizes.tolist()
[50, 50, 50, 50, 50, 50, 50, 50, 50, 50]
>>> bool(r.pct_significant >= 40), bool(r.stratum_perf[0].mean() > r.stratum_perf[-1].mean())
(True, True)
"""

from __future__ import annotations

import contextlib
import warnings
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from scipy.stats import rankdata

from ..errors import DataError, ParameterError

__all__ = [
    "Performance",
    "StratifiedResult",
    "accuracy",
    "analyse",
    "analyse_all",
    "cohens_d",
    "correlations",
    "distributions",
    "kendall_tau",
    "macro_f1",
    "mean_score",
    "metric_change",
    "minmax_clip",
    "random_band",
    "sample_indices",
    "similarity_vector",
    "smd",
    "smd_band",
    "strata",
]


# ---------------------------------------------------------------------------------------- scaling
def _vector(values: Any, field: str) -> np.ndarray:
    try:
        v = np.asarray(values, dtype=float)
    except (TypeError, ValueError):
        raise DataError(f"{field}: expected numbers, one per item.", field=field) from None
    if v.ndim != 1:
        raise DataError(f"{field}: expected a 1-D array (one value per item), got shape {v.shape}.", field=field)
    if v.size == 0:
        raise DataError(f"{field}: no items (empty).", field=field)
    return v


def minmax_clip(values: Any, clip: float = 0.02, *, reference: Any = None) -> np.ndarray:
    """MinMax scaling with ``clip`` clipping (Kovatchev & Lease 2024, App. A): a new array in [0, 1].

    Values below the ``clip`` quantile (2nd percentile) are set to it, values above the ``1 - clip``
    quantile (98th) likewise, then ``(v - lo) / (hi - lo)``. The quantiles come from ``reference``
    (default: ``values``; give the pool to scale a subset on the pool's scale). NaN stays NaN; a
    constant array scales to 0.

    >>> v = np.arange(101.0)                         # 2nd percentile 2, 98th 98
    >>> s = minmax_clip(v); s[[0, 2, 50, 98, 100]].tolist()   # clipped, (50 - 2) / 96, clipped
    [0.0, 0.0, 0.5, 1.0, 1.0]
    >>> minmax_clip([1.0, np.nan, 1.0]).tolist()
    [0.0, nan, 0.0]
    """
    v = _vector(values, "values")
    if not 0 <= clip < 0.5:
        raise ParameterError(f"minmax_clip: clip must be in [0, 0.5), got {clip}.", field="clip")
    ref = v if reference is None else _vector(reference, "reference")
    ref = ref[np.isfinite(ref)]
    if ref.size == 0:
        raise DataError("minmax_clip: no finite value to scale by.", field="values")
    lo, hi = np.quantile(ref, [clip, 1.0 - clip])
    if not hi > lo:
        return np.where(np.isfinite(v), 0.0, np.nan)
    return (np.clip(v, lo, hi) - lo) / (hi - lo)


# ----------------------------------------------------------------------------------------- strata
def _allocate(sizes: np.ndarray, k: int) -> np.ndarray:
    """Split ``k`` strata over segments of ``sizes`` items: proportional, largest remainder, >= 1 each."""
    nonempty = sizes > 0
    if k <= 0 or not nonempty.any():
        return np.zeros_like(sizes)
    share = k * sizes / sizes.sum()
    out = np.floor(share).astype(int)
    out[nonempty & (out == 0)] = 1
    while out.sum() > k:  # too many ones forced: take from the largest
        out[np.argmax(np.where(out > 1, out, -1))] -= 1
    order = np.argsort(-(share - np.floor(share)), kind="stable")
    for j in order:
        if out.sum() >= k:
            break
        if nonempty[j]:
            out[j] += 1
    return np.minimum(out, sizes)


def strata(values: Any, n_strata: int = 10, *, seed: int = 0) -> np.ndarray:
    """Percentile strata of ``values``: an int label per item, 0 = lowest values, -1 for NaN.

    Kovatchev & Lease (2024, App. B): ``n_strata`` equal-size strata by rank. When one value is shared
    by at least a stratum's worth of items (``count >= n / n_strata``, e.g. the many items with zero
    noise), those items form one stratum and the other items fill the remaining strata (10 -> the
    mass + 9). Several masses each get a stratum. The non-mass items between two masses are split
    separately, with strata allotted in proportion to their number, so every stratum is a range of
    values. Smaller ties at a boundary are broken at random (``seed``), not by item order.

    >>> strata(np.arange(20.0), 4).tolist()
    [0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 2, 2, 2, 2, 2, 3, 3, 3, 3, 3]
    >>> v = np.r_[np.zeros(8), np.arange(1.0, 13.0)]            # 8 zeros >= 20/4: a mass
    >>> np.bincount(strata(v, 4)).tolist()                      # the mass + 12 split in 3
    [8, 4, 4, 4]
    """
    v = _vector(values, "values")
    if int(n_strata) < 2:
        raise ParameterError(f"strata: n_strata must be >= 2, got {n_strata}.", field="n_strata")
    n_strata = int(n_strata)
    labels = np.full(v.size, -1, dtype=int)
    idx = np.flatnonzero(np.isfinite(v))
    if idx.size == 0:
        raise DataError("strata: no finite value to stratify.", field="values")
    rng = np.random.default_rng(seed)
    order = idx[np.lexsort((rng.random(idx.size), v[idx]))]  # by value, ties at random
    sv = v[order]
    _, start, counts = np.unique(sv, return_index=True, return_counts=True)
    is_mass = counts >= idx.size / n_strata
    k_rest = max(n_strata - int(is_mass.sum()), 0)
    # walk the sorted values as alternating segments: runs of non-mass values, and masses
    segments: list[tuple[bool, np.ndarray]] = []
    pos = 0
    for u_start, u_count, mass in zip(start, counts, is_mass):
        if mass:
            if u_start > pos:
                segments.append((False, order[pos:u_start]))
            segments.append((True, order[u_start:u_start + u_count]))
            pos = u_start + u_count
    if pos < sv.size:
        segments.append((False, order[pos:]))
    rest_sizes = np.array([len(s) for m, s in segments if not m])
    alloc = iter(_allocate(rest_sizes, k_rest) if rest_sizes.size else [])
    label = 0
    for mass, members in segments:
        if mass:
            labels[members] = label
            label += 1
            continue
        k = int(next(alloc))
        if k == 0:  # every stratum went to masses: these few items join no stratum
            continue
        for chunk in np.array_split(members, k):
            labels[chunk] = label
            label += 1
    return labels


# ------------------------------------------------------------------------------------ performance
@dataclass(frozen=True, eq=False)
class Performance:
    """A performance measure over item subsets, for several models at once.

    ``__call__(idx)``: ``idx`` is an int array of item positions -- 1-D (one subset) gives one value
    per model, shape ``(n_models,)``; 2-D ``(n_sets, k)`` gives ``(n_sets, n_models)`` in one numpy
    operation. Build one with :func:`mean_score`, :func:`accuracy` or :func:`macro_f1`.
    """

    name: str
    models: tuple[str, ...]
    n_items: int
    _fn: Callable[[np.ndarray], np.ndarray] = field(repr=False)

    def __call__(self, idx: Any) -> np.ndarray:
        idx = np.asarray(idx)
        if idx.dtype == bool:
            idx = np.flatnonzero(idx)
        one = idx.ndim == 1
        out = self._fn(np.atleast_2d(idx).astype(int))
        return out[0] if one else out

    def full(self) -> np.ndarray:
        """The performance of every model on all items."""
        return self(np.arange(self.n_items))


def _models(models: Sequence[str] | None, n: int) -> tuple[str, ...]:
    if models is None:
        return tuple(f"model{j}" for j in range(n))
    models = tuple(str(m) for m in models)
    if len(models) != n:
        raise DataError(f"models: {len(models)} names for {n} model columns.", field="models")
    return models


def _columns(values: Any, field: str) -> tuple[np.ndarray, tuple[str, ...] | None]:
    """A mapping {model: per-item values} or an items x models array -> (array, names or None)."""
    if isinstance(values, Mapping):
        if not values:
            raise DataError(f"{field}: no models (empty mapping).", field=field)
        cols = [np.asarray(c) for c in values.values()]
        sizes = {str(m): len(c) for m, c in zip(values, cols)}
        if len(set(sizes.values())) > 1:
            raise DataError(f"{field}: models have different numbers of items: {sizes}.", field=field)
        return np.stack(cols, axis=1), tuple(str(m) for m in values)
    arr = np.asarray(values)
    if arr.ndim == 1:
        arr = arr[:, None]
    if arr.ndim != 2:
        raise DataError(f"{field}: expected items x models, got shape {arr.shape}.", field=field)
    return arr, None


def mean_score(scores: Any, models: Sequence[str] | None = None, name: str = "mean") -> Performance:
    """Performance = the mean of a per-item score per model (NaN left out). 0/1 scores give accuracy.

    ``scores``: items x models (a Pool's ``scores[metric]``) or ``{model: per-item scores}``.

    >>> p = mean_score([[1, 0], [0, 0], [1, 1]], models=["A", "B"])
    >>> p([0, 2]).tolist(), p([[0, 1], [1, 2]]).tolist()
    ([1.0, 0.5], [[0.5, 0.0], [0.5, 0.5]])
    """
    arr, names = _columns(scores, "scores")
    try:
        s = np.asarray(arr, dtype=float)
    except (TypeError, ValueError):
        raise DataError("scores: expected numbers.", field="scores") from None
    if s.shape[0] == 0:
        raise DataError("scores: no items (empty).", field="scores")

    def fn(idx: np.ndarray) -> np.ndarray:
        with np.errstate(invalid="ignore"), _quiet():
            return np.nanmean(s[idx], axis=1)

    return Performance(name, names or _models(models, s.shape[1]), s.shape[0], fn)


@contextlib.contextmanager
def _quiet() -> Iterator[None]:
    """Silence numpy's RuntimeWarnings (an all-NaN slice gives NaN, which is what we want)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        yield


def _pred_gold(predictions: Any, gold: Any) -> tuple[np.ndarray, np.ndarray, tuple[str, ...] | None, int]:
    P, names = _columns(predictions, "predictions")
    g = np.asarray(gold)
    if g.ndim != 1:
        raise DataError(f"gold: expected one label per item, got shape {g.shape}.", field="gold")
    if P.shape[0] == 0 or g.size == 0:
        raise DataError("predictions/gold: no items (empty).", field="gold" if g.size == 0 else "predictions")
    if P.shape[0] != g.size:
        raise DataError(f"predictions have {P.shape[0]} items but gold has {g.size}; give both for the same "
                        "items in the same order.", field="gold")
    classes, codes = np.unique(np.concatenate([g, P.ravel()]).astype(str), return_inverse=True)
    return codes[g.size:].reshape(P.shape), codes[:g.size], names, classes.size


def accuracy(predictions: Any, gold: Any, models: Sequence[str] | None = None) -> Performance:
    """Performance = accuracy of each model's ``predictions`` (items x models, or ``{model: labels}``) against ``gold``.

    >>> accuracy({"A": ["e", "n", "c"], "B": ["e", "e", "e"]}, ["e", "n", "n"]).full().round(4).tolist()
    [0.6667, 0.3333]
    """
    P, g, names, _ = _pred_gold(predictions, gold)
    correct = (P == g[:, None]).astype(float)
    return Performance("accuracy", names or _models(models, P.shape[1]), P.shape[0],
                       lambda idx: correct[idx].mean(axis=1))


def macro_f1(predictions: Any, gold: Any, models: Sequence[str] | None = None) -> Performance:
    """Performance = macro-F1 (as ``sklearn.metrics.f1_score(average="macro")``), vectorised over subsets.

    Per subset, the classes are those present in its gold labels or predictions; a class with no
    true positive, false positive or false negative does not occur, and a class that occurs but is
    never right scores 0.

    >>> macro_f1({"A": [0, 1, 1, 2]}, [0, 1, 2, 2]).full().round(4).tolist()   # F1 1, 2/3, 2/3 -> mean
    [0.7778]
    """
    P, g, names, n_classes = _pred_gold(predictions, gold)

    def fn(idx: np.ndarray) -> np.ndarray:
        p = P[idx]  # (sets, k, models)
        t = g[idx][:, :, None]
        out = np.zeros((idx.shape[0], P.shape[1]))
        present = np.zeros_like(out)
        for c in range(n_classes):  # classes are few; the sets and models stay vectorised
            pc, tc = p == c, t == c
            tp = (pc & tc).sum(axis=1)
            fp = (pc & ~tc).sum(axis=1)
            fn_ = (~pc & tc).sum(axis=1)
            denom = 2 * tp + fp + fn_
            out += np.divide(2 * tp, denom, out=np.zeros(denom.shape), where=denom > 0)
            present += denom > 0
        return out / np.maximum(present, 1)

    return Performance("macro_f1", names or _models(models, P.shape[1]), P.shape[0], fn)


# ------------------------------------------------------------------------------------- bootstrap
def sample_indices(n_items: int, size: int, n_samples: int, seed: int = 0, population: Any = None) -> np.ndarray:
    """``(n_samples, size)`` int matrix: each row a random sample without replacement of ``population``.

    ``population``: the item positions to draw from (default ``range(n_items)``). One argsort of a
    random matrix draws every sample at once.

    >>> s = sample_indices(10, 3, 4, seed=1); s.shape, all(len(set(r)) == 3 for r in s.tolist())
    ((4, 3), True)
    """
    pop = np.arange(n_items) if population is None else np.asarray(population, dtype=int)
    if not 1 <= size <= pop.size:
        raise ParameterError(f"sample size must be in [1, {pop.size}], got {size}.", field="frac")
    if int(n_samples) < 1:
        raise ParameterError(f"n_samples must be >= 1, got {n_samples}.", field="n_samples")
    rng = np.random.default_rng(seed)
    keys = rng.random((int(n_samples), pop.size))
    return pop[np.argpartition(keys, size - 1, axis=1)[:, :size]] if size < pop.size else pop[np.argsort(keys, axis=1)]


def _check_frac(frac: float) -> None:
    if not 0 < frac <= 1:
        raise ParameterError(f"frac must be in (0, 1], got {frac}.", field="frac")


def random_band(perf: Performance, *, n_samples: int = 200, frac: float = 0.1, q: tuple[float, float] = (2.5, 97.5),
                seed: int = 0, population: Any = None) -> tuple[np.ndarray, np.ndarray]:
    """Expected random variance (Kovatchev & Lease 2024, Algorithm 1).

    Draws ``n_samples`` random samples of ``frac`` of the items (without replacement; from
    ``population`` if given) and returns ``(band, samples)``: ``band`` has shape ``(2, n_models)``,
    the ``q`` percentiles (2.5, 97.5) of each model's performance; ``samples`` is the
    ``(n_samples, n_models)`` performance of every sample (for Algorithm 2).

    >>> p = mean_score(np.r_[np.ones(50), np.zeros(50)])
    >>> band, s = random_band(p, seed=3); s.shape, bool(band[0, 0] <= 0.5 <= band[1, 0])
    ((200, 1), True)
    """
    _check_frac(frac)
    pop = np.arange(perf.n_items) if population is None else np.asarray(population, dtype=int)
    size = max(1, round(frac * pop.size))
    idx = sample_indices(perf.n_items, size, n_samples, seed, pop)
    samples = perf(idx)
    with _quiet():
        band = np.nanpercentile(samples, q, axis=0)
    return band, samples


def kendall_tau(x: Any, y: Any) -> np.ndarray:
    """Kendall's tau-b of each row of ``x`` against ``y`` (as ``scipy.stats.kendalltau``), vectorised.

    ``x``: ``(n_sets, n)`` or ``(n,)``; ``y``: ``(n,)``. NaN where a row or ``y`` is constant.

    >>> kendall_tau([[1, 2, 3], [3, 2, 1], [1, 3, 2]], [1, 2, 3]).round(4).tolist()
    [1.0, -1.0, 0.3333]
    """
    x = np.atleast_2d(np.asarray(x, dtype=float))
    y = np.asarray(y, dtype=float)
    i, j = np.triu_indices(y.size, k=1)
    sx = np.sign(x[:, i] - x[:, j])
    sy = np.sign(y[i] - y[j])
    denom = np.sqrt(np.abs(sx).sum(axis=1) * np.abs(sy).sum())
    return np.divide((sx * sy).sum(axis=1), denom, out=np.full(x.shape[0], np.nan), where=denom > 0)


# ------------------------------------------------------------------------------------ the analysis
@dataclass(frozen=True, eq=False)
class StratifiedResult:
    """One dimension's stratified re-evaluation (Kovatchev & Lease 2024, Tables 1-2 and App. B).

    Per stratum ``s`` (0 = lowest dimension values) and model ``m``: ``stratum_perf[s, m]``,
    ``significant[s, m]`` (outside ``band[:, m]``); per model: ``full_perf``, ``band`` (2 x models),
    ``sigma`` (std over strata, ``ddof=0``), ``pct_significant_per_model``; overall:
    ``pct_significant`` (% of stratum x model cells outside the band: Table 1), ``stratum_tau``,
    ``tau_band`` (the 2.5th and 97.5th percentiles of the bootstrap taus), ``rank_significant`` (tau
    outside ``tau_band``, either side: Algorithm 2) and ``n_rank_significant`` (Table 2);
    ``rank_change_possible`` is False when ``tau_band`` covers [-1, 1], so no stratum could be
    flagged (too few systems, or systems whose order flips at random). ``stratum_range[s]`` is the
    (min, max) raw value in stratum s.
    """

    dimension: str
    models: tuple[str, ...]
    labels: np.ndarray
    strata_sizes: np.ndarray
    stratum_range: np.ndarray
    stratum_perf: np.ndarray
    full_perf: np.ndarray
    band: np.ndarray
    significant: np.ndarray
    sigma: np.ndarray
    pct_significant_per_model: np.ndarray
    pct_significant: float
    stratum_tau: np.ndarray
    tau_band: np.ndarray
    rank_significant: np.ndarray
    n_rank_significant: int
    rank_change_possible: bool
    params: dict[str, Any]

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict (arrays as lists; ``labels`` left out -- recompute with :func:`strata`)."""
        out: dict[str, Any] = {}
        for k in self.__dataclass_fields__:
            if k == "labels":
                continue
            v = getattr(self, k)
            out[k] = v.tolist() if isinstance(v, np.ndarray) else (list(v) if isinstance(v, tuple) else v)
        return out


def _ranking(samples: np.ndarray, stratum_perf: np.ndarray,
             q: tuple[float, float]) -> tuple[np.ndarray, np.ndarray, np.ndarray, bool]:
    """Algorithm 2 (two-sided, as the paper): Kendall tau of each stratum's ranking against the mean
    bootstrap rank; significant when outside the ``q`` percentiles of the bootstrap samples' taus.

    Returns ``(tau, band, significant, possible)``; ``possible`` is False when the band covers every
    value tau can take ([-1, 1]), so that no stratum can rank significantly differently (e.g. 2-3
    systems whose order flips in more than 2.5% of the random samples)."""
    n_s = stratum_perf.shape[0]
    if samples.shape[1] < 2:
        return np.full(n_s, np.nan), np.full(2, np.nan), np.zeros(n_s, dtype=bool), False
    ranks = rankdata(-samples, axis=1)  # 1 = best; ties share the average rank
    mean_rank = ranks.mean(axis=0)
    boot_tau = kendall_tau(-samples, mean_rank)  # performance up <-> rank down
    with _quiet():
        band = np.nanpercentile(boot_tau, q)
    tau = kendall_tau(-stratum_perf, mean_rank)
    eps = 1e-12
    possible = bool(np.isfinite(band).all() and (band[0] > -1 + eps or band[1] < 1 - eps))
    with np.errstate(invalid="ignore"):
        sig = np.isfinite(tau) & ((tau < band[0]) | (tau > band[1]))
    return tau, band, sig, possible


def analyse(values: Any, perf: Performance, *, name: str = "dimension", n_strata: int = 10,
            n_samples: int = 200, frac: float = 0.1, q: tuple[float, float] = (2.5, 97.5), seed: int = 0,
            _band: tuple[np.ndarray, np.ndarray] | None = None) -> StratifiedResult:
    """Stratify the items by one dimension and re-evaluate every model per stratum (App. B, Alg. 1-2).

    ``values``: the dimension, one float per item (NaN items join no stratum and are left out of the
    bootstrap too, so strata and random samples come from the same items). ``perf``: a
    :class:`Performance`. ``seed`` fixes the bootstrap and the tie-breaking of :func:`strata`.
    """
    v = _vector(values, name)
    if v.size != perf.n_items:
        raise DataError(f"dimension {name!r} has {v.size} values but the performance has {perf.n_items} items; "
                        "give both for the same items in the same order.", field=name)
    _check_frac(frac)
    labels = strata(v, n_strata, seed=seed)
    pop = np.flatnonzero(labels >= 0)
    band, samples = _band if _band is not None else random_band(
        perf, n_samples=n_samples, frac=frac, q=q, seed=seed, population=None if pop.size == v.size else pop)
    n_s = int(labels.max()) + 1
    sizes = np.bincount(labels[labels >= 0], minlength=n_s)
    stratum_perf = np.vstack([perf(np.flatnonzero(labels == s)) for s in range(n_s)])
    rng_ = np.array([[v[labels == s].min(), v[labels == s].max()] for s in range(n_s)])
    significant = (stratum_perf < band[0]) | (stratum_perf > band[1])
    tau, tau_band, rank_sig, possible = _ranking(samples, stratum_perf, q)
    pct_model = 100.0 * significant.mean(axis=0)
    return StratifiedResult(
        dimension=name, models=perf.models, labels=labels, strata_sizes=sizes, stratum_range=rng_,
        stratum_perf=stratum_perf, full_perf=perf(pop), band=band, significant=significant,
        sigma=stratum_perf.std(axis=0), pct_significant_per_model=pct_model,
        pct_significant=float(100.0 * significant.mean()), stratum_tau=tau, tau_band=tau_band,
        rank_significant=rank_sig, n_rank_significant=int(rank_sig.sum()), rank_change_possible=possible,
        params={"performance": perf.name, "n_strata": n_strata, "n_samples": n_samples, "frac": frac,
                "q": list(q), "seed": seed, "n_items": int(pop.size)})


def analyse_all(dims: Mapping[str, Any], perf: Performance, **kw: Any) -> dict[str, StratifiedResult]:
    """:func:`analyse` for every dimension in ``dims`` ({name: values}); one bootstrap serves every
    dimension defined on all items (a dimension with NaN items gets its own, over its items).

    >>> rng = np.random.default_rng(1)
    >>> dims = {"a": rng.random(200), "b": rng.random(200)}
    >>> res = analyse_all(dims, mean_score(rng.random((200, 2))))
    >>> sorted(res), res["a"].band is res["b"].band
    (['a', 'b'], True)
    """
    if not dims:
        raise ParameterError("analyse_all: no dimensions given.", field="dims")
    shared = None
    out = {}
    for name, values in dims.items():
        v = _vector(values, name)
        band = None
        if np.isfinite(v).all() and v.size == perf.n_items:
            if shared is None:
                shared = random_band(perf, n_samples=kw.get("n_samples", 200), frac=kw.get("frac", 0.1),
                                     q=kw.get("q", (2.5, 97.5)), seed=kw.get("seed", 0))
            band = shared
        out[name] = analyse(v, perf, name=name, _band=band, **kw)
    return out


# ---------------------------------------------------------------------------------- similarity
def _two_sets(a: Any, b: Any, who: str) -> tuple[np.ndarray, np.ndarray]:
    a, b = _vector(a, "a"), _vector(b, "b")
    a, b = a[np.isfinite(a)], b[np.isfinite(b)]
    if a.size < 1 or b.size < 1 or a.size + b.size < 3:
        raise DataError(f"{who}: each set needs finite values, and at least 3 together.",
                        field="a" if a.size < 1 else "b")
    return a, b


def _ratio(diff: float, sd: float) -> float:
    if sd == 0:
        return 0.0 if diff == 0 else float(np.sign(diff) * np.inf)
    return float(diff / sd)


def smd(a: Any, b: Any) -> float:
    """Standardised mean difference of ``a`` against ``b`` as Kovatchev & Lease (2024, Sec. 5) define it:
    ``(mean_a - mean_b) / sqrt((s_a^2 + s_b^2) / 2)``.

    ``s_a``, ``s_b``: the sample standard deviations (``ddof=1``; a set of one value counts as 0);
    NaN are left out. The two variances weigh equally whatever the sizes (unlike :func:`cohens_d`).
    When the denominator is 0: 0 if the means are equal, else +-inf.

    >>> smd([1.0, 2.0, 3.0], [3.0, 4.0, 5.0])        # (2 - 4) / sqrt((1 + 1) / 2)
    -2.0
    >>> round(smd([0.0, 2.0], [0.0, 1.0, 2.0, 3.0, 4.0]), 4)   # -1 / sqrt((2 + 2.5) / 2)
    -0.6667
    """
    a, b = _two_sets(a, b, "smd")
    va = a.var(ddof=1) if a.size > 1 else 0.0
    vb = b.var(ddof=1) if b.size > 1 else 0.0
    return _ratio(a.mean() - b.mean(), float(np.sqrt((va + vb) / 2)))


def cohens_d(a: Any, b: Any) -> float:
    """Cohen's d of ``a`` against ``b``: ``(mean_a - mean_b) / s_pooled`` -- NOT the paper's SMD (see :func:`smd`).

    ``s_pooled = sqrt(((n_a - 1) var_a + (n_b - 1) var_b) / (n_a + n_b - 2))`` (``ddof=1``): each
    variance weighted by its degrees of freedom, so a large set dominates. It equals :func:`smd` when
    the two sets have the same size; on uneven sets they differ (WMT23 en-de, scaled length by domain:
    up to 17% between two domains, 14% between a domain and the pool).
    Kept for users who want the classical effect size; nothing in the profile uses it.

    >>> round(cohens_d([0.0, 2.0], [0.0, 1.0, 2.0, 3.0, 4.0]), 4)   # -1 / sqrt((1*2 + 4*2.5) / 5)
    -0.6455
    """
    a, b = _two_sets(a, b, "cohens_d")
    va = a.var(ddof=1) if a.size > 1 else 0.0
    vb = b.var(ddof=1) if b.size > 1 else 0.0
    sp = np.sqrt(((a.size - 1) * va + (b.size - 1) * vb) / (a.size + b.size - 2))
    return _ratio(a.mean() - b.mean(), float(sp))


def similarity_vector(first: Mapping[str, Any], second: Mapping[str, Any], *, scale: bool = True,
                      clip: float = 0.02) -> dict[str, float]:
    """The dataset similarity vector (Kovatchev & Lease 2024, Sec. 5): SMD per dimension of ``first`` vs ``second``.

    ``first``, ``second``: {dimension: per-item values} for two item sets (a subset and its pool,
    or two splits); the dimensions of ``first`` must all be in ``second``. With ``scale`` (default)
    each dimension is first :func:`minmax_clip`-ed on the two sets together (App. A), so clipping
    treats both alike.

    >>> pool = {"length": np.arange(100.0)}
    >>> sub = {"length": np.arange(50.0, 100.0)}      # means 74.5 vs 49.5; variances 212.5, 841.67
    >>> round(similarity_vector(sub, pool, scale=False)["length"], 3)   # 25 / sqrt((212.5 + 841.67) / 2)
    1.089
    """
    if not first:
        raise ParameterError("similarity_vector: no dimensions given.", field="first")
    out = {}
    for name, a in first.items():
        if name not in second:
            raise DataError(f"similarity_vector: dimension {name!r} is in the first set but not the second "
                            f"(it has {sorted(second)}).", field=name)
        a, b = _vector(a, name), _vector(second[name], name)
        if scale:
            both = np.concatenate([a, b])
            a, b = minmax_clip(a, clip, reference=both), minmax_clip(b, clip, reference=both)
        out[name] = smd(a, b)
    return out


def smd_band(dims: Mapping[str, Any], *, fracs: Sequence[float] = (0.05, 0.1, 0.2), n_samples: int = 200,
             q: tuple[float, float] = (2.5, 97.5), seed: int = 0, scale: bool = True,
             clip: float = 0.02) -> dict[float, dict[str, tuple[float, float]]]:
    """The :func:`smd` of random samples against their pool: {frac: {dimension: (lo, hi)}} (``q`` percentiles).

    What "similar" looks like: a subset whose SMD lies inside the band of random subsets of its
    size is indistinguishable from a random draw on that dimension. Vectorised over the samples.

    >>> b = smd_band({"x": np.random.default_rng(0).random(1000)}, fracs=(0.1,))
    >>> lo, hi = b[0.1]["x"]; bool(-0.4 < lo < 0 < hi < 0.4)
    True
    """
    if not dims:
        raise ParameterError("smd_band: no dimensions given.", field="dims")
    out: dict[float, dict[str, tuple[float, float]]] = {}
    for f_i, frac in enumerate(fracs):
        _check_frac(frac)
        out[float(frac)] = {}
        for name, values in dims.items():
            v = _vector(values, name)
            v = v[np.isfinite(v)]
            if scale:
                v = minmax_clip(v, clip)
            size = max(2, round(frac * v.size))
            idx = sample_indices(v.size, min(size, v.size), n_samples, seed + 7919 * f_i)
            x = v[idx]
            ma, va = x.mean(axis=1), x.var(axis=1, ddof=1)
            sd = np.sqrt((va + v.var(ddof=1)) / 2)  # the paper's SMD, as smd()
            with np.errstate(invalid="ignore", divide="ignore"):
                d = (ma - v.mean()) / sd
            lo, hi = np.nanpercentile(d, q)
            out[float(frac)][name] = (float(lo), float(hi))
    return out


# ----------------------------------------------------------------------------- distribution (Sec. 3.1)
def correlations(dims: Mapping[str, Any]) -> dict[str, Any]:
    """Spearman rank correlation between every two dimensions (Kovatchev & Lease 2024, Sec. 3.1), JSON-ready.

    The paper checks that its dimensions are not correlated with one another (it does not name the
    coefficient; Spearman's is used here because it does not depend on the scaling and is robust to
    the dimensions' skew). Each pair uses the items where both are finite. Returns ``dimensions``,
    ``method``, ``rho``, ``p`` (two-sided, :func:`scipy.stats.spearmanr`) and ``n`` as square nested
    lists (NaN where fewer than 3 items or a dimension is constant there).

    >>> x = np.arange(10.0)
    >>> c = correlations({"a": x, "b": x ** 2, "c": -x})
    >>> round(c["rho"][0][1], 6), round(c["rho"][0][2], 6), c["n"][0][1]
    (1.0, -1.0, 10)
    """
    from scipy.stats import spearmanr

    if not dims:
        raise ParameterError("correlations: no dimensions given.", field="dims")
    names = list(dims)
    vals = [_vector(dims[n], n) for n in names]
    sizes = {n: v.size for n, v in zip(names, vals)}
    if len(set(sizes.values())) > 1:
        raise DataError(f"correlations: the dimensions have different numbers of items: {sizes}.", field=names[0])
    k = len(names)
    rho, p, n = np.eye(k), np.zeros((k, k)), np.zeros((k, k), dtype=int)
    for i in range(k):
        n[i, i] = int(np.isfinite(vals[i]).sum())
        for j in range(i + 1, k):
            ok = np.isfinite(vals[i]) & np.isfinite(vals[j])
            n[i, j] = n[j, i] = int(ok.sum())
            r = pv = float("nan")
            if ok.sum() >= 3 and np.ptp(vals[i][ok]) > 0 and np.ptp(vals[j][ok]) > 0:
                res = spearmanr(vals[i][ok], vals[j][ok])
                r, pv = float(res.statistic), float(res.pvalue)
            rho[i, j] = rho[j, i] = r
            p[i, j] = p[j, i] = pv
    return {"dimensions": names, "method": "spearman", "rho": rho.tolist(), "p": p.tolist(), "n": n.tolist()}


def distributions(dims: Mapping[str, Any], *, bins: int = 20, clip: float = 0.02) -> dict[str, Any]:
    """The normalised distribution of every dimension (Kovatchev & Lease 2024, Fig. 3 and App. A), JSON-ready.

    Each dimension is :func:`minmax_clip`-ed (2% clipping, then [0, 1]) and counted in ``bins`` equal
    bins of [0, 1]. Returns ``{"edges": [...], "counts": {dimension: [...]}, "n": {dimension: finite
    items}}``; NaN items are left out.

    >>> d = distributions({"x": np.arange(101.0)}, bins=4)
    >>> d["edges"], d["counts"]["x"]     # (v - 2) / 96 clipped: 0..25, 26..49, 50..73, 74..100
    ([0.0, 0.25, 0.5, 0.75, 1.0], [26, 24, 24, 27])
    """
    if not dims:
        raise ParameterError("distributions: no dimensions given.", field="dims")
    if isinstance(bins, bool) or not isinstance(bins, (int, np.integer)) or bins < 1:
        raise ParameterError(f"distributions: bins must be an integer >= 1, got {bins!r}.", field="bins")
    edges = np.linspace(0.0, 1.0, int(bins) + 1)
    counts, n = {}, {}
    for name, values in dims.items():
        v = minmax_clip(values, clip)
        v = v[np.isfinite(v)]
        counts[name] = np.histogram(v, bins=edges)[0].tolist()
        n[name] = int(v.size)
    return {"edges": edges.tolist(), "counts": counts, "n": n}


# ------------------------------------------------------------------------------ metric-change baseline
def metric_change(first: Performance, second: Performance) -> dict[str, Any]:
    """The metric-change baseline of Table 1 (Kovatchev & Lease 2024): how much a model's score and
    the models' ranking move when the *metric* changes on the same items (e.g. accuracy -> macro-F1),
    to set beside how much they move when the *data* changes (sigma over strata).

    Returns ``{"per_model": |first - second| per model, "mean": its mean, "max": its max, "tau":
    Kendall tau-b of the two rankings}``. Both performances must score the same models on the same items.

    >>> gold = [0, 0, 0, 1]
    >>> p = {"A": [0, 0, 0, 0], "B": [0, 0, 0, 1]}
    >>> r = metric_change(accuracy(p, gold), macro_f1(p, gold))
    >>> [round(v, 4) for v in r["per_model"]], r["tau"]     # A: 0.75 vs 0.4286; B: 1 vs 1; same order
    ([0.3214, 0.0], 1.0)
    """
    if first.models != second.models or first.n_items != second.n_items:
        raise DataError(f"metric_change: the two performances score {first.models} on {first.n_items} items and "
                        f"{second.models} on {second.n_items}; give both for the same models and items.",
                        field="second")
    a, b = first.full(), second.full()
    d = np.abs(a - b)
    tau = kendall_tau(a, b)[0] if len(a) > 1 else float("nan")
    return {"per_model": d.tolist(), "mean": float(np.nanmean(d)), "max": float(np.nanmax(d)),
            "tau": float(tau)}
