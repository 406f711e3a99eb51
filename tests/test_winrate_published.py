"""``evalsift winrate --difficulty FILE --weights FILE`` (issue 43): AlpacaEval's published instruction
difficulties and per-model GLM weights, so that the length-controlled column is AlpacaEval's own prediction.

The files are written here in AlpacaEval's layouts, by pandas the way AlpacaEval writes them (the weights:
``pd.DataFrame(weights, index=[model]).to_csv(path, float_format="%.16f")`` as ``glm_winrate.py`` saves them; the
difficulties: a Series named ``instruction_difficulty`` with index name ``index``, the table its code reads with
``pd.read_csv(path, index_col=0).squeeze()``). The prediction is checked against the formula computed here, in
plain Python; then the errors; last, the mechanism on AlpacaEval's real recorded preferences (skips without them)."""

from __future__ import annotations

import csv
import gzip
import json
import math

import numpy as np
import pytest

from evalsift.cli import main
from evalsift.errors import DataError, ParameterError
from evalsift.winrate import (PublishedDifficulty, length_controlled_win_rate, read_alpaca_difficulty,
                              read_alpaca_weights, winrate_board)

from _data import need
from test_winrate import annotations_file, data_of, judgment

pd = pytest.importorskip("pandas", reason="pandas writes the files in AlpacaEval's layout here")

TERMS = ("np.tanh(std_delta_len)", "instruction_difficulty", "not_gamed_baseline.astype(float)")


def write_weights(path, rows):
    """AlpacaEval's weights file: ``{model: (length, difficulty, intercept)}``, saved as glm_winrate.py saves it."""
    frames = [pd.DataFrame(dict(zip(TERMS, w)), index=[m]) for m, w in rows.items()]
    pd.concat(frames, axis=0).to_csv(path, float_format="%.16f")
    return path


def write_difficulty(path, values, key="index"):
    """AlpacaEval's instruction_difficulty.csv: ``{index: value}`` (or ``{instruction text: value}``)."""
    s = pd.Series(values, name="instruction_difficulty")
    s.index.name = key
    s.to_csv(path)
    return path


def expected_lc(intercept, coef, difficulties):
    """AlpacaEval's LC from saved weights, by hand: 100 x mean_i 1 / (1 + exp(-(intercept + coef x d_i)))."""
    return 100 * sum(1 / (1 + math.exp(-(intercept + coef * d))) for d in difficulties) / len(difficulties)


def sem(values):
    m = sum(values) / len(values)
    return math.sqrt(sum((v - m) ** 2 for v in values) / (len(values) - 1) / len(values))


def three_models(n=40, seed=1):
    """Baseline 'base' against M, N and K on items '0'..'n-1' (listed out of order), outputs of known lengths."""
    rng = np.random.default_rng(seed)
    order = list(rng.permutation(n))
    js, outputs = [], {"base": [None] * n}
    lengths = {"base": rng.integers(200, 1500, n)}
    for m, shift in (("M", 600), ("N", -300), ("K", 100)):
        lengths[m] = np.maximum(10, lengths["base"] + shift + rng.integers(-150, 150, n))
        p = np.clip(1 / (1 + np.exp(-(-0.3 + 0.001 * (lengths[m] - lengths["base"])))) + rng.normal(0, 0.05, n), 0, 1)
        js += [judgment(int(i), "base", m, 1 + float(p[i])) for i in order]
    items = [str(i) for i in order]
    outputs = {s: ["x" * int(lengths[s][int(i)]) for i in items] for s in lengths}
    data = data_of(js, outputs=outputs)
    assert list(data.pool.item_ids) == items
    return data


