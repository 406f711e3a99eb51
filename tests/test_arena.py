"""Arena leaderboards (issue 22): Bradley-Terry from battles, intervals, simultaneous rank-sets, judges
by PPI++, human budgets (uniform and active), the command and its files, on synthetic leagues with
known strengths and on the arena-ppr files as they are."""

from __future__ import annotations

import json

import numpy as np
import pytest

from evalsift.arena import Battles, bootstrap_bt, curvature_bias, fit_bt, fit_bt_ppi, rank_sets, ranks, read_battles
from evalsift.arena.leaderboard import leaderboard
from evalsift.cli import main
from evalsift.errors import DataError, ParameterError

from _data import need


def league(seed: int, n: int = 6000, K: int = 8, sd: float = 0.7, judge_keep: float = 0.7):
    """Battles over random pairs with Bradley-Terry outcomes (no ties) from known strengths, and a judge
    that repeats the human verdict with probability ``judge_keep``, else answers at random."""
    rng = np.random.default_rng(seed)
    beta = rng.normal(0, sd, K)
    a = rng.integers(K, size=n)
    b = (a + rng.integers(1, K, size=n)) % K
    y = (rng.random(n) < 1 / (1 + np.exp(-(beta[a] - beta[b])))).astype(float)
    f = np.where(rng.random(n) < judge_keep, y, rng.integers(2, size=n).astype(float))
    return Battles.from_arrays([f"m{k}" for k in range(K)], a, b, y, judges={"judge": f}), beta - beta.mean()


def test_the_fit_is_the_maximum_likelihood_of_the_counts():
    """Two models, X first in 10 battles winning 7 (one tie counted half): the MLE of the difference is
    log(odds) of X's share, 7.5 / 10 -> log(3) = 1.0986, less the ridge's pull (0.01 * beta / 10 battles)."""
    y = [1.0] * 7 + [0.0] * 2 + [0.5]
    b = Battles.from_arrays(["X", "Y"], [0] * 10, [1] * 10, y)
    d = float(np.diff(fit_bt(b).coef[::-1])[0])
    assert abs(d - np.log(3)) < 0.005 and d < np.log(3)
    # the same battles recorded the other way round give the mirror image
    b2 = Battles.from_arrays(["X", "Y"], [1] * 10, [0] * 10, [1 - v for v in y])
    assert np.allclose(fit_bt(b2).coef, fit_bt(b).coef, atol=1e-9)


def test_scores_match_an_independent_logistic_regression():
    """The fit equals scikit-learn's logistic regression on the duplicated-battle design FastChat uses
    (ties as one win each), up to the ridge."""
    from sklearn.linear_model import LogisticRegression

    battles, _ = league(1, n=3000, K=5)
    y = battles.y.copy()
    y[:200] = 0.5  # some ties
    battles = Battles.from_arrays(battles.models, battles.a, battles.b, y)
    X = np.zeros((2 * battles.n, battles.K))
    X[np.arange(2 * battles.n), np.tile(battles.a, 2)] = 1
    X[np.arange(2 * battles.n), np.tile(battles.b, 2)] = -1
    Y = np.concatenate([(y >= 0.5).astype(float), (y == 1.0).astype(float)])  # a tie: one win, one loss
    lr = LogisticRegression(fit_intercept=False, C=1e6, tol=1e-10, max_iter=1000).fit(X, Y)
    ref = lr.coef_[0] - lr.coef_[0].mean()
    assert np.allclose(fit_bt(battles).coef, ref, atol=2e-3)


def test_sandwich_and_bootstrap_agree_and_intervals_cover_known_strengths():
    """On 60 leagues with known strengths: per-model 90% intervals cover the true centred strengths about
    90% of the time (at least 86%: 3 standard errors of 480 model-leagues below), and the simultaneous
    90% rank-sets hold the true ranks of all models at once in at least 84% of leagues (2 s.e.)."""
    cover, joint = [], []
    for s in range(60):
        battles, beta = league(100 + s, n=2000)
        fit = fit_bt(battles)
        lo, hi = fit.intervals(0.1).T
        cover.extend((lo <= beta) & (beta <= hi))
        rs, _ = rank_sets(fit.coef, alpha=0.1, cov=fit.cov, seed=s)
        r = ranks(beta)
        joint.append(bool(np.all((rs[:, 0] <= r) & (r <= rs[:, 1]))))
    assert np.mean(cover) >= 0.9 - 3 * (0.09 / 480) ** 0.5
    assert np.mean(joint) >= 0.9 - 2 * (0.09 / 60) ** 0.5
    battles, _ = league(7, n=3000)
    fit = fit_bt(battles)
    draws = bootstrap_bt(battles, 400, seed=1)
    ratio = draws.std(axis=0, ddof=1) / fit.se
    assert np.all((ratio > 0.8) & (ratio < 1.25))  # 400 replicates: the sd is known to about 4%


