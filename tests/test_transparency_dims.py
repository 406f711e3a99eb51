"""evalsift.transparency.dimensions: perplexity, pvi, ambiguity, learned_noise (issue 10, part 2).

Nothing here downloads anything: the n-gram model trains on a few sentences, the causal LM is a tiny
randomly initialised GPT-2 built and saved into a temporary folder by the test itself.
"""

from __future__ import annotations

import glob
import json
import subprocess
import sys

import numpy as np
import pytest
from _data import need
from scipy.stats import spearmanr

from evalsift.errors import DataError, MissingDependencyError, ParameterError
from evalsift.transparency.dimensions import (
    CausalLMScorer,
    NgramScorer,
    ambiguity,
    compute_dimensions,
    dimensions,
    learned_noise,
    noise,
    ngram_perplexity,
    perplexity,
    pvi,
    span_gold_probs,
    token_f1,
    train_variability,
    training_dynamics,
)

nltk = pytest.importorskip("nltk", reason="the n-gram scorer needs nltk: pip install 'evalsift[transparency]'")

SUBJECTS = ["the man", "a woman", "the child", "a dog", "the old farmer", "two girls", "a young boy", "the cook"]
VERBS = ["walks to", "runs across", "looks at", "sits near", "paints", "cleans", "carries water to", "waits by"]
PLACES = ["the river", "a small house", "the market", "the green park", "a quiet street", "the beach", "the barn"]


def _corpus(n: int = 300, seed: int = 0) -> list[str]:
    rng = np.random.default_rng(seed)
    return [f"{SUBJECTS[rng.integers(8)]} {VERBS[rng.integers(8)]} {PLACES[rng.integers(7)]} ."
            for _ in range(n)]


# ------------------------------------------------------------------------------------ the registry
def test_new_dimensions_are_registered():
    for name in ("perplexity", "ngram_perplexity", "difficulty", "ambiguity", "learned_noise"):
        assert name in dimensions
    assert dimensions.get("difficulty") is dimensions.get("pvi")   # the paper's difficulty is PVI


def test_perplexity_without_a_model_is_the_deprecated_ngram_form():
    corpus = _corpus(200)
    items = ["the man walks to the river .", "river the to walks man the ."]
    with pytest.warns(FutureWarning, match="name it ngram_perplexity"):
        old = perplexity(items, corpus=corpus)
    assert np.array_equal(old, ngram_perplexity(items, corpus=corpus))
    assert np.array_equal(old, perplexity(items, scorer="ngram", corpus=corpus))   # explicit: no warning


# --------------------------------------------------------------------------------- n-gram perplexity
def test_ngram_in_corpus_text_beats_shuffled_words():
    corpus = _corpus()
    rng = np.random.default_rng(1)
    probe = corpus[:40]
    shuffled = [" ".join(rng.permutation(t.split()[:-1])) + " ." for t in probe]
    sc = NgramScorer(corpus, order=3)
    p_in = perplexity(probe, scorer=sc)
    p_sh = perplexity(shuffled, scorer=sc)
    assert np.all(np.isfinite(p_in)) and np.all(np.isfinite(p_sh))
    assert np.all(p_in >= 1.0)
    # word order is what a trigram model knows: the same words shuffled are much less likely
    assert np.median(p_in) * 3 < np.median(p_sh)
    assert np.mean(p_in < p_sh) > 0.9


def test_ngram_conditional_differs_from_plain_and_uses_the_premise():
    # the hypothesis repeats the premise's place: given the premise, its first words are predictable
    corpus = [(f"{s} {v} {p} .", f"{p} is near") for s in SUBJECTS for v in VERBS for p in PLACES]
    items = [("the cook paints the barn .", "the barn is near"), ("a dog waits by the river .", "the river is near")]
    # order 4: the context of the hypothesis' second word reaches back to the premise's last word
    cond = ngram_perplexity(items, corpus=corpus, conditional=True, order=4)
    plain_hyp = ngram_perplexity([h for _, h in items], corpus=corpus, order=4)   # the hypothesis alone
    joined = ngram_perplexity(items, corpus=corpus, conditional=False, order=4)   # premise + hypothesis
    assert np.all(np.isfinite(cond)) and not np.allclose(cond, plain_hyp) and not np.allclose(cond, joined)
    assert np.all(cond < plain_hyp)
    # a mismatched premise makes the same hypothesis less likely
    wrong = ngram_perplexity([("the cook paints the market .", "the barn is near")], corpus=corpus, order=4)
    assert wrong[0] > cond[0]


