"""The SQLite store: durable acknowledgements, no lost or doubled judgments under concurrency and kill -9,
append-only judgments, hashed tokens, migrations. Real files, real processes; nothing mocked."""

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from multiprocessing import get_context
from pathlib import Path

import pytest

from evalsift.errors import ConflictError, DataError, ParameterError, StoreBusyError
from evalsift.oracle import Judgment
from evalsift.store import Store, hash_token
from evalsift.store.schema import LATEST

SRC = str(Path(__file__).resolve().parents[1] / "src")


def j(item, verdict="a", annotator="ann", **kw):
    return Judgment(item_id=item, a="A", b="B", verdict=verdict, annotator=annotator, kind="human", **kw)


def test_fresh_file_is_migrated_and_reopens(tmp_path):
    st = Store(tmp_path / "w.db")
    assert st.schema_version == LATEST
    pid, _ = st.create_project("p", kind="pairwise", mode="fixed", settings={"risk": 0.2})
    st.close()
    again = Store(tmp_path / "w.db")
    assert again.schema_version == LATEST and again.project(pid).settings == {"risk": 0.2}
    assert again.project("p").id == pid
    with pytest.raises(DataError, match="no project 'nope'.*1 \\(p\\)"):
        again.project("nope")


def test_newer_schema_is_refused(tmp_path):
    st = Store(tmp_path / "w.db")
    with st._write() as conn:
        conn.execute("INSERT INTO schema_migrations VALUES (?, 'from the future', 'x')", (LATEST + 1,))
    st.close()
    with pytest.raises(DataError, match="newer evalsift"):
        Store(tmp_path / "w.db")


def test_not_a_store(tmp_path):
    bad = tmp_path / "notes.db"
    bad.write_bytes(b"this is not sqlite" * 100)
    with pytest.raises(DataError, match="not an evalsift store"):
        Store(bad)
    with pytest.raises(DataError, match="is a folder"):
        Store(tmp_path)


def test_judgments_are_append_only_and_idempotent(tmp_path):
    st = Store(tmp_path / "w.db")
    pid, _ = st.create_project("p", kind="pairwise", mode="fixed")
    first = st.record_judgment(pid, j("i1"), idempotency_key="sub-1")
    again = st.record_judgment(pid, j("i1"), idempotency_key="sub-1")  # a double submit
    assert first == again and [x.verdict for x in st.judgments(pid)] == ["a"]
    with pytest.raises(ConflictError, match="'sub-1' was already used for judgment 1 .*verdict differ"):
        st.record_judgment(pid, j("i1", "b"), idempotency_key="sub-1")  # the same key, another answer
    assert [x.verdict for x in st.judgments(pid)] == ["a"]
    st.record_judgment(pid, j("i1", "b"), idempotency_key="sub-2")  # a correction is a new judgment
    assert [x.verdict for x in st.judgments(pid)] == ["a", "b"]
    conn = sqlite3.connect(st.path)
    with pytest.raises(sqlite3.DatabaseError, match="append-only"):
        conn.execute("UPDATE judgments SET verdict = 'tie'")
    with pytest.raises(sqlite3.DatabaseError, match="append-only"):
        conn.execute("DELETE FROM judgments")
    conn.close()
    assert [x.verdict for x in st.judgments(pid)] == ["a", "b"]
    with pytest.raises(ParameterError, match="takes a Judgment"):
        st.record_judgment(pid, {"verdict": "a"})


def test_tokens_are_stored_hashed_only(tmp_path):
    st = Store(tmp_path / "w.db")
    pid, admin = st.create_project("p", kind="pairwise", mode="fixed")
    aid, token = st.add_annotator(pid, "alice")
    assert st.annotator_by_token(token)["name"] == "alice" and st.annotator_by_token("guess") is None
    assert st.is_admin(pid, admin) and not st.is_admin(pid, token) and not st.is_admin(pid, None)
    st.close()
    raw = b"".join(p.read_bytes() for p in tmp_path.iterdir())
    assert token.encode() not in raw and admin.encode() not in raw
    assert hash_token(token).encode() in raw
    with pytest.raises(DataError, match="already has an annotator named 'alice'"):
        Store(tmp_path / "w.db").add_annotator(pid, "alice")


