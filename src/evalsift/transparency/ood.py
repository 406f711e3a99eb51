"""Splits, similarity and out-of-distribution prediction (Kovatchev & Lease, NAACL 2024, Sec. 5).

- :func:`split_similarity` -- the dataset similarity vector (SMD per dimension) between every ordered
  pair of splits (topics, domains, sources: a metadata field), of each split against the pool, and
  the band of random 5/10/20% samples (the paper's Fig. 5).
- :func:`ood_regression` -- predict a model's score on a *target* split from its score on a *source*
  split and the similarity vector target-vs-source, with a linear regression (scikit-learn
  ``LinearRegression``), evaluated on held-out source-target pairs against the **no-change**
  baseline (target score = source score): MAD and R2 (the paper's Table 3) and standardised
  regression weights (Table 4). Two held-out protocols: ours (``protocol="leave_target_out"``, the
  default, below) and the paper's (``protocol="paper"``, :func:`random_pair_folds`).
- :func:`two_model_profile` -- two models' performance per stratum of every dimension with their
  random bands (Fig. 6).
- Beyond the paper: :func:`selection_report` (how a selection differs from its pool on every
  dimension, against the SMD band of random samples of the same size) and :func:`predict_unjudged`
  (a model's score on a new, unjudged split from label-free dimensions only).

**Held-out scheme, ours** (:func:`leave_target_out`, ``protocol="leave_target_out"``): one fold per split ``k``. The fold's test pairs are
every ``s -> k`` (each ordered pair is predicted exactly once, in the fold of its target); the
regression is trained on the ordered pairs among the *other* splits only, so the held-out split
never appears in training, neither as a target nor as a source, and no training pair is the
reverse of a test pair. It is the situation of :func:`predict_unjudged`: a new split, nothing of it
judged. Every model's row of a pair is in the same fold (models are not held out: a model's
general level is in its source score).

**Held-out scheme, the paper's** (``protocol="paper"``, Sec. 5 "Obtaining train and test sets"):
the source-target pairs are the full data -> every topic (their SQuAD setting, ``pairs="full"``),
every ordered pair of topics (their MNLI setting, ``pairs="topics"``) or both (``pairs="both"``, the
default: with the 4-5 topics of our data either set alone leaves too few pairs to fit on). A
repeat holds out ``test_pairs`` pairs drawn at random (5 in the paper's SQuAD run) and trains on all
the others; ``repeats`` (5) repeats with different draws, seeded. A held-out topic still appears in
training as the source or the target of other pairs, and the full data contains every topic, so
this scores the interpolation between known splits -- not a prediction for an unjudged split,
which is why ours is the default.

SMD needs the dimensions on one scale: each dimension is :func:`~.analysis.minmax_clip`-ed once on
all items, then the SMD of two splits is computed on those values (so every pair uses the same
clipping; SMD itself does not change under a linear rescaling).

>>> import numpy as np
>>> rng = np.random.default_rng(0)
>>> groups = np.repeat(["a", "b", "c", "d"], 100)
>>> x = rng.random(400) + np.repeat([0.0, 0.3, 0.6, 0.9], 100)    # splits differ in the dimension
>>> scores = 0.2 * x[:, None] + np.array([0.1, 0.3, 0.5]) + rng.normal(0, 0.05, (400, 3))
>>> r = ood_regression(split_indices(groups), mean_score(scores), {"x": x})
>>> bool(r.mad < r.mad_no_change)                                 # the shift follows the SMD
True
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import DataError, ParameterError, check_choice
from .analysis import (
    Performance,
    StratifiedResult,
    mean_score,
    minmax_clip,
    smd,
    smd_band,
)

__all__ = [
    "OODResult",
    "leave_target_out",
    "ood_regression",
    "pair_similarity",
    "predict_unjudged",
    "random_pair_folds",
    "selection_report",
    "split_indices",
    "split_performance",
    "split_similarity",
    "two_model_profile",
]

SCHEME = ("leave-one-target-split-out: fold k predicts every pair s -> k; trained on the pairs among the other "
          "splits only (k is neither source nor target in training)")
PROTOCOLS = ("leave_target_out", "paper")
PAIR_SETS = ("both", "full", "topics")
FULL = "(full)"  # the name of the full data as a source split (protocol="paper")


# ------------------------------------------------------------------------------------------ splits
def split_indices(groups: Sequence[Any], *, min_size: int = 2) -> dict[str, np.ndarray]:
    """``{split name: item positions}`` from one label per item (a metadata field), names sorted.

    Items labelled ``None`` or NaN join no split; splits with fewer than ``min_size`` items are left out.

    >>> {k: v.tolist() for k, v in split_indices(["x", "y", "x", None, "y"]).items()}
    {'x': [0, 2], 'y': [1, 4]}
    """
    labels = [None if g is None or (isinstance(g, float) and np.isnan(g)) else str(g) for g in groups]
    if not labels:
        raise DataError("groups: no items (empty).", field="groups")
    out: dict[str, list[int]] = {}
    for i, g in enumerate(labels):
        if g is not None:
            out.setdefault(g, []).append(i)
    return {k: np.array(out[k]) for k in sorted(out) if len(out[k]) >= min_size}


def split_performance(perf: Performance, splits: Mapping[str, np.ndarray]) -> np.ndarray:
    """``(n_splits, n_models)``: every model's performance on every split (NaN where it has no score)."""
    return np.vstack([perf(idx) for idx in splits.values()]) if splits else np.zeros((0, len(perf.models)))


