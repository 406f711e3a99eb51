"""What the evaluation harnesses' readers share: one per-item record, one way to build a Pool from records,
the letter grades, and the registry of harness formats that ``load``, ``detect_format`` and ``data info`` use.

Each harness reader (:mod:`~evalsift.io.lm_eval`, :mod:`~evalsift.io.inspect_logs`, :mod:`~evalsift.io.helm`,
:mod:`~evalsift.io.rewardbench`, :mod:`~evalsift.io.every_eval`, :mod:`~evalsift.io.arena_hard`) turns the
tool's own files into :class:`Record` objects, one per (system, item), and hands them to :func:`pool_from_records`:

- items keep their first-seen order, and so do systems;
- a system's run that lacks items the others have is joined on the items every run shares, and a
  :class:`~evalsift.errors.DataWarning` names the runs and how many items were left out of each;
- a repeated (system, item) is an error naming both places, unless the reader reduced it first (inspect's
  epochs are read from the log's own reductions, whatever its reducer);
- every numeric per-item metric becomes a metric of the Pool; the grouping (``task``, ``subset``,
  ``category``, ``benchmark``) becomes a per-item column that ``--by`` can name.

"""

from __future__ import annotations

import importlib
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping

import numpy as np

from ..errors import DataError
from ..pool import Pool
from ._common import warn_data

#: inspect_ai's letter grades (its ``value_to_float``: CORRECT, INCORRECT, PARTIAL, NOANSWER)
LETTERS = {"C": 1.0, "I": 0.0, "P": 0.5, "N": 0.0}
#: JSON booleans as scores (lm-eval's exact_match on some tasks, RewardBench's results)
BOOLS = {True: 1.0, False: 0.0}


@dataclass(frozen=True)
class Record:
    """One system's result on one item, as a harness recorded it.

    ``where`` names the file (and line or entry) the record came from, for errors. ``metrics`` maps a
    metric name to a number (or a letter grade / boolean that :func:`score_value` maps). ``group`` holds the
    tool's grouping columns (``{"task": "arc_easy"}``). A model grader's scores (inspect's ``model_graded_*``
    scorers) are metrics like any other, named in the reader's note, and work as ``--proxy metric:NAME``.
    ``meta`` holds other per-item fields (first non-empty value per item wins)."""

    system: str
    item: str
    metrics: Mapping[str, Any]
    input: str | None = None
    output: str | None = None
    reference: str | None = None
    group: Mapping[str, Any] = field(default_factory=dict)
    meta: Mapping[str, Any] = field(default_factory=dict)
    where: str = ""


def score_value(value: Any, metric: str, where: str, letters_seen: set[str] | None = None) -> float:
    """A per-item metric value as a float: numbers as they are, booleans 1/0, inspect's letters C/I/P/N as
    1/0/0.5/0 (``letters_seen`` collects the metrics that had letters, for the note), None as NaN; a DataError
    naming the metric and the place otherwise.

    >>> score_value("P", "match", "x"), score_value(True, "acc", "x"), score_value(None, "acc", "x")
    (0.5, 1.0, nan)
    """
    if value is None:
        return math.nan
    if isinstance(value, bool):
        return BOOLS[value]
    if isinstance(value, (int, float, np.integer, np.floating)):
        v = float(value)
        if math.isinf(v):
            raise DataError(f"{where}: metric {metric!r} is {v}; scores must be finite (leave it out where there is none).",
                            field=metric)
        return v
    if isinstance(value, str) and value in LETTERS:
        if letters_seen is not None:
            letters_seen.add(metric)
        return LETTERS[value]
    raise DataError(f"{where}: metric {metric!r} is {value!r}, not a number, a boolean or one of inspect's letters "
                    f"C/I/P/N; fix the value or leave the metric out.", field=metric)


def letters_note(metrics: Iterable[str], tool: str) -> None:
    """The note for metrics read from letter grades (C/I/P/N as 1/0/0.5/0, as inspect's ``value_to_float``)."""
    metrics = sorted(metrics)
    if metrics:
        warn_data(f"{tool}: metric(s) {', '.join(metrics)} hold letter grades, read as C=1, I=0, P=0.5, N=0 "
                  "(inspect_ai's value_to_float)")


