"""Every Eval Ever's instance-level files as a Pool: ``<uuid>_samples.jsonl`` (beside the aggregate ``<uuid>.json``).

Every Eval Ever (EEE) keeps one aggregate record per evaluation run, ``data/<collection>/<developer>/<model>/
<uuid>.json`` (``evaluation_results[]``: ``evaluation_name``, ``evaluation_result_id``, ``metric_config``,
``score_details.score``), and beside it the per-sample sidecar ``<uuid>_samples.jsonl``: one JSON object per line
(schema ``instance_level_eval.schema.json``): ``model_id``, ``evaluation_name``, ``sample_id``, optional
``evaluation_result_id``, ``input`` (``raw``, ``reference`` list, ``choices``), ``output.raw`` (a list; single
turn) or ``messages`` (multi-turn, agentic), ``evaluation`` (``score``, ``is_correct``, ``num_turns``,
``tool_calls_count``), ``token_usage``, ``performance``, ``metadata``.

:func:`read_every_eval` takes one samples file or a folder (every ``*_samples.jsonl`` below it) and gives one Pool:

- **item** ``<evaluation_name>/<sample_id>``; per-item columns ``benchmark`` (the evaluation name: the group,
  ``--by benchmark``), ``sample_id``, ``sample_hash``, ``interaction_type`` and ``metadata.<key>`` for the
  sample's own metadata strings;
- **system** ``model_id`` (``system=`` for lines without one);
- **metrics** ``score`` (``evaluation.score``) and ``is_correct``. Where one evaluation fans a sample out into
  several lines, one per aggregate result (``evaluation_result_id``: EEE's HELM converter writes one line per
  core metric, ``exact_match:test``, ...), each result is its own metric, named by the aggregate result's
  ``metric_config.metric_id`` (else ``metric_name``, else the ``evaluation_result_id``), and ``is_correct`` is
  not kept for them. Also the numbers of ``token_usage`` (``input_tokens``, ``output_tokens``, ...),
  ``performance`` (``latency_ms``, ...) and ``evaluation.num_turns`` / ``tool_calls_count``, and the per-sample
  metrics EEE's lm-eval converter keeps as JSON in ``metadata.lm_eval_metrics`` (``acc``, ``acc_norm``, ...).
  Lines that repeat a (model, item, metric) -- inspect's epochs (``metadata.epoch``) -- are averaged, as
  inspect's ``mean`` reducer does;
- **texts** ``input.raw``, the first ``input.reference``, and the first ``output.raw`` (multi-turn: the last
  assistant message).

A system's mean of ``score`` over an evaluation's items is what the aggregate record keeps as that result's
``score_details.score`` for mean-aggregated metrics (accuracy, exact match), when the items are the whole run.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any, Iterator

from ..errors import DataError
from ..pool import Pool
from ._common import iter_jsonl, load_json, warn_data
from .harness import Record, pool_from_records

TOOL = "Every Eval Ever"
_SUFFIX = "_samples.jsonl"
_KEYS = (b'"evaluation_id"', b'"model_id"', b'"evaluation_name"')
_MAX_DEPTH = 5
_NUMBERS = {"token_usage": ("input_tokens", "output_tokens", "total_tokens", "input_tokens_cache_write",
                            "input_tokens_cache_read", "reasoning_tokens"),
            "performance": ("latency_ms", "time_to_first_token_ms", "generation_time_ms"),
            "evaluation": ("num_turns", "tool_calls_count")}
_SKIP_META = ("lm_eval_metrics", "epoch", "stop_reason")  # per response, not per sample


def _head(path: Path, n: int = 1024) -> bytes:
    with open(path, "rb") as f:
        return f.read(n)


def _looks_file(path: Path) -> bool:
    head = _head(path).lstrip()
    return head.startswith(b"{") and all(k in head for k in _KEYS)


def looks_every_eval(path: str | Path) -> bool:
    """Whether ``path`` is an EEE samples file (``*_samples.jsonl``, or any ``.jsonl`` whose first KB has
    ``evaluation_id``, ``model_id`` and ``evaluation_name``) or a folder with one up to five levels down
    (``data/<collection>/<developer>/<model>/``). Reads at most the first KB of one file; False, never an
    error, for anything else.

    >>> looks_every_eval("/nonexistent")
    False
    """
    try:
        path = Path(path)
        if path.is_file():
            return path.name.lower().endswith(".jsonl") and _looks_file(path)
        if not path.is_dir():
            return False
        pattern = ""
        for _ in range(_MAX_DEPTH):
            hit = next((p for p in path.glob(pattern + "*" + _SUFFIX) if p.is_file()), None)
            if hit is not None:
                return _looks_file(hit)
            pattern += "*/"
        return False
    except OSError:
        return False


def _files(path: Path) -> list[Path]:
    if path.is_file():
        return [path]
    return sorted(p for p in path.rglob("*" + _SUFFIX) if p.is_file())


def _aggregate(samples: Path) -> dict[str, Any] | None:
    """The aggregate record beside a samples file (``<uuid>.json`` for ``<uuid>_samples.jsonl``), or None."""
    if not samples.name.endswith(_SUFFIX):
        return None
    agg = samples.with_name(samples.name[: -len(_SUFFIX)] + ".json")
    if not agg.is_file():
        return None
    data = load_json(agg, "Every Eval Ever's aggregate record (EvaluationLog: evaluation_id, model_info, "
                          "evaluation_results, ...)")
    return data if isinstance(data, dict) else None


def _result_labels(aggs: list[dict[str, Any]]) -> dict[str, str]:
    """``evaluation_result_id -> metric label`` from the aggregates' ``evaluation_results``."""
    out: dict[str, str] = {}
    for agg in aggs:
        for res in agg.get("evaluation_results") or []:
            if not isinstance(res, dict) or not isinstance(res.get("evaluation_result_id"), str):
                continue
            cfg = res.get("metric_config") if isinstance(res.get("metric_config"), dict) else {}
            label = cfg.get("metric_id") or cfg.get("metric_name") or res["evaluation_result_id"]
            out.setdefault(res["evaluation_result_id"], str(label))
    return out


