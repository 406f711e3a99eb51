"""The LLM judge against a real OpenAI-compatible HTTP server on 127.0.0.1 (tests/llm_stub.py).

Every test drives ``LLMJudge`` through the official ``openai`` client over HTTP, with a scripted
server: fixed and position-biased verdicts, rate limits, server errors, malformed bodies, answers
without a marker or with conflicting ones, slow answers, and a replay of GPT-3.5's recorded answers
on SummEval. Whatever the server does, an error never becomes a verdict.
"""

from __future__ import annotations

import json
import logging
import sys
import time
from collections import Counter
from importlib import resources

import numpy as np
import pytest

pytest.importorskip("openai", reason="the LLM judge needs evalsift[llm]")

from _data import need
from llm_stub import (
    Replay,
    Reply,
    StubServer,
    answer,
    malformed_json,
    position_biased,
    prefer_longer,
    prompt_of,
    rate_limited,
    section,
    server_error,
    slow,
)

from evalsift.errors import EvalsiftError, MissingDependencyError, ParameterError
from evalsift.oracle import DictCache, LLMCache, LLMJudge, make_oracle
from evalsift.oracle.base import VERDICTS
from evalsift.oracle.llm import PLACEHOLDER_KEY, cache_key, parse_rating, parse_verdict
from evalsift.pool import Pool
from evalsift.session import Session

KEY = "sk-evalsift-LEAKCHECK-7f3a9c2e51d04b8e"


def pool4() -> Pool:
    """Four items; A's output is longer on x and z, B's on y, equal length on w; B has none on v."""
    return Pool(item_ids=["x", "y", "z", "w", "v"], inputs=["Say hi.", "Name a colour.", "Add 2+2.", "Pick one.", "?"],
                systems=["A", "B"],
                outputs={"A": ["Hello there, friend!", "Red.", "It is four.", "left", "a"],
                         "B": ["Hi.", "A deep ultramarine blue.", "4", "rght", None]},
                name="tiny")


def judge(stub: StubServer, **kw) -> LLMJudge:
    kw.setdefault("max_retries", 0)
    return LLMJudge("judge-model", base_url=stub.base_url, **kw)


def assert_no_error_is_a_verdict(js) -> None:
    for j in js:
        assert (j.status == "done") == (j.verdict in VERDICTS)
        if j.status == "error":
            assert j.verdict is None and j.detail["reason"]


# ---------------------------------------------------------------------------------------------- parsing
def test_strict_marker_parser():
    assert parse_verdict("reasoning... [[A]]") == "A"
    assert parse_verdict("[[C]]") == "C"
    assert parse_verdict("[[B]]\n\nFinal: [[B]]") == "B"          # the same marker twice is fine
    assert parse_verdict("[[A]] no wait [[B]]") is None            # conflicting
    assert parse_verdict("[[A]] or a tie [[C]]") is None
    assert parse_verdict("A is better") is None                    # no marker
    assert parse_verdict("[[a]]") is None and parse_verdict("[[ A ]]") is None and parse_verdict(None) is None
    assert parse_rating("Rating: [[8]]") == 8.0 and parse_rating("[[ 3.5 ]]", (1, 5)) == 3.5
    assert parse_rating("[[0]]") is None and parse_rating("[[7]] [[8]]") is None and parse_rating("eight") is None
    assert parse_rating("[[7]] ... Rating: [[7]]") == 7.0


