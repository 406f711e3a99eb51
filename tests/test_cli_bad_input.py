"""Every sub-command fed bad values: one ``error:`` line that names the problem, exit code 2, no traceback.

And the data users actually have (outputs or human scores missing for some systems and items):
the commands use what is there and say what they left out.
"""

import json

import numpy as np
import pytest

from evalsift.cli import main


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("bad")
    (d / "latin1.csv").write_bytes("item_id,system,output\n1,A,caf\xe9\n".encode("latin-1"))
    (d / "latin1.jsonl").write_bytes('{"item_id": "caf\xe9"}\n'.encode("latin-1"))
    (d / "image.jsonl").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(range(256)))
    (d / "empty.jsonl").write_text("")
    (d / "notjson.jsonl").write_text("item_id: 3\n")
    (d / "unknown.jsonl").write_text('{"item_id": "nope"}\n')
    (d / "table.xyz").write_text("a,b\n")
    (d / "t.parquet.gz").write_bytes(b"\x1f\x8b")
    (d / "afile").write_text("x")
    (d / "adir").mkdir()
    from evalsift.store import Store

    st = Store(d / "work.db")
    st.create_project("pairs", kind="pairwise", mode="fixed", settings={"a": "A", "b": "B", "systems": ["A", "B"]})
    st.create_project("scores", kind="score", mode="fixed", settings={"systems": ["A"], "scale": [0, 100]})
    st.close()
    (d / "picks.jsonl").write_text('{"item_id": "0"}\n{"item_id": "1"}\n')
    (d / "inf.csv").write_text("item_id,system,output,human\n1,A,x,0.5\n1,B,y,inf\n2,A,z,0.1\n2,B,w,0.2\n")
    (d / "big.csv").write_text("item_id,system,output,human\n1,A,x,0.5\n1,B,y,0.3\n2,A,z,1e999\n2,B,w,0.2\n")
    import socket

    busy = socket.socket()  # something listening: 'serve --port' on it must say so, not crash
    busy.bind(("127.0.0.1", 0))
    busy.listen(1)
    (d / "busy_port").write_text(str(busy.getsockname()[1]))
    yield d
    busy.close()


