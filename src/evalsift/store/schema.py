"""The store's schema, as numbered migrations applied in order, each in its own transaction.

A migration is never edited once released: a change to the schema is a new migration appended to
:data:`MIGRATIONS`. ``schema_migrations`` records which have been applied, so opening an older file
upgrades it in place, and a file written by a newer evalsift (a version we do not know) is refused.

A migration is SQL, optionally followed by a Python step (``fn(conn)``) for what SQL cannot say
(a backfill that reads projects' JSON settings); both run in the migration's one transaction.
"""

from __future__ import annotations

import json
import time
from typing import Callable

MIGRATIONS: list[tuple[int, str, str] | tuple[int, str, str, Callable]] = [
    (1, "projects, items, annotators, assignments, judgments, LLM cache", """
CREATE TABLE projects (
    id            INTEGER PRIMARY KEY,
    name          TEXT NOT NULL UNIQUE,
    kind          TEXT NOT NULL CHECK (kind IN ('pairwise', 'score')),
    mode          TEXT NOT NULL CHECK (mode IN ('live', 'fixed')),
    settings      TEXT NOT NULL DEFAULT '{}',   -- JSON: session settings, scale, overlap, lease seconds
    selector      TEXT NOT NULL DEFAULT '{}',   -- JSON: selector name and parameters
    data          TEXT NOT NULL DEFAULT '{}',   -- JSON: the data spec the items came from
    admin_token   TEXT NOT NULL,                -- sha256 of the admin token, never the token
    created_at    TEXT NOT NULL
);
CREATE TABLE items (
    project_id    INTEGER NOT NULL REFERENCES projects(id),
    item_id       TEXT NOT NULL,
    position      INTEGER NOT NULL,
    input         TEXT,
    meta          TEXT NOT NULL DEFAULT '{}',
    PRIMARY KEY (project_id, item_id)
);
CREATE TABLE outputs (                          -- the outputs shown, as they were shown
    project_id    INTEGER NOT NULL,
    item_id       TEXT NOT NULL,
    system        TEXT NOT NULL,
    output        TEXT,
    PRIMARY KEY (project_id, item_id, system),
    FOREIGN KEY (project_id, item_id) REFERENCES items(project_id, item_id)
);
CREATE TABLE annotators (
    id            INTEGER PRIMARY KEY,
    project_id    INTEGER NOT NULL REFERENCES projects(id),
    name          TEXT NOT NULL,
    token         TEXT NOT NULL UNIQUE,         -- sha256 of the token, never the token
    created_at    TEXT NOT NULL,
    UNIQUE (project_id, name)
);
CREATE TABLE assignments (
    id            INTEGER PRIMARY KEY,
    project_id    INTEGER NOT NULL REFERENCES projects(id),
    item_id       TEXT NOT NULL,
    annotator_id  INTEGER NOT NULL REFERENCES annotators(id),
    a             TEXT NOT NULL,                -- first system (pairwise) or the system scored
    b             TEXT,                         -- second system (pairwise), NULL for scores
    shown_order   TEXT NOT NULL DEFAULT 'ab',
    leased_at     TEXT NOT NULL,
    expires_at    REAL NOT NULL,                -- unix time
    state         TEXT NOT NULL DEFAULT 'leased' CHECK (state IN ('leased', 'done', 'expired')),
    FOREIGN KEY (project_id, item_id) REFERENCES items(project_id, item_id)
);
CREATE INDEX assignments_open ON assignments(project_id, state, expires_at);
CREATE INDEX assignments_annotator ON assignments(annotator_id, item_id);
CREATE TABLE judgments (
    id              INTEGER PRIMARY KEY AUTOINCREMENT,
    project_id      INTEGER NOT NULL REFERENCES projects(id),
    item_id         TEXT NOT NULL,
    a               TEXT NOT NULL,
    b               TEXT NOT NULL,                -- '' for a score judgment (one system)
    verdict         TEXT CHECK (verdict IN ('a', 'b', 'tie') OR verdict IS NULL),
    annotator       TEXT NOT NULL,
    kind            TEXT NOT NULL,
    shown_order     TEXT NOT NULL,
    status          TEXT NOT NULL CHECK (status IN ('done', 'pending', 'skipped', 'error')),
    created_at      TEXT NOT NULL,
    detail          TEXT NOT NULL DEFAULT '{}',
    assignment_id   INTEGER REFERENCES assignments(id),
    idempotency_key TEXT,
    stored_at       TEXT NOT NULL,
    UNIQUE (project_id, idempotency_key)
);
CREATE INDEX judgments_item ON judgments(project_id, item_id);
CREATE TRIGGER judgments_no_update BEFORE UPDATE ON judgments
    BEGIN SELECT RAISE(ABORT, 'judgments are append-only: record a new judgment instead'); END;
CREATE TRIGGER judgments_no_delete BEFORE DELETE ON judgments
    BEGIN SELECT RAISE(ABORT, 'judgments are append-only: they are never deleted'); END;
CREATE TABLE llm_cache (
    key           TEXT PRIMARY KEY,             -- sha256 of model + messages + parameters
    response      TEXT NOT NULL,                -- JSON
    created_at    TEXT NOT NULL
);
"""),
]


