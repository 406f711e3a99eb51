import math

import numpy as np
import pytest
from _data import need

from _fakes import DictEncoder, vec_text
from evalsift.errors import DataError, ParameterError, UnknownNameError
from evalsift.metrics.ngrams import _PackedLCS
from evalsift.metrics import (

    item_diversity,
    pairwise_similarity,
    reference_metrics,
    rouge,
    sentence_bleu,
    sentence_chrf,
    tokenize,
    unigram_overlap,
)
from evalsift.pool import Pool

sacrebleu = pytest.importorskip("sacrebleu")

HYP, REF = "the cat sat on the mat", "the cat is on the mat"


# ---------------------------------------------------------------- tokenisation, unigram overlap
def test_tokenize_lowercases_and_drops_punctuation():
    assert tokenize("The CAT's mat -- 2 x_y! Žluť") == ["the", "cat", "s", "mat", "2", "x", "y", "žluť"]


def test_unigram_overlap_by_hand():
    # {the, cat, sat} vs {the, cat, ran}: 2 shared, 3 + 3 tokens -> 2*2/6
    assert unigram_overlap("The cat sat.", "the cat ran") == pytest.approx(2 / 3)
    # multisets: [a, a, b] vs [a, c]: min counts a=1 -> 2*1/(3+2) = 0.4
    assert unigram_overlap("a a b", "a c") == pytest.approx(0.4)
    assert unigram_overlap("a a", "a a") == 1.0
    assert unigram_overlap("", "...") == 1.0  # both without tokens: equal
    assert unigram_overlap("", "a") == 0.0


# ---------------------------------------------------------------- ROUGE
def test_rouge_by_hand():
    # ROUGE-L: LCS(the cat sat on the mat, the cat is on the mat) = "the cat on the mat" = 5; P = R = 5/6
    assert rouge(HYP, REF, "rougeL") == pytest.approx(5 / 6)
    # ROUGE-1: the x2, cat, on, mat match = 5 of 6 on both sides
    assert rouge(HYP, REF, "rouge1") == pytest.approx(5 / 6)
    # ROUGE-2: bigrams (the cat, on the, the mat) = 3 of 5 on both sides
    assert rouge(HYP, REF, "rouge2") == pytest.approx(3 / 5)
    # unequal lengths: LCS(a b c d, a c d e f) = 3; P = 3/4, R = 3/5, F = 2 PR / (P + R) = 0.9 / 1.35 = 2/3
    assert rouge("a b c d", "a c d e f", "rougeL") == pytest.approx(2 / 3)


def test_rouge_multi_reference_takes_the_max_and_tokenises():
    assert rouge(HYP, ["dogs bark", REF], "rougeL") == pytest.approx(5 / 6)
    assert rouge("The CAT!", "the cat", "rouge1") == 1.0
    assert rouge("", REF, "rougeL") == 0.0  # no tokens -> 0, as rouge-score
    with pytest.raises(ParameterError, match="rougeL"):
        rouge(HYP, REF, "rougel")


def _lcs_dp(a, b):
    t = [[0] * (len(b) + 1) for _ in range(len(a) + 1)]
    for i in range(len(a)):
        for j in range(len(b)):
            t[i + 1][j + 1] = t[i][j] + 1 if a[i] == b[j] else max(t[i][j + 1], t[i + 1][j])
    return t[-1][-1]


@pytest.mark.parametrize("seed", range(5))
def test_bit_parallel_lcs_matches_dynamic_programming(seed):
    rng = np.random.default_rng(seed)
    words = list("abcde")
    refs = [list(rng.choice(words, size=rng.integers(0, 25))) for _ in range(6)]  # includes empty ones
    packed = _PackedLCS(refs)
    for _ in range(10):
        hyp = list(rng.choice(words, size=rng.integers(0, 30)))
        assert packed.lcs(hyp) == [_lcs_dp(hyp, r) for r in refs]


# ---------------------------------------------------------------- BLEU / chrF
def test_sentence_bleu_by_hand():
    # 13a tokens equal the words. Precisions: 1-gram 5/6, 2-gram 3/5, 3-gram 1/4 ("on the mat"),
    # 4-gram 0 of 3 -> exp smoothing 1/(2*3). BP = 1 (both 6 tokens). BLEU = 100 * (5/6*3/5*1/4*1/6)^(1/4)
    assert sentence_bleu(HYP, [REF]) == pytest.approx(100 * (1 / 48) ** 0.25)
    assert sentence_bleu(HYP, HYP) == pytest.approx(100.0)


