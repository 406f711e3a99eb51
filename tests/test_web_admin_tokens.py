"""Admin tokens that can be rotated and revoked, and an admin cookie that is not the token (issue 42).

Before: ``annotate`` had no way to change or end a project's admin token, and the admin page's cookie held
the raw token. Now ``annotate rotate-admin`` prints a new admin link and ``revoke-admin`` ends the token;
both hold at once for a server already running on the file (it reads the token's hash from the file on
every request), and the cookie holds an HMAC
of the stored token hash under a key the store keeps (migration 4, which an older file gets on opening
without any stored judgment changing). A real SQLite file, real servers on 127.0.0.1, the real CLI.
"""

from __future__ import annotations

import json
import sqlite3

import pytest

pytest.importorskip("fastapi", reason="the annotation app needs evalsift[web]")

from evalsift.cli import main  # noqa: E402
from evalsift.select import make_selector  # noqa: E402
from evalsift.store import Store, hash_token  # noqa: E402
from evalsift.store.schema import LATEST, MIGRATIONS  # noqa: E402
from evalsift.store.store import _statements  # noqa: E402
from evalsift.web import Workspace  # noqa: E402

from _web import AdminClient, Server, call, pair_pool  # noqa: E402


def test_rotate_and_revoke_the_admin_token_while_a_server_runs(tmp_path, capsys):
    db = tmp_path / "w.db"
    work = Workspace(Store(db))
    pid, old = work.create_live_pairwise("live", pair_pool(n=30), "A", "B", make_selector("random", seed=0))
    with Server(db) as srv:  # already running when the CLI (its own store connection) rotates and revokes
        admin = AdminClient(srv.url)
        assert admin.sign_in("live", old)[0] == 200
        cookie = next(c.value for c in admin.jar if c.name == f"evalsift_admin_{pid}")
        assert cookie == Store(db).admin_cookie(pid) and len(cookie) == 64 and old not in cookie
        assert 'id="decision"' in admin.get("/admin/live")[1]
        assert main(["annotate", "rotate-admin", "--db", str(db), "--project", "live", "--url", srv.url]) == 0
        out = capsys.readouterr().out
        new = out.split("(shown once): ")[1].split()[0]
        assert f"admin page: {srv.url}/admin/live#token={new}" in out and new != old
        # the old token and the page signed in with it stop working at once
        page = admin.get("/admin/live")[1]
        assert 'id="login"' in page and 'id="decision"' not in page
        assert call("GET", f"{srv.url}/api/v1/projects/live/status", old)[0] == 403
        assert call("GET", f"{srv.url}/api/v1/projects/live/status", new)[0] == 200
        assert admin.sign_in("live", old)[0] == 403 and admin.sign_in("live", new)[0] == 200
        assert 'id="decision"' in admin.get("/admin/live")[1]
        assert main(["annotate", "revoke-admin", "--db", str(db), "--project", "live"]) == 0
        assert "no longer works" in capsys.readouterr().out
        assert 'id="login"' in admin.get("/admin/live")[1]
        assert call("GET", f"{srv.url}/api/v1/projects/live/status", new)[0] == 403
        assert admin.sign_in("live", new)[0] == 403
        assert main(["annotate", "rotate-admin", "--db", str(db), "--project", "live", "--json"]) == 0
        again = json.loads(capsys.readouterr().out)
        assert call("GET", f"{srv.url}/api/v1/projects/{pid}/status", again["admin_token"])[0] == 200
        assert again["admin_url"].endswith(f"/admin/live#token={again['admin_token']}")
    raw = sqlite3.connect(db).execute("SELECT admin_token FROM projects").fetchone()[0]
    assert again["admin_token"] not in raw and len(raw) == 64  # stored hashed only
    assert main(["annotate", "rotate-admin", "--db", str(db), "--project", "nope"]) == 2
    assert "no project 'nope'" in capsys.readouterr().err


def test_a_schema_3_file_opens_migrates_and_keeps_every_judgment(tmp_path):
    """A store written before migration 4 (schema 3: projects, judgments, an undo, the queue) opens, is
    migrated in place, and its judgments table is byte-for-byte what it was; its admin token still works and
    now also revokes; the cookie key is made once and kept."""
    path = tmp_path / "old.db"
    conn = sqlite3.connect(path)  # the file as evalsift wrote it at schema 3: migrations 1-3 applied, then used
    conn.execute("CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, description TEXT NOT NULL, "
                 "applied_at TEXT NOT NULL)")
    for version, description, sql, *step in (m for m in MIGRATIONS if m[0] <= 3):
        for statement in _statements(sql):
            conn.execute(statement)
        for fn in step:
            fn(conn)
        conn.execute("INSERT INTO schema_migrations VALUES (?, ?, 't')", (version, description))
    token = "the-old-admin-token"
    conn.execute("INSERT INTO projects (id, name, kind, mode, settings, admin_token, created_at) VALUES "
                 "(1, 'old', 'pairwise', 'fixed', '{\"a\": \"A\", \"b\": \"B\"}', ?, 't')", (hash_token(token),))
    for k, who in enumerate(("alice", "bob", "carol"), 1):
        conn.execute("INSERT INTO judgments (project_id, item_id, a, b, verdict, annotator, kind, shown_order, status, "
                     "created_at, detail, stored_at) VALUES (1, ?, 'A', 'B', 'a', ?, 'human', 'ab', 'done', 't', '{}', "
                     "'t')", (f"i{k}", who))
    conn.execute("INSERT INTO retractions VALUES (3, 1, 'carol', 't')")  # carol's was undone
    conn.commit()
    conn.close()
    pid = 1
    before = sqlite3.connect(path).execute("SELECT * FROM judgments ORDER BY id").fetchall()
    st = Store(path)
    assert st.schema_version == LATEST == 5
    assert sqlite3.connect(path).execute("SELECT * FROM judgments ORDER BY id").fetchall() == before
    assert [r["counted"] for r in st.judgment_rows(pid)] == [True, True, False]  # the undone one counts not
    assert st.is_admin(pid, token) and st.admin_cookie(pid) is not None
    key = sqlite3.connect(path).execute("SELECT value FROM secrets").fetchall()
    assert len(key) == 1 and len(key[0][0]) == 64
    assert Store(path).admin_cookie(pid) == st.admin_cookie(pid)  # the same key after reopening
    st.revoke_admin(pid)
    assert not st.is_admin(pid, token) and st.admin_cookie(pid) is None and not st.is_admin_cookie(pid, "x")
    assert st.record_draw(pid, after_judgment=2, draws=1, item_id="i1", prob=0.5) == 1
    with pytest.raises(sqlite3.DatabaseError, match="append-only"):  # draws are kept as judgments are
        sqlite3.connect(path).execute("DELETE FROM draws")
