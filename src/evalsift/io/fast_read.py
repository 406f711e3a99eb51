"""Fast reading of recorded judgments: a JSONL file parsed into columns, validated column-wise.

:func:`evalsift.io.pairwise_table.read_pairwise` tries this first. A JSONL file is parsed by
``pyarrow.json`` when pyarrow is installed (the ``parquet`` extra), else by the standard library's
:mod:`json` a line at a time; either way the rows become columns, and a reader here checks them a
column at a time (a few distinct values each: models, outcomes) and fills a
:class:`~evalsift.io.pairwise_data.JudgmentColumns`, whose Pool and Judgments are built only when a caller
reads them (``arena`` reads arrays: :meth:`evalsift.arena.battles.Battles.from_pairwise`).

Nothing here decides what a file means or words an error. Whenever a file is anything but plain --
a line the fast parser refuses, a blank line or a ``\\r``, a control character, a nested or ambiguous value
(``1.0``), a repeated battle id, a missing or empty cell, a bad outcome -- the reader gives up (returns
None) and the row-by-row reader (:mod:`evalsift.io.judge_files`) reads the file: the same results, and the
same line-numbered errors, as without this module.

``PARSER`` (from ``$EVALSIFT_JSON_PARSER``, read at each call) picks the path: ``auto`` (pyarrow when
installed, else json), ``pyarrow``, ``json`` (the standard library, as an install without pyarrow has it),
or ``rows`` (the row-by-row readers only).

>>> PARSER in PARSERS
True
"""

from __future__ import annotations

import dataclasses
import io
import json
import os
from itertools import chain
from pathlib import Path
from typing import Any

import numpy as np

from ._common import MISSING_TOKENS, data_suffix, read_bytes
from .judge_files import ARENA_WINNERS, BATTLE_IDS, file_annotator, judge_kind
from .pairwise_data import JudgmentColumns, PairwiseData
from .pairwise_layout import _rows, pairwise_layout

PARSERS = ("auto", "pyarrow", "json", "rows")
#: which parser the fast path uses (see the module doc); tests set it to compare the paths
PARSER = os.environ.get("EVALSIFT_JSON_PARSER", "auto").strip().lower() or "auto"

#: the types of a cell kept as it is (in a judgment's detail)
_SCALARS = frozenset({str, int, float, bool, type(None)})
#: pyarrow types whose Python values equal what :func:`json.loads` gives for the same text
_EXACT_TYPES = ("string", "large_string", "int64", "bool", "null")


def parser() -> str:
    """The parser in use: ``pyarrow``, ``json`` or ``rows`` (``auto`` resolved: pyarrow when it imports)."""
    choice = PARSER if PARSER in PARSERS else "auto"
    if choice == "auto":
        try:
            import pyarrow.json  # noqa: F401
        except ImportError:
            return "json"
        return "pyarrow"
    return choice


class NotPlain(Exception):
    """A column the fast parser cannot give exactly as :func:`json.loads` would (a nested value, a number that
    may have been written ``1`` or ``1.0``): the json path reads the file instead."""


class Parsed:
    """A JSONL file as columns: ``lines`` (the line number of each record), ``names`` (every field, in
    first-seen order), ``first`` (the first record's keys), ``rows`` (the records themselves, when the json
    parser read them); :meth:`get` gives a field's values, converted on first use."""

    __slots__ = ("lines", "names", "first", "rows", "_source", "_columns")

    def __init__(self, lines: list[int], names: list[str], first: list[str], source: Any,
                 rows: list[tuple[int, dict[str, Any]]] | None = None) -> None:
        self.lines, self.names, self.first, self.rows = lines, names, first, rows
        self._source, self._columns = source, {}

    @property
    def n(self) -> int:
        """The number of records."""
        return len(self.lines)

    def __contains__(self, name: str) -> bool:
        return name in self.names

    def get(self, name: str) -> list[Any] | None:
        """One value per record of field ``name`` (None where absent or null); None when no record has it.
        Raises :class:`NotPlain` when the parser cannot give it exactly."""
        if name not in self.names:
            return None
        if name not in self._columns:
            self._columns[name] = self._convert(name)
        return self._columns[name]

    def scalars(self, name: str) -> Any:
        """Field ``name``'s values when every one is a string, number, bool or None (as a judgment's detail keeps
        them): a list, or -- from pyarrow -- a function giving it, to be called when needed (a field that is only
        kept costs nothing until a Judgment is built). None when some value is a list or an object."""
        if self.rows is None:
            self._check(name)
            return lambda: self.get(name)
        values = self.get(name)
        return values if set(map(type, values)) <= _SCALARS else None

    def _check(self, name: str) -> Any:
        col = self._source.column(name)
        t = str(col.type)
        if t not in _EXACT_TYPES:
            if t != "double":
                raise NotPlain(name)  # a nested value, a timestamp pyarrow read from a string
            x = col.to_numpy(zero_copy_only=False)
            if (np.floor(x) == x).any():  # written 1 or 1.0: both are 1.0 here
                raise NotPlain(name)
        return col

    def _convert(self, name: str) -> list[Any]:
        if self.rows is not None:
            return [r.get(name) for _, r in self.rows]
        return self._check(name).to_pylist()


