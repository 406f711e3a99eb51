"""The Pool: items x systems, immutable, with outputs, score matrices and per-item columns.

A Pool is what every reader returns and every selector, oracle and session consumes::

    >>> import numpy as np
    >>> p = Pool(item_ids=["i0", "i1"], inputs=["x0", "x1"], systems=["A", "B"],
    ...          outputs={"A": ["a0", "a1"], "B": ["b0", None]},
    ...          scores={"human": np.array([[1.0, 0.0], [0.5, np.nan]])}, human_metrics=["human"])
    >>> p.n_items, p.n_systems, p.complete("human").item_ids
    (2, 2, ('i0',))

Conventions: ``scores[metric]`` is a float array of shape ``(n_items, n_systems)`` with NaN where a
system has no score for an item; ``outputs[system][i]`` is the text or ``None`` where missing;
``metadata[field][i]`` holds per-item values such as ``domain``, ``doc`` or ``cost`` (the per-item
*columns*, see :meth:`Pool.with_columns` and :meth:`Pool.column`). ``inputs`` is a tuple of texts
(``None`` where missing), or for non-text data a read-only numpy array of shape ``(n_items, ...)`` or
a tuple of arbitrary objects (:attr:`Pool.inputs_are_text` tells which). Views (:meth:`~Pool.subset`,
:meth:`~Pool.pair`, :meth:`~Pool.complete`, :meth:`~Pool.resample`, ...) return new Pools and never
change this one. They skip re-validation, share every read-only part they do not change, take the
score rows with numpy and gather tuple columns (outputs, references, metadata) lazily, on first read,
with one C-level ``itemgetter`` call each -- so a subset costs little more than the numpy take of its
score rows, and a view that never reads outputs never pays for gathering them. (Until a column of a
view is read, the view keeps the source column alive.)

**Deeply read-only.** ``outputs``, ``scores``, ``references`` and ``metadata`` are read-only mappings
(:class:`types.MappingProxyType`); each column is a tuple (Python values) or a numpy array with
``writeable=False`` (numbers; ``setflags(write=True)`` on it raises). Dicts and lists nested in
column values (e.g. the ``_record`` dicts of the subset2evaluate reader) are frozen recursively into
:class:`ReadOnlyDict` / :class:`ReadOnlyList`, which compare equal to (and are instances of) ``dict``
/ ``list`` but refuse every change. Arbitrary other objects (an image object, say) are kept as they
are. Every array and sequence given to the constructor is copied, so a Pool never aliases its
caller's data. For a mutable copy use ``dict(pool.outputs)``, ``list(pool.outputs["A"])``,
``np.array(pool.scores["human"])`` (``np.array`` copies), ``dict(record)`` / ``list(value)``.
(Deliberate workarounds -- ``object.__setattr__``, ``dict.__setitem__`` on a read-only dict, the
flags of an array's ``.base`` -- are not prevented; they are not supported either.)::

    >>> p.outputs["A"] = ["z0", "z1"]
    Traceback (most recent call last):
    ...
    TypeError: 'mappingproxy' object does not support item assignment
    >>> m = np.array(p.scores["human"]); m[0, 0] = 0.0   # a writeable copy
    >>> float(p.scores["human"][0, 0])
    1.0

The package splits it by job (issue 46): :mod:`~evalsift.pool.core` (the :class:`Pool`, its views and
pickling), :mod:`~evalsift.pool.frozen` (the read-only values: :func:`freeze`, :class:`ReadOnlyDict`,
:class:`ReadOnlyList`), :mod:`~evalsift.pool.columns` (the lazily gathered columns of views) and
:mod:`~evalsift.pool.checks` (validation of what a Pool is given). Every name is importable from
``evalsift.pool`` as before, private ones included.
"""

from __future__ import annotations

from .checks import _BadValue, _column, _inputs_column, _is_number, _length_error, _meta_column, _score_matrix
from .columns import _Columns, _Gather, _Pending
from .core import SOURCE_ITEM, Pool, _describe, _restore
from .frozen import _ATOMIC, ReadOnlyDict, ReadOnlyList, _frozen_tuple, _lock, _refuse, freeze

__all__ = ["Pool", "ReadOnlyDict", "ReadOnlyList", "freeze"]