# ---------------------------------------------------------------------------------------------- pairwise
def test_both_orders_are_asked_and_agreeing_orders_give_the_verdict():
    pool = pool4()
    with StubServer(prefer_longer()) as stub:
        js = judge(stub).judge_pairs(pool, [0, 1, 2, 3], "A", "B")
    assert [j.item_id for j in js] == ["x", "y", "z", "w"]
    assert [j.verdict for j in js] == ["a", "b", "a", "tie"]
    assert all(j.status == "done" and j.annotator == "llm:judge-model" and j.kind == "llm" for j in js)
    assert not any(j.detail["position_disagreement"] for j in js)
    # two requests per item, each order once: a's output first, then b's
    assert len(stub.requests) == 8
    shown = Counter((section(p, "TASK"), section(p, "RESPONSE A"), section(p, "RESPONSE B")) for p in stub.prompts())
    for i in range(4):
        x, ya, yb = pool.inputs[i], pool.outputs["A"][i], pool.outputs["B"][i]
        assert shown[(x, ya, yb)] == 1 and shown[(x, yb, ya)] == 1
    for j, i in zip(js, range(4)):
        assert j.detail["shown_orders"] == ["ab", "ba"] and j.shown_order == "ab"
        ab, ba = j.detail["answers"]
        assert (ab["verdict"], ba["verdict"]) == (j.verdict, j.verdict)
        assert j.detail["raw"] == [ab["raw"], ba["raw"]] and all("[[" in r for r in j.detail["raw"])
    # every request carries temperature 0, the seed and a bounded max_tokens, and they are recorded
    for r in stub.requests:
        b = r["body"]
        assert (b["model"], b["temperature"], b["seed"], b["max_tokens"]) == ("judge-model", 0.0, 0, 512)
        assert [m["role"] for m in b["messages"]] == ["user"]
    req = js[0].detail["request"]
    assert {k: req[k] for k in ("model", "temperature", "seed", "max_tokens")} == {
        "model": "judge-model", "temperature": 0.0, "seed": 0, "max_tokens": 512}
    assert req["template"]["name"] == "pairwise.txt" and len(req["template"]["sha256"]) == 64


def test_usage_is_summed_over_both_calls():
    pool = pool4()
    with StubServer(prefer_longer()) as stub:
        j = judge(stub).judge_pairs(pool, [0], "A", "B")[0]
    # the stub counts whitespace tokens of the prompt and of the answer
    expected = Counter()
    for p, ans in zip(stub.prompts(), ("Judging by length. [[A]]",) * 2):
        expected["prompt_tokens"] += len(p.split())
        expected["completion_tokens"] += len(ans.split())
    expected["total_tokens"] = expected["prompt_tokens"] + expected["completion_tokens"]
    assert j.detail["usage"] == dict(expected)
    assert sum(a["usage"]["total_tokens"] for a in j.detail["answers"]) == j.detail["usage"]["total_tokens"]


def test_position_bias_gives_ties_flagged_with_both_answers():
    with StubServer(position_biased()) as stub:
        js = judge(stub).judge_pairs(pool4(), [0, 1, 2], "A", "B")
    assert len(stub.requests) == 6
    for j in js:
        assert j.status == "done" and j.verdict == "tie" and j.detail["position_disagreement"] is True
        assert [a["verdict"] for a in j.detail["answers"]] == ["a", "b"]
        assert j.detail["raw"] == ["The first response is better. [[A]]"] * 2
        assert j.detail["shown_orders"] == ["ab", "ba"]


def test_a_tie_in_one_order_only_is_a_disagreement():
    pool = pool4()

    def beh(body, stub):  # A first -> tie; B first -> prefers A (shown second)
        return Reply(text="[[C]]" if section(prompt_of(body), "RESPONSE A") == pool.outputs["A"][0] else "[[B]]")

    with StubServer(beh) as stub:
        j = judge(stub).judge_pairs(pool, [0], "A", "B")[0]
    assert j.verdict == "tie" and j.detail["position_disagreement"] is True
    assert [a["verdict"] for a in j.detail["answers"]] == ["tie", "a"]


def test_swapping_the_systems_mirrors_the_verdicts():
    pool = pool4()
    with StubServer(prefer_longer()) as stub:
        jd = judge(stub)
        ab = [j.verdict for j in jd.judge_pairs(pool, [0, 1, 2, 3], "A", "B")]
        ba = [j.verdict for j in jd.judge_pairs(pool, [0, 1, 2, 3], "B", "A")]
    assert ba == [{"a": "b", "b": "a", "tie": "tie"}[v] for v in ab]


