"""Readers that stream (issue 12): the one-pass subset2evaluate reader and the by-column Parquet reader
give the same pools as before, keep one copy of each text, and name the line / row in their errors."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import numpy as np
import pytest

from evalsift.errors import DataError
from evalsift.io import _common as common
from evalsift.io import read_s2e_jsonl, read_table, s2e, table, write_s2e_jsonl
from evalsift.io._common import first_line, iter_jsonl, iter_lines

NAN = np.nan


def write_lines(path: Path, records: list, sep: str = "\n") -> Path:
    path.write_bytes((sep.join(r if isinstance(r, str) else json.dumps(r) for r in records) + sep).encode("utf-8"))
    return path


# ------------------------------------------------------------------------------------ subset2evaluate
# systems appear late (C on the second item, D only in scores on the third), outputs are missing (null
# or absent), scores use missing-value tokens, refs are strings and lists, items carry extra fields
RECORDS = [
    {"i": 0, "src": "s0", "ref": "r0", "domain": "news", "tgt": {"A": "a0", "B": "b0"},
     "scores": {"A": {"human": 1, "chrF": 50.5}, "B": {"human": "NA", "chrF": "40"}}},
    {"i": 1, "src": "s1", "ref": ["r1a", None, "r1c"], "domain": "web", "doc": "d1", "note": {"tags": ["x"]},
     "tgt": {"C": "c1", "A": None}, "scores": {"C": {"human": "-", "chrF": " 30 "}, "A": None}},
    {"i": 2, "src": "s2", "domain": "news", "cost": 2.5, "tgt": {"B": "b2"},
     "scores": {"D": {"human": 0.25}, "B": {"chrF": None, "bleu": 12}}},
    {"i": 3, "src": "s3", "ref": None, "tgt": {}},
]


def test_s2e_pool_content_with_late_systems_gaps_tokens_and_list_refs(tmp_path):
    pool = read_s2e_jsonl(write_lines(tmp_path / "x.jsonl", RECORDS))
    assert pool.item_ids == ("0", "1", "2", "3") and pool.inputs == ("s0", "s1", "s2", "s3")
    assert pool.systems == ("A", "B", "C", "D")
    assert pool.outputs == {"A": ("a0", None, None, None), "B": ("b0", None, "b2", None),
                            "C": (None, "c1", None, None), "D": (None, None, None, None)}
    assert list(pool.scores) == ["human", "chrF", "bleu"]  # first-seen order
    np.testing.assert_array_equal(pool.score("human"), [[1, NAN, NAN, NAN], [NAN, NAN, NAN, NAN],
                                                        [NAN, NAN, NAN, 0.25], [NAN, NAN, NAN, NAN]])
    np.testing.assert_array_equal(pool.score("chrF"), [[50.5, 40, NAN, NAN], [NAN, NAN, 30, NAN],
                                                       [NAN, NAN, NAN, NAN], [NAN, NAN, NAN, NAN]])
    np.testing.assert_array_equal(pool.score("bleu")[2], [NAN, 12, NAN, NAN])
    assert pool.human_metrics == {"human"}
    assert pool.references == {"ref": ("r0", None, None, None), "ref_0": (None, "r1a", None, None),
                               "ref_1": (None, None, None, None), "ref_2": (None, "r1c", None, None)}
    assert list(pool.metadata) == ["domain", "doc", "note", "cost", "_record"]
    assert pool.metadata["domain"] == ("news", "web", "news", None)
    assert pool.metadata["doc"] == (None, "d1", None, None) and pool.metadata["cost"] == (None, None, 2.5, None)
    assert pool.metadata["note"] == (None, {"tags": ["x"]}, None, None)
    # _record: each item's own fields, without tgt and scores (the pool holds those)
    assert pool.metadata["_record"][1] == {"i": 1, "src": "s1", "ref": ["r1a", None, "r1c"], "domain": "web",
                                           "doc": "d1", "note": {"tags": ["x"]}}
    assert all("tgt" not in r and "scores" not in r for r in pool.metadata["_record"])


def test_s2e_texts_exist_once(tmp_path):
    recs = [{"i": k, "src": f"source {k}", "ref": f"reference {k}", "ref2": "x", "domain": "news",
             "tgt": {"A": f"out A {k}", "B": f"out B {k}"}} for k in range(3)]
    pool = read_s2e_jsonl(write_lines(tmp_path / "x.jsonl", recs))
    rec = pool.metadata["_record"]
    for k in range(3):
        assert pool.inputs[k] is rec[k]["src"] and pool.references["ref"][k] is rec[k]["ref"]
        assert pool.metadata["domain"][k] is rec[k]["domain"]
        assert "tgt" not in rec[k]  # the outputs live in pool.outputs only
    # a short per-item value and every field name are one object for all items
    assert pool.metadata["domain"][0] is pool.metadata["domain"][2]
    assert next(iter(rec[0])) is next(iter(rec[2]))
    # the Pool keeps the reader's strings (a tuple of references, no copies)
    assert pool.subset([2, 0]).outputs["A"][0] is pool.outputs["A"][2]


def test_s2e_blocks_of_scores_join_up(tmp_path, monkeypatch):
    monkeypatch.setattr(s2e._Grid, "BLOCK", 3)  # many blocks, systems added in the middle of one
    recs = []
    for k in range(11):
        systems = ["A"] + (["B"] if k >= 4 else []) + (["C"] if k >= 7 else [])
        scores = {s: {"m": k * 10 + j} for j, s in enumerate(systems)}
        if k in (2, 9):
            scores = {}  # items without the metric
        if k >= 5:
            scores.setdefault("A", {})["late"] = -k
        recs.append({"src": f"s{k}", "tgt": {s: f"{s}{k}" for s in systems}, "scores": scores})
    pool = read_s2e_jsonl(write_lines(tmp_path / "x.jsonl", recs))
    expect = np.full((11, 3), NAN)
    late = np.full((11, 3), NAN)
    for k, r in enumerate(recs):
        for s, d in r["scores"].items():
            j = "ABC".index(s)
            if "m" in d:
                expect[k, j] = d["m"]
            if "late" in d:
                late[k, j] = d["late"]
    np.testing.assert_array_equal(pool.score("m"), expect)
    np.testing.assert_array_equal(pool.score("late"), late)
    assert pool.outputs["C"] == (None,) * 7 + ("C7", "C8", "C9", "C10")


def test_s2e_key_order_and_round_trip(tmp_path):
    recs = [{"src": "s0", "tgt": {"A": "a"}, "i": 5, "scores": {"A": {"human": 1.0}}, "domain": "x"},  # tgt inside
            {"i": 6, "src": "s1", "scores": {"A": {"human": 0.5}}, "tgt": {"A": "b"}},                  # scores first
            {"i": 7, "src": "s2", "tgt": {"A": "c"}},                                                  # no scores
            {"i": 8, "src": "s3", "ref": ["p", "q"], "tgt": {"A": "d"}, "scores": {"A": {"human": 0.0}}}]
    src = write_lines(tmp_path / "x.jsonl", recs)
    pool = read_s2e_jsonl(src)
    assert pool.metadata["_record"][0] == {"src": "s0", "tgt": None, "i": 5, "scores": None, "domain": "x"}
    assert pool.metadata["_record"][1] == {"i": 6, "src": "s1", "scores": None}
    out = write_s2e_jsonl(pool, tmp_path / "y.jsonl")
    expected = [dict(r, scores=r.get("scores", {"A": {}})) for r in recs]
    assert out.read_text() == "".join(json.dumps(r) + "\n" for r in expected)  # same fields, same order
    again = read_s2e_jsonl(out)
    assert again.item_ids == pool.item_ids and again.outputs == pool.outputs and again.references == pool.references
    np.testing.assert_array_equal(again.score("human"), pool.score("human"))
    assert [dict(r) for r in again.metadata["_record"]] == [dict(r) for r in pool.metadata["_record"]]


@pytest.mark.parametrize("sep", ["\n", "\r\n", "\r"])
def test_s2e_line_endings_bom_gzip_and_blank_lines(tmp_path, sep):
    lines = ["", json.dumps(RECORDS[0]), "   ", json.dumps(RECORDS[1])]
    plain = tmp_path / "x.jsonl"
    plain.write_bytes(b"\xef\xbb\xbf" + sep.join(lines).encode("utf-8"))
    packed = tmp_path / "x.jsonl.gz"
    packed.write_bytes(gzip.compress(plain.read_bytes()))
    for path in (plain, packed):
        pool = read_s2e_jsonl(path)
        assert pool.item_ids == ("0", "1") and pool.outputs["C"] == (None, "c1")
    assert [n for n, _ in iter_jsonl(plain)] == [2, 4]


@pytest.mark.parametrize("lines, pattern", [
    ([RECORDS[0], '{"i": 9, "src": "x", "tgt": {"A": "y", "B": 3}}'],
     r"line 2: output of system 'B' in 'tgt' is a number 3"),
    ([RECORDS[0], "", '{"i": 9, "src": "x", "tgt": {"A": "y"}, "scores": {"A": {"m": "high"}}}'],
     r"line 3: score of system 'A' for metric 'm' is 'high'"),
    ([RECORDS[0], RECORDS[1], RECORDS[0]], r"line 3: item id '0' already used on line 1"),
    ([RECORDS[0], '{"src": "x", "tgt": {"A": "y"}'], r"line 2 is not valid JSON \(Expecting ',' delimiter at column 31\)"),
    ([RECORDS[0], '{"src": "x", "tgt": {}, "ref": 3}'], r"line 2: field 'ref' is a number 3"),
    (['{"src": "x", "tgt": {}, "scores": {"A": 1}}'], r"line 1: field 'scores' must map system"),
])
def test_s2e_errors_name_line_system_and_field(tmp_path, lines, pattern):
    with pytest.raises(DataError, match=pattern) as e:
        read_s2e_jsonl(write_lines(tmp_path / "bad.jsonl", lines))
    assert str(e.value).startswith(str(tmp_path / "bad.jsonl"))
    if "system 'B'" in pattern:
        assert (e.value.system, e.value.field, e.value.item_id) == ("B", "tgt", "9")
    if "metric 'm'" in pattern:
        assert (e.value.system, e.value.field) == ("A", "m")


def test_s2e_bad_bytes_and_bad_gzip_name_the_line(tmp_path):
    path = tmp_path / "bad.jsonl"
    path.write_bytes(json.dumps(RECORDS[0]).encode() + b"\n\n" + '{"src": "caf\u00e9", "tgt": {}}\n'.encode("latin-1"))
    with pytest.raises(DataError) as e:
        read_s2e_jsonl(path)
    assert str(e.value) == (f"{path}: line 3 is not valid UTF-8 (byte 0xe9 at column 13: invalid continuation byte); "
                            "re-save the file as UTF-8.")
    gz = tmp_path / "cut.jsonl.gz"
    many = [{"src": f"s{k}", "tgt": {"A": f"a{k}"}} for k in range(200)]
    gz.write_bytes(gzip.compress(write_lines(tmp_path / "ok.jsonl", many).read_bytes())[:-20])
    with pytest.raises(DataError, match=r"cut\.jsonl\.gz: not a valid gzip file"):
        read_s2e_jsonl(gz)


@pytest.mark.parametrize("data, state", [(b"", "is empty"), (b"\xef\xbb\xbf", "is empty"), (b"\n  \r\n", "holds only blank lines")])
def test_s2e_empty_files(tmp_path, data, state):
    (tmp_path / "e.jsonl").write_bytes(data)
    with pytest.raises(DataError, match=rf"the file {state}, so there are no items"):
        read_s2e_jsonl(tmp_path / "e.jsonl")
    assert first_line(tmp_path / "e.jsonl") == (None, state)


def test_jsonl_is_streamed_not_read_whole(tmp_path, monkeypatch):
    path = write_lines(tmp_path / "x.jsonl", RECORDS)

    def whole(*a, **k):
        raise AssertionError("the file was read whole")
    monkeypatch.setattr(common, "read_text", whole)
    monkeypatch.setattr(common, "read_bytes", whole)
    assert read_s2e_jsonl(path).n_items == 4
    assert [n for n, _ in iter_lines(path)] == [1, 2, 3, 4]


# ------------------------------------------------------------------------------------ Parquet long table
ROWS = [  # item i2 first seen on its second system; inputs and references repeated on every row of an item
    {"item_id": "i1", "system": "A", "output": "a1", "input": "x1", "reference": "r1", "domain": "news",
     "human": 0.9, "bleu": 30, "rating": "3", "note": "ok", "cost": 1.5},
    {"item_id": "i1", "system": "B", "output": "b1", "input": "x1", "reference": "r1", "domain": "news",
     "human": None, "bleu": None, "rating": "NA", "note": None, "cost": 1.5},
    {"item_id": "i2", "system": "B", "output": None, "input": None, "reference": None, "domain": None,
     "human": 0.1, "bleu": 25, "rating": "-", "note": "meh", "cost": None},
    {"item_id": "i2", "system": "C", "output": "c2", "input": "x2", "reference": None, "domain": "web",
     "human": 0.5, "bleu": 20, "rating": "4", "note": None, "cost": 3.0},
    {"item_id": "i3", "system": "A", "output": "a3", "input": "x3", "reference": "r3", "domain": "web",
     "human": None, "bleu": None, "rating": None, "note": None, "cost": None},
]


def _parquet(path: Path, rows: list[dict], row_group_size: int | None = None) -> Path:
    pq = pytest.importorskip("pyarrow.parquet")
    import pyarrow as pa
    pq.write_table(pa.Table.from_pylist(rows), path, row_group_size=row_group_size)
    return path


def _csv(path: Path, rows: list[dict]) -> Path:
    import csv
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows({k: "" if v is None else v for k, v in r.items()} for r in rows)
    return path


def _same(a, b):
    assert a.item_ids == b.item_ids and a.inputs == b.inputs and a.systems == b.systems
    assert a.outputs == b.outputs and a.references == b.references and a.human_metrics == b.human_metrics
    assert list(a.scores) == list(b.scores)
    for m in a.scores:
        np.testing.assert_array_equal(a.scores[m], b.scores[m])
    assert list(a.metadata) == list(b.metadata)
    for f in a.metadata:
        x, y = a.metadata[f], b.metadata[f]
        if isinstance(x, np.ndarray):
            np.testing.assert_array_equal(x, y)
        else:
            assert [str(v) for v in x] == [str(v) for v in y], f


@pytest.mark.parametrize("batch, row_group", [(2, 3), (1000, None), (1, 1)])
def test_parquet_by_batches_equals_the_csv_reading(tmp_path, monkeypatch, batch, row_group):
    monkeypatch.setattr(table, "_BATCH", batch)
    pool = read_table(_parquet(tmp_path / "t.parquet", ROWS, row_group), human_metrics=["rating"])
    _same(pool, read_table(_csv(tmp_path / "t.csv", ROWS), human_metrics=["rating"]))
    assert pool.item_ids == ("i1", "i2", "i3") and pool.systems == ("A", "B", "C")
    assert pool.inputs == ("x1", "x2", "x3") and pool.references["ref"] == ("r1", None, "r3")
    assert pool.outputs["B"] == ("b1", None, None) and pool.outputs["C"] == (None, "c2", None)
    np.testing.assert_array_equal(pool.score("rating"), [[3, NAN, NAN], [NAN, NAN, 4], [NAN, NAN, NAN]])
    np.testing.assert_array_equal(pool.score("bleu"), [[30, NAN, NAN], [NAN, 25, 20], [NAN, NAN, NAN]])
    assert pool.human_metrics == {"human", "rating"}
    assert pool.metadata["domain"] == ("news", "web", "web") and pool.metadata["note"] == ("ok", "meh", None)
    np.testing.assert_array_equal(pool.metadata["cost"], [1.5, 3.0, NAN])


def test_parquet_keeps_one_string_per_item_field(tmp_path):
    rows = [dict(r, domain="news") for r in ROWS]
    pool = read_table(_parquet(tmp_path / "t.parquet", rows))
    assert pool.metadata["domain"][0] is pool.metadata["domain"][2]  # short values shared


@pytest.mark.parametrize("change, pattern", [
    (lambda rows: rows.append(dict(rows[1])), r"row 6 repeats item 'i1' system 'B', first seen on row 2"),
    (lambda rows: rows[3].update(system=None), r"row 4: item_id and system must not be empty"),
    (lambda rows: rows[4].update(human="bad"), r"row 5: human score column 'human' holds 'bad', which is not a number"),
    (lambda rows: rows[2].update(cost="slow"), r"row 3: column 'cost' \(the item's annotation cost\) holds 'slow'"),
])
def test_parquet_errors_name_the_row(tmp_path, monkeypatch, change, pattern):
    monkeypatch.setattr(table, "_BATCH", 2)
    rows = [dict(r) for r in ROWS]
    if "human" in pattern or "cost" in pattern:  # a text cell makes the column a text column
        for r in rows:
            r["human"] = None if r["human"] is None else str(r["human"])
            r["cost"] = None if r["cost"] is None else str(r["cost"])
    change(rows)
    with pytest.raises(DataError, match=pattern) as e:
        read_table(_parquet(tmp_path / "t.parquet", rows))
    if "human" in pattern:
        assert (e.value.field, e.value.item_id, e.value.system) == ("human", "i3", "A")


def test_parquet_int_ids_bool_metric_and_mostly_numeric_text(tmp_path):
    rows = [{"item_id": k // 2, "system": "AB"[k % 2], "output": f"o{k}", "ok": k % 3 == 0,
             "score": "n.a." if k == 1 else str(k)} for k in range(6)]
    with pytest.warns(match=r"column 'score' has 1 non-numeric cell among 5 numbers \(first on row 2: 'n\.a\.'\)"):
        pool = read_table(_parquet(tmp_path / "t.parquet", rows))
    assert pool.item_ids == ("0", "1", "2")
    np.testing.assert_array_equal(pool.score("ok"), [[1, 0], [0, 1], [0, 0]])
    assert "score" not in pool.scores and pool.metadata["score"] == ("0", "2", "4")


def test_parquet_categorical_ids_keep_first_seen_order(tmp_path):
    pq = pytest.importorskip("pyarrow.parquet")
    import pyarrow as pa
    ids = pa.DictionaryArray.from_arrays(pa.array([1, 0, 1, 0], type=pa.int32()), pa.array(["a", "b", "unused"]))
    pq.write_table(pa.table({"item_id": ids, "system": ["A", "A", "B", "B"], "output": ["x", "y", "z", "w"],
                             "m": [1, 2, 3, 4]}), tmp_path / "t.parquet")
    pool = read_table(tmp_path / "t.parquet")
    assert pool.item_ids == ("b", "a") and pool.outputs == {"A": ("x", "y"), "B": ("z", "w")}
    np.testing.assert_array_equal(pool.score("m"), [[1, 3], [2, 4]])
