"""Long tables: one row per (item, system), as CSV, TSV, JSONL or Parquet.

Columns:

- required: ``item_id``, ``system``, ``output``;
- optional per-item fields: ``input``, ``reference``, ``domain``, ``doc``, ``cost`` (first non-empty
  value per item wins);
- every other column is a metric or per-item metadata, by its cells (see below).

Cells: an empty cell, JSON ``null`` and the tokens of :data:`~evalsift.io._common.MISSING_TOKENS`
(``NA``, ``N/A``, ``n/a``, ``NaN``, ``None``, ``null``, ``NULL``, ``-``, ...) are *missing* (a NaN
score, ``None`` text); ``-1`` and the like stay numbers. Every other cell is a number or not.

Columns:

- **Human columns** -- named ``human`` or ``human_*``, or listed in ``human_metrics`` -- are human
  metrics and must hold numbers: a non-numeric cell is a DataError naming the column, the line
  (CSV/TSV: the header is line 1; JSONL: the file's line; Parquet: ``row N``, 1-based) and the value.
  ``cost`` must hold numbers too.
- A column whose non-missing cells are all numbers is a metric (NaN where missing).
- A column that is *mostly* numbers (at least one number, and numbers in at least half of its
  non-missing cells) with some non-numeric cells is kept as per-item metadata, not as a metric, and a
  :class:`~evalsift.errors.DataWarning` names the column, the first offending line and value and the
  number of such cells: blank or fix those cells to use it as a metric.
- Any other column (text such as ``annotator`` or ``note``) is per-item metadata (first non-missing
  value per item), silently.

Items and systems keep their first-seen order. A repeated (item_id, system) pair is an error naming
both lines. A file without rows (empty, blank lines only, or a CSV/TSV with only its header) is a
DataError. Missing, unreadable, non-UTF-8 and non-Parquet files are DataErrors naming the file.
"""

from __future__ import annotations

import csv
import io
import json
import math
from pathlib import Path
from typing import Any, Iterable

import numpy as np

from ..errors import DataError, missing_dependency
from ..pool import Pool
from ._common import (blank_state, check_file, check_human, clean_value, empty_file_error, iter_jsonl, json_default,
                      nan_matrix, read_bytes, read_text, to_float, warn_data)

REQUIRED = ("item_id", "system", "output")
ITEM_FIELDS = ("input", "reference", "domain", "doc", "cost")
SUFFIXES = {".csv": "csv", ".tsv": "tsv", ".tab": "tsv", ".jsonl": "jsonl", ".ndjson": "jsonl",
            ".parquet": "parquet", ".pq": "parquet"}


def table_kind(path: Path) -> str:
    """``csv``, ``tsv``, ``jsonl`` or ``parquet`` from the file suffix; DataError otherwise."""
    kind = SUFFIXES.get(Path(path).suffix.lower())
    if kind is None:
        raise DataError(f"{path}: unknown table format {Path(path).suffix!r}; use one of {', '.join(SUFFIXES)}.")
    return kind


def _pyarrow(purpose: str) -> Any:
    try:
        import pyarrow.parquet as pq
    except ImportError:
        raise missing_dependency("pyarrow", "parquet", purpose) from None
    return pq


def _csv_rows(path: Path, delimiter: str) -> list[tuple[str, dict[str, Any]]]:
    text = read_text(path)
    reader = csv.DictReader(io.StringIO(text, newline=""), delimiter=delimiter)
    out = []
    try:
        for rec in reader:
            out.append((f"line {reader.line_num}", {k: (None if v == "" else v) for k, v in rec.items() if k is not None}))
    except csv.Error as e:
        raise DataError(f"{path}: line {reader.line_num} is not valid {'CSV' if delimiter == ',' else 'TSV'} ({e}).") from None
    if not out:
        state = blank_state(text) if not text.strip() else "has only a header line"
        raise empty_file_error(path, state, "rows", f"a header line with {', '.join(REQUIRED)} (and score columns), "
                               "then one line per (item, system)")
    return out


def _jsonl_rows(path: Path) -> list[tuple[str, dict[str, Any]]]:
    out = []
    for lineno, rec in iter_jsonl(path, what="rows",
                                  expected=f"one JSON object per line with {', '.join(REQUIRED)} (and scores)"):
        if not isinstance(rec, dict):
            raise DataError(f"{path}: line {lineno}: expected a JSON object with item_id, system, output.")
        out.append((f"line {lineno}", rec))
    return out


def _parquet_rows(path: Path) -> list[tuple[str, dict[str, Any]]]:
    check_file(path)
    pq = _pyarrow("Reading Parquet tables")
    import pyarrow as pa

    data = read_bytes(path)
    try:
        records = pq.read_table(pa.BufferReader(data)).to_pylist()
    except (pa.ArrowException, OSError, ValueError) as e:
        reason = str(e).replace("Could not open Parquet input source '<Buffer>': ", "")
        raise DataError(f"{path}: not a readable Parquet file ({reason}). Write it with pandas' DataFrame.to_parquet or "
                        "pyarrow, or give the table as .csv/.tsv/.jsonl.") from None
    if not records:
        raise empty_file_error(path, "holds a table with 0 rows", "rows",
                               f"one row per (item, system) with columns {', '.join(REQUIRED)}")
    return [(f"row {k + 1}", rec) for k, rec in enumerate(records)]


