"""``evalsift winrate`` (issue 32, part 2): win rates against a baseline, AlpacaEval's way, and AlpacaEval 2.0's
length-controlled win rate (Dubois et al. 2024). Small synthetic judgments for the definitions, the
orientation, the groups and the errors; AlpacaEval's recorded preferences and published leaderboard last."""

import csv
import gzip
import json
import math
from pathlib import Path

import numpy as np
import pytest

from evalsift.cli import main
from evalsift.errors import DataError, ParameterError
from evalsift.io.pairwise import read_alpaca_preferences
from evalsift.io.pairwise_data import PairwiseData
from evalsift.oracle import Judgment
from evalsift.pool import Pool
from evalsift.winrate import (baseline_comparisons, estimate_difficulty, fit_length_glm, length_controlled_win_rate,
                              win_rate, winrate_board, write_board)

from _data import need

JUDGE = "weighted_alpaca_eval_gpt4_turbo"


def judgment(item, a, b, pref=None, verdict=None, annotator=JUDGE, kind="llm", **detail):
    if verdict is None:
        verdict = "tie" if pref in (0, 1.5) else ("a" if pref < 1.5 else "b")
    return Judgment(item_id=str(item), a=a, b=b, verdict=verdict, annotator=annotator, kind=kind,
                    detail={"preference": pref, **detail} if pref is not None else dict(detail))


def data_of(judgments, metadata=None, outputs=None):
    items = list(dict.fromkeys(j.item_id for j in judgments))
    systems = list(dict.fromkeys(s for j in judgments for s in (j.a, j.b)))
    pool = Pool(item_ids=items, systems=systems, metadata=metadata, outputs=outputs)
    return PairwiseData(pool=pool, judgments=tuple(judgments), source="inline")


def sigmoid(x):
    return 1 / (1 + np.exp(-x))


# ---------------------------------------------------------------------------------------- definitions
def test_win_rate_is_alpacaevals_mean_and_standard_error():
    p = [1.0, 0.0, 0.5, 0.25, 0.9]
    r = win_rate(p)
    assert r["win_rate"] == pytest.approx(100 * np.mean(p))
    assert r["standard_error"] == pytest.approx(100 * np.std(p, ddof=1) / math.sqrt(5))  # pandas' sem: ddof=1
    assert (r["n"], r["n_wins"], r["n_wins_base"], r["n_draws"]) == (5, 2, 2, 1)
    assert win_rate([0.7])["standard_error"] is None


def test_baseline_on_either_side_is_oriented_to_the_model():
    # AlpacaEval's scale: 1 = generator_1 (a) wins, 2 = generator_2 (b) wins; 0 and 1.5 are draws
    js = [judgment(1, "base", "M", 1.8), judgment(2, "M", "base", 1.3), judgment(3, "M", "base", 0),
          judgment(4, "base", "M", verdict="a"), judgment(5, "M", "base", verdict="a"),
          judgment(6, "N", "base", verdict="tie"), judgment(6, "base", "N", 1.0)]  # N judged twice on item 6
    comp = baseline_comparisons(data_of(js), "base")
    assert list(comp.models["M"].preference) == pytest.approx([0.8, 0.7, 0.5, 0.0, 1.0])
    # every row counts by default, as FastChat's show_result.py counts them: a tie (0.5) and a loss (0.0)
    assert list(comp.models["N"].preference) == [0.5, 0.0]
    assert any("each counts" in n and "--repeats last" in n for n in comp.notes)
    last = baseline_comparisons(data_of(js), "base", repeats="last")
    assert list(last.models["N"].preference) == [0.0] and any("later one counts" in n for n in last.notes)
    board = winrate_board(data_of(js), "base")
    m = {e["model"]: e for e in board.boards[0]["models"]}
    # M: (0.8 + 0.7 + 0.5 + 0 + 1) / 5 = 0.6; N: (0.5 + 0) / 2 = 0.25, or 0 with the later row only
    assert m["M"]["win_rate"] == pytest.approx(60.0) and m["N"]["win_rate"] == pytest.approx(25.0)
    assert winrate_board(data_of(js), "base", repeats="last").boards[0]["models"][-1]["win_rate"] == 0.0
    with pytest.raises(ParameterError, match="all or last"):
        baseline_comparisons(data_of(js), "base", repeats="first")
    # the same comparisons, the baseline always first, give the same board
    flipped = [judgment(1, "base", "M", 1.8), judgment(2, "base", "M", 1.7), judgment(3, "base", "M", 1.5),
               judgment(4, "base", "M", 1.0), judgment(5, "base", "M", 2.0)]
    assert winrate_board(data_of(flipped), "base").boards[0]["models"][0]["win_rate"] == pytest.approx(60.0)