def _scaled(dims: Mapping[str, Any]) -> dict[str, np.ndarray]:
    if not dims:
        raise ParameterError("no dimensions given.", field="dims")
    return {k: minmax_clip(v) for k, v in dims.items()}


def _smd_or_nan(a: np.ndarray, b: np.ndarray) -> float:
    try:
        return smd(a, b)
    except DataError:  # a split with no finite value of this dimension
        return float("nan")


def pair_similarity(dims: Mapping[str, Any], splits: Mapping[str, np.ndarray]) -> np.ndarray:
    """``sim[t, s, d]``: the SMD of split ``t`` (target) against split ``s`` (source) on dimension ``d``.

    Dimensions are :func:`minmax_clip`-ed once on all items first. The diagonal is 0.

    >>> sp = split_indices(["a"] * 3 + ["b"] * 3)
    >>> sim = pair_similarity({"x": [1.0, 2, 3, 3, 4, 5]}, sp)   # clipped to [1.1, 4.9]: (3.967 - 2.033) / 0.950
    >>> sim[:, :, 0].round(3).tolist()
    [[0.0, -2.034], [2.034, 0.0]]
    """
    scaled = list(_scaled(dims).values())
    idx = list(splits.values())
    out = np.zeros((len(idx), len(idx), len(scaled)))
    for t, it in enumerate(idx):
        for s, is_ in enumerate(idx):
            if s != t:
                out[t, s] = [_smd_or_nan(v[it], v[is_]) for v in scaled]
    return out


def split_similarity(dims: Mapping[str, Any], groups: Sequence[Any], *, fracs: Sequence[float] = (0.05, 0.1, 0.2),
                     n_samples: int = 200, seed: int = 0, min_size: int = 2) -> dict[str, Any]:
    """The similarity vectors of a split setting (Fig. 5), JSON-ready.

    Keys: ``splits`` ({name: n_items}), ``dimensions``, ``pairs`` (one row per ordered pair:
    ``source``, ``target``, ``smd`` {dim: SMD of target vs source}), ``vs_pool`` ({split: {dim: SMD of
    the split vs all items}}), ``random_band`` ({frac: {dim: [lo, hi]}}: random 5/10/20% samples vs
    the pool) and ``split_band`` ({split: {dim: [lo, hi]}}: random samples of the split's size), so
    a split outside its band differs from the pool more than chance would make it.
    """
    splits = split_indices(groups, min_size=min_size)
    names = list(splits)
    scaled = _scaled(dims)
    sim = pair_similarity(scaled, splits)
    n = len(next(iter(scaled.values())))
    pairs = [{"source": s, "target": t, "smd": dict(zip(scaled, sim[ti, si].tolist()))}
             for ti, t in enumerate(names) for si, s in enumerate(names) if s != t]
    vs_pool = {k: {d: _smd_or_nan(v[idx], v) for d, v in scaled.items()} for k, idx in splits.items()}
    band = smd_band(scaled, fracs=fracs, n_samples=n_samples, seed=seed, scale=False)
    split_band = {}
    for k, idx in splits.items():
        b = smd_band(scaled, fracs=(min(1.0, idx.size / n),), n_samples=n_samples, seed=seed, scale=False)
        split_band[k] = {d: list(v) for d, v in next(iter(b.values())).items()}
    return {"splits": {k: int(v.size) for k, v in splits.items()}, "dimensions": list(scaled), "pairs": pairs,
            "vs_pool": vs_pool, "random_band": {f"{f:g}": {d: list(v) for d, v in b.items()} for f, b in band.items()},
            "split_band": split_band}


