"""Issue 33, full-benchmark estimation from a few judged items: the anchor designs' weights and inclusion
probabilities, the design-based promise (unbiased, intervals that cover) checked by Monte Carlo on
synthetic data whose truth is known -- also when the new system beats every known one --, the model-based
estimators' exact cases, the anchor file and opencompass reader errors, the real response matrices
(AlpacaEval, opencompass-irt, WMT23) and the ``select anchors`` / ``estimate`` / ``bench estimate``
commands end to end.

Four tests pin bugs found while writing this file, now fixed: a one-value judged sample, p-IRT beyond the
known systems' range, AlpacaEval's recorded draws, the opencompass error's value."""

import csv
import gzip
import json
from collections import defaultdict

import numpy as np
import pytest
from scipy.stats import spearmanr

from evalsift.bench.estimate import held_out_cases, parse_method
from evalsift.cli import main
from evalsift.errors import DataError, ParameterError
from evalsift.estimate import (KnownSystems, ResponseMatrix, estimate_score, read_anchors, response_matrix,
                               select_anchors, write_anchors)
from evalsift.estimate.estimators import ALPHAS, LAMBDA_GRID, ridge_fit
from evalsift.io.opencompass import read_opencompass

from _data import need

ALPACA = "alpaca-eval/preferences_all_annotators.csv.gz"
ALPACA_JUDGE = "weighted_alpaca_eval_gpt4_turbo"
NEW = "claude-2"  # an AlpacaEval model with a preference on every item, neither the best nor the worst


def simulate_2pl(S=30, M=400, seed=0, continuous=False, top_shift=0.0):
    """S systems x M items from a 2PL, rows sorted from the most able system down; ``top_shift`` raises
    the best system's ability (so it is better than every other); ``continuous``: the response
    probability plus noise, clipped to [0, 1], instead of a Bernoulli draw."""
    rng = np.random.default_rng(seed)
    theta = np.sort(rng.normal(size=S))[::-1].copy()
    theta[0] += top_shift
    a, b = np.exp(rng.normal(0, 0.3, M)), rng.normal(0, 1, M)
    P = 1 / (1 + np.exp(-a * (theta[:, None] - b)))
    if continuous:
        return np.clip(P + rng.normal(0, 0.1, P.shape), 0, 1)
    return (rng.random(P.shape) < P).astype(float)


def monte_carlo(Y, new, design, methods, *, n=50, draws=300, alpha=0.1):
    """Hold out row ``new`` of ``Y``; ``draws`` independent designs of ``n`` items over the other rows.
    Returns (truth, {method: errors}, {method: covered}, {method: widths})."""
    known = KnownSystems(np.delete(Y, new, axis=0), bounds=(0.0, 1.0))  # scores in [0, 1] by construction
    y, truth = Y[new], float(Y[new].mean())
    err, cov, wid = defaultdict(list), defaultdict(list), defaultdict(list)
    for d in range(draws):
        a = select_anchors(known.Yk, n, design, seed=d)
        for m in methods:
            e = estimate_score(known, y[a.items], a, m, alpha=alpha)
            err[m].append(e.value - truth)
            if e.low is not None:
                cov[m].append(e.low <= truth <= e.high)
                wid[m].append(e.high - e.low)
    return truth, {m: np.array(v) for m, v in err.items()}, {m: np.array(v) for m, v in cov.items()}, \
        {m: np.array(v) for m, v in wid.items()}


def mc_se(x):
    """The Monte Carlo standard error of the mean of ``x``."""
    return float(np.std(x, ddof=1) / np.sqrt(len(x)))


def long_table(path, Y, column=None):
    """A long table (item_id, system, output, score[, topic]) of the matrix ``Y`` (systems x items)."""
    head = "item_id,system,output,score" + (",topic" if column else "")
    lines = [head]
    for s in range(Y.shape[0]):
        for i in range(Y.shape[1]):
            lines.append(f"q{i},sys{s},output {i} of {s},{Y[s, i]:.6f}" + (f",{column(i)}" if column else ""))
    path.write_text("\n".join(lines) + "\n")
    return path


# ------------------------------------------------------------------------------------------ 1. designs
@pytest.mark.parametrize("n", [1, 50, 400])
def test_random_design_is_a_uniform_draw_with_inclusion_n_over_M(n):
    Yk = simulate_2pl(S=12, M=400, seed=1)
    a = select_anchors(Yk, n, "random", seed=7)
    assert a.probability_design and a.design == "random" and a.pool_size == 400 and a.n == n
    assert len(set(a.items.tolist())) == n and a.items.min() >= 0 and a.items.max() < 400
    assert np.allclose(a.inclusion, n / 400) and np.allclose(a.weights, 1 / n)
    assert a.weights.sum() == pytest.approx(1.0, abs=1e-12)
    assert np.allclose(a.weights, 1 / (400 * a.inclusion))  # w = 1 / (M pi)
    if n == 400:
        assert sorted(a.items.tolist()) == list(range(400))


