"""The LLM-judging world's files, written in their published layouts (FastChat llm_judge's
``model_judgment/gpt-4_single.jsonl`` and ``gpt-4_pair.jsonl``, ``question.jsonl``; the older
``fastchat/eval`` ``review_<m1>_<m2>.jsonl``), read by ``rank`` and ``arena``; whose verdicts each output
counts."""

from __future__ import annotations

import csv
import json
import math
import sys
from pathlib import Path

import numpy as np
import pytest

from evalsift.cli import main
from evalsift.errors import DataError
from evalsift.io import load
from evalsift.io.judge_files import combine_games
from evalsift.io.pairwise import read_pairwise

from _judge_files import CATEGORIES, MODELS, fastchat_pairs, mt_bench, write_jsonl

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks" / "arena"))
from fastchat_elo import fastchat_elo  # noqa: E402  FastChat's rule and compute_mle_elo, from their definitions

def show_result(rows, key=lambda r: True):
    """FastChat's show_result --mode single by hand: per model, the mean score of the rows with score != -1."""
    out = {}
    for m in MODELS:
        s = [r["score"] for r in rows if r["model"] == m and r["score"] != -1 and key(r)]
        out[m] = sum(s) / len(s) if s else None
    return out


def test_rank_reads_mt_bench_single_grades_as_fastchat_show_result_scores_them(tmp_path, capsys):
    path, questions, rows = mt_bench(tmp_path)
    pool = load(str(path))
    assert pool.systems == tuple(MODELS) and pool.n_items == 2 * len(questions) and pool.metrics == ("score",)
    assert pool.item_ids[:2] == ("81-t1", "81-t2") and "category" in pool.metadata  # question.jsonl found above
    assert main(["rank", "--data", str(path), "--by", "category", "--resamples", "200", "--json", "--quiet"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["verdicts"]["source"] == "judge" and "gpt-4" in result["verdicts"]["annotators"]
    cat = {q["question_id"]: q["category"] for q in questions}
    overall = show_result(rows)
    turn = [show_result(rows, lambda r, t=t: r["turn"] == t) for t in (1, 2)]
    for row in result["means"]:
        m = row["system"]
        assert math.isclose(row["score"], overall[m], abs_tol=1e-12)
        assert math.isclose(row["groups"]["turn 1"], turn[0][m]) and math.isclose(row["groups"]["turn 2"], turn[1][m])
        for c in CATEGORIES:
            assert math.isclose(row["groups"][c], show_result(rows, lambda r: cat[r["question_id"]] == c)[m])
    assert [r["system"] for r in result["means"]] == sorted(MODELS, key=lambda m: -overall[m])
    boards = result["by"]["boards"]
    assert [b["value"] for b in boards] == sorted(CATEGORIES) and all(b["n_items"] <= 6 for b in boards)


def test_rank_writes_csv_and_html_saying_whose_verdicts(tmp_path, capsys):
    path, _, _ = mt_bench(tmp_path)
    out = tmp_path / "out"
    assert main(["rank", "--data", str(path), "--by", "turn", "--resamples", "100", "--out", str(out)]) == 0
    text = capsys.readouterr().out
    assert text.startswith("verdicts: judge gpt-4") and "MT-Bench score" in text and "turn = 2" in text
    with open(out / "ranking.csv", newline="") as f:
        table = list(csv.DictReader(f))
    assert {r["group"] for r in table} == {"", "1", "2"} and all(r["verdicts"].startswith("verdicts: judge gpt-4")
                                                                 for r in table)
    assert "verdicts: judge gpt-4" in (out / "ranking.html").read_text()
    # stated otherwise: people graded these
    assert main(["rank", "--data", str(path), "--resamples", "100", "--verdicts-from", "human", "--json", "--quiet"]) == 0
    assert json.loads(capsys.readouterr().out)["verdicts"]["source"] == "human"


def test_mt_bench_questions_elsewhere_and_bad_files(tmp_path, capsys):
    path, questions, _ = mt_bench(tmp_path)
    moved = tmp_path / "elsewhere" / "gpt-4_single.jsonl"
    moved.parent.mkdir()
    moved.write_text(path.read_text())
    assert main(["rank", "--data", str(moved), "--by", "category", "--quiet"]) != 0
    err = capsys.readouterr().err
    assert "--by 'category'" in err and "--questions FILE" in err
    assert main(["rank", "--data", str(moved), "--by", "category", "--questions",
                 str(path.parent.parent / "question.jsonl"), "--resamples", "50", "--json", "--quiet"]) == 0
    assert len(json.loads(capsys.readouterr().out)["by"]["boards"]) == 8
    bad = write_jsonl(tmp_path / "bad" / "gpt-4_single.jsonl",
                      [{"question_id": 81, "model": "x", "judge": ["gpt-4", "single-v1"], "score": "eight", "turn": 1}])
    with pytest.raises(DataError, match=r"line 1: score 'eight' is not a number"):
        load(str(bad))


def test_review_files_one_judgment_per_question_and_their_grades(tmp_path, capsys):
    rows = [{"review_id": f"r{q}", "question_id": q, "answer1_id": f"a{q}", "answer2_id": f"b{q}",
             "text": "8 9\nBoth ...", "score": s, "reviewer_id": "gpt-4-0328-default", "metadata": {}}
            for q, s in enumerate([[8.0, 9.0], [9.0, 7.5], [7.0, 7.0], [-1, -1], [6.0, 9.0]], 1)]
    path = write_jsonl(tmp_path / "review_alpaca-13b_vicuna-13b.jsonl", rows)
    data = read_pairwise(path)
    assert [(j.item_id, j.a, j.b, j.verdict, j.status) for j in data.judgments] == [
        ("1", "alpaca-13b", "vicuna-13b", "b", "done"), ("2", "alpaca-13b", "vicuna-13b", "a", "done"),
        ("3", "alpaca-13b", "vicuna-13b", "tie", "done"), ("4", "alpaca-13b", "vicuna-13b", None, "error"),
        ("5", "alpaca-13b", "vicuna-13b", "b", "done")]
    assert {j.kind for j in data.judgments} == {"llm"} and data.judgments[0].annotator == "gpt-4-0328-default"
    S = data.pool.score("score")
    assert S[:, 0].tolist()[:3] == [8.0, 9.0, 7.0] and np.isnan(S[3]).all()
    assert main(["rank", "--data", str(path), "--resamples", "50", "--json", "--quiet"]) == 0
    got = json.loads(capsys.readouterr().out)
    assert got["verdicts"]["source"] == "judge" and [r["system"] for r in got["ranking"]] == ["vicuna-13b", "alpaca-13b"]
    odd = write_jsonl(tmp_path / "reviews.jsonl", rows)
    with pytest.raises(DataError, match=r"review_<model 1>_<model 2>\.jsonl"):
        read_pairwise(odd)


def test_fastchat_pairwise_rows_are_one_battle_each_by_fastchats_rule(tmp_path):
    path, rows = fastchat_pairs(tmp_path)
    data = read_pairwise(path)
    assert len(data.judgments) == 2 * len(rows)  # as read: both games, for judge-report's position bias
    one = combine_games(data)
    kept = [r for r in rows if "error" not in (r["g1_winner"], r["g2_winner"])]
    done = [j for j in one.judgments if j.status == "done"]
    assert len(one.judgments) == len(rows) and len(done) == len(kept)
    for j, r in zip(done, kept):
        agree = r["g1_winner"] == r["g2_winner"] and r["g1_winner"] != "tie"
        assert j.verdict == ({"model_1": "a", "model_2": "b"}[r["g1_winner"]] if agree else "tie")
        assert j.annotator == "gpt-4/pair-v2" and j.kind == "llm"
        assert j.detail["winner"] == ("tie (inconsistent)" if r["g1_winner"] != r["g2_winner"] else
                                      r["g1_winner"])


def test_winrate_on_fastchat_pairs_is_fastchats_adjusted_win_rate(tmp_path, capsys):
    """show_result.py --mode pairwise-baseline by hand: per model, (wins + ties / 2) / rows against the
    baseline, rows with an error game left out, a row a tie unless both games name the same winner."""
    path, rows = fastchat_pairs(tmp_path)
    assert main(["winrate", "--data", str(path), "--baseline", "gpt-3.5-turbo", "--out", str(tmp_path / "w"),
                 "--json", "--quiet"]) == 0
    got = json.loads(capsys.readouterr().out)
    assert "judge gpt-4/pair-v2" in json.dumps(got)
    for model in ("gpt-4", "vicuna-13b-v1.3"):
        res = []
        for r in rows:
            if {r["model_1"], r["model_2"]} != {model, "gpt-3.5-turbo"} or "error" in (r["g1_winner"], r["g2_winner"]):
                continue
            if r["g1_winner"] == "tie" or r["g1_winner"] != r["g2_winner"]:
                res.append(0.5)
            else:
                res.append(1.0 if r[r["g1_winner"]] == model else 0.0)
        row = next(m for m in got["boards"][0]["models"] if m["model"] == model)
        assert math.isclose(row["win_rate"], 100 * sum(res) / len(res), abs_tol=1e-9) and row["n"] == len(res)


def test_arena_counts_a_fastchat_row_once_and_fits_fastchats_elo(tmp_path, capsys):
    """gpt-4_pair.jsonl: battles = rows (less the rows with an error game), Bradley-Terry equal to FastChat's
    compute_mle_elo on the same rows to 0.1 Elo, every output saying the verdicts are a judge's; --games
    separate counts both games."""
    path, rows = fastchat_pairs(tmp_path, n_questions=80)
    kept = [r for r in rows if "error" not in (r["g1_winner"], r["g2_winner"])]
    out = tmp_path / "board"
    assert main(["arena", "--data", str(path), "--out", str(out), "--json", "--quiet"]) == 0
    got = json.loads(capsys.readouterr().out)
    assert got["battles"] == len(kept) and got["verdicts"]["source"] == "judge"
    ref = fastchat_elo(rows)
    for m in got["models"]:
        assert abs(m["score"] - ref[m["name"]]) < 0.1, (m, ref)
    assert "judge battles" in (out / "leaderboard.html").read_text() and "human battles" not in (
        out / "leaderboard.html").read_text()
    assert all(line.endswith('"verdicts: judge gpt-4/pair-v2 (%d verdicts)"' % len(kept))
               for line in (out / "leaderboard.csv").read_text().splitlines()[1:])
    assert main(["arena", "--data", str(path), "--out", str(out), "--games", "separate", "--json", "--quiet"]) == 0
    sep = json.loads(capsys.readouterr().out)
    games = sum(g != "error" for r in rows for g in (r["g1_winner"], r["g2_winner"]))
    assert sep["battles"] == games
    # the same file stated to hold people's verdicts
    assert main(["arena", "--data", str(path), "--out", str(out), "--verdicts-from", "human", "--quiet"]) == 0
    assert capsys.readouterr().out.startswith("verdicts: human")


def test_arena_by_category_and_language_boards(tmp_path, capsys):
    path, rows = fastchat_pairs(tmp_path, n_questions=80)
    questions = [{"question_id": q, "category": CATEGORIES[(q - 81) // 10], "turns": ["?"]} for q in range(81, 161)]
    write_jsonl(tmp_path / "question.jsonl", questions)  # FastChat's place: data/mt_bench/question.jsonl
    out = tmp_path / "cat"
    assert main(["arena", "--data", str(path), "--by", "category", "--out", str(out), "--quiet"]) == 0
    text = capsys.readouterr().out
    assert text.count("\ncategory = ") == 8 and text.startswith("verdicts: judge gpt-4/pair-v2")
    with open(out / "by_category.csv", newline="") as f:
        table = list(csv.DictReader(f))
    per = {c: sum(1 for r in rows if "error" not in (r["g1_winner"], r["g2_winner"])
                  and CATEGORIES[(r["question_id"] - 81) // 10] == c) for c in CATEGORIES}
    results = json.loads((out / "results.json").read_text())
    assert {v: b["battles"] for v, b in results["by"]["boards"].items()} == per
    assert {r["group"] for r in table} == set(CATEGORIES) and all("judge gpt-4/pair-v2" in r["verdicts"] for r in table)
    html = (out / "leaderboard.html").read_text()
    assert html.count("class=group-scores") == 8 and "category = writing" in html
    # Chatbot Arena battles by language; an unknown column names the ones there are
    battles = [{"num": k, "model_a": a, "model_b": b, "winner": w, "language": lang}
               for k, (a, b, w, lang) in enumerate(
                   [("x", "y", "model_a", "English"), ("y", "z", "model_b", "German"), ("x", "z", "tie (bothbad)", "English")]
                   * 30, 1)]
    arena = write_jsonl(tmp_path / "battles.jsonl", battles)
    assert main(["arena", "--data", str(arena), "--by", "language", "--out", str(tmp_path / "lang"), "--quiet"]) == 0
    assert "language = German" in capsys.readouterr().out
    assert main(["arena", "--data", str(arena), "--by", "lang", "--out", str(tmp_path / "lang"), "--quiet"]) == 2
    assert "Did you mean 'language'?" in capsys.readouterr().err
