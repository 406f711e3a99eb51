"""The store: one SQLite file per workspace that keeps projects, items, annotators, assignments,
every judgment and the LLM response cache -- safely.

Safety rules (each one tested in ``tests/test_store.py``):

- **Durable acknowledgements.** The file runs in WAL mode with ``synchronous=FULL``: when
  :meth:`Store.record_judgment` returns, the judgment is committed and survives a crash or
  ``kill -9`` of the process. Nothing is acknowledged before its commit.
- **One writer at a time, without "database is locked".** Every write is a ``BEGIN IMMEDIATE``
  transaction (it takes the write lock before reading, so two writers never deadlock), and a
  connection waits up to ``busy_timeout`` seconds for the lock.
- **Append-only judgments.** The ``judgments`` table refuses ``UPDATE`` and ``DELETE`` (SQLite
  triggers): a correction is a new judgment.
- **Idempotent submissions.** A judgment may carry an ``idempotency_key`` (unique per project): the
  same submission sent twice is stored once and both calls get the same id.
- **Secrets.** Tokens (annotators', the admin's) are stored as sha256 hashes only; the store never
  sees an LLM API key.
- **Versioned schema.** Migrations in :mod:`evalsift.store.schema` are applied in order; a file from
  a newer evalsift is refused instead of being misread.

>>> import tempfile, os
>>> from evalsift.oracle import Judgment
>>> st = Store(os.path.join(tempfile.mkdtemp(), "evalsift.db"))
>>> pid, admin = st.create_project("demo", kind="pairwise", mode="fixed")
>>> j = Judgment(item_id="i1", a="A", b="B", verdict="a", annotator="ann", kind="human")
>>> st.record_judgment(pid, j, idempotency_key="k1") == st.record_judgment(pid, j, idempotency_key="k1")
True
>>> [x.verdict for x in st.judgments(pid)]
['a']
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import secrets
import sqlite3
import threading
import time
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Iterable, Iterator

from ..errors import DataError, ParameterError, check_choice
from ..oracle.base import Judgment
from .schema import LATEST, MIGRATIONS

__all__ = ["DEFAULT_DB", "Project", "Store", "hash_token"]

DEFAULT_DB = "evalsift.db"
KINDS = ("pairwise", "score")
MODES = ("live", "fixed")


def hash_token(token: str) -> str:
    """The sha256 hex digest under which a token is stored (the token itself never is).

    >>> len(hash_token("secret"))
    64
    """
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="microseconds")


@dataclass(frozen=True)
class Project:
    """A project row: what is judged (``kind``: pairwise verdicts or scores), how items are chosen
    (``mode``: ``live`` -- a Session decides -- or ``fixed`` -- a given selection), and its settings."""

    id: int
    name: str
    kind: str
    mode: str
    settings: dict[str, Any]
    selector: dict[str, Any]
    data: dict[str, Any]
    created_at: str


class Store:
    """One SQLite file (``path``; default ``./evalsift.db``) holding a workspace's projects and judgments.

    Each thread gets its own connection. ``busy_timeout`` (seconds) is how long a writer waits for
    another's transaction before giving up with a clear error.
    """

    def __init__(self, path: str | os.PathLike[str] = DEFAULT_DB, *, busy_timeout: float = 30.0) -> None:
        self.path = Path(path).expanduser()
        if self.path.is_dir():
            raise DataError(f"--db {self.path} is a folder; give a file name such as {self.path / DEFAULT_DB}",
                            field="db")
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.busy_timeout = float(busy_timeout)
        self._local = threading.local()
        self._migrate()

    # ------------------------------------------------------------------ connections and transactions
    def _conn(self) -> sqlite3.Connection:
        conn = getattr(self._local, "conn", None)
        if conn is None:
            try:
                conn = sqlite3.connect(self.path, timeout=self.busy_timeout, isolation_level=None,
                                       check_same_thread=False)
                conn.execute(f"PRAGMA busy_timeout = {int(self.busy_timeout * 1000)}")
                conn.execute("PRAGMA journal_mode = WAL")
                conn.execute("PRAGMA synchronous = FULL")
                conn.execute("PRAGMA foreign_keys = ON")
            except sqlite3.DatabaseError as e:
                raise DataError(f"{self.path} is not an evalsift store ({e}); give another --db file") from None
            conn.row_factory = sqlite3.Row
            self._local.conn = conn
        return conn

    @contextlib.contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        """A ``BEGIN IMMEDIATE`` transaction: committed when the block ends, rolled back on an error."""
        conn = self._conn()
        try:
            conn.execute("BEGIN IMMEDIATE")
        except sqlite3.OperationalError as e:
            raise DataError(f"{self.path}: could not start a write ({e}) after waiting {self.busy_timeout:g} s for "
                            "another writer; try again") from None
        try:
            yield conn
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        conn.execute("COMMIT")

    def close(self) -> None:
        """Close this thread's connection (others close when their threads end)."""
        conn = getattr(self._local, "conn", None)
        if conn is not None:
            conn.close()
            self._local.conn = None

    def _migrate(self) -> None:
        with self._write() as conn:
            conn.execute("CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, "
                         "description TEXT NOT NULL, applied_at TEXT NOT NULL)")
            done = {r[0] for r in conn.execute("SELECT version FROM schema_migrations")}
        newer = [v for v in done if v > LATEST]
        if newer:
            raise DataError(f"{self.path} was written by a newer evalsift (schema version {max(newer)}; this one knows "
                            f"up to {LATEST}); upgrade evalsift to use it")
        for version, description, sql in MIGRATIONS:
            if version in done:
                continue
            with self._write() as conn:
                if conn.execute("SELECT 1 FROM schema_migrations WHERE version = ?", (version,)).fetchone():
                    continue  # another process applied it meanwhile
                for statement in _statements(sql):
                    conn.execute(statement)
                conn.execute("INSERT INTO schema_migrations VALUES (?, ?, ?)", (version, description, _now()))

    @property
    def schema_version(self) -> int:
        """The highest migration applied to this file."""
        return int(self._conn().execute("SELECT MAX(version) FROM schema_migrations").fetchone()[0])

    # ------------------------------------------------------------------ projects
    def create_project(self, name: str, *, kind: str, mode: str, settings: dict[str, Any] | None = None,
                       selector: dict[str, Any] | None = None, data: dict[str, Any] | None = None) -> tuple[int, str]:
        """Create a project; returns ``(project id, admin token)`` -- the token is shown once, stored hashed."""
        check_choice("kind", kind, KINDS, where="project")
        check_choice("mode", mode, MODES, where="project")
        if not name or not str(name).strip():
            raise ParameterError("a project needs a name (--name)", field="name")
        token = secrets.token_urlsafe(24)
        with self._write() as conn:
            if conn.execute("SELECT 1 FROM projects WHERE name = ?", (name,)).fetchone():
                raise DataError(f"a project named {name!r} already exists in {self.path}; choose another --name",
                                field="name")
            cur = conn.execute(
                "INSERT INTO projects (name, kind, mode, settings, selector, data, admin_token, created_at) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (name, kind, mode, _dumps(settings or {}), _dumps(selector or {}), _dumps(data or {}),
                 hash_token(token), _now()))
        return int(cur.lastrowid), token

    def project(self, project: int | str) -> Project:
        """A project by id or name; DataError listing the projects when it does not exist."""
        conn = self._conn()
        key = "id" if isinstance(project, int) or str(project).isdigit() else "name"
        row = conn.execute(f"SELECT * FROM projects WHERE {key} = ?", (project,)).fetchone()
        if row is None:
            names = [f"{r['id']} ({r['name']})" for r in conn.execute("SELECT id, name FROM projects ORDER BY id")]
            raise DataError(f"no project {project!r} in {self.path}; projects: {', '.join(names) or '(none)'}",
                            field="project")
        return Project(id=row["id"], name=row["name"], kind=row["kind"], mode=row["mode"],
                       settings=json.loads(row["settings"]), selector=json.loads(row["selector"]),
                       data=json.loads(row["data"]), created_at=row["created_at"])

    def projects(self) -> list[Project]:
        """Every project, oldest first."""
        return [self.project(int(r[0])) for r in self._conn().execute("SELECT id FROM projects ORDER BY id")]

    def is_admin(self, project_id: int, token: str | None) -> bool:
        """True when ``token`` is the project's admin token (compared as hashes, in constant time)."""
        if not token:
            return False
        row = self._conn().execute("SELECT admin_token FROM projects WHERE id = ?", (project_id,)).fetchone()
        return row is not None and secrets.compare_digest(row[0], hash_token(token))

    # ------------------------------------------------------------------ items and outputs
    def add_items(self, project_id: int, rows: Iterable[dict[str, Any]]) -> int:
        """Store items with the outputs they will be shown with: each row ``{item_id, position,
        input, outputs: {system: text}, meta}``. Existing items are left as they are. Returns how many
        were added."""
        added = 0
        with self._write() as conn:
            for r in rows:
                cur = conn.execute("INSERT OR IGNORE INTO items (project_id, item_id, position, input, meta) "
                                   "VALUES (?, ?, ?, ?, ?)", (project_id, str(r["item_id"]), int(r["position"]),
                                                              r.get("input"), _dumps(r.get("meta") or {})))
                added += cur.rowcount
                for system, text in (r.get("outputs") or {}).items():
                    conn.execute("INSERT OR IGNORE INTO outputs (project_id, item_id, system, output) VALUES "
                                 "(?, ?, ?, ?)", (project_id, str(r["item_id"]), system, text))
        return added

    def items(self, project_id: int) -> list[dict[str, Any]]:
        """The project's items in position order, each with its outputs."""
        conn = self._conn()
        outs: dict[str, dict[str, str | None]] = {}
        for r in conn.execute("SELECT item_id, system, output FROM outputs WHERE project_id = ?", (project_id,)):
            outs.setdefault(r["item_id"], {})[r["system"]] = r["output"]
        return [{"item_id": r["item_id"], "position": r["position"], "input": r["input"], "meta": json.loads(r["meta"]),
                 "outputs": outs.get(r["item_id"], {})}
                for r in conn.execute("SELECT * FROM items WHERE project_id = ? ORDER BY position", (project_id,))]

    # ------------------------------------------------------------------ annotators
    def add_annotator(self, project_id: int, name: str) -> tuple[int, str]:
        """Add an annotator; returns ``(annotator id, token)`` -- the token is shown once, stored hashed."""
        self.project(project_id)
        if not name or not str(name).strip():
            raise ParameterError("an annotator needs a name (--name)", field="name")
        token = secrets.token_urlsafe(24)
        with self._write() as conn:
            if conn.execute("SELECT 1 FROM annotators WHERE project_id = ? AND name = ?", (project_id, name)).fetchone():
                raise DataError(f"project {project_id} already has an annotator named {name!r}", field="name")
            cur = conn.execute("INSERT INTO annotators (project_id, name, token, created_at) VALUES (?, ?, ?, ?)",
                               (project_id, name, hash_token(token), _now()))
        return int(cur.lastrowid), token

    def annotator_by_token(self, token: str | None) -> dict[str, Any] | None:
        """``{id, project_id, name}`` of the annotator holding ``token``, or None."""
        if not token:
            return None
        row = self._conn().execute("SELECT id, project_id, name FROM annotators WHERE token = ?",
                                   (hash_token(token),)).fetchone()
        return None if row is None else dict(row)

    def annotators(self, project_id: int) -> list[dict[str, Any]]:
        """``{id, name, created_at}`` of the project's annotators."""
        return [dict(r) for r in self._conn().execute(
            "SELECT id, name, created_at FROM annotators WHERE project_id = ? ORDER BY id", (project_id,))]

    # ------------------------------------------------------------------ assignments (leases)
    def lease(self, project_id: int, annotator_id: int, item_id: str, a: str, b: str | None, shown_order: str,
              seconds: float) -> int:
        """Record that ``annotator_id`` was given ``item_id`` until now + ``seconds``; returns the assignment id."""
        with self._write() as conn:
            cur = conn.execute(
                "INSERT INTO assignments (project_id, item_id, annotator_id, a, b, shown_order, leased_at, expires_at) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (project_id, item_id, annotator_id, a, b, shown_order, _now(), time.time() + float(seconds)))
        return int(cur.lastrowid)

    def assignments(self, project_id: int, *, state: str | None = None,
                    annotator_id: int | None = None) -> list[dict[str, Any]]:
        """Assignments of a project (expired leases are marked expired first)."""
        self.expire_leases(project_id)
        sql, args = "SELECT * FROM assignments WHERE project_id = ?", [project_id]
        if state is not None:
            sql, args = sql + " AND state = ?", args + [state]
        if annotator_id is not None:
            sql, args = sql + " AND annotator_id = ?", args + [annotator_id]
        return [dict(r) for r in self._conn().execute(sql + " ORDER BY id", args)]

    def assignment(self, assignment_id: int) -> dict[str, Any] | None:
        """One assignment by id, or None."""
        row = self._conn().execute("SELECT * FROM assignments WHERE id = ?", (assignment_id,)).fetchone()
        return None if row is None else dict(row)

    def expire_leases(self, project_id: int, now: float | None = None) -> int:
        """Mark leases past their time as expired (their items go back to the queue); returns how many."""
        now = time.time() if now is None else now
        conn = self._conn()
        if not conn.execute("SELECT 1 FROM assignments WHERE project_id = ? AND state = 'leased' AND expires_at < ? "
                            "LIMIT 1", (project_id, now)).fetchone():
            return 0
        with self._write() as conn:
            return conn.execute("UPDATE assignments SET state = 'expired' WHERE project_id = ? AND state = 'leased' "
                                "AND expires_at < ?", (project_id, now)).rowcount

    # ------------------------------------------------------------------ judgments
    def record_judgment(self, project_id: int, judgment: Judgment, *, idempotency_key: str | None = None,
                        assignment_id: int | None = None) -> int:
        """Append ``judgment``; returns its id once committed.

        With an ``idempotency_key`` already stored for this project, nothing is written and the
        earlier judgment's id comes back (a double submit is stored once). With an
        ``assignment_id``, the assignment is marked done in the same transaction.
        """
        if not isinstance(judgment, Judgment):
            raise ParameterError(f"record_judgment takes a Judgment, got {type(judgment).__name__}")
        with self._write() as conn:
            if idempotency_key is not None:
                row = conn.execute("SELECT id FROM judgments WHERE project_id = ? AND idempotency_key = ?",
                                   (project_id, idempotency_key)).fetchone()
                if row is not None:
                    return int(row[0])
            cur = conn.execute(
                "INSERT INTO judgments (project_id, item_id, a, b, verdict, annotator, kind, shown_order, status, "
                "created_at, detail, assignment_id, idempotency_key, stored_at) VALUES "
                "(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (project_id, judgment.item_id, judgment.a, judgment.b, judgment.verdict, judgment.annotator,
                 judgment.kind, judgment.shown_order, judgment.status, judgment.created_at, _dumps(judgment.detail),
                 assignment_id, idempotency_key, _now()))
            if assignment_id is not None:
                conn.execute("UPDATE assignments SET state = 'done' WHERE id = ?", (assignment_id,))
        return int(cur.lastrowid)

    def judgments(self, project_id: int, *, since_id: int = 0) -> list[Judgment]:
        """The project's judgments in the order they were stored (ids above ``since_id``)."""
        return [j for _, j in self.judgments_with_ids(project_id, since_id=since_id)]

    def judgments_with_ids(self, project_id: int, *, since_id: int = 0) -> list[tuple[int, Judgment]]:
        """``(store id, Judgment)`` pairs in the order they were stored (ids above ``since_id``)."""
        rows = self._conn().execute("SELECT * FROM judgments WHERE project_id = ? AND id > ? ORDER BY id",
                                    (project_id, since_id))
        return [(int(r["id"]), _judgment(r)) for r in rows]

    def judgment_rows(self, project_id: int) -> list[dict[str, Any]]:
        """The stored rows (with id, assignment, idempotency key and store time), for export and audit."""
        return [{**dict(r), "detail": json.loads(r["detail"])} for r in self._conn().execute(
            "SELECT * FROM judgments WHERE project_id = ? ORDER BY id", (project_id,))]

    # ------------------------------------------------------------------ LLM response cache
    def llm_cache(self) -> "LLMResponseCache":
        """The cache of LLM responses in this store (``get(key)`` / ``put(key, value)``)."""
        return LLMResponseCache(self)

    # ------------------------------------------------------------------ export
    def export_jsonl(self, project_id: int, path: str | os.PathLike[str]) -> int:
        """Write the project's judgments as JSON lines (our judgment records plus the store's id, assignment
        and time); returns how many."""
        rows = self.judgment_rows(project_id)
        with open(path, "w", encoding="utf-8") as f:
            for r in rows:
                f.write(json.dumps(r, ensure_ascii=False) + "\n")
        return len(rows)


