"""Recorded pairwise judgments: the pairwise table reader, the ``judgments:`` replay oracle, and the
recorded SummEval / AlpacaEval judgments in ../shared/data (or $EVALSIFT_DATA)."""

import gzip
import json
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from evalsift.bench import pairwise_bench
from evalsift.bench.pairwise import bench_oracle
from evalsift.cli import main
from evalsift.errors import DataError, OracleError, ParameterError, UnknownNameError
from evalsift.io import detect_format, load, read_pairwise
from evalsift.io.pairwise import (find_judgment_sources, read_alpaca_preferences, read_judgments,
                                  read_summeval_pairwise)
from evalsift.oracle import Judgment, JudgmentsOracle, make_oracle
from evalsift.restrict import restrict_pair
from evalsift.session import Session

from _data import need

HEADER = "item_id,system_a,system_b,verdict"


def write(path: Path, *lines: str) -> Path:
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return path


def csv_file(tmp_path, rows, header=HEADER, name="pairs.csv"):
    return write(tmp_path / name, header, *rows)


# ------------------------------------------------------------------------------------------ the table
def test_verdict_forms_and_codes(tmp_path):
    path = csv_file(tmp_path, ["1,X,Y,a", "2,X,Y,B", "3,X,Y,Tie", "4,X,Y,1", "5,X,Y,2", "6,X,Y,0", "7,X,Y, tie "])
    data = read_pairwise(path)
    assert [j.verdict for j in data.judgments] == ["a", "b", "tie", "a", "b", "tie", "tie"]
    j = data.judgments[0]
    assert (j.item_id, j.a, j.b, j.annotator, j.kind, j.status, j.shown_order) == ("1", "X", "Y", "file", "human",
                                                                                   "done", "ab")
    assert j.detail == {"source": str(path), "line": 2}
    # JSONL: numbers as codes, ids as numbers
    jl = tmp_path / "pairs.jsonl"
    jl.write_text("\n".join(json.dumps(r) for r in [
        {"item_id": 7, "system_a": "X", "system_b": "Y", "verdict": 1, "annotator": "p", "kind": "llm"},
        {"item_id": 8, "system_a": "Y", "system_b": "X", "verdict": 0, "shown_order": "ba", "comment": "close"},
    ]) + "\n")
    data = read_pairwise(jl)
    assert [(j.item_id, j.verdict, j.annotator, j.kind) for j in data.judgments] == [("7", "a", "p", "llm"),
                                                                                      ("8", "tie", "file", "human")]
    assert data.judgments[1].shown_order == "ba" and data.judgments[1].detail == {"source": str(jl), "line": 2,
                                                                                   "comment": "close"}
    tsv = write(tmp_path / "pairs.tsv", HEADER.replace(",", "\t"), "1\tX\tY\tb")
    assert read_pairwise(tsv).judgments[0].verdict == "b"


@pytest.mark.parametrize("cell, shown", [("maybe", "'maybe' is not a verdict"), ("3", "'3' is not a verdict"),
                                         ("", "is empty")])
def test_bad_verdict_names_file_line_and_value(tmp_path, cell, shown):
    path = csv_file(tmp_path, ["1,X,Y,a", f"2,X,Y,{cell}"])
    with pytest.raises(DataError) as e:
        read_pairwise(path)
    assert str(e.value) == (f"{path}: line 3: verdict {shown}; write a (system_a better), b or tie -- or 1 (= a), "
                            "2 (= b), 0 (= tie).")
    assert e.value.field == "verdict" and e.value.item_id == "2"


