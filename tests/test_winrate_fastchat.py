"""FastChat's numbers where the docs promise them (issue 42): ``winrate`` on an MT-Bench pair file counts both
turns and every prompt of the judge as ``show_result.py --mode pairwise-baseline`` does; a rerun's rows count
as FastChat counts them (``--repeats all``) or the later one only (``--repeats last``), in ``winrate`` and in
``rank``'s MT-Bench table; grades off MT-Bench's 1-10 scale are refused; whose verdicts a file holds comes
from its own fields, its name only as a noted guess, and ``--verdicts-from`` says when it overrides them.
Expectations by hand from FastChat's rules (``fastchat/llm_judge/show_result.py``)."""

from __future__ import annotations

import json

import pytest

from evalsift.cli import main
from evalsift.errors import DataError, DataWarning
from evalsift.io import load

from _judge_files import mt_bench_pairs, write_jsonl


def row(qid, turn, m1, m2, g1, g2, prompt):
    return {"question_id": qid, "model_1": m1, "model_2": m2, "g1_winner": g1, "g2_winner": g2,
            "judge": ["gpt-4", prompt], "turn": turn, "g1_judgment": "...", "g2_judgment": "..."}


# m against the baseline b, both turns, FastChat's four prompts (math questions get pair-math-v1)
ROWS = [row(81, 1, "m", "b", "model_1", "model_1", "pair-v2"),                     # m wins
        row(81, 2, "m", "b", "tie", "model_1", "pair-v2-multi-turn"),              # g1 tie: a tie
        row(82, 1, "b", "m", "model_2", "model_2", "pair-math-v1"),                # m wins (as model_2)
        row(82, 2, "b", "m", "model_1", "model_2", "pair-math-v1-multi-turn"),     # games disagree: a tie
        row(83, 1, "m", "b", "model_2", "model_2", "pair-v2"),                     # b wins: m loses
        row(83, 2, "m", "b", "error", "model_1", "pair-v2-multi-turn")]            # an error game: left out


def winrate(capsys, path, tmp_path, *extra):
    code = main(["winrate", "--data", str(path), "--baseline", "b", "--out", str(tmp_path / "w"), "--json",
                 "--quiet", *extra])
    out = capsys.readouterr()
    assert code == 0, out.err
    return json.loads(out.out), out.err


def test_winrate_counts_both_turns_and_every_prompt_as_show_result_does(tmp_path, capsys):
    """Before: 'the data holds the verdicts of 4 annotators; pick one with --annotator NAME'."""
    path = write_jsonl(tmp_path / "gpt-4_pair.jsonl", ROWS)
    got, err = winrate(capsys, path, tmp_path)
    m = got["boards"][0]["models"][0]
    # show_result: win 2 (81-t1, 82-t1), loss 1 (83-t1), tie 2 (81-t2, 82-t2); 83-t2 dropped (error)
    # win_rate_adjusted = (2 + 0.5 * 2) / 5 = 0.6
    assert (m["model"], m["n"], m["n_wins"], m["n_wins_base"], m["n_draws"]) == ("m", 5, 2, 1, 2)
    assert m["win_rate"] == pytest.approx(60.0)
    assert got["verdicts"]["source"] == "judge" and "gpt-4/pair-math-v1-multi-turn" in got["verdicts"]["line"]
    assert "one judge under its 4 prompts together" in err and "--by turn" in err
    # a board per turn: turn 1 = (1 + 1 + 0) / 3; turn 2 = (0.5 + 0.5) / 2
    by_turn, _ = winrate(capsys, path, tmp_path, "--by", "turn")
    boards = {b["group"]: b["models"][0]["win_rate"] for b in by_turn["boards"]}
    assert boards == pytest.approx({"all": 60.0, "1": 200 / 3, "2": 50.0})
    # one prompt alone: pair-v2 judged 81-t1 (a win) and 83-t1 (a loss)
    one, _ = winrate(capsys, path, tmp_path, "--annotator", "gpt-4/pair-v2")
    assert one["boards"][0]["models"][0]["win_rate"] == pytest.approx(50.0)
    assert one["boards"][0]["models"][0]["n"] == 2
    # the judge model's name counts all its prompts
    assert winrate(capsys, path, tmp_path, "--annotator", "gpt-4")[0]["boards"][0]["models"][0]["n"] == 5