def _rows(path: Path) -> list[tuple[str, dict[str, Any]]]:
    """``(where, row)`` pairs, at least one; ``where`` is 'line N' (1-based, header = line 1) or 'row N'."""
    kind = table_kind(path)
    if kind == "jsonl":
        return _jsonl_rows(path)
    if kind == "parquet":
        return _parquet_rows(path)
    return _csv_rows(path, "," if kind == "csv" else "\t")


def _cell_kind(v: Any) -> str:
    """``missing``, ``number`` or ``text`` (see the module docstring)."""
    try:
        x = to_float(v)
    except (TypeError, ValueError):
        return "text"
    return "missing" if math.isnan(x) else "number"


def _is_human_name(column: str) -> bool:
    return column == "human" or column.startswith("human_")


def _not_numbers(rows: list[dict[str, Any]], where: list[str], column: str) -> tuple[int, list[tuple[int, str]]]:
    """(count of number cells, [(row position, where)] of non-numeric cells) of ``column``."""
    numbers, bad = 0, []
    for k, (r, w) in enumerate(zip(rows, where)):
        kind = _cell_kind(r.get(column))
        if kind == "number":
            numbers += 1
        elif kind == "text":
            bad.append((k, w))
    return numbers, bad


def _columns(rows: list[dict[str, Any]], where: list[str], path: Path,
             human_metrics: set[str]) -> tuple[list[str], list[str]]:
    """(metric columns, extra metadata columns) among the non-reserved columns; see the module docstring."""
    cols = list(dict.fromkeys(k for r in rows for k in r))
    missing = [c for c in REQUIRED if c not in cols]
    if missing:
        raise DataError(f"{path}: missing required column(s) {missing}; found columns {cols}. "
                        "A long table needs item_id, system, output (one row per item and system).")
    others = [c for c in cols if c not in REQUIRED and c not in ITEM_FIELDS]
    metrics, meta = [], []
    for c in [*others, *(["cost"] if "cost" in cols else [])]:
        numbers, bad = _not_numbers(rows, where, c)
        if not bad:
            if c != "cost":
                metrics.append(c)
            continue
        k, w = bad[0]
        value = rows[k][c]
        if c == "cost" or _is_human_name(c) or c in human_metrics:
            _raise_not_number(path, c, w, value, rows[k], len(bad))
        if numbers and numbers >= len(bad):
            warn_data(
                f"{path}: column {c!r} has {len(bad)} non-numeric cell{'s' if len(bad) > 1 else ''} among "
                f"{numbers} number{'s' if numbers > 1 else ''} (first on {w}: {value!r}); kept as per-item metadata, "
                "not as a metric; blank or fix those cells to use it as a metric.")
        meta.append(c)
    return metrics, meta


def _raise_not_number(path: Path, column: str, where: str, value: Any, row: dict[str, Any], count: int) -> None:
    if column == "cost":
        why, other = "column 'cost' (the item's annotation cost)", ""
    elif _is_human_name(column):
        why = f"human score column {column!r}"
        other = f"; if {column!r} is not a score, rename it (human and human_* name human metrics)"
    else:
        why = f"human score column {column!r} (listed in human_metrics)"
        other = f"; if {column!r} is not a score, leave it out of human_metrics"
    more = f" ({count} cells of the column are not numbers)" if count > 1 else ""
    raise DataError(
        f"{path}: {where}: {why} holds {value!r}, which is not a number{more}. "
        f"Blank the cell (a missing value) or put a number there{other}.",
        field=column, item_id=row.get("item_id"), system=None if row.get("system") is None else str(row["system"]),
        hint="blank the cell or put a number there")


def _index(rows: list[dict], where: list[str], path: Path) -> tuple[dict[str, int], dict[str, int]]:
    """Positions of items and systems in first-seen order; rejects empty keys and repeated pairs."""
    first: dict[tuple[str, str], str] = {}
    items: dict[str, int] = {}
    systems: dict[str, int] = {}
    for r, w in zip(rows, where):
        if r.get("item_id") is None or r.get("system") is None:
            raise DataError(f"{path}: {w}: item_id and system must not be empty.")
        key = (str(r["item_id"]), str(r["system"]))
        if key in first:
            raise DataError(f"{path}: {w} repeats item {key[0]!r} system {key[1]!r}, first seen on {first[key]}; "
                            "keep one row per (item_id, system).")
        first[key] = w
        items.setdefault(key[0], len(items))
        systems.setdefault(key[1], len(systems))
    return items, systems


