"""``evalsift compare --oracle llm:...`` and ``evalsift judge`` against a real OpenAI-compatible stub server
on 127.0.0.1: token use in the Decision, errors never verdicts, a rerun pays nothing twice."""

import json

import pytest

pytest.importorskip("openai", reason="the LLM judge needs evalsift[llm]")

from evalsift.cli import main  # noqa: E402

from llm_stub import StubServer, prefer_longer, server_error  # noqa: E402


def run(capsys, *argv):
    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


def test_compare_with_an_llm_judge_reports_tokens_and_caches(tmp_path, capsys):
    db = str(tmp_path / "w.db")
    with StubServer(prefer_longer()) as stub:
        args = ["compare", "--data", "demo", "--a", "A", "--b", "C", "--oracle", "llm:judge", "--judge-url",
                stub.base_url, "--db", db, "--method", "random", "--encoder", "tfidf", "--json"]
        code, out, err = run(capsys, *args)
        d = json.loads(out)
        first = len(stub.requests)
        assert code == 0 and d["outcome"] in ("winner", "inconclusive") and d["errors"] == 0
        assert first == 2 * d["labels_used"]  # every item asked in both orders
        assert d["usage"]["judgments"] == d["labels_used"] and d["usage"]["total_tokens"] > 0
        assert all(r["tokens"] > 0 for r in d["judged"])
        code, out2, _ = run(capsys, *args)  # the same comparison again: answered from the store's cache
        assert code == 0 and len(stub.requests) == first and json.loads(out2)["winner"] == d["winner"]


def test_judge_errors_are_never_verdicts(tmp_path, capsys):
    with StubServer(server_error()) as stub:
        code, out, err = run(capsys, "compare", "--data", "demo", "--a", "A", "--b", "B", "--oracle", "llm:judge",
                             "--judge-url", stub.base_url, "--db", str(tmp_path / "w.db"), "--method", "random",
                             "--max-labels", "8", "--encoder", "tfidf")
    assert code == 0 and "inconclusive" in out and "0 judgments used" in out
    assert "got no verdict because the judge failed" in err


def test_judge_command_resumes_without_paying_twice(tmp_path, capsys):
    picks = tmp_path / "picks.jsonl"
    picks.write_text("".join(json.dumps({"item_id": str(k)}) + "\n" for k in range(10)))
    out = tmp_path / "judgments.jsonl"
    db = str(tmp_path / "w.db")
    with StubServer(prefer_longer()) as stub:
        base = ["judge", "--data", "demo", "--items", str(picks), "--oracle", "llm:judge", "--judge-url",
                stub.base_url, "--db", db, "--a", "A", "--b", "B", "--out", str(out), "--batch", "4"]
        code, _, err = run(capsys, *base)
        rows = [json.loads(line) for line in out.read_text().splitlines()]
        assert code == 0 and len(rows) == 10 and all(r["status"] == "done" for r in rows)
        asked = len(stub.requests)
        # 10 items x 2 orders, minus requests identical to one already sent (the judge sends those once)
        assert asked == len(set(stub.prompts())) and 15 <= asked <= 20
        out.write_text("".join(json.dumps(r) + "\n" for r in rows[:6]))  # as if interrupted after 6
        code, _, err = run(capsys, *base)
        assert code == 0 and "4 of 4 asked (6 already in" in err
        assert len(stub.requests) == asked  # the other 4 came from the cache: nothing paid twice
        assert len(out.read_text().splitlines()) == 10
        code, _, err = run(capsys, "judge", "--data", "demo", "--items", str(picks), "--oracle", "llm:judge",
                           "--judge-url", stub.base_url, "--db", db, "--mode", "score", "--systems", "A",
                           "--out", str(tmp_path / "scores.jsonl"))
        scores = [json.loads(line) for line in (tmp_path / "scores.jsonl").read_text().splitlines()]
        assert code == 0 and len(scores) == 10 and all(r["b"] == "" for r in scores)
