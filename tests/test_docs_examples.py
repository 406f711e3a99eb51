"""Every example in README.md and docs/*.md runs as written.

Each document's examples run in order in one folder, as a reader types them in a shell (``cd``,
``mkdir`` and ``export`` carry over; files an example writes are there for the next one), through the
installed ``evalsift`` command, with the real data folder. Each must exit 0. README's tour runs as a reader
of a fresh clone types it: nothing is made for it beforehand (its MT-Bench and Chatbot Arena files come from
``evalsift data example``). Without the real data, the examples that name a dataset of it (and those that read
what such an example writes) are skipped, each listed, and the others run; under ``EVALSIFT_REQUIRE_DATA=1``
a missing data folder fails instead. A command that appears in two documents with the same inputs runs once
(:func:`runs_elsewhere`: the tour's in README, any other in its own ``docs/*.md``); the other copy's options are
parsed. A few cannot run here;
:data:`NOT_RUN` names each with the reason, and those are still checked: a command's options are
parsed by the real parser, a Python fragment is compiled. The list is checked against the documents,
so an entry that no longer matches an example fails. Files an example outside the tour assumes the reader
has (their own ``big.jsonl`` and ``vectors.npz``, FastChat's and Chatbot Arena's files, and the evaluation tools'
output that ``docs/coming-from.md`` and ``docs/data.md`` name: :func:`_harness_props`) are made first. The LLM-judge
examples talk to the stub OpenAI-compatible server on 127.0.0.1 instead of the address in the text.
While ``evalsift serve`` runs, each person whose link an example printed answers 40 items through the
app's API, so the examples after it (status, export, a replay of the verdicts) have judgments to use.
"""

from __future__ import annotations

import functools
import os
import re
import shlex
import sys
from pathlib import Path

import pytest

from _data import DATA_ROOT, REQUIRE, need
from _docs import DOCS, ROOT, Example, Shell, examples
from llm_stub import StubServer, prefer_longer

