"""evalsift.transparency: dimensions, scaling, strata, the random band, rankings, SMD; ChaosNLI."""

from __future__ import annotations

import numpy as np
import pytest
from _data import need
from sklearn.metrics import f1_score

from evalsift.errors import DataError, ParameterError, UnknownNameError
from evalsift.transparency import (
    accuracy,
    analyse,
    analyse_all,
    cohens_d,
    compute_dimensions,
    dimensions,
    discriminability,
    kendall_tau,
    length,
    macro_f1,
    mean_score,
    minmax_clip,
    noise,
    random_band,
    sample_indices,
    similarity_vector,
    smd,
    smd_band,
    strata,
)


# ------------------------------------------------------------------------------------------ scaling
def test_minmax_clip_known_array():
    # 0..100 plus an outlier 1000: 102 values. np.quantile (linear) at 0.02: position 0.02*101 = 2.02
    # -> 2.02; at 0.98: position 98.98 -> 98.98. So 0 -> clipped to 2.02 -> 0; 1000 -> 98.98 -> 1;
    # 50 -> (50 - 2.02) / 96.96.
    v = np.r_[np.arange(101.0), 1000.0]
    s = minmax_clip(v)
    assert s[0] == 0.0 and s[-1] == 1.0 and s[1] == 0.0
    assert s[50] == pytest.approx((50 - 2.02) / 96.96)
    assert s.min() == 0.0 and s.max() == 1.0
    # without clipping the outlier squashes everything: 50 -> 50 / 1000
    assert minmax_clip(v, clip=0.0)[50] == pytest.approx(0.05)
    # a subset scaled on its pool's scale
    assert minmax_clip([50.0], reference=v)[0] == pytest.approx(s[50])
    # the caller's array is not changed
    assert v[0] == 0.0 and v[-1] == 1000.0


# ------------------------------------------------------------------------------------------- strata
def test_strata_ten_equal():
    v = np.random.default_rng(3).normal(size=1000)
    lab = strata(v)
    assert np.bincount(lab).tolist() == [100] * 10
    # strata are value ranges in order: every value of stratum s is <= every value of stratum s+1
    for s in range(9):
        assert v[lab == s].max() <= v[lab == s + 1].min()


def test_strata_mass_is_one_stratum_and_rest_split_in_nine():
    rng = np.random.default_rng(0)
    v = np.r_[np.zeros(300), rng.random(630) + 0.01]  # 300 zeros >= 930 / 10: a mass
    rng.shuffle(v)
    lab = strata(v)
    sizes = np.bincount(lab)
    assert sizes.size == 10
    assert sizes[0] == 300 and set(lab[v == 0]) == {0}
    assert sizes[1:].tolist() == [70] * 9  # 630 / 9
    # a tie smaller than a stratum is not a mass: 50 zeros of 1000 -> 10 strata of 100
    w = np.r_[np.zeros(50), rng.random(950) + 1]
    assert np.bincount(strata(w)).tolist() == [100] * 10


def test_strata_nan_items_join_no_stratum():
    v = np.r_[np.arange(20.0), np.nan]
    lab = strata(v, 4)
    assert lab[-1] == -1 and np.bincount(lab[:-1]).tolist() == [5, 5, 5, 5]


# --------------------------------------------------------------------------------------- dimensions
def test_noise_known_label_matrix():
    counts = np.array([[10, 0, 0],   # unanimous: 1 - 10/10 = 0
                       [5, 3, 2],    # 1 - 5/10 = 0.5
                       [4, 4, 2],    # tie for the majority: 1 - 4/10 = 0.6
                       [1, 0, 0]])   # one label: undefined
    out = noise(counts)
    assert out[:3].tolist() == pytest.approx([0.0, 0.5, 0.6])
    assert np.isnan(out[3])
    # the same from label lists
    lists = [["e"] * 10, ["e"] * 5 + ["n"] * 3 + ["c"] * 2, ["e"] * 4 + ["n"] * 4 + ["c"] * 2, ["e"]]
    np.testing.assert_allclose(noise(labels=lists), out)
    # numeric repeats: std (ddof 0) / range; [1, 3, 5] on 1..5: sqrt(8/3) / 4
    r = noise(ratings=[[1, 3, 5], [4, 4, np.nan]], scale=(1, 5))
    assert r.tolist() == pytest.approx([np.sqrt(8 / 3) / 4, 0.0])


