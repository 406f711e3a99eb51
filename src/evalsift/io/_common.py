"""Small helpers shared by the readers: text files, numbers, score matrices, human flags.

Every reader gets a file's text through :func:`read_text` (or :func:`read_lines`,
:func:`load_json`, built on it) or, a line at a time, through :func:`iter_lines` (and
:func:`iter_jsonl` on it), so every file problem reads the same: a missing file, a folder, an
unreadable file, a broken ``.gz`` or bytes that are not UTF-8 all raise
:class:`~evalsift.errors.DataError` naming the path (and the line for bad UTF-8). No reader opens a
file for reading on its own.
"""

from __future__ import annotations

import gzip
import json
import math
import os
import re
import sys
import warnings
import zlib
from contextlib import contextmanager
from pathlib import Path
from typing import Any, BinaryIO, Iterable, Iterator, Mapping, Sequence

import numpy as np

from ..errors import DataError, DataWarning

#: Cell texts that mean "no value" (read as NaN, never as text). Exact matches after stripping
#: blanks, so ``-`` is missing but ``-1`` is a number.
MISSING_TOKENS = frozenset({"", "None", "none", "null", "NULL", "NA", "N/A", "n/a", "NaN", "nan", "-"})

_SIGNATURES = ((b"\x1f\x8b", "gzip-compressed data, not a text file"), (b"\x89PNG", "a PNG image, not a text file"),
               (b"PK\x03\x04", "a zip archive (or an Excel workbook), not a text file"),
               (b"PAR1", "a Parquet file, not a text file"), (b"%PDF", "a PDF document, not a text file"),
               (b"\xff\xd8\xff", "a JPEG image, not a text file"),
               (b"\xff\xfe", "UTF-16 text"), (b"\xfe\xff", "UTF-16 text"))


def data_suffix(path: str | Path) -> str:
    """The suffix that tells a file's format, lower-cased, looking through a ``.gz`` (every text file
    is read through :func:`read_text` / :func:`iter_lines`, which decompress it): ``t.csv.gz`` ->
    ``.csv``, ``t.CSV`` -> ``.csv``, ``t.gz`` -> ``.gz``.

    >>> data_suffix("scores.csv.gz"), data_suffix("battles.JSONL"), data_suffix("x.gz")
    ('.csv', '.jsonl', '.gz')
    """
    suffixes = [s.lower() for s in Path(path).suffixes]
    if len(suffixes) >= 2 and suffixes[-1] == ".gz":
        return suffixes[-2]
    return suffixes[-1] if suffixes else ""


def check_file(path: str | Path, what: str = "file") -> Path:
    """``path`` as a Path after checking it exists and is not a folder; DataError naming it otherwise.

    >>> check_file("/nonexistent/x.csv")
    Traceback (most recent call last):
    ...
    evalsift.errors.DataError: /nonexistent/x.csv: no such file; check the path.
    """
    path = Path(path)
    try:
        if path.is_dir():
            raise DataError(f"{path} is a folder, but a {what} was expected here; give the path of the file itself.")
        if not path.exists():
            raise DataError(f"{path}: no such {what}; check the path.")
    except OSError as e:  # e.g. a parent folder that cannot be searched
        raise DataError(f"{path}: cannot access the {what} ({e.strerror or e}).") from None
    return path


def read_bytes(path: str | Path) -> bytes:
    """The bytes of the file at ``path`` (gunzipped when the name ends in ``.gz``); DataError naming it on failure."""
    path = check_file(path)
    try:
        data = path.read_bytes()
    except PermissionError:
        raise DataError(f"{path}: permission denied; cannot read the file (check its permissions).") from None
    except OSError as e:
        raise DataError(f"{path}: cannot read the file ({e.strerror or e}).") from None
    if path.suffix.lower() == ".gz":
        try:
            data = gzip.decompress(data)
        except (OSError, EOFError, zlib.error) as e:
            raise DataError(f"{path}: not a valid gzip file ({e}); the file is corrupt or not compressed -- "
                            "re-download it, or drop the '.gz' from its name if it is plain text.") from None
    return data


