-- The agentckpt schema for SQLite, whole, as the numbered migrations build it.
--
-- This file is documentation: the store never runs it (it migrates with migrations/*.sql),
-- and tests/contract/test_schema.py checks that a database built from this file has the
-- same tables, columns, defaults, constraints and indexes as a migrated one. Change the
-- schema with a new migration, then update this file to match.
--
-- The same tables as on PostgreSQL (see sql/postgres/schema.sql), in SQLite's types:
--   uuids      canonical lowercase TEXT
--   booleans   INTEGER 0/1
--   times      ISO-8601 UTC TEXT from SQLite's own clock, never the client's:
--              strftime('%Y-%m-%dT%H:%M:%f', 'now')
--   JSON       TEXT (metadata) or exact encoded bytes in a BLOB (config, payloads)
-- Every primary key starts with run_id. There are no foreign keys: Store.delete_run
-- deletes a run's rows in one transaction (the LangGraph tables' rows are deleted by that
-- integration).


-- schema_migrations: the migrations applied to this file, one row per version; each one
-- is applied in its own BEGIN IMMEDIATE transaction, so concurrent migrators apply it once.
CREATE TABLE schema_migrations (
    version     INTEGER PRIMARY KEY,
    name        TEXT    NOT NULL,
    applied_at  TEXT    NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%f', 'now'))
);


-- runs: one row per run (an agent conversation or a long agent job).
--   head_step, head_version, head_open   the newest step, how often it was written, and
--                                        whether it is still open for rewriting; the row
--                                        is the guard every commit conditions on
--   snapshot_step, chain_bytes           the newest snapshot and the delta bytes after it
--   lease_owner, lease_expires_at,       who works on the run; lease_epoch fences a
--   lease_epoch, heartbeat_at            writer whose lease was taken over
--   parent_run_id, parent_step           where a fork came from
--   config                               what the run was started with, exact JSON bytes
--   metadata                             small queryable JSON text (tokens, cost, user id)
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
    error             TEXT,
    tenant_id         TEXT    NOT NULL DEFAULT 'default' CHECK (tenant_id <> '')
);

-- Active runs whose lease expired, for recovery workers.
CREATE INDEX runs_status_lease ON runs (status, lease_expires_at);
-- Runs of an agent. No index holds a column that every commit changes (updated_at,
-- heartbeat_at): the per-commit update of the row then touches no index (on PostgreSQL a
-- heap-only update, cleaned up on its page).
CREATE INDEX runs_agent ON runs (agent_id);


-- steps: the kept steps of each run. A snapshot holds the whole state; a delta holds a
-- JSON Patch against parent_step. payload is the encoded document, compressed per codec;
-- checksum is sha256 of the whole state's exact encoding, checked when a state is rebuilt.
-- Only an open step (is_open) is ever rewritten, each write bumping write_version.
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
    write_token    BLOB,   -- who wrote it: a retry tells itself from another writer
    tenant_id         TEXT    NOT NULL DEFAULT 'default' CHECK (tenant_id <> ''),
    PRIMARY KEY (run_id, step)
);


-- blobs: large values kept out of the states, content-addressed per run (digest), written
-- in the same transaction as the step that refers to them.
CREATE TABLE blobs (
    run_id      TEXT    NOT NULL,
    digest      TEXT    NOT NULL,
    codec       TEXT    NOT NULL,
    size        INTEGER NOT NULL,
    data        BLOB    NOT NULL,
    created_at  TEXT    NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%f', 'now')),
    tenant_id         TEXT    NOT NULL DEFAULT 'default' CHECK (tenant_id <> ''),
    PRIMARY KEY (run_id, digest)
);


-- effects: the recorded results of side effects (tool calls) by step and key, so that a
-- resumed run replays a result instead of repeating the effect.
CREATE TABLE effects (
    run_id      TEXT    NOT NULL,
    step        INTEGER NOT NULL,
    key         TEXT    NOT NULL,
    codec       TEXT    NOT NULL,
    payload     BLOB    NOT NULL,
    created_at  TEXT    NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%f', 'now')),
    tenant_id         TEXT    NOT NULL DEFAULT 'default' CHECK (tenant_id <> ''),
    PRIMARY KEY (run_id, step, key)
);


-- history: archived parts of a run's state (old conversation turns), written in the same
-- transaction as the step that removes them from the hot state; seq orders the archive.
CREATE TABLE history (
    run_id      TEXT    NOT NULL,
    seq         INTEGER NOT NULL,
    step        INTEGER NOT NULL,
    item_count  INTEGER NOT NULL,
    codec       TEXT    NOT NULL,
    payload     BLOB    NOT NULL,
    raw_bytes   INTEGER NOT NULL,
    created_at  TEXT    NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%f', 'now')),
    tenant_id         TEXT    NOT NULL DEFAULT 'default' CHECK (tenant_id <> ''),
    PRIMARY KEY (run_id, seq)
);


-- events: an optional append-only audit log of raw step events, written off the hot path.
CREATE TABLE events (
    run_id      TEXT    NOT NULL,
    event_id    TEXT    NOT NULL,
    step        INTEGER,
    kind        TEXT    NOT NULL,
    codec       TEXT    NOT NULL,
    payload     BLOB    NOT NULL,
    created_at  TEXT    NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%f', 'now')),
    seq         INTEGER, -- emission order within the run (migration 0008)
    tenant_id         TEXT    NOT NULL DEFAULT 'default' CHECK (tenant_id <> ''),
    PRIMARY KEY (run_id, event_id)
);

CREATE INDEX events_run_seq ON events (run_id, seq);


-- run_threads: for checkpoints a framework names by its own ids (LangGraph), the thread
-- and namespace each run stores; one run per thread and namespace, so consecutive
-- checkpoints of a thread are consecutive steps of one run, stored as small deltas.
-- WITHOUT ROWID (here and below): rows sit in primary-key order, a run's rows together.
CREATE TABLE run_threads (
    run_id     TEXT PRIMARY KEY REFERENCES runs (run_id) ON DELETE CASCADE,
    thread_id  TEXT NOT NULL,
    namespace  TEXT NOT NULL,
    tenant_id         TEXT    NOT NULL DEFAULT 'default' CHECK (tenant_id <> '')
) WITHOUT ROWID;

CREATE INDEX run_threads_thread ON run_threads (thread_id);


-- step_index: an external checkpoint id -> the step that stores it, with its parent id,
-- the invocation that wrote it and its metadata (exact JSON text). SQLite's default BINARY
-- collation already sorts checkpoint ids by code point. A checkpoint is visible only once
-- its step and its index row both exist: writers commit the step first, the index second.
CREATE TABLE step_index (
    run_id         TEXT    NOT NULL REFERENCES runs (run_id) ON DELETE CASCADE,
    checkpoint_id  TEXT    NOT NULL,
    step           INTEGER NOT NULL,
    parent_id      TEXT,
    invocation_id  TEXT,
    metadata       TEXT    NOT NULL,
    tenant_id         TEXT    NOT NULL DEFAULT 'default' CHECK (tenant_id <> ''),
    PRIMARY KEY (run_id, checkpoint_id)
) WITHOUT ROWID;

CREATE INDEX step_index_invocation ON step_index (invocation_id)
    WHERE invocation_id IS NOT NULL;


-- step_writes: writes pending against a checkpoint (LangGraph's put_writes), serialized
-- by the framework's own serializer and compressed per codec.
CREATE TABLE step_writes (
    run_id         TEXT    NOT NULL REFERENCES runs (run_id) ON DELETE CASCADE,
    checkpoint_id  TEXT    NOT NULL,
    task_id        TEXT    NOT NULL,
    idx            INTEGER NOT NULL,
    channel        TEXT    NOT NULL,
    task_path      TEXT    NOT NULL,
    type           TEXT    NOT NULL,
    codec          TEXT    NOT NULL,
    payload        BLOB    NOT NULL,
    tenant_id         TEXT    NOT NULL DEFAULT 'default' CHECK (tenant_id <> ''),
    PRIMARY KEY (run_id, checkpoint_id, task_id, idx)
) WITHOUT ROWID;


-- data_keys: encryption at rest (migration 0009). The store's data keys, each wrapped by
-- the key-encryption key kek_id of the key provider (never stored here). A sealed value
-- names its data key and cipher in its own header. state: active (new values may use
-- it), retiring (being re-encrypted away by `agentckpt keys rotate --reencrypt`), retired
-- (no value uses it). One table per store, not per run: on Citus, a reference table.
CREATE TABLE data_keys (
    key_id      TEXT    PRIMARY KEY,
    kek_id      TEXT    NOT NULL,
    cipher      TEXT    NOT NULL,
    wrapped     BLOB    NOT NULL,
    state       TEXT    NOT NULL DEFAULT 'active'
                        CHECK (state IN ('active', 'retiring', 'retired')),
    created_at  TEXT    NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%f', 'now')),
    updated_at  TEXT    NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%f', 'now'))
);

-- A tenant's runs, for listing them (migration 0010).
CREATE INDEX runs_tenant ON runs (tenant_id);
