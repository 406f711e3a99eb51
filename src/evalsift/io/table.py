"""Long tables: one row per (item, system), as CSV, TSV, JSONL or Parquet (CSV, TSV and JSONL may be
gzipped: ``scores.csv.gz``).

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
import gzip
import io
import json
import math
import re
from pathlib import Path
from typing import Any, Iterable

import numpy as np

from ..errors import DataError, missing_dependency
from ..pool import Pool
from ._common import (atomic_file, blank_state, check_file, check_human, clean_value, data_suffix, empty_file_error, iter_jsonl,
                      json_default, nan_matrix, read_text, spreadsheet_cell, to_float, warn_data)

REQUIRED = ("item_id", "system", "output")
ITEM_FIELDS = ("input", "reference", "domain", "doc", "cost")
SUFFIXES = {".csv": "csv", ".tsv": "tsv", ".tab": "tsv", ".jsonl": "jsonl", ".ndjson": "jsonl",
            ".parquet": "parquet", ".pq": "parquet"}


def table_kind(path: Path) -> str:
    """``csv``, ``tsv``, ``jsonl`` or ``parquet`` from the file suffix, through a ``.gz``
    (:func:`~evalsift.io._common.data_suffix`: ``t.csv.gz`` is a gzipped CSV, read as judge files
    are); DataError otherwise, and for a gzipped Parquet file (Parquet compresses inside the file).

    >>> table_kind(Path("t.csv.gz")), table_kind(Path("t.TSV"))
    ('csv', 'tsv')
    """
    suffix = data_suffix(path)
    kind = SUFFIXES.get(suffix)
    if kind is None:
        raise DataError(f"{path}: unknown table format {suffix!r}; use one of {', '.join(SUFFIXES)} (CSV, TSV and "
                        "JSONL may be gzipped: .csv.gz, ...).")
    if kind == "parquet" and Path(path).suffix.lower() == ".gz":
        raise DataError(f"{path}: a Parquet file is read as it is, not gzipped (Parquet compresses inside the file); "
                        "gunzip it, or write it with compression='zstd'.")
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


def _rows(path: Path) -> list[tuple[str, dict[str, Any]]]:
    """``(where, row)`` pairs, at least one; ``where`` is 'line N' (1-based, header = line 1) or 'row N'."""
    kind = table_kind(path)
    if kind == "jsonl":
        return _jsonl_rows(path)
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
    cols = _check_required(list(dict.fromkeys(k for r in rows for k in r)), path)
    metrics, meta = [], []
    for c in _candidates(cols):
        numbers, bad = _not_numbers(rows, where, c)
        k, w = bad[0] if bad else (0, "")
        first = (w, rows[k][c], rows[k]) if bad else None
        (metrics if _is_metric(path, c, numbers, len(bad), first, human_metrics) else meta).append(c)
    return [c for c in metrics if c != "cost"], meta


def _check_required(cols: list[str], path: Path) -> list[str]:
    missing = [c for c in REQUIRED if c not in cols]
    if missing:
        raise DataError(f"{path}: missing required column(s) {missing}; found columns {cols}. "
                        "A long table needs item_id, system, output (one row per item and system).")
    return cols


def _candidates(cols: list[str]) -> list[str]:
    """The columns whose cells decide what they are: every non-reserved one, then ``cost``."""
    return [*(c for c in cols if c not in REQUIRED and c not in ITEM_FIELDS), *(["cost"] if "cost" in cols else [])]


def _is_metric(path: Path, c: str, numbers: int, bad: int, first: tuple[str, Any, dict[str, Any]] | None,
               human_metrics: set[str]) -> bool:
    """True when column ``c`` is a metric (``cost``: numeric); False for per-item metadata (warning when
    it is mostly numbers); DataError for a human column or ``cost`` with text. ``numbers`` and ``bad``
    count its number and non-numeric cells; ``first`` is (where, value, row) of the first non-numeric one."""
    if not bad:
        return True
    w, value, row = first  # type: ignore[misc]
    if c == "cost" or _is_human_name(c) or c in human_metrics:
        _raise_not_number(path, c, w, value, row, bad)
    if numbers and numbers >= bad:
        warn_data(
            f"{path}: column {c!r} has {bad} non-numeric cell{'s' if bad > 1 else ''} among "
            f"{numbers} number{'s' if numbers > 1 else ''} (first on {w}: {value!r}); kept as per-item metadata, "
            "not as a metric; blank or fix those cells to use it as a metric.")
    return False


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

    Parquet is read a batch of rows at a time, by column (see :func:`_read_parquet`); CSV, TSV and
    JSONL rows are read whole.

    >>> pool = read_table("judged.csv", human_metrics=["rating"])   # doctest: +SKIP
    """
    path = Path(path)
    human_metrics = set(human_metrics)
    if table_kind(path) == "parquet":
        items, systems, outputs, scores, fields = _read_parquet(path, human_metrics)
    else:
        pairs = _rows(path)
        where, rows = [w for w, _ in pairs], [r for _, r in pairs]
        metric_cols, meta_cols = _columns(rows, where, path, human_metrics)
        index, sys_index = _index(rows, where, path)
        items, systems = list(index), list(sys_index)
        outputs, scores, fields = _fill(rows, index, sys_index, metric_cols, [*ITEM_FIELDS, *meta_cols])
    cost, reference, inputs = fields.pop("cost"), fields.pop("reference"), fields.pop("input")
    metadata = {f: col for f, col in fields.items() if any(v is not None for v in col)}
    if any(c is not None for c in cost):
        metadata["cost"] = [to_float(c) for c in cost]  # checked to be numbers by _columns
    human = {m for m in scores if _is_human_name(m)}
    human |= check_human(human_metrics, scores, str(path))
    return Pool(
        item_ids=items, inputs=inputs, systems=systems, outputs=outputs, scores=scores,
        human_metrics=human, references={"ref": reference} if any(v is not None for v in reference) else {},
        metadata=metadata, name=name if name is not None else str(path),
    )


