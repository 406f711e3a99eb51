"""Precomputed embeddings (issue 12): PrecomputedEncoder files, --embeddings, the cache's bulk import, embed import/export.

Real files in tmp_path, the real command line (``evalsift.cli.main``), the demo data, TF-IDF vectors
standing in for vectors embedded on a GPU elsewhere.
"""

from __future__ import annotations

import json
import pickle
import sqlite3
import uuid

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from evalsift.cli import main
from evalsift.embed import (
    CACHE_FILENAME,
    EmbeddingCache,
    Encoder,
    PrecomputedEncoder,
    SentenceTransformerEncoder,
    TfidfEncoder,
    clear_memo,
    embed_texts,
    save_embeddings,
    text_hash,
)
from evalsift.errors import DataError, DataWarning
from evalsift.io import load
from evalsift.pool import Pool
from evalsift.restrict import restrict_pair
from evalsift.select import build_selector


@pytest.fixture(scope="module")
def demo():
    """The demo pool, its distinct output texts and TF-IDF vectors for them (the 'GPU' vectors)."""
    pool = load("demo")
    texts = list(dict.fromkeys(o for s in pool.systems for o in pool.outputs[s]))
    return pool, texts, TfidfEncoder().encode(texts)


@pytest.fixture(autouse=True)
def cache_dir(tmp_path, monkeypatch):
    """Each test its own embedding cache and memo."""
    monkeypatch.setenv("EVALSIFT_CACHE", str(tmp_path / "cache"))
    clear_memo()
    yield tmp_path / "cache"
    clear_memo()


class DictEncoder(Encoder):
    """Returns given vectors by text, the in-Python equivalent of a precomputed file."""

    name = "dict"

    def __init__(self, vectors: dict[str, np.ndarray]) -> None:
        self.vectors = vectors
        self._key = f"dict-{uuid.uuid4().hex}"

    @property
    def cache_key(self) -> str:
        return self._key

    def encode(self, texts):
        return np.stack([self.vectors[t] for t in texts]).astype(np.float32)


def run(capsys, *argv):
    code = main([str(a) for a in argv])
    out = capsys.readouterr()
    return code, out.out, out.err


def item_rows(pool):
    """``(item_ids, systems, texts)`` of every output, item-major."""
    rows = [(pool.item_ids[i], s, pool.outputs[s][i]) for i in range(pool.n_items) for s in pool.systems]
    return [list(c) for c in zip(*rows)]


def write_parquet(path, vectors, fixed=True, **keys):
    d = vectors.shape[1]
    flat = pa.array(np.asarray(vectors).ravel())
    col = (pa.FixedSizeListArray.from_arrays(flat, d) if fixed
           else pa.ListArray.from_arrays(pa.array(np.arange(0, len(vectors) * d + 1, d, dtype=np.int32)), flat))
    pq.write_table(pa.table({**{k: pa.array(v) for k, v in keys.items()}, "vector": col}), path)
    return path


# ------------------------------------------------------------------------------ files and round trips
@pytest.mark.parametrize("suffix", [".npz", ".parquet"])
def test_round_trip_by_text_hash_and_texts(tmp_path, demo, suffix):
    _, texts, vecs = demo
    f = save_embeddings(tmp_path / f"v{suffix}", texts, vecs)
    enc = PrecomputedEncoder.from_file(f)
    assert enc.dim == vecs.shape[1] and len(enc) == len(texts) and enc.name == f"precomputed:v{suffix}"
    order = np.random.default_rng(0).permutation(len(texts))
    np.testing.assert_array_equal(enc.encode([texts[i] for i in order]), vecs[order])
    assert sorted(enc.hex_hashes()) == sorted(text_hash(t) for t in texts)
    # keyed by the texts themselves, float64, variable-length Parquet lists: the same vectors, the same cache key
    g = tmp_path / f"t{suffix}"
    if suffix == ".npz":
        np.savez(g, texts=np.array(texts), vectors=vecs.astype(np.float64))
    else:
        write_parquet(g, vecs.astype(np.float64), fixed=False, texts=texts)
    by_text = PrecomputedEncoder.from_file(g)
    np.testing.assert_array_equal(by_text.encode(texts), vecs)
    assert by_text.cache_key == enc.cache_key and enc.cache_key.startswith("precomputed:sha256=")