def test_ngram_cross_fit_without_corpus_and_nan_items():
    texts = _corpus(60) + [None, "", ("a premise .", None)]
    v = ngram_perplexity(texts, folds=3, seed=0)
    assert np.all(np.isfinite(v[:60])) and np.isnan(v[60:]).all()
    assert np.array_equal(v, ngram_perplexity(texts, folds=3, seed=0), equal_nan=True)             # seeded folds


def test_ngram_smoothings_and_bad_input():
    corpus = _corpus(100)
    for sm in ("witten_bell", "lidstone", "laplace", "kneser_ney"):
        v = ngram_perplexity(["the man walks to the river ."], corpus=corpus, smoothing=sm)
        assert np.isfinite(v[0]) and v[0] > 1
    # a word never seen in the corpus gets a small probability, not 0 (every corpus word is frequent
    # here, so <UNK> has no counts: the uniform end of the Witten-Bell recursion carries it)
    unseen = ngram_perplexity(["zebra quantum the river .", "the man the river ."], corpus=corpus)
    assert np.isfinite(unseen).all() and unseen[0] > 10 * unseen[1]
    with pytest.raises(ParameterError) as e:
        perplexity(["a b"], corpus=corpus, scorer="ngramm")
    assert e.value.field == "scorer" and "ngram" in str(e.value)
    with pytest.raises(ParameterError) as e:
        ngram_perplexity(["a b"], corpus=corpus, smoothing="kn")
    assert e.value.field == "smoothing"
    with pytest.raises(DataError) as e:
        ngram_perplexity(["a b"], corpus=[])
    assert e.value.field == "corpus"
    with pytest.raises(DataError) as e:
        ngram_perplexity([])
    assert e.value.field == "texts"
    with pytest.raises(DataError) as e:
        ngram_perplexity(["a b", 3], corpus=corpus)
    assert e.value.field == "texts" and e.value.item_id == "1"
    with pytest.raises(ParameterError) as e:
        perplexity(["a b"], scorer="causal_lm")
    assert e.value.field == "model_path"


def test_ngram_without_nltk_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "nltk.lm", None)
    with pytest.raises(MissingDependencyError) as e:
        ngram_perplexity(["a b c"], corpus=["a b c"])
    assert "pip install 'evalsift[transparency]'" in str(e.value)