def _text(v: Any) -> str | None:
    if isinstance(v, list):
        v = next((x for x in v if isinstance(x, str)), None)
    return v if isinstance(v, str) else None


def _output(rec: dict[str, Any]) -> str | None:
    out = rec.get("output")
    if isinstance(out, dict):
        return _text(out.get("raw"))
    msgs = rec.get("messages")
    if isinstance(msgs, list):
        for m in reversed(msgs):
            if isinstance(m, dict) and m.get("role") == "assistant" and isinstance(m.get("content"), str):
                return m["content"]
    return None


def _number(v: Any) -> float | None:
    if isinstance(v, bool):
        return float(v)
    if isinstance(v, (int, float)) and math.isfinite(v):
        return float(v)
    return None


def _lines(files: list[Path], system: str | None) -> Iterator[tuple[str, int, dict[str, Any], str]]:
    """``(where, lineno, record, model)`` for every line of every samples file; DataError for a line that lacks
    a field the reader needs."""
    expected = ("one Every Eval Ever instance record per line ({model_id, evaluation_name, sample_id, evaluation: "
                "{score}, ...})")
    for f in files:
        for lineno, rec in iter_jsonl(f, what="samples", expected=expected):
            where = f"{f}: line {lineno}"
            if not isinstance(rec, dict):
                raise DataError(f"{where} is not a JSON object; expected {expected}.")
            model = rec.get("model_id") or system
            if not isinstance(model, str) or not model:
                raise DataError(f"{where}: no 'model_id'; EEE requires it on every line (or give system='NAME'; "
                                "--system NAME on the command line).", field="model_id")
            for key in ("evaluation_name", "sample_id"):
                if rec.get(key) is None or rec.get(key) == "":
                    raise DataError(f"{where}: no {key!r}; EEE requires it on every line.", field=key)
            ev = rec.get("evaluation")
            if not isinstance(ev, dict) or "score" not in ev:
                raise DataError(f"{where}: no 'evaluation.score'; EEE requires evaluation {{score, is_correct}} on "
                                "every line.", field="evaluation.score")
            yield where, lineno, rec, model


