"""Tests of evalsift.io: every reader on small hand-made files, the writers' round trips, format
detection and dataset names, and the real data in ../shared/data (or $EVALSIFT_DATA)."""

from __future__ import annotations

import csv
import gzip
import json
import math
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest
from _data import need as _need
from scipy.stats import spearmanr

from evalsift.errors import DataError, DataWarning, MissingDependencyError, ParameterError, UnknownNameError
from evalsift.io import (data_root, detect_format, find_datasets, load, make_demo_pool, read_alpaca,
                         read_mtme, read_s2e_jsonl, read_summeval, read_table, write_s2e_jsonl, write_table)

NAN = np.nan


def need(data_dir: Path, rel: str) -> Path:
    return _need(rel)


def write_jsonl(path: Path, records: list) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


# ---------------------------------------------------------------------------------------------- s2e
S2E = [
    {"i": 7, "src": "s0", "ref": "r0", "domain": "news", "doc": "d1", "cost": 2.0, "extra": "x",
     "tgt": {"A": "a0", "B": "b0"}, "scores": {"A": {"human": 1.0, "chrF": 50}, "B": {"human": 0.0, "chrF": 40}}},
    {"i": 8, "src": "s1", "ref": ["r1a", "r1b"], "domain": "web",
     "tgt": {"A": "a1", "C": "c1"}, "scores": {"A": {"human": 0.5}, "C": {"human": None, "chrF": 30}}},
    {"i": 9, "src": "s2", "tgt": {"B": "b2"}, "scores": {"B": {"chrF": 20}}},
]


def test_s2e_union_of_systems_and_metrics_with_nan_and_none(tmp_path):
    pool = read_s2e_jsonl(write_jsonl(tmp_path / "x.jsonl", S2E))
    assert pool.item_ids == ("7", "8", "9")
    assert pool.systems == ("A", "B", "C")  # first-seen order over tgt/scores
    assert pool.inputs == ("s0", "s1", "s2")
    assert pool.outputs["B"] == ("b0", None, "b2")
    assert pool.outputs["C"] == (None, "c1", None)
    np.testing.assert_array_equal(pool.score("human"), [[1.0, 0.0, NAN], [0.5, NAN, NAN], [NAN, NAN, NAN]])
    np.testing.assert_array_equal(pool.score("chrF"), [[50, 40, NAN], [NAN, NAN, 30], [NAN, 20, NAN]])
    assert pool.human_metrics == {"human"}  # subset2evaluate convention
    assert pool.references["ref"] == ("r0", None, None)
    assert pool.references["ref_0"] == (None, "r1a", None) and pool.references["ref_1"] == (None, "r1b", None)
    assert pool.metadata["domain"] == ("news", "web", None)
    assert pool.metadata["cost"] == (2.0, None, None) and pool.metadata["extra"] == ("x", None, None)
    assert pool.metadata["_record"][1]["ref"] == ["r1a", "r1b"]
    assert pool.name.endswith("x.jsonl")


def test_s2e_ids_default_to_position_and_human_metrics_override(tmp_path):
    recs = [{"src": "a", "tgt": {"A": "x"}, "scores": {"A": {"human": 1, "m": 2}}}, {"src": "b", "tgt": {"A": "y"}}]
    pool = read_s2e_jsonl(write_jsonl(tmp_path / "x.jsonl", recs), human_metrics=["m"])
    assert pool.item_ids == ("0", "1")
    assert pool.human_metrics == {"m"}
    with pytest.raises(DataError, match=r"human_metrics \['nope'\].*Available metrics: human, m"):
        read_s2e_jsonl(tmp_path / "x.jsonl", human_metrics=["nope"])


@pytest.mark.parametrize("lines, pattern", [
    (['{"src": "a", "tgt": {"A": "x"}}', "{not json"], r"line 2 is not valid JSON"),
    (['{"src": "a", "tgt": {"A": "x"}}', "", '{"src": "b"}'], r"line 3: field 'tgt'"),
    (['{"tgt": {"A": "x"}}'], r"line 1: field 'src'"),
    (['{"src": "a", "tgt": {"A": "x"}, "scores": {"A": {"m": "high"}}}'], r"line 1: score of system 'A' for metric 'm'"),
    (['{"i": 1, "src": "a", "tgt": {}}', '{"i": 1, "src": "b", "tgt": {}}'], r"line 2: item id '1' already used on line 1"),
    (['[1, 2]'], r"line 1: expected a JSON object"),
])
def test_s2e_errors_name_the_line(tmp_path, lines, pattern):
    path = tmp_path / "bad.jsonl"
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(DataError, match=pattern) as e:
        read_s2e_jsonl(path)
    assert "bad.jsonl" in str(e.value)


def test_s2e_round_trip_keeps_original_fields_and_adds_extra(tmp_path):
    src = write_jsonl(tmp_path / "x.jsonl", S2E)
    pool = read_s2e_jsonl(src)
    out = write_s2e_jsonl(pool, tmp_path / "y.jsonl", extra={"subset2evaluate_utility": np.array([0.5, 0.25, 0.0])})
    back = [json.loads(line) for line in out.read_text().splitlines()]
    for orig, rec in zip(S2E, back):
        assert rec.pop("subset2evaluate_utility") in (0.5, 0.25, 0.0)
        # scores with null are dropped (NaN is 'missing'); everything else is unchanged
        expected = json.loads(json.dumps(orig))
        expected["scores"] = {s: {m: v for m, v in d.items() if v is not None} for s, d in orig["scores"].items()}
        assert rec == expected
    again = read_s2e_jsonl(out)
    np.testing.assert_array_equal(again.score("chrF"), pool.score("chrF"))
    assert again.outputs == pool.outputs and again.item_ids == pool.item_ids


