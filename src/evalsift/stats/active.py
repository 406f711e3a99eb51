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

SAMPLINGS = ("uniform", "active")
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
