"""Utility selectors: score every item once in ``fit``, pick the most useful first in ``select``.

A subclass implements ``_utilities(pool) -> (n_items,)`` (higher = judge sooner; NaN = no
information, placed last). Ties keep the pool's item order, so results are deterministic.

"Utility" means one thing in evalsift: a per-item score from a utility selector.
:func:`utilities_of` gives it for any selector that defines an order of all items: a utility
selector's own utilities, or, for another nested selector (random), the **rank utility** -- n for
its first pick, n - 1 for the second, ..., 1 for the last -- which preserves that order and says
nothing more (it is ordinal: a knapsack over it prefers earlier picks, not "twice as useful"
ones). Cluster-based selectors (DiffUse, k-means) pick one item per cluster of a different cut for
each budget; they have neither, and :func:`utilities_of` refuses them with a clear error.

Two wrappers change *how* utilities become picks, for any selector that has them (both are
registered: ``domain_balanced`` and ``document_level``, with ``base=`` the selector they wrap):

- :class:`DomainBalanced`: equal shares per domain (round robin over domains, best remaining item
  of each in turn; a domain that runs out drops out).
- :class:`DocumentLevel`: whole documents; a document's utility is the mean of its segments', its
  cost the sum of theirs; documents are taken in utility order while they fit in the budget.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import DataError, ParameterError, suggest
from ..pool import Pool
from .base import Selector, _no_order_message, selector


def order_by_utility(utilities: np.ndarray) -> np.ndarray:
    """Positions sorted by utility, highest first; NaN last; ties by position.

    >>> order_by_utility(np.array([0.2, np.nan, 0.9, 0.2])).tolist()
    [2, 0, 3, 1]
    """
    u = np.asarray(utilities, dtype=float)
    key = np.where(np.isnan(u), np.inf, -u)
    return np.argsort(key, kind="stable")


def auto_metric(pool: Pool, metric: str | None, who: str) -> str:
    """``metric`` if given (checked), else the pool's only automatic metric, else a clear error."""
    if metric is not None:
        return pool.check_metric(metric)
    auto = [m for m in pool.metrics if m not in pool.human_metrics]
    if len(auto) == 1:
        return auto[0]
    raise ParameterError(
        f"{who} needs a metric (metric=... or --metric); pool {pool.name!r} has "
        + (f"automatic metrics: {', '.join(auto)}" if auto else "no automatic metric (compute one, e.g. chrF against references)")
    )


def utilities_of(sel: Selector) -> np.ndarray:
    """Per-item utility of a fitted selector, in pool order (see the module doc).

    A utility selector's own ``utilities_``; for another nested selector the rank utility (first
    pick n, last 1); a cluster-based selector raises :class:`ParameterError` explaining why.

    >>> from evalsift.io import make_demo_pool
    >>> from evalsift.select import make_selector
    >>> u = utilities_of(make_selector("random", seed=2).fit(make_demo_pool(n_items=4)))
    >>> sorted(u.tolist())                 # a permutation's ranks: 4 for the first pick ... 1 for the last
    [1.0, 2.0, 3.0, 4.0]
    """
    sel._check_fitted()
    if hasattr(sel, "utilities_"):
        return np.asarray(sel.utilities_, dtype=float)
    if not sel.nested:
        raise ParameterError(_no_order_message(sel), field="selector")
    order = sel.ranking()
    n = sel.pool_.n_items
    util = np.full(n, np.nan)
    util[order] = n - np.arange(len(order))
    return util


class UtilitySelector(Selector):
    """Base of the selectors that rank items by a per-item utility (``utilities_`` after ``fit``)."""

    nested = True

    def _fit(self, pool: Pool) -> None:
        u = np.asarray(self._utilities(pool), dtype=float)
        if u.shape != (pool.n_items,):
            raise ParameterError(f"{self._label()} produced utilities of shape {u.shape}, expected ({pool.n_items},)")
        self.utilities_ = u
        self.order_ = order_by_utility(u)

    def _utilities(self, pool: Pool) -> np.ndarray:  # pragma: no cover - abstract
        raise NotImplementedError

    def _select(self, budget: int):
        items = self.order_[:budget]
        return items, self.utilities_[items]