def test_leases_expire(tmp_path):
    st = Store(tmp_path / "w.db")
    pid, _ = st.create_project("p", kind="pairwise", mode="fixed")
    st.add_items(pid, [{"item_id": "i1", "position": 0, "input": "x", "outputs": {"A": "a", "B": "b"}}])
    aid, _ = st.add_annotator(pid, "alice")
    lid = st.lease(pid, aid, "i1", "A", "B", "ba", seconds=-1)  # already past its time
    assert st.assignments(pid, state="leased") == [] and st.assignment(lid)["state"] == "expired"
    lid2 = st.lease(pid, aid, "i1", "A", "B", "ab", seconds=60)
    st.record_judgment(pid, j("i1"), assignment_id=lid2)
    assert st.assignment(lid2)["state"] == "done"
    assert st.items(pid)[0]["outputs"] == {"A": "a", "B": "b"}


def test_llm_cache_and_export(tmp_path):
    st = Store(tmp_path / "w.db")
    cache = st.llm_cache()
    assert cache.get("k") is None
    cache.put("k", {"text": "[[A]]", "usage": {"total_tokens": 7}})
    cache.put("k", {"text": "other"})  # the first answer stays
    assert cache.get("k") == {"text": "[[A]]", "usage": {"total_tokens": 7}}
    pid, _ = st.create_project("p", kind="pairwise", mode="fixed")
    st.record_judgment(pid, j("i1", detail={"comment": "clear"}), idempotency_key="x")
    out = tmp_path / "j.jsonl"
    assert st.export_jsonl(pid, out) == 1
    row = json.loads(out.read_text())
    assert row["verdict"] == "a" and row["detail"] == {"comment": "clear"} and row["idempotency_key"] == "x"


# ------------------------------------------------------------------ concurrency and crashes (real processes)
def _writer(path, worker, n):
    st = Store(path)
    pid = st.project("p").id
    for k in range(n):
        st.record_judgment(pid, j(f"w{worker}-{k}", annotator=f"w{worker}"), idempotency_key=f"w{worker}-{k}")


