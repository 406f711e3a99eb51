"""Issue 33: a new system's full-benchmark score from a few judged items. The designs' weights and
inclusion probabilities, the design-based promise (unbiased, intervals that cover) on synthetic data
where the truth is known -- also when the new system beats every known one, where the model-based
estimators fail --, the file and command-line round trip (a new system judged on the anchors only),
and the real data's shapes."""

import json

import numpy as np
import pytest

from evalsift.cli import main
from evalsift.errors import DataError, ParameterError
from evalsift.estimate import KnownSystems, estimate_score, read_anchors, response_matrix, select_anchors, write_anchors
from evalsift.estimate.estimators import cochran_ok, ridge_fit
from evalsift.io.opencompass import read_opencompass

from _data import need


def two_pl(S=31, M=400, seed=0, continuous=False):
    """Responses of S systems to M items from a 2PL; row 0 is the best system (ability above all)."""
    rng = np.random.default_rng(seed)
    theta = np.sort(rng.normal(size=S))[::-1]
    theta[0] += 1.5
    a, b = np.exp(rng.normal(0, 0.3, M)), rng.normal(0, 1, M)
    P = 1 / (1 + np.exp(-a * (theta[:, None] - b)))
    if continuous:
        return np.clip(P + rng.normal(0, 0.1, P.shape), 0, 1)
    return (rng.random(P.shape) < P).astype(float)


# ------------------------------------------------------------------------------------------ designs
def test_random_and_stratified_designs_weights_and_inclusion_probabilities():
    Y = two_pl()
    Yk, M = Y[1:], Y.shape[1]
    r = select_anchors(Yk, 50, "random", seed=3)
    assert len(set(r.items.tolist())) == 50 and np.allclose(r.inclusion, 50 / M) and r.weights.sum() == pytest.approx(1)
    s = select_anchors(Yk, 50, "stratified", seed=3)
    assert len(set(s.items.tolist())) == 50 and s.weights.sum() == pytest.approx(1)
    for h, Mh in s.stratum_sizes.items():
        nh = int((s.strata == h).sum())
        assert nh >= 2
        assert np.allclose(s.inclusion[s.strata == h], nh / Mh)
        assert np.allclose(s.weights[s.strata == h], Mh / (M * nh))
    assert (select_anchors(Yk, 50, "stratified", seed=3).items == s.items).all()
    assert set(select_anchors(Yk, 50, "stratified", seed=4).items) != set(s.items)


def test_deterministic_designs_have_no_inclusion_probabilities():
    Yk = two_pl(continuous=True)[1:]
    ap = select_anchors(Yk, 30, "anchor-points", seed=0)
    assert ap.inclusion is None and ap.weights.sum() == pytest.approx(1) and len(set(ap.items.tolist())) == ap.n
    ir = select_anchors(Yk, 30, "irt", seed=0)
    assert ir.inclusion is None and len(set(ir.items.tolist())) == 30
    with pytest.raises(ParameterError, match="aipw needs a random design"):
        estimate_score(Yk, np.zeros(ap.n), ap, "aipw")
    with pytest.raises(ParameterError, match="--budget"):
        select_anchors(Yk, Yk.shape[1] + 1, "random")


# ---------------------------------------------------------------------------- the design-based promise
@pytest.mark.parametrize("design", ["random", "stratified"])
def test_design_based_estimates_are_unbiased_and_cover_even_when_extrapolating(design):
    """The held-out system is better than every known one: mean and aipw stay unbiased and their 90%
    intervals cover; Zhang et al.'s regression is biased downward."""
    Y = two_pl(continuous=True, seed=1)
    known, new = KnownSystems(Y[1:]), Y[0]
    truth = new.mean()
    errs = {"mean": [], "aipw": [], "regression": []}
    cover = {"mean": [], "aipw": []}
    for seed in range(150):
        a = select_anchors(known.Yk, 60, design, seed=seed)
        for m in errs:
            e = estimate_score(known, new[a.items], a, m, alpha=0.1)
            errs[m].append(e.value - truth)
            if m in cover:
                cover[m].append(e.low <= truth <= e.high)
    for m in ("mean", "aipw"):
        err = np.array(errs[m])
        assert abs(err.mean()) < 4 * err.std() / np.sqrt(len(err)) + 1e-3, m  # unbiased within MC error
        assert np.mean(cover[m]) >= 0.84, (m, np.mean(cover[m]))  # 90% nominal; MC s.e. 0.025
    reg = np.array(errs["regression"])
    assert reg.mean() < -4 * reg.std() / np.sqrt(len(reg))  # biased low: it cannot extrapolate
    assert abs(reg.mean()) > 2 * abs(np.mean(errs["aipw"]))


