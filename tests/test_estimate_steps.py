"""The adaptive test's resumable steps for an external harness (issue 44): ``evalsift estimate start | next |
tell | show --state DIR``.

The fast tests run the loop on a synthetic 2PL table and on ``demo`` with JSONL results files: the items each
``next`` asks, the estimate ``show`` prints, and the state after every step are what one uninterrupted
:class:`~evalsift.estimate.adaptive.AdaptiveTest` gives (the steps run partly in other processes); every error
is one line naming the item or field, and leaves the state byte for byte as it was. The slow test is the loop
with a real external harness: lm-eval (tests/_harness_runs.py) runs the new model on each round's
``next.lm-eval.json`` and ``tell`` reads lm-eval's own output folder.
"""

from __future__ import annotations

import csv
import json
import os
import shlex
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from evalsift.cli import main
from evalsift.estimate import response_matrix
from evalsift.estimate.adaptive import ASSUMPTIONS, AdaptiveTest

SRC = str(Path(__file__).resolve().parents[1] / "src")


def _table(path: Path, S: int = 16, M: int = 120, seed: int = 0) -> np.ndarray:
    """A long table of S systems ("new", "s1", ...) x M items of 0/1 ``acc`` from a 2PL; the scores (S x M)."""
    rng = np.random.default_rng(seed)
    theta, b, a = rng.normal(size=S), rng.normal(size=M), rng.uniform(0.5, 2.0, size=M)
    Y = (rng.random((S, M)) < 1 / (1 + np.exp(-a * (theta[:, None] - b)))).astype(int)
    with open(path, "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(["item_id", "system", "output", "acc"])
        for s in range(S):
            for j in range(M):
                w.writerow([f"q{j}", "new" if s == 0 else f"s{s}", "-", Y[s, j]])
    return Y


def _run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def _other_process(*argv: str) -> tuple[int, str, str]:
    """``python -m evalsift ARGV`` in a new process (the state must carry everything)."""
    env = {**os.environ, "PYTHONPATH": SRC + os.pathsep + os.environ.get("PYTHONPATH", "")}
    p = subprocess.run([sys.executable, "-m", "evalsift", *argv], capture_output=True, text=True, env=env, timeout=120)
    return p.returncode, p.stdout, p.stderr


def _write_scores(path: Path, scores: dict[str, float]) -> Path:
    path.write_text("".join(json.dumps({"item_id": i, "score": float(y)}) + "\n" for i, y in scores.items()))
    return path


@pytest.fixture(scope="module")
def synthetic(tmp_path_factory):
    folder = tmp_path_factory.mktemp("steps")
    Y = _table(folder / "syn.csv")
    return folder / "syn.csv", Y


def test_loop_with_jsonl_results_is_one_uninterrupted_test(synthetic, tmp_path, capsys):
    """start -> (next -> tell)* -> show, rounds 2 and 3 in other processes: each round asks exactly what one
    AdaptiveTest asked in one go gives, the told items are exactly the asked ones, and show's estimate and
    interval are that test's to 1e-12; at the budget, next asks nothing."""
    data, Y = synthetic
    state = tmp_path / "st"
    code, out, err = _run(capsys, "estimate", "start", "--data", str(data), "--metric", "acc", "--system", "new",
                          "--rule", "active-cs", "--budget", "18", "--batch", "6", "--range", "0,1", "--seed", "3",
                          "--state", str(state))
    assert code == 0, err
    assert "started the active-cs test of new: acc over 120 items, 15 known systems; budget 18 items, 6 per round" in out
    assert "range" not in err.replace("--state", "")  # --range stated it: no note that the data states none
    new = {f"q{j}": Y[0, j] for j in range(Y.shape[1])}
    # the reference: the same test, uninterrupted, in this process
    R = response_matrix(str(data), metric="acc")
    ref = AdaptiveTest(R.without("new")[0], "active-cs", budget=18, seed=3, bounds=(0.0, 1.0))
    asked_all = []
    for rnd in range(3):
        if rnd == 0:
            code, out, err = _run(capsys, "estimate", "next", "--state", str(state))
        else:
            code, out, err = _other_process("estimate", "next", "--state", str(state))
        assert code == 0, err
        items = out.split()
        want = ref.ask(6)
        assert items == want and len(items) == 6
        assert f"round {rnd + 1}: 6 item(s) to judge (steps {6 * rnd + 1}-{6 * rnd + 6} of at most 18)" in err
        assert "next.lm-eval.json" not in err and not (state / "next.lm-eval.json").exists()  # not lm-eval's data
        # asking again before telling gives the same items, and changes nothing
        before = (state / "state.json").read_bytes()
        assert _run(capsys, "estimate", "next", "--state", str(state))[1].split() == items
        assert (state / "state.json").read_bytes() == before
        res = _write_scores(tmp_path / f"r{rnd}.jsonl", {i: new[i] for i in items})
        runner = _run if rnd != 1 else (lambda _c, *a: _other_process(*a))
        code, out, err = runner(capsys, "estimate", "tell", "--state", str(state), "--results", str(res))
        assert code == 0, err
        assert f"told 6 score(s); {6 * rnd + 6} of at most 18 items judged" in err
        for i in want:
            ref.tell(i, new[i])
        asked_all += items
    doc = json.loads((state / "state.json").read_text())
    assert [r["asked"] for r in doc["rounds"]] == [asked_all[k:k + 6] for k in (0, 6, 12)]
    assert all(r["told"] == r["asked"] for r in doc["rounds"])
    assert [s["item"] for s in doc["test"]["steps"]] == asked_all and len(set(asked_all)) == 18
    assert doc["test"] == ref.state()  # the whole test, step for step
    code, out, err = _run(capsys, "estimate", "show", "--state", str(state), "--json")
    got, e = json.loads(out), ref.estimate()
    assert got["told"] == 18 and got["done"] and got["stopped"] == "budget of 18 items"
    assert abs(got["estimate"]["estimate"] - e.value) < 1e-12
    assert np.allclose(got["estimate"]["interval"], [e.low, e.high], atol=1e-12, rtol=0)
    truth = float(Y[0].mean())
    assert got["full_score_in_data"] == pytest.approx(truth)
    code, out, err = _run(capsys, "estimate", "show", "--state", str(state))
    assert code == 0
    assert f"new: acc over 120 items, 18 of at most 18 judged (active-cs, 15 known systems); scores in points" in out
    assert f"90% interval [{100 * e.low:.2f}, {100 * e.high:.2f}]" in out and "design-based, from 18 judged" in out
    assert ASSUMPTIONS["active-cs"] in out and f"{100 * truth:.2f} (not used by the estimate)" in out
    code, out, err = _run(capsys, "estimate", "next", "--state", str(state))
    assert code == 0 and out == "" and "the test is done (budget of 18 items)" in err


def test_fisher_on_demo_prints_no_interval_and_its_assumption(tmp_path, capsys):
    """fisher needs no stated range (demo's human scores have none): the items are Fluid Benchmarking's most
    informative ones, show prints the estimate with no interval and the model-based assumption; the same test in
    one go gives the same items and value."""
    state = tmp_path / "f"
    assert _run(capsys, "estimate", "start", "--data", "demo", "--metric", "human", "--system", "C", "--rule",
                "fisher", "--budget", "8", "--batch", "4", "--state", str(state))[0] == 0
    R = response_matrix("demo", metric="human")
    known, row = R.without("C")
    ref = AdaptiveTest(known, "fisher", budget=8)
    pos = {i: k for k, i in enumerate(R.item_ids)}
    for rnd in range(2):
        code, out, err = _run(capsys, "estimate", "next", "--state", str(state))
        items = out.split()
        assert code == 0 and items == ref.ask(4)
        scores = {i: row[pos[i]] for i in items}
        assert _run(capsys, "estimate", "tell", "--state", str(state), "--results",
                    str(_write_scores(tmp_path / f"s{rnd}.jsonl", scores)))[0] == 0
        for i, y in scores.items():
            ref.tell(i, y)
    code, out, err = _run(capsys, "estimate", "show", "--state", str(state))
    e = ref.estimate()
    assert code == 0 and e.low is None
    assert f"fisher         {e.value:.2f}  no interval  (model-based, from 8 judged; ability " in out
    assert ASSUMPTIONS["fisher"] in out and "stopped: budget of 8 items" in out


def test_errors_name_the_item_and_leave_the_state_as_it_was(synthetic, tmp_path, capsys):
    data, Y = synthetic
    state = tmp_path / "st"
    base = ["estimate", "start", "--data", str(data), "--metric", "acc", "--system", "new", "--budget", "10"]
    # active-cs without a stated range; a failed start leaves no folder
    code, _, err = _run(capsys, *base, "--state", str(state))
    assert code == 2 and "--rule active-cs needs acc's range at both ends" in err and "--range LO,HI" in err
    assert err.count("error:") == 1 and not state.exists()
    assert _run(capsys, *base, "--range", "0,1", "--batch", "3", "--state", str(state))[0] == 0
    code, _, err = _run(capsys, *base, "--range", "0,1", "--state", str(state))
    assert code == 2 and "holds a test already" in err and "estimate next --state" in err
    items = _run(capsys, "estimate", "next", "--state", str(state))[1].split()
    saved = (state / "state.json").read_bytes()
    not_asked = next(f"q{j}" for j in range(120) if f"q{j}" not in items)
    cases = [
        ({items[0]: 1, not_asked: 0}, f"item {not_asked!r} was not asked (the 3 asked now are {items[0]!r}"),
        ({items[0]: 1, items[1]: 2}, f"item {items[1]!r} scored 2, outside acc's range [0, 1]"),
        ({"nope": 1}, "item 'nope' is not in the test's pool (120 items"),
        ({}, "is empty"),
    ]
    for k, (scores, message) in enumerate(cases):
        code, _, err = _run(capsys, "estimate", "tell", "--state", str(state), "--results",
                            str(_write_scores(tmp_path / f"bad{k}.jsonl", scores)))
        assert code == 2 and message in err and err.count("\n") == 1, (message, err)
        assert (state / "state.json").read_bytes() == saved  # the first item's score was not kept either
    bad = tmp_path / "nan.jsonl"
    bad.write_text(json.dumps({"item_id": items[0], "score": None}) + "\n")
    code, _, err = _run(capsys, "estimate", "tell", "--state", str(state), "--results", str(bad))
    assert code == 2 and f"line 1: item {items[0]!r} has no numeric score (None)" in err
    # a partial tell: the rest are asked again
    ok = _write_scores(tmp_path / "part.jsonl", {items[1]: Y[0, int(items[1][1:])]})
    code, _, err = _run(capsys, "estimate", "tell", "--state", str(state), "--results", str(ok))
    assert code == 0 and "2 asked item(s) still have no score" in err
    assert _run(capsys, "estimate", "next", "--state", str(state))[1].split() == [items[0], items[2]]
    code, _, err = _run(capsys, "estimate", "tell", "--state", str(state), "--results", str(ok))  # again: no-op
    assert code == 2 and "its 1 score(s) were told already" in err
    # a missing state, and a file that is not one
    code, _, err = _run(capsys, "estimate", "show", "--state", str(tmp_path / "none"))
    assert code == 2 and "no adaptive test there" in err and "evalsift estimate start --data KNOWN" in err
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "state.json").write_text("{}")
    code, _, err = _run(capsys, "estimate", "next", "--state", str(tmp_path / "other"))
    assert code == 2 and "is not the state of `evalsift estimate start`" in err


