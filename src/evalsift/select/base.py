"""Selector base class, the Selection result and the selector registry.

Selectors follow scikit-learn's estimator contract:

- the constructor stores keyword-only parameters and validates them (nothing else);
- ``get_params(deep=True)`` returns them (a selector built on another -- a wrapper -- adds the inner
  selector's as ``base__<name>``), ``set_params(**params)`` changes them with exactly the
  constructor's validation and forgets any fitted state, and :func:`clone` builds an unfitted copy;
- ``fit(pool)`` does the expensive work once (embeddings, linkage, IRT) and returns ``self`` with
  fitted state in attributes ending in ``_``; a ``fit`` that raises leaves the selector unfitted;
- ``select(budget)`` is cheap and can be called for many budgets; before a successful ``fit`` it
  raises :class:`~evalsift.errors.NotFittedError`.

Two class attributes say what a selector's picks mean, and the steps that need more than a pick
list (cost-aware selection, domain balance, document level) check them:

- ``nested``: ``select(k)`` is the first k items of ``select(k + 1)``, so the selector defines one
  order of all items (random, every utility selector);
- per-item ``utilities_`` after ``fit`` (every :class:`~evalsift.select.utility.UtilitySelector`):
  a score per item, higher = judge sooner.

Cluster-based selectors (DiffUse, k-means) are neither: each budget picks one item per cluster of a
different cut. Their Selections carry ``cluster_sizes`` (how many pool items each pick stands
for) instead of utilities.

Register a selector (or a preset of one) with ``@selector("name")``; build one by name with
:func:`make_selector`.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass, field
from typing import Any, Callable, ClassVar

import numpy as np

from ..errors import DataError, NotFittedError, ParameterError, suggest
from ..pool import Pool
from ..registry import Registry

selectors: Registry[Callable[..., "Selector"]] = Registry("selector")


def selector(name: str, help: str = "") -> Callable:
    """Register a Selector class or a factory returning one under ``name``.

    A class registered this way carries the name (``RandomSelector().name == "random"``), so an
    instance built without :func:`make_selector` still reports, and can be rebuilt from, its name.
    """
    register = selectors.register(name, help)

    def deco(obj):
        if isinstance(obj, type) and issubclass(obj, Selector) and not obj.__dict__.get("name"):
            obj.name = name
        return register(obj)

    return deco


def make_selector(name: str, **params: Any) -> "Selector":
    """Build the selector registered as ``name`` with ``params``.

    >>> make_selector("random", seed=3).get_params()["seed"]
    3
    """
    sel = selectors.get(name)(**params)
    sel.name = name
    return sel


def build_selector(name: str, seed: int = 0, shared: dict[str, Any] | None = None, **params: Any) -> "Selector":
    """Like :func:`make_selector`, plus ``shared`` settings applied only where the selector has them.

    Handy when one command line serves many methods: ``shared={"metric": "chrF", "encoder": "tfidf"}``
    reaches ``metric_var`` (metric) and ``diffuse`` (encoder) alike. A selector built from others
    (a ``params`` dict for its parts: combinator, artificial_crowd, distilled) gets the shared
    settings it has no parameter for in ``params``, without overriding what ``params`` already says.

    >>> build_selector("random", shared={"metric": "chrF"}).get_params()
    {'seed': 0}
    """
    sel = make_selector(name, seed=seed, **params)
    known = sel.get_params(deep=True)
    given = {k: v for k, v in (shared or {}).items() if v is not None}
    own = {k: v for k, v in given.items() if k in known}
    own.update({f"base__{k}": v for k, v in given.items() if k not in known and f"base__{k}" in known})  # wrappers
    if isinstance(known.get("params"), dict):  # a selector built from others (combinator, crowd, distilled)
        own["params"] = {**{k: v for k, v in given.items() if k not in known}, **known["params"]}
    return sel.set_params(**own) if own else sel


@dataclass(frozen=True)
class Selection:
    """Items to judge, in pick order, with how they were chosen.

    ``items`` are positions in the fitted pool; ``item_ids`` the matching ids. ``utilities`` (per-item
    utilities, for selectors that have them) and ``cluster_sizes`` (for cluster-based selectors: how
    many pool items each pick represents) align with ``items``; each is None when the selector has no
    such thing. ``method``, ``params`` and ``seed`` are enough to re-run it.
    """

    items: np.ndarray
    item_ids: tuple[str, ...]
    method: str
    params: dict[str, Any]
    seed: int
    budget: int
    utilities: np.ndarray | None = None
    cluster_sizes: np.ndarray | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.items)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {
            "method": self.method,
            "params": self.params,
            "seed": self.seed,
            "budget": self.budget,
            "items": [int(i) for i in self.items],
            "item_ids": list(self.item_ids),
            "utilities": None if self.utilities is None else [float(u) for u in self.utilities],
            "cluster_sizes": None if self.cluster_sizes is None else [int(c) for c in self.cluster_sizes],
            **({"extra": self.extra} if self.extra else {}),
        }


def _jsonable(value: Any) -> Any:
    """Parameters as they go into a Selection: JSON values as they are, objects by their name."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    return getattr(value, "name", None) or repr(value)


