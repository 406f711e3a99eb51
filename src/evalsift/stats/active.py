"""Active sampling: draw the next item to label where the predictions are least sure.

Active statistical inference (Zrnic & Candes, "Active statistical inference", ICML 2024) labels
item ``j`` with a probability that grows with the prediction's uncertainty there and weights each
label by the inverse of that probability, so the estimate stays unbiased whatever the
probabilities. evalsift does this one draw at a time, from the items not yet asked, inside the
anytime rule: with predictions ``f_t`` and draw probabilities ``p_t`` (both fixed before the draw),
the bettors see

    z_t = F_t + (y_t - f_t(j_t)) / (R_t p_t(j_t)),    F_t = mean of f_t over the R_t candidates,

whose conditional mean is the candidates' mean of ``y`` (:mod:`evalsift.stats.sequential`): the
guarantee does not depend on the probabilities, only the width does.

**The probabilities** (:func:`active_probabilities`): for a verdict value ``y`` in [0, 1] predicted
by ``f``, ``E[(y - f)^2] <= f (1 - f)``, so the variance-minimising (Neyman) choice is ``p_j``
proportional to ``sqrt(f_j (1 - f_j))``. A share ``explore`` of the probability is spread
uniformly: it bounds the weights (``R p_j >= explore``, so ``|z_t - F_t| <= 1 / explore``), which
the bets need, and it protects against a confident but wrong proxy.

**Judge-stratified Neyman allocation** (``neyman``, ours): with a judge's verdicts (or any proxy with
few distinct values) the items fall into strata, one per distinct verdict (:func:`proxy_strata`; a
continuous proxy: quantile bins of its calibrated prediction). Neyman's allocation draws stratum ``h``
in proportion to ``R_h S_h``, ``S_h`` the spread of the verdicts around the prediction within it:
:func:`stratum_spread` learns ``S_h^2`` from the verdicts seen in the stratum, shrunk toward the
mean over all strata (not toward ``f (1 - f)``, which a three-valued judge's calibrated prediction
makes nearly equal everywhere). Then the same probabilities as ``active`` with that spread: more
draws where people disagree with the judge most, the ``explore`` share uniform, the same inverse-probability
weights and guarantee.

**Assumption**: the draw probabilities and predictions use only what was known before the draw
(the verdicts seen, the proxy, the clusters), and a skipped or failed judgment is missing
independently of its verdict.

>>> f = np.array([0.02, 0.5, 0.5, 0.98])
>>> p = active_probabilities(f, np.ones(4, dtype=bool), explore=0.2)
>>> p.round(2).tolist()       # the two items the prediction is unsure about get most of the draws
[0.14, 0.36, 0.36, 0.14]
"""

from __future__ import annotations

import numpy as np

from ..errors import ParameterError

SAMPLINGS = ("uniform", "active", "neyman")
MAX_STRATA = 8  # a proxy with at most this many distinct values per item is stratified by them (neyman)
BINS = 5
SHRINK = 4.0


def residual_spread(predictions: np.ndarray, items: np.ndarray, values: np.ndarray, *, bins: int = BINS,
                    shrink: float = SHRINK) -> np.ndarray:
    """Each item's expected squared error ``E[(y - f)^2]``, learned from the verdicts seen: the
    items are cut into ``bins`` quantile bins of their prediction ``f``, and each bin's mean squared
    residual over its judged items is shrunk (``shrink`` pseudo-items) toward ``f (1 - f)``, the
    most a value in [0, 1] with mean ``f`` can spread. Ties (y = 1/2 where f is near 1/2) make
    ``f (1 - f)`` a poor guide on its own: a bin full of ties has almost no error to learn from."""
    f = np.clip(np.asarray(predictions, dtype=float), 0.0, 1.0)
    prior = f * (1.0 - f)
    items = np.asarray(items, dtype=int)
    if len(items) == 0:
        return prior
    edges = np.quantile(f, np.linspace(0, 1, bins + 1)[1:-1])
    b = np.searchsorted(edges, f, side="right")
    sq = (np.asarray(values, dtype=float) - f[items]) ** 2
    sums = np.bincount(b[items], weights=sq, minlength=bins)
    counts = np.bincount(b[items], minlength=bins)
    return (sums[b] + shrink * prior) / (counts[b] + shrink)
DEFAULT_EXPLORE = 0.5


