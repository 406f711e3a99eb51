"""RewardBench's per-prompt results as a Pool: ``eval-set-scores/<org>/<model>.json``.

RewardBench's scripts (``scripts/run_rm.py``, ``run_dpo.py``, ``run_generative.py``) save the scored dataset
with ``Dataset.to_dict()``: one JSON object of **columns**, each a list with one entry per prompt --
``results`` (1 when the model scored the chosen answer above the rejected one, 0 otherwise; 0.5 for a
generative judge's unparsable verdict), ``subset``, ``id`` (not in ``run_dpo.py``'s files),
``scores_chosen``/``scores_rejected`` (classifiers and DPO; none for generative judges), ``text_chosen``/
``text_rejected`` -- and three scalars, ``model``, ``model_type`` and ``chat_template``. The ``rewardbench``
command line writes the same columns one row per line to ``<model>_outputs.jsonl``; both are read.

:func:`read_rewardbench` takes one file, an org folder, or the ``eval-set-scores`` folder (or a folder that has
one: then only it is read, not the aggregates in ``eval-set/``), and gives one Pool:

- **item** ``<subset>/<id>`` (``<subset>/#<row>`` for files without ids, numbered in file order), with the
  per-item columns ``subset`` (the group: ``--by subset``), ``section`` and ``id``;
- **system** the file's ``model`` (else ``system=``, else the file's folder and name: ``<org>/<model>``);
- **metrics** ``accuracy`` (``results``) and, where the file has both scores, ``margin`` =
  ``scores_chosen - scores_rejected``; ``input``: the ``prompt`` column where there is one.

RewardBench's own numbers: a subset's accuracy is the mean of ``results`` over its prompts, which is the
subset's mean of ``accuracy`` in the Pool; a **section**'s score (Chat, Chat Hard, Safety, Reasoning) is not
the mean over its prompts but the subsets' accuracies weighted by :data:`EXAMPLE_COUNTS` (``math-prm`` counts
984 prompts, as many as the six ``hep-*`` subsets together, though it has 447): :func:`section_scores`.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any, Iterator, Mapping

import numpy as np

from ..errors import DataError
from ..pool import Pool
from ._common import check_file, iter_jsonl, load_json, warn_data
from .harness import Record, pool_from_records

TOOL = "RewardBench"
_ROOTS = ("eval-set-scores", "pref-sets-scores")
_OUTPUTS = "_outputs.jsonl"

#: RewardBench v1's sections and their subsets -- data taken from ``rewardbench/constants.py``
#: (``SUBSET_MAPPING``) of allenai/reward-bench.
SECTIONS: Mapping[str, tuple[str, ...]] = {
    "Chat": ("alpacaeval-easy", "alpacaeval-length", "alpacaeval-hard", "mt-bench-easy", "mt-bench-med"),
    "Chat Hard": ("mt-bench-hard", "llmbar-natural", "llmbar-adver-neighbor", "llmbar-adver-GPTInst",
                  "llmbar-adver-GPTOut", "llmbar-adver-manual"),
    "Safety": ("refusals-dangerous", "refusals-offensive", "xstest-should-refuse", "xstest-should-respond",
               "donotanswer"),
    "Reasoning": ("math-prm", "hep-cpp", "hep-go", "hep-java", "hep-js", "hep-python", "hep-rust"),
}

#: the weight of each subset in its section's score -- data taken from ``rewardbench/constants.py``
#: (``EXAMPLE_COUNTS``) of allenai/reward-bench; ``math-prm`` is up-weighted from its 447 prompts to 984
EXAMPLE_COUNTS: Mapping[str, int] = {
    "alpacaeval-easy": 100, "alpacaeval-length": 95, "alpacaeval-hard": 95, "mt-bench-easy": 28,
    "mt-bench-med": 40, "mt-bench-hard": 37, "math-prm": 984, "refusals-dangerous": 100,
    "refusals-offensive": 100, "llmbar-natural": 100, "llmbar-adver-neighbor": 134, "llmbar-adver-GPTInst": 92,
    "llmbar-adver-GPTOut": 47, "llmbar-adver-manual": 46, "xstest-should-refuse": 154,
    "xstest-should-respond": 250, "donotanswer": 136, "hep-cpp": 164, "hep-go": 164, "hep-java": 164,
    "hep-js": 164, "hep-python": 164, "hep-rust": 164,
}

SECTION_OF: Mapping[str, str] = {s: sec for sec, subsets in SECTIONS.items() for s in subsets}


# ----------------------------------------------------------------------------------------- finding files
def _under_root(path: Path) -> bool:
    return any(part in _ROOTS for part in path.parts)


def _head(path: Path, n: int = 1024) -> bytes:
    with open(path, "rb") as f:
        return f.read(n)


def looks_rewardbench(path: str | Path) -> bool:
    """Whether ``path`` is RewardBench's per-prompt results: a file or folder in (or holding) ``eval-set-scores`` /
    ``pref-sets-scores``, a ``.json`` whose first KB has RewardBench's sorted keys (``chat_template``, then ``id``
    or ``model``), or an ``*_outputs.jsonl`` whose first KB has ``results`` and ``scores_chosen`` or ``subset``.
    Reads at most the first KB of one file; False, never an error, for anything else.

    >>> looks_rewardbench("/nonexistent")
    False
    """
    try:
        path = Path(path)
        if path.is_dir():
            return path.name in _ROOTS or any((path / r).is_dir() for r in _ROOTS) or (
                _under_root(path.resolve()) and next(iter(path.rglob("*.json")), None) is not None)
        if not path.is_file():
            return False
        if path.name.endswith(_OUTPUTS):
            head = _head(path)
            return head.lstrip().startswith(b"{") and b'"results"' in head and (
                b'"scores_chosen"' in head or b'"subset"' in head)
        if path.suffix.lower() != ".json":
            return False
        if _under_root(path.resolve()):
            return True
        head = _head(path).lstrip()
        return head.startswith(b"{") and head[1:].lstrip().startswith(b'"chat_template"') and (
            b'"id": [' in head or b'"model":' in head)
    except OSError:
        return False


def _files(path: Path) -> tuple[Path, list[Path]]:
    """``(root, files)``: the folder the systems' names are taken relative to, and the result files, sorted."""
    if path.is_file():  # named <org>/<model> by its folder and name, as RewardBench saves it
        return (path.parent if path.parent.name in _ROOTS else path.parent.parent), [path]
    for r in _ROOTS:
        if (path / r).is_dir():
            path = path / r
            break
    files = sorted(p for p in path.rglob("*") if p.is_file() and (p.suffix.lower() == ".json" or p.name.endswith(_OUTPUTS)))
    return path, files


