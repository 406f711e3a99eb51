"""Tests of evalsift.pool: deep immutability, typed per-item columns, cheap (lazy) views, resampling,
non-text inputs, pickling, and that every existing way of reading a Pool keeps working."""

import copy
import json
import pickle
import types

import numpy as np
import pytest

from evalsift.errors import DataError
from evalsift.io import read_s2e_jsonl, write_s2e_jsonl
from evalsift.io._common import json_default
from evalsift.pool import Pool, ReadOnlyDict, ReadOnlyList, freeze

NAN = np.nan


def toy(n=4, **kw):
    """4 items x systems A, B; metric m (human) and auto; reference ref; columns domain, rec, cost."""
    args = dict(
        item_ids=[f"i{k}" for k in range(n)],
        inputs=[f"src {k}" for k in range(n)],
        systems=["A", "B"],
        outputs={"A": [f"a{k}" for k in range(n)], "B": [None if k % 2 else f"b{k}" for k in range(n)]},
        scores={"m": np.arange(2.0 * n).reshape(n, 2), "auto": np.full((n, 2), 0.5)},
        human_metrics=["m"],
        references={"ref": [f"r{k}" for k in range(n)]},
        metadata={"domain": [f"d{k % 2}" for k in range(n)],
                  "rec": [{"src": f"src {k}", "ref": [f"r{k}"], "extra": {"tags": ["x"]}} for k in range(n)],
                  "cost": [1.0 + k for k in range(n)]},
        name="toy",
    )
    args.update(kw)
    return Pool(**args)


# ------------------------------------------------------------------------------- deeply read-only
MUTATIONS = {
    "set output column": lambda p: p.outputs.__setitem__("A", ("z",) * 4),
    "delete output column": lambda p: p.outputs.__delitem__("A"),
    "set one output": lambda p: p.outputs["A"].__setitem__(0, "z"),
    "set score matrix": lambda p: p.scores.__setitem__("m", np.zeros((4, 2))),
    "set one score": lambda p: p.scores["m"].__setitem__((0, 0), 9.0),
    "fill scores": lambda p: p.scores["m"].fill(0.0),
    "score view": lambda p: p.score("m", "A").__setitem__(0, 9.0),
    "writeable flag": lambda p: p.scores["m"].setflags(write=True),
    "set reference": lambda p: p.references.__setitem__("ref2", ("x",) * 4),
    "set one reference": lambda p: p.references["ref"].__setitem__(0, "x"),
    "set column": lambda p: p.metadata.__setitem__("domain", ("x",) * 4),
    "set one metadata value": lambda p: p.metadata["domain"].__setitem__(0, "x"),
    "record field": lambda p: p.metadata["rec"][0].__setitem__("src", "x"),
    "record delete": lambda p: p.metadata["rec"][0].__delitem__("src"),
    "record update": lambda p: p.metadata["rec"][0].update(src="x"),
    "record |=": lambda p: p.metadata["rec"][0].__ior__({"src": "x"}),
    "record setdefault": lambda p: p.metadata["rec"][0].setdefault("new", 1),
    "record re-init": lambda p: p.metadata["rec"][0].clear(),
    "nested list append": lambda p: p.metadata["rec"][0]["ref"].append("r9"),
    "nested list set": lambda p: p.metadata["rec"][0]["ref"].__setitem__(0, "x"),
    "nested list +=": lambda p: p.metadata["rec"][0]["ref"].__iadd__(["x"]),
    "nested list sort": lambda p: p.metadata["rec"][0]["ref"].sort(),
    "nested dict in dict": lambda p: p.metadata["rec"][0]["extra"].__setitem__("tags", []),
    "list in dict in dict": lambda p: p.metadata["rec"][0]["extra"]["tags"].append("y"),
    "attribute": lambda p: setattr(p, "name", "x"),
    "delete attribute": lambda p: delattr(p, "name"),
    "human metrics": lambda p: p.human_metrics.add("auto"),
    "item ids": lambda p: p.item_ids.__setitem__(0, "x"),
    "inputs": lambda p: p.inputs.__setitem__(0, "x"),
    "mapping update": lambda p: p.outputs.update({}),
}


