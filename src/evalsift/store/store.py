"""The :class:`Store`: one SQLite file per workspace (see :mod:`evalsift.store` for its safety rules)."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import secrets
import socket
import sqlite3
import threading
import time
from collections import Counter
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Sequence

from ..errors import (ConflictError, DataError, ParameterError, StoreBusyError, StoreFullError, StoreMovedError,
                      check_choice)
from ..oracle.base import Judgment
from .schema import LATEST, MIGRATIONS

DEFAULT_DB = "evalsift.db"
KINDS = ("pairwise", "score")
ROLES = ("annotator", "adjudicator")
MODES = ("live", "fixed")  # an arena project is pairwise and live, with settings["arena"]
INT64 = (-(2 ** 63), 2 ** 63 - 1)
SQLITE_MAGIC = b"SQLite format 3\x00"
ADJUDICATOR_KIND = "adjudicator"
"""The kind of an adjudicator's judgment: the verdict that counts for a disputed item (never an overlap slot)."""


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
    another's transaction before giving up with :class:`~evalsift.errors.StoreBusyError` (nothing
    written; try again). A file this process may not write is opened **read-only**: everything can be
    read and exported, and a write says why it cannot happen. ``read_only=True`` asks for that mode.
    """

    def __init__(self, path: str | os.PathLike[str] = DEFAULT_DB, *, busy_timeout: float = 30.0,
                 read_only: bool = False) -> None:
        self.path = Path(path).expanduser()
        if self.path.is_dir():
            raise DataError(f"--db {self.path} is a folder; give a file name such as {self.path / DEFAULT_DB}",
                            field="db")
        if not self.path.exists() and read_only:
            raise DataError(f"--db {self.path} does not exist", field="db")
        self.read_only = bool(read_only) or (self.path.exists() and not os.access(self.path, os.W_OK))
        if not self.read_only:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        self.busy_timeout = float(busy_timeout)
        self._local = threading.local()
        self._ident: tuple[int, int] | None = None  # (device, inode) of the file this Store opened first
        self._check_file()
        if self.read_only:
            self._check_readable_schema()
        else:
            self._migrate()

    # ------------------------------------------------------------------ connections and transactions
    def _conn(self) -> sqlite3.Connection:
        conn = getattr(self._local, "conn", None)
        if conn is None:
            try:
                conn = self._open()
            except sqlite3.DatabaseError as e:
                raise self._damaged(e) from None
            conn.row_factory = sqlite3.Row
            self._local.conn = conn
        return conn

    def _open(self) -> sqlite3.Connection:
        if self.read_only:
            uri = f"{self.path.resolve().as_uri()}?mode=ro"
            try:
                conn = sqlite3.connect(uri, uri=True, timeout=self.busy_timeout, isolation_level=None,
                                       check_same_thread=False)
                conn.execute("SELECT COUNT(*) FROM sqlite_master").fetchone()
            except sqlite3.OperationalError:  # a WAL file whose -shm cannot be made here: read it as it is
                conn = sqlite3.connect(f"{self.path.resolve().as_uri()}?immutable=1", uri=True,
                                       isolation_level=None, check_same_thread=False)
            conn.execute(f"PRAGMA busy_timeout = {int(self.busy_timeout * 1000)}")
            return conn
        conn = sqlite3.connect(self.path, timeout=self.busy_timeout, isolation_level=None, check_same_thread=False)
        conn.execute(f"PRAGMA busy_timeout = {int(self.busy_timeout * 1000)}")
        conn.execute("PRAGMA journal_mode = WAL")
        conn.execute("PRAGMA synchronous = FULL")
        conn.execute("PRAGMA foreign_keys = ON")
        try:
            self._check_same_file()  # a later thread's connection must open the file the first one did
        except StoreMovedError:
            conn.close()
            raise
        return conn

    def _check_same_file(self) -> None:
        """StoreMovedError unless :attr:`path` still names the file this Store opened first (same device and
        inode). A file deleted or replaced (``rm``, ``mv backup.db work.db``) under a running process would
        otherwise take writes into an unlinked inode that vanish when the process ends."""
        try:
            st = os.stat(self.path)
            now: tuple[int, int] | None = (st.st_dev, st.st_ino)
        except FileNotFoundError:
            now = None
        if self._ident is None and now is not None:
            self._ident = now
            return
        if now == self._ident:
            return
        what = "was deleted" if now is None else f"was replaced by another file (inode {now[1]}, was {self._ident[1]})"
        raise StoreMovedError(
            f"{self.path} {what} while this process had it open; nothing was written, and nothing will be until "
            f"the file this process opened is back at {self.path} or the process (evalsift serve) is restarted on "
            "the file you want", field="db", hint="restart")

    def _damaged(self, e: Exception) -> DataError:
        """The error for a file SQLite cannot read: not a store at all, or a damaged one (with the recovery)."""
        try:
            with open(self.path, "rb") as f:
                head = f.read(16)
        except OSError:
            head = b""
        if head != SQLITE_MAGIC and self.path.exists() and self.path.stat().st_size > 0:
            return DataError(f"{self.path} is not an evalsift store ({e}); give another --db file", field="db")
        reason = " ".join(str(e).split())
        return DataError(
            f"{self.path} is damaged ({reason}). Nothing was changed. To recover what can be read: "
            f"`sqlite3 {self.path} .recover | sqlite3 recovered.db`, then use --db recovered.db "
            f"(keep the damaged file until you have checked the recovered one)", field="db")

    def _check_file(self) -> None:
        """Refuse files that are not SQLite, and name damaged ones, before anything is written."""
        if not self.path.exists() or self.path.stat().st_size == 0:
            return
        try:
            row = self._conn().execute("PRAGMA quick_check(1)").fetchone()
        except sqlite3.DatabaseError as e:
            raise self._damaged(e) from None
        if row is None or row[0] != "ok":
            raise self._damaged(Exception(f"integrity check: {row[0] if row else 'no answer'}"))

    @contextlib.contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """A ``BEGIN IMMEDIATE`` transaction on this thread's connection: committed when the block ends,
        rolled back on an error. Nested use joins the outer transaction (so several store calls can be
        one atomic step). StoreBusyError when another writer holds the lock past ``busy_timeout``."""
        if self.read_only:
            raise DataError(f"{self.path} is read-only here (no write permission, or opened read_only): it can be "
                            "read and exported; to write, use a writable copy or fix its permissions", field="db")
        conn = self._conn()
        if conn.in_transaction:
            yield conn
            return
        try:
            conn.execute("BEGIN IMMEDIATE")
        except sqlite3.OperationalError as e:
            raise self._busy(e) from None
        except sqlite3.DatabaseError as e:
            raise self._damaged(e) from None
        try:
            self._check_same_file()  # before anything is read for the write: the fault is named first
            yield conn
            self._check_same_file()  # never acknowledge a write into a file that is no longer at the path
        except sqlite3.OperationalError as e:
            _rollback(conn)
            raise self._write_failed(e) from None
        except BaseException:
            _rollback(conn)
            raise
        try:
            conn.execute("COMMIT")
        except sqlite3.OperationalError as e:
            _rollback(conn)  # SQLite may have rolled back already: a failing ROLLBACK must not hide the cause
            raise self._write_failed(e) from None

    _write = transaction  # the name the rest of the package has used

    @contextlib.contextmanager
    def snapshot(self) -> Iterator[sqlite3.Connection]:
        """A read transaction: every read in the block sees the file as of one moment (what other writers
        commit meanwhile is not seen). Inside :meth:`transaction` it joins that one. Works read-only."""
        conn = self._conn()
        if conn.in_transaction:
            yield conn
            return
        conn.execute("BEGIN")
        try:
            yield conn
        finally:
            _rollback(conn)  # nothing was written: ending the read

    def _write_failed(self, e: sqlite3.OperationalError) -> DataError:
        """The error for a write SQLite refused: the disk (full or failing), a lock, or something else."""
        text = str(e).lower()
        if "full" in text or "disk i/o" in text:
            why = "the disk is full" if "full" in text else "the disk failed"
            return StoreFullError(f"{self.path}: the write failed because {why} ({e}); nothing was written. Free space on the disk that holds {self.path.parent} "
                                  "(or move the store), then try again", field="db", hint="free disk space")
        return self._busy(e)

    def _busy(self, e: Exception) -> DataError:
        if "locked" in str(e) or "busy" in str(e):
            return StoreBusyError(f"{self.path}: another writer held the store for {self.busy_timeout:g} s ({e}); "
                                  "nothing was written: try again", field="db", hint="retry")
        return DataError(f"{self.path}: could not write ({e})", field="db")

    def close(self) -> None:
        """Close this thread's connection (others close when their threads end)."""
        conn = getattr(self._local, "conn", None)
        if conn is not None:
            conn.close()
            self._local.conn = None

    def _applied(self) -> set[int]:
        conn = self._conn()
        if not conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'schema_migrations'").fetchone():
            return set()
        return {r[0] for r in conn.execute("SELECT version FROM schema_migrations")}

    def _refuse_newer(self, done: set[int]) -> None:
        newer = [v for v in done if v > LATEST]
        if newer:
            raise DataError(f"{self.path} was written by a newer evalsift (schema version {max(newer)}; this one knows "
                            f"up to {LATEST}); upgrade evalsift to use it")

    def _check_readable_schema(self) -> None:
        done = self._applied()
        self._refuse_newer(done)
        if not done:
            raise DataError(f"{self.path} is not an evalsift store (no schema), and it is read-only here", field="db")

    def _migrate(self) -> None:
        with self._write() as conn:
            conn.execute("CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, "
                         "description TEXT NOT NULL, applied_at TEXT NOT NULL)")
            done = {r[0] for r in conn.execute("SELECT version FROM schema_migrations")}
        self._refuse_newer(done)
        for version, description, sql, *step in MIGRATIONS:
            if version in done:
                continue
            with self._write() as conn:
                if conn.execute("SELECT 1 FROM schema_migrations WHERE version = ?", (version,)).fetchone():
                    continue  # another process applied it meanwhile
                for statement in _statements(sql):
                    conn.execute(statement)
                for fn in step:
                    fn(conn)
                conn.execute("INSERT INTO schema_migrations VALUES (?, ?, ?)", (version, description, _now()))

    @property
    def schema_version(self) -> int:
        """The highest migration applied to this file."""
        return int(self._conn().execute("SELECT MAX(version) FROM schema_migrations").fetchone()[0])

    def _has(self, table: str) -> bool:
        """Whether ``table`` exists (a read-only file of an older schema may lack the newer ones)."""
        return self._conn().execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?",
                                    (table,)).fetchone() is not None

    # ------------------------------------------------------------------ projects
    def create_project(self, name: str, *, kind: str, mode: str, settings: dict[str, Any] | None = None,
                       selector: dict[str, Any] | None = None, data: dict[str, Any] | None = None,
                       items: Iterable[dict[str, Any]] | None = None,
                       units: Sequence[tuple[str, str, str]] | None = None) -> tuple[int, str]:
        """Create a project; returns ``(project id, admin token)`` -- the token is shown once, stored hashed.

        With ``items`` (rows as :meth:`add_items` takes them) and ``units`` (the queue: ``(item_id, a,
        b)`` in order, ``b`` '' for scores), the project, its items and its queue are written in one
        transaction: a failure leaves no half-made project."""
        check_choice("kind", kind, KINDS, where="project")
        check_choice("mode", mode, MODES, where="project")
        if not name or not str(name).strip():
            raise ParameterError("a project needs a name (--name)", field="name")
        token = secrets.token_urlsafe(24)
        settings = dict(settings or {})
        with self._write() as conn:
            if conn.execute("SELECT 1 FROM projects WHERE name = ?", (name,)).fetchone():
                raise DataError(f"a project named {name!r} already exists in {self.path}; choose another --name",
                                field="name")
            cur = conn.execute(
                "INSERT INTO projects (name, kind, mode, settings, selector, data, admin_token, created_at) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (name, kind, mode, _dumps(settings), _dumps(selector or {}), _dumps(data or {}),
                 hash_token(token), _now()))
            pid = int(cur.lastrowid)
            if items is not None:
                self.add_items(pid, items)
            if units is not None:
                need = int(settings.get("overlap", 1))
                conn.executemany("INSERT INTO units (project_id, pos, item_id, a, b, need) VALUES (?, ?, ?, ?, ?, ?)",
                                 [(pid, k, str(i), a, b or "", need) for k, (i, a, b) in enumerate(units)])
        return pid, token

    def project(self, project: int | str) -> Project:
        """A project by id (an int) or by name (a string); a string of digits that names no project is
        taken as an id. DataError listing the projects when it does not exist."""
        conn = self._conn()
        row, given = None, project
        if isinstance(project, str):
            row = conn.execute("SELECT * FROM projects WHERE name = ?", (project,)).fetchone()
            if row is None and project.strip().isdigit():
                project = int(project)
        if row is None and isinstance(project, int) and not isinstance(project, bool) and \
                INT64[0] <= project <= INT64[1]:
            row = conn.execute("SELECT * FROM projects WHERE id = ?", (project,)).fetchone()
        if row is None:
            names = [f"{r['id']} ({r['name']})" for r in conn.execute("SELECT id, name FROM projects ORDER BY id")]
            raise DataError(f"no project {given!r} in {self.path}; projects: {', '.join(names) or '(none)'}",
                            field="project")
        return Project(id=row["id"], name=row["name"], kind=row["kind"], mode=row["mode"],
                       settings=json.loads(row["settings"]), selector=json.loads(row["selector"]),
                       data=json.loads(row["data"]), created_at=row["created_at"])

    def projects(self) -> list[Project]:
        """Every project, oldest first."""
        return [self.project(int(r[0])) for r in self._conn().execute("SELECT id FROM projects ORDER BY id")]

    def is_admin(self, project_id: int, token: str | None) -> bool:
        """True when ``token`` is the project's admin token and it was not revoked (compared as hashes, in
        constant time). Read from the file on every call, so a rotation or a revocation by another process
        (``annotate rotate-admin`` while ``serve`` runs) holds at once."""
        if not token or not isinstance(token, str):
            return False
        stored = self._admin_hash(project_id)
        return stored is not None and secrets.compare_digest(stored, hash_token(token))

    def _admin_hash(self, project_id: int) -> str | None:
        """The stored hash of the project's admin token; None when there is no such project or it was revoked."""
        revoked = ", admin_revoked_at" if self._has("secrets") else ", NULL"
        row = self._conn().execute(f"SELECT admin_token{revoked} FROM projects WHERE id = ?", (project_id,)).fetchone()
        return None if row is None or row[1] is not None else str(row[0])

    def rotate_admin(self, project_id: int) -> str:
        """A new admin token for the project (returned once, stored hashed); the old token and every admin
        cookie signed with it stop working at once, in every server on this file. Ends a revocation."""
        token = secrets.token_urlsafe(24)
        with self._write() as conn:
            if conn.execute("UPDATE projects SET admin_token = ?, admin_revoked_at = NULL WHERE id = ?",
                            (hash_token(token), project_id)).rowcount != 1:
                raise DataError(f"no project {project_id} in {self.path}", field="project")
        return token

    def revoke_admin(self, project_id: int) -> None:
        """Revoke the project's admin token: it and every admin cookie stop working at once (the status API
        and the admin page answer 403 / the sign-in page); :meth:`rotate_admin` gives a new one."""
        with self._write() as conn:
            if conn.execute("UPDATE projects SET admin_revoked_at = ? WHERE id = ?", (_now(), project_id)).rowcount != 1:
                raise DataError(f"no project {project_id} in {self.path}", field="project")

    def admin_cookie(self, project_id: int) -> str | None:
        """What the admin page's cookie holds once the admin signed in: an HMAC-SHA256, under a key this store
        keeps (``secrets``), of the project and the stored hash of its admin token -- never the token. It stops
        matching when the token is rotated or revoked. None when the token was revoked."""
        import hmac

        stored = self._admin_hash(project_id)
        if stored is None:
            return None
        return hmac.new(self._cookie_key(), f"evalsift-admin|{project_id}|{stored}".encode(), hashlib.sha256).hexdigest()

    def is_admin_cookie(self, project_id: int, value: str | None) -> bool:
        """True when ``value`` is the project's admin cookie now (:meth:`admin_cookie`; constant-time)."""
        if not value or not isinstance(value, str):
            return False
        want = self.admin_cookie(project_id)
        return want is not None and secrets.compare_digest(want, value)

    def _cookie_key(self) -> bytes:
        """The key admin cookies are signed with: the store's own (made by migration 4); for an older file
        opened read-only, one for this process only (its cookies end with it)."""
        key = getattr(self, "_admin_key", None)
        if key is None:
            row = (self._conn().execute("SELECT value FROM secrets WHERE name = 'admin_cookie_key'").fetchone()
                   if self._has("secrets") else None)
            key = self._admin_key = bytes.fromhex(row[0]) if row is not None else secrets.token_bytes(32)
        return key

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
                conn.executemany("INSERT OR IGNORE INTO outputs (project_id, item_id, system, output) VALUES "
                                 "(?, ?, ?, ?)", [(project_id, str(r["item_id"]), system, text)
                                                  for system, text in (r.get("outputs") or {}).items()])
        return added

    def items(self, project_id: int) -> list[dict[str, Any]]:
        """The project's items in position order, each with its outputs."""
        conn = self._conn()
        outs: dict[str, dict[str, str | None]] = {}
        for r in conn.execute("SELECT item_id, system, output FROM outputs WHERE project_id = ?", (project_id,)):
            outs.setdefault(r["item_id"], {})[r["system"]] = r["output"]
        return [{"item_id": r["item_id"], "position": r["position"], "input": r["input"], "meta": json.loads(r["meta"]),
                 "outputs": outs.get(r["item_id"], {})}
                for r in conn.execute(f"SELECT * FROM items WHERE project_id = ?{self._not_gold()} ORDER BY position",
                                      (project_id,))]

    def _not_gold(self, column: str = "item_id") -> str:
        """SQL that leaves a project's gold items out of its items (they are rows of ``items`` so that a gold
        assignment is an assignment like the others; the project's pool never holds them)."""
        return (f" AND {column} NOT IN (SELECT g.item_id FROM gold_items g WHERE g.project_id = items.project_id)"
                if self._has("gold_items") else "")

    def item(self, project_id: int, item_id: str) -> dict[str, Any] | None:
        """One item with its outputs (as :meth:`items` gives them), or None -- without reading the rest."""
        conn = self._conn()
        r = conn.execute("SELECT * FROM items WHERE project_id = ? AND item_id = ?", (project_id, item_id)).fetchone()
        if r is None:
            return None
        outs = {o["system"]: o["output"] for o in conn.execute(
            "SELECT system, output FROM outputs WHERE project_id = ? AND item_id = ?", (project_id, item_id))}
        return {"item_id": r["item_id"], "position": r["position"], "input": r["input"], "meta": json.loads(r["meta"]),
                "outputs": outs}

    def item_count(self, project_id: int) -> int:
        """How many items the project holds."""
        return int(self._conn().execute(f"SELECT COUNT(*) FROM items WHERE project_id = ?{self._not_gold()}",
                                        (project_id,)).fetchone()[0])

    # ------------------------------------------------------------------ annotators
    def add_annotator(self, project_id: int, name: str, *, role: str = "annotator") -> tuple[int, str]:
        """Add an annotator; returns ``(annotator id, token)`` -- the token is shown once, stored hashed.
        ``role``: ``annotator`` (judges the queue) or ``adjudicator`` (judges the items the project's
        adjudication rule sends to its queue; their verdict is what counts for those items)."""
        self.project(project_id)
        check_choice("role", role, ROLES, where="add-annotator")
        if not name or not str(name).strip():
            raise ParameterError("an annotator needs a name (--name)", field="name")
        token = secrets.token_urlsafe(24)
        with self._write() as conn:
            if conn.execute("SELECT 1 FROM annotators WHERE project_id = ? AND name = ?", (project_id, name)).fetchone():
                raise DataError(f"project {project_id} already has an annotator named {name!r}", field="name")
            cur = conn.execute("INSERT INTO annotators (project_id, name, token, created_at, role) VALUES (?, ?, ?, ?, ?)",
                               (project_id, name, hash_token(token), _now(), role))
        return int(cur.lastrowid), token

    def _annotator_row(self, conn, project_id: int, name: str) -> sqlite3.Row:
        row = conn.execute("SELECT * FROM annotators WHERE project_id = ? AND name = ?", (project_id, name)).fetchone()
        if row is None:
            names = [r[0] for r in conn.execute("SELECT name FROM annotators WHERE project_id = ? ORDER BY id",
                                                (project_id,))]
            raise DataError(f"project {project_id} has no annotator named {name!r}; annotators: "
                            f"{', '.join(names) or '(none)'}", field="name")
        return row

    def rotate_token(self, project_id: int, name: str) -> str:
        """Give annotator ``name`` a new token (returned once, stored hashed); the old link stops working.
        Their judgments and open work stay theirs."""
        token = secrets.token_urlsafe(24)
        with self._write() as conn:
            row = self._annotator_row(conn, project_id, name)
            conn.execute("UPDATE annotators SET token = ?, revoked_at = NULL WHERE id = ?", (hash_token(token), row["id"]))
        return token

    def revoke_annotator(self, project_id: int, name: str) -> int:
        """Revoke annotator ``name``'s token: the link stops working, their open leases go back to the
        queue (returns how many), their judgments stay. :meth:`rotate_token` gives them a new link."""
        with self._write() as conn:
            row = self._annotator_row(conn, project_id, name)
            conn.execute("UPDATE annotators SET revoked_at = ? WHERE id = ?", (_now(), row["id"]))
            freed = conn.execute("UPDATE assignments SET state = 'expired' WHERE annotator_id = ? AND state = 'leased' "
                                 "RETURNING project_id, unit", (row["id"],)).fetchall()
            _release(conn, freed)
        return len(freed)

    def annotator_by_token(self, token: str | None) -> dict[str, Any] | None:
        """``{id, project_id, name}`` of the annotator holding ``token`` (not revoked), or None."""
        if not token or not isinstance(token, str):
            return None
        revoked = " AND revoked_at IS NULL" if self._has("servers") else ""
        extra = ", role, flagged_at, cleared_at" if self._has("gold_items") else ""
        row = self._conn().execute(f"SELECT id, project_id, name{extra} FROM annotators WHERE token = ?{revoked}",
                                   (hash_token(token),)).fetchone()
        if row is None:
            return None
        out = dict(row)
        out.setdefault("role", "annotator")
        out["paused"] = bool(out.pop("flagged_at", None)) and not out.pop("cleared_at", None)
        out.pop("cleared_at", None)
        return out

    def annotator_state(self, annotator_id: int) -> dict[str, Any]:
        """``{role, paused}`` of an annotator now (``paused``: flagged by the gold rule and not unpaused)."""
        if not self._has("gold_items"):
            return {"role": "annotator", "paused": False}
        r = self._conn().execute("SELECT role, flagged_at, cleared_at FROM annotators WHERE id = ?",
                                 (annotator_id,)).fetchone()
        if r is None:
            return {"role": "annotator", "paused": False}
        return {"role": r["role"], "paused": r["flagged_at"] is not None and r["cleared_at"] is None}

    def annotators(self, project_id: int) -> list[dict[str, Any]]:
        """``{id, name, created_at, revoked_at, last_seen}`` of the project's annotators (and, from migration 5,
        ``role``, ``flagged_at``, ``flag_reason``, ``cleared_at``: the gold rule's flag and the admin's unpause)."""
        cols = "id, name, created_at, revoked_at, last_seen" if self._has("servers") else "id, name, created_at"
        if self._has("gold_items"):
            cols += ", role, flagged_at, flag_reason, cleared_at"
        return [dict(r) for r in self._conn().execute(
            f"SELECT {cols} FROM annotators WHERE project_id = ? ORDER BY id", (project_id,))]

    def active_annotators(self, project_id: int, within: float) -> int:
        """How many (unrevoked) annotators asked for work in the last ``within`` seconds."""
        return int(self._conn().execute(
            "SELECT COUNT(*) FROM annotators WHERE project_id = ? AND revoked_at IS NULL AND last_seen >= ?",
            (project_id, time.time() - within)).fetchone()[0])

    # ------------------------------------------------------------------ assignments (leases) and the queue
    def lease(self, project_id: int, annotator_id: int, item_id: str, a: str, b: str | None, shown_order: str,
              seconds: float) -> int:
        """Record that ``annotator_id`` was given ``item_id`` until now + ``seconds``; returns the assignment id.
        (The app leases through :meth:`lease_next`, which also chooses the unit.)"""
        with self._write() as conn:
            unit = conn.execute("SELECT pos FROM units WHERE project_id = ? AND item_id = ? AND "
                                "((a = ? AND b = ?) OR (a = ? AND b = ?))",
                                (project_id, item_id, a, b or "", b or "", a)).fetchone()
            return self._insert_lease(conn, project_id, annotator_id, None if unit is None else unit[0], item_id, a, b,
                                      shown_order, seconds)

    def _insert_lease(self, conn, project_id: int, annotator_id: int, unit: int | None, item_id: str, a: str,
                      b: str | None, shown_order: str, seconds: float, prob: float | None = None) -> int:
        now = time.time()
        cur = conn.execute(
            "INSERT INTO assignments (project_id, item_id, annotator_id, a, b, shown_order, leased_at, expires_at, unit, "
            "prob) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (project_id, item_id, annotator_id, a, b or None, shown_order, _now(), now + float(seconds), unit, prob))
        if unit is not None:
            conn.execute("UPDATE units SET open = open + 1 WHERE project_id = ? AND pos = ?", (project_id, unit))
        _expire(conn, project_id, now)  # a lease given already past its time (seconds <= 0) expires at once
        return int(cur.lastrowid)

    def lease_next(self, project_id: int, annotator_id: int, *, seconds: float,
                   candidates: Sequence[int] | None = None, shown_order=None,
                   prob: float | Callable[[dict[str, Any]], float | None] | None = None) -> dict[str, Any] | None:
        """Choose the annotator's next unit and lease it, in one transaction (atomic across threads,
        processes and servers sharing the file): the first unit in queue order -- or in the order of
        ``candidates`` (unit positions), when given -- that still needs people (finished judgments plus
        open leases below the overlap) and that this annotator has never had. Returns the assignment row,
        or None when there is no such unit. ``shown_order(unit row) -> 'ab' | 'ba'``; ``prob``: the
        probability with which a random rule drew the unit, kept with the assignment (and with its judgment),
        or ``prob(unit row)`` giving it for the unit chosen.

        A project with gold items (:meth:`add_gold_items`, settings ``gold.rate`` R) serves one instead of
        the unit chosen on a share R of the requests that find a unit -- a draw seeded by the project, the
        person and how many assignments they have had, so deterministic -- the person's next gold item in
        an order of their own (seeded, uniformly random, each once): the gold assignment has no unit, the
        project's own pair and a shown order drawn as any other's, so nothing on the page tells it apart."""
        with self._write() as conn:
            now = time.time()
            _expire(conn, project_id, now)
            conn.execute("UPDATE annotators SET last_seen = ? WHERE id = ?", (now, annotator_id))
            fresh = ("NOT EXISTS (SELECT 1 FROM assignments s WHERE s.project_id = u.project_id AND s.unit = u.pos "
                     "AND s.annotator_id = ?)")
            if candidates is None:
                row = conn.execute(f"SELECT u.* FROM units u WHERE u.project_id = ? AND u.done + u.open < u.need AND "
                                   f"{fresh} ORDER BY u.pos LIMIT 1", (project_id, annotator_id)).fetchone()
            else:
                row = None
                for start in range(0, len(candidates), 400):  # SQLite's limit on bound values
                    chunk = [int(c) for c in candidates[start:start + 400]]
                    values = ", ".join("(?, ?)" for _ in chunk)
                    args = [x for k, c in enumerate(chunk) for x in (k, c)]
                    row = conn.execute(
                        f"WITH c(rank, pos) AS (VALUES {values}) SELECT u.* FROM c JOIN units u ON u.project_id = ? AND "
                        f"u.pos = c.pos WHERE u.done + u.open < u.need AND {fresh} ORDER BY c.rank LIMIT 1",
                        (*args, project_id, annotator_id)).fetchone()
                    if row is not None:
                        break
            if row is None:
                return None
            gold = self._gold_turn(conn, project_id, annotator_id)
            if gold is not None:  # this request is a gold turn: a gold item instead, the real unit stays free
                order = shown_order({**dict(row), "item_id": gold["item_id"]}) if shown_order else "ab"
                aid = self._insert_lease(conn, project_id, annotator_id, None, gold["item_id"], row["a"],
                                         row["b"] or None, order, seconds)
                return dict(conn.execute("SELECT * FROM assignments WHERE id = ?", (aid,)).fetchone())
            order = shown_order(dict(row)) if (shown_order and row["b"]) else "ab"
            p = prob(dict(row)) if callable(prob) else prob
            aid = self._insert_lease(conn, project_id, annotator_id, row["pos"], row["item_id"], row["a"],
                                     row["b"] or None, order, seconds, p)
            return dict(conn.execute("SELECT * FROM assignments WHERE id = ?", (aid,)).fetchone())

    def free_units(self, project_id: int, annotator_id: int, *, groups: int,
                   group: int | None = None) -> dict[int, int] | list[int]:
        """Units this annotator could be given now (short of their overlap counting open leases, and never
        had by them), grouped by ``pos % groups`` (an arena project's pair): without ``group``, how many
        per group (``{group: count}``, groups with none left out); with it, that group's positions."""
        conn = self._conn()
        if conn.in_transaction:
            _expire(conn, project_id, time.time())
        else:
            self.expire_leases(project_id)
        where = ("u.project_id = ? AND u.done + u.open < u.need AND NOT EXISTS (SELECT 1 FROM assignments s WHERE "
                 "s.project_id = u.project_id AND s.unit = u.pos AND s.annotator_id = ?)")
        if group is None:
            rows = conn.execute(f"SELECT u.pos % ?, COUNT(*) FROM units u WHERE {where} GROUP BY u.pos % ?",
                                (groups, project_id, annotator_id, groups))
            return {int(g): int(c) for g, c in rows}
        rows = conn.execute(f"SELECT u.pos FROM units u WHERE {where} AND u.pos % ? = ? ORDER BY u.pos",
                            (project_id, annotator_id, groups, group))
        return [int(r[0]) for r in rows]

    # ------------------------------------------------------------------ gold items
    def add_gold_items(self, project_id: int, rows: Iterable[dict[str, Any]]) -> int:
        """Store gold items: each row ``{gold_id, input, outputs: {system: text}, answer}`` (``answer``: 'a', 'b'
        or 'tie', in terms of the project's a and b). Their input and outputs are kept as hidden items
        (``items()`` and ``item_count()`` leave them out); returns how many were added."""
        rows = list(rows)
        with self._write() as conn:
            taken = {r[0] for r in conn.execute("SELECT item_id FROM items WHERE project_id = ?", (project_id,))}
            for k, r in enumerate(rows):
                item_id = f"gold:{r['gold_id']}"
                if item_id in taken:
                    raise DataError(f"gold item {r['gold_id']!r}: the project already holds an item {item_id!r}; "
                                    "give the gold items other ids", field="item_id", item_id=str(r["gold_id"]))
                if r["answer"] not in ("a", "b", "tie"):
                    raise DataError(f"gold item {r['gold_id']!r}: answer must be 'a', 'b' or 'tie', got {r['answer']!r}",
                                    field="answer", item_id=str(r["gold_id"]))
                conn.execute("INSERT INTO items (project_id, item_id, position, input, meta) VALUES (?, ?, ?, ?, '{}')",
                             (project_id, item_id, -1 - k, r.get("input")))
                conn.executemany("INSERT INTO outputs (project_id, item_id, system, output) VALUES (?, ?, ?, ?)",
                                 [(project_id, item_id, system, text) for system, text in r["outputs"].items()])
                conn.execute("INSERT INTO gold_items (project_id, gold_id, item_id, answer, created_at) VALUES "
                             "(?, ?, ?, ?, ?)", (project_id, str(r["gold_id"]), item_id, r["answer"], _now()))
                taken.add(item_id)
        return len(rows)

    def gold_items(self, project_id: int) -> list[dict[str, Any]]:
        """The project's gold items: ``{gold_id, item_id, answer, input, outputs}`` (none before migration 5)."""
        if not self._has("gold_items"):
            return []
        out = []
        for r in self._conn().execute("SELECT gold_id, item_id, answer FROM gold_items WHERE project_id = ? ORDER BY "
                                      "rowid", (project_id,)).fetchall():
            it = self.item(project_id, r["item_id"]) or {"input": None, "outputs": {}}
            out.append({"gold_id": r["gold_id"], "item_id": r["item_id"], "answer": r["answer"], "input": it["input"],
                        "outputs": it["outputs"]})
        return out

    def gold_item(self, project_id: int, item_id: str) -> dict[str, Any] | None:
        """``{gold_id, answer}`` when ``item_id`` (an assignment's) is one of the project's gold items, else None."""
        if not self._has("gold_items"):
            return None
        r = self._conn().execute("SELECT gold_id, answer FROM gold_items WHERE project_id = ? AND item_id = ?",
                                 (project_id, item_id)).fetchone()
        return None if r is None else dict(r)

    def _gold_turn(self, conn, project_id: int, annotator_id: int) -> dict[str, Any] | None:
        """The gold item to serve now instead of a real unit (see :meth:`lease_next`), or None."""
        if not self._has("gold_items"):
            return None
        settings = json.loads(conn.execute("SELECT settings FROM projects WHERE id = ?", (project_id,)).fetchone()[0])
        rate = float((settings.get("gold") or {}).get("rate", 0.0))
        if rate <= 0:
            return None
        had = int(conn.execute("SELECT COUNT(*) FROM assignments WHERE project_id = ? AND annotator_id = ?",
                               (project_id, annotator_id)).fetchone()[0])
        if _uniform(f"gold-turn|{project_id}|{annotator_id}|{had}") >= rate:
            return None
        left = conn.execute("SELECT g.gold_id, g.item_id FROM gold_items g WHERE g.project_id = ? AND NOT EXISTS "
                            "(SELECT 1 FROM assignments s WHERE s.project_id = g.project_id AND s.item_id = g.item_id "
                            "AND s.annotator_id = ?)", (project_id, annotator_id)).fetchall()
        if not left:
            return None
        return dict(min(left, key=lambda r: _uniform(f"gold-order|{project_id}|{annotator_id}|{r['gold_id']}")))

    def record_gold_answer(self, project_id: int, annotator: dict[str, Any], assignment_id: int, given: str | None, *,
                           idempotency_key: str | None = None) -> dict[str, Any]:
        """Store a person's answer to a gold assignment (``given``: 'a', 'b', 'tie', or None for a skip) -- never
        a judgment -- and mark the assignment done, in one transaction. Returns ``{id, correct}``. The same
        ``idempotency_key`` with the same answer returns the first id; with another, or a second answer to
        the assignment, ConflictError (as :meth:`record_judgment`)."""
        with self._write() as conn:
            a = conn.execute("SELECT * FROM assignments WHERE id = ?", (assignment_id,)).fetchone()
            gold = None if a is None else conn.execute(
                "SELECT gold_id, answer FROM gold_items WHERE project_id = ? AND item_id = ?",
                (project_id, a["item_id"])).fetchone()
            if gold is None:
                raise DataError(f"assignment {assignment_id} is not a gold item's", field="assignment_id")
            standing = "AND NOT EXISTS (SELECT 1 FROM gold_retractions r WHERE r.gold_answer_id = gold_answers.id)"
            if idempotency_key is not None:
                row = conn.execute(f"SELECT * FROM gold_answers WHERE assignment_id = ? AND idempotency_key = ?",
                                   (assignment_id, idempotency_key)).fetchone()
                if row is not None:
                    if conn.execute("SELECT 1 FROM gold_retractions WHERE gold_answer_id = ?", (row["id"],)).fetchone():
                        raise ConflictError(f"idempotency_key {idempotency_key!r} was used for an answer that was "
                                            "undone; nothing was stored: send the answer again with a new key",
                                            field="idempotency_key")
                    if row["given"] != given:
                        raise ConflictError(f"idempotency_key {idempotency_key!r} was already used with a different "
                                            "answer; send a new key for a new answer, or undo the first",
                                            field="idempotency_key")
                    return {"id": int(row["id"]), "correct": row["correct"]}
            if a["state"] == "done":
                prev = conn.execute(f"SELECT id FROM gold_answers WHERE assignment_id = ? {standing}",
                                    (assignment_id,)).fetchone()
                raise ConflictError(f"assignment {assignment_id} already has answer {prev[0] if prev else '?'}; to change "
                                    "it, undo it first (POST /api/v1/undo)", field="assignment_id")
            correct = None if given is None else int(given == gold["answer"])
            cur = conn.execute(
                "INSERT INTO gold_answers (project_id, annotator_id, annotator, gold_id, assignment_id, given, status, "
                "correct, idempotency_key, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (project_id, annotator["id"], annotator["name"], gold["gold_id"], assignment_id, given,
                 "skipped" if given is None else "done", correct, idempotency_key, _now()))
            conn.execute("UPDATE assignments SET state = 'done' WHERE id = ?", (assignment_id,))
        return {"id": int(cur.lastrowid), "correct": correct}

    def gold_answers(self, project_id: int) -> list[dict[str, Any]]:
        """Every gold answer of the project in the order stored (undone ones with ``retracted_at``), for audit."""
        if not self._has("gold_answers"):
            return []
        return [dict(r) for r in self._conn().execute(
            "SELECT g.*, r.created_at AS retracted_at FROM gold_answers g LEFT JOIN gold_retractions r ON "
            "r.gold_answer_id = g.id WHERE g.project_id = ? ORDER BY g.id", (project_id,))]

    def gold_record(self, project_id: int) -> dict[int, list[int]]:
        """Per annotator id: the correctness (1 / 0) of their gold answers that stand, skips left out, in order."""
        out: dict[int, list[int]] = {}
        for r in self.gold_answers(project_id):
            if r["retracted_at"] is None and r["status"] == "done":
                out.setdefault(int(r["annotator_id"]), []).append(int(r["correct"]))
        return out

    def flag_annotator(self, project_id: int, annotator_id: int, reason: str) -> bool:
        """Flag a person (the gold rule): their queue is paused (open leases go back), their verdicts leave the
        decision (:meth:`excluded`) and the units they finished need someone else again; their judgments stay.
        False (nothing done) when they were flagged before or the admin unpaused them."""
        with self._write() as conn:
            row = conn.execute("SELECT flagged_at, cleared_at FROM annotators WHERE id = ? AND project_id = ?",
                               (annotator_id, project_id)).fetchone()
            if row is None or row["flagged_at"] is not None or row["cleared_at"] is not None:
                return False
            conn.execute("UPDATE annotators SET flagged_at = ?, flag_reason = ? WHERE id = ?",
                         (_now(), str(reason), annotator_id))
            freed = conn.execute("UPDATE assignments SET state = 'expired' WHERE annotator_id = ? AND state = 'leased' "
                                 "RETURNING project_id, unit", (annotator_id,)).fetchall()
            _release(conn, freed)
            self._shift_done(conn, project_id, annotator_id, -1)
        return True

    def unpause_annotator(self, project_id: int, name: str) -> dict[str, Any] | None:
        """The admin's answer to a flag: the person may work again and their verdicts count again (the gold rule
        does not flag them a second time). Returns the annotator row; None when they were not paused (nothing
        changes). DataError when the project has no such person."""
        with self._write() as conn:
            row = self._annotator_row(conn, project_id, name)
            if row["flagged_at"] is None or row["cleared_at"] is not None:
                return None
            conn.execute("UPDATE annotators SET cleared_at = ? WHERE id = ?", (_now(), row["id"]))
            self._shift_done(conn, project_id, int(row["id"]), +1)
            return dict(conn.execute("SELECT * FROM annotators WHERE id = ?", (row["id"],)).fetchone())

    def _shift_done(self, conn, project_id: int, annotator_id: int, by: int) -> None:
        """Move the finished count of every unit a person finished (a verdict that stands) by ``by``."""
        units = [r[0] for r in conn.execute(
            "SELECT DISTINCT s.unit FROM judgments j JOIN assignments s ON s.id = j.assignment_id WHERE j.project_id = ? "
            "AND s.annotator_id = ? AND j.status = 'done' AND s.unit IS NOT NULL AND NOT EXISTS (SELECT 1 FROM "
            "retractions r WHERE r.judgment_id = j.id)", (project_id, annotator_id))]
        conn.executemany("UPDATE units SET done = MAX(0, done + ?) WHERE project_id = ? AND pos = ?",
                         [(by, project_id, u) for u in units])

    def excluded(self, project_id: int) -> frozenset[str]:
        """Names of the people the gold rule flagged and the admin did not unpause: their verdicts are left out
        of the decision (they stay in the store; the export marks them ``excluded``)."""
        if not self._has("gold_items"):
            return frozenset()
        return frozenset(r[0] for r in self._conn().execute(
            "SELECT name FROM annotators WHERE project_id = ? AND flagged_at IS NOT NULL AND cleared_at IS NULL",
            (project_id,)))

    def lease_extra(self, project_id: int, annotator_id: int, item_id: str, a: str, b: str | None, shown_order: str,
                    seconds: float) -> dict[str, Any]:
        """Lease an item outside the queue (no unit: an adjudicator's disputed item); returns the assignment row."""
        with self._write() as conn:
            aid = self._insert_lease(conn, project_id, annotator_id, None, item_id, a, b, shown_order, seconds)
            return dict(conn.execute("SELECT * FROM assignments WHERE id = ?", (aid,)).fetchone())

    def assignment_count(self, project_id: int) -> int:
        """How many assignments the project has handed out (expired and answered ones included)."""
        return int(self._conn().execute("SELECT COUNT(*) FROM assignments WHERE project_id = ?",
                                        (project_id,)).fetchone()[0])

    def held(self, project_id: int, annotator_id: int) -> dict[str, Any] | None:
        """The annotator's oldest lease that has not expired (what a reloaded page shows again), or None."""
        row = self._conn().execute(
            "SELECT * FROM assignments WHERE annotator_id = ? AND project_id = ? AND state = 'leased' AND expires_at >= ? "
            "ORDER BY id LIMIT 1", (annotator_id, project_id, time.time())).fetchone()
        return None if row is None else dict(row)

    def queue_state(self, project_id: int, annotator_id: int | None = None) -> dict[str, int]:
        """``{units, unfinished, free, free_for_me}``: units in the queue; those still short of their
        overlap; those with room for another person now; of those, the ones this annotator never had."""
        conn = self._conn()
        if not self._has("units"):
            return {"units": 0, "unfinished": 0, "free": 0}
        r = conn.execute("SELECT COUNT(*), COALESCE(SUM(done < need), 0), COALESCE(SUM(done + open < need), 0) "
                         "FROM units WHERE project_id = ?", (project_id,)).fetchone()
        out = {"units": int(r[0]), "unfinished": int(r[1]), "free": int(r[2])}
        if annotator_id is not None:
            out["unfinished_for_me"] = int(conn.execute(
                "SELECT COUNT(*) FROM units u WHERE u.project_id = ? AND u.done < u.need AND NOT EXISTS (SELECT 1 FROM "
                "assignments s WHERE s.project_id = u.project_id AND s.unit = u.pos AND s.annotator_id = ?)",
                (project_id, annotator_id)).fetchone()[0])
        return out

    def assignments(self, project_id: int, *, state: str | None = None,
                    annotator_id: int | None = None) -> list[dict[str, Any]]:
        """Assignments of a project (expired leases are marked expired first)."""
        if not self.read_only:
            self.expire_leases(project_id)
        sql, args = "SELECT * FROM assignments WHERE project_id = ?", [project_id]
        if state is not None:
            sql, args = sql + " AND state = ?", args + [state]
        if annotator_id is not None:
            sql, args = sql + " AND annotator_id = ?", args + [annotator_id]
        return [dict(r) for r in self._conn().execute(sql + " ORDER BY id", args)]

    def assignment(self, assignment_id: int) -> dict[str, Any] | None:
        """One assignment by id, or None (also for ids outside SQLite's 64-bit integers)."""
        if isinstance(assignment_id, bool) or not isinstance(assignment_id, int) or \
                not INT64[0] <= assignment_id <= INT64[1]:
            return None
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
            return _expire(conn, project_id, now)

    def progress(self, project_id: int) -> list[dict[str, Any]]:
        """Per annotator: ``{name, judged, skipped, undone, open, last_seen, revoked}`` (judged and skipped
        count what stands after undos)."""
        conn = self._conn()
        rows = {r["id"]: {"name": r["name"], "judged": 0, "skipped": 0, "undone": 0, "open": 0,
                          "last_seen": r.get("last_seen"), "revoked": r.get("revoked_at") is not None}
                for r in self.annotators(project_id)}
        undone = ("(EXISTS (SELECT 1 FROM retractions r WHERE r.judgment_id = j.id))" if self._has("retractions")
                  else "0")
        for r in conn.execute(
                f"SELECT s.annotator_id AS who, j.status AS status, {undone} AS undone, COUNT(*) AS n "
                "FROM judgments j JOIN assignments s ON s.id = j.assignment_id "
                "WHERE j.project_id = ? GROUP BY who, status, undone", (project_id,)):
            if r["who"] in rows:
                key = "undone" if r["undone"] else {"done": "judged", "skipped": "skipped"}.get(r["status"])
                if key:
                    rows[r["who"]][key] += r["n"]
        for r in conn.execute("SELECT annotator_id, COUNT(*) FROM assignments WHERE project_id = ? AND state = 'leased' "
                              "AND expires_at >= ? GROUP BY annotator_id", (project_id, time.time())):
            if r[0] in rows:
                rows[r[0]]["open"] = int(r[1])
        return list(rows.values())

    def answered_by(self, annotator_id: int) -> dict[str, int]:
        """An annotator's answers that stand (undone ones not counted), finished ones and skips apart:
        ``{"judged", "skipped"}``. One indexed query on the person's assignments (:meth:`progress` reads the
        whole project's judgments)."""
        standing = (" AND NOT EXISTS (SELECT 1 FROM retractions r WHERE r.judgment_id = j.id)"
                    if self._has("retractions") else "")
        rows = self._conn().execute(
            "SELECT j.status, COUNT(*) FROM judgments j JOIN assignments s ON s.id = j.assignment_id WHERE "
            f"s.annotator_id = ? AND j.status IN ('done', 'skipped'){standing} GROUP BY j.status", (annotator_id,))
        got = {str(status): int(n) for status, n in rows}
        if self._has("gold_answers"):  # a person's own count holds their gold answers too (the page never tells them)
            for status, n in self._conn().execute(
                    "SELECT status, COUNT(*) FROM gold_answers g WHERE annotator_id = ? AND NOT EXISTS (SELECT 1 FROM "
                    "gold_retractions r WHERE r.gold_answer_id = g.id) GROUP BY status", (annotator_id,)):
                got[str(status)] = got.get(str(status), 0) + int(n)
        return {"judged": got.get("done", 0), "skipped": got.get("skipped", 0)}

    def judged_by(self, annotator_id: int) -> int:
        """How many answers an annotator has given that stand, skips included (:meth:`answered_by` apart)."""
        return sum(self.answered_by(annotator_id).values())

    # ------------------------------------------------------------------ judgments
    def record_judgment(self, project_id: int, judgment: Judgment, *, idempotency_key: str | None = None,
                        assignment_id: int | None = None) -> int:
        """Append ``judgment``; returns its id once committed.

        An ``idempotency_key`` names one submission of one annotator (``judgment.annotator``) for one
        assignment: sent again with the same answer, nothing is written and the first id comes back; sent
        again with a different answer, :class:`~evalsift.errors.ConflictError`. The same key from
        another annotator or for another assignment is another submission. With an ``assignment_id``,
        the assignment is marked done in the same transaction (ConflictError if it already has an
        answer that was not undone).
        """
        if not isinstance(judgment, Judgment):
            raise ParameterError(f"record_judgment takes a Judgment, got {type(judgment).__name__}")
        if idempotency_key is not None and not isinstance(idempotency_key, str):
            raise ParameterError(f"idempotency_key must be a string, got {type(idempotency_key).__name__}",
                                 field="idempotency_key")
        with self._write() as conn:
            if idempotency_key is not None:
                row = conn.execute(
                    "SELECT * FROM judgments WHERE project_id = ? AND annotator = ? AND IFNULL(assignment_id, 0) = ? "
                    "AND idempotency_key = ?", (project_id, judgment.annotator, assignment_id or 0,
                                                idempotency_key)).fetchone()
                if row is not None:
                    if conn.execute("SELECT 1 FROM retractions WHERE judgment_id = ?", (row["id"],)).fetchone():
                        raise ConflictError(  # the key's submission was undone: a key names one submission only
                            f"idempotency_key {idempotency_key!r} was used for judgment {row['id']}, which was undone; "
                            "nothing was stored: send the answer again with a new key", field="idempotency_key",
                            item_id=row["item_id"])
                    _same_submission(row, judgment, idempotency_key)
                    return int(row["id"])
            state = None
            if assignment_id is not None:
                a = conn.execute("SELECT state, unit FROM assignments WHERE id = ?", (assignment_id,)).fetchone()
                if a is None:
                    raise DataError(f"no assignment {assignment_id} in {self.path}", field="assignment_id")
                state = a["state"]
                if state == "done":
                    prev = conn.execute("SELECT id FROM judgments WHERE assignment_id = ? AND id NOT IN (SELECT "
                                        "judgment_id FROM retractions) ORDER BY id DESC LIMIT 1",
                                        (assignment_id,)).fetchone()
                    raise ConflictError(
                        f"assignment {assignment_id} (item {judgment.item_id!r}) already has judgment "
                        f"{prev[0] if prev else '?'}; to change it, undo it first (POST /api/v1/undo), or send the "
                        "first submission's idempotency_key again", field="assignment_id", item_id=judgment.item_id)
            cur = conn.execute(
                "INSERT INTO judgments (project_id, item_id, a, b, verdict, annotator, kind, shown_order, status, "
                "created_at, detail, assignment_id, idempotency_key, stored_at) VALUES "
                "(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (project_id, judgment.item_id, judgment.a, judgment.b, judgment.verdict, judgment.annotator,
                 judgment.kind, judgment.shown_order, judgment.status, judgment.created_at, _dumps(judgment.detail),
                 assignment_id, idempotency_key, _now()))
            if assignment_id is not None:
                conn.execute("UPDATE assignments SET state = 'done' WHERE id = ?", (assignment_id,))
                unit = a["unit"]
                if unit is not None:
                    conn.execute("UPDATE units SET open = open - ?, done = done + ? WHERE project_id = ? AND pos = ?",
                                 (int(state == "leased"), int(judgment.status == "done"), project_id, unit))
        return int(cur.lastrowid)

    def retract_last(self, project_id: int, annotator_id: int, *, seconds: float) -> dict[str, Any]:
        """Undo an annotator's latest judgment that stands: it stays stored, marked withdrawn
        (append-only), and its assignment is leased to them again for ``seconds``. Returns
        ``{"judgment_id", "assignment"}``. ConflictError when there is nothing to undo, or when the undone
        judgment was a skip and the item has since gone to someone else."""
        with self._write() as conn:
            last = conn.execute(
                "SELECT j.id, j.status, j.annotator, j.stored_at, s.id AS aid, s.unit FROM judgments j JOIN assignments s "
                "ON s.id = j.assignment_id WHERE j.project_id = ? AND s.annotator_id = ? AND NOT EXISTS (SELECT 1 FROM "
                "retractions r WHERE r.judgment_id = j.id) ORDER BY j.id DESC LIMIT 1",
                (project_id, annotator_id)).fetchone()
            gold = conn.execute(
                "SELECT id, assignment_id, created_at FROM gold_answers g WHERE project_id = ? AND annotator_id = ? AND "
                "NOT EXISTS (SELECT 1 FROM gold_retractions r WHERE r.gold_answer_id = g.id) ORDER BY id DESC LIMIT 1",
                (project_id, annotator_id)).fetchone() if self._has("gold_answers") else None
            if gold is not None and (last is None or gold["created_at"] > last["stored_at"]):  # a gold answer is latest
                conn.execute("INSERT INTO gold_retractions (gold_answer_id, project_id, created_at) VALUES (?, ?, ?)",
                             (gold["id"], project_id, _now()))
                conn.execute("UPDATE assignments SET state = 'leased', expires_at = ? WHERE id = ?",
                             (time.time() + float(seconds), gold["assignment_id"]))
                row = dict(conn.execute("SELECT * FROM assignments WHERE id = ?", (gold["assignment_id"],)).fetchone())
                return {"judgment_id": None, "gold_answer_id": int(gold["id"]), "assignment": row}
            if last is None:
                raise ConflictError("nothing to undo: you have no judgment in this project that stands", field="undo")
            unit = last["unit"]
            if unit is not None:
                u = conn.execute("SELECT done, open, need FROM units WHERE project_id = ? AND pos = ?",
                                 (project_id, unit)).fetchone()
                if last["status"] != "done" and u["done"] + u["open"] >= u["need"]:
                    raise ConflictError("the item you skipped has gone to someone else since; it cannot be undone",
                                        field="undo")
                conn.execute("UPDATE units SET done = done - ?, open = open + 1 WHERE project_id = ? AND pos = ?",
                             (int(last["status"] == "done"), project_id, unit))
            conn.execute("INSERT INTO retractions (judgment_id, project_id, annotator, created_at) VALUES (?, ?, ?, ?)",
                         (last["id"], project_id, last["annotator"], _now()))
            conn.execute("UPDATE assignments SET state = 'leased', expires_at = ? WHERE id = ?",
                         (time.time() + float(seconds), last["aid"]))
            row = dict(conn.execute("SELECT * FROM assignments WHERE id = ?", (last["aid"],)).fetchone())
        return {"judgment_id": int(last["id"]), "assignment": row}

    def last_retraction(self, project_id: int) -> int:
        """The newest retraction's row id in the project (0 without any): a change means judgments were undone."""
        if not self._has("retractions"):
            return 0
        return int(self._conn().execute("SELECT COALESCE(MAX(rowid), 0) FROM retractions WHERE project_id = ?",
                                        (project_id,)).fetchone()[0])

    # ------------------------------------------------------------------ draws made ahead (live designs)
    def record_draw(self, project_id: int, *, after_judgment: int, draws: int, item_id: str,
                    prob: float | None) -> int:
        """Record that a live project's Session drew ``item_id`` (with probability ``prob``) ahead of its
        decision set, bringing its draws to ``draws``, when the newest judgment it had been given was
        ``after_judgment``; returns the draw's number (1, 2, ... in the project). Append-only. Call inside the
        transaction that leases the item, so every server replays the draw at the same point."""
        with self._write() as conn:
            seq = int(conn.execute("SELECT COALESCE(MAX(seq), 0) + 1 FROM draws WHERE project_id = ?",
                                   (project_id,)).fetchone()[0])
            conn.execute("INSERT INTO draws (project_id, seq, after_judgment, draws, item_id, prob, created_at) "
                         "VALUES (?, ?, ?, ?, ?, ?, ?)", (project_id, seq, int(after_judgment), int(draws),
                                                          str(item_id), None if prob is None else float(prob), _now()))
        return seq

    def draws(self, project_id: int, *, since: int = 0) -> list[dict[str, Any]]:
        """The project's recorded draws after number ``since``, in order: ``{seq, after_judgment, draws,
        item_id, prob, created_at}`` (none for a file older than migration 4)."""
        if not self._has("draws"):
            return []
        return [dict(r) for r in self._conn().execute(
            "SELECT seq, after_judgment, draws, item_id, prob, created_at FROM draws WHERE project_id = ? AND seq > ? "
            "ORDER BY seq", (project_id, since))]

    def next_release(self, project_id: int, annotator_id: int | None = None,
                     units: Sequence[int] | None = None) -> tuple[int, float | None]:
        """The open leases of other annotators (on ``units``, unit positions, when given): ``(how many,
        unix time the first of them expires)`` -- when, if nobody answers, that unit goes back to the queue."""
        sql = ("SELECT unit, expires_at FROM assignments WHERE project_id = ? AND state = 'leased' AND expires_at >= ?"
               + ("" if annotator_id is None else " AND annotator_id != ?"))
        args: list[Any] = [project_id, time.time()] + ([] if annotator_id is None else [annotator_id])
        want = None if units is None else {int(u) for u in units}
        times = [float(r[1]) for r in self._conn().execute(sql, args) if want is None or r[0] in want]
        return len(times), (min(times) if times else None)

    def judgments(self, project_id: int, *, since_id: int = 0) -> list[Judgment]:
        """The project's judgments that stand (not undone), in the order they were stored (ids above ``since_id``)."""
        return [j for _, j in self.judgments_with_ids(project_id, since_id=since_id)]

    def judgments_with_ids(self, project_id: int, *, since_id: int = 0) -> list[tuple[int, Judgment]]:
        """``(store id, Judgment)`` pairs that stand, in the order they were stored (ids above ``since_id``)."""
        standing = (" AND NOT EXISTS (SELECT 1 FROM retractions r WHERE r.judgment_id = judgments.id)"
                    if self._has("retractions") else "")
        rows = self._conn().execute(f"SELECT * FROM judgments WHERE project_id = ? AND id > ?{standing} ORDER BY id",
                                    (project_id, since_id))
        return [(int(r["id"]), _judgment(r)) for r in rows]

    def judgment_rows(self, project_id: int) -> list[dict[str, Any]]:
        """Every stored row, undone ones included (with id, assignment, idempotency key, store time,
        ``retracted_at``: when it was undone, or None, and ``counted``: whether the finished verdict counts
        toward its unit's overlap -- :class:`OverlapCount` over the judgments that stand -- or is an extra,
        a late answer past the overlap, stored and never counted; ``excluded``: its annotator was flagged by the
        gold rule, so it is not counted; ``adjudicated``: an adjudicator's verdict, the one that counts for its
        item), for export and audit. Gold answers are never judgments: they are not here (:meth:`gold_answers`)."""
        if self._has("retractions"):
            sql = ("SELECT j.*, r.created_at AS retracted_at FROM judgments j LEFT JOIN retractions r ON "
                   "r.judgment_id = j.id WHERE j.project_id = ? ORDER BY j.id")
        else:
            sql = "SELECT *, NULL AS retracted_at FROM judgments WHERE project_id = ? ORDER BY id"
        rows = [{**dict(r), "detail": json.loads(r["detail"])} for r in self._conn().execute(sql, (project_id,))]
        row = self._conn().execute("SELECT settings FROM projects WHERE id = ?", (project_id,)).fetchone()
        count = OverlapCount(int(json.loads(row[0]).get("overlap", 1)) if row is not None else 1)
        excluded = self.excluded(project_id)
        for r in rows:
            r["excluded"] = r["annotator"] in excluded  # flagged by the gold rule: kept, left out of the decision
            r["adjudicated"] = r["kind"] == ADJUDICATOR_KIND  # an adjudicator's verdict: what counts for its item
            r["counted"] = r["retracted_at"] is None and not r["excluded"] and count.counts(_judgment(r))
        return rows

    # ------------------------------------------------------------------ servers on this file
    def register_server(self, address: str) -> tuple[int, list[dict[str, Any]]]:
        """Record a running ``evalsift serve`` (this process at ``address``); returns its row id and the
        other servers running on this file now (rows of processes that are gone are removed)."""
        host = socket.gethostname()
        with self._write() as conn:
            others = []
            for r in conn.execute("SELECT * FROM servers").fetchall():
                if r["hostname"] == host and not _alive(r["pid"]):
                    conn.execute("DELETE FROM servers WHERE id = ?", (r["id"],))
                else:
                    others.append(dict(r))
            cur = conn.execute("INSERT INTO servers (hostname, pid, address, started_at) VALUES (?, ?, ?, ?)",
                               (host, os.getpid(), address, _now()))
        return int(cur.lastrowid), others

    def unregister_server(self, server_id: int) -> None:
        """Remove a server's row when it stops."""
        with self._write() as conn:
            conn.execute("DELETE FROM servers WHERE id = ?", (server_id,))

    def servers(self) -> list[dict[str, Any]]:
        """The ``evalsift serve`` processes registered on this file."""
        if not self._has("servers"):
            return []
        return [dict(r) for r in self._conn().execute("SELECT * FROM servers ORDER BY id")]

    # ------------------------------------------------------------------ LLM response cache
    def llm_cache(self) -> "LLMResponseCache":
        """The cache of LLM responses in this store (``get(key)`` / ``put(key, value)``)."""
        return LLMResponseCache(self)

    # ------------------------------------------------------------------ export
    def export_jsonl(self, project_id: int, path: str | os.PathLike[str]) -> int:
        """Write the project's judgments as JSON lines (our judgment records plus the store's id, assignment,
        time and ``retracted_at``); returns how many. Works on a read-only store."""
        from ..io._common import atomic_file

        rows = self.judgment_rows(project_id)
        with atomic_file(path) as f:  # whole or not at all
            for r in rows:
                f.write(json.dumps(r, ensure_ascii=False) + "\n")
        return len(rows)


