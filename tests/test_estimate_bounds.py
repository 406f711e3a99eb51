"""Issue 42 for ``estimate``: intervals kept inside the score's stated range (and only a stated one),
the design-based interval rule (t / betting / bootstrap-t), and intervals that are not there
(``none``) kept out of ``bench estimate``'s coverage."""

from __future__ import annotations

import gzip
import json

import numpy as np
import pytest

from evalsift.bench.estimate import run_estimate_bench, table_text
from evalsift.cli import main
from evalsift.errors import DataError
from evalsift.estimate import KnownSystems, ResponseMatrix, estimate_score, response_matrix, select_anchors
from evalsift.estimate.estimators import bootstrap_t_interval, cochran_ok, design_mean, skewness

from _data import need


def weak_panel(S=12, M=300, seed=0):
    """S systems x M items in [0, 1], most items lost outright (AlpacaEval-like): system s wins an
    item with probability 0.02 .. 0.5, by a uniform margin; row 0 is the weakest."""
    rng = np.random.default_rng(seed)
    p = np.linspace(0.02, 0.5, S)
    return (rng.random((S, M)) < p[:, None]) * rng.random((S, M))


def alpaca_table(path, prefs: dict[str, list[float]]):
    """A tiny AlpacaEval ``preferences_all_annotators.csv.gz`` (config ``cfg``) of ``{model: [preference
    per instruction]}``, preferences in [1, 2]."""
    rows = ["model_dir,annotator_config,instruction_idx,generator_1,generator_2,annotator,preference"]
    for m, ps in prefs.items():
        rows += [f"{m},cfg,{i},base,{m},cfg,{p:.4f}" for i, p in enumerate(ps)]
    with gzip.open(path, "wt") as fh:
        fh.write("\n".join(rows) + "\n")
    return path


# ------------------------------------------------------------------------- where the range comes from
def test_the_range_is_the_formats_not_the_scores_span(tmp_path):
    f = alpaca_table(tmp_path / "preferences_all_annotators.csv.gz",
                     {"m1": [1.2, 1.4, 1.0, 1.1], "m2": [1.3, 1.3, 1.6, 1.7]})
    R = response_matrix(str(f), metric="cfg")
    assert R.bounds == (0.0, 1.0)  # preferences in [1, 2]; the scores span only [0, 0.7]
    assert R.without("m1")[0].bounds == (0.0, 1.0) and R.rows(["m2"]).bounds == (0.0, 1.0)
    table = tmp_path / "t.csv"
    table.write_text("item_id,system,output,score\n" + "".join(f"q{i},s{k},o,{(i + k) % 3 / 2}\n"
                                                              for i in range(6) for k in range(3)))
    T = response_matrix(str(table))
    assert T.bounds is None  # scores in [0, 1], but a long table states no range
    assert any("states no range for score" in n for n in T.notes)


def test_real_data_ranges():
    need("opencompass-irt/data/combine.csv", "wmt23/mt-metrics-eval-v2/wmt23/human-scores/en-de.mqm.seg.score")
    assert response_matrix("opencompass-irt").bounds == (0.0, 1.0)
    assert response_matrix("wmt23/en-de", metric="mqm").bounds == (None, 0.0)
    assert response_matrix("wmt23/en-de", metric="da-sqm").bounds == (0.0, 100.0)
    chrf = response_matrix("wmt23/en-de", metric="chrF-refA")
    assert chrf.bounds is None and any("states no range" in n for n in chrf.notes)


def test_a_stated_range_the_scores_break_is_dropped_with_a_note():
    Y = np.array([[0.2, 1.4], [0.1, 0.3]])
    R = ResponseMatrix(("a", "b"), ("i", "j"), Y, "s", "toy", bounds=(0.0, 1.0))
    from evalsift.estimate.responses import _complete

    C = _complete(R, set())
    assert C.bounds is None and any("outside the metric's range [0, 1]" in n for n in C.notes)
    with pytest.raises(DataError, match="outside the stated range"):
        KnownSystems(Y, bounds=(0.0, 1.0))


# ------------------------------------------------------------------------------ clipping keeps coverage
def test_clipping_to_the_range_keeps_every_covering_interval_and_only_narrows():
    """The weakest system (true win rate about 1 %) on 25 stratified items: without a range its
    intervals often reach below 0; with [0, 1] they are cut at 0. Cutting never drops the truth (it
    lies in [0, 1]), so each draw covers with the range exactly when it covers without."""
    Y = weak_panel()
    truth = Y[0].mean()
    free, bounded = KnownSystems(Y[1:]), KnownSystems(Y[1:], bounds=(0.0, 1.0))
    below = 0
    for seed in range(30):
        a = select_anchors(free.Yk, 25, "stratified", seed=seed)
        for m in ("mean", "aipw", "regression", "pirt-1d"):
            e0 = estimate_score(free, Y[0, a.items], a, m)
            e1 = estimate_score(bounded, Y[0, a.items], a, m)
            if e0.low is None:
                assert e1.low is None
                continue
            below += e0.low < 0
            assert e1.low == max(e0.low, 0.0) and e1.high == min(e0.high, 1.0)
            assert e1.details.get("clipped", False) == (e0.low < 0 or e0.high > 1 or not 0 <= e0.value <= 1)
            assert (e0.low <= truth <= e0.high) == (e1.low <= truth <= e1.high)
            assert 0.0 <= e1.low <= e1.value <= e1.high <= 1.0
    assert below >= 10  # the case of the issue (win-rate intervals below 0) happens, and is cut


