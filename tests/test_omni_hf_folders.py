"""Odd and hostile Hugging Face model folders (issue 42, item 4): each is one ``error:`` line naming the fix, or
works -- nothing from the folder runs, and nothing becomes 'internal error ... this is a bug'.

Tiny random-weight models built from a config (tests/_hf.py). Also here: the per-token NLL default of ``hf-lm``
(the paper's log-perplexity) with ``--total`` for the sum, and a folder sampled with the total refusing to resume
as per-token; exact enumeration without a beginning-of-sequence token against brute force; bf16 on the CPU."""

from __future__ import annotations

import json

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from evalsift.cli import main  # noqa: E402
from evalsift.errors import DataError, ParameterError  # noqa: E402
from evalsift.omninput import OmniSamples, load_model, make_sampler  # noqa: E402

from _hf import edited_copy, pickled_copy, tiny_bert, tiny_gpt2, tiny_gpt2_classifier  # noqa: E402


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    root = tmp_path_factory.mktemp("hf_folders")
    return {"root": root, "gpt2": tiny_gpt2(root / "gpt2"), "bert": tiny_bert(root / "bert"),
            "nobos": tiny_gpt2(root / "nobos", tokenizer=False, bos=False, seed=1),
            "gpt2cls": tiny_gpt2_classifier(root / "gpt2cls")}


def _one_error(capsys) -> str:
    """The one ``error:`` line on stderr (omni sample may have printed its model line before it)."""
    err = capsys.readouterr().err
    lines = [ln for ln in err.splitlines() if ln.startswith("error")]
    assert len(lines) == 1 and lines[0].startswith("error: "), err
    assert "internal error" not in err and "this is a bug" not in err and "Traceback" not in err
    return lines[0]


def _sample(folder_spec: str, out, *extra: str) -> int:
    return main(["--quiet", "omni", "sample", "--model", folder_spec, "--sampler", "uniform", "--steps", "2",
                 "--walkers", "8", "--chains", "2", "--out", str(out), *extra])


# ------------------------------------------------------------------------------------------ hostile folders
def _profile(data, out, *extra: str) -> int:
    return main(["--quiet", "profile", "--data", str(data), "--metric", "correct", "--samples", "5", "--device", "cpu",
                 "--out", str(out), *extra])


@pytest.fixture(scope="module")
def labelled(models):
    """A tiny long table with texts, gold labels and three systems' 0/1 correctness (for profile)."""
    path = models["root"] / "labelled.jsonl"
    rng = np.random.default_rng(0)
    with open(path, "w", encoding="utf-8") as f:
        for i in range(20):
            y = "pos" if i % 2 else "neg"
            for s in ("A", "B", "C"):
                f.write(json.dumps({"item_id": f"i{i}", "system": s, "output": y, "input": f"w{i % 7} w{i % 5}",
                                    "gold": y, "correct": float(rng.random() < 0.7)}) + "\n")
    return path


@pytest.mark.parametrize("how", ["hf-lm", "hf-cls", "profile --lm", "profile --classifier"])
def test_a_pickled_checkpoint_is_refused_and_its_payload_never_runs(models, labelled, tmp_path, capsys, how):
    marker = tmp_path / "PAYLOAD_RAN"
    src = models["bert"] if how in ("hf-cls", "profile --classifier") else models["gpt2"]
    folder = pickled_copy(src, tmp_path / "pickled", marker)
    if how.startswith("hf-"):
        code = _sample(f"{how}:{folder}", tmp_path / "o", "--length", "2", *(["--positive", "positive"]
                                                                            if how == "hf-cls" else []))
    else:
        code = _profile(labelled, tmp_path / "o", how.split()[1], str(folder))
    line = _one_error(capsys)
    assert code == 2 and not marker.exists()
    assert "holds its weights as a pickle (pytorch_model.bin)" in line and "save_pretrained it again" in line
    assert "weights_only" not in line                                  # never torch's advice to turn it off
    assert not (tmp_path / "o").exists()
    torch.load(folder / "pytorch_model.bin", weights_only=False)        # the payload is live: unpickling runs it
    assert marker.exists()


