"""The annotation app under the faults an operator and a hostile client bring: idempotency keys reused across
people and assignments, two servers on one file, malformed and oversized bodies, a store locked by another
writer, undo and reload, revoked tokens, the admin token kept out of URLs. Real servers on 127.0.0.1, a real
SQLite file, real processes; nothing mocked."""

import http.client
import json
import os
import signal
import sqlite3
import subprocess
import threading
import time
import urllib.error
import urllib.request

import pytest

pytest.importorskip("fastapi", reason="the annotation app needs evalsift[web]")

from evalsift.store import Store  # noqa: E402
from evalsift.web import Workspace  # noqa: E402

from _web import AdminClient, Server, call, free_port, get_text, pair_pool, start_server_process  # noqa: E402



def fixed(tmp_path, n=20, overlap=1, people=("alice", "bob"), name="fixed"):
    db = tmp_path / "w.db"
    work = Workspace(Store(db))
    pid, admin = work.create_fixed(name, pair_pool(n=n), mode="pairwise", a="A", b="B", overlap=overlap)
    return db, pid, admin, {p: work.store.add_annotator(pid, p)[1] for p in people}


def raw(method, url, token=None, data: bytes | None = None, headers=None):
    """A request with a raw body; ``(status, headers, JSON or text)``."""
    req = urllib.request.Request(url, data=data, method=method, headers={"Content-Type": "application/json",
                                                                          **(headers or {})})
    if token:
        req.add_header("Authorization", f"Bearer {token}")
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            body, code, hdrs = r.read(), r.status, r.headers
    except urllib.error.HTTPError as e:
        body, code, hdrs = e.read(), e.code, e.headers
    try:
        return code, hdrs, json.loads(body or b"{}")
    except ValueError:
        return code, hdrs, body.decode("utf-8", "replace")


def test_a_reused_key_never_returns_someone_elses_judgment(tmp_path):
    db, pid, admin, tok = fixed(tmp_path)
    with Server(db) as srv:
        a1 = call("GET", f"{srv.url}/api/v1/next", tok["alice"])[1]
        b1 = call("GET", f"{srv.url}/api/v1/next", tok["bob"])[1]
        ca, ra = call("POST", f"{srv.url}/api/v1/judgments", tok["alice"],
                      {"assignment_id": a1["assignment_id"], "verdict": "1", "idempotency_key": "same"})
        cb, rb = call("POST", f"{srv.url}/api/v1/judgments", tok["bob"],
                      {"assignment_id": b1["assignment_id"], "verdict": "2", "idempotency_key": "same"})
        assert ca == cb == 200 and ra["id"] != rb["id"]  # bob's answer is stored, not alice's id returned
        a2 = call("GET", f"{srv.url}/api/v1/next", tok["alice"])[1]
        c2, r2 = call("POST", f"{srv.url}/api/v1/judgments", tok["alice"],
                      {"assignment_id": a2["assignment_id"], "verdict": "0", "idempotency_key": "same"})
        assert c2 == 200 and r2["id"] not in (ra["id"], rb["id"])  # the key on another assignment: a new one
        again = call("POST", f"{srv.url}/api/v1/judgments", tok["alice"],
                     {"assignment_id": a1["assignment_id"], "verdict": "1", "idempotency_key": "same"})
        # a true retry: the same id, nothing new
        assert again[0] == 200 and {k: again[1][k] for k in ("id", "stored")} == {"id": ra["id"], "stored": True}
        code, err = call("POST", f"{srv.url}/api/v1/judgments", tok["alice"],
                         {"assignment_id": a1["assignment_id"], "verdict": "2", "idempotency_key": "same"})
        assert code == 409 and err["field"] == "idempotency_key" and f"judgment {ra['id']}" in err["error"]
        code, err = call("POST", f"{srv.url}/api/v1/judgments", tok["alice"],
                         {"assignment_id": a1["assignment_id"], "verdict": "2", "idempotency_key": "other"})
        assert code == 409 and "undo it first" in err["error"]
    rows = Store(db).judgment_rows(pid)
    assert [(r["annotator"], r["verdict"] is not None) for r in rows] == [("alice", True), ("bob", True),
                                                                          ("alice", True)]