NOT_RUN = {
    # (document, the example's first words): why it is parsed (commands) or compiled (Python) only
    ("README.md", "pip install torch==2.13.0"): "the installation this test runs in",
    ("README.md", "python -m pytest"): "the test suite itself",
    ("docs/annotation.md", "pip install"): "an installation",
    ("docs/llm-judge.md", "pip install"): "an installation",
    ("docs/scale.md", "pip install"): "an installation",
    ("README.md", "evalsift bench pairwise --data wmt23/en-de --oracle-metric mqm --methods diffuse,random,max_norm"):
        "about 8 minutes (README: Reproduce the tables)",
    ("README.md", "evalsift bench calibration"): "about 33 minutes (README: Reproduce the tables)",
    ("README.md", "evalsift bench pairwise --data wmt23/en-de --oracle-metric mqm --jobs 2"):
        "the same sweep as above on two workers",
    ("docs/scale.md", "evalsift bench pairwise"): "a benchmark sweep of minutes",
    ("docs/scale.md", "evalsift embed cache --data wmt23/en-de --backend ray"):
        "6,538 texts through MiniLM on a Ray runtime (minutes); tests/test_embed_ray.py fills a cache on a local Ray "
        "runtime and compares it with the local run's vectors",
    ("docs/scale.md", "evalsift embed cache --data big.jsonl --backend ray --ray-address"):
        "an existing Ray cluster with GPUs at ray://head:10001",
    ("docs/scale.md", "evalsift embed export --data big.jsonl --backend ray"):
        "the reader's big file embedded on Ray (minutes); tests/test_embed_ray.py runs embed export --backend ray",
    ("docs/scale.md", "evalsift select diffuse --data wmt23/en-de --a GPT4-5shot --b ONLINE-B --budget 20 --encoder "
                      "minilm-onnx"):
        "1,089 texts through the ONNX encoder, 1.5-3.5 minutes; its export and vectors are checked on real texts in "
        "tests/test_embed_onnx.py, its use by the selectors and oracles in tests/test_oracle_encoder_conformance.py, "
        "and the same select diffuse with the default encoder runs in README's tour",
    ("docs/transparency.md", "evalsift profile --data chaosnli/snli --metric correct --classifier"):
        "a reader's own checkpoint folder (none is available offline)",
    ("docs/scale.md", "evalsift bench calibration --runs 200 --backend ray"): "a Ray runtime with 8 CPUs",
    ("docs/scale.md", "evalsift bench subset --data wmt23/en-de --human-metric mqm --backend ray"):
        "an existing Ray cluster at ray://head:10001",
    ("docs/cli.md", "import hashlib"): "vectors computed on a GPU elsewhere; all_outputs stands for your texts",
    ("docs/llm-judge.md", "class LLMCache(Protocol)"): "the shape of a protocol, not a program",
    ("docs/scale.md", "from evalsift.bench import pairwise_bench"): "pool, fn, tasks and a Ray head stand for yours",
    ("docs/reproductions.md", "evalsift bench pairwise"): "benchmark sweeps of 3 to 13 minutes each",
    ("docs/reproductions.md", "python benchmarks/"): "benchmark scripts of 11 seconds to 19 minutes each (they print the tables)",
    ("docs/reproductions.md", "evalsift --quiet bench subset"): "a benchmark run of about 30 seconds; bench subset --protocol "
                                                                "paper is tested in tests/test_real_data.py",
    ("docs/reproductions.md", "evalsift profile"): "profiles of 30-90 seconds each; docs/transparency.md's examples run profile",
    ("docs/reproductions.md", "OMP_NUM_THREADS=1 python benchmarks/omni/omni_toy.py"):
        "about 35 minutes: training the 6-layer toy and enumerating its 10^8 sequences",
    ("docs/reproductions.md", "for s in 0 1"): "sampling two toys, about 12 minutes",
    ("docs/reproductions.md", "evalsift --quiet omni curve"): "reads the two samples the loop above writes",
    ("docs/coming-from.md", "lm_eval "): "the reader's own models through lm-eval (a download); lm-eval-out/ and "
                                         "new-run/ are lm-eval's own output of small local models and tasks "
                                         "(tests/_harness_runs.py)",
    ("docs/coming-from.md", "inspect eval "): "the reader's own task and model through inspect; logs/ are inspect's "
                                              "own logs of a local task (tests/_inspect_runs.py)",
    ("docs/estimate.md", "evalsift estimate start --data runs/"):
        "the reader's own lm-eval runs and models; the same loop runs on lm-eval's own output of tiny local models "
        "in tests/test_estimate_steps.py",
    ("docs/estimate.md", "evalsift estimate next --state st/"): "the step after the reader's own start above",
    ("docs/estimate.md", "evalsift estimate tell --state st/"): "the reader's own lm-eval run of those items",
    ("docs/estimate.md", "evalsift estimate show --state st/"): "the reader's own test above",
    ("docs/coming-from.md", "evalsift estimate --data logs/"):
        "reads new-logs/, the new model's run that the inspect eval line before it writes (not run here); estimate "
        "--run runs on lm-eval's files in the same document",
}


def _not_run(e: Example) -> str | None:
    first = e.text.strip()
    for (doc, start), why in NOT_RUN.items():
        if doc == e.doc and first.startswith(start):
            return why
    return None


def _words(e: Example) -> str:
    return " ".join(shlex.split(e.text, comments=True)) if e.kind == "bash" else ""