def test_conflicting_outputs_and_inputs_name_both_lines(tmp_path):
    header = HEADER + ",input,output_a,output_b"
    ok = csv_file(tmp_path, ["1,X,Y,a,in1,x1,y1", "1,Y,X,b,,y1,x1", "2,X,Z,a,in2,x2,"], header=header)
    data = read_pairwise(ok)
    assert data.pool.item_ids == ("1", "2") and data.pool.systems == ("X", "Y", "Z")
    assert list(data.pool.inputs) == ["in1", "in2"]
    assert data.pool.outputs["X"] == ("x1", "x2") and data.pool.outputs["Y"] == ("y1", None)
    assert data.pool.outputs["Z"] == (None, None)
    bad = csv_file(tmp_path, ["1,X,Y,a,in1,x1,y1", "2,X,Y,a,in2,x2,y2", "1,Y,X,b,in1,other,x1"], header=header,
                   name="bad.csv")
    with pytest.raises(DataError) as e:
        read_pairwise(bad)
    assert str(e.value) == (f"{bad}: line 4 gives item '1' of system 'Y' a different output than line 2 ('other' vs "
                            "'y1'); keep one output per item and system: make the cells agree or leave the later one "
                            "empty.")
    assert (e.value.item_id, e.value.system, e.value.field) == ("1", "Y", "output_a")
    bad_in = csv_file(tmp_path, ["1,X,Y,a,in1,,", "1,X,Z,a,in one,,"], header=header, name="bad_in.csv")
    with pytest.raises(DataError, match=r"line 3 gives item '1' a different input than line 2"):
        read_pairwise(bad_in)


def test_missing_columns_and_bad_rows(tmp_path):
    path = csv_file(tmp_path, ["1,X,Y"], header="item_id,system_a,system_b")
    with pytest.raises(DataError) as e:
        read_pairwise(path)
    assert str(e.value) == (f"{path}: missing required column(s) ['verdict']; found columns ['item_id', 'system_a', "
                            "'system_b']. A pairwise table needs item_id, system_a, system_b, verdict (one row per "
                            "judgment; verdict a, b or tie, or 1, 2, 0).")
    with pytest.raises(DataError, match=r"line 2: system_a and system_b are both 'X'"):
        read_pairwise(csv_file(tmp_path, ["1,X,X,a"], name="same.csv"))
    with pytest.raises(DataError, match=r"line 3: system_b must not be empty"):
        read_pairwise(csv_file(tmp_path, ["1,X,Y,a", "2,X,,a"], name="empty.csv"))
    with pytest.raises(DataError, match=r"line 2: kind 'robot' is not one of: human, llm, metric"):
        read_pairwise(csv_file(tmp_path, ["1,X,Y,a,robot"], header=HEADER + ",kind", name="kind.csv"))
    with pytest.raises(DataError, match=r"has only a header line, so there are no judgments"):
        read_pairwise(csv_file(tmp_path, [], name="header_only.csv"))
    with pytest.raises(DataError, match=r"the file is empty, so there are no judgments"):
        read_pairwise(write(tmp_path / "empty.jsonl"))
    with pytest.raises(DataError, match=r"line 1 is not valid JSON"):
        read_pairwise(write(tmp_path / "broken.jsonl", "{not json"))


def test_non_utf8_files_name_the_line(tmp_path):
    path = tmp_path / "latin.csv"
    path.write_bytes((HEADER + "\n1,X,Y,a\n2,caf\u00e9,Y,b\n").encode("latin-1"))
    for read in (read_pairwise, load):  # load: format detection reads the header through the same helper
        with pytest.raises(DataError) as e:
            read(str(path))
        assert str(e.value) == (f"{path}: line 3 is not valid UTF-8 (byte 0xe9 at column 6: invalid continuation "
                                "byte); re-save the file as UTF-8.")


def test_load_and_detection(tmp_path):
    path = csv_file(tmp_path, ["1,X,Y,a,out x,out y"], header=HEADER + ",output_a,output_b")
    assert detect_format(path) == "pairwise"
    pool = load(str(path))
    assert pool.systems == ("X", "Y") and pool.outputs["X"] == ("out x",) and pool.name == str(path)
    assert load(f"pairwise:{path}").item_ids == ("1",)
    tsv = write(tmp_path / "p.tsv", "item_id\tsystem_a\tsystem_b\tverdict", "1\tX\tY\t2")
    jl = write(tmp_path / "p.jsonl", json.dumps({"item_id": 1, "system_a": "X", "system_b": "Y", "verdict": "a"}))
    assert detect_format(tsv) == detect_format(jl) == "pairwise"
    # the other formats are still what they were
    table = write(tmp_path / "long.csv", "item_id,system,output,verdict", "1,X,hello,a")
    s2e = write(tmp_path / "s.jsonl", json.dumps({"src": "a", "tgt": {"X": "b"}}))
    long_jl = write(tmp_path / "long.jsonl", json.dumps({"item_id": 1, "system": "X", "output": "b"}))
    assert (detect_format(table), detect_format(s2e), detect_format(long_jl)) == ("table", "s2e", "table")


