"""``difficulty`` / ``ambiguity`` from a fine-tuned local encoder (dimensions/finetune.py) and
``evalsift profile --classifier DIR --device ...``.

Nothing is downloaded: the encoder is a tiny randomly initialised BERT (2 layers, 32 dimensions) and a
WordPiece vocabulary, built and saved into a temporary folder once per module. Everything runs on the CPU.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from evalsift.cli import main  # noqa: E402
from evalsift.errors import DataError, ParameterError  # noqa: E402
from evalsift.transparency.dimensions import ambiguity, difficulty  # noqa: E402
from evalsift.transparency.dimensions.finetune import FineTunedClassifier, finetune_dynamics  # noqa: E402

WORDS = [f"w{i}" for i in range(60)]
N = 80
# a tiny random BERT learns slowly at BERT's 2e-5: a larger step, small batches, 4 epochs (measured: the
# held-out gold probability of predictable items climbs 0.5 -> ~0.8 over the epochs, random labels stay at 0.5).
# pvi_epochs = epochs: one run serves both dimensions (the defaults, 10 and 3, are two runs; tested below)
SETTINGS = {"epochs": 4, "pvi_epochs": 4, "batch_size": 8, "learning_rate": 1e-2, "max_length": 16}


@pytest.fixture(scope="module", autouse=True)
def one_thread():
    """One torch thread: a 32-dimensional model gains nothing from two, and two threads slow down many times
    over when another process holds the other core (measured: 5 s -> 60-200 s per fine-tuning run)."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.fixture(scope="module")