def runs_elsewhere(e: Example) -> str | None:
    """Where ``e`` runs instead, when the same command (the same words, the same inputs) runs in another document:
    a command of README's tour runs in README (the tour runs whole), any other one in its own ``docs/*.md`` rather
    than in README's overview. Its options are still parsed here. ``serve`` and ``annotate`` depend on the store
    each document built, so they always run where they are."""
    words = e.argv if e.kind == "bash" else []
    if not words or words[0] != "evalsift" or (len(words) > 1 and words[1] in ("serve", "annotate")) or in_tour(e):
        return None
    for o in _all_examples():
        if o.doc == e.doc or o.kind != "bash" or _not_run(o) or _words(o) != _words(e):
            continue
        if in_tour(o) or (e.doc == "README.md" and o.doc != "README.md"):
            return str(o)
    return None


@functools.lru_cache(maxsize=1)
def _all_examples() -> tuple[Example, ...]:
    return tuple(e for d in DOCS for e in examples(d))


def test_every_entry_of_the_not_run_list_is_an_example():
    """A stale entry (the example changed or went) fails here, so the list cannot hide a new example."""
    all_examples = [e for d in DOCS for e in examples(d)]
    for doc, start in NOT_RUN:
        assert any(e.doc == doc and e.text.strip().startswith(start) for e in all_examples), (doc, start)


def test_the_examples_not_run_are_parsed_or_compiled():
    from evalsift.cli import build_parser

    parser = build_parser()
    checked = 0
    for d in DOCS:
        for e in examples(d):
            if _not_run(e) is None and runs_elsewhere(e) is None:
                continue
            if e.kind == "python":
                compile(e.text, str(e), "exec")
            else:
                for part in e.text.split("&&"):
                    words = __import__("shlex").split(part, comments=True)
                    if words[:1] == ["evalsift"]:
                        parser.parse_args(words[1:])  # an unknown option or a bad value exits 2 here
            checked += 1
    assert checked == sum(1 for d in DOCS for e in examples(d) if _not_run(e) or runs_elsewhere(e))


def test_a_command_that_runs_in_two_documents_runs_once():
    """README's copies of the omni, profile and bench subset commands run in their own documents; the tour's
    profile runs in README and not again in docs/transparency.md; the tour itself runs whole."""
    where = {str(e): runs_elsewhere(e) for d in DOCS for e in examples(d)}
    moved = {k.split(": ", 1)[0]: v.split(": ", 1)[0] for k, v in where.items() if v}
    assert not any(in_tour(e) and runs_elsewhere(e) for e in examples(ROOT / "README.md"))
    for k, v in moved.items():
        assert k.split(":")[0] != v.split(":")[0], (k, v)
        assert k.startswith("README.md") or v.startswith("README.md"), (k, v)
    assert any(k.startswith("docs/transparency.md") and v.startswith("README.md") for k, v in moved.items())
    assert any(k.startswith("README.md") and v.startswith("docs/omninput.md") for k, v in moved.items())


def _props(folder: Path) -> None:
    """The reader's own files some examples name: a 300-item JSONL table (the demo data), and vectors for its
    outputs computed "elsewhere" (random unit vectors of MiniLM's 384 dimensions, keyed by the sha256 of each
    text, as the format asks: docs/cli.md)."""
    import hashlib

    import numpy as np

    from evalsift.io import load, write_table

    pool = load("demo")
    write_table(pool, folder / "big.jsonl")
    texts = sorted({t for s in pool.systems for t in pool.outputs[s] if t is not None})
    v = np.random.default_rng(0).normal(size=(len(texts), 384)).astype(np.float32)
    v /= np.linalg.norm(v, axis=1, keepdims=True)
    np.savez(folder / "vectors.npz", text_hash=np.array([hashlib.sha256(t.encode("utf-8")).hexdigest() for t in texts]),
             vectors=v)


