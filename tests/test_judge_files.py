"""Judge data as people keep it (issue 21, part 4): Chatbot Arena battle files, FastChat / MT-Bench
judgments and AlpacaEval annotations, read into the pairwise table's PairwiseData by the same entry
points (read_pairwise, load, judgments:FILE, judge:judgments:FILE). Small files written here for every
format and error; the real Arena battles in ../shared/data/arena-ppr (or $EVALSIFT_DATA) last."""

import json
import os
import time
from pathlib import Path

import numpy as np
import pytest

from evalsift.cli import main
from evalsift.errors import DataError, DataWarning
from evalsift.io import detect_format, load, read_pairwise
from evalsift.io.judge_files import alpaca_item_id, judge_kind
from evalsift.io.pairwise import (_read_cached, find_judgment_sources, looks_pairwise, pairwise_layout,
                                  read_judgments)
from evalsift.oracle import JudgmentsOracle, make_oracle
from evalsift.restrict import restrict_pair
from evalsift.session import Session

from _data import need


def jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def json_list(path: Path, rows: list[dict]) -> Path:
    path.write_text(json.dumps(rows, indent=1), encoding="utf-8")
    return path


def battle(num, a, b, winner, **extra):
    return {"num": num, "question_id": f"q{num}", "model_a": a, "model_b": b, "winner": winner, **extra}


def run(capsys, *argv):
    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


# ------------------------------------------------------------------------------------------ Arena battles
def test_arena_battles_map_onto_judgments(tmp_path):
    path = jsonl(tmp_path / "human.jsonl", [
        battle(1, "X", "Y", "model_a"), battle(2, "Y", "X", "model_b"), battle(4, "X", "Z", "tie"),
        battle(5, "Z", "X", "tie (bothbad)"), battle(7, "Y", "X", "model_a")])
    data = read_pairwise(path)
    assert data.pool.item_ids == ("1", "2", "4", "5", "7") and data.pool.systems == ("X", "Y", "Z")
    assert [(j.item_id, j.a, j.b, j.verdict) for j in data.judgments] == [
        ("1", "X", "Y", "a"), ("2", "Y", "X", "b"), ("4", "X", "Z", "tie"), ("5", "Z", "X", "tie"), ("7", "Y", "X", "a")]
    j = data.judgments[3]
    assert (j.annotator, j.kind, j.shown_order, j.status) == ("human", "human", "ab", "done")
    # no judge column: the kind ("human") is the file name's, and the detail says so
    assert j.detail == {"source": str(path), "line": 4, "winner": "tie (bothbad)", "question_id": "q5",
                        "kind_from": "name"}
    # each battle is an item of its own pair only
    assert list(data.pool.metadata["_systems"]) == [("X", "Y"), ("X", "Y"), ("X", "Z"), ("X", "Z"), ("X", "Y")]
    assert detect_format(path) == "pairwise" and looks_pairwise(path)
    assert load(str(path)).item_ids == data.pool.item_ids


def test_a_pair_is_its_battles_in_either_orientation(tmp_path):
    path = jsonl(tmp_path / "human.jsonl", [
        battle(1, "X", "Y", "model_a"), battle(2, "Y", "X", "model_b"), battle(3, "X", "Z", "model_a"),
        battle(4, "Y", "X", "model_a"), battle(5, "Z", "Y", "tie")])
    data = read_pairwise(path)
    oracle = JudgmentsOracle(str(path))
    r = restrict_pair(data.pool, "X", "Y", oracle=oracle)
    assert r.pool.item_ids == ("1", "2", "4") and (r.n_total, r.dropped, r.other_pairs) == (3, 0, 2)
    assert r.note() == "X vs Y: using 3 of 3 items" and r.to_dict()["other_pairs"] == 2
    # a battle recorded as Y vs X is oriented to X vs Y: its verdict flipped, the record kept
    got = oracle.judge_pairs(r.pool, [0, 1, 2], "X", "Y")
    assert [(j.verdict, j.shown_order) for j in got] == [("a", "ab"), ("a", "ba"), ("b", "ba")]
    assert got[1].detail["recorded_as"] == {"a": "Y", "b": "X", "verdict": "b", "shown_order": "ab"}
    assert list(oracle.verdicts(r.pool, [0, 1, 2], "Y", "X")) == ["b", "b", "a"]
    # the same without an oracle (the Python API, a Session on the whole pool): the pair's battles only
    assert restrict_pair(data.pool, "Y", "X").pool.item_ids == ("1", "2", "4")
    session = Session(data.pool, "random", a="X", b="Y", min_labels=3, max_labels=3, risk=0.5)
    assert session.run(oracle).pool_size == 3
    with pytest.raises(DataError, match=r"Y vs Z: pool .* has 1 item\(s\) of this pair .* 4 belong to other pairs"):
        restrict_pair(data.pool, "Y", "Z")