# ------------------------------------------------------------------------------------ the regression
def leave_target_out(n_splits: int) -> list[dict[str, Any]]:
    """The held-out folds: ``[{"target": k, "train": [(s, t), ...], "test": [(s, k), ...]}]`` (split positions).

    Fold ``k`` tests every ordered pair ``s -> k`` and trains on the ordered pairs among the other
    splits; every ordered pair is tested once, and no test split occurs in its fold's training.

    >>> f = leave_target_out(3)[0]; f["test"], f["train"]
    ([(1, 0), (2, 0)], [(2, 1), (1, 2)])
    """
    if n_splits < 3:
        raise DataError(f"OOD prediction needs at least 3 splits (1 held out, 2 to train on), got {n_splits}.",
                        field="groups")
    folds = []
    for k in range(n_splits):
        rest = [j for j in range(n_splits) if j != k]
        folds.append({"target": k, "test": [(s, k) for s in rest],
                      "train": [(s, t) for t in rest for s in rest if s != t]})
    return folds


def random_pair_folds(pairs: Sequence[tuple[int, int]], *, test_pairs: int = 5, repeats: int = 5,
                      seed: int = 0) -> list[dict[str, Any]]:
    """The paper's held-out draws (Sec. 5): ``[{"repeat": r, "train": [...], "test": [...]}]``.

    Each repeat holds out ``test_pairs`` of ``pairs`` drawn at random without replacement (seeded
    by ``seed``; repeats differ) and trains on all the others.

    >>> f = random_pair_folds([(0, 1), (0, 2), (1, 2), (2, 1)], test_pairs=1, repeats=2)
    >>> [len(x["test"]) for x in f], [len(x["train"]) for x in f]
    ([1, 1], [3, 3])
    """
    pairs = [tuple(p) for p in pairs]
    for v, name in ((test_pairs, "test_pairs"), (repeats, "repeats")):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1:
            raise ParameterError(f"{name} must be an integer >= 1, got {v!r}.", field=name)
    if len(pairs) - test_pairs < 2:
        raise DataError(f"OOD prediction (protocol='paper'): {len(pairs)} source-target pairs; holding out "
                        f"test_pairs={test_pairs} leaves {len(pairs) - test_pairs} to train on (need 2). Lower "
                        "test_pairs, use pairs='both', or give more splits.", field="test_pairs")
    rng = np.random.default_rng(seed)
    folds = []
    for r in range(int(repeats)):
        held = set(rng.choice(len(pairs), size=int(test_pairs), replace=False).tolist())
        folds.append({"repeat": r, "test": [pairs[i] for i in sorted(held)],
                      "train": [p for i, p in enumerate(pairs) if i not in held]})
    return folds


def _rows(pairs: Sequence[tuple[int, int]], perf: np.ndarray, sim: np.ndarray) -> tuple[np.ndarray, ...]:
    """Design matrix of some pairs: per (pair, model) ``[source score, SMD...]``, target score, pair id."""
    X, y, src, tgt, mod = [], [], [], [], []
    for s, t in pairs:
        for m in range(perf.shape[1]):
            if np.isfinite(perf[s, m]) and np.isfinite(perf[t, m]):
                X.append(np.r_[perf[s, m], sim[t, s]])
                y.append(perf[t, m])
                src.append(s), tgt.append(t), mod.append(m)
    width = 1 + sim.shape[2]
    return (np.array(X).reshape(-1, width), np.array(y), np.array(src, dtype=int), np.array(tgt, dtype=int),
            np.array(mod, dtype=int))


