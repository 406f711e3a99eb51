"""The annotation app over real HTTP on 127.0.0.1: the JSON API, tokens, escaping, and kill -9 of the server."""

import http.client
import json
import os
import signal
import time

import pytest

pytest.importorskip("fastapi", reason="the annotation app needs evalsift[web]")
pytest.importorskip("uvicorn", reason="the annotation app needs evalsift[web]")

from evalsift.select import make_selector  # noqa: E402
from evalsift.store import Store  # noqa: E402
from evalsift.web import Workspace  # noqa: E402

from _web import AdminClient, Server, call, free_port, get_text, pair_pool, start_server_process  # noqa: E402



def project(tmp_path, name="live", evil=False):
    db = tmp_path / "w.db"
    work = Workspace(Store(db))
    pid, admin = work.create_live_pairwise(name, pair_pool(n=60, evil=evil), "A", "B",
                                           make_selector("random", seed=0), risk=0.2)
    tokens = {n: work.store.add_annotator(pid, n)[1] for n in ("alice", "bob")}
    return db, pid, admin, tokens


def test_api_flow_tokens_and_idempotency(tmp_path):
    db, pid, admin, tok = project(tmp_path)
    with Server(db) as srv:
        assert call("GET", f"{srv.url}/api/v1/next")[0] == 401
        assert call("GET", f"{srv.url}/api/v1/next", "not-a-token")[0] == 401
        code, a = call("GET", f"{srv.url}/api/v1/next", tok["alice"])
        assert code == 200 and len(a["outputs"]) == 2 and a["answers"] == {"1": "first", "2": "second", "0": "tie"}
        # bob cannot answer alice's assignment
        code, err = call("POST", f"{srv.url}/api/v1/judgments", tok["bob"], {"assignment_id": a["assignment_id"],
                                                                            "verdict": "1"})
        assert code == 403 and "someone else" in err["error"]
        body = {"assignment_id": a["assignment_id"], "verdict": "1", "idempotency_key": "k-1"}
        c1, r1 = call("POST", f"{srv.url}/api/v1/judgments", tok["alice"], body)
        c2, r2 = call("POST", f"{srv.url}/api/v1/judgments", tok["alice"], body)  # a double submit
        assert c1 == c2 == 200 and r1["id"] == r2["id"] and r1["stored"]
        code, err = call("POST", f"{srv.url}/api/v1/judgments", tok["alice"], {"assignment_id": a["assignment_id"],
                                                                              "verdict": "left"})
        assert code == 422 and err["field"] == "verdict"
        # the status needs the admin token
        assert call("GET", f"{srv.url}/api/v1/projects/{pid}/status", tok["alice"])[0] == 403
        assert call("GET", f"{srv.url}/api/v1/projects/999/status", admin)[0] == 404
        code, st = call("GET", f"{srv.url}/api/v1/projects/{pid}/status", admin)
        assert code == 200 and st["judgments"]["done"] == 1 and st["decision"]["decided"] is False
        assert get_text(f"{srv.url}/admin/{pid}?token=wrong")[0] == 403
        assert AdminClient(srv.url).sign_in(pid, "wrong")[0] == 403
        assert get_text(f"{srv.url}/a/wrong")[0] == 403
    assert len(Store(db).judgments(pid)) == 1


def test_pages_render_everything_escaped(tmp_path):
    db, pid, admin, tok = project(tmp_path, name="<script>alert(1)</script>", evil=True)
    st = Store(db)
    st.add_annotator(pid, '<img src=x onerror="alert(2)">')
    with Server(db) as srv:
        admin_client = AdminClient(srv.url)
        code, html, url = admin_client.get(f"/admin/{pid}?token={admin}")  # an old link: signs in, drops the token
        assert url == f"{srv.url}/admin/{pid}" and admin not in html
        assert code == 200 and "<script>alert(1)" not in html and "&lt;script&gt;alert(1)" in html
        assert '<img src=x onerror' not in html and "&lt;img src=x onerror" in html
        code, html = get_text(f"{srv.url}/a/{tok['alice']}")
        assert code == 200 and "<script>alert(1)" not in html


