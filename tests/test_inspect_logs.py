"""inspect_ai's logs (evalsift.io.inspect_logs) read from inspect's own output: logs that inspect 0.3.x wrote on a
tiny local task (tests/_inspect_runs.py), offline, checked against the results inspect itself put in each log's
header; the same run as .eval and as .json; a deflate copy of a zstd archive; runs killed before they finished;
the command line (data info, compare with a model-graded proxy); and the export that inspect's --sample-id takes,
run through inspect again."""

from __future__ import annotations

import importlib.metadata
import json
import os
import subprocess
import sys
import warnings
import zipfile
from pathlib import Path

import numpy as np
import pytest

from evalsift.cli import main
from evalsift.errors import DataError, DataWarning, MissingDependencyError
from evalsift.io import detect_format, load
from evalsift.io.inspect_logs import describe_inspect, export_inspect, inspect_next_step, looks_inspect, read_inspect
from evalsift.pool import Pool

from _inspect_runs import FAST, MODELS, N_SAMPLES, inspect_runs

pytestmark = pytest.mark.slow


@pytest.fixture(scope="session")
def runs(tmp_path_factory):
    pytest.importorskip("inspect_ai", reason="inspect_ai is not installed (pip install 'evalsift[dev]'): the tests "
                                             "read logs that inspect itself writes")
    pytest.importorskip("zstandard", reason="zstandard is not installed (pip install 'evalsift[harness]'): inspect's "
                                            ".eval entries are zstd-compressed")
    shared = os.environ.get("EVALSIFT_TEST_RUN_DIR")  # the run's folder (tests/conftest.py), shared by xdist workers
    return inspect_runs(Path(shared) / "inspect-runs" if shared else tmp_path_factory.mktemp("inspect-runs"))


def _read(path, **kw):
    """The Pool and the notes (DataWarning texts) reading ``path`` gave."""
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        pool = read_inspect(path, **kw)
    return pool, [str(x.message) for x in w if issubclass(x.category, DataWarning)]


def _metric(score: dict, reducers: list) -> str:
    """Our metric's name for one of inspect's ``results.scores``: the scorer, ``scorer/key`` for a key of a dict
    value (inspect names that score after the key), ``@reducer`` for every reducer after the first."""
    base = score["scorer"] if score["name"] == score["scorer"] else f"{score['scorer']}/{score['name']}"
    return base if score["reducer"] in (None, reducers[0]) else f"{base}@{score['reducer']}"


def _check_against_headers(pool, expected):
    checked = 0
    for log in expected:
        rows = [i for i, t in enumerate(pool.column("task")) if t == log["task"]]
        assert len(rows) == len(log["sample_ids"])
        col = pool.systems.index(log["model"])
        reducers = [s["reducer"] for s in log["scores"] if s["scorer"] == log["scores"][0]["scorer"]]
        for score in log["scores"]:
            values = pool.score(_metric(score, reducers))[rows, col]
            kind = "accuracy" if "accuracy" in score["metrics"] else "mean"
            assert abs(np.nanmean(values) - score["metrics"][kind]) < 1e-9, (log["file"], score)
            assert int(np.sum(~np.isnan(values))) == score["scored_samples"]
            checked += 1
    return checked


def test_per_model_means_of_every_metric_equal_inspects_own_results(runs):
    pool, notes = _read(runs.evals)
    assert pool.systems == MODELS and pool.n_items == sum(N_SAMPLES.values())
    expected = [e for e in runs.expected if e["folder"] == "evals"]
    # arith: 6 scores (match, includes, length, shape's chars and words, model_graded_qa) per model, words: 2
    assert _check_against_headers(pool, expected) == 2 * (6 + 2)
    # the 2-epoch run is reduced (0.5 where one epoch was right); the 1-epoch run is not
    match = pool.score("match")
    assert 0.5 in match[:, 0] and set(np.unique(match[:, 1])) <= {0.0, 1.0}
    # model_graded_qa found no grade for "What is 7 + 7?": unscored (NaN), as inspect leaves it out of accuracy
    assert np.isnan(pool.score("model_graded_qa")[pool.item_ids.index("arith/q7")]).all()
    assert any("LLM judge's grades" in n and "model_graded_qa graded by mockllm/grader" in n for n in notes)


