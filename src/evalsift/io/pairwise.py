"""Recorded pairwise judgments: a table of verdicts, judge files, SummEval's LLM choices, AlpacaEval's preferences.

Every reader here returns a :class:`PairwiseData`: a :class:`~evalsift.pool.Pool` (the items and
systems the judgments are about) plus the recorded :class:`~evalsift.oracle.base.Judgment`\\ s, in
the order they were recorded. The replay oracle ``judgments:SOURCE``
(:class:`evalsift.oracle.judgments.JudgmentsOracle`) answers from them.

The pairwise table
------------------
A CSV, TSV or JSONL file (read through the shared helpers: non-UTF-8 bytes, a gzip file in disguise
or an empty file is a DataError naming the file and line), one row per judgment:

- required: ``item_id``, ``system_a``, ``system_b``, ``verdict``;
- optional: ``input`` (the item's input), ``output_a``/``output_b`` (the two systems' outputs),
  ``annotator`` (default ``file``), ``kind`` (``human`` -- the default --, ``llm`` or ``metric``),
  ``shown_order`` (``ab`` -- the default: ``system_a`` was shown first -- or ``ba``), ``comment``
  (kept in the judgment's ``detail``). Other columns are ignored.

Rules:

- ``verdict`` is ``a`` (``system_a`` did better), ``b`` or ``tie`` (any case), or ``1`` (= a),
  ``2`` (= b), ``0`` (= tie); anything else -- an empty cell included -- is a DataError naming the
  file, the line and the value.
- Items are the union of the ``item_id`` values and systems the union of ``system_a``/``system_b``,
  both in first-seen order; different pairs may cover different items (PandaLM-style test sets).
- Outputs come from ``output_a``/``output_b`` (``None`` where no row gives one); a second, different
  text for the same item and system is a DataError naming both lines. The same holds for ``input``.
- Each row is one Judgment: annotator from the column (else ``file``), ``detail = {"source": path,
  "line": n}``. Several rows for one item and pair are several judgments; how they combine (latest
  per annotator, plurality over annotators, a split top is a tie) is the Session's rule.

>>> import os, tempfile
>>> folder = tempfile.TemporaryDirectory()
>>> path = os.path.join(folder.name, "pairs.csv")
>>> _ = open(path, "w").write("item_id,system_a,system_b,verdict\\n1,X,Y,a\\n2,Y,X,2\\n")
>>> data = read_pairwise(path)
>>> data.pool.item_ids, data.pool.systems, [j.verdict for j in data.judgments]
(('1', '2'), ('X', 'Y'), ['a', 'b'])
>>> folder.cleanup()

Judge files as people keep them
-------------------------------
:func:`read_pairwise` also reads Chatbot Arena battle files, FastChat / MT-Bench pairwise judgments and
AlpacaEval ``annotations.json`` (JSONL, a JSON list, CSV or TSV), telling the layout from the header or
the first record (:func:`pairwise_layout`); the rules are in :mod:`evalsift.io.judge_files`. A command
that reads the same file in several roles (``--data``, the oracle, a proxy) reads it once: results are
kept per file content.

Recorded datasets (names resolved under ``$EVALSIFT_DATA``; see :func:`read_judgments`)
-------------------------------------------------------------------------------------
- ``summeval/llm-pairwise/<dimension>``: GPT-3.5's choices between two SummEval summaries, each
  pair asked in both presentation orders (:func:`read_summeval_pairwise`);
- ``alpaca-eval/preferences`` (or ``alpaca-eval/preferences/<annotator_config>``): AlpacaEval's judge
  preferences of each model against the baseline (:func:`read_alpaca_preferences`);
- ``<folder>/<stem>`` (``arena-ppr/human``): a judge file directly in a folder (:func:`find_judge_files`).
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import math
import os
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from ..errors import DataError, UnknownNameError, suggest
from ..oracle.base import Judgment
from ..pool import Pool
from ..restrict import PAIR_SYSTEMS
from ._common import (MISSING_TOKENS, blank_state, check_file, empty_file_error, first_line, iter_jsonl, json_problem,
                      natural_key, read_text, to_float, warn_data)
from .datasets import ENV_VAR, data_root

REQUIRED = ("item_id", "system_a", "system_b", "verdict")
OPTIONAL = ("input", "output_a", "output_b", "annotator", "kind", "shown_order", "comment")
VERDICT_CODES = {"a": "a", "b": "b", "tie": "tie", "1": "a", "2": "b", "0": "tie"}
KINDS = ("human", "llm", "metric")
ORDERS = ("ab", "ba")
_KINDS_BY_SUFFIX = {".csv": "csv", ".tsv": "tsv", ".tab": "tsv", ".jsonl": "jsonl", ".ndjson": "jsonl",
                    ".json": "json"}
_EXPECTED = ("a header line with item_id, system_a, system_b, verdict (optional: input, output_a, output_b, "
             "annotator), then one line per judgment")

SUMMEVAL_ANNOTATOR = "gpt-3.5-turbo (recorded)"
SUMMEVAL_DIR = "llm-pairwise"
ALPACA_FILE = "preferences_all_annotators.csv.gz"
ALPACA_CONFIG = "weighted_alpaca_eval_gpt4_turbo"


@dataclass(frozen=True)
class PairwiseData:
    """A Pool (the items and systems judged) and the recorded judgments, in recorded order.

    ``source`` names where they came from (a path or a dataset name). ``judgments_of(a, b)`` gives
    one pair's judgments; ``pairs()`` the pairs judged.

    >>> from evalsift.oracle import Judgment
    >>> j = Judgment(item_id="1", a="X", b="Y", verdict="a", annotator="ann", kind="human")
    >>> data = PairwiseData(Pool(item_ids=["1"], systems=["X", "Y"]), (j,), "inline")
    >>> data.pairs(), len(data.judgments_of("Y", "X"))
    ([('X', 'Y')], 1)
    """

    pool: Pool
    judgments: tuple[Judgment, ...]
    source: str

    def judgments_of(self, a: str, b: str) -> list[Judgment]:
        """The judgments of systems ``a`` and ``b`` (recorded in either order, kept as recorded), in
        recorded order. A system the data does not know is a DataError naming it.

        >>> from evalsift.oracle import Judgment
        >>> j = Judgment(item_id="1", a="X", b="Y", verdict="b", annotator="ann", kind="human")
        >>> PairwiseData(Pool(item_ids=["1"], systems=["X", "Y"]), (j,), "inline").judgments_of("Y", "X")[0].verdict
        'b'
        """
        for s in (a, b):
            self.pool.system_index(s)  # an unknown system names itself with a suggestion
        want = {a, b}
        return [j for j in self.judgments if {j.a, j.b} == want]

    def pairs(self) -> list[tuple[str, str]]:
        """The system pairs judged, as first recorded, in first-seen order."""
        seen: dict[frozenset, tuple[str, str]] = {}
        for j in self.judgments:
            seen.setdefault(frozenset((j.a, j.b)), (j.a, j.b))
        return list(seen.values())


# ---------------------------------------------------------------------------------------- the table
def parse_verdict(value: Any) -> str | None:
    """``'a'``, ``'b'`` or ``'tie'`` for a recorded verdict cell, None when it is not one.

    Accepts ``a``/``b``/``tie`` in any case and ``1`` (= a), ``2`` (= b), ``0`` (= tie) as text or
    whole numbers.

    >>> [parse_verdict(v) for v in ("A", "tie", " b ", 1, "2", 0, 2.0, "x", None, True)]
    ['a', 'tie', 'b', 'a', 'b', 'tie', 'b', None, None, None]
    """
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, float):
        if not value.is_integer():
            return None
        value = int(value)
    key = str(value).strip().lower()
    return VERDICT_CODES.get(key)


def _table_kind(path: Path) -> str:
    suffixes = [s.lower() for s in path.suffixes]
    if suffixes and suffixes[-1] == ".gz":
        suffixes.pop()
    kind = _KINDS_BY_SUFFIX.get(suffixes[-1] if suffixes else "")
    if kind is None:
        raise DataError(f"{path}: unknown pairwise table format {path.suffix!r}; use .csv, .tsv, .jsonl or .json "
                        "(optionally gzipped as .csv.gz etc.).")
    return kind


_JSON_SPACE = re.compile(r"[ \t\n\r]*")


def _json_list_rows(path: Path, what: str, expected: str) -> list[tuple[int, Any]]:
    """``(line, element)`` for every element of a file holding one JSON list, ``line`` being the line where
    the element starts (so errors can name it as for JSONL); DataError for anything else."""
    text = read_text(path)
    pos = _JSON_SPACE.match(text).end()
    if pos == len(text):
        raise empty_file_error(path, blank_state(text), what, expected)
    if text[pos] != "[":
        raise DataError(f"{path}: expected a JSON list ([{{...}}, {{...}}]) of {expected}; the file starts with "
                        f"{text[pos]!r} instead of '['.")
    decoder = json.JSONDecoder()
    out: list[tuple[int, Any]] = []
    line, last = 1, 0
    pos = _JSON_SPACE.match(text, pos + 1).end()
    if text.startswith("]", pos):
        raise empty_file_error(path, "holds an empty JSON list", what, expected)
    while True:
        try:
            obj, end = decoder.raw_decode(text, pos)
        except json.JSONDecodeError as e:
            raise DataError(f"{path}: not valid JSON ({json_problem(e)}).") from None
        line += text.count("\n", last, pos)
        last = pos
        out.append((line, obj))
        pos = _JSON_SPACE.match(text, end).end()
        if text.startswith(",", pos):
            pos = _JSON_SPACE.match(text, pos + 1).end()
            continue
        if text.startswith("]", pos) and _JSON_SPACE.match(text, pos + 1).end() == len(text):
            return out
        at = text.count("\n", 0, pos) + 1
        raise DataError(f"{path}: not valid JSON (expected ',' or the list's closing ']' on line {at}).")


def _csv_rows(path: Path, text: str, delimiter: str) -> list[tuple[int, dict[str, Any]]]:
    reader = csv.DictReader(io.StringIO(text, newline=""), delimiter=delimiter)
    out = []
    try:
        for rec in reader:
            out.append((reader.line_num, {k: (None if v == "" else v) for k, v in rec.items() if k is not None}))
    except csv.Error as e:
        raise DataError(f"{path}: line {reader.line_num} is not valid {'CSV' if delimiter == ',' else 'TSV'} ({e}).") from None
    if not out:
        state = blank_state(text) if not text.strip() else "has only a header line"
        raise empty_file_error(path, state, "judgments", _EXPECTED)
    return out


def _rows(path: Path) -> list[tuple[int, dict[str, Any]]]:
    """``(line, row)`` pairs, at least one (CSV/TSV: the header is line 1; a JSON list: the line where
    each object starts)."""
    kind = _table_kind(path)
    if kind in ("jsonl", "json"):
        if kind == "jsonl":
            records: Any = iter_jsonl(path, what="judgments", expected="one JSON object per line: " + _LAYOUT_NAMES)
        else:
            records = _json_list_rows(path, "judgments", "judgment objects (" + _LAYOUT_NAMES + ")")
        out = []
        for lineno, rec in records:
            if not isinstance(rec, dict):
                raise DataError(f"{path}: line {lineno}: expected a JSON object ({_LAYOUT_NAMES}), got "
                                f"{type(rec).__name__} {str(rec)[:40]!r}.")
            out.append((lineno, rec))
        return out
    return _csv_rows(path, read_text(path), "," if kind == "csv" else "\t")


# ---------------------------------------------------------------------------------------- layouts
#: the fields that make a file's first record (or header) one of the recorded-judgment layouts, tried in
#: this order (see :func:`pairwise_layout`)
LAYOUTS: dict[str, tuple[str, ...]] = {
    "table": ("system_a", "system_b", "verdict"),
    "fastchat": ("model_1", "model_2", "g1_winner", "g2_winner"),
    "arena": ("model_a", "model_b", "winner"),
    "alpaca": ("generator_1", "generator_2", "preference"),
    "evalsift": ("item_id", "a", "b", "verdict", "annotator", "status", "shown_order"),
}
_LAYOUT_NAMES = ("a pairwise table (item_id, system_a, system_b, verdict), Chatbot Arena battles (model_a, model_b, "
                 "winner), FastChat pairwise judgments (question_id, model_1, model_2, g1_winner, g2_winner) or "
                 "AlpacaEval annotations (instruction, generator_1, generator_2, preference), or evalsift's own judgment "
                 "records (annotate export --format judgments: item_id, a, b, verdict, annotator, status, shown_order)")
#: AlpacaEval annotations name their item by one of these (besides generator_1, generator_2, preference)
ALPACA_ITEM_FIELDS = ("instruction", "index")


def pairwise_layout(columns: Any) -> str | None:
    """Which recorded-judgment layout a header (or a first record's keys) ``columns`` has, or None.

    - ``table``: ``system_a``, ``system_b``, ``verdict`` (the pairwise table);
    - ``fastchat``: ``model_1``, ``model_2``, ``g1_winner``, ``g2_winner`` (FastChat / MT-Bench judge files);
    - ``arena``: ``model_a``, ``model_b``, ``winner`` (Chatbot Arena battles, MT-Bench human judgments);
    - ``alpaca``: ``generator_1``, ``generator_2``, ``preference`` and ``instruction`` or ``index``, without
      ``annotator_config`` (AlpacaEval's ``annotations.json``; its ``preferences_all_annotators`` table,
      which has ``annotator_config`` and ``instruction_idx``, is the ``alpaca-eval/preferences`` dataset).

    >>> pairwise_layout(["num", "question_id", "model_a", "model_b", "winner"])
    'arena'
    >>> pairwise_layout({"item_id": 1, "system": "X", "output": "..."}) is None
    True
    """
    cols = set(columns)
    for layout, need in LAYOUTS.items():
        if set(need) <= cols:
            if layout == "alpaca" and ("annotator_config" in cols or not cols & set(ALPACA_ITEM_FIELDS)):
                continue
            return layout
    return None


class _Builder:
    """Collects what a reader finds -- items and systems in first-seen order, outputs, inputs, judgments --
    and makes the :class:`PairwiseData`. Outputs and inputs are kept once per item (and system); a second,
    different text is a DataError naming both lines (:func:`_set_once`)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.items: dict[str, int] = {}
        self.systems: dict[str, int] = {}
        self.outputs: dict[tuple[str, str], tuple[str, int]] = {}
        self.inputs: dict[tuple[str], tuple[str, int]] = {}
        self.judgments: list[Judgment] = []
        self.battles: dict[str, tuple[str, str]] | None = None  # item -> its two systems, when items are battles
        self._pairs: dict[tuple[str, str], tuple[str, str]] = {}

    def battle(self, iid: str, a: str, b: str) -> None:
        """Note that item ``iid`` is a battle of ``a`` and ``b`` only (no other pair has it): the Pool's
        metadata ``_systems`` says so, and :func:`~evalsift.restrict.restrict_pair` keeps a pair's own battles."""
        if self.battles is None:
            self.battles = {}
        key = (a, b) if a <= b else (b, a)
        self.battles.setdefault(iid, self._pairs.setdefault(key, key))  # one tuple per pair, shared

    def see(self, iid: str, a: str, b: str) -> None:
        """Note an item and its two systems (first-seen order)."""
        self.items.setdefault(iid, len(self.items))
        self.systems.setdefault(a, len(self.systems))
        self.systems.setdefault(b, len(self.systems))

    def output(self, iid: str, system: str, text: str | None, line: int, column: str) -> None:
        if text is not None:
            _set_once(self.outputs, (iid, system), text, line, self.path, column, iid, system)

    def input(self, iid: str, text: str | None, line: int, column: str) -> None:
        if text is not None:
            _set_once(self.inputs, (iid,), text, line, self.path, column, iid, None)

    def build(self, name: str | None) -> PairwiseData:
        ids, names = list(self.items), list(self.systems)
        with_output = {s for _, s in self.outputs}
        outs = {s: [self.outputs.get((i, s), (None,))[0] for i in ids] for s in names if s in with_output}
        ins = [self.inputs.get((i,), (None,))[0] for i in ids] if self.inputs else None
        meta = {PAIR_SYSTEMS: [self.battles.get(i) for i in ids]} if self.battles else None
        pool = Pool(item_ids=ids, inputs=ins, systems=names, outputs=outs, metadata=meta,
                    name=name if name is not None else str(self.path))
        return PairwiseData(pool=pool, judgments=tuple(self.judgments), source=str(self.path))


def _text(value: Any) -> str | None:
    """A cell as text, None when missing (empty, JSON null)."""
    if value is None:
        return None
    if isinstance(value, float) and math.isnan(value):
        return None
    return value if isinstance(value, str) else str(value)


def _set_once(store: dict, key: tuple, value: str, line: int, path: Path, column: str, item_id: str,
              system: str | None) -> None:
    """Record ``value`` for ``key`` (first line wins); a different second text is a DataError naming both lines."""
    if key not in store:
        store[key] = (value, line)
        return
    first, first_line = store[key]
    if first != value:
        noun, whose = ("input", f"item {item_id!r}") if system is None else ("output", f"item {item_id!r} of system {system!r}")
        raise DataError(f"{path}: line {line} gives {whose} a different {noun} than line {first_line} "
                        f"({value[:40]!r} vs {first[:40]!r}); keep one {noun} per "
                        f"{'item' if system is None else 'item and system'}: make the cells agree or leave the later "
                        "one empty.", field=column, item_id=item_id, system=system)


def _choice(path: Path, line: int, column: str, value: Any, options: tuple[str, ...], default: str,
            item_id: str) -> str:
    text = _text(value)
    if text is None:
        return default
    key = text.strip().lower()
    if key not in options:
        raise DataError(f"{path}: line {line}: {column} {text!r} is not one of: {', '.join(options)}.{suggest(key, options)}",
                        field=column, item_id=item_id)
    return key


def read_pairwise(path: str | Path, *, name: str | None = None) -> PairwiseData:
    """Read a file of recorded pairwise judgments into a Pool plus its judgments.

    The layout is told by the header (CSV/TSV) or the first record (JSONL, or a JSON list), see
    :func:`pairwise_layout`: the pairwise table (the module doc), Chatbot Arena battles and MT-Bench
    human judgments (:func:`evalsift.io.judge_files.read_arena`), FastChat pairwise judge files
    (:func:`evalsift.io.judge_files.read_fastchat`) or AlpacaEval annotations
    (:func:`evalsift.io.judge_files.read_alpaca_annotations`). ``name`` is the Pool's name (default:
    the path).

    >>> data = read_pairwise("pairs.csv")                          # doctest: +SKIP
    >>> data.pool.n_items, len(data.judgments_of("model-x", "model-y"))  # doctest: +SKIP
    (50, 50)
    """
    path = Path(path)
    stamp = _fingerprint(path)
    if stamp is None:
        return _read_file(path, name)
    data = _read_cached(str(path), stamp)
    if name is None:
        return data
    return PairwiseData(pool=data.pool.with_name(name), judgments=data.judgments, source=data.source)


def _fingerprint(path: Path) -> tuple[str, int, str] | None:
    """(resolved path, size, BLAKE2 digest of the bytes) of a readable file, None otherwise (the reader then
    raises the DataError that names the problem)."""
    try:
        if not path.is_file():
            return None
        data = path.read_bytes()
        return str(path.resolve()), len(data), hashlib.blake2b(data, digest_size=16).hexdigest()
    except OSError:
        return None


@lru_cache(maxsize=8)
def _read_cached(path: str, stamp: tuple[str, int, str]) -> PairwiseData:
    """One read per file content: a command reads the same file as ``--data``, as the oracle and as a proxy."""
    return _read_file(Path(path), None)


def _read_file(path: Path, name: str | None) -> PairwiseData:
    rows = _rows(path)
    cols = list(dict.fromkeys(k for _, r in rows for k in r))
    layout = pairwise_layout(rows[0][1]) or pairwise_layout(cols)
    if layout is None or layout == "table":
        return _read_table(path, rows, cols, name)
    from . import judge_files

    return judge_files.READERS[layout](path, rows, cols, name)


def _read_table(path: Path, rows: list[tuple[int, dict[str, Any]]], cols: list[str], name: str | None) -> PairwiseData:
    """The pairwise table (the module doc) from its rows."""
    missing = [c for c in REQUIRED if c not in cols]
    if missing:
        extra = ""
        if {"annotator_config", "instruction_idx", "generator_1"} <= set(cols):
            extra = (" This is AlpacaEval's preferences_all_annotators table: replay it as "
                     "judgments:alpaca-eval/preferences[/<annotator_config>] (read_alpaca_preferences).")
        elif len(missing) == len(REQUIRED):  # not meant as a table: say what else is read
            extra = f" Judge files are read too: {_LAYOUT_NAMES}."
        raise DataError(f"{path}: missing required column(s) {missing}; found columns {cols}. A pairwise table needs "
                        "item_id, system_a, system_b, verdict (one row per judgment; verdict a, b or tie, or 1, 2, 0)."
                        + extra, field=missing[0], hint="add the missing columns")
    out = _Builder(path)
    for line, r in rows:
        iid, sa, sb = (_text(r.get(c)) for c in ("item_id", "system_a", "system_b"))
        empty = [c for c, v in (("item_id", iid), ("system_a", sa), ("system_b", sb)) if v is None or not v.strip()]
        if empty:
            raise DataError(f"{path}: line {line}: {', '.join(empty)} must not be empty; every judgment names its item "
                            "and its two systems.", field=empty[0], item_id=iid)
        if sa == sb:
            raise DataError(f"{path}: line {line}: system_a and system_b are both {sa!r}; a judgment compares two "
                            "different systems.", field="system_b", item_id=iid, system=sa)
        verdict = parse_verdict(r.get("verdict"))
        if verdict is None:
            raw = r.get("verdict")
            shown = "is empty" if _text(raw) is None else f"{raw!r} is not a verdict"
            raise DataError(f"{path}: line {line}: verdict {shown}; write a (system_a better), b or tie -- or 1 (= a), "
                            "2 (= b), 0 (= tie).", field="verdict", item_id=iid, hint="use a, b, tie or 1, 2, 0")
        kind = _choice(path, line, "kind", r.get("kind"), KINDS, "human", iid)
        order = _choice(path, line, "shown_order", r.get("shown_order"), ORDERS, "ab", iid)
        out.see(iid, sa, sb)
        out.output(iid, sa, _text(r.get("output_a")), line, "output_a")
        out.output(iid, sb, _text(r.get("output_b")), line, "output_b")
        out.input(iid, _text(r.get("input")), line, "input")
        detail: dict[str, Any] = {"source": str(path), "line": line}
        comment = _text(r.get("comment"))
        if comment is not None:
            detail["comment"] = comment
        out.judgments.append(Judgment(item_id=iid, a=sa, b=sb, verdict=verdict,
                                      annotator=_text(r.get("annotator")) or "file", kind=kind, shown_order=order,
                                      detail=detail))
    return out.build(name)


def read_pairwise_pool(path: str | Path, *, name: str | None = None) -> Pool:
    """The Pool of a pairwise table (the ``pairwise`` format of :func:`evalsift.io.load`); its
    judgments go to the ``judgments:FILE`` oracle.

    >>> load("pairwise:pairs.csv").systems        # doctest: +SKIP
    ('model-x', 'model-y')
    """
    return read_pairwise(path, name=name).pool


def looks_pairwise(path: str | Path) -> bool:
    """True when a file holds recorded pairwise judgments: its CSV/TSV header, first JSONL record or first
    element of a JSON list has the fields of one of the :data:`LAYOUTS` (:func:`pairwise_layout`).

    Used by format detection; only the start of the file is read. A file that cannot be read as UTF-8
    raises the usual line-numbered DataError.
    """
    path = Path(path)
    try:
        kind = _table_kind(path)
    except DataError:
        return False
    if kind == "json":
        rec = _first_json_element(path)
        return isinstance(rec, dict) and pairwise_layout(rec) is not None
    line, _ = first_line(path)
    if line is None:
        return False
    if kind == "jsonl":
        try:
            rec = json.loads(line)
        except json.JSONDecodeError:
            return False
        return isinstance(rec, dict) and pairwise_layout(rec) is not None
    header = next(csv.reader([line], delimiter="," if kind == "csv" else "\t"), [])
    return pairwise_layout(h.strip() for h in header) is not None


def _first_json_element(path: Path) -> Any:
    """The first element of a file holding a JSON list, parsed from the file's start only (read in growing
    blocks); None when the file does not start with a list (e.g. ``summeval.json``, an object) or the
    element cannot be parsed."""
    decoder = json.JSONDecoder()
    size = 1 << 16
    while True:
        head, whole = _head(path, size)
        text = head.decode("utf-8", "ignore").lstrip("\ufeff")
        pos = _JSON_SPACE.match(text).end()
        if pos < len(text) and text[pos] != "[":
            return None
        pos = _JSON_SPACE.match(text, pos + 1).end()
        try:
            return decoder.raw_decode(text, pos)[0]
        except json.JSONDecodeError:
            if whole:
                return None
        size *= 8


def _head(path: Path, size: int) -> tuple[bytes, bool]:
    """The first ``size`` bytes of a file (decompressed for ``.gz``) and whether that is all of it."""
    from ._common import _open_binary

    f = _open_binary(check_file(path))
    try:
        data = f.read(size + 1)
    except (OSError, EOFError) as e:
        raise DataError(f"{path}: cannot read the file ({getattr(e, 'strerror', None) or e}).") from None
    finally:
        f.close()
    return data[:size], len(data) <= size


# ---------------------------------------------------------------------------------------- SummEval
_SUMMEVAL_FILE = re.compile(r"^(?P<a>[^-_]+)-(?P<b>[^-_]+)_(?P<dim>[A-Za-z]+)(?P<toggle>_toggle)?\.result$")
_ANSWER = re.compile(r"^(?:[Ss]ummary\s*)?([ABC])(?:$|[\s.:,;)\]])")
# letter -> verdict for system a (the first-named system of the file name): plain files show a's summary
# first (A = a); _toggle files show b's summary first (A = b). C is "both equally good": a tie.
_LETTER = {"ab": {"A": "a", "B": "b", "C": "tie"}, "ba": {"A": "b", "B": "a", "C": "tie"}}


def summeval_answer(resp: Any) -> str | None:
    """The letter of a recorded SummEval answer (``A``, ``B`` or ``C``), None without a recognisable one.

    ``resp`` is a bare letter (any case) or a sentence starting with the capital letter
    (``"A: Summary #1 is more coherent."``) or with ``Summary A``.

    >>> [summeval_answer(r) for r in ("A", "B: Summary #2 is more fluent.", "c", "Summary A", "Both are good", 3)]
    ['A', 'B', 'C', 'A', None, None]
    """
    if not isinstance(resp, str):
        return None
    text = resp.strip()
    if len(text) == 1 and text.upper() in "ABC":
        return text.upper()
    m = _ANSWER.match(text)  # a sentence starts with the capital letter (or "Summary A")
    return m.group(1) if m else None


def summeval_pairwise_files(folder: str | Path) -> dict[str, dict[tuple[str, str], dict[str, Path]]]:
    """``{dimension: {(a, b): {"ab": plain file, "ba": toggle file}}}`` for the ``*.result`` files in ``folder``."""
    out: dict[str, dict[tuple[str, str], dict[str, Path]]] = {}
    for f in sorted(Path(folder).glob("*.result"), key=lambda p: natural_key(p.name)):
        m = _SUMMEVAL_FILE.match(f.name)
        if m is None:
            continue
        order = "ba" if m.group("toggle") else "ab"
        out.setdefault(m.group("dim"), {}).setdefault((m.group("a"), m.group("b")), {})[order] = f
    return out


def _summeval_answers(file: Path) -> dict[str, tuple[int, dict[str, Any]]]:
    """``{id: (line, record)}`` of one ``.result`` file; a repeated id is a DataError naming both lines."""
    out: dict[str, tuple[int, dict[str, Any]]] = {}
    for lineno, rec in iter_jsonl(file, what="answers", expected="one JSON object per line with id and resp"):
        if not isinstance(rec, dict) or "id" not in rec or "resp" not in rec:
            raise DataError(f"{file}: line {lineno}: expected a JSON object with 'id' and 'resp' "
                            "(and human_score_1, human_score_2).")
        iid = str(rec["id"])
        if iid in out:
            raise DataError(f"{file}: line {lineno} repeats document {iid!r}, first on line {out[iid][0]}; keep one "
                            "answer per document.", item_id=iid)
        out[iid] = (lineno, rec)
    return out


def _summeval_judgment(iid: str, a: str, b: str, dim: str, folder: Path,
                       got: dict[str, tuple[Path, int, dict[str, Any]]]) -> Judgment:
    """One judgment from the answers of both presentation orders (see :func:`read_summeval_pairwise`)."""
    orders = [o for o in ORDERS if o in got]
    answers = {o: got[o][2]["resp"] for o in orders}
    letters = {o: summeval_answer(answers[o]) for o in orders}
    per_order = {o: (_LETTER[o][letters[o]] if letters[o] else None) for o in orders}
    rec = got[orders[0]][2]
    detail: dict[str, Any] = {
        "source": str(folder), "dimension": dim, "files": {o: got[o][0].name for o in orders},
        "line": {o: got[o][1] for o in orders}, "answers": answers, "shown_orders": orders,
        "order_verdicts": per_order,
        "human_scores": {a: rec.get("human_score_1"), b: rec.get("human_score_2")},
    }
    common = dict(item_id=iid, a=a, b=b, annotator=SUMMEVAL_ANNOTATOR, kind="llm",
                  shown_order=orders[0] if len(orders) == 1 else "both")
    bad = [o for o in orders if per_order[o] is None]
    if bad:
        which = " and ".join("as shown (a first)" if o == "ab" else "swapped (b first)" for o in bad)
        detail["reason"] = (f"no recognisable A/B/C answer {which}: " +
                            "; ".join(repr(str(answers[o])[:80]) for o in bad))
        return Judgment(verdict=None, status="error", detail=detail, **common)
    values = set(per_order.values())
    return Judgment(verdict=values.pop() if len(values) == 1 else "tie", detail=detail, **common)


def read_summeval_pairwise(folder: str | Path, dimension: str, *, name: str | None = None) -> PairwiseData:
    """GPT-3.5's recorded choices between SummEval summaries on one ``dimension``, as judgments.

    ``folder`` holds ``<Ma>-<Mb>_<dimension>.result`` and ``<Ma>-<Mb>_<dimension>_toggle.result`` (JSONL
    ``{id, resp, human_score_1, human_score_2}``; ``id`` is the SummEval document id, as in
    ``load("summeval")``). Each document of a pair gives ONE judgment of annotator
    ``gpt-3.5-turbo (recorded)`` (kind ``llm``) for systems ``a = Ma`` and ``b = Mb``:

    - the plain file showed ``Ma``'s summary first: ``A`` = Ma better, ``B`` = Mb better;
    - the ``_toggle`` file showed them swapped: ``A`` = **Mb** better, ``B`` = **Ma** better;
    - ``C`` ("both summaries are equally ...") is a tie in either file;
    - the two orders agreeing give that verdict; disagreeing orders give a tie (position bias cancels);
    - an answer without a recognisable ``A``/``B``/``C`` in either order makes the judgment an
      ``error`` (never a verdict) with the raw text in ``detail["reason"]``; a document with only one
      order recorded gets that order's verdict (``shown_order`` says which).

    ``detail`` keeps both raw ``answers``, the ``shown_orders``, each order's verdict
    (``order_verdicts``), the files, lines and the expert means (``human_scores``).

    Evidence for the toggle convention: ``human_score_1`` is ``Ma``'s expert mean and ``human_score_2``
    ``Mb``'s in *both* files (the scores are not swapped; checked against ``summeval.json`` for all
    8,800 lines). Where the experts prefer one summary and the answer is A or B, reading ``A`` as the
    first-named system agrees with the experts on 1,698 of 2,675 plain-file answers (63%) but on only
    996 of 2,675 toggle-file answers (37%); reading the toggle files the other way round (``A`` = Mb)
    agrees on 1,679 (63%), as in the plain files. The evaluation script published with these files
    maps them the same way (in a toggled file ``A`` counts for the second model, ``B`` for the first,
    anything else as "equal").

    >>> data = read_summeval_pairwise("data/summeval/llm-pairwise", "coherence")   # doctest: +SKIP
    >>> len(data.judgments), data.pairs()[0]                                       # doctest: +SKIP
    (1100, ('M22', 'M23'))
    """
    folder = Path(folder)
    if not folder.is_dir():
        raise DataError(f"{folder}: no such folder; expected the SummEval llm-pairwise folder of "
                        "<Ma>-<Mb>_<dimension>[_toggle].result files.")
    found = summeval_pairwise_files(folder)
    if dimension not in found:
        raise DataError(f"{folder}: no <Ma>-<Mb>_{dimension}[_toggle].result files.{suggest(dimension, found)} "
                        f"Dimensions found: {', '.join(sorted(found)) or '(none)'}.", field="dimension")
    judgments: list[Judgment] = []
    items: dict[str, None] = {}
    systems: dict[str, None] = {}
    for (a, b), files in found[dimension].items():
        per_order = {o: _summeval_answers(f) for o, f in files.items()}
        if len(files) == 1:
            (o, f), = files.items()
            warn_data(f"{f}: the {'swapped' if o == 'ab' else 'plain'} order of {a} vs {b} ({dimension}) is missing; "
                      "its judgments come from one presentation order only.")
        ids = list(dict.fromkeys(i for answers in per_order.values() for i in answers))
        systems.update(dict.fromkeys((a, b)))
        for iid in ids:
            items.setdefault(iid, None)
            got = {o: (files[o], *per_order[o][iid]) for o in files if iid in per_order[o]}
            judgments.append(_summeval_judgment(iid, a, b, dimension, folder, got))
    pool = Pool(item_ids=list(items), systems=list(systems),
                name=name if name is not None else f"summeval/{SUMMEVAL_DIR}/{dimension}")
    return PairwiseData(pool=pool, judgments=tuple(judgments), source=str(folder / f"*_{dimension}*.result"))


# ---------------------------------------------------------------------------------------- AlpacaEval
def alpaca_verdict(preference: float) -> str | None:
    """The verdict (a = the baseline ``generator_1``, b = the model ``generator_2``) of an AlpacaEval preference.

    Below 1.5 the baseline wins, above 1.5 the model wins, exactly 1.5 is a tie; ``0`` is AlpacaEval's
    older encoding of a draw (its ``pairwise_to_winrate``: "0 or 1.5 for draw"). Anything else outside
    [1, 2] is None (not a preference).

    >>> [alpaca_verdict(p) for p in (1.0, 1.2, 1.5, 1.9999, 2.0, 0.0, 3.0)]
    ['a', 'a', 'tie', 'b', 'b', 'tie', None]
    """
    if preference == 0:
        return "tie"
    if not 1.0 <= preference <= 2.0:
        return None
    return "tie" if preference == 1.5 else ("a" if preference < 1.5 else "b")


def read_alpaca_preferences(path: str | Path, config: str = ALPACA_CONFIG, *, name: str | None = None) -> PairwiseData:
    """AlpacaEval's recorded judge preferences of annotator config ``config`` as judgments.

    ``path``: the AlpacaEval folder or its ``preferences_all_annotators.csv.gz`` (columns ``model_dir,
    annotator_config, instruction_idx, generator_1, generator_2, annotator, preference, ...``). Each row
    of ``config`` is one judgment of item ``instruction_idx`` (the item ids of ``load("alpaca-eval")``)
    for ``a = generator_1`` (the baseline) and ``b = generator_2`` (the model; the generator column is
    used, not ``model_dir``), annotator ``<config> (recorded)``, kind ``llm``, with the raw
    ``preference`` in ``detail``; the verdict follows :func:`alpaca_verdict`. A row without a
    preference is an ``error`` judgment; a preference that is not a number, or outside [1, 2] and not
    0, is a DataError naming the line. Rows judging the baseline against itself are left out. Two rows
    for the same item and model (AlpacaEval's files repeat ``falcon-40b-instruct`` under two
    ``model_dir``\\ s) are two judgments of the same annotator: the later one counts.

    >>> data = read_alpaca_preferences("data/alpaca-eval")   # doctest: +SKIP
    >>> data.pairs()[:1]                                     # doctest: +SKIP
    [('gpt4_1106_preview', 'Ein-70B-v0.1')]
    """
    path = Path(path)
    file = path / ALPACA_FILE if path.is_dir() else path
    need = ("annotator_config", "instruction_idx", "generator_1", "generator_2", "preference")
    text = read_text(file)
    if not text.strip():
        raise empty_file_error(file, blank_state(text), "preferences", f"a CSV with a header line naming {', '.join(need)}")
    reader = csv.reader(io.StringIO(text, newline=""))
    judgments: list[Judgment] = []
    items: dict[str, None] = {}
    systems: dict[str, None] = {}
    configs: dict[str, None] = {}
    annotator = f"{config} (recorded)"
    try:
        header = next(reader, [])
        missing = [c for c in need if c not in header]
        if missing:
            raise DataError(f"{file}: missing columns {missing}; found {header}. Expected AlpacaEval's "
                            "preferences_all_annotators table.")
        cfg, idx, g1, g2, pref = (header.index(c) for c in need)
        mdir = header.index("model_dir") if "model_dir" in header else None
        width = max(cfg, idx, g1, g2, pref)
        for r in reader:
            if len(r) <= width:
                if r:
                    raise DataError(f"{file}: line {reader.line_num} has {len(r)} fields, expected {len(header)} "
                                    "(as many as the header).")
                continue
            configs.setdefault(r[cfg], None)
            if r[cfg] != config or r[g1] == r[g2]:
                continue
            line, iid, a, b, raw = reader.line_num, r[idx], r[g1], r[g2], r[pref].strip()
            detail: dict[str, Any] = {"source": str(file), "line": line, "preference": None, "annotator_config": config}
            if mdir is not None:
                detail["model_dir"] = r[mdir]
            common = dict(item_id=iid, a=a, b=b, annotator=annotator, kind="llm", detail=detail)
            items.setdefault(iid, None)
            systems.update(dict.fromkeys((a, b)))
            if raw in MISSING_TOKENS:
                detail["reason"] = "no recorded preference"
                judgments.append(Judgment(verdict=None, status="error", **common))
                continue
            try:
                value = to_float(raw)
            except (TypeError, ValueError):
                raise DataError(f"{file}: line {line}: preference {raw!r} is not a number; expected a value in [1, 2] "
                                "(1 = baseline wins, 2 = model wins).", field="preference", item_id=iid, system=b) from None
            verdict = alpaca_verdict(value)
            if verdict is None:
                raise DataError(f"{file}: line {line}: preference {value!r} is outside [1, 2] (1 = baseline wins, "
                                "2 = model wins, 1.5 or 0 = a draw).", field="preference", item_id=iid, system=b)
            detail["preference"] = value
            judgments.append(Judgment(verdict=verdict, **common))
    except csv.Error as e:
        raise DataError(f"{file}: line {reader.line_num} is not valid CSV ({e}).") from None
    if config not in configs:
        raise DataError(f"{file}: no rows of annotator config {config!r}.{suggest(config, configs)} Configs in the file: "
                        f"{', '.join(sorted(configs)) or '(none)'}.", field="annotator_config")
    pool = Pool(item_ids=list(items), systems=list(systems),
                name=name if name is not None else f"alpaca-eval/preferences/{config}")
    return PairwiseData(pool=pool, judgments=tuple(judgments), source=f"{file} [{config}]")


# ---------------------------------------------------------------------------------------- names
def find_judgment_sources(root: Path | None = None) -> dict[str, tuple[str, Path, str]]:
    """Recorded-judgment dataset names under ``root`` (default ``$EVALSIFT_DATA``): name -> (reader, path, argument).

    ``<folder>/llm-pairwise/<dimension>`` for every ``<root>/<folder>/llm-pairwise/*_<dimension>.result``
    (SummEval), ``<folder>/preferences`` for every ``<root>/<folder>/preferences_all_annotators.csv.gz``
    (AlpacaEval; ``<folder>/preferences/<annotator_config>`` picks another config), and ``<folder>/<stem>``
    for every file of recorded judgments directly in a folder (:func:`find_judge_files`, e.g.
    ``arena-ppr/human`` for ``arena-ppr/human.jsonl``).

    >>> find_judgment_sources(Path("/nonexistent"))
    {}
    """
    root = data_root() if root is None else Path(root)
    found: dict[str, tuple[str, Path, str]] = {}
    if root is None or not root.is_dir():
        return found
    for name, file in find_judge_files(root).items():
        found[name] = ("file", file, "")
    for folder in sorted(p for p in root.iterdir() if p.is_dir()):
        llm = folder / SUMMEVAL_DIR
        if llm.is_dir():
            for dim in sorted(summeval_pairwise_files(llm)):
                found[f"{folder.name}/{SUMMEVAL_DIR}/{dim}"] = ("summeval", llm, dim)
        if (folder / ALPACA_FILE).is_file():
            found[f"{folder.name}/preferences"] = ("alpaca", folder / ALPACA_FILE, ALPACA_CONFIG)
    return found


_JUDGE_FILE_SUFFIXES = (".jsonl", ".json", ".csv", ".tsv")


def find_judge_files(root: Path) -> dict[str, Path]:
    """``<folder>/<stem>`` -> file for every file directly inside a folder of ``root`` whose start shows
    recorded pairwise judgments (:func:`looks_pairwise`: a pairwise table, Arena battles, FastChat judgments,
    AlpacaEval annotations), e.g. ``arena-ppr/human`` -> ``<root>/arena-ppr/human.jsonl``. Only the start of
    each candidate file is read; a file that cannot be read is passed over.

    >>> find_judge_files(Path("/nonexistent"))
    {}
    """
    found: dict[str, Path] = {}
    if not root.is_dir():
        return found
    for folder in sorted(p for p in root.iterdir() if p.is_dir()):
        for file in sorted(folder.iterdir(), key=lambda f: natural_key(f.name)):
            if file.suffix.lower() not in _JUDGE_FILE_SUFFIXES or not file.is_file():
                continue
            try:
                if looks_pairwise(file):
                    found.setdefault(f"{folder.name}/{file.stem}", file)
            except DataError:
                continue
    return found


def _sources_note(root: Path | None) -> str:
    if root is None:
        why = f"{ENV_VAR} is empty" if ENV_VAR in os.environ else f"{ENV_VAR} is not set and no shared/data folder was found"
        return (f"{why}, so no recorded dataset can be found: set it to the data folder (the one "
                "holding summeval/ and alpaca-eval/), or give the path of a pairwise table (.csv/.tsv/.jsonl).")
    if not root.is_dir():
        return f"{ENV_VAR}={root} is not an existing folder; point it at the data folder or give a pairwise table path."
    return f"Names are looked up under {ENV_VAR}={root}; or give the path of a pairwise table (.csv/.tsv/.jsonl)."


@lru_cache(maxsize=8)
def _read_dataset(reader: str, path: str, arg: str, name: str, stamp: tuple[int, int]) -> PairwiseData:
    """Read a recorded dataset once per (file, modification time): replays ask for it repeatedly."""
    if reader == "summeval":
        return read_summeval_pairwise(path, arg, name=name)
    if reader == "file":
        return read_pairwise(path, name=name)
    return read_alpaca_preferences(path, arg, name=name)


def read_judgments(source: str | Path) -> PairwiseData:
    """Recorded judgments from a pairwise table path or a dataset name under ``$EVALSIFT_DATA``.

    Names: ``summeval/llm-pairwise/<dimension>`` (:func:`read_summeval_pairwise`),
    ``alpaca-eval/preferences`` and ``alpaca-eval/preferences/<annotator_config>``
    (:func:`read_alpaca_preferences`), ``<folder>/<stem>`` for a file of recorded judgments in a folder
    of the data root (``arena-ppr/human``; :func:`find_judge_files`). A path is read by
    :func:`read_pairwise` (any layout it knows). An unknown name raises UnknownNameError with the closest
    name and every available one.

    >>> read_judgments("summeval/llm-pairwise/coherence").pool.n_items   # doctest: +SKIP
    100
    >>> read_judgments("no/such/judgments")   # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    evalsift.errors.UnknownNameError: Unknown judgments source 'no/such/judgments': it is not an existing file either. ...
    """
    text = str(source)
    path = Path(text).expanduser()
    if path.is_file():
        return read_pairwise(path)
    if path.is_dir():
        raise DataError(f"{path} is a folder; judgments:SOURCE takes a pairwise table file (.csv/.tsv/.jsonl) or a "
                        "dataset name such as summeval/llm-pairwise/coherence or alpaca-eval/preferences.")
    root = data_root()
    found = find_judgment_sources(root)
    hit = found.get(text)
    if hit is None:  # <folder>/preferences/<config>
        head, _, config = text.rpartition("/")
        base = found.get(head)
        if base is not None and base[0] == "alpaca" and config:
            hit = (base[0], base[1], config)
    if hit is None:
        names = sorted(found) + sorted(f"{n}/<annotator_config>" for n, v in found.items() if v[0] == "alpaca")
        raise UnknownNameError(
            f"Unknown judgments source '{text}': it is not an existing file either.{suggest(text, found)} "
            f"Available: {', '.join(names) or '(none found)'}. {_sources_note(root)}", field="oracle")
    reader, where, arg = hit
    st = where.stat()
    return _read_dataset(reader, str(where), arg, text, (st.st_mtime_ns, st.st_size))

