"""Judge-stratified Neyman allocation (``sampling="neyman"``, ``compare --design neyman``): the draws
follow where people disagree with the judge's verdicts, the anytime rule's guarantee holds, and with
the judge's value drawn where it is least reliable. How many labels it saves is measured in
docs/proxy.md (so far: no more than uniform draws do, within the noise)."""

from __future__ import annotations

import json

import numpy as np
import pytest
from scipy.stats import binomtest

from evalsift.errors import ParameterError
from evalsift.oracle import MetricOracle
from evalsift.pool import Pool
from evalsift.session import Session
from evalsift.stats.active import proxy_strata, stratum_spread

SCORE = {"a": (1.0, 0.0), "b": (0.0, 1.0), "tie": (0.5, 0.5)}


def judged_pool(n: int, share_a: float, ties: float, agree: float, seed: int) -> Pool:
    """Two systems; ``truth`` (the labels) gives a ``share_a`` of the items to A and ``ties`` to nobody;
    ``judge`` is a recorded judge's verdict, the truth on a share ``agree`` of the items and a uniformly
    random verdict elsewhere (three values: the strata of the design)."""
    rng = np.random.default_rng(seed)
    n_a, n_t = int(round(share_a * n)), int(round(ties * n))
    truth = rng.permutation(np.array(["a"] * n_a + ["tie"] * n_t + ["b"] * (n - n_a - n_t)))
    judge = np.where(rng.random(n) < agree, truth, rng.choice(["a", "b", "tie"], n))
    return Pool(item_ids=[f"i{k}" for k in range(n)], systems=["A", "B"],
                outputs={"A": [f"a{k}" for k in range(n)], "B": [f"b{k}" for k in range(n)]},
                scores={"truth": np.array([SCORE[v] for v in truth]), "judge": np.array([SCORE[v] for v in judge])},
                human_metrics=["truth"], name="judged")


def split_judge_pool(n: int, seed: int, *, unsure: float = 0.4, sure: float = 0.92, lean: float = 0.56) -> Pool:
    """A judge that is reliable where it picks a side (people agree with its verdict on a share ``sure``)
    and says "tie" on a share ``unsure`` of the items, where people pick either side at random: the
    spread of the labels around the judge differs across its verdicts, which is where Neyman's
    allocation pays. A leads B (the judge picks A on a share ``lean`` of the items it picks a side on)."""
    rng = np.random.default_rng(seed)
    judge = np.where(rng.random(n) < unsure, "tie", np.where(rng.random(n) < lean, "a", "b"))
    flip = {"a": "b", "b": "a"}
    truth = np.array([rng.choice(["a", "b"]) if j == "tie" else (j if rng.random() < sure else flip[j]) for j in judge])
    return Pool(item_ids=[f"i{k}" for k in range(n)], systems=["A", "B"],
                outputs={"A": [f"a{k}" for k in range(n)], "B": [f"b{k}" for k in range(n)]},
                scores={"truth": np.array([SCORE[v] for v in truth]), "judge": np.array([SCORE[v] for v in judge])},
                human_metrics=["truth"], name="split judge")


def _labels(pool: Pool, seed: int, sampling: str, risk: float = 0.1):
    s = Session(pool, "random", a="A", b="B", risk=risk, max_labels=pool.n_items, seed=seed, proxy="metric:judge",
                sampling=sampling)
    return s, s.run(MetricOracle("truth"))


def test_strata_are_the_judges_verdicts_and_a_continuous_proxy_has_none():
    assert proxy_strata(np.array([1.0, -1.0, 0.0, 1.0])).tolist() == [2, 0, 1, 2]
    assert proxy_strata(np.column_stack([[1.0, 1.0, 0.0], [0.0, 0.0, 1.0]])).tolist() == [1, 1, 0]
    assert proxy_strata(np.linspace(0, 1, 50)) is None  # a metric: the design bins its calibrated prediction


def test_the_spread_is_learned_per_stratum_and_uniform_before_any_verdict():
    f = np.full(8, 0.5)
    strata = np.array([0, 0, 0, 0, 1, 1, 1, 1])
    assert np.ptp(stratum_spread(f, [], [], strata)) == 0
    e = stratum_spread(f, np.array([0, 1, 2, 4, 5, 6]), np.array([0.5, 0.5, 0.5, 1.0, 0.0, 1.0]), strata)
    assert e[0] < e[4] and e[0] == e[3] and e[4] == e[7]  # people agree with the prediction in stratum 0 only


def test_the_design_keeps_the_risk_on_dead_heats():
    """Every winner named on a dead heat is wrong: stated risk 0.2, a judge that agrees 70% of the time."""
    runs, wrong = 120, 0
    for run in range(runs):
        pool = judged_pool(120, 0.35, 0.3, 0.7, seed=run)
        _, d = _labels(pool, run, "neyman", risk=0.2)
        wrong += d.winner is not None
    assert binomtest(wrong, runs).proportion_ci(0.95, method="exact").low <= 0.2, wrong


def test_the_draws_go_where_people_disagree_with_the_judge():
    """The judge says "tie" on 40% of the items and people then pick a side at random; where it picks a
    side they agree 92% of the time. Neyman's allocation gives the "tie" stratum about 0.55 of the draws
    (0.47 with half of each draw spread uniformly); uniform draws give it 0.40."""
    shares = {"uniform": [], "neyman": []}
    for run in range(8):
        pool = split_judge_pool(600, seed=200 + run)
        unsure = pool.score("judge", "A") == 0.5
        for sampling in shares:
            s, _ = _labels(pool, run, sampling, risk=0.01)
            drawn = np.array(s.requested()[:150], dtype=int)
            shares[sampling].append(float(unsure[drawn].mean()))
    assert np.mean(shares["neyman"]) > np.mean(shares["uniform"]) + 0.04, shares
    assert abs(np.mean(shares["uniform"]) - 0.4) < 0.04, shares