# every body below once caused a 500, a silent misreading, or was never checked; none may now
BAD_BODIES = [
    (b'{"assignment_id": 99999999999999999999999, "verdict": "1"}', 404, "assignment_id"),
    (b'{"assignment_id": -99999999999999999999999, "verdict": "1"}', 404, "assignment_id"),
    (b'{"assignment_id": 1.7, "verdict": "1"}', 422, "assignment_id"),
    (b'{"assignment_id": true, "verdict": "1"}', 422, "assignment_id"),
    (b'{"assignment_id": "abc", "verdict": "1"}', 422, "assignment_id"),
    (b'{"assignment_id": null, "verdict": "1"}', 422, "assignment_id"),
    (b'{"verdict": "1"}', 422, "assignment_id"),
    (b'{"assignment_id": {A}, "verdict": true}', 422, "verdict"),
    (b'{"assignment_id": {A}, "verdict": ["1"]}', 422, "verdict"),
    (b'{"assignment_id": {A}, "verdict": 1.0}', 422, "verdict"),
    (b'{"assignment_id": {A}, "skip": "false"}', 422, "skip"),
    (b'{"assignment_id": {A}, "skip": 0}', 422, "skip"),
    (b'{"assignment_id": {A}, "verdict": "1", "idempotency_key": {"a": 1}}', 422, "idempotency_key"),
    (b'{"assignment_id": {A}, "verdict": "1", "idempotency_key": 5}', 422, "idempotency_key"),
    (b'{"assignment_id": {A}, "verdict": "1", "idempotency_key": "' + b"k" * 300 + b'"}', 422, "idempotency_key"),
    (b'{"assignment_id": {A}, "verdict": "1", "comment": {"x": 1}}', 422, "comment"),
    (b'{"assignment_id": {A}, "verdict": "1", "comment": 7}', 422, "comment"),
    (b'{"assignment_id": {A}, "verdict": NaN}', 422, "body"),
    (b'not json', 422, "body"),
    (b'[1, 2]', 422, "body"),
    (b'"just a string"', 422, "body"),
    (b'\xff\xfe{}', 422, "body"),
    (b"[" * 30000 + b"]" * 30000, 422, "body"),  # deep JSON, under the size limit
    (b'{"assignment_id": {A}, "verdict": "1", "comment": "' + b"x" * 70000 + b'"}', 413, "body"),
]
BAD_SCORES = [  # on a score project (scale 0-100)
    (b'{"assignment_id": {A}, "score": 1e400}', 422, "score"),
    (b'{"assignment_id": {A}, "score": -1e999}', 422, "score"),
    (b'{"assignment_id": {A}, "score": Infinity}', 422, "body"),
    (b'{"assignment_id": {A}, "score": true}', 422, "score"),
    (b'{"assignment_id": {A}, "score": "nan"}', 422, "score"),
    (b'{"assignment_id": {A}, "score": ""}', 422, "score"),
    (b'{"assignment_id": {A}, "score": 101}', 422, "score"),
    (b'{"assignment_id": {A}, "score": [70]}', 422, "score"),
    (b'{"assignment_id": {A}}', 422, "score"),
]


