"""OmniInput on the user's own Hugging Face models: ``hf-lm:PATH`` and ``hf-cls:PATH`` (tiny random-weight GPT-2
and BERT built from a config and saved with save_pretrained), checked against the transformers models called
directly, through exact enumeration, gradient moves and the command line, and bad input."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from evalsift.cli import main  # noqa: E402
from evalsift.errors import DataError, ParameterError  # noqa: E402
from evalsift.omninput import OmniSamples, load_model, make_sampler  # noqa: E402

from _hf import tiny_bert, tiny_gpt2  # noqa: E402


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    root = tmp_path_factory.mktemp("hf")
    return {"gpt2": tiny_gpt2(root / "gpt2"), "bert": tiny_bert(root / "bert"),
            "nobos": tiny_gpt2(root / "nobos", tokenizer=False, bos=False, seed=1)}


def _direct_nll(folder, ids: np.ndarray) -> np.ndarray:
    """NLL of each row of token ids under the transformers model itself, <|endoftext|> (id 0) prepended."""
    from transformers import GPT2LMHeadModel

    lm = GPT2LMHeadModel.from_pretrained(folder).eval()
    ids = np.asarray(ids, dtype=np.int64)
    inp = torch.cat([torch.zeros(len(ids), 1, dtype=torch.long), torch.as_tensor(ids)], dim=1)
    with torch.no_grad():
        logp = torch.log_softmax(lm(input_ids=inp).logits[:, :-1], dim=-1)
    return -logp.gather(2, torch.as_tensor(ids)[:, :, None]).squeeze(2).sum(1).double().numpy()


def test_hf_lm_scores_what_the_model_says(models):
    # --total: the sequence's NLL; the default is the per-token NLL (the paper's log-perplexity), checked below
    model, space = load_model(f"hf-lm:{models['gpt2']}", length=3, device="cpu", per_token=False)
    assert space.n_values == 40 and space.vocab[0] == "Ġw0"  # <|endoftext|> is special: not in the space
    x = space.uniform(16, np.random.default_rng(0))
    z = model(x)
    np.testing.assert_allclose(z, _direct_nll(models["gpt2"], x + 1), rtol=0, atol=1e-4)  # value v is token v + 1
    z1, g = model.grad(x, space.n_values)
    np.testing.assert_allclose(z1, z, atol=1e-4)
    assert g.shape == (16, 3, 40) and np.isfinite(g).all() and np.abs(g).max() > 0
    full = model.completions(x[:, :-1])  # every last token at once
    np.testing.assert_allclose(full[np.arange(16), x[:, -1]], z, atol=1e-4)
    per, _ = load_model(f"hf-lm:{models['gpt2']}", length=3)  # the default: 3 scored tokens after <|endoftext|>
    np.testing.assert_allclose(per(x), z / 3, atol=1e-5)
    assert per.info["per_token"] is True and model.info["per_token"] is False
    assert model.device == "cpu" and model.output == "nll" and model.positive == "low"


def test_exact_enumeration_of_an_hf_lm_counts_every_input(models):
    model, space = load_model(f"hf-lm:{models['gpt2']}", length=3, vocab="top:6")
    assert space.size == 6 ** 3 and len(set(space.vocab)) == 6
    ex = make_sampler("exact", bin_width=0.05).run(model, space, quiet=True)
    every = np.array(np.meshgrid(*[np.arange(6)] * 3, indexing="ij")).reshape(3, -1).T
    z = model(every)
    counts = np.bincount(np.floor(z / 0.05).astype(int) - ex.bins.min())
    np.testing.assert_allclose(np.exp(ex.ln_rho), counts[counts > 0], rtol=1e-9)


def test_top_n_is_the_n_most_likely_first_tokens(models):
    from transformers import GPT2LMHeadModel

    _, space = load_model(f"hf-lm:{models['gpt2']}", length=2, vocab="top:5")
    lm = GPT2LMHeadModel.from_pretrained(models["gpt2"]).eval()
    with torch.no_grad():
        p = torch.softmax(lm(input_ids=torch.tensor([[0]])).logits[0, -1, 1:], dim=-1).numpy()  # after <bos>
    want = sorted(f"Ġw{i}" for i in np.argsort(-p)[:5])
    assert sorted(space.vocab) == want


def test_a_vocabulary_file_and_its_errors(models, tmp_path):
    f = tmp_path / "tokens.txt"
    f.write_text("Ġw3\nĠw7\n#12\n", encoding="utf-8")
    model, space = load_model(f"hf-lm:{models['gpt2']}", length=2, vocab=str(f), per_token=False)
    assert space.vocab == ["Ġw3", "Ġw7", "Ġw11"]
    np.testing.assert_allclose(model(np.array([[0, 2]])), _direct_nll(models["gpt2"], np.array([[4, 12]])), atol=1e-4)
    f.write_text("Ġw3\nnot-a-token\n", encoding="utf-8")
    with pytest.raises(DataError, match="line 2: 'not-a-token' is not a token"):
        load_model(f"hf-lm:{models['gpt2']}", length=2, vocab=str(f))
    f.write_text("Ġw3\nĠw3\n", encoding="utf-8")
    with pytest.raises(DataError, match="line 2: 'Ġw3' repeats line 1"):
        load_model(f"hf-lm:{models['gpt2']}", length=2, vocab=str(f))


def test_a_model_without_a_beginning_of_sequence_token_scores_from_the_second(models):
    model, space = load_model(f"hf-lm:{models['nobos']}", length=3, per_token=False)
    assert space.vocab[0] == "#0" and model.info["bos"] is None and "2..L" in model.info["scored"]
    from transformers import GPT2LMHeadModel

    lm = GPT2LMHeadModel.from_pretrained(models["nobos"]).eval()
    x = space.uniform(4, np.random.default_rng(1)).astype(np.int64)
    with torch.no_grad():
        logp = torch.log_softmax(lm(input_ids=torch.as_tensor(x)).logits[:, :-1], dim=-1)
    want = -logp.gather(2, torch.as_tensor(x)[:, 1:, None]).squeeze(2).sum(1).numpy()
    np.testing.assert_allclose(model(x), want, atol=1e-4)
    np.testing.assert_allclose(model.grad(x, space.n_values)[0], want, atol=1e-4)
    with pytest.raises(ParameterError, match="no beginning-of-sequence token"):
        load_model(f"hf-lm:{models['nobos']}", length=1)


def test_hf_cls_gives_the_logit_of_the_positive_label(models):
    from transformers import BertForSequenceClassification

    model, space = load_model(f"hf-cls:{models['bert']}", length=4, positive="POSITIVE")
    assert model.info["label"] == "positive" and model.output == "logit" and space.vocab[0] == "w0"
    x = space.uniform(8, np.random.default_rng(2)).astype(np.int64)
    clf = BertForSequenceClassification.from_pretrained(models["bert"]).eval()
    ids = torch.cat([torch.full((8, 1), 2), torch.as_tensor(x) + 5, torch.full((8, 1), 3)], dim=1)  # [CLS] .. [SEP]
    with torch.no_grad():
        want = clf(input_ids=ids).logits[:, 1].numpy()
    np.testing.assert_allclose(model(x), want, atol=1e-5)
    z, g = model.grad(x, space.n_values)
    np.testing.assert_allclose(z, want, atol=1e-5)
    assert g.shape == (8, 4, 40) and np.abs(g).max() > 0
    with pytest.raises(ParameterError, match=r"give --positive LABEL.*0=negative, 1=positive"):
        load_model(f"hf-cls:{models['bert']}", length=4)
    with pytest.raises(ParameterError, match="no such label"):
        load_model(f"hf-cls:{models['bert']}", length=4, positive="neutral")


def test_gradient_moves_on_an_hf_model_reach_the_exact_distribution(models):
    model, space = load_model(f"hf-cls:{models['bert']}", length=2, positive="positive", vocab=12)
    exact = make_sampler("exact", bin_width=0.002).run(model, space, quiet=True)
    pt = make_sampler("pt", steps=400, chains=2, replicas=6, proposal="gradient", bin_width=0.002,
                      seed=0).run(model, space, quiet=True)
    shared = np.intersect1d(exact.bins, pt.bins)
    p_exact = np.exp(exact.ln_rho[np.isin(exact.bins, shared)]) / space.size
    p_pt = np.exp(pt.ln_rho[np.isin(pt.bins, shared)]) / space.size
    assert shared.size >= 0.8 * exact.bins.size
    assert np.abs(p_exact - p_pt).sum() < 0.3  # total variation well below 1 on 144 inputs


def test_omni_sample_and_curve_on_hf_models_from_the_command_line(models, tmp_path, capsys):
    out = tmp_path / "lm"
    assert main(["--quiet", "omni", "sample", "--model", f"hf-lm:{models['gpt2']}", "--length", "3", "--vocab",
                 "top:8", "--sampler", "exact", "--bin-width", "0.1", "--device", "cpu", "--out", str(out)]) == 0
    err = capsys.readouterr().err
    assert "device cpu" in err
    d = json.loads((out / "omni.json").read_text())
    assert d["diagnostics"]["device"] == "cpu" and d["model"]["info"]["adapter"] == "hf-lm"
    s = OmniSamples.load(out)
    reps = s.representatives(3, seed=0)
    # judgments of a rule a person could apply: "the sequence starts with one of the first four tokens"
    first = {space_token for space_token in s.space.vocab[:4]}
    rows = [{"item_id": i, "label": int(s.space.vocab[int(x[0])] in first)} for i, x in zip(reps.ids, reps.x)]
    (tmp_path / "j.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    assert main(["--quiet", "omni", "curve", "--samples", str(out), "--judgments", str(tmp_path / "j.jsonl"),
                 "--per-bin", "3", "--out", str(tmp_path / "curve"), "--boot", "50"]) == 0
    res = json.loads((tmp_path / "curve" / "results.json").read_text())
    assert res["models"][0]["model"].startswith("hf-lm:") and np.isfinite(res["models"][0]["aupr"])
    out2 = tmp_path / "cls"
    assert main(["--quiet", "omni", "sample", "--model", f"hf-cls:{models['bert']}", "--length", "3", "--positive",
                 "positive", "--vocab", "10", "--proposal", "langevin", "--steps", "60", "--chains", "2",
                 "--replicas", "4", "--out", str(out2)]) == 0
    d2 = json.loads((out2 / "omni.json").read_text())
    assert d2["model"]["info"]["label"] == "positive" and d2["sampler"]["params"]["proposal"] == "langevin"


@pytest.mark.parametrize("argv, message", [
    (["--length", "3", "--positive", "positive"], "--positive applies to hf-cls"),
    (["--vocab", "top:1", "--length", "3"], "top:N with N >= 2"),
    (["--levels", "4", "--length", "3"], "--levels does not apply to --model hf-lm"),
    ([], "give --length L"),
])
def test_bad_hf_command_lines_say_what_to_fix(models, tmp_path, capsys, argv, message):
    code = main(["omni", "sample", "--model", f"hf-lm:{models['gpt2']}", *argv, "--out", str(tmp_path / "o")])
    err = capsys.readouterr().err
    assert code == 2 and message in err and err.count("error:") == 1


def test_a_folder_without_a_model_and_options_that_belong_to_hf_models(models, tmp_path, capsys):
    empty = tmp_path / "empty"
    empty.mkdir()
    assert main(["omni", "sample", "--model", f"hf-lm:{empty}", "--length", "2", "--out", str(tmp_path / "o")]) == 2
    assert "has no config.json" in capsys.readouterr().err
    broken = tmp_path / "broken"
    shutil.copytree(models["gpt2"], broken)
    (broken / "model.safetensors").unlink()
    assert main(["omni", "sample", "--model", f"hf-lm:{broken}", "--length", "2", "--out", str(tmp_path / "o")]) == 2
    assert "has no model weights (model.safetensors" in capsys.readouterr().err
    assert main(["omni", "sample", "--model", "toy", "--per-token", "--out", str(tmp_path / "o")]) == 2
    assert "--per-token applies to hf-lm:DIR" in capsys.readouterr().err
    assert main(["omni", "sample", "--model", "lm", "--vocab", "top:5", "--out", str(tmp_path / "o")]) == 2
    assert "takes a vocabulary size" in capsys.readouterr().err


def test_evalsift_methods_names_the_hf_models(capsys):
    assert main(["methods"]) == 0
    out = capsys.readouterr().out
    models = out.split("omni models")[1].split("omni labelers")[0]
    assert "hf-lm:DIR" in models and "hf-cls:DIR" in models