def pool_from_records(records: Iterable[Record], *, name: str, tool: str, join: str = "shared",
                      human_metrics: Iterable[str] = ()) -> Pool:
    """A Pool from per-item records (see the module's docstring for the rules).

    ``join="shared"`` keeps the items every system has (a note names what was left out); ``join="all"``
    keeps every item, NaN where a system has no record. ``tool`` names the harness in errors and notes.

    >>> recs = [Record("m1", "t/0", {"acc": 1}, group={"task": "t"}), Record("m1", "t/1", {"acc": "I"}),
    ...         Record("m2", "t/0", {"acc": 0.0}, group={"task": "t"})]
    >>> import warnings
    >>> with warnings.catch_warnings(record=True) as w:
    ...     warnings.simplefilter("always")
    ...     pool = pool_from_records(recs, name="x", tool="demo")
    >>> pool.item_ids, pool.systems, pool.score("acc").tolist(), pool.column("task")
    (('t/0',), ('m1', 'm2'), [[1.0, 0.0]], ('t',))
    >>> sorted(str(x.message)[:40] for x in w)
    ['demo: 1 of 2 items are left out: only th', 'demo: metric(s) acc hold letter grades, ']
    """
    items: dict[str, int] = {}
    systems: dict[str, int] = {}
    cells: dict[tuple[int, int], dict[str, float]] = {}
    first: dict[tuple[int, int], str] = {}
    inputs: dict[int, str] = {}
    refs: dict[int, str] = {}
    outputs: dict[tuple[int, int], str] = {}
    meta: dict[str, dict[int, Any]] = {}
    metric_names: dict[str, None] = {}
    letters: set[str] = set()
    for r in records:
        i = items.setdefault(str(r.item), len(items))
        k = systems.setdefault(str(r.system), len(systems))
        if (i, k) in cells:
            raise DataError(f"{tool}: system {r.system!r} has item {r.item!r} twice: {first[(i, k)]} and {r.where}; "
                            "keep one run per system and item (or name the runs apart).", item_id=str(r.item),
                            system=str(r.system))
        first[(i, k)] = r.where
        vals = {}
        for m, v in r.metrics.items():
            metric_names.setdefault(str(m), None)
            vals[str(m)] = score_value(v, str(m), r.where or tool, letters)
        cells[(i, k)] = vals
        if r.input is not None and i not in inputs:
            inputs[i] = r.input
        if r.reference is not None and i not in refs:
            refs[i] = r.reference
        if r.output is not None:
            outputs[(i, k)] = r.output
        for col, v in (*r.group.items(), *r.meta.items()):
            if v is not None and v != "":
                meta.setdefault(str(col), {}).setdefault(i, v)
    if not cells:
        raise DataError(f"{name}: {tool} files with no per-item results; point at the files that hold one line "
                        "or entry per item (docs/data.md, 'Harness results').")
    letters_note(letters, tool)
    item_list, sys_list = list(items), list(systems)
    keep = list(range(len(item_list)))
    if join == "shared" and len(sys_list) > 1:
        has = np.zeros((len(item_list), len(sys_list)), dtype=bool)
        for i, k in cells:
            has[i, k] = True
        shared = has.all(axis=1)
        if not shared.any():
            raise DataError(f"{name}: the {tool} runs of {', '.join(sys_list)} share no item, so there is nothing to "
                            "compare; read them one at a time, or runs of the same tasks together.")
        if not shared.all():
            keep = [int(i) for i in np.flatnonzero(shared)]
            lost = []
            for k, s in enumerate(sys_list):
                extra = int((has[:, k] & ~shared).sum())
                missing = int((~has[:, k]).sum())
                if extra or missing:
                    lost.append(f"{s} lacks {missing}" + (f" and has {extra} the others lack" if extra else ""))
            warn_data(f"{tool}: {len(item_list) - len(keep)} of {len(item_list)} items are left out: only the "
                      f"{len(keep)} items every run has are joined ({'; '.join(lost)})")
    elif join not in ("shared", "all"):
        raise ValueError(f"join must be 'shared' or 'all', got {join!r}")
    pos = {i: p for p, i in enumerate(keep)}
    n, m = len(keep), len(sys_list)
    scores = {metric: np.full((n, m), np.nan) for metric in metric_names}
    outs = {s: [None] * n for s in sys_list}
    for (i, k), vals in cells.items():
        p = pos.get(i)
        if p is None:
            continue
        for metric, v in vals.items():
            scores[metric][p, k] = v
        if (i, k) in outputs:
            outs[sys_list[k]][p] = outputs[(i, k)]
    item_ids = [item_list[i] for i in keep]
    metadata = {col: [vals.get(i) for i in keep] for col, vals in meta.items()}
    references = {"ref": [refs.get(i) for i in keep]} if refs else None
    return Pool(item_ids=item_ids, inputs=[inputs.get(i) for i in keep], systems=sys_list, outputs=outs,
                scores=scores, human_metrics=human_metrics, references=references, metadata=metadata, name=name)


