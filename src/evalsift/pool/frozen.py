"""Read-only values for the :class:`~evalsift.pool.Pool`: :class:`ReadOnlyDict`, :class:`ReadOnlyList` and
:func:`freeze` (a value made deeply read-only), and the locking of numpy arrays (``writeable=False`` down to the
base). See :mod:`evalsift.pool` ("Deeply read-only")."""

from __future__ import annotations

from collections.abc import Mapping as _MappingABC
from typing import Any, Iterable

import numpy as np

# ---------------------------------------------------------------------------------- read-only values
def _refuse(self: Any, *args: Any, **kwargs: Any) -> None:
    kind = "dict" if isinstance(self, dict) else "list"
    raise TypeError(f"{type(self).__name__} is read-only (it belongs to a Pool); "
                    f"{kind}(value) gives a mutable copy")


class ReadOnlyDict(dict):
    """A dict that refuses every change; its values are frozen recursively (see :func:`freeze`).

    It is a ``dict`` (``isinstance`` checks, ``json.dumps`` and ``==`` work as for the original), so
    code written for plain records keeps working. ``dict(d)`` gives a mutable (shallow) copy.

    >>> d = ReadOnlyDict({"src": "x", "ref": ["a", "b"]})
    >>> d == {"src": "x", "ref": ["a", "b"]}, type(d["ref"]).__name__
    (True, 'ReadOnlyList')
    >>> d["src"] = "y"
    Traceback (most recent call last):
    ...
    TypeError: ReadOnlyDict is read-only (it belongs to a Pool); dict(value) gives a mutable copy
    """

    __slots__ = ()

    def __new__(cls, *args: Any, **kwargs: Any) -> "ReadOnlyDict":
        src = args[0] if len(args) == 1 and not kwargs and type(args[0]) is dict else dict(*args, **kwargs)
        self = dict.__new__(cls)
        if set(map(type, src.values())) <= _ATOMIC:  # the common case: nothing to freeze inside
            dict.update(self, src)
        else:
            dict.update(self, {k: freeze(v) for k, v in src.items()})
        return self

    def __init__(self, *args: Any, **kwargs: Any) -> None:  # filled in __new__; re-init is a no-op
        pass

    __setitem__ = __delitem__ = clear = pop = popitem = setdefault = update = __ior__ = _refuse  # type: ignore[assignment]

    def __reduce__(self) -> tuple:
        return (ReadOnlyDict, (dict(self),))

    def __copy__(self) -> "ReadOnlyDict":
        return self

    def __repr__(self) -> str:
        return dict.__repr__(self)


class ReadOnlyList(list):
    """A list that refuses every change; its items are frozen recursively (see :func:`freeze`).

    It is a ``list`` (``==`` with a list, ``isinstance`` and ``json.dumps`` work as for the original).
    ``list(value)`` gives a mutable (shallow) copy.

    >>> v = ReadOnlyList(["a", "b"])
    >>> v == ["a", "b"], v + ["c"]
    (True, ['a', 'b', 'c'])
    >>> v.append("c")
    Traceback (most recent call last):
    ...
    TypeError: ReadOnlyList is read-only (it belongs to a Pool); list(value) gives a mutable copy
    """

    __slots__ = ()

    def __new__(cls, iterable: Iterable[Any] = ()) -> "ReadOnlyList":
        self = list.__new__(cls)
        items = iterable if type(iterable) in (list, tuple) else list(iterable)
        list.extend(self, items if set(map(type, items)) <= _ATOMIC else map(freeze, items))
        return self

    def __init__(self, iterable: Iterable[Any] = ()) -> None:  # filled in __new__; re-init is a no-op
        pass

    __setitem__ = __delitem__ = append = extend = insert = pop = remove = clear = sort = reverse = _refuse  # type: ignore[assignment]
    __iadd__ = __imul__ = _refuse  # type: ignore[assignment]

    def __reduce__(self) -> tuple:
        return (ReadOnlyList, (list(self),))

    def __copy__(self) -> "ReadOnlyList":
        return self

    def __repr__(self) -> str:
        return list.__repr__(self)


_ATOMIC = frozenset({str, int, float, bool, complex, bytes, type(None), np.str_, np.bytes_, np.float64,
                     np.float32, np.int64, np.int32, np.bool_, ReadOnlyDict, ReadOnlyList})


def _lock(a: np.ndarray) -> np.ndarray:
    """A read-only view of ``a``, which the caller owns and nobody else references.

    The base is made read-only too, so ``view.setflags(write=True)`` raises (an array that does not
    own its memory, e.g. some fancy-indexing results, is copied first so that no writeable owner
    stays behind).
    """
    if a.base is not None:
        a = a.copy()
    a.setflags(write=False)
    return a.view()


def freeze(value: Any) -> Any:
    """A read-only version of ``value``, recursively: Mapping -> :class:`ReadOnlyDict`, list ->
    :class:`ReadOnlyList`, tuple -> tuple of frozen values, set -> frozenset, bytearray -> bytes,
    numpy array -> read-only copy. Strings, numbers, None and other objects are returned as they are.

    >>> freeze({"a": [1, {"b": 2}]})["a"][1]["b"]
    2
    >>> type(freeze([1, 2])).__name__, freeze((1, [2]))
    ('ReadOnlyList', (1, [2]))
    """
    t = type(value)
    if t in _ATOMIC:
        return value
    if t is dict:
        return ReadOnlyDict(value)
    if t is list:
        return ReadOnlyList(value)
    if isinstance(value, np.ndarray):
        return _lock(np.array(value, copy=True))
    if isinstance(value, np.generic):
        return value
    if isinstance(value, _MappingABC):
        return ReadOnlyDict(value)
    if isinstance(value, list):
        return ReadOnlyList(value)
    if isinstance(value, tuple):
        items = [freeze(v) for v in value]
        return t._make(items) if hasattr(t, "_make") else tuple(items)  # namedtuples keep their type
    if isinstance(value, (set, frozenset)):
        return frozenset(value)
    if isinstance(value, bytearray):
        return bytes(value)
    return value


def _frozen_tuple(values: Iterable[Any]) -> tuple:
    """``values`` as a tuple of frozen values (a copy; cheap when they are all str/numbers/None)."""
    col = tuple(values)
    if set(map(type, col)) <= _ATOMIC:
        return col
    return tuple(map(freeze, col))