def _judge_props(folder: Path, text: str) -> None:
    """The LLM-judging world's files an example names, in their published layouts (tests/_judge_files.py):
    FastChat's data/mt_bench/ (question.jsonl, model_judgment/gpt-4_single.jsonl and gpt-4_pair.jsonl) and a
    Chatbot Arena battles.jsonl with conversations."""
    from _judge_files import arena_battles, fastchat_pairs, mt_bench

    here = (folder / "data" / "mt_bench").exists() or (folder / "model_judgment").exists()
    if ("gpt-4_single.jsonl" in text or "gpt-4_pair.jsonl" in text) and not here:
        mt_bench(folder, n_questions=40)
        fastchat_pairs(folder / "data" / "mt_bench", n_questions=40)
    if "battles.jsonl" in text and not (folder / "battles.jsonl").exists():
        arena_battles(folder / "battles.jsonl")


#: the documents whose examples read the evaluation tools' own files (made by :func:`_harness_props`)
HARNESS_DOCS = ("docs/coming-from.md", "docs/data.md")
#: the folder each tool's files lie in, in the documents, and what making them needs
HARNESS_FOLDERS = {"lm-eval-out": ("lm_eval", "lm-evaluation-harness"), "new-run": ("lm_eval", "lm-evaluation-harness"),
                   "logs": ("inspect_ai", "inspect_ai"), "benchmark_output": ("ijson", "ijson (HELM's reader)"),
                   "results": (None, ""), "every_eval_ever": (None, ""), "arena-hard": (None, "")}


def _harness_props(folder: Path, e: Example) -> str | None:
    """The evaluation tools' files an example of :data:`HARNESS_DOCS` names, made in ``folder`` the first time one
    is named; why not, when a tool is missing (the example is then skipped).

    - ``lm-eval-out/``: lm-evaluation-harness 0.4.13's own ``--log_samples`` output of ten tiny models on two local
      tasks (``tests/_harness_runs.py``: built once per test session in ``$EVALSIFT_TEST_RUN_DIR`` and shared with
      ``tests/test_lm_eval.py``, copied here); ``new-run/``: the new model's run from the same build (its full run:
      it covers every anchor, which is what ``estimate --run`` reads). The ``lm_eval`` commands themselves are not
      run (:data:`NOT_RUN`).
    - ``logs/``: inspect_ai's own ``.eval`` logs of two mock models on two tasks (``tests/_inspect_runs.py``, built
      and shared the same way).
    - ``benchmark_output/runs/v1/``, ``results/`` (RewardBench), ``every_eval_ever/data/``, ``arena-hard/data/``:
      written in HELM's, RewardBench's, Every Eval Ever's and Arena-Hard-Auto's layouts by
      ``tests/_harness_layouts.py``."""
    import importlib.util
    import shutil

    if e.doc not in HARNESS_DOCS:
        return None
    words = e.argv if e.kind == "bash" else re.findall(r"[\w./-]+", e.text)
    named = {p.split("/")[0] for w in words for p in re.split(r"[,:=]", w)} & set(HARNESS_FOLDERS)
    for name in sorted(named):
        if (folder / name).exists():
            continue
        module, tool = HARNESS_FOLDERS[name]
        if module and importlib.util.find_spec(module) is None:
            return f"{tool} is not installed (pip install 'evalsift[dev]')"
        if name == "logs" and importlib.util.find_spec("zstandard") is None:
            return "zstandard is not installed (pip install 'evalsift[harness]'): inspect's .eval entries are zstd"
        if name == "benchmark_output":
            _helm_props(folder / "benchmark_output" / "runs" / "v1")
        elif name == "results":
            _rewardbench_props(folder / "results")
        elif name == "every_eval_ever":
            _every_eval_props(folder / "every_eval_ever")
        elif name == "arena-hard":
            from _harness_layouts import arena_hard_world, write_arena_hard_v2

            models, uids, md, labels = arena_hard_world(n_q=100, names=["model-a", "model-b", "model-c", "model-d"])
            write_arena_hard_v2(folder / "arena-hard", models, uids, md, labels, nulls={("model-b", uids[3], 2)})
        else:
            runs_root = Path(os.environ.get("EVALSIFT_TEST_RUN_DIR") or folder.parent)
            if name == "logs":
                from _inspect_runs import inspect_runs

                shutil.copytree(inspect_runs(runs_root / "inspect-runs").evals, folder / "logs")
            else:
                from _harness_runs import lm_eval_runs

                runs = lm_eval_runs(runs_root / "lm-eval-runs")
                shutil.copytree(runs.known if name == "lm-eval-out" else runs.new_full, folder / name)
    return None


