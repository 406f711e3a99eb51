"""Reading a file of recorded pairwise judgments (:func:`read_pairwise`): the pairwise table, or a judge file
as people keep it, into a :class:`~evalsift.io.pairwise_data.PairwiseData`.

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
the first record (:func:`~evalsift.io.pairwise_layout.pairwise_layout`); the rules are in :mod:`evalsift.io.judge_files`. A command
that reads the same file in several roles (``--data``, the oracle, a proxy) reads it once: results are
kept per file content.
"""

from __future__ import annotations

import hashlib
from functools import lru_cache
from pathlib import Path
from typing import Any

from ..errors import DataError
from ..oracle.base import Judgment
from ..pool import Pool
from . import fast_read
from .judge_files import READERS
from .pairwise_data import KINDS, ORDERS, PairwiseData, _Builder, _choice, _text, parse_verdict
from .pairwise_layout import _LAYOUT_NAMES, _rows, pairwise_layout

REQUIRED = ("item_id", "system_a", "system_b", "verdict")
OPTIONAL = ("input", "output_a", "output_b", "annotator", "kind", "shown_order", "comment")


def read_pairwise(path: str | Path, *, name: str | None = None) -> PairwiseData:
    """Read a file of recorded pairwise judgments into a Pool plus its judgments.

    The layout is told by the header (CSV/TSV) or the first record (JSONL, or a JSON list), see
    :func:`~evalsift.io.pairwise_layout.pairwise_layout`: the pairwise table (the module doc), Chatbot Arena battles and MT-Bench
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
    data = _read_cached(str(path), stamp, fast_read.parser())
    _LAST.clear()
    return data if name is None else data.with_name(name)


#: the bytes :func:`_fingerprint` read last, (stamp, bytes), for the read that follows it (read once, not twice)
_LAST: dict[str, tuple[tuple[str, int, str], bytes]] = {}


def _fingerprint(path: Path) -> tuple[str, int, str] | None:
    """(resolved path, size, BLAKE2 digest of the bytes) of a readable file, None otherwise (the reader then
    raises the DataError that names the problem)."""
    try:
        if not path.is_file():
            return None
        data = path.read_bytes()
        stamp = str(path.resolve()), len(data), hashlib.blake2b(data, digest_size=16).hexdigest()
    except OSError:
        return None
    _LAST.clear()
    _LAST[stamp[0]] = (stamp, data)
    return stamp


@lru_cache(maxsize=8)
def _read_cached(path: str, stamp: tuple[str, int, str], how: str = "") -> PairwiseData:
    """One read per file content: a command reads the same file as ``--data``, as the oracle and as a proxy
    (``how``: the parser, :func:`evalsift.io.fast_read.parser`, so switching it reads again)."""
    last = _LAST.pop(stamp[0], None)
    return _read_file(Path(path), None, last[1] if last is not None and last[0] == stamp else None)


def _read_file(path: Path, name: str | None, raw: bytes | None = None) -> PairwiseData:
    """The file's judgments (``raw``: its bytes, when read already): the fast readers' columns when the file is
    plain (:mod:`evalsift.io.fast_read`), else its rows read one by one."""
    data, rows = fast_read.read_fast(path, name, raw)  # columns, checked column-wise; None when the file is not plain
    if data is not None:
        return data
    if rows is None:
        rows = _rows(path)
    cols = list(dict.fromkeys(k for _, r in rows for k in r))
    layout = pairwise_layout(rows[0][1]) or pairwise_layout(cols)
    if layout is None or layout == "table":
        return _read_table(path, rows, cols, name)
    return READERS[layout](path, rows, cols, name)


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
