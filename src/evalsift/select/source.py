"""Selection before the systems to be judged have outputs (Zouhar et al. 2025, Sec. 4).

- :class:`ArtificialCrowd`: compute an output-based utility from a *crowd* of other systems (e.g.
  cheap public models run on the same inputs) and use it to choose items for the systems you care
  about. After ``fit``, ``crowd_`` names the crowd and ``evaluated_systems_`` the others: judge the
  selected items for those.
- :class:`Distilled`: learn a regressor from input embeddings to an output-based utility on a
  training pool (another dataset or split with outputs and scores), then score new items from their
  inputs alone. The paper (Sec. 4.1, App. Table 6) fine-tunes a COMET-style regressor on
  XLM-RoBERTa for this; ours is ridge regression on sentence embeddings.
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from ..errors import ParameterError
from ..pool import Pool
from .base import input_texts, make_selector, selector
from .utility import UtilitySelector


def _target(name: str, seed: int, params: dict[str, Any]) -> UtilitySelector:
    sel = make_selector(name, seed=seed)
    if not isinstance(sel, UtilitySelector):
        raise ParameterError(f"{name!r} has no per-item utilities; use a utility selector as the target")
    return sel.set_params(**{k: v for k, v in params.items() if k in sel.get_params()})


@selector("artificial_crowd", help="utilities from a crowd of other systems, applied to the rest")
class ArtificialCrowd(UtilitySelector):
    """Utility of ``base`` computed on the ``crowd`` systems only.

    ``crowd``: system names, or None for a seeded random ``fraction`` of the pool's systems.
    ``params`` go to the base selector (e.g. ``{"metric": "MetricX-23-refA"}``).
    """

    def __init__(self, *, base: str = "metric_var", crowd: Sequence[str] | None = None, fraction: float = 0.5,
                 params: dict[str, Any] | None = None, seed: int = 0) -> None:
        if not 0 < fraction < 1:
            raise ParameterError(f"fraction must be in (0, 1), got {fraction}")
        self.base = base
        self.crowd = None if crowd is None else tuple(crowd)
        self.fraction = fraction
        self.params = dict(params or {})
        self.seed = seed

    @property
    def randomised(self) -> bool:
        """True when the crowd is drawn by the seed (``crowd=None``)."""
        return self.crowd is None

    def _utilities(self, pool: Pool) -> np.ndarray:
        if self.crowd is None:
            k = max(1, min(pool.n_systems - 1, int(round(self.fraction * pool.n_systems))))
            crowd = sorted(np.random.default_rng(self.seed).choice(pool.n_systems, size=k, replace=False))
            self.crowd_ = tuple(pool.systems[i] for i in crowd)
        else:
            self.crowd_ = tuple(self.crowd)
        self.evaluated_systems_ = tuple(s for s in pool.systems if s not in self.crowd_)
        if not self.evaluated_systems_:
            raise ParameterError("the crowd takes every system; leave some systems to evaluate")
        return _target(self.base, self.seed, self.params).fit(pool.with_systems(list(self.crowd_))).utilities_


@selector("distilled", help="a regressor from input embeddings to an output-based utility, trained elsewhere")
class Distilled(UtilitySelector):
    """Predict ``target``'s utility from input embeddings (ridge regression), trained on ``train``.

    ``train``: a Pool (or a dataset spec for :func:`evalsift.io.load`) with outputs and scores.
    ``params`` go to the target selector. After ``fit``, ``train_fit_`` holds the training R^2.

    >>> from evalsift.io import make_demo_pool
    >>> pool = make_demo_pool(n_items=80)
    >>> d = Distilled(train=pool.subset(range(40)), params={"metric": "token_f1"}, encoder="tfidf")
    >>> len(d.fit(pool.subset(range(40, 80))).select(5).items)
    5
    """

    def __init__(self, *, target: str = "metric_var", train: Any = None, encoder: Any = "minilm",
                 alpha: float = 1.0, params: dict[str, Any] | None = None, seed: int = 0) -> None:
        if alpha <= 0:
            raise ParameterError(f"alpha must be > 0, got {alpha}")
        self.target = target
        self.train = train
        self.encoder = encoder
        self.alpha = alpha
        self.params = dict(params or {})
        self.seed = seed

    def _train_pool(self) -> Pool:
        if self.train is None:
            raise ParameterError("distilled needs train=<Pool or dataset> with outputs and scores to learn from")
        if isinstance(self.train, Pool):
            return self.train
        from ..io import load

        return load(self.train)

    def _inputs(self, pool: Pool):
        from ..embed import embed_texts

        mine = input_texts(pool, self._label(), fix="the distilled estimator reads inputs only")
        # one call for both pools keeps corpus-fitted encoders (tfidf) in one space
        return lambda other: np.asarray(embed_texts(mine + input_texts(other, self._label()), self.encoder), float)

    def _utilities(self, pool: Pool) -> np.ndarray:
        from sklearn.linear_model import Ridge

        train = self._train_pool()
        y = _target(self.target, self.seed, self.params).fit(train).utilities_
        ok = ~np.isnan(y)
        X = self._inputs(train)(pool)
        Xtr, Xnew = X[: train.n_items], X[train.n_items:]
        mu, sd = y[ok].mean(), y[ok].std() or 1.0
        model = Ridge(alpha=self.alpha).fit(Xtr[ok], (y[ok] - mu) / sd)
        self.train_fit_ = float(model.score(Xtr[ok], (y[ok] - mu) / sd))
        return model.predict(Xnew) * sd + mu
