"""Proxies and prediction-powered estimates: unbiased and covering whatever the proxy, narrower with a
good one, no worse with a useless one; the anytime rule with a metric proxy keeps its guarantee."""

import json
import math

import numpy as np
import pytest

from evalsift.cli import main
from evalsift.errors import DataError, ParameterError
from evalsift.io import make_demo_pool
from evalsift.oracle import MetricOracle
from evalsift.proxy import MetricProxy, make_proxy
from evalsift.session import Session
from evalsift.stats import AnytimeTest, cross_ppi_mean, ppi_mean


def _pool(rng, M=600, p=(0.45, 0.35, 0.2), quality=1.0, bias=0.0):
    """Verdict values of a pool and a metric difference that tracks them with noise (quality 0: none)."""
    y = rng.choice([1.0, 0.0, 0.5], size=M, p=p)
    d = quality * (y - 0.5) * 2 + rng.normal(0, 1, M) + bias
    return y, d


def test_lam_zero_is_the_sample_mean_with_the_without_replacement_error():
    y = np.array([1.0, 0.0, 1.0, 1.0, 0.5])
    est = ppi_mean(y, [0, 1, 2, 3, 4], np.linspace(0, 1, 20), lam=0.0)
    assert est.estimate == pytest.approx(y.mean())
    assert est.se == pytest.approx(math.sqrt((1 - 5 / 20) * y.var(ddof=1) / 5))


@pytest.mark.parametrize("quality, bias", [(2.0, 0.0), (0.0, 0.0), (2.0, 1.5)])
def test_cross_ppi_is_unbiased_and_covers_whatever_the_proxy(quality, bias):
    """Good, useless and biased proxies: the estimate centres on the pool's mean and the 95% interval
    covers it within 2 points of its level, less 2 Monte-Carlo standard errors (300 draws of 60
    labels from pools of 600; 800 draws measured 0.94-0.96 at 20, 60 and 150 labels)."""
    rng = np.random.default_rng(int(quality * 10 + bias * 100))
    errors, covered, runs = [], 0, 300
    for _ in range(runs):
        y, d = _pool(rng, quality=quality, bias=bias)
        proxy = MetricProxy(d)
        idx = rng.choice(len(y), 60, replace=False)
        est = cross_ppi_mean(y[idx], idx, proxy.fit_predict, len(y))
        errors.append(est.estimate - y.mean())
        covered += est.low <= y.mean() <= est.high
    se = np.std(errors) / math.sqrt(runs)
    assert abs(np.mean(errors)) < 3 * se + 0.005, np.mean(errors)
    assert covered / runs >= 0.95 - 0.02 - 2 * math.sqrt(0.05 * 0.95 / runs), covered / runs


def test_a_good_proxy_narrows_the_interval_a_useless_one_costs_little():
    rng = np.random.default_rng(8)
    widths = {"none": [], "good": [], "useless": []}
    for _ in range(100):
        y, d = _pool(rng, quality=3.0)
        noise = rng.normal(size=len(y))
        idx = rng.choice(len(y), 80, replace=False)
        widths["none"].append(ppi_mean(y[idx], idx, np.zeros(len(y)), lam=0.0).width)
        widths["good"].append(cross_ppi_mean(y[idx], idx, MetricProxy(d).fit_predict, len(y)).width)
        widths["useless"].append(cross_ppi_mean(y[idx], idx, MetricProxy(noise).fit_predict, len(y)).width)
    w = {k: float(np.mean(v)) for k, v in widths.items()}
    assert w["good"] < 0.7 * w["none"], w
    assert w["useless"] < 1.05 * w["none"], w


def test_metric_proxy_is_predictable_and_refits_on_a_schedule():
    rng = np.random.default_rng(2)
    y, d = _pool(rng, quality=2.0, M=300)
    p = MetricProxy(d, min_labels=8, growth=1.2)
    order = rng.permutation(300)
    assert np.all(p.predict(order[:5], y[order[:5]]) == (0.5 + y[order[:5]].sum()) / 6)  # before min_labels
    # between two refit points the calibration does not change, whatever the new verdicts are
    k = p._refit_point(30)
    assert k <= 30 and p._refit_point(k) == k
    a = p.predict(order[:30], y[order[:30]])
    flipped = y[order[:30]].copy()
    flipped[k:] = 1.0 - flipped[k:]
    assert np.array_equal(a, p.predict(order[:30], flipped))
    assert np.corrcoef(a, y)[0, 1] > 0.3  # the calibration follows the metric


def test_anytime_rule_with_a_metric_proxy_keeps_the_guarantee_on_dead_heats():
    """A dead heat whose metric tracks the verdicts: whatever it predicts, a winner is named in at most
    the risk (+ 2 Monte-Carlo standard errors)."""
    rng = np.random.default_rng(4)
    M, risk, runs = 240, 0.2, 200
    y = np.array([1.0] * 90 + [0.0] * 90 + [0.5] * 60)
    d = (y - 0.5) * 3 + rng.normal(0, 1, M)
    named = 0
    for _ in range(runs):
        order = rng.permutation(M)
        test = AnytimeTest(M, MetricProxy(d))
        for n, i in enumerate(order[:120], 1):
            test.update(float(y[i]), int(i))
            if n >= 5 and (r := test.assess(risk)).leader is not None and r.risk <= risk:
                named += 1
                break
    assert named / runs <= risk + 2 * math.sqrt(risk * (1 - risk) / runs), named


