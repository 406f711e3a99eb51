"""Across benchmarks: one ability shared by several benchmarks estimates each of them and the total.

Setting: the known systems' full matrix ``Yk`` (K x M) over the items of several benchmarks (a
per-item label, e.g. opencompass-irt's ``benchmark`` column), and a new system judged on a few items
of each benchmark. The targets: the new system's mean on each benchmark, and two totals -- the
**mean over benchmarks** (each benchmark weighted equally, what metabench and OpenCompass report;
``macro``) and the **mean over all items** (``micro``). Three model-based estimators (like ``pirt``:
no interval) and a reference:

- ``separate`` -- each benchmark on its own, today's way: the benchmark's own 2PL fitted to the known
  systems on its items (:func:`evalsift.estimate.anchors.fit_item_model`), the new system's ability
  from its judged items in that benchmark only, and p-IRT within the benchmark
  (:func:`evalsift.estimate.estimators.pirt_values`: evalsift's one-dimensional p-IRT). A benchmark
  with no judged item gets the ability prior's mean (0, the average known system).
- ``shared`` -- one 2PL fitted jointly to every item (one ability per known system over all
  benchmarks; 12 x 41,871 fits in about 0.2 s), the new system's one ability by MAP from ALL its
  judged items, and each benchmark's p-IRT with it: ``(sum of its judged scores + sum over its
  unjudged items of P_j(theta)) / M_b``. It assumes one ability drives every benchmark.
- ``shared-offset`` -- the joint 2PL again, the new system's ability on benchmark ``b`` being
  ``theta + delta_b``: ``theta ~ N(0, 1)`` as above, ``delta_b ~ N(0, tau_b^2)``, all fitted together
  by MAP (Newton on ``1 + B`` parameters; the log-posterior is concave). A benchmark with few judged
  items keeps ``delta_b`` near 0 (the prior wins: the shared ability); with many, its own items
  decide. ``tau_b``: how far the known systems' abilities on ``b`` stray from their joint ability
  (each known system's ``delta`` fitted on all its items of ``b`` under the joint item parameters,
  prior N(0, 1); ``tau_b`` their robust spread ``1.4826 * median |delta|`` over the known systems, at
  least :data:`MIN_TAU`, so that one known system far off on one benchmark -- opencompass-irt has one
  at 100% on MMLU -- does not loosen that benchmark's prior for every new system; the root mean square
  did worse there). These deviations are fitted in-sample (the items saw those
  systems), so ``tau_b`` errs small: toward ``shared``.

- ``mean`` -- the reference without a model: each benchmark's judged mean (a benchmark with no
  judged item: the known systems' mean there).

Scores are mapped to [0, 1] by :func:`~evalsift.estimate.anchors.unit_scale` for the 2PL and back;
every estimate is kept inside the score's stated range (``bounds``), as the other estimators do.

>>> import numpy as np
>>> rng = np.random.default_rng(0)
>>> theta = rng.normal(size=13)
>>> labels = np.repeat(["a", "b", "c"], 60)
>>> Y = (rng.random((13, 180)) < 1 / (1 + np.exp(-(theta[:, None] - rng.normal(size=180))))).astype(float)
>>> known = KnownAcross(Y[1:], labels, bounds=(0.0, 1.0))
>>> items = draw_per_group(known, 5, seed=0)
>>> est = estimate_across(known, items, Y[0, items], "shared")
>>> est.groups, len(items), est.values.shape
(('a', 'b', 'c'), 15, (3,))
"""

from __future__ import annotations

from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any, Sequence

import numpy as np

from ..errors import DataError, ParameterError, check_choice
from .anchors import fit_item_model, unit_scale
from .estimators import _check_bounds, fit_abilities, pirt_values

ACROSS_METHODS = ("separate", "shared", "shared-offset", "mean")
MIN_TAU = 0.05  # the smallest prior spread of a benchmark offset (on the ability scale)
ASSUMPTIONS = {
    "separate": "within each benchmark, a one-dimensional 2PL fitted to the known systems on its items describes "
                "the new system; nothing is shared across benchmarks",
    "shared": "one ability drives every benchmark (one 2PL over all items fitted to the known systems describes "
              "the new system); biased for a system whose strength differs by benchmark (strong on code, weak on "
              "Chinese QA)",
    "mean": "the judged items of each benchmark were drawn at random from it (no interval here)",
    "shared-offset": "as shared, plus a benchmark-specific deviation of the new system, shrunk toward 0 by how many "
                     "of its items were judged, with a prior spread taken from how the known systems deviate",
}