# ------------------------------------------------------------------------------------------ the oracle
def test_oracle_spec_explains_itself_and_unknown_sources(tmp_path, monkeypatch):
    with pytest.raises(ParameterError) as e:
        make_oracle("judgments")
    assert str(e.value) == ("oracle 'judgments' needs an argument: judgments:FILE, recorded pairwise verdicts "
                            "(e.g. judgments:pairs.csv)")
    root = tmp_path / "data"
    (root / "summeval" / "llm-pairwise").mkdir(parents=True)
    for name in ("MX-MY_coherence.result", "MX-MY_coherence_toggle.result"):
        write(root / "summeval" / "llm-pairwise" / name, json.dumps({"id": "d", "resp": "A"}))
    monkeypatch.setenv("EVALSIFT_DATA", str(root))
    with pytest.raises(UnknownNameError) as e:
        make_oracle("judgments:summeval/llm-pairwise/coherance")
    assert str(e.value) == ("Unknown judgments source 'summeval/llm-pairwise/coherance': it is not an existing file "
                            "either. Did you mean 'summeval/llm-pairwise/coherence'? Available: "
                            f"summeval/llm-pairwise/coherence. Names are looked up under EVALSIFT_DATA={root}; or "
                            "give the path of a pairwise table (.csv/.tsv/.jsonl).")
    assert make_oracle("judgments:summeval/llm-pairwise/coherence").name == "judgments:summeval/llm-pairwise/coherence"


def test_judge_pairs_covers_and_verdicts(tmp_path):
    # item 1 recorded as X vs Y, item 2 as Y vs X, item 3 not for this pair, item 4 only for X vs Z
    path = csv_file(tmp_path, ["1,X,Y,a", "2,Y,X,a", "4,X,Z,b", "3,Y,Z,tie"])
    data = read_pairwise(path)
    pool, o = data.pool, JudgmentsOracle(data)
    assert o.kind == "human" and o.name == f"judgments:{path}"
    assert pool.item_ids == ("1", "2", "4", "3")
    js = o.judge_pairs(pool, [0, 1, 2, 3], "X", "Y")
    assert [(j.item_id, j.a, j.b, j.verdict, j.status) for j in js] == [
        ("1", "X", "Y", "a", "done"), ("2", "X", "Y", "b", "done"), ("4", "X", "Y", None, "error"),
        ("3", "X", "Y", None, "error")]
    assert js[1].detail["recorded_as"] == {"a": "Y", "b": "X", "verdict": "a", "shown_order": "ab"}
    assert js[1].shown_order == "ba" and js[2].detail == {"reason": "no recorded verdict for X vs Y"}
    # asking the other way round mirrors; the recorded judgments themselves are unchanged
    assert [j.verdict for j in o.judge_pairs(pool, [0, 1], "Y", "X")] == ["b", "a"]
    assert data.judgments[1].a == "Y" and data.judgments[1].verdict == "a"
    assert o.covers(pool, "X", "Y").tolist() == [True, True, False, False]
    assert o.covers(pool, "X", "Z").tolist() == [False, False, True, False]
    assert list(o.verdicts(pool, [1, 0], "X", "Y")) == ["b", "a"]
    with pytest.raises(OracleError) as e:
        o.verdicts(pool, [0, 2, 3], "X", "Y")
    assert str(e.value) == (f"judgments:{path}: no recorded verdict for X vs Y on 2 of 3 item(s) (first: '4'); keep "
                            "the items it covers with restrict_pair(pool, 'X', 'Y', oracle=oracle).")
    assert e.value.item_id == "4"
    with pytest.raises(DataError, match=r"Unknown system 'W'"):
        o.judge_pairs(pool, [0], "X", "W")
    # items match by id and systems by name on any pool
    other = load("demo", n_items=3)
    assert JudgmentsOracle([Judgment(item_id="2", a="B", b="C", verdict="b", annotator="p", kind="llm")]).covers(
        other, "C", "B").tolist() == [False, False, True]


