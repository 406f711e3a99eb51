"""evalsift.transparency.ood / .report and the ``profile`` and ``select --report`` commands."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest
from _data import need

from evalsift.cli import main
from evalsift.transparency import analyse_all, mean_score
from evalsift.transparency.ood import (
    leave_target_out,
    ood_regression,
    pair_similarity,
    predict_unjudged,
    random_pair_folds,
    selection_report,
    split_indices,
    split_similarity,
    two_model_profile,
)


def _setting(seed: int, driven: bool, n_splits: int = 5, n: int = 150, n_models: int = 8):
    """Splits that differ in two dimensions x, z. ``driven``: every model scores 0.3 x per item, so a
    split's score shift is 0.3 x its mean x difference (proportional to SMD on x). Otherwise each
    split gets a random offset that has nothing to do with x or z."""
    rng = np.random.default_rng(seed)
    groups = np.repeat([f"s{k}" for k in range(n_splits)], n)
    x = rng.random(n * n_splits) + np.repeat(rng.uniform(0, 1.5, n_splits), n)
    z = rng.random(n * n_splits) + np.repeat(rng.uniform(0, 1.5, n_splits), n)
    shift = 0.3 * x if driven else np.repeat(rng.normal(0, 0.15, n_splits), n)
    scores = rng.uniform(0.2, 0.8, n_models) + shift[:, None] + rng.normal(0, 0.1, (n * n_splits, n_models))
    return groups, scores, {"x": x, "z": z}


# ------------------------------------------------------------------------------------ the regression
@pytest.mark.parametrize("seed", range(5))
def test_regression_beats_no_change_when_the_shift_follows_the_smd(seed):
    groups, scores, dims = _setting(seed, driven=True)
    r = ood_regression(split_indices(groups), mean_score(scores), dims)
    assert r.mad < 0.3 * r.mad_no_change  # measured: 0.04-0.10 of no-change's MAD over 20 seeds
    assert r.r2 > r.r2_no_change and r.r2_change > 0.8
    assert abs(r.weights["smd:x"]) > 3 * abs(r.weights["smd:z"])  # the planted dimension carries the weight
    # Table 4's form: the SMD weights over the largest in magnitude -> x is +-1, z its ratio to x
    assert abs(r.importance["x"]) == 1.0
    assert r.importance["z"] == pytest.approx(r.weights["smd:z"] / abs(r.weights["smd:x"]))
    assert len(r.predictions) == 5 * 4 * 8  # every ordered pair x every model, once


def test_regression_does_not_beat_no_change_when_the_shift_is_unrelated():
    # Honest null: split offsets unrelated to any dimension. Over 10 seeds the regression's MAD is on
    # average above no-change's (measured mean ratio 1.49 over 20 seeds; single seeds range 0.51-3.15,
    # so one seed can win by chance -- which is why the report shows both).
    ratios = []
    for seed in range(10):
        groups, scores, dims = _setting(seed, driven=False)
        r = ood_regression(split_indices(groups), mean_score(scores), dims)
        ratios.append(r.mad / r.mad_no_change)
    assert np.mean(ratios) > 1.0, ratios
    assert sum(q < 0.7 for q in ratios) <= 2, ratios


@pytest.mark.parametrize("n", [3, 4, 5, 7])
def test_held_out_pairs_are_never_in_training(n):
    folds = leave_target_out(n)
    tested = [p for f in folds for p in f["test"]]
    assert sorted(tested) == sorted((s, t) for s in range(n) for t in range(n) if s != t)  # each pair once
    for f in folds:
        k = f["target"]
        assert not set(f["test"]) & set(f["train"])
        assert all(k not in pair for pair in f["train"])  # the held-out split is neither source nor target
        assert all(t == k for _, t in f["test"])
        assert len(f["train"]) == (n - 1) * (n - 2)


def test_held_out_split_scores_never_reach_its_predictions():
    # Replace every score of split s2 by garbage: the predictions *for* s2 (fold s2) must not move,
    # because fold s2 trains without s2 and predicts from the sources' scores.
    groups, scores, dims = _setting(0, driven=True)
    sp = split_indices(groups)
    r1 = ood_regression(sp, mean_score(scores), dims)
    bad = scores.copy()
    bad[sp["s2"]] = 1e6
    r2 = ood_regression(sp, mean_score(bad), dims)
    p1 = [p["predicted"] for p in r1.predictions if p["target"] == "s2"]
    p2 = [p["predicted"] for p in r2.predictions if p["target"] == "s2"]
    assert np.allclose(p1, p2)
    assert all(("s2" not in pair) for f in r1.folds if f["target"] == "s2" for pair in f["train"])


# ---------------------------------------------------------------- the paper's protocol (Sec. 5)
def test_random_pair_folds_hold_out_disjoint_draws_seeded():
    pairs = [(s, t) for s in range(5) for t in range(5) if s != t]  # 20 ordered pairs
    folds = random_pair_folds(pairs, test_pairs=5, repeats=5, seed=3)
    assert [f["repeat"] for f in folds] == list(range(5))
    for f in folds:
        assert len(f["test"]) == 5 and len(f["train"]) == 15
        assert sorted(f["test"] + f["train"]) == sorted(pairs) and not set(f["test"]) & set(f["train"])
    assert len({tuple(f["test"]) for f in folds}) > 1  # the repeats draw different pairs
    assert random_pair_folds(pairs, test_pairs=5, repeats=5, seed=3) == folds  # seeded
    assert random_pair_folds(pairs, test_pairs=5, repeats=5, seed=4) != folds


def test_paper_protocol_pairs_repeats_and_mean_of_repeats():
    groups, scores, dims = _setting(0, driven=True, n_splits=4)
    r = ood_regression(split_indices(groups), mean_score(scores), dims, protocol="paper", test_pairs=3, repeats=5)
    assert r.protocol == "paper" and r.params["n_pairs"] == 4 + 4 * 3  # full -> each of 4 topics + 12 ordered pairs
    assert len(r.folds) == 5 and all(len(f["test"]) == 3 for f in r.folds)
    assert len(r.predictions) == 5 * 3 * 8  # repeats x held-out pairs x models
    sources = {s for f in r.folds for s, _ in f["train"] + f["test"]}
    assert "(full)" in sources and all(t != "(full)" for f in r.folds for _, t in f["train"] + f["test"])
    # MAD = the mean over repeats of each repeat's MAD, recomputed here from the rows
    per = [np.mean([abs(p["actual"] - p["predicted"]) for p in r.predictions if p["repeat"] == k]) for k in range(5)]
    assert np.isclose(r.mad, np.mean(per)) and np.allclose([x["mad"] for x in r.per_repeat], per)
    # the full data's score is the mean over every item, as the split of all items
    full_rows = [p for p in r.predictions if p["source"] == "(full)"]
    assert full_rows and all(np.isclose(p["no_change"], scores[:, r.models.index(p["model"])].mean())
                             for p in full_rows)
    assert r.mad < 0.3 * r.mad_no_change  # the planted shift follows the SMD
    assert "the paper's" in r.to_dict()["scheme"]
    only_full = ood_regression(split_indices(groups), mean_score(scores), dims, protocol="paper", pairs="full",
                               test_pairs=1)
    assert only_full.params["n_pairs"] == 4 and all(p["source"] == "(full)" for p in only_full.predictions)


def test_paper_protocol_lets_the_held_out_split_into_training_ours_does_not():
    # Why leave_target_out stays the default: under the paper's random pairs, a held-out pair's target
    # split is the source or target of training pairs, so its scores move its own predictions.
    groups, scores, dims = _setting(0, driven=True)
    sp = split_indices(groups)
    bad = scores.copy()
    bad[sp["s2"]] += 5.0
    kw = {"protocol": "paper", "test_pairs": 4, "repeats": 5, "seed": 1}
    a = ood_regression(sp, mean_score(scores), dims, **kw)
    b = ood_regression(sp, mean_score(bad), dims, **kw)
    pa = [p["predicted"] for p in a.predictions if p["target"] == "s2" and p["source"] != "(full)"]
    pb = [p["predicted"] for p in b.predictions if p["target"] == "s2" and p["source"] != "(full)"]
    assert pa and not np.allclose(pa, pb)


def test_paper_protocol_bad_options_name_the_field():
    from evalsift.errors import DataError, ParameterError

    groups, scores, dims = _setting(0, driven=True, n_splits=3)
    sp, perf = split_indices(groups), mean_score(scores)
    with pytest.raises(ParameterError, match="protocol='random' is not one of") as e:
        ood_regression(sp, perf, dims, protocol="random")
    assert e.value.field == "protocol"
    with pytest.raises(DataError, match="9 source-target pairs; holding out test_pairs=8 leaves 1") as e:  # 3 + 6
        ood_regression(sp, perf, dims, protocol="paper", test_pairs=8)
    assert e.value.field == "test_pairs"
    with pytest.raises(ParameterError, match="pairs='al' is not one of") as e:
        ood_regression(sp, perf, dims, protocol="paper", pairs="al")


def test_too_few_splits_is_a_data_error():
    from evalsift.errors import DataError

    groups, scores, dims = _setting(0, driven=True, n_splits=2)
    with pytest.raises(DataError, match="at least 3 splits") as e:
        ood_regression(split_indices(groups), mean_score(scores), dims)
    assert e.value.field == "groups"


def test_predict_unjudged_reads_no_target_score_and_measures_itself():
    groups, scores, dims = _setting(1, driven=True)
    truth = scores[groups == "s4"].mean(axis=0)
    a = predict_unjudged({"x": dims["x"]}, groups, scores, "s4")
    hidden = scores.copy()
    hidden[groups == "s4"] = np.nan
    b = predict_unjudged({"x": dims["x"]}, groups, hidden, "s4")
    assert a["predicted"] == b["predicted"]
    pred = np.array(list(a["predicted"].values()))
    base = np.array(list(a["no_change"].values()))
    assert np.abs(pred - truth).mean() < 0.5 * np.abs(base - truth).mean()
    q = a["quality"]  # measured on the 4 judged splits, each held out as s4 is
    assert q["splits"] == ["s0", "s1", "s2", "s3"] and q["mad"] < q["mad_no_change"]


# ------------------------------------------------------------------------------------- similarity
def test_pair_similarity_hand_computed_and_antisymmetric():
    # x = 0..9 in split a, 10..19 in b (no clipping effect on SMD sign; exact value below)
    x = np.arange(20.0)
    sp = split_indices(["a"] * 10 + ["b"] * 10)
    sim = pair_similarity({"x": x}, sp)[:, :, 0]
    assert sim[0, 1] == pytest.approx(-sim[1, 0]) and sim[0, 0] == 0
    # after clipping to [0.38, 18.62]: a = [0.38, 1..9], b = [10..18, 18.62]; diff of means = 9.
    a = np.r_[0.38, np.arange(1.0, 10)]
    b = np.r_[np.arange(10.0, 19), 18.62]
    sp_ = np.sqrt((a.var(ddof=1) + b.var(ddof=1)) / 2)
    assert sim[1, 0] == pytest.approx((b.mean() - a.mean()) / sp_)


def test_split_similarity_keys_and_bands():
    groups, _, dims = _setting(0, driven=True, n_splits=3)
    s = split_similarity(dims, groups, n_samples=100)
    assert set(s) == {"splits", "dimensions", "pairs", "vs_pool", "random_band", "split_band"}
    assert len(s["pairs"]) == 6 and set(s["random_band"]) == {"0.05", "0.1", "0.2"}
    lo5, hi5 = s["random_band"]["0.05"]["x"]
    lo20, hi20 = s["random_band"]["0.2"]["x"]
    assert hi5 - lo5 > hi20 - lo20 > 0  # smaller random samples stray further


# ----------------------------------------------------------------------------- selection_report
def test_selection_report_flags_a_length_skewed_selection_and_not_a_random_one():
    rng = np.random.default_rng(0)
    length = rng.poisson(20, 1000).astype(float)
    longest = np.argsort(-length)[:100]
    assert selection_report({"length": length}, longest)["dimensions"]["length"]["outside"]
    flagged = [selection_report({"length": length}, rng.choice(1000, 100, replace=False), seed=s)
               ["dimensions"]["length"]["outside"] for s in range(20)]
    assert sum(flagged) <= 3  # a 95% band: about 1 in 20 random draws falls outside


def test_two_model_profile_from_analysis():
    rng = np.random.default_rng(0)
    x = rng.random(400)
    scores = np.column_stack([x, 1 - x, np.full(400, 0.5)])  # A better on high x, B on low x
    res = analyse_all({"x": x}, mean_score(scores, ["A", "B", "C"]), n_samples=100)
    p = two_model_profile(res, "A", "B")["dimensions"]["x"]
    assert p["b_better"][0] and not p["b_better"][-1]
    assert len(p["perf"]["A"]) == 10 and len(p["band"]["B"]) == 2


# ------------------------------------------------------------------------------------------- CLI
def _images_are_inline(html_text: str) -> None:
    assert not re.search(r"https?://", html_text)
    assert "<script" not in html_text and "<link" not in html_text
    srcs = re.findall(r"<img[^>]*src='([^']*)'", html_text)
    assert len(srcs) >= 2 and all(s.startswith("data:image/png;base64,") for s in srcs)


RESULT_KEYS = {"data", "metric", "higher_is_better", "seed", "n_items", "systems", "dimensions", "label_free",
               "circular", "correlation", "distribution", "performance", "analysis", "summary", "profile",
               "similarity", "ood", "ood_label_free", "computed_by", "device", "notes"}


def test_profile_demo_writes_results_and_a_self_contained_report(tmp_path, capsys):
    out = tmp_path / "demo"
    assert main(["--quiet", "profile", "--data", "demo", "--metric", "human", "--samples", "50",
                 "--out", str(out)]) == 0
    res = json.loads((out / "results.json").read_text())
    assert set(res) == RESULT_KEYS
    # default: only what does not come from the scores (demo: texts, no gold labels, no annotators)
    assert res["dimensions"] == ["length", "ngram_perplexity"] and res["circular"] == {}
    assert [r["dimension"] for r in res["summary"]] == ["length", "ngram_perplexity", "random"]
    assert res["summary"][-1]["baseline"] and not any(r["circular"] for r in res["summary"])
    assert any("not the paper's GPT-2 perplexity" in n for n in res["notes"])
    assert res["correlation"]["dimensions"] == ["length", "ngram_perplexity"]
    assert all(sum(c) == 300 for c in res["distribution"]["counts"].values())  # every item in a bin
    assert res["similarity"] is None and res["ood"] is None  # no --topics: skipped with a note
    assert any("no --topics" in n for n in res["notes"])
    assert res["profile"]["models"] == ["A", "C"]  # the two best by mean human score
    _images_are_inline((out / "report.html").read_text())
    assert "length" in capsys.readouterr().out


def test_profile_demo_with_topics(tmp_path):
    out = tmp_path / "t"
    assert main(["--quiet", "profile", "--data", "demo", "--metric", "human", "--dims", "length,score_difficulty",
                 "--topics", "domain", "--models", "A,B", "--samples", "50", "--out", str(out)]) == 0
    res = json.loads((out / "results.json").read_text())
    assert res["similarity"]["field"] == "domain" and set(res["similarity"]["splits"]) == {"finance", "sports", "weather"}
    assert res["ood"]["features"] == ["source_score", "smd:length", "smd:score_difficulty"]
    assert list(res["circular"]) == ["score_difficulty"]  # from --metric itself: named, computed, marked
    assert [r["circular"] for r in res["summary"]] == [False, True, False]
    assert res["ood_label_free"]["features"] == ["source_score", "smd:length"]
    assert res["profile"]["models"] == ["A", "B"]
    _images_are_inline((out / "report.html").read_text())


def test_profile_paper_ood_protocol_and_its_flags(tmp_path, capsys):
    out = tmp_path / "p"
    assert main(["--quiet", "profile", "--data", "demo", "--metric", "human", "--dims", "length,score_difficulty",
                 "--topics", "domain", "--samples", "30", "--ood-protocol", "paper", "--ood-test-pairs", "2",
                 "--ood-repeats", "3", "--out", str(out)]) == 0
    res = json.loads((out / "results.json").read_text())
    o = res["ood"]
    assert o["protocol"] == "paper" and len(o["per_repeat"]) == 3 and o["params"]["n_pairs"] == 3 + 6
    assert o["params"]["n_full"] == res["n_items"]  # the full data is every item
    assert len(o["predictions"]) == 3 * 2 * 3  # repeats x pairs x systems
    assert "paper's protocol, mean of 3 repeats" in capsys.readouterr().out
    for argv, frag in ((["--ood-pairs", "full"], "--ood-pairs applies to the paper's held-out scheme only"),
                       (["--ood-protocol", "paper"], "--ood-protocol paper needs --topics")):
        topics = [] if "--ood-protocol" in argv else ["--topics", "domain"]
        code = main(["profile", "--data", "demo", "--metric", "human", *topics, *argv, "--out", str(tmp_path / "x")])
        err = capsys.readouterr().err
        assert code == 2 and err.startswith("error: ") and frag in err


def test_profile_wmt23_by_domain(tmp_path, capsys):
    need("wmt23/mt-metrics-eval-v2")
    out = tmp_path / "wmt"
    assert main(["--quiet", "profile", "--data", "wmt23/en-de", "--metric", "mqm", "--topics", "domain",
                 "--samples", "100", "--out", str(out)]) == 0
    res = json.loads((out / "results.json").read_text())
    ood = res["ood"]
    assert set(res["similarity"]["splits"]) == {"news", "social", "speech", "user_review"}
    assert len(ood["predictions"]) == 12 * 4 * 3 and len(ood["folds"]) == 4
    for k in ("mad", "r2", "mad_no_change", "r2_no_change", "weights", "scheme"):
        assert k in ood
    captured = capsys.readouterr()
    assert "OOD prediction by domain" in captured.out
    # 12 systems: the per-stratum plot draws 8 and the command says which 4 it leaves out
    left_out = ", ".join(res["systems"][8:])
    assert "note: the per-stratum plot of the report shows 8 of the 12 systems" in captured.err
    assert f"left out of it: {left_out} (every system's numbers are in results.json)" in captured.err
    # a regression that loses to "no change" on held-out splits is called out, one that wins is not
    for key, what in (("ood", "all dimensions"), ("ood_label_free", "label-free dimensions")):
        warned = f"the regression ({what}) is worse than assuming no change" in captured.err
        assert warned == (not res[key]["beats_no_change"])


def test_the_strata_plot_names_the_systems_it_leaves_out(tmp_path):
    """11 systems: the per-stratum plot draws the first MAX_LINES (8); the other three are named in the
    notes (printed by the command), under the plot, and in its legend's count -- never dropped silently."""
    from evalsift.pool import Pool
    from evalsift.transparency.report import MAX_LINES, profile_pool, write_report

    rng = np.random.default_rng(0)
    systems = [f"sys{k:02d}" for k in range(11)]
    n = 60
    pool = Pool(item_ids=range(n), inputs=[" ".join(["w"] * int(k)) for k in rng.integers(1, 30, n)], systems=systems,
                scores={"q": rng.random((n, 11)) + np.linspace(0, 1, 11)}, name="eleven")
    res = profile_pool(pool, "q", dims=["length", "score_difficulty"], n_samples=20, quiet=True)
    assert MAX_LINES == 8 and len(res["systems"]) == 11
    note = [x for x in res["notes"] if "per-stratum plot" in x]
    assert note == ["the per-stratum plot of the report shows 8 of the 11 systems (the first 8 in the data's order); "
                    "left out of it: sys08, sys09, sys10 (every system's numbers are in results.json)"]
    assert all(len(r["models"]) == 11 for r in res["analysis"].values())  # results.json keeps all of them
    page = write_report(res, tmp_path)["html"].read_text()
    assert "The plot shows 8 of the 11 systems" in page and "left out of it: sys08, sys09, sys10" in page
    few = profile_pool(pool.with_systems(systems[:8]), "q", dims=["length"], n_samples=20, quiet=True)
    assert not any("per-stratum plot" in x for x in few["notes"])  # 8 systems: all drawn, nothing to say
    assert "The plot shows" not in write_report(few, tmp_path / "few")["html"].read_text()


