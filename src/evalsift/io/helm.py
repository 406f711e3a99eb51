"""HELM's run folders as a Pool: ``per_instance_stats.json`` (streamed), ``run_spec.json``, ``scenario_state.json``.

HELM (``helm-run``) writes one folder per run, ``benchmark_output/runs/<suite>/<run>/``, named after the run
spec (``mmlu:subject=anatomy,method=multiple_choice_joint,model=openai_gpt2``). :func:`read_helm` takes a run
folder, a file inside one, or any folder above runs (a suite, ``runs/``, ``benchmark_output/``: run folders
up to three levels down) and gives one Pool:

- **item** ``<benchmark>/<instance id>``, with ``@<perturbation name>`` for a perturbed copy of an instance
  (HELM's data augmentation: ``mmlu:subject=anatomy/id12@typos``); the unperturbed instance has no suffix.
  ``benchmark`` is the run's name without its ``model=`` and ``model_deployment=`` arguments, so every model's
  run of one scenario shares its items; it is the group column (``--by benchmark``). Per-item columns:
  ``instance_id``, ``split``, ``sub_split``, ``perturbation``.
- **system** the model the run spec names (``adapter_spec.model``, else ``adapter_spec.model_deployment``);
  ``system=`` names runs that have no run spec.
- **metrics** every per-instance stat's name (``exact_match``, ``quasi_exact_match``, ``num_prompt_tokens``,
  ...). A stat's per-instance value is its ``mean`` (``sum / count``; NaN for a stat with count 0). Only the
  instances of one split per run are read: ``split=`` names it, else ``test`` where the run has it, else the
  run's only split;
  the stat's ``sub_split`` and the instance's perturbation are per-item columns and part of the item, so no
  stat name needs them. **Train trials** (``train_trial_index``, HELM's ``num_train_trials`` re-draws of
  the in-context examples) are averaged per item. HELM's ``stats.json`` takes each trial's mean over the
  instances and then the mean of those trial means (``Metric.evaluate``: ``merge_stat(global_stats,
  stat.take_mean())`` per trial); when every trial has every instance, as HELM runs them, that is the mean
  over items of the per-item trial averages, so a system's mean of a metric over the items equals
  ``stats.json``'s ``mean`` for that stat (name, split, no perturbation, no sub_split). A stat that two
  metrics wrote for the same instance and trial is kept once (the first), with a note.
- **texts** from ``scenario_state.json`` when it is there (streamed as well): ``instance.input.text``, the first
  reference tagged ``correct``, and the first completion of the trial-0 request (a multiple-choice letter is
  mapped to its choice's text through the request's ``output_mapping``).

``per_instance_stats.json`` can be several GB: it is read one entry at a time with ``ijson`` (``pip install
'evalsift[harness]'``), never whole; what is kept is one float per (item, metric) and the texts.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any, BinaryIO, Iterator

import numpy as np

from ..errors import DataError, missing_dependency
from ..pool import Pool
from ._common import _open_binary, load_json, warn_data
from .harness import Record, pool_from_records

TOOL = "HELM"
_PIS = ("per_instance_stats.json", "per_instance_stats.json.gz")
_STATE = ("scenario_state.json", "scenario_state.json.gz")
_MODEL_ARGS = ("model=", "model_deployment=")
_MAX_DEPTH = 3


def _ijson() -> Any:
    try:
        import ijson  # optional dependency (evalsift[harness]), imported when a HELM file is read
    except ImportError:
        raise missing_dependency("ijson", "harness", "Reading HELM's per_instance_stats.json (streamed)") from None
    return ijson


# ----------------------------------------------------------------------------------------- finding runs
def _first(folder: Path, names: tuple[str, ...]) -> Path | None:
    for n in names:
        p = folder / n
        if p.is_file():
            return p
    return None


def _is_run(folder: Path) -> bool:
    return _first(folder, _PIS) is not None


def _run_folders(path: Path) -> list[Path]:
    """The run folders at or below ``path`` (up to three levels down), sorted; a file stands for its folder."""
    if path.is_file():
        return [path.parent] if _is_run(path.parent) else []
    if _is_run(path):
        return [path]
    found: set[Path] = set()
    pattern = ""
    for _ in range(_MAX_DEPTH):
        pattern += "*/"
        for name in _PIS:
            found.update(p.parent for p in path.glob(pattern + name) if p.is_file())
        if found:  # runs sit at one depth (runs/<suite>/<run>); a deeper copy would be another tree
            break
    return sorted(found)


def looks_helm(path: str | Path) -> bool:
    """Whether ``path`` is a HELM run folder, a file in one, or a folder with run folders up to three levels down.

    Looks only at names (``per_instance_stats.json``; beside it ``run_spec.json`` for a file other than it);
    never reads a file. False, never an error, for anything else.

    >>> looks_helm("/nonexistent")
    False
    """
    try:
        path = Path(path)
        if path.is_file():
            if path.name in _PIS:
                return True
            if path.name in ("run_spec.json", "stats.json", *_STATE):
                return _is_run(path.parent)
            return False
        if not path.is_dir():
            return False
        if _is_run(path):
            return True
        pattern = ""
        for _ in range(_MAX_DEPTH):
            pattern += "*/"
            for name in _PIS:
                if next(iter(path.glob(pattern + name)), None) is not None:
                    return True
        return False
    except OSError:
        return False


# ----------------------------------------------------------------------------------------- run spec
def _benchmark(run_name: str) -> str:
    """The run's name without the model arguments: ``mmlu:subject=anatomy,model=openai_gpt2`` -> ``mmlu:subject=anatomy``.

    >>> _benchmark("mmlu:subject=anatomy,method=multiple_choice_joint,model=openai_gpt2")
    'mmlu:subject=anatomy,method=multiple_choice_joint'
    >>> _benchmark("narrative_qa:model=openai_gpt2")
    'narrative_qa'
    """
    head, sep, args = run_name.partition(":")
    if not sep:
        return run_name
    kept = [a for a in args.split(",") if a and not a.startswith(_MODEL_ARGS)]
    return f"{head}:{','.join(kept)}" if kept else head


def _model_from_name(run_name: str) -> str | None:
    for a in run_name.partition(":")[2].split(","):
        if a.startswith("model="):
            return a[len("model="):] or None
    return None


def _run_info(folder: Path, system: str | None) -> tuple[str, str, dict[str, Any]]:
    """``(run name, model, run spec)`` of a run folder; DataError when no model can be named."""
    spec_path = folder / "run_spec.json"
    spec: dict[str, Any] = {}
    if spec_path.is_file():
        got = load_json(spec_path, "HELM's RunSpec: {name, scenario_spec, adapter_spec, metric_specs, ...}")
        if not isinstance(got, dict):
            raise DataError(f"{spec_path}: expected a JSON object (HELM's RunSpec), got {type(got).__name__}.")
        spec = got
    name = spec.get("name") if isinstance(spec.get("name"), str) else folder.name
    adapter = spec.get("adapter_spec") if isinstance(spec.get("adapter_spec"), dict) else {}
    model = adapter.get("model") or adapter.get("model_deployment") or system
    if not model:
        where = spec_path if spec_path.is_file() else folder
        raise DataError(f"{where}: the run names no model (run_spec.json's adapter_spec.model / model_deployment"
                        f"{' is missing' if not spec else ' are empty'}); give it with system='NAME' "
                        "(--system NAME on the command line).", field="adapter_spec.model")
    return name, str(model), spec


# ----------------------------------------------------------------------------------------- streaming
def _items(path: Path, prefix: str, what: str) -> Iterator[Any]:
    """The JSON values at ``prefix`` of the file (``item``: the top-level list's elements), one at a time."""
    ijson = _ijson()
    f: BinaryIO = _open_binary(path)
    try:
        try:
            yield from ijson.items(f, prefix, use_float=True)
        except ijson.JSONError as e:
            text = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
            hint = (" (HELM writes Python's json, which spells a non-finite number Infinity or NaN, and strict JSON "
                    "has no such number: replace it with null)") if "invalid char" in text else ""
            raise DataError(f"{path}: not valid JSON ({text}){hint}; expected {what}.") from None
        except OSError as e:
            raise DataError(f"{path}: cannot read the file ({e}).") from None
    finally:
        f.close()


class _Grid:
    """One run's per-instance values: rows (instances) x metrics, summed over train trials, growing as it reads.

    ``seen[r, m]`` has bit ``t`` set once trial ``t`` gave metric ``m`` for row ``r`` (trials >= 64 share bit 63);
    ``total[r, m]`` sums the trials' values (NaN where a stat had no value)."""

    def __init__(self) -> None:
        self.rows: dict[tuple[str, str], int] = {}
        self.metrics: dict[str, int] = {}
        self.total = np.zeros((64, 8))
        self.seen = np.zeros((64, 8), dtype=np.uint64)
        self.uneven = False  # whether some stats have fewer train trials than others (set by finish)

    def row(self, key: tuple[str, str]) -> int:
        r = self.rows.get(key)
        if r is None:
            r = self.rows[key] = len(self.rows)
            if r >= self.total.shape[0]:
                self._grow(rows=2 * self.total.shape[0])
        return r

    def metric(self, name: str) -> int:
        m = self.metrics.get(name)
        if m is None:
            m = self.metrics[name] = len(self.metrics)
            if m >= self.total.shape[1]:
                self._grow(cols=2 * self.total.shape[1])
        return m

    def finish(self) -> tuple[np.ndarray, np.ndarray]:
        """``(values, present)``: each (row, metric)'s mean over the trials that gave it (NaN for none, or for a
        stat without a value) and whether any trial gave it; the sums are dropped (the grid is spent)."""
        n, k = len(self.rows), len(self.metrics)
        seen = self.seen[:n, :k]
        if hasattr(np, "bitwise_count"):  # numpy >= 2.0
            counts = np.bitwise_count(seen)
        else:
            counts = np.zeros(seen.shape, dtype=np.uint8)
            bits = seen.copy()
            while bits.any():
                counts += (bits & np.uint64(1)).astype(np.uint8)
                bits >>= np.uint64(1)
        present = counts > 0
        self.uneven = bool(present.any()) and int(counts[present].min()) != int(counts[present].max())
        values = self.total[:n, :k] / np.maximum(counts, 1)
        values[~present] = np.nan
        self.total = self.seen = np.zeros((0, 0))  # free the sums before the Pool is built
        return values, present

    def _grow(self, rows: int | None = None, cols: int | None = None) -> None:
        r0, c0 = self.total.shape
        r, c = rows or r0, cols or c0
        total = np.zeros((r, c))
        seen = np.zeros((r, c), dtype=np.uint64)
        total[:r0, :c0] = self.total
        seen[:r0, :c0] = self.seen
        self.total, self.seen = total, seen


def _stat_value(stat: dict[str, Any], where: str) -> float:
    """A per-instance Stat's value: its ``mean``, else ``sum / count``; NaN for count 0."""
    v = stat.get("mean")
    if v is None:
        count, total = stat.get("count", 0), stat.get("sum")
        if not count or total is None:
            return math.nan
        v = total / count
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise DataError(f"{where}: the stat's mean is {v!r}, not a number; HELM writes numbers here.", field="mean")
    return float(v)


def _perturbation_tag(p: Any, names: dict[str, str]) -> str:
    """The item suffix of a perturbation: its ``name``; a second description under one name gets its fields too."""
    if not p:
        return ""
    if not isinstance(p, dict):
        return str(p)
    name = str(p.get("name") or "perturbed")
    full = json.dumps(p, sort_keys=True)
    first = names.setdefault(name, full)
    if first == full:
        return name
    extra = ",".join(f"{k}={v}" for k, v in sorted(p.items()) if k not in ("name", "robustness", "fairness"))
    return f"{name}({extra})"


def _read_stats(path: Path, grid: _Grid, meta: dict[int, tuple[str, str | None, str | None, str | None]],
                pert_names: dict[str, str], split: str | None, notes: dict[str, Any]) -> None:
    """Stream one ``per_instance_stats.json`` into ``grid``; ``meta[row]``: (instance id, split, sub_split,
    perturbation)."""
    expected = ("HELM's per-instance stats: a JSON list of {instance_id, train_trial_index, stats: [{name, count, sum, "
                "mean, ...}]}")
    for k, entry in enumerate(_items(path, "item", expected)):
        where = f"{path}: entry {k}"
        if not isinstance(entry, dict) or "instance_id" not in entry or not isinstance(entry.get("stats"), list):
            raise DataError(f"{where} is not a PerInstanceStats object ({{instance_id, train_trial_index, stats: [...]}})"
                            "; point at a per_instance_stats.json that HELM wrote.", field="stats")
        iid = str(entry["instance_id"])
        where = f"{path}: entry {k} (instance {iid!r})"
        trial = entry.get("train_trial_index", 0)
        if not isinstance(trial, int) or isinstance(trial, bool) or trial < 0:
            raise DataError(f"{where}: train_trial_index is {trial!r}; expected a whole number >= 0.",
                            field="train_trial_index")
        pert = entry.get("perturbation")
        tag = _perturbation_tag(pert, pert_names)
        stats = entry["stats"]
        row = None
        for j, stat in enumerate(stats):
            name = stat.get("name") if isinstance(stat, dict) else None
            if not isinstance(name, dict) or not isinstance(name.get("name"), str):
                raise DataError(f"{where}: stat {j} has no name ({{'name': {{'name': ..., 'split': ...}}}}); "
                                "point at a per_instance_stats.json that HELM wrote.", field="stats.name")
            s_split = name.get("split")
            notes["all"].add(s_split)
            if split is not None and s_split != split:
                continue
            notes["splits"].add(s_split)
            if row is None:
                row = grid.row((iid, tag))
                if row not in meta:
                    sub = name.get("sub_split")
                    meta[row] = (iid, s_split, sub, pert.get("name") if isinstance(pert, dict) else (pert or None))
                elif meta[row][1] != s_split:
                    notes["mixed"].add(iid)
            m = grid.metric(name["name"])
            count = stat.get("count", 1)
            if isinstance(count, (int, float)) and count > 1:
                notes["multi"].add(name["name"])
            bit = np.uint64(1) << np.uint64(min(trial, 63))
            if grid.seen[row, m] & bit:
                notes["dups"].add(name["name"])
                continue
            grid.seen[row, m] |= bit
            v = _stat_value(stat, f"{where}: stat {name['name']!r}")
            grid.total[row, m] += v  # NaN stays NaN: a trial without a value leaves the item without one


def _texts(path: Path, rows: dict[tuple[str, str], int], pert_names: dict[str, str]
           ) -> dict[int, tuple[str | None, str | None, str | None]]:
    """``row -> (input, reference, output)`` from a streamed ``scenario_state.json`` (trial 0's request)."""
    out: dict[int, tuple[str | None, str | None, str | None]] = {}
    names = dict(pert_names)  # the same tags as the stats gave, never new ones registered by the texts
    expected = "HELM's ScenarioState: {adapter_spec, request_states: [{instance, train_trial_index, request, result}]}"
    for k, rs in enumerate(_items(path, "request_states.item", expected)):
        if not isinstance(rs, dict) or not isinstance(rs.get("instance"), dict):
            raise DataError(f"{path}: request_states[{k}] is not a RequestState with an instance; point at a "
                            "scenario_state.json that HELM wrote.", field="instance")
        if rs.get("train_trial_index", 0) != 0 or rs.get("reference_index") is not None \
                or rs.get("request_mode") not in (None, "original"):
            continue
        inst = rs["instance"]
        r = rows.get((str(inst.get("id")), _perturbation_tag(inst.get("perturbation"), names)))
        if r is None or r in out:
            continue
        inp = inst.get("input")
        text = inp.get("text") if isinstance(inp, dict) else None
        ref = None
        for reference in inst.get("references") or []:
            if isinstance(reference, dict) and "correct" in (reference.get("tags") or []):
                o = reference.get("output")
                ref = o.get("text") if isinstance(o, dict) else None
                break
        output = None
        result = rs.get("result")
        if isinstance(result, dict) and result.get("completions"):
            first = result["completions"][0]
            output = first.get("text") if isinstance(first, dict) else None
            mapping = rs.get("output_mapping")
            if isinstance(output, str) and isinstance(mapping, dict) and output.strip() in mapping:
                output = mapping[output.strip()]
        out[r] = (text if isinstance(text, str) else None, ref, output)
    return out


def _choose_split(splits: set[str | None], path: Path) -> str | None:
    """A run's default split: ``test``, else its only split; DataError for several without ``test``."""
    named = sorted(str(s) for s in splits)
    if "test" in splits or not splits:
        return "test"
    if len(splits) == 1:
        return next(iter(splits))
    raise DataError(f"{path}: the run's instances come from several splits ({', '.join(named)}) and none is 'test'; "
                    "name one with read_helm(..., split='NAME').", field="split")


def read_helm(path: str | Path, *, name: str | None = None, system: str | None = None,
              split: str | None = None) -> Pool:
    """A Pool from HELM run folders: a run folder (``run_spec.json`` + ``per_instance_stats.json``
    [+ ``scenario_state.json``]) or a folder above many (``runs/<suite>/``); see the module's docstring.

    ``split``: the instances' split to read (default: per run, ``test``, or the run's only split); ``system``: the
    model of runs without a ``run_spec.json``. The big files are streamed (``ijson``).

    >>> pool = read_helm("benchmark_output/runs/v1")          # doctest: +SKIP
    >>> pool.score("exact_match").mean(axis=0)                 # doctest: +SKIP
    """
    path = Path(path).expanduser()
    if not path.exists():
        raise DataError(f"{path}: no such file or folder; give a HELM run folder or a suite folder (runs/<suite>).")
    runs = _run_folders(path)
    if not runs:
        raise DataError(f"{path}: no HELM run here (a folder with per_instance_stats.json, up to {_MAX_DEPTH} levels "
                        "down); give a run folder of benchmark_output/runs/<suite>/ or the suite folder.")
    _ijson()
    infos = [(run, *_run_info(run, system)) for run in runs]
    # the stats are read once; the split each run is read in is known only then (test, else the run's only split)
    notes_all: dict[str, Any] = {"dups": set(), "multi": set(), "mixed": set()}
    per_run = []
    for run, run_name, model, _spec in infos:
        grid, meta, pert_names = _Grid(), {}, {}
        notes = {"splits": set(), "all": set(), "dups": set(), "multi": set(), "mixed": set()}
        _read_stats(_first(run, _PIS), grid, meta, pert_names, split, notes)  # type: ignore[arg-type]
        for k in ("dups", "multi", "mixed"):
            notes_all[k] |= notes[k]
        per_run.append((run, run_name, model, grid, meta, pert_names, notes))
    if split is not None and not any(n["splits"] for *_, n in per_run):
        found = sorted(str(s) for s in set().union(*(n["all"] for *_, n in per_run)))
        raise DataError(f"{path}: no instance of split {split!r}; the runs have {', '.join(found) or 'no stats'}.",
                        field="split")
    chosen = [split if split is not None else _choose_split(n["splits"], run) for run, *_, n in per_run]
    left: dict[str, int] = {}
    for (_run, _name, _model, grid, meta, *_), c in zip(per_run, chosen):
        for r in grid.rows.values():
            if meta[r][1] != c:
                left[str(meta[r][1])] = left.get(str(meta[r][1]), 0) + 1
    _notes(notes_all)
    if left:
        warn_data(f"{TOOL}: read the {'/'.join(sorted({str(c) for c in chosen}))} split; instances of other splits "
                  f"are left out ({', '.join(f'{k}: {v}' for k, v in sorted(left.items()))}); split='NAME' reads "
                  "another")
    return pool_from_records(_records(per_run, chosen), name=name or str(path), tool=TOOL)


def _notes(notes: dict[str, Any]) -> None:
    if notes["dups"]:
        warn_data(f"{TOOL}: stat(s) {', '.join(sorted(notes['dups']))} appear twice for one instance and trial "
                  "(written by two metrics); the first is kept")
    if notes["multi"]:
        warn_data(f"{TOOL}: stat(s) {', '.join(sorted(notes['multi']))} hold more than one value per instance "
                  "(count > 1); the item's value is their mean, while stats.json weights instances by count")
    if notes["mixed"]:
        warn_data(f"{TOOL}: {len(notes['mixed'])} instance(s) have stats of more than one split; the first split "
                  "is the item's split column")


def _records(per_run: list[tuple], splits: list[str | None]) -> Iterator[Record]:
    for (run, run_name, model, grid, meta, pert_names, _notes_run), split in zip(per_run, splits):
        bench = _benchmark(run_name)
        rows = {key: r for key, r in grid.rows.items() if meta[r][1] == split}
        state = _first(run, _STATE)
        texts = _texts(state, rows, pert_names) if state is not None and rows else {}
        metric_names = list(grid.metrics)
        values, present = grid.finish()
        if grid.uneven:
            warn_data(f"{TOOL}: {run.name}: some instances have stats from fewer train trials than others; each "
                      "item averages its own trials, while stats.json averages the trials' means")
        pis = _first(run, _PIS)
        for (iid, tag), r in rows.items():
            got = np.flatnonzero(present[r])
            metrics = {metric_names[m]: (None if math.isnan(values[r, m]) else float(values[r, m])) for m in got}
            text, ref, out = texts.get(r, (None, None, None))
            _, s_split, sub, pert = meta[r]
            yield Record(system=model, item=f"{bench}/{iid}" + (f"@{tag}" if tag else ""), metrics=metrics,
                         input=text, output=out, reference=ref, group={"benchmark": bench},
                         meta={"instance_id": iid, "split": s_split, "sub_split": sub, "perturbation": pert},
                         where=f"{pis}: instance {iid!r}" + (f" ({tag})" if tag else ""))


def describe_helm(path: str | Path) -> dict[str, Any]:
    """``tool``, ``version`` (HELM's run folders record none: None) and ``found``: the runs, their models and
    scenarios, read from the run specs (the big files are not opened)."""
    path = Path(path).expanduser()
    runs = _run_folders(path)
    models: dict[str, None] = {}
    benches: dict[str, None] = {}
    for run in runs:
        try:
            run_name, model, _ = _run_info(run, None)
        except DataError:
            run_name, model = run.name, _model_from_name(run.name) or "?"
        models.setdefault(model, None)
        benches.setdefault(_benchmark(run_name), None)
    return {"tool": TOOL, "version": None,
            "found": f"{len(runs)} run{'s' * (len(runs) != 1)} of {len(models)} model{'s' * (len(models) != 1)} "
                     f"({_few(models)}) on {len(benches)} scenario{'s' * (len(benches) != 1)} ({_few(benches)})"}


def _few(names: dict[str, None], k: int = 3) -> str:
    shown = list(names)[:k]
    return ", ".join(shown) + (", ..." if len(names) > k else "")
