"""AlpacaEval's published files: its instruction difficulty table (:func:`read_alpaca_difficulty`), its saved
per-model GLM weights (:func:`read_alpaca_weights`) and the length-controlled win rate they predict
(:func:`published_controlled`), with no fit."""

from __future__ import annotations

import csv
import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np

from ..errors import DataError
from .comparisons import Comparisons
from .l1 import _sigmoid


#: AlpacaEval's saved GLM weights: its formula's terms as patsy names them (the file's columns) -> our names
WEIGHT_COLUMNS = {"np.tanh(std_delta_len)": "length", "instruction_difficulty": "difficulty",
                  "not_gamed_baseline.astype(float)": "intercept"}
_WEIGHTS_NAME = re.compile(r"baseline_(?P<baseline>.+)\.csv$")


@dataclass(frozen=True)
class PublishedDifficulty:
    """AlpacaEval's per-instruction difficulty table (:func:`read_alpaca_difficulty`): ``values`` maps AlpacaEval's
    instruction index (``by="index"``) or the instruction's text (``by="instruction"``) to its difficulty."""

    path: str
    values: dict[Any, float]
    by: str

    def join(self, pool: Any, item_ids: Sequence[str]) -> tuple[dict[str, float], str]:
        """``({item_id: difficulty}, how the items were matched)`` for the instructions ``item_ids`` of ``pool``.

        By index: an item whose id is a whole number (the preference table's ``instruction_idx``, an
        ``annotations.json`` with an ``index`` column) is that index; when the ids are not numbers (AlpacaEval
        annotations keyed by their text), the k-th instruction in the data's order is index k, as AlpacaEval's own
        code reads the k-th annotation of a run. By instruction: the item's input text. An instruction of the data
        without a difficulty is a DataError naming the first and the count (AlpacaEval's code stops on it too)."""
        wanted = list(dict.fromkeys(item_ids))
        if self.by == "instruction":
            inputs = getattr(pool, "inputs", None)
            if not inputs or not any(inputs):
                raise DataError(f"{self.path}: the difficulties are keyed by instruction text, and the data holds no "
                                "instruction texts to join them on (AlpacaEval's preference table has none): give a "
                                "table keyed by AlpacaEval's instruction index, or annotations with their instructions",
                                field="difficulty")
            text_of = dict(zip(pool.item_ids, inputs))
            keys = {i: (str(text_of[i]) if text_of.get(i) else None) for i in wanted}
            how = "joined by instruction text"
        elif all(str(i).strip().isdigit() for i in wanted):
            keys = {i: int(str(i).strip()) for i in wanted}
            how = "joined by AlpacaEval's instruction index (the item id)"
        else:
            position = {iid: k for k, iid in enumerate(pool.item_ids)}
            keys = {i: position.get(i) for i in wanted}
            how = ("joined by position: the data's k-th instruction is AlpacaEval's index k (its item ids are not "
                   "indices; AlpacaEval's own code reads a run's k-th annotation as index k)")
        missing = [i for i in wanted if keys[i] is None or keys[i] not in self.values]
        if missing:
            first = missing[0]
            shown = f"item {first!r}" + (f" (index {keys[first]})" if self.by == "index" and keys[first] is not None
                                         else "")
            raise DataError(f"{self.path}: {len(missing)} of the data's {len(wanted)} instructions have no difficulty "
                            f"in this table ({how}); the first: {shown}. AlpacaEval's table covers its 805 "
                            "instructions: check that the data is AlpacaEval's evaluation set, or leave --difficulty "
                            "out to estimate the difficulties from the data", field="difficulty", item_id=str(first))
        return {i: float(self.values[keys[i]]) for i in wanted}, how


@dataclass(frozen=True)
class PublishedWeights:
    """AlpacaEval's saved per-model GLM weights (:func:`read_alpaca_weights`): ``rows`` maps the file's model
    name to ``{"length", "difficulty", "intercept"}``; ``baseline``: the one its name records (``baseline_<name>.csv``),
    or None."""

    path: str
    rows: dict[str, dict[str, float]]
    baseline: str | None = None