def test_s2e_write_of_a_views_and_other_pools(tmp_path):
    pool = read_s2e_jsonl(write_jsonl(tmp_path / "x.jsonl", S2E)).with_systems(["A"])
    rec = json.loads((write_s2e_jsonl(pool, tmp_path / "y.jsonl")).read_text().splitlines()[0])
    assert rec["tgt"] == {"A": "a0"} and rec["scores"] == {"A": {"human": 1.0, "chrF": 50.0}}
    demo = make_demo_pool(12, seed=3)
    back = read_s2e_jsonl(write_s2e_jsonl(demo, tmp_path / "demo.jsonl"))
    assert back.item_ids == demo.item_ids and back.systems == demo.systems and back.outputs == demo.outputs
    np.testing.assert_array_equal(back.score("token_f1"), demo.score("token_f1"))
    assert back.references["ref"] == demo.references["ref"] and back.metadata["domain"] == demo.metadata["domain"]
    with pytest.raises(DataError, match=r"extra field 'u' has 2 values but the pool has 12 items"):
        write_s2e_jsonl(demo, tmp_path / "z.jsonl", extra={"u": [1, 2]})


# --------------------------------------------------------------------------------------------- mtme
def make_mtme(root: Path, testset: str = "wmt99", lp: str = "xx-yy", docs: bool = True, human: bool = True) -> Path:
    """A 3-segment mt-metrics-eval tree: systems sysA, sysB; references refX (human), synthetic_ref."""
    t = root / "mt-metrics-eval-v2" / testset
    files = {
        f"sources/{lp}.txt": "one\ntwo\u2028still two\nthree\n",  # U+2028 must not split a segment
        f"references/{lp}.refX.txt": "r1\nr2\nr3\n",
        f"references/{lp}.synthetic_ref.txt": "q1\nq2\nq3\n",
        f"system-outputs/{lp}/sysA.txt": "a1\na2\na3\n",
        f"system-outputs/{lp}/sysB.txt": "b1\r\nb2\r\nb3\r\n",
        f"system-outputs/{lp}/refX.txt": "r1\nr2\nr3\n",
        f"system-outputs/{lp}/synthetic_ref.txt": "q1\nq2\nq3\n",
        f"metric-scores/{lp}/BLEU-refX.seg.score":
            "sysA\t10\nsysA\t20\nsysA\t30\nsynthetic_ref\t1\nsynthetic_ref\t2\nsynthetic_ref\t3\n"
            "gone\t1\ngone\t2\ngone\t3\n",
        f"metric-scores/{lp}/BLEU-refX.sys.score": "sysA\t20\n",
    }
    if docs:
        files[f"documents/{lp}.docs"] = "news\tdoc1\nnews\tdoc1\nsocial\tdoc2\n"
    if human:
        files[f"human-scores/{lp}.mqm.seg.score"] = (
            "sysA\t-1\nsysA\tNone\nsysA\t0\nsysB\t-5\nsysB\tNone\nsysB\t-2.5\nrefX\t0\nrefX\tNone\nrefX\t-1\n")
        files[f"human-scores/{lp}.mqm.sys.score"] = "sysA\t-0.5\n"
    for rel, text in files.items():
        (t / rel).parent.mkdir(parents=True, exist_ok=True)
        (t / rel).write_bytes(text.encode("utf-8"))
    return t / lp


def test_mtme_any_language_pair(tmp_path):
    pool = read_mtme(make_mtme(tmp_path))
    assert pool.systems == ("sysA", "sysB")  # refX and synthetic_ref are references, not systems
    assert pool.item_ids == ("0", "1", "2") and pool.inputs == ("one", "two\u2028still two", "three")
    assert pool.outputs["sysB"] == ("b1", "b2", "b3")  # CRLF stripped
    np.testing.assert_array_equal(pool.score("mqm"), [[-1, -5], [NAN, NAN], [0, -2.5]])
    np.testing.assert_array_equal(pool.score("BLEU-refX"), [[10, NAN], [20, NAN], [30, NAN]])  # sysB unscored
    assert pool.human_metrics == {"mqm"} and set(pool.scores) == {"mqm", "BLEU-refX"}  # .sys.score ignored
    assert pool.complete("mqm").item_ids == ("0", "2")
    assert pool.references["refX"] == ("r1", "r2", "r3") and "synthetic_ref" in pool.references
    assert pool.metadata["domain"] == ("news", "news", "social") and pool.metadata["doc"] == ("doc1", "doc1", "doc2")


def test_mtme_include_refs(tmp_path):
    path = make_mtme(tmp_path)
    pool = read_mtme(path, include_refs=True)
    assert pool.systems == ("refX", "sysA", "sysB")  # human reference in, synthetic one out
    np.testing.assert_array_equal(pool.score("mqm", "refX"), [0, NAN, -1])
    assert read_mtme(path, include_refs=["synthetic_ref"]).systems == ("synthetic_ref", "sysA", "sysB")
    with pytest.raises(DataError, match="include_refs"):
        read_mtme(path, include_refs=["refZ"])


def test_mtme_optional_parts_missing(tmp_path):
    pool = read_mtme(make_mtme(tmp_path, testset="newstest2030", lp="de-fr", docs=False, human=False))
    assert pool.metadata == {} and pool.human_metrics == frozenset() and list(pool.scores) == ["BLEU-refX"]


def test_mtme_errors(tmp_path):
    path = make_mtme(tmp_path)
    score = path.parent / "human-scores" / "xx-yy.mqm.seg.score"
    score.write_text("sysA\t1\nsysA\t2\nsysA\t3\nsysB\t1\nsysB\t2\n")
    with pytest.raises(DataError, match=r"mqm.seg.score: system 'sysB' has 2 score lines, expected 3"):
        read_mtme(path)
    score.write_text("sysA\t1\nsysA\tbad\nsysA\t3\n")
    with pytest.raises(DataError, match=r"system 'sysA' has score 'bad'"):
        read_mtme(path)
    score.unlink()
    (path.parent / "system-outputs" / "xx-yy" / "sysA.txt").write_text("a1\na2\n")
    with pytest.raises(DataError, match=r"sysA.txt: output of system 'sysA' has 2 lines, expected 3"):
        read_mtme(path)
    with pytest.raises(DataError, match=r"Language pairs in .*wmt99: xx-yy"):
        read_mtme(path.parent / "en-de")