def test_an_open_end_is_not_clipped():
    """MQM-like scores: at most 0, no lower end. The interval is cut at 0 above, never below."""
    Y = -weak_panel(seed=3) * 10
    known = KnownSystems(Y[1:], bounds=(None, 0.0))
    lows = []
    for seed in range(20):
        a = select_anchors(known.Yk, 25, "stratified", seed=seed)
        e = estimate_score(known, Y[0, a.items], a, "regression")
        assert e.high <= 0.0
        lows.append(e.low)
    assert min(lows) < -0.5  # far below the known systems' scale: nothing bounds that side


# ---------------------------------------------------------------------------------- no interval: none
def test_regression_with_four_known_systems_has_no_interval():
    """Jackknife conformal at 90 %: the ceil(0.9 (K + 1))-th smallest of K residuals. K = 4: the 5th of
    4 -- there is none, the interval is the whole line; K = 9: ceil(9.0) = 9 <= 9, an interval."""
    Y = weak_panel(S=10, M=120)
    a = select_anchors(Y[1:5], 30, "random", seed=0)
    e = estimate_score(Y[1:5], Y[0, a.items], a, "regression")
    assert e.low is None and e.high is None and e.to_dict()["interval"] is None
    assert e.details["no_interval"] == "a 90% conformal interval needs at least 9 known systems; there are 4"
    a9 = select_anchors(Y[1:], 30, "random", seed=0)
    e9 = estimate_score(Y[1:], Y[0, a9.items], a9, "regression")
    assert e9.low is not None and np.isfinite([e9.low, e9.high]).all() and "no_interval" not in e9.details


def test_bench_counts_a_missing_interval_as_none_not_as_covering():
    """5 systems: each held-out one has 4 known, so every regression estimate has no interval. Before
    issue 42 an infinite interval was counted as covering (coverage 1.0)."""
    Y = weak_panel(S=5, M=80, seed=2)
    R = ResponseMatrix(tuple(f"s{k}" for k in range(5)), tuple(map(str, range(80))), Y, "score", "toy",
                       bounds=(0.0, 1.0))
    res = run_estimate_bench(R, budgets=(20,), methods=("mean", "regression"), seeds=2, splits=("all",), quiet=True)
    rows = {r["method"]: r for r in res["table"]}
    reg, mean = rows["regression@random"], rows["mean@random"]
    assert reg["estimates"] == 10 and reg["none"] == 10  # 5 held-out systems x 2 seeds
    assert reg["coverage"] is None and reg["width"] is None
    assert mean["none"] == 0 and mean["coverage"] is not None
    assert all(r.get("interval") == "none" and "covered" not in r for r in res["records"]
               if r["method"] == "regression@random")
    text = table_text(res)
    assert "none" in text.splitlines()[1] and "left out of the coverage" in text
    reg_line = next(ln for ln in text.splitlines() if ln.strip().startswith("regression@random"))
    assert reg_line.split()[-4:] == ["-", "-", "10", "(peer)"]  # coverage and width "-", none 10


# ------------------------------------------------------------------------------- the interval rule
def test_the_stricter_cochran_rule_takes_the_known_systems_skewness():
    y = np.linspace(0, 1, 100)  # symmetric: g1 = 0, so Cochran's n > 25 g1^2 holds
    assert skewness(y) == pytest.approx(0.0, abs=1e-12) and cochran_ok(y, 100)
    assert not cochran_ok(y, 100, skew=3.0)  # 25 * 3^2 = 225 > 100
    assert cochran_ok(y, 100, skew=1.9)  # 25 * 1.9^2 = 90.25 < 100
    x = np.r_[np.ones(2), np.zeros(18)]  # mean 0.1, m2 = (2 * 0.81 + 18 * 0.01) / 20 = 0.09
    assert skewness(x) == pytest.approx(8 / 3, rel=1e-9)  # m3 = (2 * 0.729 - 18 * 0.001) / 20 = 0.072; / 0.09^1.5
    assert not cochran_ok(x, 20)  # 25 * (8/3)^2 = 178 > 20


