"""AlpacaEval: ``model_outputs/<model>.json`` files (plus optional instructions and judge preferences).

A folder with::

    model_outputs/<model>.json            [{dataset, instruction, output, generator}, ...]
    instructions.jsonl                    optional: {instruction_idx, dataset, instruction} per line
    preferences_all_annotators.csv.gz     optional: judge preferences of many models vs a baseline

Items are instructions. With ``instructions.jsonl`` they are its rows (id = ``instruction_idx``);
without it they are the first model file's rows (id = row index), followed by instructions that only
other files have. Outputs are joined on the instruction text, so models with fewer rows get ``None``
for the missing ones. Systems are the file stems. Metadata ``domain`` = the ``dataset`` subset.

Judge metric (needs ``instructions.jsonl`` to join on ``instruction_idx``): ``gpt4_turbo_pref`` =
``preference - 1`` of annotator config ``weighted_alpaca_eval_gpt4_turbo``, i.e. the GPT-4 Turbo
judge's probability that the model's output beats the baseline ``gpt4_1106_preview`` (0.5 for the
baseline itself). It is an LLM judge, so it is **not** flagged human. Models the csv does not cover
get NaN.
"""

from __future__ import annotations

import csv
import io
from pathlib import Path
from typing import Any, Iterable

import numpy as np

from ..errors import DataError
from ..pool import Pool
from ._common import MISSING_TOKENS, blank_state, empty_file_error, iter_jsonl, load_json, nan_matrix, read_text
from .fast_read import preference_matrix

PREFERENCES_FILE = "preferences_all_annotators.csv.gz"
JUDGE_CONFIG = "weighted_alpaca_eval_gpt4_turbo"
JUDGE_METRIC = "gpt4_turbo_pref"


def alpaca_models(path: str | Path) -> list[str]:
    """Model names (file stems of ``model_outputs/*.json``), sorted case-insensitively."""
    return sorted((p.stem for p in (Path(path) / "model_outputs").glob("*.json")), key=lambda s: (s.lower(), s))


def _model_rows(file: Path) -> list[dict[str, Any]]:
    rows = load_json(file, "a JSON list of {instruction, output, dataset, generator} rows")
    if not isinstance(rows, list):
        raise DataError(f"{file}: expected a JSON list of {{instruction, output, dataset, generator}} rows.")
    for k, r in enumerate(rows):
        if not isinstance(r, dict) or "instruction" not in r or "output" not in r:
            raise DataError(f"{file}: row {k} must be an object with 'instruction' and 'output'.")
    return rows


def _instructions(path: Path) -> list[dict[str, Any]] | None:
    file = path / "instructions.jsonl"
    if not file.is_file():
        return None
    rows = []
    for lineno, rec in iter_jsonl(file, what="instructions",
                                  expected="one JSON object per line with instruction_idx and instruction"):
        if not isinstance(rec, dict) or "instruction" not in rec or "instruction_idx" not in rec:
            raise DataError(f"{file}: line {lineno} must be an object with 'instruction_idx' and 'instruction'.")
        rows.append(rec)
    return rows


def _items(instructions: list[dict] | None, per_model: dict[str, list[dict]]) -> list[dict[str, Any]]:
    """Item records ``{id, instruction, dataset}``: from instructions.jsonl, else from the model files."""
    if instructions is not None:
        return [{"id": str(r["instruction_idx"]), "instruction": r["instruction"], "dataset": r.get("dataset")}
                for r in instructions]
    items: dict[str, dict[str, Any]] = {}
    for rows in per_model.values():
        for r in rows:
            if r["instruction"] not in items:
                items[r["instruction"]] = {"id": str(len(items)), "instruction": r["instruction"], "dataset": r.get("dataset")}
    return list(items.values())


def _join_outputs(per_model: dict[str, list[dict]], position: dict[str, int], n: int, folder: Path) -> dict[str, list]:
    outputs = {}
    for model, rows in per_model.items():
        col: list[str | None] = [None] * n
        for k, r in enumerate(rows):
            i = position.get(r["instruction"])
            if i is None:
                raise DataError(
                    f"{folder / 'model_outputs' / (model + '.json')}: row {k} has an instruction that is not in "
                    f"instructions.jsonl ({r['instruction'][:60]!r}); remove the row or add the instruction."
                )
            if col[i] is not None:
                raise DataError(f"{folder / 'model_outputs' / (model + '.json')}: row {k} repeats an earlier instruction "
                                f"({r['instruction'][:60]!r}); keep one output per instruction.")
            col[i] = r["output"]
        outputs[model] = col
    return outputs


