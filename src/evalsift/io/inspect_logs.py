"""inspect_ai's eval logs as a Pool: ``.eval`` archives (zstd entries too) and ``.json`` logs, a file or a folder.

inspect (``inspect eval task.py --model ...``) writes one log per task and model into its log folder. Two formats:

- ``.eval`` (the default): a zip archive. ``header.json`` (``version``, ``status``, ``eval``: the task, the model,
  the config, the scorers; ``results``: inspect's own metrics per scorer), ``samples/<id>_epoch_<n>.json`` (one
  entry per sample and epoch: ``input``, ``target``, ``output.completion``, ``scores``, ``metadata``),
  ``reductions.json`` (each scorer's per-sample value after the epochs are reduced), ``summaries.json`` and
  ``_journal/`` (``start.json`` and sample summaries, written while the run goes). inspect 0.3.x compresses
  every entry with zstd (zip method 93), which Python 3.11's ``zipfile`` cannot open: those entries are
  decompressed here with ``zstandard`` (``pip install 'evalsift[harness]'``) from the entry's raw bytes, found
  through its local file header, and checked against the archive's CRC. One entry is read at a time; the
  archive is never read whole.
- ``.json`` (``--log-format json``): the same log as one JSON object (``samples`` and ``reductions`` inside);
  streamed with ``ijson`` (one sample at a time, the events of each sample skipped), or read whole when
  ``ijson`` is missing or the file holds ``NaN`` (which ``ijson`` does not parse).

What becomes of it (:func:`read_inspect`):

- **item** ``<task>/<sample id>``; per-item columns ``task`` (also the group column, ``--by task``),
  ``sample_id`` (the raw id) and every scalar field of the sample's ``metadata``.
- **system** the model inspect records (``eval.model``, ``mockllm/model``); ``system=`` names a log whose
  model is ``none/none``.
- **metrics** every scorer's per-sample ``value``: numbers, booleans, inspect's letters C/I/P/N (1/0/0.5/0,
  with a note), ``yes``/``no``/``true``/``false`` and numeric strings as inspect's ``value_to_float`` reads them;
  a dict value gives one metric per key (``scorer/key``), a list one per index (``scorer/0``). An unscored
  sample (inspect's NaN value) is NaN.
- **epochs**: a sample run in several epochs is one item, its value reduced the way inspect reduced it for
  its results: the log's own ``reductions`` (so a system's mean of a metric over the items is inspect's
  ``accuracy`` / ``mean`` in ``results.scores``). With several reducers (``--epochs-reducer mean,max``) the
  first keeps the scorer's name and the others add ``@reducer`` (``match@max``). The output text is epoch 1's.
- **texts** ``input`` (a chat input: its messages' text), ``output.completion``, ``target`` as the reference
  (several targets joined by `` | ``).
- **judges**: a model-graded scorer (inspect's ``model_graded_qa`` / ``model_graded_fact``, or any scorer whose
  scores carry the grader's ``grading`` messages) is an LLM judge. Its metrics stay metrics (``--proxy
  metric:model_graded_qa``, ``judge-report --judge metric:model_graded_qa``) and a note names them, and the
  grader, as an LLM judge's grades, never human ones.
- **a run that has not finished** (no ``header.json`` yet, or status ``started``: inspect is still running, or
  stopped before it wrote its results) is read from the samples it has written so far, keeping the samples
  whose every epoch is there (reduced with the log's ``epochs_reducer``: mean, median or max), with a note
  saying how many of the run's samples that is; with none yet, a DataError says the run is not finished.
  A run that ended in ``error`` or ``cancelled`` is read the same way, with a note.

Nothing in a log is imported or run; ``inspect_ai`` itself is not needed to read one.
"""

from __future__ import annotations

import io
import json
import math
import re
import shlex
import statistics
import struct
import zipfile
import zlib
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO, Iterable, Iterator

from ..errors import DataError, missing_dependency
from ..pool import Pool
from ._common import _open_binary, atomic_file, check_file, warn_data
from .harness import LETTERS, Record, pool_from_records

TOOL = "inspect_ai"
#: zip's method number for zstandard (APPNOTE 4.4.5), inspect's default for every entry of a ``.eval`` log
ZIP_ZSTD = 93
_METHODS = {0: "stored", 8: "deflate", 12: "bzip2", 14: "lzma", ZIP_ZSTD: "zstd"}
#: inspect's model-graded scorers (``inspect_ai.scorer``)
MODEL_GRADED = frozenset({"model_graded_qa", "model_graded_fact"})
_JSON_HEAD = re.compile(rb'^\s*\{\s*"version"\s*:\s*\d+\s*,\s*"status"\s*:\s*"(?:started|success|cancelled|error)"'
                        rb'.*"eval"\s*:', re.DOTALL)
_SAMPLE_KEYS = frozenset({"id", "epoch", "input", "target", "output", "scores", "metadata", "error"})
_HEADER_KEYS = frozenset({"version", "status", "eval", "results", "error", "reductions"})
_REDUCERS = ("mean", "median", "max")  # the reducers a log without reductions is reduced with here
_MAX_DEPTH = 2
_CHEAP_JSON = 20  # .json files whose first KB looks_inspect reads in a folder, at most


