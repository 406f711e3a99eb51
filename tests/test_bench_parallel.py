"""``bench pairwise | subset | calibration --jobs N`` and ``--backend ray``: the same results.json as
the serial run (timings and the command line apart), on a small generated pool with the TF-IDF encoder.

The Ray tests start a real local Ray runtime (2 CPUs, no dashboard) once for the module. Without
Ray installed they are skipped -- unless ``EVALSIFT_REQUIRE_RAY=1`` (CI sets it; CI installs
``.[all,dev]``, which has the ``ray`` extra), which turns the skip into a failure.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import warnings
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from evalsift.bench.parallel import TaskJournal, resolve_jobs, run_tasks
from evalsift.cli import main
from evalsift.errors import DataError, DataWarning, WorkerError
from evalsift.io._common import plain_json

REQUIRE_RAY = os.environ.get("EVALSIFT_REQUIRE_RAY", "") not in ("", "0")

PAIRWISE = ["bench", "pairwise", "--oracle-metric", "human", "--methods", "diffuse,random", "--budgets", "5,10,20",
            "--seeds", "2", "--subsample", "0.5", "--encoder", "tfidf", "--iterative", "--max-labels", "30", "--analyses",
            "--analysis-clusters", "5", "--norm-bins", "3"]
SUBSET = ["bench", "subset", "--human-metric", "human", "--metric", "auto", "--methods", "random,metric_var,diversity",
          "--encoder", "tfidf", "--seeds", "3", "--interval-resamples", "50"]
CALIBRATION = ["bench", "calibration", "--oracle-metric", "human", "--runs", "3", "--gaps", "0,0.1", "--ties", "0",
               "--synthetic-items", "120", "--methods", "random,diffuse", "--rules", "anytime,paper", "--risks", "0.2",
               "--seeds", "2", "--subsample", "0.5", "--max-labels", "30", "--encoder", "tfidf"]


@pytest.fixture(scope="module")
def data(tmp_path_factory) -> str:
    """A small pool (60 items, systems A, B, C; short texts, so TF-IDF is quick): subset2evaluate's JSONL
    with a metric 'human' and a noisy 'auto'."""
    rng = np.random.default_rng(0)
    words = [f"w{k}" for k in range(40)]
    path = tmp_path_factory.mktemp("data") / "small.jsonl"
    with path.open("w") as f:
        for i in range(60):
            tgt, scores = {}, {}
            for j, s in enumerate("ABC"):
                tgt[s] = " ".join(rng.choice(words, size=int(rng.integers(4, 10))))
                h = float(rng.normal(0.3 * j))
                scores[s] = {"human": h, "auto": h + float(rng.normal())}
            f.write(json.dumps({"i": i, "src": " ".join(rng.choice(words, size=8)), "tgt": tgt, "scores": scores}) + "\n")
    return str(path)


def bench(capsys, tmp_path, name, argv, data, *extra):
    """Run a bench command on ``data``; its results.json without the parts that differ between runs
    (timings, the command line), as JSON text, and its timings."""
    out = tmp_path / name
    code = main(["--quiet", *argv, "--data", data, *extra, "--out", str(out)])
    err = capsys.readouterr().err
    assert code == 0, err
    res = json.loads((out / "results.json").read_text())
    timing = res.pop("timing_s")
    res.pop("provenance")
    return json.dumps(res, sort_keys=True), timing


@pytest.fixture(scope="module")
def serial_pairwise(tmp_path_factory, data):
    out = tmp_path_factory.mktemp("serial") / "pw"
    assert main(["--quiet", *PAIRWISE, "--data", data, "--out", str(out)]) == 0
    res = json.loads((out / "results.json").read_text())
    assert res["timing_s"]["jobs"] == 1 and res["timing_s"]["backend"] == "local"
    res.pop("timing_s"), res.pop("provenance")
    return json.dumps(res, sort_keys=True)


def test_pairwise_two_processes_equal_serial(capsys, tmp_path, serial_pairwise, data):
    parallel, timing = bench(capsys, tmp_path, "jobs2", PAIRWISE, data, "--jobs", "2")
    assert timing["jobs"] == 2 and timing["backend"] == "local"
    assert parallel == serial_pairwise
    res = json.loads(parallel)  # the run did something: every (pair, seed) test set, the analyses, the loop
    assert res["n_pairs"] == 3 and res["analyses"]["norm_bins"]["test_sets"] == 6 - res["skipped_tied_runs"] > 0
    assert res["iterative"]["random"]["runs"] == 6 - res["skipped_tied_runs"]


def test_subset_two_processes_equal_serial(capsys, tmp_path, data):
    serial, _ = bench(capsys, tmp_path, "serial", SUBSET, data)
    parallel, timing = bench(capsys, tmp_path, "jobs2", SUBSET, data, "--jobs", "2")
    assert timing["jobs"] == 2 and parallel == serial
    assert set(json.loads(parallel)["curves"]) == {"random", "metric_var", "diversity"}


def test_calibration_two_processes_equal_serial(capsys, tmp_path, data):
    serial, _ = bench(capsys, tmp_path, "serial", CALIBRATION, data)
    parallel, timing = bench(capsys, tmp_path, "jobs2", CALIBRATION, data, "--jobs", "2")
    assert timing["jobs"] == 2 and parallel == serial
    res = json.loads(parallel)
    assert res["synthetic"]["cells"]["gap=0.1,ties=0"]["random"]["anytime"]["0.2"]["runs"] == 3
    assert res["real"]["cases"] + res["real"]["skipped_tied"] == 3 * 2


def _probe(shared, x):
    """A task for run_tasks: its input, the worker's pid and thread setting; warns on odd inputs."""
    if x % 2:
        warnings.warn(f"odd task {x}", DataWarning)
    return x * shared, os.getpid(), os.environ.get("OMP_NUM_THREADS")


