"""``--by`` on a column with one value (issue 42, item 5): the board per value repeats the overall one, and every
command that takes ``--by`` now says so in one note (the check lives in
``evalsift.io.pairwise_data.warn_one_value``: ``group_of`` calls it for ``arena`` and ``winrate``, ``rank``'s
item columns too). Before, the repeated board was printed without a word."""

from __future__ import annotations

import json

import numpy as np

from evalsift.cli import main

NOTE = "so its one board repeats the overall board"


def test_arena_winrate_and_rank_note_a_one_value_column(tmp_path, capsys):
    rng = np.random.default_rng(0)
    models = ["A", "B", "C", "D"]
    battles = tmp_path / "battles.jsonl"
    with battles.open("w") as fh:
        for k in range(200):
            a, b = rng.choice(4, 2, replace=False)
            fh.write(json.dumps({"num": k, "model_a": models[a], "model_b": models[b], "language": "English",
                                 "winner": ["model_a", "model_b", "tie"][int(rng.integers(3))]}) + "\n")
    assert main(["arena", "--data", str(battles), "--by", "language", "--out", str(tmp_path / "a")]) == 0
    err = capsys.readouterr().err
    assert f"note: --by language: all 200 judgments have the same language (English), {NOTE}" in err

    rows = [{"instruction": f"instruction {i}", "dataset": "koala", "output_1": "b" * 50, "generator_1": "base",
             "output_2": "m" * 60, "generator_2": m, "annotator": "weighted_alpaca_eval_gpt4_turbo",
             "preference": 1 + float(rng.random())} for m in ("M", "N") for i in range(40)]
    annotations = tmp_path / "annotations.json"
    annotations.write_text(json.dumps(rows), encoding="utf-8")
    assert main(["winrate", "--data", str(annotations), "--baseline", "base", "--by", "dataset",
                 "--out", str(tmp_path / "w")]) == 0
    err = capsys.readouterr().err
    assert f"--by dataset: all 80 judgments have the same dataset (koala), {NOTE}" in err

    table = tmp_path / "scores.csv"
    table.write_text("item_id,system,output,human,category\n" + "".join(
        f"q{i},{s},text,{rng.integers(1, 10)},writing\n" for i in range(30) for s in ("X", "Y", "Z")))
    assert main(["rank", "--data", str(table), "--by", "category", "--resamples", "100"]) == 0
    err = capsys.readouterr().err
    assert f"--by category: all 30 items have the same category (writing), {NOTE}" in err


def test_two_values_give_no_note(tmp_path, capsys):
    rng = np.random.default_rng(1)
    battles = tmp_path / "battles.jsonl"
    with battles.open("w") as fh:
        for k in range(200):
            a, b = rng.choice(3, 2, replace=False)
            fh.write(json.dumps({"num": k, "model_a": "ABC"[a], "model_b": "ABC"[b], "language": ["en", "de"][k % 2],
                                 "winner": ["model_a", "model_b"][int(rng.integers(2))]}) + "\n")
    assert main(["arena", "--data", str(battles), "--by", "language", "--out", str(tmp_path / "a")]) == 0
    assert NOTE not in capsys.readouterr().err