def arena_pairs(systems: list[str]) -> list[tuple[str, str]]:
    """Every pair of an arena project's systems, in the order its units use (``i < j`` in ``systems``)."""
    return [(systems[i], systems[j]) for i in range(len(systems)) for j in range(i + 1, len(systems))]


def project_units(kind: str, mode: str, settings: dict, item_ids: list[str]) -> list[tuple[str, str, str]]:
    """A project's units of work in queue order: ``(item_id, a, b)`` -- an item for the pair
    (``b`` is the second system), an (item, system) to score (``b`` is ``''``), or for an arena project
    (``settings["arena"]``) an item for every pair of its systems: the unit at position
    ``item * P + p`` is item ``item`` for pair ``p`` of :func:`arena_pairs` (``P`` pairs)."""
    if kind == "pairwise" and settings.get("arena"):
        pairs = arena_pairs(list(settings["systems"]))
        return [(i, a, b) for i in item_ids for a, b in pairs]
    if kind == "pairwise":
        return [(i, settings["a"], settings["b"]) for i in item_ids]
    return [(i, s, "") for i in item_ids for s in settings["systems"]]


def _backfill_units(conn) -> None:
    """Fill ``units`` and ``assignments.unit`` for projects made before the queue existed, with the
    counts their judgments and open leases already give."""
    now = time.time()
    for pid, kind, mode, settings in conn.execute("SELECT id, kind, mode, settings FROM projects").fetchall():
        settings = json.loads(settings)
        items = [r[0] for r in conn.execute("SELECT item_id FROM items WHERE project_id = ? ORDER BY position", (pid,))]
        need = int(settings.get("overlap", 1))
        if kind == "pairwise" and not ("a" in settings and "b" in settings):
            continue  # a bare project (the store's API without the app): no queue
        if kind == "score" and "systems" not in settings:
            continue
        pos = {}
        for k, (item, a, b) in enumerate(project_units(kind, mode, settings, items)):
            pos[(item, a, b)] = k
            if b:
                pos[(item, b, a)] = k
            conn.execute("INSERT INTO units (project_id, pos, item_id, a, b, need) VALUES (?, ?, ?, ?, ?, ?)",
                         (pid, k, item, a, b, need))
        for aid, item, a, b in conn.execute("SELECT id, item_id, a, b FROM assignments WHERE project_id = ?",
                                            (pid,)).fetchall():
            conn.execute("UPDATE assignments SET unit = ? WHERE id = ?", (pos.get((item, a, b or "")), aid))
        done: dict[int, set] = {}
        for item, a, b, who in conn.execute("SELECT item_id, a, b, annotator FROM judgments WHERE project_id = ? "
                                            "AND status = 'done'", (pid,)):
            k = pos.get((item, a, b))
            if k is not None:
                done.setdefault(k, set()).add(who)
        for k, people in done.items():
            conn.execute("UPDATE units SET done = ? WHERE project_id = ? AND pos = ?", (len(people), pid, k))
        conn.execute("UPDATE units SET open = (SELECT COUNT(*) FROM assignments s WHERE s.project_id = units.project_id "
                     "AND s.unit = units.pos AND s.state = 'leased' AND s.expires_at >= ?) WHERE project_id = ?",
                     (now, pid))