def decode_utf8(data: bytes, path: str | Path, *, strip_bom: bool = True) -> str:
    """``data`` decoded as UTF-8 (without a leading BOM unless ``strip_bom=False``); DataError naming
    the line (and column) otherwise.

    >>> decode_utf8(b"\\xef\\xbb\\xbfa,b\\n", "t.csv")
    'a,b\\n'
    >>> decode_utf8(b"a,b\\ncaf\\xe9,1\\n", "t.csv")
    Traceback (most recent call last):
    ...
    evalsift.errors.DataError: t.csv: line 2 is not valid UTF-8 (byte 0xe9 at column 4: invalid continuation byte); re-save the file as UTF-8.
    """
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        start = data.rfind(b"\n", 0, e.start) + 1
        raise _utf8_error(path, data.count(b"\n", 0, e.start) + 1, data[start:], e.start - start, e.reason,
                          data[:8]) from None
    return text.removeprefix("\ufeff") if strip_bom else text


def _utf8_error(path: str | Path, line: int, text: bytes, at: int, reason: str, head: bytes) -> DataError:
    """The "line N is not valid UTF-8" DataError: byte ``text[at]`` of line ``line`` (``text`` starts
    the line); ``head``, the file's first bytes, may tell what the file really is."""
    column = len(text[:at].decode("utf-8", "replace")) + 1
    kind = next((name for magic, name in _SIGNATURES if head.startswith(magic)), None)
    note = f" It looks like {kind}." if kind else ""
    return DataError(f"{path}: line {line} is not valid UTF-8 (byte 0x{text[at]:02x} at column {column}: "
                     f"{reason}); re-save the file as UTF-8.{note}", hint="re-save the file as UTF-8")


def read_text(path: str | Path, *, strip_bom: bool = True) -> str:
    """The text of a UTF-8 file (a ``.gz`` is decompressed first; a UTF-8 BOM is dropped unless
    ``strip_bom=False``).

    Raises DataError naming the path for a missing file, a folder, an unreadable file, a broken
    gzip file, or bytes that are not UTF-8 (then with the line number).
    """
    return decode_utf8(read_bytes(path), path, strip_bom=strip_bom)


def warn_data(message: str) -> None:
    """Issue ``message`` as a :class:`~evalsift.errors.DataWarning` pointing at the first caller outside ``evalsift.io``."""
    here = os.path.dirname(os.path.abspath(__file__))
    level, frame = 1, sys._getframe(1)
    while frame is not None and os.path.dirname(os.path.abspath(frame.f_code.co_filename)) == here:
        frame, level = frame.f_back, level + 1
    warnings.warn(message, DataWarning, stacklevel=level + 1)


def empty_file_error(path: str | Path, state: str, what: str, expected: str) -> DataError:
    """The one shape of "nothing to read" errors: ``<path>: the file <state>, so there are no <what>; expected ...``.

    >>> str(empty_file_error("x.jsonl", "is empty", "items", "one JSON object per line"))
    'x.jsonl: the file is empty, so there are no items; expected one JSON object per line.'
    """
    return DataError(f"{path}: the file {state}, so there are no {what}; expected {expected}.",
                     hint=f"expected {expected}")


def blank_state(text: str) -> str:
    """``is empty`` or ``holds only blank lines`` -- how to describe a file with no data in it."""
    return "is empty" if not text else "holds only blank lines"


def json_problem(e: json.JSONDecodeError, *, line: bool = True) -> str:
    """What a JSON parse error says and where, for a message: ``Expecting value at line 2 column 5``
    (``line=False``: ``... at column 5``, for a file of one JSON value per line, whose line is named
    apart). Python's own text for some errors ends in "at" ("Invalid control character at"), which
    is dropped so the place is said once.

    >>> try:
    ...     json.loads('{"a": "x\\ty"}')
    ... except json.JSONDecodeError as e:
    ...     json_problem(e), json_problem(e, line=False)
    ('Invalid control character at line 1 column 9', 'Invalid control character at column 9')
    """
    msg = e.msg[: -len(" at")] if e.msg.endswith(" at") else e.msg
    return f"{msg} at line {e.lineno} column {e.colno}" if line else f"{msg} at column {e.colno}"


