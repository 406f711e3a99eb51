"""Arena-Hard-Auto's own show_result.py against evalsift on the same judgment files.

Writes synthetic judgment and answer files in Arena-Hard-Auto's layout -- v2.0 (``data/arena-hard-v2.0/
model_judgment/gpt-4.1/<model>.jsonl`` with ``uid, category, judge, model, baseline, games``, answers with
``metadata``) and v0.1 (``data/arena-hard-v0.1/model_judgment/gpt-4-1106-preview/<model>.jsonl`` with
``question_id, model, judge, games``, answers with ``conv_metadata``) -- from a judge with a position bias (it
favours assistant A) and a taste for long, markdown-heavy answers; runs Arena-Hard-Auto's own ``show_result.py``
(both versions, the files exported unchanged from its git history) in its own virtual environment; then
``evalsift winrate`` and ``evalsift arena`` on the same files; prints the scores side by side and the largest
difference, and writes ``results.json``.

Arena-Hard-Auto: https://github.com/lmarena/arena-hard-auto -- v2.0 = ``show_result.py`` + ``utils/`` at the
commit given by ``--v2`` (default ``HEAD``), v0.1 = ``show_result.py``, ``utils.py``, ``utils_math.py`` at
``--v01`` (default ``9a1d386^``, the last commit before the v2.0 rewrite).

    python3 -m venv /tmp/ah-venv && /tmp/ah-venv/bin/pip install pandas numpy tqdm torch==2.13.0
    python3 -m venv /tmp/ah-venv01 && /tmp/ah-venv01/bin/pip install "numpy<2" "pandas<2.3" "scikit-learn<1.6" tqdm \
        pyyaml requests
    python benchmarks/arena/arena_hard_show_result.py --repo GIT_DIR --venv /tmp/ah-venv --out /tmp/ah-bench

v2.0's point scores are the mean of 100 bootstrap means (its plain board) or the median of 100 bootstrap fits
(style control), drawn without a seed, so one run differs from the exact value by Monte-Carlo noise;
``--runs N`` runs it N times and reports the single run and the mean of the N runs. Its style fit (LBFGS, lr 0.1,
at most 50 iterations) also stops short of the optimum: the benchmark runs that fit once on all the battles as
configured and once to convergence (``max_epochs`` 5000), replacing its bootstrap function in memory only.
"""

from __future__ import annotations

import argparse
import io
import json
import math
import os
import re
import subprocess
import sys
import tarfile
import time
from pathlib import Path

import numpy as np
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: the shared _runner
from _runner import write_json  # noqa: E402

V2_BASELINE = "o3-mini-2025-01-31"
V01_BASELINE = "gpt-4-0314"
V2_JUDGE = "gpt-4.1"
V01_JUDGE = "gpt-4-1106-preview"


# ---------------------------------------------------------------------------------------- synthetic data
def make_world(n_models: int, n_questions: int, seed: int) -> dict:
    """Models (strength, verbosity, markdown), questions, every answer's metadata and the judge's labels."""
    rng = np.random.default_rng(seed)
    names = [f"model-{chr(ord('a') + k)}" for k in range(n_models)]
    strength = np.linspace(-1.2, 1.2, n_models) + rng.normal(0, 0.1, n_models)
    verbosity = rng.uniform(0.5, 2.0, n_models)
    markdown = rng.uniform(0.0, 3.0, n_models)
    uids = [f"{rng.integers(0, 2 ** 63):016x}" for _ in range(n_questions)]
    systems = ["__baseline__"] + names
    strength = np.concatenate([[0.0], strength])
    verbosity = np.concatenate([[1.0], verbosity])
    markdown = np.concatenate([[1.0], markdown])
    meta = {}
    for s, name in enumerate(systems):
        for q, uid in enumerate(uids):
            tokens = int(max(5, rng.lognormal(math.log(300 * verbosity[s]), 0.5)))
            rate = markdown[s] * tokens / 300.0
            meta[(name, uid)] = {
                "token_len": tokens,
                "header_count": {f"h{i}": int(rng.poisson(rate * (0.6 if i == 2 else 0.15))) for i in range(1, 7)},
                "list_count": {"ordered": int(rng.poisson(rate * 1.0)), "unordered": int(rng.poisson(rate * 2.0))},
                "bold_count": {"**": int(rng.poisson(rate * 1.5)), "__": int(rng.poisson(rate * 0.05))},
            }
    hardness = rng.normal(0, 0.5, n_questions)
    labels = {}
    for s in range(1, len(systems)):
        for q, uid in enumerate(uids):
            mb, mm = meta[(systems[0], uid)], meta[(systems[s], uid)]
            style = 0.6 * math.tanh((mm["token_len"] - mb["token_len"]) / 300.0) + 0.1 * math.tanh(
                (sum(mm["bold_count"].values()) - sum(mb["bold_count"].values())) / 5.0)
            quality = strength[s] + style + hardness[q] * 0.2  # the model's advantage over the baseline
            games = []
            for g in (1, 2):
                adv_a = -quality if g == 1 else quality  # game 1: A = baseline; game 2: A = the model
                u = adv_a + 0.35 + rng.logistic(0, 0.8)  # 0.35: the judge favours assistant A
                games.append("A>>B" if u > 1.6 else "A>B" if u > 0.35 else "A=B" if u > -0.35 else
                             "B>A" if u > -1.6 else "B>>A")
            labels[(systems[s], uid)] = games
    return {"names": names, "uids": uids, "meta": meta, "labels": labels, "null_rate": 0.01, "seed": seed}