def read_every_eval(path: str | Path, *, name: str | None = None, system: str | None = None) -> Pool:
    """A Pool from Every Eval Ever's ``*_samples.jsonl`` (a file, or every one below a folder); see the module's
    docstring. ``system`` names lines without a ``model_id``.

    >>> pool = read_every_eval("data/gsm8k")                      # doctest: +SKIP
    >>> pool.score("score").mean(axis=0)                          # doctest: +SKIP
    """
    path = Path(path).expanduser()
    if not path.exists():
        raise DataError(f"{path}: no such file or folder; give an Every Eval Ever <uuid>_samples.jsonl or a folder "
                        "of them (data/<collection>/...).")
    files = _files(path)
    if not files:
        raise DataError(f"{path}: no Every Eval Ever samples here (*{_SUFFIX} up to any depth); give a samples file "
                        "or the folder that holds them.")
    aggs = [a for a in (_aggregate(f) for f in files) if a is not None]
    labels = _result_labels(aggs)
    # first pass: which evaluations fan a sample out over several aggregate results
    rids: dict[str, set[str]] = {}
    for _, _, rec, _ in _lines(files, system):
        rid = rec.get("evaluation_result_id")
        rids.setdefault(str(rec["evaluation_name"]), set()).add(rid if isinstance(rid, str) else "")
    fanned: dict[str, dict[str, str]] = {}  # evaluation -> result id -> metric name, where a sample fans out
    for e, ids in rids.items():
        if len(ids) > 1:
            named = {rid: labels.get(rid, rid) if rid else "score" for rid in ids}
            unique = len(set(named.values())) == len(named)  # two results with one metric id: keep their ids
            fanned[e] = named if unique else {rid: rid or "score" for rid in ids}
    repeats = {"n": 0}

    def records() -> Iterator[Record]:
        cells: dict[tuple[str, str], dict[str, list[float]]] = {}
        info: dict[tuple[str, str], dict[str, Any]] = {}
        for where, _, rec, model in _lines(files, system):
            bench = str(rec["evaluation_name"])
            sid = str(rec["sample_id"])
            key = (model, f"{bench}/{sid}")
            ev = rec["evaluation"]
            vals: dict[str, float | None] = {}
            rid = rec.get("evaluation_result_id")
            score = ev.get("score")
            if score is not None and (isinstance(score, bool) or not isinstance(score, (int, float))):
                raise DataError(f"{where}: evaluation.score is {score!r}, not a number.", field="evaluation.score")
            if bench in fanned:
                main = fanned[bench][rid if isinstance(rid, str) else ""]
                vals[main] = _number(score)
            else:
                main = "score"
                vals["score"] = _number(score)
                if "is_correct" in ev:
                    vals["is_correct"] = _number(ev.get("is_correct"))
            for block, keys in _NUMBERS.items():
                sub = rec.get(block)
                if isinstance(sub, dict):
                    for k in keys:
                        if _number(sub.get(k)) is not None:
                            vals[k] = _number(sub.get(k))
            meta = rec.get("metadata") if isinstance(rec.get("metadata"), dict) else {}
            lm = meta.get("lm_eval_metrics")
            if isinstance(lm, str):
                try:
                    got = json.loads(lm)
                except json.JSONDecodeError:
                    got = None
                if isinstance(got, dict):
                    for k, v in got.items():
                        if _number(v) is not None and str(k) not in vals:
                            vals[str(k)] = _number(v)
            cell = cells.setdefault(key, {})
            for m, v in vals.items():
                acc = cell.setdefault(m, [0.0, 0, 0])  # sum, count of numbers, lines
                acc[2] += 1
                if acc[2] > 1 and m == main:
                    repeats["n"] += 1
                if v is not None:
                    acc[0] += v
                    acc[1] += 1
            if key not in info:
                inp = rec.get("input") if isinstance(rec.get("input"), dict) else {}
                info[key] = {"where": where, "bench": bench, "sid": sid, "input": _text(inp.get("raw")),
                             "reference": _text(inp.get("reference")), "output": _output(rec),
                             "meta": {"sample_id": sid, "sample_hash": rec.get("sample_hash"),
                                      "interaction_type": rec.get("interaction_type"),
                                      **{f"metadata.{k}": v for k, v in meta.items()
                                         if k not in _SKIP_META and isinstance(v, str) and len(v) <= 200}}}
        for (model, item), cell in cells.items():
            i = info[(model, item)]
            metrics = {m: (acc[0] / acc[1] if acc[1] else None) for m, acc in cell.items()}
            yield Record(system=model, item=item, metrics=metrics, input=i["input"], output=i["output"],
                         reference=i["reference"], group={"benchmark": i["bench"]}, meta=i["meta"], where=i["where"])
        if repeats["n"]:
            warn_data(f"{TOOL}: {repeats['n']} line(s) repeat a (model, sample, metric) already read (inspect's "
                      "epochs, repeated trials): the values are averaged per sample")

    return pool_from_records(records(), name=name or str(path), tool=TOOL)


def describe_every_eval(path: str | Path) -> dict[str, Any]:
    """``tool``, ``version`` (the records' ``schema_version``) and ``found``: the samples files, their models
    and the evaluation library, from the aggregate records beside them (else each file's first line)."""
    path = Path(path).expanduser()
    files = _files(path)
    models: dict[str, None] = {}
    libs: dict[str, None] = {}
    version = None
    for f in files:
        agg = None
        try:
            agg = _aggregate(f)
        except DataError:
            pass
        if agg:
            version = version or agg.get("schema_version")
            mi = agg.get("model_info") if isinstance(agg.get("model_info"), dict) else {}
            if mi.get("id"):
                models.setdefault(str(mi["id"]), None)
            lib = agg.get("eval_library") if isinstance(agg.get("eval_library"), dict) else {}
            if lib.get("name"):
                libs.setdefault(f"{lib['name']} {lib.get('version') or ''}".strip(), None)
            continue
        for _, rec in iter_jsonl(f):
            if isinstance(rec, dict):
                version = version or rec.get("schema_version")
                if rec.get("model_id"):
                    models.setdefault(str(rec["model_id"]), None)
            break
    shown = ", ".join(list(models)[:3]) + (", ..." if len(models) > 3 else "")
    found = f"{len(files)} samples file{'s' * (len(files) != 1)} of {len(models)} model{'s' * (len(models) != 1)} ({shown})"
    if libs:
        found += f" from {', '.join(libs)}"
    return {"tool": TOOL, "version": version, "found": found}
