"""MT-Bench single-answer grading files (FastChat ``llm_judge``): a judge's 1-10 grade per question, turn and model.

FastChat's ``data/mt_bench/model_judgment/gpt-4_single.jsonl`` holds one row per graded answer:
``{question_id, model, judge: [judge model, prompt name], user_prompt, judgment, score, turn, tstamp}``.
:func:`read_mtbench_single` reads it into a :class:`~evalsift.pool.Pool`:

- items ``<question_id>-t<turn>`` (the ids FastChat's pairwise files get from
  :func:`~evalsift.io.judge_files.read_fastchat`, so grades and pairwise verdicts of the same question
  join), systems the models, one metric ``score`` (NaN where the row's score is ``-1``: FastChat's mark for
  a judgment it could not parse, which ``show_result`` leaves out). A grade is a JSON number on MT-Bench's
  1-10 scale (FastChat's judge prompts ask for ``[[rating]]`` from 1 to 10; decimals are read as FastChat
  reads them) or ``-1``; anything else -- 11, 0, the text ``"8"``, ``true`` -- is a DataError naming the
  line and the fix (``show_result`` would count an 11 and fail on a text);
- per-item columns ``question_id``, ``turn``, ``judge`` (the judge model, e.g. ``gpt-4``; a grade is a
  judge's verdict, never a person's) and, when the question file is found, ``category`` and the turn's
  text as the item's input.

The question file is ``question.jsonl`` (``{question_id, category, turns: [...]}``) given as
``questions=``, else the one FastChat keeps beside the judgments (``data/mt_bench/question.jsonl`` for
``data/mt_bench/model_judgment/gpt-4_single.jsonl``): the same folder or the one above.

A repeated (question, turn, model) row -- FastChat appends a rerun's rows to the file -- counts as
``show_result.py`` counts it: every row with a grade enters the mean. The Pool's cell holds the mean of its
rows' grades and the private per-item column ``_grades`` keeps every row's grade in file order (``-1`` as
NaN) where a cell has more than one row, so :func:`mtbench_table` weights each cell by its rows and prints
exactly FastChat's numbers. :func:`keep_later_grades` turns that into the later row only (``rank --repeats
last``; FastChat's own ``load_single_model_judgments`` keeps the last). A note says how many rows repeat,
either way.

:func:`mtbench_table` computes the numbers FastChat's ``show_result.py --mode single`` prints: per model the
mean grade over every row with a score (questions and turns together: the MT-Bench score), per turn and,
with the categories, per category.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import DataError
from ..pool import Pool
from ._common import iter_jsonl, to_float, warn_data

#: the fields that make a JSONL record an MT-Bench single-answer grade
SINGLE_FIELDS = ("question_id", "model", "score", "turn")
METRIC = "score"
#: MT-Bench's grading scale (FastChat's single-v1 prompts: "on a scale of 1 to 10"); -1 is FastChat's "no grade"
SCALE = (1.0, 10.0)
NO_GRADE = -1.0
#: the private per-item column with every row's grade of a repeated cell (``{model: (grade, ...)}``)
GRADES = "_grades"


def _grade(path: Path, line: int, raw: Any, iid: str, model: str) -> float:
    """A row's grade: a JSON number in :data:`SCALE`, or NaN for FastChat's ``-1`` (no grade); anything else is a
    DataError naming the line, what came and the fix."""
    fix = ("write the judge's 1-10 grade as a number, or -1 where the judgment gave none (FastChat's mark, left out "
           "as show_result.py leaves it)")
    if isinstance(raw, bool) or not isinstance(raw, (int, float)):
        what = f"score {raw!r} is not a number (a 1-10 grade, or -1 where the judgment could not be parsed)"
        if isinstance(raw, str):
            try:
                value = to_float(raw)
                what = f"score {raw!r} is text, not a number: write it as the JSON number {value:g}, without quotes"
            except (TypeError, ValueError):
                pass
        raise DataError(f"{path}: line {line}: {what}; {fix}.", field="score", item_id=iid, system=model,
                        hint="write the grade as a number from 1 to 10, or -1")
    value = float(raw)
    if value == NO_GRADE:
        return math.nan
    if not (SCALE[0] <= value <= SCALE[1]):
        raise DataError(f"{path}: line {line}: score {raw!r} is outside MT-Bench's 1-10 scale; {fix}.", field="score",
                        item_id=iid, system=model, hint="write a grade from 1 to 10, or -1 for none")
    return value


def looks_mtbench_single(record: Any) -> bool:
    """True for a record with MT-Bench single-grade fields (``question_id``, ``model``, ``score``, ``turn``)
    and none of a pairwise judgment's (``model_1``, ``model_a``, ``g1_winner``).

    >>> looks_mtbench_single({"question_id": 81, "model": "vicuna", "judge": ["gpt-4", "single-v1"],
    ...                       "score": 8, "turn": 1})
    True
    """
    return (isinstance(record, dict) and all(f in record for f in SINGLE_FIELDS)
            and not {"model_1", "model_a", "g1_winner"} & set(record))


def find_questions(path: Path) -> Path | None:
    """FastChat's ``question.jsonl`` beside a judgment file: in its folder or the folder above, else None."""
    for folder in (path.parent, path.parent.parent):
        candidate = folder / "question.jsonl"
        if candidate.is_file():
            return candidate
    return None