def load_json(path: str | Path, expected: str) -> Any:
    """Parse a whole-file JSON document; DataError naming the file for an empty file or bad JSON."""
    text = read_text(path)
    if not text.strip():
        raise empty_file_error(path, blank_state(text), "records", expected)
    try:
        return json.loads(text)
    except json.JSONDecodeError as e:
        raise DataError(f"{path}: not valid JSON ({json_problem(e)}).") from None


def read_lines(path: Path) -> list[str]:
    """Lines of a UTF-8 text file split on ``\\n`` only (a segment may hold other line breaks).

    A trailing newline does not make an extra empty line; a trailing ``\\r`` is dropped. The text is
    kept exactly, a leading BOM included: these are line-aligned segment files (mt-metrics-eval),
    where a BOM is part of what the system wrote -- WMT23's AIRC en-de output starts with one, and
    the official segment scores include it.
    """
    text = read_text(path, strip_bom=False)
    if not text:
        return []
    lines = text.split("\n")
    if lines[-1] == "":
        lines.pop()
    return [ln[:-1] if ln.endswith("\r") else ln for ln in lines]


def _open_binary(path: Path) -> BinaryIO:
    """The file's bytes, decompressed on the fly for a ``.gz`` (closing the stream closes the file)."""
    try:
        if path.suffix.lower() == ".gz":
            return gzip.open(path, "rb")  # type: ignore[return-value]
        return open(path, "rb")
    except PermissionError:
        raise DataError(f"{path}: permission denied; cannot read the file (check its permissions).") from None
    except OSError as e:
        raise DataError(f"{path}: cannot read the file ({e.strerror or e}).") from None


def _read_error(path: Path, e: BaseException) -> DataError:
    if path.suffix.lower() == ".gz" and isinstance(e, (OSError, EOFError, zlib.error)):
        return DataError(f"{path}: not a valid gzip file ({e}); the file is corrupt or not compressed -- "
                         "re-download it, or drop the '.gz' from its name if it is plain text.")
    return DataError(f"{path}: cannot read the file ({getattr(e, 'strerror', None) or e}).")


def _stream_lines(path: str | Path, state: dict[str, bool]) -> Iterator[tuple[int, str]]:
    """:func:`iter_lines`, setting ``state["empty"]`` to False once the file shows any text."""
    path = check_file(path)
    f = _open_binary(path)
    lineno = physical = 0
    head = b""
    try:
        chunks = iter(f)
        while True:
            try:
                raw = next(chunks)
            except StopIteration:
                break
            except (OSError, EOFError, zlib.error) as e:
                raise _read_error(path, e) from None
            physical += 1
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as e:
                raise _utf8_error(path, physical, raw, e.start, e.reason, head if physical > 1 else raw[:8]) from None
            if physical == 1:
                head = raw[:8]
                line = line.removeprefix("\ufeff")
            if line:
                state["empty"] = False
            if line.endswith("\n"):
                line = line[:-1]
            if line.endswith("\r"):
                line = line[:-1]
            if "\r" in line:  # old Mac line breaks
                for part in line.split("\r"):
                    lineno += 1
                    yield lineno, part
            else:
                lineno += 1
                yield lineno, line
    finally:
        f.close()


def iter_lines(path: str | Path) -> Iterator[tuple[int, str]]:
    """``(line_number, line)`` for every line of a UTF-8 text file, without its line break; the file
    is read a block at a time and never held whole.

    Lines end at ``\\n``, ``\\r\\n`` or ``\\r`` (as ``open(..., newline=None)`` has it; U+2028 and the
    like stay inside a line); line numbers are 1-based. A ``.gz`` file is decompressed on the fly and a
    leading UTF-8 BOM dropped. File problems raise the DataErrors of :func:`read_text` (a line that is
    not UTF-8 names its line and column), when the reading gets there.

    >>> import tempfile, pathlib
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "t.txt"
    >>> _ = p.write_bytes(b"\\xef\\xbb\\xbfa\\r\\nb\\rc\\n\\nd")
    >>> list(iter_lines(p))
    [(1, 'a'), (2, 'b'), (3, 'c'), (4, ''), (5, 'd')]
    """
    return _stream_lines(path, {})


