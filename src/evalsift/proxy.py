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
- **several at once** (``[spec, spec, ...]``, ``compare --proxy S1 --proxy S2``) plus
  **covariates** the user already has (:data:`COVARIATES`: ``length``, the log ratio of the two
  outputs' lengths; ``position``, +1 where ``a`` was shown first and -1 where ``b`` was, from the
  recorded judgments): one column each, stacked into a single calibration -- the same logistic
  regression with one coefficient per column, fitted on the verdicts seen (a stacked prediction,
  predictable as a single proxy is). A useless column gets a coefficient near 0.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from .errors import DataError, ParameterError
from .metrics import ensure_metric
from .oracle import make_oracle
from .oracle.judgments import orient
from .oracle.votes import combine
from .pool import Pool
from .restrict import PairRestriction, restrict_pair
from .stats.sequential import VALUES, Predictor

PROXY_KINDS = ("metric", "judge")
COVARIATES = ("length", "position")


class MetricProxy(Predictor):
    """Proxy values calibrated into verdict predictions (see the module doc). ``difference``: one
    value per pool item (``metric(a) - metric(b)``, already oriented so that larger favours ``a``;
    a judge's verdict value minus 1/2), or a matrix with one column per proxy or covariate (items x
    columns): the columns are standardised and stacked into one logistic calibration.
    ``names``: the columns' names (for reports).

    >>> d = np.linspace(-2, 2, 100)
    >>> p = MetricProxy(d)
    >>> items = np.arange(0, 100, 5); values = (d[items] > 0).astype(float)
    >>> f = p.predict(items, values)
    >>> bool(f[0] < 0.3 and f[-1] > 0.7 and f[50] > f[40])
    True
    >>> noise = np.random.default_rng(0).normal(size=100)      # a useless second column
    >>> g = MetricProxy(np.column_stack([d, noise]), names=("metric", "noise")).predict(items, values)
    >>> bool(np.corrcoef(f, g)[0, 1] > 0.9)
    True
    """

    def __init__(self, difference, *, min_labels: int = 8, growth: float = 1.2, C: float = 1.0,
                 name: str = "metric", spec: str | None = None, names: Sequence[str] | None = None) -> None:
        d = np.asarray(difference, dtype=float)
        if d.ndim not in (1, 2) or len(d) == 0 or not np.all(np.isfinite(d)):
            raise DataError(f"proxy {name!r}: the metric difference must be a finite number for every item "
                            "(restrict the pair to items both systems have a score for)", field="proxy")
        X = d[:, None] if d.ndim == 1 else d
        self.columns = X  # the values as given (items x columns), for :meth:`state`
        self.size = len(X)
        sd = X.std(axis=0)
        self.z = np.where(sd > 0, (X - X.mean(axis=0)) / np.where(sd > 0, sd, 1.0), 0.0)  # items x columns
        self.names = tuple(names) if names is not None else (name,) * X.shape[1]
        if len(self.names) != X.shape[1]:
            raise ParameterError(f"proxy {name!r}: {X.shape[1]} column(s) but {len(self.names)} name(s)", field="proxy")
        self.min_labels, self.growth, self.C, self.name = int(min_labels), float(growth), float(C), name
        self.spec = spec  # the spec that rebuilds this proxy from the pool alone (metric:NAME), else None
        self._fits: dict[tuple, np.ndarray | None] = {}

    def state(self) -> dict:
        """Everything that rebuilds this proxy without the data, as JSON-safe values (the annotation app
        stores it with a live project): :meth:`from_state` gives back the same predictions."""
        return {"columns": self.columns.T.tolist(), "names": list(self.names), "name": self.name, "spec": self.spec,
                "min_labels": self.min_labels, "growth": self.growth, "C": self.C}

    @classmethod
    def from_state(cls, state: dict) -> "MetricProxy":
        """The proxy :meth:`state` describes.

        >>> p = MetricProxy(np.column_stack([np.linspace(-1, 1, 9), np.arange(9.0)]), names=("m", "n"))
        >>> q = MetricProxy.from_state(p.state())
        >>> bool(np.array_equal(p.z, q.z)) and q.names == p.names
        True
        """
        try:
            columns = np.asarray(state["columns"], dtype=float).T
            return cls(columns, names=state["names"], name=state["name"], spec=state.get("spec"),
                       min_labels=state["min_labels"], growth=state["growth"], C=state["C"])
        except (KeyError, TypeError, ValueError) as e:
            raise DataError(f"a stored proxy cannot be rebuilt ({type(e).__name__}: {e}); the store may be from a "
                            "newer evalsift", field="proxy") from None

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
        """sigmoid(alpha + z . beta) for every item, or None without a fit."""
        if coef is None:
            return None
        f = 1.0 / (1.0 + np.exp(-(coef[0] + self.z @ np.asarray(coef[1:]))))
        f.flags.writeable = False  # shared between steps: never changed in place
        return f

    def _fit(self, z: np.ndarray, y: np.ndarray):
        if np.all(y == y[0]):
            return None
        return tuple(float(c) for c in logistic_fit(z, y, C=self.C))


