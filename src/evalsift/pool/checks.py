"""Validation of what a :class:`~evalsift.pool.Pool` is given: per-item columns (:func:`_meta_column`, by the
rule of :meth:`Pool.with_columns`), inputs and score matrices, each failure a :class:`~evalsift.errors.DataError`
naming the column, item, system or metric."""

from __future__ import annotations

import numbers
from typing import Any, Iterable

import numpy as np

from ..errors import DataError
from .frozen import _frozen_tuple, _lock

# ---------------------------------------------------------------------------------- validation helpers
class _BadValue(Exception):
    def __init__(self, pos: int, value: Any, wanted: str) -> None:
        super().__init__(pos, value, wanted)
        self.pos, self.value, self.wanted = pos, value, wanted


def _column(values: Any, dtype: Any, pool: "Pool | str", field: str) -> Any:
    """:func:`_meta_column` with its failures as DataError naming the column (and the item)."""
    name = pool if isinstance(pool, str) else pool.name
    try:
        return _meta_column(values, dtype)
    except _BadValue as e:
        if e.pos < 0:
            raise DataError(f"Pool {name!r}: column {field!r} must be a sequence with one value per item, "
                            f"got {e.value!r}.", field=field) from None
        iid = pool.item_ids[e.pos] if not isinstance(pool, str) and e.pos < pool.n_items else None
        at = f"item {iid!r}" if iid is not None else f"position {e.pos}"
        raise DataError(f"Pool {name!r}: column {field!r}: {at} has {e.value!r} ({type(e.value).__name__}), "
                        f"which is not {e.wanted}.", field=field, item_id=iid) from None


def _length_error(name: str, field: str, got: int, n: int) -> DataError:
    return DataError(f"Pool {name!r}: column {field!r} has {got} values but there are {n} items; give one value "
                     "per item, in pool order.", field=field)


def _is_number(v: Any) -> bool:
    return v is None or (isinstance(v, (numbers.Real, np.bool_)) and not isinstance(v, (str, bytes)))


def _meta_column(values: Any, dtype: Any) -> Any:
    """A per-item column by the rule of :meth:`Pool.with_columns` (length not checked here).

    Raises :class:`_BadValue` when a value does not convert to ``dtype``.
    """
    if dtype is None:
        if isinstance(values, np.ndarray):
            if values.ndim == 0:
                raise _BadValue(-1, values, "a sequence with one value per item")
            if values.dtype != object:
                return _lock(np.array(values, copy=True))
        elif isinstance(values, (str, bytes)) or not isinstance(values, Iterable):
            raise _BadValue(-1, values, "a sequence with one value per item")
        return _frozen_tuple(values)
    dt = np.dtype(dtype)
    if isinstance(values, np.ndarray) and values.dtype != object:
        try:
            return _lock(values.astype(dt))  # astype copies
        except (TypeError, ValueError):
            values = values.tolist()
    values = list(values)
    if dt.kind in "fc":
        for i, v in enumerate(values):
            if not _is_number(v):
                raise _BadValue(i, v, f"a number, None or NaN (dtype={dt})")
        return _lock(np.array([np.nan if v is None else v for v in values], dtype=dt))
    try:
        return _lock(np.array(values, dtype=dt))
    except (TypeError, ValueError, OverflowError):
        for i, v in enumerate(values):
            try:
                np.array([v], dtype=dt)
            except (TypeError, ValueError, OverflowError):
                raise _BadValue(i, v, f"convertible to {dt}") from None
        raise


def _inputs_column(inputs: Any, n: int, name: str) -> Any:
    if inputs is None:
        return ("",) * n
    if isinstance(inputs, np.ndarray):
        if inputs.ndim == 0:
            raise DataError(f"Pool {name!r}: 'inputs' must have one entry per item, got a 0-d array.", field="inputs")
        if inputs.ndim == 1 and inputs.dtype.kind == "U":
            col: Any = tuple(inputs.tolist())  # texts
        else:
            col = _lock(np.array(inputs, copy=True))
    else:
        col = _frozen_tuple(inputs)
    if len(col) != n:
        raise DataError(f"Pool {name!r}: 'inputs' has {len(col)} entries but there are {n} items.", field="inputs")
    return col


def _score_matrix(metric: Any, arr: Any, item_ids: tuple[str, ...], systems: tuple[str, ...], name: str) -> np.ndarray:
    """A read-only float copy of one metric's scores: shape (items, systems), NaN where missing, never infinite."""
    n, n_systems = len(item_ids), len(systems)
    try:
        a = np.array(arr, dtype=float, copy=True)
    except (TypeError, ValueError) as e:
        raise DataError(f"Pool {name!r}: scores[{metric!r}] is not numeric ({e}); use NaN where a system has no "
                        "score for an item.", field=str(metric)) from None
    if a.shape != (n, n_systems):
        raise DataError(
            f"Pool {name!r}: scores[{metric!r}] has shape {a.shape}, expected (n_items, n_systems) = "
            f"({n}, {n_systems}). Put NaN where a system has no score for an item.", field=str(metric)
        )
    bad = np.argwhere(np.isinf(a))
    if len(bad):
        i, k = (int(x) for x in bad[0])
        raise DataError(f"Pool {name!r}: scores[{metric!r}] of item {item_ids[i]!r}, system {systems[k]!r} is "
                        f"{a[i, k]} ({len(bad)} infinite score(s) in all); scores must be finite numbers (leave a cell "
                        "empty, or NaN, where there is no score)", field=str(metric), item_id=item_ids[i],
                        system=systems[k])
    return _lock(a)