def _answer(meta: dict) -> str:
    return "answer " * min(meta["token_len"], 40)


def write_v2(world: dict, root: Path) -> Path:
    """Arena-Hard v2.0's layout under ``root/data/arena-hard-v2.0``; about 1% of games null."""
    rng = np.random.default_rng(world["seed"] + 1)
    bench = root / "data" / "arena-hard-v2.0"
    jdir, adir = bench / "model_judgment" / V2_JUDGE, bench / "model_answer"
    jdir.mkdir(parents=True, exist_ok=True)
    adir.mkdir(parents=True, exist_ok=True)
    for name in ["__baseline__"] + world["names"]:
        model = V2_BASELINE if name == "__baseline__" else name
        with open(adir / f"{model}.jsonl", "w") as f:
            for uid in world["uids"]:
                m = world["meta"][(name, uid)]
                f.write(json.dumps({"uid": uid, "ans_id": f"a{uid[:6]}", "model": model, "messages": [
                    {"role": "user", "content": f"question {uid}"},
                    {"role": "assistant", "content": {"answer": _answer(m)}}], "tstamp": 0.0, "metadata": m}) + "\n")
        if name == "__baseline__":
            continue
        with open(jdir / f"{model}.jsonl", "w") as f:
            for uid in world["uids"]:
                games = []
                for g, label in enumerate(world["labels"][(name, uid)], 1):
                    score = None if rng.random() < world["null_rate"] else label
                    games.append({"score": score, "judgment": {"answer": f"My final verdict is [[{score}]]"},
                                  "prompt": [{"role": "user", "content": f"game {g}"}]})
                f.write(json.dumps({"uid": uid, "category": "hard_prompt", "judge": V2_JUDGE, "model": model,
                                    "baseline": V2_BASELINE, "games": games}) + "\n")
    return bench


def write_v01(world: dict, root: Path) -> Path:
    """Arena-Hard v0.1's layout under ``root/data/arena-hard-v0.1`` (no null games: v0.1 drops a null game alone,
    v2.0 and evalsift the whole line)."""
    bench = root / "data" / "arena-hard-v0.1"
    jdir, adir = bench / "model_judgment" / V01_JUDGE, bench / "model_answer"
    jdir.mkdir(parents=True, exist_ok=True)
    adir.mkdir(parents=True, exist_ok=True)
    for name in ["__baseline__"] + world["names"]:
        model = V01_BASELINE if name == "__baseline__" else name
        with open(adir / f"{model}.jsonl", "w") as f:
            for uid in world["uids"]:
                m = world["meta"][(name, uid)]
                f.write(json.dumps({"question_id": uid, "answer_id": f"a{uid[:6]}", "model_id": model, "choices": [
                    {"index": 0, "turns": [{"content": _answer(m), "token_len": m["token_len"]}]}], "tstamp": 0.0,
                    "conv_metadata": m}) + "\n")
        if name == "__baseline__":
            continue
        with open(jdir / f"{model}.jsonl", "w") as f:
            for uid in world["uids"]:
                games = [{"user_prompt": f"game {g}", "judgment": f"My final verdict is [[{label}]]", "score": label}
                         for g, label in enumerate(world["labels"][(name, uid)], 1)]
                f.write(json.dumps({"question_id": uid, "model": model, "judge": V01_JUDGE, "games": games}) + "\n")
    return bench


