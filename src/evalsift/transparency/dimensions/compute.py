"""Several dimensions at once, from given inputs or from a Pool's fields: :func:`compute_dimensions`."""

from __future__ import annotations

import inspect
import warnings
from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np

from ...errors import DataError, ParameterError
from .registry import DEPRECATED_NAMES, dimensions
from .scores import fit_responses


POOL_FIELDS: dict[str, tuple[str | tuple[str, ...], ...]] = {
    "texts": ("texts", ("premise", "hypothesis")),
    "counts": ("counts", "label_count"),
    "gold": ("gold",),
    "gold_probs": ("gold_probs", "gold_prob"),
    "answers": ("answers",),
    "spans": ("spans",),
}
"""Dimension input -> the pool fields it is read from, in order: a per-item column (``pool.metadata``)
of that name, or a score matrix (``pool.scores``, items x systems) of that name; a tuple of names
zips those per-item columns into one tuple per item (a premise-hypothesis pair)."""
_ONE_OF = ("counts", "labels", "ratings", "answers", "observed")  # noise / learned_noise take exactly one of these


def _find(pool: Any, key: str) -> tuple[Any, str] | None:
    """The pool's value for the dimension input ``key`` (see :data:`POOL_FIELDS`) and where it was found
    (``"metadata"`` or ``"scores"``), or None."""
    for f in POOL_FIELDS.get(key, ()):
        if isinstance(f, tuple):
            if all(c in pool.metadata for c in f):
                return list(zip(*(pool.metadata[c] for c in f))), "metadata"
        elif f in pool.metadata:
            col = pool.metadata[f]
            return (np.asarray(col) if isinstance(col, np.ndarray) else list(col)), "metadata"
        elif f in pool.scores:
            return np.asarray(pool.scores[f]), "scores"
    return None


def pool_input_source(pool: Any, key: str) -> str | None:
    """Where ``pool`` provides the dimension input ``key``: ``"metadata"`` (a per-item column),
    ``"scores"`` (a score matrix, items x the pool's systems -- e.g. the evaluated runs' own gold-label
    probabilities) or None (not provided).

    >>> from evalsift.pool import Pool
    >>> p = Pool(item_ids=[0, 1], systems=["A"], scores={"m": [[1.0], [0.0]]}, metadata={"gold": ["e", "c"]})
    >>> pool_input_source(p, "gold"), pool_input_source(p, "counts")
    ('metadata', None)
    """
    found = _find(pool, key)
    return None if found is None else found[1]


def _pool_inputs(pool: Any, declared: set[str], given: Mapping[str, Any]) -> dict[str, Any]:
    """The inputs of :data:`POOL_FIELDS` that ``pool`` provides, for the ``declared`` ones not ``given``."""
    out: dict[str, Any] = {}
    for key in POOL_FIELDS:
        if key not in declared or key in given:
            continue
        if key in _ONE_OF and any(k in given or k in out for k in _ONE_OF):
            continue
        found = _find(pool, key)
        if found is not None:
            out[key] = found[0]
    return out