def first_line(path: str | Path) -> tuple[str | None, str]:
    """``(line, state)``: the first non-blank line of a text file (None if there is none), read
    without reading the rest, and ``state`` for :func:`empty_file_error` when there is none
    (``is empty`` or ``holds only blank lines``). For format detection on big files.

    >>> import tempfile, pathlib
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "t.jsonl"
    >>> _ = p.write_text("\\n  \\n{}\\n")
    >>> first_line(p)
    ('{}', 'holds only blank lines')
    """
    state = {"empty": True}
    for _, line in _stream_lines(path, state):
        if line and not line.isspace():
            return line, "holds only blank lines"
    return None, "is empty" if state["empty"] else "holds only blank lines"


def iter_jsonl(path: Path, *, what: str = "items", expected: str | None = None) -> Iterator[tuple[int, Any]]:
    """``(line_number, object)`` for every non-blank line of a JSONL file (1-based line numbers).

    Lines end at ``\\n``, ``\\r\\n`` or ``\\r``. The file is streamed (see :func:`iter_lines`): only
    the current line is held, so a reader that keeps what it needs from each object never holds the
    file's text. With ``expected`` (what a line should hold), a file with no non-blank line raises
    the uniform "no <what>" DataError instead of yielding nothing.
    """
    state = {"empty": True}
    found = False
    for lineno, line in _stream_lines(path, state):
        if not line or line.isspace():
            continue
        found = True
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as e:
            raise DataError(
                f"{path}: line {lineno} is not valid JSON ({json_problem(e, line=False)}); "
                "each line must hold one JSON object."
            ) from None
        yield lineno, obj
    if not found and expected is not None:
        raise empty_file_error(path, "is empty" if state["empty"] else "holds only blank lines", what, expected)


def to_float(value: Any) -> float:
    """``value`` as a float; None and the :data:`MISSING_TOKENS` ('', 'NA', 'N/A', 'null', '-', ...) become NaN.

    Raises ValueError (TypeError for containers) otherwise.

    >>> to_float("-"), to_float(" -2.5 "), to_float("N/A"), to_float(3)
    (nan, -2.5, nan, 3.0)
    """
    if value is None:
        return math.nan
    if isinstance(value, (int, float, np.integer, np.floating)):
        return float(value)
    if isinstance(value, (list, tuple, dict, set)):
        raise TypeError(f"expected a number, got a {type(value).__name__}")
    s = str(value).strip()
    if s in MISSING_TOKENS:
        return math.nan
    return float(s)


def nan_matrix(n_items: int, n_systems: int) -> np.ndarray:
    """An (items x systems) float array full of NaN."""
    return np.full((n_items, n_systems), np.nan)


def natural_key(s: str) -> list[Any]:
    """Sort key that orders embedded numbers numerically: M2 < M10."""
    return [int(t) if t.isdigit() else t for t in re.split(r"(\d+)", s)]


def check_human(human: Iterable[str], metrics: Iterable[str], source: str) -> set[str]:
    """Return ``human`` as a set after checking every name is a metric of ``source``."""
    human, metrics = set(human), set(metrics)
    unknown = sorted(human - metrics)
    if unknown:
        raise DataError(
            f"{source}: human_metrics {unknown} are not metrics of this data. "
            f"Available metrics: {', '.join(sorted(metrics)) or '(none)'}."
        )
    return human


def first_seen(names: Iterable[str]) -> list[str]:
    """Unique names in first-seen order."""
    return list(dict.fromkeys(names))


FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def spreadsheet_cell(value: Any) -> Any:
    """A CSV/TSV cell that a spreadsheet shows as text: a string starting with ``= + - @``, a tab or a
    carriage return gets a leading ``'`` (OWASP's advice against formula injection); numbers, and
    strings that are numbers such as ``-0.5``, stay as they are.

    >>> print(spreadsheet_cell('=HYPERLINK("http://x")'), spreadsheet_cell("-0.5"), spreadsheet_cell(-2.0))
    '=HYPERLINK("http://x") -0.5 -2.0
    """
    if not isinstance(value, str) or not value.startswith(FORMULA_STARTS):
        return value
    try:
        float(value)
    except ValueError:
        return "'" + value
    return value


def json_default(o: Any) -> Any:
    """``json.dumps`` hook for numpy scalars and arrays, sets, and the read-only containers of a
    Pool: any Mapping (``types.MappingProxyType``, e.g. ``pool.metadata``) becomes a dict, a tuple a list."""
    if isinstance(o, np.generic):
        return o.item()
    if isinstance(o, np.ndarray):
        return o.tolist()
    if isinstance(o, (set, frozenset, tuple)):
        return list(o)
    if isinstance(o, Mapping):
        return dict(o)
    raise TypeError(f"Object of type {type(o).__name__} is not JSON serializable")


def clean_value(v: Any) -> Any:
    """A JSON-safe value: NaN floats become None, numpy scalars become Python ones."""
    if isinstance(v, np.generic):
        v = v.item()
    if isinstance(v, float) and math.isnan(v):
        return None
    return v


def check_extra(extra: Mapping[str, Sequence[Any]] | None, n_items: int, path: Path) -> dict[str, list[Any]]:
    """Validate per-item extra columns for a writer: each must have one value per item."""
    out: dict[str, list[Any]] = {}
    for field, values in (extra or {}).items():
        values = list(np.asarray(values).tolist()) if isinstance(values, np.ndarray) else list(values)
        if len(values) != n_items:
            raise DataError(
                f"{path}: extra field {field!r} has {len(values)} values but the pool has {n_items} items; "
                "give one value per item, in pool order."
            )
        out[field] = values
    return out


def plain_json(obj: Any) -> Any:
    """A copy that strict JSON can hold: NaN and infinities become None, numpy values Python ones,
    tuples and mappings lists and dicts.

    >>> plain_json({"a": float("nan"), "b": (1, np.float64(2.5))})
    {'a': None, 'b': [1, 2.5]}
    """
    if isinstance(obj, Mapping):
        return {str(k): plain_json(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [plain_json(v) for v in obj]
    if isinstance(obj, np.ndarray):
        return plain_json(obj.tolist())
    if isinstance(obj, np.generic):
        obj = obj.item()
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    return obj


# ------------------------------------------------------------------------------------------ writing
@contextmanager
def atomic_file(path: str | Path, mode: str = "w", **open_kw: Any) -> Iterator[Any]:
    """Write ``path`` whole or not at all: what the block writes goes to a hidden temporary file beside it
    (``.NAME.PID.tmp``, in the same folder, so the rename is atomic), which replaces ``path`` when the block
    ends without an error and is removed when it fails (an error, a full disk, a Ctrl-C). A reader, and a
    folder of earlier results, sees the old file or the new whole one, never a half-written file.
    ``mode``: ``"w"`` (text, ``encoding="utf-8"`` unless given) or ``"wb"``; ``open_kw`` go to :func:`open`.

    >>> import tempfile
    >>> p = Path(tempfile.mkdtemp()) / "r.json"
    >>> with atomic_file(p) as f:
    ...     _ = f.write("{}")
    >>> p.read_text(), sorted(x.name for x in p.parent.iterdir())
    ('{}', ['r.json'])
    """
    target = Path(path)
    tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    if "b" not in mode:
        open_kw.setdefault("encoding", "utf-8")
    try:
        with open(tmp, mode, **open_kw) as fh:
            yield fh
        os.replace(tmp, target)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def write_atomic(path: str | Path, data: str | bytes) -> Path:
    """Write ``data`` (text as UTF-8, or bytes) to ``path`` through :func:`atomic_file`; the path."""
    with atomic_file(path, "wb" if isinstance(data, bytes) else "w") as fh:
        fh.write(data)
    return Path(path)