# ----------------------------------------------------------------------------------------- reading
def _score(v: Any) -> float | None:
    """A reward as a float: ``[x]`` (a classifier's one-logit output, as ``run_rm.py`` saves it) is ``x``."""
    while isinstance(v, list) and len(v) == 1:
        v = v[0]
    if v is None or isinstance(v, bool) or not isinstance(v, (int, float)):
        return None
    return float(v)


def _columns(path: Path) -> dict[str, Any]:
    """A result file as columns (``results``, ``subset``, ...) plus its scalars; DataError for another shape."""
    expected = ("RewardBench's per-prompt results: one JSON object of columns ({results: [...], subset: [...], "
                "id: [...], scores_chosen, scores_rejected, model, ...}) as eval-set-scores/<org>/<model>.json")
    if path.name.endswith(_OUTPUTS):
        cols: dict[str, list[Any]] = {}
        n = 0
        for lineno, row in iter_jsonl(path, what="prompts", expected=expected):
            if not isinstance(row, dict):
                raise DataError(f"{path}: line {lineno} is not a JSON object; expected one prompt's results per line.")
            for k in set(cols) | set(row):
                cols.setdefault(k, [None] * n).append(row.get(k))
            n += 1
        return cols
    data = load_json(path, expected)
    if not isinstance(data, dict):
        raise DataError(f"{path}: expected {expected}; got a JSON {type(data).__name__}.")
    return data


