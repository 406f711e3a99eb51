"""subset2evaluate item JSONL: one item per line, systems' outputs in ``tgt``, scores in ``scores``.

A line looks like::

    {"i": 0, "src": "Hallo Welt", "ref": "Hello world", "domain": "news", "doc": "d1", "cost": 1.5,
     "tgt": {"A": "Hello world", "B": "Hi world"},
     "scores": {"A": {"human": 0.9, "chrF": 80.1}, "B": {"human": 0.4}}}

Conventions of :func:`read_s2e_jsonl`:

- ``item_id`` is ``str(i)`` when the record has ``i``, else the item's 0-based position in the file.
- Systems are the union over items of ``tgt`` and ``scores`` keys, in first-seen order; metrics the
  union of metric names. A missing (or ``null``) output is ``None``; an output that is not a string
  (a number, a list, ...) is a DataError naming the line and system. A missing (or ``null``) score,
  or one of the missing-value tokens (``"NA"``, ``"N/A"``, ``"-"``, ...), is NaN.
- ``ref`` as a string becomes ``references["ref"]``; as a list (of strings or nulls) it becomes
  ``ref_0``, ``ref_1``, ... (one column per position; items with fewer references get ``None``);
  ``null`` or no ``ref`` means no reference. Any other ``ref`` is a DataError naming the line.
- A file with no items (empty, or only blank lines) is a DataError.
- Every other field (``domain``, ``doc``, ``cost``, ...) is per-item metadata (``None`` where an item
  lacks it), and each item's own fields are kept in ``metadata["_record"]`` so that
  :func:`write_s2e_jsonl` re-emits them unchanged: the record *without* ``tgt`` and ``scores``
  (the pool's outputs and score matrices hold those, and the writer rewrites them from the pool).
  Where ``tgt`` or ``scores`` is not among the record's last fields it stays in ``_record`` as
  ``None``, holding its place, so a written line keeps the original order of its fields.
- Following subset2evaluate, a metric named ``human`` is human; pass ``human_metrics`` to choose others.

Memory: the file is read a line at a time (never whole) and parsed in one pass. Every text -- each
output, ``src``, each reference -- is one ``str`` object, referenced from the pool's columns and
from ``_record`` (``pool.inputs[i] is pool.metadata["_record"][i]["src"]``), never copied. Scores
go straight into float arrays. Short per-item field values (``domain``, ``doc``: up to 64
characters) and field names are kept once per distinct text. So a pool read from JSONL costs the
texts themselves plus about 0.3 KB per item (the ``_record`` dict, the item id, the tuples' slots)
and 8 bytes per (item, system, metric) score; ``benchmarks/io/load_memory.py`` measures it.
"""

from __future__ import annotations

import json
import math
from array import array
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

import numpy as np

from ..errors import DataError
from ..pool import Pool, ReadOnlyDict
from ._common import atomic_file, check_extra, check_human, clean_value, iter_jsonl, json_default, nan_matrix, to_float

_CORE = ("i", "src", "ref", "tgt", "scores")
_NAN = math.nan
_SHARE = 64  # per-item field values up to this length are kept once per distinct value (domain, doc, ...)


def _check_record(rec: Any, path: Path, lineno: int) -> None:
    where = f"{path}: line {lineno}"
    if not isinstance(rec, dict):
        raise DataError(f"{where}: expected a JSON object per line, got {type(rec).__name__}.")
    if "tgt" not in rec or not isinstance(rec["tgt"], dict):
        raise DataError(
            f"{where}: field 'tgt' must be an object mapping system name -> output text "
            f"(got {type(rec.get('tgt')).__name__}). Add e.g. \"tgt\": {{\"sysA\": \"...\"}}."
        )
    if "src" not in rec:
        raise DataError(f"{where}: field 'src' (the item's input text) is missing; add \"src\": \"...\".")
    for system, output in rec["tgt"].items():
        if output is not None and not isinstance(output, str):
            raise DataError(
                f"{where}: output of system {system!r} in 'tgt' is {_json_type(output)} {_short(output)}, "
                "expected a string (the system's output text) or null for a missing output.",
                field="tgt", system=str(system), item_id=rec.get("i"),
                hint="make the output a string, or null if it is missing")
    ref = rec.get("ref")
    if not (ref is None or isinstance(ref, str)
            or (isinstance(ref, list) and all(r is None or isinstance(r, str) for r in ref))):
        raise DataError(
            f"{where}: field 'ref' is {_json_type(ref)} {_short(ref)}, expected a reference string, a list of "
            "reference strings, or null for none.",
            field="ref", item_id=rec.get("i"), hint="make 'ref' a string, a list of strings or null")
    scores = rec.get("scores", {})
    if scores is None:
        return
    if not isinstance(scores, dict) or not all(isinstance(v, dict) or v is None for v in scores.values()):
        raise DataError(
            f"{where}: field 'scores' must map system -> {{metric: value}}, "
            "e.g. \"scores\": {\"sysA\": {\"human\": 0.8}}."
        )