def _csv_table(path: str | Path, what: str, expected: str) -> tuple[Path, list[str], list[tuple[int, list[str]]]]:
    """(path, header, [(line, row)]) of a small CSV file; DataError naming the file when empty, ragged or not CSV."""
    import io as _io

    from ..io._common import blank_state, empty_file_error, read_text

    path = Path(path)
    text = read_text(path)
    if not text.strip():
        raise empty_file_error(path, blank_state(text), what, expected)
    reader = csv.reader(_io.StringIO(text, newline=""))
    try:
        header = [h.strip() for h in next(reader)]
        rows = []
        for r in reader:
            if not r or not any(c.strip() for c in r):
                continue
            if len(r) != len(header):
                raise DataError(f"{path}: line {reader.line_num} has {len(r)} fields, the header {len(header)}; "
                                f"expected {expected}.")
            rows.append((reader.line_num, r))
    except csv.Error as e:
        raise DataError(f"{path}: line {reader.line_num} is not valid CSV ({e}); expected {expected}.") from None
    return path, header, rows


def _number(path: Path, line: int, column: str, raw: str, what: str) -> float:
    from ..io._common import to_float

    try:
        v = to_float(raw)
    except (TypeError, ValueError):
        v = math.nan
    if not math.isfinite(v):
        raise DataError(f"{path}: line {line}: {column} is {raw.strip()!r}, not a number; every {what} needs one.",
                        field=column)
    return v


def read_alpaca_difficulty(path: str | Path) -> PublishedDifficulty:
    """AlpacaEval's per-instruction difficulty table, ``instruction_difficulty.csv`` (the file its
    ``glm_winrate._get_instructions_difficulty`` reads with ``pd.read_csv(path, index_col=0).squeeze()``): a
    header line, then per instruction its key (first column, ``index``: AlpacaEval's instruction index 0..804 in
    its evaluation set's order) and its difficulty (column ``instruction_difficulty``, or ``difficulty``, or the only
    other column). A table keyed by the instructions' text instead has a column ``instruction`` (or text keys in the
    first column). A key given twice, or a value that is not a number, is a DataError naming the line.

    >>> import tempfile, os
    >>> p = os.path.join(tempfile.mkdtemp(), "instruction_difficulty.csv")
    >>> _ = open(p, "w").write("index,instruction_difficulty\\n0,0.0\\n1,-0.25\\n")
    >>> t = read_alpaca_difficulty(p)
    >>> t.by, t.values
    ('index', {0: 0.0, 1: -0.25})
    """
    expected = ("AlpacaEval's instruction_difficulty.csv: a header line (index,instruction_difficulty), then one "
                "line per instruction with its index and difficulty")
    path, header, rows = _csv_table(path, "instruction difficulties", expected)
    lower = [h.lower() for h in header]
    key_col = lower.index("instruction") if "instruction" in lower else 0
    value_col = next((lower.index(c) for c in ("instruction_difficulty", "difficulty") if c in lower), None)
    if value_col is None and len(header) == 2:
        value_col = 1 - key_col
    if value_col is None or value_col == key_col:
        raise DataError(f"{path}: no difficulty column among {header}; expected {expected}.", field="difficulty")
    keys = [r[key_col].strip() for _, r in rows]
    by = "instruction" if lower[key_col] == "instruction" else (
        "index" if all(k.isdigit() for k in keys) else ("instruction" if lower[key_col] != "index" else None))
    if by is None:
        bad = next((line, r[key_col]) for line, r in rows if not r[key_col].strip().isdigit())
        raise DataError(f"{path}: line {bad[0]}: index {bad[1]!r} is not a whole number; AlpacaEval's table gives each "
                        "instruction's index (0, 1, ...).", field="index")
    values: dict[Any, float] = {}
    seen: dict[Any, int] = {}
    for (line, r), k in zip(rows, keys):
        key: Any = int(k) if by == "index" else r[key_col]
        if key in seen:
            raise DataError(f"{path}: line {line} gives {header[key_col]} {k[:60]!r} again (first on line {seen[key]}); "
                            "keep one difficulty per instruction.", field=header[key_col])
        seen[key] = line
        values[key] = _number(path, line, header[value_col], r[value_col], "instruction")
    if not values:
        raise DataError(f"{path}: a header line and no instruction; expected {expected}.", field="difficulty")
    return PublishedDifficulty(path=str(path), values=values, by=by)


