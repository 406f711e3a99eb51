"""HELM run folders (evalsift.io.helm): files written in HELM's layout (tests/_harness_layouts.py, which follows
HELM's runner.py / metric.py / statistic.py); every system's mean of a per-instance metric must equal the mean
HELM's own aggregation put in stats.json, over train trials, perturbations and sub-splits."""

from __future__ import annotations

import json
import math
import re
import sys
import warnings
import zlib
from pathlib import Path

import numpy as np
import pytest

from _harness_layouts import MISSING, helm_expected_means, write_helm_run
from evalsift.errors import DataError, DataWarning, MissingDependencyError
from evalsift.io import detect_format, load
from evalsift.io.helm import describe_helm, looks_helm, read_helm

pytest.importorskip("ijson", reason="the HELM reader streams per_instance_stats.json with ijson (evalsift[harness])")

MODELS = ("openai/gpt2", "eleutherai/pythia-1b")
MMLU = "mmlu:subject=anatomy,method=multiple_choice_joint"


def _rand(*key) -> float:
    """A value in [0, 1) fixed by ``key`` (the same on every run)."""
    return (zlib.crc32(repr(key).encode()) % 10_000) / 10_000


def _mmlu(model: str, suite: Path) -> Path:
    insts = [{"id": f"id{i}", "text": f"Question {i}: which bone?", "split": "test" if i < 6 else "valid",
              "references": [(f"bone {i}-{j}", j == i % 4) for j in range(4)]} for i in range(8)]

    def value(i, trial, metric):
        if metric == "num_references":
            return 4
        if metric == "num_prompt_tokens":
            return 300 + i + trial
        if metric == "training_co2_cost":
            return None  # HELM writes count 0 here: no value
        return _rand(model, i, trial, metric) < 0.5 + 0.1 * (metric == "quasi_exact_match")

    return write_helm_run(suite, scenario="mmlu", args={"subject": "anatomy", "method": "multiple_choice_joint"},
                          model=model, instances=insts, value=value, num_train_trials=3, choices=True,
                          method="multiple_choice_joint",
                          metric_groups=[["exact_match", "quasi_exact_match", "num_references"],
                                         ["num_references", "num_prompt_tokens", "training_co2_cost"]],
                          completion=lambda i, trial: " " + "ABCD"[(i + trial) % 4])


def _narrative(model: str, suite: Path) -> Path:
    typos = {"name": "typos", "robustness": True, "fairness": False, "computed_on": "perturbed", "prob": 0.1}
    dialect = {"name": "dialect", "robustness": False, "fairness": True, "computed_on": "perturbed"}
    insts = []
    for i in range(5):
        base = {"id": f"id{100 + i}", "split": "test", "references": [(f"answer {i}", True)]}
        insts.append({**base, "text": f"Story {i}. Who?"})
        insts.append({**base, "text": f"Stroy {i}. Who?", "perturbation": typos})
        if i < 3:
            insts.append({**base, "text": f"Story {i}, who?", "perturbation": dialect})

    def value(i, trial, metric):
        if metric == "rouge_l" and i == 1:
            return MISSING
        return round(_rand(model, "nqa", i, metric), 4)

    return write_helm_run(suite, scenario="narrative_qa", args={}, model=model, instances=insts, value=value,
                          metric_groups=[["f1_score", "rouge_l", "exact_match"]],
                          completion=lambda i, trial: f"model says {i}")


def _civil(model: str, suite: Path) -> Path:
    insts = [{"id": f"id{200 + i}", "text": f"comment {i}", "split": "test", "references": [("True", True)],
              "sub_split": "toxic" if i % 3 == 0 else "non-toxic"} for i in range(9)]
    return write_helm_run(suite, scenario="civil_comments", args={"demographic": "all"}, model=model, instances=insts,
                          value=lambda i, trial, metric: _rand(model, "cc", i) < 0.6,
                          metric_groups=[["quasi_exact_match"]])


@pytest.fixture(scope="module")
def suite(tmp_path_factory) -> Path:
    runs = tmp_path_factory.mktemp("benchmark_output") / "runs" / "v1"
    for model in MODELS:
        _mmlu(model, runs)
        _narrative(model, runs)
        _civil(model, runs)
    return runs


@pytest.fixture(scope="module")
def read(suite):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        p = read_helm(suite)
    return p, [str(w.message) for w in caught if issubclass(w.category, DataWarning)]


@pytest.fixture(scope="module")
def pool(read):
    return read[0]