def test_ten_concurrent_writers_lose_nothing(tmp_path):
    path = tmp_path / "w.db"
    st = Store(path)
    pid, _ = st.create_project("p", kind="pairwise", mode="fixed")
    ctx = get_context("spawn")
    procs = [ctx.Process(target=_writer, args=(str(path), w, 40)) for w in range(10)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(120)
    assert [p.exitcode for p in procs] == [0] * 10  # no "database is locked" in any writer
    rows = st.judgment_rows(pid)
    assert len(rows) == 400 and len({r["idempotency_key"] for r in rows}) == 400


KILL_WRITER = """
import sys
sys.path.insert(0, {src!r})
from evalsift.oracle import Judgment
from evalsift.store import Store
st = Store({path!r})
pid = st.project("p").id
k = {start}
while True:
    j = Judgment(item_id=f"i{{k}}", a="A", b="B", verdict="a", annotator="ann", kind="human")
    st.record_judgment(pid, j, idempotency_key=f"key-{{k}}")
    print(f"ack key-{{k}}", flush=True)  # acknowledged only after the commit returned
    k += 1
"""


def test_kill_9_keeps_every_acknowledged_judgment_once(tmp_path):
    path = tmp_path / "w.db"
    st = Store(path)
    pid, _ = st.create_project("p", kind="pairwise", mode="fixed")
    st.close()
    acked: set[str] = set()
    rounds = 5
    for r in range(rounds):
        # each round a new writer, started where some keys of the last round may be re-sent
        p = subprocess.Popen([sys.executable, "-c", KILL_WRITER.format(src=SRC, path=str(path), start=25 * r)],
                             stdout=subprocess.PIPE, text=True)
        lines = []
        t0 = time.time()
        while len(lines) < 30 and time.time() - t0 < 60:
            lines.append(p.stdout.readline().strip())
        os.kill(p.pid, signal.SIGKILL)  # in the middle of writing
        p.wait()
        acked |= {ln.split()[1] for ln in lines if ln.startswith("ack ")}
    st = Store(path)
    keys = [r["idempotency_key"] for r in st.judgment_rows(pid)]
    assert acked <= set(keys)  # every acknowledged judgment survived
    assert len(keys) == len(set(keys))  # none twice
    # the clients retry everything they sent: nothing is stored twice
    before = len(keys)
    for k in sorted(acked):
        st.record_judgment(pid, j(k.replace("key-", "i")), idempotency_key=k)
    assert len(st.judgment_rows(pid)) == before
    assert sqlite3.connect(path).execute("PRAGMA integrity_check").fetchone()[0] == "ok"


# ------------------------------------------------------------------ schema 2: keys, undo, the queue, files
def _queue(st, n=3, overlap=1, names=("alice", "bob")):
    """A fixed pairwise project with ``n`` items made as the app makes it (items and queue in one step)."""
    rows = [{"item_id": f"i{k}", "position": k, "input": f"q{k}", "outputs": {"A": f"a{k}", "B": f"b{k}"}}
            for k in range(n)]
    settings = {"a": "A", "b": "B", "overlap": overlap, "systems": ["A", "B"]}
    pid, _ = st.create_project("q", kind="pairwise", mode="fixed", settings=settings, items=rows,
                               units=[(r["item_id"], "A", "B") for r in rows])
    return pid, {name: st.add_annotator(pid, name)[0] for name in names}


def test_idempotency_keys_are_per_annotator_and_assignment(tmp_path):
    st = Store(tmp_path / "w.db")
    pid, who = _queue(st)
    la = st.lease_next(pid, who["alice"], seconds=60)
    lb = st.lease_next(pid, who["bob"], seconds=60)
    assert la["item_id"] == "i0" and lb["item_id"] == "i1"  # overlap 1: bob gets the next unit
    ja = st.record_judgment(pid, j("i0", annotator="alice"), idempotency_key="k", assignment_id=la["id"])
    jb = st.record_judgment(pid, j("i1", annotator="bob"), idempotency_key="k", assignment_id=lb["id"])
    assert ja != jb and len(st.judgments(pid)) == 2  # bob's "k" is bob's own submission (it was lost before)
    la2 = st.lease_next(pid, who["alice"], seconds=60)
    ja2 = st.record_judgment(pid, j("i2", annotator="alice"), idempotency_key="k", assignment_id=la2["id"])
    assert ja2 not in (ja, jb) and len(st.judgments(pid)) == 3  # alice's "k" on another assignment: stored
    assert st.record_judgment(pid, j("i0", annotator="alice"), idempotency_key="k", assignment_id=la["id"]) == ja
    with pytest.raises(ConflictError, match="already used for judgment 1"):
        st.record_judgment(pid, j("i0", "tie", annotator="alice"), idempotency_key="k", assignment_id=la["id"])
    with pytest.raises(ConflictError, match="assignment 1 .* already has judgment 1; to change it, undo it first"):
        st.record_judgment(pid, j("i0", "b", annotator="alice"), idempotency_key="k2", assignment_id=la["id"])
    assert [x.verdict for x in st.judgments(pid)] == ["a", "a", "a"]


def test_undo_marks_the_judgment_and_gives_the_item_back(tmp_path):
    st = Store(tmp_path / "w.db")
    pid, who = _queue(st, n=2)
    a = st.lease_next(pid, who["alice"], seconds=60)
    first = st.record_judgment(pid, j("i0", annotator="alice"), assignment_id=a["id"])
    assert st.queue_state(pid) == {"units": 2, "unfinished": 1, "free": 1}
    r = st.retract_last(pid, who["alice"], seconds=60)
    assert r["judgment_id"] == first and r["assignment"]["id"] == a["id"] and r["assignment"]["state"] == "leased"
    assert st.judgments(pid) == [] and st.held(pid, who["alice"])["id"] == a["id"]
    # i0 is alice's again (open), so bob is sent i1; 2 units, none finished, 1 free
    assert st.queue_state(pid) == {"units": 2, "unfinished": 2, "free": 1}
    again = st.record_judgment(pid, j("i0", "b", annotator="alice"), assignment_id=a["id"])
    rows = st.judgment_rows(pid)
    assert [(x["id"], x["verdict"], x["retracted_at"] is not None) for x in rows] == [(first, "a", True), (again, "b", False)]
    assert [x.verdict for x in st.judgments(pid)] == ["b"]
    with pytest.raises(ConflictError, match="nothing to undo"):
        st.retract_last(pid, who["bob"], seconds=60)
    conn = sqlite3.connect(st.path)
    with pytest.raises(sqlite3.DatabaseError, match="append-only"):
        conn.execute("DELETE FROM retractions")
    conn.close()
    # a skipped item that went to someone else cannot be taken back by undo
    b = st.lease_next(pid, who["bob"], seconds=60)
    st.record_judgment(pid, Judgment(item_id=b["item_id"], a="A", b="B", verdict=None, status="skipped",
                                     annotator="bob", kind="human"), assignment_id=b["id"])
    c = st.lease_next(pid, who["alice"], seconds=60)
    assert c["item_id"] == b["item_id"]
    with pytest.raises(ConflictError, match="gone to someone else"):
        st.retract_last(pid, who["bob"], seconds=60)


def test_queue_counts_hold_through_expiry_late_answers_and_revocation(tmp_path):
    st = Store(tmp_path / "w.db")
    pid, who = _queue(st, n=2, overlap=2, names=("alice", "bob", "carol"))
    a = st.lease_next(pid, who["alice"], seconds=-1)  # expires at once: i0 goes back
    assert st.queue_state(pid)["free"] == 2
    b = st.lease_next(pid, who["bob"], seconds=60)
    c = st.lease_next(pid, who["carol"], seconds=60)
    assert a["item_id"] == b["item_id"] == c["item_id"] == "i0"  # overlap 2: bob and carol both on i0
    assert st.lease_next(pid, who["alice"], seconds=60)["item_id"] == "i1"  # alice had i0 already
    st.record_judgment(pid, j("i0", annotator="alice"), assignment_id=a["id"])  # a late answer: kept, counted
    units = dict(sqlite3.connect(st.path).execute("SELECT pos, done || '/' || open FROM units").fetchall())
    assert units == {0: "1/2", 1: "0/1"}  # i0: alice done, bob and carol open; i1: alice open
    assert st.revoke_annotator(pid, "carol") == 1  # carol's lease goes back
    assert st.annotator_by_token("x") is None
    units = dict(sqlite3.connect(st.path).execute("SELECT pos, done || '/' || open FROM units").fetchall())
    assert units == {0: "1/1", 1: "0/1"}


def test_revoked_and_rotated_tokens(tmp_path):
    st = Store(tmp_path / "w.db")
    pid, _ = st.create_project("p", kind="pairwise", mode="fixed")
    _, old = st.add_annotator(pid, "alice")
    assert st.annotator_by_token(old)["name"] == "alice"
    st.revoke_annotator(pid, "alice")
    assert st.annotator_by_token(old) is None
    new = st.rotate_token(pid, "alice")
    assert st.annotator_by_token(new)["name"] == "alice" and st.annotator_by_token(old) is None
    with pytest.raises(DataError, match="no annotator named 'bob'; annotators: alice"):
        st.revoke_annotator(pid, "bob")


def test_projects_by_name_even_when_the_name_is_digits(tmp_path):
    st = Store(tmp_path / "w.db")
    first, _ = st.create_project("ab", kind="pairwise", mode="fixed")
    digits, _ = st.create_project("1", kind="pairwise", mode="fixed")  # named "1", id 2
    assert st.project("1").id == digits and st.project(1).id == first  # a string is a name first, an int an id
    assert st.project("2").id == digits  # no project named "2": the id
    with pytest.raises(DataError, match="no project '99'"):
        st.project("99")
    with pytest.raises(DataError, match="no project 99999999999999999999999"):
        st.project(99999999999999999999999)  # beyond SQLite's integers: not found, not an OverflowError


V1 = """
INSERT INTO projects VALUES (1, 'old', 'pairwise', 'fixed', '{"a": "A", "b": "B", "overlap": 2, "systems": ["A", "B"]}',
                             '{}', '{}', 'x', 't');
INSERT INTO items VALUES (1, 'i0', 0, 'q0', '{}'), (1, 'i1', 1, 'q1', '{}');
INSERT INTO annotators VALUES (1, 1, 'alice', 'h1', 't'), (2, 1, 'bob', 'h2', 't');
INSERT INTO assignments VALUES (1, 1, 'i0', 1, 'A', 'B', 'ab', 't', 0, 'done'),
                               (2, 1, 'i0', 2, 'A', 'B', 'ba', 't', 9e12, 'leased');
INSERT INTO judgments VALUES (1, 1, 'i0', 'A', 'B', 'a', 'alice', 'human', 'ab', 'done', 't', '{}', 1, 'k', 't');
"""


def test_a_schema_1_file_is_upgraded_with_its_judgments_and_queue(tmp_path):
    from evalsift.store.schema import MIGRATIONS
    from evalsift.store.store import _statements

    path = tmp_path / "old.db"
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, description TEXT NOT NULL, "
                 "applied_at TEXT NOT NULL)")
    for statement in _statements(MIGRATIONS[0][2]) + _statements(V1):
        conn.execute(statement)
    conn.execute("INSERT INTO schema_migrations VALUES (1, 'v1', 't')")
    conn.commit()
    conn.close()
    st = Store(path)
    assert st.schema_version == LATEST == 5
    rows = st.judgment_rows(1)
    assert [(r["id"], r["idempotency_key"], r["retracted_at"]) for r in rows] == [(1, "k", None)]
    # i0: alice's judgment done, bob's lease open; i1: nothing (overlap 2 on both)
    units = sqlite3.connect(path).execute("SELECT pos, item_id, need, done, open FROM units ORDER BY pos").fetchall()
    assert units == [(0, "i0", 2, 1, 1), (1, "i1", 2, 0, 0)]
    lease = st.lease_next(1, 1, seconds=60)
    assert lease["item_id"] == "i1" and lease["prob"] is None  # alice had i0; not drawn at random (migration 3)
    assert st.assignment(1)["prob"] is None
    # the key is now alice's for assignment 1: bob may use "k" too
    st.record_judgment(1, j("i0", annotator="bob"), idempotency_key="k", assignment_id=2)
    assert len(st.judgments(1)) == 2
    new = sqlite3.connect(path).execute("SELECT seq FROM sqlite_sequence WHERE name = 'judgments'").fetchone()
    assert new == (2,)  # ids go on from the old table's