def read_alpaca_weights(path: str | Path) -> PublishedWeights:
    """AlpacaEval's saved per-model weights of its length-controlled GLM, ``metrics/weights/<annotator>/
    length_controlled_v1/baseline_<baseline>.csv`` (what ``glm_winrate.get_length_controlled_winrate`` writes with
    ``DataFrame.to_csv``): the model in the first column (AlpacaEval's ``generator_2``), then one column per term
    of its formula, :data:`WEIGHT_COLUMNS` (``np.tanh(std_delta_len)``, ``instruction_difficulty``,
    ``not_gamed_baseline.astype(float)``, the model's intercept). The intercept is needed; a term the file lacks
    (``length_controlled_minimal`` has no difficulty) is 0; a column of another term is a DataError (its prediction
    would need it), as are a model given twice and a value that is not a number.

    >>> import tempfile, os
    >>> p = os.path.join(tempfile.mkdtemp(), "baseline_gpt4_1106_preview.csv")
    >>> _ = open(p, "w").write(",np.tanh(std_delta_len),instruction_difficulty,not_gamed_baseline.astype(float)\\n"
    ...                        "m1,-1.5,0.8,-0.5\\n")
    >>> w = read_alpaca_weights(p)
    >>> w.rows["m1"], w.baseline
    ({'length': -1.5, 'difficulty': 0.8, 'intercept': -0.5}, 'gpt4_1106_preview')
    """
    names = ", ".join(WEIGHT_COLUMNS)
    expected = (f"AlpacaEval's GLM weights (metrics/weights/<annotator>/length_controlled_v1/baseline_<model>.csv): a "
                f"header line naming {names} after the model column, then one line per model")
    path, header, rows = _csv_table(path, "GLM weights", expected)
    terms = header[1:]
    unknown = [t for t in terms if t not in WEIGHT_COLUMNS]
    if unknown or "not_gamed_baseline.astype(float)" not in terms:
        what = (f"unknown term column(s) {unknown}" if unknown else
                "no column not_gamed_baseline.astype(float) (the model's intercept)")
        raise DataError(f"{path}: {what}; found {header}. Expected {expected}.", field="weights")
    out: dict[str, dict[str, float]] = {}
    seen: dict[str, int] = {}
    for line, r in rows:
        model = r[0].strip()
        if not model:
            raise DataError(f"{path}: line {line} names no model (first column); every row is one model's weights.",
                            field="model")
        if model in seen:
            raise DataError(f"{path}: line {line} gives the weights of {model!r} again (first on line {seen[model]}); "
                            "keep one row per model.", field="model", system=model)
        seen[model] = line
        row = {v: 0.0 for v in WEIGHT_COLUMNS.values()}
        for t, raw in zip(terms, r[1:]):
            row[WEIGHT_COLUMNS[t]] = _number(path, line, t, raw, "model's weight")
        out[model] = row
    m = _WEIGHTS_NAME.search(path.name)
    return PublishedWeights(path=str(path), rows=out, baseline=m.group("baseline") if m else None)


def published_controlled(weights: Mapping[str, float], difficulty: Sequence[float]) -> np.ndarray:
    """Per instruction, the preference AlpacaEval's GLM predicts with a model's saved ``weights`` and no length
    difference: ``logistic(intercept + difficulty_coefficient x difficulty)`` (the length term is 0 at no length
    difference). 100 x their mean is the model's length-controlled win rate, as
    ``glm_winrate.get_length_controlled_winrate`` computes it from the same coefficients.

    >>> published_controlled({"length": -1.5, "difficulty": 1.0, "intercept": 0.0}, [0.0, 1.0]).round(4)
    array([0.5   , 0.7311])
    """
    d = np.asarray(difficulty, float)
    return _sigmoid(float(weights["intercept"]) + float(weights["difficulty"]) * d)


def _weights_keys(data: Any, comparisons: Comparisons, weights: PublishedWeights) -> dict[str, str]:
    """``{model: the row of weights}``: the model's AlpacaEval results folder (``model_dir`` of the preference
    table, the name its leaderboard and weights use) when the file has a row of that name, else the model's own name
    (AlpacaEval's ``generator_2``, the key it saves weights under)."""
    dirs: dict[str, dict[str, None]] = {}
    base = comparisons.baseline
    for j in data.judgments:
        d = j.detail.get("model_dir") if isinstance(getattr(j, "detail", None), Mapping) else None
        if d and base in (j.a, j.b):
            dirs.setdefault(j.b if j.a == base else j.a, {})[str(d)] = None
    out = {}
    for model in comparisons.models:
        key = next((c for c in [*dirs.get(model, {}), model] if c in weights.rows), None)
        if key is not None:
            out[model] = key
    return out