@pytest.mark.parametrize("view", ["pool", "subset", "resample", "with_systems", "pickled"])
@pytest.mark.parametrize("what", list(MUTATIONS))
def test_every_mutation_attempt_raises(what, view):
    p = toy()
    p = {"pool": p, "subset": p.subset([3, 1, 0, 2]), "resample": p.resample([0, 1, 2, 3]),
         "with_systems": p.with_systems(["A", "B"]), "pickled": pickle.loads(pickle.dumps(p))}[view]
    before = pickle.dumps(p)
    with pytest.raises((TypeError, ValueError, AttributeError)):
        MUTATIONS[what](p)
    assert pickle.dumps(p) == before  # nothing changed


def test_array_columns_and_array_inputs_are_read_only():
    p = toy(inputs=np.arange(12).reshape(4, 3)).with_columns(length=np.array([3, 1, 4, 1]))
    for arr in (p.inputs, p.metadata["length"], p.subset([1, 0]).inputs, p.subset([1, 0]).column("length")):
        with pytest.raises(ValueError):
            arr[0] = 7
        with pytest.raises(ValueError):
            arr.setflags(write=True)


def test_caller_data_is_copied_not_aliased():
    scores = np.zeros((2, 1))
    outs, meta, rec = ["a", "b"], [1.0, 2.0], {"k": [1]}
    arr, inputs = np.array([5, 6]), np.zeros((2, 2))
    p = Pool(item_ids=["x", "y"], systems=["S"], inputs=inputs, outputs={"S": outs}, scores={"m": scores},
             metadata={"c": meta, "rec": [rec, rec], "arr": arr})
    scores[0, 0], outs[0], meta[0], arr[0], inputs[0, 0] = 9, "z", 9, 9, 9
    rec["k"].append(2)
    rec["new"] = 1
    assert p.scores["m"][0, 0] == 0 and p.outputs["S"] == ("a", "b") and p.metadata["c"] == (1.0, 2.0)
    assert p.metadata["arr"].tolist() == [5, 6] and p.inputs[0, 0] == 0
    assert p.metadata["rec"][0] == {"k": [1]}
    assert scores.flags.writeable and arr.flags.writeable  # the caller's arrays are left writeable
    q = p.with_columns(w=arr)
    arr[1] = 0
    assert q.column("w").tolist() == [9, 6]


def test_mutable_copies_are_easy_and_independent():
    p = toy()
    outs = dict(p.outputs)
    outs["A"] = ("z",) * 4
    col = list(p.outputs["A"])
    col[0] = "z"
    m = np.array(p.scores["m"])
    m[0, 0] = 99.0
    rec = dict(p.metadata["rec"][0])
    rec["src"] = "changed"
    refs = list(rec["ref"])
    refs.append("x")
    assert p.outputs["A"][0] == "a0" and p.scores["m"][0, 0] == 0.0 and p.metadata["rec"][0]["src"] == "src 0"
    assert p.metadata["rec"][0]["ref"] == ["r0"]


def test_frozen_values_compare_and_serialise_like_the_originals():
    rec = {"src": "s", "ref": ["a", "b"], "scores": {"A": {"m": 1.0}}, "t": (1, [2])}
    f = freeze(rec)
    assert isinstance(f, dict) and isinstance(f, ReadOnlyDict) and isinstance(f["ref"], ReadOnlyList)
    assert f == rec and f["ref"] == ["a", "b"] and f["t"] == (1, [2])
    assert json.loads(json.dumps(f)) == json.loads(json.dumps(rec))
    assert pickle.loads(pickle.dumps(f)) == rec and type(pickle.loads(pickle.dumps(f))) is ReadOnlyDict
    assert copy.deepcopy(f) == rec and copy.copy(f) is f
    assert type(f.copy()) is dict and type(f["ref"] + ["c"]) is list
    f.__init__({"other": 1})  # re-initialising is a no-op, not a way in
    assert f == rec
    assert freeze({1, 2}) == frozenset({1, 2}) and freeze(bytearray(b"x")) == b"x"