def test_pairs_covering_different_items_and_restrict_pair(tmp_path):
    rows = [f"{i},A,B,{'a' if i % 3 else 'b'}" for i in range(10)] + [f"{i},A,C,a" for i in range(5, 15)]
    data = read_pairwise(csv_file(tmp_path, rows))
    o = JudgmentsOracle(data)
    assert data.pool.n_items == 15 and data.pairs() == [("A", "B"), ("A", "C")]
    r = restrict_pair(data.pool, "A", "B", oracle=o)
    assert r.pool.item_ids == tuple(str(i) for i in range(10)) and r.dropped_scores == 5
    assert "5 have no verdict from judgments:" in r.note()
    r = restrict_pair(data.pool, "C", "A", oracle=o)
    assert r.pool.item_ids == tuple(str(i) for i in range(5, 15))
    with pytest.raises(DataError, match=r"B vs C: using 0 of 15 items \(15 have no verdict"):
        restrict_pair(data.pool, "B", "C", oracle=o)


def test_annotators_split_to_a_tie_and_later_judgment_supersedes(tmp_path):
    rows = ["0,A,B,a,p", "0,A,B,b,q",                 # split: one a, one b -> tie
            "1,A,B,a,p", "1,B,A,a,q", "1,A,B,b,r",    # q recorded the other way round: b, b vs a -> b
            "2,A,B,b,p", "2,A,B,a,p",                 # p corrects itself: the later one counts -> a
            "3,A,B,tie,p", "3,B,A,2,q", "3,A,B,1,r"]  # tie, a, a -> a
    data = read_pairwise(csv_file(tmp_path, rows, header=HEADER + ",annotator"))
    o = JudgmentsOracle(data)
    pool = data.pool
    assert list(o.verdicts(pool, range(4), "A", "B")) == ["tie", "b", "a", "a"]
    session = Session(pool, "random", a="A", b="B", min_labels=4, max_labels=4, risk=0.01)
    d = session.run(o)
    assert [session.verdict_of(i) for i in range(4)] == ["tie", "b", "a", "a"]
    votes = {row["item_id"]: row["votes"] for row in d.judged}
    assert votes["0"] == {"p": "a", "q": "b"} and votes["2"] == {"p": "a"}
    assert len(session.judgments) == len(data.judgments)  # every recorded judgment was handed over, once


def test_session_reaches_the_winner_the_table_implies(tmp_path):
    verdicts = ["a"] * 30 + ["b"] * 6 + ["tie"] * 4
    flip = {"a": "b", "b": "a", "tie": "tie"}
    rows = [f"q{i},A,B,{v},out A {i},out B {i}" if i % 2 else f"q{i},B,A,{flip[v]},out B {i},out A {i}"
            for i, v in enumerate(verdicts)]  # odd items recorded as A vs B, even ones as B vs A
    data = read_pairwise(csv_file(tmp_path, rows, header=HEADER + ",output_a,output_b"))
    assert data.pool.outputs["A"][0] == "out A 0" and data.pool.outputs["B"][1] == "out B 1"
    d = Session(data.pool, "random", a="A", b="B", risk=0.1, max_labels=40).run(JudgmentsOracle(data))
    assert d.outcome == "winner" and d.winner == "A" and d.errors == 0
    d = Session(data.pool, "random", a="B", b="A", risk=0.1, max_labels=40).run(JudgmentsOracle(data))
    assert d.outcome == "winner" and d.winner == "A"


def test_bench_replays_a_table(tmp_path):
    rows = ([f"{i},A,B,{'a' if i % 4 else 'b'}" for i in range(20)] + [f"{i},C,A,{'a' if i % 5 else 'tie'}"
                                                                        for i in range(20)])
    path = csv_file(tmp_path, rows)
    pool = load(str(path))
    o = bench_oracle(f"judgments:{path}", pool)
    assert isinstance(o, JudgmentsOracle) and o.covers(pool, "B", "C").sum() == 0
    res = pairwise_bench(pool, f"judgments:{path}", ["random"], [2], seeds=2, encoder="tfidf", quiet=True)
    assert res["pairs"] == [["A", "B"], ["A", "C"]] and list(res["left_out_pairs"]) == ["B vs C"]
    assert res["oracle_spec"] == f"judgments:{path}" and res["curves"]["random"]["2"]["runs"] == 4