def _json_type(value: Any) -> str:
    """The JSON type of a parsed value with its article: 'a number', 'a list', 'an object', ...

    >>> _json_type(3), _json_type([1]), _json_type({})
    ('a number', 'a list', 'an object')
    """
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    return {str: "a string", list: "a list", dict: "an object"}.get(type(value), f"a {type(value).__name__}")


def _short(value: Any, width: int = 40) -> str:
    text = json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= width else text[: width - 3] + "..."


class _Grid:
    """One metric's (items x systems) scores, gathered as the items stream past: a row (a list of
    floats, NaN where a system has no score) per item that has the metric, turned into a float block
    every :data:`BLOCK` items, and the blocks into one NaN-filled matrix at the end."""

    BLOCK = 1 << 14
    __slots__ = ("blocks", "rows", "at")

    def __init__(self) -> None:
        self.blocks: list[tuple[np.ndarray, np.ndarray]] = []   # (item positions, rows)
        self.rows: list[list[float]] = []
        self.at: list[int] = []

    def add(self, i: int, row: list[float]) -> None:
        self.rows.append(row)
        self.at.append(i)
        if len(self.rows) >= self.BLOCK:
            self.flush()

    def flush(self) -> None:
        if not self.rows:
            return
        width = len(self.rows[-1])  # rows only get longer (systems are added, never removed)
        if len(self.rows[0]) == width:
            block = np.array(self.rows, dtype=float)
        else:
            block = nan_matrix(len(self.rows), width)
            for k, row in enumerate(self.rows):
                block[k, : len(row)] = row
        self.blocks.append((np.array(self.at, dtype=np.intp), block))
        self.rows, self.at = [], []

    def matrix(self, n: int, width: int) -> np.ndarray:
        self.flush()
        out = nan_matrix(n, width)
        self.blocks.reverse()
        while self.blocks:  # free each block once copied
            at, block = self.blocks.pop()
            out[at, : block.shape[1]] = block
        return out


def _pad(col: list[Any], n: int) -> list[Any]:
    """``col`` grown with None to length ``n`` (in place)."""
    if len(col) < n:
        col.extend([None] * (n - len(col)))
    return col


def _column(col: list[Any], n: int) -> tuple[Any, ...]:
    """``col`` padded to ``n`` items, as a tuple (the caller drops the list)."""
    return tuple(col) + (None,) * (n - len(col))


def _lean_record(rec: dict[str, Any], keys: dict[str, str], values: dict[str, str]) -> ReadOnlyDict:
    """The record without ``tgt`` and ``scores`` (the pool holds them), read-only; its keys, and the
    short strings of its per-item fields (``domain``, ``doc``, ...), are the objects in ``keys`` and
    ``values`` (one per distinct text, shared by all records).

    ``tgt``/``scores`` are dropped when they end the record, so that :func:`write_s2e_jsonl`, which
    sets ``tgt`` then ``scores`` on a copy, re-emits the keys in their original order; one that does
    not end it stays in place as ``None``.
    """
    last = next(reversed(rec))
    if last == "scores":
        del rec["scores"]
        if rec and next(reversed(rec)) == "tgt":
            del rec["tgt"]
    elif last == "tgt":
        del rec["tgt"]
    if "tgt" in rec:
        rec["tgt"] = None
    if "scores" in rec:
        rec["scores"] = None
    return ReadOnlyDict({keys.setdefault(k, k): values.setdefault(v, v) if type(v) is str and len(v) <= _SHARE
                         and k not in _CORE else v for k, v in rec.items()})