def test_published_weights_give_alpacaevals_prediction_and_the_rest_are_fitted(tmp_path):
    data = three_models()
    d = {i: round(math.sin(i) * 1.3, 6) for i in range(40)}
    diff = read_alpaca_difficulty(write_difficulty(tmp_path / "instruction_difficulty.csv", d))
    assert isinstance(diff, PublishedDifficulty) and diff.by == "index" and diff.values[7] == d[7]
    wfile = write_weights(tmp_path / "baseline_base.csv", {"M": (-1.6, 0.8, -0.4), "N": (-1.2, 0.35, 0.9),
                                                           "base": (0.0, 0.0, 0.0), "absent": (-1, 1, 1)})
    board = winrate_board(data, "base", difficulty=diff, weights=wfile, quiet=True)
    assert board.length_controlled  # the weights imply it
    rows = {m["model"]: m for m in board.boards[0]["models"]}
    # M and N: AlpacaEval's formula with their saved weights and each instruction's own difficulty (item i <-> index i)
    items = [int(i) for i in data.pool.item_ids]
    for model, (a, b) in (("M", (-0.4, 0.8)), ("N", (0.9, 0.35))):
        preds = [1 / (1 + math.exp(-(a + b * d[i]))) for i in items]
        assert rows[model]["length_controlled_winrate"] == pytest.approx(expected_lc(a, b, [d[i] for i in items]),
                                                                         abs=1e-9)
        # its error is AlpacaEval's lc_standard_error: 100 x the sem of the predictions
        assert rows[model]["lc_standard_error"] == pytest.approx(100 * sem(preds), abs=1e-9)
        assert rows[model]["lc_prediction_sem"] == rows[model]["lc_standard_error"]
        assert rows[model]["lc_source"] == "published weights"
        assert board.glms[model]["source"] == "published" and board.glms[model]["C"] is None
    assert board.glms["M"]["length"] == -1.6 and board.glms["M"]["sd_delta_len"] > 0
    # K is not in the file: fitted as without it, with the same difficulties
    k = data_of([j for j in data.judgments if "K" in (j.a, j.b)],
                outputs={s: data.pool.outputs[s] for s in ("base", "K")})
    alone = winrate_board(k, "base", length_controlled=True, difficulty={str(i): v for i, v in d.items()}, quiet=True)
    assert rows["K"]["length_controlled_winrate"] == alone.boards[0]["models"][0]["length_controlled_winrate"]
    assert rows["K"]["lc_source"] == "fitted" and board.glms["K"]["C"] is not None
    assert board.published == {"weights": str(wfile), "models": {"M": "M", "N": "N"}, "fitted": ["K"],
                               "difficulty": str(tmp_path / "instruction_difficulty.csv")}
    assert any(n.startswith("not in ") and n.endswith("fitted here: K") for n in board.notes)
    summary = board.summary()
    assert "AlpacaEval's published table" in summary and "published GLM weights" in summary
    assert summary.count("*") >= 3  # M and N marked, and the legend
    assert board.to_dict()["published"]["fitted"] == ["K"]
    assert {r["lc_source"] for r in board.csv_rows()} == {"published weights", "fitted"}


def test_without_the_new_options_nothing_changes():
    data = three_models(n=30, seed=2)
    board = winrate_board(data, "base", length_controlled=True, quiet=True)
    assert board.published is None and "published" not in board.to_dict()
    assert "lc_source" not in board.csv_rows()[0] and "*" not in board.summary()
    assert all("lc_source" not in m for m in board.boards[0]["models"])


def test_weights_without_the_difficulty_table_are_approximate_and_say_so(tmp_path):
    data = three_models(n=30, seed=3)
    wfile = write_weights(tmp_path / "w.csv", {m: (-1.5, 0.5, 0.1) for m in ("M", "N", "K")})
    board = winrate_board(data, "base", weights=wfile, quiet=True)
    assert board.published["fitted"] == [] and board.published["difficulty"] is None
    assert any("only approximate AlpacaEval's" in n and "--difficulty FILE" in n for n in board.notes)
    est = board.difficulty["difficulty"]
    m = next(e for e in board.boards[0]["models"] if e["model"] == "M")
    ids = [j.item_id for j in data.judgments if j.b == "M"]
    assert m["length_controlled_winrate"] == pytest.approx(expected_lc(0.1, 0.5, [est[i] for i in ids]), abs=1e-9)
    assert "none fitted here" in board.difficulty["glm_variant"]