def pyarrow_columns(path: Path, raw: bytes | None = None) -> Parsed | None:
    """The records of a JSONL file (its bytes ``raw`` when already read) parsed by ``pyarrow.json``, or None
    whenever the result might differ from :func:`json.loads` line by line (or pyarrow refuses the file): then the
    json path reads it."""
    try:
        import pyarrow.json as pj
    except ImportError:
        return None
    try:
        raw = read_bytes(path) if raw is None or path.suffix.lower() == ".gz" else raw
    except Exception:  # the row-by-row reader words the error
        return None
    if raw.startswith(b"\xef\xbb\xbf"):
        raw = raw[3:]
    if not raw or raw.startswith((b"\n", b" ")) or b"\n\n" in raw or b"\n " in raw:
        return None  # blank lines, lines starting with a blank: the json path counts lines as they are
    n_breaks = raw.count(b"\n")
    if np.count_nonzero(np.frombuffer(raw, dtype=np.uint8) < 32) != n_breaks:
        return None  # \r (old Mac line ends), a tab, another control character
    if not raw.isascii():
        try:
            raw.decode("utf-8")
        except UnicodeDecodeError:
            return None
    n_lines = n_breaks + (0 if raw.endswith(b"\n") else 1)
    try:
        table = pj.read_json(io.BytesIO(raw), read_options=pj.ReadOptions(use_threads=True, block_size=1 << 22))
    except Exception:  # pyarrow.lib.ArrowInvalid and the like: the json path gives the line-numbered error
        return None
    if table.num_rows != n_lines:  # two objects on a line, or a line pyarrow skipped
        return None
    end = raw.find(b"\n")
    try:
        first = list(json.loads(raw[: end if end >= 0 else len(raw)]))
    except (json.JSONDecodeError, TypeError):
        return None
    return Parsed(list(range(1, n_lines + 1)), list(table.column_names), first, table)


def json_columns(rows: list[tuple[int, dict[str, Any]]]) -> Parsed:
    """Columns of records the row reader (:func:`~evalsift.io.pairwise_layout._rows`) parsed with :mod:`json`."""
    names = list(dict.fromkeys(chain.from_iterable(r for _, r in rows)))
    return Parsed([ln for ln, _ in rows], names, list(rows[0][1]) if rows else [], None, rows)


