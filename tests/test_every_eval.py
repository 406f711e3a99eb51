"""Every Eval Ever's instance-level files (evalsift.io.every_eval) in EEE's layout (tests/_harness_layouts.py, after
its instance_level_eval.schema.json and converters): every system's mean over an evaluation's samples equals the
score the aggregate record beside them keeps, for lm-eval-, HELM- and inspect-converted shapes."""

from __future__ import annotations

import json
import zlib
from pathlib import Path

import numpy as np
import pytest

from _harness_layouts import eee_result, eee_sample, write_every_eval
from evalsift.errors import DataError, DataWarning
from evalsift.io import detect_format, load
from evalsift.io.every_eval import describe_every_eval, looks_every_eval, read_every_eval

MODELS = ("meta-llama/Llama-3.2-1B", "Qwen/Qwen2.5-0.5B")


def _u(*key) -> float:
    return (zlib.crc32(repr(key).encode()) % 1000) / 1000


def _lm_eval_run(root: Path, model: str, seed: int) -> Path:
    """lm-eval converted: one line per sample, score = the first metric, all metrics in metadata.lm_eval_metrics."""
    eid = f"lm_eval/{model}/1760000000"
    samples, per = [], {"gsm8k": [], "acc": [], "acc_norm": []}
    for i in range(6):
        em = float(_u(model, "gsm", i) < 0.4)
        per["gsm8k"].append(em)
        samples.append(eee_sample(evaluation_id=eid, model_id=model, evaluation_name="gsm8k", sample_id=str(i),
                                  score=em, is_correct=em == 1.0, raw=f"What is {i} + {i}?", reference=[str(2 * i)],
                                  output=f"The answer is {2 * i if em else i}.",
                                  metadata={"filter": "none", "lm_eval_metrics": json.dumps({"exact_match": em})},
                                  token_usage={"input_tokens": 10 + i, "output_tokens": 5, "total_tokens": 15 + i}))
    for i in range(8):
        acc, acc_norm = float(_u(model, "arc", i) < 0.6), float(_u(model, "arcn", i) < 0.7)
        per["acc"].append(acc)
        per["acc_norm"].append(acc_norm)
        samples.append(eee_sample(evaluation_id=eid, model_id=model, evaluation_name="arc_easy", sample_id=str(i),
                                  score=acc, is_correct=acc == 1.0, raw=f"Question {i}", reference=["B"], output="B",
                                  metadata={"lm_eval_metrics": json.dumps({"acc": acc, "acc_norm": acc_norm}),
                                            "subject": "science"}))
    results = [eee_result("gsm8k", float(np.mean(per["gsm8k"])), description="exact_match"),
               eee_result("arc_easy", float(np.mean(per["acc"])), description="acc"),
               eee_result("arc_easy", float(np.mean(per["acc_norm"])), description="acc_norm")]
    return write_every_eval(root, model_id=model, collection="lm-eval", samples=samples, results=results,
                            seed=seed, evaluation_id=eid)[1]


def _helm_run(root: Path, model: str, seed: int) -> Path:
    """HELM converted: one line per (sample, core metric), joined to the aggregate by evaluation_result_id."""
    eid = f"mmlu/{model.replace('/', '_')}/1760000000"
    samples, per = [], {"exact_match:test": [], "quasi_exact_match:test": []}
    for i in range(5):
        em = float(_u(model, "mmlu", i) < 0.5)
        qem = max(em, float(_u(model, "q", i) < 0.3))
        for rid, v in (("exact_match:test", em), ("quasi_exact_match:test", qem)):
            per[rid].append(v)
            samples.append(eee_sample(evaluation_id=eid, model_id=model, evaluation_name="mmlu", sample_id=f"id{i}",
                                      evaluation_result_id=rid, score=v, is_correct=v > 0, raw=f"MMLU {i}",
                                      reference=["C"], output=" C",
                                      token_usage={"input_tokens": 300, "output_tokens": 1, "total_tokens": 301}))
    results = [eee_result(f"{rid.split(':')[0]} test on mmlu", float(np.mean(v)), evaluation_result_id=rid,
                          description=rid.split(":")[0]) for rid, v in per.items()]
    return write_every_eval(root, model_id=model, collection="mmlu", samples=samples, results=results, seed=seed,
                            evaluation_id=eid, library=("helm", "0.5.16"))[1]