def cases(f):
    data = ["--data", "demo"]
    out = ["--out", str(f / "picks.jsonl")]
    cmp_ = ["compare", *data, "--encoder", "tfidf"]
    bp = ["bench", "pairwise", *data, "--oracle-metric", "human", "--methods", "random", "--seeds", "1",
          "--out", str(f / "bp")]
    bs = ["bench", "subset", *data, "--human-metric", "human", "--methods", "random", "--seeds", "1",
          "--out", str(f / "bs")]
    rank = ["rank", *data, "--human-metric", "human"]
    best = ["best", *data, "--oracle", "metric:human"]
    bc = ["bench", "calibration", "--runs", "1", "--gaps", "0", "--ties", "0", "--methods", "random",
          "--out", str(f / "bc")]
    return [
        # (argv, a fragment the one error line must contain)
        ([], "required: COMMAND"),
        (["bogus"], "invalid choice: 'bogus'"),
        (["data"], "required"),
        (["data", "info"], "required: SPEC"),
        (["data", "info", "nosuch"], "Unknown dataset 'nosuch'"),
        (["data", "info", str(f / "latin1.csv")], "line 2 is not valid UTF-8"),
        (["data", "info", str(f / "image.jsonl")], "not valid UTF-8"),
        (["data", "info", str(f / "table.xyz")], "cannot tell the format"),
        (["data", "info", str(f / "missing.csv")], "missing.csv"),
        (["select", "difuse", *data, "--budget", "3", *out], "Did you mean 'diffuse'"),
        (["select", "diffuse", *data, "--budget", "5", *out], "give --a SYS --b SYS"),
        (["select", "random", *data, "--budget", "0", *out], "--budget: expected a positive integer"),
        (["select", "random", *data, "--budget", "abc", *out], "--budget: expected a positive integer"),
        (["select", "random", *data, "--proportion", "1.5", *out], "--proportion: expected a number in (0, 1]"),
        (["select", "random", *data, "--budget", "5", "--cost-budget", "3", *out], "not allowed with argument"),
        (["select", "random", *data, "--budget", "5"], "required: --out"),
        (["select", "diffuse", *data, "--a", "A", "--b", "B", "--cost-budget", "100", "--encoder", "tfidf", *out],
         "no per-item utility"),
        (["select", "diffuse", *data, "--a", "A", "--b", "B", "--budget", "9", "--balance", "domain", *out],
         "no per-item utility"),
        (["select", "metric_var", *data, "--metric", "nope", "--budget", "5", *out], "Unknown metric 'nope'"),
        (["select", "random", *data, "--budget", "5", "--balance", "domian", *out], "Did you mean 'domain'"),
        (["select", "random", *data, "--cost-budget", "50", "--cost-field", "secs", *out], "no metadata field 'secs'"),
        (["select", "random", *data, "--a", "A", "--budget", "5", *out], "give both --a and --b"),
        (["select", "random", *data, "--budget", "5", "--out", str(f / "adir")], "is a folder"),
        (["select", "random", *data, "--budget", "5", "--balance", "domain", "--documents", *out], "do not combine"),
        ([*cmp_, "--a", "A", "--b", "B", "--oracle", "metric"], "needs an argument: metric:NAME"),
        ([*cmp_, "--a", "A", "--b", "B", "--oracle", "metric:humn"], "Did you mean 'human'"),
        ([*cmp_, "--a", "A", "--b", "B", "--oracle", "llmm:gpt"], "Did you mean 'llm'"),
        ([*cmp_, "--a", "A", "--b", "B", "--oracle", "llm:gpt", "--judge-url", "localhost:8000"],
         "base_url must be an http(s) URL"),
        (["judge", *data, "--items", str(f / "picks.jsonl"), "--oracle", "llm:m", "--judge-url", "http://127.0.0.1:9/v1",
          "--out", str(f / "j.jsonl")], "give --a SYS --b SYS"),
        (["judge", *data, "--items", str(f / "unknown.jsonl"), "--oracle", "llm:m", "--a", "A", "--b", "B",
          "--out", str(f / "j.jsonl")], "not in 'demo'"),
        (["judge", *data, "--items", str(f / "picks.jsonl"), "--oracle", "metric:human", "--mode", "score",
          "--out", str(f / "j.jsonl")], "gives no scores"),
        ([*cmp_, "--a", "A", "--b", "D", "--oracle", "metric:human"], "Unknown system 'D'"),
        ([*cmp_, "--a", "A", "--b", "A", "--oracle", "metric:human"], "must differ"),
        ([*cmp_, "--a", "A", "--b", "B", "--oracle", "metric:human", "--risk", "1.5"], "--risk: expected a number"),
        ([*cmp_, "--a", "A", "--b", "B", "--oracle", "metric:human", "--risk", "nan"], "--risk: expected a finite"),
        ([*cmp_, "--a", "A", "--b", "B", "--oracle", "metric:human", "--risk-rule", "bogus"], "invalid choice"),
        ([*cmp_, "--a", "A", "--b", "B", "--oracle", "metric:human", "--min-labels", "10", "--max-labels", "5"],
         "min_labels <= max_labels"),
        ([*cmp_, "--a", "A", "--b", "B", "--oracle", "metric:human", "--method", "difuse"], "Did you mean 'diffuse'"),
        (["compare", *data, "--a", "A", "--b", "B", "--oracle", "metric:human", "--method", "diffuse",
          "--risk-rule", "paper", "--encoder", "tfidff"], "Did you mean 'tfidf'"),
        ([*cmp_, "--a", "A", "--b", "B", "--oracle", "metric:human", "--method", "diffuse", "--risk-rule", "anytime"],
         "anytime rule's guarantee needs the items in a uniformly random order"),
        ([*cmp_, "--a", "A", "--b", "B", "--oracle", "metric:human", "--tie-tolerance", "-1"], "expected a number >= 0"),
        ([*cmp_, "--a", "A", "--oracle", "metric:human"], "required: --b"),
        ([*bp, "--budgets", "5000"], "every budget (5000) is larger than the largest test set"),
        ([*bp, "--budgets", "0"], "--budgets: expected positive integers"),
        ([*bp, "--budgets", "5..x"], "--budgets: expected comma-separated integers"),
        ([*bp, "--seeds", "0"], "--seeds: expected a positive integer"),
        ([*bp, "--methods", "difuse"], "Did you mean 'diffuse'"),
        ([*bp, "--oracle-metric", "nope"], "Unknown metric 'nope'"),
        ([*bp, "--subsample", "0"], "--subsample: expected a number in (0, 1]"),
        ([*bp, "--max-pairs", "0"], "--max-pairs: expected a positive integer"),
        ([*bp[:-1], str(f / "afile")], "is a file"),
        ([*bs, "--human-metric", "nope"], "Unknown metric 'nope'"),
        ([*bs, "--props", "2"], "--props: expected proportions in (0, 1]"),
        ([*bs, "--correlation", "pearson"], "invalid choice: 'pearson'"),
        ([*bs, "--methods", "random,,irt"], "--methods: expected comma-separated names"),
        ([*bs, "--alpha", "1"], "--alpha: expected a number strictly between 0 and 1"),
        ([*best, "--systems", "A,Z"], "Unknown system 'Z'"),
        ([*best, "--systems", "A"], "at least 2 distinct systems"),
        ([*best, "--systems", "A,A,B"], "argument --systems: names A twice; name each system once"),
        ([*rank, "--systems", "A,B,B"], "argument --systems: names B twice; name each system once"),
        (["--data", "demo", "compare", "--a", "A", "--b", "B", "--oracle", "metric:human"],
         "put --data after the command: evalsift compare --data demo --a A --b B --oracle metric:human"),
        (["--quiet", "--json", "data", "info", "demo"], "put --json after the command: evalsift --quiet data info demo "
                                                        "--json"),
        (["--data=demo", "--a", "A", "annotate", "new", "--name", "p"],
         "put --data --a after the command: evalsift annotate new --data=demo --a A --name p"),
        (["data", "info", str(f / "t.parquet.gz")], "a Parquet file is read as it is, not gzipped"),
        ([*best, "--risk", "0"], "--risk: expected a number strictly between 0 and 1"),
        ([*best, "--strategy", "greedy"], "invalid choice: 'greedy'"),
        ([*best, "--max-labels", "0"], "--max-labels: expected a positive integer"),
        (["best", *data, "--oracle", "metric:hmn"], "Did you mean 'human'"),
        ([*bc, *data], "--data needs --oracle"),
        ([*bc, "--oracle", "metric:human"], "give it with --data"),
        ([*bc, "--risks", "1"], "--risks: expected risks in (0, 1)"),
        ([*bc, "--gaps", "-0.1"], "--gaps: expected numbers in [0, 1)"),
        ([*bc, "--rules", "anytme"], "Did you mean 'anytime'"),
        ([*bc, "--no-synthetic"], "give real data (--data)"),
        ([*bc, *data, "--oracle", "metric:hmn"], "Did you mean 'human'"),
        ([*bc, *data, "--oracle-metric", "hmn"], "Did you mean 'human'"),
        ([*bc, *data, "--oracle-metric", "human", "--oracle", "metric:human"], "not allowed with argument"),
        ([*bc, *data, "--oracle", "llm:gpt"], "cannot (use metric:NAME or judgments:FILE)"),
        ([*bc, "--proxy", "judge:llm:gpt"], "record its answers first with 'evalsift judge'"),
        ([*rank, "--items", str(f / "empty.jsonl")], "the file has no items"),
        ([*rank, "--items", str(f / "latin1.jsonl")], "line 1 is not valid UTF-8"),
        ([*rank, "--items", str(f / "notjson.jsonl")], "line 1 is not valid JSON"),
        ([*rank, "--items", str(f / "unknown.jsonl")], "not in 'demo'"),
        ([*rank, "--items", str(f / "nowhere.jsonl")], "nowhere.jsonl"),
        ([*rank, "--systems", "A,Z"], "Unknown system 'Z'"),
        (["rank", *data, "--human-metric", "hman"], "Did you mean 'human'"),
        ([*rank, "--alpha", "0"], "--alpha: expected a number strictly between 0 and 1"),
        ([*rank, "--level", "1"], "--level: expected a number strictly between 0 and 1"),
        ([*rank, "--resamples", "0"], "--resamples: expected a positive integer"),
        (["rank", "--data", str(f / "latin1.csv"), "--human-metric", "human"], "not valid UTF-8"),
        (["annotate"], "required"),
        (["annotate", "new", "--db", str(f / "n.db"), "--name", "p"], "one of the arguments --pairwise --arena --from"),
        (["annotate", "new", "--db", str(f / "n.db"), "--name", "p", "--arena", "--data", "demo", "--systems", "A,B"],
         "an arena ranks 3 or more systems (got 2)"),
        (["annotate", "new", "--db", str(f / "n.db"), "--name", "p", "--arena", "--data", "demo", "--alpha", "2"],
         "--alpha: expected a number strictly between 0 and 1"),
        (["annotate", "new", "--db", str(f / "n.db"), "--name", "p", "--pairwise", "--a", "A", "--b", "B"],
         "needs --data SPEC"),
        (["annotate", "new", "--db", str(f / "n.db"), "--name", "p", "--pairwise", *data, "--a", "A"],
         "give --a SYS --b SYS"),
        (["annotate", "new", "--db", str(f / "n.db"), "--name", "p", "--from", str(f / "picks.jsonl"), *data],
         "--from needs --mode"),
        (["annotate", "new", "--db", str(f / "n.db"), "--name", "p", "--from", str(f / "nope.jsonl"), *data,
          "--mode", "score"], "nope.jsonl"),
        (["annotate", "new", "--db", str(f / "n.db"), "--name", "p", "--from", str(f / "unknown.jsonl"), *data,
          "--mode", "score"], "not in 'demo'"),
        (["annotate", "new", "--db", str(f / "n.db"), "--name", "p", "--from", str(f / "picks.jsonl"), *data,
          "--mode", "score", "--scale", "5-1"], "--scale: expected LOW-HIGH"),
        (["annotate", "new", "--db", str(f / "n.db"), "--name", "p", "--pairwise", *data, "--a", "A", "--b", "B",
          "--overlap", "0"], "--overlap: expected a positive integer"),
        (["annotate", "new", "--db", str(f / "work.db"), "--name", "pairs", "--from", str(f / "picks.jsonl"), *data,
          "--mode", "pairwise", "--a", "A", "--b", "B"], "already exists"),
        (["annotate", "new", "--db", str(f / "adir"), "--name", "p", "--pairwise", *data, "--a", "A", "--b", "B",
          "--encoder", "tfidf"], "is a folder"),
        (["annotate", "add-annotator", "--db", str(f / "missing.db"), "--project", "1", "--name", "x"],
         "does not exist"),
        (["annotate", "add-annotator", "--db", str(f / "work.db"), "--project", "9", "--name", "x"], "no project '9'"),
        (["annotate", "status", "--db", str(f / "work.db"), "--project", "nope"], "no project 'nope'"),
        (["annotate", "export", "--db", str(f / "work.db"), "--project", "1", "--out", str(f / "o.jsonl"),
          "--format", "s2e"], "holds pairwise verdicts"),
        (["annotate", "export", "--db", str(f / "work.db"), "--project", "scores", "--out", str(f / "o.jsonl"),
          "--format", "s2e"], "has no scores yet"),
        (["serve", "--db", str(f / "missing.db")], "does not exist"),
        (["serve", "--db", str(f / "work.db"), "--port", "0"], "--port: expected a TCP port from 1 to 65535"),
        (["serve", "--db", str(f / "work.db"), "--port", "70000"], "--port: expected a TCP port from 1 to 65535"),
        (["serve", "--db", str(f / "work.db"), "--port", _busy_port(f)], "choose another --port"),
        (["annotate", "new", "--db", str(f / "n.db"), "--name", "p", "--from", str(f / "picks.jsonl"),
          "--mode", "pairwise"], "holds no outputs"),
        (["annotate", "new", "--db", str(f / "n.db"), "--name", "p", "--pairwise", *data, "--a", "A", "--b", "Z",
          "--encoder", "tfidf"], "'Z'"),
        (["annotate", "new", "--db", str(f / "n.db"), "--name", "p", "--from", str(f / "picks.jsonl"), *data,
          "--mode", "score", "--guidelines", str(f / "nope.md")], "is not a file; give a text or Markdown file"),
        (["rank", "--data", str(f / "inf.csv"), "--human-metric", "human"], "system 'B' is inf"),
        (["select", "random", *data, "--budget", "3", "--seed", "-5", *out], "--seed: expected a seed"),
        (["compare", *data, "--a", "A", "--b", "B", "--oracle", "metric:human", "--seed", "-5"], "--seed: expected a seed"),
        (["best", *data, "--oracle", "metric:human", "--seed", "2e3"], "--seed: expected a seed"),
        (["profile", *data, "--metric", "human", "--seed", "-1", "--out", str(f / "prof")], "--seed: expected a seed"),
        (["compare", "--data", str(f / "big.csv"), "--a", "A", "--b", "B", "--oracle", "metric:human"],
         "item '2', system 'A' is inf"),
        (["annotate", "revoke", "--db", str(f / "work.db"), "--project", "pairs", "--name", "zed"],
         "no annotator named 'zed'"),
        (["annotate", "rotate-token", "--db", str(f / "work.db"), "--project", "pairs", "--name", "zed"],
         "no annotator named 'zed'"),
    ]