def test_profile_says_when_no_rank_change_can_be_detected():
    # two systems of equal skill: their order flips in about half of the random samples, so the
    # tau band is [-1, 1] and "0 rank changes" would be a non-result; the profile says so
    from evalsift.pool import Pool
    from evalsift.transparency.report import profile_pool

    rng = np.random.default_rng(0)
    n = 300
    pool = Pool(item_ids=range(n), inputs=[" ".join(["w"] * int(k)) for k in rng.integers(1, 30, n)],
                systems=["A", "B"], scores={"ok": (rng.random((n, 2)) < 0.7).astype(float)}, name="two")
    res = profile_pool(pool, "ok", dims=["length"], n_samples=100, quiet=True)
    row = res["summary"][0]
    assert row["rank_change_possible"] is False and row["n_rank_significant"] == 0
    assert any("rank changes cannot be detected for length" in x for x in res["notes"])


def test_profile_chaosnli_defaults_are_label_free_and_mark_the_circular(tmp_path, capsys):
    need("chaosnli/chaosNLI_v1.0", "chaosnli/predictions")
    out = tmp_path / "snli"
    assert main(["--quiet", "profile", "--data", "chaosnli/snli", "--metric", "correct", "--samples", "50",
                 "--out", str(out)]) == 0
    res = json.loads((out / "results.json").read_text())
    # texts, gold labels, 100 crowd labels and the runs' probabilities: every default the data allows
    assert res["dimensions"] == ["length", "ngram_perplexity", "difficulty", "noise", "ambiguity"]
    assert list(res["circular"]) == ["ambiguity"]  # the evaluated runs' own probabilities
    k = len(res["dimensions"])
    rho = np.array(res["correlation"]["rho"], dtype=float)
    assert rho.shape == (k, k) and np.allclose(np.diag(rho), 1) and np.allclose(rho, rho.T)
    assert np.all(np.abs(rho[np.triu_indices(k, 1)]) < 1)
    assert all(sum(c) == res["n_items"] for c in res["distribution"]["counts"].values())
    printed = capsys.readouterr().out
    assert "ambiguity" in printed and "(circular)" in printed and "(baseline)" in printed
    page = (out / "report.html").read_text()
    assert "Distribution of the dimensions (Fig. 3)" in page and "Correlation between the dimensions" in page