@pytest.mark.parametrize("suffix", [".npz", ".parquet"])
def test_item_and_system_keys_resolve_through_the_pool(tmp_path, demo, suffix):
    pool, texts, vecs = demo
    by_text = dict(zip(texts, vecs))
    items, systems, outs = item_rows(pool)
    rows = np.stack([by_text[t] for t in outs])
    f = tmp_path / f"items{suffix}"
    if suffix == ".npz":
        np.savez(f, item_id=np.array(items), system=np.array(systems), vectors=rows)
    else:
        write_parquet(f, rows, item_id=items, system=systems)
    enc = PrecomputedEncoder.from_file(f, pool=pool)
    assert len(enc) == len(texts)  # identical outputs of different items / systems: one text, one vector
    np.testing.assert_array_equal(enc.encode(texts), vecs)
    with pytest.raises(DataError, match="need the dataset.*--data"):
        PrecomputedEncoder.from_file(f)


def test_item_keys_rows_without_output_are_ignored_and_conflicts_keep_the_first_row(recwarn):
    pool = Pool(item_ids=["i0", "i1", "i2"], inputs=["x0", "x1", "x2"], systems=["A", "B"],
                outputs={"A": ["same", "a1", "a2"], "B": ["same", None, "b2"]})
    vecs = np.arange(10, dtype=np.float32).reshape(5, 2)
    enc = PrecomputedEncoder.from_arrays(vecs, item_id=["i0", "i0", "i1", "i1", "i2"], system=["A", "B", "A", "B", "A"],
                                         pool=pool)
    notes = [str(w.message) for w in recwarn if issubclass(w.category, DataWarning)]
    assert any("1 row(s) name an item and system without an output" in n for n in notes)
    assert any("1 row(s) give a different vector" in n and "first row" in n for n in notes)
    assert enc.encode(["same", "a1", "a2"]).tolist() == [[0, 1], [4, 5], [8, 9]]  # row 0 wins over row 1


# ------------------------------------------------------------------------------ validation
def test_texts_missing_from_the_file_name_count_first_text_and_fix(tmp_path):
    enc = PrecomputedEncoder.from_file(save_embeddings(tmp_path / "v.npz", ["a cat"], np.ones((1, 3))))
    with pytest.raises(DataError) as e:
        enc.encode(["a cat", "a dog " * 30, "a bird"])
    msg = str(e.value)
    assert "2 of 3 text(s) have no vector in" in msg and "'a dog a dog" in msg and "..." in msg
    assert "embed those texts too" in msg and "--encoder" in msg