@dataclass(frozen=True)
class AcrossEstimate:
    """One estimator's estimates for a new system: per group (``groups``, ``values`` in the data's unit,
    ``judged`` items per group) and the two totals -- ``macro`` (the mean over groups, each weighted
    equally) and ``micro`` (the mean over all items)."""

    method: str
    groups: tuple[str, ...]
    values: np.ndarray
    judged: tuple[int, ...]
    macro: float
    micro: float
    assumption: str
    details: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {"method": self.method, "kind": "model-based", "assumption": self.assumption,
                "groups": {g: {"estimate": float(v), "judged": n} for g, v, n in zip(self.groups, self.values,
                                                                                    self.judged)},
                "mean_over_groups": self.macro, "mean_over_items": self.micro, **self.details}


class KnownAcross:
    """The known systems' side, computed once per set of known systems and shared by every draw and
    estimator: ``Yk`` (K x M), the per-item group ``labels``, each group's item positions
    (:attr:`index`), and lazily the joint 2PL (:attr:`joint`), each group's own 2PL
    (:meth:`group_fit`) and the offsets' prior spreads (:attr:`tau`). ``bounds``: the score's stated
    range (as :class:`~evalsift.estimate.KnownSystems`)."""

    def __init__(self, Yk, labels: Sequence[Any], *, bounds: tuple[float | None, float | None] | None = None,
                 seed: int = 0) -> None:
        Yk = np.asarray(Yk, dtype=float)
        if Yk.ndim != 2 or Yk.shape[0] < 2 or not np.isfinite(Yk).all():
            raise DataError("estimation across benchmarks needs at least 2 known systems with a score on every item "
                            f"(got a {Yk.shape} matrix)", field="systems")
        labels = np.array([str(v) for v in labels], dtype=object)
        if labels.shape != (Yk.shape[1],):
            raise DataError(f"one group label per item is needed: {Yk.shape[1]} items, {len(labels)} labels",
                            field="labels")
        self.Yk = Yk
        self.labels = labels
        self.groups: tuple[str, ...] = tuple(dict.fromkeys(labels))
        self.index: list[np.ndarray] = [np.flatnonzero(labels == g) for g in self.groups]
        self.sizes = np.array([len(ix) for ix in self.index])
        self.group_of = np.empty(Yk.shape[1], dtype=int)
        for k, ix in enumerate(self.index):
            self.group_of[ix] = k
        self.bounds = _check_bounds(bounds, Yk)
        self.lo, self.hi = unit_scale(Yk)
        self.seed = int(seed)
        self._joint = None
        self._group_fit: dict[int, tuple[Any, float, float]] = {}
        self._tau: np.ndarray | None = None

    @property
    def joint(self):
        """The 2PL fitted to every known system on every item (one ability per system), [0, 1] scale."""
        if self._joint is None:
            self._joint = fit_item_model(self.Yk, self.seed)
        return self._joint

    def group_fit(self, k: int) -> tuple[Any, float, float]:
        """Group ``k``'s own 2PL (fitted to the known systems on its items only) and the ``(lo, hi)``
        that map its scores to [0, 1]."""
        if k not in self._group_fit:
            Yg = self.Yk[:, self.index[k]]
            self._group_fit[k] = (fit_item_model(Yg, self.seed), *unit_scale(Yg))
        return self._group_fit[k]

    @property
    def tau(self) -> np.ndarray:
        """Per group, the prior spread of a system's offset from its joint ability (module doc)."""
        if self._tau is None:
            fit = self.joint
            a, b = np.asarray(fit.discrimination), np.asarray(fit.difficulty)
            U = self.unit(self.Yk)
            tau = np.empty(len(self.groups))
            for k, ix in enumerate(self.index):
                dev = []
                for s, th in enumerate(np.asarray(fit.ability)):  # delta is an ability on items moved by th
                    shifted = SimpleNamespace(discrimination=a[ix], difficulty=b[ix] - th)
                    d, _ = fit_abilities(shifted, np.arange(len(ix)), U[s:s + 1, ix])
                    dev.append(float(d[0]))
                tau[k] = max(MIN_TAU, 1.4826 * float(np.median(np.abs(dev))))
            self._tau = tau
        return self._tau

    def unit(self, y) -> np.ndarray:
        """Scores mapped to the joint 2PL's [0, 1] scale (clipped)."""
        return np.clip((np.asarray(y, dtype=float) - self.lo) / (self.hi - self.lo), 0.0, 1.0)

    def truth(self, row) -> tuple[np.ndarray, float, float]:
        """(per-group means, mean over groups, mean over items) of a complete row of scores."""
        row = np.asarray(row, dtype=float)
        per = np.array([row[ix].mean() for ix in self.index])
        return per, float(per.mean()), float(row.mean())