def test_an_auto_map_is_refused_and_its_code_never_runs(models, tmp_path, capsys):
    marker = tmp_path / "CODE_RAN"
    folder = edited_copy(models["gpt2"], tmp_path / "remote", auto_map={"AutoModelForCausalLM": "modeling_x.X"})
    (folder / "modeling_x.py").write_text(f"open({str(marker)!r}, 'w')\nclass X: pass\n", encoding="utf-8")
    assert _sample(f"hf-lm:{folder}", tmp_path / "o", "--length", "2") == 2
    line = _one_error(capsys)
    assert "names code of its own (auto_map: AutoModelForCausalLM -> modeling_x.X)" in line
    assert "no trust_remote_code" in line and not marker.exists()
    tok = edited_copy(models["gpt2"], tmp_path / "remote_tok")           # the tokenizer's config may name code too
    cfg = json.loads((tok / "tokenizer_config.json").read_text())
    (tok / "tokenizer_config.json").write_text(json.dumps({**cfg, "auto_map": {"AutoTokenizer": ["tok_x.T", None]}}))
    assert _sample(f"hf-lm:{tok}", tmp_path / "o", "--length", "2") == 2
    assert "tokenizer_config.json names code of its own" in _one_error(capsys)


def test_a_special_token_outside_the_vocabulary_is_refused(models, tmp_path, capsys):
    folder = edited_copy(models["nobos"], tmp_path / "badbos", bos_token_id=999)  # no tokenizer: the config's id
    assert _sample(f"hf-lm:{folder}", tmp_path / "o", "--length", "2") == 2
    line = _one_error(capsys)
    assert "the beginning-of-sequence token id 999 (config.json's bos_token_id) is outside the model's vocabulary " \
        "(0..40)" in line
    # an out-of-range padding id would fail while transformers builds the embedding: refused when read
    folder = edited_copy(models["bert"], tmp_path / "badpad", pad_token_id=500)
    assert _sample(f"hf-cls:{folder}", tmp_path / "o", "--length", "2", "--positive", "positive") == 2
    assert "gives pad_token_id 500, outside the model's vocabulary (0..44)" in _one_error(capsys)


# ------------------------------------------------------------------------------------------ not what the option needs
def test_folders_that_are_not_what_the_option_needs_say_what_they_are(models, labelled, tmp_path, capsys):
    assert _sample(f"hf-lm:{models['bert']}", tmp_path / "o", "--length", "2") == 2   # once: a random LM head, exit 0
    line = _one_error(capsys)
    assert "holds a BertForSequenceClassification (model_type bert), not a causal language model" in line
    assert f"use --model hf-cls:{models['bert']}" in line
    assert _sample(f"hf-cls:{models['gpt2']}", tmp_path / "o", "--length", "2", "--positive", "1") == 2
    line = _one_error(capsys)
    assert "holds a GPT2LMHeadModel (model_type gpt2), not a sequence classifier" in line
    # once: RuntimeError: cannot reshape tensor of 0 elements (PVI's empty input is no token for GPT-2)
    assert _profile(labelled, tmp_path / "o", "--classifier", str(models["gpt2"])) == 2
    line = _one_error(capsys)
    assert line.startswith("error: --classifier:") and "GPT2LMHeadModel (model_type gpt2)" in line
    assert "encoder checkpoint (BERT-style)" in line
    assert _profile(labelled, tmp_path / "o", "--lm", str(models["bert"])) == 2
    assert "--lm:" in (line := _one_error(capsys)) and "not a causal language model" in line