class _Wrapper(Selector):
    """A selector that re-orders the picks of another (``base``, fitted with it).

    ``base`` is a Selector or a registered name (then ``params`` build it). The base must define an
    order of all items (a utility selector, or random): cluster-based selectors are refused at
    construction.
    """

    def __init__(self, base: Selector | str = "random", *, field: str, seed: int = 0, **params: Any) -> None:
        from .base import make_selector

        if not isinstance(base, (Selector, str)):
            raise ParameterError(f"{type(self).__name__}: base must be a Selector or a selector name, got "
                                 f"{type(base).__name__}", field="base")
        self.base = make_selector(base, seed=seed, **params) if isinstance(base, str) else base
        if not self.base.nested:
            raise ParameterError(_no_order_message(self.base), field="base")
        self.field = field
        self.seed = seed
        self.pairwise = self.base.pairwise

    @property
    def randomised(self) -> bool:
        """Whether the wrapped selector's picks depend on its seed."""
        return bool(self.base.randomised)

    def _fit(self, pool: Pool) -> None:
        if self.field not in pool.metadata:
            raise DataError(f"{type(self).__name__}: pool {pool.name!r} has no metadata field {self.field!r}."
                            f"{suggest(self.field, pool.metadata)} Fields: {', '.join(sorted(pool.metadata)) or '(none)'}",
                            field=self.field)
        self.base_utilities_ = utilities_of(self.base.fit(pool))
        self.groups_ = [str(g) for g in pool.metadata[self.field]]


@selector("domain_balanced", help="wrapper: equal shares per domain (field=domain) of another selector's order")
class DomainBalanced(_Wrapper):
    """Equal shares per value of ``field`` (default ``domain``): round robin, best first in each.

    >>> from evalsift.io import make_demo_pool
    >>> s = DomainBalanced("random", field="domain").fit(make_demo_pool(n_items=30))
    >>> len(s.select(9).items)
    9
    """

    nested = True

    def __init__(self, base: Selector | str = "random", *, field: str = "domain", seed: int = 0, **params: Any) -> None:
        super().__init__(base, field=field, seed=seed, **params)

    def _select(self, budget: int):
        queues = {}
        for i in order_by_utility(self.base_utilities_):
            queues.setdefault(self.groups_[i], []).append(int(i))
        picks: list[int] = []
        depth = 0
        while len(picks) < budget:
            layer = [q[depth] for q in queues.values() if depth < len(q)]
            if not layer:
                break
            layer.sort(key=lambda i: order_rank(self.base_utilities_, i))
            picks.extend(layer[: budget - len(picks)])
            depth += 1
        items = np.asarray(picks, dtype=int)
        return items, self.base_utilities_[items]


def order_rank(utilities: np.ndarray, i: int) -> tuple[float, int]:
    """Sort key: higher utility first, NaN last, then position."""
    u = utilities[i]
    return (np.inf if np.isnan(u) else -u, i)


@selector("document_level", help="wrapper: whole documents (field=doc) in order of mean segment utility")
class DocumentLevel(_Wrapper):
    """Whole documents (``field``, default ``doc``) in order of mean segment utility.

    The budget counts items (segments): documents are taken in utility order, and a document that
    would take the total over the budget is skipped for the next one that fits, so a selection can
    come out slightly under budget but never over it, and never splits a document.
    """

    exact_budget = False  # never over the budget, sometimes under (documents are not split)
    why_no_order = "picks whole documents that fit the budget, so its picks for different budgets are not prefixes of one order"

    def __init__(self, base: Selector | str = "random", *, field: str = "doc", seed: int = 0, **params: Any) -> None:
        super().__init__(base, field=field, seed=seed, **params)

    def document_utilities(self) -> dict[str, float]:
        """Mean segment utility per document."""
        sums: dict[str, list[float]] = {}
        for g, u in zip(self.groups_, self.base_utilities_):
            sums.setdefault(g, []).append(u)
        return {g: float(np.nanmean(v)) if not np.isnan(v).all() else float("nan") for g, v in sums.items()}

    def _select(self, budget: int):
        docs = self.document_utilities()
        members: dict[str, list[int]] = {}
        for i, g in enumerate(self.groups_):
            members.setdefault(g, []).append(i)
        names = list(docs)
        order = order_by_utility(np.array([docs[g] for g in names]))
        picks: list[int] = []
        for k in order:
            seg = members[names[k]]
            if len(picks) + len(seg) <= budget:
                picks.extend(seg)
        items = np.asarray(picks, dtype=int)
        return items, self.base_utilities_[items]