# ------------------------------------------------------------------------------------------ Parquet
_BATCH = 1 << 16  # rows per batch read from a Parquet file
_SHARE = 64       # text values of per-item fields up to this length are kept once per distinct value


def _open_parquet(path: Path, read_dictionary: Iterable[str] = ()) -> Any:
    check_file(path)
    pq = _pyarrow("Reading Parquet tables")
    import pyarrow as pa

    try:
        open(path, "rb").close()
    except PermissionError:
        raise DataError(f"{path}: permission denied; cannot read the file (check its permissions).") from None
    except OSError as e:
        raise DataError(f"{path}: cannot read the file ({e.strerror or e}).") from None
    try:  # pre_buffer=False: with it, iter_batches keeps every column chunk read until the file is closed
        return pq.ParquetFile(path, pre_buffer=False, read_dictionary=list(read_dictionary) or None)
    except (pa.ArrowException, OSError, ValueError) as e:
        reason = re.sub(r"^Could not open Parquet input source '.*?': ", "", str(e))
        raise DataError(f"{path}: not a readable Parquet file ({reason}). Write it with pandas' DataFrame.to_parquet or "
                        "pyarrow, or give the table as .csv/.tsv/.jsonl.") from None


def _batches(pf: Any, columns: list[str], path: Path) -> Iterable[tuple[int, Any]]:
    """``(first row, record batch)`` over ``columns`` of the Parquet file, :data:`_BATCH` rows at a time."""
    import pyarrow as pa

    offset = 0
    arrow_memory = pa.default_memory_pool()
    try:
        for batch in pf.iter_batches(batch_size=_BATCH, columns=columns):
            yield offset, batch
            offset += batch.num_rows
            del batch
            arrow_memory.release_unused()  # hand the batch's buffers back now, not at the end (mimalloc keeps them)
    except (pa.ArrowException, OSError) as e:
        raise DataError(f"{path}: not a readable Parquet file ({e}).") from None


def _is_numeric(t: Any) -> bool:
    import pyarrow as pa

    return pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_boolean(t) or pa.types.is_null(t)


def _parquet_row(pf: Any, k: int, path: Path) -> dict[str, Any]:
    """Row ``k`` (0-based) of the Parquet file as a dict (for error messages)."""
    for offset, batch in _batches(pf, pf.schema_arrow.names, path):
        if k < offset + batch.num_rows:
            return batch.slice(k - offset, 1).to_pylist()[0]
    return {}


def _scan_parquet(pf: Any, c: str, path: Path) -> tuple[int, int, tuple[str, Any, dict[str, Any]] | None]:
    """(number cells, non-numeric cells, (where, value, row) of the first non-numeric) of column ``c``."""
    if _is_numeric(pf.schema_arrow.field(c).type):
        return 0, 0, None  # numbers and nulls only
    numbers = bad = 0
    first = None
    for offset, batch in _batches(pf, [c], path):
        for k, v in enumerate(batch.column(0).to_pylist()):
            kind = _cell_kind(v)
            if kind == "number":
                numbers += 1
            elif kind == "text":
                bad += 1
                if first is None:
                    first = (offset + k, v)
    if first is None:
        return numbers, 0, None
    return numbers, bad, (f"row {first[0] + 1}", first[1], _parquet_row(pf, first[0], path))