# ---------------------------------------------------------------------------------------- Arena-Hard's code
def export(repo: str, commit: str, paths: list[str], dest: Path) -> None:
    """``paths`` at ``commit`` of Arena-Hard-Auto's git directory (or a checkout) into ``dest``, unchanged."""
    dest.mkdir(parents=True, exist_ok=True)
    cmd = ["git", f"--git-dir={repo}"] if not (Path(repo) / ".git").exists() else ["git", "-C", repo]
    blob = subprocess.run(cmd + ["archive", "--format=tar", commit, *paths], check=True, capture_output=True).stdout
    with tarfile.open(fileobj=io.BytesIO(blob)) as tar:
        tar.extractall(dest, filter="data")


def run_show_result(python: str, cwd: Path, args: list[str], seed: int | None = None) -> tuple[str, float]:
    """Runs ``show_result.py`` unchanged (``runpy``; ``seed``: numpy's global seed first, for a reproducible run);
    its stdout and the seconds it took."""
    code = ("import runpy, sys, numpy; " + (f"numpy.random.seed({seed}); " if seed is not None else "")
            + f"sys.argv = ['show_result.py'] + {args!r}; runpy.run_path('show_result.py', run_name='__main__')")
    t0 = time.perf_counter()
    env = {**os.environ, "TQDM_DISABLE": "1", "PYTHONWARNINGS": "ignore"}
    r = subprocess.run([python, "-c", code], cwd=cwd, capture_output=True, text=True, env=env)
    if r.returncode != 0:
        raise RuntimeError(f"show_result.py {' '.join(args)} failed:\n{r.stdout[-2000:]}\n{r.stderr[-4000:]}")
    return r.stdout, time.perf_counter() - t0


_ONE_FIT = """
import sys, runpy
sys.path.insert(0, ".")
import torch
import utils.math_utils as mu
fit = mu.fit_pairwise_model
def once(features, outcomes, loss_type="bt", num_round=100):  # their own fit, on every battle, no bootstrap
    coefs = fit(features, outcomes, loss_type, None, **KW)[0]
    return torch.stack([coefs] * num_round), None
mu.bootstrap_pairwise_model = once
sys.argv = ["show_result.py"] + ARGS
runpy.run_path("show_result.py", run_name="__main__")
"""


def run_one_fit(python: str, cwd: Path, args: list[str], **kw) -> str:
    """v2.0's ``show_result.py`` (unchanged) with its own ``fit_pairwise_model`` run once on all the battles
    instead of its bootstrap (``kw``: the fit's options, e.g. ``max_epochs``): the point fit its optimizer reaches,
    without the bootstrap's noise. The file is not touched; the bootstrap function is replaced in memory."""
    code = _ONE_FIT.replace("KW", repr(kw)).replace("ARGS", repr(args))
    env = {**os.environ, "TQDM_DISABLE": "1", "PYTHONWARNINGS": "ignore"}
    r = subprocess.run([python, "-c", code], cwd=cwd, capture_output=True, text=True, env=env)
    if r.returncode != 0:
        raise RuntimeError(f"show_result.py (one fit) failed:\n{r.stderr[-4000:]}")
    return r.stdout


def parse_v2(text: str) -> dict[str, float]:
    """v2.0's table: ``<index> <Model> <Scores (%)> (-lo / +hi)``."""
    out = {}
    for line in text.splitlines():
        m = re.match(r"^\s*\d+\s+(\S+)\s+(-?[\d.]+)\s+\(-", line)
        if m:
            out[m.group(1)] = float(m.group(2))
    return out


def parse_v01(text: str) -> dict[str, float]:
    """v0.1's lines: ``<model> | score: <x> | 95% CI: ...``."""
    out = {}
    for line in text.splitlines():
        m = re.match(r"^(\S+)\s*\|\s*score:\s*(-?[\d.]+)", line)
        if m:
            out[m.group(1)] = float(m.group(2))
    return out


# ---------------------------------------------------------------------------------------- evalsift
def evalsift(args: list[str]) -> tuple[dict, float]:
    t0 = time.perf_counter()
    r = subprocess.run([sys.executable, "-m", "evalsift", *args, "--json", "--quiet"], capture_output=True, text=True,
                       env={**os.environ, "EVALSIFT_QUIET": "1"})
    if r.returncode != 0:
        raise RuntimeError(f"evalsift {' '.join(args)} failed:\n{r.stderr[-4000:]}")
    return json.loads(r.stdout), time.perf_counter() - t0


