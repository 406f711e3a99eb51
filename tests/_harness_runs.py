"""Real lm-evaluation-harness runs for the tests: tiny random-weight GPT-2 models on two local tasks.

Nothing is faked: lm-eval writes every file the tests read. The known models' runs go through lm-eval's Python
API the way its command line does them (``simple_evaluate`` + ``EvaluationTracker``, whose ``save_results_*``
write the files), all in one subprocess with one index of the local tasks: lm-eval's command line indexes its ~200
built-in task folders on every run (~8 s each on one core), which would make 9 runs take ~90 s. The new model's run
on the exported items goes through the command line itself (:func:`run_lm_eval_cli`: ``python -m lm_eval ...``),
exactly as evalsift prints it. Every subprocess is offline (``HF_HUB_OFFLINE=1``, ``HF_DATASETS_OFFLINE=1``), its
Hugging Face home and datasets cache under the run's folder, never the user's.

- :func:`tiny_tasks`: a task folder for ``--include_path``: ``tiny_mc`` (multiple choice, 100 docs, ``acc`` and
  ``acc_norm``, mean-aggregated) and ``tiny_gen`` (``generate_until``, 20 docs, ``exact_match``), local JSONL data
  read through ``dataset_path: json``; every word is one of ``w0`` .. ``w59``.
- :func:`tiny_models`: one model folder per name (a seed each): :func:`_hf.tiny_gpt2`'s weights with a
  whitespace word-level tokenizer over the same words (the GPT-2 BPE tokenizer of ``tiny_gpt2`` has no merges,
  so it encodes ``w12`` to nothing under transformers 5).
- :func:`run_lm_eval` / :func:`run_lm_eval_cli`: the runs; :func:`lm_eval_runs`: the set the tests share (built once per test
  session, under a file lock so two pytest-xdist workers do not both run it).
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

TASKS = ("tiny_mc", "tiny_gen")
WORDS = 60
#: the known models (name -> seed) and the new one, whose folder names become lm-eval's model names
KNOWN = {f"m{k}": k for k in range(10)}
NEW = {"newm": 100}

_MC_YAML = """task: tiny_mc
dataset_path: json
dataset_kwargs:
  data_files:
    test: {data}
test_split: test
output_type: multiple_choice
doc_to_text: "{{{{question}}}}"
doc_to_choice: "{{{{choices}}}}"
doc_to_target: "{{{{label}}}}"
metric_list:
  - metric: acc
    aggregation: mean
    higher_is_better: true
  - metric: acc_norm
    aggregation: mean
    higher_is_better: true
metadata:
  version: 1.0
"""

_GEN_YAML = """task: tiny_gen
dataset_path: json
dataset_kwargs:
  data_files:
    test: {data}
test_split: test
output_type: generate_until
doc_to_text: "{{{{question}}}}"
doc_to_target: "{{{{answer}}}}"
generation_kwargs:
  until: ["w0"]
  max_gen_toks: 1
  do_sample: false
metric_list:
  - metric: exact_match
    aggregation: mean
    higher_is_better: true
metadata:
  version: 1.0
