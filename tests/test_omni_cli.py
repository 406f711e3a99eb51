"""``evalsift omni sample | curve`` end to end: the built-in models trained here, resuming after Ctrl-C in a
real subprocess, judges (the toy's rule, the digits proxy, recorded judgments, an LLM judge against a
real OpenAI-compatible server on 127.0.0.1), several models compared, and bad input.

``omni annotate`` and the app are tested in test_web_omni.py.
"""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from evalsift.cli import main
from evalsift.omninput import OmniSamples

from _data import need

TOY = ["--model", "toy", "--length", "4", "--train-steps", "80"]  # 10^4 sequences, trained in about a second


def sample(tmp_path: Path, name: str, *extra: str) -> Path:
    out = tmp_path / name
    assert main(["--quiet", "omni", "sample", *extra, "--out", str(out)]) == 0
    return out


@pytest.fixture(scope="module")
def toy_dir(tmp_path_factory):
    out = tmp_path_factory.mktemp("toy") / "s"
    assert main(["--quiet", "omni", "sample", *TOY, "--steps", "400", "--bin-width", "1", "--out", str(out)]) == 0
    return out


@pytest.fixture(scope="module")
def digits_dir(tmp_path_factory):
    """Uniform draws of 8x8 images with 3 grey levels through the digits' logistic regression (quick)."""
    out = tmp_path_factory.mktemp("digits") / "s"
    assert main(["--quiet", "omni", "sample", "--model", "digits-lr", "--levels", "3", "--sampler", "uniform",
                 "--steps", "5", "--walkers", "64", "--chains", "2", "--out", str(out)]) == 0
    return out


def test_sample_writes_the_distribution_and_candidates(toy_dir, capsys):
    s = OmniSamples.load(toy_dir)
    assert s.model["name"] == "toy-L4" and s.model["output"] == "nll" and s.positive == "low"
    assert s.space.n_positions == 4 and s.space.n_values == 10 and s.bin_width == 1.0
    assert np.isclose(np.logaddexp.reduce(s.ln_rho), np.log(10**4))  # normalised to the 10^4 sequences
    assert len(s.candidates) > 0 and s.complete
    assert s.sampler["name"] == "pt" and s.sampler["params"]["steps"] == 400