def test_package_imports_without_nltk():
    code = ("import sys; sys.modules['nltk'] = None\n"
            "import evalsift.transparency\n"
            "from evalsift.transparency.dimensions import dimensions\n"
            "assert 'perplexity' in dimensions and 'nltk' not in [m for m in sys.modules if sys.modules[m]]\n")
    r = subprocess.run([sys.executable, "-c", code], check=False, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr


# ----------------------------------------------------------------------------- causal-LM perplexity
@pytest.fixture(scope="module")
def tiny_gpt2(tmp_path_factory):
    """A 1-layer GPT-2 (32-dim, word-level vocabulary) built and saved locally; random weights."""
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers

    tk = Tokenizer(models.WordLevel(unk_token="<unk>"))
    tk.pre_tokenizer = pre_tokenizers.Whitespace()
    tk.train_from_iterator(_corpus(200), trainers.WordLevelTrainer(special_tokens=["<unk>", "<pad>", "<bos>"]))
    tok = transformers.PreTrainedTokenizerFast(tokenizer_object=tk, unk_token="<unk>", pad_token="<pad>",
                                               bos_token="<bos>", eos_token="<bos>")
    torch.manual_seed(0)
    cfg = transformers.GPT2Config(vocab_size=len(tok), n_layer=1, n_embd=32, n_head=2, n_positions=64,
                                  bos_token_id=tok.bos_token_id, eos_token_id=tok.eos_token_id)
    path = tmp_path_factory.mktemp("tiny_gpt2")
    transformers.GPT2LMHeadModel(cfg).save_pretrained(path)
    tok.save_pretrained(path)
    return path


def test_profile_with_a_local_lm_uses_the_papers_perplexity(tiny_gpt2, monkeypatch):
    import warnings

    from evalsift.pool import Pool
    from evalsift.transparency.report import profile_pool

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    rng = np.random.default_rng(0)
    texts = _corpus(60, seed=4)
    pool = Pool(item_ids=range(60), inputs=texts, systems=["A", "B", "C"],
                scores={"q": rng.random((60, 3)) + [0.0, 0.2, 0.4]}, name="tiny")
    with warnings.catch_warnings():
        warnings.simplefilter("error", FutureWarning)  # the paper's form: no deprecation
        res = profile_pool(pool, "q", n_samples=20, quiet=True, lm_path=tiny_gpt2)
    assert res["dimensions"] == ["length", "perplexity"]
    assert not any("ngram_perplexity" in n for n in res["notes"])
    direct = perplexity(texts, model_path=tiny_gpt2)
    assert np.all(np.isfinite(direct)) and res["distribution"]["n"]["perplexity"] == 60


def test_causal_lm_finite_conditional_and_batched(tiny_gpt2, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    items = [(p, h) for p, h in zip(_corpus(12, seed=2), _corpus(12, seed=3))] + ["the man walks to the river ."]
    sc1 = CausalLMScorer(tiny_gpt2, batch_size=1)
    sc4 = CausalLMScorer(tiny_gpt2, batch_size=4)
    one = perplexity(items, scorer=sc1)
    four = perplexity(items, scorer=sc4)
    assert np.all(np.isfinite(one)) and np.all(one > 1)
    np.testing.assert_allclose(four, one, rtol=1e-4)                         # padding does not leak
    # random weights: perplexity is near the vocabulary size, far from 1
    assert 0.3 * len(sc1.tokenizer) < np.median(one) < 3 * len(sc1.tokenizer)
    plain = perplexity(items, scorer=sc1, conditional=False)
    assert not np.allclose(one[:-1], plain[:-1]) and one[-1] == pytest.approx(plain[-1])
    # by name, from the directory
    by_name = perplexity(items[:3], scorer="causal_lm", model_path=tiny_gpt2, batch_size=2)
    np.testing.assert_allclose(by_name, one[:3], rtol=1e-4)


def test_causal_lm_truncates_to_the_window(tiny_gpt2):
    sc = CausalLMScorer(tiny_gpt2, batch_size=2)
    long_premise = " ".join(_corpus(20))                                     # > 64 tokens
    v = perplexity([(long_premise, "the man walks to the river ."), "a dog paints the barn ."], scorer=sc)
    assert np.all(np.isfinite(v)) and sc.truncated == 1


def test_causal_lm_bad_path(tmp_path):
    with pytest.raises(DataError) as e:
        CausalLMScorer(tmp_path / "nowhere")
    assert e.value.field == "model_path" and "save_pretrained" in str(e.value)
    with pytest.raises(ParameterError) as e:
        CausalLMScorer(tmp_path, batch_size=0)
    assert e.value.field == "batch_size"


# ---------------------------------------------------------------------------------------------- PVI
def _planted_classification(n: int = 300, seed: int = 0):
    """Half the items: the label is written in the text (a cue word); half: random labels, no cue."""
    rng = np.random.default_rng(seed)
    cue = {"pos": "splendid", "neg": "dreadful", "neu": "ordinary"}
    texts, gold, predictable = [], [], []
    for i in range(n):
        y = ["pos", "neg", "neu"][rng.integers(3)]
        filler = " ".join(f"w{k}" for k in rng.integers(0, 200, size=5))
        if i % 2 == 0:
            texts.append(f"{filler} {cue[y]}")
            predictable.append(True)
        else:
            texts.append(filler)
            predictable.append(False)
        gold.append(y)
    return texts, gold, np.array(predictable)


def test_pvi_higher_where_the_label_is_predictable():
    texts, gold, pred = _planted_classification()
    v = pvi(texts, gold=gold, folds=5, seed=0)
    assert np.all(np.isfinite(v))
    assert v[pred].mean() > 0.5 > v[~pred].mean()
    # cross-fitted: a random label on unique filler cannot be memorised, so it carries no information
    assert v[~pred].mean() < 0.1
    # bits: an item the model gets right with certainty has PVI at most -log2 p_null ~ log2 3
    assert v.max() < np.log2(3) + 0.3
    # the one-model (no cross-fit) version would have memorised: shows the check above can fail
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline

    y = np.array(gold)
    m = make_pipeline(TfidfVectorizer(), LogisticRegression(C=100, max_iter=1000)).fit(texts, y)
    p = m.predict_proba(texts)[np.arange(len(y)), np.searchsorted(m.classes_, y)]
    leaky = np.log2(p) - np.log2(np.array([np.mean(y == g) for g in y]))
    assert leaky[~pred].mean() > 0.5


def test_pvi_custom_model_features_missing_and_errors():
    from sklearn.feature_extraction.text import CountVectorizer
    from sklearn.naive_bayes import MultinomialNB
    from sklearn.pipeline import make_pipeline

    texts, gold, pred = _planted_classification(150, seed=1)
    v = pvi(texts, gold=gold, model=lambda: make_pipeline(CountVectorizer(), MultinomialNB()), folds=3)
    assert v[pred].mean() > v[~pred].mean() + 0.5
    # numeric features and an estimator instance (cloned per fold)
    from sklearn.linear_model import LogisticRegression

    rng = np.random.default_rng(0)
    y = rng.integers(0, 2, 120)
    X = np.c_[np.where(np.arange(120) < 60, y * 4.0 - 2, 0.0) + rng.normal(0, 0.3, 120), rng.normal(size=120)]
    w = pvi(features=X, gold=y.tolist(), model=LogisticRegression())
    assert w[:60].mean() > 0.5 > w[60:].mean()
    # missing gold and missing text -> NaN, never a value
    g2 = list(gold)
    g2[0] = None
    t2 = list(texts)
    t2[1] = None
    z = pvi(t2, gold=g2, folds=3)
    assert np.isnan(z[:2]).all() and np.isfinite(z[2:]).all()
    with pytest.raises(DataError) as e:
        pvi(texts, gold=gold[:-1])
    assert e.value.field == "gold"
    with pytest.raises(DataError) as e:
        pvi(texts[:10], gold=["a"] * 10)
    assert e.value.field == "gold" and "2 classes" in str(e.value)
    with pytest.raises(DataError) as e:
        pvi(texts[:4], gold=gold[:4], folds=5)
    assert e.value.field == "folds"
    with pytest.raises(ParameterError) as e:
        pvi(texts, gold=gold, model="logreg")
    assert e.value.field == "model"
    with pytest.raises(ParameterError) as e:
        pvi(texts, gold=gold, folds=1)
    assert e.value.field == "folds"
    with pytest.raises(ParameterError) as e:
        pvi(gold=gold)
    assert e.value.field == "texts"


# ---------------------------------------------------------------------------------------- ambiguity
def test_ambiguity_from_given_probabilities_by_hand():
    P = np.array([[0.9, 0.6, 0.3, 0.6], [0.5, 0.5, 0.5, 0.5], [0.1, np.nan, 0.3, np.nan], [0.7, np.nan, np.nan, np.nan]])
    # item 0: mean 0.6, squared deviations .09 0 .09 0 -> var .045 (ddof 0); item 2: mean .2, var .01
    expect = [np.sqrt(0.045), 0.0, 0.1, np.nan]
    np.testing.assert_allclose(ambiguity(P, include_ci=False), expect, rtol=1e-12)
    np.testing.assert_allclose(train_variability(P), expect, rtol=1e-12)  # the earlier form: plain std
    # the default, App. A's formula: sqrt(var + var^2 / (E - 1)), E = the finite entries
    ci = [np.sqrt(0.045 + 0.045**2 / 3), 0.0, np.sqrt(0.01 + 0.01**2 / 1), np.nan]
    np.testing.assert_allclose(ambiguity(P), ci, rtol=1e-12)
    # items x epochs x classes + gold index: the same numbers
    probs = np.stack([P, 1 - P], axis=2)[:, :, ::-1]          # class 1 holds P
    np.testing.assert_allclose(ambiguity(probs=probs, gold=[1, 1, 1, 1]), ci, rtol=1e-12)
    np.testing.assert_allclose(train_variability(probs=probs, gold=[1, 1, 1, 1]), expect, rtol=1e-12)
    with pytest.raises(DataError) as e:
        ambiguity([[0.2, 1.5]])
    assert e.value.field == "gold_probs" and "softmax" in str(e.value)
    with pytest.raises(DataError) as e:
        ambiguity([0.2, 0.4])
    assert e.value.field == "gold_probs"
    with pytest.raises(DataError) as e:
        ambiguity(probs=probs, gold=[1, 1, 2, 1])
    assert e.value.field == "gold"
    with pytest.raises(DataError) as e:
        ambiguity(probs=probs, gold=[1, 1])
    assert e.value.field == "gold"
    with pytest.raises(ParameterError) as e:
        ambiguity()
    assert e.value.field == "gold_probs"


def test_training_dynamics_runs_and_is_seeded():
    texts, gold, pred = _planted_classification(200, seed=3)
    D = training_dynamics(texts, gold, epochs=4, seed=7)
    assert D.shape == (200, 4) and np.all((D >= 0) & (D <= 1))
    assert np.array_equal(D, training_dynamics(texts, gold, epochs=4, seed=7))
    assert not np.array_equal(D, training_dynamics(texts, gold, epochs=4, seed=8))
    # train_variability: the training items' dynamics, plain std
    np.testing.assert_allclose(train_variability(texts=texts, gold=gold, epochs=4, seed=7), D.std(axis=1))
    # ambiguity (the paper's): held-out dynamics (cross-fitted), include_ci formula
    H4 = training_dynamics(texts, gold, epochs=4, setting="heldout", seed=7)
    v = H4.var(axis=1)
    np.testing.assert_allclose(ambiguity(texts=texts, gold=gold, epochs=4, seed=7), np.sqrt(v + v * v / 3))
    assert ambiguity(texts=texts, gold=gold, seed=7).shape == (200,)  # default 10 epochs, as App. A
    # the cue items are learned early and stay learned: the model is more confident on them
    assert D[pred, -1].mean() > D[~pred, -1].mean()
    # held out: each item's dynamics come from models that never train on it -> random labels stay near chance
    H = training_dynamics(texts, gold, epochs=3, setting="heldout", folds=4, seed=0)
    assert H.shape == (200, 3) and np.isfinite(H).all()
    assert H[~pred, -1].mean() < D[~pred, -1].mean()
    with pytest.raises(ParameterError) as e:
        training_dynamics(texts, gold, setting="test")
    assert e.value.field == "setting"
    with pytest.raises(ParameterError) as e:
        training_dynamics(texts, gold, epochs=1)
    assert e.value.field == "epochs"


def test_ambiguity_chaosnli_runs_track_crowd_disagreement():
    """Five fine-tuned runs per SNLI item (3 RoBERTa, 2 BERT): the std of their gold-label probability
    is higher where ChaosNLI's 100 annotators disagree (label entropy)."""
    chaos = need("chaosnli/chaosNLI_v1.0/chaosNLI_snli.jsonl")
    pred_dir = need("chaosnli/predictions")
    crowd = {r["uid"]: r for r in map(json.loads, chaos.read_text().splitlines())}
    probs, ent = [], []
    for split in ("dev", "test"):
        files = sorted(glob.glob(str(pred_dir / f"SNLI_{split}_*.json")))
        assert len(files) == 5, files
        runs = []
        for f in files:
            with open(f) as fh:
                runs.append({r["uid"]: r for r in map(json.loads, fh)})
        for uid in runs[0]:
            if uid in crowd:
                probs.append([run[uid]["probs"][run[uid]["true"]] for run in runs])
                ent.append(crowd[uid]["entropy"])
    P, ent = np.array(probs), np.array(ent)
    assert P.shape == (1514, 5)                         # every ChaosNLI-SNLI item, five runs
    amb = ambiguity(P)
    assert np.isfinite(amb).all()
    rho = spearmanr(amb, ent).statistic
    assert rho > 0.25, rho                              # measured 0.37
    # the most ambiguous decile is far more contested by the crowd than the least ambiguous one
    lo, hi = np.quantile(amb, [0.1, 0.9])
    assert ent[amb >= hi].mean() > ent[amb <= lo].mean() + 0.3
    # include_ci only widens (5 runs: by a factor of at most sqrt(1 + var/4))
    ci = ambiguity(P, include_ci=True)
    assert np.all(ci >= amb) and np.all(ci <= amb * 1.05 + 1e-12)


# ------------------------------------------------------------------------------------ learned noise
def test_learned_noise_tracks_planted_noise_and_covers_unjudged_items():
    rng = np.random.default_rng(0)
    n = 300
    level = rng.random(n)                                # planted: how contested an item is
    n_vague = np.round(level * 6).astype(int)            # ... shown by hedge words in its text
    texts = [" ".join([f"w{k}" for k in rng.integers(0, 100, 6)] + ["maybe"] * v + ["clearly"] * (6 - v))
             for v in n_vague]
    # 10 annotators, 3 classes: the majority share falls with the level
    counts = []
    for lv in level:
        maj = round(10 - 5 * lv)
        counts.append([maj, 10 - maj - (10 - maj) // 2, (10 - maj) // 2])
    counts = np.array(counts)
    judged = rng.random(n) < 0.7
    counts_obs = np.where(judged[:, None], counts, 0)    # unjudged: no annotation -> noise NaN
    v = learned_noise(texts, counts=counts_obs, seed=0)
    assert np.isfinite(v).all()                           # a value for the unjudged items too
    true_noise = 1 - counts.max(axis=1) / 10
    assert spearmanr(v[judged], true_noise[judged]).statistic > 0.7
    assert spearmanr(v[~judged], true_noise[~judged]).statistic > 0.7
    # a regression on filler alone learns nothing
    filler = [" ".join(f"w{k}" for k in rng.integers(0, 100, 6)) for _ in range(n)]
    assert abs(spearmanr(learned_noise(filler, counts=counts_obs)[judged], true_noise[judged]).statistic) < 0.3
    # observed= gives the same as the counts it came from
    obs = np.where(judged, true_noise, np.nan)
    np.testing.assert_allclose(learned_noise(texts, observed=obs, seed=0), v)
    with pytest.raises(ParameterError) as e:
        learned_noise(texts)
    assert e.value.field == "counts"
    with pytest.raises(DataError) as e:
        learned_noise(texts, observed=obs[:-1])
    assert e.value.field == "observed"
    with pytest.raises(DataError) as e:
        learned_noise(texts[:3], observed=[0.1, 0.2, np.nan])
    assert e.value.field == "folds"


def test_compute_dimensions_passes_the_new_inputs():
    texts, gold, pred = _planted_classification(120, seed=5)
    counts = [[3, 1, 0] if p else [2, 2, 0] for p in pred]
    d = compute_dimensions(["length", "difficulty", "ambiguity", "learned_noise", "ngram_perplexity"], texts=texts,
                           gold=gold, counts=counts, folds=3, epochs=3, seed=0)
    assert set(d) == {"length", "difficulty", "ambiguity", "learned_noise", "ngram_perplexity"}
    assert all(v.shape == (120,) and np.isfinite(v).all() for v in d.values())
    assert d["learned_noise"][pred].mean() < d["learned_noise"][~pred].mean()


def test_learned_difficulty_by_group_never_uses_its_own_splits_labels():
    from evalsift.transparency import learned_difficulty

    rng = np.random.default_rng(3)
    hard, easy = ["tricky idiom pun"] * 60, ["plain fact"] * 60
    texts = [f"{w} item{i}" for i, w in enumerate(hard + easy)]
    p_right = np.r_[np.full(60, 0.2), np.full(60, 0.9)]
    scores = (rng.random((120, 4)) < p_right[:, None]).astype(float)
    groups = np.tile(["x", "y", "z"], 40)
    v = learned_difficulty(texts, scores=scores, groups=groups)
    assert np.all(np.isfinite(v)) and v[:60].mean() > v[60:].mean() + 0.3  # hard items predicted harder
    garbage = scores.copy()
    garbage[groups == "x"] = rng.random((40, 4))  # split x's own labels do not enter split x's values
    w = learned_difficulty(texts, scores=garbage, groups=groups)
    np.testing.assert_allclose(w[groups == "x"], v[groups == "x"])
    assert not np.allclose(w[groups == "y"], v[groups == "y"])  # (they do enter the other splits')
    with pytest.raises(ParameterError, match="scores="):
        learned_difficulty(texts)


# ------------------------------------------------------------------------------- extractive QA (App. A)
def _brute_span_prob(ls, le, answers, null=None, max_len=None):
    """Every (start, end) pair enumerated: the definition, without the cumulative-sum shortcut."""
    t = len(ls)
    valid = [(s, e) for s in range(t) for e in range(s, t)
             if (max_len is None or e - s < max_len) and (null is None or (s != null and e != null))]
    if null is not None:
        valid.append((null, null))
    z = sum(np.exp(ls[s] + le[e]) for s, e in valid)
    gold = set(map(tuple, answers)) if answers else {(null, null)}
    return sum(np.exp(ls[s] + le[e]) for s, e in gold) / z


def test_span_gold_probs_by_hand_and_against_every_pair():
    # start [1, 0, 2], end [1, 0, 2], position 0 = no answer: spans (0,0) 2, (1,1) 0, (1,2) 2, (2,2) 4
    z = np.exp(2) + 1 + np.exp(2) + np.exp(4)
    item = {"start_logits": [[1.0, 0.0, 2.0]], "end_logits": [[1.0, 0.0, 2.0]], "null_index": 0}
    got = span_gold_probs([{**item, "answers": [[1, 2]]}, {**item, "answers": []}, {**item, "answers": [[2, 2]]},
                           {**item, "answers": [[1, 2], [2, 2], [1, 2]]}])
    np.testing.assert_allclose(got[:, 0], [np.exp(2) / z, np.exp(2) / z, np.exp(4) / z, (np.exp(2) + np.exp(4)) / z])
    rng = np.random.default_rng(0)
    for k in range(40):
        t = int(rng.integers(2, 30))
        ls, le = rng.normal(0, 3, t), rng.normal(0, 3, t)
        null = None if k % 2 else 0
        lo = 1 if null == 0 else 0
        s = int(rng.integers(lo, t))
        e = int(rng.integers(s, t))
        max_len = None if k % 3 else int(rng.integers(e - s + 1, t + 1))
        answers = [] if (null == 0 and k % 4 == 0) else [[s, e]]
        one = {"start_logits": [ls], "end_logits": [le], "answers": answers}
        got = span_gold_probs([one], null_index=null, max_answer_len=max_len)[0, 0]
        assert got == pytest.approx(_brute_span_prob(ls, le, answers, null, max_len), rel=1e-9)
    # logits shifted by a constant per epoch (or log-softmax probabilities): the same probability
    shifted = {"start_logits": [[11.0, 10.0, 12.0]], "end_logits": [[-4.0, -5.0, -3.0]], "answers": [[1, 2]],
               "null_index": 0}
    assert span_gold_probs([shifted])[0, 0] == pytest.approx(np.exp(2) / z)


def test_ambiguity_from_reader_spans_is_the_include_ci_variability_of_the_epochs():
    """A constructed SQuAD-like set: three questions on one 6-token context, a reader trained for 4
    epochs. Item 0's gold span gains steadily, item 1's flips between two spans, item 2 is unanswerable
    and the reader grows sure of "no answer" ([CLS] = position 0)."""
    def epoch(gold_boost, other_boost, gold=(2, 3), other=(4, 5), null_boost=0.0):
        s, e = np.zeros(6), np.zeros(6)
        s[gold[0]] += gold_boost
        e[gold[1]] += gold_boost
        s[other[0]] += other_boost
        e[other[1]] += other_boost
        s[0] += null_boost
        e[0] += null_boost
        return s.tolist(), e.tolist()

    items = []
    for boosts in ([(0.5, 0), (1, 0), (1.5, 0), (2, 0)], [(3, 0), (0, 3), (3, 0), (0, 3)],
                   [(0, 0, 0.0), (0, 0, 1.0), (0, 0, 2.0), (0, 0, 3.0)]):
        ep = [epoch(*b[:2], null_boost=b[2] if len(b) > 2 else 0.0) for b in boosts]
        items.append({"start_logits": [x[0] for x in ep], "end_logits": [x[1] for x in ep],
                      "answers": [[2, 3]] if len(boosts[0]) == 2 else []})
    P = span_gold_probs(items, null_index=0)
    assert P.shape == (3, 4) and np.all(np.diff(P[0]) > 0) and np.all(np.diff(P[2]) > 0)
    amb = ambiguity(spans=items, null_index=0)
    v = P.var(axis=1)
    np.testing.assert_allclose(amb, np.sqrt(v + v * v / 3))  # App. A's formula over the 4 epochs
    assert amb[1] > amb[0] and amb[1] > amb[2]  # the flip-flopping item is the ambiguous one
    np.testing.assert_allclose(train_variability(P), np.sqrt(v))


def test_span_input_errors_name_the_field():
    ok = {"start_logits": [[0.0, 1.0]], "end_logits": [[0.0, 1.0]], "answers": [[1, 1]]}
    for bad, field, frag in (
            ([{"start_logits": [[0.0]], "answers": [[0, 0]]}], "spans", "needs the keys"),
            ([{**ok, "end_logits": [[0.0, 1.0, 2.0]]}], "spans", "one shape"),
            ([{**ok, "answers": [[1, 2]]}], "spans", "is not a span"),
            ([{**ok, "answers": []}], "null_index", "needs null_index"),
            ([{**ok, "null_index": 1}], "spans", "avoiding null_index 1"),
            ({"start_logits": []}, "spans", "one dict per item")):
        with pytest.raises(DataError, match=frag) as e:
            span_gold_probs(bad)
        assert e.value.field == field
    with pytest.raises(ParameterError) as e:
        ambiguity()
    assert "spans=" in str(e.value)


def test_token_f1_noise_for_squad_answers():
    # SQuAD normalisation: case, punctuation and articles do not count
    assert token_f1("The Eiffel Tower.", "eiffel tower") == 1.0
    assert token_f1("in 1889", "1889") == pytest.approx(2 * 0.5 * 1 / 1.5)   # P 1/2, R 1
    assert token_f1("Paris", "London") == 0.0 and token_f1("", "") == 1.0 and token_f1("", "x") == 0.0
    answers = [["Denver Broncos", "Denver Broncos", "Denver Broncos"],       # all agree
               ["Santa Clara, California", "Levi's Stadium", "Santa Clara"],  # F1 pairs: 0, 0.8, 0
               ["gold", "golden anniversary", "gold"],                        # 0, 1, 0
               ["only one"], []]
    want = [0.0, 1 - 0.8 / 3, 1 - 1 / 3, np.nan, np.nan]
    np.testing.assert_allclose(noise(answers=answers), want)
    np.testing.assert_allclose(compute_dimensions(["noise"], answers=answers)["noise"], want)
    with pytest.raises(DataError) as e:
        noise(answers=["Denver", "Paris"])
    assert e.value.field == "answers"
    with pytest.raises(ParameterError, match="answers="):
        noise(answers=answers, counts=[[1, 1]] * 5)


def test_a_qa_pool_feeds_answers_and_spans_to_noise_and_ambiguity():
    from evalsift.pool import Pool

    answers = [["Denver Broncos", "Denver Broncos"], ["Santa Clara", "Santa Clara, California"], ["gold", "golden"]]
    spans = [{"start_logits": [[0.0, a, 0.0], [0.0, b, 0.0]], "end_logits": [[0.0, 0.0, a], [0.0, 0.0, b]],
              "answers": [[1, 2]]} for a, b in ((1.0, 1.5), (3.0, -1.0), (0.0, 0.0))]
    pool = Pool(item_ids=range(3), inputs=["q1", "q2", "q3"], systems=["A", "B"],
                scores={"f1": np.array([[1.0, 0.5], [0.2, 0.4], [0.0, 1.0]])},
                metadata={"answers": answers, "spans": spans})
    d = compute_dimensions(["noise", "ambiguity"], pool=pool, metric="f1")
    np.testing.assert_allclose(d["noise"], [0.0, 0.2, 1.0])             # 1 - F1: 1, 0.8, 0
    np.testing.assert_allclose(d["ambiguity"], ambiguity(spans=spans))
    assert d["ambiguity"][2] == 0.0 and d["ambiguity"][1] > d["ambiguity"][0]  # unchanged logits: no variability