def _fill(rows: list[dict], items: dict[str, int], systems: dict[str, int], metric_cols: list[str],
          item_cols: list[str]) -> tuple[dict[str, list], dict[str, np.ndarray], dict[str, list]]:
    """Outputs per system, score matrices per metric, and per-item fields (first non-empty value)."""
    n, names = len(items), list(systems)
    outputs: dict[str, list[Any]] = {s: [None] * n for s in names}
    scores = {m: nan_matrix(n, len(names)) for m in metric_cols}
    fields: dict[str, list[Any]] = {f: [None] * n for f in item_cols}
    for r in rows:
        i, j = items[str(r["item_id"])], systems[str(r["system"])]
        outputs[names[j]][i] = None if r.get("output") is None else str(r["output"])
        for m in metric_cols:
            scores[m][i, j] = to_float(r.get(m))
        for f, col in fields.items():
            if col[i] is None and r.get(f) is not None:
                col[i] = r[f]
    return outputs, scores, fields


def read_table(path: str | Path, *, human_metrics: Iterable[str] = (), name: str | None = None) -> Pool:
    """Read a long table (CSV, TSV, JSONL, Parquet) into a Pool; see the module docstring.

    >>> pool = read_table("judged.csv", human_metrics=["rating"])   # doctest: +SKIP
    """
    path = Path(path)
    human_metrics = set(human_metrics)
    pairs = _rows(path)
    where, rows = [w for w, _ in pairs], [r for _, r in pairs]
    metric_cols, meta_cols = _columns(rows, where, path, human_metrics)
    items, systems = _index(rows, where, path)
    outputs, scores, fields = _fill(rows, items, systems, metric_cols, [*ITEM_FIELDS, *meta_cols])
    cost, reference, inputs = fields.pop("cost"), fields.pop("reference"), fields.pop("input")
    metadata = {f: col for f, col in fields.items() if any(v is not None for v in col)}
    if any(c is not None for c in cost):
        metadata["cost"] = [to_float(c) for c in cost]  # checked to be numbers by _columns
    human = {m for m in metric_cols if _is_human_name(m)}
    human |= check_human(human_metrics, metric_cols, str(path))
    return Pool(
        item_ids=list(items), inputs=inputs, systems=list(systems), outputs=outputs, scores=scores,
        human_metrics=human, references={"ref": reference} if any(v is not None for v in reference) else {},
        metadata=metadata, name=name if name is not None else str(path),
    )


def table_rows(pool: Pool) -> list[dict[str, Any]]:
    """The long-table rows of ``pool``: one per (item, system) with an output or any score.

    A table holds text: a pool whose inputs are arrays or other objects is refused (DataError).
    """
    if not pool.inputs_are_text:
        raise DataError(f"Pool {pool.name!r} has {pool.inputs_info().get('kind', 'non-text')} inputs; a long table "
                        "holds text inputs only", field="input")
    ref = pool.references.get("ref") or (next(iter(pool.references.values())) if pool.references else None)
    item_fields = [f for f in ("domain", "doc", "cost") if f in pool.metadata]
    mats = {m: pool.scores[m] for m in pool.metrics}
    rows = []
    for i, iid in enumerate(pool.item_ids):
        base: dict[str, Any] = {"item_id": iid, "input": pool.inputs[i]}
        if ref is not None:
            base["reference"] = ref[i]
        base.update({f: clean_value(pool.metadata[f][i]) for f in item_fields})
        for j, s in enumerate(pool.systems):
            vals = {m: clean_value(float(a[i, j])) for m, a in mats.items()}
            out = pool.outputs[s][i]
            if out is None and all(v is None for v in vals.values()):
                continue
            rows.append({**base, "system": s, "output": out, **vals})
    return rows


def write_table(pool: Pool, path: str | Path) -> Path:
    """Write ``pool`` as a long table; the suffix picks JSONL, CSV, TSV or Parquet. Returns the path.

    Human flags are not stored: name human columns ``human``/``human_*`` or pass ``human_metrics``
    to :func:`read_table` when reading the file back.

    >>> write_table(pool, "pool.csv")   # doctest: +SKIP
    """
    path = Path(path)
    kind, rows = table_kind(path), table_rows(pool)
    header = list(dict.fromkeys(k for r in rows for k in r)) or [*REQUIRED]
    header = [*REQUIRED, *(h for h in header if h not in REQUIRED)]
    if kind == "jsonl":
        with open(path, "w", encoding="utf-8") as f:
            for r in rows:
                f.write(json.dumps(r, ensure_ascii=False, default=json_default) + "\n")
    elif kind == "parquet":
        pq = _pyarrow("Writing Parquet tables")
        import pyarrow as pa

        pq.write_table(pa.Table.from_pylist(rows), path)
    else:
        with open(path, "w", encoding="utf-8", newline="") as f:
            w = csv.DictWriter(f, fieldnames=header, delimiter="," if kind == "csv" else "\t")
            w.writeheader()
            w.writerows({k: ("" if v is None or (isinstance(v, float) and math.isnan(v)) else v) for k, v in r.items()}
                        for r in rows)
    return path