def test_length_pairs_sum():
    assert length([("a b c", "d e"), "x", None]).tolist()[:2] == [5.0, 1.0]
    assert np.isnan(length([None])[0])


def test_score_difficulty_scored_data():
    # scores on a global range 0..10: item 0 (10, 0) -> 1 - 0.5; item 1 (10, 10) -> 0; item 2 (0, 0) -> 1
    d = compute_dimensions(["score_difficulty"], scores=[[10, 0], [10, 10], [0, 0]])["score_difficulty"]
    assert d.tolist() == pytest.approx([0.5, 0.0, 1.0])


def test_difficulty_is_pvi_and_the_old_score_call_gets_a_pointer():
    from evalsift.transparency import difficulty, pvi

    assert dimensions.get("difficulty") is dimensions.get("pvi") is pvi and difficulty is pvi
    with pytest.raises(DataError, match="score_difficulty") as e:
        difficulty(np.array([[1.0, 0.0], [0.0, 0.0]]))
    assert e.value.field == "texts"
    texts = ["good fine"] * 10 + ["bad awful"] * 10
    gold = ["p"] * 10 + ["n"] * 10
    with pytest.warns(FutureWarning, match="'pvi' is a deprecated alias of 'difficulty'"):
        old = compute_dimensions(["pvi"], texts=texts, gold=gold)["pvi"]
    assert np.array_equal(old, compute_dimensions(["difficulty"], texts=texts, gold=gold)["difficulty"])


def test_random_dimension_is_the_papers_baseline_row():
    v = compute_dimensions(["random"], texts=["a"] * 50, seed=3)["random"]
    assert v.shape == (50,) and np.array_equal(v, compute_dimensions(["random"], texts=["b"] * 50, seed=3)["random"])
    # not the bootstrap's stream of the same seed: its strata are not one of the random samples
    keys = np.random.default_rng(3).random((1, 50))[0]
    assert not np.array_equal(v, keys) and abs(np.corrcoef(v, keys)[0, 1]) < 0.5
    with pytest.raises(ParameterError, match="n_items"):
        compute_dimensions(["random"])


def test_irt_dimensions_one_finite_value_per_item():
    rng = np.random.default_rng(0)
    theta, b = rng.normal(size=30), rng.normal(size=80)
    Y = (rng.random((30, 80)) < 1 / (1 + np.exp(-(theta[:, None] - b)))).astype(float)  # systems x items
    d = compute_dimensions(["irt_difficulty", "discriminability"], responses=Y)
    for name in ("irt_difficulty", "discriminability"):
        assert d[name].shape == (80,) and np.all(np.isfinite(d[name]))
    assert np.all(d["discriminability"] > 0)
    assert np.corrcoef(d["irt_difficulty"], b)[0, 1] > 0.7
    # continuous responses outside [0, 1] are scaled, not refused
    assert np.all(np.isfinite(discriminability(Y * 5 - 1)))


def test_registry_and_unknown_name():
    assert {"length", "noise", "difficulty", "score_difficulty", "irt_difficulty", "discriminability", "random",
            "ngram_perplexity", "perplexity"} <= set(dimensions)
    with pytest.raises(UnknownNameError, match="Did you mean 'noise'"):
        compute_dimensions(["nosie"], counts=[[1, 1]])