def test_several_epoch_reducers_each_give_a_metric_equal_to_inspects(runs):
    pool, notes = _read(runs.reducers)
    expected = [e for e in runs.expected if e["folder"] == "reducers"]
    assert {"match", "match@max", "shape/chars@max", "model_graded_qa@max"} <= set(pool.scores)
    assert _check_against_headers(pool, expected) == 12  # 6 scores x (mean, max)
    assert (pool.score("match@max") >= pool.score("match")).all()  # the max of two epochs is at least their mean
    assert any("letter grades" in n and "match@max" in n for n in notes)  # inspect's max keeps the letters C/I


def test_items_texts_and_columns(runs):
    pool, _ = _read(runs.evals)
    i = pool.item_ids.index("arith/q3")
    assert pool.inputs[i] == "What is 3 + 3?" and pool.references["ref"][i] == "6"
    assert pool.outputs["mockllm/model"][i].startswith("The answer is ")
    assert pool.column("task")[i] == "arith" and pool.column("sample_id")[i] == "q3"
    assert pool.column("parity")[i] == "odd" and pool.column("passage")[i] == 0  # the sample's metadata
    j = pool.item_ids.index("words/5")  # an integer id
    assert pool.column("sample_id")[j] == "5" and pool.inputs[j] == "Say the number 5."
    # the words task has no includes scorer: NaN there, not a value
    assert np.isnan(pool.score("includes")[j]).all()


def test_eval_and_json_logs_of_the_same_run_read_to_the_same_pool(runs):
    pj, _ = _read(runs.json)
    pe, _ = _read(runs.evals)
    pe = pe.with_systems(["mockllm/model"])
    assert pj.item_ids == pe.item_ids and pj.systems == pe.systems
    assert set(pj.scores) == set(pe.scores)
    for m in pe.scores:
        np.testing.assert_array_equal(pj.score(m), pe.score(m))
    assert pj.inputs == pe.inputs and pj.outputs == pe.outputs and pj.references == pe.references
    assert dict(pj.metadata) == dict(pe.metadata)
    assert _check_against_headers(pj, [e for e in runs.expected if e["folder"] == "json"]) == 6 + 2


def _rewrite(src: Path, dst: Path, *, keep: str | None = None) -> None:
    """``src`` rewritten by Python's zipfile with deflate, decompressed by zipfile_zstd (inspect's dependency, which
    teaches zipfile zstd) in a subprocess, so this test process's zipfile stays as Python ships it; ``keep``: only
    the entries whose names start with it."""
    code = ("import sys, zipfile, zipfile_zstd\n"
            "src, dst, keep = sys.argv[1], sys.argv[2], sys.argv[3]\n"
            "with zipfile.ZipFile(src) as a, zipfile.ZipFile(dst, 'w', zipfile.ZIP_DEFLATED) as b:\n"
            "    for info in a.infolist():\n"
            "        if not keep or info.filename.startswith(keep):\n"
            "            b.writestr(info.filename, a.read(info))\n")
    subprocess.run([sys.executable, "-c", code, str(src), str(dst), keep or ""], check=True, timeout=120)


def test_inspect_writes_zstd_and_a_deflate_copy_reads_the_same(runs, tmp_path):
    for src in sorted(runs.evals.glob("*.eval")):
        with zipfile.ZipFile(src) as z:
            assert {i.compress_type for i in z.infolist()} == {93}  # zstd, every entry
        _rewrite(src, tmp_path / src.name)
        with zipfile.ZipFile(tmp_path / src.name) as z:
            assert {i.compress_type for i in z.infolist()} == {zipfile.ZIP_DEFLATED}
    pz, _ = _read(runs.evals)
    pd, _ = _read(tmp_path)
    assert pd.item_ids == pz.item_ids and pd.systems == pz.systems and set(pd.scores) == set(pz.scores)
    for m in pz.scores:
        np.testing.assert_array_equal(pd.score(m), pz.score(m))
    assert pd.outputs == pz.outputs and pd.inputs == pz.inputs
    assert describe_inspect(runs.evals)["compression"] == {"zstd": sum(
        len(zipfile.ZipFile(p).infolist()) for p in runs.evals.glob("*.eval"))}
    assert describe_inspect(tmp_path)["compression"]["deflate"] > 0


def test_zstd_entries_without_zstandard_name_the_extra(runs, monkeypatch):
    monkeypatch.setitem(sys.modules, "zstandard", None)  # as if it were not installed
    with pytest.raises(MissingDependencyError, match=r"zstandard.*pip install 'evalsift\[harness\]'"):
        read_inspect(runs.evals)


def _finished_model_items(runs, ids):
    pool, _ = _read(runs.evals)
    return pool.with_systems(["mockllm/model"]).subset([pool.item_ids.index(i) for i in ids])


