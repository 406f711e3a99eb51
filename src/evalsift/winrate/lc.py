"""The length-controlled win rate (Dubois et al. 2024, Sec. 3; see :mod:`evalsift.winrate`): the per-model GLM
(:func:`fit_length_glm`), its prediction with the length term off (:func:`length_controlled_win_rate`), its
standard error by the delta method (:func:`lc_standard_error`) and the instruction difficulties
(:func:`estimate_difficulty`)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

import numpy as np

from ..progress import progress_bar
from .comparisons import Comparisons, ModelComparisons
from .l1 import CS, N_SPLITS, SEED, _cv_fit, _sigmoid, cv_fits


#: AlpacaEval's weight of the gamed-baseline comparisons in each model's fit (split among them)
REGULARIZE_TO_BASELINE = 0.2

@dataclass(frozen=True)
class LengthGLM:
    """One model's fitted length GLM (:func:`fit_length_glm`): coefficients of ``tanh(delta / sd)``
    (``length``), of the instruction difficulty (``difficulty``) and the model's intercept (``intercept``;
    AlpacaEval's ``not_gamed_baseline`` column), the chosen L1 strength ``C`` and ``sd``, the sample standard
    deviation of the length differences it standardised by."""

    length: float
    difficulty: float
    intercept: float
    C: float | None
    sd: float

    def predict(self, delta_len: np.ndarray | float, difficulty: np.ndarray | float) -> np.ndarray:
        """The preference the GLM predicts for a length difference (baseline - model) and a difficulty."""
        d = np.asarray(delta_len, float)
        z = np.tanh(d / self.sd) if self.sd > 0 else np.zeros_like(d)
        return _sigmoid(self.length * z + self.difficulty * np.asarray(difficulty, float) + self.intercept)

    def controlled(self, difficulty: np.ndarray) -> np.ndarray:
        """Per instruction, the preference with the length difference set to zero (Dubois et al. 2024, Sec. 3)."""
        return self.predict(0.0, difficulty)

    def to_dict(self) -> dict[str, Any]:
        return {"length": self.length, "difficulty": self.difficulty, "intercept": self.intercept, "C": self.C,
                "sd_delta_len": self.sd}


def _standardised(delta_len: np.ndarray) -> tuple[np.ndarray, float]:
    """(tanh(delta / sd), sd): sd the sample standard deviation (ddof=1) of ``delta``, not centred; zeros when 0."""
    d = np.asarray(delta_len, float)
    sd = float(d.std(ddof=1)) if len(d) > 1 else 0.0
    sd = sd if np.isfinite(sd) else 0.0
    return (np.tanh(d / sd) if sd > 0 else np.zeros(len(d))), sd


def _length_design(preference: Sequence[float], delta_len: Sequence[float], difficulty: Sequence[float] | None,
                   anchors: Sequence[tuple[Sequence[float], Sequence[float], Sequence[float]]],
                   anchor_weight: float) -> tuple[np.ndarray, np.ndarray, np.ndarray | None, float]:
    """``(X, p, weight, sd)`` of one model's length GLM: the model's rows (``tanh(delta / sd)``, difficulty, 1)
    first, then each anchor's rows (its own ``tanh``, difficulty, 0) at weight ``anchor_weight / len(anchors)``;
    ``weight`` None without anchors."""
    p = np.asarray(preference, float)
    diff = np.zeros(len(p)) if difficulty is None else np.asarray(difficulty, float)
    z, sd = _standardised(delta_len)
    X = np.column_stack([z, diff, np.ones(len(p))])
    weight = None
    if anchors:
        parts, prefs, weights = [X], [p], [np.ones(len(p))]
        for ap, ad, adiff in anchors:
            az, _ = _standardised(ad)
            parts.append(np.column_stack([az, np.asarray(adiff, float), np.zeros(len(az))]))
            prefs.append(np.asarray(ap, float))
            weights.append(np.full(len(az), anchor_weight / len(anchors)))
        X, p, weight = np.vstack(parts), np.concatenate(prefs), np.concatenate(weights)
    return X, p, weight, sd


def fit_length_glm(preference: Sequence[float], delta_len: Sequence[float], difficulty: Sequence[float] | None = None,
                   *, anchors: Sequence[tuple[Sequence[float], Sequence[float], Sequence[float]]] = (),
                   anchor_weight: float = REGULARIZE_TO_BASELINE, Cs: Sequence[float] = CS, n_splits: int = N_SPLITS,
                   seed: int = SEED) -> LengthGLM | None:
    """Fit one model's length GLM (Dubois et al. 2024, Sec. 3): the logistic regression of the preference on
    ``tanh(delta_len / sd(delta_len))``, the instruction ``difficulty`` (zeros when None) and a constant, with
    no other intercept, L1-penalised with C cross-validated (see the module doc). ``delta_len`` = baseline
    length - model length. None when every preference is 1 (or every one 0): nothing to fit.

    ``anchors``: AlpacaEval's regularisation to the baseline -- ``(preference, delta_len, difficulty)`` of the
    baseline against each of its own gamed (verbose, concise) versions, added to the fit with weight
    ``anchor_weight / len(anchors)`` each and without the model's constant, so they pull the length and
    difficulty coefficients toward the baseline's own.

    >>> rng = np.random.default_rng(0)
    >>> d = rng.normal(0, 500, 600)                       # the baseline is longer by d characters
    >>> p = 1 / (1 + np.exp(-(0.4 - 1.5 * np.tanh(d / d.std(ddof=1)))))
    >>> glm = fit_length_glm(p, d)
    >>> round(glm.length, 1), round(glm.intercept, 1)
    (-1.5, 0.4)
    """
    X, p, weight, sd = _length_design(preference, delta_len, difficulty, anchors, anchor_weight)
    coef, C = _cv_fit(X, p, weight, Cs=Cs, n_splits=n_splits, seed=seed)
    if coef is None:
        return None
    return LengthGLM(length=float(coef[0]), difficulty=float(coef[1]), intercept=float(coef[2]), C=C, sd=sd)


@dataclass(frozen=True)
class LCInfluence:
    """What the standard error of a length-controlled win rate needs (:func:`lc_standard_error`), for one model:
    per instruction the controlled prediction ``q0`` and its gradient ``dq0`` in the fitted coefficients (the
    active ones: non-zero, and always the model's intercept), ``G`` = H^-1 psi^T (the Hessian of the fit's
    log likelihood and each row's score: the model's rows, then the anchors'), and ``clusters``: the rows that
    are one instruction's (a repeated judgment of the same instruction is one cluster)."""

    q0: np.ndarray
    dq0: np.ndarray
    G: np.ndarray
    clusters: np.ndarray


def _lc_influence(glm: LengthGLM, X: np.ndarray, p: np.ndarray, weight: np.ndarray | None, diff: np.ndarray,
                  item_ids: Sequence[str] | None) -> LCInfluence:
    """The pieces of :class:`LCInfluence` for a fitted GLM on design ``X`` (:func:`_length_design`)."""
    coef = np.array([glm.length, glm.difficulty, glm.intercept])
    active = sorted(set(np.flatnonzero(coef != 0).tolist()) | {2})
    n = len(diff)
    w = np.ones(len(p)) if weight is None else np.asarray(weight, float)
    q = _sigmoid(X @ coef)
    Xa = X[:, active]
    psi = (w * (p - q))[:, None] * Xa
    H = (Xa * (w * q * (1 - q))[:, None]).T @ Xa
    G = np.linalg.pinv(H) @ psi.T
    X0 = np.column_stack([np.zeros(n), diff, np.ones(n)])
    q0 = _sigmoid(X0 @ coef)
    dq0 = (q0 * (1 - q0))[:, None] * X0[:, active]
    if item_ids is None:
        model_clusters = np.arange(n)
    else:
        first: dict[str, int] = {}
        model_clusters = np.array([first.setdefault(i, len(first)) for i in item_ids])
    top = int(model_clusters.max()) + 1 if n else 0
    clusters = np.concatenate([model_clusters, top + np.arange(len(p) - n)])
    return LCInfluence(q0=q0, dq0=dq0, G=G, clusters=clusters)


def lc_standard_error(influence: LCInfluence | None, mask: np.ndarray | None = None) -> float | None:
    """100 x the standard error of a length-controlled win rate (the mean of ``q0`` over the instructions in
    ``mask``, all by default), by the delta method on the fit (M-estimation, the sandwich form): per
    instruction ``i``, its influence ``(q0_i - LC) / n + grad(LC)^T H^-1 psi_i`` -- the spread of the
    predictions over the instructions plus what instruction ``i``'s comparison moved the fitted coefficients
    by -- summed within an instruction, squared and added up, times ``n / (n - 1)``. With no length and no
    difficulty term this is the raw win rate's standard error. The instruction difficulties count as known (as
    AlpacaEval's fixed table does), and the L1 strength as chosen. None below two instructions or without a
    fit."""
    if influence is None:
        return None
    n_all = len(influence.q0)
    m = np.ones(n_all, bool) if mask is None else np.asarray(mask, bool)
    k = int(m.sum())
    if k < 2:
        return None
    u = influence.dq0[m].mean(axis=0) @ influence.G
    u[:n_all][m] += (influence.q0[m] - influence.q0[m].mean()) / k
    sums = np.bincount(influence.clusters, weights=u)
    clusters_in = len(np.unique(influence.clusters[:n_all][m]))
    factor = clusters_in / (clusters_in - 1) if clusters_in > 1 else 1.0
    return float(100 * math.sqrt(float((sums ** 2).sum()) * factor))


def length_controlled_win_rate(preference: Sequence[float], delta_len: Sequence[float],
                               difficulty: Sequence[float] | None = None, *,
                               item_ids: Sequence[str] | None = None, **fit: Any) -> dict[str, Any]:
    """A model's length-controlled win rate (Dubois et al. 2024, Sec. 3): 100 x the mean over its instructions
    of the fitted GLM's prediction with the length difference set to zero. ``lc_standard_error``: its standard
    error by the delta method (:func:`lc_standard_error`: the fit's uncertainty and the spread over the
    instructions); ``lc_prediction_sem``: AlpacaEval's ``lc_standard_error``, 100 x the standard error of the
    predictions alone (``pd.Series(pred).sem()``; 0 whenever the predictions do not vary, e.g. with no
    difficulty term). With every preference 1 (or 0) the GLM cannot be fitted and the raw win rate stands
    (``glm`` None; both errors are then the raw one's). ``item_ids``: the instructions (a repeated one is one
    cluster of the standard error). ``fit``: options of :func:`fit_length_glm`."""
    p = np.asarray(preference, float)
    diff = np.zeros(len(p)) if difficulty is None else np.asarray(difficulty, float)
    glm = fit_length_glm(p, delta_len, diff, **fit)
    influence = None
    if glm is not None:
        q = glm.controlled(diff)
        X, pp, weight, _ = _length_design(p, delta_len, diff, fit.get("anchors", ()),
                                          fit.get("anchor_weight", REGULARIZE_TO_BASELINE))
        influence = _lc_influence(glm, X, pp, weight, diff, item_ids)
    else:
        q = p.copy()
    sem = float(100 * q.std(ddof=1) / math.sqrt(len(q))) if len(q) > 1 else None
    return {"length_controlled_winrate": float(100 * q.mean()) if len(q) else None,
            "lc_standard_error": lc_standard_error(influence) if influence is not None else sem,
            "lc_prediction_sem": sem, "glm": glm, "controlled": q, "influence": influence}


def estimate_difficulty(comparisons: Comparisons | Mapping[str, ModelComparisons], *, Cs: Sequence[float] = CS,
                        n_splits: int = N_SPLITS, seed: int = SEED, quiet: bool | None = None,
                        jobs: int | str | None = 1) -> dict[str, Any]:
    """Per-instruction difficulties from the comparisons at hand, fitted as AlpacaEval's authors fitted theirs
    (see the module doc): one joint L1-penalised logistic GLM over every model with lengths -- per-model
    intercepts, per-model slopes on ``tanh(delta / sd_model(delta))``, an effect per instruction (the first
    instruction seen is the reference, 0) and a shared constant -- with C cross-validated. Comparisons with an
    empty model output are left out. Returns ``{"difficulty": {item_id: value}, "C": chosen C, "rows": n,
    "models": m}``; instructions no model with lengths was compared on get 0. ``jobs``: worker processes for the
    cross-validation's fits (:func:`_cv_fit`; the same result); a progress bar unless ``quiet``
    (:func:`evalsift.progress.progress_bar`).
    """
    import scipy.sparse as sp

    models = comparisons.models if isinstance(comparisons, Comparisons) else dict(comparisons)
    usable = [m for m in models.values() if m.len_model is not None]
    items: dict[str, int] = {}
    for m in usable:
        for i in m.item_ids:
            items.setdefault(i, len(items))
    M, nI = len(usable), len(items)
    rows, cols, vals, prefs = [], [], [], []
    r = 0
    for k, m in enumerate(usable):
        d = m.delta_len
        sd = float(d.std(ddof=1)) if len(d) > 1 else 0.0
        z = np.tanh(d / sd) if sd > 0 and np.isfinite(sd) else np.zeros(len(d))
        for t, iid in enumerate(m.item_ids):
            if m.len_model[t] <= 0:
                continue
            rows += [r, r, r]
            cols += [k, M + k, 2 * M + nI - 1]
            vals += [1.0, z[t], 1.0]
            j = items[iid]
            if j > 0:
                rows.append(r)
                cols.append(2 * M + j - 1)
                vals.append(1.0)
            prefs.append(m.preference[t])
            r += 1
    if r == 0:
        return {"difficulty": {i: 0.0 for i in items}, "C": None, "rows": 0, "models": M}
    X = sp.csr_matrix((vals, (rows, cols)), shape=(r, 2 * M + nI))
    with progress_bar(cv_fits(r, Cs, n_splits), f"instruction difficulty (joint GLM, {M} models)", quiet) as advance:
        coef, C = _cv_fit(X, np.asarray(prefs, float), Cs=Cs, n_splits=n_splits, seed=seed, jobs=jobs,
                          advance=advance)
    effects = np.zeros(nI)
    if coef is not None:
        effects[1:] = coef[2 * M: 2 * M + nI - 1]
    return {"difficulty": {i: float(effects[j]) for i, j in items.items()}, "C": C, "rows": r, "models": M}
