"""The lazily gathered columns of :class:`~evalsift.pool.Pool` views: :class:`_Gather` (the same rows of many
columns, with C-level gathers), :class:`_Pending` (a column not gathered yet) and :class:`_Columns` (the mapping
behind ``Pool.outputs`` / ``references`` / ``metadata``). See :mod:`evalsift.pool` on why views are cheap."""

from __future__ import annotations

from collections.abc import Mapping as _MappingABC
from operator import itemgetter
from typing import Any, Callable, Iterable, Mapping

import numpy as np

from .frozen import _lock

# ---------------------------------------------------------------------------------- gathering rows
class _Gather:
    """Take the same rows of many columns with C-level gathers (itemgetter, numpy take)."""

    __slots__ = ("rows", "_get")

    def __init__(self, rows: np.ndarray) -> None:
        self.rows = rows
        pos = rows.tolist()
        if len(pos) == 0:
            self._get: Callable[[Any], tuple] = lambda col: ()
        elif len(pos) == 1:
            p = pos[0]
            self._get = lambda col: (col[p],)
        else:
            self._get = itemgetter(*pos)

    def __call__(self, col: Any) -> Any:
        if isinstance(col, np.ndarray):
            return _lock(col.take(self.rows, axis=0))
        return self._get(col)


class _Pending:
    """A column not gathered yet: rows ``rows`` of the (materialised) column ``src``."""

    __slots__ = ("src", "rows")

    def __init__(self, src: tuple, rows: np.ndarray) -> None:
        self.src, self.rows = src, rows


class _Columns(dict):
    """The mapping behind ``Pool.outputs`` / ``references`` / ``metadata`` (users only ever see it
    through a :class:`types.MappingProxyType`, so it cannot be changed from outside).

    Materialised columns live in the dict itself, so ``pool.outputs[s]`` runs at dict speed. A view
    (subset, resample) does not gather its tuple columns at once: each is a :class:`_Pending` (the
    source column and the rows) until first read, then gathered with one C-level itemgetter call
    and kept. Gathering Python objects touches every object (reference counts), which for many long
    texts costs far more than the numpy take of the score rows; done lazily, views that only read
    scores never pay it. Numpy columns are taken at once (cheap). Iteration, ``len``, ``in``,
    ``keys/items/values``, ``==`` and ``repr`` all go through the key order in ``_keys``.
    """

    __slots__ = ("_keys", "_pending", "_gathers")

    @classmethod
    def _new(cls, entries: Mapping[str, Any]) -> "_Columns":
        self = dict.__new__(cls)
        pending = {k: v for k, v in entries.items() if type(v) is _Pending}
        dict.update(self, ((k, v) for k, v in entries.items() if type(v) is not _Pending))
        self._keys = tuple(entries)
        self._pending = pending
        self._gathers: dict[int, _Gather] = {}
        return self

    def __missing__(self, key: Any) -> Any:
        p = self._pending.get(key)
        if p is None:
            if dict.__contains__(self, key):  # materialised by another thread meanwhile
                return dict.__getitem__(self, key)
            raise KeyError(key)
        take = self._gathers.get(id(p.rows))
        if take is None or take.rows is not p.rows:
            take = self._gathers[id(p.rows)] = _Gather(p.rows)
        col = take(p.src)
        dict.__setitem__(self, key, col)
        self._pending.pop(key, None)
        if not self._pending:
            self._gathers.clear()
        return col

    # views over the entries (materialised columns or _Pending), for deriving new mappings
    def _entries(self) -> dict[str, Any]:
        out = {}
        for k in self._keys:
            v = self._pending.get(k)
            out[k] = v if v is not None else dict.__getitem__(self, k)
        return out

    def gathered(self, take: "_Gather") -> "_Columns":
        """The same columns at rows ``take.rows`` (tuple columns pending, arrays taken now)."""
        composed: dict[int, np.ndarray] = {}
        entries: dict[str, Any] = {}
        for k, v in self._entries().items():
            if type(v) is _Pending:
                r = composed.get(id(v.rows))
                if r is None:
                    r = composed[id(v.rows)] = v.rows.take(take.rows)
                entries[k] = _Pending(v.src, r)
            elif isinstance(v, np.ndarray):
                entries[k] = take(v)
            else:
                entries[k] = _Pending(v, take.rows)
        return _Columns._new(entries)

    def selected(self, keys: Iterable[str]) -> "_Columns":
        entries = self._entries()
        return _Columns._new({k: entries[k] for k in keys})

    def replaced(self, updates: Mapping[str, Any]) -> "_Columns":
        entries = self._entries()
        entries.update(updates)
        return _Columns._new(entries)

    def _ordered(self) -> dict[str, Any]:
        return {k: self[k] for k in self._keys}

    # the read-only Mapping protocol, in key order
    def __iter__(self) -> Any:
        return iter(self._keys)

    def __reversed__(self) -> Any:
        return reversed(self._keys)

    def __len__(self) -> int:
        return len(self._keys)

    def __contains__(self, key: Any) -> bool:
        return key in self._pending or dict.__contains__(self, key)

    def get(self, key: Any, default: Any = None) -> Any:
        try:
            return self[key]
        except KeyError:
            return default

    def keys(self) -> Any:
        return dict.fromkeys(self._keys).keys()

    def values(self) -> Any:
        return self._ordered().values()

    def items(self) -> Any:
        return self._ordered().items()

    def copy(self) -> dict[str, Any]:
        return self._ordered()

    def __eq__(self, other: Any) -> Any:
        if isinstance(other, _MappingABC):
            return self._ordered() == dict(other.items())
        return NotImplemented

    def __ne__(self, other: Any) -> Any:
        eq = self.__eq__(other)
        return eq if eq is NotImplemented else not eq

    __hash__ = None  # type: ignore[assignment]

    def __or__(self, other: Any) -> Any:
        return self._ordered() | dict(other) if isinstance(other, _MappingABC) else NotImplemented

    def __ror__(self, other: Any) -> Any:
        return dict(other) | self._ordered() if isinstance(other, _MappingABC) else NotImplemented

    def __repr__(self) -> str:
        return repr(self._ordered())

    def __reduce__(self) -> tuple:
        return (_Columns._new, (self._ordered(),))