def test_one_order_only_is_never_a_verdict():
    pool = pool4()

    def beh(body, stub):  # answers properly only when A's output is shown first
        ok = section(prompt_of(body), "RESPONSE A") == pool.outputs["A"][0]
        return Reply(text="A is clearly better. [[A]]" if ok else "I cannot decide between them.")

    with StubServer(beh) as stub:
        j = judge(stub).judge_pairs(pool, [0], "A", "B")[0]
    assert j.status == "error" and j.verdict is None
    assert "order ba: no verdict marker" in j.detail["reason"]
    assert j.detail["raw"] == ["A is clearly better. [[A]]", "I cannot decide between them."]
    assert j.detail["answers"][0]["verdict"] == "a"   # kept for audit, but not the item's verdict


@pytest.mark.parametrize("text, why", [("Both are decent; hard to say.", "no verdict marker"),
                                       ("[[A]] ... on reflection [[B]]", "conflicting verdict markers [[A]], [[B]]"),
                                       ("[[A]] or maybe [[C]]", "conflicting verdict markers [[A]], [[C]]")])
def test_answers_without_exactly_one_marker_kind_are_errors(text, why):
    with StubServer(answer(text)) as stub:
        js = judge(stub).judge_pairs(pool4(), [0, 1], "A", "B")
    assert_no_error_is_a_verdict(js)
    assert all(j.status == "error" and why in j.detail["reason"] and j.detail["raw"] == [text, text] for j in js)


def test_rate_limits_are_retried_by_the_client():
    # two 429s (Retry-After: 0) per prompt, then an answer: the client's own retries get through
    with StubServer(rate_limited(2, prefer_longer())) as stub:
        js = judge(stub, max_retries=3).judge_pairs(pool4(), [0], "A", "B")
    assert js[0].status == "done" and js[0].verdict == "a"
    by_prompt = {}
    for r in stub.requests:
        by_prompt.setdefault(prompt_of(r["body"]), []).append(r["headers"].get("x-stainless-retry-count"))
    assert len(by_prompt) == 2 and len(stub.requests) == 6      # each order: 429, 429, 200
    assert all(v == ["0", "1", "2"] for v in by_prompt.values())  # the openai client's retry counter


def test_more_rate_limits_than_max_retries_make_an_error():
    with StubServer(rate_limited(100, prefer_longer())) as stub:
        t = time.perf_counter()
        js = judge(stub, max_retries=1).judge_pairs(pool4(), [0, 1], "A", "B")
        elapsed = time.perf_counter() - t
    assert_no_error_is_a_verdict(js)
    assert all(j.status == "error" and "HTTP 429" in j.detail["reason"] and "max_retries=1" in j.detail["reason"]
               for j in js)
    assert len(stub.requests) == 8 and elapsed < 10   # 4 calls x (1 try + 1 retry), then it stops


def test_retry_after_ms_is_honoured_and_fast():
    with StubServer(rate_limited(3, prefer_longer(), retry_after_ms="5")) as stub:
        t = time.perf_counter()
        js = judge(stub, max_retries=3).judge_pairs(pool4(), [0], "A", "B")
    assert js[0].verdict == "a" and len(stub.requests) == 8 and time.perf_counter() - t < 2.0


def test_server_errors_stop_after_the_retries():
    with StubServer(server_error()) as stub:
        js = judge(stub, max_retries=1).judge_pairs(pool4(), [0, 2], "A", "B")
    assert_no_error_is_a_verdict(js)
    assert all(j.status == "error" and "HTTP 500" in j.detail["reason"] for j in js)
    assert len(stub.requests) == 8
    assert all(a["error_type"] == "InternalServerError" and a["raw"] is None for j in js for a in j.detail["answers"])


def test_malformed_json_is_an_error():
    with StubServer(malformed_json()) as stub:
        js = judge(stub).judge_pairs(pool4(), [0], "A", "B")
    assert js[0].status == "error" and js[0].verdict is None
    assert "malformed JSON" in js[0].detail["reason"]