# ------------------------------------------------------------------------------------------------ zip entries
def _zstandard() -> Any:
    try:
        import zstandard  # noqa: PLC0415 -- optional dependency, imported when a zstd entry is read
    except ImportError:
        raise missing_dependency("zstandard", "harness", "Reading an inspect_ai .eval log (its entries are "
                                                         "zstd-compressed, zip method 93)") from None
    return zstandard


class _Slice(io.RawIOBase):
    """At most ``n`` bytes of ``f`` from where it stands: one zip entry's compressed data."""

    def __init__(self, f: BinaryIO, n: int) -> None:
        super().__init__()
        self._f, self._left = f, n

    def readable(self) -> bool:
        return True

    def readinto(self, b: Any) -> int:
        if self._left <= 0:
            return 0
        data = self._f.read(min(len(b), self._left))
        b[:len(data)] = data
        self._left -= len(data)
        return len(data)


class _EvalZip:
    """A ``.eval`` archive's entries, read one at a time (the central directory through :mod:`zipfile`, zstd
    entries decompressed here)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._fh = _open_binary(check_file(path, "inspect log"))
        try:
            self._zf = zipfile.ZipFile(self._fh)
        except (zipfile.BadZipFile, OSError, EOFError) as e:
            self._fh.close()
            raise DataError(f"{path}: not a readable zip archive ({e}), but an inspect .eval log is one. A log that "
                            "inspect is writing can be caught between two writes: read it again in a moment; "
                            "otherwise the file is damaged (copy it again).") from None
        # a name written twice (inspect re-logs a sample): the last entry wins, as in inspect's own reader
        self.entries: dict[str, zipfile.ZipInfo] = {i.filename: i for i in self._zf.infolist()}

    def close(self) -> None:
        self._zf.close()
        self._fh.close()

    def __enter__(self) -> "_EvalZip":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def methods(self) -> Counter:
        """How the entries are compressed: ``Counter({'zstd': 31})``."""
        return Counter(_METHODS.get(i.compress_type, f"method {i.compress_type}") for i in self.entries.values())

    def read(self, name: str) -> bytes:
        info = self.entries[name]
        where = f"{self.path}: entry {name}"
        if info.flag_bits & 0x1:
            raise DataError(f"{where} is encrypted; inspect writes no encrypted logs: use the log as inspect wrote it.")
        if info.compress_type == ZIP_ZSTD:
            return self._zstd_entry(info, where)
        try:
            return self._zf.read(info)
        except NotImplementedError as e:
            raise DataError(f"{where} is compressed with zip method {info.compress_type}, which cannot be read "
                            f"here ({e}); inspect writes zstd (93), and deflate (8) or stored (0) read too.") from None
        except (zipfile.BadZipFile, zlib.error, EOFError, OSError) as e:
            raise DataError(f"{where} is damaged ({e}); copy the log again.") from None

    def _zstd_entry(self, info: zipfile.ZipInfo, where: str) -> bytes:
        zstd = _zstandard()
        self._fh.seek(info.header_offset)
        head = self._fh.read(30)
        if len(head) != 30 or head[:4] != b"PK\x03\x04":
            raise DataError(f"{where}: no local file header at byte {info.header_offset}; the archive is damaged "
                            "(copy the log again).")
        n_name, n_extra = struct.unpack("<HH", head[26:30])
        self._fh.seek(info.header_offset + 30 + n_name + n_extra)
        out = bytearray()
        try:
            reader = zstd.ZstdDecompressor().stream_reader(_Slice(self._fh, info.compress_size),
                                                           read_across_frames=True)  # inspect writes several frames
            while chunk := reader.read(1 << 20):
                out += chunk
                if len(out) > info.file_size:
                    break
        except zstd.ZstdError as e:
            raise DataError(f"{where}: the zstd data is damaged ({e}); copy the log again.") from None
        if len(out) != info.file_size or zlib.crc32(out) != info.CRC:
            raise DataError(f"{where}: the data does not match the archive's size and checksum; the log is damaged "
                            "or was still being written (read it again when the run has finished).")
        return bytes(out)

    def json(self, name: str) -> Any:
        try:
            return json.loads(self.read(name))
        except (json.JSONDecodeError, UnicodeDecodeError) as e:
            raise DataError(f"{self.path}: entry {name} is not valid JSON ({e}); the log is damaged.") from None


# ------------------------------------------------------------------------------------------------ one log
@dataclass
class _Log:
    """What one log holds that the Pool needs: its header, the kept fields of every sample, the reductions."""

    path: Path
    header: dict[str, Any]
    written: bool  # the writer finished the log (``header.json`` / a status other than ``started``)
    samples: list[dict[str, Any]]
    reductions: list[dict[str, Any]] | None

    @property
    def eval(self) -> dict[str, Any]:
        ev = self.header.get("eval")
        if not isinstance(ev, dict):
            raise DataError(f"{self.path}: the log has no 'eval' section (task, model, config); not an inspect_ai "
                            "log, or a damaged one.", field="eval")
        return ev

    @property
    def status(self) -> str:
        return str(self.header.get("status") or "started")


def _text(value: Any) -> str | None:
    """A sample's ``input`` as text: a string as it is; chat messages as their text content (``role: text`` per
    message when there are several)."""
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, list):
        parts = []
        for m in value:
            if isinstance(m, dict):
                t = _content(m.get("content"))
                if t:
                    parts.append((m.get("role"), t))
        if len(parts) == 1:
            return parts[0][1]
        return "\n\n".join(f"{r}: {t}" if r else t for r, t in parts) or None
    return str(value)


def _content(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(c.get("text", "") for c in content if isinstance(c, dict) and c.get("type") == "text")
    return ""


def _target(value: Any) -> str | None:
    if value is None or value == "" or value == []:
        return None
    if isinstance(value, list):
        return " | ".join(str(v) for v in value)
    return str(value)


def _completion(output: Any) -> str | None:
    if not isinstance(output, dict):
        return None
    text = output.get("completion")
    if text:
        return str(text)
    for choice in output.get("choices") or []:
        if isinstance(choice, dict) and isinstance(choice.get("message"), dict):
            t = _content(choice["message"].get("content"))
            if t:
                return t
    return text if isinstance(text, str) else None


def _scalars(meta: Any) -> dict[str, Any]:
    """The scalar fields of a sample's ``metadata`` (strings, numbers, booleans), for per-item columns."""
    out: dict[str, Any] = {}
    if isinstance(meta, dict):
        for k, v in meta.items():
            if isinstance(v, (str, int, float, bool)) and not (isinstance(v, float) and not math.isfinite(v)):
                out[str(k)] = v
    return out