@pytest.mark.parametrize("make, pattern", [
    (lambda p: np.savez(p, text_hash=np.array([], dtype="U64"), vectors=np.zeros((0, 3))), "holds no vectors"),
    (lambda p: np.savez(p, text_hash=np.array([text_hash("a")]), vectors=np.zeros(3)), r"shape \(3,\); expected \(n, d\)"),
    (lambda p: np.savez(p, text_hash=np.array([text_hash("a"), text_hash("b")]), vectors=np.array([[0, 1.], [np.nan, 0]])),
     "row 1 has a NaN or infinite value"),
    (lambda p: np.savez(p, text_hash=np.array([text_hash("a"), text_hash("a")]), vectors=np.ones((2, 2))),
     "rows 0 and 1 have the same text_hash.*one row per text"),
    (lambda p: np.savez(p, texts=np.array(["a", "b", "a"]), vectors=np.ones((3, 2))), "rows 0 and 2 have the same texts"),
    (lambda p: np.savez(p, text_hash=np.array([text_hash("a"), "xyz"]), vectors=np.ones((2, 2))),
     "text_hash of row 1 is 'xyz', not 64 hex digits.*sha256"),
    (lambda p: np.savez(p, text_hash=np.array([text_hash("a")[:-1] + "g"]), vectors=np.ones((1, 2))),
     "text_hash of row 0 .* not 64 hex digits"),
    (lambda p: np.savez(p, text_hash=np.array([text_hash("a")]), vectors=np.ones((2, 2))),
     "text_hash has 1 rows but vectors has 2"),
    (lambda p: np.savez(p, keys=np.array(["a"]), vectors=np.ones((1, 2))), "no key array: expected text_hash"),
    (lambda p: np.savez(p, item_id=np.array(["a"]), vectors=np.ones((1, 2))), "has item_id but no system array"),
    (lambda p: np.savez(p, text_hash=np.array(["a"])), "no array 'vectors' \\(it has: text_hash\\)"),
    (lambda p: np.savez(p, texts=np.array(["a"], dtype=object), vectors=np.ones((1, 2))), "object array.*dtype=str"),
    (lambda p: p.write_bytes(b"not a zip"), "not a readable NumPy .npz"),
])
def test_bad_npz_files_name_the_problem(tmp_path, make, pattern):
    path = tmp_path / "bad.npz"
    make(path)
    with pytest.raises(DataError, match=pattern):
        PrecomputedEncoder.from_file(path)


def test_bad_parquet_files_and_names(tmp_path):
    ragged = pa.array([[1.0, 2.0], [1.0, 2.0, 3.0]], pa.list_(pa.float32()))
    pq.write_table(pa.table({"text_hash": [text_hash("a"), text_hash("b")], "vector": ragged}), tmp_path / "r.parquet")
    with pytest.raises(DataError, match="row 1 has 3 values but row 0 has 2"):
        PrecomputedEncoder.from_file(tmp_path / "r.parquet")
    pq.write_table(pa.table({"text_hash": [text_hash("a")], "vector": pa.array([[1.0, None]])}), tmp_path / "n.parquet")
    with pytest.raises(DataError, match="row 0 has a NaN"):
        PrecomputedEncoder.from_file(tmp_path / "n.parquet")
    pq.write_table(pa.table({"text_hash": [text_hash("a")], "emb": pa.array([[1.0]])}), tmp_path / "c.parquet")
    with pytest.raises(DataError, match="no column 'vector' \\(it has: text_hash, emb\\)"):
        PrecomputedEncoder.from_file(tmp_path / "c.parquet")
    with pytest.raises(DataError, match=r"\.npz or a Parquet \.parquet/\.pq file, got '\.csv'"):
        PrecomputedEncoder.from_file(tmp_path / "v.csv")
    with pytest.raises(DataError, match="no such embeddings file"):
        PrecomputedEncoder.from_file(tmp_path / "absent.npz")


def test_item_keys_unknown_to_the_data_are_named_with_a_suggestion(tmp_path, demo):
    pool = demo[0]
    np.savez(tmp_path / "s.npz", item_id=np.array(["0", "1"]), system=np.array(["A", "Bb"]), vectors=np.ones((2, 2)))
    with pytest.raises(DataError, match="system 'Bb' is not in the data 'demo'. Did you mean 'B'") as e:
        PrecomputedEncoder.from_file(tmp_path / "s.npz", pool=pool)
    assert e.value.system == "Bb"
    np.savez(tmp_path / "i.npz", item_id=np.array(["0", "9999"]), system=np.array(["A", "A"]), vectors=np.ones((2, 2)))
    with pytest.raises(DataError, match="1 item_id\\(s\\) are not in the data 'demo' \\(first: '9999'\\)") as e:
        PrecomputedEncoder.from_file(tmp_path / "i.npz", pool=pool)
    assert e.value.item_id == "9999"
    np.savez(tmp_path / "d.npz", item_id=np.array(["0", "1", "0"]), system=np.array(["A", "A", "A"]),
             vectors=np.ones((3, 2)))
    with pytest.raises(DataError, match="rows 0 and 2 both give item '0', system 'A'"):
        PrecomputedEncoder.from_file(tmp_path / "d.npz", pool=pool)