def logistic_fit(X: np.ndarray, y: np.ndarray, *, C: float = 1.0, tol: float = 1e-10, max_iter: int = 100) -> np.ndarray:
    """L2-penalised logistic regression on soft targets ``y`` in [0, 1] (a tie is 1/2: half a win and
    half a loss), by Newton's method: ``(intercept, slope per column)`` minimising
    ``|slopes|^2 / 2 + C sum_i [-y_i log p_i - (1 - y_i) log(1 - p_i)]``, ``p = sigmoid(intercept + X slopes)``,
    the intercept not penalised -- scikit-learn's ``LogisticRegression(C=C)`` objective with each item
    entered twice (target 1 weighted ``y_i``, target 0 weighted ``1 - y_i``), solved here directly:
    with a handful of columns Newton takes a fraction of a millisecond where L-BFGS's set-up takes tens,
    and the calibration is refitted many times in a sequential run.

    >>> X = np.linspace(-2, 2, 50)[:, None]; y = (X[:, 0] > 0.3).astype(float)
    >>> from sklearn.linear_model import LogisticRegression
    >>> ref = LogisticRegression(C=1.0).fit(np.r_[X, X], np.r_[np.ones(50), np.zeros(50)], sample_weight=np.r_[y, 1 - y])
    >>> bool(np.allclose(logistic_fit(X, y), [ref.intercept_[0], *ref.coef_[0]], atol=1e-4))
    True
    """
    X = np.asarray(X, dtype=float)
    X = X[:, None] if X.ndim == 1 else X
    y = np.asarray(y, dtype=float)
    A = np.column_stack([np.ones(len(X)), X])
    penalty = np.r_[0.0, np.ones(X.shape[1])]
    w = np.zeros(A.shape[1])
    w[0] = math.log((y.mean() + 1e-9) / (1.0 - y.mean() + 1e-9))

    def loss(v: np.ndarray) -> float:
        eta = A @ v
        return 0.5 * float(penalty @ v ** 2) + C * float(np.sum(np.logaddexp(0.0, eta) - y * eta))

    current = loss(w)
    for _ in range(max_iter):
        p = 1.0 / (1.0 + np.exp(-(A @ w)))
        grad = penalty * w + C * (A.T @ (p - y))
        H = (A.T * (C * p * (1.0 - p))) @ A + np.diag(penalty) + 1e-12 * np.eye(len(w))
        step = np.linalg.solve(H, grad)
        t = 1.0
        while True:  # damped: never a step that raises the loss
            trial = w - t * step
            new = loss(trial)
            if new <= current or t < 1e-8:
                break
            t /= 2.0
        done = current - new < tol * max(1.0, abs(current))
        w, current = trial, new
        if done or float(np.max(np.abs(t * step))) < 1e-10:
            break
    return w


def judge_values(oracle: Any, pool: Pool, a: str, b: str) -> np.ndarray:
    """The judge's verdict value (a 1, tie 1/2, b 0) on every item of ``pool``; NaN where it gave
    none (an error, no recorded verdict). Several judgments of an item combine by the vote rule
    (:mod:`evalsift.oracle.votes`: the latest per annotator, plurality, a split is a tie)."""
    if hasattr(oracle, "covers") and hasattr(oracle, "verdicts"):
        out = np.full(pool.n_items, np.nan)
        ok = np.asarray(oracle.covers(pool, a, b), dtype=bool)
        if ok.any():
            v = oracle.verdicts(pool, np.flatnonzero(ok), a, b)
            out[ok] = [VALUES[str(x)] for x in v]
        return out
    return values_of(oracle.judge_pairs(pool, list(range(pool.n_items)), a, b), pool, a, b)[0]