def test_a_finished_run_is_not_redone_and_a_longer_one_extends_it(tmp_path, capsys):
    out = sample(tmp_path, "s", *TOY, "--steps", "200", "--bin-width", "1")
    first = OmniSamples.load(out)
    again = sample(tmp_path, "s", *TOY, "--steps", "200", "--bin-width", "1")
    assert OmniSamples.load(again).evaluations == first.evaluations  # nothing more was computed
    sample(tmp_path, "s", *TOY, "--steps", "300", "--bin-width", "1")
    assert OmniSamples.load(out).evaluations > first.evaluations
    capsys.readouterr()
    assert main(["omni", "sample", *TOY, "--steps", "300", "--bin-width", "1", "--seed", "1", "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert "error:" in err and "other settings" in err and "seed=0 (now 1)" in err


MODEL_FILE = '''
import numpy as np
from evalsift.omninput import FunctionModel, InputSpace

def build(**options):
    w = np.random.default_rng(0).normal(size=(10, 6))
    def f(x):
        return w[np.arange(10)[None, :], np.asarray(x, dtype=np.int64)].sum(axis=1)
    return FunctionModel(f, name="user", output="logit"), InputSpace(10, 6)
'''


def test_ctrl_c_saves_and_the_same_command_resumes_to_the_same_result(tmp_path):
    (tmp_path / "m.py").write_text(MODEL_FILE)
    args = ["omni", "sample", "--model", str(tmp_path / "m.py"), "--steps", "6000", "--bin-width", "0.5",
            "--checkpoint-every", "0.3"]
    env = {**os.environ, "EVALSIFT_QUIET": "1"}
    proc = subprocess.Popen([sys.executable, "-m", "evalsift.cli", *args, "--out", str(tmp_path / "a")], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.time() + 120
    while not (tmp_path / "a" / "checkpoint.npz").is_file() and time.time() < deadline:
        time.sleep(0.05)
    assert proc.poll() is None, proc.communicate()
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err
    assert "run the same command again to resume" in err
    assert not (tmp_path / "a" / "omni.json").exists()
    done = subprocess.run([sys.executable, "-m", "evalsift.cli", *args, "--out", str(tmp_path / "a")], env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    whole = subprocess.run([sys.executable, "-m", "evalsift.cli", *args, "--out", str(tmp_path / "b")], env=env,
                           capture_output=True, text=True, timeout=300)
    assert whole.returncode == 0, whole.stderr
    a, b = OmniSamples.load(tmp_path / "a"), OmniSamples.load(tmp_path / "b")
    assert np.array_equal(a.ln_rho, b.ln_rho) and np.array_equal(a.candidates.x, b.candidates.x)
    assert a.evaluations == b.evaluations


def test_curve_with_the_toy_rule_and_its_replay(toy_dir, tmp_path, capsys):
    out = tmp_path / "c"
    assert main(["--quiet", "omni", "curve", "--samples", str(toy_dir), "--judgments", "rule:toy", "--per-bin", "5",
                 "--boot", "200", "--out", str(out)]) == 0
    table = capsys.readouterr().out
    assert "toy-L4" in table and "judge: rule:toy (rule)" in table
    res = json.loads((out / "results.json").read_text())
    m = res["models"][0]
    assert res["judge"]["kind"] == "rule" and "sum of digits % 30 == 0" in res["judge"]["note"]
    assert 0 <= m["aupr"] <= 1 and m["intervals"]["aupr"][0] <= m["aupr"] <= m["intervals"]["aupr"][1]
    assert len(m["precision"]) == len(m["recall"]) == len(m["threshold"]) == len(m["bins"])
    assert m["recall"][-1] == pytest.approx(1.0)  # every bin taken in
    # the bands hold the curve
    assert all(lo - 1e-9 <= p <= hi + 1e-9 for lo, p, hi in zip(m["bands"]["precision_lo"], m["precision"],
                                                                  m["bands"]["precision_hi"]))
    for f in ("pr.png", "density.png", "report.html", "judgments.jsonl"):
        assert (out / f).is_file()
    html = (out / "report.html").read_text()
    assert "src='data:image/png;base64," in html and "http://" not in html and "https://" not in html
    lines = (out / "judgments.jsonl").read_text().splitlines()
    assert len(lines) == m["n_judgments"] and all(json.loads(x)["annotator"] == "rule:toy" for x in lines)
    # replaying the written judgments gives the same curve
    assert main(["--quiet", "omni", "curve", "--samples", str(toy_dir), "--judgments", str(out / "judgments.jsonl"),
                 "--boot", "200", "--out", str(tmp_path / "r")]) == 0
    again = json.loads((tmp_path / "r" / "results.json").read_text())["models"][0]
    assert again["aupr"] == m["aupr"] and again["precision"] == m["precision"]


def test_two_digit_classifiers_with_the_proxy(tmp_path, capsys):
    lr = sample(tmp_path, "lr", "--model", "digits-lr", "--steps", "300", "--levels", "3")
    mlp = sample(tmp_path, "mlp", "--model", "digits-mlp", "--steps", "300", "--levels", "3")
    out = tmp_path / "c"
    assert main(["--quiet", "omni", "curve", "--samples", f"{lr},{mlp}", "--judgments", "proxy:digits",
                 "--per-bin", "3", "--boot", "100", "--out", str(out)]) == 0
    cap = capsys.readouterr()
    res = json.loads((out / "results.json").read_text())
    assert [m["model"] for m in res["models"]] == ["digits-lr", "digits-mlp"]
    assert res["judge"]["kind"] == "proxy" and "PROXY" in res["judge"]["note"]
    assert "the labels come from a PROXY" in cap.err
    assert res["rescaled_axis"] and all(np.isclose(sum(m), 1) for m in res["rescaled_axis"]["mass"])
    assert res["cross_model"] is None and res["normalise"] == "entire"  # Eq. 5-6 only when asked
    for m in res["models"]:
        assert m["samples"]["model"]["info"]["test_accuracy"] == 1.0  # both perfect on held-out real digits
        assert m["decision"]["predicted_positive_share"] > 0
        assert (out / f"grid-{m['model']}.png").is_file()


def test_cross_model_normalisation_z_and_the_budget_end_to_end(tmp_path, capsys):
    # two classifiers of one input space (3 grey levels), uniform draws; Eq. 5-6 rebuilds each model to feed it the
    # other's inputs
    lr = sample(tmp_path, "lr", "--model", "digits-lr", "--levels", "3", "--sampler", "uniform", "--steps", "20",
                "--walkers", "128", "--chains", "2", "--bin-width", "2")
    mlp = sample(tmp_path, "mlp", "--model", "digits-mlp", "--levels", "3", "--sampler", "uniform", "--steps", "20",
                 "--walkers", "128", "--chains", "2", "--bin-width", "2")
    out = tmp_path / "c"
    assert main(["--quiet", "omni", "curve", "--samples", f"{lr},{mlp}", "--judgments", "proxy:digits", "--per-bin",
                 "3", "--budget", "9", "--normalise", "cross-model", "--min-distinct", "5", "--boot", "50",
                 "--out", str(out)]) == 0
    cap = capsys.readouterr()
    res = json.loads((out / "results.json").read_text())
    z = [m["in_range"]["z_range"] for m in res["models"]]
    assert z[0] == z[1]  # one Z: the part both models' ranges share
    for m in res["models"]:
        k = m["in_range"]
        assert k["n_bins"] <= 3 and m["n_judgments"] <= 9  # 9 judgments / 3 per bin: at most 3 bins, judged only there
        assert len(k["precision"]) == len(k["recall"]) == k["n_bins"]
        assert "cross-model (Eq. 5-6)" in k["normalisation"]
        assert m["aupr"] is None and "no judged input" in m["normalised_note"]  # bins outside Z are not judged
    cm = res["cross_model"]
    assert cm["z_range"] == z[0] and all(e["checked"] > 0 and 0 < e["in_shared"] <= e["checked"] for e in cm["models"])
    assert "within the output range Z" in cap.out and "normalised recall" not in cap.out.split("whole")[0]


def test_z_range_override_and_its_errors(toy_dir, tmp_path, capsys):
    out = tmp_path / "c"
    assert main(["--quiet", "omni", "curve", "--samples", str(toy_dir), "--judgments", "rule:toy", "--per-bin", "3",
                 "--z-range", "5,9", "--boot", "50", "--out", str(out)]) == 0
    m = json.loads((out / "results.json").read_text())["models"][0]
    assert m["in_range"]["z_range"] == [5.0, 9.0] and m["in_range"]["start"] == "given (--z-range)"
    assert m["in_range"]["threshold"][0] == 6.0  # an NLL: the lowest bin [5, 6) first
    assert main(["--quiet", "omni", "curve", "--samples", str(toy_dir), "--judgments", "rule:toy",
                 "--normalise", "cross-model", "--out", str(tmp_path / "x")]) == 2
    assert "give two or more --samples" in capsys.readouterr().err
    assert main(["--quiet", "omni", "curve", "--samples", str(toy_dir), "--judgments", "rule:toy",
                 "--z-range", "9,5", "--out", str(tmp_path / "y")]) == 2


def test_llm_judge_on_the_english_language_model(tmp_path, capsys):
    need("summeval/summeval.json")
    pytest.importorskip("openai")
    from llm_stub import StubServer, answer

    out = sample(tmp_path, "lm", "--model", "lm", "--length", "4", "--vocab", "60", "--train-steps", "40",
                 "--steps", "150", "--chains", "2")
    s = OmniSamples.load(out)
    assert s.space.vocab[-1] == "<unk>" and not s.space.mask[:, -1].any()  # <unk> is never sampled
    assert all("<unk>" not in s.space.render_text(x) for x in s.candidates.x)

    def judge(prompt: str) -> str:  # a content-based judge: "yes" when the text holds the word "the"
        text = prompt.split("##### INPUT #####")[1].split("##### END OF INPUT #####")[0]
        return "Fine. [[1]]" if "the" in text.split() else "No. [[0]]"

    db = tmp_path / "cache.db"
    with StubServer(answer(judge)) as stub:
        args = ["--quiet", "omni", "curve", "--samples", str(out), "--judgments", "llm:stub-judge", "--judge-url",
                stub.base_url, "--db", str(db), "--per-bin", "3", "--boot", "100"]
        assert main([*args, "--out", str(tmp_path / "c1")]) == 0
        asked = len(stub.requests)
        assert asked > 0 and all("Is this a meaningful" in r["body"]["messages"][0]["content"] for r in stub.requests)
        assert main([*args, "--out", str(tmp_path / "c2")]) == 0
        assert len(stub.requests) == asked  # every answer came from the store's cache
    res = json.loads((tmp_path / "c1" / "results.json").read_text())
    m = res["models"][0]
    assert res["judge"]["kind"] == "llm" and m["n_judgments"] == asked
    judged = [json.loads(x) for x in (tmp_path / "c1" / "judgments.jsonl").read_text().splitlines()]
    reps = s.representatives(3, seed=0)
    text = {i: s.space.render_text(x) for i, x in zip(reps.ids, reps.x)}
    # the judge said yes exactly where the text holds the word "the", and every answer is stored as a score
    assert len(judged) == asked and all(j["annotator"] == "llm:stub-judge" for j in judged)
    assert all(j["detail"]["score"] == float("the" in text[j["item_id"]].split()) for j in judged)


@pytest.mark.parametrize("argv, message", [
    (["omni", "sample", "--model", "toyy", "--out", "X"], "Unknown omni model 'toyy'. Did you mean 'toy'?"),
    (["omni", "sample", "--model", "toy", "--levels", "3", "--out", "X"], "--levels does not apply to --model toy"),
    (["omni", "sample", "--model", "toy", "--sampler", "wang_landau", "--replicas", "4", "--out", "X"],
     "--replicas does not apply to --sampler wang_landau"),
    (["omni", "sample", "--model", "toy", "--sampler", "gibbs", "--out", "X"], "Unknown sampler 'gibbs'"),
    (["omni", "sample", "--model", "digits-lr", "--proposal", "gradient", "--steps", "10", "--out", "X"],
     "proposal='gradient' needs a torch model"),
    (["omni", "sample", "--model", "nofile.py", "--out", "X"], "--model nofile.py: no such file"),
    (["omni", "curve", "--samples", "NOPE", "--judgments", "rule:toy", "--out", "X"], "--samples NOPE: no omni.json"),
    (["omni", "curve", "--samples", "S", "--judgments", "vibes", "--out", "X"], "--judgments 'vibes': expected"),
    (["omni", "curve", "--samples", "S", "--judgments", "rule:digits", "--out", "X"],
     "'digits' is a proxy, not a rule: write proxy:digits"),
    (["omni", "curve", "--samples", "S", "--judgments", "db:none.db", "--out", "X"], "no store at none.db"),
    # degenerate settings, refused before anything is trained or sampled
    (["omni", "sample", "--model", "digits-lr", "--levels", "1", "--out", "X"],
     "digits: levels must be an integer in 2..17 (grey levels of a pixel: at least black and white"),
    (["omni", "sample", "--model", "digits-mlp", "--levels", "18", "--out", "X"], "got 18"),
    (["omni", "sample", "--model", "lm", "--vocab", "2", "--out", "X"],
     "lm: vocab must be an integer >= 3 (two words and <unk>"),
    (["omni", "sample", "--model", "digits-lr", "--steps", "5", "--burn-in", "10", "--out", "X"],
     "sampler 'pt': steps=5 with burn_in=10 (10 steps not recorded) and thin=1 records no step; raise steps to at "
     "least 11"),
    (["omni", "sample", "--model", "digits-lr", "--sampler", "metropolis", "--steps", "50", "--thin", "100", "--out",
      "X"], "steps=50 with burn_in=0.2 (10 steps not recorded) and thin=100 records no step; raise steps to at least "
            "110"),
    # a judge made for another model's inputs
    (["omni", "curve", "--samples", "D", "--judgments", "rule:toy", "--out", "X"],
     "--judgments rule:toy judges the toy model's digit sequences (evalsift omni sample --model toy); these samples "
     "come from digits-lr, whose description has no modulus. Judge them with proxy:digits, llm:MODEL"),
    (["omni", "curve", "--samples", "S", "--judgments", "proxy:digits", "--out", "X"],
     "--judgments proxy:digits judges 8x8 digit images of the digit classifiers (evalsift omni sample --model "
     "digits-lr or digits-mlp); these samples come from toy-L4, whose description has no levels, designated_class. "
     "Judge them with rule:toy, llm:MODEL"),
])
def test_bad_input_is_one_clear_line(argv, message, tmp_path, toy_dir, digits_dir, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    argv = [str(toy_dir) if a == "S" else str(digits_dir) if a == "D" else a for a in argv]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error:") and message in err[0], err
    assert not (tmp_path / "X" / "judgments.jsonl").exists() and not (tmp_path / "X" / "omni.json").exists()


def test_judgments_for_other_samples_are_refused(toy_dir, tmp_path, capsys):
    (tmp_path / "j.jsonl").write_text(json.dumps({"item_id": "b3-0000000000", "label": 1}) + "\n")
    assert main(["omni", "curve", "--samples", str(toy_dir), "--judgments", str(tmp_path / "j.jsonl"), "--out",
                 str(tmp_path / "c")]) == 2
    assert "not among these samples' inputs" in capsys.readouterr().err
    (tmp_path / "k.jsonl").write_text(json.dumps({"item_id": "x", "label": 3}) + "\n")
    assert main(["omni", "curve", "--samples", str(toy_dir), "--judgments", str(tmp_path / "k.jsonl"), "--out",
                 str(tmp_path / "c")]) == 2
    assert "label must be a score in [0, 1]" in capsys.readouterr().err


def test_graded_judgments_give_r_as_the_mean_grade(toy_dir, tmp_path, capsys):
    from evalsift.omninput.judge import read_judgments_file

    s = OmniSamples.load(toy_dir)
    reps = s.representatives(2, seed=0)
    grades = [0.0, 0.25, 0.5, 0.75, 1.0]
    lines = [{"item_id": i, "label": grades[k % 5]} for k, i in enumerate(reps.ids)]
    (tmp_path / "g.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    assert [j.detail["score"] for j in read_judgments_file(tmp_path / "g.jsonl")] == [x["label"] for x in lines]
    out = tmp_path / "c"
    assert main(["--quiet", "omni", "curve", "--samples", str(toy_dir), "--judgments", str(tmp_path / "g.jsonl"),
                 "--boot", "50", "--out", str(out)]) == 0
    m = json.loads((out / "results.json").read_text())["models"][0]
    by_bin: dict[int, list[float]] = {}
    for b, x in zip(reps.bin.tolist(), lines):
        by_bin.setdefault(b, []).append(x["label"])
    for b, j, r in zip(m["bins"], m["judged"], m["r"]):
        if j:  # r(z) is the mean grade of the bin's judged inputs
            assert r == pytest.approx(np.mean(by_bin[b]))
