"""Utility selectors, wrappers and source-based selection, with hand-computed expectations."""

import numpy as np
import pytest

from evalsift.errors import DataError, ParameterError
from evalsift.pool import Pool
from evalsift.select import DocumentLevel, DomainBalanced, make_selector
from evalsift.select.combinator import normalize_utilities
from evalsift.select.irt import responses_from_scores

from _fakes import DictEncoder, vec_text

# items x systems
S = np.array([[1.0, 2.0, 3.0],
              [4.0, 4.0, 4.0],
              [0.0, 6.0, 0.0]])


def pool_of(scores, **kw):
    n, k = scores.shape
    return Pool(item_ids=[f"i{i}" for i in range(n)], systems=[f"s{j}" for j in range(k)],
                scores={"m": scores, "human": scores}, human_metrics=["human"], **kw)


def test_metric_avg_hardest_first():
    # means 2, 4, 2 -> utilities -2, -4, -2 -> order 0, 2 (tie kept in pool order), 1
    sel = make_selector("metric_avg", metric="m").fit(pool_of(S))
    assert sel.select(3).items.tolist() == [0, 2, 1]
    np.testing.assert_allclose(sel.utilities_, [-2, -4, -2])


def test_metric_avg_lower_is_better_flips():
    sel = make_selector("metric_avg", metric="m", higher_is_better=False).fit(pool_of(S))
    np.testing.assert_allclose(sel.utilities_, [2, 4, 2])  # -(mean of -scores)


def test_metric_var():
    # var(1,2,3) = 2/3; var(4,4,4) = 0; var(0,6,0): mean 2, squared deviations 4, 16, 4 -> 24/3 = 8
    sel = make_selector("metric_var", metric="m").fit(pool_of(S))
    np.testing.assert_allclose(sel.utilities_, [2 / 3, 0, 8])
    assert sel.select(3).items.tolist() == [2, 0, 1]


def test_metric_cons_by_hand():
    # system means (5/3, 4, 7/3) rank (1, 3, 2)
    # item 0 ranks (1, 2, 3): d = (0, -1, 1), rho = 1 - 6 * 2 / (3 * 8) = 0.5
    # item 1 is constant: no ordering -> 0
    # item 2 ranks (1.5, 3, 1.5) vs (1, 3, 2): centred (-.5, 1, -.5), (-1, 1, 0): 1.5 / sqrt(1.5 * 2) = 0.866
    sel = make_selector("metric_cons", metric="m").fit(pool_of(S))
    np.testing.assert_allclose(sel.utilities_, [0.5, 0.0, 1.5 / np.sqrt(3.0)])


def test_items_with_fewer_than_two_scores_go_last():
    T = S.copy()
    T[0, 1:] = np.nan
    sel = make_selector("metric_var", metric="m").fit(pool_of(T))
    assert np.isnan(sel.utilities_[0]) and sel.select(3).items.tolist()[-1] == 0


def test_metric_needed_when_ambiguous():
    p = Pool(item_ids=["a", "b"], systems=["x", "y"], scores={"m1": np.ones((2, 2)), "m2": np.ones((2, 2))})
    with pytest.raises(ParameterError, match="automatic metrics: m1, m2"):
        make_selector("metric_var").fit(p)
    assert make_selector("metric_var").fit(p.with_scores("m2", np.ones((2, 2)), human=True)).select(1)


def test_irt_selector_uses_fitted_item_parameters():
    from evalsift.irt import fit_irt

    rng = np.random.default_rng(0)
    scores = rng.random((30, 6))
    sel = make_selector("irt", metric="m", utility="disc").fit(pool_of(scores))
    ref = fit_irt(responses_from_scores(scores), "3plu", seed=0)  # the default: the paper's Eq. 7 model
    assert sel.irt_.model == "3plu" and np.all(sel.irt_.feasibility < 1)
    np.testing.assert_allclose(sel.utilities_, ref.discrimination)
    fisher = make_selector("irt_fisher", metric="m").fit(pool_of(scores))
    np.testing.assert_allclose(fisher.utilities_, ref.item_information(ref.ability))
    # irt_2pl: difficulty x discrimination of the model without the feasibility term
    two = fit_irt(responses_from_scores(scores), "2pl", seed=0)
    np.testing.assert_allclose(make_selector("irt_2pl", metric="m").fit(pool_of(scores)).utilities_,
                               two.difficulty * two.discrimination)


def test_responses_scaled_over_the_matrix():
    # min 0, max 10: (0, 5, 10) -> (0, .5, 1), transposed to systems x items
    y = responses_from_scores(np.array([[0.0, 5.0], [10.0, 5.0]]))
    np.testing.assert_allclose(y, [[0.0, 1.0], [0.5, 0.5]])


