"""Which items and systems a comparison or a ranking can use, and what was left out.

Real data often lacks some outputs or scores (a system that skipped items, human scores on part of
a test set). The functions here keep what can be used, report what was dropped and why, and fail
only when too little remains. Both results carry a ``note()`` for people and ``to_dict()`` for JSON.

Pairs
-----
A pairwise comparison of systems ``a`` and ``b`` needs, on every item it judges, both systems'
outputs (to show a judge, or to embed for DiffUse) and, when the judge is simulated from a score
column, both systems' scores. Real data often lacks some (a system that skipped items, human scores
on part of a test set). :func:`restrict_pair` keeps the items that have everything, says how many it
dropped and why, and fails only when too few remain.

The rule, in order:

0. **the pair's own items**: when the pool says which systems each item belongs to (metadata column
   ``_systems``: per item a tuple of systems, or None for an item every system shares -- Chatbot Arena
   battles, where each battle is an item of its two models only), the items of other pairs are not
   the pair's at all: they are left out before anything is counted (``other_pairs``), never reported
   as missing;
1. **outputs**: items where either system has no output (``None``) are dropped -- unless neither
   system has any output at all (score-only data, e.g. a response matrix), where there is nothing
   to require;
2. **the judge**: with ``metric``, items where either system has no score for it (NaN) are dropped;
   with an ``oracle`` that says which items it can judge (``oracle.covers(pool, a, b)``, e.g. a
   replay of recorded verdicts), the items it cannot judge are dropped.

>>> from evalsift.pool import Pool
>>> import numpy as np
>>> p = Pool(item_ids=["i0", "i1", "i2"], systems=["A", "B"],
...          outputs={"A": ["x", "y", None], "B": ["u", "v", "w"]},
...          scores={"m": np.array([[1.0, 0.0], [np.nan, 1.0], [1.0, 1.0]])})
>>> r = restrict_pair(p, "A", "B", metric="m", min_items=1)
>>> r.pool.item_ids, r.dropped_outputs, r.dropped_scores
(('i0',), 1, 1)
>>> r.note()
"A vs B: using 1 of 3 items (1 lack an output of A or B; 1 lack a 'm' score of A or B); without an output: A 1, B 0"

Rankings
--------
Ranking many systems by a (human) metric uses paired tests, so :func:`restrict_ranking` keeps, in
order: (1) the systems that have at least one score for the metric on the items (a system never
scored cannot be ranked and is reported), then (2) the items scored for every remaining system
("complete items"). Means and tests are computed on those items only, so every system is compared
on the same items.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from .errors import DataError
from .pool import Pool

MIN_PAIR_ITEMS = 2
MIN_RANKING_ITEMS = 2
#: metadata column naming, per item, the systems the item belongs to (None: every system); see the module doc
PAIR_SYSTEMS = "_systems"


@dataclass(frozen=True)
class PairRestriction:
    """The two-system Pool a comparison uses, and what was left out of the full pool."""

    pool: Pool
    a: str
    b: str
    n_total: int
    dropped_outputs: int
    dropped_scores: int
    metric: str | None
    judge: str | None = None
    no_output_a: int = 0  # items where a has no output (b may have one or not)
    no_output_b: int = 0
    no_output_both: int = 0  # neither has one
    other_pairs: int = 0  # items of other pairs (metadata ``_systems``): never this pair's, not counted in n_total

    @property
    def dropped(self) -> int:
        """Items left out, for any reason."""
        return self.dropped_outputs + self.dropped_scores

    def note(self) -> str:
        """One line for people: how many items are used and why the rest are not, and per system how
        many lack its output."""
        why = []
        if self.dropped_outputs:
            why.append(f"{self.dropped_outputs} lack an output of {self.a} or {self.b}")
        if self.dropped_scores:
            why.append(f"{self.dropped_scores} lack a {self.metric!r} score of {self.a} or {self.b}" if self.metric
                       else f"{self.dropped_scores} have no verdict from {self.judge}")
        text = f"{self.a} vs {self.b}: using {self.pool.n_items} of {self.n_total} items"
        text += f" ({'; '.join(why)})" if why else ""
        if self.dropped_outputs:
            text += f"; without an output: {self.a} {self.no_output_a}, {self.b} {self.no_output_b}"
        return text

    def to_dict(self) -> dict:
        """JSON-ready summary (without the pool)."""
        return {"a": self.a, "b": self.b, "n_total": self.n_total, "n_used": self.pool.n_items,
                "dropped_outputs": self.dropped_outputs, "dropped_scores": self.dropped_scores,
                "metric": self.metric, "judge": self.judge,
                "no_output": {self.a: self.no_output_a, self.b: self.no_output_b, "both": self.no_output_both},
                "other_pairs": self.other_pairs}

    def scope(self, pool_size: int | None = None) -> str:
        """The missingness assumption a pairwise decision rests on, for people: which items it is
        about (``pool_size``: the decision's pool, when restricted further, e.g. to a proxy's items)
        and what was left out."""
        M = self.pool.n_items if pool_size is None else int(pool_size)
        text = (f"missing data: the decision is about the {M} of {self.n_total} items where {self.a} and {self.b} "
                "both have an output" + (" and the judge can judge" if self.judge or self.metric else ""))
        left = self.n_total - M
        if not left:
            return text + "; none was left out"
        parts = []
        if self.dropped_outputs:
            parts.append(f"{self.a} has no output on {self.no_output_a}, {self.b} on {self.no_output_b}")
        if left > self.dropped_outputs:
            parts.append(f"{left - self.dropped_outputs} the judge (or a proxy) cannot cover")
        return text + f"; {left} left out ({'; '.join(parts)}), they are not part of what the risk is about"

    def _winner_share(self, winner, interval, pool_size) -> tuple[int, int, float, float] | None:
        """(M, items left out, the winner's win-rate interval on the M items) or None."""
        M = self.pool.n_items if pool_size is None else int(pool_size)
        left = self.n_total - M
        if not left or winner is None or interval is None or winner not in (self.a, self.b):
            return None
        if winner == self.a:
            return M, left, float(interval[0]), float(interval[1])
        return M, left, 1 - float(interval[1]), 1 - float(interval[0])

    def could_change(self, winner: str | None, interval: Sequence[float] | None, pool_size: int | None = None) -> bool:
        """True when the items left out, all going to the other system, could take the named
        ``winner``'s share of all ``n_total`` items to one half or below (see :meth:`flip_note`)."""
        share = self._winner_share(winner, interval, pool_size)
        return share is not None and share[2] * share[0] / self.n_total <= 0.5

    def flip_note(self, winner: str | None, interval: Sequence[float] | None, pool_size: int | None = None
                  ) -> str | None:
        """Whether the items left out could change the named ``winner`` (``interval``: the Decision's
        win rate of ``a`` on its ``pool_size`` items). If every item left out went to the other
        system, the winner's share over all ``n_total`` items could fall to ``low M / n_total`` (its
        interval's low end); and counting a missing output as a loss for the system without it (a
        tie when both lack one; items dropped for another reason either way), its share lies in a
        range printed too. None when nothing was left out, nobody was named or there is no interval."""
        share = self._winner_share(winner, interval, pool_size)
        if share is None:
            return None
        M, left, lo, hi = share
        other = self.b if winner == self.a else self.a
        worst = lo * M / self.n_total
        if worst > 0.5:
            text = (f"the {left} item(s) left out cannot change the winner: even if all went to {other}, {winner} "
                    f"would win {worst:.3f} of all {self.n_total} items (at the stated risk)")
        else:
            text = (f"the {left} item(s) left out could change the winner: if all went to {other}, {winner} would "
                    f"win only {worst:.3f} of all {self.n_total} items")
        if self.dropped_outputs:
            mine = self.no_output_a if winner == self.a else self.no_output_b
            theirs = self.no_output_b if winner == self.a else self.no_output_a
            gained = theirs - self.no_output_both + 0.5 * self.no_output_both  # the other one lacks it: a win
            rest = left - self.dropped_outputs  # dropped for another reason: either way
            low = (lo * M + gained) / self.n_total
            high = (hi * M + gained + rest) / self.n_total
            text += (f"; counting a missing output as a loss for its system ({winner} lacks {mine}, {other} "
                     f"{theirs}), {winner} would win {low:.3f}-{high:.3f} of all {self.n_total} items")
        return text


def restrict_pair(pool: Pool, a: str, b: str, *, metric: str | None = None, oracle: Any = None,
                  min_items: int = MIN_PAIR_ITEMS) -> PairRestriction:
    """The items of ``pool`` on which ``a`` and ``b`` can be compared (see the module doc).

    ``oracle``: the judge; when it has ``covers(pool, a, b) -> bool mask`` only the items it can
    judge are kept (a metric oracle covers the items scored for both systems).

    Raises :class:`~evalsift.errors.DataError` naming the systems, the counts and the cause when
    fewer than ``min_items`` remain.
    """
    pair = pool.pair(a, b)
    pair, other = _own_items(pair, a, b, min_items)
    n = pair.n_items
    have = [np.array([o is not None for o in pair.outputs[s]], dtype=bool) for s in (a, b)]
    if any(h.any() for h in have):
        ok_out = have[0] & have[1]
    else:  # score-only data: no output to require
        ok_out = np.ones(n, dtype=bool)
    ok = ok_out.copy()
    if metric is not None:
        ok &= ~np.isnan(pair.score(metric)).any(axis=1)
    if oracle is not None and hasattr(oracle, "covers"):
        ok &= np.asarray(oracle.covers(pair, a, b), dtype=bool)
        metric = metric or getattr(oracle, "metric", None)
    lacks = [~h if h.size and any(x.any() for x in have) else np.zeros(n, dtype=bool) for h in have]
    restriction = PairRestriction(pool=pair.subset(np.flatnonzero(ok)) if not ok.all() else pair, a=a, b=b,
                                  n_total=n, dropped_outputs=int((~ok_out).sum()),
                                  dropped_scores=int((ok_out & ~ok).sum()), metric=metric,
                                  judge=None if oracle is None else getattr(oracle, "name", str(oracle)),
                                  no_output_a=int(lacks[0].sum()), no_output_b=int(lacks[1].sum()),
                                  no_output_both=int((lacks[0] & lacks[1]).sum()), other_pairs=other)
    if restriction.pool.n_items < min_items:
        raise DataError(f"{restriction.note()}; a comparison needs at least {min_items}. Choose another pair "
                        "or complete the data.", system=b if have[1].sum() < have[0].sum() else a)
    return restriction


def _own_items(pair: Pool, a: str, b: str, min_items: int) -> tuple[Pool, int]:
    """``pair`` without the items that belong to other systems (metadata ``_systems``), and how many those were.

    >>> p = Pool(item_ids=["1", "2", "3"], systems=["A", "B", "C"],
    ...          metadata={"_systems": [("A", "B"), ("B", "C"), None]})
    >>> r = restrict_pair(p, "B", "A", min_items=1)
    >>> r.pool.item_ids, r.n_total, r.other_pairs, r.dropped
    (('1', '3'), 2, 1, 0)
    """
    col = pair.metadata.get(PAIR_SYSTEMS)
    if col is None:
        return pair, 0
    mine = np.array([s is None or (a in s and b in s) for s in col], dtype=bool)
    if mine.all():
        return pair, 0
    other = int((~mine).sum())
    if mine.sum() < min_items:
        raise DataError(f"{a} vs {b}: pool {pair.name!r} has {int(mine.sum())} item(s) of this pair (its items are "
                        f"battles of two systems each; {other} belong to other pairs); a comparison needs at least "
                        f"{min_items}. Choose a pair that was judged against each other.", system=b)
    return pair.subset(np.flatnonzero(mine)), other


@dataclass(frozen=True)
class RankingRestriction:
    """The Pool a ranking uses (kept systems x complete items) and what was left out."""

    pool: Pool
    metric: str
    n_items_total: int
    systems_left_out: tuple[str, ...]
    items_left_out: int

    def note(self) -> str:
        """One line for people."""
        parts = [f"{self.metric}: ranking {self.pool.n_systems} systems on {self.pool.n_items} of {self.n_items_total} "
                 "items scored for every one of them"]
        if self.systems_left_out:
            parts.append(f"left out {len(self.systems_left_out)} system(s) with no {self.metric!r} score: "
                         + ", ".join(self.systems_left_out))
        return "; ".join(parts)

    def to_dict(self) -> dict:
        """JSON-ready summary (without the pool)."""
        return {"metric": self.metric, "rule": "systems with any score, then items scored for all of them",
                "n_items_total": self.n_items_total, "n_items_used": self.pool.n_items,
                "items_left_out": self.items_left_out, "systems_left_out": list(self.systems_left_out)}


def restrict_ranking(pool: Pool, metric: str, *, min_items: int = MIN_RANKING_ITEMS) -> RankingRestriction:
    """Systems with any ``metric`` score, then the items scored for all of them (see the module doc).

    >>> from evalsift.pool import Pool
    >>> import numpy as np
    >>> h = np.array([[1.0, 2.0, np.nan], [3.0, np.nan, np.nan], [2.0, 2.0, np.nan], [0.0, 1.0, np.nan]])
    >>> r = restrict_ranking(Pool(item_ids=list("wxyz"), systems=["A", "B", "C"], scores={"h": h}), "h")
    >>> r.pool.systems, r.pool.item_ids, r.systems_left_out
    (('A', 'B'), ('w', 'y', 'z'), ('C',))
    """
    scores = pool.score(metric)
    scored = ~np.isnan(scores)
    keep_sys = [s for j, s in enumerate(pool.systems) if scored[:, j].any()]
    left_out = tuple(s for s in pool.systems if s not in keep_sys)
    if len(keep_sys) < 2:
        raise DataError(f"{metric!r} scores only {len(keep_sys)} system(s) of pool {pool.name!r} "
                        f"({', '.join(keep_sys) or 'none'}); a ranking needs at least 2.", field=metric)
    cols = [pool.system_index(s) for s in keep_sys]
    complete = scored[:, cols].all(axis=1)
    if complete.sum() < min_items:
        coverage = ", ".join(f"{s} {int(scored[:, j].sum())}" for s, j in zip(keep_sys, cols))
        raise DataError(f"only {int(complete.sum())} item(s) of pool {pool.name!r} are scored by {metric!r} for every "
                        f"one of {len(keep_sys)} systems; a ranking needs at least {min_items}. Items scored per "
                        f"system: {coverage}. Rank fewer systems (--systems) or use more items.", field=metric)
    sub = pool.with_systems(keep_sys) if left_out else pool
    if not complete.all():
        sub = sub.subset(np.flatnonzero(complete))
    return RankingRestriction(pool=sub, metric=metric, n_items_total=pool.n_items, systems_left_out=left_out,
                              items_left_out=int((~complete).sum()))