def test_a_neyman_session_resumes_to_the_same_state():
    pool = judged_pool(200, 0.3, 0.2, 0.8, seed=4)
    s, d = _labels(pool, 4, "neyman")
    again = Session.resume(pool, s.settings(), s.judgments).decision()
    assert (again.outcome, again.winner, again.labels_used, again.risk) == (d.outcome, d.winner, d.labels_used, d.risk)
    assert [r["item_id"] for r in again.judged] == [r["item_id"] for r in d.judged]


def test_compare_takes_design_neyman_and_refuses_it_without_a_proxy(capsys):
    from evalsift.cli import main

    code = main(["compare", "--data", "demo", "--a", "A", "--b", "B", "--oracle", "metric:human",
                 "--proxy", "metric:token_f1", "--design", "neyman", "--json"])
    d = json.loads(capsys.readouterr().out)
    assert code == 0 and d["method"] == "random+neyman" and "recorded probabilities" in d["guarantee"]
    code = main(["compare", "--data", "demo", "--a", "A", "--b", "B", "--oracle", "metric:human", "--design", "neyman"])
    assert code == 2 and "give a proxy" in capsys.readouterr().err
    with pytest.raises(ParameterError, match="sampling"):
        Session(judged_pool(20, 0.3, 0.2, 0.8, 0), "random", a="A", b="B", sampling="stratified")


def test_bench_calibration_runs_the_design_as_its_own_method():
    """``bench calibration --proxy ... --design neyman`` adds ``random+proxy+neyman`` cells beside the others."""
    from evalsift.bench.calibration import calibration_bench

    res = calibration_bench(None, None, rules=("anytime",), risks=(0.2,), methods=("random",), runs=6, gaps=(0.0, 0.2),
                            ties=(0.3,), synthetic_items=150, proxy="metric:proxy", sampling="neyman", encoder=None,
                            quiet=True)
    assert res["sampling"] == "neyman" and not res["active"]
    text = json.dumps(res)
    assert "random+proxy+neyman" in text and "random+proxy+active" not in text
    with pytest.raises(ParameterError, match="sampling"):
        calibration_bench(None, None, methods=("random",), runs=2, proxy="metric:proxy", sampling="greedy",
                          encoder=None, quiet=True)


def test_bench_calibration_leaves_out_the_pairs_a_judge_proxy_does_not_cover(monkeypatch):
    """SummEval's recorded GPT-3.5 answers cover 11 of its 120 system pairs: `bench calibration --proxy` runs
    those and says which pairs it left out and why, where it stopped with an error at the first pair."""
    from _data import DATA_ROOT, need

    from evalsift.bench.calibration import calibration_bench
    from evalsift.io import load

    need("summeval/summeval.json", "summeval/llm-pairwise")
    monkeypatch.setenv("EVALSIFT_DATA", str(DATA_ROOT))
    res = calibration_bench(load("summeval"), "metric:coherence", synthetic=False, methods=("random",),
                            rules=("anytime",), seeds=1, quiet=True,
                            proxy="judge:judgments:summeval/llm-pairwise/coherence", sampling="neyman")
    real = res["real"]
    assert real["pairs"] == 11 and len(real["left_out_pairs"]) == 109
    assert all(why.startswith("the proxy:") for why in real["left_out_pairs"].values())
    assert "random+proxy+neyman" in real["cells"]["all"]


def test_an_undone_verdict_in_a_live_design_project_loses_nothing(tmp_path):
    """Undo in a live project with ``--design neyman``: the Session is rebuilt from the verdicts that stand,
    the item comes back, a different answer is taken, and the decision goes on; every standing verdict is
    either counted by the decision or reported as judged ahead, and a server rebuilt from the store alone
    gives the same decision."""
    pytest.importorskip("fastapi", reason="the annotation app needs evalsift[web]")
    from evalsift.proxy import make_proxy
    from evalsift.select import make_selector
    from evalsift.store import Store
    from evalsift.web import Workspace

    pool = judged_pool(200, 0.45, 0.2, 0.8, seed=5)
    truth = {iid: pool.score("truth", "A")[k] - pool.score("truth", "B")[k] for k, iid in enumerate(pool.item_ids)}
    work = Workspace(Store(tmp_path / "w.db"))
    pid, _ = work.create_live_pairwise("ny", pool, "A", "B", make_selector("random", seed=0), risk=0.1,
                                       proxy=make_proxy("metric:judge", pool, "A", "B"), sampling="neyman")
    aid = work.store.add_annotator(pid, "alice")[0]
    who = {"id": aid, "project_id": pid, "name": "alice"}

    def answer(a, tie=False):
        d = truth[a["item_id"]]
        first_is_a = work.store.assignment(a["assignment_id"])["shown_order"] == "ab"
        work.submit(who, a["assignment_id"], answer="0" if tie or d == 0 else "1" if (d > 0) == first_is_a else "2")

    answered = 0
    while not (a := work.next_for(who)).get("done"):
        answer(a)
        answered += 1
        if answered == 9:
            again = work.undo(who)
            answer(again, tie=True)  # answered again, differently
    st = work.status(pid)
    d = st["decision"]
    assert d["decided"] and d["method"] == "random+neyman"
    assert st["judgments"]["undone"] == 1 and st["judgments"]["done"] == d["labels_used"] + d["judged_ahead"]
    again = Workspace(Store(tmp_path / "w.db")).status(pid)["decision"]
    assert (again["winner"], again["labels_used"], again["risk"]) == (d["winner"], d["labels_used"], d["risk"])