def test_a_reruns_rows_count_as_fastchat_counts_them_or_the_later_one(tmp_path, capsys):
    rerun = dict(ROWS[0], g1_winner="model_2", g2_winner="model_2")  # 81-t1 judged again: now b wins
    path = write_jsonl(tmp_path / "gpt-4_pair.jsonl", ROWS + [rerun])
    every, err = winrate(capsys, path, tmp_path)
    m = every["boards"][0]["models"][0]
    # show_result counts both rows of 81-t1: win 2, loss 2, tie 2 -> (2 + 1) / 6 = 0.5
    assert (m["n"], m["win_rate"]) == (6, pytest.approx(50.0))
    assert "1 repeated judgment(s)" in err and "each counts" in err and "--repeats last" in err
    later, err = winrate(capsys, path, tmp_path, "--repeats", "last")
    m = later["boards"][0]["models"][0]
    # the later row of 81-t1 only: win 1, loss 2, tie 2 -> (1 + 1) / 5 = 0.4
    assert (m["n"], m["win_rate"]) == (5, pytest.approx(40.0))
    assert "the later one counts (--repeats last)" in err


def test_winrate_on_an_mt_bench_pair_file_is_show_results_loop(tmp_path, capsys):
    """show_result.py --mode pairwise-baseline, its loop written out: rows with an error game dropped, every
    other row against the baseline counted (both turns, all prompts, rerun rows too), a tie unless both games
    name the same winner."""
    path, rows = mt_bench_pairs(tmp_path, n_questions=12, reruns=3)
    code = main(["winrate", "--data", str(path), "--baseline", "gpt-3.5-turbo", "--out", str(tmp_path / "w"),
                 "--json", "--quiet"])
    got = json.loads(capsys.readouterr().out)
    assert code == 0
    for model in ("gpt-4", "vicuna-13b-v1.3"):
        win = loss = tie = 0
        for r in rows:
            if "error" in (r["g1_winner"], r["g2_winner"]) or {r["model_1"], r["model_2"]} != {model, "gpt-3.5-turbo"}:
                continue
            if r["g1_winner"] == "tie" or r["g1_winner"] != r["g2_winner"]:
                tie += 1
            elif r[r["g1_winner"]] == model:
                win += 1
            else:
                loss += 1
        m = next(x for x in got["boards"][0]["models"] if x["model"] == model)
        assert m["n"] == win + loss + tie and m["win_rate"] == pytest.approx(100 * (win + tie / 2) / (win + loss + tie))


# ---------------------------------------------------------------------------------------- single grades
def grade(qid, turn, model, score):
    return {"question_id": qid, "model": model, "judge": ["gpt-4", "single-v1"], "user_prompt": "...",
            "judgment": f"[[{score}]]", "score": score, "turn": turn, "tstamp": 1.0}


SINGLE = [grade(81, 1, "x", 8), grade(81, 2, "x", 6), grade(82, 1, "x", -1), grade(82, 2, "x", 4),
          grade(81, 1, "y", 5), grade(81, 2, "y", 5), grade(82, 1, "y", 7), grade(82, 2, "y", 9),
          grade(81, 1, "x", 2)]  # a rerun of x's 81-t1, appended


def test_mt_bench_table_averages_a_reruns_rows_as_show_result_does(tmp_path, capsys):
    path = write_jsonl(tmp_path / "gpt-4_single.jsonl", SINGLE)
    assert main(["rank", "--data", str(path), "--resamples", "50", "--json", "--quiet"]) == 0
    out = capsys.readouterr()
    means = {r["system"]: r for r in json.loads(out.out)["means"]}
    # show_result: x = mean(8, 6, 4, 2) = 5.0 (-1 dropped, both rows of 81-t1), turn 1 = mean(8, 2), turn 2 = mean(6, 4)
    assert (means["x"]["score"], means["x"]["n"]) == (5.0, 4)
    assert means["x"]["groups"] == {"turn 1": 5.0, "turn 2": 5.0}
    # y = mean(5, 5, 7, 9) = 6.5; turn 1 = 6, turn 2 = 7
    assert (means["y"]["score"], means["y"]["groups"]) == (6.5, {"turn 1": 6.0, "turn 2": 7.0})
    assert "every row counts, as show_result.py averages them" in out.err
    with pytest.warns(DataWarning) as warned:
        pool = load(str(path))
    assert any("every row counts" in str(w.message) for w in warned)
    assert pool.score("score")[0, 0] == 5.0  # the ranking's cell: the mean of its rows (8 + 2) / 2
    assert main(["rank", "--data", str(path), "--resamples", "50", "--json", "--quiet", "--repeats", "last"]) == 0
    out = capsys.readouterr()
    means = {r["system"]: r for r in json.loads(out.out)["means"]}
    # the later row only: x = mean(2, 6, 4) = 4.0, turn 1 = 2
    assert (means["x"]["score"], means["x"]["n"], means["x"]["groups"]["turn 1"]) == (4.0, 3, 2.0)
    assert "--repeats last: 1 repeated grade row(s)" in out.err


