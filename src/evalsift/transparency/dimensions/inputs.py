"""Checks of the inputs dimensions share: numeric matrices, non-empty inputs, one value per item,
and items as tuples of texts (a plain text, or a premise-hypothesis pair)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ...errors import DataError, ParameterError


def _float_matrix(values: Any, field: str) -> np.ndarray:
    try:
        arr = np.asarray(values, dtype=float)
    except (TypeError, ValueError):
        raise DataError(f"{field}: expected a 2-D array of numbers (items x columns); it has values that are "
                        "not numbers or rows of different lengths. Pad ragged rows with NaN.", field=field) from None
    if arr.ndim != 2:
        raise DataError(f"{field}: expected a 2-D array (items x columns), got shape {arr.shape}.", field=field)
    if arr.shape[0] == 0:
        raise DataError(f"{field}: no items (empty array).", field=field)
    return arr


def _nonempty(values: Sequence[Any] | None, field: str) -> Sequence[Any]:
    if values is None:
        raise ParameterError(f"dimension needs {field}=..., which was not given.", field=field)
    if len(values) == 0:
        raise DataError(f"{field}: no items (empty).", field=field)
    return values


def _is_missing(v: Any) -> bool:
    return v is None or (isinstance(v, float) and np.isnan(v))


def _item_parts(item: Any, i: int, field: str = "texts") -> tuple[str, ...] | None:
    """An item as a tuple of its texts (one for a plain text, two or more for a pair); None if missing."""
    if item is None:
        return None
    if isinstance(item, str):
        return (item,)
    if isinstance(item, (tuple, list)) and item and all(isinstance(t, str) for t in item):
        return tuple(item)
    if isinstance(item, (tuple, list)) and any(t is None for t in item):
        return None
    raise DataError(f"{field}: item {i} is a {type(item).__name__}; expected a string, a tuple of strings "
                    "(premise, hypothesis) or None.", field=field, item_id=i)


def _check_len(values: Sequence[Any] | np.ndarray, n: int, field: str, other: str) -> None:
    if len(values) != n:
        raise DataError(f"{field}: {len(values)} items but {other} has {n}; give one per item, in the same order.",
                        field=field)


__all__ = []
