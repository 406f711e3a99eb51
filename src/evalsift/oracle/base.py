"""The Oracle protocol and the Judgment record.

An oracle answers two kinds of questions about items of a Pool (items are positions in that pool):

- ``judge_pairs(pool, items, a, b) -> list[Judgment]``: which of systems ``a`` and ``b`` did better
  on each item; ``verdict`` is 'a', 'b' or 'tie'.
- ``judge_scores(pool, items, system) -> np.ndarray``: a score per item for one system.

Synchronous oracles (a metric, an LLM judge) return finished judgments. An asynchronous oracle
(people in the web app) returns judgments with ``status='pending'`` and ``verdict=None``, and the
verdicts arrive later through ``Session.record()``; the Session never asks again about an item
that is pending. An oracle that cannot judge an item returns ``status='error'`` (a person who
declines returns ``'skipped'``) with the reason in ``detail``: the Session moves on without it.
Register an oracle factory with ``@oracle("name")``; build one from a spec such as ``metric:mqm``
with :func:`make_oracle`. Every registered oracle runs through one conformance test suite.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from typing import Any, Callable, Protocol, Sequence, runtime_checkable

import numpy as np

from ..errors import ParameterError, check_choice
from ..pool import Pool
from ..registry import Registry

VERDICTS = ("a", "b", "tie")
STATUSES = ("done", "pending", "skipped", "error")


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


@dataclass(frozen=True)
class Judgment:
    """One verdict on one item for one pair of systems, with who gave it and how.

    ``verdict`` is 'a' (system ``a`` better), 'b' or 'tie' when ``status`` is 'done', and None for
    the other statuses: 'pending' (asked, answer to come), 'skipped' (the judge declined) and
    'error' (the oracle could not judge: a failed call, an answer without a verdict, no score;
    ``detail["reason"]`` says why). An error is never a verdict.
    ``shown_order`` records the presentation order ('ab' or 'ba') so position bias can be studied.
    Judgments are append-only: a correction is a new Judgment, never an edit.

    A **score judgment** rates one system's output instead of comparing two: ``a`` is the system,
    ``b`` is ``""``, ``verdict`` is None and ``detail["score"]`` holds the number (status 'done').

    >>> Judgment(item_id="i1", a="A", b="", verdict=None, annotator="ann", kind="human",
    ...          detail={"score": 70.0}).is_score
    True
    """

    item_id: str
    a: str
    b: str
    verdict: str | None
    annotator: str
    kind: str  # 'metric' | 'llm' | 'human'
    shown_order: str = "ab"
    status: str = "done"
    created_at: str = field(default_factory=_now)
    detail: dict[str, Any] = field(default_factory=dict)

    @property
    def is_score(self) -> bool:
        """True for a score judgment (one system rated; ``detail["score"]``), False for a verdict."""
        return self.b == ""

    @property
    def score(self) -> float | None:
        """The score of a finished score judgment, else None."""
        return float(self.detail["score"]) if self.is_score and self.status == "done" else None

    def __post_init__(self) -> None:
        check_choice("status", self.status, STATUSES, where=f"Judgment of item {self.item_id!r}")
        if self.is_score:
            if self.verdict is not None:
                raise ParameterError(f"Judgment of item {self.item_id!r}: a score judgment (b='') has no verdict, got "
                                     f"{self.verdict!r}", field="verdict", item_id=self.item_id)
            if self.status == "done":
                s = self.detail.get("score")
                if isinstance(s, bool) or not isinstance(s, (int, float)) or s != s or s in (float("inf"), float("-inf")):
                    raise ParameterError(f"Judgment of item {self.item_id!r}: a finished score judgment needs a finite "
                                         f"detail['score'], got {s!r}", field="score", item_id=self.item_id,
                                         system=self.a)
            return
        if self.status == "done" and self.verdict not in VERDICTS:
            check_choice("verdict", self.verdict, VERDICTS, where=f"Judgment of item {self.item_id!r} (status 'done')")
        if self.status != "done" and self.verdict is not None:
            raise ParameterError(f"Judgment of item {self.item_id!r}: a {self.status!r} judgment has no verdict, got "
                                 f"{self.verdict!r}; use status='done' for a verdict", field="verdict",
                                 item_id=self.item_id)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return asdict(self)


@runtime_checkable
class Oracle(Protocol):
    """What the Session needs from an oracle.

    Required: ``name``, ``kind`` and ``judge_pairs`` -- at least one Judgment for every item asked
    about, in item order; several for one item when several annotators judged it (the Session
    combines them by its documented vote rule). Optional, for benchmarks that replay a judge:
    ``verdicts(pool, items, a, b)`` (every item's combined verdict at once) and
    ``covers(pool, a, b)`` (a bool per item: can this judge judge it). Optional for ranking:
    ``judge_scores(pool, items, system)``.
    """

    name: str
    kind: str

    def judge_pairs(self, pool: Pool, items: Sequence[int], a: str, b: str) -> list[Judgment]:
        """At least one Judgment per item, in item order."""
        ...


oracles: Registry[Callable[..., Oracle]] = Registry("oracle")


def oracle(name: str, help: str = "") -> Callable:
    """Register an oracle factory under ``name`` (the part before ':' in a spec)."""
    return oracles.register(name, help)


def make_oracle(spec: str | Oracle, **params: Any) -> Oracle:
    """Build an oracle from ``'kind:arg'`` (e.g. ``'metric:mqm'``) or pass an Oracle through.

    A kind that needs an argument (``metric`` needs the score column) says so when it is missing.

    >>> make_oracle("metric:mqm").metric
    'mqm'
    >>> make_oracle("metric")
    Traceback (most recent call last):
    ...
    evalsift.errors.ParameterError: oracle 'metric' needs an argument: metric:NAME, the score column to simulate the judge from (e.g. metric:mqm)
    """
    if not isinstance(spec, str):
        return spec
    kind, _, arg = spec.partition(":")
    factory = oracles.get(kind)
    needs = getattr(factory, "argument", None)
    if needs and not arg:
        raise ParameterError(f"oracle {kind!r} needs an argument: {kind}:{needs}", field="oracle")
    return factory(arg, **params) if arg else factory(**params)


def verdicts_from_scores(sa: np.ndarray, sb: np.ndarray, *, higher_is_better: bool = True,
                         tie_tolerance: float = 0.0) -> np.ndarray:
    """Vectorised verdicts: 'a' where a's score is better by more than ``tie_tolerance``, etc.

    >>> list(verdicts_from_scores(np.array([1.0, 2.0, 3.0]), np.array([2.0, 2.05, 1.0]), tie_tolerance=0.1))
    ['b', 'tie', 'a']
    """
    diff = np.asarray(sa, dtype=float) - np.asarray(sb, dtype=float)
    if not higher_is_better:
        diff = -diff
    out = np.full(diff.shape, "tie", dtype=object)
    out[diff > tie_tolerance] = "a"
    out[diff < -tie_tolerance] = "b"
    return out