def read_questions(path: str | Path) -> dict[str, dict[str, Any]]:
    """``question_id`` -> ``{category, turns}`` from an MT-Bench question file (one JSON object per line).

    Errors name the file, the line and the field."""
    path = Path(path)
    out: dict[str, dict[str, Any]] = {}
    for line, rec in iter_jsonl(path, what="questions", expected="one JSON object per line: {question_id, category, "
                                                                   "turns}"):
        if not isinstance(rec, dict) or rec.get("question_id") is None:
            raise DataError(f"{path}: line {line}: a question needs its question_id (MT-Bench's question.jsonl: "
                            "{question_id, category, turns}).", field="question_id")
        qid = _qid(rec["question_id"])
        turns = rec.get("turns")
        out[qid] = {"category": rec.get("category"), "turns": list(turns) if isinstance(turns, list) else []}
    return out


def _qid(value: Any) -> str:
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value).strip()


def _judge(value: Any) -> str | None:
    """The judge model of a row: the first element of FastChat's ``[model, prompt name]``, or the cell."""
    if isinstance(value, (list, tuple)):
        return str(value[0]) if value else None
    return None if value is None or str(value).strip() == "" else str(value)


def read_mtbench_single(path: str | Path, *, name: str | None = None, questions: str | Path | None = None) -> Pool:
    """An MT-Bench single-answer grading file as a Pool (see the module doc).

    ``questions``: the question file giving each question's category and text (default: ``question.jsonl``
    beside the file, when there is one).
    """
    path = Path(path)
    qfile = Path(questions) if questions is not None else find_questions(path)
    qs = read_questions(qfile) if qfile is not None else {}
    grades: dict[tuple[str, str], list[float]] = {}
    items: dict[str, tuple[str, int]] = {}
    judges: dict[str, str] = {}
    models: dict[str, None] = {}
    repeated, unparsed = 0, 0
    for line, r in iter_jsonl(path, what="grades", expected="MT-Bench single grades: {question_id, model, judge, "
                                                             "score, turn} per line"):
        if not isinstance(r, dict):
            raise DataError(f"{path}: line {line}: expected a JSON object (an MT-Bench grade), got "
                            f"{type(r).__name__}.")
        for f in SINGLE_FIELDS:
            if r.get(f) is None or str(r.get(f)).strip() == "":
                raise DataError(f"{path}: line {line}: {f} is {'missing' if f not in r else 'empty'}; an MT-Bench "
                                "grade names its question_id, turn, model and score.", field=f,
                                hint=f"give every row its {f}")
        qid = _qid(r["question_id"])
        try:
            turn = int(to_float(r["turn"]))
        except (TypeError, ValueError):
            raise DataError(f"{path}: line {line}: turn {r['turn']!r} is not a number (1 or 2).", field="turn") from None
        iid = f"{qid}-t{turn}"
        model = str(r["model"]).strip()
        score = _grade(path, line, r["score"], iid, model)
        unparsed += math.isnan(score)
        if (iid, model) in grades:
            repeated += 1
        grades.setdefault((iid, model), []).append(score)
        items.setdefault(iid, (qid, turn))
        models.setdefault(model, None)
        judge = _judge(r.get("judge"))
        if judge is not None:
            judges.setdefault(iid, judge)
    if repeated:
        warn_data(f"{path}: {repeated} row(s) grade a question, turn and model graded earlier in the file (FastChat "
                  "appends a rerun's rows): every row counts, as show_result.py averages them (the cell's grade is "
                  "their mean); rank --repeats last keeps the later row only.")
    if unparsed:
        warn_data(f"{path}: {unparsed} grade(s) are -1 (FastChat could not parse the judge's answer): left out, as "
                  "FastChat's show_result does.")
    ids = list(items)
    systems = list(models)
    row = {iid: k for k, iid in enumerate(ids)}
    col = {m: k for k, m in enumerate(systems)}
    matrix = np.full((len(ids), len(systems)), np.nan)
    repeats: list[dict[str, tuple[float, ...]] | None] = [None] * len(ids)
    for (iid, model), scores in grades.items():
        graded = [v for v in scores if not math.isnan(v)]
        matrix[row[iid], col[model]] = float(np.mean(graded)) if graded else math.nan
        if len(scores) > 1:
            cell = repeats[row[iid]] or {}
            cell[model] = tuple(scores)
            repeats[row[iid]] = cell
    meta: dict[str, list[Any]] = {"question_id": [items[i][0] for i in ids], "turn": [items[i][1] for i in ids],
                                  "judge": [judges.get(i) for i in ids]}
    if any(c is not None for c in repeats):
        meta[GRADES] = repeats
    inputs = None
    if qs:
        meta["category"] = [(qs.get(items[i][0]) or {}).get("category") for i in ids]
        inputs = []
        for i in ids:
            turns = (qs.get(items[i][0]) or {}).get("turns") or []
            t = items[i][1]
            inputs.append(str(turns[t - 1]) if 0 < t <= len(turns) else None)
        unknown = sorted({items[i][0] for i in ids if items[i][0] not in qs})
        if unknown:
            warn_data(f"{path}: {len(unknown)} question(s) are not in {qfile} (first {unknown[0]!r}): no category.")
    return Pool(item_ids=ids, inputs=inputs, systems=systems, scores={METRIC: matrix}, metadata=meta,
                name=name if name is not None else str(path))


