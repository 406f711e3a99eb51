"""The anytime rule with predictions as a control variate (``diffuse_strata``): the guarantee holds
whatever the predictions, informative strata decide sooner, useless ones cost little, and the
interval still agrees with the decision."""

import math

import numpy as np
import pytest

from evalsift.bench.calibration import SyntheticEncoder, synthetic_pool
from evalsift.errors import ParameterError
from evalsift.oracle import MetricOracle
from evalsift.select import DiffUseStrata, RandomSelector, make_selector
from evalsift.session import Session
from evalsift.stats import AnytimeTest, Predictor, StrataPredictor, anytime_risk, win_rate_sequence


def test_strata_predictor_by_hand():
    # pool of 6; level 1: {0,1,2} {3,4,5}; level 2 splits the first into {0,1} {2} and keeps {3,4,5}
    # (a stratum that does not split is not shrunk twice with the same verdicts)
    p = StrataPredictor([np.array([0, 0, 0, 1, 1, 1]), np.array([0, 0, 1, 2, 2, 2])], shrink=2.0)
    f = p.predict(np.array([0, 1, 3]), np.array([1.0, 1.0, 0.0]))
    root = (0.5 + 2.0) / 4  # three verdicts and a 1/2 pseudo-verdict: 0.625
    top0 = (2.0 + 2 * root) / (2 + 2)  # cluster {0,1,2}: two verdicts of 1, shrunk toward the root
    top1 = (0.0 + 2 * root) / (1 + 2)
    assert f[0] == pytest.approx((2.0 + 2 * top0) / 4)  # {0,1}: the same two verdicts, shrunk toward top0
    assert f[2] == pytest.approx(top0)  # {2}: nothing seen, its parent's prediction
    assert f[3] == f[4] == f[5] == pytest.approx(top1)
    assert p.predict(np.array([], dtype=int), np.array([])).tolist() == [0.5] * 6  # nothing seen: 1/2


class _Fixed(Predictor):
    """A prediction that ignores the verdicts: stress for the bet caps (values far from the truth)."""

    def __init__(self, f):
        self.f, self.size = np.asarray(f, float), len(f)

    def predict(self, items, values):
        return self.f


class _Chasing(Predictor):
    """An adversarial but predictable predictor: predicts the *opposite* of the running leader for
    every unseen item, trying to push the adjusted values toward a false winner."""

    def __init__(self, size):
        self.size = size

    def predict(self, items, values):
        lead = np.mean(values) if len(values) else 0.5
        return np.full(self.size, 0.0 if lead > 0.5 else 1.0)


def _run(y, order, control, risk, max_labels):
    """The rule on pool values ``y`` judged in ``order``; returns ('a'|'b'|None, labels)."""
    test = AnytimeTest(len(y), control)
    for n, i in enumerate(order[:max_labels], 1):
        test.update(float(y[i]), int(i))
        if n >= 5:
            r = test.assess(risk)
            if r.leader is not None and r.risk <= risk:
                return r.leader, n
    return None, min(max_labels, len(y))