def test_json_default_serialises_read_only_mappings_and_tuples():
    p = toy()
    data = json.loads(json.dumps({"meta": p.metadata, "outputs": p.subset([1]).outputs}, default=json_default))
    assert data["outputs"] == {"A": ["a1"], "B": [None]}
    assert data["meta"]["rec"][0] == {"src": "src 0", "ref": ["r0"], "extra": {"tags": ["x"]}}
    assert json_default(types.MappingProxyType({"a": 1})) == {"a": 1} and json_default((1, 2)) == [1, 2]
    json.dumps(p.info(), default=json_default)


def test_s2e_records_are_frozen_and_still_written_back(tmp_path):
    path = tmp_path / "x.jsonl"
    recs = [{"i": 1, "src": "s1", "ref": ["r", "q"], "note": {"a": [1]}, "tgt": {"A": "a1"}, "scores": {"A": {"human": 1}}},
            {"i": 2, "src": "s2", "tgt": {"A": "a2"}, "scores": {"A": {"human": 0}}}]
    path.write_text("".join(json.dumps(r) + "\n" for r in recs))
    pool = read_s2e_jsonl(path)
    with pytest.raises(TypeError):
        pool.metadata["_record"][0]["src"] = "x"
    with pytest.raises(TypeError):
        pool.metadata["_record"][0]["note"]["a"].append(2)
    assert pool.metadata["_record"][0]["ref"] == ["r", "q"]
    out = write_s2e_jsonl(pool.subset([1, 0]), tmp_path / "y.jsonl")
    back = [json.loads(line) for line in out.read_text().splitlines()]
    assert back[1]["note"] == {"a": [1]} and back[1]["ref"] == ["r", "q"] and back[0]["i"] == 2


# ------------------------------------------------------------------------------- existing uses keep working
@pytest.mark.parametrize("view", ["pool", "subset", "subset of subset", "resample"])
def test_columns_read_as_before(view):
    p = toy()
    p = {"pool": p, "subset": p.subset([0, 1, 2, 3]), "subset of subset": p.subset([3, 2, 1, 0]).subset([3, 2, 1, 0]),
         "resample": p.resample([0, 1, 2, 3])}[view]
    assert isinstance(p.outputs, types.MappingProxyType) and isinstance(p.metadata, types.MappingProxyType)
    assert isinstance(p.scores, types.MappingProxyType) and isinstance(p.references, types.MappingProxyType)
    assert p.outputs["B"] == ("b0", None, "b2", None) and p.outputs["B"][2] == "b2"
    assert list(p.outputs) == ["A", "B"] and len(p.outputs) == 2 and "A" in p.outputs and "C" not in p.outputs
    assert [s for s, _ in p.outputs.items()] == ["A", "B"] and list(p.outputs.keys()) == ["A", "B"]
    assert [len(c) for c in p.outputs.values()] == [4, 4] and p.outputs.get("C") is None
    assert list(p.metadata["domain"]) == ["d0", "d1", "d0", "d1"] and p.metadata["cost"] == (1.0, 2.0, 3.0, 4.0)
    assert p.references.get("ref") == ("r0", "r1", "r2", "r3") and bool(p.references)
    assert p.outputs == toy().outputs and toy().outputs == p.outputs and p.outputs != {}
    assert dict(p.outputs) == {"A": ("a0", "a1", "a2", "a3"), "B": ("b0", None, "b2", None)}
    assert {**p.references} == {"ref": ("r0", "r1", "r2", "r3")} and p.outputs.copy() == dict(p.outputs)
    assert (p.references | {"x": 1})["x"] == 1 and list(reversed(p.outputs)) == ["B", "A"]
    assert "mappingproxy" in repr(p.outputs) and "'b2'" in repr(p.outputs)
    assert p.score("m").shape == (4, 2) and p.is_human("m") and p.metrics == ("auto", "m")
    assert p.inputs == ("src 0", "src 1", "src 2", "src 3") and p.inputs_are_text


def test_empty_mappings_compare_to_empty_dicts():
    p = Pool(item_ids=["a"], systems=["S"])
    assert p.metadata == {} and p.scores == {} and p.references == {} and not p.references
    assert p.subset([]).metadata == {} and p.outputs == {"S": (None,)}