def _fit(X: np.ndarray, y: np.ndarray):
    from sklearn.linear_model import LinearRegression

    return LinearRegression().fit(X, y)


def _r2(y: np.ndarray, pred: np.ndarray) -> float:
    ss = float(((y - y.mean()) ** 2).sum())
    return float(1.0 - ((y - pred) ** 2).sum() / ss) if ss > 0 else float("nan")


@dataclass(frozen=True, eq=False)
class OODResult:
    """Held-out OOD prediction (Tables 3-4). ``predictions``: one row per held-out (source, target,
    model) -- and ``repeat`` with ``protocol="paper"`` -- with ``actual``, ``predicted`` (regression,
    trained without that pair) and ``no_change`` (= the source score).

    ``mad`` / ``r2`` and ``mad_no_change`` / ``r2_no_change``: over every held-out row for
    ``"leave_target_out"``; for ``"paper"`` the mean over the repeats of each repeat's value (the
    paper reports one number per dataset for its 5 repeats without saying how it combines them; each
    repeat's values are in ``per_repeat``). ``r2_change`` / ``r2_change_no_change``: R2 of the
    predicted *shift* (target - source; no-change predicts 0, so its R2 is <= 0). ``weights``:
    standardised coefficients (``coef * sd(x) / sd(y)``) of the regression fitted on all the
    protocol's pairs; ``importance``: Table 4's form, the similarity features' standardised
    coefficients divided by the largest absolute one (signed; the paper prints magnitudes);
    ``folds``: the split scheme, by split name (``(full)``: the full data)."""

    splits: tuple[str, ...]
    models: tuple[str, ...]
    features: tuple[str, ...]
    dropped: tuple[str, ...]
    folds: list[dict[str, Any]]
    predictions: list[dict[str, Any]]
    mad: float
    r2: float
    mad_no_change: float
    r2_no_change: float
    r2_change: float
    r2_change_no_change: float
    weights: dict[str, float]
    per_target: dict[str, dict[str, float]]
    protocol: str = "leave_target_out"
    params: dict[str, Any] | None = None
    per_repeat: list[dict[str, float]] | None = None
    importance: dict[str, float] | None = None

    @property
    def beats_no_change(self) -> bool:
        """True when the regression's held-out MAD is below the no-change baseline's."""
        return bool(self.mad < self.mad_no_change)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict (with ``scheme``: the held-out scheme in words)."""
        out = {k: getattr(self, k) for k in self.__dataclass_fields__}
        out.update({k: list(v) for k, v in out.items() if isinstance(v, tuple)}, scheme=_scheme(self),
                   beats_no_change=self.beats_no_change)
        return out


def _scheme(r: OODResult) -> str:
    if r.protocol != "paper":
        return SCHEME
    p = r.params or {}
    return (f"the paper's (Kovatchev & Lease, Sec. 5): {p.get('test_pairs')} random source-target pairs held out per "
            f"repeat, {p.get('repeats')} repeats (seed {p.get('seed')}), trained on the other pairs; pairs = "
            f"{p.get('pairs')} ({p.get('n_pairs')} in all)")


def _usable(sim: np.ndarray, names: Sequence[str]) -> tuple[np.ndarray, list[str], list[str]]:
    """Drop dimensions whose SMD is not finite for some pair (a split without values, a constant dimension)."""
    off = ~np.eye(sim.shape[0], dtype=bool)
    ok = np.array([np.isfinite(sim[:, :, d][off]).all() for d in range(sim.shape[2])], dtype=bool)
    return sim[:, :, ok], [n for n, k in zip(names, ok) if k], [n for n, k in zip(names, ok) if not k]


def _paper_pairs(n_topics: int, pairs: str) -> list[tuple[int, int]]:
    """The paper's source-target pairs over topics ``0..n-1`` and the full data (index ``n``)."""
    out = []
    if pairs in ("full", "both"):
        out += [(n_topics, t) for t in range(n_topics)]
    if pairs in ("topics", "both"):
        out += [(s, t) for t in range(n_topics) for s in range(n_topics) if s != t]
    return out


