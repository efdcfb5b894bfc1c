-- Runs, their steps, blobs and effects; the same shape as the PostgreSQL schema.
-- Times are ISO-8601 UTC text from SQLite's own clock, never the client's.
-- Booleans are 0/1 integers; uuids are canonical lowercase text.

CREATE TABLE runs (
    run_id            TEXT    PRIMARY KEY,
    kind              TEXT    NOT NULL DEFAULT 'run',
    agent_id          TEXT    NOT NULL DEFAULT '',
    status            TEXT    NOT NULL DEFAULT 'active',
    head_step         INTEGER,
    head_version      INTEGER NOT NULL DEFAULT 0,
    head_open         INTEGER NOT NULL DEFAULT 0,
    snapshot_step     INTEGER,
    chain_bytes       INTEGER NOT NULL DEFAULT 0,
    lease_owner       TEXT,
    lease_expires_at  TEXT,
    lease_epoch       INTEGER NOT NULL DEFAULT 0,
    heartbeat_at      TEXT    NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%f', 'now')),
    created_at        TEXT    NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%f', 'now')),
    updated_at        TEXT    NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%f', 'now')),
    parent_run_id     TEXT,
    parent_step       INTEGER,
    config            BLOB    NOT NULL,
    metadata          TEXT    NOT NULL DEFAULT '{}',
    error             TEXT
);

CREATE INDEX runs_agent_updated ON runs (agent_id, updated_at);
CREATE INDEX runs_status_heartbeat ON runs (status, heartbeat_at);

CREATE TABLE steps (
    run_id         TEXT    NOT NULL,
    step           INTEGER NOT NULL,
    parent_step    INTEGER,
    kind           TEXT    NOT NULL CHECK (kind IN ('snapshot', 'delta')),
    is_open        INTEGER NOT NULL DEFAULT 0,
    codec          TEXT    NOT NULL,
    payload        BLOB    NOT NULL,
    state_version  INTEGER NOT NULL DEFAULT 1,
    write_version  INTEGER NOT NULL DEFAULT 1,
    raw_bytes      INTEGER NOT NULL,
    state_bytes    INTEGER NOT NULL,
    checksum       BLOB    NOT NULL,
    created_at     TEXT    NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%f', 'now')),
    updated_at     TEXT    NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%f', 'now')),
    PRIMARY KEY (run_id, step)
);

CREATE TABLE blobs (
    run_id      TEXT    NOT NULL,
    digest      TEXT    NOT NULL,
    codec       TEXT    NOT NULL,
    size        INTEGER NOT NULL,
    data        BLOB    NOT NULL,
    created_at  TEXT    NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%f', 'now')),
    PRIMARY KEY (run_id, digest)
);

CREATE TABLE effects (
    run_id      TEXT    NOT NULL,
    step        INTEGER NOT NULL,
    key         TEXT    NOT NULL,
    codec       TEXT    NOT NULL,
    payload     BLOB    NOT NULL,
    created_at  TEXT    NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%f', 'now')),
    PRIMARY KEY (run_id, step, key)
);
