"""Every command once, on tiny offline data: the smoke tests of the quick first check (``-m quick``, README;
``tests/conftest.py`` says what else it holds).

Each chain runs its commands in order in one folder, in-process (``evalsift.cli.main``), the way a user runs
them one after the other (``select`` writes the picks ``judge`` reads; ``omni sample`` the samples ``omni curve``
reads; ``annotate new`` the store the other ``annotate`` commands use). Each command must exit 0 and write
what it says. The data: the built-in ``demo`` (300 items, 3 systems), the shipped examples (``evalsift data
example``: FastChat's MT-Bench files, Chatbot Arena battles) and the TF-IDF encoder -- nothing downloaded, no
real data folder. :func:`test_every_command_is_in_a_chain` keeps the chains complete: a new command joins one.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from evalsift.cli import main

from _docs import leaf_commands

DEMO = ["--data", "demo"]
TFIDF = ["--encoder", "tfidf"]

#: chain -> its commands, in order; ``{t}`` is the chain's folder. What a command must write follows ``->``.
CHAINS: dict[str, list[list[str]]] = {
    "data": [
        ["data", "info", "demo"],
        ["methods"],
        ["data", "example", "mt-bench", "--out", "{t}/mt_bench", "->", "mt_bench/model_judgment/gpt-4_pair.jsonl"],
        ["data", "example", "arena", "--out", "{t}/arena", "->", "arena/battles.jsonl"],
        ["rank", "--data", "{t}/mt_bench/model_judgment/gpt-4_single.jsonl", "--by", "category", "--out", "{t}/r",
         "->", "r/results.json"],
        ["arena", "--data", "{t}/arena/battles.jsonl", "--style-control", "length", "--out", "{t}/lb",
         "->", "lb/leaderboard.html"],
        ["winrate", "--data", "{t}/mt_bench/model_judgment/gpt-4_pair.jsonl", "--baseline", "cedar-7b",
         "--out", "{t}/wr", "->", "wr/results.json"],
        ["bench", "estimate", "--data", "{t}/mt_bench/model_judgment/gpt-4_single.jsonl", "--budgets", "10",
         "--seeds", "1", "--methods", "mean", "--out", "{t}/be", "->", "be/results.json"],
    ],
    "decide": [
        ["select", "random", *DEMO, "--budget", "6", "--out", "{t}/picks.jsonl", "->", "picks.jsonl"],
        ["judge", *DEMO, "--items", "{t}/picks.jsonl", "--oracle", "metric:human", "--a", "A", "--b", "B",
         "--out", "{t}/j.jsonl", "->", "j.jsonl"],
        ["compare", *DEMO, "--a", "A", "--b", "B", "--oracle", "metric:human", *TFIDF, "--max-labels", "40"],
        ["best", *DEMO, "--oracle", "metric:human", "--max-labels", "60"],
        ["judge-report", *DEMO, "--judge", "metric:token_f1", "--human", "metric:human", "--a", "A", "--b", "B",
         "--draws", "3", "--resamples", "50"],
        ["select", "anchors", *DEMO, "--metric", "human", "--budget", "20", "--out", "{t}/anchors.jsonl",
         "->", "anchors.jsonl"],
        ["estimate", *DEMO, "--metric", "human", "--system", "C", "--items", "{t}/anchors.jsonl", "--out", "{t}/est",
         "->", "est/estimate.json"],
        ["estimate", "start", *DEMO, "--metric", "human", "--system", "C", "--rule", "fisher", "--budget", "5",
         "--state", "{t}/adaptive", "->", "adaptive/state.json"],  # the adaptive steps (tell: test_estimate_steps)
        ["estimate", "next", "--state", "{t}/adaptive"],
        ["estimate", "show", "--state", "{t}/adaptive"],
        ["profile", *DEMO, "--metric", "human", "--dims", "length", "--samples", "20", "--out", "{t}/prof",
         "->", "prof/report.html"],
        ["embed", "export", *DEMO, *TFIDF, "--out", "{t}/v.npz", "->", "v.npz"],
        ["embed", "cache", "--data", "{t}/tiny.jsonl", "--encoder", "minilm", "--quiet"],  # _tiny_pool: 4 texts
        ["embed", "import", "{t}/minilm.npz", "--encoder", "minilm"],  # vectors "computed elsewhere": _vectors
    ],
    "bench": [
        ["bench", "pairwise", *DEMO, "--oracle-metric", "human", "--methods", "random", "--budgets", "5",
         "--seeds", "1", "--max-pairs", "1", *TFIDF, "--out", "{t}/bp", "->", "bp/results.json"],
        ["bench", "subset", *DEMO, "--human-metric", "human", "--methods", "random", "--props", "0.5",
         "--seeds", "1", "--out", "{t}/bs", "->", "bs/results.json"],
        ["bench", "calibration", "--runs", "1", "--gaps", "0", "--ties", "0", "--methods", "random",
         "--synthetic-items", "60", "--risks", "0.2", "--out", "{t}/bc", "->", "bc/results.json"],
    ],
    "omni": [
        ["omni", "sample", "--model", "toy", "--length", "4", "--train-steps", "80", "--sampler", "exact",
         "--bin-width", "1", "--out", "{t}/o", "->", "o/omni.json"],  # test_omni_cli's toy (one training a run)
        ["omni", "curve", "--samples", "{t}/o", "--judgments", "rule:toy", "--per-bin", "2", "--boot", "50",
         "--out", "{t}/c", "->", "c/report.html"],
        ["omni", "annotate", "--db", "{t}/omni.db", "--samples", "{t}/o", "--per-bin", "2", "->", "omni.db"],
    ],
    "annotate": [
        ["annotate", "new", "--db", "{t}/w.db", "--name", "ab", "--pairwise", *DEMO, "--a", "A", "--b", "B", *TFIDF,
         "->", "w.db"],
        ["annotate", "add-annotator", "--db", "{t}/w.db", "--project", "ab", "--name", "alice"],
        ["annotate", "unpause", "--db", "{t}/w.db", "--project", "ab", "--name", "alice"],
        ["annotate", "rotate-token", "--db", "{t}/w.db", "--project", "ab", "--name", "alice"],
        ["annotate", "revoke", "--db", "{t}/w.db", "--project", "ab", "--name", "alice"],
        ["annotate", "rotate-admin", "--db", "{t}/w.db", "--project", "ab"],
        ["annotate", "revoke-admin", "--db", "{t}/w.db", "--project", "ab"],
        ["annotate", "status", "--db", "{t}/w.db", "--project", "ab"],
        ["annotate", "export", "--db", "{t}/w.db", "--project", "ab", "--out", "{t}/v.jsonl", "->", "v.jsonl"],
        ["serve", "--db", "{t}/w.db"],
    ],
}


def _vectors(path: Path) -> None:
    """Vectors of MiniLM's 384 dimensions for three texts, keyed by the sha256 of each text (docs/cli.md)."""
    import hashlib

    import numpy as np

    texts = ["a first text", "a second text", "a third text"]
    v = np.random.default_rng(0).normal(size=(3, 384)).astype(np.float32)
    np.savez(path, text_hash=np.array([hashlib.sha256(t.encode()).hexdigest() for t in texts]), vectors=v)