def test_a_slow_answer_times_out():
    with StubServer(slow(1.5, prefer_longer())) as stub:
        t = time.perf_counter()
        js = judge(stub, timeout=0.5).judge_pairs(pool4(), [0, 1], "A", "B")
        elapsed = time.perf_counter() - t
    assert_no_error_is_a_verdict(js)
    assert all(j.status == "error" and "timeout of 0.5 s" in j.detail["reason"] for j in js)
    assert elapsed < 1.4   # the judge did not wait for the server


def test_missing_output_is_an_error_without_a_request():
    with StubServer(prefer_longer()) as stub:
        js = judge(stub).judge_pairs(pool4(), [4, 0], "A", "B")
    assert js[0].status == "error" and js[0].detail["reason"] == "no output for B" and js[0].item_id == "v"
    assert js[1].status == "done" and len(stub.requests) == 2
    assert list(judge(stub).covers(pool4(), "A", "B")) == [True, True, True, True, False]


def test_only_one_order_when_asked():
    pool = pool4()
    with StubServer(position_biased()) as stub:
        js = judge(stub, both_orders=False).judge_pairs(pool, [0, 1, 2, 3], "A", "B")
        again = judge(stub, both_orders=False).judge_pairs(pool, [0, 1, 2, 3], "A", "B")
    assert len(stub.requests) == 8
    orders = [j.shown_order for j in js]
    assert orders == [j.shown_order for j in again]                      # drawn from the seed: reproducible
    assert [j.verdict for j in js] == [o[0] for o in orders]             # the biased judge picks what it saw first
    assert all("position_disagreement" not in j.detail or not j.detail["position_disagreement"] for j in js)


def test_concurrency_is_bounded():
    items = list(range(4))
    for bound in (1, 3):
        with StubServer(prefer_longer(), delay=0.15) as stub:
            js = judge(stub, concurrency=bound).judge_pairs(pool4(), items, "A", "B")
        assert all(j.status == "done" for j in js) and len(stub.requests) == 8
        assert stub.max_in_flight == bound   # never above the bound, and the bound is used


# ---------------------------------------------------------------------------------------------- cache
def test_cached_responses_make_no_request():
    cache = DictCache()
    assert isinstance(cache, LLMCache)
    pool = pool4()
    with StubServer(prefer_longer()) as stub:
        first = judge(stub, cache=cache).judge_pairs(pool, [0, 1, 2], "A", "B")
        assert len(stub.requests) == 6 and len(cache) == 6
        again = judge(stub, cache=cache).judge_pairs(pool, [0, 1, 2], "A", "B")
        assert len(stub.requests) == 6                                  # all hits: not one request
        assert [j.verdict for j in again] == [j.verdict for j in first]
        assert all(a["cached"] for j in again for a in j.detail["answers"])
        assert [j.detail["usage"] for j in again] == [j.detail["usage"] for j in first]
        judge(stub, cache=cache).judge_pairs(pool, [0, 3], "A", "B")    # one item new: only its two requests
        assert len(stub.requests) == 8
        judge(stub, cache=cache, seed=1).judge_pairs(pool, [0], "A", "B")  # other parameters, other key
        assert len(stub.requests) == 10
    # the key: sha256 of the canonical request, without the API key
    body = stub.requests[0]["body"]
    k = cache_key("judge-model", body["messages"], {"temperature": 0.0, "seed": 0, "max_tokens": 512}, stub.base_url)
    assert k in cache.data


def test_failed_calls_are_not_cached():
    cache = DictCache()
    with StubServer(server_error()) as stub:
        judge(stub, cache=cache).judge_pairs(pool4(), [0], "A", "B")
    assert len(cache) == 0