def test_arena_json_list_with_lmsys_conversations(tmp_path):
    conv = lambda q, ans: [{"role": "user", "content": q}, {"role": "assistant", "content": "first"},
                           {"role": "user", "content": "more?"}, {"role": "assistant", "content": ans}]
    rows = [{"question_id": "abc", "model_a": "X", "model_b": "Y", "winner": "model_b", "judge": "arena_user_9",
             "turn": 2, "anony": True, "language": "English", "conversation_a": conv("hi", "x says"),
             "conversation_b": conv("hi", "y says"), "tstamp": 1.5},
            {"question_id": "def", "model_a": "Y", "model_b": "Z", "winner": "tie", "judge": "gpt-4-judge",
             "turn": 1, "conversation_a": conv("yo", "y2"), "conversation_b": conv("yo", "z2")}]
    path = json_list(tmp_path / "clean_battle_conv.json", rows)
    assert detect_format(path) == "pairwise"  # a .json list of battles, not summeval.json
    data = read_pairwise(path)
    assert data.pool.item_ids == ("abc-t2", "def-t1")
    assert list(data.pool.inputs) == ["hi", "yo"]
    assert data.pool.outputs["X"] == ("x says", None) and data.pool.outputs["Y"] == ("y says", "y2")
    j0, j1 = data.judgments
    assert (j0.annotator, j0.kind, j0.verdict) == ("arena_user_9", "human", "b")
    assert (j1.annotator, j1.kind) == ("gpt-4-judge", "llm")
    assert j0.detail == {"source": str(path), "line": 2, "winner": "model_b", "question_id": "abc", "turn": 2,
                         "language": "English", "anony": True, "kind_from": "judge"}
    starts = [k for k, text in enumerate(path.read_text().splitlines(), 1) if text == " {"]  # indent=1: elements
    assert [j0.detail["line"], j1.detail["line"]] == starts  # the lines where the objects start
    assert "_systems" not in data.pool.metadata  # question_id + turn: items are not battles by id


def test_arena_item_ids_battle_id_then_question_and_turn(tmp_path):
    rows = [{"battle_id": "b1", "model_a": "X", "model_b": "Y", "winner": "model_a"},
            {"battle_id": "b2", "model_a": "X", "model_b": "Y", "winner": "model_a"}]
    assert read_pairwise(jsonl(tmp_path / "ids.jsonl", rows)).pool.item_ids == ("b1", "b2")
    rows = [{"question_id": 81, "turn": 1, "model_a": "X", "model_b": "Y", "winner": "model_a"},
            {"question_id": 81, "turn": 2, "model_a": "X", "model_b": "Y", "winner": "model_b"},
            {"question_id": 82, "model_a": "X", "model_b": "Y", "winner": "tie"}]
    assert read_pairwise(jsonl(tmp_path / "q.jsonl", rows)).pool.item_ids == ("81-t1", "81-t2", "82")


def test_question_id_that_does_not_identify_a_battle_asks_for_an_id_column(tmp_path):
    rows = [{"question_id": "q", "model_a": "X", "model_b": "Y", "winner": "model_b"},
            {"question_id": "r", "model_a": "X", "model_b": "Y", "winner": "model_b"},
            {"question_id": "q", "model_a": "X", "model_b": "Y", "winner": "model_b"}]
    path = jsonl(tmp_path / "votes.jsonl", rows)
    with pytest.raises(DataError) as e:
        read_pairwise(path)
    assert str(e.value) == (f"{path}: line 3 and line 1 both judge X vs Y on question_id/turn 'q' for annotator "
                            "'votes', so question_id (and turn) does not identify a battle here; add a per-battle id "
                            "column (num or battle_id) to tell the battles apart.")
    assert (e.value.field, e.value.item_id) == ("num", "q")
    path = jsonl(tmp_path / "noid.jsonl", [{"model_a": "X", "model_b": "Y", "winner": "tie"}])
    with pytest.raises(DataError, match=r"noid\.jsonl: the battles have no id: found fields \['model_a', 'model_b', "
                                        r"'winner'\]\. Add a per-battle id column -- num .* or battle_id"):
        read_pairwise(path)


