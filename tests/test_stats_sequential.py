"""The anytime-valid stop rule: hand arithmetic, certainty, and its guarantee measured on hard pools."""

import math

import numpy as np
import pytest

from evalsift.errors import ParameterError
from evalsift.oracle import MetricOracle
from evalsift.pool import Pool
from evalsift.select import DiffUse, RandomSelector
from evalsift.session import Session
from evalsift.stats import anytime_risk, win_rate_sequence
from evalsift.stats.sequential import _capital, _Side

from _fakes import DictEncoder, random_pair_pool


def test_capital_by_hand():
    # pool of 10, the first two verdicts are a wins (y = 1)
    # t=1: m = (10/2 - 0) / 10 = 0.5; running mean (prior) 0.5 -> edge 0 -> bet 0 -> capital 1
    # t=2: m = (5 - 1) / 9 = 4/9; mean = (0.5 + 1) / 2 = 0.75; variance = (0.25 + 0.5^2) / 2 = 0.25
    #      edge = 0.75 - 4/9 = 0.30556; bet = 0.30556 / (0.25 + 0.30556^2) = 0.88999 (cap 0.5 / (4/9) = 1.125)
    #      capital = 1 + 0.88999 * (1 - 4/9) = 1.49444
    k, certain = _capital(np.array([1.0, 1.0]), 10)
    edge = 0.75 - 4 / 9
    assert k == pytest.approx(1 + edge / (0.25 + edge ** 2) * (5 / 9)) and not certain


def test_certain_once_the_seen_verdicts_settle_the_pool():
    # 6 of a pool of 10 won by a: even if b wins the other 4, a wins 6-4
    r = anytime_risk([1.0] * 6, 10, risk=0.05)
    assert r.leader == "a" and r.risk == 0.0 and r.certain
    r = anytime_risk([1.0] * 5, 10, risk=0.05)  # 5 of 10: a tie of the pool is still possible
    assert not r.certain and r.risk > 0


def test_no_evidence_no_leader():
    assert anytime_risk([], 100, 0.1).leader is None
    r = anytime_risk([0.5] * 30, 100, 0.1)  # all ties: nothing to bet on
    assert r.leader is None and r.risk == 1.0
    with pytest.raises(ParameterError):
        anytime_risk([1.5], 10, 0.1)
    with pytest.raises(ParameterError):
        anytime_risk([1.0] * 11, 10, 0.1)


def _runs(M, n_a, n_b, risk, max_labels, runs, seed):
    """Run the rule on shuffled pools; returns (decided a, decided b, labels)."""
    rng = np.random.default_rng(seed)
    base = np.array([1.0] * n_a + [0.0] * n_b + [0.5] * (M - n_a - n_b))
    da = db = 0
    labels = []
    for _ in range(runs):
        y = rng.permutation(base)
        for n in range(5, max_labels + 1):
            r = anytime_risk(y[:n], M, risk, interval=False)
            if r.leader is not None and r.risk <= risk:
                da += r.leader == "a"
                db += r.leader == "b"
                break
        labels.append(n)
    return da, db, float(np.mean(labels))


@pytest.mark.parametrize("risk", [0.05, 0.2])
def test_dead_heats_rarely_get_a_winner(risk):
    # a dead heat (100-100 with 100 ties): any winner named is wrong; the rule promises <= risk
    runs = 300
    da, db, _ = _runs(300, 100, 100, risk, 80, runs, seed=int(risk * 100))
    wrong = (da + db) / runs
    se = math.sqrt(risk * (1 - risk) / runs)
    assert wrong <= risk + 2 * se


def test_a_close_pair_is_named_right_or_not_at_all():
    # a wins 52 - 48 (no ties) in a pool of 400: naming b is wrong; measured well under 0.2
    runs = 300
    da, db, labels = _runs(400, 208, 192, 0.2, 150, runs, seed=7)
    se = math.sqrt(0.2 * 0.8 / runs)
    assert db / runs <= 0.2 + 2 * se and labels <= 150


def test_the_interval_covers_the_pool_win_rate():
    rng = np.random.default_rng(3)
    misses = 0
    for _ in range(100):
        base = np.array([1.0] * 130 + [0.0] * 50 + [0.5] * 20)  # win rate (130 + 10) / 200 = 0.7
        y = rng.permutation(base)[:60]
        lo, hi = win_rate_sequence(y, 200, 0.1)
        misses += not (lo <= 0.7 <= hi)
    assert misses <= 10 + 2 * math.sqrt(100 * 0.1 * 0.9)