def _busy_port(f) -> str:
    port = f / "busy_port"
    return port.read_text() if port.exists() else "1"


CASES = cases  # built per test from the file fixture


def _ids():
    from pathlib import Path

    return [" ".join(a)[:60] or "(nothing)" for a, _ in cases(Path("/F"))]


@pytest.mark.parametrize("k", range(len(_ids())), ids=_ids())
def test_bad_input_is_one_line_and_exit_2(k, files, capsys):
    argv, fragment = cases(files)[k]
    before = _listing(files)
    code = main(argv)
    err = capsys.readouterr().err
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert code == 2, err
    assert "Traceback" not in err
    assert len(lines) == 1 and lines[0].startswith("error: "), err
    assert fragment in lines[0], lines[0]
    assert not (files / "n.db").exists()  # a project that could not be made leaves no store behind
    assert _listing(files) == before  # nor any --out folder or file (69 of 102 such commands left one)


def _listing(folder):
    """Every path under ``folder`` but SQLite's side files (``-wal``, ``-shm``: they come and go with a reader)."""
    return sorted(p for p in folder.rglob("*") if not p.name.endswith(("-wal", "-shm", "-journal")))


def test_the_count_of_bad_input_cases():
    from pathlib import Path

    assert len(cases(Path("/F"))) >= 75