@pytest.mark.parametrize("row, message, field", [
    (battle(3, "X", "Y", "model_c"), ("line 2: winner 'model_c' is not a battle outcome; write model_a, model_b, tie "
                                      "or tie (bothbad)."), "winner"),
    (battle(3, "X", "Y", ""), "line 2: winner is empty; write model_a, model_b, tie or tie (bothbad).", "winner"),
    ({"num": 3, "model_a": "X", "winner": "tie"}, ("line 2: model_b is missing; every battle names the model shown "
                                                   "second."), "model_b"),
    (battle(3, "X", "", "tie"), "line 2: model_b is empty; every battle names the model shown second.", "model_b"),
    ({"model_a": "X", "model_b": "Y", "winner": "tie"}, ("line 2: num is missing; every battle needs its id (the "
                                                         "file's battles are identified by num)."), "num"),
])
def test_bad_battle_rows_name_file_line_field_and_fix(tmp_path, row, message, field):
    path = jsonl(tmp_path / "bad.jsonl", [battle(1, "X", "Y", "model_a"), row])
    with pytest.raises(DataError) as e:
        read_pairwise(path)
    assert str(e.value) == f"{path}: {message}" and e.value.field == field


def test_a_battle_id_used_twice(tmp_path):
    other = jsonl(tmp_path / "other.jsonl", [battle(1, "X", "Y", "model_a"), battle(2, "X", "Z", "tie"),
                                             battle(1, "X", "Z", "model_a")])
    with pytest.raises(DataError) as e:
        read_pairwise(other)
    assert str(e.value) == (f"{other}: line 3 uses battle num '1' of line 1 for another battle (X vs Z, question_id "
                            "q1 vs X vs Y, question_id q1); each battle needs its own num: renumber one of them or "
                            "remove the stray line.")
    assert (e.value.field, e.value.item_id) == ("num", "1")
    outcome = jsonl(tmp_path / "outcome.jsonl", [battle(1, "X", "Y", "model_a"), battle(1, "X", "Y", "tie")])
    with pytest.raises(DataError, match=r"line 2 repeats battle num '1' of line 1 for annotator 'outcome' with another "
                                        r"outcome \('tie' vs 'model_a'\); one annotator judges a battle once"):
        read_pairwise(outcome)
    # another judge on the same battle is another judgment; an identical repeat is left out with a note
    rows = [battle(1, "X", "Y", "model_a", judge="p"), battle(1, "X", "Y", "model_b", judge="q"),
            battle(1, "X", "Y", "model_a", judge="p")]
    with pytest.warns(DataWarning, match=r"1 repeated line\(s\) identical to an earlier one .* were left out"):
        data = read_pairwise(jsonl(tmp_path / "judges.jsonl", rows))
    assert [(j.annotator, j.verdict) for j in data.judgments] == [("p", "a"), ("q", "b")]
    assert JudgmentsOracle(data).verdicts(data.pool, [0], "X", "Y")[0] == "tie"  # a split: the vote rule
    with pytest.raises(DataError, match=r"line 2: both sides are 'X'; a judgment compares two different systems"):
        read_pairwise(jsonl(tmp_path / "self.jsonl", [battle(1, "X", "Y", "tie"), battle(2, "X", "X", "tie")]))


def test_mt_bench_human_layout_items_are_question_turns_shared_by_pairs_and_judges(tmp_path):
    conv = lambda ans: [{"role": "user", "content": "Q81"}, {"role": "assistant", "content": ans}]
    rows = [{"question_id": 81, "model_a": "gpt-4", "model_b": "vicuna", "winner": "model_a", "judge": "expert_0",
             "turn": 1, "conversation_a": conv("g"), "conversation_b": conv("v")},
            {"question_id": 81, "model_a": "vicuna", "model_b": "gpt-4", "winner": "tie", "judge": "expert_1",
             "turn": 1, "conversation_a": conv("v"), "conversation_b": conv("g")},
            {"question_id": 81, "model_a": "gpt-4", "model_b": "llama", "winner": "model_b", "judge": "expert_0",
             "turn": 1, "conversation_a": conv("g"), "conversation_b": conv("l")},
            {"question_id": 81, "model_a": "gpt-4", "model_b": "llama", "winner": "tie (inconsistent)",
             "judge": ["gpt-4", "pair-v2"], "turn": 1}]
    data = read_pairwise(json_list(tmp_path / "human_judgments.json", rows))
    assert data.pool.item_ids == ("81-t1",) and data.pool.systems == ("gpt-4", "vicuna", "llama")
    assert data.pool.outputs["llama"] == ("l",) and list(data.pool.inputs) == ["Q81"]
    assert [(j.annotator, j.kind, j.verdict) for j in data.judgments] == [
        ("expert_0", "human", "a"), ("expert_1", "human", "tie"), ("expert_0", "human", "b"),
        ("gpt-4/pair-v2", "llm", "tie")]
    assert data.judgments[3].detail["winner"] == "tie (inconsistent)"
    # a second, different answer of one model to the same question and turn is an error naming both lines
    bad = dict(rows[2], conversation_a=conv("another"))
    path = json_list(tmp_path / "bad.json", rows[:2] + [bad])
    with pytest.raises(DataError, match=r"line \d+ gives item '81-t1' of system 'gpt-4' a different output than line"):
        read_pairwise(path)


