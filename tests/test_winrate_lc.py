"""Length-controlled win rates (issue 42): the direct liblinear call equals sklearn's estimator bit for bit,
the threaded cross-validation equals the serial one, the LC standard error reflects the data (the delta
method on the fit: the raw win rate's error when there is no length or difficulty term, a bootstrap's spread
when there is; not 0 on one model's annotations), and the fits show progress unless quiet."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
import scipy.sparse as sp

from evalsift import winrate as W
from evalsift.cli import main

from test_winrate import annotations_file, data_of, judgment, sigmoid


def _problem(rng, n, sparse=False):
    X = np.column_stack([np.tanh(rng.normal(0, 1, n)), rng.normal(0, 1, n), np.ones(n)])
    p = np.clip(sigmoid(X @ np.array([-1.2, 0.7, -0.3])) + rng.normal(0, 0.05, n), 0, 1)
    return (sp.csr_matrix(X) if sparse else X), p


@pytest.mark.parametrize("sparse", [False, True], ids=["dense", "sparse"])
def test_the_direct_liblinear_call_is_sklearns_fit_bit_for_bit(sparse):
    from sklearn.linear_model import LogisticRegression

    X, p = _problem(np.random.default_rng(4), 300, sparse)
    problem = W._soft_problem(X, p, None)
    for C in (W.CS[1], W.CS[4], W.CS[7], W.CS[9]):
        ours = W._solve_l1(problem, C, W.SEED)
        est = LogisticRegression(solver="liblinear", C=C, fit_intercept=False, random_state=W.SEED, **W._l1_kwargs())
        est.fit(problem[0], problem[1], sample_weight=problem[2])
        assert np.array_equal(ours, est.coef_[0]), C  # the same arguments: the same coefficients, every bit


@pytest.mark.slow  # starts two worker processes (seconds)
def test_cross_validation_on_worker_processes_gives_the_serial_result(monkeypatch):
    X, p = _problem(np.random.default_rng(5), 400)
    steps = []
    serial = W._cv_fit(X, p, advance=steps.append)
    assert sum(steps) == W.cv_fits(400) == 5 * 10 + 1  # 5 folds x 10 strengths, and the refit
    monkeypatch.setattr(W.l1, "_PARALLEL_ROWS", 0)  # this small problem on workers too (_cv_fit reads it there)
    steps.clear()
    parallel = W._cv_fit(X, p, jobs=2, advance=steps.append)
    assert parallel[1] == serial[1] and np.array_equal(parallel[0], serial[0]) and sum(steps) == 51


def test_lc_standard_error_without_length_or_difficulty_is_the_raw_one():
    # Only the model's intercept is left (every length difference 0, no difficulty), nearly unpenalised (C = 1e4):
    # the fit's q is the mean preference, each instruction's influence is (p_i - mean) / n, and
    # sqrt(sum (p_i - mean)^2 / n^2 * n / (n - 1)) = sd(p, ddof=1) / sqrt(n): the raw win rate's standard error.
    p = np.array([1.0, 0.0, 0.5, 1.0, 0.8, 0.3, 0.9, 0.6])
    res = W.length_controlled_win_rate(p, np.zeros(8), Cs=(1e4,))
    raw = 100 * p.std(ddof=1) / math.sqrt(8)  # 100 * 0.3543 / 2.828 = 12.53
    assert res["length_controlled_winrate"] == pytest.approx(100 * p.mean(), abs=0.01)  # 63.75 (1/C = 1e-4 shrinks)
    assert res["lc_standard_error"] == pytest.approx(raw, rel=1e-3)
    assert res["lc_prediction_sem"] == pytest.approx(0.0, abs=1e-9)  # AlpacaEval's: the predictions do not vary


def test_lc_standard_error_is_a_bootstraps_spread():
    """A model 0.6 of whose log length ratio the judge rewards: the delta-method error of its LC win rate
    against the spread of 300 refits on instructions drawn with replacement (the strength C kept)."""
    rng = np.random.default_rng(8)
    n = 300
    base = rng.lognormal(np.log(1500), 0.4, n)
    model = base * np.exp(rng.normal(0.6, 0.4, n))
    d = base - model
    p = np.clip(sigmoid(-0.8 - 1.5 * np.tanh(d / d.std(ddof=1))) + rng.normal(0, 0.1, n), 0, 1)
    res = W.length_controlled_win_rate(p, d)
    C = res["glm"].C
    lcs = []
    for _ in range(300):
        idx = rng.integers(0, n, n)
        X, pp, w, _ = W._length_design(p[idx], d[idx], None, (), W.REGULARIZE_TO_BASELINE)
        coef = W._fit_l1(X, pp, C, w, W.SEED)
        lcs.append(100 * sigmoid(coef[2]))  # difficulty 0: the controlled prediction is the intercept's
    boot = float(np.std(lcs, ddof=1))
    assert res["lc_standard_error"] == pytest.approx(boot, rel=0.2)
    raw = W.win_rate(p)["standard_error"]
    assert res["lc_standard_error"] > raw  # taking the length effect out costs precision
    assert res["lc_prediction_sem"] == pytest.approx(0.0, abs=1e-9)


def test_a_repeated_instruction_is_one_cluster_of_the_lc_error():
    rng = np.random.default_rng(9)
    d = rng.normal(0, 400, 120)
    p = np.clip(sigmoid(-0.5 - np.tanh(d / d.std(ddof=1))) + rng.normal(0, 0.1, 120), 0, 1)
    ids = [str(i) for i in range(120)]
    twice = W.length_controlled_win_rate(np.r_[p, p], np.r_[d, d], item_ids=ids + ids)
    apart = W.length_controlled_win_rate(np.r_[p, p], np.r_[d, d], item_ids=ids + [i + "'" for i in ids])
    # the same 120 comparisons twice: as 120 clusters of two the error is that of 120 instructions, sqrt(2)
    # times the error of 240 independent ones
    assert twice["lc_standard_error"] / apart["lc_standard_error"] == pytest.approx(math.sqrt(2), rel=0.02)


def test_without_varying_predictions_the_lc_error_is_still_the_fits():
    """AlpacaEval's lc_standard_error is the spread of the predictions: with no difficulty term every instruction
    gets the same prediction, so it is 0 whatever the data; ours is the fit's."""
    data = data_of([judgment(i, "base", "M", 1 + p) for i, p in enumerate([0.9, 0.2, 0.6, 0.1, 0.8, 0.7, 0.3, 0.95,
                                                                            0.4, 0.05, 0.5, 0.85])],
                   outputs={"base": ["b" * (300 + 50 * i) for i in range(12)], "M": ["m" * 600] * 12})
    m = W.winrate_board(data, "base", length_controlled=True, difficulty="zero", quiet=True).boards[0]["models"][0]
    assert m["lc_prediction_sem"] == pytest.approx(0.0, abs=1e-9)
    assert m["lc_standard_error"] > 0.5 * m["standard_error"] > 0


