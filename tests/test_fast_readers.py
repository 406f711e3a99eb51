"""The fast readers (evalsift.io.fast_read) against the row-by-row readers: the same results, the same errors.

Every check reads the same file three ways, each a real code path picked by ``fast_read.PARSER`` (the
``$EVALSIFT_JSON_PARSER`` setting): ``rows`` (the row-by-row readers, the reference), ``json`` (the standard
library's parser and the column-wise checks: an install without pyarrow) and ``pyarrow`` (when installed).
"""

from __future__ import annotations

import dataclasses
import json
import pickle
import warnings

import numpy as np
import pytest

from _data import need
from evalsift.arena.battles import read_battles
from evalsift.errors import DataError
from evalsift.io import fast_read
from evalsift.io.pairwise import read_judgments, read_verdicts
from evalsift.io.pairwise_table import _read_cached, read_pairwise

try:
    import pyarrow.json  # noqa: F401
    FAST = ["json", "pyarrow"]
except ImportError:  # the base install: the json path only
    FAST = ["json"]


@pytest.fixture
def parser(monkeypatch):
    """Set the parser for the rest of a test (and forget what earlier reads cached)."""
    def use(how: str) -> None:
        monkeypatch.setattr(fast_read, "PARSER", how)
        _read_cached.cache_clear()
    yield use
    _read_cached.cache_clear()


def judgment_key(j):
    return (j.item_id, j.a, j.b, j.verdict, j.annotator, j.kind, j.shown_order, j.status, list(j.detail.items()))


def pool_key(p):
    return (p.name, p.item_ids, p.systems, p.inputs, dict(p.outputs), {k: tuple(v) for k, v in p.metadata.items()},
            sorted(p.metrics))


def read_all(parser, how, fn):
    """``(result, warnings, error)`` of ``fn()`` with parser ``how``."""
    parser(how)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        try:
            return fn(), [str(x.message) for x in w], None
        except DataError as e:
            return None, [str(x.message) for x in w], str(e)


def same_data(parser, fn):
    """``fn()`` (returning a PairwiseData) read every way: the same judgments, Pool and notes as the rows path."""
    ref, ref_notes, ref_err = read_all(parser, "rows", fn)
    assert ref_err is None, ref_err
    out = {}
    for how in FAST:
        data, notes, err = read_all(parser, how, fn)
        assert err is None, (how, err)
        assert [judgment_key(j) for j in data.judgments] == [judgment_key(j) for j in ref.judgments], how
        assert pool_key(data.pool) == pool_key(ref.pool), how
        assert data.source == ref.source and notes == ref_notes, how
        out[how] = data
    return ref, out


def same_error(parser, path):
    """Reading ``path`` fails with the same message every way; the message."""
    errors = {how: read_all(parser, how, lambda: read_pairwise(path))[2] for how in ["rows", *FAST]}
    assert errors["rows"] is not None
    assert len(set(errors.values())) == 1, errors
    return errors["rows"]


def battles_key(b):
    return (b.models, b.a.tolist(), b.b.tolist(), b.y.tolist(), b.ids, b.bothbad.tolist(), b.prob.tolist(),
            {k: np.nan_to_num(v, nan=-1).tolist() for k, v in b.judges.items()}, b.verdicts, b.source)


def write_jsonl(path, rows, *, newline="\n"):
    path.write_text(newline.join(json.dumps(r) for r in rows) + newline, encoding="utf-8")
    return path


BATTLES = [{"num": 1, "question_id": "q1", "model_a": "X", "model_b": "Y", "winner": "model_a", "language": "English"},
           {"num": 2, "question_id": "q2", "model_a": "Y", "model_b": "Z", "winner": "tie (bothbad)"},
           {"num": 3, "question_id": "q3", "model_a": "Z", "model_b": "X", "winner": "tie", "turn": 2},
           {"num": 4, "question_id": "q4", "model_a": "X", "model_b": "Z", "winner": " Model_B ", "anony": True}]


# ---------------------------------------------------------------------------------------- the same results
def test_real_arena_battles_and_judge_read_the_same_every_way(parser):
    human = need("arena-ppr/human.jsonl", "arena-ppr/gpt-4-0125-preview.jsonl")
    judge = human.parent / "gpt-4-0125-preview.jsonl"
    ref, fast = same_data(parser, lambda: read_pairwise(human))
    assert len(ref.judgments) == 17942
    for how, data in fast.items():
        assert data.columns is not None, f"{how}: the fast path did not read the plain Arena file"
    boards = {how: read_all(parser, how, lambda: read_battles(str(human), [str(judge)])) for how in ["rows", *FAST]}
    keys = {how: battles_key(b) for how, (b, _, _) in boards.items()}
    for how in FAST:
        assert keys[how] == keys["rows"], how
        assert boards[how][1] == boards["rows"][1], how  # the same notes (whose verdicts)
    b = boards["rows"][0]
    assert b.n == 17942 and np.isfinite(b.judges["gpt-4-0125-preview"]).mean() > 0.99