def test_help_and_version_exit_0(capsys):
    assert main(["--version"]) == 0 and "evalsift" in capsys.readouterr().out
    for argv in (["--help"], ["select", "--help"], ["bench", "pairwise", "--help"], ["rank", "--help"]):
        assert main(argv) == 0
        text = capsys.readouterr().out
        assert "usage:" in text
    main(["compare", "--help"])
    text = " ".join(capsys.readouterr().out.split())  # help wraps lines
    assert "(default: 0.2)" in text and "(default: random)" in text and "(default: anytime)" in text and "(default: 0)" in text


def test_quiet_before_or_after_the_sub_command(tmp_path, capsys):
    base = ["bench", "pairwise", "--data", "demo", "--oracle-metric", "human", "--methods", "random",
            "--budgets", "5", "--seeds", "1", "--max-pairs", "1"]
    assert main(["--quiet", *base, "--out", str(tmp_path / "1")]) == 0
    assert main([*base, "--out", str(tmp_path / "2"), "--quiet"]) == 0
    assert main(["bench", "--quiet", "pairwise", *base[2:], "--out", str(tmp_path / "3")]) == 0
    capsys.readouterr()
    r = [json.loads((tmp_path / k / "results.json").read_text())["curves"] for k in "123"]
    assert r[0] == r[1] == r[2]