def ood_regression(splits: Mapping[str, np.ndarray], perf: Performance, dims: Mapping[str, Any], *,
                   protocol: str = "leave_target_out", pairs: str = "both", test_pairs: int = 5, repeats: int = 5,
                   seed: int = 0, full: Any = None) -> OODResult:
    """Predict every model's score on each split from another split's score and their similarity vector.

    ``splits``: {name: item positions} (:func:`split_indices`); ``perf``: a :class:`Performance` over all
    items; ``dims``: {dimension: per-item values}. Dimensions with an undefined SMD for some pair are
    dropped (listed in ``dropped``). ``protocol``:

    - ``"leave_target_out"`` (ours, the default): :func:`leave_target_out`, every ordered pair of
      splits predicted once by a regression that never saw its target split (see the module docstring).
    - ``"paper"`` (Kovatchev & Lease, Sec. 5): the pairs ``pairs`` (``"full"``: the full data -> each
      split; ``"topics"``: every ordered pair of splits; ``"both"``), of which ``test_pairs`` drawn at
      random are held out per repeat, ``repeats`` times (:func:`random_pair_folds`, ``seed``).
      ``full``: the positions of the full data (default: every item of ``splits``).
    """
    check_choice("protocol", protocol, PROTOCOLS, where="ood_regression")
    names = list(splits)
    P = split_performance(perf, splits)
    params: dict[str, Any] = {}
    if protocol == "leave_target_out":
        folds = leave_target_out(len(names))
        all_pairs = [(s, t) for t in range(len(names)) for s in range(len(names)) if s != t]
        use = dict(splits)
    else:
        check_choice("pairs", pairs, PAIR_SETS, where="ood_regression")
        if len(names) < 2:
            raise DataError(f"OOD prediction needs at least 2 splits, got {len(names)}.", field="groups")
        idx = np.unique(np.concatenate(list(splits.values()))) if full is None else np.asarray(full, dtype=int)
        use = {**splits, FULL: idx}
        P = np.vstack([P, perf(idx)[None, :]])
        all_pairs = _paper_pairs(len(names), pairs)
        folds = random_pair_folds(all_pairs, test_pairs=test_pairs, repeats=repeats, seed=seed)
        params = {"pairs": pairs, "test_pairs": int(test_pairs), "repeats": int(repeats), "seed": int(seed),
                  "n_pairs": len(all_pairs), "n_full": int(idx.size)}
    every = list(use)
    sim, kept, dropped = _usable(pair_similarity(dims, use), list(dims))
    preds: list[dict[str, Any]] = []
    for fold in folds:
        X, y, *_ = _rows(fold["train"], P, sim)
        Xt, yt, src, tgt, mod = _rows(fold["test"], P, sim)
        held = every[fold["target"]] if "target" in fold else f"repeat {fold['repeat']}'s pairs"
        if len(y) <= X.shape[1] or len(yt) == 0:
            raise DataError(f"OOD prediction: {len(y)} training rows for {X.shape[1]} features when holding out "
                            f"{held!r}; give more models or splits, or fewer dimensions.", field="dims")
        yhat = _fit(X, y).predict(Xt)
        extra = {"repeat": fold["repeat"]} if "repeat" in fold else {}
        preds += [{"source": every[s], "target": every[t], "model": perf.models[m], "actual": float(a),
                   "predicted": float(p), "no_change": float(x0), **extra}
                  for s, t, m, a, p, x0 in zip(src, tgt, mod, yt, yhat, Xt[:, 0])]
    return _result(every, names, perf.models, kept, dropped, folds, preds, P, sim, all_pairs, protocol, params)


def _scores(preds: Sequence[dict[str, Any]]) -> dict[str, float]:
    y = np.array([r["actual"] for r in preds])
    p = np.array([r["predicted"] for r in preds])
    b = np.array([r["no_change"] for r in preds])
    return {"mad": float(np.abs(y - p).mean()), "r2": _r2(y, p), "mad_no_change": float(np.abs(y - b).mean()),
            "r2_no_change": _r2(y, b), "r2_change": _r2(y - b, p - b),
            "r2_change_no_change": _r2(y - b, np.zeros_like(b))}