def test_normalizers():
    u = np.array([3.0, 1.0, np.nan])  # NaN -> lowest (1.0)
    np.testing.assert_allclose(normalize_utilities(u, "rank"), [1.0, 1.5 / 3, 1.5 / 3])
    np.testing.assert_allclose(normalize_utilities(u, "minmax"), [1.0, 0.0, 0.0])
    # z-scores of (3, 1, 1): mean 5/3, std sqrt(8/9)
    np.testing.assert_allclose(normalize_utilities(u, "zscore"), (np.array([3, 1, 1]) - 5 / 3) / np.sqrt(8 / 9))


def test_combinator_mean_and_product():
    # metric_var (2/3, 0, 8) ranks (2, 1, 3)/3; metric_avg (-2, -4, -2) ranks (2.5, 1, 2.5)/3
    c = make_selector("combinator", methods=("metric_var", "metric_avg"), params={"metric": "m"}).fit(pool_of(S))
    np.testing.assert_allclose(c.utilities_, [(2 + 2.5) / 6, (1 + 1) / 6, (3 + 2.5) / 6])
    p = make_selector("combinator", methods=("metric_var", "metric_avg"), aggregate="product",
                      weights=(1, 2), params={"metric": "m"}).fit(pool_of(S))
    np.testing.assert_allclose(p.utilities_, np.array([2, 1, 3]) / 3 * (np.array([2.5, 1, 2.5]) / 3) ** 2)
    with pytest.raises(ParameterError, match="non-negative"):
        make_selector("combinator", aggregate="product", normalize="zscore")
    with pytest.raises(ParameterError, match="no per-item utilities"):
        make_selector("combinator", methods=("kmeans",)).fit(pool_of(S))


def test_domain_balanced_equal_shares():
    scores = np.arange(16, dtype=float).reshape(8, 2)
    domains = ["big"] * 6 + ["small"] * 2
    pool = pool_of(scores, metadata={"domain": domains})
    sel = DomainBalanced("metric_avg", metric="m").fit(pool)
    picks = sel.select(4).items.tolist()
    assert sum(domains[i] == "small" for i in picks) == 2  # 2 + 2
    picks = sel.select(7).items.tolist()  # small runs out after 2: the rest come from big
    assert sorted(domains[i] for i in picks).count("small") == 2 and len(picks) == 7
    # within a domain, best utility first: metric_avg = lowest mean first -> items 0, 1 of big; 6, 7 of small
    assert set(sel.select(4).items.tolist()) == {0, 1, 6, 7}


def test_document_level_takes_whole_documents_within_budget():
    scores = np.array([[5.0, 0.0], [5.0, 0.0], [1.0, 1.0], [3.0, 0.0], [0.0, 0.0], [2.0, 2.0]])
    docs = ["d1", "d1", "d2", "d3", "d3", "d3"]
    # metric_var per item: 6.25, 6.25, 0, 2.25, 0, 0 -> doc means d1 6.25, d2 0, d3 0.75
    sel = DocumentLevel("metric_var", metric="m").fit(pool_of(scores, metadata={"doc": docs}))
    assert sel.document_utilities() == pytest.approx({"d1": 6.25, "d2": 0.0, "d3": 0.75})
    assert sel.select(2).items.tolist() == [0, 1]
    assert sel.select(5).items.tolist() == [0, 1, 3, 4, 5]  # d1 then d3; d2 would overshoot
    assert sel.select(4).items.tolist() == [0, 1, 2]  # d3 (3 items) does not fit; d2 does


def test_wrapper_needs_the_field():
    with pytest.raises(DataError, match="no metadata field 'domain'"):
        DomainBalanced("random").fit(pool_of(S))


def test_artificial_crowd_uses_only_the_crowd():
    rng = np.random.default_rng(2)
    scores = rng.random((20, 6))
    pool = pool_of(scores)
    sel = make_selector("artificial_crowd", base="metric_var", crowd=["s0", "s1", "s2"], params={"metric": "m"}).fit(pool)
    np.testing.assert_allclose(sel.utilities_, scores[:, :3].var(axis=1))
    assert sel.evaluated_systems_ == ("s3", "s4", "s5")
    seeded = make_selector("artificial_crowd", fraction=0.5, params={"metric": "m"}, seed=3).fit(pool)
    assert len(seeded.crowd_) == 3 and set(seeded.crowd_).isdisjoint(seeded.evaluated_systems_)