MIGRATIONS.append((2, "idempotency keys per (annotator, assignment), retractions (undo), the work queue, "
                      "revocable tokens, running servers", """
DROP TRIGGER judgments_no_update;
DROP TRIGGER judgments_no_delete;
CREATE TABLE judgments_v2 (
    id              INTEGER PRIMARY KEY AUTOINCREMENT,
    project_id      INTEGER NOT NULL REFERENCES projects(id),
    item_id         TEXT NOT NULL,
    a               TEXT NOT NULL,
    b               TEXT NOT NULL,
    verdict         TEXT CHECK (verdict IN ('a', 'b', 'tie') OR verdict IS NULL),
    annotator       TEXT NOT NULL,
    kind            TEXT NOT NULL,
    shown_order     TEXT NOT NULL,
    status          TEXT NOT NULL CHECK (status IN ('done', 'pending', 'skipped', 'error')),
    created_at      TEXT NOT NULL,
    detail          TEXT NOT NULL DEFAULT '{}',
    assignment_id   INTEGER REFERENCES assignments(id),
    idempotency_key TEXT,
    stored_at       TEXT NOT NULL
);
INSERT INTO judgments_v2 (id, project_id, item_id, a, b, verdict, annotator, kind, shown_order, status, created_at,
                          detail, assignment_id, idempotency_key, stored_at)
    SELECT id, project_id, item_id, a, b, verdict, annotator, kind, shown_order, status, created_at, detail,
           assignment_id, idempotency_key, stored_at FROM judgments;
DROP TABLE judgments;
ALTER TABLE judgments_v2 RENAME TO judgments;
CREATE INDEX judgments_item ON judgments(project_id, item_id);
CREATE INDEX judgments_assignment ON judgments(assignment_id);
-- a key names one submission of one annotator for one assignment (0: none), not one per project
CREATE UNIQUE INDEX judgments_idempotency ON judgments(project_id, annotator, IFNULL(assignment_id, 0), idempotency_key)
    WHERE idempotency_key IS NOT NULL;
CREATE TRIGGER judgments_no_update BEFORE UPDATE ON judgments
    BEGIN SELECT RAISE(ABORT, 'judgments are append-only: record a new judgment instead'); END;
CREATE TRIGGER judgments_no_delete BEFORE DELETE ON judgments
    BEGIN SELECT RAISE(ABORT, 'judgments are append-only: they are never deleted'); END;
CREATE TABLE retractions (                      -- an undo: the judgment stays, marked withdrawn
    judgment_id   INTEGER PRIMARY KEY REFERENCES judgments(id),
    project_id    INTEGER NOT NULL REFERENCES projects(id),
    annotator     TEXT NOT NULL,
    created_at    TEXT NOT NULL
);
CREATE TRIGGER retractions_no_update BEFORE UPDATE ON retractions
    BEGIN SELECT RAISE(ABORT, 'retractions are append-only'); END;
CREATE TRIGGER retractions_no_delete BEFORE DELETE ON retractions
    BEGIN SELECT RAISE(ABORT, 'retractions are append-only: they are never deleted'); END;
CREATE TABLE units (                            -- the queue: what needs judging, in order, with live counts
    project_id    INTEGER NOT NULL REFERENCES projects(id),
    pos           INTEGER NOT NULL,
    item_id       TEXT NOT NULL,
    a             TEXT NOT NULL,
    b             TEXT NOT NULL DEFAULT '',
    need          INTEGER NOT NULL,             -- the overlap: finished judgments wanted, from different people
    done          INTEGER NOT NULL DEFAULT 0,   -- finished judgments (different people)
    open          INTEGER NOT NULL DEFAULT 0,   -- leases that have not expired
    PRIMARY KEY (project_id, pos)
);
CREATE INDEX units_free ON units(project_id, pos) WHERE done + open < need;
CREATE INDEX units_item ON units(project_id, item_id);
ALTER TABLE assignments ADD COLUMN unit INTEGER;
CREATE INDEX assignments_unit ON assignments(project_id, unit, annotator_id);
CREATE INDEX assignments_held ON assignments(annotator_id, state);
ALTER TABLE annotators ADD COLUMN revoked_at TEXT;
ALTER TABLE annotators ADD COLUMN last_seen REAL;
CREATE TABLE servers (                          -- evalsift serve processes on this file, while they run
    id            INTEGER PRIMARY KEY,
    hostname      TEXT NOT NULL,
    pid           INTEGER NOT NULL,
    address       TEXT NOT NULL,
    started_at    TEXT NOT NULL
);
""", _backfill_units))

MIGRATIONS.append((3, "the probability with which an active rule drew an assignment's unit (arena projects)", """
ALTER TABLE assignments ADD COLUMN prob REAL;             -- NULL: the unit was not drawn at random
"""))



def _cookie_key(conn) -> None:
    """The key that signs admin cookies (:meth:`~evalsift.store.Store.admin_cookie`): random, made once per store."""
    import secrets

    conn.execute("INSERT OR IGNORE INTO secrets (name, value, created_at) VALUES ('admin_cookie_key', ?, ?)",
                 (secrets.token_hex(32), time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())))