"""


def tiny_tasks(folder: Path, *, n_mc: int = 100, n_gen: int = 20, seed: int = 0) -> Path:
    """The two local lm-eval tasks (module doc) in ``folder``, for ``--include_path folder``."""
    folder.mkdir(parents=True, exist_ok=True)
    rng = random.Random(seed)

    def words(k: int) -> str:
        return " ".join(f"w{rng.randrange(1, WORDS)}" for _ in range(k))

    with open(folder / "mc.jsonl", "w", encoding="utf-8") as f:
        for _ in range(n_mc):
            choices = [words(rng.randint(1, 2)) for _ in range(4)]
            f.write(json.dumps({"question": words(rng.randint(3, 6)), "choices": choices,
                                "label": rng.randrange(4)}) + "\n")
    with open(folder / "gen.jsonl", "w", encoding="utf-8") as f:
        for k in range(n_gen):
            q = words(4)
            f.write(json.dumps({"question": q, "answer": q.split()[-1] if k % 2 else words(1)}) + "\n")
    (folder / "tiny_mc.yaml").write_text(_MC_YAML.format(data=json.dumps(str(folder / "mc.jsonl"))), encoding="utf-8")
    (folder / "tiny_gen.yaml").write_text(_GEN_YAML.format(data=json.dumps(str(folder / "gen.jsonl"))),
                                          encoding="utf-8")
    return folder


def word_tokenizer(folder: Path, words: int = WORDS) -> Path:
    """A whitespace word-level tokenizer over ``<|endoftext|>`` (id 0) and ``w0`` .. (ids 1..), the ids of
    :func:`_hf.tiny_gpt2`'s vocabulary, saved in ``folder``."""
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    eos = "<|endoftext|>"
    tok = Tokenizer(models.WordLevel(vocab={eos: 0, **{f"w{i}": i + 1 for i in range(words)}}, unk_token=eos))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    PreTrainedTokenizerFast(tokenizer_object=tok, eos_token=eos, bos_token=eos, unk_token=eos).save_pretrained(folder)
    return folder


def tiny_models(folder: Path, seeds: Mapping[str, int]) -> Path:
    """One tiny GPT-2 per name in ``folder/<name>`` (weights seeded by ``seeds[name]``); ``folder``."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from _hf import tiny_gpt2

    for name, seed in seeds.items():
        if not (folder / name / "tokenizer.json").is_file():
            word_tokenizer(tiny_gpt2(folder / name, words=WORDS, seed=seed, tokenizer=False))
    return folder


_DRIVER = """import json, sys
from lm_eval import simple_evaluate
from lm_eval.loggers import EvaluationTracker
from lm_eval.tasks import TaskManager
runs = json.loads(sys.argv[1])
tm = TaskManager(include_path=runs[0]["include_path"], include_defaults=False)
for r in runs:
    tracker = EvaluationTracker(output_path=r["output_path"])
    res = simple_evaluate(model="hf", model_args=r["model_args"], tasks=r["tasks"], task_manager=tm, device="cpu",
                          batch_size=16, log_samples=True, samples=r.get("samples"), evaluation_tracker=tracker)
    samples = res.pop("samples")
    tracker.save_results_aggregated(results=res, samples=samples)
    for task in res["configs"]:
        tracker.save_results_samples(task_name=task, samples=samples[task])
"""


def lm_eval_env(home: Path) -> dict[str, str]:
    """The subprocess environment: offline, Hugging Face home and datasets cache under ``home``."""
    env = dict(os.environ)
    env.update(HF_HUB_OFFLINE="1", HF_DATASETS_OFFLINE="1", TRANSFORMERS_OFFLINE="1", HF_HOME=str(home),
               HF_DATASETS_CACHE=str(home / "datasets"), TOKENIZERS_PARALLELISM="false", HF_HUB_DISABLE_TELEMETRY="1")
    return env


def lm_eval_argv(model: str, tasks_dir: Path, out: Path, *, tasks: Sequence[str] = TASKS,
                 samples: Path | None = None) -> list[str]:
    """lm-eval's command line (the words after ``lm_eval``) for one model folder (relative to the models folder)."""
    argv = ["--model", "hf", "--model_args", f"pretrained={model}", "--tasks", ",".join(tasks), "--include_path",
            str(tasks_dir), "--output_path", str(out), "--log_samples", "--device", "cpu", "--batch_size", "16"]
    if samples is not None:
        argv += ["--samples", str(samples)]
    return argv


def run_lm_eval_cli(models_dir: Path, argv: Sequence[str], home: Path, *, timeout: float = 300) -> float:
    """``python -m lm_eval ARGV`` (lm-eval's own command line, as a user types it) in ``models_dir``; the seconds it
    took (about 20 s on one core, most of it lm-eval indexing its ~200 built-in task folders). A failed run
    raises with lm-eval's last output lines."""
    return _run([sys.executable, "-m", "lm_eval", *argv], models_dir, home, timeout)