def synthetic_lengths(seed=0, n=400, models=None):
    """A judge that prefers longer outputs by a known amount: logit P(model wins) = quality + difficulty_i
    - 1.5 tanh((baseline length - model length) / sd). Models: (quality, log length ratio to the baseline)."""
    rng = np.random.default_rng(seed)
    models = models or {"verbose": (-1.0, 0.6), "concise": (-1.0, -0.6), "good": (0.5, 0.0)}
    base_len = rng.lognormal(np.log(1500), 0.4, n)
    difficulty = rng.normal(0, 1.0, n)
    js, truth, outputs = [], {}, {"base": ["x" * int(v) for v in base_len]}
    for m, (q, shift) in models.items():
        lm = base_len * np.exp(rng.normal(shift, 0.4, n))
        d = base_len - lm
        p = sigmoid(q + difficulty - 1.5 * np.tanh(d / d.std(ddof=1)))
        p = np.clip(p + rng.normal(0, 0.02, n), 0, 1)  # a weighted judge's probabilities, a little noisy
        truth[m] = 100 * sigmoid(q + difficulty).mean()  # the win rate were both outputs equally long
        outputs[m] = ["x" * int(v) for v in lm]
        js += [judgment(i, "base", m, 1 + p[i]) for i in range(n)]
    return data_of(js, outputs=outputs), truth, difficulty


def test_length_controlled_recovers_the_quality_a_length_biased_judge_hides():
    data, truth, difficulty = synthetic_lengths()
    board = winrate_board(data, "base", length_controlled=True, difficulty="estimate")
    m = {e["model"]: e for e in board.boards[0]["models"]}
    raw_gap = m["verbose"]["win_rate"] - m["concise"]["win_rate"]
    lc_gap = m["verbose"]["length_controlled_winrate"] - m["concise"]["length_controlled_winrate"]
    assert raw_gap > 25  # equal quality, the longer model wins far more often
    assert abs(lc_gap) < 3
    for name in truth:
        assert m[name]["length_controlled_winrate"] == pytest.approx(truth[name], abs=1.5), name
        assert board.glms[name]["length"] == pytest.approx(-1.5, abs=0.35)  # the judge's length slope
    assert [e["model"] for e in board.boards[0]["models"]][0] == "good"  # ranked by LC
    # the estimated difficulties track the true ones (the first instruction is the reference, 0)
    est = estimate_difficulty(board.comparisons)["difficulty"]
    got = np.array([est[str(i)] for i in range(len(difficulty))])
    assert np.corrcoef(got, difficulty)[0, 1] > 0.9
    # with the true difficulties the GLM is the true model
    lc = length_controlled_win_rate(board.comparisons.models["concise"].preference,
                                    board.comparisons.models["concise"].delta_len, difficulty)
    assert lc["length_controlled_winrate"] == pytest.approx(truth["concise"], abs=1.5)
    # AlpacaEval's lc_standard_error: the sem of the predictions alone; ours adds the fit's uncertainty
    assert lc["lc_prediction_sem"] == pytest.approx(100 * lc["controlled"].std(ddof=1) / math.sqrt(400))
    assert lc["lc_standard_error"] > lc["lc_prediction_sem"]


def test_glm_fits_the_slope_and_intercept_and_gives_up_on_one_sided_data():
    rng = np.random.default_rng(1)
    d = rng.normal(0, 500, 600)
    glm = fit_length_glm(sigmoid(0.4 - 1.5 * np.tanh(d / d.std(ddof=1))), d)
    assert (glm.length, glm.intercept, glm.difficulty) == pytest.approx((-1.5, 0.4, 0.0), abs=0.05)
    assert glm.sd == pytest.approx(d.std(ddof=1))
    assert fit_length_glm(np.ones(50), d[:50]) is None
    lc = length_controlled_win_rate(np.ones(50), d[:50])
    assert lc["length_controlled_winrate"] == 100.0 and lc["glm"] is None