def test_hostile_bodies_are_refused_with_a_field_and_never_a_500(tmp_path, capsys):
    db, pid, admin, tok = fixed(tmp_path)
    work = Workspace(Store(db))
    spid, _ = work.create_fixed("scores", pair_pool(n=5), mode="score", systems=["A"], scale=(0, 100))
    stok = work.store.add_annotator(spid, "carol")[1]
    seen = []
    with Server(db) as srv:
        a = call("GET", f"{srv.url}/api/v1/next", tok["alice"])[1]["assignment_id"]
        s = call("GET", f"{srv.url}/api/v1/next", stok)[1]["assignment_id"]
        for bodies, token, aid in ((BAD_BODIES, tok["alice"], a), (BAD_SCORES, stok, s)):
            for body, want, field in bodies:
                code, _, out = raw("POST", f"{srv.url}/api/v1/judgments", token, body.replace(b"{A}", str(aid).encode()))
                assert (code, out.get("field")) == (want, field), (body[:80], code, out)
                seen.append(code)
        # a body over the limit sent without a Content-Length (chunked) is refused too
        def chunks():
            for _ in range(100):
                yield b"x" * 1024
        req = urllib.request.Request(f"{srv.url}/api/v1/judgments", data=chunks(), method="POST",
                                     headers={"Authorization": f"Bearer {tok['alice']}",
                                              "Content-Type": "application/json", "Transfer-Encoding": "chunked"})
        with pytest.raises(urllib.error.HTTPError) as e:
            urllib.request.urlopen(req, timeout=30)
        assert e.value.code == 413
        # ids outside SQLite's integers in paths
        for url in (f"/admin/{10 ** 30}", f"/api/v1/projects/{10 ** 30}/status", "/admin/-5"):
            assert get_text(srv.url + url)[0] == 404
        # nothing above was stored; the assignments still take a good answer
        assert call("POST", f"{srv.url}/api/v1/judgments", tok["alice"], {"assignment_id": a, "verdict": 1})[0] == 200
        assert call("POST", f"{srv.url}/api/v1/judgments", stok, {"assignment_id": s, "score": 70})[0] == 200
    assert [j.verdict for j in Store(db).judgments(pid)] == ["a" if Store(db).assignment(a)["shown_order"] == "ab"
                                                              else "b"]
    assert [j.score for j in Store(db).judgments(spid)] == [70.0]
    with capsys.disabled():
        print(f"\nbad bodies refused: {len(seen) + 1} ({sorted(set(seen))}), 0 stored, 0 answered 500")


def test_every_response_carries_the_security_headers(tmp_path):
    db, pid, admin, tok = fixed(tmp_path)
    with Server(db) as srv:
        for method, path, token in (("GET", "/", None), ("GET", f"/a/{tok['alice']}", None), ("GET", "/a/nope", None),
                                    ("GET", "/static/annotate.js", None), ("GET", "/api/v1/next", tok["alice"]),
                                    ("GET", "/api/v1/next", None), ("GET", f"/admin/{pid}", None)):
            code, headers, _ = raw(method, srv.url + path, token)
            assert "frame-ancestors 'none'" in headers["Content-Security-Policy"], path
            assert headers["X-Content-Type-Options"] == "nosniff" and headers["Referrer-Policy"] == "no-referrer", path


def test_admin_signs_in_by_cookie_and_projects_are_found_by_name(tmp_path):
    db = tmp_path / "w.db"
    work = Workspace(Store(db))
    _, admin_a = work.create_fixed("ab", pair_pool(n=4), mode="pairwise", a="A", b="B")
    digits, admin_d = work.create_fixed("2024", pair_pool(n=6), mode="pairwise", a="A", b="B")  # id 2, named "2024"
    with Server(db) as srv:
        c = AdminClient(srv.url)
        code, html, _ = c.get("/admin/2024")
        assert code == 200 and 'type="password"' in html and admin_d not in html  # the sign-in form
        assert c.sign_in("2024", admin_a)[0] == 403  # another project's token
        code, html, url = c.sign_in("2024", admin_d)
        assert code == 200 and url == f"{srv.url}/admin/2024" and "<th>items</th><td>6</td>" in html
        assert AdminClient(srv.url).get("/admin/2024")[1].count('type="password"') == 1  # no cookie, no page
        code, st = call("GET", f"{srv.url}/api/v1/projects/2024/status", admin_d)
        assert code == 200 and st["project"]["id"] == digits and st["items"] == 6
        assert call("GET", f"{srv.url}/api/v1/projects/{digits}/status", admin_d)[1]["project"]["name"] == "2024"