def _keep(sample: Any, where: str) -> dict[str, Any]:
    """The fields of a sample the Pool needs (the events, messages and attachments are dropped at once)."""
    if not isinstance(sample, dict) or "id" not in sample:
        raise DataError(f"{where}: not an inspect sample (no 'id'); the log is damaged or not inspect's.", field="id")
    scores: dict[str, Any] = {}
    graded: set[str] = set()
    for name, sc in (sample.get("scores") or {}).items():
        if isinstance(sc, dict):
            scores[str(name)] = sc.get("value")
            md = sc.get("metadata")
            if isinstance(md, dict) and "grading" in md:  # model_graded_*: the grader's prompt and answer
                graded.add(str(name))
    try:
        epoch = int(sample.get("epoch") or 1)
    except (TypeError, ValueError):
        raise DataError(f"{where}: epoch {sample.get('epoch')!r} is not a number.", field="epoch") from None
    return {"id": sample["id"], "epoch": epoch, "input": _text(sample.get("input")),
            "target": _target(sample.get("target")), "output": _completion(sample.get("output")), "scores": scores,
            "graded": graded, "metadata": _scalars(sample.get("metadata")), "where": where}


def _read_eval(path: Path) -> _Log:
    with _EvalZip(path) as z:
        names = z.entries
        if "header.json" in names:
            header = z.json("header.json")
            if not isinstance(header, dict):
                raise DataError(f"{path}: entry header.json is not a JSON object; the log is damaged.")
            written = header.get("status") != "started"
        elif "_journal/start.json" in names:
            start = z.json("_journal/start.json")
            header = {"version": start.get("version"), "status": "started", "eval": start.get("eval")}
            written = False
        else:
            raise DataError(f"{path}: neither header.json nor _journal/start.json in the archive, so this is not an "
                            "inspect_ai .eval log (or inspect had not written its start when it was copied).")
        samples = [_keep(z.json(n), f"{path}: entry {n}") for n in names
                   if n.startswith("samples/") and n.endswith(".json")]
        reductions = z.json("reductions.json") if "reductions.json" in names else None
        return _Log(path, header, written, samples, reductions)


def _ijson() -> Any:
    try:
        import ijson  # noqa: PLC0415 -- optional: without it a .json log is read whole
    except ImportError:
        return None
    return ijson


def _consume(events: Iterator, event: str, value: Any, ijson: Any, build: bool) -> Any:
    """The JSON value whose first event is ``(event, value)``, built (``build``) or skipped."""
    if event not in ("start_map", "start_array"):
        return value
    builder = ijson.ObjectBuilder() if build else None
    if builder is not None:
        builder.event(event, value)
    depth = 1
    for _, ev, val in events:
        if builder is not None:
            builder.event(ev, val)
        if ev in ("start_map", "start_array"):
            depth += 1
        elif ev in ("end_map", "end_array"):
            depth -= 1
            if depth == 0:
                break
    return builder.value if builder is not None else None


