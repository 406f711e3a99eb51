"""Which human battles to ask for (evalsift.arena.design, issue 22 part 3): the strata, Neyman's
allocation with bounds, the stratified draw and the stratified variance it needs, and whether the
leaderboard from a ``neyman`` draw still covers known strengths."""

from __future__ import annotations

import json

import numpy as np
import pytest

from evalsift.arena import Battles, fit_bt_ppi, ranks
from evalsift.arena.bt import bootstrap_bt_ppi
from evalsift.arena.design import (crossfit_folds, design_strata, draw_neyman, integer_allocation, judge_class,
                                   neyman_allocation, pilot_allocation)
from evalsift.arena.leaderboard import leaderboard
from evalsift.cli import main
from evalsift.errors import ParameterError

from _data import need


def league(seed: int, n: int = 6000, K: int = 8, sd: float = 0.7, uneven: bool = False):
    """Bradley-Terry battles over random pairs from known strengths, and a judge: right 70% of the time and
    a coin otherwise, or (``uneven``) right 90% of the time on a random half of the pairs and a coin elsewhere."""
    rng = np.random.default_rng(seed)
    beta = rng.normal(0, sd, K)
    a = rng.integers(K, size=n)
    b = (a + rng.integers(1, K, size=n)) % K
    y = (rng.random(n) < 1 / (1 + np.exp(-(beta[a] - beta[b])))).astype(float)
    coin = rng.integers(2, size=n).astype(float)
    if uneven:
        knows = np.triu(rng.random((K, K)) < 0.5, 1)
        knows = knows | knows.T
        f = np.where(knows[a, b], np.where(rng.random(n) < 0.9, y, 1 - y), coin)
    else:
        f = np.where(rng.random(n) < 0.7, y, coin)
    return Battles.from_arrays([f"m{k}" for k in range(K)], a, b, y, judges={"judge": f}), beta - beta.mean()


def test_integer_allocation_by_hand():
    # 8 battles over weights 1 : 1 : 2 with the middle stratum capped at 1: the other two share 7 as 1 : 2,
    # 2.33 and 4.67 -> floors 2 and 4, and the largest remainder (0.67) takes the last one
    assert integer_allocation(np.array([1.0, 1.0, 2.0]), 8, np.zeros(3, int), np.array([10, 1, 10])).tolist() == [2, 1, 5]
    # lower bounds hold even where the weight is 0, and the total is exact
    n = integer_allocation(np.array([0.0, 3.0, 1.0]), 10, np.array([2, 2, 2]), np.array([5, 5, 5]))
    assert n.tolist() == [2, 5, 3] and n.sum() == 10
    # more than the strata hold: every stratum taken whole
    assert integer_allocation(np.ones(2), 99, np.zeros(2, int), np.array([3, 4])).tolist() == [3, 4]


def test_strata_by_hand():
    """Pair X-Y: 60 battles, the judge says X won in 50 and Y in 10; pair Y-Z: 40, a tie in all; pair X-Z:
    6 battles. Budget 20 of 106: a cell needs 4 * 106 / 20 = 21.2 battles to be its own stratum. X-Y's 50
    'X won' and Y-Z's 40 ties are strata; X-Y's 10 'Y won' are that pair's rest (10 < 21.2, so it joins
    the one stratum of small rests, with X-Z's 6). Each is then cut in two halves."""
    a = [0] * 60 + [1] * 40 + [0] * 6
    b = [1] * 60 + [2] * 40 + [2] * 6
    f = [1.0] * 50 + [0.0] * 10 + [0.5] * 40 + [1.0] * 6
    battles = Battles.from_arrays(["X", "Y", "Z"], a, b, [1.0] * 106, judges={"j": f})
    cls = judge_class(battles, ["j"])
    assert cls[:50].tolist() == [2] * 50 and cls[50:60].tolist() == [0] * 10 and set(cls[60:100]) == {1}
    label, sizes = design_strata(battles, ["j"], budget=20)
    # each stratum then cut in two halves, its battles alternately in file order: 50 -> 25 + 25, 40 -> 20 + 20,
    # the small rests' 10 + 6 -> 8 + 8
    assert sorted(sizes.tolist()) == [8, 8, 20, 20, 25, 25]
    assert label[0:50:2].tolist() == [label[0]] * 25 and label[1:50:2].tolist() == [label[1]] * 25
    assert label[1] == label[0] + 1  # twins side by side, so crossfit_folds puts them on both sides
    assert len(set(label[60:100])) == 2 and len(set(label[:50]) | set(label[60:100])) == 4
    assert set(label[50:60].tolist() + label[100:].tolist()) == {label[50], label[51]}
    # the judge given from the other side reads the same: classes are oriented to the pair
    flipped = Battles.from_arrays(["X", "Y", "Z"], b, a, [0.0] * 106, judges={"j": [1 - v for v in f]})
    assert judge_class(flipped, ["j"]).tolist() == cls.tolist()
    # without judges the strata are the pairs: X-Z's 6 < 21.2 is the rest; each cut in two
    assert sorted(design_strata(battles, None, budget=20)[1].tolist()) == [3, 3, 20, 20, 30, 30]