class OverlapCount:
    """Which finished judgments count toward their unit's overlap, fed in the order they were stored (the
    judgments that stand): on each unit -- an item for a pair of systems, either way round, or an (item,
    system) scored -- the first ``overlap`` different annotators' verdicts count (a person's later verdict on
    the same unit too: their latest one is their vote); a verdict from one more person is an *extra* (a late
    answer after a lease lapsed and the unit went to someone else): stored, never counted. Skips never count.
    An arena's judges (kind ``judge``, stored with the project) are not people: theirs always count, apart; so
    does an adjudicator's verdict (kind ``adjudicator``) on a disputed item, which takes no overlap slot.

    >>> from evalsift.oracle import Judgment
    >>> c = OverlapCount(1)
    >>> [c.counts(Judgment(item_id="i", a="A", b="B", verdict="a", annotator=who, kind="human")) for who in "xyx"]
    [True, False, True]
    """

    def __init__(self, overlap: int) -> None:
        self.overlap = int(overlap)
        self.people: dict[tuple[str, str, str], list[str]] = {}

    def counts(self, judgment: Judgment) -> bool:
        """Whether ``judgment`` (the next one stored) counts; remembers it."""
        if judgment.status != "done":
            return False
        if judgment.kind in ("judge", ADJUDICATOR_KIND):
            return True
        a, b = sorted((judgment.a, judgment.b))
        people = self.people.setdefault((judgment.item_id, a, b), [])
        if judgment.annotator in people:
            return True
        if len(people) >= self.overlap:
            return False
        people.append(judgment.annotator)
        return True


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