def test_judge_kind_is_conservative():
    assert [judge_kind(n) for n in ("gpt-3.5-turbo", "claude-3-opus-20240229", "mistral-large", "Gemini-Pro",
                                    "qwen2-72b", "chatgpt_fn")] == ["llm"] * 6
    assert [judge_kind(n) for n in ("human", "expert_3", "arena_user_1", "author_0", "file", "gptzero-free",
                                    "alice")] == ["human"] * 6 + ["human"]


def test_kind_column_overrides_the_name_rule(tmp_path):
    rows = [battle(1, "X", "Y", "model_a", kind="llm"), battle(2, "X", "Y", "tie", kind="robot")]
    with pytest.raises(DataError, match=r"line 2: kind 'robot' is not one of: human, llm, metric"):
        read_pairwise(jsonl(tmp_path / "k.jsonl", rows))
    assert read_pairwise(jsonl(tmp_path / "k2.jsonl", rows[:1])).judgments[0].kind == "llm"


def test_cli_compare_on_small_battle_files(capsys, tmp_path, monkeypatch):
    rng = np.random.default_rng(3)
    human, judge = [], []
    for num in range(1, 121):
        a, b = ("X", "Y") if num % 2 else ("Y", "X")
        x_wins = rng.random() < 0.85
        winner = "model_a" if (a == "X") == x_wins else "model_b"
        human.append(battle(num, a, b, winner))
        judge.append(battle(num, a, b, winner if rng.random() < 0.8 else "tie"))
        human.append(battle(1000 + num, "X", "Z", "tie"))
        judge.append(battle(1000 + num, "X", "Z", "tie"))
    jsonl(tmp_path / "human.jsonl", human)
    jsonl(tmp_path / "gpt-4.jsonl", judge)
    monkeypatch.chdir(tmp_path)
    code, out, err = run(capsys, "compare", "--data", "human.jsonl", "--a", "X", "--b", "Y", "--oracle",
                         "judgments:human.jsonl", "--proxy", "judge:judgments:gpt-4.jsonl", "--risk", "0.1", "--json")
    assert code == 0, err
    d = json.loads(out)
    assert d["winner"] == "X" and d["pool_size"] == 120 and d["data"]["other_pairs"] == 120
    assert d["data"]["n_total"] == 120 and "note:" not in err


# ------------------------------------------------------------------------------------------ FastChat
def fastchat_row(qid, m1, m2, g1, g2, turn=1, judge=("gpt-4", "pair-v2")):
    return {"question_id": qid, "model_1": m1, "model_2": m2, "g1_winner": g1, "g2_winner": g2, "judge": list(judge),
            "g1_user_prompt": "...", "g1_judgment": "[[A]]", "g2_user_prompt": "...", "g2_judgment": "[[B]]",
            "turn": turn, "tstamp": 1.0}