class Selector:
    """Base class: parameters, fitted state, budget checks, Selections (see the module doc).

    Subclasses define ``__init__`` with keyword-only parameters (always including ``seed``) that
    only stores and validates them, implement ``_fit(pool)`` (set fitted attributes ending in ``_``)
    and ``_select(budget) -> (items, utilities or None)``; cluster-based selectors return
    ``(items, None, cluster_sizes)``.
    """

    name: str = ""
    pairwise: ClassVar[bool] = False  # needs a two-system pool
    nested: ClassVar[bool] = False  # select(k) is a prefix of select(k + 1)
    why_no_order: ClassVar[str] = "picks one item per cluster of a different cut for each budget"
    exact_budget: ClassVar[bool] = True  # select(k) returns exactly min(k, n_items) items
    random_order: ClassVar[bool] = False  # select(k) is the first k of a uniformly random order of the pool
    randomised: ClassVar[bool] = False  # the picks depend on the seed (the bench repeats it over seeds)

    # -- parameters -----------------------------------------------------------------------------
    @classmethod
    def _param_names(cls) -> list[str]:
        names = cls.__dict__.get("_param_names_")
        if names is None:  # once per class: inspect.signature costs more than a whole select of some selectors
            sig = inspect.signature(cls.__init__)
            names = [p.name for p in sig.parameters.values()
                     if p.name != "self" and p.kind not in (p.VAR_KEYWORD, p.VAR_POSITIONAL)]
            setattr(cls, "_param_names_", names)
        return list(names)

    def get_params(self, deep: bool = True) -> dict[str, Any]:
        """The constructor parameters and their current values.

        With ``deep=True`` a parameter that is itself a Selector (a wrapper's ``base``) also
        contributes its own parameters as ``<name>__<param>``.

        >>> from evalsift.select import make_selector
        >>> make_selector("domain_balanced", base="metric_var").get_params()["base__metric"] is None
        True
        """
        out = {p: getattr(self, p) for p in self._param_names()}
        if deep:
            for p, v in list(out.items()):
                if isinstance(v, Selector):
                    out.update({f"{p}__{k}": w for k, w in v.get_params(deep=True).items()})
        return out

    def set_params(self, **params: Any) -> "Selector":
        """Change constructor parameters with the constructor's own validation; returns ``self``.

        ``base__metric=...`` reaches the ``metric`` of a wrapped selector. Unknown names are a
        :class:`ParameterError` that lists the known ones. Fitted state is dropped: call ``fit``
        again before ``select``.

        >>> from evalsift.select import make_selector
        >>> make_selector("diffuse").set_params(clustering="wrd")
        Traceback (most recent call last):
        ...
        evalsift.errors.ParameterError: selector 'diffuse': clustering='wrd' is not one of: ward, cosine, kmeans, bisect. Did you mean 'ward'?
        """
        own = self.get_params(deep=False)
        nested: dict[str, dict[str, Any]] = {}
        for k, v in params.items():
            outer, sep, inner = k.partition("__")
            if sep and isinstance(own.get(outer), Selector):
                nested.setdefault(outer, {})[inner] = v
            elif k not in own:
                known = list(self.get_params(deep=True))
                raise ParameterError(f"{self._label()} has no parameter {k!r}.{suggest(k, known)} "
                                     f"It has: {', '.join(known)}", field=k)
        merged = {**own, **{k: v for k, v in params.items() if k in own}}
        for outer, inner in nested.items():
            merged[outer] = clone(merged[outer]).set_params(**inner)
        name = self.name
        self._reset()
        type(self).__init__(self, **merged)  # the constructor validates exactly as it did at construction
        self.name = name
        return self

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.get_params(deep=False).items())
        return f"{type(self).__name__}({args})"

    def _choice(self, param: str, value: Any, options: tuple[str, ...]) -> Any:
        from ..errors import check_choice

        return check_choice(param, value, options, where=self._label())

    # -- fit / select -------------------------------------------------------------------------
    @property
    def is_fitted(self) -> bool:
        """True after a successful ``fit``."""
        return "pool_" in self.__dict__

    def _reset(self) -> None:
        """Forget fitted state (every instance attribute ending in ``_``)."""
        for k in [k for k in self.__dict__ if k.endswith("_") and not k.startswith("__")]:
            del self.__dict__[k]

    def fit(self, pool: Pool) -> "Selector":
        """Do the expensive work once for ``pool``; returns ``self``.

        If it raises, the selector is left unfitted (``select`` then raises NotFittedError).
        """
        self._reset()
        if pool.n_items == 0:
            raise ParameterError(f"{self._label()}: the pool {pool.name!r} has no items")
        if self.pairwise and pool.n_systems != 2:
            raise ParameterError(
                f"{self._label()} compares two systems; the pool has {pool.n_systems} "
                f"({', '.join(pool.systems[:6])}{'...' if pool.n_systems > 6 else ''}). Use pool.pair(a, b)."
            )
        try:
            self._fit(pool)
        except BaseException:
            self._reset()
            raise
        self.pool_ = pool
        return self

    def _check_fitted(self) -> None:
        if not self.is_fitted:
            raise NotFittedError(f"{self._label()}: call fit(pool) before select(budget)")

    def _budget(self, budget: int) -> int:
        """``budget`` checked (a positive whole number) and capped at the pool's size."""
        self._check_fitted()
        if isinstance(budget, bool) or not isinstance(budget, (int, np.integer, float)) or int(budget) != budget \
                or budget < 1:
            raise ParameterError(f"{self._label()}: budget must be a positive integer, got {budget!r}", field="budget")
        return int(min(budget, self.pool_.n_items))

    def picks(self, budget: int) -> np.ndarray:
        """``select(budget).items`` alone, without building the :class:`Selection` (for a harness that
        asks one fit for many budgets and needs only the positions).

        >>> from evalsift.io import make_demo_pool
        >>> from evalsift.select import RandomSelector
        >>> s = RandomSelector(seed=1).fit(make_demo_pool(n_items=20))
        >>> s.picks(5).tolist() == s.select(5).items.tolist()
        True
        """
        return np.asarray(self._select(self._budget(budget))[0], dtype=int)

    def select(self, budget: int) -> Selection:
        """The ``budget`` items to judge, most useful first. A budget above the pool size takes all."""
        budget = self._budget(budget)
        out = self._select(budget)
        items, util = out[0], out[1]
        sizes = out[2] if len(out) > 2 else None
        items = np.asarray(items, dtype=int)
        return Selection(
            items=items,
            item_ids=tuple(self.pool_.item_ids[i] for i in items),
            method=self.name or type(self).__name__,
            params={k: _jsonable(v) for k, v in self.get_params(deep=False).items() if k != "seed"},
            seed=int(getattr(self, "seed", 0)),
            budget=budget,
            utilities=None if util is None else np.asarray(util, dtype=float),
            cluster_sizes=None if sizes is None else np.asarray(sizes, dtype=int),
        )

    def ranking(self) -> np.ndarray:
        """Every item of the fitted pool, in this selector's order (nested selectors only).

        Raises :class:`ParameterError` for a selector whose picks for different budgets are not
        prefixes of one order (cluster-based selectors).
        """
        self._check_fitted()
        if not self.nested:
            raise ParameterError(_no_order_message(self), field="selector")
        return self.select(self.pool_.n_items).items

    def _label(self) -> str:
        return f"selector '{self.name or type(self).__name__}'"

    def _fit(self, pool: Pool) -> None:  # pragma: no cover - abstract
        raise NotImplementedError

    def _select(self, budget: int) -> tuple:  # pragma: no cover
        raise NotImplementedError


