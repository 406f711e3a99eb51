"""IRT-based utilities (Zouhar et al. 2025, Sec. 3.4): fit an item response model to the metric
scores of the systems (systems as test takers) and rank items by its item parameters.

The metric matrix (items x systems, oriented so that higher is better) becomes responses in [0, 1]
by min-max scaling over the whole matrix (the paper's Eq. 8 takes the continuous score as the
response); binary metrics stay 0/1. The model (``model=``) is by default ``3plu``, the paper's
Eq. 7: ``P = d * sigmoid(a (theta - b))`` with a feasibility ``d`` per item (no guessing term);
``2pl`` (``d = 1``), ``1pl``, ``3pl`` and ``4pl`` are ours (``evalsift.irt``). Utilities
(``utility=``):

- ``diff``: difficulty b (hardest first);
- ``disc``: discrimination a (most discriminating first);
- ``diffdisc``: b x a, the paper's Eq. 9;
- ``fisher``: Fisher information summed over the fitted abilities (most informative first; ours).
"""

from __future__ import annotations

import numpy as np

from ..irt import MODELS, IRTResult, fit_irt
from ..pool import Pool
from .base import selector
from .metric import _MetricSelector

UTILITIES = ("diff", "disc", "diffdisc", "fisher")
PAPER_MODEL = "3plu"  # Eq. 7: feasibility x logistic curve


def responses_from_scores(scores: np.ndarray) -> np.ndarray:
    """Items x systems scores -> systems x items responses in [0, 1] (min-max over the matrix).

    >>> responses_from_scores(np.array([[0.0, 5.0], [10.0, np.nan]])).tolist()
    [[0.0, 1.0], [0.5, nan]]
    """
    s = np.asarray(scores, dtype=float)
    lo, hi = np.nanmin(s), np.nanmax(s)
    y = (s - lo) / (hi - lo) if hi > lo else np.full_like(s, 0.5)
    return y.T


def irt_utilities(fit: IRTResult, utility: str) -> np.ndarray:
    """Per-item utility from a fitted model (see the module doc)."""
    if utility == "diff":
        return np.array(fit.difficulty)
    if utility == "disc":
        return np.array(fit.discrimination)
    if utility == "diffdisc":
        return fit.difficulty * fit.discrimination
    return fit.item_information()


@selector("irt", help="IRT item parameters: difficulty, discrimination, their product, Fisher information")
class IRTSelector(_MetricSelector):
    """Fit ``model`` (default 3PLu, the paper's Eq. 7) to the metric scores; rank items by ``utility``
    (default diffdisc, Eq. 9). ``model="2pl"`` is the same without the feasibility term.

    >>> from evalsift.io import make_demo_pool
    >>> s = IRTSelector(metric="token_f1", utility="fisher").fit(make_demo_pool(n_items=30))
    >>> s.irt_.n_items, len(s.select(5).items)
    (30, 5)
    """

    def __init__(self, *, metric: str | None = None, model: str = PAPER_MODEL, utility: str = "diffdisc",
                 higher_is_better: bool = True, seed: int = 0) -> None:
        super().__init__(metric=metric, higher_is_better=higher_is_better, seed=seed)
        self.model = self._choice("model", model, MODELS)
        self.utility = self._choice("utility", utility, UTILITIES)

    def _utilities(self, pool: Pool) -> np.ndarray:
        self.irt_ = fit_irt(responses_from_scores(self.scores(pool)), self.model, seed=self.seed)
        return irt_utilities(self.irt_, self.utility)


def _preset(utility: str, model: str = PAPER_MODEL):
    def factory(**params):
        return IRTSelector(**{"utility": utility, "model": model, **params})

    return factory


for _u, _help in (("diff", "difficulty"), ("disc", "discrimination"), ("diffdisc", "difficulty x discrimination"),
                  ("fisher", "Fisher information at the fitted abilities")):
    selector(f"irt_{_u}", help=f"IRT (3PLu, the paper's model) {_help}")(_preset(_u))
selector("irt_2pl", help="IRT difficulty x discrimination from a 2PL (no feasibility term)")(_preset("diffdisc", "2pl"))