def oriented_by_item(judgments, a: str, b: str) -> dict[str, list]:
    """Judgments by item id, each oriented to ``a`` vs ``b`` (one judged the other way round is flipped)."""
    by_item: dict[str, list] = {}
    for j in judgments:
        by_item.setdefault(j.item_id, []).append(orient(j, a, b))
    return by_item


def values_of(judgments, pool: Pool, a: str, b: str) -> tuple[np.ndarray, dict[str, list]]:
    """Judgments of items of ``pool`` as verdict values for ``a`` vs ``b`` (NaN: no verdict), each
    item's judgments oriented to the pair and combined by the vote rule; and those oriented
    judgments by item id (:func:`oriented_by_item`, for what else they record, e.g. the shown orders)."""
    by_item = oriented_by_item(judgments, a, b)
    out = np.full(pool.n_items, np.nan)
    for i, iid in enumerate(pool.item_ids):
        v = combine(by_item.get(iid, ()))
        if v is not None:
            out[i] = VALUES[v]
    return out, by_item


def _specs(spec: Any) -> list:
    """A spec, a Predictor or a sequence of specs, as a list."""
    return list(spec) if isinstance(spec, (list, tuple)) else [spec]


def _check_spec(spec: Any) -> tuple[str, str]:
    if not isinstance(spec, str) or ":" not in spec:
        raise ParameterError(f"proxy {spec!r}: expected metric:NAME (an automatic metric scored for every item, "
                             "e.g. metric:COMET-refA) or judge:SPEC (a cheap judge, e.g. judge:llm:MODEL)",
                             field="proxy")
    kind, _, name = spec.partition(":")
    if kind not in PROXY_KINDS:
        raise ParameterError(f"proxy kind {kind!r} is not available; known: {', '.join(PROXY_KINDS)} "
                             "(e.g. metric:COMET-refA, judge:llm:MODEL)", field="proxy")
    return kind, name


def proxy_column(spec: str, pool: Pool, a: str, b: str, *, higher_is_better: bool = True,
                 oracle: Any = None) -> np.ndarray:
    """One proxy's value on every item of ``pool`` for the pair (``a``, ``b``), larger favouring ``a``:
    ``judge:SPEC``, the judge's verdict value minus 1/2 (``oracle``: the judge, already built); ``metric:NAME``,
    ``metric(a) - metric(b)``. A DataError names the first item it does not cover."""
    kind, name = _check_spec(spec)
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
        return values - 0.5
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
    return d if higher_is_better else -d


def covariate_column(name: str, pool: Pool, a: str, b: str, *, recorded: Sequence[Any] = ()) -> np.ndarray:
    """A covariate of :data:`COVARIATES` on every item of ``pool`` for the pair (``a``, ``b``):

    - ``length``: ``log((1 + len(output_a)) / (1 + len(output_b)))``, in characters (needs both outputs);
    - ``position``: +1 where ``a`` was shown first, -1 where ``b`` was (the mean over an item's
      recorded judgments, so 0 when it was shown both ways), read from the first of ``recorded`` (oracles
      replaying recorded judgments, e.g. ``judgments:FILE``) that has a judgment of every item. Only the
      order is read, never a verdict.

    >>> from evalsift.io import make_demo_pool
    >>> pool = make_demo_pool(n_items=4)
    >>> covariate_column("length", pool, "A", "B").shape
    (4,)
    """
    if name not in COVARIATES:
        raise ParameterError(f"covariate {name!r} is not available; known: {', '.join(COVARIATES)}", field="covariates")
    if name == "length":
        oa, ob = pool.outputs.get(a), pool.outputs.get(b)
        missing = [k for k in range(pool.n_items) if oa is None or ob is None or oa[k] is None or ob[k] is None]
        if missing:
            first = pool.item_ids[missing[0]]
            raise DataError(f"covariate 'length' needs both outputs of {a!r} and {b!r} on every item; {len(missing)} of "
                            f"{pool.n_items} item(s) have none (first {first!r}). Leave 'length' out of --covariates, or "
                            "give data with the output texts", field="covariates", item_id=first)
        la = np.array([len(str(t)) for t in oa], dtype=float)
        lb = np.array([len(str(t)) for t in ob], dtype=float)
        return np.log((1.0 + la) / (1.0 + lb))
    for source in recorded:
        if not hasattr(source, "judgments"):
            continue
        judged = source.judge_pairs(pool, list(range(pool.n_items)), a, b)
        by_item: dict[str, list[float]] = {}
        for j in judged:
            if j.status != "error":
                by_item.setdefault(j.item_id, []).append(1.0 if j.shown_order == "ab" else -1.0)
        if all(iid in by_item for iid in pool.item_ids):
            return np.array([float(np.mean(by_item[iid])) for iid in pool.item_ids])
    raise DataError(f"covariate 'position' needs the order each item of {a!r} vs {b!r} was shown in, from recorded "
                    "judgments (a judgments:FILE oracle or judge:judgments:FILE proxy with a shown order for every "
                    "item); none was given. Leave 'position' out of --covariates", field="covariates")


