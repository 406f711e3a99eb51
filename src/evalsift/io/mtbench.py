"""MT-Bench single-answer grading files (FastChat ``llm_judge``): a judge's 1-10 grade per question, turn and model.

FastChat's ``data/mt_bench/model_judgment/gpt-4_single.jsonl`` holds one row per graded answer:
``{question_id, model, judge: [judge model, prompt name], user_prompt, judgment, score, turn, tstamp}``.
:func:`read_mtbench_single` reads it into a :class:`~evalsift.pool.Pool`:

- items ``<question_id>-t<turn>`` (the ids FastChat's pairwise files get from
  :func:`~evalsift.io.judge_files.read_fastchat`, so grades and pairwise verdicts of the same question
  join), systems the models, one metric ``score`` (NaN where the row's score is ``-1``: FastChat's mark for
  a judgment it could not parse, which ``show_result`` leaves out);
- per-item columns ``question_id``, ``turn``, ``judge`` (the judge model, e.g. ``gpt-4``; a grade is a
  judge's verdict, never a person's) and, when the question file is found, ``category`` and the turn's
  text as the item's input.

The question file is ``question.jsonl`` (``{question_id, category, turns: [...]}``) given as
``questions=``, else the one FastChat keeps beside the judgments (``data/mt_bench/question.jsonl`` for
``data/mt_bench/model_judgment/gpt-4_single.jsonl``): the same folder or the one above.

A repeated (question, turn, model) row supersedes the earlier one (FastChat appends when a judgment is
rerun, and its loader keeps the last), with a note.

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
    grades: dict[tuple[str, str], tuple[int, float]] = {}
    items: dict[str, tuple[str, int]] = {}
    judges: dict[str, str] = {}
    models: dict[str, None] = {}
    superseded, unparsed = 0, 0
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
        try:
            score = float(to_float(r["score"]))
        except (TypeError, ValueError):
            raise DataError(f"{path}: line {line}: score {r['score']!r} is not a number (a 1-10 grade, or -1 where "
                            "the judgment could not be parsed).", field="score", item_id=iid, system=model) from None
        if score == -1:
            unparsed += 1
            score = math.nan
        if (iid, model) in grades:
            superseded += 1
        grades[(iid, model)] = (line, score)
        items.setdefault(iid, (qid, turn))
        models.setdefault(model, None)
        judge = _judge(r.get("judge"))
        if judge is not None:
            judges.setdefault(iid, judge)
    if superseded:
        warn_data(f"{path}: {superseded} row(s) grade a question, turn and model graded earlier in the file; the "
                  "later row is used (FastChat appends when a judgment is rerun).")
    if unparsed:
        warn_data(f"{path}: {unparsed} grade(s) are -1 (FastChat could not parse the judge's answer): left out, as "
                  "FastChat's show_result does.")
    ids = list(items)
    systems = list(models)
    row = {iid: k for k, iid in enumerate(ids)}
    col = {m: k for k, m in enumerate(systems)}
    matrix = np.full((len(ids), len(systems)), np.nan)
    for (iid, model), (_, score) in grades.items():
        matrix[row[iid], col[model]] = score
    meta: dict[str, list[Any]] = {"question_id": [items[i][0] for i in ids], "turn": [items[i][1] for i in ids],
                                  "judge": [judges.get(i) for i in ids]}
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
        ok = np.isfinite(s)
        groups = {}
        for label, mask in columns.items():
            m = ok & mask
            groups[label] = float(s[m].mean()) if m.any() else None
        rows.append({"system": system, "score": float(s[ok].mean()) if ok.any() else None, "n": int(ok.sum()),
                     "groups": groups})
    rows.sort(key=lambda r: -(r["score"] if r["score"] is not None else -math.inf))
    return rows


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