def test_a_damaged_file_is_named_with_the_recovery_and_left_alone(tmp_path):
    st = Store(tmp_path / "w.db")
    pid, _ = st.create_project("p", kind="pairwise", mode="fixed")
    for k in range(300):
        st.record_judgment(pid, j(f"i{k}", detail={"comment": "x" * 200}))
    st.close()
    path = tmp_path / "w.db"
    with sqlite3.connect(path) as c:
        c.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    data = bytearray(path.read_bytes())
    page = 4096
    data[3 * page:3 * page + 600] = b"\xff" * 600  # scribble over a b-tree page
    path.write_bytes(bytes(data))
    before = path.read_bytes()
    with pytest.raises(DataError, match=r"is damaged .*sqlite3 .*\.recover \| sqlite3 recovered\.db"):
        Store(path)
    assert path.read_bytes() == before  # nothing written to it


def test_a_busy_store_says_so_and_writes_nothing(tmp_path):
    st = Store(tmp_path / "w.db", busy_timeout=0.2)
    pid, _ = st.create_project("p", kind="pairwise", mode="fixed")
    other = sqlite3.connect(tmp_path / "w.db", isolation_level=None)
    other.execute("BEGIN IMMEDIATE")  # another writer holds the lock
    try:
        with pytest.raises(StoreBusyError, match="nothing was written: try again"):
            st.record_judgment(pid, j("i1"))
    finally:
        other.execute("ROLLBACK")
    assert st.judgments(pid) == []
    st.record_judgment(pid, j("i1"))
    assert len(st.judgments(pid)) == 1