def test_mtme_names_under_data_root(tmp_path, monkeypatch):
    make_mtme(tmp_path / "wmt99-data")  # <root>/*/mt-metrics-eval-v2/<testset>/...
    make_mtme(tmp_path, testset="wmt98", lp="aa-bb")  # <root>/mt-metrics-eval-v2/<testset>/...
    monkeypatch.setenv("EVALSIFT_DATA", str(tmp_path))
    assert {"wmt99/xx-yy", "wmt98/aa-bb", "demo"} <= set(find_datasets())
    pool = load("wmt99/xx-yy", include_refs=True)
    assert pool.name == "wmt99/xx-yy" and pool.n_systems == 3
    assert load("wmt98/aa-bb").systems == ("sysA", "sysB")


# ----------------------------------------------------------------------------------------- summeval
def test_summeval_natural_order_missing_system_and_references(tmp_path):
    def summ(text, c):
        return {"sys_summ": text, "scores": {"coherence": c, "consistency": 5, "fluency": 4, "relevance": 3}}
    data = {
        "d1": {"src": "doc one", "ref_summ": "r0", "ref_summs": ["r0", "r1", "r2"],
               "sys_summs": {"M10": summ("x10", 1.0), "M2": summ("x2", 2.0), "M1": summ("x1", 3.0)}},
        "d2": {"src": "doc two", "ref_summ": "q0", "ref_summs": ["q0", "q1", "q2"],
               "sys_summs": {"M2": summ("y2", 4.0), "M1": summ("y1", 5.0)}},
    }
    path = tmp_path / "summeval.json"
    path.write_text(json.dumps(data))
    pool = read_summeval(path)
    assert pool.item_ids == ("d1", "d2") and pool.inputs == ("doc one", "doc two")
    assert pool.systems == ("M1", "M2", "M10")
    assert pool.outputs["M10"] == ("x10", None)
    np.testing.assert_array_equal(pool.score("coherence"), [[3, 2, 1], [5, 4, NAN]])
    assert pool.human_metrics == {"coherence", "consistency", "fluency", "relevance"}
    assert list(pool.references) == ["ref_0", "ref_1", "ref_2"] and pool.references["ref_2"] == ("r2", "q2")
    path.write_text(json.dumps({"d1": {"src": "x"}}))
    with pytest.raises(DataError, match=r"document 'd1' must be an object with 'src' and 'sys_summs'"):
        read_summeval(path)


# ------------------------------------------------------------------------------------------- alpaca
def make_alpaca(root: Path, instructions: bool = True, prefs: bool = True) -> Path:
    (root / "model_outputs").mkdir(parents=True)
    rows = [("helpful_base", "q0"), ("koala", "q1"), ("oasst", "q2")]
    a = [{"dataset": d, "instruction": q, "output": f"a-{q}", "generator": "mA"} for d, q in rows]
    b = [{"dataset": d, "instruction": q, "output": f"b-{q}", "generator": "mB"} for d, q in rows[::-1][:2]]
    (root / "model_outputs" / "mA.json").write_text(json.dumps(a))
    (root / "model_outputs" / "mB.json").write_text(json.dumps(b))  # lacks q0, other order
    if instructions:
        write_jsonl(root / "instructions.jsonl",
                    [{"instruction_idx": k, "dataset": d, "instruction": q} for k, (d, q) in enumerate(rows)])
    if prefs:
        head = ["model_dir", "annotator_config", "instruction_idx", "generator_1", "generator_2", "annotator",
                "preference", "len_output_1", "len_output_2"]
        lines = [["mA", "weighted_alpaca_eval_gpt4_turbo", 0, "base", "mA", "w", 1.25, 1, 1],
                 ["mA", "weighted_alpaca_eval_gpt4_turbo", 2, "base", "mA", "w", 2.0, 1, 1],
                 ["mA", "alpaca_eval_gpt4", 1, "base", "mA", "w", 2.0, 1, 1],  # other judge: ignored
                 ["mB", "weighted_alpaca_eval_gpt4_turbo", 1, "base", "mB", "w", 1.9, 1, 1],
                 ["mZ", "weighted_alpaca_eval_gpt4_turbo", 1, "base", "mZ", "w", 1.0, 1, 1]]  # not a system
        with gzip.open(root / "preferences_all_annotators.csv.gz", "wt", newline="") as f:
            csv.writer(f).writerows([head, *lines])
    return root


def test_alpaca_join_on_instruction_with_judge_metric(tmp_path):
    pool = read_alpaca(make_alpaca(tmp_path / "ae"))
    assert pool.item_ids == ("0", "1", "2") and pool.systems == ("mA", "mB")
    assert pool.inputs == ("q0", "q1", "q2") and pool.metadata["domain"] == ("helpful_base", "koala", "oasst")
    assert pool.outputs["mB"] == (None, "b-q1", "b-q2")
    # preference - 1: 1.25 -> 0.25, 2.0 -> 1.0, 1.9 -> 0.9 (float arithmetic, hence allclose)
    np.testing.assert_allclose(pool.score("gpt4_turbo_pref"), [[0.25, NAN], [NAN, 0.9], [1.0, NAN]])
    assert not pool.is_human("gpt4_turbo_pref")
    assert read_alpaca(tmp_path / "ae", models=["mB"]).systems == ("mB",)
    with pytest.raises(DataError, match=r"models \['mC'\] have no file.*Available: mA, mB"):
        read_alpaca(tmp_path / "ae", models=["mC"])


def test_alpaca_without_instructions_uses_first_file_rows(tmp_path):
    root = make_alpaca(tmp_path / "ae", instructions=False)
    extra = json.loads((root / "model_outputs" / "mB.json").read_text()) + [
        {"dataset": "vicuna", "instruction": "q9", "output": "b-q9", "generator": "mB"}]
    (root / "model_outputs" / "mB.json").write_text(json.dumps(extra))
    pool = read_alpaca(root)
    assert pool.item_ids == ("0", "1", "2", "3") and pool.inputs[3] == "q9"
    assert pool.outputs["mA"][3] is None and pool.scores == {}  # no instruction_idx -> no judge join