def _codes(column: Any, index: dict[str, int]) -> np.ndarray:
    """Positions in ``index`` (grown in first-seen order) of the cells of a key column; -1 for nulls."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if pa.types.is_dictionary(column.type):  # e.g. a pandas category: its dictionary may hold unused values
        column = column.dictionary_decode()
    try:
        enc = pc.dictionary_encode(column)
    except pa.ArrowNotImplementedError:  # a key type arrow cannot encode: one cell at a time
        return np.array([-1 if v is None else index.setdefault(str(v), len(index)) for v in column.to_pylist()],
                        dtype=np.int64)
    lookup = np.array([index.setdefault(str(v), len(index)) for v in enc.dictionary.to_pylist()] or [0], dtype=np.int64)
    codes = enc.indices.to_numpy(zero_copy_only=False)
    if enc.indices.null_count:
        codes = np.nan_to_num(codes, nan=-1).astype(np.int64)
        return np.where(codes >= 0, lookup[np.maximum(codes, 0)], -1)
    return lookup[codes.astype(np.int64)]


def _parquet_index(pf: Any, n_rows: int, path: Path) -> tuple[dict[str, int], dict[str, int], np.ndarray, np.ndarray]:
    """Items and systems in first-seen order and every row's (item, system) position; the errors of :func:`_index`."""
    items: dict[str, int] = {}
    systems: dict[str, int] = {}
    ii = np.empty(n_rows, dtype=np.int64 if n_rows >= 2**31 else np.int32)
    jj = np.empty(n_rows, dtype=np.int32)
    first_empty = None
    for offset, batch in _batches(pf, ["item_id", "system"], path):
        sl = slice(offset, offset + batch.num_rows)
        ii[sl], jj[sl] = _codes(batch.column(0), items), _codes(batch.column(1), systems)
        if first_empty is None and (ii[sl].min() < 0 or jj[sl].min() < 0):
            first_empty = offset + int(np.flatnonzero((ii[sl] < 0) | (jj[sl] < 0))[0])
    ok = (ii >= 0) & (jj >= 0)
    code = np.where(ok, ii.astype(np.int64) * max(len(systems), 1) + jj, -1)
    counts = np.bincount(code[ok], minlength=len(items) * len(systems))
    repeat = None
    if counts.size and counts.max() > 1:
        rows = np.flatnonzero(np.isin(code, np.flatnonzero(counts > 1)))
        seen: dict[int, int] = {}
        for k in rows.tolist():
            if code[k] in seen:
                repeat = (k, seen[code[k]])
                break
            seen[int(code[k])] = k
    if first_empty is not None and (repeat is None or first_empty < repeat[0]):
        raise DataError(f"{path}: row {first_empty + 1}: item_id and system must not be empty.")
    if repeat is not None:
        k, f = repeat
        names = list(items), list(systems)
        raise DataError(f"{path}: row {k + 1} repeats item {names[0][ii[k]]!r} system {names[1][jj[k]]!r}, first seen on "
                        f"row {f + 1}; keep one row per (item_id, system).")
    return items, systems, ii, jj


def _read_parquet(path: Path, human_metrics: set[str]) -> tuple[list[str], list[str], dict[str, list],
                                                                dict[str, np.ndarray], dict[str, list]]:
    """A Parquet long table as (items, systems, outputs, scores, per-item fields), read by column a
    batch of rows at a time: the text of ``output`` becomes Python strings once (no row dicts, no
    whole-table copy), numeric metric columns go to the score matrices with numpy, and of the
    per-item fields (``input``, ``reference``, ...), repeated on every row of an item, only the kept
    value (the first non-null one) is ever made a Python object."""
    pf = _open_parquet(path)
    texts = [f for f in ("input", "reference", "domain", "doc") if f in pf.schema_arrow.names
             and _is_text(pf.schema_arrow.field(f).type)]
    if texts:  # repeated on every row of an item: read as dictionaries, so each distinct text is decoded once
        pf.close()
        pf = _open_parquet(path, texts)
    try:
        return _parquet_columns(pf, path, human_metrics)
    finally:
        pf.close()
        import pyarrow as pa

        pa.default_memory_pool().release_unused()


def _is_text(t: Any) -> bool:
    import pyarrow as pa

    return pa.types.is_string(t) or pa.types.is_large_string(t)


