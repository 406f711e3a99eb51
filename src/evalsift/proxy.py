"""Proxies: what is already known about every item, turned into a prediction of its verdict.

A proxy must be available for every item of the pool and must not look at the labels (the
verdicts being collected); it may be biased or weak. It is used by the anytime rule as a control
variate (:mod:`evalsift.stats.sequential`, :class:`~evalsift.stats.Predictor`) and by
:func:`evalsift.stats.ppi_mean` as the prediction of prediction-powered inference. Either way the
guarantee and the unbiasedness do not depend on the proxy; a good one narrows the interval and
brings the decision sooner, a useless one costs a little width.

- ``metric:NAME`` (:class:`MetricProxy`): an automatic metric scored for both systems on every item
  (COMET, MetricX, chrF, ROUGE). Its difference ``d_i = metric(a) - metric(b)`` becomes a predicted
  verdict value by a logistic calibration ``P = sigmoid(alpha + beta z_i)`` (``z`` the standardised
  difference) fitted on the verdicts seen so far (ties count half a win for each side); before
  ``min_labels`` verdicts, or when they are all alike, the prediction is their smoothed mean. The
  calibration is refitted as the labels grow (every 20% more), and each prediction uses only the
  verdicts before it: predictable, as the rule requires.
- ``judge:SPEC`` (a cheap judge): any oracle spec -- ``judge:llm:MODEL`` (a small LLM, with the
  command's ``--judge-*`` options), ``judge:judgments:SOURCE`` (recorded verdicts, e.g. SummEval's
  GPT-3.5 answers), ``judge:metric:NAME`` -- asked once about every item before the loop starts.
  Its verdict value (1, 1/2, 0) is calibrated into a prediction of the real judge's verdict the
  same way (a cheap judge's "a" is not certain to be the expensive judge's "a").
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from .errors import DataError, ParameterError
from .metrics import ensure_metric
from .oracle import make_oracle
from .oracle.judgments import orient
from .oracle.votes import combine
from .pool import Pool
from .restrict import PairRestriction, restrict_pair
from .stats.sequential import Predictor

PROXY_KINDS = ("metric", "judge")
VALUES = {"a": 1.0, "b": 0.0, "tie": 0.5}


class MetricProxy(Predictor):
    """A metric's score difference between the two systems, calibrated into verdict predictions
    (see the module doc). ``difference``: ``metric(a) - metric(b)`` per pool item (already
    oriented so that larger favours ``a``).

    >>> d = np.linspace(-2, 2, 100)
    >>> p = MetricProxy(d)
    >>> items = np.arange(0, 100, 5); values = (d[items] > 0).astype(float)
    >>> f = p.predict(items, values)
    >>> bool(f[0] < 0.3 and f[-1] > 0.7 and f[50] > f[40])
    True
    """

    def __init__(self, difference, *, min_labels: int = 8, growth: float = 1.2, C: float = 1.0,
                 name: str = "metric", spec: str | None = None) -> None:
        d = np.asarray(difference, dtype=float)
        if d.ndim != 1 or not np.all(np.isfinite(d)):
            raise DataError(f"proxy {name!r}: the metric difference must be a finite number for every item "
                            "(restrict the pair to items both systems have a score for)", field="proxy")
        self.size = len(d)
        sd = float(d.std())
        self.z = (d - float(d.mean())) / sd if sd > 0 else np.zeros_like(d)
        self.min_labels, self.growth, self.C, self.name = int(min_labels), float(growth), float(C), name
        self.spec = spec  # the spec that rebuilds this proxy from the pool alone (metric:NAME), else None
        self._fits: dict[tuple, np.ndarray | None] = {}

    def _refit_point(self, n: int) -> int:
        """The number of verdicts the calibration in force after ``n`` verdicts was fitted on."""
        k = self.min_labels
        while math.ceil(k * self.growth) <= n:
            k = max(k + 1, math.ceil(k * self.growth))
        return k

    def predict(self, items: np.ndarray, values: np.ndarray) -> np.ndarray:
        items = np.asarray(items, dtype=int)
        values = np.asarray(values, dtype=float)
        n = len(values)
        smoothed = (0.5 + values.sum()) / (1.0 + n)
        if n < self.min_labels:
            return np.full(self.size, smoothed)
        k = self._refit_point(n)
        key = (k, items[:k].tobytes(), values[:k].tobytes())
        if key not in self._fits:  # the predictions of one fit serve every step until the next refit
            self._fits[key] = self._predictions(self._fit(self.z[items[:k]], values[:k]))
        f = self._fits[key]
        return np.full(self.size, smoothed) if f is None else f

    def fit_predict(self, items, values) -> np.ndarray:
        """The calibration fitted on exactly these verdicts, applied to every item (for
        :func:`~evalsift.stats.ppi.cross_ppi_mean`); the smoothed mean when it cannot be fitted."""
        items = np.asarray(items, dtype=int)
        values = np.asarray(values, dtype=float)
        f = self._predictions(self._fit(self.z[items], values) if len(values) >= 2 else None)
        return np.full(self.size, (0.5 + values.sum()) / (1.0 + len(values))) if f is None else f

    def _predictions(self, coef):
        """sigmoid(alpha + beta z) for every item, or None without a fit."""
        if coef is None:
            return None
        f = 1.0 / (1.0 + np.exp(-(coef[0] + coef[1] * self.z)))
        f.flags.writeable = False  # shared between steps: never changed in place
        return f

    def _fit(self, z: np.ndarray, y: np.ndarray):
        from sklearn.linear_model import LogisticRegression

        if np.all(y == y[0]):
            return None
        X = np.concatenate([z, z])[:, None]
        target = np.r_[np.ones(len(z)), np.zeros(len(z))]
        weight = np.r_[y, 1.0 - y]  # a tie is half a win and half a loss
        keep = weight > 0
        model = LogisticRegression(C=self.C).fit(X[keep], target[keep], sample_weight=weight[keep])
        return float(model.intercept_[0]), float(model.coef_[0, 0])


def judge_values(oracle: Any, pool: Pool, a: str, b: str) -> np.ndarray:
    """The judge's verdict value (a 1, tie 1/2, b 0) on every item of ``pool``; NaN where it gave
    none (an error, no recorded verdict). Several judgments of an item combine by the vote rule
    (:mod:`evalsift.oracle.votes`: the latest per annotator, plurality, a split is a tie)."""
    out = np.full(pool.n_items, np.nan)
    if hasattr(oracle, "covers") and hasattr(oracle, "verdicts"):
        ok = np.asarray(oracle.covers(pool, a, b), dtype=bool)
        if ok.any():
            v = oracle.verdicts(pool, np.flatnonzero(ok), a, b)
            out[ok] = [VALUES[str(x)] for x in v]
        return out
    by_item: dict[str, list] = {}
    for j in oracle.judge_pairs(pool, list(range(pool.n_items)), a, b):
        by_item.setdefault(j.item_id, []).append(orient(j, a, b))  # judged the other way round: flipped
    for i, iid in enumerate(pool.item_ids):
        v = combine(by_item.get(iid, ()))
        if v is not None:
            out[i] = VALUES[v]
    return out


def make_proxy(spec: Any, pool: Pool, a: str, b: str, *, higher_is_better: bool = True,
               oracle: Any = None) -> Predictor:
    """A proxy for the pair (``a``, ``b``) of ``pool`` from a spec (``metric:NAME`` or
    ``judge:SPEC``) or a Predictor. ``oracle``: the judge of ``judge:SPEC``, already built (the
    command line builds it with its options); otherwise it is built from the spec.

    The proxy must cover every item of the pool (restrict the pair first:
    :func:`~evalsift.restrict.restrict_pair` with ``metric=`` or ``oracle=``).
    """
    if isinstance(spec, Predictor):
        if spec.size != pool.n_items:
            raise ParameterError(f"the proxy predicts {spec.size} items, the pool has {pool.n_items}", field="proxy")
        return spec
    if not isinstance(spec, str) or ":" not in spec:
        raise ParameterError(f"proxy {spec!r}: expected metric:NAME (an automatic metric scored for every item, "
                             "e.g. metric:COMET-refA) or judge:SPEC (a cheap judge, e.g. judge:llm:MODEL)",
                             field="proxy")
    kind, _, name = spec.partition(":")
    if kind not in PROXY_KINDS:
        raise ParameterError(f"proxy kind {kind!r} is not available; known: {', '.join(PROXY_KINDS)} "
                             "(e.g. metric:COMET-refA, judge:llm:MODEL)", field="proxy")
    if kind == "judge":
        judge = oracle if oracle is not None else make_oracle(name)
        if getattr(judge, "metric", None) is not None and pool.is_human(judge.metric):
            raise ParameterError(f"proxy {spec!r} replays the human metric {judge.metric!r}: a proxy must not be the "
                                 "labels", field="proxy")
        values = judge_values(judge, pool, a, b)
        bad = np.isnan(values)
        if bad.any():
            first = pool.item_ids[int(np.flatnonzero(bad)[0])]
            raise DataError(f"proxy {spec!r} gave no verdict for {int(bad.sum())} item(s) of {a!r} vs {b!r} (first "
                            f"{first!r}); a proxy must cover every item: restrict the pair to the items it judges",
                            field="proxy", item_id=first)
        return MetricProxy(values - 0.5, name=spec)
    pool.check_metric(name)
    if pool.is_human(name):
        raise ParameterError(f"proxy metric {name!r} is a human metric of pool {pool.name!r}: a proxy must not be "
                             "the labels; name an automatic metric", field="proxy")
    sa, sb = pool.score(name, a), pool.score(name, b)
    bad = ~(np.isfinite(sa) & np.isfinite(sb))
    if bad.any():
        first = pool.item_ids[int(np.flatnonzero(bad)[0])]
        raise DataError(f"proxy metric {name!r} has no score for {int(bad.sum())} item(s) of {a!r} vs {b!r} (first "
                        f"{first!r}); a proxy must cover every item: restrict the pair to the items it scores",
                        field="proxy", item_id=first)
    d = sa - sb
    return MetricProxy(d if higher_is_better else -d, name=spec, spec=spec if higher_is_better else None)


@dataclass(frozen=True)
class ProxySource:
    """A proxy spec resolved once for a whole pool (:func:`resolve_proxy`), then restricted and
    fitted per pair (:meth:`for_pair`). What is shared by every pair is done here once: a reference
    metric (``metric:chrF-ref``) is computed for every system, a cheap judge (``judge:SPEC``) is
    built (a recorded file read) once. ``pool``: the pool with the metric's column; ``spec``: the
    canonical spec (``metric:chrF-ref``); ``judge``: the cheap judge, or None."""

    spec: Any
    pool: Pool
    metric: str | None = None
    judge: Any = None

    def for_pair(self, a: str, b: str, pool: Pool | None = None) -> tuple[PairRestriction, Predictor]:
        """The pair (``a``, ``b``) restricted to the items the proxy covers, and the proxy fitted on
        them, ready for a :class:`~evalsift.session.Session`: ``(restriction, predictor)``.
        ``pool``: the pair's items already restricted otherwise (e.g. to the judge's), a subset of
        :attr:`pool`; default :attr:`pool`."""
        base = self.pool if pool is None else pool
        if self.metric is not None:
            restriction = restrict_pair(base, a, b, metric=self.metric)
        elif self.judge is not None:
            restriction = restrict_pair(base, a, b, oracle=self.judge)
        else:
            restriction = restrict_pair(base, a, b)
        return restriction, make_proxy(self.spec, restriction.pool, a, b, oracle=self.judge)


def resolve_proxy(pool: Pool, spec: Any, *, oracle: Any = None) -> ProxySource:
    """``spec`` (``metric:NAME``, ``judge:SPEC`` or a :class:`~evalsift.stats.Predictor`) resolved
    for ``pool``: a reference metric such as ``chrF-ref`` is computed here for every system, a
    ``judge:SPEC`` judge built here (``oracle``: already built, e.g. with the command line's options).
    An unknown metric is the pool's error naming the ones it has."""
    kind, _, name = spec.partition(":") if isinstance(spec, str) else ("", "", "")
    if kind == "metric" and name:
        pool, name = ensure_metric(pool, name)
        pool.check_metric(name)
        return ProxySource(spec=f"metric:{name}", pool=pool, metric=name)
    if kind == "judge" and name:
        return ProxySource(spec=spec, pool=pool, judge=oracle if oracle is not None else make_oracle(name))
    return ProxySource(spec=spec, pool=pool)  # a Predictor, or make_proxy's error naming the fix


def restrict_to_proxy(pool: Pool, a: str, b: str, spec: Any, *, oracle: Any = None
                      ) -> tuple[PairRestriction, Predictor]:
    """The pair (``a``, ``b``) of ``pool`` restricted to the items the proxy covers, and the proxy
    fitted on them for the Session: ``(restriction, predictor)`` -- :func:`resolve_proxy` then
    :meth:`ProxySource.for_pair`. ``metric:NAME``: the items the metric scores for both systems (a
    reference metric such as ``chrF-ref`` is computed first); ``judge:SPEC``: the items the judge
    (``oracle``, or built from the spec) gives a verdict for, the judge asked once about every item.
    Many pairs of one pool: resolve once and call ``for_pair`` per pair.
    """
    return resolve_proxy(pool, spec, oracle=oracle).for_pair(a, b)