def test_alpaca_unknown_instruction_is_an_error(tmp_path):
    root = make_alpaca(tmp_path / "ae", prefs=False)
    rows = json.loads((root / "model_outputs" / "mB.json").read_text())
    rows[1]["instruction"] = "q7"
    (root / "model_outputs" / "mB.json").write_text(json.dumps(rows))
    with pytest.raises(DataError, match=r"mB.json: row 1 has an instruction that is not in instructions.jsonl"):
        read_alpaca(root)


# -------------------------------------------------------------------------------------------- table
CSV_TEXT = (
    "item_id,system,output,input,reference,domain,cost,human,bleu,note\n"
    "i1,A,a1,x1,r1,news,1.5,0.9,30,ok\n"
    "i1,B,b1,x1,r1,news,1.5,0.1,,meh\n"
    "i2,A,a2,x2,,web,,,25,\n"
)


def test_table_csv_reads_metrics_fields_and_gaps(tmp_path):
    path = tmp_path / "t.csv"
    path.write_text(CSV_TEXT)
    pool = read_table(path)
    assert pool.item_ids == ("i1", "i2") and pool.systems == ("A", "B")
    assert pool.inputs == ("x1", "x2") and pool.outputs["B"] == ("b1", None)
    np.testing.assert_array_equal(pool.score("human"), [[0.9, 0.1], [NAN, NAN]])
    np.testing.assert_array_equal(pool.score("bleu"), [[30, NAN], [25, NAN]])
    assert pool.human_metrics == {"human"} and set(pool.scores) == {"human", "bleu"}  # 'note' is text
    assert pool.references["ref"] == ("r1", None)
    assert pool.metadata["domain"] == ("news", "web") and pool.metadata["note"] == ("ok", None)
    np.testing.assert_array_equal(pool.metadata["cost"], [1.5, NAN])
    assert read_table(path, human_metrics=["bleu"]).human_metrics == {"human", "bleu"}


def test_table_tsv_jsonl_and_errors(tmp_path):
    tsv = tmp_path / "t.tsv"
    tsv.write_text(CSV_TEXT.replace(",", "\t"))
    assert read_table(tsv).n_items == 2
    jl = write_jsonl(tmp_path / "t.jsonl", [{"item_id": 1, "system": "A", "output": "o", "human_fluency": 3},
                                            {"item_id": 2, "system": "A", "output": None, "human_fluency": None}])
    pool = read_table(jl)
    assert pool.item_ids == ("1", "2") and pool.outputs["A"] == ("o", None) and pool.human_metrics == {"human_fluency"}
    dup = tmp_path / "dup.csv"
    dup.write_text("item_id,system,output\ni1,A,x\ni2,A,y\ni1,A,z\n")
    with pytest.raises(DataError, match=r"dup.csv: line 4 repeats item 'i1' system 'A', first seen on line 2"):
        read_table(dup)
    bad = tmp_path / "bad.csv"
    bad.write_text("item,system,output\ni1,A,x\n")
    with pytest.raises(DataError, match=r"missing required column\(s\) \['item_id'\]"):
        read_table(bad)


def test_table_round_trips(tmp_path):
    demo = make_demo_pool(10, seed=4)
    for suffix in (".csv", ".jsonl", ".tsv", ".parquet"):
        back = read_table(write_table(demo, tmp_path / f"demo{suffix}"))
        assert back.item_ids == demo.item_ids and back.systems == demo.systems and back.outputs == demo.outputs
        np.testing.assert_allclose(back.score("token_f1"), demo.score("token_f1"))
        assert back.is_human("human") and back.metadata["domain"] == demo.metadata["domain"]
        assert back.references["ref"] == demo.references["ref"]


def test_table_gzipped_csv_tsv_jsonl_read_as_their_plain_selves(tmp_path):
    # issue 29: judge files could be gzipped, long tables could not ("unknown table format '.gz'")
    demo = make_demo_pool(10, seed=4)
    for suffix in (".csv", ".tsv", ".jsonl"):
        written = write_table(demo, tmp_path / f"demo{suffix}.gz")
        assert written.read_bytes()[:2] == b"\x1f\x8b"  # really gzipped, not plain text under a .gz name
        plain = write_table(demo, tmp_path / f"demo{suffix}")
        assert gzip.decompress(written.read_bytes()) == plain.read_bytes()
        for pool in (read_table(written), load(str(written)), load(f"table:{written}")):
            assert pool.item_ids == demo.item_ids and pool.outputs == demo.outputs
            np.testing.assert_allclose(pool.score("token_f1"), demo.score("token_f1"))
            assert pool.is_human("human")
        assert detect_format(written) == "table"
    parquet_gz = tmp_path / "t.parquet.gz"
    parquet_gz.write_bytes(gzip.compress(b"PAR1"))
    with pytest.raises(DataError, match=r"t\.parquet\.gz: a Parquet file is read as it is, not gzipped"):
        read_table(parquet_gz)
    (tmp_path / "t.gz").write_bytes(gzip.compress(b"item_id,system,output\n"))
    with pytest.raises(DataError, match=r"t\.gz: cannot tell the format from suffix '\.gz'"):
        load(str(tmp_path / "t.gz"))


def test_json_errors_say_where_once(tmp_path):
    # issue 29: Python's message for a control character ends in "at", and ours added "at column N":
    # "Invalid control character at at column 15"
    jl = tmp_path / "t.jsonl"
    jl.write_text('{"item_id": "1\t2", "system": "A", "output": "x"}\n')  # a raw tab inside a string
    with pytest.raises(DataError) as e:
        read_table(jl)
    # the tab is the 15th character of the line: '{"item_id": "1' is 14 characters
    assert "line 1 is not valid JSON (Invalid control character at column 15)" in str(e.value)
    whole = tmp_path / "t.json"
    whole.write_text('[{"a": "1\t2"}]')
    with pytest.raises(DataError) as e:
        load(str(whole))
    # '[{"a": "1' is 9 characters: the tab is column 10
    assert "not valid JSON (Invalid control character at line 1 column 10)" in str(e.value)
    assert " at at " not in str(e.value)


def test_table_parquet_without_pyarrow(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "pyarrow.parquet", None)
    (tmp_path / "t.parquet").write_bytes(b"")
    with pytest.raises(MissingDependencyError, match=r"pip install 'evalsift\[parquet\]'"):
        read_table(tmp_path / "t.parquet")