@pytest.mark.parametrize("M, n", [(400, 50), (403, 37), (250, 12), (97, 96)])
def test_stratified_design_weights_inclusion_and_strata(M, n):
    Yk = simulate_2pl(S=15, M=M, seed=2, continuous=True)
    a = select_anchors(Yk, n, "stratified", seed=5)
    assert a.probability_design and a.n == n and len(set(a.items.tolist())) == n
    H = max(1, min(10, n // 5, M // 2))
    assert sorted(a.stratum_sizes) == list(range(H)) and sum(a.stratum_sizes.values()) == M
    assert max(a.stratum_sizes.values()) - min(a.stratum_sizes.values()) <= 1  # equal-size strata
    assert a.weights.sum() == pytest.approx(1.0, abs=1e-12)
    item_mean = Yk.mean(axis=0)
    for h, Mh in a.stratum_sizes.items():
        in_h = a.strata == h
        nh = int(in_h.sum())
        assert nh >= 2
        assert abs(nh - n * Mh / M) < 1 + 1e-9 or nh == Mh  # proportional allocation
        assert np.allclose(a.inclusion[in_h], nh / Mh)
        assert np.allclose(a.weights[in_h], Mh / (M * nh))
        if h + 1 in a.stratum_sizes:  # stratum 0 is the easiest: every pick there scores at least as high
            assert item_mean[a.items[in_h]].min() >= item_mean[a.items[a.strata == h + 1]].max()


@pytest.mark.parametrize("design", ["random", "stratified"])
def test_probability_designs_repeat_with_a_seed_and_differ_across_seeds(design):
    Yk = simulate_2pl(S=10, M=300, seed=3)
    a, b = select_anchors(Yk, 40, design, seed=11), select_anchors(Yk, 40, design, seed=11)
    assert a.items.tolist() == b.items.tolist() and np.array_equal(a.weights, b.weights)
    others = [set(select_anchors(Yk, 40, design, seed=s).items.tolist()) for s in (12, 13, 14)]
    assert all(o != set(a.items.tolist()) for o in others)
    assert len({frozenset(o) for o in others}) == 3


def test_anchor_points_weights_are_cluster_shares():
    Yk = simulate_2pl(S=20, M=300, seed=4, continuous=True)
    a = select_anchors(Yk, 30, "anchor-points", seed=0)
    assert not a.probability_design and a.inclusion is None and a.strata is None
    assert 20 <= a.n <= 30 and len(set(a.items.tolist())) == a.n
    counts = a.weights * 300  # each anchor carries the items of its cluster(s): whole numbers, 300 in all
    assert np.allclose(counts, np.round(counts)) and (np.round(counts) >= 1).all()
    assert a.weights.sum() == pytest.approx(1.0, abs=1e-12)
    again = select_anchors(Yk, 30, "anchor-points", seed=0)
    assert again.items.tolist() == a.items.tolist() and np.array_equal(again.weights, a.weights)
    # binary scores of 3 systems: at most 2^3 distinct response vectors, so at most 8 anchors
    few = select_anchors((Yk[:3] > 0.5).astype(float), 20, "anchor-points", seed=0)
    assert 1 <= few.n <= 8 and len(set(few.items.tolist())) == few.n
    assert few.weights.sum() == pytest.approx(1.0, abs=1e-12)
    assert len({tuple(v) for v in (Yk[:3] > 0.5).astype(float).T[few.items]}) == few.n


def test_irt_design_returns_n_distinct_items_with_equal_weights():
    Yk = simulate_2pl(S=15, M=200, seed=5)
    a = select_anchors(Yk, 25, "irt", seed=0)
    assert a.design == "irt" and a.n == 25 and len(set(a.items.tolist())) == 25
    assert a.inclusion is None and not a.probability_design and np.allclose(a.weights, 1 / 25)
    assert a.items.min() >= 0 and a.items.max() < 200


@pytest.mark.parametrize("design", ["random", "stratified", "anchor-points", "irt"])
@pytest.mark.parametrize("budget", [0, -3, 61])
def test_budget_outside_one_to_M_is_a_parameter_error_naming_budget(design, budget):
    Yk = simulate_2pl(S=6, M=60, seed=6)
    with pytest.raises(ParameterError, match=r"--budget") as e:
        select_anchors(Yk, budget, design)
    assert "60 items" in str(e.value)


def test_unknown_design_and_incomplete_matrix_are_refused():
    Yk = simulate_2pl(S=6, M=60, seed=6)
    with pytest.raises(ParameterError, match="Did you mean 'stratified'"):
        select_anchors(Yk, 10, "stratifed")
    Yk[2, 5] = np.nan
    with pytest.raises(DataError, match="no missing score"):
        select_anchors(Yk, 10, "random")


# ------------------------------------------------------------------- 2. the design-based promise
@pytest.mark.parametrize("continuous, design", [(False, "random"), (True, "random"), (True, "stratified")])
def test_mean_and_aipw_are_unbiased_and_their_90pct_intervals_cover(continuous, design):
    """A held-out system in the middle of 30; 300 independent draws of 50 of 400 items. Unbiased: the
    mean error is within 3.5 Monte Carlo standard errors of 0 (about 0.0025 on a [0, 1] scale).
    Coverage: at least 0.85 where 0.90 is promised (the MC standard error of a coverage of 300 draws is
    0.017, so 0.85 is 3 standard errors below nominal)."""
    Y = simulate_2pl(seed=0, continuous=continuous)
    truth, err, cov, wid = monte_carlo(Y, 15, design, ("mean", "aipw"))
    assert 0.2 < truth < 0.8
    for m in ("mean", "aipw"):
        assert len(err[m]) == 300 and len(cov[m]) == 300
        assert abs(err[m].mean()) <= 3.5 * mc_se(err[m]), (m, err[m].mean(), mc_se(err[m]))
        assert cov[m].mean() >= 0.85, (m, cov[m].mean())
        assert (wid[m] > 0).all()
    if continuous and design == "random":  # the known systems predict the new one: aipw is much the sharper
        assert wid["aipw"].mean() < 0.7 * wid["mean"].mean()
        assert np.sqrt((err["aipw"] ** 2).mean()) < 0.7 * np.sqrt((err["mean"] ** 2).mean())


@pytest.mark.parametrize("continuous", [False, True])
def test_extrapolation_aipw_stays_unbiased_while_regression_is_biased_down(continuous):
    """The held-out system is better than every known one (Zhang, Dorner & Hardt's hard case)."""
    Y = simulate_2pl(seed=1, continuous=continuous, top_shift=1.5)
    assert Y[0].mean() > Y[1:].mean(axis=1).max()
    _, err, _, _ = monte_carlo(Y, 0, "random", ("aipw", "regression"))
    aipw, reg = err["aipw"], err["regression"]
    assert abs(aipw.mean()) <= 3.5 * mc_se(aipw), (aipw.mean(), mc_se(aipw))
    assert reg.mean() < -8 * mc_se(reg), (reg.mean(), mc_se(reg))  # biased low, far beyond MC error
    assert abs(reg.mean()) > 5 * max(abs(aipw.mean()), mc_se(aipw))
    assert (reg < 0).mean() > 0.9  # nearly every regression estimate falls short


@pytest.mark.parametrize("method", ["mean", "aipw"])
def test_a_constant_judged_sample_still_gets_an_interval_of_positive_width(method):
    Yk = simulate_2pl(S=10, M=300, seed=7)[1:]
    a = select_anchors(Yk, 40, "random", seed=0)
    e = estimate_score(KnownSystems(Yk, bounds=(0.0, 1.0)), np.ones(40), a, method, alpha=0.1)
    assert e.value == pytest.approx(1.0)
    assert e.low < e.high  # the 260 unjudged items may hold zeros: the interval cannot be a point
    e = estimate_score(Yk, np.ones(40), a, method, alpha=0.1)  # no stated range: nothing bounds them
    assert e.low is None and "no_interval" in e.details


# ------------------------------------------------------------------ 3. aipw needs a random design
@pytest.mark.parametrize("design", ["anchor-points", "irt"])
def test_aipw_with_a_deterministic_design_is_refused(design):
    Y = simulate_2pl(S=12, M=150, seed=8, continuous=True)
    a = select_anchors(Y[1:], 20, design, seed=0)
    with pytest.raises(ParameterError, match="needs a random design") as e:
        estimate_score(Y[1:], Y[0, a.items], a, "aipw")
    assert design in str(e.value)
    with pytest.raises(ParameterError, match="random design"):
        parse_method(f"aipw@{design}")
    m = estimate_score(Y[1:], Y[0, a.items], a, "mean")  # the plain weighted mean: tinyBenchmarks' anchor estimate
    assert m.value == pytest.approx(float(a.weights @ Y[0, a.items])) and m.low is None and m.kind == "model-based"


# ------------------------------------------------------------------------------------ 4. ridge LOO
@pytest.mark.parametrize("n, p", [(25, 8), (14, 30)])
def test_ridge_loo_residuals_equal_brute_force_refits(n, p):
    rng = np.random.default_rng(n * p)
    X = rng.normal(size=(n, p))
    y = X[:, :3] @ np.array([1.0, -0.5, 0.25]) + rng.normal(0, 0.5, n)

    def refit(Xt, yt, alpha):  # ridge with an unpenalised intercept: lstsq on the augmented system
        xm, ym = Xt.mean(axis=0), yt.mean()
        A = np.vstack([Xt - xm, np.sqrt(alpha) * np.eye(p)])
        coef = np.linalg.lstsq(A, np.r_[yt - ym, np.zeros(p)], rcond=None)[0]
        return lambda Z: ym + (Z - xm) @ coef

    def loo(alpha):
        out = np.empty(n)
        for i in range(n):
            keep = np.arange(n) != i
            out[i] = y[i] - refit(X[keep], y[keep], alpha)(X[i:i + 1])[0]
        return out

    fit = ridge_fit(X, y)
    assert fit.alpha in ALPHAS
    np.testing.assert_allclose(fit.loo, loo(fit.alpha), rtol=0, atol=1e-8)
    np.testing.assert_allclose(fit.predict(X), refit(X, y, fit.alpha)(X), rtol=0, atol=1e-8)
    brute = {a: float(np.mean(loo(a) ** 2)) for a in ALPHAS}  # the chosen penalty has the least LOO error
    assert brute[fit.alpha] <= min(brute.values()) * (1 + 1e-9)


# --------------------------------------------------------------------------- 5. pirt and gpirt
@pytest.mark.parametrize("continuous,method", [(False, "pirt"), (False, "pirt-1d"), (True, "pirt-1d")])
def test_pirt_with_every_item_judged_is_the_plain_mean(continuous, method):  # the paper's: binary only (a 5 s fit)
    Y = simulate_2pl(S=15, M=150, seed=9, continuous=continuous)
    known = KnownSystems(Y[1:])
    a = select_anchors(known.Yk, 150, "random", seed=0)  # n = M: every item judged
    e = estimate_score(known, Y[3, a.items], a, method)
    assert e.value == pytest.approx(Y[3].mean(), abs=1e-12)
    if method == "pirt-1d":  # ours: a normal interval, of width 0 once every item is judged
        assert e.low == pytest.approx(e.value, abs=1e-12) and e.high == pytest.approx(e.value, abs=1e-12)
    else:  # the paper's gives none
        assert e.low is None and e.high is None and e.details["dims"] in (5, 10)
    assert e.kind == "model-based" and "2PL" in e.assumption


def test_pirt_orders_systems_and_gpirt_mixes_anchor_and_pirt():
    Y = simulate_2pl(S=40, M=300, seed=10)
    known_rows, new_rows = np.arange(0, 40, 2), np.arange(1, 40, 2)
    known = KnownSystems(Y[known_rows])
    ap = select_anchors(known.Yk, 30, "anchor-points", seed=0)
    pirt = np.array([estimate_score(known, Y[s, ap.items], ap, "pirt-1d").value for s in new_rows])
    truth = Y[new_rows].mean(axis=1)
    assert spearmanr(pirt, truth).statistic > 0.9
    assert np.abs(pirt - truth).mean() < 0.08  # a plain mean of 30 random items errs by about 0.07
    for s in new_rows[:4]:
        g = estimate_score(known, Y[s, ap.items], ap, "gpirt-1d")
        lam = g.details["lam"]
        assert 0.0 <= lam <= 1.0 and lam in LAMBDA_GRID
        p = estimate_score(known, Y[s, ap.items], ap, "pirt-1d").value
        assert g.value == pytest.approx(lam * float(ap.weights @ Y[s, ap.items]) + (1 - lam) * p, abs=1e-12)
        assert g.low is None and g.high is None and g.to_dict()["interval"] is None


@pytest.mark.parametrize("method", ["pirt", "pirt-1d"])
def test_pirt_with_every_item_judged_is_the_mean_outside_the_known_range(method):
    rng = np.random.default_rng(1)
    Z = -rng.gamma(1.0, 3.0, (10, 100))  # MQM-like: 0 is perfect, lower is worse
    Z[0] *= 3  # the new system is worse than every known one on many items
    assert Z[0].min() < Z[1:].min()
    known = KnownSystems(Z[1:])
    a = select_anchors(known.Yk, 100, "random", seed=0)
    assert estimate_score(known, Z[0, a.items], a, method).value == pytest.approx(Z[0].mean(), abs=1e-9)


# ------------------------------------------------------------------------------ 6. anchor files
@pytest.fixture
def item_ids():
    return [f"q{i}" for i in range(60)]


def test_anchor_file_round_trip_keeps_the_design(tmp_path, item_ids):
    Yk = simulate_2pl(S=8, M=60, seed=11)
    a = select_anchors(Yk, 15, "stratified", seed=2)
    f = write_anchors(tmp_path / "sub" / "anchors.jsonl", a, item_ids)
    rows = [json.loads(ln) for ln in f.read_text().splitlines()]
    assert len(rows) == 15 and {r["design"] for r in rows} == {"stratified"} and {r["pool_size"] for r in rows} == {60}
    b = read_anchors(f, item_ids)
    assert b.items.tolist() == a.items.tolist() and np.allclose(b.weights, a.weights)
    assert np.allclose(b.inclusion, a.inclusion) and b.strata.tolist() == a.strata.tolist()
    assert b.stratum_sizes == a.stratum_sizes and b.design == "stratified" and b.seed == 2
    y = Yk[0, a.items]
    assert estimate_score(Yk[1:], y, b, "mean").value == pytest.approx(estimate_score(Yk[1:], y, a, "mean").value)


def test_anchor_file_errors_name_the_item_the_line_and_the_pool(tmp_path, item_ids):
    f = tmp_path / "a.jsonl"
    f.write_text('{"item_id": "q1"}\n{"item_id": "q2"}\n{"item_id": "zzz"}\n')
    with pytest.raises(DataError, match=r"line 3: item 'zzz' is not among the 60 items"):
        read_anchors(f, item_ids)
    f.write_text('{"item_id": "q1"}\n{"item_id": "q4"}\n{"item_id": "q1"}\n')
    with pytest.raises(DataError, match=r"item 'q1' is listed twice"):
        read_anchors(f, item_ids)
    f.write_text('{"item_id": "q1"}\n{"weight": 0.5}\n')
    with pytest.raises(DataError, match=r"line 2 has no item_id"):
        read_anchors(f, item_ids)
    a = select_anchors(simulate_2pl(S=5, M=60, seed=12), 10, "random", seed=0)
    g = write_anchors(tmp_path / "g.jsonl", a, item_ids)
    with pytest.raises(DataError, match=r"picked from 60 items, the data has 61 complete items"):
        read_anchors(g, item_ids + ["q60"])
    with pytest.raises(DataError, match="picked from 60 items but the known systems have 61"):
        estimate_score(np.zeros((3, 61)), np.zeros(10), a, "mean")


def test_a_plain_item_list_is_read_as_a_uniform_draw(tmp_path, item_ids):
    f = tmp_path / "plain.jsonl"
    f.write_text("".join(json.dumps({"item_id": f"q{i}"}) + "\n" for i in (3, 10, 11, 40, 59)))
    a = read_anchors(f, item_ids)
    assert a.design == "given" and a.items.tolist() == [3, 10, 11, 40, 59] and a.pool_size == 60
    assert a.probability_design and np.allclose(a.inclusion, 5 / 60) and np.allclose(a.weights, 1 / 5)
    assert a.strata is None
    Y = simulate_2pl(S=6, M=60, seed=13, continuous=True)
    e = estimate_score(Y[1:], Y[0, a.items], a, "mean")
    assert e.value == pytest.approx(Y[0, a.items].mean()) and e.kind == "design-based"


# ---------------------------------------------------------------------------- 7. opencompass
def test_opencompass_reader_on_a_small_matrix(tmp_path):
    f = tmp_path / "combine.csv"
    f.write_text("1,0,1,1,0\n0,0,1,0,1\n\n1,1,1,1,1\n")
    pool = read_opencompass(f)
    assert pool.systems == ("model_0", "model_1", "model_2") and pool.item_ids == ("0", "1", "2", "3", "4")
    assert list(pool.metrics) == ["correct"] and pool.is_human("correct")
    assert pool.scores["correct"].shape == (5, 3)  # items x systems
    assert pool.scores["correct"][:, 1].tolist() == [0.0, 0.0, 1.0, 0.0, 1.0]  # model_1's row
    assert list(pool.metadata["benchmark"]) == ["all"] * 5
    folder = tmp_path / "oc"
    (folder / "data").mkdir(parents=True)
    (folder / "data" / "combine.csv").write_text("0,1\n1,1\n")
    assert read_opencompass(folder).scores["correct"].tolist() == [[0.0, 1.0], [1.0, 1.0]]
    R = response_matrix(pool)
    assert R.metric == "correct" and R.binary and R.full_scores().tolist() == pytest.approx([0.6, 0.4, 1.0])
    with pytest.raises(DataError, match=r"'model_9' is not in .*Systems: model_0, model_1, model_2"):
        response_matrix(pool, keep_partial=["model_9"])


def test_opencompass_reader_errors_name_the_line_and_column(tmp_path):
    f = tmp_path / "combine.csv"
    f.write_text("1,0,1\n0,1,1\n1,0.5,0\n")
    with pytest.raises(DataError, match=r"line 3, column 2 is .*0\.5.*; expected 0 or 1"):
        read_opencompass(f)
    for text, message in (("1,0,1\n0,yes,1\n", "not a number"), ("1,0,1\n0,1,1\n0,1\n", r"line 1: 3, line 3: 2"),
                          ("\n\n", "empty")):
        f.write_text(text)
        with pytest.raises(DataError, match=message):
            read_opencompass(f)


def test_opencompass_bad_value_message_shows_the_plain_value(tmp_path):
    f = tmp_path / "combine.csv"
    f.write_text("1,0,1\n1,0.5,0\n")
    with pytest.raises(DataError, match=r"line 2, column 2 is 0\.5; expected 0 or 1"):
        read_opencompass(f)


def test_opencompass_real_release():
    path = need("opencompass-irt/data/combine.csv")
    pool = read_opencompass(path)
    assert len(pool.systems) == 12 and pool.n_items == 41871 and pool.systems[-1] == "model_11"
    assert pool.item_ids[0] == "ARC-C/0" and pool.item_ids[295] == "BBH/0" and pool.item_ids[-1] == "TheoremQA/799"
    bench = list(pool.metadata["benchmark"])
    assert len(set(bench)) == 11 and bench.count("MMLU") == 14042
    raw = np.loadtxt(path, delimiter=",", ndmin=2)  # independent read of the file
    assert raw.shape == (12, 41871)
    np.testing.assert_array_equal(pool.scores["correct"], raw.T)
    R = response_matrix(pool)
    assert R.Y.shape == (12, 41871) and R.binary and R.unit == "points"
    assert R.group("benchmark", "MMLU").n_items == 14042
    np.testing.assert_allclose(R.group("benchmark", "MMLU").full_scores(), raw[:, 27029:41071].mean(axis=1))


# ------------------------------------------------------------------------- 8. response matrices
@pytest.fixture(scope="module")
def alpaca():
    need(ALPACA)
    return response_matrix("alpaca-eval")


def alpaca_by_hand():
    """{system: {item: preference - 1}} of the weighted judge, read with the csv module (the later of two
    rows for the same model and item counts), and the items of the table."""
    prefs, items = defaultdict(dict), set()
    with gzip.open(need(ALPACA), "rt", newline="") as fh:
        for r in csv.DictReader(fh):
            if r["annotator_config"] != ALPACA_JUDGE or r["generator_1"] == r["generator_2"]:
                continue
            items.add(r["instruction_idx"])
            if r["preference"].strip():
                prefs[r["generator_2"]][r["instruction_idx"]] = float(r["preference"]) - 1.0
    return prefs, items


def test_alpacaeval_matrix_is_the_weighted_judges_preferences(alpaca):
    R = alpaca
    prefs, items = alpaca_by_hand()
    complete = {i for i in items if all(i in p for p in prefs.values())}
    assert len(R.systems) == 57 and set(R.systems) == set(prefs)
    assert R.n_items >= 790 and set(R.item_ids) == complete
    assert R.metric == ALPACA_JUDGE and R.unit == "points" and R.scale == 100
    assert np.isfinite(R.Y).all() and R.Y.min() >= 0 and R.Y.max() <= 1
    left = len(items) - len(complete)
    assert left > 0 and any(f"{left} of {len(items)} items" in n and "left out" in n for n in R.notes)
    by_hand = 100 * np.mean([prefs[NEW][i] for i in complete])
    assert R.full_scores()[R.index(NEW)] * 100 == pytest.approx(by_hand, abs=1e-9)
    assert set(R.columns["dataset"]) >= {"helpful_base", "koala", "oasst", "selfinstruct", "vicuna"}


def test_unknown_system_names_it_and_suggests(alpaca):
    with pytest.raises(DataError, match=r"'claude-2\.2' is not in alpaca-eval\. Did you mean") as e:
        alpaca.index("claude-2.2")
    assert "claude-2.1" in str(e.value)
    with pytest.raises(DataError, match=r"'gpt4_gamd' is not in .*Did you mean 'gpt4_gamed'"):
        alpaca.rows(["claude-2", "gpt4_gamd"])


def test_wmt23_mqm_matrix_is_in_the_metrics_unit():
    need("wmt23/mt-metrics-eval-v2/wmt23/human-scores/en-de.mqm.seg.score")
    W = response_matrix("wmt23/en-de", metric="mqm")
    assert W.Y.shape == (12, 460) and W.unit == "mqm" and W.scale == 1.0 and not W.binary
    assert W.Y.max() <= 0 and W.Y.min() < -1 and np.isfinite(W.Y).all()


def test_response_matrix_rows_without_and_groups():
    Y = np.array([[0.1, 0.2, 0.3, 0.4], [0.5, 0.6, 0.7, 0.8], [0.0, 1.0, 0.0, 1.0]])
    R = ResponseMatrix(("A", "B", "C"), ("i0", "i1", "i2", "i3"), Y, "s", "toy",
                       {"topic": np.array(["x", "y", "x", "y"], dtype=object)})
    known, row = R.without("B")
    assert known.systems == ("A", "C") and row.tolist() == [0.5, 0.6, 0.7, 0.8]
    G = R.group("topic", "y")
    assert G.item_ids == ("i1", "i3") and G.full_scores().tolist() == pytest.approx([0.3, 0.7, 1.0])
    assert R.groups("topic") == ["x", "y"]
    with pytest.raises(DataError, match="Values: x, y"):
        R.group("topic", "z")
    with pytest.raises(DataError, match="no per-item column 'topik'.*Did you mean 'topic'"):
        R.group("topik", "x")


def test_an_alpacaeval_draw_recorded_as_zero_scores_one_half(tmp_path):
    rows = ["model_dir,annotator_config,instruction_idx,generator_1,generator_2,annotator,preference"]
    for m, prefs in (("m1", (2.0, 1.0, 0, 1.5)), ("m2", (1.0, 1.0, 2.0, 2.0))):
        rows += [f"{m},cfg,{i},base,{m},cfg,{p}" for i, p in enumerate(prefs)]
    f = tmp_path / "preferences_all_annotators.csv.gz"
    with gzip.open(f, "wt") as fh:
        fh.write("\n".join(rows) + "\n")
    R = response_matrix(str(f), metric="cfg")
    assert R.Y[R.index("m1")].tolist() == [1.0, 0.0, 0.5, 0.5]
    assert R.unit == "points"


# --------------------------------------------------------------------------------- 9. the CLI
@pytest.mark.slow
def test_select_anchors_then_estimate_on_alpacaeval(tmp_path, capsys, alpaca):
    anchors = tmp_path / "anchors.jsonl"
    assert main(["select", "anchors", "--data", "alpaca-eval", "--exclude", NEW, "--budget", "60", "--method",
                 "random", "--out", str(anchors)]) == 0
    rows = [json.loads(ln) for ln in anchors.read_text().splitlines()]
    assert len(rows) == 60 and len({r["item_id"] for r in rows}) == 60
    assert {r["design"] for r in rows} == {"random"} and {r["pool_size"] for r in rows} == {alpaca.n_items}
    assert all(r["inclusion_probability"] == pytest.approx(60 / alpaca.n_items) for r in rows)
    capsys.readouterr()
    assert main(["estimate", "--data", "alpaca-eval", "--system", NEW, "--items", str(anchors), "--method",
                 "mean,aipw,regression,pirt,gpirt", "--out", str(tmp_path / "est")]) == 0
    out = capsys.readouterr().out
    assert out.count("assumes:") == 5 and "not used by the estimates" in out
    res = json.loads((tmp_path / "est" / "estimate.json").read_text())
    est = {e["method"]: e for e in res["estimates"]}
    assert len(res["estimates"]) == 5 and list(est) == ["mean", "aipw", "regression", "pirt", "gpirt"]
    for m in ("mean", "aipw"):
        lo, hi = est[m]["interval"]
        assert est[m]["kind"] == "design-based" and lo <= est[m]["estimate"] <= hi and est[m]["level"] == 0.9
    assert est["gpirt"]["interval"] is None and est["gpirt"]["kind"] == "model-based"
    assert {est[m]["kind"] for m in ("regression", "pirt", "gpirt")} == {"model-based"}
    assert "full_score_in_data" in res
    row = alpaca.Y[alpaca.index(NEW)]
    assert res["full_score_in_data"] == pytest.approx(float(row.mean()), abs=1e-12)
    assert res["unit"] == "points" and len(res["known_systems"]) == 56 and NEW not in res["known_systems"]
    picked = [alpaca.item_ids.index(r["item_id"]) for r in rows]  # the mean is the plain mean on the anchors
    assert est["mean"]["estimate"] == pytest.approx(float(row[picked].mean()), abs=1e-12)


def test_estimate_command_bad_input_is_one_error_naming_the_problem(tmp_path, capsys):
    anchors = tmp_path / "a.jsonl"
    assert main(["--quiet", "select", "anchors", "--data", "demo", "--exclude", "C", "--budget", "20", "--method",
                 "anchor-points", "--out", str(anchors)]) == 0
    capsys.readouterr()
    code = main(["estimate", "--data", "demo", "--system", "NOSUCH", "--items", str(anchors), "--out",
                 str(tmp_path / "o")])
    err = capsys.readouterr().err
    assert code == 2 and "'NOSUCH' is not in demo" in err and "Systems: A, B, C" in err and "Traceback" not in err
    code = main(["estimate", "--data", "demo", "--system", "C", "--items", str(anchors), "--method", "aipw", "--out",
                 str(tmp_path / "o")])
    err = capsys.readouterr().err
    assert code == 2 and "needs a random design" in err and "Traceback" not in err
    code = main(["select", "anchors", "--data", "demo", "--budget", "5", "--method", "clusters", "--out",
                 str(tmp_path / "x.jsonl")])
    assert code == 2 and "clusters" in capsys.readouterr().err


# ----------------------------------------------------------------------------- 10. bench estimate
def test_bench_estimate_command_on_a_small_long_table(tmp_path, capsys):
    Y = simulate_2pl(S=8, M=120, seed=6, continuous=True)
    data = long_table(tmp_path / "t.csv", Y, column=lambda i: "geometry" if i % 3 == 0 else "algebra")
    out = tmp_path / "b"
    assert main(["--quiet", "bench", "estimate", "--data", str(data), "--budgets", "10,30", "--seeds", "2",
                 "--methods", "mean,aipw,regression,gpirt-1d", "--by", "topic", "--out", str(out)]) == 0
    res = json.loads((out / "results.json").read_text())
    assert res["systems"] == 8 and res["items"] == 120 and res["unit"] == "points" and res["budgets"] == [10, 30]
    methods = ["mean@random", "aipw@random", "regression@random", "gpirt-1d@anchor-points"]
    assert res["methods"] == methods
    cells = {(r["split"], r["method"], r["budget"]) for r in res["table"]}
    assert cells == {(sp, m, b) for sp in ("all", "extrapolation") for m in methods for b in (10, 30)}
    full = np.round(Y, 6).mean(axis=1)
    top = [f"sys{k}" for k in np.argsort(-full)[:2]]  # the best quarter of 8 systems
    assert sorted(res["splits"]["extrapolation"]) == sorted(top) and len(res["splits"]["all"]) == 8
    assert {r["system"] for r in res["records"] if r["split"] == "extrapolation"} == set(top)
    assert len(res["records"]) == (8 + 2) * 2 * 2 * 4
    for r in res["table"]:
        assert r["estimates"] == (8 if r["split"] == "all" else 2) * 2
        # regression: at most 7 known systems, fewer than the 9 a 90% conformal interval needs ("none")
        assert (r["coverage"] is None) == r["method"].startswith(("gpirt", "regression"))
        assert r["none"] == (r["estimates"] if r["method"].startswith("regression") else 0)
    assert (out / "estimate.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert (out / "by_algebra.png").is_file() and (out / "by_geometry.png").is_file()
    assert {g: res["groups"][g]["items"] for g in res["groups"]} == {"algebra": 80, "geometry": 40}
    text = (out / "table.txt").read_text()
    peers = [ln for ln in text.splitlines() if "(peer)" in ln]
    assert peers and all(ln.split()[0] == "regression@random" for ln in peers)  # gpirt-1d is ours, not a peer's
    assert not any("(peer)" in ln for ln in text.splitlines() if ln.split()[:1] in (["mean@random"], ["aipw@random"]))
    assert "== topic = algebra (80 items)" in text


def test_extrapolation_cases_hold_out_the_best_quarter_against_worse_systems():
    Y = simulate_2pl(S=9, M=50, seed=14, continuous=True)
    R = ResponseMatrix(tuple(f"s{k}" for k in range(9)), tuple(map(str, range(50))), Y, "score", "toy")
    full = Y.mean(axis=1)
    cases = held_out_cases(R, "extrapolation")
    assert [s for s, _ in cases] == list(np.argsort(-full)[:2])
    for s, known in cases:
        assert s not in known and (full[known] < full[s]).all()
        assert len(known) == int((full < full[s]).sum())
    everyone = held_out_cases(R, "all")
    assert len(everyone) == 9 and all(sorted([*k, s]) == list(range(9)) for s, k in everyone)


def test_bench_estimate_on_three_systems_is_one_error_line_and_leaves_no_folder(tmp_path, capsys):
    # demo has 3 systems: each held out leaves 2 known ones, below the 3 a case needs, so every case would be skipped
    # (it was an internal error in the plot, with zero columns)
    out = tmp_path / "be"
    assert main(["bench", "estimate", "--data", "demo", "--seeds", "1", "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert "needs at least 4 systems" in err and "demo has 3 (A, B, C)" in err and "internal error" not in err
    assert not out.exists()