# ------------------------------------------------------------------------------------- performance
def test_macro_f1_matches_sklearn_on_many_subsets():
    rng = np.random.default_rng(1)
    gold = rng.integers(0, 3, 300)
    preds = {"A": np.where(rng.random(300) < 0.7, gold, rng.integers(0, 3, 300)), "B": rng.integers(0, 3, 300)}
    perf = macro_f1(preds, gold)
    idx = np.vstack([rng.choice(300, 20, replace=False) for _ in range(25)])
    got = perf(idx)
    for k in range(25):
        for j, m in enumerate(preds):
            assert got[k, j] == pytest.approx(f1_score(gold[idx[k]], preds[m][idx[k]], average="macro"))


def test_bootstrap_band_contains_full_performance_and_is_reproducible():
    rng = np.random.default_rng(2)
    perf = mean_score(rng.random((1000, 4)) < np.array([0.3, 0.5, 0.7, 0.9]))
    band, samples = random_band(perf, seed=5)
    full = perf.full()
    assert samples.shape == (200, 4) and band.shape == (2, 4)
    assert np.all(band[0] <= full) and np.all(full <= band[1])
    _, samples2 = random_band(perf, seed=5)
    np.testing.assert_array_equal(samples, samples2)
    assert not np.array_equal(samples, random_band(perf, seed=6)[1])
    # 10% samples of 1000 items: each sample holds 100 distinct items
    # (the band of a mean of 100 Bernoulli(0.5) draws is about 0.5 +- 1.96 * 0.05 * sqrt(0.9))
    assert band[1, 1] - band[0, 1] == pytest.approx(2 * 1.96 * 0.05 * np.sqrt(0.9), rel=0.25)


def test_kendall_tau_matches_scipy():
    from scipy.stats import kendalltau
    rng = np.random.default_rng(4)
    x, y = rng.integers(0, 4, (30, 7)).astype(float), rng.random(7)
    got = kendall_tau(x, y)
    want = [kendalltau(r, y)[0] for r in x]
    np.testing.assert_allclose(got, want, equal_nan=True)


# --------------------------------------------------------------------------------- planted effects
def _planted(n=2000, models=6, seed=0):
    rng = np.random.default_rng(seed)
    strong, weak = rng.random(n), rng.random(n)
    skill = np.linspace(0.55, 0.8, models)
    p = np.clip(skill[None, :] + 0.35 - 0.7 * strong[:, None], 0.02, 0.98)  # depends on `strong` only
    correct = rng.random((n, models)) < p
    return {"strong": strong, "weak": weak}, mean_score(correct)


def test_planted_effect_many_significant_strata_for_the_dimension_that_matters():
    dims, perf = _planted()
    res = analyse_all(dims, perf, seed=0)
    s, w = res["strong"], res["weak"]
    assert s.pct_significant >= 60          # accuracy swings from ~0.9 to ~0.2 over the strata
    assert w.pct_significant <= 15          # ~5% expected by chance (a 95% band)
    assert np.all(s.sigma > 3 * w.sigma)
    # performance falls with the strong dimension: the first stratum beats the last for every model
    assert np.all(s.stratum_perf[0] > s.stratum_perf[-1])
    assert s.strata_sizes.tolist() == [200] * 10


def test_planted_ranking_change_is_detected():
    # 5 models; on the top 10% of dimension x the order reverses
    rng = np.random.default_rng(7)
    n = 3000
    x = rng.random(n)
    skill = np.linspace(0.5, 0.8, 5)
    p = np.where(x[:, None] > 0.9, skill[::-1], skill)[...]
    correct = rng.random((n, 5)) < p
    r = analyse(x, mean_score(correct), name="x", seed=0)
    assert r.rank_significant[-1] and r.stratum_tau[-1] < 0
    assert r.n_rank_significant <= 3
    # a random dimension changes no ranking this much
    r0 = analyse(rng.random(n), mean_score(correct), name="random", seed=0)
    assert np.all(r0.stratum_tau > -0.5)