def test_sentence_chrf_by_hand():
    # chars abc vs abd: 1-grams 2/3 match both ways, 2-grams (ab) 1/2, 3-grams 0; orders 4-6 absent.
    # effective order 3: avg P = avg R = (2/3 + 1/2 + 0)/3 = 7/18, so F-beta = 7/18
    assert sentence_chrf("abc", ["abd"]) == pytest.approx(100 * 7 / 18)
    assert sentence_chrf("a b c", "abc") == pytest.approx(100.0)  # whitespace is removed


# ---------------------------------------------------------------- reference_metrics
def _toy_pool():
    outputs = {
        "A": [HYP, "a quick brown fox jumps", "", None],
        "B": ["the cat sat", "the fox", "hello there world", "x y z"],
        "C": ["on the mat the cat sat", "a brown fox jumped over it", "hello world", "x"],
    }
    refs = {
        "r1": [REF, "the quick brown fox jumps over the dog", "hello world", None],
        "r2": ["a cat was on the mat", None, "   ", None],  # blank and None references are skipped
        "r3": [None, "a fox jumps", "hello big world .", None],
    }
    return Pool(item_ids=["i0", "i1", "i2", "i3"], systems=["A", "B", "C"], outputs=outputs, references=refs, name="toy")


def test_reference_metrics_equal_the_sentence_functions():
    pool = _toy_pool()
    out = reference_metrics(pool, metrics=("chrF", "BLEU", "ROUGE-1", "ROUGE-2", "ROUGE-L"), progress=False)
    fns = {"chrF-ref": sentence_chrf, "BLEU-ref": sentence_bleu,
           "ROUGE-1-ref": lambda h, r: rouge(h, r, "rouge1"), "ROUGE-2-ref": lambda h, r: rouge(h, r, "rouge2"),
           "ROUGE-L-ref": lambda h, r: rouge(h, r, "rougeL")}
    for name, fn in fns.items():
        m = out.score(name)
        assert not out.is_human(name)
        for i in range(3):
            refs = [pool.references[r][i] for r in pool.references if (pool.references[r][i] or "").strip()]
            for j, s in enumerate(pool.systems):
                hyp = pool.outputs[s][i]
                if hyp is None:
                    assert np.isnan(m[i, j])
                else:
                    assert m[i, j] == pytest.approx(fn(hyp, refs), abs=1e-9), (name, i, s)
        assert np.isnan(m[3]).all()  # item without any reference
    assert out.score("ROUGE-L-ref")[0, 0] == pytest.approx(5 / 6)  # best of r1 (5/6) and r2


def test_reference_metrics_options_and_errors():
    pool = _toy_pool()
    only_r2 = reference_metrics(pool, metrics=["rouge_l"], references=["r2"], progress=False)
    assert only_r2.metrics == ("ROUGE-L-ref",)
    assert np.isnan(only_r2.score("ROUGE-L-ref")[1:]).all()  # r2 is usable for item 0 only
    with pytest.raises(UnknownNameError, match="Did you mean 'BLEU'"):
        reference_metrics(pool, metrics=["BLUE"], progress=False)
    with pytest.raises(DataError, match="no reference 'r4'"):
        reference_metrics(pool, references=["r4"], progress=False)
    bare = Pool(item_ids=["i0"], systems=["A"], outputs={"A": ["x"]}, name="bare")
    with pytest.raises(DataError, match="has no references"):
        reference_metrics(bare, progress=False)


# ---------------------------------------------------------------- pairwise similarity, diversity
def test_pairwise_similarity_self_pair_policy():
    # one pair, both directions: unigram F1(a b, a c) = 2*1/4 = 0.5; None is skipped
    assert pairwise_similarity(["a b", "a c", None]) == pytest.approx(0.5)
    # ordered pairs of distinct systems: (0,1) = (1,0) = 1 (identical texts), the other 4 pairs 0 -> 2/6
    assert pairwise_similarity(["a", "a", "b"]) == pytest.approx(1 / 3)
    assert math.isnan(pairwise_similarity(["a", None]))
    with pytest.raises(ParameterError, match="Did you mean 'chrf'"):
        pairwise_similarity(["a", "b"], kind="chrff")