def mtbench_table(pool: Pool, metric: str = METRIC, by: str | None = None) -> list[dict[str, Any]]:
    """Per system, FastChat ``show_result``'s numbers: the mean of ``metric`` over every graded (item, system)
    (``score``; ``n``: how many), per turn (``turn 1``, ``turn 2``, ... when the pool has a ``turn`` column)
    and per value of column ``by`` (e.g. ``category``); best first.

    >>> p = Pool(item_ids=["1-t1", "1-t2"], systems=["x", "y"], scores={"score": np.array([[8., 7.], [4., np.nan]])},
    ...          metadata={"turn": [1, 2]})
    >>> [(r["system"], r["score"], r["groups"]) for r in mtbench_table(p)]
    [('y', 7.0, {'turn 1': 7.0, 'turn 2': None}), ('x', 6.0, {'turn 1': 8.0, 'turn 2': 4.0})]
    """
    S = pool.score(metric)
    W = _row_counts(pool) if metric == METRIC else np.isfinite(S).astype(float)
    columns: dict[str, np.ndarray] = {}
    wanted = [("turn", "turn {}")] + ([] if by in (None, "turn") else [(by, "{}")])
    for column, label in wanted:
        if column not in pool.metadata:
            continue
        values = list(pool.metadata[column])
        for v in sorted({v for v in values if v is not None}, key=lambda v: (str(type(v)), v)):
            columns[label.format(v)] = np.array([x == v for x in values])
    rows = []
    for j, system in enumerate(pool.systems):
        s = S[:, j]
        ok = np.isfinite(s) & (W[:, j] > 0)
        w = W[:, j]

        def mean(m: np.ndarray) -> float | None:
            return float(np.sum(s[m] * w[m]) / np.sum(w[m])) if m.any() else None

        groups = {label: mean(ok & mask) for label, mask in columns.items()}
        rows.append({"system": system, "score": mean(ok), "n": int(round(float(w[ok].sum()))), "groups": groups})
    rows.sort(key=lambda r: -(r["score"] if r["score"] is not None else -math.inf))
    return rows


