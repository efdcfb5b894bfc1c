-- The agentckpt schema for PostgreSQL, whole, as the numbered migrations build it.
--
-- This file is documentation: the store never runs it (it migrates with migrations/*.sql),
-- and tests/contract/test_schema.py checks that a database built from this file has the
-- same tables, columns, defaults, constraints and indexes as a migrated one. Change the
-- schema with a new migration, then update this file to match.
--
-- Everything lives in one schema (the store URL's ?schema=, default "agentckpt"), found
-- through the connection's search_path, so nothing below names a schema.
--
-- Every primary key starts with run_id and every statement of the store filters on it, so
-- each table can be partitioned by HASH (run_id) or distributed on run_id (Citus) as it
-- is. Store.delete_run deletes the store's own rows of a run in one statement; the rows an
-- integration keeps for a run (run_threads, step_index, step_writes) reference it with
-- ON DELETE CASCADE, so they go with it. No foreign key crosses runs.
--
-- Times are timestamptz from the database's clock (now()), never the client's.


-- schema_migrations: the migrations applied to this schema, one row per version; the
-- store takes an advisory lock while migrating, so concurrent migrators apply each once.
CREATE TABLE schema_migrations (
    version     integer     PRIMARY KEY,
    name        text        NOT NULL,
    applied_at  timestamptz NOT NULL DEFAULT now()
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
--   metadata                             small queryable JSON (tokens, cost, user id)
CREATE TABLE runs (
    run_id            uuid        PRIMARY KEY,
    kind              text        NOT NULL DEFAULT 'run',
    agent_id          text        NOT NULL DEFAULT '',
    status            text        NOT NULL DEFAULT 'active',
    head_step         bigint,
    head_version      integer     NOT NULL DEFAULT 0,
    head_open         boolean     NOT NULL DEFAULT false,
    snapshot_step     bigint,
    chain_bytes       bigint      NOT NULL DEFAULT 0,
    lease_owner       text,
    lease_expires_at  timestamptz,
    lease_epoch       bigint      NOT NULL DEFAULT 0,
    heartbeat_at      timestamptz NOT NULL DEFAULT now(),
    created_at        timestamptz NOT NULL DEFAULT now(),
    updated_at        timestamptz NOT NULL DEFAULT now(),
    parent_run_id     uuid,
    parent_step       bigint,
    config            bytea       NOT NULL,
    metadata          jsonb       NOT NULL DEFAULT '{}',
    error             text,
    tenant_id         text        NOT NULL
                      DEFAULT COALESCE(NULLIF(current_setting('agentckpt.tenant', true), ''), 'default')
                      CONSTRAINT runs_tenant_named CHECK (tenant_id <> '')
) WITH (fillfactor = 50);  -- room on each page for HOT updates of the head (migration 0011)

-- Runs of an agent. No index holds a column that every commit changes (updated_at,
-- heartbeat_at): the per-commit update of the row then touches no index (on PostgreSQL a
-- heap-only update, cleaned up on its page).
CREATE INDEX runs_agent ON runs (agent_id);
-- Active runs whose lease expired, for recovery workers.
CREATE INDEX runs_status_lease ON runs (status, lease_expires_at);


-- steps: the kept steps of each run. A snapshot holds the whole state; a delta holds a
-- JSON Patch against parent_step. payload is the encoded document, compressed per codec;
-- checksum is sha256 of the whole state's exact encoding, checked when a state is rebuilt.
-- Only an open step (is_open) is ever rewritten, each write bumping write_version.
CREATE TABLE steps (
    run_id         uuid        NOT NULL,
    step           bigint      NOT NULL,
    parent_step    bigint,
    kind           text        NOT NULL CHECK (kind IN ('snapshot', 'delta')),
    is_open        boolean     NOT NULL DEFAULT false,
    codec          text        NOT NULL,
    payload        bytea       NOT NULL,
    state_version  integer     NOT NULL DEFAULT 1,
    write_version  integer     NOT NULL DEFAULT 1,
    raw_bytes      integer     NOT NULL,
    state_bytes    bigint      NOT NULL,
    checksum       bytea       NOT NULL,
    created_at     timestamptz NOT NULL DEFAULT now(),
    updated_at     timestamptz NOT NULL DEFAULT now(),
    write_token    bytea,       -- who wrote it: a retry tells itself from another writer
    tenant_id         text        NOT NULL
                      DEFAULT COALESCE(NULLIF(current_setting('agentckpt.tenant', true), ''), 'default')
                      CONSTRAINT steps_tenant_named CHECK (tenant_id <> ''),
    PRIMARY KEY (run_id, step)
) WITH (toast_tuple_target = 8160);  -- payloads up to a page stay inline (migration 0006)


-- blobs: large values kept out of the states, content-addressed per run (digest), written
-- in the same transaction as the step that refers to them.
CREATE TABLE blobs (
    run_id      uuid        NOT NULL,
    digest      text        NOT NULL,
    codec       text        NOT NULL,
    size        bigint      NOT NULL,
    data        bytea       NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now(),
    tenant_id         text        NOT NULL
                      DEFAULT COALESCE(NULLIF(current_setting('agentckpt.tenant', true), ''), 'default')
                      CONSTRAINT blobs_tenant_named CHECK (tenant_id <> ''),
    PRIMARY KEY (run_id, digest)
);


-- effects: the recorded results of side effects (tool calls) by step and key, so that a
-- resumed run replays a result instead of repeating the effect.
CREATE TABLE effects (
    run_id      uuid        NOT NULL,
    step        bigint      NOT NULL,
    key         text        NOT NULL,
    codec       text        NOT NULL,
    payload     bytea       NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now(),
    tenant_id         text        NOT NULL
                      DEFAULT COALESCE(NULLIF(current_setting('agentckpt.tenant', true), ''), 'default')
                      CONSTRAINT effects_tenant_named CHECK (tenant_id <> ''),
    PRIMARY KEY (run_id, step, key)
);


-- history: archived parts of a run's state (old conversation turns), written in the same
-- transaction as the step that removes them from the hot state; seq orders the archive.
CREATE TABLE history (
    run_id      uuid        NOT NULL,
    seq         bigint      NOT NULL,
    step        bigint      NOT NULL,
    item_count  integer     NOT NULL,
    codec       text        NOT NULL,
    payload     bytea       NOT NULL,
    raw_bytes   integer     NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now(),
    tenant_id         text        NOT NULL
                      DEFAULT COALESCE(NULLIF(current_setting('agentckpt.tenant', true), ''), 'default')
                      CONSTRAINT history_tenant_named CHECK (tenant_id <> ''),
    PRIMARY KEY (run_id, seq)
);


-- events: an optional append-only audit log of raw step events, written off the hot path.
CREATE TABLE events (
    run_id      uuid        NOT NULL,
    event_id    uuid        NOT NULL,
    step        bigint,
    kind        text        NOT NULL,
    codec       text        NOT NULL,
    payload     bytea       NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now(),
    seq         bigint,      -- emission order within the run (migration 0008)
    tenant_id         text        NOT NULL
                      DEFAULT COALESCE(NULLIF(current_setting('agentckpt.tenant', true), ''), 'default')
                      CONSTRAINT events_tenant_named CHECK (tenant_id <> ''),
    PRIMARY KEY (run_id, event_id)
);

CREATE INDEX events_run_seq ON events (run_id, seq);


-- run_threads: for checkpoints a framework names by its own ids (LangGraph), the thread
-- and namespace each run stores; one run per thread and namespace, so consecutive
-- checkpoints of a thread are consecutive steps of one run, stored as small deltas.
CREATE TABLE run_threads (
    run_id     uuid PRIMARY KEY
               CONSTRAINT run_threads_run REFERENCES runs (run_id) ON DELETE CASCADE,
    thread_id  text NOT NULL,
    namespace  text NOT NULL,
    tenant_id         text        NOT NULL
                      DEFAULT COALESCE(NULLIF(current_setting('agentckpt.tenant', true), ''), 'default')
                      CONSTRAINT run_threads_tenant_named CHECK (tenant_id <> '')
);

CREATE INDEX run_threads_thread ON run_threads (thread_id);


-- step_index: an external checkpoint id -> the step that stores it, with its parent id,
-- the invocation that wrote it and its metadata (exact JSON text: JSONB would reorder keys
-- and refuse U+0000). Checkpoint ids sort by code point (COLLATE "C"), as LangGraph
-- compares them. A checkpoint is visible only once its step and its index row both exist:
-- writers commit the step first and the index row second.
CREATE TABLE step_index (
    run_id         uuid   NOT NULL
                   CONSTRAINT step_index_run REFERENCES runs (run_id) ON DELETE CASCADE,
    checkpoint_id  text   COLLATE "C" NOT NULL,
    step           bigint NOT NULL,
    parent_id      text,
    invocation_id  text,
    metadata       text   NOT NULL,
    tenant_id         text        NOT NULL
                      DEFAULT COALESCE(NULLIF(current_setting('agentckpt.tenant', true), ''), 'default')
                      CONSTRAINT step_index_tenant_named CHECK (tenant_id <> ''),
    PRIMARY KEY (run_id, checkpoint_id)
);

CREATE INDEX step_index_invocation ON step_index (invocation_id)
    WHERE invocation_id IS NOT NULL;


-- step_writes: writes pending against a checkpoint (LangGraph's put_writes), serialized
-- by the framework's own serializer and compressed per codec.
CREATE TABLE step_writes (
    run_id         uuid    NOT NULL
                   CONSTRAINT step_writes_run REFERENCES runs (run_id) ON DELETE CASCADE,
    checkpoint_id  text    COLLATE "C" NOT NULL,
    task_id        text    NOT NULL,
    idx            integer NOT NULL,
    channel        text    NOT NULL,
    task_path      text    NOT NULL,
    type           text    NOT NULL,
    codec          text    NOT NULL,
    payload        bytea   NOT NULL,
    tenant_id         text        NOT NULL
                      DEFAULT COALESCE(NULLIF(current_setting('agentckpt.tenant', true), ''), 'default')
                      CONSTRAINT step_writes_tenant_named CHECK (tenant_id <> ''),
    PRIMARY KEY (run_id, checkpoint_id, task_id, idx)
);


-- data_keys: encryption at rest (migration 0009). The store's data keys, each wrapped by
-- the key-encryption key kek_id of the key provider (never stored here). A sealed value
-- names its data key and cipher in its own header. state: active (new values may use
-- it), retiring (being re-encrypted away by `agentckpt keys rotate --reencrypt`), retired
-- (no value uses it). One table per store, not per run: on Citus, a reference table.
CREATE TABLE data_keys (
    key_id      text        PRIMARY KEY,
    kek_id      text        NOT NULL,
    cipher      text        NOT NULL,
    wrapped     bytea       NOT NULL,
    state       text        NOT NULL DEFAULT 'active'
                            CHECK (state IN ('active', 'retiring', 'retired')),
    created_at  timestamptz NOT NULL DEFAULT now(),
    updated_at  timestamptz NOT NULL DEFAULT now()
);


-- The payload columns hold bytes that are already zstd-compressed, incompressible or
-- encrypted: TOAST moves a long one out of line without trying to compress it again
-- (migration 0012). runs.config, exact JSON, keeps the default.
ALTER TABLE steps ALTER COLUMN payload SET STORAGE EXTERNAL;
ALTER TABLE blobs ALTER COLUMN data SET STORAGE EXTERNAL;
ALTER TABLE effects ALTER COLUMN payload SET STORAGE EXTERNAL;
ALTER TABLE history ALTER COLUMN payload SET STORAGE EXTERNAL;
ALTER TABLE events ALTER COLUMN payload SET STORAGE EXTERNAL;
ALTER TABLE step_writes ALTER COLUMN payload SET STORAGE EXTERNAL;

-- Row-level security (migration 0010): every table of a run's rows is bound, its owner
-- too (FORCE), to the tenant the store sets per transaction with
-- set_config('agentckpt.tenant', <tenant>, true). docs/security.md shows the roles.
ALTER TABLE runs ENABLE ROW LEVEL SECURITY;
ALTER TABLE runs FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON runs USING (tenant_id = current_setting('agentckpt.tenant', true)) WITH CHECK (tenant_id = current_setting('agentckpt.tenant', true));
ALTER TABLE steps ENABLE ROW LEVEL SECURITY;
ALTER TABLE steps FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON steps USING (tenant_id = current_setting('agentckpt.tenant', true)) WITH CHECK (tenant_id = current_setting('agentckpt.tenant', true));
ALTER TABLE blobs ENABLE ROW LEVEL SECURITY;
ALTER TABLE blobs FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON blobs USING (tenant_id = current_setting('agentckpt.tenant', true)) WITH CHECK (tenant_id = current_setting('agentckpt.tenant', true));
ALTER TABLE effects ENABLE ROW LEVEL SECURITY;
ALTER TABLE effects FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON effects USING (tenant_id = current_setting('agentckpt.tenant', true)) WITH CHECK (tenant_id = current_setting('agentckpt.tenant', true));
ALTER TABLE history ENABLE ROW LEVEL SECURITY;
ALTER TABLE history FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON history USING (tenant_id = current_setting('agentckpt.tenant', true)) WITH CHECK (tenant_id = current_setting('agentckpt.tenant', true));
ALTER TABLE events ENABLE ROW LEVEL SECURITY;
ALTER TABLE events FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON events USING (tenant_id = current_setting('agentckpt.tenant', true)) WITH CHECK (tenant_id = current_setting('agentckpt.tenant', true));
ALTER TABLE run_threads ENABLE ROW LEVEL SECURITY;
ALTER TABLE run_threads FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON run_threads USING (tenant_id = current_setting('agentckpt.tenant', true)) WITH CHECK (tenant_id = current_setting('agentckpt.tenant', true));
ALTER TABLE step_index ENABLE ROW LEVEL SECURITY;
ALTER TABLE step_index FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON step_index USING (tenant_id = current_setting('agentckpt.tenant', true)) WITH CHECK (tenant_id = current_setting('agentckpt.tenant', true));
ALTER TABLE step_writes ENABLE ROW LEVEL SECURITY;
ALTER TABLE step_writes FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON step_writes USING (tenant_id = current_setting('agentckpt.tenant', true)) WITH CHECK (tenant_id = current_setting('agentckpt.tenant', true));

-- A tenant's runs, for listing them.
CREATE INDEX runs_tenant ON runs (tenant_id);
