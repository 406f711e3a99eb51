"""The :class:`Pool` itself: construction (validated once), the views (:meth:`~Pool.subset`,
:meth:`~Pool.resample`, :meth:`~Pool.pair`, :meth:`~Pool.complete`, ...), per-item columns, coverage and
:meth:`~Pool.info`, and pickling (:func:`_restore`). See :mod:`evalsift.pool` for the conventions."""

from __future__ import annotations

from types import MappingProxyType
from typing import Any, Iterable, Mapping, Sequence

import numpy as np

from ..errors import DataError, suggest
from .checks import _column, _inputs_column, _length_error, _score_matrix
from .columns import _Columns, _Gather
from .frozen import _frozen_tuple, _lock

SOURCE_ITEM = "source_item"
"""The column :meth:`Pool.resample` adds: the original item id of every row."""


def _describe(col: Any) -> str:
    if isinstance(col, np.ndarray):
        return f"{col.dtype} array of shape {col.shape}"
    return "tuple"


def _restore(state: dict[str, Any]) -> "Pool":
    """Rebuild a pickled (or deep-copied) Pool; arrays come back writeable and are locked again."""
    relock = lambda c: _lock(c) if isinstance(c, np.ndarray) else c  # noqa: E731
    return Pool._make(
        item_ids=state["item_ids"], inputs=relock(state["inputs"]), systems=state["systems"],
        outputs=state["outputs"], scores={m: _lock(a) for m, a in state["scores"].items()},
        human_metrics=frozenset(state["human_metrics"]), references=state["references"],
        metadata={f: relock(c) for f, c in state["metadata"].items()}, name=state["name"],
    )