def _stream_json(path: Path, ijson: Any) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """One pass over a ``.json`` log: the header fields and each sample's kept fields (the rest is skipped)."""
    header: dict[str, Any] = {}
    samples: list[dict[str, Any]] = []
    with _open_binary(path) as f:
        events = iter(ijson.parse(f, use_float=True))
        first = next(events, None)
        if first is None or first[1] != "start_map":
            raise DataError(f"{path}: not a JSON object, so not an inspect_ai log.")
        for prefix, event, key in events:
            if prefix == "" and event == "end_map":
                break
            if event != "map_key":
                continue
            _, ev, val = next(events)
            if key == "samples" and ev == "start_array":
                for _, sev, sval in events:
                    if sev == "end_array":
                        break
                    sample = {}
                    if sev == "start_map":
                        for _, kev, k in events:
                            if kev == "end_map":
                                break
                            _, vev, vval = next(events)
                            keep = k in _SAMPLE_KEYS
                            v = _consume(events, vev, vval, ijson, keep)
                            if keep:
                                sample[k] = v
                    samples.append(_keep(sample, f"{path}: sample {len(samples) + 1}"))
            else:
                header[key] = _consume(events, ev, val, ijson, key in _HEADER_KEYS)
    return header, samples


def _read_json(path: Path) -> _Log:
    check_file(path, "inspect log")
    ijson = _ijson()
    header: dict[str, Any] | None = None
    samples: list[dict[str, Any]] = []
    if ijson is not None:
        try:
            header, samples = _stream_json(path, ijson)
        except ijson.JSONError:
            header = None  # NaN / Infinity (Python's json writes them; yajl does not parse them): read it whole
        except StopIteration:
            raise DataError(f"{path}: the JSON ends too early; the log is incomplete (inspect may still be writing "
                            "it: read it again in a moment).") from None
    if header is None:
        with _open_binary(path) as f:
            try:
                obj = json.load(f)
            except (json.JSONDecodeError, UnicodeDecodeError) as e:
                raise DataError(f"{path}: not valid JSON ({e}); an incomplete or damaged inspect log (inspect may "
                                "still be writing it).") from None
        if not isinstance(obj, dict):
            raise DataError(f"{path}: not a JSON object, so not an inspect_ai log.")
        header = {k: v for k, v in obj.items() if k in _HEADER_KEYS}
        samples = [_keep(s, f"{path}: sample {k + 1}") for k, s in enumerate(obj.get("samples") or [])]
    reductions = header.pop("reductions", None)
    if "eval" not in header:
        raise DataError(f"{path}: no 'eval' section (task, model, config), so not an inspect_ai log.", field="eval")
    return _Log(path, header, header.get("status", "started") != "started", samples, reductions)


def _read_log(path: Path) -> _Log:
    return _read_eval(path) if path.suffix.lower() == ".eval" else _read_json(path)


# ------------------------------------------------------------------------------------------------ values
def _float_value(value: Any) -> float:
    """inspect's ``value_to_float`` (C/P/I/N, yes/no/true/false, numeric strings, numbers); NaN for None."""
    if value is None:
        return math.nan
    if isinstance(value, bool):
        return float(value)
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, str):
        if value in LETTERS:
            return LETTERS[value]
        low = value.lower()
        if low in ("yes", "true"):
            return 1.0
        if low in ("no", "false"):
            return 0.0
        try:
            v = float(value)
        except ValueError:
            return 0.0  # inspect: "Unable to convert value to float", counted as 0
        return v if math.isfinite(v) else 0.0
    return 0.0


def _value(value: Any, metric: str, where: str, odd: dict[str, str]) -> Any:
    """A scorer's value for :func:`~evalsift.io.harness.score_value`: numbers, booleans, letters (kept, for the
    letters note) and None as they are; other strings as inspect's ``value_to_float`` reads them (a string it
    cannot read counts 0, as in inspect, and ``odd`` records it for a note)."""
    if value is None or isinstance(value, (bool, int, float)):
        return value
    if isinstance(value, str):
        if value in LETTERS:
            return value
        v = _float_value(value)
        if v == 0.0 and value.lower() not in ("no", "false") and not _is_number(value):
            odd.setdefault(metric, f"{value!r} ({where})")
        return v
    odd.setdefault(metric, f"{type(value).__name__} {str(value)[:40]} ({where})")
    return 0.0


def _is_number(s: str) -> bool:
    try:
        return math.isfinite(float(s))
    except ValueError:
        return False


def _expand(scorer: str, value: Any, suffix: str) -> Iterator[tuple[str, Any]]:
    """``(metric name, value)``: a dict value one metric per key (``scorer/key``), a list one per index."""
    if isinstance(value, dict):
        for k, v in value.items():
            yield f"{scorer}/{k}{suffix}", v
    elif isinstance(value, list):
        for k, v in enumerate(value):
            yield f"{scorer}/{k}{suffix}", v
    else:
        yield f"{scorer}{suffix}", value


def _reduce(values: list[Any], reducer: str) -> float:
    """inspect's ``mean`` / ``median`` / ``max`` reducers over one sample's epochs (unscored NaN epochs left out)."""
    vals = [v for v in (_float_value(x) for x in values) if not math.isnan(v)]
    if not vals:
        return math.nan
    if reducer == "mean":
        return float(statistics.mean(vals))
    if reducer == "median":
        return float(statistics.median(vals))
    return float(max(vals))