@pytest.mark.slow  # the recorded preferences: a few seconds
def test_one_real_models_lc_error_is_not_zero(monkeypatch, capsys, tmp_path):
    """The issue: `winrate --length-controlled` on one model's comparisons printed 'LC SE 0.00' -- one model's
    instruction difficulties all shrink to 0, so the predictions AlpacaEval's error is the spread of do not vary."""
    from dataclasses import replace

    from _data import need

    root = need("alpaca-eval/preferences_all_annotators.csv.gz").parents[1]
    monkeypatch.setenv("EVALSIFT_DATA", str(root))
    from evalsift.io.pairwise import read_judgments

    data = read_judgments("alpaca-eval/preferences")
    one = replace(data, judgments=tuple(j for j in data.judgments if "alpaca-7b" in (j.a, j.b)))
    m = W.winrate_board(one, "gpt4_1106_preview", length_controlled=True, quiet=True).boards[0]["models"][0]
    assert m["lc_prediction_sem"] == pytest.approx(0.0, abs=1e-9)  # what AlpacaEval's definition gives here
    assert m["lc_standard_error"] > 2 * m["standard_error"] > 0  # measured: 4.00 (raw SE 0.49; LC 19.58)


def test_the_cli_prints_and_writes_the_lc_error(tmp_path, capsys):
    src = annotations_file(tmp_path / "annotations.json", n=80)
    assert main(["winrate", "--data", str(src), "--baseline", "base", "--length-controlled", "--out",
                 str(tmp_path / "o"), "--json", "--quiet"]) == 0
    m = json.loads(capsys.readouterr().out)["boards"][0]["models"][0]
    assert m["lc_standard_error"] > 0.5 * m["standard_error"] > 0
    assert main(["winrate", "--data", str(src), "--baseline", "base", "--length-controlled", "--out",
                 str(tmp_path / "o2"), "--quiet"]) == 0
    row = next(line for line in capsys.readouterr().out.splitlines() if line.strip().startswith(f"1  {m['model']}"))
    assert float(row.split()[5]) == pytest.approx(m["lc_standard_error"], abs=0.006)  # the LC SE column, not 0.00
    with open(tmp_path / "o" / "leaderboard.csv") as f:
        head = f.readline()
    assert "lc_standard_error" in head and "lc_prediction_sem" in head


def test_the_fits_show_progress_unless_quiet(tmp_path, capsys, monkeypatch):
    src = annotations_file(tmp_path / "annotations.json", n=40)
    monkeypatch.delenv("EVALSIFT_QUIET", raising=False)
    monkeypatch.setenv("EVALSIFT_PROGRESS_EVERY", "0.001")  # stderr is not a terminal here: plain lines
    assert main(["winrate", "--data", str(src), "--baseline", "base", "--length-controlled", "--out",
                 str(tmp_path / "o")]) == 0
    err = capsys.readouterr().err
    assert "instruction difficulty (joint GLM, 2 models): 51/51" in err  # 5 folds x 10 strengths + the refit
    assert "length-controlled GLMs (per model): 2/2" in err
    assert main(["winrate", "--data", str(src), "--baseline", "base", "--length-controlled", "--out",
                 str(tmp_path / "q"), "--quiet"]) == 0
    assert "GLM" not in capsys.readouterr().err


def test_per_group_lc_errors_use_the_groups_instructions():
    js = []
    rng = np.random.default_rng(3)
    outputs = {"base": [], "A": []}
    for i in range(80):
        lb, la = int(rng.integers(400, 1600)), int(rng.integers(400, 1600))
        outputs["base"].append("b" * lb)
        outputs["A"].append("a" * la)
        p = float(np.clip(sigmoid(0.3 + 0.002 * (la - lb)) + rng.normal(0, 0.1), 0, 1))
        js.append(judgment(i, "base", "A", 1 + p, dataset="even" if i % 2 == 0 else "odd"))
    board = W.winrate_board(data_of(js, outputs=outputs), "base", length_controlled=True, difficulty="zero",
                            by="dataset", quiet=True)
    se = {b["group"]: b["models"][0]["lc_standard_error"] for b in board.boards}
    # half the instructions: about sqrt(2) times the error of all of them
    assert se["even"] / se["all"] == pytest.approx(math.sqrt(2), rel=0.35)
    assert se["odd"] / se["all"] == pytest.approx(math.sqrt(2), rel=0.35)