def test_fastchat_rows_give_two_judgments(tmp_path):
    rows = [fastchat_row(81, "gpt-4", "vicuna", "model_1", "model_1"),
            fastchat_row(81, "gpt-4", "llama", "model_1", "model_2"),
            fastchat_row(82, "vicuna", "llama", "tie", "model_2", turn=2),
            fastchat_row(83, "gpt-4", "vicuna", "error", "model_2")]
    path = jsonl(tmp_path / "gpt-4_pair.jsonl", rows)
    assert detect_format(path) == "pairwise"
    with pytest.warns(DataWarning, match=r"1 game\(s\) have winner 'error' .* recorded as errors, never as verdicts"):
        data = read_pairwise(path)
    assert data.pool.item_ids == ("81-t1", "82-t2", "83-t1")
    got = [(j.item_id, j.a, j.b, j.verdict, j.status, j.shown_order, j.annotator) for j in data.judgments]
    assert got[:4] == [("81-t1", "gpt-4", "vicuna", "a", "done", "ab", "gpt-4/pair-v2 (g1)"),
                       ("81-t1", "gpt-4", "vicuna", "a", "done", "ba", "gpt-4/pair-v2 (g2)"),
                       ("81-t1", "gpt-4", "llama", "a", "done", "ab", "gpt-4/pair-v2 (g1)"),
                       ("81-t1", "gpt-4", "llama", "b", "done", "ba", "gpt-4/pair-v2 (g2)")]
    assert got[6] == ("83-t1", "gpt-4", "vicuna", None, "error", "ab", "gpt-4/pair-v2 (g1)")
    assert all(j.kind == "llm" for j in data.judgments)
    assert data.judgments[6].detail["reason"] == "FastChat recorded no verdict for game 1 (g1_winner 'error')"
    assert data.judgments[5].detail == {"source": str(path), "line": 3, "game": "g2", "winner": "model_2", "turn": 2,
                                        "kind_from": "cell", "judge_model": "gpt-4", "judge_prompt": "pair-v2"}
    o = JudgmentsOracle(data)
    # agreeing games: that verdict; disagreeing: a tie (two annotators, a split); one error: the other game
    assert list(o.verdicts(data.pool, [0, 2], "gpt-4", "vicuna")) == ["a", "b"]
    assert o.verdicts(data.pool, [0], "llama", "gpt-4")[0] == "tie"
    assert o.verdicts(data.pool, [1], "llama", "vicuna")[0] == "tie"


def test_fastchat_without_turn_a_rerun_and_bad_winners(tmp_path):
    row = fastchat_row(7, "X", "Y", "model_1", "tie")
    del row["turn"]
    rerun = dict(row, g1_winner="model_2", g2_winner="model_2")
    data = read_pairwise(json_list(tmp_path / "judge.json", [row, rerun]))
    assert data.pool.item_ids == ("7-t1",)
    assert JudgmentsOracle(data).verdicts(data.pool, [0], "X", "Y")[0] == "b"  # the later row supersedes
    bad = jsonl(tmp_path / "bad.jsonl", [fastchat_row(1, "X", "Y", "model_1", "A")])
    with pytest.raises(DataError) as e:
        read_pairwise(bad)
    assert str(e.value) == (f"{bad}: line 1: g2_winner 'A' is not a FastChat winner; FastChat writes model_1, "
                            "model_2, tie or error.")
    assert e.value.field == "g2_winner" and e.value.item_id == "1-t1"
    bad = jsonl(tmp_path / "bad2.jsonl", [fastchat_row(1, "X", "Y", "tie", "tie"),
                                         {**fastchat_row(2, "X", "Y", "tie", "tie"), "model_1": None}])
    with pytest.raises(DataError, match=r"line 2: model_1 is empty; every judgment names the model of game 1's first"):
        read_pairwise(bad)


def test_mt_bench_human_and_fastchat_judge_files_join_on_items(tmp_path):
    human = [{"question_id": 81, "model_a": "X", "model_b": "Y", "winner": "model_a", "judge": f"expert_{k}",
              "turn": 1} for k in range(3)] + [
        {"question_id": 82, "model_a": "Y", "model_b": "X", "winner": "model_a", "judge": "expert_0", "turn": 1}]
    pairs = [fastchat_row(81, "X", "Y", "model_1", "model_1"), fastchat_row(82, "X", "Y", "model_2", "tie")]
    human_data = read_pairwise(json_list(tmp_path / "human_judgments.json", human))
    judge = make_oracle(f"judgments:{jsonl(tmp_path / 'gpt-4_pair.jsonl', pairs)}")
    assert judge.covers(human_data.pool, "X", "Y").tolist() == [True, True]
    assert list(judge.verdicts(human_data.pool, [0, 1], "X", "Y")) == ["a", "tie"]
    assert list(JudgmentsOracle(human_data).verdicts(human_data.pool, [0, 1], "X", "Y")) == ["a", "b"]


