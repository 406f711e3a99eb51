"""Several proxies and covariates stacked into one calibration, and the fixed-budget mode (issue 21).

- the stack: a second informative column sharpens the predictions, a useless one leaves them alone;
- the guarantee never rests on the proxies: on dead heats every winner named is wrong, and with good,
  useless, heavy-tailed, one-sided and anti-correlated proxies, alone and stacked, the share of runs
  naming one stays at or below the stated risk;
- the fixed budget (``budget_assessment``, ``compare --budget N``): its interval holds the pool's win
  rate at least as often as stated, with and without a proxy, and its decision never disagrees with it;
- the command line: ``--proxy`` repeated, ``--covariates position`` from recorded shown orders,
  ``--budget``, and the errors that name the fix; the arena-ppr files as they are.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from evalsift.cli import main
from evalsift.io import make_demo_pool
from evalsift.oracle import MetricOracle
from evalsift.proxy import MetricProxy, covariate_column, logistic_fit, make_proxy
from evalsift.session import Session
from evalsift.stats import AnytimeTest, budget_assessment

from _data import need


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def pool_with(M: int, mean: float, ties: float, rng) -> np.ndarray:
    """Verdict values with exactly this mean and tie share, shuffled."""
    n_a, n_t = int(round((mean - ties / 2) * M)), int(round(ties * M))
    y = np.r_[np.ones(n_a), np.full(n_t, 0.5), np.zeros(M - n_a - n_t)]
    rng.shuffle(y)
    return y


# ---------------------------------------------------------------------------------------------- the stack
def test_a_second_informative_column_sharpens_and_a_useless_one_does_not_blur():
    rng = np.random.default_rng(0)
    y = pool_with(600, 0.55, 0.3, rng)
    u, v = y + rng.normal(0, 0.6, 600), y + rng.normal(0, 0.6, 600)  # two independent noisy views
    noise = rng.normal(size=600)
    seen = rng.permutation(600)[:150]

    def corr(columns):
        f = MetricProxy(columns).fit_predict(seen, y[seen])
        rest = np.setdiff1d(np.arange(600), seen)
        return float(np.corrcoef(f[rest], y[rest])[0, 1])

    one, two, blurred = corr(u), corr(np.column_stack([u, v])), corr(np.column_stack([u, noise]))
    assert two > one + 0.05, (one, two)
    assert abs(blurred - one) < 0.03, (one, blurred)


def test_logistic_fit_is_scikit_learns_objective():
    from sklearn.linear_model import LogisticRegression

    rng = np.random.default_rng(3)
    for _ in range(20):
        n, p = int(rng.integers(8, 200)), int(rng.integers(1, 4))
        X = rng.normal(size=(n, p)) * rng.choice([0.2, 1.0, 5.0])
        y = rng.choice([0.0, 0.5, 1.0], size=n)
        if np.all(y == y[0]):
            continue
        ref = LogisticRegression(C=1.0, tol=1e-10, max_iter=10_000).fit(
            np.r_[X, X], np.r_[np.ones(n), np.zeros(n)], sample_weight=np.r_[y, 1 - y])
        w = logistic_fit(X, y)
        ours = 1 / (1 + np.exp(-(w[0] + X @ w[1:])))
        theirs = 1 / (1 + np.exp(-(ref.intercept_[0] + X @ ref.coef_[0])))
        assert np.max(np.abs(ours - theirs)) < 1e-4


def dead_heat_proxies(y: np.ndarray, rng) -> dict[str, np.ndarray]:
    sd = float(y.std())
    good = y + rng.normal(0, sd, len(y))  # correlation about 0.7
    noise, cauchy = rng.normal(size=len(y)), rng.standard_cauchy(size=len(y))
    return {"good": good, "useless": noise, "heavy-tailed": cauchy, "always a": 0.5 + 0.01 * rng.normal(size=len(y)),
            "anti-correlated": -good, "stack": np.column_stack([good, noise, cauchy, -good])}


def test_on_dead_heats_no_proxy_makes_the_rule_name_a_winner_more_often_than_the_risk():
    risk, runs, M = 0.2, 150, 160
    named = {}
    for r in range(runs):
        rng = np.random.default_rng([5, r])
        y = pool_with(M, 0.5, 0.3, rng)  # exactly a dead heat: any winner is wrong
        order = rng.permutation(M)
        for name, cols in dead_heat_proxies(y, rng).items():
            test = AnytimeTest(M, MetricProxy(cols))
            hit = False
            for i in order:
                test.update(float(y[i]), int(i))
                a = test.assess(risk)
                if a.leader is not None and a.risk <= risk:
                    hit = True
                    break
            named[name] = named.get(name, 0) + hit
    # a binomial share above risk by 3 standard errors would be a broken guarantee
    bar = risk + 3 * math.sqrt(risk * (1 - risk) / runs)
    assert all(k / runs <= bar for k in named.values()), named


# ---------------------------------------------------------------------------------------------- the fixed budget
@pytest.mark.parametrize("proxy", ["none", "good", "stack"])
def test_the_fixed_budget_interval_holds_at_least_as_often_as_stated(proxy):
    level, runs, M, n = 0.1, 200, 300, 40
    missed = 0
    for r in range(runs):
        rng = np.random.default_rng([9, r])
        y = pool_with(M, 0.62, 0.3, rng)
        idx = rng.permutation(M)[:n]
        cols = dead_heat_proxies(y, rng)
        control = None if proxy == "none" else MetricProxy(cols[proxy])
        res = budget_assessment(y[idx], M, level, items=idx if control else None, control=control)
        lo, hi = res.interval
        missed += not lo <= y.mean() <= hi
        decided = res.leader is not None and res.risk <= level
        assert decided == (lo > 0.5 or hi < 0.5), res  # the decision never disagrees with the interval
        if decided:
            assert (res.leader == "a") == (lo > 0.5)
    assert missed / runs <= level + 3 * math.sqrt(level * (1 - level) / runs), missed


def test_a_budget_session_judges_exactly_the_budget_and_reads_it_once():
    pool = make_demo_pool(n_items=300)
    s = Session(pool, "random", a="A", b="B", risk=0.1, budget=60)
    d = s.run(MetricOracle("human"))
    assert d.labels_used == 60 and d.risk_rule == "budget" and d.guarantee.startswith("valid")
    lo, hi = d.win_rate_interval
    assert (d.outcome == "winner") == (lo > 0.5 or hi < 0.5)
    again = Session.resume(pool, s.settings(), s.judgments).decision()
    assert (again.winner, again.win_rate_interval, again.labels_used) == (d.winner, d.win_rate_interval, 60)


def test_a_list_of_proxies_is_recorded_and_resumed():
    pool = make_demo_pool(n_items=200)
    metrics = [m for m in pool.metrics if not pool.is_human(m)]
    specs = [f"metric:{m}" for m in metrics[:2]]
    s = Session(pool, "random", a="A", b="B", risk=0.1, proxy=specs)
    d = s.run(MetricOracle("human"))
    assert s.settings()["proxy"] == specs and d.proxy == " + ".join(specs)
    again = Session.resume(pool, s.settings(), s.judgments).decision()
    assert (again.winner, again.labels_used, again.risk) == (d.winner, d.labels_used, d.risk)


# ---------------------------------------------------------------------------------------------- errors
def test_covariate_and_stack_errors_name_the_fix():
    from evalsift.errors import DataError, ParameterError

    pool = make_demo_pool(n_items=30)
    metric = next(m for m in pool.metrics if not pool.is_human(m))
    with pytest.raises(ParameterError, match="named twice"):
        make_proxy([f"metric:{metric}", f"metric:{metric}"], pool, "A", "B")
    with pytest.raises(ParameterError, match="not available; known: length, position"):
        make_proxy([f"metric:{metric}"], pool, "A", "B", covariates=["colour"])
    with pytest.raises(DataError, match="position.*recorded"):
        covariate_column("position", pool, "A", "B")
    assert covariate_column("length", pool, "A", "B").shape == (30,)


def write_battles(path: Path, rows) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_cli_two_judges_and_position_on_battle_files(capsys, tmp_path):
    rng = np.random.default_rng(1)
    human, j1, j2 = [], [], []
    for num in range(240):
        first = "X" if rng.random() < 0.5 else "Y"
        other = "Y" if first == "X" else "X"
        truth = "X" if rng.random() < 0.65 else "Y"
        win = "model_a" if truth == first else "model_b"
        if rng.random() < 0.2:
            win = "tie"
        flip = lambda w, p: w if rng.random() > p else ("model_b" if w == "model_a" else "model_a")  # noqa: E731
        base = {"num": num, "model_a": first, "model_b": other}
        human.append({**base, "winner": win})
        j1.append({**base, "winner": flip(win, 0.2)})
        j2.append({**base, "winner": flip(win, 0.45)})
    h = write_battles(tmp_path / "human.jsonl", human)
    g1 = write_battles(tmp_path / "judge-one.jsonl", j1)
    g2 = write_battles(tmp_path / "judge-two.jsonl", j2)
    code, out, err = run(capsys, "compare", "--data", str(h), "--a", "X", "--b", "Y", "--oracle", f"judgments:{h}",
                         "--proxy", f"judge:judgments:{g1}", "--proxy", f"judge:judgments:{g2}", "--covariates",
                         "position", "--risk", "0.1", "--json")
    assert code == 0, err
    d = json.loads(out)
    assert d["proxy"] == f"judge:judgments:{g1} + judge:judgments:{g2} + position" and d["pool_size"] == 240
    # each judge's report is against the verdicts this comparison collected, and only those
    reports = d["judge_report"]
    assert set(reports) == {f"judge:judgments:{g1}", f"judge:judgments:{g2}"}
    assert all(r["pooled"]["items"] == d["labels_used"] for r in reports.values()), reports
    # the closer judge agrees more
    assert reports[f"judge:judgments:{g1}"]["pooled"]["agreement"]["value"] > \
        reports[f"judge:judgments:{g2}"]["pooled"]["agreement"]["value"]
    code, out, err = run(capsys, "compare", "--data", str(h), "--a", "X", "--b", "Y", "--oracle", f"judgments:{h}",
                         "--proxy", f"judge:judgments:{g1}", "--budget", "50", "--risk", "0.1", "--json")
    assert code == 0, err
    d = json.loads(out)
    assert d["labels_used"] == 50 and d["risk_rule"] == "budget" and d["weighted_win_rate_a"] is not None
    # errors that name the fix
    code, _, err = run(capsys, "compare", "--data", str(h), "--a", "X", "--b", "Y", "--oracle", f"judgments:{h}",
                       "--covariates", "position")
    assert code == 2 and "give at least one --proxy" in err
    code, _, err = run(capsys, "compare", "--data", str(h), "--a", "X", "--b", "Y", "--oracle", f"judgments:{h}",
                       "--proxy", f"judge:judgments:{g1}", "--covariates", "length")
    assert code == 2 and "Leave 'length' out of --covariates" in err
    code, _, err = run(capsys, "compare", "--data", str(h), "--a", "X", "--b", "Y", "--oracle", f"judgments:{h}",
                       "--budget", "40", "--risk-rule", "paper")
    assert code == 2 and "budget" in err


def test_arena_files_as_they_are_with_three_judges_and_position(capsys):
    folder = need("arena-ppr/human.jsonl").parent
    argv = ["compare", "--data", str(folder / "human.jsonl"), "--a", "koala-13b", "--b", "vicuna-13b", "--oracle",
            f"judgments:{folder / 'human.jsonl'}", "--risk", "0.1", "--json"]
    for judge in ("gpt-4-0125-preview", "claude-3-opus-20240229", "gpt-3.5-turbo"):
        argv += ["--proxy", f"judge:judgments:{folder / (judge + '.jsonl')}"]
    code, out, err = run(capsys, *argv, "--covariates", "position")
    assert code == 0, err
    d = json.loads(out)
    assert d["pool_size"] == 481 and d["proxy"].endswith("+ position")
    assert d["winner"] in (None, "vicuna-13b")  # the pool's own winner (koala-13b wins 0.427 of it)
    code, out, err = run(capsys, *argv, "--budget", "100")
    assert code == 0, err
    d = json.loads(out)
    lo, hi = d["win_rate_interval"]
    assert d["labels_used"] == 100 and lo <= 0.42723 <= hi


def test_the_same_proxy_given_twice_is_one_proxy_as_when_proxy_took_one_value(capsys):
    """--proxy once took a single value; a command line that repeats the same spec still runs, with that proxy once."""
    from evalsift.io import load

    metric = next(m for m in load("demo").metrics if not load("demo").is_human(m))
    base = ["compare", "--data", "demo", "--a", "A", "--b", "B", "--oracle", "metric:human", "--risk", "0.2", "--json"]
    code, once, err = run(capsys, *base, "--proxy", f"metric:{metric}")
    assert code == 0, err
    code, twice, err = run(capsys, *base, "--proxy", f"metric:{metric}", "--proxy", f"metric:{metric}")
    assert code == 0, err
    a, b = json.loads(once), json.loads(twice)
    assert b["proxy"] == f"metric:{metric}" and (a["winner"], a["labels_used"], a["risk"]) == (b["winner"], b["labels_used"], b["risk"])


def test_bench_calibration_takes_recorded_judges_stacked_on_the_arena_files(capsys, tmp_path):
    """``bench calibration --proxy judge:judgments:FILE`` (repeatable): each real pair restricted to the battles
    every judge covers; the proxied rule runs on every test set and names no more wrong winners than its risk
    allows (95% Clopper-Pearson), as the rule without a proxy on the same sets."""
    folder = need("arena-ppr/human.jsonl").parent
    human = f"judgments:{folder / 'human.jsonl'}"
    code, out, err = run(capsys, "--quiet", "bench", "calibration", "--data", str(folder / "human.jsonl"), "--oracle",
                         human, "--proxy", f"judge:judgments:{folder / 'gpt-4-0125-preview.jsonl'}", "--proxy",
                         f"judge:judgments:{folder / 'gpt-3.5-turbo.jsonl'}", "--methods", "random", "--rules",
                         "anytime", "--no-synthetic", "--seeds", "2", "--max-pairs", "12", "--risks", "0.2",
                         "--out", str(tmp_path))
    assert code == 0, err
    res = json.loads((tmp_path / "results.json").read_text())
    assert len(res["proxy"]) == 2 and res["proxy"][0].endswith("gpt-4-0125-preview.jsonl")
    real = res["real"]
    cells = real["cells"]["all"]
    assert real["pairs"] == 12 and cells["random+proxy"]["anytime"]["0.2"]["runs"] == real["cases"] > 0
    for m in ("random", "random+proxy"):
        assert not cells[m]["anytime"]["0.2"]["exceeds"]
    assert "random+proxy/anytime" in out