# ------------------------------------------------------------------------------- constructor messages
@pytest.mark.parametrize("kw, pattern, field", [
    (dict(item_ids=["a", "a"]), r"Pool 'toy': item_id 'a' appears more than once; item ids must be unique", "item_ids"),
    (dict(systems=["A", "A"]), r"system names must be unique", "systems"),
    (dict(inputs=["x"]), r"'inputs' has 1 entries but there are 4 items", "inputs"),
    (dict(outputs={"Z": ["x"] * 4}), r"outputs given for system 'Z', which is not in systems", "outputs"),
    (dict(outputs={"A": ["x"]}), r"outputs of system 'A' have 1 entries but there are 4 items", "outputs"),
    (dict(scores={"m": np.zeros((4, 3))}), r"scores\['m'\] has shape \(4, 3\), expected \(n_items, n_systems\) = \(4, 2\)", "m"),
    (dict(scores={"m": [["a", "b"]] * 4}), r"scores\['m'\] is not numeric", "m"),
    (dict(human_metrics=["h"]), r"human_metrics \['h'\] have no score matrix", "human_metrics"),
    (dict(references={"ref": ["x"]}), r"reference 'ref' has 1 entries but there are 4 items", "ref"),
    (dict(metadata={"d": ["x"]}), r"metadata field 'd' has 1 entries but there are 4 items", "d"),
    (dict(metadata={"d": 5}), r"column 'd' must be a sequence with one value per item", "d"),
])
def test_constructor_errors_keep_their_shape_and_name_the_field(kw, pattern, field):
    if "item_ids" in kw:
        kw.update(inputs=None, outputs=None, scores=None, human_metrics=(), references=None, metadata=None)
    with pytest.raises(DataError, match=pattern) as e:
        toy(**kw)
    assert e.value.field == field


# ------------------------------------------------------------------------------- typed columns
def test_with_columns_keeps_array_dtypes_and_makes_other_sequences_tuples():
    p = toy()
    q = p.with_columns(length=np.array([3, 1, 4, 1], dtype=np.int32), emb=np.ones((4, 3), dtype=np.float32),
                       lang=["de", None, "en", "fr"], n=[1, 2, None, 4.5])
    assert q.column("length").dtype == np.int32 and q.column("emb").shape == (4, 3)
    assert q.column("lang") == ("de", None, "en", "fr") and q.column("n") == (1, 2, None, 4.5)  # no guessing
    assert list(q.metadata) == ["domain", "rec", "cost", "length", "emb", "lang", "n"]
    assert "length" not in p.metadata  # the original is unchanged
    obj = q.with_columns(o=np.array([{"a": 1}, None, 2, "x"], dtype=object)).column("o")
    assert isinstance(obj, tuple) and isinstance(obj[0], ReadOnlyDict)
    info = q.info()["columns"]
    assert info["length"] == "int32 array of shape (4,)" and info["lang"] == "tuple"


def test_with_columns_float_rule():
    p = toy()
    q = p.with_columns({"clarity": [0.5, None, float("nan"), 2], "flag": [True, False, 1, np.float32(0.5)]}, dtype=float)
    c = q.column("clarity")
    assert c.dtype == np.float64 and np.array_equal(c, [0.5, NAN, NAN, 2.0], equal_nan=True) and not c.flags.writeable
    assert q.column("flag").tolist() == [1.0, 0.0, 1.0, 0.5]
    assert p.with_columns(x=np.array([1, 2, 3, 4]), dtype=float).column("x").dtype == np.float64
    assert p.with_columns(x=[1, 2, 3, 4], dtype=np.int16).column("x").dtype == np.int16
    with pytest.raises(DataError, match=r"column 'c': item 'i2' has '1.5' \(str\), which is not a number, None or NaN") as e:
        p.with_columns(c=[1, 2, "1.5", 4], dtype=float)
    assert e.value.field == "c" and e.value.item_id == "i2"
    with pytest.raises(DataError, match=r"column 'c': item 'i1' has None .* not convertible to int64"):
        p.with_columns(c=[1, None, 3, 4], dtype=np.int64)