def test_run_tasks_order_warnings_and_threads():
    with pytest.warns(DataWarning) as caught:
        out = run_tasks(_probe, range(6), shared=10, jobs=2)
    assert [r[0] for r in out] == [0, 10, 20, 30, 40, 50]  # in task order, whoever ran them
    assert os.getpid() not in {r[1] for r in out}  # ran in worker processes
    assert {r[2] for r in out} == {os.environ.get("OMP_NUM_THREADS", "1")}  # one BLAS thread unless set by the user
    assert sorted(str(w.message) for w in caught if issubclass(w.category, DataWarning)) == \
        ["odd task 1", "odd task 3", "odd task 5"]  # raised again here
    assert run_tasks(_probe, [0, 2], shared=1, jobs=1)[1][1] == os.getpid()  # jobs=1: in this process


def test_jobs_option(capsys, tmp_path, data):
    assert resolve_jobs("auto") == resolve_jobs(0) >= 1 and resolve_jobs(3) == 3
    assert main([*SUBSET, "--data", data, "--jobs", "-1", "--out", str(tmp_path)]) == 2
    assert "--jobs: expected a number of workers" in capsys.readouterr().err
    assert main([*SUBSET, "--data", data, "--ray-address", "ray://head:10001", "--out", str(tmp_path)]) == 2
    assert "--ray-address needs --backend ray" in capsys.readouterr().err


def test_backend_ray_without_ray_says_how_to_install(tmp_path):
    """With ``import ray`` failing (a shim package first on the path), --backend ray is one error line
    with the install command, exit status 2, before any data is read."""
    shim = tmp_path / "shim" / "ray"
    shim.mkdir(parents=True)
    (shim / "__init__.py").write_text("raise ImportError(\"No module named 'ray'\")\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path / "shim"), os.environ.get("PYTHONPATH", "")])}
    for cmd in ("pairwise", "calibration"):
        argv = [sys.executable, "-m", "evalsift.cli", "--quiet", "bench", cmd, "--data", "does-not-exist",
                "--oracle-metric", "human", "--backend", "ray", "--jobs", "2", "--out", str(tmp_path / cmd)]
        p = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=120)
        lines = p.stderr.strip().splitlines()
        assert p.returncode == 2 and len(lines) == 1, p.stderr
        assert lines[0] == ("error: --backend ray needs the Python module 'ray', which is not installed. Install it "
                            "with: pip install 'evalsift[ray]'")