def test_plain_battles_keep_every_field(parser, tmp_path):
    path = write_jsonl(tmp_path / "claude-3-opus.jsonl", BATTLES)
    ref, fast = same_data(parser, lambda: read_pairwise(path))
    assert [j.verdict for j in ref.judgments] == ["a", "tie", "tie", "b"]
    assert ref.judgments[0].kind == "llm" and ref.judgments[0].detail["kind_from"] == "name"
    assert all(d.columns is not None for d in fast.values())
    b = {how: battles_key(read_all(parser, how, lambda: read_battles(str(path)))[0]) for how in ["rows", *FAST]}
    assert b["json"] == b["rows"] and b.get("pyarrow", b["rows"]) == b["rows"]
    assert b["rows"][5] == [False, True, False, False]  # the both-bad tie


@pytest.mark.parametrize("variant", ["judge", "string ids", "bom", "crlf", "blank line", "repeat", "texts",
                                     "float turn", "mixed ids", "kind", "question ids"])
def test_variants_read_the_same(parser, tmp_path, variant):
    rows = [dict(r) for r in BATTLES]
    newline, prefix, suffix = "\n", "", ""
    if variant == "judge":
        for r, j in zip(rows, ["gpt-4", "human", "gpt-4", "  expert 1 "]):
            r["judge"] = j
    elif variant == "string ids":
        for r in rows:
            r["num"] = f" b{r['num']} "
    elif variant == "bom":
        prefix = "\ufeff"
    elif variant == "crlf":
        newline = "\r\n"
    elif variant == "repeat":
        rows.append(dict(rows[0]))  # an identical repeat: left out with a note
    elif variant == "texts":
        rows[0]["conversation_a"] = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "A"}]
        rows[0]["conversation_b"] = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "B"}]
    elif variant == "float turn":
        rows[0]["turn"] = 1.0
        rows[1]["turn"] = 1.5
    elif variant == "mixed ids":
        rows[1]["num"] = "2"
    elif variant == "kind":
        rows[0]["kind"] = "llm"
    elif variant == "question ids":
        for r in rows:
            del r["num"]
    text = newline.join(json.dumps(r) for r in rows) + newline
    if variant == "blank line":
        text = text.replace("\n", "\n\n  \n", 1)
    path = tmp_path / "battles.jsonl"
    path.write_text(prefix + text + suffix, encoding="utf-8")
    same_data(parser, lambda: read_pairwise(path))
    for how in ["rows", *FAST]:  # and the boards
        assert read_all(parser, how, lambda: read_battles(str(path)))[2] is None


def test_fast_path_falls_back_on_what_it_cannot_check(parser, tmp_path):
    """Files the columns cannot read exactly go to the row reader (``columns`` None), with the same results."""
    for name, rows in {"nested": [{**BATTLES[0], "conv_metadata": {"sum_assistant_a_tokens": 3}}],
                       "repeat": BATTLES + [BATTLES[0]]}.items():
        path = write_jsonl(tmp_path / f"{name}.jsonl", rows)
        _, fast = same_data(parser, lambda: read_pairwise(path))
        assert all(d.columns is None for d in fast.values()), name


def test_verdicts_from_and_names_read_the_same(parser, tmp_path):
    path = write_jsonl(tmp_path / "human.jsonl", BATTLES)
    for source in (None, "human", "judge"):
        same_data(parser, lambda: read_verdicts(str(path), verdicts_from=source))
    got = {how: read_all(parser, how, lambda: read_verdicts(str(path), verdicts_from="judge"))[0]
           for how in FAST}
    assert {j.kind for d in got.values() for j in d.judgments} == {"llm"}
    assert read_all(parser, "json", lambda: read_pairwise(path, name="arena/x"))[0].pool.name == "arena/x"


def test_judgments_by_name_under_the_data_root(parser, tmp_path, monkeypatch):
    folder = tmp_path / "arena"
    folder.mkdir()
    write_jsonl(folder / "human.jsonl", BATTLES)
    monkeypatch.setenv("EVALSIFT_DATA", str(tmp_path))
    from evalsift.io.pairwise import _read_dataset

    _read_dataset.cache_clear()
    try:
        ref, fast = same_data(parser, lambda: (_read_dataset.cache_clear(), read_judgments("arena/human"))[1])
    finally:
        _read_dataset.cache_clear()
    assert ref.pool.name == "arena/human"