def test_rank_test_is_two_sided_a_stratum_that_ranks_too_consistently_is_flagged():
    # 20 systems, noisy everywhere except the top 10% of x, where they are sharply ordered: random
    # 10% samples reproduce the overall order only loosely (tau band ~[0.6, 0.87]), the top stratum
    # reproduces it almost exactly (tau ~0.95) -- outside the band on the UPPER side (Algorithm 2
    # counts both sides; measured over seeds 0-4: top tau 0.93-0.99, upper end 0.85-0.87).
    rng = np.random.default_rng(0)
    n, k = 4000, 20
    x = rng.random(n)
    top = x > 0.9
    s = rng.normal(0, 3, (n, k))
    s[top] = 0.5 * np.arange(k) + rng.normal(0, 0.1, (top.sum(), k))
    r = analyse(x, mean_score(s), name="x", seed=0)
    lo, hi = r.tau_band
    assert r.stratum_tau[-1] > hi and r.rank_significant[-1] and r.rank_change_possible
    assert np.array_equal(r.rank_significant, (r.stratum_tau < lo) | (r.stratum_tau > hi))
    assert r.to_dict()["tau_band"] == [lo, hi]


def test_rank_change_impossible_when_the_tau_band_covers_everything():
    # 2 systems of equal skill: their order flips in about half of the random samples, so the band
    # of tau is [-1, 1] and no stratum can be flagged -- said, not silently 0
    rng = np.random.default_rng(1)
    r = analyse(rng.random(400), mean_score(rng.random((400, 2)) < 0.7), seed=0)
    assert r.tau_band.tolist() == [-1.0, 1.0]
    assert not r.rank_change_possible and r.n_rank_significant == 0


# --------------------------------------------------------------------------------------------- SMD
def test_smd_random_subset_near_zero_and_length_chosen_subset_large():
    rng = np.random.default_rng(0)
    texts = [" ".join(["w"] * k) for k in rng.integers(1, 60, 2000)]
    dims = {"length": length(texts), "other": rng.random(2000)}
    rand = rng.choice(2000, 200, replace=False)
    longest = np.argsort(dims["length"])[-200:]
    sub = lambda idx: {k: v[idx] for k, v in dims.items()}
    near = similarity_vector(sub(rand), dims)
    far = similarity_vector(sub(longest), dims)
    assert abs(near["length"]) < 0.25 and abs(near["other"]) < 0.25
    assert far["length"] > 1.0 and abs(far["other"]) < 0.25
    band = smd_band(dims, fracs=(0.05, 0.1, 0.2), seed=0)
    for frac in (0.05, 0.1, 0.2):
        lo, hi = band[frac]["length"]
        assert lo < 0 < hi < 0.5
        assert not lo <= far["length"] <= hi
    # smaller samples -> wider band
    width = {f: band[f]["length"][1] - band[f]["length"][0] for f in band}
    assert width[0.05] > width[0.1] > width[0.2]
    assert smd([0.0, 1.0], [0.0, 1.0]) == 0.0


def test_smd_is_the_papers_formula_and_cohens_d_the_pooled_one():
    # uneven sizes: a = [0, 2] (mean 1, var 2), b = [0..4] (mean 2, var 2.5)
    # paper (Sec. 5): -1 / sqrt((2 + 2.5) / 2) = -1 / 1.5; pooled: -1 / sqrt((1*2 + 4*2.5) / 5) = -1 / sqrt(2.4)
    a, b = [0.0, 2.0], [0.0, 1.0, 2.0, 3.0, 4.0]
    assert smd(a, b) == pytest.approx(-1 / 1.5)
    assert cohens_d(a, b) == pytest.approx(-1 / np.sqrt(2.4))
    assert smd(b, a) == pytest.approx(-smd(a, b))
    # equal sizes: the two agree
    rng = np.random.default_rng(3)
    x, y = rng.random(40), rng.random(40) + 0.3
    assert smd(x, y) == pytest.approx(cohens_d(x, y))
    # the vectorised band uses the same formula: a 100% "sample" is the pool, SMD 0; and with one
    # sample of 10% the band's ends are that sample's smd() against the pool
    v = rng.random(300)
    b1 = smd_band({"v": v}, fracs=(0.1,), n_samples=1, seed=4, scale=False)[0.1]["v"]
    idx = sample_indices(300, 30, 1, seed=4)[0]
    assert b1[0] == pytest.approx(smd(v[idx], v)) and b1[1] == pytest.approx(smd(v[idx], v))