def test_a_read_only_store_can_be_read_and_exported(tmp_path, capsys):
    from evalsift.cli import main

    st = Store(tmp_path / "w.db")
    pid, who = _queue(st)
    a = st.lease_next(pid, who["alice"], seconds=60)
    st.record_judgment(pid, j("i0", annotator="alice"), assignment_id=a["id"])
    st.close()
    ro = Store(tmp_path / "w.db", read_only=True)
    assert ro.read_only and [x.verdict for x in ro.judgments(pid)] == ["a"] and ro.project("q").id == pid
    with pytest.raises(DataError, match="read-only here"):
        ro.record_judgment(pid, j("i1"))
    # status and export open the file read-only: they work on a file nobody may write, and change nothing
    db = tmp_path / "w.db"
    os.chmod(db, 0o444)  # (root may write anyway; the commands do not try)
    before = db.read_bytes()
    try:
        assert main(["annotate", "export", "--db", str(db), "--project", "q", "--out", str(tmp_path / "j.jsonl")]) == 0
        assert main(["annotate", "status", "--db", str(db), "--project", "q", "--json"]) == 0
    finally:
        os.chmod(db, 0o644)
    assert json.loads(capsys.readouterr().out)["judgments"]["done"] == 1
    assert [json.loads(x)["verdict"] for x in (tmp_path / "j.jsonl").read_text().splitlines()] == ["a"]
    assert db.read_bytes() == before


def test_two_servers_on_one_file_say_so(tmp_path):
    st = Store(tmp_path / "w.db")
    first, others = st.register_server("http://127.0.0.1:8001")
    assert others == []
    second, others = Store(tmp_path / "w.db").register_server("http://127.0.0.1:8002")
    assert [o["address"] for o in others] == ["http://127.0.0.1:8001"]
    st.unregister_server(first)
    with st._write() as conn:  # a server killed without unregistering: its row is pruned by the next one
        conn.execute("UPDATE servers SET pid = 999999999 WHERE id = ?", (second,))
    assert Store(tmp_path / "w.db").register_server("http://127.0.0.1:8003")[1] == []