def test_gamed_versions_of_the_baseline_regularise_the_fit():
    data, _, _ = synthetic_lengths(seed=2, n=150, models={"M": (0.0, -0.6), "base_verbose": (0.0, 0.6),
                                                          "base_concise": (0.0, -0.7)})
    board = winrate_board(data, "base", length_controlled=True, difficulty="zero")
    assert board.difficulty["regularized_to_baseline"] == ["base_verbose", "base_concise"]
    assert "length_controlled_v1" in board.difficulty["glm_variant"]
    plain = winrate_board(data, "base", length_controlled=True, difficulty="zero", regularize=False)
    assert "noreg" in plain.difficulty["glm_variant"] and plain.difficulty["regularized_to_baseline"] is None
    assert board.glms["M"] != plain.glms["M"]


# ---------------------------------------------------------------------------------------- groups and files
def test_by_boards_per_group_from_judgments_or_item_columns():
    js = [judgment(i, "base", m, 1.0 + (0.9 if (m == "A") == (i % 2 == 0) else 0.1), dataset="even" if i % 2 == 0
                   else "odd") for i in range(6) for m in ("A", "B")]
    board = winrate_board(data_of(js), "base", by="dataset")
    groups = {b["group"]: {e["model"]: e["win_rate"] for e in b["models"]} for b in board.boards}
    assert list(groups) == ["all", "even", "odd"]
    assert groups["even"] == pytest.approx({"A": 90.0, "B": 10.0})
    assert groups["odd"] == pytest.approx({"A": 10.0, "B": 90.0})
    rows = board.csv_rows()
    assert {r["group"] for r in rows} == {"all", "even", "odd"}
    assert all(r["verdicts"] == f"verdicts: judge {JUDGE}" for r in rows)
    # an item column of the Pool (the preference table's ``dataset``) works the same way
    plain = [judgment(i, "base", "A", 1.9 if i < 3 else 1.1) for i in range(6)]
    board = winrate_board(data_of(plain, metadata={"subset": ["x"] * 3 + ["y"] * 3}), "base", by="subset")
    assert [(b["group"], b["models"][0]["win_rate"]) for b in board.boards] == [("all", pytest.approx(50.0)),
                                                                                ("x", pytest.approx(90.0)),
                                                                                ("y", pytest.approx(10.0))]
    with pytest.raises(ParameterError, match=r"--by 'datset': the data has no such column\. Did you mean 'dataset'\?"
                                             r" Columns: dataset, annotator, shown_order"):
        winrate_board(data_of(js), "base", by="datset")


def test_bad_baseline_and_annotator_say_what_there_is():
    js = [judgment(1, "gpt4_1106_preview", "A", 1.7), judgment(1, "gpt4_1106_preview", "B", 1.2),
          judgment(1, "A", "B", verdict="a")]
    with pytest.raises(ParameterError, match=r"Unknown baseline 'gpt4_1106'\. Did you mean 'gpt4_1106_preview'\? "
                                             r"Models: gpt4_1106_preview, A, B"):
        winrate_board(data_of(js), "gpt4_1106")
    two = js + [judgment(1, "gpt4_1106_preview", "A", 1.1, annotator="expert_1", kind="human")]
    with pytest.raises(ParameterError, match=rf"verdicts of 2 annotators; pick one with --annotator NAME\. "
                                             rf"Annotators: {JUDGE}, expert_1"):
        winrate_board(data_of(two), "gpt4_1106_preview")
    with pytest.raises(ParameterError, match=r"Unknown annotator 'expert_2'\. Did you mean 'expert_1'\?"):
        winrate_board(data_of(two), "gpt4_1106_preview", annotator="expert_2")
    with pytest.raises(ParameterError, match=r"--annotator 'e' is ambiguous: it matches"):
        winrate_board(data_of(two), "gpt4_1106_preview", annotator="e")
    human = winrate_board(data_of(two), "gpt4_1106_preview", annotator="expert")
    assert human.verdicts == "verdicts: human expert_1"
    # C compared only with A: left out, with a note
    some = js + [judgment(2, "A", "C", verdict="b")]
    board = winrate_board(data_of(some), "gpt4_1106_preview")
    assert board.comparisons.left_out == ("C",) and any("left out" in n and "C" in n for n in board.to_dict()["notes"])
    with pytest.raises(DataError, match=r"--length-controlled needs the lengths of the outputs"):
        winrate_board(data_of(js), "gpt4_1106_preview", length_controlled=True)