def test_undo_and_reload_over_http(tmp_path):
    db, pid, admin, tok = fixed(tmp_path, n=5)
    with Server(db) as srv:
        a = call("GET", f"{srv.url}/api/v1/next", tok["alice"])[1]
        again = call("GET", f"{srv.url}/api/v1/next", tok["alice"])[1]  # a reloaded page
        assert again["assignment_id"] == a["assignment_id"] and again["item_id"] == a["item_id"]
        assert call("POST", f"{srv.url}/api/v1/undo", tok["alice"])[0] == 409  # nothing to undo yet
        first = call("POST", f"{srv.url}/api/v1/judgments", tok["alice"], {"assignment_id": a["assignment_id"],
                                                                           "verdict": "1", "idempotency_key": "k1"})[1]
        b = call("GET", f"{srv.url}/api/v1/next", tok["alice"])[1]
        assert b["item_id"] != a["item_id"]
        code, back = call("POST", f"{srv.url}/api/v1/undo", tok["alice"])
        assert code == 200 and back["undone"] == first["id"] and back["assignment_id"] == a["assignment_id"]
        code, second = call("POST", f"{srv.url}/api/v1/judgments", tok["alice"],
                            {"assignment_id": a["assignment_id"], "verdict": "2", "idempotency_key": "k2"})
        assert code == 200
        # the next item is the one alice was holding (b), not a new one
        assert call("GET", f"{srv.url}/api/v1/next", tok["alice"])[1]["assignment_id"] == b["assignment_id"]
        st = call("GET", f"{srv.url}/api/v1/projects/{pid}/status", admin)[1]
        assert st["judgments"] == {"done": 1, "skipped": 0, "undone": 1, "total": 1, "extra": 0}
        assert [p for p in st["progress"] if p["name"] == "alice"][0]["judged"] == 1
    rows = Store(db).judgment_rows(pid)
    assert [(r["id"], r["retracted_at"] is not None) for r in rows] == [(first["id"], True), (second["id"], False)]


def test_revoked_token_is_refused_and_rotation_gives_a_new_link(tmp_path, capsys):
    from evalsift.cli import main

    db, pid, admin, tok = fixed(tmp_path)
    with Server(db) as srv:
        assert call("GET", f"{srv.url}/api/v1/next", tok["bob"])[0] == 200
        assert main(["annotate", "revoke", "--db", str(db), "--project", "fixed", "--name", "bob"]) == 0
        assert "1 open item(s) went back" in capsys.readouterr().out
        assert call("GET", f"{srv.url}/api/v1/next", tok["bob"])[0] == 401
        assert get_text(f"{srv.url}/a/{tok['bob']}")[0] == 403
        assert main(["annotate", "rotate-token", "--db", str(db), "--project", "fixed", "--name", "bob", "--json"]) == 0
        new = json.loads(capsys.readouterr().out)["token"]
        code, a = call("GET", f"{srv.url}/api/v1/next", new)
        assert code == 200 and a["item_id"] == "i1"  # bob's i0 went back to the queue, but nobody gets a unit twice
        assert call("GET", f"{srv.url}/api/v1/next", tok["bob"])[0] == 401