def compute_dimensions(names: Iterable[str], *, pool: Any = None, metric: str | None = None,
                       **inputs: Any) -> dict[str, np.ndarray]:
    """Compute the dimensions ``names`` from ``inputs``; one array per name, all of the same length.

    Each dimension takes the keyword inputs it declares (``texts``, ``records``/``field``,
    ``counts``/``labels``/``ratings``, ``scores``, ``responses``, ``seed``, ...); inputs a dimension
    does not declare are ignored. Both IRT dimensions share one 2PL fit.

    With ``pool`` (an :class:`evalsift.pool.Pool`), an input that is not given and that some requested
    dimension declares is taken from the pool, first match wins (see :data:`POOL_FIELDS`):

    - the data inputs ``texts``, ``counts``, ``gold``, ``gold_probs`` and (extractive QA, formats in
      :mod:`.qa`) ``answers`` and ``spans`` from the pool's per-item
      column (``pool.metadata``) of that name, else of an alias -- ``counts`` from ``label_count``,
      ``gold_probs`` from ``gold_prob``, ``texts`` from the ``premise`` and ``hypothesis`` columns
      zipped into pairs -- else from a score matrix (items x systems) of that name or alias
      (``gold_probs`` = ``pool.scores["gold_prob"]``: one run per column). Only one of the
      alternatives ``counts``/``labels``/``ratings``/``observed`` is filled, and none if one is given;
    - otherwise ``texts=pool.inputs`` (text pools), ``scores=pool.scores[metric]`` and
      ``responses=pool.scores[metric].T``.

    So a ChaosNLI pool (:func:`evalsift.io.chaosnli.read_chaosnli`) provides the pairs, the 100 crowd
    labels per item, the gold labels and the runs' gold-label probabilities: ``length``,
    ``ngram_perplexity``, ``noise``, ``learned_noise``, ``difficulty`` (PVI) and ``ambiguity`` need no
    other input. ``random`` (the baseline) gets ``n_items`` from the pool (or ``len(texts)``).
    A deprecated name (:data:`~.registry.DEPRECATED_NAMES`) works with a ``FutureWarning``.

    >>> Y = np.array([[1, 0, 1], [1, 0, 0], [1, 1, 0]], dtype=float)   # systems x items
    >>> d = compute_dimensions(["score_difficulty", "discriminability"], scores=Y.T, responses=Y)
    >>> d["score_difficulty"].round(4).tolist(), d["discriminability"].shape   # 1 - 3/3, 1 - 1/3, 1 - 1/3
    ([0.0, 0.6667, 0.6667], (3,))
    """
    names = list(names)
    if not names:
        raise ParameterError("compute_dimensions: names is empty; give at least one of "
                             f"{', '.join(dimensions)}.", field="names")
    fns = {n: dimensions.get(n) for n in names}
    for n in names:
        if n in DEPRECATED_NAMES:
            warnings.warn(DEPRECATED_NAMES[n], FutureWarning, stacklevel=2)
    if "random" in names and "n_items" not in inputs:  # the baseline needs only the number of items
        if pool is not None:
            inputs["n_items"] = pool.n_items
        elif inputs.get("texts") is not None:
            inputs["n_items"] = len(inputs["texts"])
    if pool is not None:
        declared = {k for fn in fns.values() for k in inspect.signature(fn).parameters}
        inputs.update(_pool_inputs(pool, declared, inputs))
        if metric is not None:
            if metric not in pool.scores:
                raise DataError(f"compute_dimensions: pool has no metric {metric!r}; it has {list(pool.metrics)}.",
                                field="metric")
            inputs.setdefault("scores", np.asarray(pool.scores[metric]))
            inputs.setdefault("responses", np.asarray(pool.scores[metric]).T)
        if pool.inputs_are_text:
            inputs.setdefault("texts", list(pool.inputs))
    if {"irt_difficulty", "discriminability"} & set(names) and "fit" not in inputs and "responses" in inputs:
        inputs["fit"] = fit_responses(inputs["responses"], seed=int(inputs.get("seed", 0)))
    out: dict[str, np.ndarray] = {}
    for n, fn in fns.items():
        params = inspect.signature(fn).parameters
        out[n] = np.asarray(fn(**{k: v for k, v in inputs.items() if k in params}), dtype=float)
    sizes = {n: len(v) for n, v in out.items()}
    if len(set(sizes.values())) > 1:
        raise DataError(f"compute_dimensions: the dimensions have different numbers of items: {sizes}; give "
                        "every input for the same items in the same order.", field=max(sizes, key=sizes.get))
    if pool is not None and next(iter(sizes.values())) != pool.n_items:
        raise DataError(f"compute_dimensions: {sizes} items but the pool has {pool.n_items}.", field=names[0])
    return out


__all__ = ["POOL_FIELDS", "compute_dimensions", "pool_input_source"]
