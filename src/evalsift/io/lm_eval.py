"""lm-evaluation-harness's per-sample logs (``--log_samples``) as a Pool.

**The files.** ``lm_eval ... --output_path OUT --log_samples`` writes, per model, ``OUT/<model>/results_<time>.json``
(the aggregated scores, the task configs, ``model_name``, ``lm_eval_version``, ``n-shot``) and beside it one
``samples_<task>_<time>.jsonl`` per task, one line per (document, filter): ``doc_id``, ``doc``, ``target``,
``arguments`` (``{"gen_args_0": {"arg_0": context, "arg_1": continuation or generation settings}, ...}``), ``resps``
and ``filtered_resps``, ``filter``, ``metrics`` (the names of the metric keys on the line), ``doc_hash``,
``prompt_hash``, ``target_hash`` and one key per metric (``acc``, ``acc_norm``, ``exact_match``, ...). (With
``--output_path x.json`` the files lie beside ``x.json``, the results named ``x_<time>.json``.) Checked against
lm-eval 0.4.13's ``loggers/evaluation_tracker.py`` and ``evaluator.py``, and against its own output in the tests.

**What becomes what.** An item is ``<task>/<doc_id>`` (``task`` and ``doc_id`` kept as per-item columns; ``task`` is
the group ``--by task`` names); the system is the model name lm-eval records (the results file's ``model_name``,
else ``pretrained=`` of its ``config.model_args``, else ``system=``, else the folder's name, with a note); every
numeric per-sample metric is a metric, named ``metric`` for lm-eval's default filter ``none`` and ``metric,filter``
otherwise (lm-eval's own results key, e.g. ``exact_match,strict-match``); the input is the first request's context
(``arg_0``: the whole prompt, few-shot examples included); the output is the filtered response (for a
multiple-choice line, the continuation of highest log-likelihood: the choice ``acc`` scores); the reference is the
target (for a multiple-choice line whose target is a choice's index, that choice's text).

**Means.** lm-eval's score of a task (``acc,none`` in the results) is the mean of the per-sample values only for
metrics whose aggregation is ``mean`` (``acc``, ``acc_norm``, ``exact_match``, and any ``metric_list`` entry with
``aggregation: mean``); corpus-level ones (``bleu``, ``chrf``, ``ter``, ``f1``, ``mcc``, ``brier_score``) log a
per-sample pair rather than a number and are left out with a note, and perplexities (``perplexity``,
``word_perplexity``, ``byte_perplexity``, ``bits_per_byte``) log a per-sample log-likelihood that lm-eval turns into
one corpus number: they are read, with a note that their mean is not lm-eval's score.

**Several runs.** A folder may hold several models and tasks (one Pool; runs that disagree on the items are joined
on the shared items by :func:`~evalsift.io.harness.pool_from_records`, with a note). Several timestamps of the same
model and task: the newest is read and a note names the older ones. Two runs whose documents differ under the same
``doc_id`` (their ``doc_hash`` differs: another version of the data) are an error.

**Open LLM Leaderboard details.** The leaderboard's v2 details datasets are these same sample files, uploaded by
lm-eval's ``push_samples_to_hub`` (the tracker's ``upload_folder`` of the model folder); their Parquet form has the
same fields as columns. A ``samples_<task>_<time>.parquet`` is read like the JSONL (``lm-eval:FILE.parquet`` with
``task=`` for a file named otherwise). Only this layout is supported: a real leaderboard Parquet file was not
available to check, and the v1 leaderboard's older details layout is not read.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import DataError
from ..pool import Pool
from ._common import iter_jsonl, load_json, warn_data
from .harness import Record, pool_from_records

TOOL = "lm-evaluation-harness"
SAMPLES = re.compile(r"^samples_(?P<task>.+)_(?P<time>[^_]+)\.(?P<ext>jsonl|parquet)$")
#: lm-eval's built-in metrics whose task score is not the mean of the per-sample values (their registered
#: aggregation, lm_eval/api/metrics.py); a metric_list entry's own ``aggregation`` overrides this
NOT_MEAN = {"perplexity": "perplexity", "word_perplexity": "weighted_perplexity",
            "byte_perplexity": "weighted_perplexity", "bits_per_byte": "bits_per_byte", "brier_score": "brier_score",
            "mcc": "matthews_corrcoef", "f1": "f1", "bleu": "bleu", "chrf": "chrf", "chrf++": "chrf++", "ter": "ter",
            "bypass": "bypass"}
#: keys of a sample line that are not metrics (for lines that do not list their metrics)
_NOT_METRICS = {"doc_id", "doc", "target", "arguments", "resps", "filtered_resps", "filter", "metrics", "doc_hash",
                "prompt_hash", "target_hash"}
_MAX_DEPTH = 3


@dataclass
class _Run:
    """One samples file and what its results file says."""

    path: Path
    task: str
    time: str
    system: str | None
    results: dict[str, Any] | None
    results_path: Path | None


RESULTS = re.compile(r"^results_(?P<time>[^_]+)\.json$")


def _samples_files(path: Path) -> list[Path]:
    """The samples files at ``path`` (a samples file; a results file: the samples files of its run; a folder:
    searched ``_MAX_DEPTH`` levels down), sorted."""
    if path.is_file():
        m = RESULTS.match(path.name)
        if m:
            return sorted(p for p in path.parent.glob(f"samples_*_{m.group('time')}.*")
                          if SAMPLES.match(p.name) and p.is_file())
        return [path]
    found: list[Path] = []
    for depth in range(_MAX_DEPTH + 1):
        pattern = "/".join(["*"] * depth + ["samples_*"])
        found += [p for p in path.glob(pattern) if SAMPLES.match(p.name) and p.is_file()]
    return sorted(found)


def looks_lm_eval(path: str | Path) -> bool:
    """Whether ``path`` is lm-eval's ``--log_samples`` output: a ``samples_<task>_<time>.jsonl`` (or ``.parquet``)
    file, a ``results_<time>.json`` with a samples file beside it, or a folder holding a samples file at most three
    levels down. Looks at names only; never raises.

    >>> looks_lm_eval("/nonexistent/samples_arc_easy_2024-01-01T00-00-00.jsonl"), looks_lm_eval("/nonexistent")
    (True, False)
    """
    try:
        p = Path(path)
        if SAMPLES.match(p.name):
            return not p.is_dir()
        if p.is_file():
            m = RESULTS.match(p.name)
            return bool(m) and any(SAMPLES.match(q.name) for q in p.parent.glob(f"samples_*_{m.group('time')}.*"))
        if p.is_dir():
            for depth in range(_MAX_DEPTH + 1):
                pattern = "/".join(["*"] * depth + ["samples_*"])
                if any(SAMPLES.match(q.name) for q in p.glob(pattern)):
                    return True
        return False
    except (OSError, ValueError):
        return False


def _results_file(sample: Path, time: str) -> Path | None:
    """The results JSON written with ``sample`` (same folder, same timestamp), or None."""
    exact = sample.parent / f"results_{time}.json"
    if exact.is_file():
        return exact
    others = sorted(p for p in sample.parent.glob(f"*_{time}.json") if p.is_file())
    return others[0] if others else None


def _model_from_args(model_args: Any) -> str | None:
    """``pretrained=`` (or lm-eval's other name keys) of a results file's ``config.model_args``."""
    keys = ("peft", "delta", "pretrained", "model", "path", "engine")  # lm-eval's own order (GeneralConfigTracker)
    if isinstance(model_args, dict):
        for k in keys:
            if model_args.get(k):
                return str(model_args[k])
    elif isinstance(model_args, str):
        for k in keys:
            if f"{k}=" in model_args:
                return model_args.split(f"{k}=", 1)[1].split(",")[0] or None
    return None


def _runs(path: Path, system: str | None, task: str | None, *, notes: list[str]) -> list[_Run]:
    """Every samples file under ``path`` with its model name and results."""
    files = _samples_files(path)
    if not files:
        raise DataError(f"{path}: no lm-eval samples file (samples_<task>_<time>.jsonl) here or up to {_MAX_DEPTH} "
                        "folders down; run lm_eval with --log_samples and --output_path, and point at that folder.")
    cache: dict[Path, dict[str, Any] | None] = {}
    runs = []
    unnamed: dict[str, list[str]] = {}
    for f in files:
        m = SAMPLES.match(f.name)
        if m:
            t, time = m.group("task"), m.group("time")
        else:  # a file forced with lm-eval:FILE, named otherwise (a details Parquet)
            t, time = task or f.stem, ""
            if task is None:
                notes.append(f"{f.name}: the file's name does not say its task (samples_<task>_<time>.jsonl), so "
                             f"its items are named after the file ({f.stem}); pass task=NAME to name it")
        rpath = _results_file(f, time) if time else None
        if rpath is not None and rpath not in cache:
            doc = load_json(rpath, "lm-eval's aggregated results (one JSON object)")
            cache[rpath] = doc if isinstance(doc, dict) else None
        res = cache.get(rpath) if rpath is not None else None
        name = None
        if res is not None:
            name = res.get("model_name") or _model_from_args((res.get("config") or {}).get("model_args"))
        if not name:
            name = system or f.parent.name or f.stem
            if not system:
                unnamed.setdefault(str(name), []).append(f.name)
        runs.append(_Run(f, t, time, str(name), res, rpath))
    for name, fs in unnamed.items():
        notes.append(f"{', '.join(fs[:3])}{' ...' if len(fs) > 3 else ''}: no results file beside it records the "
                     f"model, so its system is named after the folder ({name}); pass --system NAME to name it")
    return runs


def _newest(runs: list[_Run], notes: list[str]) -> list[_Run]:
    """One run per (system, task): the newest timestamp; a note names the older ones."""
    best: dict[tuple[str, str], _Run] = {}
    older: dict[tuple[str, str], list[_Run]] = {}
    for r in runs:
        key = (r.system or "", r.task)
        if key in best:
            old, new = sorted((best[key], r), key=lambda x: x.time)
            best[key] = new
            older.setdefault(key, []).append(old)
        else:
            best[key] = r
    for (s, t), olds in older.items():
        notes.append(f"{s} has {len(olds) + 1} runs of {t}: the newest ({best[(s, t)].path.name}) is read, not "
                     + ", ".join(o.path.name for o in olds))
    order = {id(r): k for k, r in enumerate(runs)}
    return sorted(best.values(), key=lambda r: order[id(r)])


def _aggregation(res: dict[str, Any] | None, task: str, metric: str) -> str:
    """How lm-eval aggregates ``metric`` of ``task`` into its score: the task config's ``metric_list`` entry, else
    the built-in metric's registered aggregation (``mean`` for every metric not in :data:`NOT_MEAN`)."""
    cfg = ((res or {}).get("configs") or {}).get(task) or {}
    for entry in cfg.get("metric_list") or ():
        if isinstance(entry, dict) and entry.get("metric") == metric and entry.get("aggregation") is not None:
            agg = entry["aggregation"]
            return agg if isinstance(agg, str) else str(agg)
    return NOT_MEAN.get(metric, "mean")


def _iter_rows(path: Path) -> Iterator[tuple[str, Any]]:
    """``(where, record)`` per line of a samples JSONL, or per row of a samples Parquet (read in batches)."""
    if path.suffix.lower() == ".parquet":
        try:
            import pyarrow.parquet as pq
        except ImportError:  # pragma: no cover - pyarrow is a dependency
            from ..errors import MissingDependencyError

            raise MissingDependencyError("reading Parquet needs pyarrow: pip install pyarrow") from None
        try:
            pf = pq.ParquetFile(path)
        except Exception as e:  # pyarrow's errors for a file that is not Parquet
            raise DataError(f"{path}: not a readable Parquet file ({e}).") from None
        row = 0
        for batch in pf.iter_batches(batch_size=2000):
            for rec in batch.to_pylist():
                row += 1
                yield f"{path}: row {row}", rec
        return
    for line, rec in iter_jsonl(path, what="samples", expected="one JSON object per document (lm-eval --log_samples)"):
        yield f"{path}: line {line}", rec


def _is_number(v: Any) -> bool:
    return v is None or isinstance(v, (bool, int, float)) and not (isinstance(v, float) and math.isinf(v))


def _loglik_pairs(resps: Any) -> list[float] | None:
    """The log-likelihoods of a loglikelihood request's filtered responses (``[[ll, is_greedy], ...]``, written as
    strings by lm-eval), or None when they are not such pairs."""
    if not isinstance(resps, list) or not resps:
        return None
    out = []
    for r in resps:
        if not (isinstance(r, (list, tuple)) and len(r) == 2):
            return None
        try:
            out.append(float(r[0]))
        except (TypeError, ValueError):
            return None
    return out


def _texts(rec: dict[str, Any]) -> tuple[str | None, str | None, str | None]:
    """(input, output, reference) of a sample line (module doc)."""
    args = rec.get("arguments")
    requests: list[Any] = []
    if isinstance(args, dict):
        requests = [args[k] for k in sorted(args, key=lambda k: int(k.rsplit("_", 1)[-1])
                                            if k.rsplit("_", 1)[-1].isdigit() else 0)]
    elif isinstance(args, list):  # lm-eval's in-memory form: a list of argument tuples
        requests = [{f"arg_{j}": a for j, a in enumerate(r)} if isinstance(r, (list, tuple)) else r for r in args]
    first = requests[0] if requests and isinstance(requests[0], dict) else {}
    inp = first.get("arg_0") if isinstance(first.get("arg_0"), str) else None
    continuations = [r.get("arg_1") if isinstance(r, dict) else None for r in requests]
    resps = rec.get("filtered_resps")
    out = None
    lls = _loglik_pairs(resps)
    choices = len(continuations) > 1 and all(isinstance(c, str) for c in continuations)
    if isinstance(resps, list) and resps and all(isinstance(r, str) for r in resps):
        out = resps[0]
    elif isinstance(resps, str):
        out = resps
    elif lls is not None and choices and len(lls) == len(continuations):
        out = continuations[max(range(len(lls)), key=lls.__getitem__)].strip()
    target = rec.get("target")
    ref = None if target is None else str(target)
    if ref is not None and choices and lls is not None and ref.strip().isdigit() and int(ref) < len(continuations):
        ref = continuations[int(ref)].strip()
    return inp, out, ref


def read_lm_eval(path: str | Path, *, name: str | None = None, system: str | None = None,
                 task: str | None = None) -> Pool:
    """lm-eval's ``--log_samples`` output as a Pool (module doc): a samples file, a model's folder, or an output
    folder holding several models and tasks. ``system``: the model's name where no results file records one;
    ``task``: the task of a samples file whose name does not say it (a details Parquet).

    >>> pool = read_lm_eval("runs/")  # doctest: +SKIP
    >>> pool.systems, pool.metrics, pool.column("task")[:2]  # doctest: +SKIP
    (('m0', 'm1'), ('acc', 'acc_norm', 'exact_match'), ('tiny_mc', 'tiny_mc'))
    """
    path = Path(path)
    if not path.exists():
        raise DataError(f"{path}: no such file or folder; check the path.")
    notes: list[str] = []
    runs = _newest(_runs(path, system, task, notes=notes), notes)
    hashes: dict[str, tuple[str, str]] = {}
    left_out: dict[tuple[str, str], str] = {}
    not_mean: dict[tuple[str, str], str] = {}
    shots: dict[str, dict[str, Any]] = {}
    records: list[Record] = []
    for run in runs:
        n_shot = ((run.results or {}).get("n-shot") or {}).get(run.task)
        if n_shot is not None:
            shots.setdefault(run.task, {})[run.system or ""] = n_shot
        records += _records(run, hashes, left_out, not_mean, n_shot)
    for line in notes:
        warn_data(f"{TOOL}: {line}")
    for task_, by in shots.items():
        if len(set(map(str, by.values()))) > 1:
            warn_data(f"{TOOL}: the runs of {task_} used different few-shot counts ("
                      + ", ".join(f"{s} {k}" for s, k in by.items()) + "), so their scores are not comparable")
    if left_out:
        warn_data(f"{TOOL}: metric(s) " + ", ".join(f"{m} of {t} (aggregation {a})" for (t, m), a in left_out.items())
                  + " log per-sample values for a corpus-level score, not per-item scores; left out")
    if not_mean:
        warn_data(f"{TOOL}: metric(s) " + ", ".join(f"{m} of {t} (aggregation {a})" for (t, m), a in not_mean.items())
                  + " are not averaged by lm-eval, so their per-item mean is not lm-eval's score for the task")
    return pool_from_records(records, name=name or str(path), tool=TOOL)


def _records(run: _Run, hashes: dict[str, tuple[str, str]], left_out: dict[tuple[str, str], str],
             not_mean: dict[tuple[str, str], str], n_shot: Any) -> list[Record]:
    """The run's records, one per document (its lines for several filters merged)."""
    by_doc: dict[str, dict[str, Any]] = {}
    for where, rec in _iter_rows(run.path):
        if not isinstance(rec, dict):
            raise DataError(f"{where}: expected a JSON object (one sample of lm-eval --log_samples), got "
                            f"{type(rec).__name__}.")
        if rec.get("doc_id") is None:
            raise DataError(f"{where}: no doc_id; each sample line of lm-eval --log_samples has one (is this an "
                            "lm-eval samples file?).", field="doc_id")
        doc_id = rec["doc_id"]
        item = f"{run.task}/{doc_id}"
        filt = str(rec.get("filter") or "none")
        names = rec.get("metrics")
        if not isinstance(names, list):  # a line that does not list its metrics: every key that is not a field
            names = [k for k in rec if k not in _NOT_METRICS]
        d = by_doc.setdefault(item, {"metrics": {}, "where": where, "rec": rec, "doc_id": doc_id})
        if filt == "none":
            d["rec"] = rec  # the texts of the default filter, where there is one
        for m in names:
            if m not in rec:
                continue
            v = rec[m]
            if not _is_number(v):
                left_out.setdefault((run.task, str(m)), _aggregation(run.results, run.task, str(m)))
                continue
            agg = _aggregation(run.results, run.task, str(m))
            if agg != "mean":
                not_mean.setdefault((run.task, str(m)), agg)
            d["metrics"][str(m) if filt == "none" else f"{m},{filt}"] = v
        h = rec.get("doc_hash")
        if isinstance(h, str):
            seen = hashes.setdefault(item, (h, where))
            if seen[0] != h:
                raise DataError(f"{TOOL}: item {item!r} is another document in {where} than in {seen[1]} (their "
                                "doc_hash differs: the runs used different versions of the task's data); read them "
                                "apart.", item_id=item)
    out = []
    for item, d in by_doc.items():
        inp, output, ref = _texts(d["rec"])
        meta = {"doc_id": d["doc_id"]}
        if n_shot is not None:
            meta["n_shot"] = n_shot
        out.append(Record(str(run.system), item, d["metrics"], input=inp, output=output, reference=ref,
                          group={"task": run.task}, meta=meta, where=d["where"]))
    return out


def describe_lm_eval(path: str | Path) -> dict[str, Any]:
    """``tool``, ``version`` (the results files' ``lm_eval_version``, with ``git_hash`` where recorded) and
    ``found`` (runs and tasks) of lm-eval output at ``path``."""
    path = Path(path)
    notes: list[str] = []
    runs = _runs(path, None, None, notes=notes)
    versions: dict[str, None] = {}
    for r in runs:
        if r.results is not None and r.results.get("lm_eval_version"):
            v = str(r.results["lm_eval_version"])
            if r.results.get("git_hash"):
                v += f" (git {r.results['git_hash']})"
            versions.setdefault(v, None)
    systems = list(dict.fromkeys(r.system for r in runs))
    tasks = sorted(dict.fromkeys(r.task for r in runs))

    def few(xs: Iterable[str], k: int = 4) -> str:
        xs = list(xs)
        return ", ".join(xs[:k]) + (", ..." if len(xs) > k else "")

    found = (f"{len(systems)} run{'s' if len(systems) != 1 else ''} ({few(map(str, systems))}) of "
             f"{len(tasks)} task{'s' if len(tasks) != 1 else ''} ({few(tasks)})")
    return {"tool": TOOL, "version": ", ".join(versions) or None, "found": found,
            "files": len(runs), "tasks": tasks, "systems": systems}


def lm_eval_scores(path: str | Path) -> dict[str, dict[str, dict[str, float]]]:
    """lm-eval's own task scores from the results files at ``path``: ``{model: {task: {"acc,none": 0.27, ...}}}``
    (the numbers of each results file's ``results`` section, stderr keys left out; the newest file per model and
    task), for comparing with the Pool's per-item means."""
    notes: list[str] = []
    runs = _newest(_runs(Path(path), None, None, notes=notes), notes)
    out: dict[str, dict[str, dict[str, float]]] = {}
    for r in runs:
        vals = ((r.results or {}).get("results") or {}).get(r.task) or {}
        out.setdefault(str(r.system), {})[r.task] = {
            k: float(v) for k, v in vals.items()
            if "," in k and "_stderr," not in k and isinstance(v, (int, float)) and not isinstance(v, bool)}
    return out