def test_rank_sets_by_hand():
    """Three models with standard errors 0.1 on independent strengths: a gap of 1.0 is ~7 s.e. of the
    difference (se sqrt(0.02) = 0.141), far past any critical value; a gap of 0.05 is not."""
    rs, c = rank_sets(np.array([1.0, 0.05, 0.0]), alpha=0.05, cov=np.eye(3) * 0.01)
    assert 2.0 < c < 3.0  # the max-|t| over 3 pairs at 95%: above 1.96, below Bonferroni's 2.39 + slack
    assert rs.tolist() == [[1, 1], [2, 3], [2, 3]]


def test_step_down_rank_sets_by_hand_and_never_wider():
    """Three independent strengths with s.e. 0.1 (differences: s.e. 0.1414). The single step's critical
    value is the studentized range q(0.95; 3, inf) / sqrt(2) = 3.314 / 1.414 = 2.343. Once model 0 is
    surely above both others, the step-down recomputes c over the claims still standing -- the two
    directions of (1, 2) and "1 or 2 above 0" -- which is smaller; a gap of 1 vs 2 between the two values
    is separated by the step-down only."""
    cov = np.eye(3) * 0.01
    _, c1 = rank_sets(np.array([1.0, 0.0, 0.0]), alpha=0.05, cov=cov, stepdown=False)
    assert abs(c1 - 2.343) < 0.03
    _, c2 = rank_sets(np.array([1.0, 0.0, 0.0]), alpha=0.05, cov=cov)  # step 2: no new claim, c of that step
    assert 1.96 < c2 < c1 - 0.05
    gap = (c1 + c2) / 2 * 0.1414
    one, _ = rank_sets(np.array([1.0, gap, 0.0]), alpha=0.05, cov=cov, stepdown=False)
    down, _ = rank_sets(np.array([1.0, gap, 0.0]), alpha=0.05, cov=cov)
    assert one.tolist() == [[1, 1], [2, 3], [2, 3]] and down.tolist() == [[1, 1], [2, 2], [3, 3]]
    for s in range(20):  # never wider, on fitted leagues
        battles, _ = league(400 + s, n=1500)
        fit = fit_bt(battles)
        one, _ = rank_sets(fit.coef, alpha=0.1, cov=fit.cov, seed=s, stepdown=False)
        down, _ = rank_sets(fit.coef, alpha=0.1, cov=fit.cov, seed=s)
        assert np.all(down[:, 0] >= one[:, 0]) and np.all(down[:, 1] <= one[:, 1])


def test_step_down_rank_sets_keep_the_familywise_error():
    """Normal estimates around known strengths with a block of exact ties (where any claim between tied
    models is false) and clear gaps: over 2,000 draws the share with any false "i above j" claim stays at
    most alpha = 0.1 (+ 2 s.e. of 2,000 draws: 0.013)."""
    beta = np.array([0.0, 0.0, 0.0, 0.0, 0.3, 0.6, 0.6, 1.2])
    K = len(beta)
    rng = np.random.default_rng(5)
    A = rng.normal(size=(K, K))
    cov = 0.01 * (A @ A.T / K + np.eye(K))  # correlated estimates, as a fit's are
    root = np.linalg.cholesky(cov)
    wrong = 0
    for s in range(2000):
        est = beta + root @ rng.standard_normal(K)
        rs, _ = rank_sets(est, alpha=0.1, cov=cov, seed=s, sims=4000)
        r_best, r_worst = 1 + (beta[None, :] > beta[:, None]).sum(axis=1), K - (beta[None, :] < beta[:, None]).sum(axis=1)
        # a false claim puts some true rank (any rank a tied model can take) outside its set
        wrong += bool(np.any((rs[:, 0] > r_best) | (rs[:, 1] < r_worst)))
    assert wrong / 2000 <= 0.1 + 2 * (0.09 / 2000) ** 0.5