def test_the_cli_joins_by_instruction_text_and_says_what_came_from_where(tmp_path, capsys):
    src = annotations_file(tmp_path / "annotations.json", n=30)  # instructions "instruction 0" .. "instruction 29"
    d = {f"instruction {i}": 0.1 * (i % 7) - 0.3 for i in range(30)}
    dfile = write_difficulty(tmp_path / "difficulty_by_text.csv", d, key="instruction")
    wfile = write_weights(tmp_path / "baseline_base.csv", {"M": (-1.0, 1.2, -0.7)})
    out = tmp_path / "out"
    code = main(["winrate", "--data", str(src), "--baseline", "base", "--difficulty", str(dfile), "--weights",
                 str(wfile), "--out", str(out)])
    stdout, stderr = capsys.readouterr()
    assert code == 0, stderr
    res = json.loads((out / "results.json").read_text())
    m = {e["model"]: e for e in res["boards"][0]["models"]}
    assert m["M"]["length_controlled_winrate"] == pytest.approx(expected_lc(-0.7, 1.2, list(d.values())), abs=1e-9)
    assert m["N"]["lc_source"] == "fitted" and res["published"]["models"] == {"M": "M"}
    assert "joined by instruction text" in res["difficulty"]["how"]
    assert "LC from AlpacaEval's published GLM weights" in stdout and "fitted here for 1: N" in stdout
    assert "note: not in" in stderr and "fitted here: N" in stderr
    with (out / "leaderboard.csv").open(newline="") as f:
        assert {r["model"]: r["lc_source"] for r in csv.DictReader(f)} == {"M": "published weights", "N": "fitted"}
    assert "id=published" in (out / "leaderboard.html").read_text()


def test_an_index_table_joins_annotations_by_their_order(tmp_path):
    """AlpacaEval annotations carry no index: the data's k-th instruction is index k, as AlpacaEval's own code reads
    a run's k-th annotation."""
    from evalsift.io.pairwise import read_judgments

    data = read_judgments(str(annotations_file(tmp_path / "annotations.json", n=20)))
    d = {i: -0.05 * i for i in range(25)}  # more instructions than the data has: fine
    wfile = write_weights(tmp_path / "w.csv", {"M": (-1.0, 0.9, 0.3), "N": (-1.0, 0.4, -0.2)})
    board = winrate_board(data, "base", difficulty=read_alpaca_difficulty(write_difficulty(tmp_path / "d.csv", d)),
                          weights=wfile, quiet=True)
    assert "joined by position" in board.difficulty["how"]
    m = {e["model"]: e for e in board.boards[0]["models"]}
    assert m["N"]["length_controlled_winrate"] == pytest.approx(expected_lc(-0.2, 0.4, [d[i] for i in range(20)]))


def test_the_row_position_caveat_names_runs_with_missing_instructions(tmp_path):
    data = three_models(n=12, seed=4)
    kept = [j for j in data.judgments if not (j.b == "N" and j.item_id == "3")]  # N's run lacks instruction 3
    data = data_of(kept, outputs=data.pool.outputs)
    d = {i: 0.2 * i for i in range(12)}
    wfile = write_weights(tmp_path / "w.csv", {m: (-1.0, 0.5, 0.0) for m in ("M", "N", "K")})
    board = winrate_board(data, "base", difficulty=read_alpaca_difficulty(write_difficulty(tmp_path / "d.csv", d)),
                          weights=wfile, quiet=True)
    caveat = [n for n in board.notes if "row number (reset_index)" in n]
    assert len(caveat) == 1 and "N (11 instructions)" in caveat[0] and "M (" not in caveat[0]
    n = next(e for e in board.boards[0]["models"] if e["model"] == "N")
    assert n["length_controlled_winrate"] == pytest.approx(expected_lc(0.0, 0.5, [d[i] for i in range(12) if i != 3]))