# ------------------------------------------------------------------- files that cannot be read as text
LATIN1_CSV = "item_id,system,output\ni1,A,caf\u00e9\n".encode("latin-1")
PNG = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01"


def _latin1_lines(*lines: str) -> bytes:
    return "".join(line + "\n" for line in lines).encode("latin-1")


@pytest.mark.parametrize("name, data, read, line, column, byte", [
    ("s.jsonl", _latin1_lines('{"src": "a", "tgt": {"A": "x"}}', '{"src": "caf\u00e9", "tgt": {"A": "y"}}'),
     read_s2e_jsonl, 2, 13, "0xe9"),
    ("s.jsonl", _latin1_lines('{"src": "caf\u00e9", "tgt": {"A": "y"}}'), load, 1, 13, "0xe9"),  # format detection
    ("t.jsonl", _latin1_lines('{"item_id": 1, "system": "A", "output": "ol\u00e9"}'), read_table, 1, 44, "0xe9"),
    ("t.csv", LATIN1_CSV, read_table, 2, 9, "0xe9"),
    ("t.csv", LATIN1_CSV, load, 2, 9, "0xe9"),
    ("t.tsv", LATIN1_CSV.replace(b",", b"\t"), read_table, 2, 9, "0xe9"),
    ("summeval.json", '{"d1": {"src": "caf\u00e9"}}'.encode("latin-1"), read_summeval, 1, 20, "0xe9"),
])
def test_non_utf8_files_name_the_line(tmp_path, name, data, read, line, column, byte):
    path = tmp_path / name
    path.write_bytes(data)
    with pytest.raises(DataError) as e:
        read(str(path))
    assert str(e.value) == (f"{path}: line {line} is not valid UTF-8 (byte {byte} at column {column}: "
                            "invalid continuation byte); re-save the file as UTF-8.")


@pytest.mark.parametrize("name", ["x.jsonl", "x.csv", "x.tsv"])
def test_binary_file_renamed_as_text(tmp_path, name):
    (tmp_path / name).write_bytes(PNG)
    with pytest.raises(DataError, match=rf"{name}: line 1 is not valid UTF-8 \(byte 0x89 at column 1: invalid start "
                                        r"byte\); re-save the file as UTF-8\. It looks like a PNG image"):
        load(str(tmp_path / name))


def test_gzip_renamed_csv_and_broken_gzip(tmp_path):
    (tmp_path / "t.csv").write_bytes(gzip.compress(b"item_id,system,output\ni1,A,x\n"))
    with pytest.raises(DataError, match=r"t\.csv: line 1 is not valid UTF-8 \(byte 0x8b at column 2.*"
                                        r"It looks like gzip-compressed data, not a text file\."):
        load(str(tmp_path / "t.csv"))


def test_alpaca_files_that_are_not_utf8_or_not_gzip(tmp_path):
    root = make_alpaca(tmp_path / "ae")
    prefs = root / "preferences_all_annotators.csv.gz"
    prefs.write_bytes(b"model_dir,preference\nmA,1.5\n")  # plain text with a .gz name
    with pytest.raises(DataError, match=r"preferences_all_annotators\.csv\.gz: not a valid gzip file \(Not a gzipped"):
        read_alpaca(root)
    prefs.write_bytes(gzip.compress(b"model_dir,preference\n" * 50)[:-10])  # truncated download
    with pytest.raises(DataError, match=r"preferences_all_annotators\.csv\.gz: not a valid gzip file"):
        read_alpaca(root)
    prefs.write_bytes(gzip.compress(_latin1_lines("model_dir,annotator_config", "caf\u00e9,x")))
    with pytest.raises(DataError, match=r"preferences_all_annotators\.csv\.gz: line 2 is not valid UTF-8 \(byte 0xe9"):
        read_alpaca(root)
    prefs.unlink()
    (root / "instructions.jsonl").write_bytes(_latin1_lines('{"instruction_idx": 0, "instruction": "caf\u00e9"}'))
    with pytest.raises(DataError, match=r"instructions\.jsonl: line 1 is not valid UTF-8 \(byte 0xe9 at column 43"):
        read_alpaca(root)
    (root / "model_outputs" / "mB.json").write_bytes("\ufeff[]".encode("utf-16"))
    with pytest.raises(DataError, match=r"mB\.json: line 1 is not valid UTF-8 \(byte 0xff at column 1: invalid start "
                                        r"byte\); re-save the file as UTF-8\. It looks like UTF-16 text\."):
        read_alpaca(root)
    (root / "model_outputs" / "mB.json").write_text("[{bad")  # syntax errors stay DataErrors
    with pytest.raises(DataError, match=r"mB\.json: not valid JSON \(.*line 1 column 3\)"):
        read_alpaca(root)


def test_utf8_bom_is_dropped(tmp_path):
    (tmp_path / "t.csv").write_bytes(b"\xef\xbb\xbf" + CSV_TEXT.encode("utf-8"))
    assert read_table(tmp_path / "t.csv").item_ids == ("i1", "i2")  # first column is item_id, not '\ufeffitem_id'
    s2e = tmp_path / "s.jsonl"
    s2e.write_bytes(b"\xef\xbb\xbf" + json.dumps(S2E[0]).encode("utf-8") + b"\n")
    assert detect_format(s2e) == "s2e" and read_s2e_jsonl(s2e).item_ids == ("7",)


def test_not_parquet_folder_missing_and_unreadable_files(tmp_path, monkeypatch):
    pytest.importorskip("pyarrow.parquet")
    (tmp_path / "t.parquet").write_text("item_id,system,output\ni1,A,x\n")
    with pytest.raises(DataError, match=r"t\.parquet: not a readable Parquet file \(Parquet magic bytes not found"):
        read_table(tmp_path / "t.parquet")
    (tmp_path / "d.csv").mkdir()
    with pytest.raises(DataError, match=r"d\.csv is a folder, but a file was expected here"):
        read_table(tmp_path / "d.csv")
    with pytest.raises(DataError, match=r"nope\.jsonl: no such file; check the path\."):
        read_s2e_jsonl(tmp_path / "nope.jsonl")
    with pytest.raises(DataError, match=r"summeval\.json: no such file"):
        read_summeval(tmp_path)  # a folder without summeval.json
    locked = tmp_path / "locked.csv"
    locked.write_text(CSV_TEXT)

    def denied(self):
        raise PermissionError(13, "Permission denied", str(self))
    monkeypatch.setattr(Path, "read_bytes", denied)  # chmod does not stop root, so fake the OS answer
    with pytest.raises(DataError, match=r"locked\.csv: permission denied; cannot read the file"):
        load(str(locked))


