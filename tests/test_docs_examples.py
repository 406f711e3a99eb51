"""Every example in README.md and docs/*.md runs as written.

Each document's examples run in order in one folder, as a reader types them in a shell (``cd``,
``mkdir`` and ``export`` carry over; files an example writes are there for the next one), through the
installed ``evalsift`` command, with the real data folder. Each must exit 0. A few cannot run here;
:data:`NOT_RUN` names each with the reason, and those are still checked: a command's options are
parsed by the real parser, a Python fragment is compiled. The list is checked against the documents,
so an entry that no longer matches an example fails. Files an example assumes the reader has (their
own ``big.jsonl`` and ``vectors.npz``) are made from the built-in demo data first. The LLM-judge
examples talk to the stub OpenAI-compatible server on 127.0.0.1 instead of the address in the text.
While ``evalsift serve`` runs, each person whose link an example printed answers 40 items through the
app's API, so the examples after it (status, export, a replay of the verdicts) have judgments to use.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from _data import DATA_ROOT, need
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
    ("docs/reproductions.md", "OMP_NUM_THREADS=1 python benchmarks/omni_toy.py"):
        "about 35 minutes: training the 6-layer toy and enumerating its 10^8 sequences",
    ("docs/reproductions.md", "for s in 0 1"): "sampling two toys, about 12 minutes",
    ("docs/reproductions.md", "evalsift --quiet omni curve"): "reads the two samples the loop above writes",
}


def _not_run(e: Example) -> str | None:
    first = e.text.strip()
    for (doc, start), why in NOT_RUN.items():
        if doc == e.doc and first.startswith(start):
            return why
    return None


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
            if _not_run(e) is None:
                continue
            if e.kind == "python":
                compile(e.text, str(e), "exec")
            else:
                for part in e.text.split("&&"):
                    words = __import__("shlex").split(part, comments=True)
                    if words[:1] == ["evalsift"]:
                        parser.parse_args(words[1:])  # an unknown option or a bad value exits 2 here
            checked += 1
    assert checked == sum(1 for d in DOCS for e in examples(d) if _not_run(e))


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


# The two longest documents first (about 3.5 minutes each on 2 idle cores; the rest take 10-50 s): the slow tests
# run first and the workers take them in turn, so these two start at once on different workers.
LONGEST_FIRST = ("README.md", "docs/omninput.md")


def _scheduled(docs: list[Path]) -> list[Path]:
    return sorted(docs, key=lambda d: (str(d.relative_to(ROOT)) not in LONGEST_FIRST, str(d.relative_to(ROOT))))


@pytest.mark.slow  # every command in the docs, end to end: most of the suite's time
@pytest.mark.parametrize("doc", _scheduled([d for d in DOCS if any(_not_run(e) is None for e in examples(d))]),
                         ids=lambda d: str(d.relative_to(ROOT)))
def test_every_example_runs(doc, tmp_path):
    need(".")  # the real data folder (skip, or fail under EVALSIFT_REQUIRE_DATA=1)
    env = {**os.environ, "EVALSIFT_DATA": str(DATA_ROOT), "EVALSIFT_QUIET": "1", "MPLBACKEND": "Agg",
           "OPENAI_API_KEY": "sk-docs-test", "PYTHONPATH": str(ROOT / "src")}
    exe = Path(sys.executable).parent
    env["PATH"] = f"{exe}{os.pathsep}{env.get('PATH', '')}"  # the evalsift of this environment
    with StubServer(prefer_longer()) as stub:  # a judge that reads the outputs: both orders agree
        env["OPENAI_BASE_URL"] = stub.base_url
        shell = Shell(tmp_path, env, judge_url=stub.base_url, answers_while_serving=40)
        ran = []
        for e in examples(doc):
            if _not_run(e):
                continue
            if ("big.jsonl" in e.text or "vectors.npz" in e.text) and not (shell.cwd / "vectors.npz").exists():
                _props(shell.cwd)
            _judge_props(shell.cwd, e.text)
            code, out, secs = shell.run(e)
            print(f"{secs:7.1f} s  {e}")  # shown with -s or -rP: where a document's time goes
            assert code == 0, f"{e}\nexit {code} after {secs:.1f} s:\n{out[-3000:]}"
            ran.append(e)
    assert ran  # the parametrization keeps documents with a runnable example only