# ---------------------------------------------------------------------------------------------- the key
def test_the_api_key_is_sent_but_never_leaks(monkeypatch, caplog):
    monkeypatch.setenv("EVALSIFT_TEST_KEY", KEY)
    caplog.set_level(logging.DEBUG)
    cache = DictCache()
    pool = pool4()

    def echo(body, stub):  # a hostile server that repeats the Authorization header back
        auth = stub.local.headers.get("authorization", "")
        if section(prompt_of(body), "TASK") == pool.inputs[1]:
            return Reply(status=401, text=f"invalid key {auth}")
        return Reply(text=f"[[A]] (you sent {auth})")

    with StubServer(echo) as stub:
        jd = judge(stub, key_env="EVALSIFT_TEST_KEY", cache=cache)
        js = jd.judge_pairs(pool, [0, 1, 2], "A", "B")
        js += jd.judge_score_judgments(pool, [0, 1], "A")
        with pytest.raises(EvalsiftError) as bad:
            jd.judge_pairs(pool, [0], "A", "Zed")
    assert {r["headers"]["authorization"] for r in stub.requests} == {f"Bearer {KEY}"}  # it was used
    assert any(j.status == "error" for j in js) and any("***" in str(j.detail) for j in js)
    places = {"repr": repr(jd), "judgments": json.dumps([j.to_dict() for j in js]), "str": str(js),
              "cache": json.dumps(cache.data), "logs": caplog.text, "error": str(bad.value),
              "reasons": " ".join(j.detail.get("reason", "") for j in js), "vars": str(vars(jd))}
    for where, text in places.items():
        assert KEY not in text, where
    assert "EVALSIFT_TEST_KEY" in repr(jd)   # the variable's name is fine to show


def test_the_key_is_read_at_call_time_and_a_placeholder_without_it(monkeypatch):
    monkeypatch.delenv("EVALSIFT_TEST_KEY", raising=False)
    with StubServer(prefer_longer()) as stub:
        jd = judge(stub, key_env="EVALSIFT_TEST_KEY")
        jd.judge_pairs(pool4(), [0], "A", "B")
        monkeypatch.setenv("EVALSIFT_TEST_KEY", KEY)
        jd.judge_pairs(pool4(), [1], "A", "B")
    auth = [r["headers"]["authorization"] for r in stub.requests]
    assert auth == [f"Bearer {PLACEHOLDER_KEY}"] * 2 + [f"Bearer {KEY}"] * 2


# ---------------------------------------------------------------------------------------------- pointwise
def test_scores_and_score_judgments():
    pool = pool4()

    def beh(body, stub):
        out = section(prompt_of(body), "RESPONSE")
        return Reply(text={"Hello there, friend!": "Rating: [[9]]", "Red.": "Rating: [[3]]",
                           "It is four.": "[[11]]", "left": "good, I'd say 7"}[out])

    with StubServer(beh) as stub:
        jd = judge(stub)
        s = jd.judge_scores(pool, [0, 1, 2, 3], "A")
        js = jd.judge_score_judgments(pool, [0, 2, 3], "A")
        jb = jd.judge_score_judgments(pool, [4], "B")
    assert s[:2].tolist() == [9.0, 3.0] and np.isnan(s[2:]).all()
    assert [j.status for j in js] == ["done", "error", "error"]
    assert js[0].detail["score"] == 9.0 and js[0].a == "A" and js[0].verdict is None
    assert "outside the scale 1-10" in js[1].detail["reason"] and "no rating" in js[2].detail["reason"]
    assert jb[0].status == "error" and jb[0].detail["reason"] == "no output for B"
    p = next(p for p in stub.prompts() if "Hello there, friend!" in p)
    assert "from 1 to 10" in p and "criterion: overall quality" in p and "{" not in p


# ---------------------------------------------------------------------------------------------- templates
def test_templates_ship_as_package_data():
    folder = resources.files("evalsift.oracle").joinpath("prompts")
    pair, score = folder.joinpath("pairwise.txt").read_text("utf-8"), folder.joinpath("score.txt").read_text("utf-8")
    for ph in ("{input}", "{output_a}", "{output_b}", "{criterion}", "[[A]]", "[[B]]", "[[C]]"):
        assert ph in pair
    for ph in ("{input}", "{output}", "{criterion}", "{min_score}", "{max_score}"):
        assert ph in score