def _inspect_run(root: Path, model: str, seed: int) -> Path:
    """inspect converted: one line per (sample, epoch); the aggregate is the mean over samples of the epochs' mean."""
    eid = f"gpqa/{model}/1760000000"
    samples, means = [], []
    for i in range(4):
        vals = [float(_u(model, "gpqa", i, e) < 0.5) for e in (1, 2)]
        means.append(np.mean(vals))
        for e, v in zip((1, 2), vals):
            samples.append(eee_sample(evaluation_id=eid, model_id=model, evaluation_name="gpqa", sample_id=f"q{i}",
                                      score=v, is_correct=v == 1.0, raw=f"GPQA {i}", reference=["A"],
                                      output="A" if v else "D", metadata={"epoch": str(e), "stop_reason": "stop"}))
    samples.append(eee_sample(evaluation_id=eid, model_id=model, evaluation_name="chat", sample_id="c0", score=0.5,
                              is_correct=False, raw="Hi", reference=[],
                              messages=[{"turn_idx": 0, "role": "user", "content": "Hi"},
                                        {"turn_idx": 1, "role": "assistant", "content": "Hello"},
                                        {"turn_idx": 2, "role": "user", "content": "Bye"},
                                        {"turn_idx": 3, "role": "assistant", "content": "Goodbye"}]))
    results = [eee_result("accuracy on gpqa for scorer choice", float(np.mean(means))),
               eee_result("chat", 0.5)]
    return write_every_eval(root, model_id=model, collection="gpqa", samples=samples, results=results, seed=seed,
                            evaluation_id=eid, library=("inspect_ai", "0.3.100"))[1]