def _parquet_columns(pf: Any, path: Path, human_metrics: set[str]) -> tuple[list[str], list[str], dict[str, list],
                                                                          dict[str, np.ndarray], dict[str, list]]:
    import pyarrow as pa
    import pyarrow.compute as pc

    n_rows = pf.metadata.num_rows
    if not n_rows:
        raise empty_file_error(path, "holds a table with 0 rows", "rows",
                               f"one row per (item, system) with columns {', '.join(REQUIRED)}")
    schema = pf.schema_arrow
    cols = _check_required(list(dict.fromkeys(schema.names)), path)
    metric_cols, meta_cols = [], []
    for c in _candidates(cols):
        numbers, bad, first = _scan_parquet(pf, c, path)
        (metric_cols if _is_metric(path, c, numbers, bad, first, human_metrics) else meta_cols).append(c)
    metric_cols = [c for c in metric_cols if c != "cost"]
    items, systems, ii, jj = _parquet_index(pf, n_rows, path)
    n, m = len(items), len(systems)
    field_names = [*ITEM_FIELDS, *meta_cols]
    present = [f for f in field_names if f in cols]
    fields: dict[str, list[Any]] = {f: [None] * n for f in field_names}
    filled = {f: np.zeros(n, dtype=bool) for f in present}
    shared: dict[str, str] = {}
    outs = np.full((n, m), None, dtype=object)
    scores = {c: nan_matrix(n, m) for c in metric_cols}
    for offset, batch in _batches(pf, ["output", *metric_cols, *present], path):
        bi, bj = ii[offset:offset + batch.num_rows], jj[offset:offset + batch.num_rows]
        out = batch.column("output")
        if _is_text(out.type):
            outs[bi, bj] = out.to_numpy(zero_copy_only=False)
        else:
            texts = np.empty(len(out), dtype=object)
            texts[:] = [None if v is None else str(v) for v in out.to_pylist()]
            outs[bi, bj] = texts
        for c in metric_cols:
            col = batch.column(c)
            if _is_numeric(col.type):
                scores[c][bi, bj] = pc.cast(col, pa.float64(), safe=False).to_numpy(zero_copy_only=False)
            else:
                scores[c][bi, bj] = [to_float(v) for v in col.to_pylist()]
        for f in present:
            col, done = batch.column(f), filled[f]
            rows = np.flatnonzero(col.is_valid().to_numpy(zero_copy_only=False) & ~done[bi])
            if not rows.size:
                continue
            new, first = np.unique(bi[rows], return_index=True)  # the first row of each item in the batch
            values, dest = col.take(pa.array(rows[first])).to_pylist(), fields[f]
            share = f not in ("input", "reference")
            for i, v in zip(new.tolist(), values):
                dest[i] = shared.setdefault(v, v) if share and type(v) is str and len(v) <= _SHARE else v
            done[new] = True
    del ii, jj, filled
    names = list(systems)
    outputs = {s: tuple(outs[:, j].tolist()) for j, s in enumerate(names)}  # the Pool keeps tuples as they are
    del outs
    return list(items), names, outputs, scores, fields


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


def write_table(pool: Pool, path: str | Path, *, spreadsheet_safe: bool = False) -> Path:
    """Write ``pool`` as a long table; the suffix picks JSONL, CSV, TSV or Parquet, gzipped when it
    ends in ``.gz`` (``pool.csv.gz``; not Parquet). Returns the path.

    Human flags are not stored: name human columns ``human``/``human_*`` or pass ``human_metrics``
    to :func:`read_table` when reading the file back. ``spreadsheet_safe``: CSV/TSV text cells that a
    spreadsheet would run as a formula get a leading ``'`` (see :func:`evalsift.io._common.spreadsheet_cell`).

    >>> write_table(pool, "pool.csv")   # doctest: +SKIP
    """
    path = Path(path)
    kind, rows = table_kind(path), table_rows(pool)
    header = list(dict.fromkeys(k for r in rows for k in r)) or [*REQUIRED]
    header = [*REQUIRED, *(h for h in header if h not in REQUIRED)]
    gz = path.suffix.lower() == ".gz"
    if kind == "parquet":
        pq = _pyarrow("Writing Parquet tables")
        import pyarrow as pa

        with atomic_file(path, "wb") as raw:  # whole or not at all
            pq.write_table(pa.Table.from_pylist(rows), raw)
        return path
    with atomic_file(path, "wb") as raw, (gzip.open(raw, "wt", encoding="utf-8", newline="") if gz else
                                          io.TextIOWrapper(raw, encoding="utf-8", newline="")) as f:
        if kind == "jsonl":
            for r in rows:
                f.write(json.dumps(r, ensure_ascii=False, default=json_default) + "\n")
        else:
            w = csv.DictWriter(f, fieldnames=header, delimiter="," if kind == "csv" else "\t")
            w.writeheader()
            cell = spreadsheet_cell if spreadsheet_safe else (lambda v: v)
            w.writerows({k: ("" if v is None or (isinstance(v, float) and math.isnan(v)) else cell(v))
                         for k, v in r.items()} for r in rows)
    return path
