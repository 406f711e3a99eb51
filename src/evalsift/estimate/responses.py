"""The response matrix that full-benchmark estimation works on: systems x items, one score per cell.

:func:`response_matrix` builds it from anything evalsift reads (a long table, subset2evaluate JSONL,
mt-metrics-eval with a human or metric score, the binary ``opencompass-irt`` matrix) and, for an
AlpacaEval folder, from its judge preferences against the baseline: every model in
``preferences_all_annotators.csv.gz`` (57 besides the baseline for ``weighted_alpaca_eval_gpt4_turbo``),
the score of a cell being ``preference - 1`` (1: the model's output is preferred; a recorded 0, AlpacaEval's
draw, is 0.5; continuous for the
weighted judge), so a system's mean is its AlpacaEval win rate.

A system's **full-benchmark score** is its mean over the matrix's items. Items some system lacks are
left out when the matrix is built (the count is in :attr:`ResponseMatrix.notes`), except for the
systems named in ``keep_partial`` (a new system judged on a few items only).

**The score's range** (:attr:`ResponseMatrix.bounds`) is what the data's format or the metric's
definition states, never what the scores happen to span (a new system may score beyond every known
one): AlpacaEval's preferences lie in [1, 2] (so a cell in [0, 1]), opencompass-irt's cells are
correct/incorrect ([0, 1]), WMT's MQM is a weighted error count with 0 for a perfect segment (at
most 0, no lower end) and DA+SQM a 0-100 slider (:data:`NATURAL_RANGES`). Anything else has no
stated range (``bounds`` None): its intervals are not clipped, and :attr:`ResponseMatrix.notes`
says so.

>>> R = response_matrix("demo", metric="human")
>>> R.Y.shape, R.systems, R.unit
((3, 300), ('A', 'B', 'C'), 'human')
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

import numpy as np

from ..errors import DataError, suggest
from ..io.harness import HARNESSES

ALPACA_TABLE = "preferences_all_annotators.csv.gz"
# (format, metric) -> (lowest, highest) score the metric can take; None: no end on that side. Metric None:
# every metric of that format. Only ranges the format or the metric's definition states.
NATURAL_RANGES: dict[tuple[str, str | None], tuple[float | None, float | None]] = {
    ("alpaca", None): (0.0, 1.0),       # preference in [1, 2], the cell is preference - 1
    ("opencompass", None): (0.0, 1.0),  # correct (1) or not (0)
    ("mtme", "mqm"): (None, 0.0),       # MQM: minus the weighted errors; 0 is a perfect segment
    ("mtme", "da-sqm"): (0.0, 100.0),   # DA+SQM: a 0-100 slider
    # the harnesses' scorers whose definition is correct (1) or not (0), or a share of such (evalsift.io.harness);
    # lm-eval's filtered variants ("exact_match,strict-match") take the metric's range
    **{(fmt, m): (0.0, 1.0) for fmt, names in (
        ("lm-eval", ("acc", "acc_norm", "acc_mutual_info", "exact_match")),
        ("inspect", ("match", "includes", "choice", "exact", "model_graded_qa", "model_graded_fact")),  # C/I/P/N
        ("helm", ("exact_match", "quasi_exact_match", "prefix_exact_match", "quasi_prefix_exact_match")),
        ("rewardbench", ("accuracy",)),
        ("every-eval", ("is_correct",))) for m in names},
}


@dataclass(frozen=True, eq=False)
class ResponseMatrix:
    """Systems x items scores (``Y``; NaN only in the rows of ``keep_partial`` systems), per-item
    columns, and how it was built.

    ``scale``: 100 when every score lies in [0, 1] (then scores, errors and widths are reported in
    points: a win rate or an accuracy in percent), else 1 (the metric's own unit, e.g. MQM).
    ``bounds``: the score's stated range (module doc), ``(low, high)`` with None for an open end, or
    None when the data states none.
    """

    systems: tuple[str, ...]
    item_ids: tuple[str, ...]
    Y: np.ndarray
    metric: str
    source: str
    columns: dict[str, np.ndarray] = field(default_factory=dict)
    notes: tuple[str, ...] = ()
    bounds: tuple[float | None, float | None] | None = None

    @property
    def scale(self) -> float:
        """100 for scores in [0, 1] (reported in points), else 1."""
        v = self.Y[np.isfinite(self.Y)]
        return 100.0 if v.size and v.min() >= 0 and v.max() <= 1 else 1.0

    @property
    def unit(self) -> str:
        """``points`` (scale 100) or the metric's name."""
        return "points" if self.scale == 100.0 else self.metric

    @property
    def binary(self) -> bool:
        """True when every score is 0 or 1."""
        v = self.Y[np.isfinite(self.Y)]
        return bool(np.isin(v, (0.0, 1.0)).all())

    @property
    def n_items(self) -> int:
        """Items (columns)."""
        return len(self.item_ids)

    def index(self, system: str) -> int:
        """The row of ``system``; DataError naming the systems there (and the closest) otherwise."""
        try:
            return self.systems.index(system)
        except ValueError:
            raise DataError(f"system {system!r} is not in {self.source}.{suggest(system, self.systems)} Systems: "
                            f"{', '.join(self.systems)}.", field="system", system=system) from None

    def full_scores(self) -> np.ndarray:
        """Each system's mean over every item (NaN for a partial row)."""
        return self.Y.mean(axis=1)

    def without(self, system: str) -> tuple["ResponseMatrix", np.ndarray]:
        """(the matrix of every other system, ``system``'s row)."""
        i = self.index(system)
        keep = [k for k in range(len(self.systems)) if k != i]
        return (ResponseMatrix(tuple(self.systems[k] for k in keep), self.item_ids, self.Y[keep], self.metric,
                               self.source, self.columns, self.notes, self.bounds), self.Y[i])

    def rows(self, systems: Iterable[str]) -> "ResponseMatrix":
        """The matrix of ``systems`` only (in that order)."""
        idx = [self.index(s) for s in systems]
        return ResponseMatrix(tuple(self.systems[k] for k in idx), self.item_ids, self.Y[idx], self.metric,
                              self.source, self.columns, self.notes, self.bounds)

    def group(self, column: str, value: Any) -> "ResponseMatrix":
        """The items whose ``column`` equals ``value``; DataError naming the columns or values otherwise."""
        col = self._column(column)
        mask = np.array([str(v) == str(value) for v in col])
        if not mask.any():
            values = list(dict.fromkeys(str(v) for v in col))
            raise DataError(f"no item of {self.source} has {column} = {value!r}.{suggest(str(value), values)} "
                            f"Values: {', '.join(values[:30])}.", field=column)
        return ResponseMatrix(self.systems, tuple(np.asarray(self.item_ids, dtype=object)[mask]), self.Y[:, mask],
                              self.metric, f"{self.source} [{column}={value}]",
                              {k: np.asarray(v, dtype=object)[mask] for k, v in self.columns.items()}, self.notes,
                              self.bounds)

    def groups(self, column: str) -> list[str]:
        """The values of ``column``, in first-seen order."""
        return list(dict.fromkeys(str(v) for v in self._column(column)))

    def column(self, column: str) -> np.ndarray:
        """The per-item values of ``column`` (a DataError naming the columns there are when it is absent)."""
        return self._column(column)

    def _column(self, column: str) -> np.ndarray:
        if column not in self.columns:
            raise DataError(f"{self.source} has no per-item column {column!r}.{suggest(column, self.columns)} "
                            f"Columns: {', '.join(self.columns) or 'none'}.", field=column)
        return self.columns[column]


def _alpaca_table(spec: str) -> Path | None:
    """The AlpacaEval preference table behind ``spec`` (a dataset name, folder or the table), or None."""
    from ..io import resolve

    fmt, path = resolve(spec)  # an unknown name or unreadable path raises here as load() would
    if path is None:
        return None
    if fmt == "alpaca":
        folder = path.parent if path.name == "model_outputs" else path
        return folder / ALPACA_TABLE if (folder / ALPACA_TABLE).is_file() else None
    return path if path.name == ALPACA_TABLE else None


def _from_alpaca(table: Path, config: str | None, spec: str) -> ResponseMatrix:
    from ..io.pairwise_recorded import ALPACA_CONFIG, read_alpaca_preferences

    data = read_alpaca_preferences(table, config or ALPACA_CONFIG)
    if not data.judgments:
        raise DataError(f"{table}: no preferences of annotator config {config or ALPACA_CONFIG!r}; name another with "
                        "--metric (an annotator_config of the table).", field="metric")
    systems = list(dict.fromkeys(j.b for j in data.judgments))
    items = list(dict.fromkeys(j.item_id for j in data.judgments))
    Y = np.full((len(systems), len(items)), np.nan)
    si = {s: i for i, s in enumerate(systems)}
    ii = {s: i for i, s in enumerate(items)}
    for j in data.judgments:
        p = j.detail.get("preference")
        if p is not None and j.status == "done":
            Y[si[j.b], ii[j.item_id]] = 0.5 if float(p) == 0 else float(p) - 1.0  # 0: AlpacaEval's draw
    cols = {}
    pool_cols = getattr(data.pool, "metadata", {})
    if "dataset" in pool_cols:
        by_id = dict(zip(data.pool.item_ids, pool_cols["dataset"]))
        cols["dataset"] = np.array([by_id.get(i, "") for i in items], dtype=object)
    return ResponseMatrix(tuple(systems), tuple(items), Y, config or ALPACA_CONFIG, spec, cols,
                          bounds=NATURAL_RANGES[("alpaca", None)])


def _metric_of(pool, metric: str | None) -> str:
    if metric is not None:
        return pool.check_metric(metric)
    human = [m for m in pool.metrics if pool.is_human(m)]
    if len(human) == 1:
        return human[0]
    if len(pool.metrics) == 1:
        return pool.metrics[0]
    raise DataError(f"{pool.name}: name the score to estimate with --metric; it has "
                    f"{'human metrics ' + ', '.join(human) if human else 'metrics ' + ', '.join(pool.metrics)}.",
                    field="metric")


def response_matrix(data: Any, *, metric: str | None = None, keep_partial: Iterable[str] = (),
                    include_refs: bool = False, partial_if_present: Iterable[str] = ()) -> ResponseMatrix:
    """The systems x items matrix of ``data`` (a spec :func:`evalsift.io.load` reads, or a Pool) on
    ``metric`` (default: the data's only human metric, or its only metric). Items lacking a score
    for some system are left out, except that a system in ``keep_partial`` may lack any (module doc).
    ``partial_if_present``: systems kept as ``keep_partial`` ones when the data has them, and no error when
    it does not (``estimate --run``: the new system's scores come from its own run, and the data may or
    may not hold some of them too).
    """
    keep_partial = set(keep_partial)
    optional = set(partial_if_present)
    fmt = None
    if isinstance(data, (str, Path)):
        table = _alpaca_table(str(data))
        if table is not None:
            R = _from_alpaca(table, metric if metric not in (None, "gpt4_turbo_pref") else None, str(data))
            return _complete(R, keep_partial | (optional & set(R.systems)))
        from ..io import load, resolve

        fmt = resolve(str(data))[0]
        data = load(str(data), include_refs=include_refs)
    pool = data
    m = _metric_of(pool, metric)
    Y = np.asarray(pool.scores[m], dtype=float).T.copy()  # systems x items
    cols = {}
    for f in pool.metadata:
        col = pool.metadata[f]
        if len(col) == pool.n_items and (not isinstance(col, np.ndarray) or col.ndim == 1):
            if all(isinstance(v, (str, int, np.integer)) for v in list(col)[:50]):
                cols[f] = np.asarray(list(col), dtype=object)
    R = ResponseMatrix(tuple(pool.systems), tuple(pool.item_ids), Y, m, pool.name, cols,
                       bounds=natural_range(fmt, m, pool.is_human(m)))
    return _complete(R, keep_partial | (optional & set(R.systems)))


def natural_range(fmt: str | None, metric: str, human: bool = True) -> tuple[float | None, float | None] | None:
    """The stated range of ``metric`` read in format ``fmt`` (:data:`NATURAL_RANGES`), or None. A
    metric's score file (mt-metrics-eval ``metric-scores``) is not a human score of that name; a harness's
    scorer (a format of :data:`evalsift.io.harness.HARNESSES`) has its range whatever its flag.

    >>> natural_range("lm-eval", "exact_match,strict-match", human=False), natural_range("lm-eval", "perplexity")
    ((0.0, 1.0), None)
    """
    if fmt is None:
        return None
    if (fmt, None) in NATURAL_RANGES:
        return NATURAL_RANGES[(fmt, None)]
    if fmt in HARNESSES:  # a tool's automatic scorer, never a human column
        return NATURAL_RANGES.get((fmt, metric.split(",")[0]))
    return NATURAL_RANGES.get((fmt, metric)) if human else None


def _range_text(bounds) -> str:
    lo, hi = bounds
    return f"[{'-inf' if lo is None else f'{lo:g}'}, {'inf' if hi is None else f'{hi:g}'}]"


def _complete(R: ResponseMatrix, keep_partial: set[str]) -> ResponseMatrix:
    unknown = keep_partial - set(R.systems)
    if unknown:
        s = sorted(unknown)[0]
        R.index(s)  # raises naming the systems
    full = np.array([s not in keep_partial for s in R.systems])
    if not full.any():
        raise DataError(f"{R.source}: no known system besides {sorted(keep_partial)}; estimation needs the other "
                        "systems' scores on every item.", field="systems")
    ok = np.isfinite(R.Y[full]).all(axis=0)
    empty = [s for s, row in zip(R.systems, np.isfinite(R.Y[:, ok])) if not row.any() and s not in keep_partial]
    if ok.sum() == 0:
        raise DataError(f"{R.source}: no item has a {R.metric} score for every system; name a metric every system "
                        "has with --metric.", field="metric")
    notes = list(R.notes)
    bounds = R.bounds
    if bounds is not None:
        v = R.Y[np.isfinite(R.Y)]
        lo, hi = bounds
        if (lo is not None and v.size and v.min() < lo) or (hi is not None and v.size and v.max() > hi):
            notes.append(f"some {R.metric} scores lie outside the metric's range {_range_text(bounds)} "
                         f"(from {v.min():g} to {v.max():g}), so intervals are not kept inside it")
            bounds = None
    else:
        notes.append(f"the data states no range for {R.metric}, so intervals are not kept inside one (only "
                     "AlpacaEval, opencompass-irt and WMT's MQM and DA+SQM have a stated range)")
    if not ok.all():
        notes.append(f"{int((~ok).sum())} of {R.n_items} items lack a {R.metric} score for some system and are left "
                     f"out ({int(ok.sum())} items remain)")
    if empty:
        raise DataError(f"{R.source}: systems {empty} have no score at all.", field="systems")
    return ResponseMatrix(R.systems, tuple(np.asarray(R.item_ids, dtype=object)[ok]), R.Y[:, ok], R.metric, R.source,
                          {k: v[ok] for k, v in R.columns.items()}, tuple(notes), bounds)
