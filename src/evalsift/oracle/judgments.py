"""JudgmentsOracle: replay recorded pairwise verdicts (``judgments:SOURCE``).

``SOURCE`` is a pairwise table (CSV/TSV/JSONL with ``item_id, system_a, system_b, verdict``; see
:mod:`evalsift.io.pairwise`), a judge file as people keep it (Chatbot Arena battles, FastChat /
MT-Bench judgments, AlpacaEval annotations; see :mod:`evalsift.io.judge_files`) or a recorded dataset
under ``$EVALSIFT_DATA``: ``summeval/llm-pairwise/<dimension>`` (GPT-3.5's choices, both presentation
orders combined), ``alpaca-eval/preferences[/<annotator_config>]`` (AlpacaEval's judge vs the
baseline) or ``<folder>/<stem>`` for a judge file in a folder there (``arena-ppr/human``).

Items match by their id (as a string), systems by name; the pool the oracle is asked about may be
any Pool with those ids and names (e.g. ``load("summeval")``).

- :meth:`JudgmentsOracle.judge_pairs` returns every recorded judgment of each item for the pair --
  several when several annotators (or one annotator several times) judged it -- in item order, and
  one ``error`` judgment (``detail["reason"] = "no recorded verdict for A vs B"``) for an item with
  none: never an invented verdict. A judgment recorded with the systems the other way round is
  returned oriented to the pair asked about (``a``/``b``, the verdict and ``shown_order`` swapped),
  with the record as it was in ``detail["recorded_as"]``, so the answer to (B, A) mirrors the answer
  to (A, B) as for every oracle.
- :meth:`JudgmentsOracle.verdicts` gives each item's combined verdict by the Session's rule
  (:mod:`evalsift.oracle.votes`): per annotator the latest judgment counts (a later ``error``
  or ``skipped`` one withdraws that annotator's earlier verdict); over annotators the plurality of
  a / b / tie, a split top being a tie. An item without a verdict is an OracleError naming it.
- :meth:`JudgmentsOracle.covers` is True for the items that have a combined verdict, so
  ``restrict_pair(pool, a, b, oracle=...)`` and the pairwise benchmark keep exactly those.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Sequence

import numpy as np

from ..errors import OracleError, ParameterError
from ..pool import Pool
from .base import Judgment, oracle
from .aggregate import aggregated
from .votes import _FLIP, _ORDER_FLIP, combine, orient  # noqa: F401 (also evalsift.oracle.judgments.*, as before)

@oracle("judgments", help="replay recorded pairwise verdicts: judgments:FILE (a pairwise table, Chatbot Arena "
                          "battles, FastChat judgments, AlpacaEval annotations) or a recorded dataset "
                          "(summeval/llm-pairwise/<dim>, alpaca-eval/preferences, arena-ppr/human)")
class JudgmentsOracle:
    """Replays recorded pairwise judgments (see the module doc for what each method returns).

    ``source``: a pairwise table path, a recorded dataset name (``summeval/llm-pairwise/coherence``,
    ``alpaca-eval/preferences``), a :class:`~evalsift.io.pairwise.PairwiseData`, or Judgments.
    ``kind`` is the kind shared by the recorded judgments (``mixed`` when they differ). ``aggregate``: a rule
    of :mod:`evalsift.oracle.aggregate` (``majority``, ``dawid-skene``, ``mace``; ``seed`` for MACE) replacing
    the recorded judgments by one per item and pair, its fit in ``aggregation`` (None without).

    >>> from evalsift.io import make_demo_pool
    >>> pool = make_demo_pool(n_items=3)
    >>> recorded = [Judgment(item_id="0", a="A", b="B", verdict="a", annotator="ann", kind="human"),
    ...             Judgment(item_id="1", a="B", b="A", verdict="a", annotator="ann", kind="human")]
    >>> o = JudgmentsOracle(recorded)
    >>> [(j.verdict, j.status) for j in o.judge_pairs(pool, [0, 1, 2], "A", "B")]
    [('a', 'done'), ('b', 'done'), (None, 'error')]
    >>> o.covers(pool, "A", "B").tolist(), list(o.verdicts(pool, [0, 1], "B", "A"))
    ([True, True, False], ['b', 'a'])
    """

    argument = "FILE, recorded pairwise verdicts (e.g. judgments:pairs.csv)"

    def __init__(self, source: Any, *, name: str | None = None, aggregate: str | None = None, seed: int = 0) -> None:
        from ..io.pairwise import PairwiseData, read_judgments

        if isinstance(source, PairwiseData):
            data_source, judgments = source.source, tuple(source.judgments)
        elif isinstance(source, (str, Path)):
            if not str(source):
                raise ParameterError("JudgmentsOracle needs a source, e.g. 'judgments:pairs.csv'", field="oracle")
            data = read_judgments(source)
            data_source, judgments = str(source), data.judgments
        else:
            judgments = tuple(source)
            bad = next((j for j in judgments if not isinstance(j, Judgment)), None)
            if bad is not None:
                raise ParameterError(f"JudgmentsOracle takes a file, a dataset name, PairwiseData or Judgments; got a "
                                     f"{type(bad).__name__} among the judgments", field="oracle")
            data_source = "inline"
        self.source = data_source
        # --aggregate RULE: one verdict per item and pair by that rule (evalsift.oracle.aggregate); None: as recorded
        judgments, self.aggregation = aggregated(judgments, aggregate, seed=seed, source=f"judgments:{data_source}")
        self.judgments: tuple[Judgment, ...] = judgments
        self.name = name or f"judgments:{data_source}"
        kinds = {j.kind for j in judgments}
        self.kind = kinds.pop() if len(kinds) == 1 else ("mixed" if kinds else "human")
        self._by_pair: dict[frozenset, dict[str, list[Judgment]]] = {}
        for j in judgments:
            self._by_pair.setdefault(frozenset((j.a, j.b)), {}).setdefault(j.item_id, []).append(j)
        self._combined: dict[tuple[str, str], dict[str, str]] = {}

    # ------------------------------------------------------------------ helpers
    def _pair(self, pool: Pool, a: str, b: str) -> dict[str, list[Judgment]]:
        pool.system_index(a)  # an unknown system is a DataError with a suggestion
        pool.system_index(b)
        if a == b:
            raise ParameterError(f"{self.name}: a pair needs two different systems, got {a!r} twice", system=a)
        return self._by_pair.get(frozenset((a, b)), {})

    def _verdicts_of(self, pool: Pool, a: str, b: str) -> dict[str, str]:
        """item_id -> combined verdict for ``a`` vs ``b`` (items with a verdict only); cached per ordered pair."""
        by_item = self._pair(pool, a, b)
        key = (a, b)
        if key not in self._combined:
            out = {}
            for iid, js in by_item.items():
                v = combine(orient(j, a, b) for j in js)
                if v is not None:
                    out[iid] = v
            self._combined[key] = out
        return self._combined[key]

    # ------------------------------------------------------------------ the Oracle protocol
    def judge_pairs(self, pool: Pool, items: Sequence[int], a: str, b: str) -> list[Judgment]:
        """Every recorded judgment of each item for ``a`` vs ``b`` (oriented to that order), in item
        order; one 'error' judgment for an item with none."""
        by_item = self._pair(pool, a, b)
        out: list[Judgment] = []
        for i in items:
            iid = pool.item_ids[int(i)]
            recorded = by_item.get(iid)
            if recorded:
                out.extend(orient(j, a, b) for j in recorded)
            else:
                out.append(Judgment(item_id=iid, a=a, b=b, verdict=None, annotator=self.name, kind=self.kind,
                                    status="error", detail={"reason": f"no recorded verdict for {a} vs {b}"}))
        return out

    def covers(self, pool: Pool, a: str, b: str) -> np.ndarray:
        """Per item of ``pool``: True where the recorded judgments give a verdict for ``a`` vs ``b``."""
        have = self._verdicts_of(pool, a, b)
        return np.array([iid in have for iid in pool.item_ids], dtype=bool)

    def verdicts(self, pool: Pool, items: Sequence[int], a: str, b: str) -> np.ndarray:
        """Each item's combined verdict ('a', 'b' or 'tie'; the Session's rule, see the module doc).

        An item without a recorded verdict is an OracleError naming it: keep the items this oracle
        covers with ``restrict_pair(pool, a, b, oracle=oracle)``.
        """
        have = self._verdicts_of(pool, a, b)
        ids = [pool.item_ids[int(i)] for i in items]
        missing = [iid for iid in ids if iid not in have]
        if missing:
            raise OracleError(f"{self.name}: no recorded verdict for {a} vs {b} on {len(missing)} of {len(ids)} item(s) "
                              f"(first: {missing[0]!r}); keep the items it covers with restrict_pair(pool, {a!r}, "
                              f"{b!r}, oracle=oracle).", item_id=missing[0], system=b)
        return np.array([have[iid] for iid in ids], dtype=object)

    def __repr__(self) -> str:
        return f"JudgmentsOracle({self.source!r}: {len(self.judgments)} judgments, kind {self.kind!r})"