# ------------------------------------------------------------------ the data users actually have
def e2e_like(path):
    """A subset2evaluate-style file like E2E: system C has outputs for half the items, system D has
    no human scores at all, and items 0-4 lack a human score for B."""
    rng = np.random.default_rng(1)
    rows = []
    for k in range(40):
        tgt = {"A": f"the food is good {k}", "B": f"good food here {k % 7}", "D": f"nice place {k % 5}"}
        if k % 2 == 0:
            tgt["C"] = f"food good {k % 3}"
        scores = {s: {"human": float(rng.normal(q)), "auto": float(rng.normal(q))}
                  for s, q in (("A", 2), ("B", 1), ("C", 0)) if s in tgt}
        scores["D"] = {"auto": float(rng.normal())}
        if k < 5:
            del scores["B"]["human"]
        rows.append({"i": k, "src": f"name[place {k}] food[good]", "tgt": tgt, "scores": scores})
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_outputs_missing_for_some_items(tmp_path, capsys):
    src = e2e_like(tmp_path / "e2e.jsonl")
    code = main(["compare", "--data", str(src), "--a", "A", "--b", "C", "--oracle", "metric:human", "--encoder",
                 "tfidf", "--json"])
    res = capsys.readouterr()
    d = json.loads(res.out)
    assert code == 0 and d["data"]["dropped_outputs"] == 20 and d["pool_size"] == 20
    assert "note: A vs C: using 20 of 40 items (20 lack an output of A or C)" in res.err
    code = main(["--quiet", "bench", "pairwise", "--data", str(src), "--oracle-metric", "auto", "--methods",
                 "diffuse,random", "--budgets", "5,10", "--seeds", "2", "--encoder", "tfidf", "--out", str(tmp_path / "b")])
    capsys.readouterr()
    res = json.loads((tmp_path / "b" / "results.json").read_text())
    assert code == 0 and res["n_pairs"] == 6 and res["restricted_pairs"]["A vs C"]["n_used"] == 20


def test_human_scores_missing_for_some_systems_and_items(tmp_path, capsys):
    src = e2e_like(tmp_path / "e2e.jsonl")
    code = main(["rank", "--data", str(src), "--human-metric", "human", "--json"])
    res = capsys.readouterr()
    out = json.loads(res.out)
    # D has no human score at all: left out; C is scored on the 20 even items, B lacks items 0-4:
    # the complete items are the even ones from 6 to 38 -> 17
    assert code == 0 and out["left_out"]["systems_left_out"] == ["D"] and out["n_items"] == 17
    assert [r["system"] for r in out["ranking"]] == ["A", "B", "C"]  # drawn around 2, 1, 0
    assert "left out 1 system(s) with no 'human' score: D" in res.err
    picks = tmp_path / "picks.jsonl"
    picks.write_text("".join(json.dumps({"item_id": str(k)}) + "\n" for k in range(12)))
    code = main(["rank", "--data", str(src), "--human-metric", "human", "--items", str(picks), "--json"])
    out = json.loads(capsys.readouterr().out)
    assert code == 0 and out["n_items"] == 3  # of items 0-11, the even ones >= 6: 6, 8, 10