MIGRATIONS.append((4, "draws made ahead of a live design's decision set; admin tokens that can be revoked, and the "
                      "key that signs admin cookies", """
CREATE TABLE draws (                            -- a live project's draws (neyman, active) made ahead of its decision
    project_id      INTEGER NOT NULL REFERENCES projects(id),
    seq             INTEGER NOT NULL,             -- 1, 2, ... per project, in the order they were made
    after_judgment  INTEGER NOT NULL,             -- the newest judgment the Session had been given (0: none)
    draws           INTEGER NOT NULL,             -- the Session's draws in all once this one was made
    item_id         TEXT NOT NULL,                -- the item drawn (the record; a replay draws it again)
    prob            REAL,                         -- the probability it was drawn with
    created_at      TEXT NOT NULL,
    PRIMARY KEY (project_id, seq)
);
CREATE TRIGGER draws_no_update BEFORE UPDATE ON draws
    BEGIN SELECT RAISE(ABORT, 'draws are append-only'); END;
CREATE TRIGGER draws_no_delete BEFORE DELETE ON draws
    BEGIN SELECT RAISE(ABORT, 'draws are append-only: they are never deleted'); END;
ALTER TABLE projects ADD COLUMN admin_revoked_at TEXT;   -- set: the admin token no longer signs in
CREATE TABLE secrets (                          -- keys this store keeps for itself (never a token)
    name          TEXT PRIMARY KEY,
    value         TEXT NOT NULL,
    created_at    TEXT NOT NULL
);
""", _cookie_key))

MIGRATIONS.append((5, "gold items (known answers mixed into people's queues) and their answers, annotator roles "
                      "(adjudicator), gold-accuracy flags", """
CREATE TABLE gold_items (                       -- items with a known answer; their input and outputs are rows of items
    project_id    INTEGER NOT NULL REFERENCES projects(id),   -- and outputs under item_id (hidden from the
    gold_id       TEXT NOT NULL,                -- project's items), so a gold assignment is an assignment like others
    item_id       TEXT NOT NULL,
    answer        TEXT NOT NULL,                -- the known verdict: 'a', 'b' or 'tie' (the project's a and b)
    created_at    TEXT NOT NULL,
    PRIMARY KEY (project_id, gold_id),
    UNIQUE (project_id, item_id),
    FOREIGN KEY (project_id, item_id) REFERENCES items(project_id, item_id)
);
CREATE TABLE gold_answers (                     -- a person's answer to a gold item: never a judgment
    id              INTEGER PRIMARY KEY AUTOINCREMENT,
    project_id      INTEGER NOT NULL REFERENCES projects(id),
    annotator_id    INTEGER NOT NULL REFERENCES annotators(id),
    annotator       TEXT NOT NULL,
    gold_id         TEXT NOT NULL,
    assignment_id   INTEGER NOT NULL REFERENCES assignments(id),
    given           TEXT,                         -- 'a', 'b', 'tie'; NULL for a skip
    status          TEXT NOT NULL CHECK (status IN ('done', 'skipped')),
    correct         INTEGER,                      -- 1 / 0; NULL for a skip
    idempotency_key TEXT,
    created_at      TEXT NOT NULL
);
CREATE INDEX gold_answers_who ON gold_answers(project_id, annotator_id);
CREATE INDEX gold_answers_assignment ON gold_answers(assignment_id);
CREATE TRIGGER gold_answers_no_update BEFORE UPDATE ON gold_answers
    BEGIN SELECT RAISE(ABORT, 'gold answers are append-only'); END;
CREATE TRIGGER gold_answers_no_delete BEFORE DELETE ON gold_answers
    BEGIN SELECT RAISE(ABORT, 'gold answers are append-only: they are never deleted'); END;
CREATE TABLE gold_retractions (                 -- an undo of a gold answer: it stays, marked withdrawn
    gold_answer_id INTEGER PRIMARY KEY REFERENCES gold_answers(id),
    project_id     INTEGER NOT NULL REFERENCES projects(id),
    created_at     TEXT NOT NULL
);
ALTER TABLE annotators ADD COLUMN role TEXT NOT NULL DEFAULT 'annotator';   -- or 'adjudicator'
ALTER TABLE annotators ADD COLUMN flagged_at TEXT;      -- the gold rule flagged the person: paused, verdicts excluded
ALTER TABLE annotators ADD COLUMN flag_reason TEXT;
ALTER TABLE annotators ADD COLUMN cleared_at TEXT;      -- the admin unpaused them (annotate unpause): counted again
"""))

LATEST = MIGRATIONS[-1][0]
