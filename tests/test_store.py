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

from evalsift.errors import ConflictError, DataError, ParameterError
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