@pytest.mark.parametrize("kind,fn", [("bleu", sentence_bleu), ("chrf", sentence_chrf)])
def test_pairwise_similarity_averages_both_directions(kind, fn):
    texts = ["the cat sat on the mat", "the cat is on the mat today", "a dog"]
    pairs = [(a, b) for i, a in enumerate(texts) for j, b in enumerate(texts) if i != j]
    expect = np.mean([fn(a, [b]) for a, b in pairs])  # 6 ordered pairs, no self-pairs
    assert pairwise_similarity(texts, kind) == pytest.approx(expect, abs=1e-9)
    assert fn(texts[0], [texts[1]]) != fn(texts[1], [texts[0]])  # asymmetric: both directions matter


def test_item_diversity_matches_pairwise_similarity():
    pool = _toy_pool()
    for kind in ("unigram", "bleu", "chrf"):
        d = item_diversity(pool, kind, progress=False)
        assert d.shape == (4,)
        for i in range(4):
            expect = pairwise_similarity([pool.outputs[s][i] for s in pool.systems], kind)
            assert d[i] == pytest.approx(expect, abs=1e-9)


def test_item_diversity_embedding_cosine_by_hand():
    x, y, z = vec_text([1, 0]), vec_text([0, 1]), vec_text([1, 1])
    pool = Pool(item_ids=["i0", "i1", "i2"], systems=["A", "B", "C"],
                outputs={"A": [x, x, x], "B": [x, z, None], "C": [y, None, None]})
    d = item_diversity(pool, "embedding", encoder=DictEncoder(dim=2), progress=False)
    # i0: cos(x,x) = 1 twice, cos(x,y) = 0 four times -> 2/6; i1: cos(x, z) = 1/sqrt(2); i2: one output
    assert d[0] == pytest.approx(1 / 3)
    assert d[1] == pytest.approx(1 / math.sqrt(2))
    assert np.isnan(d[2])
    assert pairwise_similarity([x, x, y], "embedding", encoder=DictEncoder(dim=2)) == pytest.approx(1 / 3)
    with pytest.raises(ParameterError, match="only used with kind='embedding'"):
        item_diversity(pool, "unigram", encoder="tfidf")


# ---------------------------------------------------------------- real data: SummEval
@pytest.fixture(scope="module")
def summeval(data_dir):
    path = data_dir / "summeval" / "summeval.json"
    need("summeval/summeval.json")
    from evalsift.io import load

    return load(str(path))


def test_summeval_reference_metrics(summeval):
    from scipy.stats import kendalltau

    out = reference_metrics(summeval, progress=False)
    for name in ("chrF-ref", "BLEU-ref", "ROUGE-L-ref"):
        m = out.score(name)
        assert m.shape == (100, 16) and not np.isnan(m).any()
    # system level: mean chrF against 11 references vs mean expert relevance over 16 systems
    tau = kendalltau(out.score("chrF-ref").mean(axis=0), out.score("relevance").mean(axis=0)).statistic
    assert tau > 0
    # the bulk computation equals sacreBLEU's own multi-reference sentence scores
    for i in (0, 37, 99):
        refs = [summeval.references[r][i] for r in summeval.references]
        for j in (0, 7, 15):
            hyp = summeval.outputs[summeval.systems[j]][i]
            assert out.score("chrF-ref")[i, j] == pytest.approx(sacrebleu.sentence_chrf(hyp, refs).score, abs=1e-9)
            assert out.score("BLEU-ref")[i, j] == pytest.approx(sacrebleu.sentence_bleu(hyp, refs).score, abs=1e-9)


def test_wmt23_reference_metrics_reproduce_the_official_segment_scores(data_dir):
    # mt-metrics-eval ships WMT23's own sacreBLEU segment scores (chrF-refA, BLEU-refA): ours must equal them
    need("wmt23/mt-metrics-eval-v2/wmt23/sources/en-de.txt")
    from evalsift.io import read_mtme

    pool = read_mtme(data_dir / "wmt23" / "mt-metrics-eval-v2" / "wmt23" / "en-de").subset(range(60))
    out = reference_metrics(pool, metrics=("chrF", "BLEU"), references="refA", progress=False)
    for ours, theirs in (("chrF-ref", "chrF-refA"), ("BLEU-ref", "BLEU-refA")):
        a, b = out.score(ours), out.score(theirs)
        both = ~np.isnan(a) & ~np.isnan(b)
        assert both.sum() > 500
        np.testing.assert_allclose(a[both], b[both], atol=1e-9)