def winrate_scores(d: dict) -> dict[str, float]:
    return {m["model"]: m["win_rate"] for m in d["boards"][0]["models"]}


def arena_scores(d: dict, key: str = "scores") -> dict[str, float]:
    return {m["model"]: m["score"] for m in d["arena_hard"][key]["models"] if not m.get("baseline")}


def compare(name: str, theirs: dict[str, float], ours: dict[str, float], rows: list) -> float:
    models = sorted(set(theirs) & set(ours) - {V2_BASELINE, V01_BASELINE}, key=lambda m: -theirs[m])
    diffs = [abs(theirs[m] - ours[m]) for m in models]
    worst = max(diffs) if diffs else float("nan")
    print(f"\n{name}: {len(models)} models, max |difference| {worst:.3f} points")
    print(f"  {'model':<12} {'Arena-Hard':>10} {'evalsift':>9} {'diff':>7}")
    for m in models:
        print(f"  {m:<12} {theirs[m]:>10.2f} {ours[m]:>9.2f} {ours[m] - theirs[m]:>+7.2f}")
    rows.append({"comparison": name, "max_abs_diff": worst, "models": {m: {"arena_hard": theirs[m], "evalsift": ours[m]}
                                                                        for m in models}})
    return worst


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--repo", required=True, help="Arena-Hard-Auto's git directory (or a checkout)")
    p.add_argument("--v2", default="HEAD", help="the v2.0 commit (default HEAD)")
    p.add_argument("--v01", default="9a1d386^", help="the v0.1 commit (default 9a1d386^, before the v2.0 rewrite)")
    p.add_argument("--venv", default="/tmp/ah-venv", help="the virtual environment v2.0's code runs in (pandas, numpy, "
                   "tqdm, torch)")
    p.add_argument("--venv01", default="/tmp/ah-venv01", help="v0.1's (numpy<2: it uses np.NAN; pandas, "
                   "scikit-learn, tqdm, pyyaml, requests)")
    p.add_argument("--out", default="/tmp/ah-bench")
    p.add_argument("--models", type=int, default=8)
    p.add_argument("--questions", type=int, default=500)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--runs", type=int, default=5, help="runs of v2.0's show_result.py (it draws without a seed)")
    a = p.parse_args()
    out = Path(a.out)
    python = str(Path(a.venv) / "bin" / "python")
    python01 = str(Path(a.venv01) / "bin" / "python")
    world = make_world(a.models, a.questions, a.seed)
    v2, v01 = out / "v2", out / "v01"
    export(a.repo, a.v2, ["show_result.py", "utils"], v2)
    export(a.repo, a.v01, ["show_result.py", "utils.py", "utils_math.py"], v01)
    b2, b01 = write_v2(world, v2), write_v01(world, v01)
    rows: list = []
    timing: dict = {}
    j2, j01 = str(b2 / "model_judgment" / V2_JUDGE), str(b01 / "model_judgment" / V01_JUDGE)
    print(f"{a.models} models, {a.questions} questions, judge with a position bias; files under {out}")

    # v0.1: deterministic point scores (BT by logistic regression on every battle), weight 3
    text, timing["v01_plain"] = run_show_result(python01, v01, ["--bench-name", "arena-hard-v0.1", "--judge-name",
                                                               V01_JUDGE, "--baseline", V01_BASELINE])
    theirs01 = parse_v01(text)
    wr01, timing["evalsift_winrate_v01"] = evalsift(["winrate", "--data", j01, "--baseline", V01_BASELINE,
                                                     "--strong-weight", "3", "--out", str(out / "es-v01-winrate")])
    compare("v0.1 show_result.py (weight 3) vs evalsift winrate --strong-weight 3", theirs01, winrate_scores(wr01), rows)
    ar01, timing["evalsift_arena_v01"] = evalsift(["arena", "--data", j01, "--strong-weight", "3", "--out",
                                                   str(out / "es-v01-arena")])
    compare("v0.1 show_result.py (weight 3) vs evalsift arena --strong-weight 3", theirs01, arena_scores(ar01), rows)

    # v0.1 style control (--style-control: length and markdown; L2-penalised logistic regression, C = 1)
    text, timing["v01_style"] = run_show_result(python01, v01, ["--bench-name", "arena-hard-v0.1", "--judge-name",
                                                               V01_JUDGE, "--baseline", V01_BASELINE,
                                                               "--style-control"])
    ar01s, timing["evalsift_arena_v01_style"] = evalsift(["arena", "--data", j01, "--strong-weight", "3",
                                                          "--style-control", "length,markdown", "--out",
                                                          str(out / "es-v01-arena-style")])
    compare("v0.1 show_result.py --style-control vs evalsift arena --style-control length,markdown", parse_v01(text),
            arena_scores(ar01s), rows)

    # v2.0: the plain board (mean of 100 bootstrap means) and style control (median of 100 bootstrap fits)
    plain_runs, style_runs = [], []
    for r in range(a.runs):
        text, t = run_show_result(python, v2, ["-b", "arena-hard-v2.0", "-j", V2_JUDGE, "-c", "hard_prompt"])
        plain_runs.append(parse_v2(text))
        timing.setdefault("v2_plain", t)
        text, t = run_show_result(python, v2, ["-b", "arena-hard-v2.0", "-j", V2_JUDGE, "-c", "hard_prompt", "-f",
                                               "length", "markdown"])
        style_runs.append(parse_v2(text))
        timing.setdefault("v2_style", t)
    mean = lambda runs: {m: float(np.mean([r[m] for r in runs])) for m in runs[0]}
    wr2, timing["evalsift_winrate_v2"] = evalsift(["winrate", "--data", j2, "--baseline", V2_BASELINE,
                                                   "--strong-weight", "3", "--out", str(out / "es-v2-winrate")])
    ar2, timing["evalsift_arena_v2_style"] = evalsift(["arena", "--data", j2, "--strong-weight", "3", "--style-control",
                                                       "length,markdown", "--out", str(out / "es-v2-arena")])
    compare("v2.0 show_result.py, one run vs evalsift winrate --strong-weight 3", plain_runs[0],
            winrate_scores(wr2), rows)
    compare(f"v2.0 show_result.py, mean of {a.runs} runs vs evalsift winrate --strong-weight 3", mean(plain_runs),
            winrate_scores(wr2), rows)
    compare("v2.0 show_result.py, one run vs evalsift arena --strong-weight 3 (raw)", plain_runs[0],
            arena_scores(ar2, "raw"), rows)
    compare("v2.0 show_result.py -f length markdown, one run vs evalsift arena --style-control length,markdown",
            style_runs[0], arena_scores(ar2), rows)
    compare(f"v2.0 show_result.py -f length markdown, mean of {a.runs} runs vs evalsift arena --style-control",
            mean(style_runs), arena_scores(ar2), rows)
    style_args = ["-b", "arena-hard-v2.0", "-j", V2_JUDGE, "-c", "hard_prompt", "-f", "length", "markdown"]
    compare("v2.0's own style fit once on all battles (LBFGS lr 0.1, max_epochs 50, as configured) vs evalsift",
            parse_v2(run_one_fit(python, v2, style_args)), arena_scores(ar2), rows)
    compare("v2.0's own style fit once on all battles, run to convergence (max_epochs 5000) vs evalsift",
            parse_v2(run_one_fit(python, v2, style_args, max_epochs=5000)), arena_scores(ar2), rows)
    spread = {m: float(np.std([r[m] for r in style_runs], ddof=1)) for m in style_runs[0]} if a.runs > 1 else {}
    if spread:
        print(f"\nv2.0 style-control run-to-run sd (its bootstrap median): max {max(spread.values()):.3f} points")
    plain_spread = {m: float(np.std([r[m] for r in plain_runs], ddof=1)) for m in plain_runs[0]} if a.runs > 1 else {}
    if plain_spread:
        print(f"v2.0 plain run-to-run sd (its bootstrap mean): max {max(plain_spread.values()):.3f} points")
    print("\nseconds: " + ", ".join(f"{k} {v:.1f}" for k, v in timing.items()))
    write_json(out / "results.json", {
        "models": a.models, "questions": a.questions, "seed": a.seed, "runs": a.runs, "comparisons": rows,
        "v2_run_sd": {"plain": plain_spread, "style": spread}, "seconds": timing,
        "arena_hard": {"repo": "lmarena/arena-hard-auto", "v2": a.v2, "v01": a.v01}})
    return 0


if __name__ == "__main__":
    sys.exit(main())