@pytest.fixture(scope="module")
def datastore(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("eee")
    for k, model in enumerate(MODELS):
        _lm_eval_run(root, model, 10 + k)
        _helm_run(root, model, 20 + k)
        _inspect_run(root, model, 30 + k)
    return root / "data"


@pytest.fixture(scope="module")
def read(datastore):
    with pytest.warns(DataWarning, match=r"8 line\(s\) repeat .* averaged") as caught:
        pool = read_every_eval(datastore)
    return pool, caught


def _mean(pool, model: str, bench: str, metric: str) -> float:
    mask = np.array(pool.column("benchmark")) == bench
    return float(np.nanmean(pool.score(metric, model)[mask]))


def test_means_equal_the_aggregate_records(datastore, read):
    pool, _ = read
    assert set(pool.systems) == set(MODELS)
    checked = 0
    for agg_path in sorted(datastore.rglob("*.json")):
        agg = json.loads(agg_path.read_text())
        model = agg["model_info"]["id"]
        for res in agg["evaluation_results"]:
            rid, desc = res.get("evaluation_result_id"), res["metric_config"]["evaluation_description"]
            if rid:  # HELM's fan-out: the metric is named by the result id (no metric_id here)
                bench, metric = "mmlu", rid
            elif res["evaluation_name"].startswith("accuracy on gpqa"):
                bench, metric = "gpqa", "score"
            elif res["evaluation_name"] == "chat":
                bench, metric = "chat", "score"
            else:  # lm-eval: the first metric is `score`; every metric also under its own name
                bench, metric = res["evaluation_name"], desc
            assert abs(_mean(pool, model, bench, metric) - res["score_details"]["score"]) <= 1e-9, (model, res)
            if bench == "arc_easy" and desc == "acc" or bench in ("gsm8k", "chat"):
                assert abs(_mean(pool, model, bench, "score") - res["score_details"]["score"]) <= 1e-9
            checked += 1
    assert checked == 2 * (3 + 2 + 2)


def test_items_texts_and_columns(read):
    pool, _ = read
    i = pool.item_ids.index("gsm8k/3")
    assert pool.column("benchmark")[i] == "gsm8k" and pool.column("sample_id")[i] == "3"
    assert pool.inputs[i] == "What is 3 + 3?" and pool.references["ref"][i] == "6"
    assert pool.column("interaction_type")[i] == "single_turn" and pool.column("metadata.filter")[i] == "none"
    assert pool.score("input_tokens", MODELS[0])[i] == 13.0
    assert pool.column("metadata.subject")[pool.item_ids.index("arc_easy/0")] == "science"
    # multi-turn: the last assistant message is the output
    c = pool.item_ids.index("chat/c0")
    assert pool.outputs[MODELS[1]][c] == "Goodbye" and pool.column("interaction_type")[c] == "multi_turn"
    # HELM fan-out: one item per sample, one metric per result, no is_correct for them
    assert "mmlu/id0" in pool.item_ids and "mmlu/id0@" not in " ".join(pool.item_ids)
    m = pool.item_ids.index("mmlu/id0")
    assert np.isnan(pool.score("score")[m]).all() and np.isnan(pool.score("is_correct")[m]).all()
    assert not np.isnan(pool.score("exact_match:test")[m]).any()
    # epochs are averaged per sample
    g = pool.item_ids.index("gpqa/q0")
    assert set(pool.score("score")[g].tolist()) <= {0.0, 0.5, 1.0}


@pytest.mark.filterwarnings("ignore::evalsift.errors.DataWarning")
def test_one_file_and_load(datastore, read):
    pool, _ = read
    path = next(datastore.rglob("*_samples.jsonl"))
    one = read_every_eval(path)
    assert one.n_systems == 1 and set(one.item_ids) < set(pool.item_ids)
    assert detect_format(datastore) == "every-eval" and detect_format(path) == "every-eval"
    assert load(str(datastore)).item_ids == pool.item_ids


def test_metric_named_by_the_aggregates_metric_id(tmp_path):
    samples = [eee_sample(evaluation_id="e", model_id="org/m", evaluation_name="bench", sample_id="0",
                          evaluation_result_id=rid, score=v, is_correct=True, raw="x", reference=["y"], output="y")
               for rid, v in (("bench::acc", 1.0), ("bench::f1", 0.5))]
    results = [eee_result("bench", 1.0, evaluation_result_id="bench::acc", metric_id="accuracy"),
               eee_result("bench", 0.5, evaluation_result_id="bench::f1", metric_id="f1")]
    write_every_eval(tmp_path, model_id="org/m", collection="bench", samples=samples, results=results, seed=1,
                     evaluation_id="e")
    p = read_every_eval(tmp_path)
    assert p.score("accuracy").tolist() == [[1.0]] and p.score("f1").tolist() == [[0.5]]


def _write_lines(tmp_path: Path, lines: list[dict]) -> Path:
    path = tmp_path / "00000000-0000-4000-8000-000000000000_samples.jsonl"
    path.write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    return path


def test_bad_lines_name_file_line_and_field(tmp_path):
    good = eee_sample(evaluation_id="e", model_id="org/m", evaluation_name="b", sample_id="0", score=1.0,
                      is_correct=True, raw="x", reference=["y"], output="y")
    path = _write_lines(tmp_path, [good, {**good, "sample_id": "1", "model_id": None}])
    with pytest.raises(DataError, match=r"_samples\.jsonl: line 2: no 'model_id'.*system='NAME'"):
        read_every_eval(path)
    assert read_every_eval(path, system="org/m").item_ids == ("b/0", "b/1")
    path = _write_lines(tmp_path, [good, {**good, "sample_id": "1", "evaluation": {"is_correct": True}}])
    with pytest.raises(DataError, match=r"line 2: no 'evaluation\.score'"):
        read_every_eval(path)
    path = _write_lines(tmp_path, [{**good, "evaluation": {"score": "high", "is_correct": True}}])
    with pytest.raises(DataError, match=r"line 1: evaluation\.score is 'high', not a number"):
        read_every_eval(path)


def test_looks_and_describe(datastore, tmp_path):
    path = next(datastore.rglob("*_samples.jsonl"))
    assert looks_every_eval(datastore) and looks_every_eval(datastore.parent) and looks_every_eval(path)
    assert not looks_every_eval(path.with_name(path.name.replace("_samples.jsonl", ".json")))
    other = tmp_path / "x_samples.jsonl"
    other.write_text('{"item_id": "a", "system": "s"}\n')
    assert not looks_every_eval(other) and not looks_every_eval(tmp_path / "missing")
    info = describe_every_eval(datastore)
    assert info["tool"] == "Every Eval Ever" and info["version"] == "0.3.0"
    assert info["found"].startswith("6 samples files of 2 models (")
    assert "lm_eval 0.4.13" in info["found"] and "helm 0.5.16" in info["found"]