def test_session_uses_the_anytime_rule_and_refuses_diffuse():
    pool = random_pair_pool(n=300, p_a=1.0, seed=2)
    d = Session(pool, RandomSelector(), risk=0.05).run(MetricOracle("human"))
    assert d.outcome == "winner" and d.winner == "A" and d.guarantee.startswith("valid")
    lo, hi = d.win_rate_interval
    assert 0.5 < lo <= hi <= 1.0  # A wins every item: the interval sits above one half
    with pytest.raises(ParameterError, match="anytime rule's guarantee needs the items in a uniformly random order"):
        Session(pool, DiffUse(encoder=DictEncoder(4)), risk=0.05)
    d = Session(pool, DiffUse(encoder=DictEncoder(4)), risk=0.05, risk_rule="paper").run(MetricOracle("human"))
    assert d.guarantee.startswith("heuristic") and d.win_rate_interval is None
    scores = np.column_stack([np.ones(50), np.zeros(50)])
    tiny = Pool(item_ids=[f"i{k}" for k in range(50)], systems=["A", "B"], scores={"human": scores})
    d = Session(tiny, RandomSelector(), risk=0.05).run(MetricOracle("human"))
    assert d.outcome == "winner" and d.labels_used <= 26  # 26 of 50 for A settles the pool at the latest


def test_interval_and_decision_agree():
    """The interval excludes 1/2 exactly when the rule's risk is at or below the level (same bettors)."""
    rng = np.random.default_rng(7)
    agree = 0
    for trial in range(300):
        M = int(rng.integers(50, 600))
        p_a, p_tie = rng.uniform(0.2, 0.8), rng.uniform(0, 0.4)
        n = int(rng.integers(1, min(M, 150) + 1))
        y = rng.choice([1.0, 0.0, 0.5], size=n, p=[p_a * (1 - p_tie), (1 - p_a) * (1 - p_tie), p_tie])
        level = float(rng.choice([0.05, 0.1, 0.2]))
        r = anytime_risk(y, M, level)
        lo, hi = r.interval
        decided = r.risk <= level
        assert decided == (not lo <= 0.5 <= hi), (trial, r.risk, level, r.interval)
        if decided:
            assert (r.leader == "a") == (lo > 0.5)
            agree += 1
    assert agree > 30  # the property was exercised on decided cases too


def test_the_interval_covers_when_nearly_the_whole_pool_is_seen():
    """Small pools judged almost to the end (SummEval test sets: 80 items): the truth stays inside.
    A grid that misses the true mean failed here (coverage 0.79 at level 0.05)."""
    rng = np.random.default_rng(11)
    misses, runs = 0, 300
    for _ in range(runs):
        M = int(rng.integers(40, 120))
        pool = rng.choice([1.0, 0.0, 0.5], size=M, p=[0.42, 0.38, 0.2])
        order = rng.permutation(M)
        n = M - int(rng.integers(0, 6))
        lo, hi = win_rate_sequence(pool[order][:n], M, 0.05)
        misses += not lo <= pool.mean() <= hi
    assert misses / runs <= 0.05 + 2 * (0.05 * 0.95 / runs) ** 0.5, misses


def test_a_settled_pool_gets_the_known_win_rate_not_an_interval_around_one_half():
    """Issue 19: 11-10 known on a 21-item pool, the last verdict an a: the rule says risk 0 (11 > 21/2)
    and the interval was [0.476, 0.524] = [10/21, 11/21], straddling 1/2, because the last verdict
    never narrowed the candidates. The whole pool is judged: its win rate is 11/21, exactly."""
    r = anytime_risk([1.0, 0.0] * 10 + [1.0], 21, 0.2)
    assert r.leader == "a" and r.risk == 0.0 and r.certain
    assert r.interval == (11 / 21, 11 / 21)
    # 11 a of 16 seen, 5 unseen: the pool's win rate is (11 + k) / 21 for k = 0..5 unseen a wins,
    # so the interval lies in [11/21, 16/21] = [0.5238, 0.7619], whatever the bettors say
    lo, hi = anytime_risk([1.0, 0.0] * 5 + [1.0] * 6, 21, 0.2).interval
    assert 11 / 21 - 1e-6 <= lo <= hi <= 16 / 21 + 1e-6 and lo > 0.5