def _client(port, token, sent, acked, stop):
    """Submit as fast as possible until the server goes away (or ``stop`` is set)."""
    while not stop.is_set():
        try:
            code, a = call("GET", f"http://127.0.0.1:{port}/api/v1/next", token)
            if a.get("done"):
                return
            key = f"sub-{a['assignment_id']}"
            sent[key] = a["assignment_id"]
            code, res = call("POST", f"http://127.0.0.1:{port}/api/v1/judgments", token,
                             {"assignment_id": a["assignment_id"], "verdict": "1", "idempotency_key": key})
            if code == 200:
                acked[key] = res["id"]  # acknowledged: it must survive anything
        except (OSError, http.client.HTTPException):  # the server was killed under us (mid-answer, too)
            return


def test_kill_9_while_submitting_loses_no_acknowledged_judgment(tmp_path):
    import threading

    db = tmp_path / "w.db"
    work = Workspace(Store(db))
    pid, admin = work.create_fixed("fixed", pair_pool(n=2000), mode="pairwise", a="A", b="B", overlap=1)
    token = work.store.add_annotator(pid, "alice")[1]
    port = free_port()
    acked, sent = {}, {}
    rounds = 4
    for r in range(rounds):
        server = start_server_process(db, port)
        stop = threading.Event()
        client = threading.Thread(target=_client, args=(port, token, sent, acked, stop))
        client.start()
        time.sleep(0.6 + 0.3 * r)
        os.kill(server.pid, signal.SIGKILL)  # while the client is submitting
        server.wait()
        stop.set()
        client.join(30)
    rows = Store(db).judgment_rows(pid)
    keys = [r["idempotency_key"] for r in rows]
    assert set(acked) <= set(keys) and len(keys) == len(set(keys))  # every 200 is there, none twice
    assert {r["id"] for r in rows if r["idempotency_key"] in acked} == set(acked.values())
    # the client re-sends whatever it is unsure of after the restart: still once each
    server = start_server_process(db, port)
    try:
        for key, assignment in sent.items():
            code, _ = call("POST", f"http://127.0.0.1:{port}/api/v1/judgments", token,
                           {"assignment_id": assignment, "verdict": "1", "idempotency_key": key})
            assert code == 200
    finally:
        os.kill(server.pid, signal.SIGKILL)
        server.wait()
    rows = Store(db).judgment_rows(pid)
    assert len(rows) == len(sent) == len({r["idempotency_key"] for r in rows}) and len(acked) > 0
    print(json.dumps({"rounds": rounds, "acknowledged": len(acked), "sent": len(sent), "stored": len(rows)}))


