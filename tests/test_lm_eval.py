"""lm-evaluation-harness's own output read as a Pool, handed back with ``--export lm-eval``, and the loop through
``estimate --run``.

Every file read here is written by lm-eval itself (tests/_harness_runs.py): 10 tiny random-weight GPT-2 models
("m0".."m9", seeds 0..9) and a new one ("newm", seed 100) on two local tasks, ``tiny_mc`` (100 documents, multiple
choice: acc, acc_norm) and ``tiny_gen`` (20 documents, generate_until: exact_match). The new model's run on the
exported anchors goes through lm-eval's command line exactly as ``select anchors --export lm-eval`` prints it.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import shlex
import shutil
import warnings
from importlib.metadata import version
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("lm_eval", reason="lm-evaluation-harness is not installed (pip install 'evalsift[dev]')")
pytest.importorskip("accelerate", reason="lm-eval's hf model needs accelerate (pip install 'lm-eval[hf]')")
pytest.importorskip("transformers", reason="the tiny models need transformers")

import _harness_runs as hr

pytestmark = pytest.mark.slow  # lm-eval runs 12 times (about 45 s on one idle core): start these first

from evalsift.cli import main
from evalsift.cli.estimate import cmd_estimate, register
from evalsift.errors import DataError, DataWarning
from evalsift.io import detect_format, load
from evalsift.io.export import lm_eval_samples
from evalsift.io.lm_eval import looks_lm_eval, read_lm_eval


@pytest.fixture(scope="session")
def runs(tmp_path_factory) -> hr.LmEvalRuns:
    """The shared lm-eval runs (built once per test session, shared by pytest-xdist workers)."""
    shared = os.environ.get("EVALSIFT_TEST_RUN_DIR")
    root = Path(shared) / "lm-eval-runs" if shared else tmp_path_factory.mktemp("lm-eval-runs")
    return hr.lm_eval_runs(root)


def _results(folder: Path) -> dict[str, dict]:
    """lm-eval's results file of each model folder under ``folder``, read here directly: model name -> JSON."""
    out = {}
    for f in sorted(folder.glob("*/results_*.json")):
        doc = json.loads(f.read_text(encoding="utf-8"))
        out[doc["model_name"]] = doc
    return out


def _read(path, **kw):
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        pool = read_lm_eval(path, **kw)
    return pool, [str(x.message) for x in w if issubclass(x.category, DataWarning)]


def test_means_equal_lm_evals_own_scores(runs):
    """For every model, task and mean-aggregated metric, the mean of the Pool's per-item scores over the task's
    items is lm-eval's own score in results_*.json (``acc,none``, ...), to 1e-9."""
    pool, notes = _read(runs.known)
    results = _results(runs.known)
    assert pool.systems == runs.known_models == tuple(results)
    assert set(pool.metrics) == {"acc", "acc_norm", "exact_match"}
    task = np.array(pool.column("task"))
    assert (task == "tiny_mc").sum() == 100 and (task == "tiny_gen").sum() == 20 and pool.n_items == 120
    compared = 0
    for model, res in results.items():
        k = pool.systems.index(model)
        for t, cfg in res["configs"].items():
            for entry in cfg["metric_list"]:
                assert entry["aggregation"] == "mean"  # all of these tasks' metrics are mean-aggregated
                m = entry["metric"]
                ours = float(np.mean(np.asarray(pool.scores[m])[task == t, k]))
                assert abs(ours - res["results"][t][f"{m},none"]) <= 1e-9, (model, t, m)
                compared += 1
    assert compared == 10 * 3
    # the scores differ between models (not a constant that would match any mean)
    assert len({round(r["results"]["tiny_mc"]["acc,none"], 6) for r in results.values()}) > 2
    assert not any("left out" in n for n in notes)