@pytest.mark.parametrize("fmt", ["eval", "json"])
def test_a_killed_run_is_read_from_the_samples_it_wrote_with_a_note(runs, fmt):
    folder = runs.running_eval if fmt == "eval" else runs.running_json
    (log,) = folder.glob(f"*.{fmt}")
    if fmt == "eval":
        with zipfile.ZipFile(log) as z:  # a journal and samples, no header: inspect never finished it
            names = z.namelist()
        assert "header.json" not in names and "_journal/start.json" in names
    else:
        assert json.loads(log.read_text(encoding="utf-8"))["status"] == "started"
    pool, notes = _read(log)
    assert pool.item_ids == tuple(f"arith/{'q1*' if k == 1 else f'q{k}'}" for k in range(FAST))
    assert any("has not finished" in n and f"read {FAST} of its 20 samples" in n and "reduced here with mean" in n
               for n in notes)
    # the answers depend on (model, sample, epoch) only: the same samples of the finished run, reduced by inspect
    finished = _finished_model_items(runs, pool.item_ids)
    for m in pool.scores:
        np.testing.assert_allclose(pool.score(m), finished.score(m), rtol=0, atol=1e-12)
    assert pool.outputs == finished.outputs
    assert "not finished" in describe_inspect(log)["found"]


def test_a_run_with_only_its_journal_start_says_it_is_not_finished(runs, tmp_path):
    (log,) = runs.running_eval.glob("*.eval")
    start_only = tmp_path / log.name
    _rewrite(log, start_only, keep="_journal/start.json")
    with pytest.raises(DataError, match=r"has not finished and no sample has finished all its 2 epoch"):
        read_inspect(start_only)