def test_with_columns_replaces_in_place_and_checks_lengths():
    p = toy()
    q = p.with_columns(domain=np.array([0.1, 0.2, 0.3, 0.4]))
    assert list(q.metadata) == list(p.metadata) and q.column("domain").tolist() == [0.1, 0.2, 0.3, 0.4]
    for values, dtype in (([1, 2, 3], None), ([1, 2, 3], float), (np.zeros(5), None), (np.zeros(5), float)):
        with pytest.raises(DataError, match=r"Pool 'toy': column 'x' has (3|5) values but there are 4 items") as e:
            p.with_columns(x=values, dtype=dtype)
        assert e.value.field == "x"
    with pytest.raises(DataError, match="given both in the mapping and as a keyword"):
        p.with_columns({"x": [1] * 4}, x=[2] * 4)
    assert p.with_columns({"dtype": [1, 2, 3, 4]}).column("dtype") == (1, 2, 3, 4)  # odd names via the mapping


def test_column_lookup_and_conversion():
    p = toy()
    assert p.column("cost") == (1.0, 2.0, 3.0, 4.0) and p.column("cost", float).tolist() == [1.0, 2.0, 3.0, 4.0]
    with pytest.raises(DataError, match=r"Pool 'toy' has no column 'domian'. Did you mean 'domain'\? Columns: domain, rec, cost") as e:
        p.column("domian")
    assert e.value.field == "domian"
    with pytest.raises(DataError, match=r"column 'domain': item 'i0' has 'd0'"):
        p.column("domain", float)


def test_columns_follow_the_items():
    p = toy().with_columns(t=np.array([[0, 1], [2, 3], [4, 5], [6, 7]]), cost=[9, 8, 7, 6])
    q = p.subset([2, 0])
    assert q.column("t").tolist() == [[4, 5], [0, 1]] and q.column("cost") == (7, 9) and q.column("domain") == ("d0", "d0")
    r = p.resample([1, 1])
    assert r.column("t").tolist() == [[2, 3], [2, 3]] and r.column("cost") == (8, 8)
    assert p.with_systems(["B"]).column("cost") == (9, 8, 7, 6) and p.complete("m").column("cost") == (9, 8, 7, 6)


# ------------------------------------------------------------------------------- subsets
def test_subset_order_mask_negative_and_errors():
    p = toy()
    q = p.subset([3, -4])
    assert q.item_ids == ("i3", "i0") and q.score("m").tolist() == [[6.0, 7.0], [0.0, 1.0]]
    assert q.outputs["B"] == (None, "b0") and q.references["ref"] == ("r3", "r0") and q.inputs == ("src 3", "src 0")
    assert p.subset(np.array([True, False, True, False])).item_ids == ("i0", "i2")
    assert p.subset([]).n_items == 0 and p.subset([]).outputs["A"] == () and p.subset([]).score("m").shape == (0, 2)
    assert p.subset([2]).outputs["A"] == ("a2",) and p.subset(range(2)).item_ids == ("i0", "i1")
    assert p.subset(np.array([1.0, 0.0])).item_ids == ("i1", "i0")
    with pytest.raises(DataError, match=r"subset: item positions must be in \[0, 4\), got 0..4"):
        p.subset([0, 4])
    with pytest.raises(DataError, match=r"subset: boolean mask has shape \(3,\), expected \(4,\)"):
        p.subset([True, False, True])
    with pytest.raises(DataError, match="must be integers"):
        p.subset([0.5])
    with pytest.raises(DataError, match="1-D"):
        p.subset([[0, 1]])


def test_subset_refuses_repeats_and_points_to_resample():
    p = toy()
    with pytest.raises(DataError, match=r"item_id 'i1' \(position 1\) appears more than once; item ids must be unique. "
                                        r".*pool.resample\(idx\)") as e:
        p.subset([1, 2, -3])
    assert e.value.item_id == "i1" and e.value.field == "idx"