def test_a_dead_heat_seen_whole_names_nobody():
    """10 a, 10 b and a tie on a 21-item pool, the a's first: a's capital grows on the first ten
    verdicts (risk 0.0105 before), but once the pool is judged its win rate is 10.5/21 = 1/2
    exactly: neither side can win, so both risks are 1 and the interval is the point 1/2."""
    r = anytime_risk([1.0] * 10 + [0.0] * 10 + [0.5], 21, 0.2)
    assert r.leader is None and r.risk == 1.0 and r.interval == (0.5, 0.5)
    # 5 b of a 10-item pool: a can at best tie (0 + 5 unseen <= 10/2), so a's risk is 1 and the
    # interval lies in [0, 5/10]; b leads (5 > 10/2 is not yet certain: a 5-5 tie is possible)
    r = anytime_risk([0.0] * 5, 10, 0.2)
    assert r.leader == "b" and not r.certain and 0.0 <= r.interval[0] <= r.interval[1] <= 0.5


def test_session_at_a_settled_pool_reports_the_range_still_possible():
    """A Session on 11-10 (A-B) over 21 items stops with risk 0 once the 11th A verdict is in; the
    interval is inside [11/21, (11 + unjudged)/21], above 1/2, and the point 11/21 when all 21 are
    judged (seeds 2 and 5 judge all 21; before, seed 2 gave [0.476, 0.5] with A named)."""
    scores = np.column_stack([[1.0] * 11 + [0.0] * 10, [0.0] * 11 + [1.0] * 10])
    pool = Pool(item_ids=[f"i{k}" for k in range(21)], systems=["A", "B"], scores={"human": scores},
                human_metrics=["human"])
    whole = 0
    for seed in range(8):
        d = Session(pool, RandomSelector(seed=seed), risk=0.2, min_labels=1, max_labels=21).run(MetricOracle("human"))
        lo, hi = d.win_rate_interval
        assert d.winner == "A" and d.risk == 0.0 and d.wins_a == 11
        assert 0.5 < 11 / 21 - 1e-6 <= lo <= hi <= (11 + 21 - d.labels_used) / 21 + 1e-6, (seed, lo, hi)
        if d.labels_used == 21:
            whole += 1
            assert lo == hi == 11 / 21
    assert whole >= 1


def test_a_tie_moves_the_capital_when_the_verdicts_so_far_are_unbalanced():
    """docs/confidence.md's worked example, pool of 10. After a, a (capital 1.49444, see
    test_capital_by_hand; running mean 5/6, variance sum 0.5625) a tie comes:
    m_3 = (5 - 2) / 8 = 0.375; variance 0.5625 / 3 = 0.1875; edge 5/6 - 0.375 = 0.45833;
    bet 0.45833 / (0.1875 + 0.45833^2) = 1.15284 (cap 0.5 / 0.375 = 1.333);
    capital 1.49444 * (1 + 1.15284 * (0.5 - 0.375)) = 1.70973: a tie raised a's capital.
    b's bettor (values 0, 0, 1/2) has a negative edge at every step: bet 0, capital 1.
    After a, b the verdicts are balanced: m_3 = (5 - 1) / 8 = 1/2 and a tie changes nothing."""
    k2, _ = _capital(np.array([1.0, 1.0]), 10)
    k3, _ = _capital(np.array([1.0, 1.0, 0.5]), 10)
    edge = 5 / 6 - 3 / 8
    assert k3 == pytest.approx(k2 * (1 + edge / (0.5625 / 3 + edge ** 2) * (0.5 - 3 / 8)))
    assert k3 == pytest.approx(1.70973, abs=1e-5) and k3 > k2
    assert _capital(np.array([0.0, 0.0, 0.5]), 10)[0] == 1.0
    # balanced: after a, b the tie's factor is 1 + lambda (1/2 - 1/2) = 1 (log capital unchanged)
    side = _Side(10)
    for y in (1.0, 0.0):
        side.update(y)
    before = side.log_k
    side.update(0.5)
    assert side.log_k == before and before < 0  # a, b: 1 + 0.890 (0 - 4/9) = 0.604 < 1