def draw_per_group(known: KnownAcross, budget: int, seed: int = 0) -> np.ndarray:
    """A uniform random draw of ``budget`` items from each group (all of a group's items when it has
    no more than ``budget``), as positions in the full matrix, group by group; seeded by ``seed`` and
    the group's number (so budgets and groups draw independently)."""
    n = int(budget)
    if n < 1:
        raise ParameterError(f"--budgets {n}: items per benchmark must be at least 1.", field="budgets")
    picks = []
    for k, ix in enumerate(known.index):
        rng = np.random.default_rng([int(seed), n, k, 44])
        picks.append(ix if len(ix) <= n else np.sort(rng.choice(ix, n, replace=False)))
    return np.concatenate(picks)


def estimate_across(known: KnownAcross, items, y, method: str) -> AcrossEstimate:
    """Estimate every group's mean and the totals of a new system from ``y``, its scores on ``items``
    (positions in the known systems' matrix, any number per group, no repeats), by ``method``
    (``separate``, ``shared``, ``shared-offset`` or ``mean``; module doc)."""
    method = check_choice("method", method, ACROSS_METHODS, where="estimate across benchmarks")
    items = np.asarray(items, dtype=int)
    y = np.asarray(y, dtype=float)
    M = known.Yk.shape[1]
    if items.ndim != 1 or y.shape != items.shape or not np.isfinite(y).all():
        raise DataError(f"the new system needs one score per judged item ({len(items)} items, {y.size} scores"
                        f"{', some missing' if y.shape == items.shape else ''})", field="items")
    if items.size and (items.min() < 0 or items.max() >= M or len(np.unique(items)) != len(items)):
        raise DataError(f"judged items must be distinct positions among the {M} items", field="items")
    judged = tuple(int(np.isin(ix, items).sum()) for ix in known.index)
    if method == "separate":
        values, details = _separate(known, items, y), {}
    elif method == "mean":
        values, details = _judged_means(known, items, y), {}
    else:
        values, details = _shared(known, items, y, offset=method == "shared-offset")
    lo = -np.inf if known.bounds is None or known.bounds[0] is None else known.bounds[0]
    hi = np.inf if known.bounds is None or known.bounds[1] is None else known.bounds[1]
    values = np.clip(values, lo, hi)
    micro = float(values @ known.sizes / known.sizes.sum())
    return AcrossEstimate(method, known.groups, values, judged, float(values.mean()), micro, ASSUMPTIONS[method],
                          details)


def _judged_means(known: KnownAcross, items: np.ndarray, y: np.ndarray) -> np.ndarray:
    values = np.empty(len(known.groups))
    for k, ix in enumerate(known.index):
        mask = np.isin(items, ix)
        values[k] = float(y[mask].mean()) if mask.any() else float(known.Yk[:, ix].mean())
    return values