def test_aipw_is_narrower_than_mean_when_the_known_systems_predict():
    Y = two_pl(continuous=True, seed=2)
    known, new = KnownSystems(Y[1:]), Y[5]
    w = {"mean": [], "aipw": []}
    for seed in range(40):
        a = select_anchors(known.Yk, 80, "random", seed=seed)
        for m in w:
            w[m].append(estimate_score(known, new[a.items], a, m).width)
    assert np.mean(w["aipw"]) < 0.8 * np.mean(w["mean"])


def test_cochrans_rule_sends_skewed_small_samples_to_the_betting_interval():
    y = np.r_[np.ones(2), np.zeros(18)]
    assert not cochran_ok(y, 20) and cochran_ok(np.linspace(0, 1, 50), 50)
    Yk = np.random.default_rng(0).random((10, 300)) ** 4
    a = select_anchors(Yk, 20, "random", seed=0)
    e = estimate_score(KnownSystems(Yk, bounds=(0.0, 1.0)), y, a, "mean")  # the betting interval needs the range
    assert e.details["interval_rule"] == "betting" and e.low >= 0 and e.high <= 1 and e.low <= e.value <= e.high


def test_ridge_leave_one_out_residuals_are_exact():
    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(25, 8)), rng.normal(size=25)
    fit = ridge_fit(X, y)
    for i in range(25):
        keep = np.arange(25) != i
        Xi, yi = X[keep], y[keep]
        xm, ym = Xi.mean(0), yi.mean()
        A = np.vstack([Xi - xm, np.sqrt(fit.alpha) * np.eye(8)])
        coef = np.linalg.lstsq(A, np.r_[yi - ym, np.zeros(8)], rcond=None)[0]
        assert y[i] - (ym + (X[i] - xm) @ coef) == pytest.approx(fit.loo[i], abs=1e-8)


def test_pirt_with_every_item_judged_is_the_mean_and_gpirt_weight_is_a_grid_value():
    Y = two_pl(S=12, M=120, seed=3)
    known = KnownSystems(Y[1:])
    a = select_anchors(known.Yk, 119, "random", seed=0)
    full = type(a)(np.arange(120), np.full(120, 1 / 120), np.ones(120), None, "given", 0, 120)
    assert estimate_score(known, Y[0], full, "pirt-1d").value == pytest.approx(Y[0].mean())
    ap = select_anchors(known.Yk, 20, "anchor-points", seed=0)
    g = estimate_score(known, Y[0, ap.items], ap, "gpirt-1d")
    assert 0 <= g.details["lam"] <= 1 and g.low is None and g.kind == "model-based"


# ------------------------------------------------------------------------------------------- files
def test_anchor_file_round_trip_and_errors(tmp_path):
    Yk = two_pl(S=8, M=60)[1:]
    ids = [f"q{i}" for i in range(60)]
    a = select_anchors(Yk, 12, "stratified", seed=1)
    f = write_anchors(tmp_path / "a.jsonl", a, ids)
    b = read_anchors(f, ids)
    assert (b.items == a.items).all() and np.allclose(b.weights, a.weights) and np.allclose(b.inclusion, a.inclusion)
    assert b.stratum_sizes == a.stratum_sizes
    plain = tmp_path / "plain.jsonl"
    plain.write_text('{"item_id": "q1"}\n{"item_id": "q7"}\n{"item_id": "q9"}\n')
    g = read_anchors(plain, ids)
    assert g.design == "given" and np.allclose(g.inclusion, 3 / 60)
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"item_id": "q1"}\n{"item_id": "nope"}\n')
    with pytest.raises(DataError, match=r"line 2.*'nope'"):
        read_anchors(bad, ids)
    bad.write_text('{"item_id": "q1"}\n{"item_id": "q1"}\n')
    with pytest.raises(DataError, match="listed twice"):
        read_anchors(bad, ids)
    with pytest.raises(DataError, match="picked from 60 items but|picked from 60 items, the data has 61"):
        read_anchors(f, ids + ["extra"])