def _no_order_message(sel: Selector) -> str:
    return (f"{sel._label()} {sel.why_no_order}, so it has no per-item utility and no order of all items; "
            "cost-aware selection (--cost-budget), --balance and --documents need one. Use it with --budget/--proportion, or choose a utility selector (metric_var, "
            "diversity, irt, ...) or random.")


def input_texts(pool: Pool, who: str, fix: str = "") -> list[str]:
    """The pool's inputs as texts, for selectors that embed them; a clear error when there are none.

    Inputs that are not text (token arrays, images) or that are all missing or empty raise
    :class:`~evalsift.errors.DataError` naming ``who`` and, when given, the ``fix``.
    """
    inputs = list(pool.inputs)
    if not all(t is None or isinstance(t, str) for t in inputs):
        kind = type(next(t for t in inputs if not (t is None or isinstance(t, str)))).__name__
        raise DataError(f"{who} embeds the item inputs as text, but pool {pool.name!r} has {kind} inputs."
                        + (f" {fix}." if fix else ""), field="input")
    if not any(inputs):
        raise DataError(f"{who} embeds the item inputs, and pool {pool.name!r} has none (every input is empty)."
                        + (f" {fix}." if fix else ""), field="input")
    return [t or "" for t in inputs]


def _copy_param(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _copy_param(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set)):
        return type(value)(_copy_param(v) for v in value)
    return value


def clone(selector: Selector) -> Selector:
    """An unfitted copy of ``selector`` with the same parameters (deep: a wrapped selector is cloned too).

    Plain containers (dict, list, tuple, set) among the parameters are copied; other objects -- a
    training Pool (immutable), an encoder holding a loaded model -- are shared, not copied.

    >>> from evalsift.select import make_selector
    >>> s = make_selector("random", seed=4)
    >>> c = clone(s)
    >>> c is not s, c.get_params() == s.get_params(), c.name
    (True, True, 'random')
    """
    if not isinstance(selector, Selector):
        raise ParameterError(f"clone: expected a Selector, got {type(selector).__name__}")
    params = {k: clone(v) if isinstance(v, Selector) else _copy_param(v)
              for k, v in selector.get_params(deep=False).items()}
    new = type(selector)(**params)
    new.name = selector.name
    return new
