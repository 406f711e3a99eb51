"""Combine several utility selectors into one utility.

Zouhar et al. (TACL 2025, App. Table 8) multiply 0-1-normalised utilities of several metrics and
methods (``normalize="minmax", aggregate="product"``); the rank and z-score scales and the weighted
mean are ours.
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

import numpy as np

from ..errors import ParameterError
from ..pool import Pool
from .base import make_selector, selector
from .utility import UtilitySelector

NORMALIZERS = ("rank", "zscore", "minmax")
AGGREGATES = ("mean", "product")


def normalize_utilities(u: np.ndarray, how: str) -> np.ndarray:
    """Put utilities on a common scale; NaN (no information) becomes the lowest value.

    ``rank``: average rank / n, in (0, 1]; ``zscore``: (u - mean) / std; ``minmax``: into [0, 1].

    >>> normalize_utilities(np.array([3.0, 1.0, 2.0]), "rank").tolist()
    [1.0, 0.3333333333333333, 0.6666666666666666]
    """
    u = np.asarray(u, dtype=float)
    lowest = np.nanmin(u) if np.isfinite(u).any() else 0.0
    u = np.where(np.isnan(u), lowest, u)
    if how == "rank":
        from scipy.stats import rankdata  # here, not at import: scipy.stats takes about 0.6 s to import

        return rankdata(u) / len(u)
    if how == "zscore":
        sd = u.std()
        return (u - u.mean()) / sd if sd > 0 else np.zeros_like(u)
    span = u.max() - u.min()
    return (u - u.min()) / span if span > 0 else np.zeros_like(u)


def _part_spec(entry: Any) -> tuple[str, dict[str, Any]]:
    """A ``methods`` entry as (selector name, its own parameters)."""
    if isinstance(entry, str):
        return entry, {}
    if isinstance(entry, Mapping) and isinstance(entry.get("method"), str):
        return entry["method"], {k: v for k, v in entry.items() if k != "method"}
    if (isinstance(entry, (tuple, list)) and len(entry) == 2 and isinstance(entry[0], str)
            and isinstance(entry[1], Mapping)):
        return entry[0], dict(entry[1])
    raise ParameterError(f"combinator: each of methods must be a selector name, (name, {{parameters}}) or "
                         f"{{'method': name, **parameters}}; got {entry!r}", field="methods")


@selector("combinator", help="several utilities normalised (rank, z-score, 0-1) and averaged or multiplied")
class Combinator(UtilitySelector):
    """Utility = weighted mean (or product) of normalised utilities of ``methods``.

    Each entry of ``methods`` is a selector name, or ``(name, {parameters})`` (also
    ``{"method": name, **parameters}``) for a part with parameters of its own, so one selector can
    appear twice with different metrics. Parameters shared by the parts (``metric``, ``encoder``,
    ...) go in ``params`` and reach each part that has them; a part's own parameters win. The
    product needs non-negative scales (``rank`` or ``minmax``).

    >>> from evalsift.io import make_demo_pool
    >>> c = Combinator(methods=("metric_var", "metric_avg"), params={"metric": "token_f1"})
    >>> len(c.fit(make_demo_pool(n_items=20)).select(5).items)
    5
    >>> mx = Combinator(methods=[("metric_var", {"metric": "MetricX-23-refA"}),   # App. Table 8's M+X
    ...                          ("metric_var", {"metric": "XCOMET-XL-refA"})], normalize="minmax",
    ...                 aggregate="product")
    >>> [name for name, _ in mx.parts()]
    ['metric_var', 'metric_var']
    """

    def __init__(self, *, methods: Sequence[str] = ("metric_var", "diversity"), normalize: str = "rank",
                 aggregate: str = "mean", weights: Sequence[float] | None = None,
                 params: dict[str, Any] | None = None, seed: int = 0) -> None:
        self.methods = tuple(m if isinstance(m, str) else _freeze(m) for m in methods)
        for m in self.methods:
            _part_spec(m)  # fail at construction on a malformed entry
        self.normalize = self._choice("normalize", normalize, NORMALIZERS)
        self.aggregate = self._choice("aggregate", aggregate, AGGREGATES)
        if not self.methods:
            raise ParameterError("combinator needs at least one method")
        if weights is not None and len(weights) != len(self.methods):
            raise ParameterError(f"weights has {len(weights)} values for {len(self.methods)} methods")
        if aggregate == "product" and normalize == "zscore":
            raise ParameterError("aggregate='product' needs non-negative utilities: use normalize='rank' or 'minmax'")
        self.weights = None if weights is None else tuple(float(w) for w in weights)
        self.params = dict(params or {})
        self.seed = seed

    def parts(self) -> list[tuple[str, dict[str, Any]]]:
        """``(selector name, its own parameters)`` of each part, in order."""
        return [_part_spec(m) for m in self.methods]

    def _part(self, name: str, own: dict[str, Any]) -> UtilitySelector:
        sel = make_selector(name, seed=self.seed)
        if not isinstance(sel, UtilitySelector):
            raise ParameterError(f"combinator: {name!r} has no per-item utilities; combine utility selectors only")
        known = sel.get_params()
        unknown = sorted(set(own) - set(known))
        if unknown:
            raise ParameterError(f"combinator: {name!r} has no parameter {', '.join(map(repr, unknown))}; its "
                                 f"parameters: {', '.join(sorted(known))}", field="methods")
        shared = {k: v for k, v in self.params.items() if k in known}
        return sel.set_params(**{**shared, **own})

    def _utilities(self, pool: Pool) -> np.ndarray:
        parts = np.stack([normalize_utilities(self._part(name, own).fit(pool).utilities_, self.normalize)
                          for name, own in self.parts()])
        w = np.ones(len(self.methods)) if self.weights is None else np.asarray(self.weights)
        if self.aggregate == "mean":
            return (w[:, None] * parts).sum(axis=0) / w.sum()
        return np.prod(parts ** w[:, None], axis=0)


def _freeze(entry: Any) -> Any:
    """A (name, parameters) entry as a tuple holding a plain dict (a dict entry stays a dict)."""
    if isinstance(entry, (tuple, list)) and len(entry) == 2 and isinstance(entry[1], Mapping):
        return (entry[0], dict(entry[1]))
    return dict(entry) if isinstance(entry, Mapping) else entry