def test_judges_never_bias_and_a_good_judge_narrows():
    """PPI++ with a judge: on leagues with known strengths the estimate stays centred on the truth even
    with an adversarial judge (its weight goes to 0), and a judge that mostly agrees narrows the intervals."""
    errs, widths = {"none": [], "good": [], "bad": []}, {"none": [], "good": [], "bad": []}
    for s in range(30):
        battles, beta = league(200 + s, n=8000)
        bad = Battles.from_arrays(battles.models, battles.a, battles.b, battles.y,
                                  judges={"judge": 1.0 - battles.judges["judge"]})  # always the other side
        lab = np.random.default_rng(s).choice(battles.n, 800, replace=False)
        prob = np.full(800, 800 / battles.n)
        for name, data, js in (("none", battles, []), ("good", battles, ["judge"]), ("bad", bad, ["judge"])):
            fit = fit_bt_ppi(data, lab, js, prob=prob)
            errs[name].append(fit.coef - beta)
            widths[name].append(fit.se.mean())
            if name == "bad":
                assert fit.lam["judge"] < 0.2
    for name in errs:
        mean_err = np.abs(np.mean(errs[name], axis=0)).max()
        assert mean_err < 0.06, name  # no systematic error (s.e. of the mean over 30 leagues ~0.03)
    assert np.mean(widths["good"]) < 0.9 * np.mean(widths["none"])
    assert np.mean(widths["bad"]) < 1.02 * np.mean(widths["none"])


def test_leaderboard_with_budgets_and_allocations():
    battles, beta = league(3, n=6000)
    full = leaderboard(battles)
    assert full.human_battles_used == 6000 and full.fit.method == "mle" and not full.fit.lam
    for alloc in ("uniform", "active"):
        L = leaderboard(battles, human_budget=600, allocation=alloc, alpha=0.1, seed=2)
        # 600 human battles among 8 models (150 per model): the default estimator shrinks the scores
        assert L.human_battles_used == 600 and L.fit.method == "ppi+shrunk" and "judge" in L.fit.lam
        d = L.to_dict()
        assert [m["rank"] for m in d["models"]] == list(range(1, 9))
        for m in d["models"]:
            assert m["interval"][0] <= m["score"] <= m["interval"][1] and 1 <= m["rank_set"][0] <= m["rank_set"][1] <= 8
        assert sum(m["human_battles"] for m in d["models"]) == 2 * 600
    with pytest.raises(ParameterError, match="--human-budget 7000 is more than the 6000 battles"):
        leaderboard(battles, human_budget=7000)
    with pytest.raises(ParameterError, match="give --human-budget N"):
        leaderboard(battles, allocation="active")


def test_the_bias_correction_removes_the_fits_spread():
    """Maximum likelihood on a few hundred battles puts strong and weak models too far apart (the error
    rises with the true strength); the first-order correction takes that out. 400 leagues of 8 models
    and 300 battles: per league, the slope of the error on the true strengths, then its mean over the
    leagues in standard errors."""
    K, reps = 8, 400
    beta = np.linspace(-1.5, 1.5, K)
    rng = np.random.default_rng(0)
    slopes = {"mle": [], "corrected": []}
    for _ in range(reps):
        a = rng.integers(K, size=300)
        b = (a + rng.integers(1, K, size=300)) % K
        y = (rng.random(300) < 1 / (1 + np.exp(-(beta[a] - beta[b])))).astype(float)
        battles = Battles.from_arrays([f"m{k}" for k in range(K)], a, b, y)
        f = fit_bt(battles)
        bias = curvature_bias(battles, f.coef, f.cov)
        assert abs(bias.sum()) < 1e-9  # a shift of all scores means nothing: the bias is centred
        slopes["mle"].append(np.polyfit(beta, f.coef - beta, 1)[0])
        slopes["corrected"].append(np.polyfit(beta, f.coef - bias - beta, 1)[0])
    z = {k: np.mean(v) / (np.std(v, ddof=1) / np.sqrt(reps)) for k, v in slopes.items()}
    assert z["mle"] > 4, z  # the spread is there to remove (about +3.4% of the true differences)
    assert abs(z["corrected"]) < 2, z