def test_opencompass_reader_small_and_errors(tmp_path):
    f = tmp_path / "combine.csv"
    f.write_text("1,0,1,1\n0,0,1,0\n1,1,1,1\n")
    pool = read_opencompass(f)
    assert pool.systems == ("model_0", "model_1", "model_2") and pool.is_human("correct")
    assert pool.scores["correct"][:, 1].tolist() == [0.0, 0.0, 1.0, 0.0]
    f.write_text("1,0,1\n0,2,1\n")
    with pytest.raises(DataError, match="line 2, column 2"):
        read_opencompass(f)
    f.write_text("1,0,1\n0,1\n")
    with pytest.raises(DataError, match="different numbers of values"):
        read_opencompass(f)


# ----------------------------------------------------------------------------------- command line
def long_table(path, Y, partial=None):
    """A long table: item_id, system, output, score, domain; ``partial`` = (system, items it has)."""
    lines = ["item_id,system,output,score,domain"]
    for s in range(Y.shape[0]):
        for i in range(Y.shape[1]):
            name = f"sys{s}"
            if partial and name == partial[0] and i not in partial[1]:
                continue
            lines.append(f"q{i},{name},out,{Y[s, i]:.4f},{'easy' if i % 2 else 'hard'}")
    path.write_text("\n".join(lines) + "\n")
    return path


def test_new_system_judged_on_the_anchors_only(tmp_path, capsys):
    Y = two_pl(S=10, M=150, seed=4, continuous=True)
    full = long_table(tmp_path / "full.csv", Y)
    anchors = tmp_path / "anchors.jsonl"
    assert main(["select", "anchors", "--data", str(full), "--exclude", "sys0", "--budget", "40", "--method",
                 "random", "--seed", "2", "--out", str(anchors)]) == 0
    picked = {int(json.loads(ln)["item_id"][1:]) for ln in anchors.read_text().splitlines()}
    partial = long_table(tmp_path / "partial.csv", Y, ("sys0", picked))  # the new system: anchors only
    capsys.readouterr()
    assert main(["estimate", "--data", str(partial), "--system", "sys0", "--items", str(anchors), "--method",
                 "mean,aipw,regression,pirt,gpirt", "--out", str(tmp_path / "est")]) == 0
    out = capsys.readouterr().out
    assert out.count("assumes:") == 5 and "not used" not in out  # no full row to compare with
    res = json.loads((tmp_path / "est" / "estimate.json").read_text())
    kinds = {e["method"]: (e["kind"], e["interval"]) for e in res["estimates"]}
    assert kinds["mean"][0] == kinds["aipw"][0] == "design-based" and kinds["gpirt"][1] is None
    direct = Y[0, sorted(picked)].mean()
    mean = next(e for e in res["estimates"] if e["method"] == "mean")
    assert mean["estimate"] == pytest.approx(round(direct, 4), abs=1e-4)  # the table holds 4 decimals
    assert res["full_score_in_data"] is None