# ------------------------------------------------------------------------- a worker killed mid-sweep
def _fragile(shared, x):
    """A task for run_tasks that writes one line per finished run to ``shared["log"]`` and, the first
    time it is given ``shared["kill"]``, kills its own process with SIGKILL (as the OOM killer would);
    a marker file next to the log says it happened, so the task runs normally the next time."""
    if x == shared["kill"]:
        try:
            os.close(os.open(shared["log"] + ".killed", os.O_CREAT | os.O_EXCL))
            os.kill(os.getpid(), signal.SIGKILL)
        except FileExistsError:
            pass
    time.sleep(shared["sleep"])
    with open(shared["log"], "a") as f:
        f.write(f"{x}\n")
    return x, x * x


def _finished_runs(log) -> Counter:
    return Counter(int(line) for line in Path(log).read_text().split())


TASKS = list(range(8))


@pytest.fixture(scope="module")
def serial_fragile(tmp_path_factory):
    return run_tasks(_fragile, TASKS, shared={"log": str(tmp_path_factory.mktemp("serial") / "log"), "kill": -1,
                                              "sleep": 0}, jobs=1)


def test_a_killed_worker_is_replaced_and_no_finished_task_runs_again(tmp_path, serial_fragile):
    shared = {"log": str(tmp_path / "log"), "kill": 5, "sleep": 0.3}
    journal = TaskJournal(tmp_path / "tasks.jsonl", {"case": "kill"})
    ticks = []
    out = run_tasks(_fragile, TASKS, shared=shared, jobs=2, journal=journal, advance=ticks.append)
    assert Path(shared["log"] + ".killed").exists()  # task 5's worker was killed (SIGKILL) ...
    assert out == serial_fragile == [(x, x * x) for x in TASKS]  # ... and the sweep still equals the serial run
    # every task finished exactly once: the tasks finished before the kill were not run again; task 5 and the
    # task the other worker was running (killed with the broken executor, not finished) ran on a fresh one
    assert _finished_runs(shared["log"]) == Counter(TASKS)
    assert len(ticks) == len(TASKS) and len(TaskJournal(tmp_path / "tasks.jsonl", {"case": "kill"})) == len(TASKS)


def test_a_rerun_takes_the_finished_tasks_from_the_journal(tmp_path, serial_fragile):
    shared = {"log": str(tmp_path / "log"), "kill": 5, "sleep": 0.3}
    path = tmp_path / "tasks.jsonl"
    with pytest.raises(WorkerError, match="died"):  # no retry: the sweep fails as it did before
        run_tasks(_fragile, TASKS, shared=shared, jobs=2, journal=TaskJournal(path, {"case": "rerun"}), retries=0)
    first = _finished_runs(shared["log"])
    kept = TaskJournal(path, {"case": "rerun"})
    assert 0 < len(kept) < len(TASKS) and len(kept) == sum(first.values())  # what finished was written down
    assert len(TaskJournal(path, {"case": "other settings"})) == 0  # and serves only the same settings
    out = run_tasks(_fragile, TASKS, shared=shared, jobs=2, journal=kept)
    assert out == serial_fragile
    assert kept.reused == sum(first.values())
    assert _finished_runs(shared["log"]) == Counter(TASKS)  # the rerun ran only the tasks that had not finished


def test_a_torn_journal_line_is_dropped_and_a_bad_one_named(tmp_path):
    path = tmp_path / "tasks.jsonl"
    assert run_tasks(_fragile, [1, 2], shared={"log": str(tmp_path / "log"), "kill": -1, "sleep": 0},
                     journal=TaskJournal(path)) == [(1, 1), (2, 4)]
    whole = path.read_bytes()
    path.write_bytes(whole + b'{"key": "abc", "res')  # the process died while writing a line
    assert len(TaskJournal(path)) == 2 and path.read_bytes() == whole
    path.write_bytes(whole + b"not json\n")
    with pytest.raises(DataError, match="line 3 is not a finished task"):
        TaskJournal(path)