def test_views_match_a_naive_rebuild_on_random_pools():
    rng = np.random.default_rng(7)
    for trial in range(20):
        n = int(rng.integers(1, 30))
        p = toy(n=n, inputs=[None if k % 5 == 0 else f"in{k}" for k in range(n)]).with_columns(x=rng.normal(size=n))
        idx = rng.permutation(n)[: int(rng.integers(0, n + 1))]
        idx2 = rng.permutation(len(idx))[: int(rng.integers(0, len(idx) + 1))]
        for q, pos in ((p.subset(idx), idx), (p.subset(idx).subset(idx2), idx[idx2]),
                       (p.subset(idx).with_systems(["B"]).subset(idx2), idx[idx2])):
            assert q.item_ids == tuple(p.item_ids[i] for i in pos)
            assert q.inputs == tuple(p.inputs[i] for i in pos)
            for s in q.systems:
                assert q.outputs[s] == tuple(p.outputs[s][i] for i in pos)
            assert q.metadata["rec"] == tuple(p.metadata["rec"][i] for i in pos)
            np.testing.assert_array_equal(q.column("x"), p.column("x")[pos])
            for m in q.metrics:
                np.testing.assert_array_equal(q.scores[m], p.scores[m][pos][:, [p.system_index(s) for s in q.systems]])


def test_other_views():
    p = toy()
    assert p.with_systems(["B", "A"]).score("m").tolist()[0] == [1.0, 0.0]
    with pytest.raises(DataError, match="system names must be unique"):
        p.with_systems(["A", "A"])
    with pytest.raises(DataError, match=r"Unknown system 'C' in pool 'toy'") as e:
        p.with_systems(["C"])
    assert e.value.system == "C"
    with pytest.raises(DataError, match="the two systems must differ"):
        p.pair("A", "A")
    assert p.pair("B", "A").systems == ("B", "A")
    q = p.with_scores("m", np.array([[1.0, NAN]] * 4))
    assert p.is_human("m") and not q.is_human("m") and q.complete("m").n_items == 0
    assert p.with_scores("h", [[0.0, 1.0]] * 4, human=True).human_metrics == {"m", "h"}
    with pytest.raises(DataError, match=r"scores\['h'\] has shape \(1, 2\)"):
        p.with_scores("h", [[0.0, 1.0]])
    r = p.with_name("other")
    assert r.name == "other" and r.outputs["A"] is p.outputs["A"] and r.scores["m"] is p.scores["m"]  # shared
    assert p.coverage()["outputs"] == {"A": 1.0, "B": 0.5}


# ------------------------------------------------------------------------------- resample and bootstrap
def test_resample_ids_rows_and_source_item():
    p = toy()
    r = p.resample([2, 0, 2, 2, 0, 1])
    assert r.item_ids == ("i2", "i0", "i2#2", "i2#3", "i0#2", "i1")
    assert r.column("source_item") == ("i2", "i0", "i2", "i2", "i0", "i1")
    assert r.score("m").tolist() == [[4, 5], [0, 1], [4, 5], [4, 5], [0, 1], [2, 3]]
    assert r.outputs["B"] == ("b2", "b0", "b2", "b2", "b0", None) and r.column("domain")[2] == "d0"
    assert p.resample([1, 0]).item_ids == ("i1", "i0") and p.resample([1, 0]).column("source_item") == ("i1", "i0")
    rr = r.resample([2, 2, 5])  # a resample of a resample keeps naming the first pool's items
    assert rr.item_ids == ("i2#2", "i2#2#2", "i1") and rr.column("source_item") == ("i2", "i2", "i1")
    assert p.resample([]).n_items == 0 and p.resample([]).column("source_item") == ()


def test_resample_ids_never_name_another_item_of_the_pool():
    p = Pool(item_ids=["a", "a#2", "b"], systems=["S"], scores={"m": [[1.0], [2.0], [3.0]]})
    r = p.resample([0, 0, 0, 2])
    assert r.item_ids == ("a", "a#3", "a#4", "b")  # "a#2" is another item of p
    assert r.column("source_item") == ("a", "a", "a", "b") and r.score("m", "S").tolist() == [1, 1, 1, 3]
    assert p.resample([1, 0, 1, 0]).item_ids == ("a#2", "a", "a#2#2", "a#3")