def test_a_neyman_draw_is_a_stratified_sample_with_its_probabilities():
    battles, _ = league(1, n=6000)
    idx, prob, strata = draw_neyman(battles, 900, np.random.default_rng(0), ["judge"], alpha=0.1)
    label, N = design_strata(battles, ["judge"], 900)
    assert len(idx) == 900 and len(set(idx.tolist())) == 900  # without replacement, the whole budget
    assert np.array_equal(strata, label[idx])
    n = np.bincount(strata, minlength=len(N))
    assert np.allclose(prob, n[strata] / N[strata])  # inclusion probability n_h / N_h, exactly
    assert np.all(n >= np.minimum(N, 2))  # every stratum can estimate its variance
    assert len(N) <= 2 * (900 / 4 + 1)
    again = draw_neyman(battles, 900, np.random.default_rng(0), ["judge"], alpha=0.1)
    assert np.array_equal(again[0], idx)  # the seed decides the draw


def test_stratified_variance_by_hand():
    """Two models; stratum 0 holds 10 battles, 2 drawn (X won, Y won); stratum 1 holds 20, 4 drawn (X won 3).
    Every draw weighs 5, so X's weighted share is (5 * 1 + 5 * 3) / 30 = 2/3 and p = 2/3. Scores p - y:
    stratum 0: -1/3, 2/3 (mean 1/6, squared deviations 1/4 + 1/4); stratum 1: -1/3 x 3, 2/3 (mean -1/12,
    3/16 + 9/16 = 3/4). Stratified variance of the weighted score sum: 2/1 * 25 * 1/2 + 4/3 * 25 * 3/4 = 50,
    plus the spread of the strata's means around their weighted mean (10 * 1/6 + 20 * -1/12) / 30 = 0:
    10 * (1/6)^2 + 20 * (1/12)^2 = 5/12. Information 30 * p(1 - p) = 20/3, so Var(beta_X - beta_Y) =
    (50 + 5/12) / (20/3)^2 = 1.1344."""
    pop = Battles.from_arrays(["X", "Y"], [0] * 30, [1] * 30, [1.0] * 30)  # the verdicts of undrawn battles are never read
    lab = np.array([0, 1, 10, 11, 12, 13])
    verdicts = np.array([1.0, 0.0, 1.0, 1.0, 1.0, 0.0])
    strata = np.array([0, 0, 1, 1, 1, 1])
    fit = fit_bt_ppi(pop, lab, [], prob=np.full(6, 0.2), verdicts=verdicts, strata=strata)
    d_var = fit.cov[0, 0] + fit.cov[1, 1] - 2 * fit.cov[0, 1]
    assert d_var == pytest.approx(1.1344, rel=0.02)  # the ridge moves p off 2/3 a little
    assert float(fit.coef[0] - fit.coef[1]) == pytest.approx(np.log(2), abs=0.02)


def test_stratified_bootstrap_agrees_with_the_stratified_sandwich():
    battles, _ = league(2, n=8000)
    idx, prob, strata = draw_neyman(battles, 1200, np.random.default_rng(3), ["judge"], alpha=0.1)
    fit = fit_bt_ppi(battles, idx, ["judge"], prob=prob, strata=strata)
    draws = bootstrap_bt_ppi(battles, idx, ["judge"], list(fit.lam.values()), 400, prob=prob, seed=4, strata=strata)
    ratio = draws.std(axis=0, ddof=1) / fit.se
    assert np.all((ratio > 0.8) & (ratio < 1.25)), ratio  # 400 replicates: the sd is known to about 4%