def test_a_checkpoint_without_the_head_the_option_reads_is_refused(models, tmp_path, capsys):
    # a config that claims a causal BERT (is_decoder) over a checkpoint with no language-model head: transformers
    # would draw the head at random and hf-lm would score with it
    folder = edited_copy(models["bert"], tmp_path / "headless", architectures=["BertLMHeadModel"], is_decoder=True)
    assert _sample(f"hf-lm:{folder}", tmp_path / "o", "--length", "2") == 2
    line = _one_error(capsys)
    assert "its checkpoint has no weights for cls.predictions" in line and "random values" in line
    # no transformers load report on the terminal either
    assert "MISSING" not in line and "LOAD REPORT" not in line


def test_a_length_beyond_the_models_positions_is_refused(models, tmp_path, capsys):
    # once: IndexError. The tiny GPT-2 has 32 positions, one of them for <|endoftext|>
    assert _sample(f"hf-lm:{models['gpt2']}", tmp_path / "o", "--length", "40") == 2
    line = _one_error(capsys)
    assert "--length 40 needs 41 positions with the beginning-of-sequence token" in line
    assert "has 32: give --length 31 or less" in line
    assert _sample(f"hf-lm:{models['nobos']}", tmp_path / "o", "--length", "33") == 2   # no BOS: 32 fit
    assert "give --length 32 or less" in _one_error(capsys)
    # the BERT tokenizer adds [CLS] and [SEP]: 64 positions hold 62 tokens
    assert _sample(f"hf-cls:{models['bert']}", tmp_path / "o", "--length", "63", "--positive", "positive") == 2
    assert "with the 2 special tokens the tokenizer adds" in (line := _one_error(capsys)) and "62 or less" in line
    model, _ = load_model(f"hf-lm:{models['gpt2']}", length=31)       # the largest that fits runs
    assert model(np.zeros((2, 31), dtype=np.int64)).shape == (2,)


# ------------------------------------------------------------------------------------------ what now works
def test_hf_cls_on_a_gpt2_classifier_scores_batches(models):
    # once: ValueError: Cannot handle batch sizes > 1 if no padding token is defined
    from transformers import GPT2ForSequenceClassification

    model, space = load_model(f"hf-cls:{models['gpt2cls']}", length=3, positive="positive")
    x = space.uniform(6, np.random.default_rng(0)).astype(np.int64)
    clf = GPT2ForSequenceClassification.from_pretrained(models["gpt2cls"]).eval()
    with torch.no_grad():  # each row alone (batch size 1 needs no padding id): the logit at its last token
        want = [float(clf(input_ids=torch.as_tensor(row[None] + 1)).logits[0, 1]) for row in x]
    np.testing.assert_allclose(model(x), want, atol=1e-5)
    z, g = model.grad(x, space.n_values)
    np.testing.assert_allclose(z, want, atol=1e-5)
    assert g.shape == (6, 3, 40) and np.abs(g).max() > 0


def test_bf16_runs_on_the_cpu(models, tmp_path, capsys):
    # once: TypeError: Got unsupported ScalarType BFloat16 (the fingerprint read the weights through numpy)
    out = tmp_path / "bf16"
    assert _sample(f"hf-lm:{models['gpt2']}", out, "--length", "3", "--precision", "bf16", "--device", "cpu") == 0
    s = OmniSamples.load(out)
    assert s.model["info"]["precision"] == "bf16" and len(s.model["fingerprint"]) == 16
    bf, space = load_model(f"hf-lm:{models['gpt2']}", length=3, precision="bf16", device="cpu")
    fp, _ = load_model(f"hf-lm:{models['gpt2']}", length=3, device="cpu")
    x = space.uniform(32, np.random.default_rng(0))
    # bf16 keeps 8 bits of mantissa: per-token NLLs of about 3.7 nats move by well under 0.1
    assert np.abs(bf(x) - fp(x)).max() < 0.1 and bf.fingerprint() != fp.fingerprint()