def _append_at(columns: dict[str, list[Any]], key: str, i: int, value: Any) -> None:
    """Put ``value`` at row ``i`` of ``columns[key]`` (created on first use), ``None`` in the rows it skipped."""
    col = columns.get(key)
    if col is None:
        col = columns[key] = []
    if len(col) < i:
        col.extend([None] * (i - len(col)))
    col.append(value)


def read_s2e_jsonl(path: str | Path, *, human_metrics: Iterable[str] | None = None, name: str | None = None) -> Pool:
    """Read subset2evaluate item JSONL into a Pool (see the module docstring for the conventions).

    ``human_metrics`` names the human metrics; by default only a metric literally named ``human``.
    The file is read in one pass, a line at a time (see the module docstring for what is kept).

    >>> pool = read_s2e_jsonl("wmt23_ende.jsonl")            # doctest: +SKIP
    >>> pool.is_human("human"), pool.n_systems                 # doctest: +SKIP
    (True, 12)
    """
    path = Path(path)
    ids: list[str] = []
    inputs: list[Any] = []
    records: list[ReadOnlyDict] = []
    lines = array("q")                       # line of each item, for the repeated-id message
    seen: set[str] = set()
    sys_col: dict[str, int] = {}             # system -> column, first-seen order
    outputs: dict[str, list[Any]] = {}       # system -> outputs so far (short lists are padded with None)
    grids: dict[str, _Grid] = {}             # metric -> scores so far, first-seen order
    extra: dict[str, list[Any]] = {}         # per-item field -> values so far
    ref_str: list[Any] | None = None         # 'ref' strings
    ref_list: list[list[Any]] = []           # ref_0, ref_1, ... from list refs
    keys: dict[str, str] = {}                # one str object per field name
    values: dict[str, str] = {}              # one str object per short text value of a per-item field
    for lineno, rec in iter_jsonl(path, what="items", expected="one JSON object per line with 'src' and 'tgt'"):
        _check_record(rec, path, lineno)
        i = len(ids)
        iid = str(rec["i"]) if rec.get("i") is not None else str(i)
        if iid in seen:
            first = lines[ids.index(iid)]
            raise DataError(f"{path}: line {lineno}: item id {iid!r} already used on line {first}; ids ('i') must be unique.")
        seen.add(iid)
        tgt, scores = rec["tgt"], rec.get("scores") or {}
        for s in tgt:
            if s not in sys_col:
                sys_col[s] = len(sys_col)
        for s in scores:
            if s not in sys_col:
                sys_col[s] = len(sys_col)
        for s, out in tgt.items():
            _append_at(outputs, s, i, out)
        rows: dict[str, list[float]] = {}    # this item's scores: metric -> one value per system
        for s, per_metric in scores.items():
            if not per_metric:
                continue
            j = sys_col[s]
            for m, v in per_metric.items():
                t = type(v)
                if t is float:
                    x = v
                elif t is int:
                    x = float(v)
                else:
                    try:
                        x = to_float(v)
                    except (TypeError, ValueError):
                        raise DataError(
                            f"{path}: line {lineno}: score of system {s!r} for metric {m!r} is {v!r}, "
                            "expected a number or null.", field=m, system=s, item_id=rec.get("i")
                        ) from None
                row = rows.get(m)
                if row is None:
                    row = rows[m] = [_NAN] * len(sys_col)
                row[j] = x
        for m, row in rows.items():
            grid = grids.get(m)
            if grid is None:
                grid = grids[m] = _Grid()
            grid.add(i, row)
        record = _lean_record(rec, keys, values)
        for f, v in record.items():
            if f not in _CORE:
                _append_at(extra, f, i, v)
        ref = record.get("ref")
        if isinstance(ref, str):
            if ref_str is None:
                ref_str = []
            _pad(ref_str, i).append(ref)
        elif isinstance(ref, list):
            while len(ref_list) < len(ref):
                ref_list.append([])
            for k, r in enumerate(ref):
                _pad(ref_list[k], i).append(r)
        ids.append(iid), inputs.append(record["src"]), records.append(record), lines.append(lineno)
    del seen, values, lines
    n, systems = len(ids), list(sys_col)
    scores_ = {m: grids.pop(m).matrix(n, len(systems)) for m in list(grids)}
    human = {"human"} & set(scores_) if human_metrics is None else check_human(human_metrics, scores_, str(path))
    # columns as tuples, each list freed as soon as its tuple exists: the Pool keeps a tuple as it is
    # (no second copy of any column at the peak, which is here)
    out_cols = {s: _column(outputs.pop(s, []), n) for s in systems}
    references = {} if ref_str is None else {"ref": _column(ref_str, n)}
    references.update((f"ref_{k}", _column(col, n)) for k, col in enumerate(ref_list))
    metadata = {f: _column(extra.pop(f), n) for f in list(extra)}
    metadata["_record"] = tuple(records)
    del records
    inputs_ = tuple(inputs)
    del inputs
    return Pool(
        item_ids=ids,
        inputs=inputs_,
        systems=systems,
        outputs=out_cols,
        scores=scores_,
        human_metrics=human,
        references=references,
        metadata=metadata,
        name=name if name is not None else str(path),
    )