def test_session_with_a_proxy_decides_and_resumes():
    pool = make_demo_pool(n_items=300)
    s = Session(pool, "random", a="A", b="B", risk=0.1, proxy="metric:token_f1")
    d = s.run(MetricOracle("human"))
    assert d.proxy == "metric:token_f1" and d.guarantee.startswith("valid") and d.weighted_win_rate_a is not None
    again = Session.resume(pool, s.settings(), s.judgments).decision()
    assert (again.winner, again.labels_used, again.risk, again.proxy) == (d.winner, d.labels_used, d.risk, d.proxy)
    with pytest.raises(ParameterError, match="proxy sharpens the anytime rule"):
        Session(pool, "diffuse", a="A", b="B", risk_rule="paper", proxy="metric:token_f1", encoder="tfidf")


def test_proxy_specs_and_bad_input():
    pool = make_demo_pool(n_items=50).pair("A", "B")
    with pytest.raises(ParameterError, match="human metric"):
        make_proxy("metric:human", pool, "A", "B")
    with pytest.raises(ParameterError, match="proxy kind 'llm' is not available"):
        make_proxy("llm:gpt", pool, "A", "B")
    with pytest.raises(ParameterError, match="expected metric:NAME"):
        make_proxy("token_f1", pool, "A", "B")
    with pytest.raises(DataError, match="finite number for every item"):
        MetricProxy([0.0, float("nan")])
    with pytest.raises(DataError, match="at least 2 labels"):
        ppi_mean([1.0], [0], np.zeros(5))


def test_compare_with_a_proxy(capsys):
    code = main(["compare", "--data", "demo", "--a", "A", "--b", "B", "--oracle", "metric:human",
                 "--proxy", "metric:token_f1", "--json"])
    d = json.loads(capsys.readouterr().out)
    assert code == 0 and d["proxy"] == "metric:token_f1" and d["win_rate_interval"] is not None
    code = main(["compare", "--data", "demo", "--a", "A", "--b", "B", "--oracle", "metric:human",
                 "--proxy", "metric:human"])
    assert code == 2 and "human metric" in capsys.readouterr().err


def test_a_cheap_judge_as_proxy():
    """judge:SPEC asks a judge about every item first; its verdicts are calibrated like a metric. A
    judge that replays the human metric is refused (it would be the labels)."""
    pool = make_demo_pool(n_items=300)
    s = Session(pool, "random", a="A", b="B", risk=0.1, proxy="judge:metric:token_f1")
    d = s.run(MetricOracle("human"))
    assert d.proxy == "judge:metric:token_f1" and d.outcome in ("winner", "inconclusive")
    again = Session.resume(pool, s.settings(), s.judgments).decision()
    assert (again.labels_used, again.risk) == (d.labels_used, d.risk)
    with pytest.raises(ParameterError, match="replays the human metric"):
        make_proxy("judge:metric:human", pool.pair("A", "B"), "A", "B")
    code = main(["compare", "--data", "demo", "--a", "A", "--b", "B", "--oracle", "metric:human",
                 "--proxy", "judge:metric:token_f1"])
    assert code == 0


def test_regression_means_cover_with_a_proxy_on_another_scale():
    """System means from 40 labels plus a proxy on another scale (a noisy linear function of the
    score): the intervals hold the pool means at about their level and are narrower than the labels'
    alone; a useless proxy leaves the width about the same."""
    from evalsift.stats import bootstrap_means, regression_means

    rng = np.random.default_rng(12)
    hit = cases = 0
    w_proxy = w_plain = w_noise = 0.0
    for rep in range(120):
        M, S = 500, 4
        Y = rng.normal(0, 1, (M, 1)) + rng.normal(0, 1, (M, S)) + np.arange(S) * 0.2
        F = 50 + 10 * Y + rng.normal(0, 6, (M, S))  # another scale, correlated about 0.85
        idx = rng.choice(M, 40, replace=False)
        est, lo, hi, lam = regression_means(Y[idx], idx, F, resamples=500, seed=rep)
        truth = Y.mean(axis=0)
        hit += int(((lo <= truth) & (truth <= hi)).sum())
        cases += S
        plain = bootstrap_means(Y[idx], resamples=500, seed=rep)
        w_proxy += float((hi - lo).mean())
        w_plain += float((plain.high - plain.low).mean())
        _, nlo, nhi, _ = regression_means(Y[idx], idx, rng.normal(size=(M, S)), resamples=500, seed=rep)
        w_noise += float((nhi - nlo).mean())
    assert hit / cases >= 0.93, hit / cases
    assert w_proxy < 0.75 * w_plain and w_noise < 1.1 * w_plain, (w_proxy, w_plain, w_noise)


def test_rank_with_a_proxy(capsys, tmp_path):
    picks = tmp_path / "picks.jsonl"
    main(["select", "random", "--data", "demo", "--budget", "60", "--out", str(picks)])
    capsys.readouterr()
    code = main(["rank", "--data", "demo", "--human-metric", "human", "--items", str(picks), "--proxy",
                 "metric:token_f1", "--json", "--resamples", "500"])
    res = json.loads(capsys.readouterr().out)
    assert code == 0 and res["proxy"]["spec"] == "metric:token_f1"
    rows = res["proxy"]["ranking"]
    assert {r["system"] for r in rows} == {"A", "B", "C"}
    assert all(r["interval"][0] <= r["mean"] <= r["interval"][1] for r in rows)
    code = main(["rank", "--data", "demo", "--human-metric", "human", "--proxy", "metric:token_f1"])
    assert code == 2 and "needs --items" in capsys.readouterr().err