def annotations_file(path: Path, n=60, seed=3) -> Path:
    """An AlpacaEval annotations.json: baseline 'base' against 'M' (longer) and 'N', by the weighted judge."""
    rng = np.random.default_rng(seed)
    rows = []
    base = rng.integers(300, 1500, n)
    for m, extra in (("M", 800), ("N", -200)):
        for i in range(n):
            lb = int(base[i])
            lm = max(20, lb + extra + int(rng.integers(-200, 200)))
            p = float(np.clip(sigmoid(-0.5 + 0.001 * (lm - lb)) + rng.normal(0, 0.05), 0, 1))
            rows.append({"instruction": f"instruction {i}", "dataset": ["koala", "vicuna"][i % 2],
                         "output_1": "b" * lb, "generator_1": "base", "output_2": "m" * lm, "generator_2": m,
                         "annotator": JUDGE, "preference": 1 + p})
    path.write_text(json.dumps(rows), encoding="utf-8")
    return path


def test_cli_end_to_end_writes_three_files_that_say_whose_verdicts(tmp_path, capsys):
    src = annotations_file(tmp_path / "annotations.json")
    out = tmp_path / "out"
    code = main(["winrate", "--data", str(src), "--baseline", "base", "--length-controlled", "--by", "dataset",
                 "--out", str(out)])
    stdout, stderr = capsys.readouterr()
    assert code == 0, stderr
    assert f"verdicts: judge {JUDGE}" in stdout and "[koala]" in stdout and "[vicuna]" in stdout
    assert "difficulties are estimated from 2 model(s) only" in stderr
    res = json.loads((out / "results.json").read_text())
    assert res["verdicts"]["kind"] == "llm" and res["verdicts"]["source"] == "judge"
    assert res["verdicts"]["line"] == f"verdicts: judge {JUDGE}" and res["baseline"] == "base"
    assert [b["group"] for b in res["boards"]] == ["all", "koala", "vicuna"]
    assert all(m["length_controlled_winrate"] is not None for b in res["boards"] for m in b["models"])
    with (out / "leaderboard.csv").open(newline="") as f:
        rows = list(csv.DictReader(f))
    assert {r["group"] for r in rows} == {"all", "koala", "vicuna"} and len(rows) == 6
    assert all(r["verdicts"] == f"verdicts: judge {JUDGE}" for r in rows) and "length_controlled_winrate" in rows[0]
    page = (out / "leaderboard.html").read_text()
    assert f"verdicts: judge {JUDGE}" in page and "dataset = koala" in page and "Dubois et al. 2024" in page


def test_cli_bad_input_is_one_error_line(tmp_path, capsys):
    src = annotations_file(tmp_path / "annotations.json", n=10)
    for extra, expected in ((["--baseline", "bse"],
                             "error: Unknown baseline 'bse'. Did you mean 'base'? Models: base, M, N"),
                            (["--baseline", "base", "--annotator", "gpt-4"],
                             "error: Unknown annotator 'gpt-4'."),
                            (["--baseline", "base", "--by", "subset"],
                             "error: --by 'subset': the data has no such column. Columns: dataset, annotator, "
                             "shown_order")):
        code = main(["winrate", "--data", str(src), *extra, "--out", str(tmp_path / "o")])
        err = capsys.readouterr().err
        assert code == 2 and expected in err, err
        assert len([x for x in err.splitlines() if x.startswith("error:")]) == 1


