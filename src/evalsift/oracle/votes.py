"""The vote rule: how the judgments of one item make its verdict.

One rule, used everywhere an item has several judgments -- the Session (:mod:`evalsift.session`),
the replay of recorded verdicts (:class:`~evalsift.oracle.JudgmentsOracle`), a cheap judge used as
a proxy (:func:`evalsift.proxy.judge_values`) -- so they always agree:

- per annotator, the **latest** judgment supersedes that annotator's earlier ones (a correction is
  a new judgment; a later ``skipped`` or ``error`` withdraws the annotator's verdict);
- the item's verdict is the **plurality** of 'a', 'b' and 'tie' over the annotators' current
  verdicts; a shared top count (a split, e.g. one 'a' and one 'b') is a 'tie'; None without any.

It sits below the Session and the oracles (it needs only :class:`~evalsift.oracle.base.Judgment`).

>>> from evalsift.oracle.base import Judgment
>>> js = [Judgment(item_id="1", a="X", b="Y", verdict=v, annotator=who, kind="human")
...       for v, who in (("a", "p"), ("b", "q"), ("b", "p"))]
>>> combine(js), combine(js[:2]), combine([])
('b', 'tie', None)
"""

from __future__ import annotations

from collections import Counter
from typing import Iterable

from ..errors import ParameterError
from .base import Judgment

VOTE_RULE = "latest judgment per annotator; plurality of a / b / tie over annotators, a split top is a tie"


class ItemVotes:
    """The judgments of one item: the latest per annotator (``latest``), the item's last status
    (``last_status``) and the combined verdict (``combined``: 'a', 'b', 'tie' or None), kept up to
    date as judgments are added in the order they were recorded."""

    __slots__ = ("latest", "last_status", "combined")

    def __init__(self) -> None:
        self.latest: dict[str, Judgment] = {}
        self.last_status: str | None = None
        self.combined: str | None = None

    def add(self, j: Judgment, verdict: str | None = None) -> None:
        """Take the next judgment of the item; ``verdict``: its verdict oriented to the pair the
        votes are counted for (default: ``j.verdict`` as recorded)."""
        verdict = j.verdict if verdict is None and j.status == "done" else verdict
        self.latest[j.annotator] = j if verdict == j.verdict else Judgment(**{**j.to_dict(), "verdict": verdict})
        self.last_status = j.status
        self.combined = self._plurality()

    def _plurality(self) -> str | None:
        counts = Counter(j.verdict for j in self.latest.values() if j.status == "done")
        if not counts:
            return None
        top = counts.most_common()
        if len(top) > 1 and top[0][1] == top[1][1]:
            return "tie"
        return top[0][0]

    def verdict(self) -> str | None:
        """Plurality over the annotators' current verdicts; a split top is 'tie'; None without any."""
        return self.combined

    def state(self) -> str:
        """'verdict', 'outstanding', 'skipped', 'error' or 'new'."""
        if self.combined is not None:
            return "verdict"
        return {"pending": "outstanding", "skipped": "skipped", "error": "error"}.get(self.last_status or "", "new")


def combine(judgments: Iterable[Judgment]) -> str | None:
    """The combined verdict of one item's judgments (all for the same ``a`` vs ``b``, in recorded
    order) by the vote rule (module doc); None without any verdict."""
    votes = ItemVotes()
    for j in judgments:
        votes.add(j)
    return votes.verdict()


_FLIP = {"a": "b", "b": "a"}
_ORDER_FLIP = {"ab": "ba", "ba": "ab"}


def orient(j: Judgment, a: str, b: str) -> Judgment:
    """``j`` as a judgment of ``a`` vs ``b``: itself when recorded that way, else a copy with the systems,
    the verdict and the shown order swapped and the original in ``detail["recorded_as"]``.

    >>> j = Judgment(item_id="1", a="X", b="Y", verdict="a", annotator="ann", kind="human")
    >>> o = orient(j, "Y", "X")
    >>> (o.a, o.b, o.verdict, o.shown_order), o.detail["recorded_as"]["verdict"]
    (('Y', 'X', 'b', 'ba'), 'a')
    """
    if (j.a, j.b) == (a, b):
        return j
    if (j.b, j.a) != (a, b):
        raise ParameterError(f"judgment of {j.a!r} vs {j.b!r} cannot be oriented to {a!r} vs {b!r}", item_id=j.item_id)
    d = j.to_dict()
    d.update(a=a, b=b, verdict=_FLIP.get(j.verdict, j.verdict) if j.verdict is not None else None,
             shown_order=_ORDER_FLIP.get(j.shown_order, j.shown_order),
             detail={**j.detail, "recorded_as": {"a": j.a, "b": j.b, "verdict": j.verdict, "shown_order": j.shown_order}})
    return Judgment(**d)