# ---------------------------------------------------------------------------------- the Pool
class Pool:
    """Items x systems with outputs, scores and per-item columns. Deeply immutable; views are cheap.

    Parameters are validated once here, and every error names the offending field, system or
    metric. Inputs are copied, so the caller's lists and arrays are never changed or aliased.

    ``inputs``: texts (``None`` where missing; a 1-D numpy string array is taken as texts too), a
    numpy array of shape ``(n_items, ...)`` of any dtype (token ids, images), or a sequence of
    arbitrary objects; omitted, every input is ``""``. ``metadata``: per-item columns; a numpy array
    (other than dtype object) is kept as a read-only array of its dtype, anything else becomes a
    tuple (see :meth:`with_columns` for the rule).
    """

    __slots__ = ("item_ids", "inputs", "systems", "outputs", "scores", "human_metrics",
                 "references", "metadata", "name", "_sys_index", "_text", "_outs", "_refs", "_meta", "_idset")

    def __init__(
        self,
        *,
        item_ids: Sequence[Any],
        inputs: Sequence[Any] | np.ndarray | None = None,
        systems: Sequence[str],
        outputs: Mapping[str, Sequence[str | None]] | None = None,
        scores: Mapping[str, Any] | None = None,
        human_metrics: Iterable[str] = (),
        references: Mapping[str, Sequence[str | None]] | None = None,
        metadata: Mapping[str, Sequence[Any]] | None = None,
        name: str = "",
    ) -> None:
        item_ids = tuple(str(i) for i in item_ids)
        n = len(item_ids)
        id_set = frozenset(item_ids)
        if len(id_set) != n:
            seen: set[str] = set()
            dup = next(i for i in item_ids if i in seen or seen.add(i))  # type: ignore[func-returns-value]
            raise DataError(f"Pool {name!r}: item_id {dup!r} appears more than once; item ids must be unique.",
                            field="item_ids", item_id=dup)
        systems = tuple(str(s) for s in systems)
        if len(set(systems)) != len(systems):
            raise DataError(f"Pool {name!r}: system names must be unique, got {list(systems)}.", field="systems")
        inputs_ = _inputs_column(inputs, n, name)
        outs: dict[str, tuple[Any, ...]] = {}
        for s, col in (outputs or {}).items():
            if s not in systems:
                raise DataError(f"Pool {name!r}: outputs given for system {s!r}, which is not in systems "
                                f"{list(systems)}.{suggest(str(s), systems)}", field="outputs", system=str(s))
            col = _frozen_tuple(col)
            if len(col) != n:
                raise DataError(f"Pool {name!r}: outputs of system {s!r} have {len(col)} entries but there are "
                                f"{n} items.", field="outputs", system=s)
            outs[s] = col
        missing = (None,) * n
        outs = {s: outs.get(s, missing) for s in systems}
        sc = {str(m): _score_matrix(m, arr, item_ids, systems, name) for m, arr in (scores or {}).items()}
        human = frozenset(str(h) for h in human_metrics)
        unknown = human - set(sc)
        if unknown:
            raise DataError(f"Pool {name!r}: human_metrics {sorted(unknown)} have no score matrix; known metrics: "
                            f"{sorted(sc)}.", field="human_metrics")
        refs: dict[str, tuple[Any, ...]] = {}
        for r, col in (references or {}).items():
            col = _frozen_tuple(col)
            if len(col) != n:
                raise DataError(f"Pool {name!r}: reference {r!r} has {len(col)} entries but there are {n} items.",
                                field=str(r))
            refs[str(r)] = col
        meta: dict[str, Any] = {}
        for f, col in (metadata or {}).items():
            col = _column(col, None, name, str(f))
            if len(col) != n:
                raise DataError(f"Pool {name!r}: metadata field {f!r} has {len(col)} entries but there are {n} "
                                "items.", field=str(f))
            meta[str(f)] = col
        self._init(item_ids, inputs_, systems, outs, sc, human, refs, meta, name, None, None)
        object.__setattr__(self, "_idset", id_set)

    # the private fast path: every part is already valid, read-only and owned by Pools
    def _init(self, item_ids: tuple, inputs: Any, systems: tuple, outputs: Any, scores: Any,
              human: frozenset, references: Any, metadata: Any, name: str,
              sys_index: dict[str, int] | None, text: bool | None) -> None:
        cols = lambda d: d if type(d) is _Columns else _Columns._new(d)  # noqa: E731
        outputs, references, metadata = cols(outputs), cols(references), cols(metadata)
        set_ = object.__setattr__
        set_(self, "item_ids", item_ids)
        set_(self, "inputs", inputs)
        set_(self, "systems", systems)
        set_(self, "_outs", outputs)
        set_(self, "outputs", MappingProxyType(outputs))
        set_(self, "scores", scores if type(scores) is MappingProxyType else MappingProxyType(scores))
        set_(self, "human_metrics", human)
        set_(self, "_refs", references)
        set_(self, "references", MappingProxyType(references))
        set_(self, "_meta", metadata)
        set_(self, "metadata", MappingProxyType(metadata))
        set_(self, "name", name)
        set_(self, "_sys_index", sys_index if sys_index is not None else {s: j for j, s in enumerate(systems)})
        set_(self, "_text", False if isinstance(inputs, np.ndarray) else text)
        set_(self, "_idset", None)

    @classmethod
    def _make(cls, *, item_ids: tuple, inputs: Any, systems: tuple, outputs: Any, scores: Any,
              human_metrics: frozenset, references: Any, metadata: Any, name: str,
              sys_index: dict[str, int] | None = None, text: bool | None = None) -> "Pool":
        """A Pool from parts that are already valid and frozen: no checks, no copies."""
        self = object.__new__(cls)
        self._init(item_ids, inputs, systems, outputs, scores, human_metrics, references, metadata, name,
                   sys_index, text)
        return self

    def __setattr__(self, key: str, value: Any) -> None:
        raise AttributeError("Pool is immutable; use subset(), pair(), with_scores() to derive a new one")

    def __delattr__(self, key: str) -> None:
        raise AttributeError("Pool is immutable; use subset(), pair(), with_scores() to derive a new one")

    # ------------------------------------------------------------------ pickle and copy
    def __reduce__(self) -> tuple:
        """Pickle (and ``copy.deepcopy``) through plain dicts; the copy is read-only again."""
        return (_restore, ({
            "item_ids": self.item_ids, "inputs": self.inputs, "systems": self.systems,
            "outputs": dict(self.outputs), "scores": dict(self.scores), "human_metrics": set(self.human_metrics),
            "references": dict(self.references), "metadata": dict(self.metadata), "name": self.name,
        },))

    def __copy__(self) -> "Pool":
        return self

    # ------------------------------------------------------------------ sizes and lookups
    @property
    def n_items(self) -> int:
        """Number of items."""
        return len(self.item_ids)

    @property
    def n_systems(self) -> int:
        """Number of systems."""
        return len(self.systems)

    @property
    def metrics(self) -> tuple[str, ...]:
        """Metric names, sorted (human ones included)."""
        return tuple(sorted(self.scores))

    @property
    def inputs_are_text(self) -> bool:
        """True when every input is a ``str`` or ``None`` (False for array inputs and other objects).

        Callers that need text (embeddings of the inputs, the annotation-time model) should refuse
        other pools clearly.

        >>> Pool(item_ids=["a"], systems=["S"]).inputs_are_text
        True
        >>> Pool(item_ids=["a", "b"], systems=["S"], inputs=np.zeros((2, 8), dtype=np.int32)).inputs_are_text
        False
        """
        if self._text is None:
            text = set(map(type, self.inputs)) <= {str, type(None)} or all(
                x is None or isinstance(x, str) for x in self.inputs)
            object.__setattr__(self, "_text", text)
        return self._text  # type: ignore[return-value]

    def __len__(self) -> int:
        return self.n_items

    def __repr__(self) -> str:
        return (f"Pool(name={self.name!r}, items={self.n_items}, systems={self.n_systems}, "
                f"metrics={list(self.metrics)})")

    def system_index(self, system: str) -> int:
        """Column of ``system``; an unknown name raises DataError with a suggestion.

        >>> Pool(item_ids=["i"], systems=["A", "B"]).system_index("B")
        1
        """
        try:
            return self._sys_index[system]
        except KeyError:
            raise DataError(
                f"Unknown system {system!r} in pool {self.name!r}.{suggest(system, self.systems)} "
                f"Available systems: {', '.join(self.systems)}", system=str(system)
            ) from None

    def check_metric(self, metric: str) -> str:
        """Return ``metric`` if the pool has it, else raise DataError listing what it has.

        >>> Pool(item_ids=["i"], systems=["A"], scores={"m": [[1.0]]}).check_metric("m")
        'm'
        """
        if metric not in self.scores:
            raise DataError(
                f"Unknown metric {metric!r} in pool {self.name!r}.{suggest(metric, list(self.scores))} "
                f"Available metrics: {', '.join(self.metrics) or '(none)'}", field=str(metric)
            )
        return metric

    def score(self, metric: str, system: str | None = None) -> np.ndarray:
        """The (items x systems) matrix of ``metric``, or one system's column (both read-only).

        >>> p = Pool(item_ids=["i", "j"], systems=["A", "B"], scores={"m": [[1.0, 2.0], [3.0, 4.0]]})
        >>> p.score("m", "B").tolist()
        [2.0, 4.0]
        """
        a = self.scores[self.check_metric(metric)]
        return a if system is None else a[:, self.system_index(system)]

    def is_human(self, metric: str) -> bool:
        """True when ``metric`` holds human judgments.

        >>> Pool(item_ids=["i"], systems=["A"], scores={"h": [[1.0]]}, human_metrics=["h"]).is_human("h")
        True
        """
        return self.check_metric(metric) in self.human_metrics

    # ------------------------------------------------------------------ per-item columns
    def column(self, name: str, dtype: Any = None) -> Any:
        """The per-item column ``name`` (a tuple or a read-only array, as stored in ``metadata``).

        With ``dtype`` (e.g. ``float``), the column converted by the rule of :meth:`with_columns`:
        a read-only array, ``None`` -> NaN for floats; a value that does not convert raises DataError
        naming the item. An unknown name raises DataError suggesting the closest column.

        >>> p = Pool(item_ids=["a", "b"], systems=["S"], metadata={"cost": [1.5, None]})
        >>> p.column("cost"), p.column("cost", float).tolist()
        ((1.5, None), [1.5, nan])
        >>> p.column("cots")
        Traceback (most recent call last):
        ...
        evalsift.errors.DataError: Pool '' has no column 'cots'. Did you mean 'cost'? Columns: cost
        """
        try:
            col = self.metadata[name]
        except KeyError:
            raise DataError(
                f"Pool {self.name!r} has no column {name!r}.{suggest(name, self.metadata)} "
                f"Columns: {', '.join(self.metadata) or '(none)'}", field=str(name)
            ) from None
        if dtype is None:
            return col
        return _column(col, dtype, self, str(name))

    def with_columns(self, columns: Mapping[str, Any] | None = None, /, *, dtype: Any = None,
                     **named: Any) -> "Pool":
        """A Pool with per-item columns added to (or replaced in) ``metadata``; nothing else changes.

        Columns come as a mapping, as keywords, or both: ``with_columns({"len": x}, cost=c)``. (A
        column named ``dtype`` must go in the mapping.) Each needs one value per item, in pool order,
        else DataError names the column with the length got and expected. Columns are subset, paired
        and resampled along with the items. The rule for what is stored:

        - ``dtype=None`` (default): a numpy array keeps its dtype and shape ``(n_items, ...)``
          (copied, read-only); an array of dtype object and every other sequence become a tuple
          (values frozen as by :func:`freeze`) -- numbers stay Python numbers, nothing is guessed.
        - ``dtype=float`` (any numpy dtype): every column becomes a read-only array of that dtype.
          For floats a column may hold only numbers, ``None`` and NaN (``None`` -> NaN); a string
          or other value raises DataError naming the item. Use this for transparency dimensions
          (one float per item, NaN where undefined) and costs.

        >>> p = Pool(item_ids=["a", "b", "c"], systems=["S"])
        >>> q = p.with_columns(length=np.array([3, 5, 8]), lang=["de", "en", None])
        >>> q.column("length").dtype.kind, q.column("lang")
        ('i', ('de', 'en', None))
        >>> q.with_columns({"clarity": [0.5, None, float("nan")]}, dtype=float).column("clarity").tolist()
        [0.5, nan, nan]
        >>> q.subset([2, 0]).column("length").tolist()
        [8, 3]
        """
        cols = dict(columns or {})
        both = sorted(set(map(str, cols)) & set(named))
        if both:
            raise DataError(f"with_columns: column {both[0]!r} is given both in the mapping and as a keyword.",
                            field=both[0])
        cols.update(named)
        meta: dict[str, Any] = {}
        n = self.n_items
        for f, values in cols.items():
            f = str(f)
            if dtype is not None and not isinstance(values, np.ndarray):
                values = tuple(values)
                if len(values) != n:  # the length first: a short column is not a bad value
                    raise _length_error(self.name, f, len(values), n)
            col = _column(values, dtype, self, f)
            if len(col) != n:
                raise _length_error(self.name, f, len(col), n)
            meta[f] = col
        return self._derive(metadata=self._meta.replaced(meta))

    # ------------------------------------------------------------------ views
    def _derive(self, rows: "np.ndarray | _Gather | None" = None, cols: Sequence[int] | None = None, **changes: Any) -> "Pool":
        """A view through the fast path: ``rows`` (valid non-negative positions) and ``cols`` (system
        positions) are gathered; unchanged parts are shared, since they are read-only."""
        if rows is None:
            take = None
            item_ids, inputs, refs, meta = self.item_ids, self.inputs, self._refs, self._meta
            text = self._text
        else:
            take = rows if isinstance(rows, _Gather) else _Gather(np.asarray(rows, dtype=np.intp))
            item_ids, inputs = take(self.item_ids), take(self.inputs)
            refs, meta = self._refs.gathered(take), self._meta.gathered(take)
            text = True if self._text is True else None
        if cols is None:
            systems, sys_index = self.systems, self._sys_index
            outputs: Any = self._outs if take is None else self._outs.gathered(take)
            scores: Any = self.scores if take is None else {m: take(a) for m, a in self.scores.items()}
        else:
            cols = list(cols)
            systems, sys_index = tuple(self.systems[j] for j in cols), None
            outputs = self._outs.selected(systems)
            if take is None:
                scores = {m: _lock(a[:, cols]) for m, a in self.scores.items()}
            else:
                outputs = outputs.gathered(take)
                ix = np.ix_(take.rows, cols)
                scores = {m: _lock(a[ix]) for m, a in self.scores.items()}
        parts: dict[str, Any] = dict(item_ids=item_ids, inputs=inputs, systems=systems, outputs=outputs,
                                     scores=scores, human_metrics=self.human_metrics, references=refs,
                                     metadata=meta, name=self.name, sys_index=sys_index, text=text)
        parts.update(changes)
        view = Pool._make(**parts)
        if rows is None and "item_ids" not in changes:
            object.__setattr__(view, "_idset", self._idset)
        return view

    def _positions(self, idx: Any, where: str) -> np.ndarray:
        """``idx`` (positions or a boolean mask) as valid non-negative positions."""
        idx = np.asarray(idx)
        n = self.n_items
        if idx.dtype == bool:
            if idx.shape != (n,):
                raise DataError(f"{where}: boolean mask has shape {idx.shape}, expected ({n},)", field="idx")
            return np.flatnonzero(idx)
        if idx.ndim != 1:
            raise DataError(f"{where}: item positions must be a 1-D sequence of integers, got shape {idx.shape}",
                            field="idx")
        if idx.size == 0:
            return np.empty(0, dtype=np.intp)
        if idx.dtype.kind not in "iu" and (idx.dtype.kind != "f" or not np.array_equal(idx, np.round(idx))):
            raise DataError(f"{where}: item positions must be integers, got {idx.dtype} values", field="idx")
        rows = idx.astype(np.intp)  # a copy
        lo, hi = rows.min(), rows.max()
        if lo < -n or hi >= n:
            raise DataError(f"{where}: item positions must be in [0, {n}), got {lo}..{hi}", field="idx")
        if lo < 0:
            rows[rows < 0] += n
        return rows

    def subset(self, idx: Sequence[int] | np.ndarray) -> "Pool":
        """A Pool of the items at positions ``idx`` (in that order), or where a boolean mask is True.

        Each position may appear once (item ids stay unique); for repeated positions (bootstrap
        resamples) use :meth:`resample`. Every column, output, reference and score row comes along.

        >>> p = Pool(item_ids=["a", "b", "c"], systems=["S"], scores={"m": [[1.0], [2.0], [3.0]]})
        >>> q = p.subset([2, 0])
        >>> q.item_ids, q.score("m", "S").tolist()
        (('c', 'a'), [3.0, 1.0])
        >>> p.subset([0, 0])
        Traceback (most recent call last):
        ...
        evalsift.errors.DataError: Pool '': subset: item_id 'a' (position 0) appears more than once; item ids must be unique. For a resample with repeated items use pool.resample(idx).
        """
        rows = self._positions(idx, "subset")
        if rows.size > 1:
            seen = np.zeros(self.n_items, dtype=bool)
            seen[rows] = True
            if np.count_nonzero(seen) != rows.size:
                met: set[int] = set()
                p = next(int(r) for r in rows.tolist() if r in met or met.add(r))  # type: ignore[func-returns-value]
                dup = self.item_ids[p]
                raise DataError(
                    f"Pool {self.name!r}: subset: item_id {dup!r} (position {p}) appears more than once; item ids "
                    "must be unique. For a resample with repeated items use pool.resample(idx).",
                    field="idx", item_id=dup, hint="pool.resample(idx)")
        return self._derive(rows=rows)

    def resample(self, idx: Sequence[int] | np.ndarray) -> "Pool":
        """A Pool of the items at positions ``idx``, which may repeat (a bootstrap resample).

        The first copy of an item keeps its id; the 2nd, 3rd, ... copies get ``"<id>#2"``,
        ``"<id>#3"``, ... (should that already be an id of this pool, the number goes up until it is
        not, so a new id never names another item of this pool).
        The column ``source_item`` holds the original id of every row; when the pool already has
        that column (a resample of a resample) it is carried along, so it always names the item of
        the pool that was first resampled. Scores, outputs and every other column are copied row by row.

        >>> p = Pool(item_ids=["a", "b"], systems=["S"], scores={"m": [[1.0], [2.0]]})
        >>> r = p.resample([1, 0, 1, 1])
        >>> r.item_ids, r.column("source_item"), r.score("m", "S").tolist()
        (('b', 'a', 'b#2', 'b#3'), ('b', 'a', 'b', 'b'), [2.0, 1.0, 2.0, 2.0])
        """
        rows = self._positions(idx, "resample")
        take = _Gather(rows)
        picked = take(self.item_ids)
        ids = picked
        k = rows.size
        if k > 1 and np.count_nonzero(np.bincount(rows, minlength=self.n_items)) != k:  # some rows repeat
            order = np.argsort(rows, kind="stable")
            srt = rows[order]
            first = np.r_[True, srt[1:] != srt[:-1]]
            start = np.maximum.accumulate(np.where(first, np.arange(k), 0))
            copy_no = np.empty(k, dtype=np.intp)
            copy_no[order] = np.arange(k) - start + 1  # 1 for the first copy, 2 for the second, ...
            rep = np.flatnonzero(copy_no > 1)
            new = [f"{picked[p]}#{c}" for p, c in zip(rep.tolist(), copy_no[rep].tolist())]
            # "<id>#<c>" are distinct among themselves (c has no '#'); they must not be ids of this pool
            known = self._id_set()
            if not known.isdisjoint(new):
                taken, new = set(known), []
                for p, c in zip(rep.tolist(), copy_no[rep].tolist()):
                    cand = f"{picked[p]}#{c}"
                    while cand in taken:
                        c += 1
                        cand = f"{picked[p]}#{c}"
                    taken.add(cand)
                    new.append(cand)
            ids_ = list(picked)
            for p, cand in zip(rep.tolist(), new):
                ids_[p] = cand
            ids = tuple(ids_)
        meta = self._meta.gathered(take)
        if SOURCE_ITEM not in meta:
            meta = meta.replaced({SOURCE_ITEM: picked})
        return self._derive(rows=take, item_ids=ids, metadata=meta)

    def _id_set(self) -> frozenset:
        if self._idset is None:
            object.__setattr__(self, "_idset", frozenset(self.item_ids))
        return self._idset  # type: ignore[return-value]

    def bootstrap(self, seed: int | np.random.Generator | None = 0) -> "Pool":
        """A bootstrap resample: ``n_items`` positions drawn with replacement by
        ``numpy.random.default_rng(seed)``, then :meth:`resample` (ids ``"<id>#<k>"`` for repeated
        copies, column ``source_item``). The same seed gives the same resample.

        >>> p = Pool(item_ids=[f"i{k}" for k in range(5)], systems=["S"])
        >>> b = p.bootstrap(seed=1)
        >>> b.n_items, b.item_ids == p.bootstrap(seed=1).item_ids, set(b.column("source_item")) <= set(p.item_ids)
        (5, True, True)
        """
        n = self.n_items
        rows = np.random.default_rng(seed).integers(0, n, size=n) if n else np.empty(0, dtype=np.intp)
        return self.resample(rows)

    def with_systems(self, systems: Sequence[str]) -> "Pool":
        """A Pool restricted to ``systems`` (in that order).

        >>> Pool(item_ids=["i"], systems=["A", "B", "C"]).with_systems(["C", "A"]).systems
        ('C', 'A')
        """
        systems = [str(s) for s in systems]
        if len(set(systems)) != len(systems):
            raise DataError(f"Pool {self.name!r}: system names must be unique, got {systems}.", field="systems")
        return self._derive(cols=[self.system_index(s) for s in systems])

    def pair(self, a: str, b: str) -> "Pool":
        """A two-system Pool (``a`` first, then ``b``).

        >>> Pool(item_ids=["i"], systems=["A", "B", "C"]).pair("C", "A").systems
        ('C', 'A')
        """
        if a == b:
            raise DataError(f"pair: the two systems must differ, got {a!r} twice.", system=str(a))
        return self.with_systems([a, b])

    def complete(self, metric: str) -> "Pool":
        """Items where every system has a score for ``metric``.

        >>> p = Pool(item_ids=["a", "b"], systems=["S", "T"], scores={"m": [[1.0, 2.0], [3.0, float("nan")]]})
        >>> p.complete("m").item_ids
        ('a',)
        """
        ok = ~np.isnan(self.score(metric)).any(axis=1)
        return self._derive(rows=np.flatnonzero(ok))

    def with_scores(self, metric: str, values: Any, *, human: bool = False) -> "Pool":
        """A new Pool with one more (or a replaced) score matrix of shape ``(n_items, n_systems)``.

        >>> p = Pool(item_ids=["a"], systems=["S", "T"])
        >>> q = p.with_scores("h", [[1.0, 0.0]], human=True)
        >>> q.metrics, q.is_human("h")
        (('h',), True)
        """
        metric = str(metric)
        scores = dict(self.scores)
        scores[metric] = _score_matrix(metric, values, self.item_ids, self.systems, self.name)
        hm = set(self.human_metrics) - {metric}
        if human:
            hm.add(metric)
        return self._derive(scores=scores, human_metrics=frozenset(hm))

    def with_name(self, name: str) -> "Pool":
        """The same Pool under another name (everything else is shared, not copied).

        >>> Pool(item_ids=["a"], systems=["S"]).with_name("toy").name
        'toy'
        """
        return self._derive(name=name)

    # ------------------------------------------------------------------ summaries
    def coverage(self) -> dict[str, Any]:
        """Per system the fraction of items with an output; per metric the fraction of cells scored
        and the number of items scored for every system.

        >>> Pool(item_ids=["a", "b"], systems=["S"], outputs={"S": ["x", None]}).coverage()["outputs"]
        {'S': 0.5}
        """
        n = self.n_items
        out_cov = {s: (n - self.outputs[s].count(None)) / max(n, 1) for s in self.systems}
        met = {}
        for m in self.metrics:
            a = self.scores[m]
            scored = ~np.isnan(a)
            met[m] = {
                "human": m in self.human_metrics,
                "cells": float(np.mean(scored)) if a.size else 0.0,
                "complete_items": int(scored.all(axis=1).sum()),
            }
        return {"outputs": out_cov, "metrics": met}

    def inputs_info(self) -> dict[str, Any]:
        """What the inputs are: ``{"kind": "text"}``, ``{"kind": "array", "shape": [...], "dtype": ...}``
        or ``{"kind": "objects", "types": [type names]}``.

        >>> Pool(item_ids=["a", "b"], systems=["S"], inputs=np.zeros((2, 3, 4), np.uint8)).inputs_info()
        {'kind': 'array', 'shape': [2, 3, 4], 'dtype': 'uint8'}
        """
        if isinstance(self.inputs, np.ndarray):
            return {"kind": "array", "shape": list(self.inputs.shape), "dtype": str(self.inputs.dtype)}
        if self.inputs_are_text:
            return {"kind": "text"}
        return {"kind": "objects", "types": sorted({type(x).__name__ for x in self.inputs})}

    def info(self) -> dict[str, Any]:
        """A JSON-ready summary: name, sizes, systems, metrics (human flagged), references, metadata
        fields (with ``columns``: how each is stored), what the inputs are, coverage.

        >>> i = Pool(item_ids=["a"], systems=["S"], metadata={"d": ["x"]}).info()
        >>> i["n_items"], i["inputs"], i["metadata"], i["columns"]
        (1, {'kind': 'text'}, ['d'], {'d': 'tuple'})
        """
        cov = self.coverage()
        return {
            "name": self.name,
            "n_items": self.n_items,
            "n_systems": self.n_systems,
            "systems": list(self.systems),
            "metrics": cov["metrics"],
            "human_metrics": sorted(self.human_metrics),
            "references": sorted(self.references),
            "metadata": sorted(self.metadata),
            "columns": {f: _describe(self.metadata[f]) for f in sorted(self.metadata)},
            "inputs": self.inputs_info(),
            "output_coverage": cov["outputs"],
        }