# ------------------------------------------------------------------------------------------ AlpacaEval
def annotation(instruction, g1, g2, preference, **extra):
    return {"instruction": instruction, "output_1": f"{g1} on {instruction}", "generator_1": g1,
            "output_2": f"{g2} on {instruction}", "generator_2": g2, "dataset": "helpful_base",
            "annotator": "weighted_alpaca_eval_gpt4_turbo", "preference": preference, "price_per_example": 0.01,
            **extra}


def test_alpaca_annotations(tmp_path):
    rows = [annotation("i1", "base", "m", 1.0), annotation("i2", "base", "m", 2.0), annotation("i3", "base", "m", 1.5),
            annotation("i4", "base", "m", 0), annotation("i5", "base", "m", 1.2), annotation("i6", "base", "m", 1.9),
            annotation("i7", "base", "m", None), annotation("i1", "base", "base", 1.5),
            annotation("i8", "base", "m", 2, is_switched_outputs=True)]
    path = json_list(tmp_path / "annotations.json", rows)
    assert detect_format(path) == "pairwise" and pairwise_layout(rows[0]) == "alpaca"
    with pytest.warns(DataWarning) as warned:
        data = read_pairwise(path)
    notes = [str(w.message) for w in warned]
    assert any("1 row(s) compare a generator with itself and were left out" in n for n in notes)
    assert any("1 row(s) have no preference: recorded as errors, never as verdicts" in n for n in notes)
    ids = [alpaca_item_id(f"i{k}", "helpful_base") for k in (1, 2, 3, 4, 5, 6, 7, 8)]
    assert data.pool.item_ids == tuple(ids) and data.pool.systems == ("base", "m")
    assert [j.verdict for j in data.judgments] == ["a", "b", "tie", "tie", "a", "b", None, "b"]
    assert data.judgments[6].status == "error" and data.judgments[6].detail["reason"] == "no recorded preference"
    assert [j.shown_order for j in data.judgments][-2:] == ["ab", "ba"]
    j = data.judgments[4]
    assert (j.a, j.b, j.annotator, j.kind) == ("base", "m", "weighted_alpaca_eval_gpt4_turbo", "llm")
    assert j.detail == {"source": str(path), "line": 2 + 4 * 11, "preference": 1.2, "dataset": "helpful_base",
                        "kind_from": "judge"}
    assert list(data.pool.inputs)[:2] == ["i1", "i2"] and data.pool.outputs["m"][0] == "m on i1"
    # an index column names the items instead
    indexed = read_pairwise(json_list(tmp_path / "indexed.json", [annotation("i1", "b", "m", 1, index=0),
                                                                  annotation("i2", "b", "m", 2, index=1)]))
    assert indexed.pool.item_ids == ("0", "1")


@pytest.mark.parametrize("preference, message", [
    ("high", ("line 2: preference 'high' is not a number; expected a value in [1, 2] (1 = output_1 better, "
              "2 = output_2 better, 1.5 or 0 = a draw).")),
    (3, "line 2: preference 3.0 is outside [1, 2] (1 = output_1 better, 2 = output_2 better, 1.5 or 0 = a draw)."),
])
def test_bad_alpaca_preferences(tmp_path, preference, message):
    path = jsonl(tmp_path / "annotations.jsonl", [annotation("i1", "b", "m", 1), annotation("i2", "b", "m", preference)])
    with pytest.raises(DataError) as e:
        read_pairwise(path)
    assert str(e.value) == f"{path}: {message}" and e.value.field == "preference"


def test_alpaca_conflicting_annotations_and_missing_models(tmp_path):
    path = json_list(tmp_path / "a.json", [annotation("i1", "b", "m", 1), annotation("i1", "b", "m", 2)])
    with pytest.raises(DataError, match=r"annotates item 'helpful_base/[0-9a-f]{12}' \(b vs m\) again for annotator "
                                        r"'weighted_alpaca_eval_gpt4_turbo', differently from line 2"):
        read_pairwise(path)
    path = json_list(tmp_path / "b.json", [annotation("i1", "b", "m", 1), {**annotation("i2", "b", "m", 1),
                                                                          "generator_2": ""}])
    with pytest.raises(DataError, match=r"line \d+: generator_2 is empty; every annotation names the model of output_2"):
        read_pairwise(path)