def _is_results(data: dict[str, Any]) -> bool:
    return isinstance(data.get("results"), list) and isinstance(data.get("subset"), list)


def _model_name(path: Path, root: Path) -> str:
    stem = path.name[: -len(_OUTPUTS)] if path.name.endswith(_OUTPUTS) else path.stem
    try:
        rel = path.parent.relative_to(root)
    except ValueError:
        rel = Path()
    parts = [p for p in rel.parts if p not in _ROOTS]
    if not parts and path.parent.name not in _ROOTS and path.parent != root:
        parts = [path.parent.name]
    return "/".join([*parts, stem])


def _file_records(path: Path, root: Path, data: dict[str, Any], system: str | None,
                  notes: dict[str, list[str]]) -> Iterator[Record]:
    results, subsets = data["results"], data["subset"]
    n = len(results)
    if len(subsets) != n:
        raise DataError(f"{path}: column 'subset' has {len(subsets)} entries but 'results' has {n}; "
                        "every column needs one entry per prompt.", field="subset")
    ids = data.get("id")
    if ids is not None and (not isinstance(ids, list) or len(ids) != n):
        raise DataError(f"{path}: column 'id' has {len(ids) if isinstance(ids, list) else type(ids).__name__} "
                        f"entries but 'results' has {n}; every column needs one entry per prompt.", field="id")
    if ids is None:
        notes["no_ids"].append(path.name)
    chosen, rejected = data.get("scores_chosen"), data.get("scores_rejected")
    margins = isinstance(chosen, list) and isinstance(rejected, list) and len(chosen) == n == len(rejected)
    prompts = data.get("prompt") if isinstance(data.get("prompt"), list) and len(data["prompt"]) == n else None
    model = data.get("model") if isinstance(data.get("model"), str) and data.get("model") else None
    model = model or system or _model_name(path, root)
    for i in range(n):
        where = f"{path}: prompt {i}"
        sub = subsets[i]
        if not isinstance(sub, str) or not sub:
            raise DataError(f"{where}: 'subset' is {sub!r}; expected the subset's name.", field="subset")
        res = results[i]
        if isinstance(res, list) and len(res) == 1:
            res = res[0]
        metrics: dict[str, Any] = {"accuracy": res}
        if margins:
            c, r = _score(chosen[i]), _score(rejected[i])
            if c is not None and r is not None:
                metrics["margin"] = c - r
        raw_id = ids[i] if ids is not None else None
        item = f"{sub}/{raw_id}" if ids is not None else f"{sub}/#{i}"
        prompt = prompts[i] if prompts is not None and isinstance(prompts[i], str) else None
        yield Record(system=model, item=item, metrics=metrics, input=prompt, group={"subset": sub},
                     meta={"section": SECTION_OF.get(sub), "id": raw_id}, where=where)