def test_design_interval_rules_betting_bootstrap_t_and_none():
    Y = weak_panel(S=12, M=300, seed=5)
    y_new = Y[0]
    bounded, free = KnownSystems(Y[1:], bounds=(0.0, 1.0)), KnownSystems(Y[1:])
    r = select_anchors(bounded.Yk, 40, "random", seed=1)
    st = select_anchors(bounded.Yk, 40, "stratified", seed=1)
    skewed = np.r_[np.full(4, 0.9), np.zeros(36)]  # a weak model's sample: fails Cochran (g1 ~ 2.7)
    e = estimate_score(bounded, skewed, r, "mean")
    assert e.details["interval_rule"] == "betting" and 0 <= e.low <= e.value <= e.high <= 1
    e = estimate_score(free, skewed, r, "mean")
    assert e.details["interval_rule"] == "bootstrap-t"  # no stated range: no betting
    assert e.high - e.value > e.value - e.low  # longer on the side of the sample's tail
    e = estimate_score(bounded, y_new[st.items], st, "mean")
    assert e.details["interval_rule"] in ("bootstrap-t", "t")
    even = np.linspace(0.2, 0.8, 40)  # g1 = 0: Cochran's rule holds on the sample itself ...
    assert bounded.skewness > 1.27  # ... but not on the known systems' skewness: 25 * 1.27^2 = 40.3 > 40
    assert estimate_score(bounded, even, r, "mean").details["interval_rule"] == "bootstrap-t"
    easy = KnownSystems(np.random.default_rng(1).random((8, 300)), bounds=(0.0, 1.0))  # uniform rows: g1 ~ 0
    assert estimate_score(easy, even, r, "mean").details["interval_rule"] == "t"
    const = np.zeros(40)
    e = estimate_score(bounded, const, r, "mean")
    assert e.details["interval_rule"] == "betting" and e.low == 0.0 < e.high  # unjudged items may be won
    e = estimate_score(free, const, r, "mean")
    assert e.low is None and "states no range" in e.details["no_interval"]
    e = estimate_score(bounded, const, st, "aipw")
    assert e.low is None and "stratified draw has no betting interval" in e.details["no_interval"]


def test_bootstrap_t_is_deterministic_and_near_t_on_a_symmetric_sample():
    Y = np.random.default_rng(9).normal(size=(6, 2000))
    a = select_anchors(Y, 400, "random", seed=3)
    y = np.random.default_rng(4).normal(size=400)
    v, se, df = design_mean(y, a)
    lo, hi = bootstrap_t_interval(y, a, v, se, 0.1)
    assert (lo, hi) == bootstrap_t_interval(y, a, v, se, 0.1)  # seeded by the anchors
    # 400 normal values: the pivot is nearly normal, so each arm is about 1.645 se (within 10 %)
    assert (v - lo) / se == pytest.approx(1.645, rel=0.1) and (hi - v) / se == pytest.approx(1.645, rel=0.1)


# ------------------------------------------------------------------------------------------------ CLI
def test_estimate_prints_a_weak_models_interval_inside_0_100(tmp_path, capsys):
    """The issue's case: a model that loses nearly every instruction. Its intervals start at 0.00
    (cut there, with the note), never below."""
    Y = weak_panel(S=12, M=200, seed=7)
    prefs = {f"m{k}": list(1.0 + Y[k]) for k in range(12)}
    f = alpaca_table(tmp_path / "preferences_all_annotators.csv.gz", prefs)
    anchors = tmp_path / "a.jsonl"
    assert main(["--quiet", "select", "anchors", "--data", str(f), "--metric", "cfg", "--exclude", "m0", "--budget",
                 "20", "--method", "stratified", "--out", str(anchors)]) == 0
    capsys.readouterr()
    assert main(["estimate", "--data", str(f), "--metric", "cfg", "--system", "m0", "--items", str(anchors),
                 "--method", "mean,aipw,regression,pirt-1d", "--out", str(tmp_path / "e")]) == 0
    out = capsys.readouterr().out
    res = json.loads((tmp_path / "e" / "estimate.json").read_text())
    lows = [e["interval"][0] for e in res["estimates"] if e["interval"]]
    assert lows and min(lows) >= 0.0 and "[-" not in out
    assert "kept inside the score's range [0.00, 100.00]" in out
    assert any(e.get("clipped") for e in res["estimates"])


def test_estimate_on_a_table_without_a_range_says_so_and_flags_the_approximation(tmp_path, capsys):
    Y = weak_panel(S=10, M=120, seed=8)
    table = tmp_path / "t.csv"
    table.write_text("item_id,system,output,score\n" + "".join(
        f"q{i},s{k},o,{Y[k, i]:.6f}\n" for k in range(10) for i in range(120)))
    anchors = tmp_path / "a.jsonl"
    assert main(["--quiet", "select", "anchors", "--data", str(table), "--exclude", "s0", "--budget", "30",
                 "--method", "stratified", "--out", str(anchors)]) == 0
    capsys.readouterr()
    assert main(["estimate", "--data", str(table), "--system", "s0", "--items", str(anchors), "--method", "mean",
                 "--out", str(tmp_path / "e")]) == 0
    out, err = capsys.readouterr()
    assert "note: the data states no range for score" in err
    assert "bootstrap-t interval; approximate for a score without a stated range at both ends" in out
    assert "kept inside" not in out  # nothing to keep it inside