def test_the_one_shot_form_and_the_options_before_the_command(tmp_path, capsys):
    """`estimate --data ... --items ... --out ...` is parsed as before (a step word only routes when it comes
    first); a step's option given before the command is moved by the usual one-line error."""
    anchors = tmp_path / "a.jsonl"
    assert _run(capsys, "select", "anchors", "--data", "demo", "--metric", "human", "--budget", "10", "--out",
                str(anchors))[0] == 0
    code, out, err = _run(capsys, "estimate", "--data", "demo", "--metric", "human", "--system", "C", "--items",
                          str(anchors), "--out", str(tmp_path / "e"))
    assert code == 0 and (tmp_path / "e" / "estimate.json").is_file() and "C: human over 300 items" in out
    code, _, err = _run(capsys, "estimate", "--data", "demo", "--system", "C", "--out", str(tmp_path / "x"))
    assert code == 2 and "the following arguments are required: --items" in err
    code, _, err = _run(capsys, "estimate", "next")
    assert code == 2 and "the following arguments are required: --state (see 'evalsift estimate next --help')" in err
    code, _, err = _run(capsys, "--state", "D", "estimate", "show")
    assert code == 2 and "put --state after the command: evalsift estimate show --state D" in err
    code, _, err = _run(capsys, "estimate", "show", "--state", str(tmp_path / "none"), "--items", "x")
    assert code == 2 and "unrecognized arguments: --items x" in err