# ----------------------------------------------------------------------------- numbers in long tables
def test_missing_value_tokens_are_nan_and_negative_numbers_stay():
    from evalsift.io._common import MISSING_TOKENS, to_float
    assert {"n/a", "N/A", "NULL", "-", "NA", "null", ""} <= MISSING_TOKENS
    for token in MISSING_TOKENS:
        assert math.isnan(to_float(token)) and math.isnan(to_float(f" {token} "))
    assert to_float("-1") == -1.0 and to_float("-2.5e1") == -25.0 and to_float(-3) == -3.0
    for bad in ("--", "n.a.", "abc"):
        with pytest.raises(ValueError):
            to_float(bad)


def test_table_missing_tokens_keep_human_column_numeric(tmp_path):
    path = tmp_path / "t.csv"
    path.write_text("item_id,system,output,human,bleu\n"
                    "i1,A,a,-1,n/a\ni1,B,b,N/A,30\ni2,A,c,NULL,-\ni2,B,d,-,-2.5\ni3,A,e,NA,\n")
    with warnings.catch_warnings():
        warnings.simplefilter("error", DataWarning)
        pool = read_table(path)
    assert pool.human_metrics == {"human"} and set(pool.scores) == {"human", "bleu"}
    np.testing.assert_array_equal(pool.score("human"), [[-1, NAN], [NAN, NAN], [NAN, NAN]])
    np.testing.assert_array_equal(pool.score("bleu"), [[NAN, 30], [NAN, -2.5], [NAN, NAN]])


def test_table_human_column_with_text_is_an_error_naming_line_and_value(tmp_path):
    path = tmp_path / "judged.csv"
    path.write_text("item_id,system,output,human,annotator\ni1,A,a,0.5,ann1\ni1,B,b,bad,ann2\ni2,A,c,,ann1\n")
    with pytest.raises(DataError) as e:
        load(str(path))
    assert str(e.value) == (
        f"{path}: line 3: human score column 'human' holds 'bad', which is not a number. Blank the cell (a missing "
        "value) or put a number there; if 'human' is not a score, rename it (human and human_* name human metrics).")
    assert (e.value.field, e.value.item_id, e.value.system) == ("human", "i1", "B")
    jl = tmp_path / "judged.jsonl"  # JSONL line numbers count blank lines; the count of bad cells is given
    jl.write_text('{"item_id": 1, "system": "A", "output": "o", "human_mqm": -2}\n\n'
                  '{"item_id": 1, "system": "B", "output": "o", "human_mqm": "major"}\n'
                  '{"item_id": 2, "system": "B", "output": "o", "human_mqm": [1]}\n')
    with pytest.raises(DataError, match=r"judged\.jsonl: line 3: human score column 'human_mqm' holds 'major', which is "
                                        r"not a number \(2 cells of the column are not numbers\)\. Blank the cell"):
        read_table(jl)


def test_table_column_listed_in_human_metrics_must_be_numeric(tmp_path):
    path = tmp_path / "t.csv"
    path.write_text("item_id,system,output,rating\ni1,A,a,3\ni1,B,b,three\n")
    with pytest.raises(DataError, match=r"t\.csv: line 3: human score column 'rating' \(listed in human_metrics\) holds "
                                        r"'three', which is not a number\..*leave it out of human_metrics"):
        read_table(path, human_metrics=["rating"])
    pq = pytest.importorskip("pyarrow.parquet")
    import pyarrow as pa
    pq.write_table(pa.Table.from_pylist([{"item_id": "1", "system": "A", "output": "o", "rating": "3"},
                                         {"item_id": "1", "system": "B", "output": "o", "rating": "three"}]),
                   tmp_path / "t.parquet")
    with pytest.raises(DataError, match=r"t\.parquet: row 2: human score column 'rating' \(listed in human_metrics\) "
                                        r"holds 'three'"):
        read_table(tmp_path / "t.parquet", human_metrics=["rating"])


def test_table_cost_must_be_numeric(tmp_path):
    path = tmp_path / "t.csv"
    path.write_text("item_id,system,output,cost\ni1,A,a,1.5\ni2,A,b,slow\n")
    with pytest.raises(DataError, match=r"t\.csv: line 3: column 'cost' \(the item's annotation cost\) holds 'slow'"):
        read_table(path)


def test_table_mostly_numeric_column_with_text_warns_and_stays_metadata(tmp_path):
    path = tmp_path / "m.csv"
    path.write_text("item_id,system,output,human,bleu,note\n"
                    "i1,A,a,1,30,ok\ni1,B,b,0,n.a.,meh\ni2,A,c,1,25,3\ni2,B,d,0,-2.5,\n")
    with pytest.warns(DataWarning, match=r"m\.csv: column 'bleu' has 1 non-numeric cell among 3 numbers "
                                         r"\(first on line 3: 'n\.a\.'\); kept as per-item metadata, not as a metric; "
                                         r"blank or fix those cells to use it as a metric\.") as record:
        pool = load(str(path))
    assert len(record) == 1 and "'bleu'" in str(record[0].message)  # 'note' (mostly text) is silent
    assert record[0].filename == __file__  # points at the caller, not into evalsift.io
    assert "bleu" not in pool.scores and pool.metrics == ("human",) and pool.human_metrics == {"human"}
    assert pool.metadata["bleu"] == ("30", "25") and pool.metadata["note"] == ("ok", "3")


def test_table_text_columns_are_silent_metadata(tmp_path):
    path = tmp_path / "t.csv"
    path.write_text(CSV_TEXT)
    with warnings.catch_warnings():
        warnings.simplefilter("error", DataWarning)
        pool = read_table(path)
    assert pool.metadata["note"] == ("ok", None) and "note" not in pool.scores


