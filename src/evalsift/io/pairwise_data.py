"""Recorded pairwise judgments as data: :class:`PairwiseData` (what every judgment reader returns), the
verdict codes (:func:`parse_verdict`, :func:`alpaca_verdict`) and the builder the readers fill
(:class:`_Builder`, with its cell helpers :func:`_text`, :func:`_choice`, :func:`_set_once`).

Nothing here reads a file: the table reader (:mod:`evalsift.io.pairwise_table`), the judge-file readers
(:mod:`evalsift.io.judge_files`) and the recorded datasets (:mod:`evalsift.io.pairwise_recorded`) build on it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from ..errors import DataError, ParameterError, suggest
from ._common import warn_data
from ..oracle.base import Judgment
from ..pool import Pool
from ..restrict import PAIR_SYSTEMS

VERDICT_CODES = {"a": "a", "b": "b", "tie": "tie", "1": "a", "2": "b", "0": "tie"}
KINDS = ("human", "llm", "metric")
ORDERS = ("ab", "ba")


class _LazyType:
    """The mark of a :class:`PairwiseData` field not built yet (built from its :class:`JudgmentColumns` on first read)."""

    def __repr__(self) -> str:
        return "<lazy>"

    def __reduce__(self) -> str:  # pickling and copying keep the one instance
        return "_LAZY"


_LAZY = _LazyType()


class _LazyField:
    """A :class:`PairwiseData` field (``pool``, ``judgments``) that may be built on first read from the
    data's ``columns`` (a :class:`JudgmentColumns`): the fast readers fill the columns only, so a command that
    needs arrays (``arena``) never pays for 180,000 Judgment objects or a Pool it does not read."""

    def __set_name__(self, owner: type, name: str) -> None:
        self.name, self.slot = name, "_" + name

    def __get__(self, obj: Any, owner: type | None = None) -> Any:
        if obj is None:  # dataclasses: no default value
            raise AttributeError(self.name)
        d = obj.__dict__
        value = d[self.slot]
        if value is _LAZY:
            value = d["columns"].built(self.name)
            d[self.slot] = value
        return value

    def __set__(self, obj: Any, value: Any) -> None:
        obj.__dict__[self.slot] = value


@dataclass(frozen=True)
class PairwiseData:
    """A Pool (the items and systems judged) and the recorded judgments, in recorded order.

    ``source`` names where they came from (a path or a dataset name). ``judgments_of(a, b)`` gives
    one pair's judgments; ``pairs()`` the pairs judged.

    ``columns``: the same judgments as a :class:`JudgmentColumns` when a fast reader read them (None
    otherwise); ``pool`` and ``judgments`` are then built from it on first read, the same objects the
    row-by-row reader builds. A copy with another ``pool`` or ``judgments`` (``dataclasses.replace``) drops the
    columns, so they never disagree with the judgments.

    >>> from evalsift.oracle import Judgment
    >>> j = Judgment(item_id="1", a="X", b="Y", verdict="a", annotator="ann", kind="human")
    >>> data = PairwiseData(Pool(item_ids=["1"], systems=["X", "Y"]), (j,), "inline")
    >>> data.pairs(), len(data.judgments_of("Y", "X"))
    ([('X', 'Y')], 1)
    """

    pool: Pool = _LazyField()  # type: ignore[assignment]
    judgments: tuple[Judgment, ...] = _LazyField()  # type: ignore[assignment]
    source: str
    columns: Any = field(default=None, compare=False, repr=False)

    def __post_init__(self) -> None:
        cols = self.columns
        if cols is None:
            return
        for name in ("pool", "judgments"):
            value = self.__dict__["_" + name]
            if value is not _LAZY and value is not cols.built(name, build=False):
                object.__setattr__(self, "columns", None)  # given other judgments or another pool: not ours
                return

    @classmethod
    def from_columns(cls, columns: "JudgmentColumns") -> "PairwiseData":
        """The data of ``columns``, its Pool and judgments built on first read."""
        return cls(pool=_LAZY, judgments=_LAZY, source=columns.source, columns=columns)

    @property
    def systems(self) -> tuple[str, ...]:
        """The systems judged, in first-seen order (``pool.systems``, without building the Pool)."""
        return tuple(self.columns.systems) if self.columns is not None else self.pool.systems

    def with_name(self, name: str) -> "PairwiseData":
        """The same data, its Pool named ``name``."""
        if self.columns is not None and self.__dict__["_pool"] is _LAZY:
            return PairwiseData.from_columns(self.columns.renamed(name))
        return PairwiseData(pool=self.pool.with_name(name), judgments=self.judgments, source=self.source)

    def judgments_of(self, a: str, b: str) -> list[Judgment]:
        """The judgments of systems ``a`` and ``b`` (recorded in either order, kept as recorded), in
        recorded order. A system the data does not know is a DataError naming it.

        >>> from evalsift.oracle import Judgment
        >>> j = Judgment(item_id="1", a="X", b="Y", verdict="b", annotator="ann", kind="human")
        >>> PairwiseData(Pool(item_ids=["1"], systems=["X", "Y"]), (j,), "inline").judgments_of("Y", "X")[0].verdict
        'b'
        """
        for s in (a, b):
            self.pool.system_index(s)  # an unknown system names itself with a suggestion
        want = {a, b}
        return [j for j in self.judgments if {j.a, j.b} == want]

    def pairs(self) -> list[tuple[str, str]]:
        """The system pairs judged, as first recorded, in first-seen order."""
        seen: dict[frozenset, tuple[str, str]] = {}
        for j in self.judgments:
            seen.setdefault(frozenset((j.a, j.b)), (j.a, j.b))
        return list(seen.values())


class JudgmentColumns:
    """Recorded judgments as columns: what the fast readers build (:mod:`evalsift.io.fast_read`), and what
    :meth:`PairwiseData.from_columns` builds its Pool and Judgments from on first read -- the same objects,
    field for field, as the row-by-row readers make.

    ``fields``: Judgment field -> one value per judgment (a list) or one value for all (a str);
    ``detail``: ``(key, values)`` in the order the detail dicts have them, ``values`` a list (None: the key
    is absent from that judgment's detail), one value for all, or a function giving the list when first needed; ``pool``: the Pool's arguments
    (``item_ids``, ``systems``, ``pairs``: each item's two systems or None, ``name``); ``extra``: arrays the
    reader has at hand (``a_index``, ``b_index``: each side's index into ``systems``).
    """

    __slots__ = ("n", "fields", "detail", "pool_args", "source", "extra", "_built")

    FIELDS = ("item_id", "a", "b", "verdict", "annotator", "kind", "shown_order", "status", "created_at")

    def __init__(self, n: int, fields: dict[str, Any], detail: list[tuple[str, Any]], pool: dict[str, Any],
                 source: str, extra: dict[str, Any] | None = None) -> None:
        self.n, self.fields, self.detail, self.pool_args, self.source = n, fields, detail, pool, source
        self.extra = extra or {}  # arrays a reader has at hand: a_index, b_index (each side's index into systems)
        self._built: dict[str, Any] = {}

    @property
    def systems(self) -> list[str]:
        """The systems, in first-seen order."""
        return self.pool_args["systems"]

    def column(self, name: str) -> list[Any]:
        """One value per judgment of Judgment field ``name``."""
        v = self.fields[name]
        return [v] * self.n if isinstance(v, str) or v is None else v

    def constant(self, name: str) -> Any:
        """The one value of field ``name`` when all judgments share it (None otherwise)."""
        v = self.fields[name]
        return v if isinstance(v, str) else None

    def detail_column(self, key: str) -> list[Any] | None:
        """One value per judgment of ``detail[key]`` (None where absent); None when no judgment has the key."""
        for k, v in self._details():
            if k == key:
                return v if isinstance(v, list) else [v] * self.n
        return None

    def _details(self) -> list[tuple[str, Any]]:
        """``detail``, a column given as a function (converted when first needed) replaced by its values."""
        if any(callable(v) for _, v in self.detail):
            self.detail = [(k, v() if callable(v) else v) for k, v in self.detail]
        return self.detail

    def groups(self, *names: str) -> list[tuple[int, int]]:
        """``(first position, count)`` per distinct combination of the fields ``names``, in first-seen order."""
        varying = [self.fields[f] for f in names if not isinstance(self.fields[f], str)]
        if not varying:
            return [(0, self.n)] if self.n else []
        keys = varying[0] if len(varying) == 1 else list(zip(*varying))
        first: dict[Any, int] = {}
        for k, key in enumerate(keys):
            if key not in first:
                first[key] = k
        from collections import Counter

        counts = Counter(keys)
        return [(k, counts[key]) for key, k in first.items()]

    def judgment(self, k: int) -> Judgment:
        """The ``k``-th judgment."""
        f = {name: (v if isinstance(v, str) else v[k]) for name, v in self.fields.items()}
        detail = {}
        for key, v in self._details():
            x = v[k] if isinstance(v, list) else v
            if x is not None:
                detail[key] = x
        return Judgment(detail=detail, **f)

    def built(self, name: str, build: bool = True) -> Any:
        """The Pool (``name="pool"``) or the judgments tuple, built once; with ``build=False`` only if built already."""
        if name not in self._built:
            if not build:
                return None
            self._built[name] = self._build_pool() if name == "pool" else tuple(map(self.judgment, range(self.n)))
        return self._built[name]

    def _build_pool(self) -> Pool:
        p = self.pool_args
        meta = {PAIR_SYSTEMS: p["pairs"]} if p.get("pairs") is not None else None
        return Pool(item_ids=p["item_ids"], inputs=None, systems=p["systems"], outputs={}, metadata=meta,
                    scores=None, name=p["name"])

    def renamed(self, name: str) -> "JudgmentColumns":
        """The same columns, the Pool named ``name``."""
        return JudgmentColumns(self.n, self.fields, self.detail, {**self.pool_args, "name": name}, self.source, self.extra)

    def replaced(self, **fields: Any) -> "JudgmentColumns":
        """The same columns with the Judgment fields given replaced (a list per judgment, or one str for all)."""
        extra = self.extra if not {"a", "b"} & set(fields) else {}
        return JudgmentColumns(self.n, {**self.fields, **fields}, self.detail, self.pool_args, self.source, extra)


# ---------------------------------------------------------------------------------------- verdicts
def parse_verdict(value: Any) -> str | None:
    """``'a'``, ``'b'`` or ``'tie'`` for a recorded verdict cell, None when it is not one.

    Accepts ``a``/``b``/``tie`` in any case and ``1`` (= a), ``2`` (= b), ``0`` (= tie) as text or
    whole numbers.

    >>> [parse_verdict(v) for v in ("A", "tie", " b ", 1, "2", 0, 2.0, "x", None, True)]
    ['a', 'tie', 'b', 'a', 'b', 'tie', 'b', None, None, None]
    """
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, float):
        if not value.is_integer():
            return None
        value = int(value)
    key = str(value).strip().lower()
    return VERDICT_CODES.get(key)


def alpaca_verdict(preference: float) -> str | None:
    """The verdict (a = the baseline ``generator_1``, b = the model ``generator_2``) of an AlpacaEval preference.

    Below 1.5 the baseline wins, above 1.5 the model wins, exactly 1.5 is a tie; ``0`` is AlpacaEval's
    older encoding of a draw (its ``pairwise_to_winrate``: "0 or 1.5 for draw"). Anything else outside
    [1, 2] is None (not a preference).

    >>> [alpaca_verdict(p) for p in (1.0, 1.2, 1.5, 1.9999, 2.0, 0.0, 3.0)]
    ['a', 'a', 'tie', 'b', 'b', 'tie', None]
    """
    if preference == 0:
        return "tie"
    if not 1.0 <= preference <= 2.0:
        return None
    return "tie" if preference == 1.5 else ("a" if preference < 1.5 else "b")


# ---------------------------------------------------------------------------------------- groups (--by)
#: judgment detail fields that are bookkeeping or numbers, never a ``--by`` column
NOT_GROUPS = frozenset({"source", "line", "preference", "reason", "score", "len_output_1", "len_output_2",
                         "answers", "files", "order_verdicts", "human_scores", "shown_orders", "kind_from"})
JUDGMENT_FIELDS = ("annotator", "shown_order")


def group_columns(data: Any, judgments: Sequence[Any] | None = None) -> list[str]:
    """The columns ``--by`` can group by: the judgments' recorded fields (AlpacaEval annotations' ``dataset``),
    the Pool's per-item columns (``dataset`` of AlpacaEval's preference table) and ``annotator`` / ``shown_order``."""
    found: dict[str, None] = {}
    for j in (data.judgments if judgments is None else judgments):
        for k, v in j.detail.items():
            if k not in NOT_GROUPS and isinstance(v, (str, int, bool)):
                found.setdefault(k, None)
    for k in data.pool.metadata:
        if not str(k).startswith("_"):
            found.setdefault(str(k), None)
    for k in JUDGMENT_FIELDS:
        found.setdefault(k, None)
    return list(found)


def group_of(data: Any, by: str, judgments: Sequence[Any]) -> Any:
    """``group(judgment)`` -> the judgment's value of column ``by`` (``--by`` of ``winrate`` and ``arena``): a field
    the judgments record, an item column of the Pool, or ``annotator`` / ``shown_order``; ``(none)`` where a
    judgment has no value. An unknown column is a ParameterError listing :func:`group_columns`."""
    available = group_columns(data, judgments)
    if by not in available:
        hint = " (MT-Bench's categories come from its question.jsonl: --questions FILE)" if by == "category" else ""
        raise ParameterError(f"--by {by!r}: the data has no such column{hint}.{suggest(by, available)} Columns: "
                             f"{', '.join(available)}", field="by")
    if by in JUDGMENT_FIELDS:
        def group(j: Any) -> str:
            return str(getattr(j, by))
    else:
        in_detail = any(by in j.detail for j in judgments)
        col = data.pool.metadata.get(by)
        index = {iid: k for k, iid in enumerate(data.pool.item_ids)}

        def group(j: Any) -> str:
            v = j.detail.get(by) if in_detail else None
            if v is None and col is not None and j.item_id in index:
                v = col[index[j.item_id]]
            return "(none)" if v is None else str(v)
    warn_one_value(by, [group(j) for j in judgments], "judgments")
    return group


def warn_one_value(by: str, values: Sequence[Any], what: str) -> None:
    """The note every ``--by`` gives (``arena``, ``winrate`` through :func:`group_of`; ``rank`` on its item
    columns) when the column has one value among the ``values`` of its ``what`` (judgments, items): the one
    board per value then repeats the overall board, which the note says instead of printing it silently."""
    found = {str(v) for v in values}
    if len(found) == 1 and values:
        warn_data(f"--by {by}: all {len(values)} {what} have the same {by} ({next(iter(found))}), so its one board "
                  f"repeats the overall board; --by needs a column with two or more values")


# ---------------------------------------------------------------------------------------- the builder
class _Builder:
    """Collects what a reader finds -- items and systems in first-seen order, outputs, inputs, judgments --
    and makes the :class:`PairwiseData`. Outputs and inputs are kept once per item (and system); a second,
    different text is a DataError naming both lines (:func:`_set_once`)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.items: dict[str, int] = {}
        self.systems: dict[str, int] = {}
        self.outputs: dict[tuple[str, str], tuple[str, int]] = {}
        self.inputs: dict[tuple[str], tuple[str, int]] = {}
        self.judgments: list[Judgment] = []
        self.battles: dict[str, tuple[str, str]] | None = None  # item -> its two systems, when items are battles
        self.scores: dict[str, dict[tuple[str, str], float]] = {}  # metric -> (item, system) -> a grade
        self._pairs: dict[tuple[str, str], tuple[str, str]] = {}

    def battle(self, iid: str, a: str, b: str) -> None:
        """Note that item ``iid`` is a battle of ``a`` and ``b`` only (no other pair has it): the Pool's
        metadata ``_systems`` says so, and :func:`~evalsift.restrict.restrict_pair` keeps a pair's own battles."""
        if self.battles is None:
            self.battles = {}
        key = (a, b) if a <= b else (b, a)
        self.battles.setdefault(iid, self._pairs.setdefault(key, key))  # one tuple per pair, shared

    def see(self, iid: str, a: str, b: str) -> None:
        """Note an item and its two systems (first-seen order)."""
        self.items.setdefault(iid, len(self.items))
        self.systems.setdefault(a, len(self.systems))
        self.systems.setdefault(b, len(self.systems))

    def output(self, iid: str, system: str, text: str | None, line: int, column: str) -> None:
        if text is not None:
            _set_once(self.outputs, (iid, system), text, line, self.path, column, iid, system)

    def score(self, metric: str, iid: str, system: str, value: float) -> None:
        """A grade of one system's answer (the review files' score pairs): metric ``metric`` of the Pool."""
        self.scores.setdefault(metric, {})[(iid, system)] = float(value)

    def input(self, iid: str, text: str | None, line: int, column: str) -> None:
        if text is not None:
            _set_once(self.inputs, (iid,), text, line, self.path, column, iid, None)

    def build(self, name: str | None) -> PairwiseData:
        ids, names = list(self.items), list(self.systems)
        with_output = {s for _, s in self.outputs}
        outs = {s: [self.outputs.get((i, s), (None,))[0] for i in ids] for s in names if s in with_output}
        ins = [self.inputs.get((i,), (None,))[0] for i in ids] if self.inputs else None
        meta = {PAIR_SYSTEMS: [self.battles.get(i) for i in ids]} if self.battles else None
        scores = {}
        for metric, grades in self.scores.items():
            m = np.full((len(ids), len(names)), np.nan)
            for (i, s), v in grades.items():
                m[self.items[i], self.systems[s]] = v
            scores[metric] = m
        pool = Pool(item_ids=ids, inputs=ins, systems=names, outputs=outs, metadata=meta, scores=scores or None,
                    name=name if name is not None else str(self.path))
        return PairwiseData(pool=pool, judgments=tuple(self.judgments), source=str(self.path))


def _text(value: Any) -> str | None:
    """A cell as text, None when missing (empty, JSON null)."""
    if value is None:
        return None
    if isinstance(value, float) and math.isnan(value):
        return None
    return value if isinstance(value, str) else str(value)


def _set_once(store: dict, key: tuple, value: str, line: int, path: Path, column: str, item_id: str,
              system: str | None) -> None:
    """Record ``value`` for ``key`` (first line wins); a different second text is a DataError naming both lines."""
    if key not in store:
        store[key] = (value, line)
        return
    first, first_line = store[key]
    if first != value:
        noun, whose = ("input", f"item {item_id!r}") if system is None else ("output", f"item {item_id!r} of system {system!r}")
        raise DataError(f"{path}: line {line} gives {whose} a different {noun} than line {first_line} "
                        f"({value[:40]!r} vs {first[:40]!r}); keep one {noun} per "
                        f"{'item' if system is None else 'item and system'}: make the cells agree or leave the later "
                        "one empty.", field=column, item_id=item_id, system=system)


def _choice(path: Path, line: int, column: str, value: Any, options: tuple[str, ...], default: str,
            item_id: str) -> str:
    text = _text(value)
    if text is None:
        return default
    key = text.strip().lower()
    if key not in options:
        raise DataError(f"{path}: line {line}: {column} {text!r} is not one of: {', '.join(options)}.{suggest(key, options)}",
                        field=column, item_id=item_id)
    return key