def read_preferences(file: str | Path, systems: list[str], item_ids: list[str], config: str = JUDGE_CONFIG) -> np.ndarray:
    """(items x systems) array of ``preference - 1`` for annotator ``config``; NaN where absent.

    Rows are matched on ``generator_2`` (or ``model_dir``) and ``instruction_idx``; others are skipped.
    """
    out = nan_matrix(len(item_ids), len(systems))
    col = {s: j for j, s in enumerate(systems)}
    row = {iid: i for i, iid in enumerate(item_ids)}
    need = ("model_dir", "annotator_config", "instruction_idx", "generator_2", "preference")
    fast = preference_matrix(Path(file), need, col, row, config, out)  # pyarrow's columns, when the file is plain
    if fast is not None:
        return fast
    out = nan_matrix(len(item_ids), len(systems))
    text = read_text(file)  # gunzipped (``.gz``) and checked to be UTF-8
    if not text.strip():
        raise empty_file_error(file, blank_state(text), "preferences",
                               f"a CSV with a header line naming {', '.join(need)}")
    reader = csv.reader(io.StringIO(text, newline=""))
    try:
        header = next(reader, [])
        missing = [c for c in need if c not in header]
        if missing:
            raise DataError(f"{file}: missing columns {missing}; found {header}.")
        mdir, cfg, idx, gen, pref = (header.index(c) for c in need)
        for r in reader:
            if len(r) <= max(mdir, cfg, idx, gen, pref):
                if r:
                    raise DataError(f"{file}: line {reader.line_num} has {len(r)} fields, expected {len(header)} "
                                    "(as many as the header).")
                continue
            if r[cfg] != config:
                continue
            j = col.get(r[gen], col.get(r[mdir]))
            i = row.get(r[idx])
            if j is None or i is None or r[pref].strip() in MISSING_TOKENS:
                continue
            try:
                out[i, j] = float(r[pref]) - 1.0
            except ValueError:
                raise DataError(f"{file}: line {reader.line_num}: preference {r[pref]!r} is not a number.") from None
    except csv.Error as e:
        raise DataError(f"{file}: line {reader.line_num} is not valid CSV ({e}).") from None
    return out


def read_alpaca(path: str | Path, *, models: Iterable[str] | None = None, name: str | None = None) -> Pool:
    """Read an AlpacaEval folder (``model_outputs/`` and optional extras) into an instructions x models Pool.

    ``models`` restricts (and orders) the systems. See the module docstring for ids and the judge metric.

    >>> pool = read_alpaca("data/alpaca-eval", models=["gpt4_1106_preview", "alpaca-7b"])  # doctest: +SKIP
    >>> pool.n_items, pool.is_human("gpt4_turbo_pref")                                    # doctest: +SKIP
    (805, False)
    """
    folder = Path(path)
    if folder.name == "model_outputs" and not (folder / "model_outputs").is_dir():
        folder = folder.parent  # the model_outputs folder itself was given
    available = alpaca_models(folder)
    if not available:
        raise DataError(f"{folder}: no model_outputs/<model>.json files; expected an AlpacaEval results folder.")
    systems = available if models is None else list(models)
    unknown = [m for m in systems if m not in available]
    if unknown:
        raise DataError(f"{folder}: models {unknown} have no file in model_outputs/. Available: {', '.join(available)}.")
    per_model = {m: _model_rows(folder / "model_outputs" / f"{m}.json") for m in systems}
    instructions = _instructions(folder)
    items = _items(instructions, per_model)
    position = {it["instruction"]: i for i, it in enumerate(items)}
    outputs = _join_outputs(per_model, position, len(items), folder)
    ids = [it["id"] for it in items]
    scores = {}
    prefs = folder / PREFERENCES_FILE
    if instructions is not None and prefs.is_file():
        scores[JUDGE_METRIC] = read_preferences(prefs, systems, ids)
    return Pool(
        item_ids=ids, inputs=[it["instruction"] for it in items], systems=systems, outputs=outputs,
        scores=scores, metadata={"domain": [it["dataset"] for it in items]},
        name=name if name is not None else str(path),
    )