# ------------------------------------------------------------------------------------------ recorded datasets
def make_summeval_pairwise(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    plain = [("d1", "A"), ("d2", "A"), ("d3", "C: Both Summary #1 and Summary #2 are equally coherent."),
             ("d4", "B: Summary #2 is more coherent."), ("d5", "B")]
    toggle = [("d1", "B"), ("d2", "A"), ("d3", "C"), ("d4", "I cannot tell."), ("d5", "A: Summary #1 is better.")]
    for name, answers in (("MX-MY_coherence.result", plain), ("MX-MY_coherence_toggle.result", toggle)):
        write(folder / name, *(json.dumps({"id": i, "resp": r, "human_score_1": 3.0, "human_score_2": 4.0})
                               for i, r in answers))
    return folder


def test_summeval_pairwise_orders_combine(tmp_path):
    folder = make_summeval_pairwise(tmp_path / "llm-pairwise")
    data = read_summeval_pairwise(folder, "coherence")
    got = {j.item_id: (j.verdict, j.status) for j in data.judgments}
    # d1: A first (MX), then B in the swapped order (MX again) -> a; d2: A in both orders = MX then MY -> tie;
    # d3: C both -> tie; d4: no letter in the swapped order -> error; d5: B (MY) both ways -> b
    assert got == {"d1": ("a", "done"), "d2": ("tie", "done"), "d3": ("tie", "done"), "d4": (None, "error"),
                   "d5": ("b", "done")}
    j = data.judgments[1]
    assert (j.a, j.b, j.annotator, j.kind, j.shown_order) == ("MX", "MY", "gpt-3.5-turbo (recorded)", "llm", "both")
    assert j.detail["answers"] == {"ab": "A", "ba": "A"} and j.detail["order_verdicts"] == {"ab": "a", "ba": "b"}
    assert j.detail["shown_orders"] == ["ab", "ba"] and j.detail["human_scores"] == {"MX": 3.0, "MY": 4.0}
    assert data.judgments[3].detail["reason"] == "no recognisable A/B/C answer swapped (b first): 'I cannot tell.'"
    assert JudgmentsOracle(data).covers(data.pool, "MY", "MX").tolist() == [True, True, True, False, True]
    with pytest.raises(DataError) as e:
        read_summeval_pairwise(folder, "coherance")
    assert str(e.value) == (f"{folder}: no <Ma>-<Mb>_coherance[_toggle].result files. Did you mean 'coherence'? "
                            "Dimensions found: coherence.")
    write(folder / "MX-MY_fluency.result", json.dumps({"id": "d1", "resp": "A"}), json.dumps({"id": "d1", "resp": "B"}))
    with pytest.raises(DataError, match=r"MX-MY_fluency.result: line 2 repeats document 'd1', first on line 1"):
        read_summeval_pairwise(folder, "fluency")


def make_alpaca_preferences(path: Path, extra: str = "") -> Path:
    lines = ["model_dir,annotator_config,instruction_idx,generator_1,generator_2,annotator,preference,len_output_1,"
             "len_output_2",
             "m1,cfg,0,base,m1,cfg,1.2,1,1", "m1,cfg,1,base,m1,cfg,1.8,1,1", "m1,cfg,2,base,m1,cfg,1.5,1,1",
             "m1,cfg,3,base,m1,cfg,0,1,1", "m1,cfg,4,base,m1,cfg,,1,1", "base,cfg,0,base,base,cfg,1.5,1,1",
             "m2,other,0,base,m2,other,2,1,1"] + ([extra] if extra else [])
    path.write_bytes(gzip.compress(("\n".join(lines) + "\n").encode()))
    return path


def test_alpaca_preferences(tmp_path):
    path = make_alpaca_preferences(tmp_path / "preferences_all_annotators.csv.gz")
    data = read_alpaca_preferences(tmp_path, "cfg")
    assert [(j.item_id, j.a, j.b, j.verdict, j.status) for j in data.judgments] == [
        ("0", "base", "m1", "a", "done"), ("1", "base", "m1", "b", "done"), ("2", "base", "m1", "tie", "done"),
        ("3", "base", "m1", "tie", "done"), ("4", "base", "m1", None, "error")]
    assert data.judgments[0].detail == {"source": str(path), "line": 2, "preference": 1.2, "annotator_config": "cfg",
                                        "model_dir": "m1"}
    assert data.judgments[0].annotator == "cfg (recorded)" and data.judgments[0].kind == "llm"
    assert data.pool.systems == ("base", "m1")
    with pytest.raises(DataError, match=r"no rows of annotator config 'cfx'\. Did you mean 'cfg'\?"):
        read_alpaca_preferences(path, "cfx")
    bad = make_alpaca_preferences(tmp_path / "bad.csv.gz", "m1,cfg,5,base,m1,cfg,high,1,1")
    with pytest.raises(DataError) as e:
        read_alpaca_preferences(bad, "cfg")
    assert str(e.value) == (f"{bad}: line 9: preference 'high' is not a number; expected a value in [1, 2] "
                            "(1 = baseline wins, 2 = model wins).")
    bad = make_alpaca_preferences(tmp_path / "bad2.csv.gz", "m1,cfg,5,base,m1,cfg,2.5,1,1")
    with pytest.raises(DataError, match=r"line 9: preference 2\.5 is outside \[1, 2\]"):
        read_alpaca_preferences(bad, "cfg")


def test_dataset_names_resolve_under_the_data_root(tmp_path, monkeypatch):
    root = tmp_path / "data"
    make_summeval_pairwise(root / "summeval" / "llm-pairwise")
    (root / "alpaca-eval").mkdir()
    make_alpaca_preferences(root / "alpaca-eval" / "preferences_all_annotators.csv.gz")
    monkeypatch.setenv("EVALSIFT_DATA", str(root))
    assert sorted(find_judgment_sources()) == ["alpaca-eval/preferences", "summeval/llm-pairwise/coherence"]
    assert len(read_judgments("summeval/llm-pairwise/coherence").judgments) == 5
    assert len(read_judgments("alpaca-eval/preferences/cfg").judgments) == 5
    with pytest.raises(DataError, match=r"no rows of annotator config 'weighted_alpaca_eval_gpt4_turbo'"):
        read_judgments("alpaca-eval/preferences")
    monkeypatch.setenv("EVALSIFT_DATA", "")  # empty: no data folder (unset would look for ../shared/data)
    with pytest.raises(UnknownNameError, match=r"EVALSIFT_DATA is empty, so no recorded dataset can be found"):
        read_judgments("summeval/llm-pairwise/coherence")


# ------------------------------------------------------------------------------------------ real data
DIMENSIONS = ("coherence", "consistency", "fluency", "relevance")
# Position bias of the recorded GPT-3.5 judge: the share of (pair, document) judgments whose two
# presentation orders disagree (computed once from the files, 1,100 per dimension; a disagreement
# includes one order saying "equal" and the other picking a summary):
#   coherence 392/1100 = 0.3564, consistency 392/1100 = 0.3564, fluency 399/1100 = 0.3627,
#   relevance 364/1100 = 0.3309 (all four: 1547/4400 = 0.352). Outright flips (A better in one
#   order, B in the other): 0.332, 0.319, 0.335, 0.295.
POSITION_BIAS = {"coherence": 392, "consistency": 392, "fluency": 399, "relevance": 364}


def test_real_summeval_judgments_match_the_pool():
    need("summeval/summeval.json", "summeval/llm-pairwise")
    pool = load(str(need("summeval/summeval.json")))
    pairs = set()
    for dim in DIMENSIONS:
        data = read_summeval_pairwise(need("summeval/llm-pairwise"), dim)
        js = data.judgments
        assert len(js) == 11 * 100 and len(data.pairs()) == 11
        assert Counter(Counter(j.item_id for j in js).values()) == {11: 100}  # 100 documents, each in all 11 pairs
        assert set(data.pool.item_ids) == set(pool.item_ids) and set(data.pool.systems) <= set(pool.systems)
        assert all(j.status == "done" and len(j.detail["shown_orders"]) == 2 for j in js)
        disagree = sum(len(set(j.detail["order_verdicts"].values())) > 1 for j in js)
        assert disagree == POSITION_BIAS[dim], dim
        assert all(j.verdict == "tie" for j in js if len(set(j.detail["order_verdicts"].values())) > 1)
        # human_score_1/2 are the expert means of a and b (the toggle files do not swap them)
        for j in js[::97]:
            for s in (j.a, j.b):
                assert j.detail["human_scores"][s] == pytest.approx(pool.score(dim, s)[pool.item_ids.index(j.item_id)])
        pairs |= set(data.pairs())
    assert len(pairs) == 11


def test_real_summeval_toggle_convention_agrees_with_experts():
    """A = the first-named system in the plain files, the second-named one in the _toggle files."""
    folder = need("summeval/llm-pairwise")
    agree = {"ab": [0, 0], "ba": [0, 0]}  # [answers agreeing with the experts, answers with an expert preference]
    for j in read_summeval_pairwise(folder, "coherence").judgments:
        h = j.detail["human_scores"]
        if h[j.a] == h[j.b]:
            continue
        expert = "a" if h[j.a] > h[j.b] else "b"
        for order, v in j.detail["order_verdicts"].items():
            if v != "tie":
                agree[order][0] += v == expert
                agree[order][1] += 1
    for order, (hits, n) in agree.items():
        assert hits / n > 0.55, (order, hits, n)  # read the other way round, the toggle files would agree < 45%


def test_real_alpaca_preferences_match_the_pool_and_the_metric():
    need("alpaca-eval/preferences_all_annotators.csv.gz", "alpaca-eval/instructions.jsonl")
    pool = load(str(need("alpaca-eval")))
    data = read_alpaca_preferences(need("alpaca-eval"))
    assert set(data.pool.item_ids) == set(pool.item_ids)
    shared = [s for s in pool.systems if s in data.pool.systems]
    assert "gpt4_1106_preview" in shared and len(shared) == 9
    o = JudgmentsOracle(data)
    for model in ("alpaca-7b", "phi-2"):  # phi-2 answered 803 of the 805 instructions
        pref = pool.score("gpt4_turbo_pref", model)  # preference - 1: the judge's probability that the model wins
        covered = o.covers(pool, "gpt4_1106_preview", model)
        assert (covered == ~np.isnan(pref)).all() and covered.sum() >= 803
        items = np.flatnonzero(covered)
        v = o.verdicts(pool, items, model, "gpt4_1106_preview")  # the model first: 'a' = the model wins
        expected = np.where(pref[items] > 0.5, "a", np.where(pref[items] < 0.5, "b", "tie"))
        assert (v == expected).all()


def test_real_cli_compare_replays_recorded_judgments(capsys, monkeypatch):
    root = need("summeval/summeval.json", "summeval/llm-pairwise").parents[1]
    monkeypatch.setenv("EVALSIFT_DATA", str(root))
    code = main(["compare", "--data", "summeval", "--a", "M11", "--b", "M20", "--oracle",
                 "judgments:summeval/llm-pairwise/coherence", "--method", "random", "--json", "--quiet"])
    out = capsys.readouterr()
    assert code == 0, out.err
    d = json.loads(out.out)
    assert (d["a"], d["b"]) == ("M11", "M20") and d["errors"] == 0 and d["labels_used"] > 0
    o = make_oracle("judgments:summeval/llm-pairwise/coherence")  # recorded as M20 vs M11
    pool = load("summeval")
    for row in d["judged"]:
        i = pool.item_ids.index(row["item_id"])
        assert row["verdict"] == o.verdicts(pool, [i], "M11", "M20")[0]


def test_real_cli_bench_pairwise_on_recorded_judgments(capsys, monkeypatch, tmp_path):
    root = need("summeval/summeval.json", "summeval/llm-pairwise").parents[1]
    monkeypatch.setenv("EVALSIFT_DATA", str(root))
    out = tmp_path / "bench"
    code = main(["bench", "pairwise", "--data", "summeval", "--oracle", "judgments:summeval/llm-pairwise/relevance",
                 "--methods", "random,diffuse", "--budgets", "5,10", "--seeds", "2", "--encoder", "tfidf",
                 "--out", str(out), "--quiet"])
    err = capsys.readouterr().err
    assert code == 0, err
    res = json.loads((out / "results.json").read_text())
    assert res["n_pairs"] == 11 and res["oracle_spec"] == "judgments:summeval/llm-pairwise/relevance"
    assert len(res["left_out_pairs"]) == 16 * 15 // 2 - 11  # pairs without recorded verdicts, each listed
    assert "no verdict from judgments:summeval/llm-pairwise/relevance" in next(iter(res["left_out_pairs"].values()))
    assert {tuple(p) for p in res["pairs"]} == {tuple(sorted(p, key=lambda s: int(s[1:]))) for p in [
        ("M22", "M23"), ("M23", "M17"), ("M17", "M12"), ("M12", "M13"), ("M13", "M15"), ("M15", "M14"),
        ("M14", "M8"), ("M8", "M9"), ("M9", "M10"), ("M10", "M20"), ("M20", "M11")]}
    assert set(res["curves"]) == {"random", "diffuse"} and (out / "success.png").is_file()
