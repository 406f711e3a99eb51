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
has (their own ``big.jsonl`` and ``vectors.npz``, FastChat's and Chatbot Arena's files) are made first. The LLM-judge
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
    return value.split(":", 1)[1] if re.match(r"^[a-z]+:", value) else value


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
    """What ``e`` writes that a later example may read: its ``--out`` and ``--db`` values."""
    if e.kind != "bash":
        return set()
    words = e.argv
    return {w.rstrip("/") for k, w in zip(words, words[1:]) if k in ("--out", "--db")}


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