def test_preference_table_keeps_lengths_and_subsets(tmp_path):
    lines = ["model_dir,annotator_config,instruction_idx,generator_1,generator_2,annotator,preference,len_output_1,"
             "len_output_2", "m1,cfg,0,base,m1,cfg,1.2,100,40", "m1,cfg,1,base,m1,cfg,1.8,90,300",
             "m2,cfg,0,base,m2,cfg,1.6,100,120"]
    (tmp_path / "preferences_all_annotators.csv.gz").write_bytes(gzip.compress(("\n".join(lines) + "\n").encode()))
    (tmp_path / "instructions.jsonl").write_text('{"instruction_idx": 0, "dataset": "koala", "instruction": "a"}\n'
                                                 '{"instruction_idx": 1, "dataset": "oasst", "instruction": "b"}\n')
    data = read_alpaca_preferences(tmp_path, "cfg")
    assert data.judgments[0].detail == {"source": str(tmp_path / "preferences_all_annotators.csv.gz"), "line": 2,
                                        "preference": 1.2, "annotator_config": "cfg", "model_dir": "m1"}
    assert list(data.pool.metadata["dataset"]) == ["koala", "oasst"]
    assert dict(data.pool.metadata["_output_length"][0]) == {"base": 100, "m1": 40, "m2": 120}
    comp = baseline_comparisons(data, "base", by="dataset")
    assert list(comp.models["m1"].delta_len) == [60.0, -210.0] and comp.models["m1"].groups == ("koala", "oasst")


def test_write_board_without_lengths(tmp_path):
    board = winrate_board(data_of([judgment(1, "base", "A", 1.7), judgment(2, "base", "A", 1.4)]), "base")
    paths = write_board(board, tmp_path)
    assert "length_controlled_winrate" not in (tmp_path / "leaderboard.csv").read_text()
    assert json.loads(paths["results"].read_text())["boards"][0]["models"][0]["win_rate"] == pytest.approx(55.0)


# ---------------------------------------------------------------------------------------- real data
def _published() -> dict[str, dict]:
    folder = need("alpaca-eval/leaderboards")
    src = folder / "src__alpaca_eval__leaderboards__data_AlpacaEval_2__weighted_alpaca_eval_gpt4_turbo_leaderboard.csv"
    if src.is_file():
        with src.open(newline="") as f:
            return {r[""]: {"win_rate": float(r["win_rate"]), "se": float(r["standard_error"])}
                    for r in csv.DictReader(f)}
    import re
    with (folder / "docs__data_AlpacaEval_2__weighted_alpaca_eval_gpt4_turbo_leaderboard.csv").open(newline="") as f:
        return {m.group(1): {"win_rate": float(r["win_rate"]), "se": None} for r in csv.DictReader(f)
                for m in [re.search(r"/results/([^/]+)/model_outputs\.json", r["samples"])] if m}


def test_real_win_rates_are_the_mean_preference_and_the_published_ones(monkeypatch):
    root = need("alpaca-eval/preferences_all_annotators.csv.gz", "alpaca-eval/instructions.jsonl").parents[1]
    monkeypatch.setenv("EVALSIFT_DATA", str(root))
    from evalsift.io.pairwise import read_judgments

    data = read_judgments("alpaca-eval/preferences")
    board = winrate_board(data, "gpt4_1106_preview", annotator=JUDGE, by="dataset")
    assert board.verdicts == f"verdicts: judge {JUDGE} (recorded)"
    ours = {m["model"]: m for m in board.boards[0]["models"]}
    assert len(ours) == 57
    raw: dict[str, list[float]] = {}
    with gzip.open(root / "alpaca-eval" / "preferences_all_annotators.csv.gz", "rt", newline="") as f:
        for r in csv.DictReader(f):
            if r["annotator_config"] == JUDGE and r["generator_2"] in ("alpaca-7b", "claude-2", "gpt4_gamed", "phi-2"):
                raw.setdefault(r["generator_2"], []).append(float(r["preference"]))
    published = _published()
    for model, prefs in raw.items():
        assert ours[model]["win_rate"] == pytest.approx(100 * (np.mean(prefs) - 1), abs=1e-9)
        assert ours[model]["n"] == len(prefs)
        assert abs(ours[model]["win_rate"] - published[model]["win_rate"]) <= 0.1
        if published[model]["se"] is not None:
            assert ours[model]["standard_error"] == pytest.approx(published[model]["se"], abs=1e-6)
    groups = {b["group"]: b["items"] for b in board.boards}
    assert groups == {"all": 805, "helpful_base": 129, "koala": 156, "oasst": 188, "selfinstruct": 252, "vicuna": 80}
    alpaca = winrate_board(data, "gpt4_1106_preview", by="dataset").boards  # the only annotator: no --annotator needed
    assert alpaca[0]["models"][0]["win_rate"] == board.boards[0]["models"][0]["win_rate"]