def _separate(known: KnownAcross, items: np.ndarray, y: np.ndarray) -> np.ndarray:
    values = np.empty(len(known.groups))
    pos = {int(i): k for k, i in enumerate(items)}
    for k, ix in enumerate(known.index):
        local = np.flatnonzero(np.isin(ix, items))
        yk = y[[pos[int(i)] for i in ix[local]]]
        if len(local) == len(ix):
            values[k] = float(yk.mean())
            continue
        fit, lo, hi = known.group_fit(k)
        if len(local) == 0:  # nothing judged here: the ability prior's mean, the average known system
            values[k] = lo + (hi - lo) * float(fit.probability([0.0])[0].mean())
            continue
        u = (yk - lo) / (hi - lo)
        est, _ = pirt_values(fit, local, np.clip(u, 0.0, 1.0)[None, :], judged=u[None, :])
        values[k] = lo + (hi - lo) * float(est[0])
    return values


def _shared(known: KnownAcross, items: np.ndarray, y: np.ndarray, offset: bool) -> tuple[np.ndarray, dict]:
    fit = known.joint
    a, b = np.asarray(fit.discrimination), np.asarray(fit.difficulty)
    u = known.unit(y)
    theta, _ = fit_abilities(fit, items, u[None, :])
    th = float(theta[0])
    G = len(known.groups)
    delta = np.zeros(G)
    details: dict[str, Any] = {"ability": th}
    if offset:
        th, delta = offset_map(a[items], b[items], known.group_of[items], u, known.tau, start=th)
        details = {"ability": th, "offsets": {g: float(d) for g, d in zip(known.groups, delta)},
                   "tau": {g: float(t) for g, t in zip(known.groups, known.tau)}}
    P = 1.0 / (1.0 + np.exp(-a * (th + delta[known.group_of] - b)))
    P[items] = (y - known.lo) / (known.hi - known.lo)  # a judged score counts as it is
    values = np.array([known.lo + (known.hi - known.lo) * float(P[ix].mean()) for ix in known.index])
    return values, details


def offset_map(a, b, group, u, tau, *, start: float = 0.0, iters: int = 100) -> tuple[float, np.ndarray]:
    """MAP of ``(theta, delta_1..delta_G)`` for judged items with 2PL parameters ``a``, ``b``, group
    numbers ``group`` and [0, 1] scores ``u``: ``P_j = sigmoid(a_j (theta + delta_{g_j} - b_j))``,
    priors ``theta ~ N(0, 1)`` and ``delta_g ~ N(0, tau_g^2)``. Newton's method with step halving on
    the log-posterior (concave, so it converges from any start). Returns (theta, deltas).

    >>> th, d = offset_map(np.ones(4), np.zeros(4), np.array([0, 0, 1, 1]), np.array([1., 1., 0., 0.]),
    ...                    np.array([0.5, 0.5]))
    >>> round(th, 6), bool(d[0] > 0 > d[1])
    (0.0, True)
    """
    a, b, u = (np.asarray(v, dtype=float) for v in (a, b, u))
    group = np.asarray(group, dtype=int)
    tau = np.asarray(tau, dtype=float)
    G = len(tau)
    onehot = np.zeros((len(a), G))
    onehot[np.arange(len(a)), group] = 1.0
    X = np.hstack([np.ones((len(a), 1)), onehot]) * a[:, None]  # dz/dx, z_j = a_j (theta + delta_g - b_j)
    prec = np.concatenate([[1.0], 1.0 / tau ** 2])

    def logpost(x):
        z = X @ x - a * b
        return float(np.sum(u * z - np.logaddexp(0.0, z)) - 0.5 * np.sum(prec * x * x))

    x = np.zeros(G + 1)
    x[0] = start
    f = logpost(x)
    for _ in range(iters):
        z = X @ x - a * b
        p = 1.0 / (1.0 + np.exp(-z))
        grad = X.T @ (u - p) - prec * x
        H = (X * (p * (1 - p))[:, None]).T @ X + np.diag(prec)
        step = np.linalg.solve(H, grad)
        t = 1.0
        while t > 1e-8:
            f_new = logpost(x + t * step)
            if f_new >= f - 1e-12:
                break
            t /= 2
        x, f_old, f = x + t * step, f, f_new
        if np.max(np.abs(t * step)) < 1e-10 or abs(f - f_old) < 1e-13:
            break
    return float(x[0]), x[1:]