def _reducers(config: dict[str, Any]) -> list[str]:
    red = config.get("epochs_reducer")
    if red is None:
        return ["mean"]
    if isinstance(red, str):
        return [red]
    return [str(r) for r in red] or ["mean"]


# ------------------------------------------------------------------------------------------------ records
def _model_name(spec: Any) -> str | None:
    if isinstance(spec, str):
        return spec
    if isinstance(spec, dict):
        return _model_name(spec.get("model"))
    if isinstance(spec, list):
        names = [n for n in (_model_name(s) for s in spec) if n]
        return ", ".join(names) or None
    return None


def _graders(ev: dict[str, Any], graded: set[str]) -> dict[str, str]:
    """The scorers that are model graders -> the grader model (as the log names it)."""
    out: dict[str, str] = {}
    roles = ev.get("model_roles") if isinstance(ev.get("model_roles"), dict) else {}
    for sc in ev.get("scorers") or []:
        if not isinstance(sc, dict) or not sc.get("name"):
            continue
        name = str(sc["name"])
        if name.rsplit("/", 1)[-1] in MODEL_GRADED or name in graded:
            opts = sc.get("options") if isinstance(sc.get("options"), dict) else {}
            grader = _model_name(opts.get("model"))
            if grader is None:
                role = opts.get("model_role", "grader")
                role = role.get("name") if isinstance(role, dict) else role
                grader = _model_name(roles.get(role)) if isinstance(role, str) else None
            out[name] = grader or f"the evaluated model ({ev.get('model')})"
    for name in graded:
        out.setdefault(name, "a grader model")
    return out


@dataclass
class _Notes:
    odd: dict[str, str]
    judges: dict[str, str]
    partial: list[str]
    metric_scorer: dict[str, str]


def _log_records(log: _Log, system: str | None, notes: _Notes) -> Iterator[Record]:
    ev = log.eval
    task = ev.get("task")
    if not task:
        raise DataError(f"{log.path}: eval.task is missing; not an inspect_ai log, or a damaged one.", field="task")
    task = str(task)
    model = ev.get("model")
    if not model or model == "none/none":
        if not system:
            raise DataError(f"{log.path}: the log records no model (eval.model is {model!r}); name the system with "
                            "--system NAME (system= in Python).", field="model")
        model = system
    model = str(model)
    config = ev.get("config") if isinstance(ev.get("config"), dict) else {}
    epochs = int(config.get("epochs") or 1)
    reducers = _reducers(config)
    by_id: dict[str, dict[int, dict[str, Any]]] = {}
    for s in log.samples:
        by_id.setdefault(str(s["id"]), {})[s["epoch"]] = s  # a re-logged (id, epoch): the last one wins
    order = [str(i) for i in ((ev.get("dataset") or {}).get("sample_ids") or [])]
    ids = [i for i in order if i in by_id] + [i for i in by_id if i not in set(order)]
    n_run = len(order) or len(ids)
    graded = set().union(*(s["graded"] for s in log.samples)) if log.samples else set()
    for scorer, grader in _graders(ev, graded).items():
        notes.judges[scorer] = grader
    values: dict[str, dict[str, Any]] = {}
    if log.reductions is not None:
        for red in log.reductions:
            scorer = str(red.get("scorer"))
            reducer = red.get("reducer")
            suffix = "" if reducer is None or reducer == reducers[0] else f"@{reducer}"
            for smp in red.get("samples") or []:
                sid = str(smp.get("sample_id"))
                for metric, v in _expand(scorer, smp.get("value"), suffix):
                    notes.metric_scorer.setdefault(metric, scorer)
                    where = f"{log.path}: reductions, {scorer}"
                    values.setdefault(sid, {})[metric] = _value(v, metric, where, notes.odd)
        ids += [i for i in values if i not in by_id]
    else:
        done = [i for i in ids if all(e in by_id[i] for e in range(1, epochs + 1))]
        if epochs > 1:
            unknown = [r for r in reducers if r not in _REDUCERS]
            if unknown:
                raise DataError(f"{log.path}: the log holds no reductions (status {log.status!r}: inspect writes them "
                                f"when the run finishes) and its epochs reducer {unknown[0]!r} is not one evalsift "
                                f"recomputes ({', '.join(_REDUCERS)}); read the log once the run has finished.",
                                field="epochs_reducer")
        for sid in done:
            per: dict[str, list[Any]] = {}
            for e in range(1, epochs + 1):
                s = by_id[sid][e]
                for scorer, value in s["scores"].items():
                    for metric, v in _expand(scorer, value, ""):
                        notes.metric_scorer.setdefault(metric, scorer)
                        per.setdefault(metric, []).append(_value(v, metric, s["where"], notes.odd))
            vals: dict[str, Any] = {}
            for metric, xs in per.items():
                scorer = notes.metric_scorer[metric]
                for k, reducer in enumerate(reducers if epochs > 1 else reducers[:1]):
                    name = metric if k == 0 else f"{metric}@{reducer}"
                    notes.metric_scorer.setdefault(name, scorer)
                    vals[name] = xs[0] if epochs == 1 else _reduce(xs, reducer)
            values[sid] = vals
        left = len(ids) - len(done)
        ids = done
        if not log.written or log.status != "success":
            if not ids:
                state = ("has not finished" if not log.written else f"ended with status {log.status!r}")
                raise DataError(f"{log.path}: the run {state} and no sample has finished all its {epochs} epoch(s) "
                                "yet, so there is nothing to read; read the log again once samples are done (inspect "
                                "writes them in batches) or when the run has finished.")
            state = ("has not finished (inspect is still running it, or it stopped before writing its results)"
                     if not log.written else f"ended with status {log.status!r}")
            notes.partial.append(f"{log.path.name}: the run {state}; read {len(ids)} of its {n_run} samples (those "
                                 f"whose {epochs} epoch(s) are all in the log"
                                 + (f"; {left} sample(s) with only some epochs left out" if left else "")
                                 + (f", epochs reduced here with {reducers[0]}" if epochs > 1 else "") + ")")
    if log.reductions is not None and log.status != "success":
        notes.partial.append(f"{log.path.name}: the run ended with status {log.status!r}; read the {len(ids)} samples "
                             f"of its {n_run} that inspect reduced")
    for sid in ids:
        eps = by_id.get(sid, {})
        s = eps[min(eps)] if eps else None
        meta: dict[str, Any] = {"sample_id": sid}
        if s is not None:
            for k, v in s["metadata"].items():
                meta.setdefault(k if k not in ("task", "sample_id") else f"metadata.{k}", v)
        yield Record(system=model, item=f"{task}/{sid}", metrics=values.get(sid, {}),
                     input=s["input"] if s else None, output=s["output"] if s else None,
                     reference=s["target"] if s else None, group={"task": task}, meta=meta,
                     where=f"{log.path}: sample {sid!r}")