def _result(every, names, models, kept, dropped, folds, preds, P, sim, all_pairs, protocol, params) -> OODResult:
    if protocol == "paper":
        per_repeat = [_scores([r for r in preds if r["repeat"] == f["repeat"]]) for f in folds]
        scores = {k: float(np.nanmean([r[k] for r in per_repeat])) for k in per_repeat[0]}
    else:
        per_repeat, scores = None, _scores(preds)
    X, yall, *_ = _rows(all_pairs, P, sim)
    reg = _fit(X, yall)
    sd_y = yall.std()
    features = ["source_score", *[f"smd:{d}" for d in kept]]
    weights = {f: float(c * sx / sd_y) if sd_y > 0 else float("nan")
               for f, c, sx in zip(features, reg.coef_, X.std(axis=0))}
    smd_w = {f[4:]: w for f, w in weights.items() if f.startswith("smd:")}
    top = max((abs(w) for w in smd_w.values() if np.isfinite(w)), default=0.0)
    importance = {d: float(w / top) if top > 0 else float("nan") for d, w in smd_w.items()}
    per_target = {}
    for t in names:
        sel = [r for r in preds if r["target"] == t]
        if sel:
            s = _scores(sel)
            per_target[t] = {"mad": s["mad"], "mad_no_change": s["mad_no_change"]}
    key = "target" if protocol != "paper" else "repeat"
    named = [{key: f[key] if key == "repeat" else every[f[key]], "train": [[every[s], every[t]] for s, t in f["train"]],
              "test": [[every[s], every[t]] for s, t in f["test"]]} for f in folds]
    return OODResult(splits=tuple(names), models=tuple(models), features=tuple(features), dropped=tuple(dropped),
                     folds=named, predictions=preds, weights=weights, per_target=per_target, protocol=protocol,
                     params=params or None, per_repeat=per_repeat, importance=importance, **scores)


# ------------------------------------------------------------------------------------ beyond the paper
def predict_unjudged(dims: Mapping[str, Any], groups: Sequence[Any], scores: Any, target: str, *,
                     models: Sequence[str] | None = None) -> dict[str, Any]:
    """Predict every model's score on the split ``target``, whose items nobody has judged.

    ``dims``: label-free dimensions (e.g. ``length``) for *all* items, the target's included;
    ``groups``: the split of each item; ``scores``: items x models (the target's rows are never read,
    NaN is fine). The regression of :func:`ood_regression` is trained on every ordered pair among
    the judged splits, then each judged split ``s`` predicts ``target`` from the model's score on
    ``s`` and SMD(target vs s); ``predicted`` is the mean over sources, ``no_change`` the mean of the
    source scores. ``quality`` says how well this works here, measured: :func:`ood_regression` over
    the judged splits alone (each held out in turn exactly as ``target`` is), MAD and R2 against
    no-change -- or None with fewer than 3 judged splits.
    """
    splits = split_indices(groups)
    if target not in splits:
        raise DataError(f"predict_unjudged: no split {target!r}; the splits are {list(splits)}.", field="target")
    names = [k for k in splits if k != target] + [target]
    splits = {k: splits[k] for k in names}
    arr = np.array(scores, dtype=float)
    arr[splits[target]] = np.nan  # the target is unjudged: never read its scores
    perf = mean_score(arr, models)
    P = split_performance(perf, splits)
    sim, kept, dropped = _usable(pair_similarity(dims, splits), list(dims))
    k = len(names) - 1
    X, y, *_ = _rows([(s, t) for t in range(k) for s in range(k) if s != t], P, sim)
    if len(y) <= X.shape[1]:
        raise DataError(f"predict_unjudged: {len(y)} training rows for {X.shape[1]} features; give more judged "
                        "splits or models, or fewer dimensions.", field="dims")
    reg = _fit(X, y)
    per_source = {}
    for s in range(k):
        Xs = np.column_stack([P[s], np.tile(sim[k, s], (P.shape[1], 1))])
        per_source[names[s]] = np.where(np.isfinite(P[s]), reg.predict(np.nan_to_num(Xs)), np.nan)
    pred = np.nanmean(np.vstack(list(per_source.values())), axis=0)
    judged = {n: splits[n] for n in names[:k]}
    quality = ood_regression(judged, perf, dims).to_dict() if k >= 3 else None
    return {"target": target, "models": list(perf.models), "features": ["source_score", *[f"smd:{d}" for d in kept]],
            "dropped": dropped, "predicted": dict(zip(perf.models, pred.tolist())),
            "no_change": dict(zip(perf.models, np.nanmean(P[:k], axis=0).tolist())),
            "per_source": {s: dict(zip(perf.models, v.tolist())) for s, v in per_source.items()}, "quality": quality}