def test_a_locked_store_answers_503_with_retry_after(tmp_path):
    db, pid, admin, tok = fixed(tmp_path)
    from evalsift.web.app import create_app

    import uvicorn

    port = free_port()
    server = uvicorn.Server(uvicorn.Config(create_app(db, busy_timeout=0.3), host="127.0.0.1", port=port,
                                           log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    while not server.started:
        time.sleep(0.02)
    try:
        url = f"http://127.0.0.1:{port}"
        a = call("GET", f"{url}/api/v1/next", tok["alice"])[1]
        other = sqlite3.connect(db, isolation_level=None)
        other.execute("BEGIN IMMEDIATE")  # another writer (a backup, a second tool) holds the lock
        code, headers, out = raw("POST", f"{url}/api/v1/judgments", tok["alice"],
                                 json.dumps({"assignment_id": a["assignment_id"], "verdict": "1",
                                             "idempotency_key": "k"}).encode())
        assert code == 503 and headers["Retry-After"] == "1" and "try again" in out["error"]
        other.execute("ROLLBACK")
        assert call("POST", f"{url}/api/v1/judgments", tok["alice"], {"assignment_id": a["assignment_id"],
                                                                      "verdict": "1", "idempotency_key": "k"})[0] == 200
    finally:
        server.should_exit = True
        thread.join(10)
    assert len(Store(db).judgments(pid)) == 1


def _worker(port, token, acked, stop):
    while not stop.is_set():
        try:
            code, a = call("GET", f"http://127.0.0.1:{port}/api/v1/next", token)
            if code != 200:
                time.sleep(0.05)
                continue
            if a.get("done"):
                if a.get("final"):
                    return
                time.sleep(0.05)
                continue
            key = f"k-{a['assignment_id']}"
            code, r = call("POST", f"http://127.0.0.1:{port}/api/v1/judgments", token,
                           {"assignment_id": a["assignment_id"], "verdict": "1", "idempotency_key": key})
            if code == 200:
                acked.append(r["id"])
        except (OSError, http.client.HTTPException):  # a server killed mid-answer
            return


def test_two_servers_on_one_file_never_give_an_item_twice(tmp_path):
    """Two `evalsift serve` processes on one database, six people (three on each), 300 items, overlap 1:
    every item is judged exactly once, every acknowledged judgment is stored once, and the second server
    says the first is there."""
    people = [f"p{k}" for k in range(6)]
    db, pid, admin, tok = fixed(tmp_path, n=300, people=people)
    ports = [free_port(), free_port()]
    servers = [start_server_process(db, ports[0], subprocess.PIPE), start_server_process(db, ports[1], subprocess.PIPE)]
    acked: list[int] = []
    stop = threading.Event()
    try:
        threads = [threading.Thread(target=_worker, args=(ports[k % 2], tok[p], acked, stop))
                   for k, p in enumerate(people)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(240)
    finally:
        stop.set()
        for s in servers:
            s.send_signal(signal.SIGINT)
        notes = [s.communicate(timeout=30)[1] for s in servers]
    rows = Store(db).judgment_rows(pid)
    per_item = {}
    for r in rows:
        per_item.setdefault(r["item_id"], []).append(r["annotator"])
    assert len(per_item) == 300 and max(len(v) for v in per_item.values()) == 1  # 0 items judged twice
    assert sorted(acked) == sorted(r["id"] for r in rows)  # every 200 stored, once
    assert "another evalsift serve" in notes[1] and "uses" in notes[1]
    assert Store(db).servers() == []  # both stopped cleanly and unregistered
    by_port = {p: sum(1 for r in rows if r["annotator"] == p) for p in people}
    assert all(v > 0 for v in by_port.values()), by_port


def test_kill_9_of_one_of_two_servers_loses_nothing(tmp_path):
    people = [f"p{k}" for k in range(4)]
    db, pid, admin, tok = fixed(tmp_path, n=2000, people=people)
    ports = [free_port(), free_port()]
    servers = [start_server_process(db, ports[0], subprocess.PIPE), start_server_process(db, ports[1], subprocess.PIPE)]
    acked: list[int] = []
    stop = threading.Event()
    threads = [threading.Thread(target=_worker, args=(ports[k % 2], tok[p], acked, stop)) for k, p in enumerate(people)]
    for t in threads:
        t.start()
    time.sleep(1.5)
    os.kill(servers[0].pid, signal.SIGKILL)  # mid-stream
    servers[0].wait()
    time.sleep(1.0)
    stop.set()
    for t in threads:
        t.join(30)
    servers[1].send_signal(signal.SIGINT)
    servers[1].wait(30)
    rows = Store(db).judgment_rows(pid)
    ids = [r["id"] for r in rows]
    assert set(acked) <= set(ids) and len(ids) == len(set(ids)) and len(acked) > 0
    per_item = {}
    for r in rows:
        per_item.setdefault(r["item_id"], 0)
        per_item[r["item_id"]] += 1
    assert max(per_item.values()) == 1
    assert sqlite3.connect(db).execute("PRAGMA integrity_check").fetchone()[0] == "ok"