# --------------------------------------------------------------------------------- a real external harness
@pytest.mark.slow
def test_lm_eval_runs_each_round_and_tell_reads_its_output(tmp_path, capsys):
    """The known systems: lm-eval's runs of 10 tiny models (tests/_harness_runs.py, built once per test session).
    Two rounds of next -> tell: round 1 runs the lm_eval command next printed (with next.lm-eval.json), through
    lm-eval's command line, and tells lm-eval's output folder; round 2, in other processes, tells the new model's
    scores on its items as JSONL, taken from lm-eval's own full run. The items lm-eval ran and the
    items told are exactly those asked, the state resumes across processes, and show's interval covers the new
    model's full-run acc (lm-eval's own number)."""
    pytest.importorskip("lm_eval", reason="lm-evaluation-harness is not installed (pip install 'evalsift[dev]')")
    pytest.importorskip("accelerate", reason="lm-eval's hf model needs accelerate (pip install 'lm-eval[hf]')")
    pytest.importorskip("transformers", reason="the tiny models need transformers")
    import _harness_runs as hr
    from evalsift.io import load

    shared = os.environ.get("EVALSIFT_TEST_RUN_DIR")
    runs = hr.lm_eval_runs(Path(shared) / "lm-eval-runs" if shared else tmp_path / "runs")
    t0 = time.perf_counter()
    state = tmp_path / "st"
    code, out, err = _run(capsys, "estimate", "start", "--data", str(runs.known), "--metric", "acc", "--system",
                          runs.new_model, "--rule", "active-cs", "--budget", "12", "--batch", "6", "--seed", "2",
                          "--state", str(state))
    assert code == 0, err
    assert f"acc over 100 items, 10 known systems; budget 12 items, 6 per round" in out
    told_all = []
    for rnd in range(1, 3):
        step = _run if rnd == 1 else (lambda _c, *a: _other_process(*a))  # round 2 in other processes
        code, out, err = step(capsys, "estimate", "next", "--state", str(state))
        assert code == 0, err
        items = out.split()
        samples = json.loads((state / "next.lm-eval.json").read_text())
        assert samples == {"tiny_mc": sorted(int(i.split("/")[1]) for i in items)} and len(items) == 6
        run_dir = state / "runs" / f"round-{rnd}"
        if rnd == 1:  # the printed command, as printed (plus the task folder and the device)
            line = next(x for x in err.splitlines() if x.strip().startswith("lm_eval "))
            assert f"--samples {state / 'next.lm-eval.json'}" in line and f"--output_path {run_dir}" in line
            argv = [a.replace("NEW_MODEL", runs.new_model) for a in shlex.split(line)[1:]]
            runs.cli([*argv, "--include_path", str(runs.tasks_dir), "--device", "cpu", "--batch_size", "16"])
        assert f"then: evalsift estimate tell --state {state} --results {run_dir}" in err
        if rnd == 1:
            ran = load(str(run_dir))
            assert sorted(ran.item_ids) == sorted(items) and ran.systems == (runs.new_model,)  # lm-eval ran those only
            results = run_dir
        else:  # round 2 told as JSONL scores, from lm-eval's own full run of the new model (one lm-eval run fewer)
            full = load(str(runs.new_full))
            results = state / "round-2.jsonl"
            results.write_text("".join(json.dumps({"item_id": i, "score": float(full.score("acc")[
                full.item_ids.index(i), 0])}) + "\n" for i in items))
        code, out, err = step(capsys, "estimate", "tell", "--state", str(state), "--results", str(results))
        assert code == 0, err
        assert f"told 6 score(s); {6 * rnd} of at most 12 items judged" in err
        told_all += items
    doc = json.loads((state / "state.json").read_text())
    assert all(r["told"] == r["asked"] for r in doc["rounds"]) and len(doc["rounds"]) == 2
    assert [s["item"] for s in doc["test"]["steps"]] == told_all and len(set(told_all)) == 12
    # the scores told are lm-eval's: each round's acc, as its own samples files hold it
    full = load(str(runs.new_full))
    acc = {i: full.score("acc")[full.item_ids.index(i), 0] for i in told_all}
    assert all(s["score"] == acc[s["item"]] for s in doc["test"]["steps"])
    # a round's folder told again changes nothing; a round's folder of items not asked is refused
    before = (state / "state.json").read_bytes()
    code, _, err = _run(capsys, "estimate", "tell", "--state", str(state), "--results", str(runs.new_full))
    assert code == 2 and "was not asked (none is waiting for a score)" in err
    assert (state / "state.json").read_bytes() == before
    code, out, err = _other_process("estimate", "show", "--state", str(state), "--json")
    got = json.loads(out)
    truth = json.loads(next(runs.new_full.glob("newm/results_*.json")).read_text())["results"]["tiny_mc"]["acc,none"]
    lo, hi = got["estimate"]["interval"]
    assert got["done"] and got["told"] == 12 and 0 <= lo <= truth <= hi <= 1, (got, truth)
    print(f"\nlm-eval loop: 2 rounds of 6; estimate {got['estimate']['estimate']:.3f}, 90% [{lo:.3f}, {hi:.3f}], "
          f"full-run acc {truth:.3f}; {time.perf_counter() - t0:.1f} s beside the shared runs", file=sys.__stdout__)
