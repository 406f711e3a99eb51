"""Battles: many systems compared two at a time, one verdict per battle, as arrays.

A :class:`Battles` holds ``n`` battles between ``K`` models: the two sides (indices into
``models``), the verdict value (1 = the first side won, 0 = the second, 1/2 = a tie), a battle id,
whether a tie was a "both bad" one, and -- for battles drawn from a larger set -- the probability
with which each was drawn (1 when all were kept). Judges are columns beside the verdicts: each
judge's verdict value on the same battles, oriented to the same sides (NaN where it gave none).

Every reader of pairwise data (:func:`evalsift.io.pairwise.read_judgments`: Chatbot Arena battle
files, FastChat / MT-Bench judgments, AlpacaEval annotations, our pairwise tables) feeds it: one
recorded judgment is one battle; a judge file joins on the battle id and the pair (either order; a
judge that judged a battle several times, e.g. in both presentation orders, gives the mean).

>>> from evalsift.oracle import Judgment
>>> from evalsift.io.pairwise import PairwiseData
>>> from evalsift.pool import Pool
>>> js = (Judgment(item_id="1", a="X", b="Y", verdict="a", annotator="h", kind="human"),
...       Judgment(item_id="2", a="Y", b="Z", verdict="tie", annotator="h", kind="human"))
>>> b = Battles.from_pairwise(PairwiseData(Pool(item_ids=["1", "2"], systems=["X", "Y", "Z"]), js, "inline"))
>>> b.models, b.a.tolist(), b.b.tolist(), b.y.tolist()
(('X', 'Y', 'Z'), [0, 1], [1, 2], [1.0, 0.5])
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Sequence

import numpy as np

from ..errors import DataError, ParameterError
from ..stats.sequential import VALUES


@dataclass(frozen=True)
class Battles:
    """``n`` battles between ``models`` (see the module doc). ``judges``: name -> verdict values on the
    same battles (``n`` floats, NaN where the judge gave none); ``prob``: how likely each battle was to
    be drawn -- its inclusion probability, or for ``T`` draws with replacement ``T`` times its
    probability at its draw -- weighted by the inverse (1 = kept for sure)."""

    models: tuple[str, ...]
    a: np.ndarray
    b: np.ndarray
    y: np.ndarray
    ids: tuple[str, ...]
    bothbad: np.ndarray
    prob: np.ndarray
    judges: dict = field(default_factory=dict)
    source: str = ""
    style: dict = field(default_factory=dict)  # count name -> n x 2 (each side's answer), NaN without text
    tags: dict = field(default_factory=dict)  # column -> n labels (str): each battle's group for --by
    verdicts: dict = field(default_factory=dict)  # whose verdicts (evalsift.verdicts.describe_judgments)

    def __post_init__(self) -> None:
        n = len(self.y)
        for name in ("a", "b", "bothbad", "prob"):
            if len(getattr(self, name)) != n:
                raise ParameterError(f"battles: {name} has {len(getattr(self, name))} entries, y has {n}", field=name)
        if len(self.ids) != n:
            raise ParameterError(f"battles: {len(self.ids)} ids for {n} battles", field="ids")
        if n and (self.a == self.b).any():
            k = int(np.flatnonzero(self.a == self.b)[0])
            raise DataError(f"battle {self.ids[k]!r} pits {self.models[self.a[k]]!r} against itself", item_id=self.ids[k])
        if n and not np.isin(self.y, (0.0, 0.5, 1.0)).all():
            raise DataError("battles: every verdict value must be 1 (first side), 0 (second) or 0.5 (tie)", field="y")
        if n and not ((self.prob > 0) & np.isfinite(self.prob)).all():
            raise DataError("battles: every draw probability must be a number > 0", field="prob")
        for name, v in self.judges.items():
            if len(v) != n:
                raise ParameterError(f"judge {name!r} has {len(v)} verdicts for {n} battles", field="judge")
        for name, v in self.style.items():
            if np.shape(v) != (n, 2):
                raise ParameterError(f"style count {name!r} has shape {np.shape(v)} for {n} battles", field="style")

    @property
    def n(self) -> int:
        """The number of battles."""
        return len(self.y)

    @property
    def K(self) -> int:
        """The number of models."""
        return len(self.models)

    def subset(self, idx: Sequence[int] | np.ndarray, prob: np.ndarray | None = None) -> "Battles":
        """The battles at positions ``idx`` (in that order), with draw probabilities ``prob`` if given."""
        idx = np.asarray(idx, dtype=int)
        return replace(self, a=self.a[idx], b=self.b[idx], y=self.y[idx], ids=tuple(self.ids[i] for i in idx),
                       bothbad=self.bothbad[idx], prob=self.prob[idx] if prob is None else np.asarray(prob, float),
                       judges={k: v[idx] for k, v in self.judges.items()},
                       style={k: v[idx] for k, v in self.style.items()},
                       tags={k: v[idx] for k, v in self.tags.items()})

    def keep(self, mask: np.ndarray) -> "Battles":
        """The battles where ``mask`` holds, the models left without any battle dropped (re-indexed)."""
        sub = self.subset(np.flatnonzero(np.asarray(mask, bool)))
        used = np.zeros(self.K, bool)
        used[sub.a] = used[sub.b] = True
        if used.all():
            return sub
        new = np.cumsum(used) - 1
        return replace(sub, models=tuple(m for m, u in zip(self.models, used) if u), a=new[sub.a], b=new[sub.b])

    def pair_counts(self, idx: np.ndarray | None = None) -> np.ndarray:
        """``K x K`` battles per unordered pair (symmetric); ``idx``: only the battles at those positions
        (a position given twice counts twice)."""
        a, b = (self.a, self.b) if idx is None else (self.a[idx], self.b[idx])
        c = np.zeros((self.K, self.K), dtype=int)
        np.add.at(c, (a, b), 1)
        return c + c.T

    @classmethod
    def from_arrays(cls, models: Sequence[str], a, b, y, *, ids: Sequence[str] | None = None, bothbad=None,
                    prob=None, judges: dict | None = None, source: str = "") -> "Battles":
        """Battles from index arrays (``a``, ``b`` into ``models``) and verdict values ``y``."""
        a, b, y = np.asarray(a, dtype=int), np.asarray(b, dtype=int), np.asarray(y, dtype=float)
        n = len(y)
        K = len(models)
        if n and (min(a.min(), b.min()) < 0 or max(a.max(), b.max()) >= K):
            raise ParameterError(f"battles: a model index is outside 0..{K - 1}", field="a")
        return cls(models=tuple(models), a=a, b=b, y=y, ids=tuple(ids) if ids is not None else tuple(map(str, range(n))),
                   bothbad=np.zeros(n, bool) if bothbad is None else np.asarray(bothbad, bool),
                   prob=np.ones(n) if prob is None else np.asarray(prob, float),
                   judges={k: np.asarray(v, float) for k, v in (judges or {}).items()}, source=source)

    @classmethod
    def from_pairwise(cls, data, *, source: str | None = None, by: Sequence[str] = ()) -> "Battles":
        """One battle per recorded judgment with a verdict (``a``, ``b`` or ``tie``) of a
        :class:`~evalsift.io.pairwise.PairwiseData`; judgments without one (errors, skips) are left out.

        ``by``: columns to tag each battle with (``tags``; :func:`~evalsift.io.pairwise_data.group_of`: a
        field the judgments record such as ``language`` or ``turn``, or an item column such as ``category``).
        ``verdicts`` says whose verdicts they are (:func:`evalsift.verdicts.describe_judgments`)."""
        from ..io.fast_read import battles_from_columns
        from ..io.pairwise_data import group_of
        from ..verdicts import describe_judgments

        cols = getattr(data, "columns", None)
        if cols is not None and not by:  # read by a fast reader: straight from its columns
            battles = battles_from_columns(cols, source or data.source)
            if battles is not None:
                return battles
        models = tuple(data.pool.systems)
        index = {m: k for k, m in enumerate(models)}
        rows = [j for j in data.judgments if j.verdict in VALUES and j.status == "done"]
        if not rows:
            raise DataError(f"{data.source}: no battle with a verdict (a, b or tie)", field="verdict")
        a = np.fromiter((index[j.a] for j in rows), dtype=int, count=len(rows))
        b = np.fromiter((index[j.b] for j in rows), dtype=int, count=len(rows))
        y = np.fromiter((VALUES[j.verdict] for j in rows), dtype=float, count=len(rows))
        bothbad = np.fromiter((str((j.detail or {}).get("winner", "")).strip().lower() == "tie (bothbad)"
                               for j in rows), dtype=bool, count=len(rows))
        tags = {}
        for column in by:
            group = group_of(data, column, rows)
            tags[column] = np.array([group(j) for j in rows], dtype=object)
        battles = cls.from_arrays(models, a, b, y, ids=[j.item_id for j in rows], bothbad=bothbad,
                                  source=source or data.source)
        return replace(battles, tags=tags, verdicts=describe_judgments(rows))

    def with_judge(self, name: str, data) -> "Battles":
        """These battles with judge ``name``'s verdicts from ``data`` (a PairwiseData on the same
        battles): joined on the battle id and the pair in either order, oriented to each battle's
        sides; the mean over a judge's several verdicts on one battle; NaN where it has none."""
        if name in self.judges:
            raise ParameterError(f"judge {name!r} is given twice", field="judge")
        from ..io.fast_read import judge_column

        col = judge_column(self, data)  # judgments read as columns: a dict lookup per battle
        if col is None:
            sums: dict[tuple[str, str, str], list[float]] = {}
            for j in data.judgments:
                if j.verdict not in VALUES or j.status != "done":
                    continue
                v = VALUES[j.verdict]
                sums.setdefault((j.item_id, j.a, j.b), []).append(v)
                sums.setdefault((j.item_id, j.b, j.a), []).append(1.0 - v)
            col = np.full(self.n, np.nan)
            for k in range(self.n):
                got = sums.get((self.ids[k], self.models[self.a[k]], self.models[self.b[k]]))
                if got:
                    col[k] = float(np.mean(got))
        if np.isnan(col).all():
            raise DataError(f"judge {name!r} ({data.source}) judged none of the {self.n} battles of {self.source}: "
                            "its battle ids (num, battle_id, id or question_id) and model names must match",
                            field="judge")
        return replace(self, judges={**self.judges, name: col})


#: the names that moved to :mod:`evalsift.arena.read` (issue 46): still importable from here
_MOVED = ("read_battles", "with_texts", "judge_name", "_outputs_pool")


def __getattr__(name: str):
    """The names that moved to :mod:`evalsift.arena.read` (``from evalsift.arena.battles import
    read_battles`` keeps working), imported on first use, not when this module loads: ``read`` imports
    :mod:`~evalsift.arena.style`, which imports :mod:`~evalsift.arena.bt`, which imports this module."""
    if name in _MOVED:
        from . import read

        return getattr(read, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    """This module's names and those that moved to :mod:`evalsift.arena.read`."""
    return sorted(set(globals()) | set(_MOVED))


__all__ = ["Battles", "judge_name", "read_battles", "with_texts"]