class LLMResponseCache:
    """LLM responses stored in the store's ``llm_cache`` table, keyed by a hash of model + messages +
    parameters. Implements the ``get`` / ``put`` cache protocol of the LLM judge."""

    def __init__(self, store: Store) -> None:
        self.store = store

    def get(self, key: str) -> dict[str, Any] | None:
        """The cached response for ``key``, or None."""
        row = self.store._conn().execute("SELECT response FROM llm_cache WHERE key = ?", (key,)).fetchone()
        return None if row is None else json.loads(row[0])

    def put(self, key: str, value: dict[str, Any]) -> None:
        """Store a response (a second put of the same key keeps the first)."""
        with self.store._write() as conn:
            conn.execute("INSERT OR IGNORE INTO llm_cache (key, response, created_at) VALUES (?, ?, ?)",
                         (key, _dumps(value), _now()))

    def replace(self, key: str, value: dict[str, Any]) -> None:
        """Store a response in place of the one under ``key`` (an answer without a usable verdict, asked again)."""
        with self.store._write() as conn:
            conn.execute("INSERT OR REPLACE INTO llm_cache (key, response, created_at) VALUES (?, ?, ?)",
                         (key, _dumps(value), _now()))


def _judgment(r: sqlite3.Row) -> Judgment:
    return Judgment(item_id=r["item_id"], a=r["a"], b=r["b"], verdict=r["verdict"], annotator=r["annotator"],
                    kind=r["kind"], shown_order=r["shown_order"], status=r["status"], created_at=r["created_at"],
                    detail=json.loads(r["detail"]))


def _dumps(value: Any) -> str:
    from ..io._common import json_default

    return json.dumps(value, ensure_ascii=False, default=json_default, sort_keys=True)


def _statements(sql: str) -> list[str]:
    """Split a migration script into statements (triggers keep their BEGIN ... END body)."""
    out, buf = [], []
    for line in sql.strip().splitlines():
        buf.append(line)
        text = "\n".join(buf).strip()
        if sqlite3.complete_statement(text):
            out.append(text)
            buf = []
    if "\n".join(buf).strip():
        out.append("\n".join(buf).strip())
    return out