# ------------------------------------------------------------------------------------------------ files
def _log_files(path: Path, *, cheap: bool = False) -> list[Path]:
    """The inspect logs under a folder, at most two levels down, sorted: ``*.eval`` files and ``*.json`` files whose
    first bytes are an inspect log's (``cheap``: stop at the first log found, and look into at most
    :data:`_CHEAP_JSON` ``.json`` files)."""
    found: list[Path] = []
    looked = [0]

    def is_log(p: Path) -> bool:
        suffix = p.suffix.lower()
        if suffix == ".eval":
            return True
        if suffix != ".json" or (cheap and looked[0] >= _CHEAP_JSON):
            return False
        looked[0] += 1
        return _json_head(p)

    def walk(folder: Path, depth: int) -> bool:
        try:
            entries = sorted(folder.iterdir())
        except OSError:
            return False
        for p in entries:
            if not p.name.startswith(".") and p.is_file() and is_log(p):
                found.append(p)
                if cheap:
                    return True
        if depth < _MAX_DEPTH:
            for p in entries:
                if p.is_dir() and not p.name.startswith(".") and walk(p, depth + 1):
                    return True
        return False

    walk(path, 1)
    return found


def _json_head(path: Path) -> bool:
    try:
        with open(path, "rb") as f:
            head = f.read(1024)
    except OSError:
        return False
    return bool(_JSON_HEAD.match(head))


def looks_inspect(path: str | Path) -> bool:
    """Whether ``path`` is an inspect_ai log or a folder of them (cheap: names, a zip's first 4 bytes, a ``.json``'s
    first KB; never raises).

    >>> looks_inspect("/nonexistent.eval"), looks_inspect("/")
    (False, False)
    """
    try:
        p = Path(path).expanduser()
        if p.is_file():
            suffix = p.suffix.lower()
            if suffix == ".eval":
                with open(p, "rb") as f:
                    return f.read(4) == b"PK\x03\x04"
            return suffix == ".json" and _json_head(p)
        if p.is_dir():
            return bool(_log_files(p, cheap=True))
    except (OSError, ValueError):
        return False
    return False


def _paths(path: Path) -> list[Path]:
    if path.is_dir():
        files = _log_files(path)
        if not files:
            raise DataError(f"{path}: no inspect_ai logs (*.eval, or *.json inspect logs) in the folder or two levels "
                            "below it; give inspect's log folder (--log-dir, default ./logs) or a log file.")
        return files
    check_file(path, "inspect log")
    return [path]


def read_inspect(path: str | Path, *, name: str | None = None, system: str | None = None) -> Pool:
    """A Pool from inspect_ai logs: a ``.eval`` or ``.json`` log, or a folder of them (several models and tasks:
    one Pool; items every run has are joined, a note names what was left out). See the module's docstring for
    what becomes of each part. ``system`` names the model of a log that records none (``none/none``).

    >>> read_inspect("logs/2025-01-01T00-00-00_task_abc.eval").systems   # doctest: +SKIP
    ('mockllm/model',)
    """
    path = Path(path).expanduser()
    notes = _Notes({}, {}, [], {})
    logs = [_read_log(p) for p in _paths(path)]

    def records() -> Iterator[Record]:
        for log in logs:
            yield from _log_records(log, system, notes)

    recs = list(records())
    pool = pool_from_records(recs, name=name or str(path), tool=TOOL)
    for note in notes.partial:
        warn_data(f"{TOOL}: {note}")
    if notes.odd:
        warn_data(f"{TOOL}: metric(s) {', '.join(sorted(notes.odd))} hold values that are not numbers, booleans, "
                  f"letters or numeric strings (first: {'; '.join(notes.odd[m] for m in sorted(notes.odd))}); they "
                  "count 0, as inspect's value_to_float counts them")
    judged = _judge_metrics(pool, notes)
    if judged:
        warn_data(f"{TOOL}: metric(s) {', '.join(judged)} are an LLM judge's grades ("
                  + "; ".join(f"{s} graded by {g}" for s, g in sorted(notes.judges.items()))
                  + "), not human judgments; use them as a judge: --proxy metric:NAME, judge-report --judge "
                    "metric:NAME")
    return pool