def test_own_template_and_criterion(tmp_path):
    own = tmp_path / "mine.txt"
    own.write_text('Criterion: {criterion}. JSON stays {"k": 1}.\nQ: {input}\nFirst: {output_a}\nSecond: {output_b}\n'
                   "Reply [[A]], [[B]] or [[C]].\n", encoding="utf-8")
    with StubServer(position_biased()) as stub:
        j = judge(stub, template=own, criterion="brevity").judge_pairs(pool4(), [0], "A", "B")[0]
    head = 'Criterion: brevity. JSON stays {"k": 1}.\nQ: Say hi.\n'
    tail = "Reply [[A]], [[B]] or [[C]].\n"
    assert sorted(stub.prompts()) == sorted([head + "First: Hello there, friend!\nSecond: Hi.\n" + tail,
                                             head + "First: Hi.\nSecond: Hello there, friend!\n" + tail])
    assert j.detail["request"]["template"]["name"] == str(own) and j.detail["request"]["criterion"] == "brevity"
    bad = tmp_path / "bad.txt"
    bad.write_text("Only {output_a}", encoding="utf-8")
    with pytest.raises(ParameterError, match=r"lacks the placeholder\(s\) \{output_b\}"):
        LLMJudge("m", template=bad)
    with pytest.raises(ParameterError, match="is not a file"):
        LLMJudge("m", template=tmp_path / "nope.txt")


# ---------------------------------------------------------------------------------------------- construction
def test_spec_parameters_and_missing_dependency(monkeypatch):
    o = make_oracle("llm:gpt-4o-mini", base_url="http://127.0.0.1:9/v1", concurrency=2)
    assert isinstance(o, LLMJudge) and o.name == "llm:gpt-4o-mini" and o.concurrency == 2
    with pytest.raises(ParameterError, match=r"oracle 'llm' needs an argument: llm:MODEL"):
        make_oracle("llm")
    for bad in ({"concurrency": 0}, {"max_retries": -1}, {"timeout": 0}, {"temperature": 3},
                {"max_tokens": 0}, {"base_url": "localhost:8000"}, {"cache": object()}, {"scale": (5, 1)}):
        with pytest.raises(ParameterError):
            LLMJudge("m", **bad)
    with pytest.raises(EvalsiftError, match="Unknown system 'Z'"):
        o.judge_pairs(pool4(), [0], "A", "Z")
    monkeypatch.setitem(sys.modules, "openai", None)
    with pytest.raises(MissingDependencyError, match=r"pip install 'evalsift\[llm\]'"):
        LLMJudge("m")


def test_a_session_runs_on_the_judge_and_counts_errors():
    pool = Pool(item_ids=[f"i{k}" for k in range(40)], inputs=["q"] * 40, systems=["A", "B"],
                outputs={"A": [f"a long answer number {k}" for k in range(40)], "B": [f"short {k}" for k in range(40)]})
    with StubServer(prefer_longer()) as stub:
        d = Session(pool, "random", risk=0.2).run(judge(stub))
    assert d.outcome == "winner" and d.winner == "A" and d.errors == 0
    assert len(stub.requests) == 2 * d.labels_used
    with StubServer(server_error()) as stub:
        d = Session(pool, "random", risk=0.2, max_labels=10).run(judge(stub))
    assert d.outcome == "inconclusive" and d.labels_used == 0 and d.errors == 10


# ---------------------------------------------------------------------------------------------- replay
def _letter_verdict(resp: str, first_is_a: bool) -> str | None:
    m = Replay.to_marker(resp)
    if m not in ("[[A]]", "[[B]]", "[[C]]"):
        return None
    if m == "[[C]]":
        return "tie"
    return ("a" if m == "[[A]]" else "b") if first_is_a else ("b" if m == "[[A]]" else "a")