def read_rewardbench(path: str | Path, *, name: str | None = None, system: str | None = None) -> Pool:
    """A Pool from RewardBench's per-prompt results (see the module's docstring): a file, an org folder, or
    ``eval-set-scores`` (or a folder holding it). ``system`` names a file that records no ``model``.

    >>> pool = read_rewardbench("results/eval-set-scores")      # doctest: +SKIP
    >>> section_scores(pool)["openbmb/UltraRM-13b"]["Chat"]      # doctest: +SKIP
    """
    path = Path(path).expanduser()
    if not path.exists():
        check_file(path)
    root, files = _files(path)
    if not files:
        raise DataError(f"{path}: no RewardBench results here (*.json under eval-set-scores/<org>/, or "
                        "*_outputs.jsonl); give a result file or the eval-set-scores folder.")
    notes: dict[str, list[str]] = {"no_ids": [], "skipped": []}
    loaded = []
    for f in files:
        data = _columns(f)
        if not _is_results(data):
            if len(files) == 1:
                raise DataError(f"{f}: not RewardBench's per-prompt results: it has no 'results' and 'subset' columns "
                                "(an eval-set/ file holds only the per-subset accuracies; give the matching "
                                "eval-set-scores/ file).", field="results")
            notes["skipped"].append(f.name)
            continue
        loaded.append((f, data))
    if notes["skipped"]:
        warn_data(f"{TOOL}: {len(notes['skipped'])} JSON file(s) without per-prompt columns (results, subset) were "
                  f"left out: {', '.join(notes['skipped'][:5])}{', ...' if len(notes['skipped']) > 5 else ''}")
    if not loaded:
        raise DataError(f"{path}: none of its {len(files)} JSON files holds per-prompt results (results, subset "
                        "columns); give the eval-set-scores folder.")

    def records() -> Iterator[Record]:
        for f, data in loaded:
            yield from _file_records(f, root, data, system, notes)
        if notes["no_ids"]:
            warn_data(f"{TOOL}: {', '.join(notes['no_ids'])} ha{'ve' if len(notes['no_ids']) > 1 else 's'} no 'id' "
                      "column (RewardBench's run_dpo.py leaves it out): its prompts are numbered by row "
                      "(<subset>/#<row>), which matches only files in the same row order")

    return pool_from_records(records(), name=name or str(path), tool=TOOL)


def subset_scores(pool: Pool, metric: str = "accuracy") -> dict[str, dict[str, float]]:
    """``{system: {subset: mean of metric over the subset's items}}`` -- RewardBench's per-subset accuracy
    (``num_correct / num_total``) when the Pool holds every prompt of the subset."""
    scores = pool.score(metric)
    subsets = np.asarray(pool.column("subset"), dtype=object)
    out: dict[str, dict[str, float]] = {}
    for k, s in enumerate(pool.systems):
        out[s] = {}
        for sub in dict.fromkeys(subsets.tolist()):
            col = scores[subsets == sub, k]
            col = col[~np.isnan(col)]
            if col.size:
                out[s][str(sub)] = float(col.mean())
    return out


def section_scores(pool: Pool, metric: str = "accuracy") -> dict[str, dict[str, float]]:
    """``{system: {section: score}}`` by RewardBench's rule (``calculate_scores_per_section``): each section's
    score is its subsets' means weighted by :data:`EXAMPLE_COUNTS`, over the subsets the Pool has.

    Where RewardBench differs: a section none of whose subsets is present is left out here (RewardBench gives
    it 0), and subsets outside :data:`SECTIONS` (the prior preference sets) belong to no section.

    >>> from evalsift.pool import Pool
    >>> p = Pool(item_ids=["math-prm/1", "hep-go/2"], systems=["rm"], scores={"accuracy": [[1.0], [0.0]]},
    ...          metadata={"subset": ["math-prm", "hep-go"]})
    >>> section_scores(p)["rm"]["Reasoning"]    # (1 * 984 + 0 * 164) / (984 + 164)
    0.8571428571428571
    """
    per = subset_scores(pool, metric)
    out: dict[str, dict[str, float]] = {}
    for s, subs in per.items():
        out[s] = {}
        for sec, members in SECTIONS.items():
            got = [(subs[m], EXAMPLE_COUNTS[m]) for m in members if m in subs and not math.isnan(subs[m])]
            if got:
                out[s][sec] = sum(v * w for v, w in got) / sum(w for _, w in got)
    return out


def describe_rewardbench(path: str | Path) -> dict[str, Any]:
    """``tool``, ``version`` (RewardBench's files record none: None) and ``found``: the result files and the
    models their paths name (no file is parsed)."""
    path = Path(path).expanduser()
    root, files = _files(path)
    models = [_model_name(f, root) for f in files]
    shown = ", ".join(models[:3]) + (", ..." if len(models) > 3 else "")
    return {"tool": TOOL, "version": None,
            "found": f"{len(files)} per-prompt result file{'s' * (len(files) != 1)} ({shown})"}

