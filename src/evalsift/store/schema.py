"""The store's schema, as numbered migrations applied in order, each in its own transaction.

A migration is never edited once released: a change to the schema is a new migration appended to
:data:`MIGRATIONS`. ``schema_migrations`` records which have been applied, so opening an older file
upgrades it in place, and a file written by a newer evalsift (a version we do not know) is refused.
"""

from __future__ import annotations

MIGRATIONS: list[tuple[int, str, str]] = [
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

LATEST = MIGRATIONS[-1][0]