def proxy_strata(columns: np.ndarray | None, *, max_strata: int = MAX_STRATA) -> np.ndarray | None:
    """One stratum label per item from a proxy's values (items x columns, e.g. a judge's verdict, or
    several judges' verdicts stacked): the items with the same values share a stratum. None when the
    values take more than ``max_strata`` distinct rows (a continuous metric): :func:`stratum_spread`
    then bins the calibrated prediction instead.

    >>> proxy_strata(np.array([0.5, -0.5, 0.0, 0.5])).tolist()
    [2, 0, 1, 2]
    """
    if columns is None:
        return None
    X = np.asarray(columns, dtype=float)
    X = X[:, None] if X.ndim == 1 else X
    rows, labels = np.unique(np.round(X, 9), axis=0, return_inverse=True)
    return None if len(rows) > max_strata else np.asarray(labels, dtype=int).reshape(-1)


def stratum_spread(predictions: np.ndarray, items: np.ndarray, values: np.ndarray, strata: np.ndarray | None = None,
                   *, bins: int = BINS, shrink: float = SHRINK) -> np.ndarray:
    """Each item's expected squared error ``E[(y - f)^2]`` for Neyman allocation (module doc): the
    mean squared residual of the judged items of its stratum (``strata``: one label per item, e.g.
    :func:`proxy_strata`; None: ``bins`` quantile bins of ``f``), shrunk (``shrink`` pseudo-items)
    toward the mean squared residual over every judged item, itself shrunk toward the mean of
    ``f (1 - f)``. Before any verdict: ``f (1 - f)``'s mean everywhere (a uniform draw).

    >>> f = np.full(6, 0.5); s = np.array([0, 0, 0, 1, 1, 1])
    >>> e = stratum_spread(f, np.array([0, 1, 3, 4]), np.array([0.5, 0.5, 1.0, 0.0]), s, shrink=1.0)
    >>> bool(e[0] < e[3])          # people agree with the prediction in stratum 0, not in stratum 1
    True
    """
    f = np.clip(np.asarray(predictions, dtype=float), 0.0, 1.0)
    prior = float(np.mean(f * (1.0 - f)))
    if strata is None:
        edges = np.quantile(f, np.linspace(0, 1, bins + 1)[1:-1])
        strata = np.searchsorted(edges, f, side="right")
    strata = np.asarray(strata, dtype=int)
    items = np.asarray(items, dtype=int)
    if len(items) == 0:
        return np.full(len(f), prior)
    sq = (np.asarray(values, dtype=float) - f[items]) ** 2
    pooled = (float(sq.sum()) + shrink * prior) / (len(sq) + shrink)
    k = int(strata.max()) + 1
    sums = np.bincount(strata[items], weights=sq, minlength=k)
    counts = np.bincount(strata[items], minlength=k)
    return ((sums + shrink * pooled) / (counts + shrink))[strata]


def active_probabilities(predictions: np.ndarray, candidates: np.ndarray, *,
                         explore: float = DEFAULT_EXPLORE, spread: np.ndarray | None = None) -> np.ndarray:
    """Draw probabilities over the pool (0 off the ``candidates`` mask, summing to 1 over them):
    ``(1 - explore) sqrt(e) / sum + explore / R`` (module doc), ``e`` the expected squared error
    per item (``spread``, e.g. :func:`residual_spread`; default ``f (1 - f)``). ``predictions``:
    each item's predicted verdict value in [0, 1]."""
    if not 0 < explore <= 1:
        raise ParameterError(f"explore must be in (0, 1] (the share of draws spread uniformly), got {explore!r}",
                             field="explore")
    f = np.clip(np.asarray(predictions, dtype=float), 0.0, 1.0)
    cand = np.asarray(candidates, dtype=bool)
    if f.shape != cand.shape:
        raise ParameterError(f"active_probabilities: {f.shape} predictions for {cand.shape} candidates",
                             field="predictions")
    R = int(cand.sum())
    if R == 0:
        raise ParameterError("active_probabilities: no item left to draw", field="candidates")
    e = f * (1.0 - f) if spread is None else np.clip(np.asarray(spread, dtype=float), 0.0, None)
    u = np.where(cand, np.sqrt(e), 0.0)
    total = float(u.sum())
    p = np.where(cand, explore / R, 0.0)
    p += (1.0 - explore) * (u / total if total > 0 else np.where(cand, 1.0 / R, 0.0))
    return p / p.sum()