def _crc(*key) -> float:
    """A number in [0, 1) fixed by ``key``."""
    import zlib

    return (zlib.crc32(repr(key).encode()) % 10_000) / 10_000


def _helm_props(runs: Path) -> None:
    """Two models' HELM runs of two scenarios: MMLU anatomy (multiple choice, 12 test instances, 3 train trials)
    and CivilComments (10 instances, sub-splits toxic / non-toxic)."""
    from _harness_layouts import write_helm_run

    for model in ("openai/gpt2", "eleutherai/pythia-1b"):
        mmlu = [{"id": f"id{i}", "text": f"Question {i}: which bone?", "split": "test",
                 "references": [(f"bone {i}-{j}", j == i % 4) for j in range(4)]} for i in range(12)]
        write_helm_run(runs, scenario="mmlu", args={"subject": "anatomy", "method": "multiple_choice_joint"}, model=model,
                       instances=mmlu, num_train_trials=3, choices=True, method="multiple_choice_joint",
                       value=lambda i, t, m, model=model: (300 + i if m == "num_prompt_tokens" else
                                                           _crc(model, i, t, m) < 0.55),
                       metric_groups=[["exact_match", "quasi_exact_match"], ["num_prompt_tokens"]],
                       completion=lambda i, t: " " + "ABCD"[(i + t) % 4])
        civil = [{"id": f"id{100 + i}", "text": f"comment {i}", "split": "test", "references": [("True", True)],
                  "sub_split": "toxic" if i % 3 == 0 else "non-toxic"} for i in range(10)]
        write_helm_run(runs, scenario="civil_comments", args={"demographic": "all"}, model=model, instances=civil,
                       value=lambda i, t, m, model=model: _crc(model, "cc", i) < 0.6,
                       metric_groups=[["quasi_exact_match"]])


def _rewardbench_props(results: Path) -> None:
    """RewardBench's ``eval-set-scores/`` (and ``eval-set/``) of a classifier, a DPO model and a generative judge,
    on 60 prompts of six subsets (two of each section but Safety's one, and Chat Hard's one)."""
    import random

    from _harness_layouts import write_rewardbench

    subsets = {"alpacaeval-easy": 12, "mt-bench-easy": 8, "llmbar-natural": 10, "donotanswer": 9, "math-prm": 14,
               "hep-python": 7}
    for k, (model, kind) in enumerate((("openbmb/UltraRM-13b", "Seq. Classifier"), ("allenai/tulu-2-dpo-7b", "DPO"),
                                       ("openai/gpt-4", "Generative RM"))):
        rng, rows, pid = random.Random(k), [], 0
        for sub, n in subsets.items():
            for _ in range(n):
                c, r = rng.gauss(0.3, 1.0), rng.gauss(0.0, 1.0)
                row = {"subset": sub, "id": pid, "text_chosen": f"prompt {pid} good", "text_rejected": f"prompt {pid} bad",
                       "chosen": c, "rejected": r, "result": 1 if c > r else 0}
                if kind == "Generative RM":
                    row["result"] = rng.choice([1, 1, 0, 0.5])
                rows.append(row)
                pid += 1
        write_rewardbench(results, model, rows, model_type=kind, scores=kind != "Generative RM")