# ---------------------------------------------------------------------------------------- Chatbot Arena battles
def arena_columns(path: Path, parsed: Parsed, name: str | None) -> PairwiseData | None:
    """Chatbot Arena battles (:func:`evalsift.io.judge_files.read_arena`) from columns, or None when the file is
    not plain (then ``read_arena`` reads it): each battle once with its own id, every model name and outcome
    given, no texts, no ``kind`` column. Raises :class:`NotPlain` for a field the parser cannot give exactly."""
    from ..oracle.base import _now

    names, n = parsed.names, parsed.n
    id_col = next((c for c in BATTLE_IDS if c in names), None)
    if id_col is None or n == 0 or "kind" in parsed:
        return None
    for c in ("conversation_a", "conversation_b"):  # texts: the row reader
        if c in parsed and any(v is not None for v in _values(parsed, c)):
            return None
    ids = _ids(parsed.get(id_col))
    if ids is None or len(set(ids)) != n:  # a repeated battle: the row reader notes or refuses it
        return None
    a, b = parsed.get("model_a"), parsed.get("model_b")
    if a is None or b is None:
        return None
    found_a, found_b = set(a), set(b)
    if not _names_ok(found_a) or not _names_ok(found_b):
        return None
    winners = parsed.get("winner")
    if winners is None or not all(type(w) is str for w in set(winners)):
        return None
    verdict_of = {}
    for w in set(winners):
        key = w.strip().lower()
        v = ARENA_WINNERS.get(key) or ("tie" if key.startswith("tie (") and key.endswith(")") else None)
        if v is None:
            return None
        verdict_of[w] = v
    codes = _model_codes(a, b, list(found_a | found_b))
    if codes is None:  # a battle of a model against itself
        return None
    systems, a_index, b_index, item_pairs = codes
    verdicts: Any = list(map(verdict_of.__getitem__, winners)) if len(set(verdict_of.values())) > 1 \
        else next(iter(verdict_of.values()))
    if "judge" in parsed:
        judges = parsed.get("judge")
        if not all(type(j) is str and j.strip() for j in set(judges)):
            return None  # a list cell, a missing judge: the row reader
        strip = {j: j.strip() for j in set(judges)}
        kinds = {x: judge_kind(x) for x in strip.values()}
        if len(kinds) == 1:
            annotator, kind = next(iter(kinds)), next(iter(kinds.values()))
        else:
            annotator = list(map(strip.__getitem__, judges))
            kind = list(map(kinds.__getitem__, annotator))
        kind_from = "judge"
    else:
        annotator = file_annotator(path)
        kind, kind_from = judge_kind(annotator), "name"
    detail: list[tuple[str, Any]] = [("source", str(path)), ("line", parsed.lines), ("winner", winners)]
    for f in ("question_id", "turn", "language", "anony", "prob", "conv_metadata"):
        if f in parsed and f != id_col:
            values = parsed.scalars(f)
            if values is None:
                return None  # a nested value (conv_metadata): the row reader
            detail.append((f, values))
    detail.append(("kind_from", kind_from))
    fields = {"item_id": ids, "a": a, "b": b, "verdict": verdicts, "annotator": annotator, "kind": kind,
              "shown_order": "ab", "status": "done", "created_at": _now()}
    pool = {"item_ids": ids, "systems": systems, "pairs": item_pairs, "name": name if name is not None else str(path)}
    extra = {"a_index": a_index, "b_index": b_index}
    return PairwiseData.from_columns(JudgmentColumns(n, fields, detail, pool, str(path), extra))


def _values(parsed: Parsed, name: str) -> list[Any]:
    values = parsed.get(name)
    assert values is not None
    return values