# ------------------------------------------------------------------------------------------ detection
def test_detection_does_not_misfire_on_the_other_formats(tmp_path):
    summeval = tmp_path / "summeval.json"
    summeval.write_text(json.dumps({"d1": {"src": "s", "sys_summs": {}}}))
    long_jl = jsonl(tmp_path / "long.jsonl", [{"item_id": 1, "system": "X", "output": "o", "winner": "x"}])
    s2e = jsonl(tmp_path / "s.jsonl", [{"src": "a", "tgt": {"X": "b"}}])
    long_csv = tmp_path / "long.csv"
    long_csv.write_text("item_id,system,output,model_a\n1,X,hello,3\n")
    table = tmp_path / "pairs.csv"
    table.write_text("item_id,system_a,system_b,verdict\n1,X,Y,a\n")
    prefs = tmp_path / "preferences.csv"
    prefs.write_text("model_dir,annotator_config,instruction_idx,generator_1,generator_2,annotator,preference\n"
                     "m,cfg,0,base,m,cfg,1.2\n")
    assert [detect_format(p) for p in (summeval, long_jl, s2e, long_csv, table)] == [
        "summeval", "table", "s2e", "table", "pairwise"]
    assert not looks_pairwise(prefs) and pairwise_layout(["generator_1", "generator_2", "preference",
                                                          "instruction_idx", "annotator_config"]) is None
    with pytest.raises(DataError, match=r"This is AlpacaEval's preferences_all_annotators table: replay it as "
                                        r"judgments:alpaca-eval/preferences"):
        read_pairwise(prefs)
    # an arena battle file is read the same through every entry point
    arena = jsonl(tmp_path / "arena.jsonl", [battle(1, "X", "Y", "tie")])
    assert load(f"pairwise:{arena}").item_ids == ("1",)
    assert len(read_judgments(str(arena)).judgments) == 1
    with pytest.raises(DataError, match=r"expected a JSON list .* the file starts with '\{' instead of '\['"):
        read_pairwise(summeval)


def test_json_list_errors_name_the_line(tmp_path):
    path = tmp_path / "broken.json"
    path.write_text('[\n {"num": 1, "model_a": "X", "model_b": "Y", "winner": "tie"}\n {"num": 2}\n]\n')
    with pytest.raises(DataError, match=r"broken\.json: not valid JSON \(expected ',' or the list's closing '\]' on "
                                        r"line 3\)"):
        read_pairwise(path)
    path.write_text("[]")
    with pytest.raises(DataError, match=r"the file holds an empty JSON list, so there are no judgments"):
        read_pairwise(path)
    path.write_text('[{"num": 1, "model_a": "X", "model_b": "Y", "winner": "tie"}, 3]')
    with pytest.raises(DataError, match=r"line 1: expected a JSON object .* got int '3'"):
        read_pairwise(path)


def test_judge_files_under_the_data_root_have_names(tmp_path, monkeypatch):
    root = tmp_path / "data"
    (root / "arena").mkdir(parents=True)
    jsonl(root / "arena" / "human.jsonl", [battle(1, "X", "Y", "model_a"), battle(2, "Y", "X", "tie")])
    jsonl(root / "arena" / "gpt-4.jsonl", [battle(1, "X", "Y", "model_b"), battle(2, "Y", "X", "tie")])
    (root / "arena" / "notes.jsonl").write_text('{"text": "not judgments"}\n')
    monkeypatch.setenv("EVALSIFT_DATA", str(root))
    assert sorted(n for n in find_judgment_sources() if n.startswith("arena/")) == ["arena/gpt-4", "arena/human"]
    assert load("arena/human").item_ids == ("1", "2")
    assert read_judgments("arena/gpt-4").judgments[0].kind == "llm"
    assert make_oracle("judgments:arena/human").verdicts(load("arena/human"), [0, 1], "X", "Y").tolist() == ["a", "tie"]


def test_a_gzipped_judge_file_under_the_data_root_has_its_name(tmp_path, monkeypatch):
    import gzip

    root = tmp_path / "data"
    (root / "arena").mkdir(parents=True)
    lines = [json.dumps(r) for r in (battle(1, "X", "Y", "model_a"), battle(2, "Y", "X", "tie"))]
    with gzip.open(root / "arena" / "human.jsonl.gz", "wt") as f:
        f.write("\n".join(lines) + "\n")
    monkeypatch.setenv("EVALSIFT_DATA", str(root))
    assert [n for n in find_judgment_sources() if n.startswith("arena/")] == ["arena/human"]  # not arena/human.jsonl
    assert make_oracle("judgments:arena/human").verdicts(load("arena/human"), [0, 1], "X", "Y").tolist() == ["a", "tie"]


# ------------------------------------------------------------------------------------------ real data
PAIR = ("koala-13b", "vicuna-13b")