def make_proxy(spec: Any, pool: Pool, a: str, b: str, *, higher_is_better: bool = True,
               oracle: Any = None, covariates: Sequence[str] = (), recorded: Sequence[Any] = ()) -> Predictor:
    """A proxy for the pair (``a``, ``b``) of ``pool`` from a spec (``metric:NAME`` or ``judge:SPEC``),
    several specs (a list: stacked into one calibration, one column each) or a Predictor.
    ``oracle``: the judge of ``judge:SPEC``, already built (the command line builds it with its
    options; a list aligned with the specs when there are several, None where a spec builds its own);
    otherwise it is built from the spec. ``covariates``: names from :data:`COVARIATES`, each one more
    column; ``recorded``: oracles with recorded judgments, where ``position`` reads the shown orders
    (the judges of the specs are tried after them).

    The proxy must cover every item of the pool (restrict the pair first:
    :func:`~evalsift.restrict.restrict_pair` with ``metric=`` or ``oracle=``).
    """
    specs = _specs(spec)
    if len(specs) == 1 and isinstance(specs[0], Predictor):
        if covariates:
            raise ParameterError("covariates are columns of a stacked proxy; a Predictor given as the proxy makes its "
                                 "own predictions: leave the covariates out or build them into it", field="covariates")
        if specs[0].size != pool.n_items:
            raise ParameterError(f"the proxy predicts {specs[0].size} items, the pool has {pool.n_items}", field="proxy")
        return specs[0]
    if not specs:
        raise ParameterError("no proxy given: name at least one metric:NAME or judge:SPEC", field="proxy")
    judges = list(oracle) if isinstance(oracle, (list, tuple)) else [oracle] * len(specs)
    if len(judges) != len(specs):
        raise ParameterError(f"{len(specs)} proxies but {len(judges)} judges", field="proxy")
    if len(set(map(str, specs))) != len(specs):
        raise ParameterError(f"a proxy is named twice in {specs}: each adds one column, name it once", field="proxy")
    judges = [j if j is not None or not str(s).startswith("judge:") else make_oracle(_check_spec(s)[1])
              for s, j in zip(specs, judges)]  # built once: the columns and the shown orders read the same judge
    columns = [proxy_column(s, pool, a, b, higher_is_better=higher_is_better, oracle=j) for s, j in zip(specs, judges)]
    covariates = list(covariates)
    if len(set(covariates)) != len(covariates):
        raise ParameterError(f"a covariate is named twice in {covariates}", field="covariates")
    columns += [covariate_column(c, pool, a, b, recorded=[*recorded, *(j for j in judges if j is not None)])
                for c in covariates]
    names = [*map(str, specs), *covariates]
    if len(columns) == 1:
        only = specs[0]
        return MetricProxy(columns[0], name=only,
                           spec=only if only.startswith("metric:") and higher_is_better else None)
    return MetricProxy(np.column_stack(columns), name=" + ".join(names), names=names,
                       spec=None)


