"""Which layout a file of recorded pairwise judgments has, and its rows.

:data:`LAYOUTS` and :func:`pairwise_layout` tell the layout from a header or a first record (the pairwise
table, Chatbot Arena battles, FastChat judgments, AlpacaEval annotations, evalsift's own judgment records);
:func:`looks_pairwise` tells it from the start of a file only (format detection), :func:`find_judge_files`
finds such files under a data root. :func:`_rows` reads a CSV, TSV, JSONL or JSON-list file (gzipped too)
into ``(line, record)`` pairs, the input of every reader in :mod:`evalsift.io.pairwise_table` and
:mod:`evalsift.io.judge_files`; errors name the file and the line.
"""

from __future__ import annotations

import csv
import io
import json
import re
from pathlib import Path
from typing import Any

from ..errors import DataError
from ._common import (_open_binary, blank_state, check_file, data_suffix, empty_file_error, first_line, iter_jsonl,
                      json_problem, natural_key, read_text)

_KINDS_BY_SUFFIX = {".csv": "csv", ".tsv": "tsv", ".tab": "tsv", ".jsonl": "jsonl", ".ndjson": "jsonl",
                    ".json": "json"}
_EXPECTED = ("a header line with item_id, system_a, system_b, verdict (optional: input, output_a, output_b, "
             "annotator), then one line per judgment")


# ---------------------------------------------------------------------------------------- rows
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
    "review": ("question_id", "answer1_id", "answer2_id", "score"),
    "arena-hard": ("model", "games"),  # Arena-Hard-Auto's model_judgment/<judge>/<model>.jsonl (uid or question_id)
}
_LAYOUT_NAMES = ("a pairwise table (item_id, system_a, system_b, verdict), Chatbot Arena battles (model_a, model_b, "
                 "winner), FastChat pairwise judgments (question_id, model_1, model_2, g1_winner, g2_winner), "
                 "AlpacaEval annotations (instruction, generator_1, generator_2, preference), FastChat's older review "
                 "files (review_<model 1>_<model 2>.jsonl: question_id, answer1_id, answer2_id, score), Arena-Hard-Auto judgments "
                 "(model_judgment/<judge>/<model>.jsonl: uid, model, games), or evalsift's own judgment "
                 "records (annotate export --format judgments: item_id, a, b, verdict, annotator, status, shown_order)")
#: AlpacaEval annotations name their item by one of these (besides generator_1, generator_2, preference)
ALPACA_ITEM_FIELDS = ("instruction", "index")


def pairwise_layout(columns: Any) -> str | None:
    """Which recorded-judgment layout a header (or a first record's keys) ``columns`` has, or None.

    - ``table``: ``system_a``, ``system_b``, ``verdict`` (the pairwise table);
    - ``fastchat``: ``model_1``, ``model_2``, ``g1_winner``, ``g2_winner`` (FastChat / MT-Bench judge files);
    - ``arena``: ``model_a``, ``model_b``, ``winner`` (Chatbot Arena battles, MT-Bench human judgments);
    - ``review``: ``question_id``, ``answer1_id``, ``answer2_id``, ``score`` (FastChat's older
      ``review_<model 1>_<model 2>.jsonl``: a GPT-4 score pair per question);
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
            if layout == "arena-hard" and not cols & {"uid", "question_id"}:
                continue
            if layout == "alpaca" and ("annotator_config" in cols or not cols & set(ALPACA_ITEM_FIELDS)):
                continue
            return layout
    return None


# ---------------------------------------------------------------------------------------- a file's start
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
    f = _open_binary(check_file(path))
    try:
        data = f.read(size + 1)
    except (OSError, EOFError) as e:
        raise DataError(f"{path}: cannot read the file ({getattr(e, 'strerror', None) or e}).") from None
    finally:
        f.close()
    return data[:size], len(data) <= size


# ---------------------------------------------------------------------------------------- under a data root
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
            suffix = data_suffix(file)  # through a .gz: human.jsonl.gz is the judge file human
            if suffix not in _JUDGE_FILE_SUFFIXES or not file.is_file():
                continue
            stem = file.name[:len(file.name) - len(suffix) - (3 if file.name.lower().endswith(".gz") else 0)]
            try:
                if looks_pairwise(file):
                    found.setdefault(f"{folder.name}/{stem}", file)
            except DataError:
                continue
    return found