def selection_report(pool_dims: Mapping[str, Any], selected_idx: Sequence[int], *, n_samples: int = 200,
                     q: tuple[float, float] = (2.5, 97.5), seed: int = 0) -> dict[str, Any]:
    """How a selection differs from its pool, per dimension: SMD against the band of random samples.

    ``pool_dims``: {dimension: one value per pool item}; ``selected_idx``: the picks' positions. Per
    dimension: ``smd`` (selection vs pool, on the pool's :func:`minmax_clip` scale), ``band`` (the
    ``q`` percentiles of the SMD of ``n_samples`` random samples of the same size), ``outside``
    (the selection is skewed on this dimension beyond what a random draw of its size does), and the
    raw means. A selector that prefers long items shows ``length`` outside the band.

    >>> x = np.arange(1000.0)
    >>> r = selection_report({"length": x}, np.arange(900, 1000))
    >>> r["dimensions"]["length"]["outside"], r["n_selected"]
    (True, 100)
    """
    idx = np.unique(np.asarray(selected_idx, dtype=int))
    if idx.size == 0:
        raise DataError("selection_report: no items selected.", field="selected_idx")
    out: dict[str, Any] = {"n_selected": int(idx.size), "q": list(q), "n_samples": n_samples, "seed": seed,
                           "dimensions": {}}
    for name, values in pool_dims.items():
        v = np.asarray(values, dtype=float)
        if idx.max() >= v.size or idx.min() < 0:
            raise DataError(f"selection_report: positions must be in [0, {v.size}), got up to {int(idx.max())}.",
                            field="selected_idx")
        fin = np.isfinite(v)
        if fin[idx].sum() < 1 or fin.sum() < 3:
            continue  # nothing to compare on this dimension
        s = minmax_clip(v)
        d = _smd_or_nan(s[idx], s)
        frac = min(1.0, fin[idx].sum() / fin.sum())
        lo, hi = smd_band({name: s[fin]}, fracs=(frac,), n_samples=n_samples, q=q, seed=seed, scale=False)[frac][name]
        out["dimensions"][name] = {"smd": d, "band": [lo, hi], "outside": bool(not lo <= d <= hi),
                                   "mean_selected": float(np.nanmean(v[idx])), "mean_pool": float(np.nanmean(v))}
    out["n_pool"] = len(next(iter(pool_dims.values()))) if pool_dims else 0
    return out


# ------------------------------------------------------------------------------------------ profile
def two_model_profile(results: Mapping[str, StratifiedResult], a: str, b: str) -> dict[str, Any]:
    """Two models' performance per stratum of every dimension, with each one's random band (Fig. 6).

    ``results``: :func:`~.analysis.analyse_all`'s output. Per dimension: ``stratum_range``,
    ``perf`` ({model: per-stratum performance}), ``band`` ({model: [lo, hi]}), ``significant``
    ({model: per-stratum outside-band flags}) and ``b_better`` (strata where ``b`` beats ``a``).
    """
    if not results:
        raise ParameterError("two_model_profile: no analysis results.", field="results")
    models = next(iter(results.values())).models
    for m, f in ((a, "a"), (b, "b")):
        if m not in models:
            raise DataError(f"two_model_profile: no model {m!r}; the models are {list(models)}.", field=f)
    ja, jb = models.index(a), models.index(b)
    out: dict[str, Any] = {"models": [a, b], "dimensions": {}}
    for name, r in results.items():
        out["dimensions"][name] = {
            "stratum_range": r.stratum_range.tolist(),
            "perf": {a: r.stratum_perf[:, ja].tolist(), b: r.stratum_perf[:, jb].tolist()},
            "band": {a: r.band[:, ja].tolist(), b: r.band[:, jb].tolist()},
            "significant": {a: r.significant[:, ja].tolist(), b: r.significant[:, jb].tolist()},
            "b_better": (r.stratum_perf[:, jb] > r.stratum_perf[:, ja]).tolist()}
    return out