# ---------------------------------------------------------------------------------------- errors
def test_instructions_without_a_difficulty_are_an_error_naming_the_first_and_the_count(tmp_path):
    data = three_models(n=10, seed=5)
    diff = read_alpaca_difficulty(write_difficulty(tmp_path / "d.csv", {i: 0.0 for i in range(8)}))
    with pytest.raises(DataError, match=r"2 of the data's 10 instructions have no difficulty .* the first: item "
                                        r"'(8|9)' \(index (8|9)\)"):
        winrate_board(data, "base", length_controlled=True, difficulty=diff, quiet=True)
    text = read_alpaca_difficulty(write_difficulty(tmp_path / "t.csv", {"a": 1.0}, key="instruction"))
    with pytest.raises(DataError, match="no instruction texts to join them on"):
        winrate_board(data, "base", length_controlled=True, difficulty=text, quiet=True)


@pytest.mark.parametrize("content, message", [
    ("index,instruction_difficulty\n0,0.1\n1,abc\n", r"line 3: instruction_difficulty is 'abc', not a number"),
    ("index,instruction_difficulty\n0,0.1\n0,0.2\n", r"line 3 gives index '0' again \(first on line 2\)"),
    ("index,instruction_difficulty\n0,0.1\nx,0.2\n", r"line 3: index 'x' is not a whole number"),
    ("index,a,b\n0,1,2\n", r"no difficulty column"),
    ("index,instruction_difficulty\n0,0.1,7\n", r"line 2 has 3 fields, the header 2"),
    ("index,instruction_difficulty\n", r"a header line and no instruction"),
    ("", r"instruction difficulties"),
], ids=["value", "duplicate", "index", "columns", "ragged", "no-rows", "empty"])
def test_a_bad_difficulty_file_names_the_file_and_line(tmp_path, content, message):
    path = tmp_path / "instruction_difficulty.csv"
    path.write_text(content)
    with pytest.raises(DataError, match=message) as e:
        read_alpaca_difficulty(path)
    assert str(path) in str(e.value)


@pytest.mark.parametrize("content, message", [
    (",np.tanh(std_delta_len),instruction_difficulty\nm,1,2\n", r"no column not_gamed_baseline.astype\(float\)"),
    (",np.tanh(std_delta_len),not_gamed_baseline.astype(float),rand\nm,1,2,3\n", r"unknown term column\(s\) \['rand'\]"),
    (",not_gamed_baseline.astype(float)\nm,1\nm,2\n", r"line 3 gives the weights of 'm' again"),
    (",not_gamed_baseline.astype(float)\nm,nan\n", r"line 2: not_gamed_baseline.astype\(float\) is 'nan'"),
    (",not_gamed_baseline.astype(float)\n,1\n", r"line 2 names no model"),
], ids=["no-intercept", "unknown-term", "duplicate", "nan", "no-model"])
def test_a_bad_weights_file_names_the_file_and_line(tmp_path, content, message):
    path = tmp_path / "w.csv"
    path.write_text(content)
    with pytest.raises(DataError, match=message):
        read_alpaca_weights(path)


def test_minimal_weights_without_a_difficulty_term_and_a_wrong_baseline(tmp_path):
    path = tmp_path / "baseline_gpt4.csv"
    path.write_text(",np.tanh(std_delta_len),not_gamed_baseline.astype(float)\nM,-1.0,0.25\n")  # length_controlled_minimal
    w = read_alpaca_weights(path)
    assert w.rows["M"] == {"length": -1.0, "difficulty": 0.0, "intercept": 0.25} and w.baseline == "gpt4"
    with pytest.raises(ParameterError, match=r"against gpt4 .* not against the baseline base"):
        winrate_board(three_models(n=10), "base", weights=w, quiet=True)