def _judge_metrics(pool: Pool, notes: _Notes) -> list[str]:
    return [m for m in pool.scores if notes.metric_scorer.get(m) in notes.judges]


# ------------------------------------------------------------------------------------------------ describe
def _header(path: Path) -> tuple[dict[str, Any], bool, Counter]:
    """A log's header alone (``header.json`` or the journal's start; a ``.json`` log's fields before ``samples``)."""
    if path.suffix.lower() == ".eval":
        with _EvalZip(path) as z:
            if "header.json" in z.entries:
                h = z.json("header.json")
                return h, h.get("status") != "started", z.methods()
            if "_journal/start.json" in z.entries:
                s = z.json("_journal/start.json")
                return {"version": s.get("version"), "status": "started", "eval": s.get("eval")}, False, z.methods()
            raise DataError(f"{path}: neither header.json nor _journal/start.json: not an inspect_ai .eval log.")
    ijson = _ijson()
    if ijson is not None:
        try:
            header = _json_header(path, ijson)
            return header, header.get("status", "started") != "started", Counter()
        except ijson.JSONError:
            pass  # NaN in the header (yajl does not parse it): read it whole
    log = _read_json(path)
    return log.header, log.written, Counter()


def _json_header(path: Path, ijson: Any) -> dict[str, Any]:
    """A ``.json`` log's header fields, read up to its ``samples`` (which are not parsed)."""
    header: dict[str, Any] = {}
    with _open_binary(path) as f:
        events = iter(ijson.parse(f, use_float=True))
        next(events, None)
        for prefix, event, key in events:
            if prefix == "" and event == "end_map":
                break
            if event != "map_key":
                continue
            if key == "samples":
                break
            _, ev, val = next(events)
            header[key] = _consume(events, ev, val, ijson, key in _HEADER_KEYS)
    return header


def describe_inspect(path: str | Path) -> dict[str, Any]:
    """``tool`` (inspect_ai), ``version`` (the inspect_ai that wrote the logs: ``eval.packages``), ``found`` (runs,
    models, tasks, scorers, judges, in one phrase) and the details: ``runs`` (per log: file, format, model, task,
    status, epochs, log schema version), ``tasks``, ``scorers``, ``judges`` (scorer -> grader) and
    ``compression`` (how a ``.eval``'s entries are compressed). Reads the headers only."""
    path = Path(path).expanduser()
    runs, models, tasks, scorers, versions = [], {}, {}, {}, {}
    judges: dict[str, str] = {}
    compression: Counter = Counter()
    for p in _paths(path):
        header, written, methods = _header(p)
        ev = header.get("eval") if isinstance(header.get("eval"), dict) else {}
        compression.update(methods)
        version = (ev.get("packages") or {}).get("inspect_ai")
        if version:
            versions.setdefault(str(version), None)
        models.setdefault(str(ev.get("model")), None)
        tasks.setdefault(str(ev.get("task")), None)
        for sc in ev.get("scorers") or []:
            if isinstance(sc, dict) and sc.get("name"):
                scorers.setdefault(str(sc["name"]), None)
        judges.update(_graders(ev, set()))
        runs.append({"file": p.name, "format": p.suffix.lower().lstrip("."), "model": ev.get("model"),
                     "task": ev.get("task"), "status": header.get("status") if written else "started",
                     "epochs": (ev.get("config") or {}).get("epochs") or 1, "log_version": header.get("version")})
    unfinished = sum(r["status"] != "success" for r in runs)
    found = (f"{_n(len(runs), 'run')} ({_few(models)}) of {_n(len(tasks), 'task')} ({_few(tasks)}); "
             f"scorers {_few(scorers, 6)}")
    if judges:
        found += "; LLM judges " + ", ".join(f"{s} (grader {g})" for s, g in judges.items())
    if unfinished:
        found += f"; {unfinished} not finished or not successful"
    return {"tool": TOOL, "version": ", ".join(versions) or None, "found": found, "runs": runs, "tasks": list(tasks),
            "scorers": list(scorers), "judges": judges, "compression": dict(compression)}


def _n(k: int, word: str) -> str:
    return f"{k} {word}{'s' * (k != 1)}"


def _few(names: Iterable[str], k: int = 3) -> str:
    names = list(names)
    return ", ".join(names[:k]) + (", ..." if len(names) > k else "")