def test_data_info_names_inspect_and_its_version(runs, capsys):
    version = importlib.metadata.version("inspect_ai")
    assert main(["data", "info", str(runs.evals)]) == 0
    out = capsys.readouterr().out
    assert f"written by: inspect_ai {version}; 4 runs (mockllm/model, mockllm/other) of 2 tasks (arith, words)" in out
    assert "LLM judges model_graded_qa (grader mockllm/grader)" in out
    assert main(["data", "info", str(runs.evals), "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert info["written_by"]["version"] == version and info["written_by"]["judges"] == {
        "model_graded_qa": "mockllm/grader"}
    assert detect_format(runs.evals) == "inspect"
    with pytest.warns(DataWarning, match="LLM judge's grades"):
        assert load(str(runs.json)).systems == ("mockllm/model",)
    (one, *_) = sorted(runs.json.glob("*.json"))  # a single log file, here a .json one
    assert main(["data", "info", str(one)]) == 0
    assert f"written by: inspect_ai {version}; 1 run (mockllm/model) of 1 task (arith)" in capsys.readouterr().out


def test_the_same_run_twice_in_a_folder_is_an_error_naming_both_files(runs, tmp_path):
    (src, *_) = sorted(runs.evals.glob("*arith*.eval"))
    for name in ("a.eval", "b.eval"):
        (tmp_path / name).write_bytes(src.read_bytes())
    with pytest.raises(DataError, match=r"has item 'arith/q0' twice: .*a\.eval: sample 'q0' and .*b\.eval: sample"):
        read_inspect(tmp_path)


def test_a_model_graded_metric_is_a_proxy_in_compare(runs, capsys):
    code = main(["compare", "--data", str(runs.evals), "--a", MODELS[0], "--b", MODELS[1], "--oracle", "metric:match",
                 "--proxy", "metric:model_graded_qa", "--json"])
    out = capsys.readouterr()
    assert code == 0
    decision = json.loads(out.out)
    assert decision["proxy"] == "metric:model_graded_qa" and decision["labels_used"] >= 1
    assert "LLM judge's grades" in out.err


def test_looks_inspect_is_cheap_and_exact(runs, tmp_path):
    (eval_log, *_) = sorted(runs.evals.glob("*.eval"))
    (json_log, *_) = sorted(runs.json.glob("*.json"))
    assert looks_inspect(eval_log) and looks_inspect(json_log) and looks_inspect(runs.evals)
    assert looks_inspect(runs.root / "running")  # logs two levels down
    other = tmp_path / "results.json"
    other.write_text(json.dumps({"results": {"arc": {"acc": 0.5}}, "version": 2}), encoding="utf-8")
    fake = tmp_path / "x.eval"
    fake.write_text("not a zip", encoding="utf-8")
    assert not looks_inspect(other) and not looks_inspect(fake) and not looks_inspect(tmp_path / "missing.eval")
    assert not looks_inspect(runs.task_file)


def test_export_makes_inspect_run_exactly_those_samples(runs, tmp_path):
    pool, _ = _read(runs.evals)
    chosen = ["arith/q3", "arith/q1*", "words/5", "arith/q17"]
    paths = export_inspect(pool, chosen, tmp_path / "picks.jsonl")
    assert [p.name for p in paths] == ["picks.inspect.arith.txt", "picks.inspect.words.txt"]
    step = inspect_next_step(pool, chosen, paths)
    assert "inspect eval arith --model NEW_MODEL --sample-id" in step and str(paths[1]) in step
    arith, words = (p.read_text(encoding="utf-8").strip() for p in paths)
    assert arith == "q3,q1[*],q17" and words == "5"  # q1* unbracketed would also match q1 and q10 .. q19
    # one inspect run of both tasks; the two tasks' ids do not overlap, so each task runs its own ids
    done = runs.run_cli(["eval", "task.py", "--model", "mockllm/model", "--sample-id", f"{arith},{words}",
                         "--log-dir", str(tmp_path / "logs"), "--display", "none"])
    assert done.returncode == 0, done.stderr[-2000:]
    ran, _ = _read(tmp_path / "logs")
    assert sorted(ran.item_ids) == sorted(chosen)


def test_export_names_an_item_without_task_or_sample_id_and_an_id_inspect_cannot_take(tmp_path):
    plain = Pool(item_ids=["a", "b"], systems=["m"], scores={"acc": [[1.0], [0.0]]})
    with pytest.raises(DataError, match=r"item 'b' has no task and sample_id"):
        export_inspect(plain, ["b"], tmp_path / "x.txt")
    comma = Pool(item_ids=["t/a,b"], systems=["m"], scores={"acc": [[1.0]]},
                 metadata={"task": ["t"], "sample_id": ["a,b"]})
    with pytest.raises(DataError, match=r"sample id 'a,b'.*splits the list on commas"):
        export_inspect(comma, ["t/a,b"], tmp_path / "x.txt")
    assert not list(tmp_path.iterdir())  # nothing written


def test_a_damaged_log_is_a_data_error_naming_it(runs, tmp_path):
    (src, *_) = sorted(runs.evals.glob("*.eval"))
    cut = tmp_path / src.name
    cut.write_bytes(src.read_bytes()[: src.stat().st_size // 2])
    with pytest.raises(DataError, match=r"not a readable zip archive"):
        read_inspect(cut)
    (jsrc, *_) = sorted(runs.json.glob("*.json"))
    jcut = tmp_path / jsrc.name
    jcut.write_bytes(jsrc.read_bytes()[:5000])
    with pytest.raises(DataError, match=r"not valid JSON"):
        read_inspect(jcut)


def test_describe_reads_the_headers(runs):
    d = describe_inspect(runs.evals)
    assert d["tool"] == "inspect_ai" and d["tasks"] == ["arith", "words"]
    assert [r["epochs"] for r in d["runs"]] == [2, 2, 1, 1] and all(r["status"] == "success" for r in d["runs"])
    assert d["scorers"] == ["match", "includes", "length", "shape", "model_graded_qa"]


def test_select_anchors_export_inspect_writes_the_picked_samples_and_the_command(runs, tmp_path, capsys):
    """The command line's --export inspect: the files hold exactly the picked items' sample ids, per task."""
    out = tmp_path / "anchors.jsonl"
    assert main(["select", "anchors", "--data", str(runs.evals), "--metric", "match", "--budget", "6",
                 "--out", str(out), "--export", "inspect"]) == 0
    printed = capsys.readouterr()
    picked = [json.loads(line)["item_id"] for line in out.read_text(encoding="utf-8").splitlines()]
    assert len(picked) == 6
    files = sorted(tmp_path.glob("anchors.inspect.*.txt"))
    def plain(sid):  # export_inspect brackets fnmatch's special characters
        return sid.replace("[*]", "*").replace("[?]", "?").replace("[[]", "[")

    written = {f.name.split(".")[2]: [plain(s) for s in f.read_text(encoding="utf-8").strip().split(",")] for f in files}
    assert sorted(f"{task}/{sid}" for task, ids in written.items() for sid in ids) == sorted(picked)
    assert "inspect eval" in printed.out + printed.err and "--sample-id" in printed.out + printed.err