@pytest.mark.parametrize("length", [3, 4])
def test_exact_enumeration_without_a_beginning_of_sequence_token_is_brute_force(models, length):
    # once: lengths >= 3 crashed (completions sliced logp[:, :-2] where [:, :-1] is meant)
    model, space = load_model(f"hf-lm:{models['nobos']}", length=length, vocab="top:4")
    every = np.array(np.meshgrid(*[np.arange(4)] * length, indexing="ij")).reshape(length, -1).T
    z = model(every)                                                   # brute force: every input scored alone
    full = model.completions(every[::4, :-1])                          # every last token of each prefix at once
    np.testing.assert_allclose(full.reshape(-1), z, atol=1e-5)
    ex = make_sampler("exact", bin_width=0.02).run(model, space, quiet=True)
    counts = np.bincount(np.floor(z / 0.02).astype(int) - ex.bins.min())
    np.testing.assert_allclose(np.exp(ex.ln_rho), counts[counts > 0], rtol=1e-9)
    assert np.isclose(np.exp(ex.ln_rho).sum(), 4 ** length)


def test_top_n_above_the_vocabulary_is_noted(models, tmp_path, capsys):
    out = tmp_path / "top"
    assert _sample(f"hf-lm:{models['gpt2']}", out, "--length", "2", "--vocab", "top:500") == 0
    err = capsys.readouterr().err
    assert "note: --vocab top:500: the model has only 40 tokens that are not special tokens; the space uses all 40" \
        in err
    info = OmniSamples.load(out).model["info"]
    assert info["space_vocab"] == 40 and "top:500 was asked" in info["vocab"]


# ------------------------------------------------------------------------------------------ per-token NLL
def test_hf_lm_defaults_to_the_per_token_nll_and_total_is_the_sum(models, tmp_path, capsys):
    per = tmp_path / "per"
    assert _sample(f"hf-lm:{models['gpt2']}", per, "--length", "3") == 0
    tot = tmp_path / "tot"
    assert _sample(f"hf-lm:{models['gpt2']}", tot, "--length", "3", "--total") == 0
    a, b = OmniSamples.load(per), OmniSamples.load(tot)
    assert a.model["info"]["per_token"] is True and b.model["info"]["per_token"] is False
    # the same seed draws the same inputs: each total is 3 x its per-token NLL (3 tokens scored after <bos>)
    np.testing.assert_allclose(np.sort(b.candidates.z), np.sort(3 * a.candidates.z), rtol=1e-5)
    assert 2.0 < np.median(a.candidates.z) < 6.0                      # nats per token, on the paper's scale
    capsys.readouterr()
    assert main(["omni", "sample", "--model", "toy", "--total", "--out", str(tmp_path / "x")]) == 2
    assert "--total applies to hf-lm:DIR" in _one_error(capsys)


def test_a_folder_sampled_with_the_total_does_not_resume_as_per_token(models, tmp_path, capsys):
    out = tmp_path / "tot"
    assert _sample(f"hf-lm:{models['gpt2']}", out, "--length", "3", "--total") == 0
    capsys.readouterr()
    # the same command without --total: the output is now the per-token NLL, which the run never scored
    assert _sample(f"hf-lm:{models['gpt2']}", out, "--length", "3") == 2
    line = _one_error(capsys)
    assert "the run scored the total NLL and this command the per-token NLL" in line and "add --total" in line
    assert OmniSamples.load(out).model["info"]["per_token"] is False   # the folder is untouched
    assert main(["--quiet", "omni", "sample", "--model", f"hf-lm:{models['gpt2']}", "--length", "3", "--total",
                 "--sampler", "uniform", "--steps", "3", "--walkers", "8", "--chains", "2", "--out", str(out)]) == 0
    assert OmniSamples.load(out).sampler["params"]["steps"] == 3      # --total resumed it, one more step


def test_library_errors_name_the_field(models):
    with pytest.raises(DataError) as e:
        load_model(f"hf-lm:{models['bert']}", length=2)
    assert e.value.field == "model"
    with pytest.raises(ParameterError) as e:
        load_model(f"hf-cls:{models['bert']}", length=2, per_token=False, positive="positive")
    assert e.value.field == "per_token" and "--total applies to hf-lm" in str(e.value)