@dataclass(frozen=True)
class Harness:
    """A harness format: ``module`` (in :mod:`evalsift.io`) holds ``reader`` (path, name=..., **options -> Pool),
    ``looks`` (path -> bool: a file or folder this tool wrote) and ``describe`` (path -> dict: at least ``tool``,
    and ``version`` where the files record it, for ``data info``)."""

    name: str
    tool: str
    module: str
    reader: str
    looks: str
    describe: str
    doc: str

    def function(self, role: str) -> Callable[..., Any]:
        """The module's ``reader``, ``looks`` or ``describe`` function."""
        return self._fn(getattr(self, role))

    def _fn(self, attr: str) -> Callable[..., Any]:
        mod = importlib.import_module(f"evalsift.io.{self.module}")  # our own fixed module names, never a file's
        return getattr(mod, attr)

    def read(self, path: Path, **kw: Any) -> Pool:
        """Read ``path`` with this harness's reader."""
        return self._fn(self.reader)(path, **kw)

    def matches(self, path: Path) -> bool:
        """Whether ``path`` looks like this harness's files."""
        return bool(self._fn(self.looks)(path))

    def info(self, path: Path) -> dict[str, Any]:
        """What ``data info`` says about the files: which tool wrote them (and its version), what was found."""
        return dict(self._fn(self.describe)(path))


#: the harness formats, in the order detection tries them
HARNESSES: dict[str, Harness] = {}


def add_harness(h: Harness) -> None:
    """Register a harness format (``io.formats`` gets it as ``h.name``)."""
    HARNESSES[h.name] = h


for _h in (
    Harness("lm-eval", "lm-evaluation-harness", "lm_eval", "read_lm_eval", "looks_lm_eval", "describe_lm_eval",
            "lm-evaluation-harness --log_samples output (samples_<task>_<time>.jsonl beside results_<time>.json), "
            "or an Open LLM Leaderboard details parquet"),
    Harness("inspect", "inspect_ai", "inspect_logs", "read_inspect", "looks_inspect", "describe_inspect",
            "inspect_ai logs: .eval (zip, zstd entries too) or .json, a file or a folder of them"),
    Harness("helm", "HELM", "helm", "read_helm", "looks_helm", "describe_helm",
            "HELM run folders (run_spec.json, per_instance_stats.json, scenario_state.json), streamed"),
    Harness("arena-hard", "Arena-Hard-Auto", "arena_hard", "read_arena_hard_pool", "looks_arena_hard",
            "describe_arena_hard", "Arena-Hard-Auto judgments: model_judgment/<judge>/<model>.jsonl"),
    Harness("rewardbench", "RewardBench", "rewardbench", "read_rewardbench", "looks_rewardbench", "describe_rewardbench",
            "RewardBench per-prompt results: eval-set-scores/<org>/<model>.json (id, subset, results)"),
    Harness("every-eval", "Every Eval Ever", "every_eval", "read_every_eval", "looks_every_eval", "describe_every_eval",
            "Every Eval Ever instance-level <uuid>_samples.jsonl (sample_id, model_id, evaluation_name, evaluation)"),
):
    add_harness(_h)


def detect_harness(path: Path) -> str | None:
    """The name of the harness format whose files ``path`` is (a file or a folder), or None."""
    for h in HARNESSES.values():
        try:
            if h.matches(path):
                return h.name
        except ImportError:  # a reader whose optional dependency is missing: its own reader says so when forced
            continue
    return None