@pytest.mark.parametrize("score, message", [
    (11, r"line 2: score 11 is outside MT-Bench's 1-10 scale; write the judge's 1-10 grade as a number, or -1"),
    (0, r"line 2: score 0 is outside MT-Bench's 1-10 scale"),
    (10.5, r"line 2: score 10\.5 is outside MT-Bench's 1-10 scale"),
    ("8", r"line 2: score '8' is text, not a number: write it as the JSON number 8, without quotes"),
    (True, r"line 2: score True is not a number"),
    ("eight", r"line 2: score 'eight' is not a number"),
], ids=["11", "0", "10.5", "text 8", "true", "eight"])
def test_grades_off_the_scale_are_refused_with_the_line(tmp_path, score, message):
    path = write_jsonl(tmp_path / "gpt-4_single.jsonl", [grade(81, 1, "x", 7), grade(81, 1, "y", score)])
    with pytest.raises(DataError, match=message):
        load(str(path))


def test_minus_one_is_no_grade_and_decimals_are_grades(tmp_path):
    path = write_jsonl(tmp_path / "gpt-4_single.jsonl", [grade(81, 1, "x", 7.5), grade(81, 1, "y", -1),
                                                          grade(81, 2, "y", 1), grade(81, 2, "x", 10)])
    with pytest.warns(DataWarning, match=r"1 grade\(s\) are -1"):
        S = load(str(path)).score("score")
    assert S[0, 0] == 7.5 and S[1].tolist() == [10.0, 1.0]
    assert S[0, 1] != S[0, 1]  # -1: NaN, left out as show_result leaves it


# ---------------------------------------------------------------------------------------- whose verdicts
def battles(path, judge=None, kind=None):
    rows = []
    for k in range(1, 9):
        r = {"num": k, "model_a": "b", "model_b": "m", "winner": "model_b" if k % 3 else "model_a"}
        if judge:
            r["judge"] = judge
        if kind:
            r["kind"] = kind
        rows.append(r)
    return write_jsonl(path, rows)


def test_a_file_named_like_a_judge_says_its_label_is_the_names_guess(tmp_path, capsys):
    path = battles(tmp_path / "claude-3-opus.jsonl")  # no judge, annotator or kind field: only the name
    got, err = winrate(capsys, path, tmp_path)
    assert got["verdicts"]["source"] == "judge"
    assert ("no field of the file says who judged (no kind, judge or annotator column), so its 8 verdict(s) are "
            "labelled a judge's from the file name 'claude-3-opus' alone; say --verdicts-from human") in err
    stated, err = winrate(capsys, path, tmp_path, "--verdicts-from", "human")
    assert stated["verdicts"]["source"] == "human" and "file name" not in err and "overrides" not in err
    # the file's own fields decide, whatever its name
    people, err = winrate(capsys, battles(tmp_path / "claude-votes.jsonl", judge="alice"), tmp_path)
    assert people["verdicts"]["source"] == "human" and "file name" not in err
    marked, err = winrate(capsys, battles(tmp_path / "claude-3.jsonl", kind="human"), tmp_path)
    assert marked["verdicts"]["source"] == "human" and "file name" not in err


def test_verdicts_from_says_when_it_overrides_the_files_own_fields(tmp_path, capsys):
    path = write_jsonl(tmp_path / "gpt-4_pair.jsonl", ROWS)
    got, err = winrate(capsys, path, tmp_path, "--verdicts-from", "human")
    assert got["verdicts"]["source"] == "human"
    assert ("--verdicts-from human overrides" in err and "FastChat's [judge model, prompt] cell makes 5 verdict(s) "
            "a judge's" in err and "they are counted as people's" in err)
    # a kind column stated otherwise
    kinds, err = winrate(capsys, battles(tmp_path / "h.jsonl", judge="alice", kind="human"), tmp_path,
                         "--verdicts-from", "judge")
    assert kinds["verdicts"]["source"] == "judge" and "its kind column makes 8 verdict(s) people's" in err
    # an MT-Bench grade file names its judge in every row
    single = write_jsonl(tmp_path / "s" / "gpt-4_single.jsonl", SINGLE)
    assert main(["rank", "--data", str(single), "--resamples", "50", "--verdicts-from", "human", "--json",
                 "--quiet"]) == 0
    out = capsys.readouterr()
    assert json.loads(out.out)["verdicts"]["source"] == "human"
    assert "--verdicts-from human overrides" in out.err and "its judge column names gpt-4" in out.err