def test_the_bias_corrected_estimator_in_the_leaderboard_and_the_command(tmp_path, capsys):
    battles, _ = league(5, n=3000)
    plain = leaderboard(battles, human_budget=400, allocation="neyman", alpha=0.1, seed=1, estimator="mle")
    bc = leaderboard(battles, human_budget=400, allocation="neyman", alpha=0.1, seed=1, estimator="bias-corrected")
    assert bc.fit.method == plain.fit.method + "+bc" and bc.to_dict()["estimator"] == "bias-corrected"
    shift = plain.fit.coef - bc.fit.coef
    assert np.allclose(shift, curvature_bias(battles, plain.fit.coef, plain.fit.cov))
    top, bottom = np.argmax(plain.fit.coef), np.argmin(plain.fit.coef)
    assert shift[top] > 0 > shift[bottom]  # the corrected scores sit closer together
    assert np.allclose(bc.fit.cov, plain.fit.cov) and "bias-corrected scores" in bc.summary()
    assert "first order in 1/n" in bc.to_dict()["assumption"] and "1/n" not in plain.to_dict()["assumption"]
    boot = leaderboard(battles, human_budget=400, alpha=0.1, seed=1, intervals="bootstrap", B=200,
                       estimator="bias-corrected")
    assert all(lo <= s <= hi for s, (lo, hi) in zip(boot.fit.scores, boot.interval))
    stopped = leaderboard(battles, human_budget=800, alpha=0.1, seed=1, stop="top-k:1", first=200,
                          estimator="bias-corrected")
    assert stopped.fit.method.endswith("+bc") and stopped.stop is not None
    with pytest.raises(ParameterError, match="with --ties davidson use --estimator mle"):
        leaderboard(battles, human_budget=400, judges=[], ties="davidson", estimator="bias-corrected")
    with pytest.raises(ParameterError, match="estimator"):
        leaderboard(battles, estimator="firth")
    path = tmp_path / "b.csv"
    path.write_text("battle_id,model_a,model_b,winner\n" + "".join(
        f"{i},m{a},m{b},{'model_a' if y else 'model_b'}\n" for i, (a, b, y) in enumerate(zip(battles.a, battles.b, battles.y))))
    assert main(["arena", "--data", str(path), "--human-budget", "500", "--estimator", "bias-corrected",
                 "--out", str(tmp_path / "o"), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["estimator"] == "bias-corrected"


def test_bad_battles_are_refused_with_the_fix():
    with pytest.raises(DataError, match="never meet"):
        fit_bt(Battles.from_arrays(["A", "B", "C", "D"], [0, 2], [1, 3], [1.0, 0.0]))
    with pytest.raises(DataError, match="model 'C' has no battle"):
        fit_bt(Battles.from_arrays(["A", "B", "C"], [0, 1], [1, 0], [1.0, 0.0]))
    with pytest.raises(DataError, match="against itself"):
        Battles.from_arrays(["A", "B"], [0], [0], [1.0])


def test_arena_contract_command_on_the_arena_files(tmp_path, capsys):
    """The issue's command shape on arena-ppr as it is: results.json with models (name, score, interval,
    rank_set), human_battles_used; leaderboard.html self-contained; the CSV."""
    folder = need("arena-ppr/human.jsonl").parent
    out = tmp_path / "lb"
    argv = ["arena", "--data", str(folder / "human.jsonl"), "--judge", str(folder / "gpt-4-0125-preview.jsonl"),
            "--judge", str(folder / "gpt-3.5-turbo.jsonl"), "--human-budget", "2000", "--allocation", "uniform",
            "--alpha", "0.1", "--seed", "3", "--out", str(out)]
    assert main(argv) == 0
    printed = capsys.readouterr().out
    res = json.loads((out / "results.json").read_text())
    assert res["human_battles_used"] == 2000 and len(res["models"]) == 20
    assert set(res["models"][0]) >= {"name", "score", "interval", "rank_set"}
    assert set(res["judge_weights"]) == {"gpt-4-0125-preview", "gpt-3.5-turbo"}
    # the reference from every human battle, and gpt-4 (the strongest there by far) inside the rank-set
    ref = leaderboard(read_battles(str(folder / "human.jsonl")))
    ref_rank = {m["name"]: m["rank"] for m in ref.to_dict()["models"]}
    assert ref_rank["gpt-4"] == 1 and res["models"][0]["rank_set"][0] == 1
    hits = sum(m["rank_set"][0] <= ref_rank[m["name"]] <= m["rank_set"][1] for m in res["models"])
    assert hits >= 18  # simultaneous 90% sets: all 20 usually; one draw can miss a model or two
    page = (out / "leaderboard.html").read_text()
    assert "<script" not in page and "http" not in page.replace("http-equiv", "") and "gpt-4" in page
    assert (out / "leaderboard.csv").read_text().startswith("rank,model,score,low,high,rank_best,rank_worst")
    assert "gpt-4" in printed and "assumption:" in printed
    assert main(["arena", "--data", str(folder / "human.jsonl"), "--human-budget", "1000", "--allocation", "active",
                 "--out", str(tmp_path / "act"), "--json"]) == 0
    act = json.loads(capsys.readouterr().out)
    assert act["allocation"] == "active" and act["human_battles_used"] == 1000


def test_arena_command_errors_name_the_fix(tmp_path, capsys):
    folder = need("arena-ppr/human.jsonl").parent
    base = ["arena", "--data", str(folder / "human.jsonl"), "--out", str(tmp_path / "x")]
    assert main([*base, "--human-budget", "999999"]) == 2
    assert "more than the 17942 battles" in capsys.readouterr().err
    assert main([*base, "--allocation", "active"]) == 2
    assert "give --human-budget N" in capsys.readouterr().err
    bad = tmp_path / "judge.jsonl"
    bad.write_text('{"num": 999999999, "model_a": "gpt-4", "model_b": "koala-13b", "winner": "model_a"}\n')
    assert main([*base, "--judge", str(bad)]) == 2
    assert "judged none of the" in capsys.readouterr().err


def test_davidson_recovers_known_strengths_and_tie_propensity():
    """Battles drawn from Davidson's model (nu = 0.8, 6 models): the tie-aware fit recovers the strengths
    and nu; ties-as-half, fitted to the same battles, shrinks the strengths toward each other (a tie
    pulls both sides to 1/2), which is why the variant exists."""
    from evalsift.arena.bt import fit_davidson

    rng = np.random.default_rng(5)
    K, n, nu = 6, 40000, 0.8
    beta = rng.normal(0, 0.8, K)
    a = rng.integers(K, size=n)
    b = (a + rng.integers(1, K, size=n)) % K
    u = (beta[a] - beta[b]) / 2
    D = np.exp(u) + np.exp(-u) + nu
    r = rng.random(n)
    y = np.where(r < np.exp(u) / D, 1.0, np.where(r < (np.exp(u) + nu) / D, 0.5, 0.0))
    battles = Battles.from_arrays([f"m{k}" for k in range(K)], a, b, y)
    fit = fit_davidson(battles)
    truth = beta - beta.mean()
    assert np.all(np.abs(fit.coef - truth) <= 4 * fit.se) and abs(fit.lam["tie_propensity"] - nu) < 0.05
    half = fit_bt(battles)
    assert np.std(half.coef) < 0.9 * np.std(fit.coef)
    assert fit_bt(battles, ties="davidson").method == "davidson"


def test_davidson_refuses_what_it_does_not_do(tmp_path):
    battles, _ = league(4, n=2000)
    with pytest.raises(ParameterError, match="--ties davidson"):
        leaderboard(battles, human_budget=500, ties="davidson")
    with pytest.raises(ParameterError, match="--ties davidson"):
        leaderboard(battles, intervals="bootstrap", ties="davidson")
    L = leaderboard(battles, human_budget=500, judges=[], ties="davidson")
    assert L.fit.method == "davidson" and L.to_dict()["tie_propensity"] is not None


def test_stop_rules_stop_early_when_clear_and_rarely_when_wrong():
    """--stop top-k:1: on a league with a clear best model it stops well before the cap; on leagues whose
    two best are exactly level, any stop names a wrong 'best', and that happens in at most alpha of the
    runs (0.2 here; 40 leagues: at most 0.2 + 2 s.e.)."""
    from evalsift.arena.leaderboard import parse_stop, stop_met

    battles, beta = league(9, n=20000, K=6, sd=1.0)
    L = leaderboard(battles, judges=[], human_budget=20000, stop="top-k:1", first=100, alpha=0.1)
    assert L.stop["met"] and L.human_battles_used < 20000
    assert L.to_dict()["models"][0]["name"] == battles.models[int(np.argmax(beta))]
    assert L.alpha == pytest.approx(0.1 / len(L.stop["planned_looks"]))
    wrong = 0
    for s in range(40):
        rng = np.random.default_rng(500 + s)
        strengths = np.array([0.8, 0.8, 0.0, -0.3, -0.6, -0.9])  # a dead heat at the top
        a = rng.integers(6, size=6000)
        b = (a + rng.integers(1, 6, size=6000)) % 6
        y = (rng.random(6000) < 1 / (1 + np.exp(-(strengths[a] - strengths[b])))).astype(float)
        heat = Battles.from_arrays([f"m{k}" for k in range(6)], a, b, y)
        wrong += leaderboard(heat, judges=[], human_budget=6000, stop="top-k:1", first=200, alpha=0.2,
                             seed=s).stop["met"]
    assert wrong / 40 <= 0.2 + 2 * (0.2 * 0.8 / 40) ** 0.5
    # the rules by hand
    rs = np.array([[1, 1], [2, 3], [2, 3], [4, 5], [4, 5]])
    assert stop_met("top-k", 1, rs) and stop_met("top-k", 3, rs) and not stop_met("top-k", 2, rs)
    assert stop_met("rank-set", 2, rs) and not stop_met("rank-set", 1, rs)
    with pytest.raises(ParameterError, match="--stop must be top-k:K"):
        parse_stop("top-3", 5)
    with pytest.raises(ParameterError, match="--stop needs --human-budget"):
        leaderboard(battles, stop="top-k:1")
    with pytest.raises(ParameterError, match="--allocation uniform"):
        leaderboard(battles, human_budget=1000, allocation="active", stop="top-k:1")


def test_explain_stop_says_why_by_hand():
    """The one sentence the admin page, ``annotate status`` and ``arena --stop`` give, on hand-made
    rank-sets. Looks: planned_looks(50, 1600) = 50, 100, 200, 400, 800, 1600, so L = 6 and each look is
    at alpha / L = 0.1 / 6 = 0.01667: the rule reads 1 - 0.01667 = 98.33% -> '98.3%' rank-sets. After
    420 human battles the looks at 50 ... 400 have been made; the next is at 800 (the issue's case)."""
    from evalsift.arena.leaderboard import explain_stop, level_text, planned_looks

    looks = planned_looks(50, 1600)
    assert looks == [50, 100, 200, 400, 800, 1600]
    models = ["gpt-4", "claude-v1", "vicuna-13b"]
    at90 = np.array([[1, 1], [2, 3], [2, 3]])  # gpt-4 alone at the top of the 90% board
    at_look = np.array([[1, 2], [1, 3], [2, 3]])  # at 98.3% claude-v1 may still be first
    why = explain_stop("top-k:1", models, 0.1, looks, 420, rank_set=at90, look_rank_set=at_look)
    assert why["sentence"] == ("gpt-4 looks best at 90%; the stop needs 98.3% (alpha 0.1 / 6 planned looks) at a "
                               "planned look, and at 98.3% the 420 human battles do not settle it; next look at 800 "
                               "human battles (420 now)")
    assert (why["level"], why["look_level"], why["next_look"], why["planned_looks"]) == ("90%", "98.3%", 800, 6)
    assert why["alpha_per_look"] == pytest.approx(0.1 / 6) and why["leaders"] == ["gpt-4"]
    assert why["settled"] is True and why["settled_at_look_level"] is False
    # the 98.3% sets separate it too: the rule still waits for its look at 800
    why = explain_stop("top-k:1", models, 0.1, looks, 420, rank_set=at90, look_rank_set=at90)
    assert ("at 98.3% the 420 human battles settle it too, but the rule looks only at its planned looks; next look "
            "at 800 human battles (420 now)") in why["sentence"]
    # top-k:2 names the two in the board's order (strongest first); rank-set:1 is not met by 2-3
    sets = np.array([[1, 2], [1, 2], [3, 3]])
    why = explain_stop("top-k:2", models, 0.05, looks, 420, rank_set=sets, order=[1, 0, 2])
    assert why["sentence"].startswith("claude-v1, gpt-4 look like the top 2 at 95%; the stop needs 99.2% (alpha 0.05 "
                                      "/ 6 planned looks)")  # 1 - 0.05 / 6 = 0.99167 -> 99.2%
    why = explain_stop("rank-set:1", models, 0.1, looks, 420, rank_set=sets)
    assert why["sentence"].startswith("some rank-set spans more than 1 rank at 90%;") and why["settled"] is False
    assert explain_stop("top-k:1", models, 0.1, looks, 420, rank_set=sets)["sentence"].startswith(
        "no system is singled out as the best at 90%;")
    # no board yet, met, no look left, closed early
    assert explain_stop("top-k:1", models, 0.1, looks, 30)["sentence"] == (
        "the stop needs 98.3% (alpha 0.1 / 6 planned looks) at a planned look; next look at 50 human battles (30 now)")
    met = explain_stop("top-k:1", models, 0.1, looks, 430, met_at=400)
    assert met["sentence"] == ("top-k:1 was met at the planned look at 400 human battles, at 98.3% (alpha 0.1 / 6 "
                               "planned looks)") and met["next_look"] is None
    assert explain_stop("top-k:1", models, 0.1, looks, 1600, rank_set=at90)["sentence"].endswith(
        "; no planned look is left (the last was at 1600 human battles)")
    assert explain_stop("top-k:1", models, 0.1, looks, 420, rank_set=at90, closed="every battle has its judgments"
                        )["sentence"].endswith("; no more battles will come: every battle has its judgments (420 human "
                                               "battles)")
    # levels: 1 - 0.05 / 7 = 0.992857 -> 99.3%; 1 - 0.001 / 10 = 0.9999 -> 99.99% (never '100.0%')
    assert (level_text(0.05 / 7), level_text(0.001 / 10), level_text(0.05)) == ("99.3%", "99.99%", "95%")


def test_arena_stop_that_did_not_stop_says_why(tmp_path, capsys):
    """``evalsift arena --stop`` that ends unmet prints the same sentence (and keeps it in results.json).
    600 battles among A (0.4 log-odds), B (0) and C (-0.1), seed 9: --first 150 --human-budget 600 gives
    looks 150, 300, 600 (L = 3), each at 0.1 / 3 = 0.0333, i.e. 96.7% rank-sets; none meets top-k:1, and
    at 90% the 600 battles single out A (measured)."""
    rng = np.random.default_rng(9)
    strengths = np.array([0.4, 0.0, -0.1])
    a = rng.integers(3, size=600)
    b = (a + rng.integers(1, 3, size=600)) % 3
    y = rng.random(600) < 1 / (1 + np.exp(-(strengths[a] - strengths[b])))
    names = ["A", "B", "C"]
    data = tmp_path / "battles.jsonl"
    data.write_text("".join(json.dumps({"question_id": str(k), "model_a": names[a[k]], "model_b": names[b[k]],
                                        "winner": "model_a" if y[k] else "model_b"}) + "\n" for k in range(600)))
    base = ["arena", "--data", str(data), "--human-budget", "600", "--first", "150", "--alpha", "0.1"]
    assert main([*base, "--stop", "top-k:1", "--out", str(tmp_path / "o")]) == 0
    out = capsys.readouterr().out
    sentence = ("A looks best at 90%; the stop needs 96.7% (alpha 0.1 / 3 planned looks) at a planned look, and at "
                "96.7% the 600 human battles do not settle it; no planned look is left (the last was at 600 human "
                "battles)")
    assert "stop rule top-k:1: not met within 600 human battles (look 3 of 3)" in out
    assert f"why: {sentence}" in out
    res = json.loads((tmp_path / "o" / "results.json").read_text())
    assert res["stop"]["explanation"]["sentence"] == sentence and res["stop"]["explanation"]["next_look"] is None
    import html as html_lib
    page = html_lib.unescape((tmp_path / "o" / "leaderboard.html").read_text())
    assert "top-k:1: not met within 600 human battles (look 3 of 3)" in page and f"Why: {sentence}" in page
    # a rule that is met prints no 'why'
    assert main([*base, "--stop", "rank-set:3", "--out", str(tmp_path / "m")]) == 0
    out = capsys.readouterr().out
    assert "stop rule rank-set:3: met after 150 human battles" in out and "why:" not in out
    page = (tmp_path / "m" / "leaderboard.html").read_text()
    assert "rank-set:3: met after 150 human battles" in page and "Why:" not in page