def _rollback(conn: sqlite3.Connection) -> None:
    """Roll back if a transaction is still open; a failure here (SQLite already rolled back, the disk is
    gone) is not the error the caller needs to see, so it is dropped."""
    if conn.in_transaction:
        try:
            conn.execute("ROLLBACK")
        except sqlite3.Error:
            pass


def _expire(conn: sqlite3.Connection, project_id: int, now: float) -> int:
    """Mark the project's leases past their time as expired and give their places back to the queue."""
    freed = conn.execute("UPDATE assignments SET state = 'expired' WHERE project_id = ? AND state = 'leased' AND "
                         "expires_at < ? RETURNING project_id, unit", (project_id, now)).fetchall()
    _release(conn, freed)
    return len(freed)


def _release(conn: sqlite3.Connection, freed: list) -> None:
    counts = Counter((r[0], r[1]) for r in freed if r[1] is not None)
    conn.executemany("UPDATE units SET open = open - ? WHERE project_id = ? AND pos = ?",
                     [(n, pid, unit) for (pid, unit), n in counts.items()])


def _same_submission(row: sqlite3.Row, judgment: Judgment, key: str) -> None:
    """ConflictError unless ``judgment`` says what the stored row under the same key says."""
    stored = {"verdict": row["verdict"], "status": row["status"], "detail": json.loads(row["detail"])}
    new = {"verdict": judgment.verdict, "status": judgment.status, "detail": json.loads(_dumps(judgment.detail))}
    if stored != new:
        what = [k for k in ("verdict", "status") if stored[k] != new[k]] + \
            [f"detail.{k}" for k in sorted(set(stored["detail"]) | set(new["detail"]))
             if stored["detail"].get(k) != new["detail"].get(k)]
        raise ConflictError(f"idempotency_key {key!r} was already used for judgment {row['id']} with a different "
                            f"answer ({', '.join(what)} differ); send a new key for a new answer, or undo the first",
                            field="idempotency_key", item_id=row["item_id"])


def _uniform(text: str) -> float:
    """A number in [0, 1) from ``text`` by sha256: the seeded, deterministic draws of the gold items."""
    return int.from_bytes(hashlib.sha256(text.encode("utf-8")).digest()[:8], "big") / 2 ** 64


def _alive(pid: int) -> bool:
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError, ValueError):
        return True
    return True


def _judgment(r: sqlite3.Row | dict[str, Any]) -> Judgment:
    detail = r["detail"]
    return Judgment(item_id=r["item_id"], a=r["a"], b=r["b"], verdict=r["verdict"], annotator=r["annotator"],
                    kind=r["kind"], shown_order=r["shown_order"], status=r["status"], created_at=r["created_at"],
                    detail=detail if isinstance(detail, dict) else json.loads(detail))


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