# ------------------------------------------------------------------------------ embed_texts and the cache
def test_embed_texts_serves_precomputed_vectors_without_memo_or_disk(tmp_path, demo, cache_dir):
    _, texts, vecs = demo
    enc = PrecomputedEncoder.from_file(save_embeddings(tmp_path / "v.npz", texts, vecs))
    got = embed_texts(texts[:5] + texts[:5], enc, progress=False)
    np.testing.assert_array_equal(got, np.concatenate([vecs[:5], vecs[:5]]))
    assert not (cache_dir / CACHE_FILENAME).exists()  # nothing copied into SQLite
    assert enc._key is None  # the memo (keyed by cache_key) was never consulted
    small = pickle.loads(pickle.dumps(enc.subset(texts[3:8] + texts[3:5])))  # what worker processes would get
    assert len(small) == 5 and len(pickle.dumps(small)) < 20_000
    np.testing.assert_array_equal(small.encode(texts[3:8]), vecs[3:8])
    with pytest.raises(DataError, match="1 of 1 text"):
        small.encode([texts[0]])


def test_import_vectors_streams_chunks_and_ignores_existing_rows(tmp_path):
    cache = EmbeddingCache(tmp_path / "c")
    texts = [f"text {i}" for i in range(25)]
    vecs = np.random.default_rng(1).normal(size=(25, 4)).astype(np.float32)
    hashes = (text_hash(t) for t in texts)  # consumed lazily
    assert cache.import_vectors("k", hashes, vecs, chunk=7) == 25
    assert cache.import_vectors("k", [text_hash(t) for t in texts[:10]], vecs[:10] + 1, chunk=3) == 0  # kept
    got = cache.get_many("k", [text_hash(t) for t in texts])
    np.testing.assert_array_equal(np.stack([got[text_hash(t)] for t in texts]), vecs)
    with pytest.raises(DataError, match="holds 4-d vectors under 'k'; these are 3-d"):
        cache.import_vectors("k", ["x" * 64], np.ones((1, 3)))
    assert cache.stats()["keys"] == {"k": 25}


# ------------------------------------------------------------------------------ the command line
@pytest.mark.parametrize("keys", ["text_hash", "item_id+system"])
def test_select_with_embeddings_equals_selection_with_those_vectors(capsys, tmp_path, demo, keys):
    pool, texts, vecs = demo
    f = tmp_path / "v.npz"
    if keys == "text_hash":
        save_embeddings(f, texts, vecs)
    else:
        by_text = dict(zip(texts, vecs))
        items, systems, outs = item_rows(pool)
        np.savez(f, item_id=np.array(items), system=np.array(systems), vectors=np.stack([by_text[t] for t in outs]))
    out = tmp_path / "picks.jsonl"
    code, _, err = run(capsys, "select", "diffuse", "--data", "demo", "--a", "A", "--b", "C", "--budget", 15,
                       "--embeddings", f, "--out", out)
    assert code == 0, err
    picked = [json.loads(line)["item_id"] for line in out.read_text().splitlines()]
    sel = build_selector("diffuse", 0, {"encoder": DictEncoder(dict(zip(texts, vecs)))})
    sub = restrict_pair(pool, "A", "C").pool
    expected = [sub.item_ids[i] for i in sel.fit(sub).select(15).items]
    assert picked == expected and len(picked) == 15


def test_embeddings_and_encoder_exclude_each_other_and_missing_texts_fail_cleanly(capsys, tmp_path, demo):
    _, texts, vecs = demo
    f = save_embeddings(tmp_path / "v.npz", texts[:100], vecs[:100])
    args = ["select", "diffuse", "--data", "demo", "--a", "A", "--b", "B", "--budget", 5, "--out", tmp_path / "p"]
    code, _, err = run(capsys, *args, "--embeddings", f, "--encoder", "tfidf")
    assert code == 2 and "--embeddings and --encoder exclude each other" in err
    code, _, err = run(capsys, *args, "--embeddings", f)
    assert code == 2 and err.startswith("error: ") and "text(s) have no vector in" in err and "--encoder" in err
    code, _, err = run(capsys, "compare", "--data", "demo", "--a", "A", "--b", "B", "--oracle", "metric:human",
                       "--method", "diffuse", "--embeddings", save_embeddings(tmp_path / "all.npz", texts, vecs),
                       "--json")
    assert code == 0, err