def human_win_rate(path: Path, a: str, b: str) -> tuple[int, float]:
    """Battles of a vs b in either orientation and a's win rate (ties half), straight from the file."""
    n, wins = 0, 0.0
    for line in path.read_text().splitlines():
        r = json.loads(line)
        if {r["model_a"], r["model_b"]} != {a, b}:
            continue
        n += 1
        if r["winner"].startswith("tie"):
            wins += 0.5
        elif (r["winner"] == "model_a") == (r["model_a"] == a):
            wins += 1
    return n, wins / n


def test_real_arena_battles_load_fast_and_join():
    human = need("arena-ppr/human.jsonl", "arena-ppr/gpt-4-0125-preview.jsonl")
    _read_cached.cache_clear()  # a real read, not the copy kept per file content
    t0 = time.perf_counter()
    data = read_pairwise(human, name="timed")
    seconds = time.perf_counter() - t0
    assert data.pool.n_items == 17942 and data.pool.n_systems == 20 and len(data.judgments) == 17942
    assert seconds < 10, f"reading 17,942 battles took {seconds:.1f} s"
    assert data.judgments[0].kind == "human" and data.judgments[0].annotator == "human"
    gpt4 = read_judgments(str(human.parent / "gpt-4-0125-preview.jsonl"))
    assert gpt4.pool.item_ids == data.pool.item_ids and gpt4.judgments[0].kind == "llm"
    assert {j.detail["winner"] for j in data.judgments} == {"model_a", "model_b", "tie", "tie (bothbad)"}
    n, rate = human_win_rate(human, *PAIR)
    assert n == 481 and rate == pytest.approx(0.427, abs=5e-4)
    oracle = JudgmentsOracle(data)
    r = restrict_pair(data.pool, *PAIR, oracle=oracle)
    assert r.pool.n_items == 481 and r.n_total == 481 and r.other_pairs == 17942 - 481
    # judging every battle of the pair gives the file's win rate
    session = Session(data.pool, "random", a=PAIR[0], b=PAIR[1], risk=1e-9, min_labels=481, max_labels=481)
    decision = session.run(oracle)
    assert decision.pool_size == 481 and decision.labels_used == 481
    assert decision.win_rate_a == pytest.approx(rate)


@pytest.mark.parametrize("where", ["data folder", "elsewhere"])
def test_real_arena_contract_command(capsys, monkeypatch, tmp_path, where):
    folder = need("arena-ppr/human.jsonl", "arena-ppr/gpt-4-0125-preview.jsonl").parent
    if where == "data folder":
        monkeypatch.chdir(folder)
        human, judge = "human.jsonl", "gpt-4-0125-preview.jsonl"
    else:
        monkeypatch.chdir(tmp_path)
        human, judge = str(folder / "human.jsonl"), str(folder / "gpt-4-0125-preview.jsonl")
    code, out, err = run(capsys, "compare", "--data", human, "--a", PAIR[0], "--b", PAIR[1], "--oracle",
                         f"judgments:{human}", "--proxy", f"judge:judgments:{judge}", "--risk", "0.1", "--json")
    assert code == 0, err
    d = json.loads(out)
    assert d["pool_size"] == 481 and d["outcome"] == "winner" and d["winner"] == "vicuna-13b"
    assert d["proxy"] == f"judge:judgments:{judge}" and d["risk"] <= 0.1 and 0 < d["labels_used"] < 481
    lo, hi = d["win_rate_interval"]
    assert lo <= human_win_rate(folder / "human.jsonl", *PAIR)[1] <= hi
    assert "note:" not in err  # no battles of other pairs reported as missing
    # the whole pool judged (the first decision set is every battle): the file's win rate
    if where == "elsewhere":
        code, out, err = run(capsys, "compare", "--data", human, "--a", PAIR[0], "--b", PAIR[1], "--oracle",
                             f"judgments:{human}", "--risk", "1e-9", "--min-labels", "481", "--max-labels", "481",
                             "--json")
        d = json.loads(out)
        assert code == 0 and d["labels_used"] == 481 and d["win_rate_a"] == pytest.approx(0.4272349, abs=1e-6)
        assert (d["wins_a"], d["wins_b"], d["ties"]) == (120, 190, 171)
    # the command did not change the working folder (compared resolved: ../shared may be a symbolic link)
    assert Path(os.getcwd()).resolve() == (folder if where == "data folder" else tmp_path).resolve()