def _row_counts(pool: Pool) -> np.ndarray:
    """Per (item, system), how many graded rows its cell stands for: 1 (0 where no grade), or the count of graded
    rows where the file repeats it (:data:`GRADES`)."""
    S = pool.score(METRIC)
    W = np.isfinite(S).astype(float)
    col = {s: j for j, s in enumerate(pool.systems)}
    for i, cell in enumerate(pool.metadata.get(GRADES) or ()):
        for model, scores in (cell or {}).items():
            if model in col:
                W[i, col[model]] = sum(not math.isnan(v) for v in scores)
    return W


def repeated_grades(pool: Pool) -> int:
    """How many rows of an MT-Bench grade file repeat a (question, turn, model) graded earlier (0 for other pools)."""
    return sum(len(v) - 1 for cell in (pool.metadata.get(GRADES) or ()) for v in (cell or {}).values())


def keep_later_grades(pool: Pool) -> Pool:
    """``pool`` (an MT-Bench grade file's) with each repeated cell holding its later row's grade only (NaN when that
    row is a ``-1``), as FastChat's ``load_single_model_judgments`` keeps it; the pool itself when nothing repeats.
    :func:`mtbench_table` then counts one row per cell."""
    cells = pool.metadata.get(GRADES)
    if not cells or not any(cells):
        return pool
    S = pool.score(METRIC).copy()
    col = {s: j for j, s in enumerate(pool.systems)}
    for i, cell in enumerate(cells):
        for model, scores in (cell or {}).items():
            if model in col:
                S[i, col[model]] = scores[-1]
    out = pool.with_scores(METRIC, S, human=pool.is_human(METRIC))
    return out.with_columns({GRADES: [None] * pool.n_items})


def pool_judge(pool: Pool) -> str | None:
    """The judge named by a pool's ``judge`` column (``gpt-4``; several joined with ``, ``), or None."""
    if "judge" not in pool.metadata:
        return None
    names = list(dict.fromkeys(str(v) for v in pool.metadata["judge"] if v is not None))
    return ", ".join(names) or None


def attach_questions(pool: Pool, questions: str | Path) -> Pool:
    """``pool`` with a ``category`` column from an MT-Bench question file, matched on the ``question_id``
    column (or on item ids ``<question_id>-t<turn>`` / ``<question_id>``). A question missing from the file
    has no category (a note says how many)."""
    qs = read_questions(questions)
    if "question_id" in pool.metadata:
        qids = [None if v is None else _qid(v) for v in pool.metadata["question_id"]]
    else:
        qids = [iid.rsplit("-t", 1)[0] if "-t" in iid else iid for iid in pool.item_ids]
    cats = [(qs.get(q) or {}).get("category") if q is not None else None for q in qids]
    if not any(c is not None for c in cats):
        raise DataError(f"{questions}: none of the data's {pool.n_items} items is one of its {len(qs)} questions "
                        "(matched on question_id); is it the question file of this benchmark?", field="questions")
    missing = sum(c is None for c in cats)
    if missing:
        warn_data(f"{questions}: {missing} of {pool.n_items} items are not among its questions: no category.")
    return pool.with_columns({"category": cats})


def with_questions(data: Any, spec: str, by: str | None, questions: str | None) -> Any:
    """Recorded judgments ``data`` (a PairwiseData) with MT-Bench's categories as the item column
    ``category``: from ``questions``, or -- for ``by == "category"`` when the data has none -- from the
    ``question.jsonl`` beside the file ``spec`` (:func:`find_questions`). Unchanged otherwise."""
    from dataclasses import replace

    if questions is None and by == "category" and "category" not in data.pool.metadata and Path(spec).is_file():
        found = find_questions(Path(spec))
        questions = str(found) if found is not None else None
    if questions is None:
        return data
    return replace(data, pool=attach_questions(data.pool, questions))
