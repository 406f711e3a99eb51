"""Real inspect_ai runs for the tests: a tiny local task file evaluated by inspect itself, offline.

Nothing is faked: inspect's own writer writes every log the tests read. The task file (:data:`TASK_FILE`) holds
two tasks:

- ``arith``: 20 samples ("What is i + i?", target ``2i``; ids ``q0`` .. ``q19``, but ``q1*`` for 1, an id with a
  glob character, which ``--sample-id`` would read as a pattern), metadata ``parity`` and ``passage``; scorers
  ``match()`` and ``includes()`` (letters C/I), ``length`` (a number), ``shape`` (a dict value: ``chars`` and
  ``words``) and ``model_graded_qa`` with a mock grader (``mockllm/grader`` with ``custom_outputs``: ``GRADE: C``
  or ``GRADE: I`` from a hash of the grading prompt, and no grade at all for "What is 7 + 7?", so that sample is
  unscored, NaN);
- ``words``: 8 samples with integer ids 1 .. 8, scorers ``match()`` and ``length``.

The "model" is inspect's ``mockllm`` provider under any name (``mockllm/model``, ``mockllm/other``): the task's
solver writes the answer itself, right or wrong from a hash of (model, sample id, epoch), so runs of different
names differ, epochs of one sample differ, and a rerun gives the same answers. The solver never calls the
model (mockllm would count tokens with tiktoken, which downloads its encoding), and every output it makes
carries its token usage, so nothing is fetched from the network.

:func:`inspect_runs` builds, once per test session (under a file lock, for pytest-xdist workers), with one
Python subprocess that calls ``inspect_ai.eval`` three times:

- ``evals/``: ``mockllm/model`` with 2 epochs and ``mockllm/other`` with 1 epoch, ``.eval`` logs (4 files);
- ``json/``: ``mockllm/model`` with 2 epochs again, ``log_format="json"`` (2 files);
- ``reducers/``: ``arith`` by ``mockllm/model``, 2 epochs reduced by ``mean`` and ``max``;
- ``expected.json``: what inspect's own reader (``read_eval_log(header_only=True)``) finds in each of these
  logs' headers: the results the tests compare with;

and, at the same time, two runs of ``arith`` alone by inspect's command line (``inspect eval``) with
``--log-buffer 2``, whose samples from ``q12`` on wait 10 minutes: once the 24 fast samples (12 x 2 epochs)
are in the log, the process is killed (SIGKILL), leaving logs of a run that did not finish:
``running/eval/*.eval`` (journal, samples, no header) and ``running/json/*.json`` (status ``started``).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

TASK_FILE = '''
import asyncio
import hashlib
import os

from inspect_ai import Task, task
from inspect_ai.dataset import Sample
from inspect_ai.model import ModelOutput, ModelUsage, get_model
from inspect_ai.scorer import Score, includes, match, mean, model_graded_qa, scorer, stderr
from inspect_ai.solver import solver


def h(*parts):
    return int(hashlib.sha256("|".join(map(str, parts)).encode()).hexdigest(), 16)


def out(model, text):
    o = ModelOutput.from_content(model=model, content=text)
    o.usage = ModelUsage(input_tokens=1, output_tokens=1, total_tokens=2)
    return o


@solver
def answer():
    async def solve(state, generate):
        slow = os.environ.get("EVALSIFT_TEST_SLOW_FROM")
        if slow is not None and int(str(state.sample_id).lstrip("q").rstrip("*")) >= int(slow):
            await asyncio.sleep(600)
        model = str(state.model)
        right = h(model, state.sample_id, state.epoch) % 3 != 0
        state.output = out(model, f"The answer is {state.target.text}" if right else "The answer is 99")
        return state
    return solve


@scorer(metrics=[mean(), stderr()])
def length():
    async def score(state, target):
        return Score(value=len(state.output.completion) / 10.0)
    return score


@scorer(metrics={"chars": [mean()], "words": [mean()]})
def shape():
    async def score(state, target):
        t = state.output.completion
        return Score(value={"chars": float(len(t)), "words": float(len(t.split()))})
    return score


def grader_output(input, tools, tool_choice, config):
    text = input[0].text
    if "What is 7 + 7?" in text:
        return out("grader", "I cannot tell.")
    return out("grader", "GRADE: C" if h(text) % 2 else "GRADE: I")


@task
def arith():
    samples = [Sample(input=f"What is {i} + {i}?", target=str(2 * i), id="q1*" if i == 1 else f"q{i}",
                      metadata={"parity": "even" if i % 2 == 0 else "odd", "passage": i // 5})
               for i in range(20)]
    grader = get_model("mockllm/grader", custom_outputs=grader_output)
    return Task(dataset=samples, solver=answer(),
                scorer=[match(), includes(), length(), shape(), model_graded_qa(model=grader)])


@task
def words():
    samples = [Sample(input=f"Say the number {k}.", target=str(k), id=k) for k in range(1, 9)]
    return Task(dataset=samples, solver=answer(), scorer=[match(), length()])
'''

RUNNER = '''
import json
import sys
from pathlib import Path

from inspect_ai import Epochs, eval
from inspect_ai.log import read_eval_log

root = Path(sys.argv[1])
common = dict(display="none", log_level="warning")
runs = (("task.py", "mockllm/model", 2, "eval", "evals"), ("task.py", "mockllm/other", 1, "eval", "evals"),
        ("task.py", "mockllm/model", 2, "json", "json"),
        ("task.py@arith", "mockllm/model", Epochs(2, ["mean", "max"]), "eval", "reducers"))
for spec, model, epochs, fmt, folder in runs:
    logs = eval(spec, model=model, epochs=epochs, log_format=fmt, log_dir=str(root / folder), **common)
    bad = [(log.eval.task, log.status) for log in logs if log.status != "success"]
    if bad:
        raise SystemExit(f"inspect runs did not succeed: {bad}")
# what inspect's own reader finds in each log's header: the numbers the tests compare with
expected = []
for folder in ("evals", "json", "reducers"):
    for path in sorted((root / folder).iterdir()):
        log = read_eval_log(str(path), header_only=True)
        expected.append({"folder": folder, "file": path.name, "task": log.eval.task, "model": log.eval.model,
                         "status": log.status, "epochs": log.eval.config.epochs,
                         "sample_ids": [str(i) for i in log.eval.dataset.sample_ids],
                         "scores": [{"name": s.name, "scorer": s.scorer, "reducer": s.reducer,
                                     "scored_samples": s.scored_samples,
                                     "metrics": {k: m.value for k, m in s.metrics.items()}}
                                    for s in log.results.scores]})
(root / "expected.json").write_text(json.dumps(expected, indent=1), encoding="utf-8")
'''

MODELS = ("mockllm/model", "mockllm/other")
TASKS = ("arith", "words")
N_SAMPLES = {"arith": 20, "words": 8}
#: the running logs: samples q0 .. q11 finish (2 epochs each), the others wait
FAST = 12


@dataclass(frozen=True)
class InspectRuns:
    """The logs inspect wrote (see the module's docstring) and how long building them took."""

    root: Path
    task_file: Path
    evals: Path
    json: Path
    reducers: Path
    running_eval: Path
    running_json: Path
    seconds: float

    @property
    def expected(self) -> list[dict]:
        """Per log (``folder``, ``file``, ``task``, ``model``, ``status``, ``epochs``, ``sample_ids``, ``scores``:
        per score ``name``, ``scorer``, ``reducer``, ``scored_samples``, ``metrics``): what inspect's own reader
        (``read_eval_log(header_only=True)``) finds in the header."""
        return json.loads((self.root / "expected.json").read_text(encoding="utf-8"))

    def run_cli(self, args: Sequence[str], *, timeout: float = 180) -> subprocess.CompletedProcess:
        """``inspect <args>`` in the task's folder, offline, with this session's environment."""
        return subprocess.run([*inspect_cli(), *args], cwd=self.root, env=inspect_env(self.root), capture_output=True,
                              text=True, timeout=timeout)


def inspect_env(root: Path, **extra: str) -> dict[str, str]:
    """The subprocess environment: inspect's caches under ``root``, no display, no proxy keys, offline."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("INSPECT_", "OPENAI_", "ANTHROPIC_"))}
    env.update({"INSPECT_CACHE_DIR": str(root / "cache"), "INSPECT_DISPLAY": "none", "HF_HUB_OFFLINE": "1",
                "HF_DATASETS_OFFLINE": "1", "PYTHONHASHSEED": "0"}, **extra)
    return env


def inspect_cli() -> list[str]:
    """inspect's command line: the ``inspect`` script beside this interpreter, else its entry point
    (``inspect_ai._cli.main:main``) run by this interpreter, as the script runs it."""
    script = Path(sys.executable).parent / "inspect"
    if script.is_file():
        return [str(script)]
    return [sys.executable, "-c", "import sys; from inspect_ai._cli.main import main; sys.argv[0] = 'inspect'; "
                                  "sys.exit(main())"]


def _sample_entries(folder: Path) -> int:
    """Sample entries in the ``.eval`` under ``folder`` (its central directory only), or -1 while there is none."""
    files = sorted(folder.glob("*.eval"))
    if not files:
        return -1
    try:
        with zipfile.ZipFile(files[0]) as z:
            return sum(n.startswith("samples/") for n in z.namelist())
    except (zipfile.BadZipFile, OSError):
        return -1  # caught between two writes


def _json_samples(folder: Path) -> int:
    files = sorted(folder.glob("*.json"))
    if not files:
        return -1
    try:
        return len(json.loads(files[0].read_text(encoding="utf-8")).get("samples") or [])
    except (ValueError, OSError):
        return -1


def _start_running(root: Path, fmt: str) -> subprocess.Popen:
    folder = root / "running" / fmt
    folder.mkdir(parents=True, exist_ok=True)
    args = ["eval", "task.py@arith", "--model", "mockllm/model", "--epochs", "2", "--log-buffer", "2",
            "--log-dir", str(folder), "--display", "none", "--log-format", fmt]
    return subprocess.Popen([*inspect_cli(), *args], cwd=root, env=inspect_env(root, EVALSIFT_TEST_SLOW_FROM=str(FAST)),
                            stdout=subprocess.DEVNULL, stderr=open(root / f"running-{fmt}.log", "w"))


def build_runs(root: Path, *, timeout: float = 300) -> float:
    """Write the task file and run inspect (see the module's docstring); the seconds it took."""
    t0 = time.perf_counter()
    (root / "task.py").write_text(TASK_FILE, encoding="utf-8")
    (root / "run.py").write_text(RUNNER, encoding="utf-8")
    running = {fmt: _start_running(root, fmt) for fmt in ("eval", "json")}
    try:
        done = subprocess.run([sys.executable, str(root / "run.py"), str(root)], cwd=root, env=inspect_env(root),
                              capture_output=True, text=True, timeout=timeout)
        if done.returncode != 0:
            raise RuntimeError(f"inspect runs failed (exit {done.returncode}):\n{done.stdout[-3000:]}\n"
                               f"{done.stderr[-3000:]}")
        count = {"eval": lambda: _sample_entries(root / "running" / "eval"),
                 "json": lambda: _json_samples(root / "running" / "json")}
        deadline = time.monotonic() + timeout
        waiting = dict(running)
        while waiting:
            for fmt in list(waiting):
                if count[fmt]() >= 2 * FAST:
                    waiting.pop(fmt).send_signal(signal.SIGKILL)  # the other samples wait: nothing more is written
                elif waiting[fmt].poll() is not None:
                    log = (root / f"running-{fmt}.log").read_text(encoding="utf-8")[-3000:]
                    raise RuntimeError(f"the {fmt} run that should have been left running ended (exit "
                                       f"{waiting[fmt].returncode}): {log}")
            if time.monotonic() > deadline:
                raise RuntimeError(f"the running logs did not reach {2 * FAST} samples in {timeout} s")
            time.sleep(0.2)
    finally:
        for p in running.values():
            if p.poll() is None:
                p.send_signal(signal.SIGKILL)
            p.wait()
    return time.perf_counter() - t0


def inspect_runs(root: Path) -> InspectRuns:
    """Build (once: later calls, from any process, reuse ``root``) the runs under ``root``."""
    import fcntl

    root.mkdir(parents=True, exist_ok=True)
    done = root / "done.json"
    with open(root / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # a second xdist worker waits here, then finds the runs done
        if not done.is_file():
            seconds = build_runs(root)
            done.write_text(json.dumps({"seconds": seconds}), encoding="utf-8")
        seconds = json.loads(done.read_text(encoding="utf-8"))["seconds"]
    return InspectRuns(root, root / "task.py", root / "evals", root / "json", root / "reducers",
                       root / "running" / "eval", root / "running" / "json", seconds)