def test_texts_ids_and_groups_are_lm_evals(runs):
    """Item ids <task>/<doc_id>; input = the context lm-eval sent; output = the filtered response (the choice of
    highest log-likelihood for multiple choice); reference = the target (the choice's text)."""
    pool, _ = _read(runs.known)
    sample = next(runs.known.glob("m3/samples_tiny_mc_*.jsonl"))
    lines = [json.loads(x) for x in sample.read_text(encoding="utf-8").splitlines()]
    rec = lines[7]
    i = pool.item_ids.index(f"tiny_mc/{rec['doc_id']}")
    assert pool.inputs[i] == rec["doc"]["question"] == rec["arguments"]["gen_args_0"]["arg_0"]
    lls = [float(r[0]) for r in rec["filtered_resps"]]
    assert pool.outputs["m3"][i] == rec["doc"]["choices"][int(np.argmax(lls))]
    assert pool.references["ref"][i] == rec["doc"]["choices"][rec["doc"]["label"]]
    assert pool.metadata["doc_id"][i] == rec["doc_id"] and pool.metadata["task"][i] == "tiny_mc"
    # acc as lm-eval computes it: the gold choice has the highest log-likelihood
    assert pool.score("acc")[i, pool.systems.index("m3")] == float(int(np.argmax(lls)) == rec["doc"]["label"])
    gen = json.loads(next(runs.known.glob("m3/samples_tiny_gen_*.jsonl")).read_text().splitlines()[4])
    j = pool.item_ids.index(f"tiny_gen/{gen['doc_id']}")
    assert pool.outputs["m3"][j] == gen["filtered_resps"][0] and pool.references["ref"][j] == gen["target"]


def test_data_info_names_the_tool_and_its_version(runs, capsys):
    assert detect_format(runs.known) == "lm-eval"
    assert main(["data", "info", str(runs.known)]) == 0
    out = capsys.readouterr().out
    assert f"written by: lm-evaluation-harness {version('lm_eval')}; 10 runs (m0, m1, m2, m3, ...) of 2 tasks " \
           "(tiny_gen, tiny_mc)" in out
    assert "120 items x 10 systems" in out


def test_looks_lm_eval_by_names_only(runs, tmp_path):
    model = runs.known / "m0"
    assert looks_lm_eval(runs.known) and looks_lm_eval(model) and looks_lm_eval(runs.root)  # depth 3
    results = next(model.glob("results_*.json"))
    assert looks_lm_eval(next(model.glob("samples_*.jsonl"))) and looks_lm_eval(results)
    assert load(str(results)).systems == ("m0",)  # a results file reads as its run's samples
    (tmp_path / "other.jsonl").write_text('{"doc_id": 1}\n')
    (tmp_path / "results_x.json").write_text("{}")
    assert not looks_lm_eval(tmp_path) and not looks_lm_eval(tmp_path / "other.jsonl")
    assert not looks_lm_eval(tmp_path / "results_x.json") and not looks_lm_eval(tmp_path / "missing")


def test_a_samples_file_alone_is_named_by_folder_or_system(runs, tmp_path):
    src = next(runs.known.glob("m2/samples_tiny_gen_*.jsonl"))
    (tmp_path / "alone").mkdir()
    f = shutil.copy(src, tmp_path / "alone" / src.name)
    pool, notes = _read(f)
    assert pool.systems == ("alone",) and any("named after the folder (alone)" in n for n in notes)
    assert read_lm_eval(f, system="gpt-x").systems == ("gpt-x",)
    with pytest.warns(DataWarning, match="named after the folder"):
        assert load(str(f)).n_items == 20


def test_newest_run_of_a_model_and_task_wins(runs, loop, tmp_path):
    """Two real runs of the new model in one folder (the full one and the later one on the anchors): the newest
    file per task is read, and a note names the older one."""
    both = tmp_path / "both" / "newm"
    both.mkdir(parents=True)
    for f in [*runs.new_full.glob("newm/*"), *loop["new_run"].glob("newm/*")]:
        shutil.copy(f, both / f.name)
    pool, notes = _read(both.parent)
    task = np.array(pool.column("task"))
    assert (task == "tiny_mc").sum() == 20 and (task == "tiny_gen").sum() == 20  # anchors run: tiny_mc only
    old = next(runs.new_full.glob("newm/samples_tiny_mc_*.jsonl")).name
    assert any("newm has 2 runs of tiny_mc" in n and old in n for n in notes)


def test_runs_that_disagree_on_items_are_joined_on_the_shared_ones(runs, loop, tmp_path):
    both = tmp_path / "mixed"
    shutil.copytree(runs.known, both)
    shutil.copytree(loop["new_run"] / "newm", both / "newm")
    pool, notes = _read(both)
    assert pool.n_systems == 11 and pool.n_items == 20  # only the 20 anchors every run has
    assert any("100 of 120 items are left out" in n for n in notes)