# ------------------------------------------------------------------------------- s2e outputs and refs
def test_s2e_null_output_is_missing(tmp_path):
    path = write_jsonl(tmp_path / "x.jsonl", [{"i": 0, "src": "s", "tgt": {"A": None, "B": "b"}}])
    pool = read_s2e_jsonl(path)
    assert pool.systems == ("A", "B") and pool.outputs["A"] == (None,) and pool.outputs["B"] == ("b",)


@pytest.mark.parametrize("output, shown", [(3, "a number 3"), (["x", "y"], 'a list ["x", "y"]'),
                                           ({"t": 1}, 'an object {"t": 1}'), (True, "a boolean true")])
def test_s2e_output_that_is_not_a_string(tmp_path, output, shown):
    path = write_jsonl(tmp_path / "x.jsonl", [{"i": 0, "src": "s", "tgt": {"A": "a"}},
                                              {"i": 5, "src": "s", "tgt": {"B": "b", "A": output}}])
    with pytest.raises(DataError) as e:
        read_s2e_jsonl(path)
    assert str(e.value) == (f"{path}: line 2: output of system 'A' in 'tgt' is {shown}, expected a string "
                            "(the system's output text) or null for a missing output.")
    assert (e.value.field, e.value.system, e.value.item_id) == ("tgt", "A", "5")


@pytest.mark.parametrize("ref, shown", [(3, "a number 3"), ({"a": "x"}, 'an object {"a": "x"}'),
                                        (["r", 2], 'a list ["r", 2]')])
def test_s2e_ref_of_the_wrong_type(tmp_path, ref, shown):
    path = write_jsonl(tmp_path / "x.jsonl", [{"src": "s", "ref": ref, "tgt": {"A": "a"}}])
    with pytest.raises(DataError) as e:
        read_s2e_jsonl(path)
    assert str(e.value) == (f"{path}: line 1: field 'ref' is {shown}, expected a reference string, a list of reference "
                            "strings, or null for none.")
    assert e.value.field == "ref"
    path = write_jsonl(tmp_path / "ok.jsonl", [{"src": "s", "ref": None, "tgt": {"A": "a"}},
                                               {"src": "t", "ref": ["r", None], "tgt": {"A": "b"}}])
    assert read_s2e_jsonl(path).references == {"ref_0": (None, "r"), "ref_1": (None, None)}


# ------------------------------------------------------------------------------------------ empty files
TABLE_EXPECTED = "expected a header line with item_id, system, output (and score columns), then one line per (item, system)."


@pytest.mark.parametrize("name, text, read, message", [
    ("e.csv", "", read_table, f"the file is empty, so there are no rows; {TABLE_EXPECTED}"),
    ("e.csv", "\n\n", read_table, f"the file holds only blank lines, so there are no rows; {TABLE_EXPECTED}"),
    ("h.csv", "item_id,system,output,human\n", load, f"the file has only a header line, so there are no rows; {TABLE_EXPECTED}"),
    ("h.tsv", "item_id\tsystem\toutput\n", read_table, f"the file has only a header line, so there are no rows; {TABLE_EXPECTED}"),
    ("e.jsonl", "", read_table, "the file is empty, so there are no rows; expected one JSON object per line with "
                                "item_id, system, output (and scores)."),
    ("b.jsonl", "\n \n\n", read_s2e_jsonl, "the file holds only blank lines, so there are no items; expected one JSON "
                                           "object per line with 'src' and 'tgt'."),
    ("e.jsonl", "", load, "the file is empty, so there are no items; expected one JSON object per line: "
                          "subset2evaluate items ({src, tgt, scores}) or long-table rows ({item_id, system, output, ...})."),
    ("summeval.json", " \n", read_summeval, "the file holds only blank lines, so there are no records; expected a JSON "
                                            "object mapping doc_id -> {src, ref_summs, sys_summs}."),
])
def test_empty_files_say_what_was_expected(tmp_path, name, text, read, message):
    path = tmp_path / name
    path.write_text(text)
    with pytest.raises(DataError) as e:
        read(str(path))
    assert str(e.value) == f"{path}: {message}"


def test_empty_alpaca_instructions_and_mtme_sources(tmp_path):
    root = make_alpaca(tmp_path / "ae", prefs=False)
    (root / "instructions.jsonl").write_text("")
    with pytest.raises(DataError, match=r"instructions\.jsonl: the file is empty, so there are no instructions; "
                                        r"expected one JSON object per line with instruction_idx and instruction\."):
        read_alpaca(root)
    mt = make_mtme(tmp_path / "mt")
    (mt.parent / "sources" / "xx-yy.txt").write_text("")
    with pytest.raises(DataError, match=r"xx-yy\.txt: the file is empty, so there are no segments"):
        read_mtme(mt)


def test_empty_parquet_table(tmp_path):
    pq = pytest.importorskip("pyarrow.parquet")
    import pyarrow as pa
    schema = pa.schema([("item_id", pa.string()), ("system", pa.string()), ("output", pa.string())])
    pq.write_table(schema.empty_table(), tmp_path / "e.parquet")
    with pytest.raises(DataError, match=r"e\.parquet: the file holds a table with 0 rows, so there are no rows"):
        read_table(tmp_path / "e.parquet")


# --------------------------------------------------------------------------------------------- demo
def test_demo_is_deterministic_and_decidable():
    a, b = make_demo_pool(300, seed=0), make_demo_pool(300, seed=0)
    assert a.outputs == b.outputs and np.array_equal(a.score("human"), b.score("human"))
    assert make_demo_pool(300, seed=1).outputs != a.outputs
    assert a.n_items == 300 and a.systems == ("A", "B", "C") and a.human_metrics == {"human"}
    assert set(a.metadata["domain"]) == {"sports", "weather", "finance"}
    h = a.score("human")
    diff = h[:, 0] - h[:, 1]
    win = (diff[diff != 0] > 0).mean()
    assert 0.55 < win < 0.72, win  # A beats B on a clear majority of non-tied items (~60%)
    assert spearmanr(h.ravel(), a.score("token_f1").ravel())[0] > 0.3
    assert not a.is_human("token_f1")
    with pytest.raises(ParameterError):
        make_demo_pool(0)