def _means_match(pool, run: Path, model: str) -> int:
    """Check every stats.json mean of this run that a per-instance metric gives; the number checked."""
    bench = re.sub(r"[,:]model=[^,]*$", "", run.name)  # the run's name without its model argument
    col_bench = np.array(pool.column("benchmark"), dtype=object)
    col_pert = np.array(pool.column("perturbation"), dtype=object)
    col_sub = np.array(pool.column("sub_split"), dtype=object)
    col_split = np.array(pool.column("split"), dtype=object)
    checked = 0
    for (name, split, sub, pert), expected in helm_expected_means(run).items():
        if name not in pool.scores or split != "test":
            continue
        mask = (col_bench == bench) & (col_split == split) & (col_pert == pert) & (col_sub == sub)
        assert mask.any(), (run.name, name, sub, pert)
        vals = pool.score(name, model)[mask]
        if expected is None:  # count 0 in stats.json: no value for any instance
            assert np.isnan(vals).all()
        else:
            assert abs(np.nanmean(vals) - expected) <= 1e-9, (run.name, name, sub, pert, np.nanmean(vals), expected)
        checked += 1
    return checked


def test_means_equal_stats_json_over_trials_perturbations_and_sub_splits(suite, pool):
    assert pool.systems == tuple(sorted(MODELS))  # in the order of the run folders' names
    checked = 0
    for run in sorted(suite.iterdir()):
        model = json.loads((run / "run_spec.json").read_text())["adapter_spec"]["model"]
        checked += _means_match(pool, run, model)
    # mmlu: 5 stats (num_references written by both metrics is one stat); narrative_qa: 3 stats x (original,
    # typos, dialect); civil_comments: 1 stat x 2 sub-splits -- for each of the two models
    assert checked == 2 * (5 + 9 + 2)


def test_trials_are_averaged_the_way_stats_json_is(suite, pool):
    # mmlu has 3 train trials; num_prompt_tokens is 300 + i + trial, so item i's value is 300 + i + 1
    items = [f"{MMLU}/id{i}" for i in range(6)]
    idx = [pool.item_ids.index(i) for i in items]
    assert pool.score("num_prompt_tokens", MODELS[0])[idx].tolist() == [301.0 + i for i in range(6)]
    # and the count-0 stat is in the Pool with no value
    assert np.isnan(pool.score("training_co2_cost")[idx]).all()


def test_items_columns_and_texts(pool):
    i = pool.item_ids.index(f"{MMLU}/id2")
    assert pool.column("benchmark")[i] == MMLU and pool.column("instance_id")[i] == "id2"
    assert pool.column("split")[i] == "test" and pool.column("perturbation")[i] is None
    assert pool.inputs[i] == "Question 2: which bone?"
    assert pool.references["ref"][i] == "bone 2-2"  # the reference tagged correct
    # trial 0's completion " C" (letter (2 + 0) % 4) mapped through output_mapping to the third choice's text
    assert pool.outputs[MODELS[0]][i] == "bone 2-2"
    # perturbed copies are their own items, next to the original
    for suffix, text in (("", "Story 1. Who?"), ("@typos", "Stroy 1. Who?"), ("@dialect", "Story 1, who?")):
        j = pool.item_ids.index(f"narrative_qa/id101{suffix}")
        assert pool.inputs[j] == text and pool.outputs[MODELS[1]][j] == "model says " + str(
            {"": 3, "@typos": 4, "@dialect": 5}[suffix])
    assert "narrative_qa/id103@dialect" not in pool.item_ids  # only 3 instances have a dialect copy
    # a stat one instance lacks (rouge_l of the typos copy of id100) is NaN there, not 0
    assert math.isnan(pool.score("rouge_l", MODELS[0])[pool.item_ids.index("narrative_qa/id100@typos")])
    assert set(pool.column("sub_split")) == {None, "toxic", "non-toxic"}
    # valid instances are not read by default (the test split is)
    assert f"{MMLU}/id6" not in pool.item_ids


def test_notes_repeated_stat_kept_once_and_other_splits_left_out(read):
    pool, notes = read
    assert notes == [("HELM: stat(s) num_references appear twice for one instance and trial (written by two "
                      "metrics); the first is kept"),
                     ("HELM: read the test split; instances of other splits are left out (valid: 4); split='NAME' "
                      "reads another")]
    assert set(pool.score("num_references")[~np.isnan(pool.score("num_references"))].tolist()) == {4.0}