def _tiny_pool(path: Path) -> None:
    """Two systems' outputs on two items (subset2evaluate JSONL): four short texts for ``embed cache`` to embed."""
    rows = [{"i": i, "src": f"source {i}", "tgt": {"A": f"a text {i}", "B": f"another text number {i}"},
             "scores": {"A": {"human": 1.0}, "B": {"human": 0.0}}} for i in range(2)]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))


def _serve(argv: list[str], folder: Path) -> None:
    """``evalsift serve``: started as a user starts it, answers a page, stops on Ctrl-C with status 0."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = {**os.environ, "EVALSIFT_QUIET": "1"}
    p = subprocess.Popen([sys.executable, "-m", "evalsift.cli", *argv, "--port", str(port)], cwd=folder, env=env,
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=1) as c:
                    c.sendall(b"GET / HTTP/1.0\r\n\r\n")
                    assert c.recv(12).startswith(b"HTTP/1."), "the app did not answer"
                break
            except ConnectionRefusedError:
                assert p.poll() is None, p.communicate()[0]
                time.sleep(0.05)
        else:
            pytest.fail("evalsift serve did not start in 60 s")
    finally:
        p.send_signal(signal.SIGINT)
        out = p.communicate(timeout=30)[0]
    assert p.returncode in (0, 130), out


@pytest.mark.parametrize("chain", list(CHAINS))
def test_every_command_runs(chain, tmp_path, capsys):
    for command in CHAINS[chain]:
        argv, _, made = (c.replace("{t}", str(tmp_path)) for c in " ".join(command).partition(" -> "))
        argv = argv.split(" ")
        if argv[0] == "serve":
            _serve(argv, tmp_path)
            continue
        if argv[:2] == ["embed", "import"]:
            _vectors(Path(argv[2]))
        if argv[:2] == ["embed", "cache"]:
            _tiny_pool(Path(argv[3]))
        t0 = time.monotonic()
        code = main(argv)
        err = capsys.readouterr().err
        print(f"\n{time.monotonic() - t0:6.1f} s  evalsift {' '.join(argv)}", file=sys.__stdout__, flush=True)  # -s shows them
        assert code == 0, f"evalsift {' '.join(argv)}\n{err[-2000:]}"
        if made:
            assert (tmp_path / made).is_file(), made
            if made.endswith(".json"):
                assert json.loads((tmp_path / made).read_text()), made


def test_every_command_is_in_a_chain():
    """The chains run every command of ``evalsift --help`` (a new command joins one, or this fails)."""
    ran = set()
    for commands in CHAINS.values():
        for c in commands:
            words = [w for w in c if not w.startswith("-")]
            ran.add(" ".join(words[:2]) if words[0] in ("data", "omni", "bench", "embed", "annotate") else words[0])
    assert set(leaf_commands()) <= ran, set(leaf_commands()) - ran