def test_a_live_project_with_a_proxy_decides_as_compare_does(tmp_path, capsys):
    """``annotate new --pairwise --proxy``: the proxy's values are stored with the project; the server (no
    data, no metric) rebuilds it, and people answering as the human metric says reach compare's decision
    with the same proxy -- in the labels compare needs with it, fewer than without it."""
    from evalsift.cli import main
    from evalsift.io import make_demo_pool

    db = tmp_path / "w.db"
    assert main(["annotate", "new", "--db", str(db), "--name", "px", "--pairwise", "--data", "demo", "--a", "A",
                 "--b", "B", "--proxy", "metric:token_f1", "--json"]) == 0
    pid, admin = (lambda o: (o["project"], o["admin_token"]))(json.loads(capsys.readouterr().out))
    runs = {}
    for extra in ([], ["--proxy", "metric:token_f1"]):
        assert main(["compare", "--data", "demo", "--a", "A", "--b", "B", "--oracle", "metric:human", *extra,
                     "--json"]) == 0
        runs[bool(extra)] = json.loads(capsys.readouterr().out)
    assert runs[True]["labels_used"] < runs[False]["labels_used"]  # the proxy is worth something here
    pool = make_demo_pool()
    human = {iid: (pool.score("human", "A")[k], pool.score("human", "B")[k]) for k, iid in enumerate(pool.item_ids)}
    store = Store(db)
    _, token = store.add_annotator(pid, "alice")
    with Server(db) as srv:
        answered = 0
        while True:
            code, a = call("GET", f"{srv.url}/api/v1/next", token)
            assert code == 200
            if a.get("done"):
                break
            sa, sb = human[a["item_id"]]
            first_is_a = store.assignment(a["assignment_id"])["shown_order"] == "ab"
            verdict = "0" if sa == sb else "1" if (sa > sb) == first_is_a else "2"
            assert call("POST", f"{srv.url}/api/v1/judgments", token,
                        {"assignment_id": a["assignment_id"], "verdict": verdict})[0] == 200
            answered += 1
        code, st = call("GET", f"{srv.url}/api/v1/projects/{pid}/status", admin)
        client = AdminClient(srv.url)
        client.sign_in(pid, admin)
        page = client.get(f"/admin/{pid}")[1]
    d = st["decision"]
    assert code == 200 and d["decided"] and d["proxy"] == "metric:token_f1" and st["settings"]["proxy"] == d["proxy"]
    assert (d["winner"], d["labels_used"]) == (runs[True]["winner"], runs[True]["labels_used"]) == ("A", answered)
    assert abs(d["risk"] - runs[True]["risk"]) < 1e-9
    assert "metric:token_f1" in page and "the guarantee does not rest on it" in page
    # a second server process (the store alone) rebuilds the same decision; the status command names the proxy
    assert Workspace(Store(db)).status(pid)["decision"]["labels_used"] == answered
    assert main(["annotate", "status", "--db", str(db), "--project", "px"]) == 0
    assert "decided: A wins" in (out := capsys.readouterr().out) and "proxy: metric:token_f1" in out