def _dead_heat(M=240):
    y = np.array([1.0] * (M // 3) + [0.0] * (M // 3) + [0.5] * (M - 2 * (M // 3)))
    return y


@pytest.mark.parametrize("kind", ["aligned", "fixed_extreme", "chasing"])
@pytest.mark.parametrize("risk", [0.05, 0.2])
def test_predictions_keep_the_guarantee_on_dead_heats(kind, risk):
    """A dead heat has no winner: whatever the predictions, a winner is named in at most ``risk`` of
    runs (+ 2 Monte-Carlo standard errors). 'aligned': strata that hold exactly the a wins, the b wins
    and the ties (the best predictor, so the adjusted values barely vary and the bets grow large)."""
    y = _dead_heat()
    M = len(y)
    control = {"aligned": StrataPredictor([np.where(y == 1.0, 0, np.where(y == 0.0, 1, 2))]),
               "fixed_extreme": _Fixed(np.arange(M) % 2),
               "chasing": _Chasing(M)}[kind]
    rng = np.random.default_rng(int(risk * 1000) + len(kind))
    runs = 300
    named = sum(_run(y, rng.permutation(M), control, risk, 120)[0] is not None for _ in range(runs))
    assert named / runs <= risk + 2 * math.sqrt(risk * (1 - risk) / runs), named


def test_informative_strata_decide_sooner_and_useless_ones_cost_little():
    """a wins 60% of 600 items. Strata that separate wins from losses: far fewer labels than the plain
    rule on the same orders. Strata drawn at random: about the same labels."""
    rng = np.random.default_rng(5)
    M = 600
    y = np.array([1.0] * 360 + [0.0] * 240)
    aligned = StrataPredictor([(y == 1.0).astype(int)])
    noise = StrataPredictor([rng.integers(0, 2, M), rng.integers(0, 4, M)])
    labels = {"plain": [], "aligned": [], "noise": []}
    wrong = 0
    for _ in range(40):
        order = rng.permutation(M)
        for name, c in (("plain", None), ("aligned", aligned), ("noise", noise)):
            leader, n = _run(y, order, c, 0.1, M)
            wrong += leader == "b"
            labels[name].append(n)
    mean = {k: float(np.mean(v)) for k, v in labels.items()}
    assert wrong == 0
    assert mean["aligned"] < 0.6 * mean["plain"], mean
    assert mean["noise"] < 1.15 * mean["plain"], mean


def test_interval_and_decision_agree_with_predictions():
    rng = np.random.default_rng(17)
    decided = 0
    for trial in range(120):
        M = int(rng.integers(60, 400))
        y = rng.choice([1.0, 0.0, 0.5], size=M, p=[0.45, 0.35, 0.2])
        strata = StrataPredictor([(y == 1.0).astype(int) ^ (rng.random(M) < 0.2)])
        order = rng.permutation(M)[: int(rng.integers(1, min(M, 120) + 1))]
        level = float(rng.choice([0.05, 0.1, 0.2]))
        r = anytime_risk(y[order], M, level, items=order, control=strata)
        lo, hi = r.interval
        assert (r.risk <= level) == (not lo <= 0.5 <= hi), (trial, r.risk, level, r.interval)
        decided += r.risk <= level
        # covers the pool's win rate (rarely missed; checked in aggregate below)
    assert decided > 10


def test_interval_with_predictions_covers():
    rng = np.random.default_rng(23)
    misses, runs = 0, 200
    for _ in range(runs):
        M = int(rng.integers(50, 150))
        y = rng.choice([1.0, 0.0, 0.5], size=M, p=[0.4, 0.4, 0.2])
        strata = StrataPredictor([(y == 1.0).astype(int) ^ (rng.random(M) < 0.3)])
        order = rng.permutation(M)[: M - int(rng.integers(0, 10))]
        lo, hi = win_rate_sequence(y[order], M, 0.1, items=order, control=strata)
        misses += not lo <= y.mean() <= hi
    assert misses / runs <= 0.1 + 2 * math.sqrt(0.1 * 0.9 / runs), misses


def test_diffuse_strata_session_resumes():
    from evalsift.io import make_demo_pool

    pool = make_demo_pool(n_items=200)
    s = Session(pool, "diffuse_strata", a="A", b="B", risk=0.1, encoder="tfidf")
    d = s.run(MetricOracle("human"))
    again = Session.resume(pool, s.settings(), s.judgments).decision()
    assert (again.winner, again.labels_used, again.risk, again.win_rate_interval) == (
        d.winner, d.labels_used, d.risk, d.win_rate_interval)
    assert d.weighted_win_rate_a is not None and d.method == "diffuse_strata"


def test_predictions_need_items():
    p = StrataPredictor([np.zeros(10, dtype=int)])
    with pytest.raises(ParameterError, match="give the item of every value"):
        anytime_risk([1.0, 0.0], 10, 0.1, control=p)
    with pytest.raises(ParameterError, match="judged already"):
        anytime_risk([1.0, 0.0], 10, 0.1, items=[3, 3], control=p)
    with pytest.raises(ParameterError, match="cover 10 items, the pool has 12"):
        AnytimeTest(12, p)
    with pytest.raises(ParameterError, match="shrink must be a number > 0"):
        make_selector("diffuse_strata", shrink=0)


def test_session_with_diffuse_strata():
    """A Session with diffuse_strata: the random order of the same seed, the anytime guarantee, an
    estimate over the pool, and resume to the same state."""
    enc = SyntheticEncoder(strength=3.0)
    pool = synthetic_pool(400, gap=0.2, ties=0.3, seed=4)
    truth = np.mean([{"a": 1.0, "b": 0.0, "tie": 0.5}[v] for v in
                     MetricOracle("truth").verdicts(pool, np.arange(400), "A", "B")])
    oracle = MetricOracle("truth")
    s = Session(pool, DiffUseStrata(encoder=enc, seed=4), a="A", b="B", risk=0.1, max_labels=400)
    d = s.run(oracle)
    plain = Session(pool, RandomSelector(seed=4), a="A", b="B", risk=0.1, max_labels=400).run(oracle)
    assert s.requested() == list(RandomSelector(seed=4).fit(s.pool).order_[: d.labels_used])
    assert d.outcome == "winner" and d.winner == "A" and d.guarantee.startswith("valid")
    assert d.labels_used < plain.labels_used  # the clusters follow the verdicts here
    lo, hi = d.win_rate_interval
    assert lo <= truth <= hi and lo > 0.5
    assert abs(d.weighted_win_rate_a - truth) < abs(d.win_rate_a - truth) + 0.05
    assert make_selector("diffuse_random_rep").get_params() == make_selector("diffuse_strata").get_params()