@pytest.mark.parametrize("argv, fragment", [
    (["--metric", "nope"], "--metric: the data has no metric 'nope'"),
    (["--metric", "human", "--topics", "genre"], "--topics: the data has no metadata field 'genre'"),
    (["--metric", "human", "--dims", "lenght"], "--dims: Unknown dimension 'lenght'. Did you mean 'length'"),
    (["--metric", "human", "--models", "A,Z"], "--models: no system 'Z'"),
    (["--metric", "human", "--lm", "no/such/model"], "--lm: 'no/such/model' is not a local model folder"),
])
def test_profile_bad_input_exits_2_naming_the_field(argv, fragment, tmp_path, capsys):
    code = main(["profile", "--data", "demo", *argv, "--out", str(tmp_path / "o")])
    err = capsys.readouterr().err
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert code == 2 and len(lines) == 1 and lines[0].startswith("error: "), err
    assert fragment in lines[0]
    assert any(w in lines[0] for w in ("Available", "its ", "the systems are", "leave --lm out"))  # says what to use


def test_select_report_flags_the_skew_and_keeps_plain_select_quiet(tmp_path, capsys):
    out = tmp_path / "picks.jsonl"
    assert main(["--quiet", "select", "random", "--data", "demo", "--budget", "30", "--out", str(out)]) == 0
    assert capsys.readouterr().out == "" and not (tmp_path / "picks.report.json").exists()
    assert main(["--quiet", "select", "metric_var", "--data", "demo", "--metric", "token_f1", "--budget", "30",
                 "--out", str(out), "--report"]) == 0
    text = capsys.readouterr().out
    rep = json.loads((tmp_path / "picks.report.json").read_text())
    assert set(rep["dimensions"]) == {"length", "score_difficulty (token_f1)"} and rep["n_selected"] == 30
    assert rep["dimensions"]["score_difficulty (token_f1)"]["outside"] and "skewed" in text
    assert len(out.read_text().splitlines()) == 30