def test_estimate_errors_name_the_system_and_the_item(tmp_path, capsys):
    Y = two_pl(S=6, M=60, seed=5)
    data = long_table(tmp_path / "t.csv", Y, ("sys0", {1, 2}))
    anchors = tmp_path / "a.jsonl"
    anchors.write_text('{"item_id": "q1"}\n{"item_id": "q2"}\n{"item_id": "q3"}\n')
    capsys.readouterr()
    assert main(["estimate", "--data", str(data), "--system", "sys9", "--items", str(anchors), "--out",
                 str(tmp_path / "o")]) == 2
    assert "sys9" in capsys.readouterr().err
    assert main(["estimate", "--data", str(data), "--system", "sys0", "--items", str(anchors), "--out",
                 str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert "sys0" in err and "'q3'" in err


def test_bench_estimate_command_writes_both_splits_and_groups(tmp_path, capsys):
    Y = two_pl(S=8, M=120, seed=6, continuous=True)
    data = long_table(tmp_path / "t.csv", Y)
    out = tmp_path / "b"
    assert main(["--quiet", "bench", "estimate", "--data", str(data), "--budgets", "10,30", "--seeds", "2",
                 "--methods", "mean,aipw,regression,gpirt-1d", "--by", "domain", "--out", str(out)]) == 0
    res = json.loads((out / "results.json").read_text())
    assert {r["split"] for r in res["table"]} == {"all", "extrapolation"}
    assert res["splits"]["extrapolation"] == ["sys0", "sys1"]  # the best quarter of 8 (sys0 is the best)
    assert len(res["records"]) == (8 + 2) * 2 * 2 * 4
    assert (out / "estimate.png").is_file() and (out / "by_easy.png").is_file() and set(res["groups"]) == {"hard", "easy"}
    assert "(peer)" in (out / "table.txt").read_text()


# ------------------------------------------------------------------------------------------ real data
def test_alpacaeval_response_matrix_is_the_preference_table():
    need("alpaca-eval/preferences_all_annotators.csv.gz")
    R = response_matrix("alpaca-eval")
    assert len(R.systems) == 57 and 790 <= R.n_items <= 805 and R.unit == "points"
    assert 0 <= R.Y.min() and R.Y.max() <= 1 and "left out" in R.notes[0]
    with pytest.raises(DataError, match="Did you mean"):
        R.index("gpt4_gamd")


def test_opencompass_and_wmt_real_shapes():
    need("opencompass-irt/data/combine.csv")
    R = response_matrix("opencompass-irt")
    assert R.Y.shape == (12, 41871) and R.binary and R.item_ids[0] == "ARC-C/0"
    assert len(R.groups("benchmark")) == 11 and R.group("benchmark", "MMLU").n_items == 14042
    need("wmt23/mt-metrics-eval-v2/wmt23/human-scores/en-de.mqm.seg.score")
    W = response_matrix("wmt23/en-de", metric="mqm")
    assert W.Y.shape == (12, 460) and W.unit == "mqm"


def test_anchor_options_on_another_selector_are_refused(capsys):
    capsys.readouterr()
    assert main(["select", "random", "--data", "demo", "--budget", "5", "--method", "irt", "--out", "x.jsonl"]) == 2
    assert "--method belongs to `evalsift select anchors`" in capsys.readouterr().err


def test_fit_abilities_finds_the_map_on_steep_items():
    """estimators.fit_abilities (main's pirt): a plain Newton step swung between the clip limits on steep items
    (44 of 50 correct at a = 5, b = 1 ended at -8); the bracketed solve finds the MAP the bisection finds."""
    from types import SimpleNamespace

    from scipy.optimize import brentq

    from evalsift.estimate.estimators import fit_abilities

    for a_, b_ in ((5.0, 1.0), (8.0, 0.5), (1.0, 0.0), (10.0, 0.0)):
        irt = SimpleNamespace(discrimination=np.full(50, a_), difficulty=np.full(50, b_))
        y = np.r_[np.ones(44), np.zeros(6)][None, :]
        theta, info = fit_abilities(irt, np.arange(50), y)

        def grad(t):
            p = 1 / (1 + np.exp(-a_ * (t - b_)))
            return float((a_ * (y[0] - p)).sum() - t)

        assert abs(theta[0] - brentq(grad, -8, 8, xtol=1e-12)) < 1e-6, (a_, b_, theta)
        assert info[0] >= 1.0


def test_estimate_without_method_is_still_aipw_alone(tmp_path, capsys):
    """The one-shot `estimate` without --method estimates with aipw only, as before issue 44 made --method's
    default depend on --by (with --by: shared-offset,separate)."""
    anchors = tmp_path / "a.jsonl"
    assert main(["--quiet", "select", "anchors", "--data", "demo", "--metric", "human", "--exclude", "C", "--budget",
                 "20", "--out", str(anchors)]) == 0
    assert main(["--quiet", "estimate", "--data", "demo", "--metric", "human", "--system", "C", "--items",
                 str(anchors), "--out", str(tmp_path / "e")]) == 0
    res = json.loads((tmp_path / "e" / "estimate.json").read_text())
    assert [e["method"] for e in res["estimates"]] == ["aipw"]