def test_another_version_of_the_data_is_an_error(runs, tmp_path):
    """Two runs whose document under one doc_id differs (doc_hash): an error naming the item and both places."""
    for m in ("m0", "m1"):
        shutil.copytree(runs.known / m, tmp_path / m)
    f = next((tmp_path / "m1").glob("samples_tiny_gen_*.jsonl"))
    lines = f.read_text(encoding="utf-8").splitlines()
    rec = json.loads(lines[3])
    rec["doc"]["question"] += " w1"
    rec["doc_hash"] = "0" * 64  # as lm-eval would hash another document
    lines[3] = json.dumps(rec)
    f.write_text("\n".join(lines) + "\n", encoding="utf-8")
    with pytest.raises(DataError, match=r"item 'tiny_gen/3' is another document in .*line 4 than in .*doc_hash"):
        read_lm_eval(tmp_path)


def test_details_parquet_reads_as_its_jsonl(runs, tmp_path):
    """The same records as Parquet (the form of the Hub's converted details datasets; written here by the
    datasets library from lm-eval's own file) give the same Pool."""
    datasets = pytest.importorskip("datasets")
    src = next(runs.known.glob("m4/samples_tiny_mc_*.jsonl"))
    pq = tmp_path / "m4" / src.with_suffix(".parquet").name
    pq.parent.mkdir()
    datasets.Dataset.from_json(str(src), cache_dir=str(tmp_path / "cache")).to_parquet(str(pq))
    a, _ = _read(src)
    b, _ = _read(pq)
    assert b.item_ids == a.item_ids and b.inputs == a.inputs and b.references == a.references
    for m in a.metrics:
        assert np.array_equal(a.score(m), b.score(m))
    assert b.outputs == a.outputs
    renamed = shutil.copy(pq, tmp_path / "0000.parquet")
    c = load(f"lm-eval:{renamed}", task="tiny_mc", system="m4")
    assert c.item_ids == a.item_ids and c.systems == ("m4",)


# ------------------------------------------------------------------------------------ export and the loop
@pytest.fixture(scope="session")
def loop(runs):
    """select anchors --export lm-eval; the printed lm_eval command run as printed (plus the task folder and the
    device); what each step said. Once per test session (shared by the xdist workers)."""

    def build(tmp: Path) -> dict:
        anchors = tmp / "anchors.jsonl"
        err = io.StringIO()
        with contextlib.redirect_stderr(err):
            code = main(["select", "anchors", "--data", str(runs.known), "--metric", "acc", "--budget", "20",
                         "--method", "stratified", "--seed", "1", "--out", str(anchors), "--export", "lm-eval"])
        said = err.getvalue()
        assert code == 0, said
        line = next(x for x in said.splitlines() if x.strip().startswith("lm_eval "))
        argv = [a.replace("NEW_MODEL", runs.new_model).replace("NEW_RUN_DIR", str(tmp / "newrun"))
                for a in shlex.split(line)[1:]]
        seconds = runs.cli([*argv, "--include_path", str(runs.tasks_dir), "--device", "cpu", "--batch_size", "16"])
        return {"said": said, "command": line.strip(), "seconds": seconds}

    tmp = runs.root / "loop"
    done = hr.once(tmp, build)
    return {**done, "tmp": tmp, "anchors": tmp / "anchors.jsonl", "new_run": tmp / "newrun"}


def test_export_writes_lm_evals_samples_file(runs, loop):
    samples_file = loop["anchors"].with_name("anchors.lm-eval.json")
    samples = json.loads(samples_file.read_text())
    ids = [json.loads(x)["item_id"] for x in loop["anchors"].read_text().splitlines()]
    assert list(samples) == ["tiny_mc"] and samples["tiny_mc"] == sorted(int(i.split("/")[1]) for i in ids)
    assert f"--samples {samples_file}" in loop["command"] and "--num_fewshot 0" in loop["command"]
    assert "then, with the new model's run: evalsift estimate" in loop["said"]
    # lm-eval ran exactly those documents, and logged them under their own doc ids: the same prompt and score
    # as in the new model's full run
    part, full = load(str(loop["new_run"])), load(str(runs.new_full))
    assert sorted(part.item_ids) == sorted(ids) and part.systems == (runs.new_model,)
    for i in part.item_ids:
        a, b = part.item_ids.index(i), full.item_ids.index(i)
        assert part.inputs[a] == full.inputs[b] and part.score("acc")[a, 0] == full.score("acc")[b, 0]