def test_a_live_project_with_the_neyman_design_keeps_two_people_busy_and_replays(tmp_path, capsys):
    """``annotate new --pairwise --proxy ... --design neyman`` (issues 30, 42): two people ask at once, every
    round both get an item -- past the first set a person with nothing open gets a draw made ahead of the
    decision (before issue 42 the second one waited: one open item at a time) -- and the decision is the one
    ``compare`` replays from the export (the recorded draws made again at the same points), and the one a
    server rebuilt from the store alone reaches."""
    from evalsift.cli import main
    from evalsift.io import make_demo_pool

    db = tmp_path / "w.db"
    assert main(["annotate", "new", "--db", str(db), "--name", "ny", "--pairwise", "--data", "demo", "--a", "A",
                 "--b", "B", "--proxy", "metric:token_f1", "--design", "neyman", "--json"]) == 0
    pid, admin = (lambda o: (o["project"], o["admin_token"]))(json.loads(capsys.readouterr().out))
    assert main(["compare", "--data", "demo", "--a", "A", "--b", "B", "--oracle", "metric:human", "--proxy",
                 "metric:token_f1", "--design", "neyman", "--json"]) == 0
    alone = json.loads(capsys.readouterr().out)  # one verdict at a time: its own draws
    pool = make_demo_pool()
    human = {iid: (pool.score("human", "A")[k], pool.score("human", "B")[k]) for k, iid in enumerate(pool.item_ids)}
    store = Store(db)
    tokens = [store.add_annotator(pid, name)[1] for name in ("alice", "bob")]
    count, waited, rounds = {t: 0 for t in tokens}, 0, 0
    with Server(db) as srv:
        while True:
            held = []
            for token in tokens:
                code, a = call("GET", f"{srv.url}/api/v1/next", token)
                assert code == 200
                if a.get("done"):
                    waited += not a.get("final")
                    continue
                held.append((token, a))
            if not held:
                break
            rounds += 1
            for token, a in held:
                sa, sb = human[a["item_id"]]
                first_is_a = store.assignment(a["assignment_id"])["shown_order"] == "ab"
                verdict = "0" if sa == sb else "1" if (sa > sb) == first_is_a else "2"
                assert call("POST", f"{srv.url}/api/v1/judgments", token,
                            {"assignment_id": a["assignment_id"], "verdict": verdict})[0] == 200
                count[token] += 1
        code, st = call("GET", f"{srv.url}/api/v1/projects/{pid}/status", admin)
        client = AdminClient(srv.url)
        client.sign_in(pid, admin)
        page = client.get(f"/admin/{pid}")[1]
    d = st["decision"]
    assert code == 200 and d["decided"] and st["settings"]["sampling"] == "neyman" and d["method"] == "random+neyman"
    assert 'id="design"' in page and "where people disagree with it" in page and "made ahead" in page
    assert waited == 0 and min(count.values()) >= rounds - 1  # both got an item in every round but the last
    assert len(store.draws(pid)) > 0  # draws made ahead, recorded
    assert d["winner"] == alone["winner"] == "A"  # the same answer as one person alone (other draws, other count)
    assert sum(count.values()) == d["labels_used"] + d["judged_ahead"]  # every verdict used, or judged ahead
    again = Workspace(Store(db)).status(pid)["decision"]
    assert (again["labels_used"], again["risk"]) == (d["labels_used"], d["risk"])
    out = tmp_path / "ny.jsonl"
    assert main(["annotate", "export", "--db", str(db), "--project", "ny", "--out", str(out)]) == 0
    capsys.readouterr()
    assert main(["compare", "--data", str(out), "--a", "A", "--b", "B", "--oracle", f"judgments:{out}", "--json"]) == 0
    got = json.loads(capsys.readouterr().out)
    assert (got["winner"], got["labels_used"], got["risk"]) == (d["winner"], d["labels_used"], d["risk"])
    assert main(["annotate", "new", "--db", str(tmp_path / "x.db"), "--name", "x", "--pairwise", "--data", "demo",
                 "--a", "A", "--b", "B", "--design", "neyman"]) == 2
    assert "proxy" in capsys.readouterr().err and not (tmp_path / "x.db").exists()


def test_a_proxy_project_refuses_what_it_cannot_do(tmp_path, capsys):
    """Bad proxy input names the field and the fix, and leaves no store behind."""
    from evalsift.cli import main

    db = tmp_path / "w.db"
    base = ["annotate", "new", "--db", str(db), "--name", "px", "--pairwise", "--data", "demo", "--a", "A", "--b", "B"]
    assert main([*base, "--proxy", "metric:nope"]) == 2
    assert "token_f1" in capsys.readouterr().err and not db.exists()
    assert main([*base, "--proxy", "metric:token_f1", "--risk-rule", "paper", "--method", "random"]) == 2
    assert "anytime" in capsys.readouterr().err and not db.exists()
    assert main([*base, "--covariates", "length"]) == 2
    assert "--proxy" in capsys.readouterr().err
    assert main(["annotate", "new", "--db", str(db), "--name", "f", "--from", "nothing.jsonl", "--mode", "pairwise",
                 "--proxy", "metric:token_f1"]) == 2
    assert "--pairwise" in capsys.readouterr().err and not db.exists()