@dataclass(frozen=True)
class ProxySource:
    """Proxy specs resolved once for a whole pool (:func:`resolve_proxy`), then restricted and
    fitted per pair (:meth:`for_pair`). What is shared by every pair is done here once: a reference
    metric (``metric:chrF-ref``) is computed for every system, a cheap judge (``judge:SPEC``) is
    built (a recorded file read) once. ``pool``: the pool with the metrics' columns; ``spec``: the
    canonical spec (``metric:chrF-ref``; a tuple of them when there are several; or a Predictor);
    ``parts``: per proxy, ``(spec, metric or None, judge or None)``; ``covariates``: names of
    :data:`COVARIATES`; ``recorded``: oracles with recorded judgments for the ``position`` covariate."""

    spec: Any
    pool: Pool
    parts: tuple = ()
    covariates: tuple[str, ...] = ()
    recorded: tuple = ()

    def for_pair(self, a: str, b: str, pool: Pool | None = None) -> tuple[PairRestriction, Predictor]:
        """The pair (``a``, ``b``) restricted to the items every proxy covers, and the proxy fitted on
        them, ready for a :class:`~evalsift.session.Session`: ``(restriction, predictor)``.
        ``pool``: the pair's items already restricted otherwise (e.g. to the judge's), a subset of
        :attr:`pool`; default :attr:`pool`."""
        base = self.pool if pool is None else pool
        restriction = None
        for _, metric, judge in self.parts or ((None, None, None),):
            step = restrict_pair(base if restriction is None else restriction.pool, a, b, metric=metric, oracle=judge)
            restriction = step if restriction is None else _chain(restriction, step)
        parts = self.parts or ((self.spec, None, None),)
        return restriction, make_proxy([p[0] for p in parts], restriction.pool, a, b, oracle=[p[2] for p in parts],
                                       covariates=self.covariates, recorded=self.recorded)


def _chain(first: PairRestriction, then: PairRestriction) -> PairRestriction:
    """Two restrictions one after the other, as one: the whole pool and its missing outputs from the
    first, the items each dropped added up."""
    from dataclasses import replace

    return replace(then, n_total=first.n_total, dropped_outputs=first.dropped_outputs + then.dropped_outputs,
                   dropped_scores=first.dropped_scores + then.dropped_scores, no_output_a=first.no_output_a,
                   no_output_b=first.no_output_b, no_output_both=first.no_output_both, other_pairs=first.other_pairs,
                   metric=then.metric or first.metric, judge=then.judge or first.judge)


def resolve_proxy(pool: Pool, spec: Any, *, oracle: Any = None, covariates: Sequence[str] = (),
                  recorded: Sequence[Any] = ()) -> ProxySource:
    """``spec`` (``metric:NAME``, ``judge:SPEC``, a list of them, or a
    :class:`~evalsift.stats.Predictor`) resolved for ``pool``: a reference metric such as ``chrF-ref``
    is computed here for every system, a ``judge:SPEC`` judge built here (``oracle``: already built,
    e.g. with the command line's options; a list aligned with the specs when there are several).
    ``covariates`` / ``recorded``: as :func:`make_proxy`. An unknown metric is the pool's error naming
    the ones it has."""
    specs = _specs(spec)
    judges = list(oracle) if isinstance(oracle, (list, tuple)) else [oracle] * len(specs)
    parts = []
    for one, judge in zip(specs, judges):
        kind, _, name = one.partition(":") if isinstance(one, str) else ("", "", "")
        if kind == "metric" and name:
            pool, name = ensure_metric(pool, name)
            pool.check_metric(name)
            parts.append((f"metric:{name}", name, None))
        elif kind == "judge" and name:
            parts.append((one, None, judge if judge is not None else make_oracle(name)))
        else:  # a Predictor, or make_proxy's error naming the fix
            parts.append((one, None, None))
    canonical = tuple(p[0] for p in parts) if len(parts) > 1 else parts[0][0] if parts else spec
    return ProxySource(spec=canonical, pool=pool, parts=tuple(parts), covariates=tuple(covariates),
                       recorded=tuple(recorded))


def restrict_to_proxy(pool: Pool, a: str, b: str, spec: Any, *, oracle: Any = None, covariates: Sequence[str] = (),
                      recorded: Sequence[Any] = ()) -> tuple[PairRestriction, Predictor]:
    """The pair (``a``, ``b``) of ``pool`` restricted to the items the proxies cover, and the proxy
    fitted on them for the Session: ``(restriction, predictor)`` -- :func:`resolve_proxy` then
    :meth:`ProxySource.for_pair`. ``metric:NAME``: the items the metric scores for both systems (a
    reference metric such as ``chrF-ref`` is computed first); ``judge:SPEC``: the items the judge
    (``oracle``, or built from the spec) gives a verdict for, the judge asked once about every item.
    Several specs (a list): the items all of them cover, one stacked calibration.
    Many pairs of one pool: resolve once and call ``for_pair`` per pair.
    """
    return resolve_proxy(pool, spec, oracle=oracle, covariates=covariates, recorded=recorded).for_pair(a, b)