def run_lm_eval(models_dir: Path, runs: Sequence[Mapping[str, object]], home: Path, *, timeout: float = 300) -> float:
    """Several runs in one subprocess through lm-eval's Python API, as its command line does them
    (``simple_evaluate`` with an ``EvaluationTracker``, then the tracker's ``save_results_aggregated`` and
    ``save_results_samples``: the same writer, the same files), sharing one task index of the local tasks only
    (``TaskManager(include_defaults=False)``: indexing lm-eval's built-in tasks costs ~8 s per run). ``runs``:
    dicts with ``model_args``, ``tasks`` (a list), ``include_path``, ``output_path`` and optionally ``samples``
    (task -> doc indices). The working folder is ``models_dir`` (so ``pretrained=m0`` makes lm-eval's model name
    ``m0``); returns the seconds it took."""
    return _run([sys.executable, "-c", _DRIVER, json.dumps(list(runs))], models_dir, home, timeout)


def api_run(model: str, tasks_dir: Path, out: Path, *, tasks: Sequence[str] = TASKS,
            samples: Mapping[str, list[int]] | None = None) -> dict[str, object]:
    """One run for :func:`run_lm_eval`."""
    r: dict[str, object] = {"model_args": f"pretrained={model}", "tasks": list(tasks), "include_path": str(tasks_dir),
                            "output_path": str(out)}
    if samples is not None:
        r["samples"] = dict(samples)
    return r


def _run(cmd: list[str], cwd: Path, home: Path, timeout: float) -> float:
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, cwd=cwd, env=lm_eval_env(home), capture_output=True, text=True, timeout=timeout)
    if proc.returncode != 0:
        raise RuntimeError(f"lm-eval failed ({proc.returncode}):\n{(proc.stdout + proc.stderr)[-4000:]}")
    return time.perf_counter() - t0


@dataclass(frozen=True)
class LmEvalRuns:
    """The shared runs: ``known`` (the output folder of the known models' full runs: ``known/<model>/...``),
    ``new_full`` (the new model's full run, for the truth), and what built them."""

    root: Path
    tasks_dir: Path
    models_dir: Path
    known: Path
    new_full: Path
    known_models: tuple[str, ...]
    new_model: str
    seconds: float

    def cli(self, argv: Sequence[str], *, timeout: float = 300) -> float:
        """``python -m lm_eval ARGV`` with the same models, tasks and cache (:func:`run_lm_eval_cli`)."""
        return run_lm_eval_cli(self.models_dir, argv, self.root / "hf", timeout=timeout)


def once(folder: Path, build: Callable[[Path], dict]) -> dict:
    """``build(folder)``'s JSON-able result, computed once for every process of a test session: the first caller
    builds under a file lock and records the result in ``folder/done.json``; the others (another pytest-xdist
    worker) wait for the lock and read it."""
    import fcntl

    folder.mkdir(parents=True, exist_ok=True)
    done = folder / "done.json"
    with open(folder / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not done.is_file():
            done.write_text(json.dumps(build(folder)), encoding="utf-8")
        return json.loads(done.read_text(encoding="utf-8"))


def _build_runs(root: Path) -> dict:
    tasks_dir = tiny_tasks(root / "tasks")
    t0 = time.perf_counter()
    models_dir = tiny_models(root / "models", {**KNOWN, **NEW})
    made = time.perf_counter() - t0
    runs = [api_run(m, tasks_dir, root / "known") for m in KNOWN]
    runs.append(api_run(next(iter(NEW)), tasks_dir, root / "new_full"))
    return {"seconds": run_lm_eval(models_dir, runs, root / "hf"), "models_seconds": made}


def lm_eval_runs(root: Path) -> LmEvalRuns:
    """Build (once: later calls, from any process, reuse ``root``) the tasks, the models, the known models' full
    runs and the new model's full run under ``root``."""
    seconds = once(root, _build_runs)["seconds"]
    return LmEvalRuns(root, root / "tasks", root / "models", root / "known", root / "new_full", tuple(KNOWN),
                      next(iter(NEW)), seconds)