# ------------------------------------------------------------------------------------------------ export
def _escape_id(sid: str) -> str:
    """A sample id as inspect's ``--sample-id`` matches it: inspect reads each id as an ``fnmatch`` pattern, so
    ``*``, ``?`` and ``[`` are put in brackets to match themselves.

    >>> _escape_id("q1*"), _escape_id("a[2]")
    ('q1[*]', 'a[[]2]')
    """
    return re.sub(r"([*?\[])", r"[\1]", sid)


def _slug(task: str) -> str:
    return re.sub(r"[^\w.-]+", "_", task).strip("_") or "task"


def export_inspect(pool: Pool, item_ids: Iterable[str], out_path: str | Path) -> list[Path]:
    """Write the chosen items as inspect's ``--sample-id`` takes them: one file per task beside ``out_path``,
    ``<stem>.inspect.<task>.txt``, holding one line, the task's sample ids separated by commas (inspect's option
    takes a comma-separated list, not a file), so that ``inspect eval TASK --sample-id "$(cat FILE)"`` evaluates exactly
    those samples. Ids are written so inspect's matching (``fnmatch``) matches only them; an id with a comma or
    surrounding blanks cannot be written (inspect splits on commas and strips) and is an error naming it. The
    pool must come from inspect logs (per-item ``task`` and ``sample_id``). Returns the paths, in task order.

    >>> from evalsift.pool import Pool
    >>> import tempfile
    >>> pool = Pool(item_ids=["t/a", "t/b*"], systems=["m"], scores={"acc": [[1.0], [0.0]]},
    ...             metadata={"task": ["t", "t"], "sample_id": ["a", "b*"]})
    >>> out = Path(tempfile.mkdtemp()) / "picks.txt"
    >>> [p.name for p in export_inspect(pool, ["t/b*", "t/a"], out)], (out.parent / "picks.inspect.t.txt").read_text()
    (['picks.inspect.t.txt'], 'b[*],a\\n')
    """
    out_path = Path(out_path)
    written: list[Path] = []
    used: set[str] = set()
    out_path.parent.mkdir(parents=True, exist_ok=True)
    for task, sids in _sample_ids(pool, item_ids).items():
        slug = _slug(task)
        k = 2
        base = slug
        while slug in used:
            slug, k = f"{base}-{k}", k + 1
        used.add(slug)
        target = out_path.with_name(f"{out_path.stem}.inspect.{slug}.txt")
        with atomic_file(target) as fh:
            fh.write(",".join(_escape_id(s) for s in sids) + "\n")
        written.append(target)
    return written


def inspect_next_step(pool: Pool, item_ids: Iterable[str], paths: list[Path]) -> str:
    """What to tell the user after :func:`export_inspect` wrote ``paths``: one ``inspect eval`` command per task
    (``TASK`` is the task's name as the logs record it: a registered task runs by that name, a local one as
    ``file.py@task``; ``NEW_MODEL`` to fill in)."""
    per_task = _sample_ids(pool, item_ids)
    lines = [f"wrote {len(paths)} file(s) of sample ids for inspect's --sample-id ("
             + ", ".join(f"{t}: {len(v)}" for t, v in per_task.items()) + "); evaluate a new model on them:"]
    for task, path in zip(per_task, paths):
        ids = f'"$(cat {shlex.quote(str(path))})"'
        lines.append(f"  inspect eval {shlex.quote(task)} --model NEW_MODEL --sample-id {ids}")
    return "\n".join(lines)


def _sample_ids(pool: Pool, item_ids: Iterable[str]) -> dict[str, list[str]]:
    """``{task: [sample id, ...]}`` of ``item_ids`` in their order (module doc of :func:`export_inspect`)."""
    cols = pool.metadata
    ids = [str(i) for i in item_ids]
    index = {iid: k for k, iid in enumerate(pool.item_ids)}
    per_task: dict[str, list[str]] = {}
    for iid in ids:
        k = index.get(iid)
        if k is None:
            raise DataError(f"export inspect: item {iid!r} is not in the data {pool.name!r}.", item_id=iid)
        task = cols["task"][k] if "task" in cols else None
        sid = cols["sample_id"][k] if "sample_id" in cols else None
        if task in (None, "") or sid in (None, ""):
            missing = " and ".join(c for c, v in (("task", task), ("sample_id", sid)) if v in (None, ""))
            raise DataError(f"export inspect: item {iid!r} has no {missing}; inspect's --sample-id needs the task and "
                            "sample id of each item, which a Pool read from inspect logs holds (read the logs with "
                            "evalsift, not another format).", item_id=iid, field="sample_id")
        sid = str(sid)
        if "," in sid or sid != sid.strip() or not sid:
            raise DataError(f"export inspect: item {iid!r} has sample id {sid!r}, which inspect's --sample-id cannot "
                            "name (it splits the list on commas and strips blanks); run it with the Python API "
                            "(eval(..., sample_id=[...])).", item_id=iid, field="sample_id")
        per_task.setdefault(str(task), [])
        if sid not in per_task[str(task)]:
            per_task[str(task)].append(sid)
    return per_task