@pytest.mark.filterwarnings("ignore::evalsift.errors.DataWarning")  # the repeated stat's note
def test_split_option_and_default_split(tmp_path, suite):
    valid = read_helm(suite, split="valid")
    assert sorted(valid.item_ids) == [f"{MMLU}/id6", f"{MMLU}/id7"]
    # a run with valid and train instances only: no default
    runs = tmp_path / "runs" / "s"
    insts = [{"id": f"i{k}", "text": "x", "split": s, "references": [("y", True)]}
             for k, s in enumerate(["valid", "train", "valid"])]
    write_helm_run(runs, scenario="boolq", args={}, model="m/a", instances=insts, value=lambda *a: 1.0,
                   metric_groups=[["exact_match"]])
    with pytest.raises(DataError, match=r"the run's instances come from several splits \(train, valid\).*split='NAME'"):
        read_helm(runs)
    assert read_helm(runs, split="train").item_ids == ("boolq/i1",)
    with pytest.raises(DataError, match=r"no instance of split 'test'; the runs have train, valid"):
        read_helm(runs, split="test")
    # a run's only split is its default, beside runs read in their test split
    only = tmp_path / "runs2"
    write_helm_run(only, scenario="boolq", args={}, model="m/a", instances=insts[:1], value=lambda *a: 1.0,
                   metric_groups=[["exact_match"]])
    assert read_helm(only).column("split") == ("valid",)
    write_helm_run(only, scenario="narrative_qa", args={}, model="m/a", value=lambda *a: 1.0,
                   instances=[dict(insts[0], split="test")], metric_groups=[["exact_match"]])
    both = read_helm(only)
    assert both.item_ids == ("boolq/i0", "narrative_qa/i0") and both.column("split") == ("valid", "test")


@pytest.mark.filterwarnings("ignore::evalsift.errors.DataWarning")  # the repeated stat's note
def test_one_run_folder_a_file_in_it_and_load(suite):
    run = next(p for p in sorted(suite.iterdir()) if p.name.startswith("narrative_qa") and "gpt2" in p.name)
    one = read_helm(run)
    assert one.systems == ("openai/gpt2",) and one.n_items == 13
    assert read_helm(run / "per_instance_stats.json").item_ids == one.item_ids
    assert detect_format(suite) == "helm" and detect_format(run / "per_instance_stats.json") == "helm"
    assert load(str(run)).item_ids == one.item_ids
    assert load(f"helm:{suite}", split="valid").n_items == 2


def test_looks_and_describe(suite, tmp_path):
    run = next(iter(sorted(suite.iterdir())))
    assert looks_helm(suite) and looks_helm(suite.parent.parent) and looks_helm(run)
    assert looks_helm(run / "per_instance_stats.json") and looks_helm(run / "run_spec.json")
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "stats.json").write_text("[]")
    assert not looks_helm(tmp_path / "other") and not looks_helm(tmp_path / "other" / "stats.json")
    assert not looks_helm(tmp_path / "missing")
    info = describe_helm(suite)
    assert info["tool"] == "HELM" and info["version"] is None
    assert info["found"].startswith("6 runs of 2 models (eleutherai/pythia-1b, openai/gpt2) on 3 scenarios")


def test_run_without_run_spec_needs_system(tmp_path):
    insts = [{"id": "i0", "text": "x", "split": "test", "references": [("y", True)]}]
    run = write_helm_run(tmp_path / "s", scenario="boolq", args={}, model="m/a", instances=insts,
                         value=lambda *a: 0.5, metric_groups=[["exact_match"]], with_spec=False, with_state=False)
    with pytest.raises(DataError, match=r"names no model.*system='NAME'"):
        read_helm(run)
    p = read_helm(run, system="my-model")
    assert p.systems == ("my-model",) and p.item_ids == ("boolq/i0",) and p.inputs == (None,)


def _bad_run(tmp_path: Path, text: str) -> Path:
    run = tmp_path / "bad"
    run.mkdir()
    (run / "run_spec.json").write_text(json.dumps({"name": "boolq:model=m", "adapter_spec": {"model": "m/a"}}))
    (run / "per_instance_stats.json").write_text(text)
    return run


def test_bad_files_name_the_file_and_entry(tmp_path):
    good = {"instance_id": "i0", "train_trial_index": 0,
            "stats": [{"name": {"name": "exact_match", "split": "test"}, "count": 1, "sum": 1, "mean": 1.0}]}
    run = _bad_run(tmp_path, json.dumps([good, {"instance_id": "i1", "train_trial_index": 0}]))
    with pytest.raises(DataError, match=r"per_instance_stats\.json: entry 1 is not a PerInstanceStats"):
        read_helm(run)
    (run / "per_instance_stats.json").write_text(json.dumps([good])[:-5])
    with pytest.raises(DataError, match=r"per_instance_stats\.json: not valid JSON"):
        read_helm(run)
    (run / "per_instance_stats.json").write_text(json.dumps([good]).replace("1.0", "Infinity"))
    with pytest.raises(DataError, match="Infinity"):
        read_helm(run)
    bad_mean = dict(good, stats=[dict(good["stats"][0], mean="high")])
    (run / "per_instance_stats.json").write_text(json.dumps([bad_mean]))
    with pytest.raises(DataError, match=r"entry 0 \(instance 'i0'\): stat 'exact_match'.*not a number"):
        read_helm(run)


def test_missing_ijson_names_the_extra(monkeypatch, suite):
    monkeypatch.setitem(sys.modules, "ijson", None)  # as if ijson were not installed
    with pytest.raises(MissingDependencyError, match=r"pip install 'evalsift\[harness\]'"):
        read_helm(suite)