@pytest.mark.parametrize("uneven", [False, True])
def test_neyman_leaderboards_cover_known_strengths(uneven):
    """40 leagues with known strengths, 800 human battles drawn by neyman with the judge: per-model 90%
    intervals cover the true strengths at least 0.9 - 3 s.e. of 320 model-leagues (0.85), and the
    simultaneous rank-sets hold every true rank in at least 0.9 - 2 s.e. of 40 leagues."""
    cover, joint = [], []
    for s in range(40):
        battles, beta = league(600 + s, n=6000, uneven=uneven)
        L = leaderboard(battles, human_budget=800, allocation="neyman", alpha=0.1, seed=s)
        truth = 1000 + 400 / np.log(10) * beta
        cover.extend((L.interval[:, 0] <= truth) & (truth <= L.interval[:, 1]))
        r = ranks(beta)
        joint.append(bool(np.all((L.rank_set[:, 0] <= r) & (r <= L.rank_set[:, 1]))))
    assert np.mean(cover) >= 0.9 - 3 * (0.09 / 320) ** 0.5
    assert np.mean(joint) >= 0.9 - 2 * (0.09 / 40) ** 0.5


def test_neyman_sends_people_where_the_judge_is_a_coin():
    """With a judge right 90% of the time on half the pairs and a coin on the others, the PPI residual is
    larger where the judge tosses coins: a neyman draw puts a larger share of the human battles there than
    those pairs' share of all battles (a uniform draw's share: off by about 0.017 in one league of 900
    draws, 0.0055 in the mean of ten; measured: 0.024)."""
    more = []
    for s in range(10):
        battles, _ = league(700 + s, n=6000, uneven=True)
        idx, _, _ = draw_neyman(battles, 900, np.random.default_rng(s), ["judge"], alpha=0.1)
        f, y = battles.judges["judge"], battles.y
        # a pair where the judge is a coin agrees with people about half the time; a known pair 90%
        key = np.minimum(battles.a, battles.b) * 8 + np.maximum(battles.a, battles.b)
        agree = {k: np.mean(f[key == k] == y[key == k]) for k in np.unique(key)}
        coin = np.array([agree[k] < 0.7 for k in key])
        more.append(coin[idx].mean() - coin.mean())
    assert np.mean(more) > 0.012


def test_no_stratum_steers_its_own_share():
    """Issue 29: Neyman's rule is cross-fitted. The strata fall into two folds (each holding one half of every
    cell), and one fold's shares are read from the other fold's draws only. Turning every verdict drawn in one
    fold upside down (y -> 1 - y) leaves that fold's allocation exactly as it was and moves the other fold's
    (so the verdicts do steer, only never their own stratum's). Before, a stratum's share read its own draws:
    flipping them moved it."""
    battles, _ = league(5, n=6000, uneven=True)
    label, N = design_strata(battles, ["judge"], 900)
    rng = np.random.default_rng(1)
    n0 = pilot_allocation(N, 900)
    idx = np.concatenate([rng.choice(np.flatnonzero(label == h), k, replace=False) for h, k in enumerate(n0)])
    y = battles.y[idx]
    fold = crossfit_folds(N)
    assert set(fold.tolist()) == {0, 1} and abs(N[fold == 0].sum() - N.sum() / 2) < N.max()  # two even folds
    before = neyman_allocation(battles, idx, y, label, N, ["judge"], 600, 900, 0.1)
    for side in (0, 1):
        flipped = np.where(fold[label[idx]] == side, 1.0 - y, y)
        after = neyman_allocation(battles, idx, flipped, label, N, ["judge"], 600, 900, 0.1)
        assert after.sum() == before.sum() == 600 and np.all(after >= n0)
        assert np.array_equal(after[fold == side], before[fold == side])  # its own verdicts: no effect
        assert not np.array_equal(after[fold != side], before[fold != side])  # the other fold reads them


def test_neyman_from_the_command_line_on_the_arena_files(tmp_path, capsys):
    folder = need("arena-ppr/human.jsonl").parent
    out = tmp_path / "ney"
    assert main(["arena", "--data", str(folder / "human.jsonl"), "--judge", str(folder / "gpt-4-0125-preview.jsonl"),
                 "--human-budget", "1000", "--allocation", "neyman", "--alpha", "0.1", "--seed", "2", "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    res = json.loads((out / "results.json").read_text())
    assert res["allocation"] == "neyman" and res["human_battles_used"] == 1000 and res["strata"].endswith("each")
    assert "drawn by neyman" in printed and "strata" in printed
    from evalsift.arena import read_battles

    assert main(["arena", "--data", str(folder / "human.jsonl"), "--allocation", "neyman", "--out", str(tmp_path / "x")]) == 2
    assert "--allocation neyman chooses which human battles to use: give --human-budget N" in capsys.readouterr().err
    with pytest.raises(ParameterError, match="--ties davidson fits battles drawn uniformly"):
        leaderboard(read_battles(str(folder / "human.jsonl")), judges=[], human_budget=500, allocation="neyman",
                    ties="davidson")