def _every_eval_props(root: Path) -> None:
    """Every Eval Ever's ``data/ai2_arc/<developer>/<model>/``: two models' lm-eval-converted samples of arc_easy
    (acc, acc_norm) and arc_challenge, each beside its aggregate record."""
    import json

    from _harness_layouts import eee_result, eee_sample, write_every_eval

    for k, model in enumerate(("meta-llama/Llama-3.2-1B", "Qwen/Qwen2.5-0.5B")):
        eid, samples, per = f"lm_eval/{model}/1760000000", [], {}
        for task, n in (("arc_easy", 12), ("arc_challenge", 8)):
            for i in range(n):
                acc, acc_norm = float(_crc(model, task, i) < 0.6), float(_crc(model, task, "n", i) < 0.65)
                per.setdefault((task, "acc"), []).append(acc)
                per.setdefault((task, "acc_norm"), []).append(acc_norm)
                samples.append(eee_sample(evaluation_id=eid, model_id=model, evaluation_name=task, sample_id=str(i),
                                          score=acc, is_correct=acc == 1.0, raw=f"Question {i}", reference=["B"],
                                          output="B" if acc else "C",
                                          metadata={"lm_eval_metrics": json.dumps({"acc": acc, "acc_norm": acc_norm})}))
        results = [eee_result(task, sum(v) / len(v), description=metric) for (task, metric), v in per.items()]
        write_every_eval(root, model_id=model, collection="ai2_arc", samples=samples, results=results, seed=40 + k,
                         evaluation_id=eid)


TOUR = "## A five-minute tour"


@functools.lru_cache(maxsize=1)
def _tour_lines() -> range:
    """The lines of README's tour section: from its heading to the next ``## `` heading."""
    lines = (ROOT / "README.md").read_text(encoding="utf-8").splitlines()
    start = next(n for n, line in enumerate(lines, 1) if line.strip() == TOUR)
    end = next((n for n, line in enumerate(lines, 1) if n > start and line.startswith("## ")), len(lines) + 1)
    return range(start, end)


def in_tour(e: Example) -> bool:
    """Whether ``e`` is one of README's tour commands (they run with nothing made for them)."""
    return e.doc == "README.md" and e.line in _tour_lines()


#: the options (and sub-command words) whose value is a dataset or recorded judgments
DATA_OPTIONS = ("--data", "--judge", "--human", "--outputs", "--oracle", "--proxy")
_PY_DATA = re.compile(r"""(?:(?:load|read_judgments|read_verdicts|response_matrix)\(|data_root\(\)\s*/)\s*["']([^"']+)["']""")


def _spec_path(value: str) -> str:
    """The file or name a dataset value stands for: ``judgments:X``, ``judge:judgments:X``, ``fmt:X`` -> X."""
    for prefix in ("judge:", "judgments:", "metric:"):
        value = value.removeprefix(prefix)
    return value.split(":", 1)[1] if re.match(r"^[a-z][a-z-]*:", value) else value  # lm-eval:X, every-eval:X too


def needs_data(e: Example, cwd: Path) -> bool:
    """Whether ``e`` names a dataset of the real data folder: a ``--data``-like value (``data info SPEC`` too)
    that is not ``demo``, not a metric, and not a file or folder in ``cwd``."""
    if e.kind == "python":
        values = _PY_DATA.findall(e.text)
    else:
        values = []
        for part in e.text.split("&&"):
            words = shlex.split(part, comments=True)
            values += [w for k, w in zip(words, words[1:]) if k in DATA_OPTIONS]
            if words[:3] == ["evalsift", "data", "info"] and len(words) > 3:
                values.append(words[3])
    for v in values:
        if v.startswith(("metric:", "llm:", "proxy:")) or v in ("demo", "human"):
            continue
        path = _spec_path(v)
        if not (cwd / path).exists() and path != "demo":
            return True
    return False


def _written(e: Example) -> set[str]:
    """What ``e`` writes that a later example may read: its ``--out`` and ``--db`` values, and the ``--state`` folder
    ``estimate start`` makes (the later steps read it)."""
    if e.kind != "bash":
        return set()
    words = e.argv
    made = ("--out", "--db", "--state") if words[1:3] == ["estimate", "start"] else ("--out", "--db")
    return {w.rstrip("/") for k, w in zip(words, words[1:]) if k in made}