# --------------------------------------------------------------------------------------- bad input
def test_bad_input_names_the_field():
    perf = mean_score(np.ones((10, 2)))
    with pytest.raises(DataError) as e:
        analyse(np.arange(9.0), perf, name="length")
    assert e.value.field == "length"
    with pytest.raises(DataError) as e:
        accuracy({"A": [0, 1, 2]}, [0, 1])
    assert e.value.field == "gold"
    with pytest.raises(DataError) as e:
        noise([])
    assert e.value.field == "counts"
    with pytest.raises(DataError) as e:
        length([])
    assert e.value.field == "texts"
    with pytest.raises(DataError) as e:
        mean_score(np.empty((0, 2)))
    assert e.value.field == "scores"
    with pytest.raises(ParameterError) as e:
        strata(np.arange(10.0), 1)
    assert e.value.field == "n_strata"
    with pytest.raises(ParameterError) as e:
        analyse(np.arange(10.0), perf, frac=0)
    assert e.value.field == "frac"
    with pytest.raises(ParameterError) as e:
        noise(counts=[[1, 2]], labels=[["a", "b"]])
    assert e.value.field == "counts"
    with pytest.raises(DataError) as e:
        compute_dimensions(["length", "noise"], texts=["a", "b"], counts=[[1, 1]])
    assert e.value.field in ("length", "noise")
    with pytest.raises(DataError) as e:
        similarity_vector({"length": [1.0, 2.0]}, {"noise": [1.0, 2.0]})
    assert e.value.field == "length"
    with pytest.raises(DataError) as e:
        discriminability(np.ones((1, 5)))  # one system
    assert e.value.field == "responses"


# --------------------------------------------------------------------------------------- real data
@pytest.mark.parametrize("name", ["snli", "mnli_m"])
def test_chaosnli_noisy_items_are_harder(name):
    from evalsift.io import read_chaosnli

    pool = read_chaosnli(need("chaosnli/chaosNLI_v1.0", "chaosnli/predictions").parent, subset=name)
    assert pool.n_items > 1000 and pool.n_systems >= 3
    assert np.all(pool.metadata["label_count"].sum(axis=1) == 100)
    dims = compute_dimensions(["noise", "length"], pool=pool)  # counts and (premise, hypothesis) from the pool
    gold = list(pool.metadata["gold"])
    perf = accuracy({s: list(pool.outputs[s]) for s in pool.systems}, [{"e": "entailment", "n": "neutral",
                                                                        "c": "contradiction"}[g] for g in gold])
    np.testing.assert_allclose(perf.full(), np.asarray(pool.scores["correct"]).mean(axis=0))
    res = analyse_all(dims, perf, seed=0)
    n = res["noise"]
    assert res["length"].strata_sizes.sum() == pool.n_items
    assert n.strata_sizes.sum() == pool.n_items
    # the paper's finding: the noisiest stratum is the hardest
    assert np.all(n.stratum_perf[-1] < n.stratum_perf[0])
    assert n.stratum_perf[-1].mean() < n.full_perf.mean() < n.stratum_perf[0].mean()


def test_metric_change_baseline_and_bad_input():
    from evalsift.transparency import metric_change

    gold = np.array([0, 1] * 50)
    pred = {"A": gold.copy(), "B": np.zeros(100, dtype=int)}
    r = metric_change(accuracy(pred, gold), macro_f1(pred, gold))
    assert r["per_model"][0] == pytest.approx(0.0) and r["per_model"][1] > 0.1  # B: accuracy .5, macro-F1 1/3
    with pytest.raises(DataError, match="same models"):
        metric_change(accuracy(pred, gold), accuracy({"A": gold}, gold))