def test_estimate_from_the_new_models_own_run_covers_its_full_score(runs, loop, capsys, tmp_path):
    """estimate --run: the new model's scores on the anchors come from its lm-eval run; every design-based
    interval covers its full-run acc (lm-eval's own number), and so does the regression's conformal one."""
    out = tmp_path / "est"
    assert main(["estimate", "--data", str(runs.known), "--metric", "acc", "--system", runs.new_model, "--items",
                 str(loop["anchors"]), "--run", str(loop["new_run"]), "--method", "mean,aipw,regression",
                 "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    est = json.loads((out / "estimate.json").read_text())
    truth = _results(runs.new_full)[runs.new_model]["results"]["tiny_mc"]["acc,none"]
    assert est["run"] == str(loop["new_run"]) and est["known_systems"] == list(runs.known_models)
    assert est["full_score_in_data"] is None  # the data has no newm, the run only the anchors
    assert {e["method"] for e in est["estimates"]} == {"mean", "aipw", "regression"}
    for e in est["estimates"]:
        assert e["interval"] is not None and e["interval"][0] <= truth <= e["interval"][1], (e, truth)
        assert 0 <= e["interval"][0] <= e["interval"][1] <= 1  # acc's stated range: correct (1) or not (0)
    assert "states no range" not in printed
    assert "newm: acc over 100 items, from 20 judged (stratified design, seed 1); 10 known systems" in printed


def test_estimate_names_anchors_the_run_lacks(runs, loop, tmp_path):
    other = tmp_path / "other.jsonl"
    assert main(["select", "anchors", "--data", str(runs.known), "--metric", "acc", "--budget", "20", "--seed", "7",
                 "--out", str(other)]) == 0
    p = argparse.ArgumentParser()
    register(p.add_subparsers())  # the handler itself, to see the whole error (the command prints one line of it)
    args = p.parse_args(["estimate", "--data", str(runs.known), "--metric", "acc", "--system", "newm", "--items",
                         str(other), "--run", str(loop["new_run"]), "--out", str(tmp_path / "e")])
    with pytest.raises(DataError, match=r"newm has no acc score in --run .* on \d+ of the 20 anchor item\(s\): "
                                        r"'tiny_mc/\d+'.*--export lm-eval"):
        cmd_estimate(args)


def test_export_needs_lm_evals_logs(tmp_path, capsys):
    out = tmp_path / "a.jsonl"
    assert main(["select", "anchors", "--data", "demo", "--budget", "5", "--out", str(out), "--export",
                 "lm-eval"]) == 2
    err = capsys.readouterr().err
    assert "has no task or doc_id: the lm-eval export needs the data to come from lm-eval's own logs" in err
    assert not out.exists() and not out.with_name("a.lm-eval.json").exists()
    assert main(["select", "random", "--data", "demo", "--budget", "5", "--out", str(out), "--export",
                 "lm-evl"]) == 2
    assert "Did you mean 'lm-eval'?" in capsys.readouterr().err and not out.exists()


def test_select_random_exports_too(runs, tmp_path):
    out = tmp_path / "picks.jsonl"
    assert main(["select", "random", "--data", str(runs.known), "--budget", "7", "--seed", "3", "--out", str(out),
                 "--export", "lm-eval"]) == 0
    ids = [json.loads(x)["item_id"] for x in out.read_text().splitlines()]
    samples = json.loads(out.with_name("picks.lm-eval.json").read_text())
    assert sum(map(len, samples.values())) == 7 == len(ids)
    assert samples == lm_eval_samples(load(str(runs.known)), ids)


def test_bench_estimate_runs_on_lm_eval_runs(runs, tmp_path, capsys):
    assert main(["bench", "estimate", "--data", str(runs.known), "--metric", "acc", "--budgets", "10", "--seeds", "2",
                 "--methods", "mean,aipw", "--out", str(tmp_path / "b"), "--quiet"]) == 0
    out = capsys.readouterr().out
    assert "all (10 held-out systems x 2 seeds)" in out and "aipw@random" in out
    res = json.loads((tmp_path / "b" / "results.json").read_text())
    assert res["systems"] == 10 and res["items"] == 100