def _model_codes(a: list[str], b: list[str], found: list[str]
                 ) -> tuple[list[str], np.ndarray, np.ndarray, list[tuple[str, str]]] | None:
    """``(systems, a_index, b_index, pairs)``: the models in first-seen order (``a[0], b[0], a[1], ...``), each
    side's index into them, and each battle's two models as the row reader's Pool keeps them (sorted); None when
    a battle has the same model on both sides. ``found``: every model, in any order."""
    code = {m: k for k, m in enumerate(found)}
    n, K = len(a), len(found)
    ac = np.fromiter(map(code.__getitem__, a), dtype=np.intp, count=n)
    bc = np.fromiter(map(code.__getitem__, b), dtype=np.intp, count=n)
    if (ac == bc).any():
        return None
    both = np.empty(2 * n, dtype=np.intp)
    both[0::2], both[1::2] = ac, bc
    u, first = np.unique(both, return_index=True)
    order = u[np.argsort(first)]
    rank = np.empty(K, dtype=np.intp)
    rank[order] = np.arange(K)
    systems = [found[k] for k in order]
    a_index, b_index = rank[ac], rank[bc]
    pair_code, inverse = np.unique(a_index * K + b_index, return_inverse=True)
    shared: dict[tuple[str, str], tuple[str, str]] = {}
    keys = np.empty(len(pair_code), dtype=object)
    for k, c in enumerate(pair_code.tolist()):
        x, y = systems[c // K], systems[c % K]
        key = (x, y) if x <= y else (y, x)
        keys[k] = shared.setdefault(key, key)
    return systems, a_index, b_index, keys[inverse.ravel()].tolist()


def _ids(values: list[Any]) -> list[str] | None:
    """Battle ids as :func:`~evalsift.io.judge_files._id` makes them, or None (a missing, empty or unusual id)."""
    types = set(map(type, values))
    if types == {int}:
        return list(map(str, values))
    if types == {str}:
        ids = list(map(str.strip, values))
        return None if "" in set(ids) else ids
    return None


def _names_ok(found: set[Any]) -> bool:
    """Every model name (the distinct values ``found``) given as non-blank text."""
    return all(type(v) is str and v.strip() for v in found)


# ---------------------------------------------------------------------------------------- battles (arena)
def battles_from_columns(cols: JudgmentColumns, source: str) -> Any:
    """:meth:`evalsift.arena.battles.Battles.from_pairwise` of judgments held as columns (:class:`~evalsift.io.pairwise_data.JudgmentColumns`,
    every one a finished verdict); None when some are not (then the judgments are read one by one)."""
    from ..arena.battles import Battles
    from ..stats.sequential import VALUES
    from ..verdicts import Counted, describe_judgments

    if cols.n == 0 or cols.constant("status") != "done":
        return None
    verdicts = cols.fields["verdict"]
    found = {verdicts} if isinstance(verdicts, str) else set(verdicts)
    if not found <= set(VALUES):
        return None
    models = tuple(cols.systems)
    index = {m: k for k, m in enumerate(models)}
    n = cols.n
    a, b = cols.extra.get("a_index"), cols.extra.get("b_index")
    if a is None or b is None:
        a = np.fromiter(map(index.__getitem__, cols.column("a")), dtype=int, count=n)
        b = np.fromiter(map(index.__getitem__, cols.column("b")), dtype=int, count=n)
    if isinstance(verdicts, str):
        y = np.full(n, VALUES[verdicts], dtype=float)
    else:
        value = {v: VALUES[v] for v in found}
        y = np.fromiter(map(value.__getitem__, verdicts), dtype=float, count=n)
    winners = cols.detail_column("winner") or [None] * n
    bad = {w: str(w if w is not None else "").strip().lower() == "tie (bothbad)" for w in set(winners)}
    bothbad = np.fromiter(map(bad.__getitem__, winners), dtype=bool, count=n)
    battles = Battles.from_arrays(models, a, b, y, ids=cols.column("item_id"), bothbad=bothbad, source=source)
    # whose verdicts: describe_judgments over one judgment per (annotator, kind), repeated as often as it occurs
    verdicts_desc = describe_judgments(Counted((cols.judgment(k), count) for k, count in cols.groups("annotator", "kind")))
    return dataclasses.replace(battles, verdicts=verdicts_desc)


def judge_column(battles: Any, data: Any) -> np.ndarray | None:
    """:meth:`evalsift.arena.battles.Battles.with_judge`'s column when ``data`` holds its judgments as columns and judges each battle
    (item and pair) at most once; None otherwise (then the judgments are read one by one)."""
    from ..stats.sequential import VALUES

    cols = getattr(data, "columns", None)
    if cols is None or cols.n == 0 or cols.constant("status") != "done":
        return None
    verdicts = cols.column("verdict")
    if not set(verdicts) <= set(VALUES):
        return None
    ids, a, b = cols.column("item_id"), cols.column("a"), cols.column("b")
    v = list(map(VALUES.__getitem__, verdicts))
    forward = dict(zip(zip(ids, a, b), v))
    backward = dict(zip(zip(ids, b, a), (1.0 - x for x in v)))
    if len(forward) != cols.n or forward.keys() & backward.keys():  # judged twice: the mean, one by one
        return None
    models = battles.models
    keys = zip(battles.ids, map(models.__getitem__, battles.a.tolist()), map(models.__getitem__, battles.b.tolist()))
    nan = float("nan")
    got = forward.get
    back = backward.get
    return np.fromiter((got(k, back(k, nan)) for k in keys), dtype=float, count=battles.n)


# ---------------------------------------------------------------------------------------- CSV columns
def csv_columns(path: Path, names: tuple[str, ...]) -> dict[str, tuple[list[str], np.ndarray]] | None:
    """The columns ``names`` of a CSV file (gzipped too), parsed by ``pyarrow.csv`` exactly as :func:`csv.reader`
    gives the cells, each as ``(values, codes)``: its distinct texts and, per row, the index of its text among
    them. None when pyarrow is not in use or the file is anything but plain (a header cell given twice or
    quoted, a row with another number of fields, bytes that are not UTF-8, a column missing): then the caller's
    row-by-row reader reads it and words the error."""
    if parser() != "pyarrow":
        return None
    try:
        import pyarrow as pa
        import pyarrow.csv as pcsv
    except ImportError:
        return None
    try:
        raw = read_bytes(path)
    except Exception:
        return None
    if raw.startswith(b"\xef\xbb\xbf"):
        raw = raw[3:]
    end = raw.find(b"\n")
    head = raw[: end if end >= 0 else len(raw)].rstrip(b"\r")
    if not head or b'"' in head or b"\r" in head:
        return None
    if not raw.isascii():
        try:
            raw.decode("utf-8")
        except UnicodeDecodeError:
            return None
    header = head.decode("utf-8").split(",")
    if len(set(header)) != len(header) or not set(names) <= set(header):
        return None
    text = pa.dictionary(pa.int32(), pa.string())
    try:
        table = pcsv.read_csv(
            io.BytesIO(raw), read_options=pcsv.ReadOptions(use_threads=True),
            parse_options=pcsv.ParseOptions(newlines_in_values=True),
            convert_options=pcsv.ConvertOptions(column_types={c: (text if c in names else pa.string()) for c in header},
                                                include_columns=list(names), strings_can_be_null=False,
                                                quoted_strings_can_be_null=False))
    except Exception:  # a row with too few or too many fields, and the like
        return None
    return {c: _codes(table.column(c)) for c in names}


def _codes(col: Any) -> tuple[list[str], np.ndarray]:
    """``(values, codes)`` of a dictionary-encoded column (each chunk has its own dictionary)."""
    values: list[str] = []
    where: dict[str, int] = {}
    parts = []
    for chunk in col.chunks:
        local = np.array([where.setdefault(v, len(where)) for v in chunk.dictionary.to_pylist()], dtype=np.intp)
        parts.append(local[chunk.indices.to_numpy(zero_copy_only=False)] if len(local) else
                     np.zeros(len(chunk), dtype=np.intp))
    values = list(where)
    return values, (np.concatenate(parts) if parts else np.zeros(0, dtype=np.intp))


def preference_matrix(path: Path, need: tuple[str, ...], systems: dict[str, int], items: dict[str, int], config: str,
                      out: np.ndarray) -> np.ndarray | None:
    """:func:`evalsift.io.alpaca.read_preferences` from the CSV's columns (:func:`csv_columns`): ``out`` filled with
    ``preference - 1`` of annotator ``config``'s rows (the later row wins), or None when the file is not plain or a
    kept preference is not a number (then the row reader reads it and names the line)."""
    cols = csv_columns(path, need)
    if cols is None:
        return None
    (mdir, mdir_c), (cfg, cfg_c), (idx, idx_c), (gen, gen_c), (pref, pref_c) = (cols[c] for c in need)
    keep = cfg_c == cfg.index(config) if config in cfg else np.zeros(len(cfg_c), dtype=bool)
    used = np.zeros(len(pref), dtype=bool)
    used[pref_c[keep]] = True
    value = np.zeros(len(pref))
    given = np.zeros(len(pref), dtype=bool)
    for k in np.flatnonzero(used).tolist():
        t = pref[k]
        if t.strip() in MISSING_TOKENS:
            continue
        try:
            value[k], given[k] = float(t) - 1.0, True
        except ValueError:
            return None
    j_gen = np.array([systems.get(g, -1) for g in gen], dtype=np.intp)
    j_dir = np.array([systems.get(m, -1) for m in mdir], dtype=np.intp)
    i_of = np.array([items.get(x, -1) for x in idx], dtype=np.intp)
    j = j_gen[gen_c] if len(gen) else np.zeros(0, dtype=np.intp)
    j = np.where(j >= 0, j, j_dir[mdir_c] if len(mdir) else -1)
    i = i_of[idx_c] if len(idx) else np.zeros(0, dtype=np.intp)
    rows = np.flatnonzero(keep & (j >= 0) & (i >= 0) & given[pref_c])
    flat = i[rows] * out.shape[1] + j[rows]
    _, last = np.unique(flat[::-1], return_index=True)  # the later row wins
    rows = rows[len(rows) - 1 - last]
    out[i[rows], j[rows]] = value[pref_c[rows]]
    return out


# ---------------------------------------------------------------------------------------- entry point
def read_fast(path: Path, name: str | None, raw: bytes | None = None
              ) -> tuple[PairwiseData | None, list[tuple[int, dict[str, Any]]] | None]:
    """``(data, rows)``: the data when a fast reader read the file (else None), and the rows when the json
    parser read them (for the row reader, which then need not parse the file again). ``raw``: the file's bytes
    when the caller has read them already."""
    how = parser()
    if how == "rows" or data_suffix(path) not in (".jsonl", ".ndjson"):
        return None, None
    parsed = pyarrow_columns(path, raw) if how == "pyarrow" else None
    for attempt in ("fast", "json"):
        if parsed is None:
            parsed = json_columns(_rows(path))  # the json path: its errors are the row reader's
        if (pairwise_layout(parsed.first) or pairwise_layout(parsed.names)) != "arena":
            return None, parsed.rows
        try:
            return arena_columns(path, parsed, name), parsed.rows
        except NotPlain:  # a field pyarrow cannot give exactly: the json path
            parsed = None
    return None, None


__all__ = ["PARSER", "PARSERS", "NotPlain", "Parsed", "arena_columns", "battles_from_columns", "csv_columns",
           "judge_column", "json_columns", "parser", "preference_matrix", "pyarrow_columns", "read_fast"]