# ---------------------------------------------------------------------------------------- the same errors
BAD = {
    "bad winner": ('{"num": 2, "model_a": "X", "model_b": "Y", "winner": "model_c"}', "line 2: winner 'model_c'"),
    "empty model": ('{"num": 2, "model_a": " ", "model_b": "Y", "winner": "tie"}', "line 2: model_a is empty"),
    "missing model": ('{"num": 2, "model_b": "Y", "winner": "tie"}', "line 2: model_a is missing"),
    "same models": ('{"num": 2, "model_a": "Y", "model_b": "Y", "winner": "tie"}', "line 2: both sides are 'Y'"),
    "no id": ('{"model_a": "X", "model_b": "Y", "winner": "tie"}', "line 2: num is missing"),
    "null id": ('{"num": null, "model_a": "X", "model_b": "Y", "winner": "tie"}', "line 2: num is empty"),
    "bad json": ('{"num": 2, "model_a": "X", "model_b": "Y", "winner": "tie"', "line 2 is not valid JSON"),
    "two objects": ('{"num": 2, "model_a": "X", "model_b": "Y", "winner": "tie"} {"num": 3}', "line 2 is not valid JSON"),
    "list line": ("[1, 2]", "line 2: expected a JSON object"),
    "tab in string": ('{"num": 2, "model_a": "X\tZ", "model_b": "Y", "winner": "tie"}', "line 2 is not valid JSON"),
    "other battle": ('{"num": 1, "model_a": "Y", "model_b": "X", "winner": "tie"}', "line 2 uses battle num '1'"),
    "other outcome": ('{"num": 1, "model_a": "X", "model_b": "Y", "winner": "tie"}', "line 2 repeats battle num '1'"),
    "bad kind": ('{"num": 2, "model_a": "X", "model_b": "Y", "winner": "tie", "kind": "robot"}', "line 2: kind 'robot'"),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_bad_lines_give_the_same_line_numbered_error(parser, tmp_path, case):
    line, expected = BAD[case]
    path = tmp_path / "battles.jsonl"
    path.write_text('{"num": 1, "model_a": "X", "model_b": "Y", "winner": "model_a"}\n' + line + "\n"
                    '{"num": 9, "model_a": "X", "model_b": "Y", "winner": "model_b"}\n', encoding="utf-8")
    message = same_error(parser, path)
    assert expected in message, message


def test_file_problems_give_the_same_error(parser, tmp_path):
    empty = tmp_path / "empty.jsonl"
    empty.write_text("\n  \n", encoding="utf-8")
    assert "holds only blank lines" in same_error(parser, empty)
    latin = tmp_path / "latin.jsonl"
    latin.write_bytes(b'{"num": 1, "model_a": "X", "model_b": "Y", "winner": "tie"}\n{"num": 2, "model_a": "\xe9"}\n')
    assert "line 2" in same_error(parser, latin)


# ---------------------------------------------------------------------------------------- the columns themselves
def test_lazy_data_builds_once_and_copies_drop_the_columns(parser, tmp_path):
    path = write_jsonl(tmp_path / "human.jsonl", BATTLES)
    parser("json")
    data = read_pairwise(path)
    assert data.columns is not None and data.systems == ("X", "Y", "Z")
    assert data.judgments is data.judgments and data.pool is data.pool  # built once
    other = dataclasses.replace(data, judgments=data.judgments[:1])
    assert other.columns is None and len(other.judgments) == 1
    renamed = dataclasses.replace(data, source="elsewhere")  # the same pool and judgments: still ours
    assert renamed.columns is data.columns
    back = pickle.loads(pickle.dumps(read_pairwise(path).with_name("n")))
    assert back.pool.name == "n" and [judgment_key(j) for j in back.judgments] == [judgment_key(j) for j in data.judgments]


# ---------------------------------------------------------------------------------------- AlpacaEval preferences (CSV)
def test_real_alpaca_preferences_read_the_same_every_way(parser):
    from evalsift.io.alpaca import read_preferences

    f = need("alpaca-eval/preferences_all_annotators.csv.gz")
    parser("rows")
    import csv
    import gzip
    with gzip.open(f, "rt", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    systems = sorted({r["generator_2"] for r in rows})
    items = sorted({r["instruction_idx"] for r in rows})
    for config in ("weighted_alpaca_eval_gpt4_turbo", "alpaca_eval_gpt4"):
        got = {}
        for how in ["rows", *FAST]:
            parser(how)
            got[how] = read_preferences(f, systems, items, config)
        for how in FAST:
            assert np.array_equal(got[how], got["rows"], equal_nan=True), (how, config)
    assert np.isfinite(got["rows"]).sum() > 1000


@pytest.mark.parametrize("case", ["bad number", "short row", "later wins", "missing"])
def test_preferences_variants_and_errors_are_the_same(parser, tmp_path, case):
    from evalsift.io.alpaca import read_preferences

    head = "model_dir,annotator_config,instruction_idx,generator_2,preference\n"
    body = {"bad number": "m1,cfg,0,m1,1.5\nm1,cfg,1,m1,abc\n",
            "short row": "m1,cfg,0,m1,1.5\nm1,cfg\n",
            "later wins": "m1,cfg,0,m1,1.5\nm1,cfg,0,m1,2\nm2,other,0,m2,1\nx,cfg,1,m2,1_0\n",
            "missing": "m1,cfg,0,m1,NA\nm1,cfg,1,m1, \n\"m2\",cfg,1,m2,1.25\n"}[case]
    path = tmp_path / "prefs.csv"
    path.write_text(head + body, encoding="utf-8")
    out = {}
    for how in ["rows", *FAST]:
        parser(how)
        try:
            out[how] = read_preferences(path, ["m1", "m2"], ["0", "1"], "cfg")
        except DataError as e:
            out[how] = str(e)
    for how in FAST:
        if isinstance(out["rows"], str):
            assert out[how] == out["rows"] and "line 3" in out["rows"]
        else:
            assert np.array_equal(out[how], out["rows"], equal_nan=True), how