def test_bootstrap_is_a_seeded_resample():
    p = toy(n=20)
    b = p.bootstrap(seed=3)
    rows = np.random.default_rng(3).integers(0, 20, size=20)
    assert b.column("source_item") == tuple(p.item_ids[i] for i in rows)
    np.testing.assert_array_equal(b.score("m"), p.score("m")[rows])
    assert len(set(b.item_ids)) == 20 and b.item_ids == p.bootstrap(seed=3).item_ids
    assert b.item_ids != p.bootstrap(seed=4).item_ids
    assert p.bootstrap(np.random.default_rng(3)).item_ids == b.item_ids
    assert Pool(item_ids=[], systems=["S"]).bootstrap().n_items == 0


# ------------------------------------------------------------------------------- inputs that are not text
def test_array_inputs():
    tokens = np.arange(24, dtype=np.int16).reshape(4, 6)
    p = toy(inputs=tokens)
    assert isinstance(p.inputs, np.ndarray) and p.inputs.dtype == np.int16 and not p.inputs_are_text
    assert p.subset([3, 1]).inputs.tolist() == [tokens[3].tolist(), tokens[1].tolist()]
    assert p.resample([0, 0]).inputs.shape == (2, 6) and not p.subset([0]).inputs_are_text
    assert p.info()["inputs"] == {"kind": "array", "shape": [4, 6], "dtype": "int16"}
    images = np.zeros((4, 2, 2, 3), dtype=np.uint8)
    assert toy(inputs=images).subset([1]).inputs.shape == (1, 2, 2, 3)
    with pytest.raises(DataError, match=r"'inputs' has 3 entries but there are 4 items"):
        toy(inputs=np.zeros((3, 2)))
    with pytest.raises(DataError, match="0-d array"):
        toy(inputs=np.array(1))


def test_object_and_text_inputs():
    class Image:
        pass

    objs = [Image(), {"path": "x.png"}, None, "caption"]
    p = toy(inputs=objs)
    assert not p.inputs_are_text and p.inputs[0] is objs[0] and isinstance(p.inputs[1], ReadOnlyDict)
    assert p.info()["inputs"] == {"kind": "objects", "types": ["Image", "NoneType", "ReadOnlyDict", "str"]}
    assert p.subset([2, 3]).inputs_are_text  # the text part of an object pool is text
    assert toy(inputs=np.array(["a", "b", "c", "d"])).inputs == ("a", "b", "c", "d")  # 1-D strings are texts
    assert toy(inputs=["a", None, "c", "d"]).inputs_are_text
    assert Pool(item_ids=["x", "y"], systems=["S"]).inputs == ("", "") and toy().info()["inputs"] == {"kind": "text"}


# ------------------------------------------------------------------------------- pickle and deepcopy
@pytest.mark.parametrize("how", ["pickle", "deepcopy"])
def test_pickle_and_deepcopy_round_trip_read_only(how):
    p = toy(inputs=np.arange(8).reshape(4, 2)).with_columns(x=np.array([1.0, 2, 3, 4]))
    for pool in (p, p.subset([3, 1]), p.resample([0, 0, 1])):
        q = pickle.loads(pickle.dumps(pool)) if how == "pickle" else copy.deepcopy(pool)
        assert q is not pool and q.item_ids == pool.item_ids and q.name == pool.name
        assert q.outputs == pool.outputs and q.references == pool.references and q.human_metrics == pool.human_metrics
        assert list(q.metadata) == list(pool.metadata) and q.metadata["rec"] == pool.metadata["rec"]
        np.testing.assert_array_equal(q.inputs, pool.inputs)
        for m in pool.metrics:
            np.testing.assert_array_equal(q.scores[m], pool.scores[m])
        for arr in (q.scores["m"], q.inputs, q.column("x")):
            assert not arr.flags.writeable
            with pytest.raises(ValueError):
                arr.setflags(write=True)
        with pytest.raises(TypeError):
            q.metadata["rec"][0]["src"] = "x"
        assert isinstance(q.metadata, types.MappingProxyType) and q.system_index("B") == 1
    assert copy.copy(p) is p


def test_pools_go_to_worker_processes():
    from concurrent.futures import ProcessPoolExecutor

    p = toy()
    with ProcessPoolExecutor(max_workers=1) as ex:
        assert ex.submit(_sum_scores, p.subset([0, 1])).result() == float(p.score("m")[:2].sum())


def _sum_scores(pool):
    return float(pool.score("m").sum())