def test_admin_page_shows_interval_agreement_for_continuous_scores(tmp_path, capsys):
    """issue 29: a 0-100 score project with near-identical scores showed percent agreement 0.0 and a negative
    Fleiss' kappa beside Cohen's kappa and Krippendorff's alpha near 1 (exact-match and nominal statistics on
    continuous scores). Now the page shows the interval-level ones, each with its level."""
    import re

    from evalsift.cli import main

    db = tmp_path / "w.db"
    work = Workspace(Store(db))
    pid, admin = work.create_fixed("scores", pair_pool(n=6), mode="score", systems=["A", "B"], scale=(0, 100),
                                   overlap=2)
    people = []
    for name in ("alice", "bob"):
        aid, _ = work.store.add_annotator(pid, name)
        people.append({"id": aid, "project_id": pid, "name": name})
    for person, offset in zip(people, (0, 1)):  # bob scores every output one point above alice
        while not (a := work.next_for(person)).get("done"):
            row = work.store.assignment(a["assignment_id"])
            k = int(row["item_id"][1:])
            work.submit(person, a["assignment_id"], score=10 * k + (40 if row["a"] == "A" else 0) + offset)
    with Server(db) as srv:
        client = AdminClient(srv.url)
        client.sign_in(pid, admin)
        code, html, _ = client.get(f"/admin/{pid}")
    table = re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", re.search(r'id="agreement">(.*?)</table>', html, re.S)[1]))
    assert code == 200
    assert "on a continuous scale: the interval-level statistics are shown" in table
    # 12 (item, system) cells judged by both, one point apart on each: the mean absolute difference is 1
    assert "mean absolute difference (interval) 1.00 on a scale 100 wide" in table
    assert "Krippendorff's alpha (interval) 0.999" in table and "Cohen's kappa, mean over pairs (interval" in table
    assert "percent agreement" not in table and "Fleiss" not in table  # nominal statistics: not for these scores
    assert main(["annotate", "status", "--db", str(db), "--project", str(pid)]) == 0
    out = capsys.readouterr().out
    assert "mean absolute difference 1.000 on a scale 100 wide (interval)" in out and "Fleiss" not in out
    assert "Krippendorff's alpha 0.999 (interval)" in out


def test_contradictory_bodies_are_422_and_messages_use_json_words(tmp_path):
    """issue 42: ``{"verdict": "1", "skip": true}`` was stored as a skip, and 422 messages said "got None" /
    "got True" (Python's words). Over real HTTP: a body giving two answers is refused with nothing stored;
    the messages name values as JSON writes them."""
    db, pid, admin, tok = project(tmp_path)
    with Server(db) as srv:
        a = call("GET", f"{srv.url}/api/v1/next", tok["alice"])[1]
        post = lambda body: call("POST", f"{srv.url}/api/v1/judgments", tok["alice"],  # noqa: E731
                                 {"assignment_id": a["assignment_id"], **body})
        for body, named in (({"verdict": "1", "skip": True}, "verdict and skip"),
                            ({"verdict": "2", "score": 50}, "verdict and score"),
                            ({"score": 5, "skip": True}, "score and skip"),
                            ({"verdict": 0, "score": 1, "skip": True}, "verdict and score and skip")):
            code, err = post(body)
            assert code == 422 and f"the body gives {named}: send one answer" in err["error"], (body, err)
            assert err["field"] in ("skip", "score") and "nothing was stored" in err["error"]
        for body, word, field in (({"verdict": None}, "got nothing (the body has no verdict)", "verdict"),
                                  ({"verdict": True}, "got true", "verdict"),
                                  ({"verdict": [1]}, "got [1]", "verdict"),
                                  ({"skip": None}, "got null", "skip"),
                                  ({"skip": "yes"}, 'got "yes"', "skip"),
                                  ({"verdict": "1", "comment": False}, "got false", "comment")):
            code, err = post(body)
            assert code == 422 and err["field"] == field and word in err["error"], (body, err)
            assert "None" not in err["error"] and "True" not in err["error"] and "False" not in err["error"]
        code, err = call("POST", f"{srv.url}/api/v1/judgments", tok["alice"], {"assignment_id": True, "verdict": "1"})
        assert code == 422 and "got true" in err["error"]
        assert Store(db).judgment_rows(pid) == []  # nothing stored for any of them
        assert post({"verdict": "1", "skip": False})[0] == 200  # skip: false is no second answer