# --------------------------------------------------------------------------------------------- load
def test_load_detects_formats_and_keeps_spec_as_name(tmp_path):
    s2e = write_jsonl(tmp_path / "s.jsonl", S2E)
    tab = write_jsonl(tmp_path / "t.jsonl", [{"item_id": 1, "system": "A", "output": "o", "m": 1}])
    make_alpaca(tmp_path / "ae")
    mt = make_mtme(tmp_path / "mt")
    assert detect_format(s2e) == "s2e" and detect_format(tab) == "table"
    assert detect_format(tmp_path / "ae") == "alpaca" and detect_format(mt) == "mtme"
    assert detect_format(tmp_path / "no-such-thing") is None
    assert load(str(s2e)).name == str(s2e) and load(str(tab)).systems == ("A",)
    assert load(str(tmp_path / "ae")).n_systems == 2
    assert load(str(mt)).n_systems == 2 and load(str(mt), include_refs=True).n_systems == 3
    forced = load(f"mtme:{mt}")
    assert forced.name == f"mtme:{mt}" and forced.n_items == 3
    assert load(str(s2e), human_metrics=["chrF"]).human_metrics == {"chrF"}
    with pytest.raises(ParameterError, match="does not take"):
        load(str(s2e), models=["x"])
    with pytest.raises(UnknownNameError, match="Did you mean 'mtme'"):
        load(f"mtm:{mt}")
    with pytest.raises(DataError, match="folder of unknown layout"):
        load(str(tmp_path))


def test_forced_table_reader_on_s2e_file_fails_clearly(tmp_path):
    s2e = write_jsonl(tmp_path / "s.jsonl", S2E)
    with pytest.raises(DataError, match=r"missing required column\(s\)"):
        load(f"table:{s2e}")


def test_unknown_names_explain_the_data_root(tmp_path, monkeypatch):
    monkeypatch.setenv("EVALSIFT_DATA", "")  # set but empty: no data folder at all (unset: look for one)
    monkeypatch.chdir(tmp_path)
    assert data_root() is None
    with pytest.raises(UnknownNameError, match="EVALSIFT_DATA is empty, so only the built-in 'demo'"):
        load("summeval")
    assert load("demo", n_items=20).name == "demo"
    monkeypatch.setenv("EVALSIFT_DATA", str(tmp_path))
    assert data_root() == tmp_path
    with pytest.raises(UnknownNameError, match=r"Available datasets: demo\..*EVALSIFT_DATA="):
        load("wmt23/en-de")
    monkeypatch.setenv("EVALSIFT_DATA", str(tmp_path / "missing"))
    with pytest.raises(UnknownNameError, match="is not an existing folder"):
        load("summeval")


def test_unset_data_root_is_the_shared_data_folder_beside_the_working_folder(tmp_path, monkeypatch):
    (tmp_path / "shared" / "data").mkdir(parents=True)
    (tmp_path / "work" / "deep").mkdir(parents=True)
    monkeypatch.delenv("EVALSIFT_DATA", raising=False)
    monkeypatch.chdir(tmp_path / "work" / "deep")
    assert data_root() == tmp_path / "shared" / "data"  # two folders up, as ../shared/data is beside a checkout
    with pytest.raises(UnknownNameError, match=r"EVALSIFT_DATA is not set; that shared/data folder was found beside the working folder"):
        load("wmt23/en-de")


# ---------------------------------------------------------------------------------------- real data
WMT = "wmt23/mt-metrics-eval-v2/wmt23/en-de"


def test_real_wmt23_en_de(data_dir):
    need(data_dir, "wmt23/mt-metrics-eval-v2/wmt23/sources/en-de.txt")
    pool = read_mtme(data_dir / WMT)
    assert pool.n_items == 557 and pool.n_systems == 12 and "refA" not in pool.systems
    assert read_mtme(data_dir / WMT, include_refs=True).n_systems == 13
    assert pool.complete("mqm").n_items == 460
    assert pool.is_human("mqm") and pool.is_human("da-sqm")
    assert not pool.is_human("MetricX-23-refA") and not np.isnan(pool.score("MetricX-23-refA")).any()
    assert len(pool.scores) == 13 and "refA" in pool.references
    assert pool.metadata["domain"][0] == "news"


def test_real_summeval(data_dir):
    pool = read_summeval(need(data_dir, "summeval/summeval.json"))
    assert (pool.n_items, pool.n_systems) == (100, 16)
    assert pool.human_metrics == {"coherence", "consistency", "fluency", "relevance"}
    assert pool.systems[:3] == ("M0", "M1", "M2") and pool.systems[-1] == "M23"
    assert len(pool.references) == 11 and not np.isnan(pool.score("relevance")).any()


def test_real_alpaca_eval(data_dir):
    need(data_dir, "alpaca-eval/model_outputs")
    pool = read_alpaca(data_dir / "alpaca-eval")
    assert (pool.n_items, pool.n_systems) == (805, 16)
    assert sum(o is None for o in pool.outputs["phi-2"]) == 2  # phi-2 has 803 rows
    pref = pool.score("gpt4_turbo_pref")
    assert not pool.is_human("gpt4_turbo_pref")
    np.testing.assert_allclose(pref[:, pool.system_index("gpt4_1106_preview")], 0.5)  # baseline vs itself
    assert np.isnan(pref[:, pool.system_index("gpt4")]).all()  # not judged in this csv
    assert ((pref[~np.isnan(pref)] >= 0) & (pref[~np.isnan(pref)] <= 1)).all()


def test_real_names_resolve_under_data_root(data_dir, monkeypatch):
    need(data_dir, "wmt23")
    monkeypatch.setenv("EVALSIFT_DATA", str(data_dir))
    assert {"wmt23/en-de", "summeval", "alpaca-eval", "demo"} <= set(find_datasets())
    pool = load("wmt23/en-de", include_refs=True)
    assert pool.name == "wmt23/en-de" and pool.n_systems == 13
    assert load("summeval").n_systems == 16