def tiny_bert(tmp_path_factory):
    """A randomly initialised 2-layer BERT and its WordPiece tokenizer, saved with save_pretrained."""
    path = tmp_path_factory.mktemp("tiny_bert")
    vocab = path / "vocab.txt"
    vocab.write_text("\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *WORDS]) + "\n", encoding="utf-8")
    tok = transformers.BertTokenizer(str(vocab))
    cfg = transformers.BertConfig(vocab_size=5 + len(WORDS), hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                                  intermediate_size=64, max_position_embeddings=64)
    torch.manual_seed(0)
    transformers.BertForSequenceClassification(cfg).save_pretrained(path)
    tok.save_pretrained(path)
    return path


def _items(seed: int = 0, n: int = N) -> tuple[list[str], list[str]]:
    """Texts whose words decide the label: "pos" items use w0..w29, "neg" items w30..w59."""
    rng = np.random.default_rng(seed)
    labels = ["pos" if i % 2 else "neg" for i in range(n)]
    texts = [" ".join(rng.choice(WORDS[:30] if y == "pos" else WORDS[30:], 6)) for y in labels]
    return texts, labels


@pytest.fixture(scope="module")
def spec(tiny_bert):
    return FineTunedClassifier(tiny_bert, **SETTINGS)


@pytest.fixture(scope="module")
def learned(spec):
    """The cross-fitted run on items whose words decide the label (kept in the module's cache too)."""
    texts, gold = _items()
    return texts, gold, finetune_dynamics(texts, gold, spec, seed=0, device="cpu")


# ------------------------------------------------------------------------------------------ library
def test_pvi_is_finite_for_every_item_and_is_log_g_minus_log_null(learned, spec):
    texts, gold, run = learned
    assert run.pvi.shape == (N,) and np.all(np.isfinite(run.pvi))
    assert run.gold_probs.shape == (N, spec.epochs) and run.device == "cpu" and run.classes == ["neg", "pos"]
    # the documented sign: PVI = log2 g[x](y) - log2 g'[null](y), not negated (high = easy). g's last-epoch
    # gold probability is gold_probs[:, -1]; g' is the held-out part's null model, one of null_log2's rows
    codes = np.array([run.classes.index(y) for y in gold])
    by_fold = np.log2(run.gold_probs[:, -1])[:, None] - run.null_log2[:, codes].T      # items x folds
    assert np.all(np.min(np.abs(by_fold - run.pvi[:, None]), axis=1) < 1e-6)
    # g' saw only empty strings: its prediction is near the balanced labels' prior, 1/2 = -1 bit
    assert np.allclose(run.null_log2, -1.0, atol=0.25)
    # difficulty(classifier=...) is this run's PVI (shared through the cache, not fine-tuned again)
    np.testing.assert_array_equal(difficulty(texts, gold=gold, classifier=spec, device="cpu"), run.pvi)


def test_pvi_is_higher_where_the_input_decides_the_label(learned, spec):
    texts, gold, run = learned
    shuffled = list(np.random.default_rng(1).permutation(gold))            # the same texts, labels at random
    rand = difficulty(texts, gold=shuffled, classifier=spec, device="cpu")
    assert np.all(np.isfinite(rand))
    # measured: 0.63 bits against 0.00 (random labels carry no information the null model lacks)
    assert run.pvi.mean() > 0.3 and rand.mean() < 0.1 and run.pvi.mean() > rand.mean() + 0.3, \
        (run.pvi.mean(), rand.mean())
    # the model learned over the epochs: the mean held-out gold probability rises
    assert run.gold_probs[:, -1].mean() > run.gold_probs[:, 0].mean() + 0.1


def test_ambiguity_is_the_cartography_variability_of_the_held_out_dynamics(learned, spec):
    texts, gold, run = learned
    a = ambiguity(texts=texts, gold=gold, classifier=spec, device="cpu")
    p = run.gold_probs
    assert a.shape == (N,) and np.all(np.isfinite(a)) and np.all((p >= 0) & (p <= 1))
    e = spec.epochs
    v = p.var(axis=1)                                                      # ddof=0, as the cartography code
    np.testing.assert_allclose(a, np.sqrt(v + v * v / (e - 1)), rtol=1e-12)  # include_ci (App. A)
    np.testing.assert_allclose(ambiguity(texts=texts, gold=gold, classifier=spec, device="cpu", include_ci=False),
                               p.std(axis=1), rtol=1e-12)
    # range: a probability's std is at most 1/2, so sqrt(1/4 + 1/16 / (E - 1)) bounds it; the dynamics move
    assert np.all(a >= 0) and a.max() <= np.sqrt(0.25 + 0.0625 / (e - 1)) and a.max() > 0.01
    # ambiguity from the classifier ignores the probabilities a pool would pass along
    np.testing.assert_array_equal(
        ambiguity(np.full((N, 2), 0.5), texts=texts, gold=gold, classifier=spec, device="cpu"), a)


def test_the_defaults_are_the_papers_epochs_and_pvi_keeps_its_own_run(tiny_bert):
    # App. A: ambiguity from 10 epochs of fine-tuning (dataset cartography's variability), PVI from 3
    default = FineTunedClassifier(tiny_bert)
    assert (default.epochs, default.pvi_epochs) == (10, 3)
    texts, gold = _items(seed=3, n=24)
    small = {**SETTINGS, "max_length": 12}
    apart = finetune_dynamics(texts, gold, FineTunedClassifier(tiny_bert, **{**small, "epochs": 3, "pvi_epochs": 2}),
                              folds=2, seed=0, device="cpu", cache=False)
    pvi_run = finetune_dynamics(texts, gold, FineTunedClassifier(tiny_bert, **{**small, "epochs": 2, "pvi_epochs": 2}),
                                folds=2, seed=0, device="cpu", cache=False)
    amb_run = finetune_dynamics(texts, gold, FineTunedClassifier(tiny_bert, **{**small, "epochs": 3, "pvi_epochs": 3}),
                                folds=2, seed=0, device="cpu", cache=False)
    # the same seeds: PVI is that of a 2-epoch run, the dynamics those of the 3-epoch run
    assert apart.gold_probs.shape == (24, 3)
    np.testing.assert_allclose(apart.pvi, pvi_run.pvi, rtol=0, atol=1e-9)
    np.testing.assert_allclose(apart.gold_probs, amb_run.gold_probs, rtol=0, atol=1e-9)
    assert not np.allclose(apart.pvi, amb_run.pvi)                      # 3 epochs of g and g' give another PVI
    with pytest.raises(ParameterError) as e:
        FineTunedClassifier(tiny_bert, pvi_epochs=0)
    assert e.value.field == "pvi_epochs"


def test_seeded_deterministic_on_cpu_and_missing_items_are_nan(tiny_bert):
    small = FineTunedClassifier(tiny_bert, epochs=2, batch_size=8, learning_rate=1e-2, max_length=16)
    texts, gold = _items(seed=3, n=24)
    texts[0], gold[1] = None, None                                         # no input; no gold label
    texts[2] = ("w1 w2", "w3 w4")                                          # a pair: the encoder's sentence pair
    one = finetune_dynamics(texts, gold, small, folds=3, seed=5, device="cpu", cache=False)
    two = finetune_dynamics(texts, gold, small, folds=3, seed=5, device="cpu", cache=False)
    other = finetune_dynamics(texts, gold, small, folds=3, seed=6, device="cpu", cache=False)
    np.testing.assert_array_equal(one.pvi, two.pvi)
    np.testing.assert_array_equal(one.gold_probs, two.gold_probs)
    assert not np.array_equal(one.pvi, other.pvi, equal_nan=True)
    assert np.isnan(one.pvi[:2]).all() and np.isnan(one.gold_probs[:2]).all()
    assert np.isfinite(one.pvi[2:]).all() and np.isfinite(one.gold_probs[2:]).all()


def test_bad_classifier_input_names_the_field(tiny_bert, tmp_path, spec):
    texts, gold = _items(n=20)
    with pytest.raises(DataError) as e:
        difficulty(texts, gold=gold, classifier=tmp_path)                  # an empty folder
    assert e.value.field == "classifier" and str(tmp_path) in str(e.value) and "config.json" in str(e.value)
    (tmp_path / "config.json").write_text((tiny_bert / "config.json").read_text())
    with pytest.raises(DataError, match="model weights") as e:             # config alone: names what else is missing
        ambiguity(texts=texts, gold=gold, classifier=tmp_path)
    assert "tokenizer files" in str(e.value) and "config.json" not in str(e.value).split("has no")[1]
    with pytest.raises(ParameterError) as e:
        difficulty(texts, gold=gold, classifier=spec, model=object())
    assert e.value.field == "model"
    with pytest.raises(ParameterError) as e:
        difficulty(features=np.ones((20, 2)), gold=gold, classifier=spec)
    assert e.value.field == "features"
    with pytest.raises(ParameterError) as e:
        FineTunedClassifier(tiny_bert, epochs=1)
    assert e.value.field == "epochs" and ">= 2" in str(e.value)
    with pytest.raises(ParameterError) as e:
        FineTunedClassifier(tiny_bert, learning_rate=0)
    assert e.value.field == "learning_rate"
    with pytest.raises(ParameterError) as e:
        ambiguity(texts=texts, gold=gold, classifier=spec, setting="train")
    assert e.value.field == "setting"
    with pytest.raises(DataError) as e:
        difficulty(texts, gold=["pos"] * 20, classifier=spec)
    assert e.value.field == "gold" and "2 classes" in str(e.value)
    with pytest.raises(ParameterError) as e:
        difficulty(texts, gold=gold, classifier=spec, device="cuda:x")
    assert e.value.field == "device"


# ---------------------------------------------------------------------------------------------- CLI
def _data_file(tmp_path) -> str:
    """A long table with texts, gold labels, three systems' 0/1 correctness (the profile's --metric) and their
    gold-label probabilities (``gold_prob``: the runs' own, as ChaosNLI's)."""
    texts, gold = _items(seed=2, n=60)
    rng = np.random.default_rng(0)
    path = tmp_path / "labelled.jsonl"
    with open(path, "w", encoding="utf-8") as f:
        for i, (t, y) in enumerate(zip(texts, gold)):
            for s, skill in (("A", 0.6), ("B", 0.75), ("C", 0.9)):
                row = {"item_id": f"i{i}", "system": s, "output": y, "input": t, "gold": y,
                       "correct": float(rng.random() < skill), "gold_prob": float(rng.random())}
                f.write(json.dumps(row) + "\n")
    return str(path)


def test_profile_with_a_classifier_on_the_cpu(tiny_bert, tmp_path, capsys):
    data, out = _data_file(tmp_path), tmp_path / "prof"
    code = main(["--quiet", "profile", "--data", data, "--metric", "correct", "--classifier", str(tiny_bert),
                 "--classifier-epochs", "2", "--classifier-pvi-epochs", "2", "--device", "cpu", "--samples", "20",
                 "--out", str(out)])
    err = capsys.readouterr().err
    assert code == 0, err
    res = json.loads((out / "results.json").read_text())
    # texts + gold labels + a classifier: difficulty and ambiguity, both from the fine-tuned encoder -- not from
    # the systems' own gold_prob, so ambiguity is not circular
    assert {"difficulty", "ambiguity"} <= set(res["dimensions"]) and "ambiguity" not in res["circular"]
    for dim in ("difficulty", "ambiguity"):
        by = res["computed_by"][dim]
        assert by["method"] == "classifier" and by["classifier"] == str(tiny_bert) and by["epochs"] == 2
        assert by["precision"] == "fp32"
        assert res["distribution"]["n"][dim] == 60                          # every item has a value
    dev = res["device"]
    assert dev["requested"] == "cpu"
    assert dev["used"] == [{"model": f"classifier {tiny_bert}", "device": "cpu", "precision": "fp32"}]
    assert f"device: classifier {tiny_bert} on cpu" in err
    # the report says the classifier was fine-tuned here, for which dimensions and how (once: not a word of it)
    html = (out / "report.html").read_text()
    assert "How the model-based dimensions were computed" in html
    assert html.count(f"the classifier {tiny_bert} fine-tuned here (--classifier): 2 epochs") == 2

    # without --classifier, as before: TF-IDF PVI, ambiguity from the systems' gold_prob (circular), no neural model
    plain = tmp_path / "plain"
    assert main(["--quiet", "profile", "--data", data, "--metric", "correct", "--samples", "20",
                 "--out", str(plain)]) == 0
    res = json.loads((plain / "results.json").read_text())
    assert res["computed_by"]["difficulty"]["method"] == "tfidf"
    assert res["computed_by"]["ambiguity"] == {"method": "gold_probs", "source": "scores"}
    assert "ambiguity" in res["circular"]
    assert res["device"]["used"] == [] and "device:" not in capsys.readouterr().err
    assert "fine-tuned here" not in (plain / "report.html").read_text()


def test_profile_lm_runs_on_the_device_and_is_recorded(tiny_bert, tmp_path, capsys):
    """--lm perplexity follows --device too (CausalLMScorer's device defaults to the process default)."""
    lm = tmp_path / "tiny_lm"
    tok = transformers.AutoTokenizer.from_pretrained(str(tiny_bert), local_files_only=True)
    torch.manual_seed(0)
    transformers.GPT2LMHeadModel(transformers.GPT2Config(vocab_size=len(tok), n_layer=1, n_embd=16, n_head=2,
                                                         n_positions=32)).save_pretrained(lm)
    tok.save_pretrained(lm)
    out = tmp_path / "lmprof"
    assert main(["--quiet", "profile", "--data", _data_file(tmp_path), "--metric", "correct", "--lm", str(lm),
                 "--dims", "perplexity", "--device", "cpu", "--samples", "20", "--out", str(out)]) == 0
    res = json.loads((out / "results.json").read_text())
    assert res["computed_by"]["perplexity"] == {"method": "causal_lm", "model": str(lm), "precision": "fp32"}
    assert res["device"]["used"] == [{"model": f"causal LM {lm}", "device": "cpu", "precision": "fp32"}]
    assert f"device: causal LM {lm} on cpu" in capsys.readouterr().err


def _one_error(capsys) -> str:
    lines = [ln for ln in capsys.readouterr().err.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), lines
    return lines[0]


def test_profile_classifier_folder_without_a_model_exits_2(tmp_path, capsys):
    empty = tmp_path / "no_model"
    empty.mkdir()
    (empty / "config.json").write_text("{}")
    code = main(["profile", "--data", _data_file(tmp_path), "--metric", "correct", "--classifier", str(empty),
                 "--device", "cpu", "--out", str(tmp_path / "o")])
    line = _one_error(capsys)
    assert code == 2 and line.startswith("error: --classifier:") and str(empty) in line
    assert "model weights" in line and "save_pretrained" in line
    code = main(["profile", "--data", _data_file(tmp_path), "--metric", "correct", "--classifier-epochs", "4",
                 "--out", str(tmp_path / "o")])
    assert code == 2 and "--classifier-epochs applies to --classifier" in _one_error(capsys)


def test_profile_device_cuda_without_a_gpu_exits_2(tiny_bert, tmp_path, capsys):
    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU")
    code = main(["profile", "--data", _data_file(tmp_path), "--metric", "correct", "--classifier", str(tiny_bert),
                 "--device", "cuda", "--out", str(tmp_path / "o")])
    line = _one_error(capsys)
    assert code == 2 and "--device cuda" in line and "--device cpu" in line
    assert not (tmp_path / "o" / "results.json").exists()