def test_the_cli_reports_a_bad_file_as_one_error_line(tmp_path, capsys):
    src = annotations_file(tmp_path / "annotations.json", n=10)
    bad = tmp_path / "instruction_difficulty.csv"
    bad.write_text("index,instruction_difficulty\n0,zero\n")
    code = main(["winrate", "--data", str(src), "--baseline", "base", "--difficulty", str(bad), "--out",
                 str(tmp_path / "o")])
    err = capsys.readouterr().err
    assert code == 2 and "line 2: instruction_difficulty is 'zero'" in err, err
    assert len([x for x in err.splitlines() if x.startswith("error:")]) == 1


# ---------------------------------------------------------------------------------------- real data
def test_on_alpacaevals_real_preferences_the_lc_column_is_the_formula_on_each_instruction(tmp_path, monkeypatch):
    """AlpacaEval's 58 recorded runs (baseline gpt4_1106_preview): a difficulty per instruction index and weights for
    every model but text_davinci_003, written here in AlpacaEval's layouts (made-up numbers: the mechanism, not the
    published values). Each model's LC is the formula on its own instructions read straight from the preference
    table (phi-2 has 803 of the 805); ``example`` is matched by its results folder, NullModel (model_dir); the one
    model without weights is fitted as length_controlled_win_rate fits it alone."""
    root = need("alpaca-eval/preferences_all_annotators.csv.gz").parents[1]
    monkeypatch.setenv("EVALSIFT_DATA", str(root))
    from evalsift.io.pairwise import read_judgments

    rows: dict[str, list[tuple[int, str]]] = {}
    with gzip.open(root / "alpaca-eval" / "preferences_all_annotators.csv.gz", "rt", newline="") as f:
        for r in csv.DictReader(f):
            if (r["annotator_config"] == "weighted_alpaca_eval_gpt4_turbo" and r["generator_1"] == "gpt4_1106_preview"
                    and r["generator_2"] != "gpt4_1106_preview"):
                rows.setdefault(r["generator_2"], []).append((int(r["instruction_idx"]), r["model_dir"]))
    assert len(rows) == 57 and len(rows["phi-2"]) == 803
    d = {i: round(math.cos(0.37 * i) - 0.2, 6) for i in range(805)}
    weights = {}
    for k, model in enumerate(sorted(rows)):
        if model != "text_davinci_003":
            weights[rows[model][0][1]] = (-1.5, 0.3 + 0.01 * k, -4.0 + 0.1 * k)  # keyed by model_dir, as published
    weights["example"] = (0.0, 0.0, 9.0)  # a row of the model's generator name: its model_dir's row wins
    wfile = write_weights(tmp_path / "baseline_gpt4_1106_preview.csv", weights)
    dfile = write_difficulty(tmp_path / "instruction_difficulty.csv", d)
    data = read_judgments("alpaca-eval/preferences")
    board = winrate_board(data, "gpt4_1106_preview", difficulty=read_alpaca_difficulty(dfile), weights=wfile,
                          quiet=True)
    ours = {m["model"]: m for m in board.boards[0]["models"]}
    assert board.published["fitted"] == ["text_davinci_003"] and board.published["models"]["example"] == "NullModel"
    for model, got in rows.items():
        if model == "text_davinci_003":
            continue
        _, b, a = weights[got[0][1]]
        want = expected_lc(a, b, [d[i] for i, _ in got])
        assert ours[model]["length_controlled_winrate"] == pytest.approx(want, abs=1e-9), model
    assert any("row number (reset_index)" in n and "phi-2 (803 instructions)" in n for n in board.notes)
    mc = board.comparisons.models["text_davinci_003"]
    alone = length_controlled_win_rate(mc.preference, mc.delta_len, [d[int(i)] for i in mc.item_ids])
    assert ours["text_davinci_003"]["length_controlled_winrate"] == alone["length_controlled_winrate"]