def _reads(e: Example, missing: set[str]) -> bool:
    """Whether ``e`` reads one of ``missing`` (what skipped examples would have written; its own ``--out`` is not
    read)."""
    words = e.argv if e.kind == "bash" else e.text.split()
    words = [w for k, w in zip(["", *words], words) if k != "--out"]
    words = [p.rstrip("/") for w in words for p in re.split(r"[,:=]", w)]
    return any(w == m or w.startswith(m + "/") for w in words for m in missing)


# The two longest documents first (about 3.5 minutes each on 2 idle cores; the rest take 10-50 s): the slow tests
# run first and the workers take them in turn, so these two start at once on different workers.
LONGEST_FIRST = ("README.md", "docs/omninput.md")


def _scheduled(docs: list[Path]) -> list[Path]:
    return sorted(docs, key=lambda d: (str(d.relative_to(ROOT)) not in LONGEST_FIRST, str(d.relative_to(ROOT))))


@pytest.mark.slow  # every command in the docs, end to end: most of the suite's time
@pytest.mark.parametrize("doc", _scheduled([d for d in DOCS if any(_not_run(e) is None for e in examples(d))]),
                         ids=lambda d: str(d.relative_to(ROOT)))
def test_every_example_runs(doc, tmp_path):
    have_data = DATA_ROOT.is_dir()
    if REQUIRE:
        need(".")  # the real data folder (fails under EVALSIFT_REQUIRE_DATA=1 when it is absent)
    env = {**os.environ, "EVALSIFT_DATA": str(DATA_ROOT), "EVALSIFT_QUIET": "1", "MPLBACKEND": "Agg",
           "OPENAI_API_KEY": "sk-docs-test", "PYTHONPATH": str(ROOT / "src")}
    exe = Path(sys.executable).parent
    env["PATH"] = f"{exe}{os.pathsep}{env.get('PATH', '')}"  # the evalsift of this environment
    with StubServer(prefer_longer()) as stub:  # a judge that reads the outputs: both orders agree
        env["OPENAI_BASE_URL"] = stub.base_url
        shell = Shell(tmp_path, env, judge_url=stub.base_url, answers_while_serving=40)
        ran, skipped, missing = [], [], set()
        for e in examples(doc):
            if _not_run(e):
                continue
            if not in_tour(e):  # the reader's own files, for the examples beyond the tour
                if ("big.jsonl" in e.text or "vectors.npz" in e.text) and not (shell.cwd / "vectors.npz").exists():
                    _props(shell.cwd)
                _judge_props(shell.cwd, e.text)
                no_tool = _harness_props(shell.cwd, e)
                if no_tool:
                    skipped.append((e, no_tool))
                    missing |= _written(e)
                    continue
            if not have_data and (needs_data(e, shell.cwd) or _reads(e, missing)):
                skipped.append((e, f"needs the real data at {DATA_ROOT}"))
                missing |= _written(e)
                continue
            elsewhere = runs_elsewhere(e)
            why = f"runs in {elsewhere}" if elsewhere else \
                "reads what a command run elsewhere writes" if _reads(e, missing) else None
            if why:  # the same command runs in another document: once is enough (its options are parsed)
                skipped.append((e, why))
                missing |= _written(e)
                continue
            missing -= _written(e)  # made again by this one
            code, out, secs = shell.run(e)
            print(f"{secs:7.1f} s  {e}")  # shown with -s or -rP: where a document's time goes
            assert code == 0, f"{e}\nexit {code} after {secs:.1f} s:\n{out[-3000:]}"
            ran.append(e)
    for e, why in skipped:
        print(f"skipped ({why}): {e}")
    if not ran:
        pytest.skip(f"every example of {doc.name} needs the real data, not found at {DATA_ROOT} (set EVALSIFT_DATA)")