def test_replay_of_recorded_gpt35_answers_on_summeval():
    from evalsift.io import load

    mi, mj, dim = "M8", "M9", "coherence"
    data = need("summeval/summeval.json", f"summeval/llm-pairwise/{mi}-{mj}_{dim}.result",
                f"summeval/llm-pairwise/{mi}-{mj}_{dim}_toggle.result")
    pool = load(str(data)).pair(mi, mj)
    replay = Replay(data.parent / "llm-pairwise", pool, (mi, mj), dim)
    cache = DictCache()
    with StubServer(replay) as stub:
        jd = LLMJudge("gpt-3.5-turbo-0301", base_url=stub.base_url, criterion=dim, cache=cache, max_retries=0)
        session = Session(pool, "random", risk=0.2)
        d = session.run(jd)
        asked = len(stub.requests)
        full = jd.judge_pairs(pool, range(pool.n_items), mi, mj)   # the rest of the pool; the asked part is cached
        assert len(stub.requests) == 2 * pool.n_items
    # every Session judgment came from the recording, in both orders (plain file: Mi first; toggle: Mj first)
    judged = {j.item_id: j for j in session.judgments}
    assert len(session.judgments) == len(d.judged) and asked == 2 * len(d.judged) and d.errors == 0
    served = {(s["doc"], s["first"]): s for s in replay.served}
    for item in d.judged:
        j = judged[item["item_id"]]
        plain, toggle = served[(j.item_id, mi)], served[(j.item_id, mj)]
        assert plain["file"].endswith(f"{dim}.result") and toggle["file"].endswith("_toggle.result")
        assert j.detail["raw"] == [Replay.to_marker(plain["resp"]), Replay.to_marker(toggle["resp"])]
        v1, v2 = _letter_verdict(plain["resp"], True), _letter_verdict(toggle["resp"], False)
        assert item["verdict"] == j.verdict == (v1 if v1 == v2 else "tie")
    # the Session's decision is the full run's winner
    counts = Counter(j.verdict for j in full)
    assert counts["a"] + counts["b"] + counts["tie"] == pool.n_items
    full_winner = mi if counts["a"] > counts["b"] else mj
    assert d.outcome == "winner" and d.winner == full_winner
    disagreement = sum(j.detail["position_disagreement"] for j in full) / len(full)
    assert 0 < disagreement < 0.5



def test_a_small_llm_as_the_proxy_of_an_expensive_judge():
    """judge:llm:MODEL as a proxy: the cheap judge (a real HTTP server on 127.0.0.1 that prefers the
    longer response) is asked about every item before the loop; its verdicts become predictions."""
    from evalsift.oracle import MetricOracle
    from evalsift.proxy import judge_values, make_proxy

    n = 60
    rng = np.random.default_rng(0)
    long_a = rng.random(n) < 0.7
    outs_a = ["a long and thorough answer" if x else "short" for x in long_a]
    outs_b = ["short" if x else "a long and thorough answer" for x in long_a]
    human = np.column_stack([long_a.astype(float), (~long_a).astype(float)])  # the expensive judge agrees
    pool = Pool(item_ids=[f"i{k}" for k in range(n)], inputs=[f"q{k}" for k in range(n)], systems=["A", "B"],
                outputs={"A": outs_a, "B": outs_b}, scores={"human": human}, human_metrics=["human"])
    with StubServer(prefer_longer()) as stub:
        cheap = judge(stub)
        values = judge_values(cheap, pool, "A", "B")
        assert values.tolist() == long_a.astype(float).tolist() and len(stub.requests) == 2 * n
        proxy = make_proxy("judge:llm:judge-model", pool, "A", "B", oracle=cheap)
        d = Session(pool, "random", a="A", b="B", risk=0.1, proxy=proxy).run(MetricOracle("human"))
    assert d.outcome == "winner" and d.winner == "A" and d.guarantee.startswith("valid")
