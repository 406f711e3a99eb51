"""The harness readers' shared rules (evalsift.io.harness): the join on shared items and its note, repeated
records, letter grades, bad values, and that every registered harness is a load format with a cheap detector
that leaves other formats alone."""

from __future__ import annotations

import json
import math
import warnings

import numpy as np
import pytest

from evalsift.errors import DataError, DataWarning
from evalsift.io import detect_format, formats, load
from evalsift.io.harness import HARNESSES, Record, pool_from_records, score_value


def _recs():
    return [Record("m1", "a/0", {"acc": 1.0, "f1": 0.5}, input="q0", output="x", reference="r0", group={"task": "a"}),
            Record("m1", "a/1", {"acc": 0.0, "f1": 0.25}, input="q1", group={"task": "a"}),
            Record("m1", "b/0", {"acc": 1.0}, group={"task": "b"}),
            Record("m2", "a/0", {"acc": 0.0, "f1": 1.0}, output="y", group={"task": "a"}),
            Record("m2", "a/1", {"acc": 1.0, "f1": 0.0}, group={"task": "a"})]


def test_runs_that_disagree_on_items_are_joined_on_the_shared_ones_with_a_note_naming_the_rest():
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        pool = pool_from_records(_recs(), name="x", tool="demo")
    assert pool.item_ids == ("a/0", "a/1") and pool.systems == ("m1", "m2")
    assert pool.score("acc").tolist() == [[1.0, 0.0], [0.0, 1.0]]
    assert pool.score("f1").tolist() == [[0.5, 1.0], [0.25, 0.0]]
    assert pool.column("task") == ("a", "a")
    assert pool.inputs[:2] == ("q0", "q1") and pool.outputs["m1"][0] == "x" and pool.outputs["m2"][0] == "y"
    assert pool.references["ref"] == ("r0", None)
    notes = [str(x.message) for x in w if issubclass(x.category, DataWarning)]
    assert len(notes) == 1 and "1 of 3 items are left out" in notes[0] and "m2 lacks 1" in notes[0]
    assert "m1 lacks 0 and has 1 the others lack" in notes[0]


def test_join_all_keeps_every_item_with_nan_where_a_run_has_none():
    pool = pool_from_records(_recs(), name="x", tool="demo", join="all")
    assert pool.item_ids == ("a/0", "a/1", "b/0")
    assert math.isnan(pool.score("acc")[2, 1]) and math.isnan(pool.score("f1")[2, 0])


def test_a_repeated_record_names_both_places():
    recs = [Record("m", "t/1", {"acc": 1}, where="f.jsonl line 1"), Record("m", "t/1", {"acc": 0}, where="f.jsonl line 7")]
    with pytest.raises(DataError, match=r"item 't/1' twice: f\.jsonl line 1 and f\.jsonl line 7"):
        pool_from_records(recs, name="x", tool="demo")


def test_runs_sharing_no_item_are_an_error_naming_them():
    with pytest.raises(DataError, match="runs of m1, m2 share no item"):
        pool_from_records([Record("m1", "a", {"s": 1}), Record("m2", "b", {"s": 1})], name="x", tool="demo")


def test_no_records_is_an_error():
    with pytest.raises(DataError, match="no per-item results"):
        pool_from_records([], name="x", tool="demo")


@pytest.mark.parametrize("value,want", [("C", 1.0), ("I", 0.0), ("P", 0.5), ("N", 0.0), (True, 1.0), (False, 0.0),
                                        (3, 3.0), (np.float32(0.25), 0.25)])
def test_score_values(value, want):
    assert score_value(value, "m", "here") == want


@pytest.mark.parametrize("value", ["yes", [1], {"a": 1}, float("inf")])
def test_a_value_that_is_not_a_score_names_the_metric_and_the_place(value):
    with pytest.raises(DataError, match=r"f\.json entry 3: metric 'match'"):
        score_value(value, "match", "f.json entry 3")


def test_every_harness_is_a_load_format():
    for name, h in HARNESSES.items():
        assert name in formats
        assert h.tool and h.doc


def test_the_detectors_leave_other_formats_alone(tmp_path):
    """A long table, an s2e file and a pairwise file are still read by their own readers with every harness
    module present (a detector must not claim them)."""
    table = tmp_path / "t.jsonl"
    table.write_text("".join(json.dumps({"item_id": f"i{i}", "system": s, "output": "o", "score": i})
                             + "\n" for i in range(3) for s in ("A", "B")), encoding="utf-8")
    s2e = tmp_path / "s.jsonl"
    s2e.write_text(json.dumps({"src": "x", "tgt": {"A": "a", "B": "b"}, "scores": {"A": {"m": 1}, "B": {"m": 0}}}) + "\n",
                   encoding="utf-8")
    battles = tmp_path / "b.jsonl"
    battles.write_text(json.dumps({"question_id": "q", "model_a": "A", "model_b": "B", "winner": "model_a"}) + "\n",
                       encoding="utf-8")
    assert detect_format(table) == "table"
    assert detect_format(s2e) == "s2e"
    assert detect_format(battles) == "pairwise"
    assert load(str(table)).n_items == 3
    with pytest.raises(DataError, match="folder of unknown layout.*harness"):
        detect_format(tmp_path)