def test_bench_rerun_in_the_same_out_resumes(capsys, tmp_path, data):
    first, timing = bench(capsys, tmp_path, "out", SUBSET, data, "--jobs", "2")
    assert timing["resumed_tasks"] == 0
    again, timing = bench(capsys, tmp_path, "out", SUBSET, data)
    assert again == first and timing["resumed_tasks"] == 3  # every seed from out/tasks.jsonl, none run
    other, timing = bench(capsys, tmp_path, "out", SUBSET, data, "--alpha", "0.1")
    assert timing["resumed_tasks"] == 0 and json.loads(other)["alpha"] == 0.1  # other options: run anew


# ------------------------------------------------------------ the journal holds tagged JSON, never a pickle
def same(a, b) -> bool:
    """``a == b`` with the same types all the way down: tuples stay tuples, dict keys keep their type and
    order, numpy values their dtype and every bit (NaN and -0.0 included)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return len(a) == len(b) and all(same(ka, kb) and same(a[ka], b[kb]) for ka, kb in zip(a, b))
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    if isinstance(a, (np.ndarray, np.generic)):
        return a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()
    if isinstance(a, float):
        return repr(a) == repr(b)
    return a == b


def _resumes_exactly(tmp_path, run) -> int:
    """``run(journal)`` once with a fresh journal: what the file gives back is what the run put in, type
    for type; then again from the first half of its lines (a run cut short): the same results, timings
    apart. Returns the number of tasks."""
    path, settings = tmp_path / "tasks.jsonl", {"test": "resume"}
    first_journal = TaskJournal(path, settings)
    first = run(first_journal)
    back = TaskJournal(path, settings)
    assert list(back._done) == list(first_journal._done)
    for key, value in first_journal._done.items():
        assert same(back._done[key], value), (key, value, back._done[key])
    lines = path.read_bytes().splitlines(keepends=True)
    assert all(b"pickle" not in line and json.loads(line)["format"] == 2 for line in lines)
    path.write_bytes(b"".join(lines[:len(lines) // 2]))
    resumed_journal = TaskJournal(path, settings)
    resumed = run(resumed_journal)
    assert resumed_journal.reused == len(lines) // 2 > 0
    first.pop("timing_s"), resumed.pop("timing_s")
    assert json.dumps(plain_json(resumed), sort_keys=True) == json.dumps(plain_json(first), sort_keys=True)
    return len(lines)


def test_pairwise_journal_round_trips_and_resumes_exactly(tmp_path, data):
    from evalsift.bench import pairwise_bench
    from evalsift.io import load

    pool = load(data)
    n = _resumes_exactly(tmp_path, lambda journal: pairwise_bench(
        pool, "human", ["diffuse", "random"], [5, 10], seeds=2, subsample=0.5, encoder="tfidf", quiet=True,
        iterative={"risk": 0.2, "min_labels": 5, "max_labels": 20}, analyses={"clusters": 5, "bins": 3},
        journal=journal))
    assert n == 3 * 2  # 3 pairs x 2 seeds


def test_subset_journal_round_trips_and_resumes_exactly(tmp_path, data):
    from evalsift.bench import subset_bench
    from evalsift.io import load

    pool = load(data)
    n = _resumes_exactly(tmp_path, lambda journal: subset_bench(
        pool, "human", ["random", "metric_var", "diversity"], metric="auto", seeds=3, interval_resamples=50,
        encoder="tfidf", quiet=True, journal=journal))
    assert n == 3  # one task per seed


def test_calibration_journal_round_trips_and_resumes_exactly(tmp_path, data):
    from evalsift.bench.calibration import calibration_bench
    from evalsift.io import load

    pool = load(data)
    n = _resumes_exactly(tmp_path, lambda journal: calibration_bench(
        pool, "human", runs=2, gaps=(0.1,), ties=(0,), synthetic_items=80, methods=("random", "diffuse"),
        rules=("anytime", "paper"), risks=(0.2,), seeds=1, subsample=0.5, max_labels=20, encoder="tfidf",
        quiet=True, journal=journal))
    assert n == 2 + 3  # synthetic: 1 gap x 1 tie share x 2 runs; real: 3 pairs x 1 seed


def test_estimate_journal_round_trips_and_resumes_exactly(tmp_path):
    from evalsift.bench.estimate import run_estimate_bench
    from evalsift.estimate import ResponseMatrix

    rng = np.random.default_rng(1)
    Y = np.clip(rng.normal(np.linspace(0.2, 0.8, 6)[:, None], 0.2, size=(6, 40)), 0, 1)
    R = ResponseMatrix(tuple(f"s{k}" for k in range(6)), tuple(map(str, range(40))), Y, "score", "toy")
    n = _resumes_exactly(tmp_path, lambda journal: run_estimate_bench(
        R, budgets=(5, 10), methods=("mean", "regression"), seeds=2, quiet=True, journal=journal))
    assert n == 6 + 1  # 'all': every system held out once; 'extrapolation': the best quarter (6 // 4 = 1)


@pytest.mark.parametrize("result", [
    {"$": "pickle", "v": "gASV"},                                                # a tag the codec does not write
    {"$": "t", "v": [{"$": "a", "dtype": "|O", "shape": [1], "b64": "AAAAAAAAAAA="}, []]},  # an object array
    {"$": "t", "v": [{"$": "a", "dtype": "i4,O", "shape": [1], "b64": "AAAAAAAAAAAAAAA="}, []]},  # object field
    {"$": "t", "v": [{"$": "a", "dtype": "<f8", "shape": [3], "b64": "AAAAAAAAAAA="}, []]},  # 8 bytes for 3 floats
    {"$": "t", "v": [1, [["not a message", {"$": "w", "mro": ["os.system"]}]]]},  # an unknown warning class
    [1, []],                                                                       # a list, not the pair
    {"$": "t", "v": [1, [["a message without its class"]]]},                       # a warning that is not a pair
])
def test_a_crafted_journal_line_is_a_clean_error_or_a_known_class(tmp_path, result):
    path = tmp_path / "tasks.jsonl"
    journal = TaskJournal(path, {"k": 1})
    path.write_text(json.dumps({"format": 2, "settings": journal._settings, "key": "x", "task": 1,
                                "result": result}) + "\n")
    if result == {"$": "t", "v": [1, [["not a message", {"$": "w", "mro": ["os.system"]}]]]}:
        # a name outside the list of warning classes picks none of them: UserWarning, nothing imported
        assert TaskJournal(path, {"k": 1})._done["x"] == (1, [["not a message", UserWarning]])
        return
    with pytest.raises(DataError, match="line 1 is not a finished task .*; delete the file to run every task again"):
        TaskJournal(path, {"k": 1})


def test_codec_round_trips_every_kind_of_value():
    from evalsift.bench import codec

    value = {"plain": [None, True, 0, -7, 2**70, "", "é", 1.5, -0.0, float("nan"), float("inf"), float("-inf")],
             "tuple": (1, (2, [3])), 3: "int key", (1, "a"): "tuple key", 2.5: "float key", "$": "the tag as a key",
             "numpy": [np.float32(0.1), np.int64(-3), np.uint8(255), np.bool_(True), np.float64("nan"),
                       np.zeros((2, 0)), np.arange(6, dtype=np.int16).reshape(2, 3).T,
                       np.array([[1.0, np.nan], [-np.inf, -0.0]]), np.array(["ab", "c"]), np.array(True),
                       np.array([1 + 2j])],
             "warnings": [("m", DataWarning), ("n", RuntimeWarning), ("o", UserWarning)]}
    text = codec.dumps(value)
    assert same(codec.loads(text), value)
    assert "NaN" not in text and "Infinity" not in text  # strict JSON
    for bad in (object(), {1, 2}, np.array([object()]), Path("x"), b"bytes"):
        with pytest.raises(TypeError, match="cannot be written as tagged JSON"):
            codec.dumps(bad)

    class LocalWarning(DataWarning):  # not on the list: read back as the nearest class that is
        pass

    assert codec.loads(codec.dumps(LocalWarning)) is DataWarning


# --------------------------------------------------------------------------------------------- Ray
@pytest.fixture(scope="module")
def ray_runtime():
    """One local Ray runtime (2 CPUs) for the module's Ray tests, stopped at the end."""
    try:
        import ray
    except ImportError:
        if REQUIRE_RAY:
            pytest.fail("ray is not installed but EVALSIFT_REQUIRE_RAY=1 (pip install 'evalsift[ray]')", pytrace=False)
        pytest.skip("ray is not installed (pip install 'evalsift[ray]'); EVALSIFT_REQUIRE_RAY=1 makes this a failure")
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])  # Ray's workers cannot import this test file
    yield ray
    ray.shutdown()