def test_distilled_learns_a_linear_utility():
    rng = np.random.default_rng(4)
    n = 120
    X = rng.normal(size=(n, 4))
    spread = np.exp(0.7 * X @ np.array([1.0, -0.5, 0.0, 0.25]))  # the spread across systems grows with a linear input score
    scores = rng.normal(size=(n, 5)) * spread[:, None]
    pool = Pool(item_ids=range(n), inputs=[vec_text(x) for x in X], systems=list("abcde"),
                scores={"m": scores}, outputs={s: ["x"] * n for s in "abcde"})
    train, test = pool.subset(range(80)), pool.subset(range(80, 120))
    d = make_selector("distilled", train=train, encoder=DictEncoder(4), params={"metric": "m"}).fit(test)
    truth = make_selector("metric_var", metric="m").fit(test).utilities_
    from scipy.stats import spearmanr

    assert spearmanr(d.utilities_, truth).correlation > 0.6  # measured 0.72 to 0.92 over seeds 0-5; 0.88 here
    with pytest.raises(ParameterError, match="train="):
        make_selector("distilled").fit(test)


def test_combinator_parts_with_their_own_metric():
    # App. Table 8's MetricVar (M+X): the product of 0-1-normalised variances under two metrics.
    # metric m (= S): variances (2/3, 0, 8) -> minmax (1/12, 0, 1); metric x: rows (1, 3, 1), (0, 4, 0),
    # (2, 2, 2) -> variances (8/9, 32/9, 0) -> minmax (1/4, 1, 0); product (1/48, 0, 0)
    pool = pool_of(S).with_scores("x", np.array([[1.0, 3.0, 1.0], [0.0, 4.0, 0.0], [2.0, 2.0, 2.0]]))
    mm = np.array([0.25, 1.0, 0.0])
    c = make_selector("combinator", methods=[("metric_var", {"metric": "m"}), ("metric_var", {"metric": "x"})],
                      normalize="minmax", aggregate="product").fit(pool)
    np.testing.assert_allclose(c.utilities_, np.array([1 / 12, 0.0, 1.0]) * mm)
    # a part's own metric wins over the shared params; the dict form is the same part
    d = make_selector("combinator", methods=[{"method": "metric_var", "metric": "x"}], params={"metric": "m"},
                      normalize="minmax").fit(pool)
    np.testing.assert_allclose(d.utilities_, mm)
    # old specs keep working, and a clone keeps the parts' parameters
    assert c.get_params()["methods"] == (("metric_var", {"metric": "m"}), ("metric_var", {"metric": "x"}))
    from evalsift.select.base import clone

    np.testing.assert_allclose(clone(c).fit(pool).utilities_, c.utilities_)
    with pytest.raises(ParameterError, match="'metric_var' has no parameter 'metrc'"):
        make_selector("combinator", methods=[("metric_var", {"metrc": "x"})]).fit(pool)
    with pytest.raises(ParameterError, match="selector name, \\(name, \\{parameters\\}\\)"):
        make_selector("combinator", methods=[("metric_var", "x")])


def test_diversity_package_tokenizer_by_hand():
    from evalsift.select.diversity import package_unigram_similarity

    # whitespace tokens, case and punctuation kept: {The, cat.} vs {the, cat} share nothing: 0
    assert package_unigram_similarity(["The cat.", "the cat"]) == 0.0
    # either side without a token scores 1 (ours: 0 for one empty side)
    assert package_unigram_similarity(["", "x y"]) == 1.0
    # three outputs, unordered pairs: (a a b, a b) 2*2/5 = 0.8, (a a b, c) 0, (a b, c) 0 -> 0.8 / 3
    assert package_unigram_similarity(["a a b", "a b", "c"]) == pytest.approx(0.8 / 3)
    assert np.isnan(package_unigram_similarity(["only one", None]))
    # item 0 differs only in case and punctuation, item 1 in one word of two
    outputs = {"A": ["The cat.", "x y"], "B": ["the cat", "x z"]}
    pool = Pool(item_ids=["i0", "i1"], systems=["A", "B"], outputs=outputs)
    ours = make_selector("diversity").fit(pool)  # our tokens: item 0 identical (1), item 1 0.5
    theirs = make_selector("diversity", tokenizer="package").fit(pool)  # item 0: 0, item 1: 0.5
    np.testing.assert_allclose(ours.utilities_, [-1.0, -0.5])
    np.testing.assert_allclose(theirs.utilities_, [0.0, -0.5])
    assert ours.select(2).items.tolist() == [1, 0] and theirs.select(2).items.tolist() == [0, 1]
    with pytest.raises(ParameterError, match="tokenizer"):
        make_selector("diversity", tokenizer="whitespace")
