"""MetricOracle: simulate a judge from a score column of the Pool (human or automatic)."""

from __future__ import annotations

from typing import Sequence

import numpy as np

from ..errors import OracleError, ParameterError
from ..pool import Pool
from .base import Judgment, oracle, verdicts_from_scores


@oracle("metric", help="verdicts from a score column (simulation); 'metric:NAME'")
class MetricOracle:
    """Pairwise verdicts and scores read from ``pool.scores[metric]``.

    ``higher_is_better`` (default True: MQM in mt-metrics-eval is negative with 0 best, so higher is
    better there too) and ``tie_tolerance`` (absolute score difference at or below which the items
    tie; default 0, exact ties only).

    >>> from evalsift.io import make_demo_pool
    >>> pool = make_demo_pool(n_items=5)
    >>> [j.verdict in ("a", "b", "tie") for j in MetricOracle("human").judge_pairs(pool, [0, 1], "A", "B")]
    [True, True]
    """

    kind = "metric"
    argument = "NAME, the score column to simulate the judge from (e.g. metric:mqm)"

    def __init__(self, metric: str, *, higher_is_better: bool = True, tie_tolerance: float = 0.0) -> None:
        if not metric:
            raise ParameterError("MetricOracle needs a metric name, e.g. 'metric:mqm'")
        if tie_tolerance < 0:
            raise ParameterError(f"tie_tolerance must be >= 0, got {tie_tolerance}")
        self.metric = metric
        self.higher_is_better = bool(higher_is_better)
        self.tie_tolerance = float(tie_tolerance)
        self.name = f"metric:{metric}"

    def _scores(self, pool: Pool, items: Sequence[int], system: str) -> np.ndarray:
        col = pool.score(self.metric, system)[np.asarray(items, dtype=int)]
        bad = np.flatnonzero(np.isnan(col))
        if bad.size:
            ids = [pool.item_ids[int(np.asarray(items)[i])] for i in bad[:3]]
            raise OracleError(
                f"Metric {self.metric!r} has no score for system {system!r} on {bad.size} item(s) "
                f"(first: {ids}). Restrict the pool with pool.complete({self.metric!r})."
            )
        return col

    def covers(self, pool: Pool, a: str, b: str) -> np.ndarray:
        """Per item of ``pool``: True where both systems have a score (the items this oracle can judge)."""
        return ~(np.isnan(pool.score(self.metric, a)) | np.isnan(pool.score(self.metric, b)))

    def judge_scores(self, pool: Pool, items: Sequence[int], system: str) -> np.ndarray:
        """The metric's score of ``system`` on each item."""
        return self._scores(pool, items, system).copy()

    def verdicts(self, pool: Pool, items: Sequence[int], a: str, b: str) -> np.ndarray:
        """Verdict strings only (fast path for simulations)."""
        return verdicts_from_scores(self._scores(pool, items, a), self._scores(pool, items, b),
                                    higher_is_better=self.higher_is_better, tie_tolerance=self.tie_tolerance)

    def judge_pairs(self, pool: Pool, items: Sequence[int], a: str, b: str) -> list[Judgment]:
        """One Judgment per item, in order: 'done' with the verdict, or 'error' (with the reason in
        ``detail``) where either system has no score for the item."""
        idx = np.asarray(items, dtype=int)
        sa, sb = pool.score(self.metric, a)[idx], pool.score(self.metric, b)[idx]
        v = verdicts_from_scores(sa, sb, higher_is_better=self.higher_is_better, tie_tolerance=self.tie_tolerance)
        out = []
        for i, x, ma, mb in zip(idx, v, np.isnan(sa), np.isnan(sb)):
            common = dict(item_id=pool.item_ids[int(i)], a=a, b=b, annotator=self.name, kind=self.kind)
            if ma or mb:
                who = " and ".join(s for s, m in ((a, ma), (b, mb)) if m)
                out.append(Judgment(verdict=None, status="error", detail={"reason": f"no {self.metric!r} score for {who}"},
                                    **common))
            else:
                out.append(Judgment(verdict=str(x), **common))
        return out