def test_pairwise_on_ray_equals_serial(capsys, tmp_path, serial_pairwise, ray_runtime, data):
    on_ray, timing = bench(capsys, tmp_path, "ray", PAIRWISE, data, "--backend", "ray", "--jobs", "2")
    assert timing["backend"] == "ray" and timing["jobs"] == 2
    assert on_ray == serial_pairwise
    assert ray_runtime.is_initialized()  # a runtime the caller started is used, not stopped


def test_subset_on_ray_equals_serial(capsys, tmp_path, ray_runtime, data):
    serial, _ = bench(capsys, tmp_path, "serial", SUBSET, data, "--seeds", "2")
    on_ray, _ = bench(capsys, tmp_path, "ray", SUBSET, data, "--seeds", "2", "--backend", "ray", "--jobs", "2")
    assert on_ray == serial


def test_ray_task_error_is_the_tasks_own(ray_runtime):
    from evalsift.bench.parallel import run_tasks as run
    from evalsift.errors import ParameterError

    with pytest.raises(ParameterError, match="jobs must be"):  # raised inside a Ray task, re-raised as itself
        run(resolve_jobs_task, [1, -3], backend="ray", jobs=2)


def resolve_jobs_task(shared, x):
    return resolve_jobs(x)


# ------------------------------------------------------------------------- vectors sent to workers
class HashEncoder:
    """A cacheable test encoder (a text's vector depends on the text alone) that refuses to run in a
    worker process: there the vectors must come from the main process."""

    name, cache_key, dim, cacheable = "hash", "hash-test-encoder-v1", 8, True

    def encode(self, texts):
        if os.environ.get("HASH_ENCODER_PID") not in (None, str(os.getpid())):
            raise RuntimeError("HashEncoder ran in a worker")
        import hashlib

        return np.array([np.random.default_rng(list(hashlib.sha256(t.encode()).digest()[:8])).normal(size=8)
                         for t in texts], dtype=np.float32)