def test_embed_import_fills_the_cache_so_a_later_run_computes_nothing(capsys, tmp_path, demo, cache_dir):
    pool, texts, vecs = demo
    model = "st:" + str(tmp_path / "no-such-model")  # a GPU-side model that is not on this machine
    f = save_embeddings(tmp_path / "gpu.parquet", texts, vecs)
    code, _, err = run(capsys, "embed", "import", f, "--encoder", model, "--quiet")
    assert code == 0 and f"imported {len(texts)} new vectors" in err, err
    key = SentenceTransformerEncoder(model[3:]).cache_key
    with sqlite3.connect(cache_dir / CACHE_FILENAME) as conn:
        assert conn.execute("SELECT COUNT(*), MIN(dim) FROM embeddings WHERE key=?", (key,)).fetchone() == (
            len(texts), vecs.shape[1])
    # selecting with that encoder finds every vector in the cache: loading the (absent) model would fail
    out = tmp_path / "picks.jsonl"
    code, _, err = run(capsys, "select", "diffuse", "--data", "demo", "--a", "A", "--b", "B", "--budget", 10,
                       "--encoder", model, "--out", out, "--quiet")
    assert code == 0, err
    sel = build_selector("diffuse", 0, {"encoder": DictEncoder(dict(zip(texts, vecs)))})
    sub = restrict_pair(pool, "A", "B").pool
    assert [json.loads(r)["item_id"] for r in out.read_text().splitlines()] == [
        sub.item_ids[i] for i in sel.fit(sub).select(10).items]
    code, _, err = run(capsys, "embed", "import", f, "--encoder", model, "--quiet")
    assert code == 0 and f"imported 0 new vectors ({len(texts)} already cached)" in err


def test_embed_import_checks_the_dimension_and_needs_data_for_item_keys(capsys, tmp_path, demo):
    pool, texts, vecs = demo
    code, _, err = run(capsys, "embed", "import", save_embeddings(tmp_path / "v.npz", texts, vecs), "--encoder", "minilm")
    assert code == 2 and f"holds {vecs.shape[1]}-d vectors but encoder 'minilm' makes 384-d" in err
    code, _, err = run(capsys, "embed", "import", tmp_path / "v.npz", "--encoder", "tfidf")
    assert code == 2 and "never cached" in err
    items, systems, _ = item_rows(pool)
    np.savez(tmp_path / "items.npz", item_id=np.array(items), system=np.array(systems), vectors=np.ones((len(items), 384)))
    code, _, err = run(capsys, "embed", "import", tmp_path / "items.npz", "--encoder", "minilm")
    assert code == 2 and "--data" in err
    code, _, err = run(capsys, "embed", "import", tmp_path / "items.npz", "--encoder", "minilm", "--data", "demo",
                       "--quiet")
    assert code == 0 and f"imported {len(texts)} new vectors" in err


@pytest.mark.parametrize("suffix", [".npz", ".parquet"])
def test_embed_export_round_trip(capsys, tmp_path, demo, suffix):
    _, texts, vecs = demo
    out = tmp_path / f"export{suffix}"
    code, _, err = run(capsys, "embed", "export", "--data", "demo", "--encoder", "tfidf", "--out", out, "--quiet")
    assert code == 0 and f"wrote {len(texts)} vectors" in err
    np.testing.assert_allclose(PrecomputedEncoder.from_file(out).encode(texts), vecs, atol=1e-6)
    code, _, err = run(capsys, "embed", "export", "--data", "demo", "--encoder", "tfidf", "--out", tmp_path / "x.csv")
    assert code == 2 and ".npz or .parquet" in err