def _record_for(pool: Pool, i: int) -> dict[str, Any]:
    """The item's original record (if read from s2e JSONL) or one built from the pool's fields."""
    original = pool.metadata.get("_record", [None] * pool.n_items)[i]
    if isinstance(original, dict):
        return dict(original)
    iid = pool.item_ids[i]
    rec: dict[str, Any] = {"i": int(iid) if iid.isdigit() else iid, "src": pool.inputs[i]}
    if "ref" in pool.references:
        rec["ref"] = pool.references["ref"][i]
    elif pool.references:
        rec["ref"] = [c[i] for c in pool.references.values()]
    for f, col in pool.metadata.items():
        if f != "_record" and clean_value(col[i]) is not None:
            rec[f] = clean_value(col[i])
    return rec


def _tgt_scores(pool: Pool, i: int) -> tuple[dict[str, str], dict[str, dict[str, float]]]:
    tgt = {s: pool.outputs[s][i] for s in pool.systems if pool.outputs[s][i] is not None}
    scores: dict[str, dict[str, float]] = {}
    for j, s in enumerate(pool.systems):
        vals = {m: float(a[i, j]) for m, a in pool.scores.items() if not math.isnan(a[i, j])}
        if vals or s in tgt:
            scores[s] = vals
    return tgt, scores


def write_s2e_jsonl(pool: Pool, path: str | Path, extra: Mapping[str, Sequence[Any]] | None = None) -> Path:
    """Write ``pool`` as subset2evaluate item JSONL (one item per line, in pool order).

    Items read by :func:`read_s2e_jsonl` keep all their original fields; ``tgt`` and ``scores`` are
    rewritten from the pool, so system views and added metrics show up and NaN scores are left out.
    ``extra`` maps a field name to one value per item, added to every record, e.g.
    ``{"subset2evaluate_utility": utilities}``. Returns the path written.

    >>> write_s2e_jsonl(pool, "out.jsonl", extra={"subset2evaluate_utility": u})  # doctest: +SKIP
    """
    path = Path(path)
    if not pool.inputs_are_text:
        raise DataError(f"{path}: pool {pool.name!r} has {pool.inputs_info()['kind']} inputs; subset2evaluate JSONL "
                        "holds a text 'src' per item", field="src")
    extra_cols = check_extra(extra, pool.n_items, path)
    with atomic_file(path) as f:  # whole or not at all
        for i in range(pool.n_items):
            rec = _record_for(pool, i)
            rec["tgt"], rec["scores"] = _tgt_scores(pool, i)
            for field, values in extra_cols.items():
                rec[field] = clean_value(values[i])
            f.write(json.dumps(rec, ensure_ascii=False, default=json_default) + "\n")
    return path