def test_shipped_encoder_serves_the_main_process_vectors():
    from evalsift.bench.parallel import ShippedEncoder, shippable_encoder
    from evalsift.embed import embed_texts

    texts = ["a cat", "a dog"]
    vectors = np.array([[1, 0], [0, 1]], dtype=np.float32)
    shipped = shippable_encoder(HashEncoder(), texts, vectors)
    assert isinstance(shipped, ShippedEncoder) and shipped.cache_key == HashEncoder.cache_key
    assert embed_texts(["a dog", "a cat"], shipped, cache=False).tolist() == [[0, 1], [1, 0]]
    assert shippable_encoder("tfidf", texts, vectors) == "tfidf"  # fitted per call: never replaced by stored vectors


def test_pairwise_workers_use_the_vectors_embedded_here(data, monkeypatch):
    from evalsift.bench import pairwise_bench
    from evalsift.io import load

    monkeypatch.setenv("HASH_ENCODER_PID", str(os.getpid()))
    pool = load(data)
    runs = [pairwise_bench(pool, "human", ["diffuse"], [5, 10], seeds=2, encoder=HashEncoder(), quiet=True, jobs=j)
            for j in (1, 2)]
    for r in runs:
        r.pop("timing_s")
    assert json.dumps(runs[0], sort_keys=True) == json.dumps(runs[1], sort_keys=True)
